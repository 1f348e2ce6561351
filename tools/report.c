/* SPDX-License-Identifier: MIT */
/* `azrun report`: plots of a run's metrics.jsonl drawn by gnuplot (losses, arena score, Elo
 * estimate, throughput and batch fill, time per phase) and a summary page linking them, all in
 * DIR/report/. Works on a finished run and on one still in progress (completed iterations). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/spawn.h"
#include "run/runinfo.h"
#include "tools/config.h"
#include "tools/report_bench.h"
#include "tools/subcommands.h"
#include "base/util.h"
#include "help_text.h" /* generated from tools/help/ */

#define PATH_LEN 1200

struct plot {
	const char *file, *title, *caption;
};

static const struct plot plots[] = {
	{"loss.png", "Training loss",
	 "Policy loss (cross-entropy against the search's visit distribution) and value loss "
	 "(squared error against the game result) at the end of each iteration's training."},
	{"arena.png", "Arena score",
	 "Score of each iteration's candidate against the best network (win 1, draw 1/2); "
	 "candidates at or above the threshold were promoted."},
	{"elo.png", "Elo estimate",
	 "Elo of the best network relative to the first (iteration 0, rating 0), and of each "
	 "candidate, from the arena scores (formula below)."},
	{"throughput.png", "Self-play throughput, batch fill and evaluation cache",
	 "MCTS simulations and network evaluations per second during self-play (a simulation whose "
	 "leaf the evaluation cache answers needs no evaluation), the mean batch the inference "
	 "process ran, and the share of leaves the cache answered."},
	{"time.png", "Time per phase",
	 "Wall-clock seconds of self-play, training, arena and, with --bench, the benchmark in "
	 "each iteration."},
};
#define NPLOTS (sizeof(plots) / sizeof(plots[0]))

static const char elo_note[] =
	"Elo: an arena score s of the candidate against the best network gives a rating "
	"difference d = 400 log10(s / (1 - s)), with s clamped to [0.01, 0.99] (|d| <= 798). "
	"The candidate is rated best + d; when it is promoted its rating becomes the best's. "
	"Ratings are relative to the first network (iteration 0, rating 0), accumulated over "
	"promotions, so errors add up: read them as a trend, not as absolute strength.";

/* --help's notes: the Elo note, as the summary page has it. */
static void report_notes(FILE *f)
{
	az_usage_wrap(f, "", "", 80, elo_note);
}

/* Whether some iteration ran the benchmark (its seconds are in the metrics). */
static int has_bench_time(const struct az_run_info *ri)
{
	for (size_t i = 0; i < ri->nrows; i++)
		if (!isnan(ri->rows[i].bench_s) && ri->rows[i].bench_s > 0)
			return 1;
	return 0;
}

/* A missing value is "?" in data.tsv (the script declares it as gnuplot's missing mark). */
static void put(FILE *f, double v, const char *fmt)
{
	if (isnan(v) || isinf(v))
		fputs("?", f);
	else
		fprintf(f, fmt, v);
}

static int write_data(const char *path, const struct az_run_info *ri, const double *best,
		      const double *cand)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "# iteration\tpolicy_loss\tvalue_loss\tarena_score\tpromoted\telo_best\t"
		   "elo_candidate\tevals_per_s\tmean_batch\tselfplay_s\ttrain_s\tarena_s\t"
		   "games\tpositions\tbench_s\tsims_per_s\teval_cache_hit_pct\n");
	for (size_t i = 0; i < ri->nrows; i++) {
		const struct az_metric_row *r = &ri->rows[i];
		const double v[] = {r->iteration, r->policy_loss, r->value_loss, r->arena_score,
				    isnan(r->arena_score) ? NAN : r->promoted, best[i], cand[i],
				    r->evals_per_s, r->mean_batch,
				    r->selfplay_s, r->train_s, r->arena_s, r->games, r->positions,
				    r->bench_s, r->sims_per_s, 100 * r->eval_cache_hit_rate};
		for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
			put(f, v[k], "%.6g");
			fputc(k + 1 < sizeof(v) / sizeof(v[0]) ? '\t' : '\n', f);
		}
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

/* elo.tsv: the Elo estimates from iteration 0 (the first network, 0 by definition) on. */
static int write_elo(const char *path, const struct az_run_info *ri, const double *best,
		     const double *cand)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs("# iteration\telo_best\telo_candidate\n0\t0\t?\n", f);
	for (size_t i = 0; i < ri->nrows; i++) {
		put(f, ri->rows[i].iteration, "%.6g");
		fputc('\t', f);
		put(f, best[i], "%.6g");
		fputc('\t', f);
		put(f, cand[i], "%.6g");
		fputc('\n', f);
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

/* Resume points: a dashed line before each iteration that an azrun ran after --resume, at
 * x = iteration - 0.5 (index = 1: at row index - 0.5, for the histogram). Returns how many. */
static int resume_marks(FILE *f, const struct az_run_info *ri, int index)
{
	int n = 0;
	fputs("unset arrow\nunset label\n", f);
	for (size_t i = 0; i < ri->nrows; i++) {
		if (!ri->rows[i].resumed)
			continue;
		double x = (index ? (double)i : ri->rows[i].iteration) - 0.5;
		n++;
		fprintf(f, "set arrow %d from %g, graph 0 to %g, graph 1 nohead dt 2 lw 1.5 "
			"lc rgb '#808080' back\n", n, x, x);
		fprintf(f, "set label %d 'resumed' at %g, graph 0.97 right offset -0.5,0 "
			"tc rgb '#606060'\n", n, x);
	}
	return n;
}

/* The legend entry of the resume lines, appended to a plot command. */
static const char resume_key[] =
	", \\\n     NaN with lines dt 2 lw 1.5 lc rgb '#808080' title 'resumed (--resume)'";

/* The script's settings for every plot: the terminal, data file, grid, key and x axis. */
static void write_preamble(FILE *f, double lo, double hi, const char *tics)
{
	/* The key sits right of the plot: at the bottom it shared a row with the x label. */
	fprintf(f,
		"# Generated by azrun report; run with: gnuplot plots.gp (in this directory)\n"
		"if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
		"  set terminal pngcairo size 960,540 noenhanced font ',11'\n"
		"} else {\n"
		"  set terminal png size 960,540 noenhanced\n"
		"}\n"
		"set datafile separator '\\t'\n"
		"set datafile missing '?'\n"
		"set grid\nset key outside right top vertical Left reverse\n"
		"set offsets 0, 0, graph 0.05, graph 0.05\n"
		"set xlabel 'iteration'\n"
		"set xrange [%g:%g]\n%s"
		"D = 'data.tsv'\n\n",
		lo - 0.5, hi + 0.5, tics);
}

/* The gnuplot script; relative names (gnuplot runs in DIR/report). */
static int write_script(const char *path, const struct az_run_info *ri)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	double lo = ri->rows[0].iteration, hi = ri->rows[ri->nrows - 1].iteration;
	/* Histogram labels: at most about 25 on the axis. */
	unsigned every = ri->nrows > 25 ? (unsigned)((ri->nrows + 24) / 25) : 1;
	/* Bars are at 0..n-1; a run of a few iterations keeps them narrow and centred. */
	double pad = ri->nrows < 4 ? (4.0 - (double)ri->nrows) / 2 : 0;
	const char *tics = ri->nrows <= 25 ? "set xtics 1\n" : "";
	write_preamble(f, lo, hi, tics);
	const char *rk = resume_marks(f, ri, 0) ? resume_key : "";
	/* Losses are >= 0: the axis starts at 0 (a bottom offset would push it below). */
	fprintf(f,
		"set output 'loss.png'\nset title 'Training loss'\nset ylabel 'loss'\n"
		"set yrange [0:*]\nset offsets 0, 0, graph 0.05, 0\n"
		"plot D using 1:2 with linespoints pt 7 title 'policy loss', \\\n"
		"     D using 1:3 with linespoints pt 5 title 'value loss'%s\n"
		"set autoscale y\nset offsets 0, 0, graph 0.05, graph 0.05\n\n", rk);
	fprintf(f,
		"set output 'arena.png'\nset title 'Arena: candidate against the best network'\n"
		"set ylabel 'score'\nset yrange [0:1]\n"
		"plot D using 1:4 with linespoints pt 7 title 'candidate score', \\\n"
		"     D using 1:($5 > 0 ? $4 : 1/0) with points pt 6 ps 2.5 title 'promoted', \\\n"
		"     %g with lines dt 2 title 'promotion threshold'%s\n"
		"set autoscale y\n\n", ri->arena_threshold, rk);
	/* From iteration 0, the network the ratings are relative to (elo.tsv). */
	fprintf(f,
		"set output 'elo.png'\nset title 'Elo estimate relative to iteration 0'\n"
		"set ylabel 'Elo'\nset xrange [-0.5:%g]\n"
		"plot 'elo.tsv' using 1:2 with linespoints pt 7 title 'best network', \\\n"
		"     'elo.tsv' using 1:3 with points pt 2 title 'candidate'%s\n"
		"set xrange [%g:%g]\n\n", hi + 0.5, rk, lo - 0.5, hi + 0.5);
	fprintf(f,
		"set output 'throughput.png'\n"
		"set title 'Self-play throughput, batch fill and evaluation cache'\n"
		"set ylabel 'per second'\nset y2label 'mean batch; cache hits (%%)'\n"
		"set ytics nomirror\nset y2tics\nset yrange [0:*]\nset y2range [0:*]\n"
		"set offsets 0, 0, graph 0.05, 0\n"
		"plot D using 1:16 with linespoints pt 9 title 'sims/s', \\\n"
		"     D using 1:8 with linespoints pt 7 title 'evals/s', \\\n"
		"     D using 1:9 axes x1y2 with linespoints pt 5 title 'mean batch', \\\n"
		"     D using 1:17 axes x1y2 with linespoints pt 4 title 'cache hits (%%)'%s\n"
		"unset y2tics\nunset y2label\nset ytics mirror\nset autoscale y\n\n", rk);
	rk = resume_marks(f, ri, 1) ? resume_key : "";
	fprintf(f,
		"set output 'time.png'\nset title 'Time per phase'\nset ylabel 'seconds'\n"
		"set offsets 0, 0, 0, 0\n"
		"set style data histograms\nset style histogram rowstacked\n"
		"set style fill solid 0.8 border -1\nset boxwidth 0.8\n"
		"set xrange [%g:%g]\nunset xtics\nset xtics nomirror\nset yrange [0:*]\n"
		"plot D using 10:xtic(int($0) %% %u == 0 ? stringcolumn(1) : '') "
		"title 'self-play', \\\n"
		"     D using 11 title 'training', D using 12 title 'arena'%s%s\n",
		-0.5 - pad, (double)ri->nrows - 0.5 + pad, every,
		/* an iteration without the benchmark stacks 0 ("?" would drop its bar) */
		has_bench_time(ri) ? ", \\\n     D using (valid(15) ? $15 : 0) title 'benchmark'"
				   : "", rk);
	if (az_report_bench_rows(ri)) { /* after the histogram: back to the iteration axis */
		fprintf(f, "set style data lines\nset xtics autofreq\n%sset xrange [%g:%g]\n",
			tics, lo - 0.5, hi + 0.5);
		az_report_bench_script(f, ri);
	}
	return fclose(f) == 0 ? 0 : -EIO;
}

/* gnuplot: --gnuplot PATH, $AZ_GNUPLOT, or "gnuplot" in $PATH. */
static int find_gnuplot(const char *given, char *out, size_t len)
{
	const char *env = getenv("AZ_GNUPLOT");
	if (!given && env && *env)
		given = env;
	if (given) {
		snprintf(out, len, "%s", given);
		return access(out, X_OK) == 0 ? 0 : -ENOENT;
	}
	return az_spawn_find("gnuplot", out, len);
}

/* Run gnuplot plots.gp in rdir, output to rdir/gnuplot.log. Returns its exit status or -errno. */
static int run_gnuplot(const char *gnuplot, const char *rdir)
{
	char *argv[] = {(char *)gnuplot, "plots.gp", NULL};
	struct az_spawn_opts o = {.cwd = rdir, .log_path = "gnuplot.log"};
	return az_spawn_wait(argv, &o);
}

static void html_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* Facts for the top of both pages, one sentence each, into lines[5][256]. */
static void summary_lines(const struct az_run_info *ri, const double *best, char lines[5][256])
{
	double games = 0, pos = 0, sp = 0, tr = 0, ar = 0, be = 0;
	unsigned resumes = 0, lost = 0;
	for (size_t i = 0; i < ri->nrows; i++) {
		const struct az_metric_row *r = &ri->rows[i];
		resumes += (unsigned)r->resumed;
		games += isnan(r->games) ? 0 : r->games;
		pos += isnan(r->positions) ? 0 : r->positions;
		sp += isnan(r->selfplay_s) ? 0 : r->selfplay_s;
		tr += isnan(r->train_s) ? 0 : r->train_s;
		ar += isnan(r->arena_s) ? 0 : r->arena_s;
		be += isnan(r->bench_s) ? 0 : r->bench_s;
		lost += isnan(r->games);
	}
	char a[32], b[32], c[32], d[48] = "";
	az_format_duration(sp, a, sizeof(a));
	az_format_duration(tr, b, sizeof(b));
	az_format_duration(ar, c, sizeof(c));
	if (be > 0) {
		memcpy(d, ", benchmark ", 13);
		az_format_duration(be, d + 12, sizeof(d) - 12);
	}
	char res[64] = "";
	if (resumes)
		snprintf(res, sizeof(res), "; resumed %u time%s (dashed lines in the plots)", resumes,
			 resumes == 1 ? "" : "s");
	snprintf(lines[0], 256, "Game %s; %zu of %u iterations complete%s%s.", ri->game,
		 ri->nrows, ri->iterations, res, ri->running ? " (the run is still in progress)" : "");
	double elo = ri->nrows ? best[ri->nrows - 1] : 0.0;
	if (isnan(elo))
		snprintf(lines[1], 256, "Best network: iteration %u; its Elo over the first network "
			 "is unknown (an arena result was lost).", ri->best_iteration);
	else
		snprintf(lines[1], 256, "Best network: iteration %u, estimated %+.0f Elo over the "
			 "first network.", ri->best_iteration, elo);
	snprintf(lines[2], 256, "Self-play: %.0f games, %.0f positions%s.", games, pos,
		 lost ? " (not counting the iterations whose figures were lost)" : "");
	snprintf(lines[3], 256, "Time: self-play %s, training %s, arena %s%s.", a, b, c, d);
	if (ri->nrows) {
		const struct az_metric_row *l = &ri->rows[ri->nrows - 1];
		snprintf(lines[4], 256, "Last iteration: policy loss %.4f, value loss %.4f, "
			 "%.0f evals/s, mean batch %.1f.", l->policy_loss, l->value_loss,
			 l->evals_per_s, l->mean_batch);
	} else {
		snprintf(lines[4], 256, "No iteration has completed yet.");
	}
}

/* v printed with fmt into buf[n], or "?" when it is unknown (NAN: a line a repair replaced). */
static const char *cell(char *buf, size_t n, const char *fmt, double v)
{
	if (isnan(v) || isinf(v))
		snprintf(buf, n, "?");
	else
		snprintf(buf, n, fmt, v);
	return buf;
}

static void table_row(FILE *f, const struct az_metric_row *r, double best, int md)
{
	char wdl[48] = "?", c[10][32];
	if (!isnan(r->arena_wins))
		snprintf(wdl, sizeof(wdl), "%.0f-%.0f-%.0f", r->arena_wins, r->arena_draws,
			 r->arena_losses);
	const char *sep = md ? " | " : "</td><td>";
	fprintf(f, "%s%.0f%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s\n",
		md ? "| " : "<tr><td>", r->iteration, sep,
		cell(c[0], 32, "%.4f", r->policy_loss), sep, cell(c[1], 32, "%.4f", r->value_loss),
		sep, wdl, sep, cell(c[2], 32, "%.3f", r->arena_score), sep,
		isnan(r->arena_score) ? "?" : r->promoted ? "yes" : "no", sep,
		cell(c[3], 32, "%+.0f", best), sep, cell(c[4], 32, "%.0f", r->evals_per_s), sep,
		cell(c[5], 32, "%.1f", r->mean_batch), sep, cell(c[6], 32, "%.1f", r->selfplay_s),
		sep, cell(c[7], 32, "%.1f", r->train_s), sep, cell(c[8], 32, "%.1f", r->arena_s),
		md ? " |" : "</td></tr>");
}

static const char *const cols[] = {"iteration", "policy loss", "value loss", "arena W-D-L",
				   "score", "promoted", "best Elo", "evals/s", "mean batch",
				   "self-play s", "train s", "arena s"};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

/* What both pages show. */
struct page {
	const char *dir;
	const struct az_run_info *ri;
	const double *best;
	int with_plots;
	char lines[5][256]; /* summary_lines() */
};

static void html_page(FILE *f, const struct page *pg)
{
	const struct az_run_info *ri = pg->ri;

	fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>RingZero report: ", f);
	html_escape(f, pg->dir);
	fputs("</title>\n<style>body{font-family:sans-serif;max-width:1000px;margin:auto}"
	      "img{max-width:100%}table{border-collapse:collapse}"
	      "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style>\n"
	      "</head><body>\n<h1>RingZero run report</h1>\n<p><code>", f);
	html_escape(f, pg->dir);
	fputs("</code></p>\n<ul>\n", f);
	for (int i = 0; i < 5; i++) {
		fputs("<li>", f);
		html_escape(f, pg->lines[i]);
		fputs("</li>\n", f);
	}
	fputs("</ul>\n", f);
	for (size_t i = 0; pg->with_plots && i < NPLOTS; i++)
		fprintf(f, "<h2>%s</h2>\n<p>%s</p>\n<p><a href=\"%s\"><img src=\"%s\" alt=\"%s\">"
			"</a></p>\n", plots[i].title, plots[i].caption, plots[i].file,
			plots[i].file, plots[i].title);
	fprintf(f, "<p>%s</p>\n<h2>Iterations</h2>\n<table>\n<tr>", elo_note);
	for (size_t i = 0; i < NCOLS; i++)
		fprintf(f, "<th>%s</th>", cols[i]);
	fputs("</tr>\n", f);
	for (size_t i = 0; i < ri->nrows; i++)
		table_row(f, &ri->rows[i], pg->best[i], 0);
	fputs("</table>\n", f);
	az_report_bench_page(f, ri, 0, pg->with_plots);
	fputs("<p>Data: <a href=\"data.tsv\">data.tsv</a>, plot script: "
	      "<a href=\"plots.gp\">plots.gp</a>. Made by <code>azrun report</code>.</p>\n"
	      "</body></html>\n", f);
}

static void md_page(FILE *f, const struct page *pg)
{
	const struct az_run_info *ri = pg->ri;

	fprintf(f, "# RingZero run report\n\n`%s`\n\n", pg->dir);
	for (int i = 0; i < 5; i++)
		fprintf(f, "- %s\n", pg->lines[i]);
	for (size_t i = 0; pg->with_plots && i < NPLOTS; i++)
		fprintf(f, "\n## %s\n\n%s\n\n![%s](%s)\n", plots[i].title, plots[i].caption,
			plots[i].title, plots[i].file);
	fprintf(f, "\n%s\n\n## Iterations\n\n|", elo_note);
	for (size_t i = 0; i < NCOLS; i++)
		fprintf(f, " %s |", cols[i]);
	fputs("\n|", f);
	for (size_t i = 0; i < NCOLS; i++)
		fputs("---:|", f);
	fputc('\n', f);
	for (size_t i = 0; i < ri->nrows; i++)
		table_row(f, &ri->rows[i], pg->best[i], 1);
	az_report_bench_page(f, ri, 1, pg->with_plots);
	fputs("\nData: [data.tsv](data.tsv), plot script: [plots.gp](plots.gp).\n", f);
}

/* Write path with body. Returns 0 or -errno. */
static int write_page(const char *path, void (*body)(FILE *f, const struct page *pg),
		      const struct page *pg)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	body(f, pg);
	return fclose(f) == 0 ? 0 : -EIO;
}

/* Data, script, gnuplot, then check that every PNG exists. Returns 0 or 1 (message printed). */
static int make_plots(const char *rdir, const struct az_run_info *ri, const double *best,
		      const double *cand, const char *gnuplot_opt)
{
	char path[PATH_LEN], gp[PATH_LEN];
	snprintf(path, sizeof(path), "%s/data.tsv", rdir);
	int rc = write_data(path, ri, best, cand);
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/elo.tsv", rdir);
		rc = write_elo(path, ri, best, cand);
	}
	if (rc == 0 && az_report_bench_rows(ri)) {
		snprintf(path, sizeof(path), "%s/bench.tsv", rdir);
		rc = az_report_bench_data(path, ri);
	}
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/plots.gp", rdir);
		rc = write_script(path, ri);
	}
	if (rc < 0) {
		fprintf(stderr, "azrun report: cannot write %s: %s\n", path, strerror(-rc));
		return 1;
	}
	if (find_gnuplot(gnuplot_opt, gp, sizeof(gp)) < 0) {
		fprintf(stderr, "azrun report: gnuplot not found (%s); install it (Debian: "
			"apt-get install gnuplot-nox) or name it with --gnuplot PATH. The data and "
			"script are in %s\n",
			gnuplot_opt || getenv("AZ_GNUPLOT") ? gp : "not in PATH", rdir);
		return 1;
	}
	size_t fb, nb = az_report_bench_plots(ri, &fb);
	for (size_t i = 0; i < NPLOTS + AZ_REPORT_BENCH_FILES; i++) { /* no stale picture stays */
		snprintf(path, sizeof(path), "%s/%s", rdir, i < NPLOTS ? plots[i].file
			 : az_report_bench_files[i - NPLOTS]);
		unlink(path);
	}
	rc = run_gnuplot(gp, rdir);
	if (rc != 0) {
		fprintf(stderr, "azrun report: %s failed (%s %d); see %s/gnuplot.log\n", gp,
			rc < 0 ? "error" : "exit status", rc, rdir);
		return 1;
	}
	for (size_t i = 0; i < NPLOTS + nb; i++) {
		struct stat sb;
		snprintf(path, sizeof(path), "%s/%s", rdir, i < NPLOTS ? plots[i].file
			 : az_report_bench_files[fb + i - NPLOTS]);
		if (stat(path, &sb) < 0 || sb.st_size == 0) {
			fprintf(stderr, "azrun report: gnuplot did not write %s; see "
				"%s/gnuplot.log\n", path, rdir);
			return 1;
		}
	}
	return 0;
}

int az_report_main(int argc, char **argv)
{
	char rdir[PATH_LEN], path[PATH_LEN + 16];
	struct az_subcommand_opts o;
	struct az_run_info ri;
	int rc = az_subcommand_open_run(argc, argv, az_help_azrun_report, report_notes, &o, &ri);
	if (rc >= 0)
		return rc;
	snprintf(rdir, sizeof(rdir), "%s/report", o.out);
	double *best = calloc(ri.nrows + 1, 2 * sizeof(double));
	rc = best ? az_mkdir_p(rdir) : -ENOMEM;
	if (rc < 0) {
		fprintf(stderr, "azrun report: cannot create %s: %s\n", rdir, strerror(-rc));
		rc = 1;
		goto out;
	}
	double *cand = best + ri.nrows + 1;
	az_elo_estimate(ri.rows, ri.nrows, best, cand);
	if (ri.nrows == 0)
		fprintf(stderr, "azrun report: %s has no completed iteration yet; writing the "
			"summary page without plots\n", o.out);
	else if (make_plots(rdir, &ri, best, cand, o.gnuplot) != 0) {
		rc = 1;
		goto out;
	}
	struct page pg = { .dir = o.out, .ri = &ri, .best = best, .with_plots = ri.nrows > 0 };

	summary_lines(&ri, best, pg.lines);
	snprintf(path, sizeof(path), "%s/index.html", rdir);
	rc = write_page(path, html_page, &pg);
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/report.md", rdir);
		rc = write_page(path, md_page, &pg);
	}
	if (rc < 0) {
		fprintf(stderr, "azrun report: cannot write %s: %s\n", path, strerror(-rc));
		rc = 1;
		goto out;
	}
	printf("report: %s/index.html (and report.md): %zu iteration%s, %zu plots%s\n", rdir,
	       ri.nrows, ri.nrows == 1 ? "" : "s",
	       ri.nrows ? NPLOTS + az_report_bench_plots(&ri, &(size_t){0}) : 0,
	       ri.running ? "; the run is still in progress" : "");
	rc = 0;
out:
	free(best);
	az_run_info_free(&ri);
	return rc;
}
