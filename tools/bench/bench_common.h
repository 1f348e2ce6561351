/* SPDX-License-Identifier: MIT */
/* Output shared by every azbench mode: result rows of ordered (key, value) pairs, printed as an
 * aligned table, CSV, JSON lines or a gnuplot PNG; the options that choose among them; and the
 * closing recommendation line. */
#ifndef AZ_BENCH_COMMON_H
#define AZ_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>


#define AZ_BENCH_MAX_FIELDS 32
#define AZ_BENCH_KEY_MAX 48 /* "connect4_avx512_peak_evals_per_s" fits */
#define AZ_BENCH_STR_MAX 48

enum az_bench_kind {
	AZ_BENCH_NONE = 0, /* not applicable: "-" in the table, empty in CSV, null in JSON */
	AZ_BENCH_STR,
	AZ_BENCH_INT,
	AZ_BENCH_NUM,
};

struct az_bench_field {
	char key[AZ_BENCH_KEY_MAX];
	enum az_bench_kind kind;
	int prec; /* AZ_BENCH_NUM: digits after the point in the table and CSV */
	int64_t i;
	double num;
	char str[AZ_BENCH_STR_MAX];
};

/* One result: fields in the order they were set. Setting a key again replaces its value in
 * place. Keys longer than AZ_BENCH_KEY_MAX - 1 and strings longer than AZ_BENCH_STR_MAX - 1 are
 * truncated; a row holds at most AZ_BENCH_MAX_FIELDS fields (further keys abort: a bug). */
struct az_bench_row {
	struct az_bench_field f[AZ_BENCH_MAX_FIELDS];
	uint32_t n;
};

/* A growing list of rows (owned copies). Zero-initialise, then az_bench_table_free(). */
struct az_bench_table {
	struct az_bench_row *rows;
	uint32_t n;
	uint32_t cap;
};

/* Options every mode accepts (AZ_BENCH_COMMON_OPTS, tools/bench/bench_opts.h). */
struct az_bench_opts {
	double seconds;   /* total time budget of the run; the mode sets its default first */
	const char *csv;  /* --csv FILE, or NULL */
	const char *plot; /* --plot FILE.png, or NULL */
	int json;         /* --json: JSON lines on stdout instead of the table */
	int quiet;        /* --quiet: no progress on stderr */
	/* Set by the mode: the table's columns (az_bench_print_table()); NULL: all of them. */
	const char *const *table_cols;
};

/* For the modes' --help, from the registry: the games --net resnet takes, "tictactoe, connect4"
 * (a static string). */
const char *az_bench_boards_help(void);

struct az_config;

/* Whether azrun would accept cfg (az_config_validate: the same caps, e.g. at most 1024 ResNet
 * filters, a shared evaluation cache below 4 GiB, a board shape for --net resnet), so that a
 * setting azrun refuses is refused before anything is measured. cfg->out is set to a
 * placeholder (azbench has no run directory). Returns 0, or -EINVAL after "azbench MODE: GAME:
 * azrun's message" on stderr. */
int az_bench_config_check(const char *mode, struct az_config *cfg);

/* az_bench_config_check() of azrun's defaults for game with a --net override (hidden 0: the
 * game's network kept). */
int az_bench_net_check(const char *mode, const char *game, uint32_t net, uint32_t hidden,
		       uint32_t blocks);

/* Before any measurement: --csv and --plot name files in existing, writable directories, and
 * gnuplot is in PATH when --plot is given. Returns 0, or -EINVAL / -ENOENT after one line
 * "azbench <mode>: --csv PATH: ..." on stderr (az_bench_parse() calls it). */
int az_bench_check_outputs(const char *mode, const struct az_bench_opts *o);

/* Parse "a,b,c" into out[0..max-1] (each in [lo, hi]). Returns the count (>= 1) or -EINVAL
 * (empty, malformed, out of range or more than max items). */
int az_bench_parse_u32_list(const char *s, uint32_t *out, int max, uint32_t lo, uint32_t hi);

/* ---- rows ---- */

void az_bench_row_str(struct az_bench_row *r, const char *key, const char *val);
void az_bench_row_int(struct az_bench_row *r, const char *key, int64_t val);
void az_bench_row_num(struct az_bench_row *r, const char *key, double val, int prec);
void az_bench_row_none(struct az_bench_row *r, const char *key);

/* f's text as the table shows it ("-" when f is NULL or has no value). */
void az_bench_field_text(const struct az_bench_field *f, char *buf, size_t len);

/* Field with this key, or NULL. */
const struct az_bench_field *az_bench_row_get(const struct az_bench_row *r, const char *key);

/* Numeric value of key (INT or NUM), or `dflt` when absent, NONE or a string. */
double az_bench_row_val(const struct az_bench_row *r, const char *key, double dflt);

/* String value of key, or "" when absent or not a string. */
const char *az_bench_row_sval(const struct az_bench_row *r, const char *key);

/* Append a copy of r. Returns 0 or -ENOMEM. */
int az_bench_table_add(struct az_bench_table *t, const struct az_bench_row *r);
void az_bench_table_free(struct az_bench_table *t);

/* ---- output ---- */

/* Aligned table: the columns are the union of the rows' keys in first-seen order, or (cols not
 * NULL) the NULL-terminated "key" or "key:heading" entries that some row has, followed by a
 * line saying how many columns only --csv and --json show. Text cells longer than 20
 * characters are cut ("..."). */
void az_bench_print_table(const struct az_bench_table *t, const char *const *cols, FILE *out);

/* One JSON object per line (JSON lines), keys in row order; NONE and non-finite numbers print as
 * null. */
void az_bench_print_json(const struct az_bench_table *t, FILE *out);
void az_bench_print_json_row(const struct az_bench_row *r, FILE *out);

/* s between two q characters, each q inside doubled (CSV's '"', gnuplot's '\''). */
void az_bench_put_quoted(FILE *f, const char *s, char q);

/* CSV with a header line (RFC 4180 quoting). Returns 0 or -errno (message in err). */
int az_bench_write_csv(const struct az_bench_table *t, const char *path, char *err,
		       size_t errlen);

/* What to plot: y against x, one line per distinct series value, rows filtered by keep. */
struct az_bench_plot_spec {
	const char *title;
	const char *xkey;
	const char *ykey;
	const char *series[4]; /* keys whose values, joined by '/', name a line; NULL-terminated */
	/* Per series key, NULL or a printf format for its value ("G=%s games per worker"): a
	 * formatted part is joined with ", " instead of '/'. */
	const char *series_fmt[4];
	int logx, logy;
	int (*keep)(const struct az_bench_row *r, void *arg); /* NULL: every row */
	void *keep_arg;
};

/* Write a PNG with gnuplot: a data file and a script go to a fresh directory under $TMPDIR (or
 * /tmp), which is removed afterwards. Returns 0, -ENOENT when gnuplot is not installed, -ENODATA
 * when no row has both keys, or another -errno; a message goes to err. */
int az_bench_plot(const struct az_bench_table *t, const struct az_bench_plot_spec *ps,
		  const char *png, char *err, size_t errlen);

/* Emit the results as the options ask: the table (or JSON lines) on stdout, then --csv and
 * --plot (ps may be NULL when the mode has nothing to plot). Returns 0, or 1 when a file could
 * not be written (message on stderr). */
int az_bench_emit(const struct az_bench_table *t, const struct az_bench_opts *o,
		  const struct az_bench_plot_spec *ps);

/* Final recommendation: "recommendation: <text>" on stdout, or with --json one object
 * {"recommendation": text, <rec's fields>...}. rec may be NULL. */
void az_bench_recommend(const struct az_bench_opts *o, const char *text,
			const struct az_bench_row *rec);

/* Progress line on stderr (suppressed by --quiet). */
void az_bench_progress(const struct az_bench_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Monotonic clock in nanoseconds. */
uint64_t az_bench_now_ns(void);

/* Sort n samples (e.g. latencies in ns) ascending, in place. */
void az_bench_sort_u32(uint32_t *v, size_t n);

/* Quantile q in [0, 1] of n sorted samples (nearest rank: the smallest sample with at least
 * q * n samples at or below it). 0 when n == 0. */
uint32_t az_bench_quantile(const uint32_t *sorted, size_t n, double q);

/* --game for the infer/pipeline/train modes: "all" (tictactoe and connect4) or one game name;
 * fills games[0..*n) with canonical names. Returns 0 or -EINVAL for an unknown game. */
int az_bench_parse_games(const char *s, const char **games, int *n);

#endif
