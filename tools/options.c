/* SPDX-License-Identifier: MIT */
/* The tools' option tables (tools/options.h): parse, check, --help and --options-table from one
 * declaration per option. */
#include "tools/options.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The game's declaration of o (same name), or NULL. */
static const struct az_game_opt *game_opt(const struct az_opt *o)
{
	for (uint32_t i = 0; o->game && i < o->game->nopts; i++)
		if (strcmp(o->game->opts[i].name, o->name) == 0)
			return &o->game->opts[i];
	return NULL;
}

static void bounds(const struct az_opt *o, double *lo, double *hi)
{
	const struct az_game_opt *g = game_opt(o);

	*lo = g ? g->lo : o->lo;
	*hi = g ? g->hi : o->hi;
}

static int is_whole(enum az_opt_type t)
{
	return t == AZ_OPT_INT || t == AZ_OPT_LONG || t == AZ_OPT_U32;
}

const char *az_opt_range(const struct az_opt *o, char *buf, size_t n)
{
	double lo, hi;

	bounds(o, &lo, &hi);
	buf[0] = 0;
	if (o->type == AZ_OPT_CHOICE || o->type == AZ_OPT_PARSE || o->type == AZ_OPT_BUF)
		snprintf(buf, n, "%s", o->choices ? o->choices : "");
	else if (is_whole(o->type))
		snprintf(buf, n, "%.0f..%.0f", lo, hi);
	else if (o->type == AZ_OPT_F32 || o->type == AZ_OPT_F64)
		snprintf(buf, n, "%g..%g", lo, hi);
	return buf;
}

/* v is one of the '|'-separated words of list. */
static int in_list(const char *list, const char *v)
{
	size_t len = strlen(v);

	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, "|");
		if (k == len && strncmp(p, v, k) == 0)
			return 1;
		p += k + (p[k] == '|');
	}
	return 0;
}

/* "auto, cpu, cpu-async or cuda" from "auto|cpu|cpu-async|cuda". */
static void list_words(const char *list, char *buf, size_t n)
{
	size_t words = 1, k = 0;

	for (const char *p = list; *p; p++)
		words += *p == '|';
	buf[0] = 0;
	for (size_t w = 0; w < words && k < n; w++) {
		size_t len = strcspn(list, "|");
		k += (size_t)snprintf(buf + k, n - k, "%s%.*s",
				      w == 0         ? "" :
				      w + 1 == words ? " or " :
						       ", ",
				      (int)len, list);
		list += len + 1;
	}
}

const char *az_opt_quote(const char *v, char *buf, size_t n)
{
	size_t i = 0;

	for (; v[i] && i < 40 && i + 4 < n; i++)
		buf[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
	buf[i] = '\0';
	if (v[i] && i + 4 <= n)
		memcpy(buf + i, "...", 4);
	return buf;
}

/* x is a number o accepts: in its range, and whole for the whole-number types. A float is
 * compared as the field holds it, with the bounds rounded alike, so that a value accepted as
 * text (0.999) passes az_opt_check() once stored (0.99900001f). */
static int in_range(const struct az_opt *o, double x)
{
	double lo, hi;

	bounds(o, &lo, &hi);
	if (o->type == AZ_OPT_F32) {
		x = (float)x;
		lo = (float)lo;
		hi = (float)hi;
	}
	return x >= lo && x <= hi && (!is_whole(o->type) || x == floor(x));
}

/* The message of a number o does not take (text v): -EINVAL. */
static int range_error(const struct az_opt *o, const char *v, char *err, size_t errlen)
{
	int whole = is_whole(o->type);
	double lo, hi;
	char q[48];

	bounds(o, &lo, &hi);
	snprintf(err, errlen, "--%s: expected a %s in [%.*g, %.*g], got '%s'", o->name,
		 whole ? "whole number" : "number", whole ? 17 : 6, lo, whole ? 17 : 6, hi,
		 az_opt_quote(v, q, sizeof(q)));
	return -EINVAL;
}

/* The message of a value not among o's choices: -EINVAL. */
static int choice_error(const struct az_opt *o, const char *v, char *err, size_t errlen)
{
	char words[200], q[48];

	list_words(o->choices ? o->choices : "", words, sizeof(words));
	snprintf(err, errlen, "--%s: %s, not '%s'", o->name, words, az_opt_quote(v, q, sizeof(q)));
	return -EINVAL;
}

/* Decimal notation only: an optional sign and digits, and for a non-whole type a fraction and an
 * exponent ("2e-3"); not what strtod() takes besides (hexadecimal "0x10", "inf", "nan", leading
 * blanks), nor an exponent for a whole number ("1e3"). */
static int decimal(const char *v, int whole)
{
	const char *p = v + (*v == '+' || *v == '-');
	size_t digits = strspn(p, "0123456789");

	p += digits;
	if (!whole && *p == '.') {
		size_t frac = strspn(p + 1, "0123456789");

		digits += frac;
		p += 1 + frac;
	}
	if (!digits)
		return 0;
	if (!whole && (*p == 'e' || *p == 'E')) {
		p += 1 + (p[1] == '+' || p[1] == '-');
		if (!strspn(p, "0123456789"))
			return 0;
		p += strspn(p, "0123456789");
	}
	return *p == '\0';
}

/* A number of o's type in its range; whole numbers must be written as such. */
static int set_number(const struct az_opt *o, void *field, const char *v, char *err, size_t errlen)
{
	double x;
	char *end;

	errno = 0;
	x = strtod(v, &end);
	if (!decimal(v, is_whole(o->type)) || errno || end == v || *end || !in_range(o, x))
		return range_error(o, v, err, errlen);
	if (o->type == AZ_OPT_INT)
		*(int *)field = (int)x;
	else if (o->type == AZ_OPT_LONG)
		*(long *)field = (long)x;
	else if (o->type == AZ_OPT_U32)
		*(uint32_t *)field = (uint32_t)x;
	else if (o->type == AZ_OPT_F32)
		*(float *)field = (float)x;
	else
		*(double *)field = x;
	return 0;
}

/* Digits only: strtoull would wrap "-5" to a huge value. */
static int set_u64(const struct az_opt *o, void *field, const char *v, char *err, size_t errlen)
{
	unsigned long long x = 0;
	char *end = NULL, q[48];

	errno = 0;
	if (v[0] >= '0' && v[0] <= '9')
		x = strtoull(v, &end, 10);
	if (!end || errno || *end) {
		snprintf(err, errlen, "--%s: expected a whole number in [0, %llu], got '%s'",
			 o->name, (unsigned long long)UINT64_MAX, az_opt_quote(v, q, sizeof(q)));
		return -EINVAL;
	}
	*(uint64_t *)field = x;
	return 0;
}

int az_opt_set(const struct az_opt *o, void *dst, const char *v, char *err, size_t errlen)
{
	void *field = (char *)dst + o->off;

	switch (o->type) {
	case AZ_OPT_FLAG:
		*(int *)field = 1;
		return 0;
	case AZ_OPT_STR:
		*(const char **)field = v;
		return 0;
	case AZ_OPT_CHOICE:
		if (!in_list(o->choices, v))
			return choice_error(o, v, err, errlen);
		*(const char **)field = v;
		return 0;
	case AZ_OPT_PARSE:
		return o->parse(v, field) == 0 ? 0 : choice_error(o, v, err, errlen);
	case AZ_OPT_U64:
		return set_u64(o, field, v, err, errlen);
	case AZ_OPT_BUF:
		/* the field's size is the table owner's: az_opt_set_buf() */
		fprintf(stderr, "--%s: option table: a char array set without its size\n", o->name);
		abort();
	default:
		return set_number(o, field, v, err, errlen);
	}
}

int az_opt_set_buf(const struct az_opt *o, char *field, size_t size, const char *v, char *err,
		   size_t errlen)
{
	size_t len = strlen(v);

	if (o->choices && !in_list(o->choices, v))
		return choice_error(o, v, err, errlen);
	if (len >= size) {
		snprintf(err, errlen, "--%s: value too long (at most %zu characters)", o->name,
			 size - 1);
		return -EINVAL;
	}
	memcpy(field, v, len + 1);
	return 0;
}

int az_opt_check(const struct az_opt *o, const void *dst, char *err, size_t errlen)
{
	const char *field = (const char *)dst + o->off;
	const char *s;
	char text[64];
	double x;

	switch (o->type) {
	case AZ_OPT_INT:
		x = *(const int *)field;
		break;
	case AZ_OPT_LONG:
		x = (double)*(const long *)field;
		break;
	case AZ_OPT_U32:
		x = *(const uint32_t *)field;
		break;
	case AZ_OPT_F32:
		x = *(const float *)field;
		break;
	case AZ_OPT_F64:
		x = *(const double *)field;
		break;
	case AZ_OPT_CHOICE:
	case AZ_OPT_BUF:
		s = o->type == AZ_OPT_BUF ? field : *(const char *const *)field;
		if (!s || !o->choices || in_list(o->choices, s))
			return 0;
		return choice_error(o, s, err, errlen);
	default:
		return 0;
	}
	if (in_range(o, x))
		return 0;
	snprintf(text, sizeof(text), "%.*g", is_whole(o->type) ? 17 : 6, x);
	return range_error(o, text, err, errlen);
}

void az_opts_defaults(const struct az_opts *t, void *dst)
{
	char err[300];

	for (size_t i = 0; i < t->n; i++)
		if (t->opt[i].def && t->opt[i].type != AZ_OPT_FLAG &&
		    az_opt_set(&t->opt[i], dst, t->opt[i].def, err, sizeof(err)) < 0) {
			/* a table whose default fails its own check is a bug */
			fprintf(stderr, "%s: option table: %s\n", t->tool, err);
			abort();
		}
}

static const struct az_opt *find(const struct az_opts *t, const char *name, size_t len)
{
	for (size_t i = 0; i < t->n; i++)
		if (strlen(t->opt[i].name) == len && strncmp(t->opt[i].name, name, len) == 0)
			return &t->opt[i];
	return NULL;
}

/* One "--name[=value]" at argv[*i] (the value may be the next argument): 0 or -EINVAL after
 * a message. */
static int parse_one(const struct az_opts *t, void *dst, int argc, char **argv, int *i)
{
	const char *a = argv[*i] + 2, *eq = strchr(a, '='), *v = eq ? eq + 1 : NULL;
	const struct az_opt *o = find(t, a, eq ? (size_t)(eq - a) : strlen(a));
	char err[400];

	if (!o) {
		fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", t->tool, argv[*i],
			t->tool);
		return -EINVAL;
	}
	if (o->type == AZ_OPT_FLAG && v) {
		fprintf(stderr, "%s: --%s takes no value (see %s --help)\n", t->tool, o->name,
			t->tool);
		return -EINVAL;
	}
	if (o->type != AZ_OPT_FLAG && !v) {
		const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
		/* "--sims --json": the value is missing, not "--json" */
		if (!next || (strncmp(next, "--", 2) == 0 && next[2] &&
			      find(t, next + 2, strcspn(next + 2, "=")))) {
			fprintf(stderr, "%s: --%s needs a value %s (see %s --help)\n", t->tool,
				o->name, o->arg ? o->arg : "", t->tool);
			return -EINVAL;
		}
		v = argv[++*i];
	}
	if (az_opt_set(o, dst, v ? v : "", err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", t->tool, err);
		return -EINVAL;
	}
	return 0;
}

int az_opts_parse(const struct az_opts *t, void *dst, int argc, char **argv, int *npos)
{
	int pos = 0, rest = 0;

	az_opts_defaults(t, dst);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!rest && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
			az_opts_usage(stdout, t);
			return AZ_OPTS_HELP;
		}
		if (!rest && strcmp(a, "--options-table") == 0) {
			az_opts_dump(stdout, t);
			return AZ_OPTS_DUMPED;
		}
		if (!rest && strcmp(a, "--") == 0) {
			rest = 1;
		} else if (!rest && a[0] == '-' && a[1]) {
			if (a[1] != '-') {
				fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n",
					t->tool, a, t->tool);
				return -EINVAL;
			}
			if (parse_one(t, dst, argc, argv, &i) < 0)
				return -EINVAL;
		} else if (t->positionals) {
			argv[++pos] = (char *)a; /* pos <= i: nothing unread is overwritten */
		} else {
			fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", t->tool,
				a, t->tool);
			return -EINVAL;
		}
	}
	if (npos)
		*npos = pos;
	return 0;
}

void az_opts_help(FILE *f, const struct az_opts *t)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct az_opt *o = &t->opt[i];
		char left[64], first[80], range[200], text[1200];
		size_t k;

		snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "",
			 o->arg ? o->arg : "");
		k = (size_t)snprintf(text, sizeof(text), "%s", o->help);
		if (az_opt_range(o, range, sizeof(range))[0] && k < sizeof(text))
			k += (size_t)snprintf(text + k, sizeof(text) - k, " [%s]", range);
		if (o->def && o->type != AZ_OPT_FLAG && k < sizeof(text))
			snprintf(text + k, sizeof(text) - k, " (default %s)", o->def);
		snprintf(first, sizeof(first), "  %-20s ", left);
		if (strlen(left) > 20) { /* a long name: the text on the next line */
			fprintf(f, "  %s\n", left);
			snprintf(first, sizeof(first), "%23s", "");
		}
		az_usage_wrap(f, first, "                       ", 57, text);
	}
}

void az_opts_usage(FILE *f, const struct az_opts *t)
{
	const char *p = t->help ? t->help : "@OPTIONS\n";

	if (!t->help)
		fprintf(f, "Usage: %s [options]\n\n", t->tool);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len == 8 && memcmp(p, "@OPTIONS", 8) == 0) {
			fputs("Options:\n", f);
			az_opts_help(f, t);
			if (t->version)
				fprintf(f, "  %-20s print the version and exit\n", "--version");
			fprintf(f, "  %-20s this text\n", "--help");
		} else if (len == 6 && memcmp(p, "@NOTES", 6) == 0) {
			if (t->notes)
				t->notes(f);
		} else {
			fprintf(f, "%.*s\n", (int)len, p);
		}
		p += len + (nl != NULL);
	}
}

void az_opts_dump(FILE *f, const struct az_opts *t)
{
	static const char *const types[] = {
		[AZ_OPT_FLAG] = "flag",   [AZ_OPT_STR] = "str",   [AZ_OPT_CHOICE] = "choice",
		[AZ_OPT_INT] = "int",     [AZ_OPT_LONG] = "long", [AZ_OPT_U32] = "u32",
		[AZ_OPT_U64] = "u64",     [AZ_OPT_F32] = "f32",   [AZ_OPT_F64] = "f64",
		[AZ_OPT_PARSE] = "parse", [AZ_OPT_BUF] = "str"};
	char range[200];

	for (size_t i = 0; i < t->n; i++) {
		const struct az_opt *o = &t->opt[i];

		az_opt_range(o, range, sizeof(range));
		fprintf(f, "%s\t%s\t%s\t%s\n", o->name, types[o->type], range[0] ? range : "-",
			o->def && o->type != AZ_OPT_FLAG ? o->def : "-");
	}
}

void az_usage_wrap(FILE *f, const char *first, const char *rest, size_t width, const char *text)
{
	const char *t = text;
	for (int line = 0; *t; line++) {
		size_t n = strlen(t);
		if (n > width) {
			n = width;
			while (n > 0 && t[n] != ' ')
				n--;
			if (n == 0)
				n = width;
		}
		fprintf(f, "%s%.*s\n", line ? rest : first, (int)n, t);
		t += n;
		while (*t == ' ')
			t++;
	}
}
