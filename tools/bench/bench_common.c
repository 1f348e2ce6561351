/* SPDX-License-Identifier: MIT */
/* azbench output helpers: rows of ordered key/value pairs rendered as a table, JSON lines, CSV
 * or a gnuplot PNG, the common options, and sample statistics. */
#include "games/game.h"
#include "gpu/backend.h"
#include "net/model.h"
#include "tools/bench/bench_common.h"

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

const char az_bench_common_help[] =
	"  --seconds S        time budget of the whole run (split across the sweep)\n"
	"  --csv FILE         also write the rows as CSV\n"
	"  --json             print one JSON object per row (JSON lines) instead of the table\n"
	"  --plot FILE.png    also draw a PNG with gnuplot\n"
	"  --quiet            no progress messages on stderr\n";

int az_bench_common_opt(struct az_bench_opts *o, int code, const char *arg)
{
	char *end;

	switch (code) {
	case AZ_BENCH_OPT_SECONDS:
		o->seconds = strtod(arg, &end);
		if (end == arg || *end || !(o->seconds > 0 && o->seconds <= 86400)) {
			fprintf(stderr,
				"azbench: --seconds wants a number in (0, 86400], got '%s'\n", arg);
			return -EINVAL;
		}
		return 1;
	case AZ_BENCH_OPT_CSV: /* file names */
	case AZ_BENCH_OPT_PLOT:
		*(code == AZ_BENCH_OPT_CSV ? &o->csv : &o->plot) = arg;
		return 1;
	case AZ_BENCH_OPT_JSON: /* flags */
	case AZ_BENCH_OPT_QUIET:
		*(code == AZ_BENCH_OPT_JSON ? &o->json : &o->quiet) = 1;
		return 1;
	default:
		return 0;
	}
}

static int opt_games(const char *mode, const char *arg, const char **games, int *n)
{
	int rc = az_bench_parse_games(arg, games, n);

	if (rc < 0) {
		/* The games azbench can run: those usable without configuration (Tangled needs a
		 * graph set up first), not the whole registry. */
		char names[256] = "";
		for (size_t i = 0, k = 0; az_game_registry[i]; i++)
			if (az_game_find(az_game_registry[i]->name))
				k += (size_t)snprintf(names + k, sizeof(names) - k, "%s, ",
						      az_game_registry[i]->name);
		fprintf(stderr, "azbench %s: %s '%s' (benchmarked games: %sor all)\n", mode,
			az_game_desc_find(arg) ? "no benchmark for game" : "unknown game", arg,
			names);
	}
	return rc;
}

int az_bench_opt_list(const char *mode, const char *opt, const char *arg, uint32_t *out, int *n,
		      int max, uint32_t hi)
{
	int rc = az_bench_parse_u32_list(arg, out, max, 1, hi);

	if (rc < 0) {
		fprintf(stderr, "azbench %s: %s wants up to %d values in [1, %u], got '%s'\n", mode,
			opt, max, hi, arg);
		return rc;
	}
	*n = rc;
	return 0;
}

/* One shared mode option, else p->opt's answer (-ENOENT without one). */
static int mode_opt(const struct az_bench_argv *p, int code, const char *arg)
{
	switch (code) {
	case AZ_BENCH_OPT_GAME:
		if (!p->games)
			break;
		return opt_games(p->mode, arg, p->games, p->ngames);
	case AZ_BENCH_OPT_BATCHES:
		if (!p->batches)
			break;
		return az_bench_opt_list(p->mode, "--batches", arg, p->batches, p->nbatches,
					 p->max_batches, 65536);
	case AZ_BENCH_OPT_NET:
		if (!p->hidden)
			break;
		if (az_arch_parse(arg, p->hidden, p->blocks) < 0) {
			fprintf(stderr, "azbench %s: --net wants HxR, e.g. 64x2\n", p->mode);
			return -EINVAL;
		}
		return 0;
	case AZ_BENCH_OPT_BACKEND:
		if (!p->backend)
			break;
		if (az_backend_parse(arg, p->backend) < 0) {
			fprintf(stderr, "azbench %s: --backend: auto, cpu or cuda\n", p->mode);
			return -EINVAL;
		}
		return 0;
	}
	return p->opt ? p->opt(p->mode_opts, code, arg) : -ENOENT;
}

int az_bench_parse_argv(const struct az_bench_argv *p, int argc, char **argv)
{
	int c;

	if (p->games)
		az_bench_parse_games("all", p->games, p->ngames);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", p->longopts, NULL)) != -1) {
		int r = az_bench_common_opt(p->common, c, optarg);

		if (r < 0)
			return 2;
		if (r == 1)
			continue;
		if (c == 'h' || c == AZ_BENCH_OPT_HELP) {
			p->usage(stdout);
			return 1;
		}
		r = c == '?' || c == ':' ? -ENOENT : mode_opt(p, c, optarg);
		if (r == -ENOENT)
			p->usage(stderr);
		if (r < 0)
			return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "azbench %s: unexpected argument '%s'\n", p->mode, argv[optind]);
		return 2;
	}
	return 0;
}

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

void az_bench_print_table(const struct az_bench_table *t, FILE *out)
{
	const char *cols[MAX_COLS];
	int width[MAX_COLS];
	uint32_t n = columns(t, cols), i, c;
	char buf[CELL_MAX];

	for (c = 0; c < n; c++) {
		width[c] = (int)strlen(cols[c]);
		for (i = 0; i < t->n; i++) {
			cell(az_bench_row_get(&t->rows[i], cols[c]), FMT_TABLE, buf, sizeof(buf));
			if ((int)strlen(buf) > width[c])
				width[c] = (int)strlen(buf);
		}
	}
	for (c = 0; c < n; c++)
		fprintf(out, "%s%-*s", c ? "  " : "", width[c], cols[c]);
	fputc('\n', out);
	for (i = 0; i < t->n; i++) {
		for (c = 0; c < n; c++) {
			const struct az_bench_field *f = az_bench_row_get(&t->rows[i], cols[c]);

			cell(f, FMT_TABLE, buf, sizeof(buf));
			/* Numbers right-aligned, text left-aligned. */
			if (f && (f->kind == AZ_BENCH_INT || f->kind == AZ_BENCH_NUM))
				fprintf(out, "%s%*s", c ? "  " : "", width[c], buf);
			else
				fprintf(out, "%s%-*s", c ? "  " : "", width[c], buf);
		}
		fputc('\n', out);
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

static void csv_cell(const char *s, FILE *out)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
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

/* ---- plots ---- */

struct point {
	char series[3 * AZ_BENCH_STR_MAX];
	double x, y;
};

static int point_cmp(const void *a, const void *b)
{
	const struct point *p = a, *q = b;
	int c = strcmp(p->series, q->series);

	if (c)
		return c;
	return (p->x > q->x) - (p->x < q->x);
}

/* gnuplot single-quoted string: a quote is doubled. */
static void gp_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static size_t collect_points(const struct az_bench_table *t, const struct az_bench_plot_spec *ps,
			     struct point *pts)
{
	size_t n = 0;
	uint32_t i, k;

	for (i = 0; i < t->n; i++) {
		const struct az_bench_row *r = &t->rows[i];
		double x = az_bench_row_val(r, ps->xkey, NAN);
		double y = az_bench_row_val(r, ps->ykey, NAN);
		struct point *p = &pts[n];
		char buf[CELL_MAX];

		if (!isfinite(x) || !isfinite(y) || (ps->keep && !ps->keep(r, ps->keep_arg)))
			continue;
		if ((ps->logx && x <= 0) || (ps->logy && y <= 0))
			continue;
		p->series[0] = '\0';
		for (k = 0; k < AZ_ARRAY_LEN(ps->series) && ps->series[k]; k++) {
			cell(az_bench_row_get(r, ps->series[k]), FMT_TABLE, buf, sizeof(buf));
			if (k)
				strncat(p->series, "/", sizeof(p->series) - strlen(p->series) - 1);
			strncat(p->series, buf, sizeof(p->series) - strlen(p->series) - 1);
		}
		p->x = x;
		p->y = y;
		n++;
	}
	qsort(pts, n, sizeof(*pts), point_cmp);
	return n;
}

/* Data blocks (one per series, separated by two blank lines) and the script. */
static int write_plot_files(const struct point *pts, size_t n,
			    const struct az_bench_plot_spec *ps, const char *data,
			    const char *script, const char *png)
{
	FILE *d = fopen(data, "w"), *s = d ? fopen(script, "w") : NULL;
	size_t i, block = 0;
	int rc = 0;

	if (!d || !s) {
		rc = -errno;
		goto out;
	}
	fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
	      "  set terminal pngcairo size 1100,650\n} else {\n"
	      "  set terminal png size 1100,650\n}\n"
	      "set termoption noenhanced\n", s);
	fputs("set output ", s);
	gp_quoted(s, png);
	fputs("\nset title ", s);
	gp_quoted(s, ps->title ? ps->title : "azbench");
	fputs("\nset xlabel ", s);
	gp_quoted(s, ps->xkey);
	fputs("\nset ylabel ", s);
	gp_quoted(s, ps->ykey);
	fprintf(s, "\nset grid\nset key outside right\n%s%splot ",
		ps->logx ? "set logscale x\n" : "", ps->logy ? "set logscale y\n" : "");
	for (i = 0; i < n; i++) {
		if (i == 0 || strcmp(pts[i].series, pts[i - 1].series) != 0) {
			if (i) {
				fputs("\n\n", d);
				fputs(", \\\n  ", s);
			}
			gp_quoted(s, data);
			fprintf(s, " index %zu using 1:2 with linespoints title ", block++);
			gp_quoted(s, pts[i].series[0] ? pts[i].series : ps->ykey);
		}
		fprintf(d, "%.9g %.9g\n", pts[i].x, pts[i].y);
	}
	fputc('\n', s);
	if (ferror(d) || ferror(s))
		rc = -EIO;
out:
	if (s && fclose(s) && !rc)
		rc = -EIO;
	if (d && fclose(d) && !rc)
		rc = -EIO;
	return rc;
}

/* Run "gnuplot script" with its output in log. Returns 0, -ENOENT (not installed) or -EIO. */
static int run_gnuplot(const char *script, const char *log)
{
	char *argv[] = { "gnuplot", (char *)script, NULL };
	struct az_spawn_opts o = { .log_path = log };
	int st = az_spawn_wait(argv, &o);

	if (st == 127)
		return -ENOENT; /* could not exec it: not installed */
	return st < 0 ? st : st == 0 ? 0 : -EIO;
}

static void read_log_into(const char *log, char *err, size_t errlen)
{
	size_t used = strlen(err), got;
	FILE *f = fopen(log, "r");

	if (!f || used + 2 >= errlen) {
		if (f)
			fclose(f);
		return;
	}
	strncat(err, ": ", errlen - used - 1);
	used = strlen(err);
	got = fread(err + used, 1, errlen - used - 1, f);
	err[used + got] = '\0';
	while (used + got > 0 && err[used + got - 1] == '\n')
		err[--got + used] = '\0';
	fclose(f);
}

int az_bench_plot(const struct az_bench_table *t, const struct az_bench_plot_spec *ps,
		  const char *png, char *err, size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	char dir[512], data[600], script[600], log[600];
	struct point *pts;
	size_t n;
	int rc;

	pts = calloc(t->n ? t->n : 1, sizeof(*pts));
	if (!pts) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	n = collect_points(t, ps, pts);
	if (n == 0) {
		snprintf(err, errlen, "nothing to plot (no row has %s and %s)", ps->xkey, ps->ykey);
		rc = -ENODATA;
		goto err_free;
	}
	snprintf(dir, sizeof(dir), "%s/azbench-plot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(-rc));
		goto err_free;
	}
	snprintf(data, sizeof(data), "%s/data.txt", dir);
	snprintf(script, sizeof(script), "%s/plot.gp", dir);
	snprintf(log, sizeof(log), "%s/gnuplot.log", dir);
	rc = write_plot_files(pts, n, ps, data, script, png);
	if (rc) {
		snprintf(err, errlen, "%s: cannot write plot files (%s)", dir, strerror(-rc));
		goto err_rmdir;
	}
	rc = run_gnuplot(script, log);
	if (rc == -ENOENT)
		snprintf(err, errlen, "gnuplot not found in PATH: install it (e.g. apt-get install "
			 "gnuplot-nox) or leave out --plot");
	else if (rc) {
		snprintf(err, errlen, "gnuplot failed");
		read_log_into(log, err, errlen);
	}
err_rmdir:
	unlink(log);
	unlink(script);
	unlink(data);
	rmdir(dir);
err_free:
	free(pts);
	return rc;
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
		az_bench_print_table(t, stdout);
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
		printf("recommendation: %s\n", text);
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
