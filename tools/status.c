/* SPDX-License-Identifier: MIT */
/* `azrun status`: what a run is doing now (phase, progress, rate, ETA from DIR/progress.json) and
 * what it has done (iterations, games, arena history, time per phase from metrics.jsonl), read
 * through run/runinfo.h. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "run/rundir.h"
#include "run/runinfo.h"
#include "tools/config.h"
#include "tools/subcommands.h"
#include "base/util.h"
#include "help_text.h" /* generated from tools/help/ */

#define ARENA_ROWS_SHOWN 20

/* ---- azrun status ---- */

static double sum_of(const struct az_run_info *ri, size_t off, size_t *count)
{
	double s = 0;
	*count = 0;
	for (size_t i = 0; i < ri->nrows; i++) {
		double v = *(const double *)((const char *)&ri->rows[i] + off);
		if (!isnan(v)) {
			s += v;
			(*count)++;
		}
	}
	return s;
}

#define SUM(ri, field, cnt) sum_of(ri, offsetof(struct az_metric_row, field), cnt)

/* Mean duration of a phase over the completed iterations (NAN when none). */
static double phase_mean(const struct az_run_info *ri, const char *phase)
{
	size_t n;
	double s;
	if (!strcmp(phase, "selfplay"))
		s = SUM(ri, selfplay_s, &n);
	else if (!strcmp(phase, "train"))
		s = SUM(ri, train_s, &n);
	else if (!strcmp(phase, "arena"))
		s = SUM(ri, arena_s, &n);
	else if (!strcmp(phase, "bench"))
		s = SUM(ri, bench_s, &n);
	else
		return NAN;
	return n ? s / (double)n : NAN;
}

/* phase_mean for the ETA: a run without a benchmark spends no time in one. */
static double phase_time(const struct az_run_info *ri, const char *phase)
{
	double m = phase_mean(ri, phase);
	return isnan(m) && !strcmp(phase, "bench") ? 0.0 : m;
}

static void print_live(const struct az_run_info *ri)
{
	double now = (double)time(NULL);
	double el = isnan(ri->phase_started) ? NAN : now - ri->phase_started;
	char els[32], eta[32], run_eta[32];
	if (!ri->have_progress || !strcmp(ri->phase, "done")) { /* the lock says it runs */
		printf("state:      running (pid %ld), between phases (progress.json names none)\n",
		       ri->pid);
		return;
	}
	if (ri->iteration <= ri->completed) { /* progress.json (about once a second) lags */
		printf("state:      running (pid %ld), iteration %u of %u starting (iteration %u "
		       "has committed)\n", ri->pid, ri->completed + 1, ri->iterations,
		       ri->completed);
		return;
	}
	az_format_duration(el, els, sizeof(els));
	printf("state:      running (pid %ld), iteration %u of %u, phase %s\n", ri->pid,
	       ri->iteration, ri->iterations, ri->phase);
	printf("progress:   ");
	if (!isnan(ri->done) && !isnan(ri->total) && ri->total > 0)
		printf("%.0f of %.0f (%.0f%%), ", ri->done, ri->total,
		       100.0 * ri->done / ri->total);
	if (ri->evals_per_s > 0)
		printf("%.0f evals/s, ", ri->evals_per_s);
	printf("phase running for %s\n", els);
	/* ETA from the phase's own rate when it has one, else from past iterations' mean. */
	double left = NAN, mean = phase_mean(ri, ri->phase);
	if (!isnan(el) && ri->done > 0 && ri->total > ri->done)
		left = el * (ri->total - ri->done) / ri->done;
	else if (!isnan(el) && !isnan(mean))
		left = mean > el ? mean - el : 0;
	az_format_duration(left, eta, sizeof(eta));
	/* The run: this phase, the later phases of this iteration, then whole iterations. */
	static const char *const order[] = {"selfplay", "train", "arena", "bench"};
	double rest = left;
	int later = 0;
	for (int i = 0; i < 4; i++) {
		if (later)
			rest += phase_time(ri, order[i]);
		later |= !strcmp(ri->phase, order[i]);
	}
	/* Whole iterations left; with --time-limit, only those that start within it (azrun stops
	 * after the iteration during which the limit passes: run/loop.c). */
	double used = NAN;
	if (ri->time_limit_s > 0) {
		size_t n;
		used = SUM(ri, selfplay_s, &n) + SUM(ri, train_s, &n) + SUM(ri, arena_s, &n) +
		       SUM(ri, bench_s, &n) + (isnan(el) ? 0 : el);
	}
	for (uint32_t it = ri->iteration; it < ri->iterations; it++) {
		double whole = 0;
		for (int i = 0; i < 4; i++)
			whole += phase_time(ri, order[i]);
		if (!isnan(used) && !isnan(rest) && used + rest >= ri->time_limit_s)
			break; /* the iteration in progress is the last one */
		rest += whole;
	}
	az_format_duration(rest, run_eta, sizeof(run_eta));
	printf("eta:        %s for this phase, %s for the run\n", isnan(left) ? "n/a" : eta,
	       isnan(rest) ? "n/a" : run_eta);
	if (!isnan(ri->updated) && now - ri->updated > 10)
		printf("warning:    progress.json last updated %.0f s ago (is azrun stuck?)\n",
		       now - ri->updated);
}

static void print_arena(const struct az_run_info *ri)
{
	double *best = malloc(ri->nrows * sizeof(double) * 2);
	if (!best)
		return;
	double *cand = best + ri->nrows;
	az_elo_estimate(ri->rows, ri->nrows, best, cand);
	size_t first = ri->nrows > ARENA_ROWS_SHOWN ? ri->nrows - ARENA_ROWS_SHOWN : 0;
	printf("arena:      iteration  W-D-L        score  result     best Elo  first   second  "
	       "distinct\n");
	if (first)
		printf("            (%zu earlier iteration%s not shown; see azrun report)\n", first,
		       az_plural(first));
	for (size_t i = first; i < ri->nrows; i++) {
		const struct az_metric_row *r = &ri->rows[i];
		char wdl[32] = "?";
		if (!isnan(r->arena_wins))
			snprintf(wdl, sizeof(wdl), "%.0f-%.0f-%.0f", r->arena_wins, r->arena_draws,
				 r->arena_losses);
		char w1[24] = "?", w2[24] = "?", distinct[24] = "?";
		if (!isnan(r->arena_first[0]))
			snprintf(w1, sizeof(w1), "%.0f-%.0f-%.0f", r->arena_first[0],
				 r->arena_first[1], r->arena_first[2]);
		if (!isnan(r->arena_second[0]))
			snprintf(w2, sizeof(w2), "%.0f-%.0f-%.0f", r->arena_second[0],
				 r->arena_second[1], r->arena_second[2]);
		if (!isnan(r->arena_distinct_games))
			snprintf(distinct, sizeof(distinct), "%.0f", r->arena_distinct_games);
		char score[16] = "?", elo[16] = "?";
		if (!isnan(r->arena_score))
			snprintf(score, sizeof(score), "%5.3f", r->arena_score);
		if (!isnan(best[i]))
			snprintf(elo, sizeof(elo), "%+6.0f", best[i]);
		printf("            %9.0f  %-11s  %5s  %-9s  %6s  %-6s  %-6s  %s\n", r->iteration,
		       wdl, score, isnan(r->arena_score) ? "?" : r->promoted ? "promoted" : "kept best",
		       elo, w1, w2, distinct);
	}
	free(best);
}

/* Whether row r holds a benchmark, Connect Four's or Tangled's. */
static int has_bench(const struct az_metric_row *r)
{
	for (int k = 0; k < AZ_RUN_BENCH_SETS; k++)
		if (!isnan(r->bench_agent[k]))
			return 1;
	return r->bench_depths > 0 || !isnan(r->bench_vs_rollout);
}

/* The last benchmark (azrun --bench): Connect Four's in two lines, Tangled's in one; nothing
 * without one. */
static void print_bench(const struct az_run_info *ri)
{
	const struct az_metric_row *r = NULL;
	for (size_t i = ri->nrows; i-- > 0 && !r;)
		if (has_bench(&ri->rows[i]))
			r = &ri->rows[i];
	if (!r)
		return;
	printf("bench:      mistakes %% policy/agent");
	if (r->bench_depths > 0 || !isnan(r->bench_vs_rollout)) {
		for (int k = 0; k < r->bench_depths; k++)
			printf(" u%d %.0f/%.0f", r->bench_depth[k], 100 * r->bench_upolicy[k],
			       100 * r->bench_uagent[k]);
		if (!isnan(r->bench_vs_rollout))
			printf("; vs rollout %.0f%%", 100 * r->bench_vs_rollout);
	} else {
		for (int k = 0; k < AZ_RUN_BENCH_SETS; k++) {
			if (k == AZ_RUN_BENCH_PONS)
				printf("\n            tactics %% policy/agent");
			printf(" %s %.0f/%.0f", az_run_bench_sets[k].key, 100 * r->bench_policy[k],
			       100 * r->bench_agent[k]);
		}
	}
	/* The benchmark measures the best network after the arena: name it when it is older
	 * than the iteration (an unchanged best repeats its results at no cost). */
	printf(" (iteration %.0f", r->iteration);
	if (!isnan(r->best_iteration) && r->best_iteration != r->iteration)
		printf(": the best network, of iteration %.0f", r->best_iteration);
	printf(", %.1f s)", isnan(r->bench_s) ? 0.0 : r->bench_s);
	putchar('\n');
}

static void print_done(const struct az_run_info *ri)
{
	size_t n, known;
	double games = SUM(ri, games, &known), pos = SUM(ri, positions, &n);
	printf("so far:     %.0f games, %.0f positions in %zu iteration%s", games, pos, known,
	       az_plural(known));
	if (known < ri->nrows) /* lines a repair replaced: their figures are gone */
		printf(" (and %zu whose figures were lost)", ri->nrows - known);
	putchar('\n');
	if (!ri->nrows)
		return;
	const struct az_metric_row *l = &ri->rows[ri->nrows - 1];
	printf("last iter:  %.0f sims/s, %.0f evals/s, mean batch %.1f, ring occupancy %.1f, "
	       "policy loss %.4f, value loss %.4f\n", l->sims_per_s, l->evals_per_s, l->mean_batch,
	       l->ring_occupancy, l->policy_loss, l->value_loss);
	if (!isnan(l->adjudication_share) && l->adjudication_share > 0)
		printf("adjudication: %.1f %% of the self-play workers' time\n",
		       100.0 * l->adjudication_share);
	if (!isnan(l->eval_cache_hit_rate))
		printf("eval cache: %.1f %% of self-play leaves answered without the network\n",
		       100.0 * l->eval_cache_hit_rate);
	double sp = SUM(ri, selfplay_s, &n), tr = SUM(ri, train_s, &n), ar = SUM(ri, arena_s, &n);
	double be = SUM(ri, bench_s, &n), tot = sp + tr + ar + be;
	char a[32], b[32], c[32], d[32], e[32], bench[64] = "";
	az_format_duration(sp, a, sizeof(a));
	az_format_duration(tr, b, sizeof(b));
	az_format_duration(ar, c, sizeof(c));
	size_t timed;
	SUM(ri, selfplay_s, &timed); /* the iterations whose times are known */
	az_format_duration(timed ? tot / (double)timed : NAN, d, sizeof(d));
	az_format_duration(be, e, sizeof(e));
	if (n) /* a run with --bench */
		snprintf(bench, sizeof(bench), ", bench %s (%.0f%%)", e, tot > 0 ? 100 * be / tot : 0);
	if (tot > 0)
		printf("time:       self-play %s (%.0f%%), training %s (%.0f%%), "
		       "arena %s (%.0f%%)%s; %s per iteration\n", a, 100 * sp / tot, b,
		       100 * tr / tot, c, 100 * ar / tot, bench, d);
	print_bench(ri);
	print_arena(ri);
}

int az_subcommand_parse_dir(int argc, char **argv, const char *help, void (*notes)(FILE *f),
			    struct az_subcommand_opts *o)
{
#define O(field) offsetof(struct az_subcommand_opts, field)
	static const struct az_opt opt[] = {
		{"out", AZ_OPT_STR, O(out), "DIR", 0, 0, NULL,
		 "the run directory (or DIR, the one argument)", NULL, NULL, NULL},
		{"gnuplot", AZ_OPT_STR, O(gnuplot), "PATH", 0, 0, NULL,
		 "the gnuplot binary (default: $AZ_GNUPLOT, else gnuplot in $PATH)", NULL, NULL, NULL},
	};
#undef O
	char tool[48];
	int npos = 0, rc;

	*o = (struct az_subcommand_opts){0};
	snprintf(tool, sizeof(tool), "azrun %s", argv[0]);
	struct az_opts t = {.tool = tool, .opt = opt, .n = strcmp(argv[0], "report") ? 1 : 2,
			    .positionals = 1, .help = help, .notes = notes};
	rc = az_opts_parse(&t, o, argc, argv, &npos);
	if (rc)
		return rc > 0 ? 1 : -EINVAL;
	int first = 1; /* argv[first..npos]: the bare arguments not taken */

	if (npos && !o->out) /* the bare DIR */
		o->out = argv[first++];
	if (o->out && strlen(o->out) > AZ_CONFIG_OUT_MAX) { /* azrun makes none longer */
		fprintf(stderr, "azrun %s: --out: path too long (at most %d characters)\n", argv[0],
			AZ_CONFIG_OUT_MAX);
		return -EINVAL;
	}
	if (first <= npos || !o->out) {
		fprintf(stderr, "azrun %s: %s%s%s (usage: azrun %s --out DIR)\n", argv[0],
			o->out ? "unexpected argument '" : "--out DIR is required",
			o->out ? argv[first] : "", o->out ? "'" : "", argv[0]);
		return -EINVAL;
	}
	return 0;
}

int az_subcommand_open_config(int argc, char **argv, const char *help, int damaged_json_is_1,
			      struct az_subcommand_run *r)
{
	char path[AZ_RUNDIR_PATH_MAX], err[512];
	struct az_subcommand_opts o;
	int rc = az_subcommand_parse_dir(argc, argv, help, NULL, &o);

	if (rc)
		return rc > 0 ? 0 : 2;
	r->dir = o.out;
	az_rundir_path(path, sizeof(path), r->dir, AZ_RUNDIR_CONFIG);
	if (az_config_load(&r->cfg, path, err, sizeof(err)) < 0) {
		struct stat sb;
		/* a run.json that exists but does not load is damage (1), not bad usage (2) */
		int damaged = damaged_json_is_1 && stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
		fprintf(stderr, "azrun %s: %s\n", argv[0], err); /* damage: the loader advises */
		return damaged ? 1 : 2;
	}
	if (az_config_game(&r->cfg, &r->g, err, sizeof(err)) < 0) {
		fprintf(stderr, "azrun %s: %s\n", argv[0], err);
		return 2;
	}
	return -1;
}

int az_subcommand_open_run(int argc, char **argv, const char *help, void (*notes)(FILE *f),
			   struct az_subcommand_opts *o, struct az_run_info *ri)
{
	char err[AZ_ERR_LEN];
	int rc = az_subcommand_parse_dir(argc, argv, help, notes, o);

	if (rc)
		return rc > 0 ? 0 : 2;
	rc = az_run_info_load(o->out, ri, err, sizeof(err));
	if (rc == -EINVAL) { /* damage, as verify says */
		fprintf(stderr, "azrun %s: %s (azrun verify --out %s says why)\n", argv[0], err,
			o->out);
		return 1;
	}
	if (rc < 0) {
		fprintf(stderr, "azrun %s: %s\n", argv[0], err);
		return 2; /* not a run directory: bad input */
	}
	if (ri->damaged[0]) { /* never show numbers read from a damaged state.json */
		fprintf(stderr, "azrun %s: %s (azrun repair --out %s rebuilds it)\n", argv[0],
			ri->damaged, o->out);
		az_run_info_free(ri);
		return 1; /* damage, as verify reports it */
	}
	return -1;
}

/* ", graph=5;variant=fixed..." for a game whose checkpoints record a configuration (Tangled's
 * board, draw band and inputs), read from dir's run.json; "" otherwise or when it does not load
 * (run_info_load has checked it). */
static const char *board(const char *dir)
{
	static struct az_config c;
	static char out[320];
	char path[AZ_RUNDIR_PATH_MAX], rec[300], err[512];

	out[0] = '\0';
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_CONFIG);
	if (az_config_load(&c, path, err, sizeof(err)) < 0)
		return out;
	az_config_game_options(&c, rec, sizeof(rec));
	if (rec[0])
		snprintf(out, sizeof(out), ", %s", rec);
	return out;
}

int az_status_main(int argc, char **argv)
{
	struct az_subcommand_opts o;
	struct az_run_info ri;
	int rc = az_subcommand_open_run(argc, argv, az_help_azrun_status, NULL, &o, &ri);
	if (rc >= 0)
		return rc;
	printf("run:        %s (%s%s)\n", o.out, ri.game, board(o.out));
	if (ri.running) {
		print_live(&ri);
	} else {
		size_t n;
		double used = SUM(&ri, selfplay_s, &n) + SUM(&ri, train_s, &n) +
			      SUM(&ri, arena_s, &n) + SUM(&ri, bench_s, &n);
		const char *why = ri.completed >= ri.iterations && ri.iterations ? "finished" :
				  ri.time_limit_s > 0 && used >= ri.time_limit_s
				  ? "stopped at its time limit; continue with azrun --resume "
				    "--time-limit LONGER"
				  : "stopped or interrupted; continue with azrun --resume";
		printf("state:      not running (%s)\n", why);
	}
	printf("iterations: %u of %u complete; best network from iteration %u\n", ri.completed,
	       ri.iterations, ri.best_iteration);
	if (ri.time_limit_s > 0) {
		size_t n;
		double used = SUM(&ri, selfplay_s, &n) + SUM(&ri, train_s, &n) +
			      SUM(&ri, arena_s, &n) + SUM(&ri, bench_s, &n);
		char u[32], l[32];
		az_format_duration(used, u, sizeof(u));
		az_format_duration(ri.time_limit_s, l, sizeof(l));
		printf("time limit: %s of %s used (--time-limit: stops after the iteration that "
		       "reaches it)\n", u, l);
	}
	print_done(&ri);
	az_run_info_free(&ri);
	return 0;
}
