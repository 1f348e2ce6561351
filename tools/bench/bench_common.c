/* SPDX-License-Identifier: MIT */
/* azbench output helpers: rows of ordered key/value pairs rendered as a table, JSON lines, CSV
 * or a gnuplot PNG, the output paths checked, and sample statistics. */
#include "games/game.h"
#include "tools/bench/bench_common.h"
#include "tools/config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "base/spawn.h"
#include "base/util.h"


#define MAX_COLS 64
#define CELL_MAX 64

int az_bench_parse_u32_list(const char *s, uint32_t *out, int max, uint32_t lo, uint32_t hi)
{
	int n = 0;

	if (!s)
		return -EINVAL;
	for (;;) {
		const char *end;
		uint32_t v;

		if (az_parse_u32(s, &end, &v) < 0 || v < lo || v > hi || n >= max)
			return -EINVAL;
		out[n++] = v;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return -EINVAL;
		s = end + 1;
	}
}

/* ---- rows ---- */

static struct az_bench_field *field_for(struct az_bench_row *r, const char *key)
{
	struct az_bench_field *f;
	uint32_t i;

	for (i = 0; i < r->n; i++)
		if (strncmp(r->f[i].key, key, AZ_BENCH_KEY_MAX - 1) == 0)
			return &r->f[i];
	AZ_ASSERT(r->n < AZ_BENCH_MAX_FIELDS);
	f = &r->f[r->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->key, sizeof(f->key), "%s", key);
	return f;
}

void az_bench_row_str(struct az_bench_row *r, const char *key, const char *val)
{
	struct az_bench_field *f = field_for(r, key);

	f->kind = AZ_BENCH_STR;
	snprintf(f->str, sizeof(f->str), "%s", val);
}

void az_bench_row_int(struct az_bench_row *r, const char *key, int64_t val)
{
	struct az_bench_field *f = field_for(r, key);

	f->kind = AZ_BENCH_INT;
	f->i = val;
}

void az_bench_row_num(struct az_bench_row *r, const char *key, double val, int prec)
{
	struct az_bench_field *f = field_for(r, key);

	f->kind = AZ_BENCH_NUM;
	f->num = val;
	f->prec = prec < 0 ? 0 : prec > 9 ? 9 : prec;
}

void az_bench_row_none(struct az_bench_row *r, const char *key)
{
	field_for(r, key)->kind = AZ_BENCH_NONE;
}

const struct az_bench_field *az_bench_row_get(const struct az_bench_row *r, const char *key)
{
	uint32_t i;

	for (i = 0; i < r->n; i++)
		if (strncmp(r->f[i].key, key, AZ_BENCH_KEY_MAX - 1) == 0)
			return &r->f[i];
	return NULL;
}

double az_bench_row_val(const struct az_bench_row *r, const char *key, double dflt)
{
	const struct az_bench_field *f = az_bench_row_get(r, key);

	if (f && f->kind == AZ_BENCH_INT)
		return (double)f->i;
	if (f && f->kind == AZ_BENCH_NUM)
		return f->num;
	return dflt;
}

const char *az_bench_row_sval(const struct az_bench_row *r, const char *key)
{
	const struct az_bench_field *f = az_bench_row_get(r, key);

	return f && f->kind == AZ_BENCH_STR ? f->str : "";
}

int az_bench_table_add(struct az_bench_table *t, const struct az_bench_row *r)
{
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 32;
		struct az_bench_row *rows = realloc(t->rows, (size_t)cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		t->cap = cap;
	}
	t->rows[t->n++] = *r;
	return 0;
}

void az_bench_table_free(struct az_bench_table *t)
{
	free(t->rows);
	t->rows = NULL;
	t->n = t->cap = 0;
}

/* ---- formatting ---- */

enum fmt { FMT_TABLE, FMT_CSV, FMT_JSON };

/* The cell text of f (NULL: absent) in the given format, without CSV/JSON string quoting. */
static void cell(const struct az_bench_field *f, enum fmt fmt, char *buf, size_t len)
{
	if (!f || f->kind == AZ_BENCH_NONE ||
	    (f->kind == AZ_BENCH_NUM && !isfinite(f->num))) {
		snprintf(buf, len, "%s", fmt == FMT_TABLE ? "-" : fmt == FMT_JSON ? "null" : "");
		return;
	}
	switch (f->kind) {
	case AZ_BENCH_STR:
		snprintf(buf, len, "%s", f->str);
		break;
	case AZ_BENCH_INT:
		snprintf(buf, len, "%lld", (long long)f->i);
		break;
	default:
		snprintf(buf, len, "%.*f", f->prec, f->num);
		break;
	}
}

/* Columns: union of keys over all rows in first-seen order. Returns the count. */
static uint32_t columns(const struct az_bench_table *t, const char *cols[MAX_COLS])
{
	uint32_t n = 0, i, j, k;

	for (i = 0; i < t->n; i++)
		for (j = 0; j < t->rows[i].n; j++) {
			const char *key = t->rows[i].f[j].key;

			for (k = 0; k < n && strcmp(cols[k], key) != 0; k++)
				;
			if (k == n && n < MAX_COLS)
				cols[n++] = key;
		}
	return n;
}

/* The table's columns: every key (cols NULL), or the specs "key" / "key:heading" of cols that
 * some row has. Fills keys[] and heads[]; returns the count. */
static uint32_t table_columns(const struct az_bench_table *t, const char *const *cols,
			      const char *keys[MAX_COLS], char heads[MAX_COLS][AZ_BENCH_KEY_MAX])
{
	const char *all[MAX_COLS];
	uint32_t nall = columns(t, all), n = 0, c, k;

	for (c = 0; c < nall && !cols; c++) {
		keys[n] = all[c];
		snprintf(heads[n++], AZ_BENCH_KEY_MAX, "%s", all[c]);
	}
	for (c = 0; cols && cols[c] && n < MAX_COLS; c++) {
		const char *colon = strchr(cols[c], ':');
		size_t len = colon ? (size_t)(colon - cols[c]) : strlen(cols[c]);

		for (k = 0; k < nall && (strlen(all[k]) != len || strncmp(all[k], cols[c], len));
		     k++)
			;
		if (k == nall)
			continue; /* no row has it */
		keys[n] = all[k];
		snprintf(heads[n++], AZ_BENCH_KEY_MAX, "%s", colon ? colon + 1 : all[k]);
	}
	return n;
}

/* A text cell of the table is cut to this many characters (CSV and JSON keep it whole). */
#define TABLE_TEXT_MAX 20

static void table_cell(const struct az_bench_field *f, char *buf, size_t len)
{
	cell(f, FMT_TABLE, buf, len);
	if (f && f->kind == AZ_BENCH_STR && strlen(buf) > TABLE_TEXT_MAX)
		snprintf(buf + TABLE_TEXT_MAX - 3, len - (TABLE_TEXT_MAX - 3), "...");
}

void az_bench_print_table(const struct az_bench_table *t, const char *const *cols, FILE *out)
{
	const char *keys[MAX_COLS];
	char heads[MAX_COLS][AZ_BENCH_KEY_MAX];
	int width[MAX_COLS];
	uint32_t n = table_columns(t, cols, keys, heads), i, c;
	char buf[CELL_MAX];

	for (c = 0; c < n; c++) {
		width[c] = (int)strlen(heads[c]);
		for (i = 0; i < t->n; i++) {
			table_cell(az_bench_row_get(&t->rows[i], keys[c]), buf, sizeof(buf));
			if ((int)strlen(buf) > width[c])
				width[c] = (int)strlen(buf);
		}
	}
	for (c = 0; c < n; c++)
		fprintf(out, "%s%-*s", c ? "  " : "", c + 1 < n ? width[c] : 0, heads[c]);
	fputc('\n', out);
	for (i = 0; i < t->n; i++) {
		for (c = 0; c < n; c++) {
			const struct az_bench_field *f = az_bench_row_get(&t->rows[i], keys[c]);

			table_cell(f, buf, sizeof(buf));
			/* Numbers right-aligned, text left-aligned; no trailing blanks. */
			if (f && (f->kind == AZ_BENCH_INT || f->kind == AZ_BENCH_NUM))
				fprintf(out, "%s%*s", c ? "  " : "", width[c], buf);
			else if (c + 1 < n)
				fprintf(out, "%s%-*s", c ? "  " : "", width[c], buf);
			else
				fprintf(out, "%s%s", c ? "  " : "", buf);
		}
		fputc('\n', out);
	}
	if (cols && t->n) {
		const char *all[MAX_COLS];
		uint32_t nall = columns(t, all);

		if (nall > n)
			fprintf(out, "(%u of %u columns shown; --csv FILE or --json has them all)\n",
				n, nall);
	}
}

static void json_string(const char *s, FILE *out)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

static void json_fields(const struct az_bench_row *r, FILE *out, int first)
{
	char buf[CELL_MAX];
	uint32_t j;

	for (j = 0; j < r->n; j++) {
		const struct az_bench_field *f = &r->f[j];

		if (!first || j)
			fputs(", ", out);
		json_string(f->key, out);
		fputs(": ", out);
		if (f->kind == AZ_BENCH_STR) {
			json_string(f->str, out);
		} else if (f->kind == AZ_BENCH_NUM && isfinite(f->num)) {
			/* Full precision in JSON: consumers compute with it. */
			fprintf(out, "%.17g", f->num);
		} else {
			cell(f, FMT_JSON, buf, sizeof(buf));
			fputs(buf, out);
		}
	}
}

void az_bench_print_json_row(const struct az_bench_row *r, FILE *out)
{
	fputc('{', out);
	json_fields(r, out, 1);
	fputs("}\n", out);
}

void az_bench_print_json(const struct az_bench_table *t, FILE *out)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		az_bench_print_json_row(&t->rows[i], out);
}

void az_bench_put_quoted(FILE *f, const char *s, char q)
{
	fputc(q, f);
	for (; *s; s++) {
		if (*s == q)
			fputc(q, f);
		fputc(*s, f);
	}
	fputc(q, f);
}

static void csv_cell(const char *s, FILE *out)
{
	if (!strpbrk(s, ",\"\n\r"))
		fputs(s, out);
	else
		az_bench_put_quoted(out, s, '"');
}

int az_bench_write_csv(const struct az_bench_table *t, const char *path, char *err,
		       size_t errlen)
{
	const char *cols[MAX_COLS];
	uint32_t n = columns(t, cols), i, c;
	char buf[CELL_MAX];
	FILE *f = fopen(path, "w");

	if (!f) {
		int e = errno;

		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	for (c = 0; c < n; c++) {
		if (c)
			fputc(',', f);
		csv_cell(cols[c], f);
	}
	fputc('\n', f);
	for (i = 0; i < t->n; i++) {
		for (c = 0; c < n; c++) {
			if (c)
				fputc(',', f);
			cell(az_bench_row_get(&t->rows[i], cols[c]), FMT_CSV, buf, sizeof(buf));
			csv_cell(buf, f);
		}
		fputc('\n', f);
	}
	if (ferror(f) | fclose(f)) {
		snprintf(err, errlen, "%s: write failed", path);
		return -EIO;
	}
	return 0;
}

void az_bench_field_text(const struct az_bench_field *f, char *buf, size_t len)
{
	cell(f, FMT_TABLE, buf, len);
}

/* ---- checking the output paths before a measurement ---- */

/* path must name a file (not a directory) in an existing directory we may write to. */
static int check_output(const char *mode, const char *opt, const char *path)
{
	char dir[1024];
	const char *slash = strrchr(path, '/');
	struct stat sb;

	if (!*path || (slash && !slash[1]) || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))) {
		fprintf(stderr, "azbench %s: %s %s: is a directory; give a file name\n", mode, opt,
			path);
		return -EINVAL;
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "azbench %s: %s %s: directory %s does not exist; create it or "
			"choose another path\n", mode, opt, path, dir);
		return -ENOENT;
	}
	/* Try it: access() says yes to root on read-only places such as /proc. */
	char probe[1100];
	int fd, e;

	snprintf(probe, sizeof(probe), "%s/.azbench-probe.%ld", dir, (long)getpid());
	fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		e = errno;
		fprintf(stderr, "azbench %s: %s %s: cannot create files in %s (%s); choose "
			"another path\n", mode, opt, path, dir,
			e == ENOENT ? "a virtual filesystem" : strerror(e));
		return -e;
	}
	close(fd);
	unlink(probe);
	fd = open(path, O_WRONLY | O_CLOEXEC); /* an existing file must be writable too */
	if (fd < 0 && errno != ENOENT) {
		e = errno;
		fprintf(stderr, "azbench %s: %s %s: cannot write it (%s); choose another path\n",
			mode, opt, path, strerror(e));
		return -e;
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

int az_bench_check_outputs(const char *mode, const struct az_bench_opts *o)
{
	char gp[1024];

	if (o->csv && check_output(mode, "--csv", o->csv) < 0)
		return -EINVAL;
	if (o->plot && check_output(mode, "--plot", o->plot) < 0)
		return -EINVAL;
	if (o->plot && az_spawn_find("gnuplot", gp, sizeof(gp)) < 0) {
		fprintf(stderr, "azbench %s: --plot: gnuplot not found in PATH: install it (e.g. "
			"apt-get install gnuplot-nox) or leave out --plot\n", mode);
		return -ENOENT;
	}
	return 0;
}

/* ---- emitting ---- */

int az_bench_emit(const struct az_bench_table *t, const struct az_bench_opts *o,
		  const struct az_bench_plot_spec *ps)
{
	char err[1024] = "";
	int rc = 0;

	if (o->json)
		az_bench_print_json(t, stdout);
	else
		az_bench_print_table(t, o->table_cols, stdout);
	fflush(stdout);
	if (o->csv && az_bench_write_csv(t, o->csv, err, sizeof(err)) != 0) {
		fprintf(stderr, "azbench: --csv: %s\n", err);
		rc = 1;
	}
	if (o->plot && !ps) {
		fprintf(stderr, "azbench: --plot: this mode has nothing to plot\n");
		rc = 1;
	} else if (o->plot && az_bench_plot(t, ps, o->plot, err, sizeof(err)) != 0) {
		fprintf(stderr, "azbench: --plot: %s\n", err);
		rc = 1;
	}
	return rc;
}

/* head then text, broken at spaces into lines of at most 100 columns; continuation lines are
 * indented by two spaces. A word longer than a line gets a line of its own. */
static void print_wrapped(const char *head, const char *text, FILE *out)
{
	enum { COLS = 100, INDENT = 2 };
	size_t col = strlen(head);
	int empty = 1; /* no word on this line yet */

	fputs(head, out);
	while (*text) {
		size_t n = strcspn(text, " ");

		if (!empty && col + 1 + n > COLS) {
			fprintf(out, "\n%*s", INDENT, "");
			col = INDENT;
			empty = 1;
		}
		if (!empty) {
			fputc(' ', out);
			col++;
		}
		fprintf(out, "%.*s", (int)n, text);
		col += n;
		empty = 0;
		text += n;
		while (*text == ' ')
			text++;
	}
	fputc('\n', out);
}

void az_bench_recommend(const struct az_bench_opts *o, const char *text,
			const struct az_bench_row *rec)
{
	if (o->json) {
		fputs("{\"recommendation\": ", stdout);
		json_string(text, stdout);
		if (rec)
			json_fields(rec, stdout, 0);
		fputs("}\n", stdout);
	} else {
		print_wrapped("recommendation: ", text, stdout);
	}
	fflush(stdout);
}

void az_bench_progress(const struct az_bench_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (o->quiet)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

uint64_t az_bench_now_ns(void)
{
	return az_now_ns();
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

void az_bench_sort_u32(uint32_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), u32_cmp);
}

uint32_t az_bench_quantile(const uint32_t *sorted, size_t n, double q)
{
	double rank;
	size_t k;

	if (n == 0)
		return 0;
	rank = ceil(q * (double)n);
	k = rank < 1 ? 0 : (size_t)rank - 1;
	return sorted[k < n ? k : n - 1];
}

int az_bench_parse_games(const char *s, const char **games, int *n)
{
	if (strcmp(s, "all") == 0) {
		games[0] = "tictactoe";
		games[1] = "connect4";
		*n = 2;
		return 0;
	}
	const struct az_game *g = az_game_find(s);
	if (!g)
		return -EINVAL;
	games[0] = g->name;
	*n = 1;
	return 0;
}

int az_bench_config_check(const char *mode, struct az_config *cfg)
{
	char why[400];

	snprintf(cfg->out, sizeof(cfg->out), "azbench"); /* required by the check; unused here */
	if (az_config_validate(cfg, why, sizeof(why)) == 0)
		return 0;
	fprintf(stderr, "azbench %s: %s: %s\n", mode, cfg->game, why);
	return -EINVAL;
}

int az_bench_net_check(const char *mode, const char *game, uint32_t net, uint32_t hidden,
		       uint32_t blocks)
{
	struct az_config cfg;

	AZ_ASSERT(az_config_defaults(&cfg, game) == 0);
	if (hidden) {
		cfg.net = net;
		cfg.hidden = hidden;
		cfg.blocks = blocks;
	}
	return az_bench_config_check(mode, &cfg);
}

const char *az_bench_boards_help(void)
{
	static char buf[256];

	return az_config_game_list(AZ_GAMES_BOARD, ", ", buf, sizeof(buf));
}
