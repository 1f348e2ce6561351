/* SPDX-License-Identifier: MIT */
/* `azbench pipeline`: end-to-end self-play throughput of the real system (W worker processes,
 * one inference process, the shared-memory rings) for several W and G, against the serial
 * baseline (one game, one leaf at a time, batch 1, in one process) and the backend's own
 * ceiling (`azbench infer`) at the mean batch the pipeline achieved. */
#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "games/game.h"
#include "net/checkpoint.h"
#include "infer/server.h"
#include "mcts/mcts.h"
#include "base/az_assert.h"
#include "infer/control.h"
#include "shm/slot.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/infer_bench.h"
#include "tools/bench/pipeline_impl.h"
#include "tools/config.h"
#include "run/roles.h"
#include "run/supervise.h"
#include "base/util.h"

/* ---- options ---- */

struct pipe_opts {
	struct az_bench_opts common;
	const char *games[MAX_GAMES];
	int ngames;
	uint32_t workers[MAX_LIST];
	int nworkers;
	uint32_t gpw[MAX_LIST];
	int ngpw;
	uint32_t sims, leaves; /* 0: the game's default */
	int64_t cache_mb;      /* workers' --eval-cache-mb; -1: azrun's default */
	uint32_t phases;       /* repeats of the finite phases (0: none) */
	enum az_backend_kind backend;
	uint32_t hidden, blocks, net; /* --net; hidden 0: the game's default network */
	int verbose;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: azbench pipeline [options]\n"
		"End-to-end self-play throughput (W workers, one inference process, the shm\n"
		"rings) on the real game and network (azrun's defaults), against the serial\n"
		"baseline (\"serial batch-1, the seed's design\": one game, one leaf at a\n"
		"time, one process, no evaluation cache, through the backend's batch-1 path:\n"
		"a GEMV without packing on the CPU) and the backend's ceiling (azbench infer)\n"
		"at the mean batch achieved. speedup compares evals/s; with the evaluation\n"
		"cache a simulation may need no evaluation, so compare sims_per_s too.\n\n"
		"  --game NAME              tictactoe | connect4 | all (default all)\n"
		"  --workers LIST           worker counts W (default 1,2,4,8,16)\n"
		"  --games-per-worker LIST  games in flight per worker G (default 4,16)\n"
		"  --sims N                 simulations per move (default: the game's)\n"
		"  --net HxR                the network (default: the game's); mlp:HxR, or\n"
		"                           resnet:FxR (F filters; tictactoe, connect4)\n"
		"  --leaves K               leaves in flight per game (default: azrun's)\n"
		"  --eval-cache-mb MB       each worker's evaluation cache, 0 off (default:\n"
		"                           azrun's)\n"
		"  --phases N               runs of each finite phase per batching (default 3;\n"
		"                           0: none): azrun's self-play of games-per-iter games\n"
		"                           and its arena, adaptive vs fixed-deadline batching\n"
		"  --backend B              auto | cpu | cpu-async | cuda (default auto)\n"
		"  --verbose                the inference process logs its backend choice\n"
		"  --help                   this text\n"
		"%s\n"
		"The budget (default --seconds %.0f) is split across the configurations;\n"
		"each gets at least %.0f s of measurement after warm-up, and those that do\n"
		"not fit (largest W first) are skipped and named on stderr.\n"
		"Columns: evals_per_s (network evaluations served), sims_per_s (MCTS\n"
		"simulations, terminal visits included), games_per_min, mean_batch,\n"
		"ring_occupancy (mean requests in flight per ring), server_busy (share of\n"
		"time in forward passes), speedup (evals/s over the serial baseline),\n"
		"ceiling_evals_per_s (backend alone at round(mean_batch)), ceiling_frac\n"
		"(evals_per_s / ceiling).\n"
		"Phase rows (setup selfplay/... and arena/...): one whole phase as azrun runs\n"
		"it (its W and G, the tail where games run out included), the fastest of\n"
		"--phases runs, under the adaptive batching and under the old fixed-deadline\n"
		"batching (waits for max_batch or the deadline), run alternately.\n"
		"--plot: evals/s against W, one line per game and G.\n",
		az_bench_common_help, DEFAULT_SECONDS, MIN_MEASURE_S);
}

/* A pipeline option that az_bench_parse_argv() does not handle (az_bench_argv.opt). */
static int parse_opt(void *mode_opts, int c, const char *arg)
{
	struct pipe_opts *o = mode_opts;
	uint32_t one[MAX_LIST];
	int n = 0;

	switch (c) {
	case 'w':
		return az_bench_opt_list("pipeline", "--workers", arg, o->workers, &o->nworkers,
					 MAX_LIST, 256);
	case 'G':
		return az_bench_opt_list("pipeline", "--games-per-worker", arg, o->gpw, &o->ngpw,
					 MAX_LIST, 4096);
	case 's':
	case 'K':
		if (az_bench_opt_list("pipeline", c == 's' ? "--sims" : "--leaves", arg, one, &n,
				      MAX_LIST, 100000) < 0 || n != 1)
			return -EINVAL;
		*(c == 's' ? &o->sims : &o->leaves) = one[0];
		return 0;
	case 'P':
		if (strcmp(arg, "0") == 0) {
			o->phases = 0;
			return 0;
		}
		if (az_bench_opt_list("pipeline", "--phases", arg, one, &n, MAX_LIST, 20) < 0 ||
		    n != 1)
			return -EINVAL;
		o->phases = one[0];
		return 0;
	case 'C':
		if (strcmp(arg, "0") == 0) {
			o->cache_mb = 0;
			return 0;
		}
		if (az_bench_opt_list("pipeline", "--eval-cache-mb", arg, one, &n, MAX_LIST,
				      65536) < 0 || n != 1)
			return -EINVAL;
		o->cache_mb = one[0];
		return 0;
	case 'v':
		o->verbose = 1;
		return 0;
	default:
		return -ENOENT;
	}
}

/* Returns 0 to run, 1 after --help, 2 on bad usage. */
static int parse(struct pipe_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		AZ_BENCH_LONGOPT_GAME,
		{ "workers", required_argument, NULL, 'w' },
		{ "games-per-worker", required_argument, NULL, 'G' },
		{ "sims", required_argument, NULL, 's' },
		{ "leaves", required_argument, NULL, 'K' },
		{ "phases", required_argument, NULL, 'P' },
		{ "eval-cache-mb", required_argument, NULL, 'C' },
		AZ_BENCH_LONGOPT_BACKEND,
		AZ_BENCH_LONGOPT_NET,
		{ "verbose", no_argument, NULL, 'v' },
		AZ_BENCH_LONGOPT_HELP,
		AZ_BENCH_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	const struct az_bench_argv p = {
		.mode = "pipeline", .longopts = longopts, .common = &o->common, .usage = usage,
		.games = o->games, .ngames = &o->ngames, .backend = &o->backend,
		.hidden = &o->hidden, .blocks = &o->blocks, .net = &o->net,
		.opt = parse_opt, .mode_opts = o,
	};

	memset(o, 0, sizeof(*o));
	o->common.seconds = DEFAULT_SECONDS;
	o->phases = 3;
	o->cache_mb = -1;
	o->nworkers = az_bench_parse_u32_list("1,2,4,8,16", o->workers, MAX_LIST, 1, 256);
	o->ngpw = az_bench_parse_u32_list("4,16", o->gpw, MAX_LIST, 1, 4096);
	return az_bench_parse_argv(&p, argc, argv);
}

/* ---- one pipeline configuration ---- */

struct counters {
	double t;
	uint64_t evals, batches, forward_ns, games, occ_sum, occ_n;
};

static void sample(const struct az_pipeline *pl, struct counters *s)
{
	struct az_pipeline_counters c;
	az_pipeline_sample(pl, &c);
	*s = (struct counters){.t = az_now(), .evals = c.evals, .batches = c.batches,
			       .forward_ns = c.forward_ns, .games = c.games, .occ_sum = c.occ_sum,
			       .occ_n = c.occ_n};
}

/* One configuration's processes: the pipeline (segment + inference process) and one open-ended
 * self-play phase, started and stopped by run/supervise.h as azrun's are. */
struct pipe_run {
	const struct game_ctx *gc;
	struct az_config cfg;
	struct az_worker_params wp;
	struct az_pipeline pl;
	struct az_phase ph;
	char dir[PATH_LEN];
};

static int bench_worker(struct az_phase *ph, uint32_t i)
{
	struct pipe_run *pr = ph->arg;
	char path[PATH_LEN + 64];

	snprintf(path, sizeof(path), "%s/%s-w%ug%u-%02u.rpl", pr->dir, pr->gc->g->name,
		 pr->cfg.workers, pr->cfg.games_per_worker, i);
	int rc = az_worker_run(&pr->wp, &pr->pl.seg, i, AZ_WORKER_SELFPLAY, 1, path);
	if (rc < 0)
		fprintf(stderr, "azbench pipeline: worker %u: %s\n", i, strerror(-rc));
	return rc;
}

static int start_pipeline(struct pipe_run *pr, int verbose)
{
	const struct az_config *cfg = &pr->cfg;
	struct az_pipeline_params pp = {
		.rings = cfg->workers, .ring_capacity = cfg->ring_capacity, .seg_tag = "bench",
		.infer = {.backend = cfg->backend, .features = pr->gc->g->features,
			  .actions = pr->gc->g->actions, .max_batch = cfg->max_batch,
			  .deadline_us = cfg->deadline_us, .spin = cfg->spin,
			  .log_fd = verbose ? STDERR_FILENO : -1}};
	int rc = az_pipeline_start(&pr->pl, &pp, pr->gc->ckpt);
	if (rc < 0)
		return rc;
	pr->ph = (struct az_phase){.name = "selfplay", .child_name = "worker", .iteration = 1,
				   .n = cfg->workers, .workers = 1, .child = bench_worker,
				   .arg = pr};
	az_pipeline_reset_phase(&pr->pl, UINT64_MAX / 2); /* open-ended: stopped by phase_stop */
	return az_phase_start(&pr->pl, &pr->ph);
}

static void measure_window(const struct counters *a, const struct counters *b,
			   struct pipe_result *res)
{
	double dt = b->t - a->t;
	uint64_t de = b->evals - a->evals, db = b->batches - a->batches;
	uint64_t dn = b->occ_n - a->occ_n;

	res->seconds = dt;
	res->evals_per_s = (double)de / dt;
	res->games_per_min = (double)(b->games - a->games) / dt * 60.0;
	res->mean_batch = db ? (double)de / (double)db : 0.0;
	res->occupancy = dn ? (double)(b->occ_sum - a->occ_sum) / (double)dn : 0.0;
	res->busy = (double)(b->forward_ns - a->forward_ns) * 1e-9 / dt;
}

static int run_config(const struct game_ctx *gc, const struct pipe_opts *o, const char *dir,
		      uint32_t W, uint32_t G, double measure, struct pipe_result *res)
{
	static struct pipe_run pr;
	struct counters a, b;

	memset(&pr, 0, sizeof(pr));
	pr.gc = gc;
	pr.cfg = gc->cfg;
	pr.cfg.workers = W;
	pr.cfg.games_per_worker = G;
	az_config_worker_params(&pr.cfg, &pr.wp);
	snprintf(pr.dir, sizeof(pr.dir), "%s", dir);
	int rc = start_pipeline(&pr, o->verbose);
	if (rc < 0 && !pr.ph.n) {
		fprintf(stderr, "azbench pipeline: the inference process did not start: %s\n",
			strerror(-rc));
		goto out;
	}
	/* Warm-up: the first evaluation (trees, rings and caches alive), then WARM_S more. */
	double t0 = az_now();
	while (rc == 0 && atomic_load_explicit(&pr.pl.ctl->evals, memory_order_relaxed) == 0) {
		rc = az_phase_watch(&pr.pl, &pr.ph, 0.01); /* relaxed load above: a counter, polled */
		if (rc == 0 && az_now() - t0 > 60)
			rc = -ETIMEDOUT;
	}
	if (rc == 0)
		rc = az_phase_watch(&pr.pl, &pr.ph, WARM_S);
	sample(&pr.pl, &a);
	if (rc == 0)
		rc = az_phase_watch(&pr.pl, &pr.ph, measure);
	sample(&pr.pl, &b);
	int rc2 = az_phase_stop(&pr.pl, &pr.ph, 30);
	rc = rc ? rc : rc2;
	if (rc == 0) {
		/* Every worker has been reaped (waitpid orders their writes). Workers add their
		 * simulations once, at exit; their share per evaluation scales the window. */
		struct az_pipeline_counters c;
		az_pipeline_sample(&pr.pl, &c);
		measure_window(&a, &b, res);
		res->sims_per_s = c.evals ? res->evals_per_s * (double)c.sims / (double)c.evals : 0.0;
		rc = c.worker_error;
	}
	if (rc == -ECHILD)
		fprintf(stderr, "azbench pipeline: a worker or the inference process failed\n");
out:
	az_phase_stop(&pr.pl, &pr.ph, 30);
	az_pipeline_stop(&pr.pl);
	return rc;
}

/* ---- the finite phases ---- */

/* A game's phases: [selfplay, arena] x [adaptive, fixed], the fastest run of each. */
struct phase_set {
	struct pipe_result r[2][2];
	int done;
};

static const char *const phase_setup[2][2] = {
	{ "selfplay/adaptive", "selfplay/fixed" },
	{ "arena/adaptive", "arena/fixed" },
};

/* Run each phase o->phases times under both batchings, alternating which goes first, and keep
 * the fastest of each (as azbench infer keeps the fastest slice: load elsewhere only slows). */
static int run_phases(const struct pipe_opts *o, const struct game_ctx *gc, const char *dir,
		      struct phase_set *ps)
{
	memset(ps, 0, sizeof(*ps));
	for (uint32_t rep = 0; rep < o->phases && !az_sv_interrupted(); rep++) {
		for (int m = 0; m < 2; m++) {
			for (int k = 0; k < 2; k++) {
				int fixed = (int)((rep + (uint32_t)k) % 2);
				struct pipe_result r;

				az_bench_progress(&o->common, "pipeline: %s %s phase, %s batching, "
						  "run %u of %u\n", gc->g->name,
						  m ? "arena" : "self-play",
						  fixed ? "fixed-deadline" : "adaptive", rep + 1,
						  o->phases);
				int rc = az_pipeline_run_phase(gc, m ? AZ_WORKER_ARENA
								     : AZ_WORKER_SELFPLAY,
							       fixed, o->verbose, dir, &r);
				if (rc < 0) {
					fprintf(stderr, "azbench pipeline: %s phase: %s\n",
						m ? "arena" : "self-play", strerror(-rc));
					return rc;
				}
				if (r.evals_per_s > ps->r[m][fixed].evals_per_s)
					ps->r[m][fixed] = r;
			}
		}
	}
	ps->done = o->phases > 0 && !az_sv_interrupted();
	return az_sv_interrupted() ? -EINTR : 0;
}

/* ---- the sweep ---- */

struct config {
	int game;
	uint32_t W, G;
	int done;
	struct pipe_result res;
	double ceiling;
};

/* Priority of a configuration when the budget cannot fit them all: first, for every game, the
 * one azrun would use by default (one worker per core, 16 games each, or the nearest listed);
 * then the rest by W, then G. */
static int first_choice(const struct pipe_opts *o, const struct config *c)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t bw = o->workers[0], bg = o->gpw[0];
	for (int w = 1; w < o->nworkers; w++)
		if (labs((long)o->workers[w] - cores) < labs((long)bw - cores))
			bw = o->workers[w];
	for (int g = 1; g < o->ngpw; g++)
		if (abs((int)o->gpw[g] - 16) < abs((int)bg - 16))
			bg = o->gpw[g];
	return c->W == bw && c->G == bg;
}

/* Order configurations by priority and keep as many as the budget allows with MIN_MEASURE_S
 * each; returns the count kept and *measure. */
static int plan(const struct pipe_opts *o, struct config *cf, int *ntotal, double *measure)
{
	int n = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int w = 0; w < o->nworkers; w++)
			for (int g = 0; g < o->ngpw; g++)
				for (int gi = 0; gi < o->ngames; gi++) {
					struct config c = { .game = gi, .W = o->workers[w],
							    .G = o->gpw[g] };
					if (first_choice(o, &c) == (pass == 0))
						cf[n++] = c;
				}
	*ntotal = n;
	/* Serial baselines and a handful of ceiling batch sizes per game; the sweep loop enforces
	 * the real deadline, so this estimate only sets the time per configuration. */
	double fixed = o->ngames * (CEILING_S * 4 + 1.0 + o->phases * PHASES_EST_S);
	for (int k = n; k >= 1; k--) {
		/* serial baselines get a share like a configuration */
		double m = (o->common.seconds - fixed - k * (OVERHEAD_S + WARM_S)) /
			   (k + o->ngames);
		if (m >= MIN_MEASURE_S || k == 1) {
			*measure = m > 0.25 ? m : 0.25;
			return k;
		}
	}
	*measure = MIN_MEASURE_S; /* not reached: k == 1 always returns */
	return 1;
}

static void add_row(struct az_bench_table *t, const struct game_ctx *gc, const char *setup,
		    const char *backend, uint32_t W, uint32_t G, uint32_t K,
		    const struct pipe_result *r, double serial_eps, double ceiling)
{
	struct az_bench_row row = { 0 };
	int pipe = strcmp(setup, "serial") != 0; /* the pipeline and its phases */

	az_bench_row_str(&row, "game", gc->g->name);
	az_bench_row_str(&row, "net", gc->net);
	az_bench_row_str(&row, "backend", backend);
	az_bench_row_str(&row, "setup", setup);
	az_bench_row_int(&row, "workers", W);
	az_bench_row_int(&row, "G", G);
	az_bench_row_int(&row, "K", K);
	az_bench_row_num(&row, "evals_per_s", r->evals_per_s, 0);
	az_bench_row_num(&row, "sims_per_s", r->sims_per_s, 0);
	az_bench_row_num(&row, "games_per_min", r->games_per_min, 1);
	az_bench_row_num(&row, "mean_batch", r->mean_batch, 1);
	if (pipe) {
		az_bench_row_num(&row, "ring_occupancy", r->occupancy, 1);
		az_bench_row_num(&row, "server_busy", r->busy, 2);
	} else {
		az_bench_row_none(&row, "ring_occupancy");
		az_bench_row_none(&row, "server_busy");
	}
	if (serial_eps > 0)
		az_bench_row_num(&row, "speedup", r->evals_per_s / serial_eps, 2);
	else
		az_bench_row_none(&row, "speedup");
	if (ceiling > 0) {
		az_bench_row_num(&row, "ceiling_evals_per_s", ceiling, 0);
		az_bench_row_num(&row, "ceiling_frac", r->evals_per_s / ceiling, 3);
	} else {
		az_bench_row_none(&row, "ceiling_evals_per_s");
		az_bench_row_none(&row, "ceiling_frac");
	}
	az_bench_row_num(&row, "seconds", r->seconds, 2);
	AZ_ASSERT(az_bench_table_add(t, &row) == 0);
}

static int game_setup(const struct pipe_opts *o, const char *game, const char *dir,
		      struct game_ctx *gc)
{
	char err[512];
	struct az_model *m;

	gc->g = az_game_find(game);
	AZ_ASSERT(gc->g && az_config_defaults(&gc->cfg, game) == 0);
	gc->cfg.backend = o->backend;
	gc->cfg.quiet = 1;
	if (o->sims)
		gc->cfg.sims = o->sims;
	if (o->leaves)
		gc->cfg.leaves = o->leaves;
	if (o->cache_mb >= 0)
		gc->cfg.eval_cache_mb = (uint32_t)o->cache_mb;
	if (o->hidden) {
		gc->cfg.net = o->net;
		gc->cfg.hidden = o->hidden;
		gc->cfg.blocks = o->blocks;
	}
	gc->arch = (struct az_arch){ .inputs = gc->g->features, .hidden = gc->cfg.hidden,
				     .blocks = gc->cfg.blocks, .actions = gc->g->actions,
				     .kind = gc->cfg.net };
	if (gc->arch.kind == AZ_NET_RESNET) {
		gc->arch.planes = gc->g->planes;
		gc->arch.height = gc->g->height;
		gc->arch.width = gc->g->width;
	}
	if (gc->arch.kind == AZ_NET_MLP) /* the "HxR" MLP rows always had */
		snprintf(gc->net, sizeof(gc->net), "%ux%u", gc->arch.hidden, gc->arch.blocks);
	else
		az_arch_format(&gc->arch, gc->net, sizeof(gc->net));
	snprintf(gc->ckpt, sizeof(gc->ckpt), "%s/%s.safetensors", dir, game);
	int rc = az_model_create(&gc->arch, &m);
	if (rc < 0)
		return rc;
	az_model_init_random(m, gc->cfg.seed);
	snprintf(m->game, sizeof(m->game), "%s", game);
	rc = az_ckpt_save(gc->ckpt, m, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "azbench pipeline: %s\n", err);
	az_model_destroy(m);
	return rc;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_LEN + 300];

	while (d && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Ceilings of one game at each configuration's round(mean_batch), measured in one child. */
static int game_ceilings(const struct game_ctx *gc, int gi, struct config *cf, int n,
			 enum az_backend_kind kind, const struct serial_result *sr,
			 double *serial_ceiling)
{
	uint32_t batches[MAX_CONFIGS + 1];
	double eps[MAX_CONFIGS + 1];
	int idx[MAX_CONFIGS], nb = 1;
	char why[128];
	uint32_t maxb = gc->cfg.max_batch;

	batches[0] = 1; /* the serial baseline's batch */
	for (int i = 0; i < n; i++) {
		if (cf[i].game != gi || !cf[i].done)
			continue;
		double mb = cf[i].res.mean_batch + 0.5;
		uint32_t b = mb < 1 ? 1 : mb > maxb ? maxb : (uint32_t)mb;
		int j = 0;
		while (j < nb && batches[j] != b)
			j++;
		if (j == nb)
			batches[nb++] = b;
		idx[i] = j;
	}
	int rc = az_pipeline_run_ceiling(gc, kind, batches, nb, eps, why, sizeof(why));
	if (rc < 0)
		return rc;
	*serial_ceiling = sr->rc == 0 ? eps[0] : 0;
	for (int i = 0; i < n; i++)
		if (cf[i].game == gi && cf[i].done)
			cf[i].ceiling = eps[idx[i]];
	return 0;
}

static int keep_pipeline(const struct az_bench_row *r, void *arg)
{
	(void)arg;
	return strcmp(az_bench_row_sval(r, "setup"), "pipeline") == 0;
}

struct rec {
	char text[1024];
	struct az_bench_row row;
};

/* The best configuration of each game, as a recommendation. */
static void recommend(const struct pipe_opts *o, const struct game_ctx *gcs,
		      const struct config *cf, int n, const double *serial_eps, const char *skipped,
		      struct rec *out)
{
	char *text = out->text;
	size_t cap = sizeof(out->text);
	struct az_bench_row *rec = &out->row;

	for (int gi = 0; gi < o->ngames; gi++) {
		const struct config *best = NULL;
		char key[AZ_BENCH_KEY_MAX];

		for (int i = 0; i < n; i++)
			if (cf[i].game == gi && cf[i].done &&
			    (!best || cf[i].res.evals_per_s > best->res.evals_per_s))
				best = &cf[i];
		if (!best)
			continue;
		size_t l = strlen(text);
		snprintf(text + l, cap - l,
			 "%s%s: --workers %u --games-per-worker %u (%.0f evals/s, %.1fx serial, "
			 "%.0f%% of the ceiling at batch %.0f)", l ? "; " : "", gcs[gi].g->name,
			 best->W, best->G, best->res.evals_per_s,
			 serial_eps[gi] > 0 ? best->res.evals_per_s / serial_eps[gi] : 0.0,
			 best->ceiling > 0 ? 100 * best->res.evals_per_s / best->ceiling : 0.0,
			 best->res.mean_batch);
		snprintf(key, sizeof(key), "%s_workers", gcs[gi].g->name);
		az_bench_row_int(rec, key, best->W);
		snprintf(key, sizeof(key), "%s_G", gcs[gi].g->name);
		az_bench_row_int(rec, key, best->G);
	}
	if (*skipped) {
		size_t l = strlen(text);
		snprintf(text + l, cap - l, " [skipped for time:%s]", skipped);
	}
}

static int sweep(const struct pipe_opts *o, const char *dir, struct az_bench_table *t,
		 struct rec *rec)
{
	static struct config cf[MAX_CONFIGS];
	struct game_ctx gcs[MAX_GAMES];
	struct serial_result sr[MAX_GAMES];
	double serial_eps[MAX_GAMES] = { 0 }, measure;
	char skipped[256] = "";
	int ntotal, rc = 0;
	int n = plan(o, cf, &ntotal, &measure);
	double deadline = az_now() + o->common.seconds;
	for (int gi = 0; gi < o->ngames && rc == 0; gi++) {
		rc = game_setup(o, o->games[gi], dir, &gcs[gi]);
		if (rc < 0)
			return rc;
		az_bench_progress(&o->common, "pipeline: %s %s serial baseline, %.1fs\n",
				  o->games[gi], gcs[gi].net, measure);
		rc = az_pipeline_run_serial(&gcs[gi], o->backend, measure, &sr[gi]);
		if (rc < 0 && az_sv_interrupted())
			return -EINTR;
		if (rc < 0) {
			fprintf(stderr, "azbench pipeline: serial baseline: %s %s\n", strerror(-rc),
				sr[gi].why);
			return rc;
		}
		serial_eps[gi] = (double)sr[gi].evals / sr[gi].seconds;
	}
	static struct phase_set phases[MAX_GAMES];
	for (int gi = 0; gi < o->ngames && rc == 0 && o->phases > 0; gi++)
		rc = run_phases(o, &gcs[gi], dir, &phases[gi]);
	if (rc < 0)
		return rc;
	int planned = n;
	for (int i = 0; i < planned && !az_sv_interrupted(); i++) {
		const struct game_ctx *gc = &gcs[cf[i].game];
		/* Keep a reserve for the ceilings measured after the sweep. */
		double reserve = o->ngames * CEILING_S * 4;
		if (i > 0 && az_now() + measure + OVERHEAD_S + WARM_S + reserve > deadline) {
			n = i;
			break;
		}

		az_bench_progress(&o->common, "pipeline: %s W=%u G=%u K=%u, %.1fs\n",
				  gc->g->name, cf[i].W, cf[i].G, gc->cfg.leaves, measure);
		rc = run_config(gc, o, dir, cf[i].W, cf[i].G, measure, &cf[i].res);
		if (rc < 0)
			break;
		cf[i].done = 1;
	}
	if (n < ntotal) {
		double all = o->ngames * (CEILING_S * 4 + 1.0) +
			     ntotal * (OVERHEAD_S + WARM_S + MIN_MEASURE_S) + o->ngames * MIN_MEASURE_S;
		snprintf(skipped, sizeof(skipped), " %d of %d configurations; --seconds %.0f or "
			 "more measures them all", ntotal - n, ntotal, all + 1);
		az_bench_progress(&o->common, "pipeline: --seconds %.0f measured %d of %d "
				  "configurations (azrun's defaults first); skipped:%s\n",
				  o->common.seconds, n, ntotal, skipped);
	}
	for (int gi = 0; gi < o->ngames && rc == 0; gi++) {
		const struct serial_result *s = &sr[gi];
		struct pipe_result r = { .seconds = s->seconds,
					 .evals_per_s = serial_eps[gi],
					 .sims_per_s = (double)s->sims / s->seconds,
					 .games_per_min = (double)s->games / s->seconds * 60.0,
					 .mean_batch = 1.0 };
		const char *be = strncmp(s->why, "cuda", 4) == 0        ? "cuda"
				 : strncmp(s->why, "cpu-async", 9) == 0 ? "cpu-async"
									: "cpu";
		double sc = 0;

		rc = game_ceilings(&gcs[gi], gi, cf, n, o->backend, s, &sc);
		if (rc < 0 && !az_sv_interrupted())
			fprintf(stderr, "azbench pipeline: ceiling: %s\n", strerror(-rc));
		add_row(t, &gcs[gi], "serial", be, 1, 1, 1, &r, serial_eps[gi], sc);
		for (int i = 0; i < n; i++)
			if (cf[i].game == gi && cf[i].done)
				add_row(t, &gcs[gi], "pipeline", be, cf[i].W, cf[i].G,
					gcs[gi].cfg.leaves, &cf[i].res, serial_eps[gi],
					cf[i].ceiling);
		for (int m = 0; m < 2 && phases[gi].done; m++)
			for (int k = 0; k < 2; k++)
				add_row(t, &gcs[gi], phase_setup[m][k], be, gcs[gi].cfg.workers,
					gcs[gi].cfg.games_per_worker, gcs[gi].cfg.leaves,
					&phases[gi].r[m][k], serial_eps[gi], 0);
	}
	if (rc == 0 && !az_sv_interrupted())
		recommend(o, gcs, cf, n, serial_eps, skipped, rec);
	for (int gi = 0; gi < o->ngames && rc == 0 && !az_sv_interrupted(); gi++) {
		const struct phase_set *ps = &phases[gi];
		size_t l = strlen(rec->text);

		if (!ps->done)
			continue;
		snprintf(rec->text + l, sizeof(rec->text) - l,
			 "%s%s phases, adaptive vs fixed-deadline batching: self-play %.2fx, "
			 "arena %.2fx; arena/self-play evals/s %.2f", l ? "; " : "", gcs[gi].g->name,
			 ps->r[0][0].evals_per_s / ps->r[0][1].evals_per_s,
			 ps->r[1][0].evals_per_s / ps->r[1][1].evals_per_s,
			 ps->r[1][0].evals_per_s / ps->r[0][0].evals_per_s);
	}
	return az_sv_interrupted() ? -EINTR : rc;
}

int az_bench_pipeline(int argc, char **argv)
{
	struct pipe_opts o;
	struct az_bench_table t = { 0 };
	static struct rec rec;
	char dir[PATH_LEN];
	const char *tmp = getenv("TMPDIR");
	int rc = parse(&o, argc, argv);

	if (rc)
		return rc == 1 ? 0 : 2;
	snprintf(dir, sizeof(dir), "%s/azbench-pipeline-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "azbench pipeline: cannot create %s: %s\n", dir, strerror(errno));
		return 1;
	}
	openblas_set_num_threads(1);
	az_sv_install_signals();
	rc = sweep(&o, dir, &t, &rec);
	remove_dir(dir);
	if (rc == -EINTR) {
		fprintf(stderr, "azbench pipeline: interrupted\n");
		az_bench_table_free(&t);
		return 130;
	}
	struct az_bench_plot_spec ps = {
		.title = "self-play pipeline: evals/s vs workers",
		.xkey = "workers",
		.ykey = "evals_per_s",
		.series = { "game", "G", NULL },
		.series_fmt = { NULL, "G=%s games per worker" },
		.logx = 1,
		.keep = keep_pipeline,
	};
	int erc = t.n ? az_bench_emit(&t, &o.common, &ps) : 0;
	if (rc == 0)
		az_bench_recommend(&o.common, rec.text, &rec.row);
	az_bench_table_free(&t);
	return rc < 0 ? 1 : erc;
}
