/* SPDX-License-Identifier: MIT */
/* azbench --plot: rows of a result table drawn as a PNG by gnuplot (tools/bench/bench_common.h),
 * one line per series, through a scratch directory that is removed afterwards. */
#include "tools/bench/bench_common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "base/spawn.h"

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
	az_bench_put_quoted(f, s, '\'');
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
		char buf[64];

		if (!isfinite(x) || !isfinite(y) || (ps->keep && !ps->keep(r, ps->keep_arg)))
			continue;
		if ((ps->logx && x <= 0) || (ps->logy && y <= 0))
			continue;
		p->series[0] = '\0';
		for (k = 0; k < AZ_ARRAY_LEN(ps->series) && ps->series[k]; k++) {
			const char *fmt = ps->series_fmt[k];
			char part[128];

			az_bench_field_text(az_bench_row_get(r, ps->series[k]), buf, sizeof(buf));
			snprintf(part, sizeof(part), fmt ? fmt : "%s", buf);
			if (k)
				strncat(p->series, fmt ? ", " : "/",
					sizeof(p->series) - strlen(p->series) - 1);
			strncat(p->series, part, sizeof(p->series) - strlen(p->series) - 1);
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

