/* SPDX-License-Identifier: MIT */
/* `azbench pipeline`: end-to-end self-play throughput of the real system (W worker processes,
 * one inference process, the shared-memory rings) for several W and G, against the serial
 * baseline (one game, one leaf at a time, batch 1, in one process), azrun's defaults run
 * several times (their run-to-run noise), the backend's own ceiling (`azbench infer`) at the
 * mean batch the pipeline achieved, and the machine limit (forward pass plus search). */
#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdarg.h>
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
#include "tools/bench/bench_opts.h"
#include "tools/bench/infer_bench.h"
#include "tools/bench/pipeline_impl.h"
#include "tools/config.h"
#include "run/roles.h"
#include "run/supervise.h"
#include "base/util.h"
#include "help_text.h" /* generated from tools/help/ */

/* ---- options ---- */

struct pipe_opts {
	struct az_bench_opts common;
	struct az_bench_games games;
	struct az_bench_list workers, gpw;
	uint32_t sims, leaves; /* 0: the game's default */
	long cache_mb;         /* workers' --eval-cache-mb; -1: azrun's default */
	uint32_t default_runs; /* runs of azrun's defaults per game (0: none) */
	const char *cache;     /* --eval-cache; NULL: azrun's default */
	uint32_t phases;       /* repeats of the finite phases (0: none) */
	enum az_backend_kind backend;
	struct az_bench_net net; /* hidden 0: the game's default network */
	int verbose;
};

/* This mode's limits: azrun's --games-per-worker and --eval-cache-mb caps (tools/config_check.c
 * keeps its own copies; az_bench_config_check() applies them too), and what a sweep of --sims,
 * --leaves and --phases may ask for. */
#define GPW_MAX 4096
#define CACHE_MB_MAX 65536
#define SIMS_MAX 100000
#define PHASES_MAX 20

AZ_BENCH_LIST_PARSER(parse_workers, MAX_LIST, 1, AZ_CTL_MAX_WORKERS)
AZ_BENCH_LIST_PARSER(parse_gpw, MAX_LIST, 1, GPW_MAX)

static void pipe_notes(FILE *f)
{
	fprintf(f, "Games with a board (--net resnet): %s.\n"
		   "Each configuration gets at least %.0f s of measurement after warm-up.\n",
		az_bench_boards_help(), MIN_MEASURE_S);
}

/* Every option of azbench pipeline, in --help's order (tools/options.h). */
#define O(field) offsetof(struct pipe_opts, field)
static const struct az_opt pipe_opt[] = {
	AZ_BENCH_GAMES_OPT(O, games),
	{"workers", AZ_OPT_PARSE, O(workers), "LIST", 0, 0, "1,2,4,8,16", "worker counts W",
	 AZ_BENCH_LIST_RANGE(MAX_LIST, 1, AZ_CTL_MAX_WORKERS), NULL, parse_workers},
	{"games-per-worker", AZ_OPT_PARSE, O(gpw), "LIST", 0, 0, "4,16,128",
	 "games in flight per worker G", AZ_BENCH_LIST_RANGE(MAX_LIST, 1, GPW_MAX), NULL,
	 parse_gpw},
	{"sims", AZ_OPT_U32, O(sims), "N", 2, SIMS_MAX, NULL,
	 "simulations per move (default: the game's)", NULL, NULL, NULL},
	{"net", AZ_OPT_PARSE, O(net), "HxR", 0, 0, NULL,
	 "the network: HxR, mlp:HxR, or resnet:FxR (F filters; the games with a board) "
	 "(default: the game's)", AZ_BENCH_NET_CHOICES, NULL, az_bench_opt_net},
	{"leaves", AZ_OPT_U32, O(leaves), "K", 1, SIMS_MAX, NULL,
	 "leaves in flight per game (default: azrun's)", NULL, NULL, NULL},
	{"eval-cache-mb", AZ_OPT_LONG, O(cache_mb), "MB", 0, CACHE_MB_MAX, NULL,
	 "the evaluation cache in MiB: each worker's, or the one --eval-cache shared table; "
	 "0 off (default: azrun's)", NULL, NULL, NULL},
	{"eval-cache", AZ_OPT_CHOICE, O(cache), "MODE", 0, 0, NULL,
	 "each worker's cache, one shared table, or none (default: azrun's)",
	 "worker|shared|off", NULL, NULL},
	{"default-runs", AZ_OPT_U32, O(default_runs), "N", 0, MAX_RUNS, AZ_BENCH_STR(DEFAULT_RUNS),
	 "runs of azrun's defaults per game (0: none, and no recommendation)", NULL, NULL, NULL},
	{"phases", AZ_OPT_U32, O(phases), "N", 0, PHASES_MAX, "3",
	 "runs of each finite phase per batching (0: none): azrun's self-play of "
	 "games-per-iter games and its arena, adaptive vs fixed-deadline batching", NULL, NULL,
	 NULL},
	AZ_BENCH_BACKEND_OPT(O, backend),
	{"verbose", AZ_OPT_FLAG, O(verbose), NULL, 0, 0, NULL,
	 "the inference process logs its backend choice", NULL, NULL, NULL},
	AZ_BENCH_COMMON_OPTS(O, common, DEFAULT_SECONDS),
};
#undef O

/* What az_pipeline_game_setup() and the config check take for game number gi. */
static struct az_pipeline_game game_params(const struct pipe_opts *o, int gi)
{
	return (struct az_pipeline_game){ o->games.name[gi], o->backend, o->sims, o->leaves,
					  o->cache_mb, o->cache, o->net.hidden, o->net.blocks,
					  o->net.kind };
}

/* Returns 0 to run, 1 after --help, 2 on bad usage. */
static int parse(struct pipe_opts *o, int argc, char **argv)
{
	static const struct az_opts opts_table = {
		.tool = "azbench pipeline", .opt = pipe_opt, .n = AZ_ARRAY_LEN(pipe_opt),
		.help = az_help_azbench_pipeline, .notes = pipe_notes
	};
	*o = (struct pipe_opts){ .cache_mb = -1 };
	int rc = az_bench_parse(&opts_table, o, &o->common, argc, argv);

	/* Tangled adjudicated as azrun does: self-play's figures are azrun's */
	if (rc == 0 && az_bench_games_setup("pipeline", &o->games, 1, &o->common) != 0)
		rc = 2;
	/* what azrun would refuse (resnet:5000x1, a 5 GB shared cache) fails now, not mid-sweep */
	for (int gi = 0; gi < o->games.n && rc == 0; gi++) {
		struct az_pipeline_game pg = game_params(o, gi);
		struct az_config cfg;
		az_pipeline_game_config(&pg, &cfg);
		if (az_bench_config_check("pipeline", &cfg) < 0)
			rc = 2;
	}
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
	int dflt; /* one run of azrun's defaults (W = cores, G = its games per worker) */
	int done;
	struct pipe_result res;
	double ceiling;
};

/* The budget's part that is not the runs: serial baselines, the finite phases and a handful of
 * ceiling batch sizes per game. The sweep loop enforces the real deadline, so this estimate only
 * sets the time per configuration and the --seconds that would measure them all. */
static double fixed_seconds(const struct pipe_opts *o)
{
	return o->games.n * (CEILING_S * 4 + 1.0 + o->phases * PHASES_EST_S);
}

/* The runs, in run order: for each of the R = --default-runs runs of azrun's defaults, one per
 * game, then the next R-th of the listed configurations (those equal to the defaults left out:
 * they are the defaults), so the defaults' runs are spread over the sweep and their range
 * measures its run-to-run noise; with R = 0 the listed configurations alone. The budget keeps
 * every default run and as many listed configurations (at least one), in list order, as fit
 * with MIN_MEASURE_S each; returns the runs kept, *ntotal the runs there would be, *measure. */
static int plan(const struct pipe_opts *o, const struct game_ctx *gcs, struct config *cf,
		int *ntotal, double *measure)
{
	static struct config nd[MAX_CONFIGS];
	int nnd = 0, ndef = (int)o->default_runs * o->games.n, n = 0;

	for (int w = 0; w < o->workers.n; w++)
		for (int g = 0; g < o->gpw.n; g++)
			for (int gi = 0; gi < o->games.n; gi++) {
				const struct az_config *d = &gcs[gi].cfg;
				struct config c = { .game = gi, .W = o->workers.v[w], .G = o->gpw.v[g] };

				if (!o->default_runs || c.W != d->workers || c.G != d->games_per_worker)
					nd[nnd++] = c;
			}
	*ntotal = nnd + ndef;
	double fixed = fixed_seconds(o);
	int k = nnd, kmin = nnd > 0; /* at least one listed configuration */
	*measure = MIN_MEASURE_S;
	for (; k >= kmin; k--) {
		int runs = k + ndef;
		/* serial baselines get a share like a configuration */
		double m = runs ? (o->common.seconds - fixed - runs * (OVERHEAD_S + WARM_S)) /
					  (runs + o->games.n)
				: MIN_MEASURE_S;
		if (m >= MIN_MEASURE_S || k == kmin) {
			*measure = m > 0.25 ? m : 0.25;
			break;
		}
	}
	int R = (int)o->default_runs;
	for (int r = 0; r < (R ? R : 1); r++) {
		for (int gi = 0; gi < o->games.n && R; gi++)
			cf[n++] = (struct config){ .game = gi, .W = gcs[gi].cfg.workers,
						   .G = gcs[gi].cfg.games_per_worker, .dflt = 1 };
		int lo = R ? r * k / R : 0, hi = R ? (r + 1) * k / R : k;
		for (int i = lo; i < hi; i++)
			cf[n++] = nd[i];
	}
	return n;
}

/* The machine limit of the pipeline, evals/s: each evaluation costs one forward pass at batch b
 * (1 / ceiling(b) seconds of a core on a CPU backend, none on CUDA) plus the search's cost per
 * evaluation (the stand-in run of the serial baseline), spread over every core there is:
 * cores / (forward + search). One inference process also caps the pipeline at ceiling(b)
 * itself; the table shows both. 0 when either is unknown. */
static double machine_limit(const char *backend, double ceiling, double search_s)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	double fwd = strcmp(backend, "cuda") == 0 ? 0 : ceiling > 0 ? 1 / ceiling : -1;

	if (fwd < 0 || search_s <= 0 || cores < 1)
		return 0;
	return (double)cores / (fwd + search_s);
}

/* A reference rate `key` = ref and `frac` = v / ref, or both not applicable when ref is 0. */
static void ref_cols(struct az_bench_row *row, const char *key, const char *frac, double ref,
		     double v)
{
	if (ref > 0) {
		az_bench_row_num(row, key, ref, 0);
		az_bench_row_num(row, frac, v / ref, 3);
	} else {
		az_bench_row_none(row, key);
		az_bench_row_none(row, frac);
	}
}

static void add_row(struct az_bench_table *t, const struct game_ctx *gc, const char *setup,
		    const char *backend, uint32_t W, uint32_t G, uint32_t K,
		    const struct pipe_result *r, const struct pipe_result *serial, double ceiling,
		    double limit)
{
	struct az_bench_row row = { 0 };
	int pipe = strcmp(setup, "serial") != 0; /* the pipeline and its phases */

	az_bench_row_str(&row, "game", gc->g->name);
	if (az_bench_board(gc->g->name))
		az_bench_row_str(&row, "board", az_bench_board(gc->g->name));
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
	if (serial->evals_per_s > 0 && serial->sims_per_s > 0) {
		az_bench_row_num(&row, "speedup", r->evals_per_s / serial->evals_per_s, 2);
		az_bench_row_num(&row, "sims_speedup", r->sims_per_s / serial->sims_per_s, 2);
	} else {
		az_bench_row_none(&row, "speedup");
		az_bench_row_none(&row, "sims_speedup");
	}
	ref_cols(&row, "ceiling_evals_per_s", "ceiling_frac", ceiling, r->evals_per_s);
	ref_cols(&row, "limit_evals_per_s", "limit_frac", limit, r->evals_per_s);
	az_bench_row_num(&row, "seconds", r->seconds, 2);
	AZ_ASSERT(az_bench_table_add(t, &row) == 0);
}

/* Ceilings of one game at each configuration's round(mean_batch), measured in one child. */
static int game_ceilings(const struct game_ctx *gc, int gi, struct config *cf, int n,
			 enum az_backend_kind kind, const struct serial_result *sr,
			 double *serial_ceiling)
{
	uint32_t batches[MAX_CONFIGS + 1];
	double eps[MAX_CONFIGS + 1];
	int idx[MAX_CONFIGS + MAX_GAMES * MAX_RUNS], nb = 1;
	char why[128];
	uint32_t maxb = az_infer_batch_cap(gc->cfg.max_batch);

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
	const char *s = az_bench_row_sval(r, "setup");
	return strcmp(s, "pipeline") == 0 || strcmp(s, "defaults") == 0;
}

struct rec {
	char text[2048];
	struct az_bench_row row;
};

static void append(struct rec *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void append(struct rec *out, const char *fmt, ...)
{
	size_t l = strlen(out->text);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->text + l, sizeof(out->text) - l, fmt, ap);
	va_end(ap);
}

/* Per game: azrun's defaults (median and noise of their runs), the best listed configuration by
 * sims/s (a cache hit is a simulation without an evaluation: sims/s is what self-play delivers),
 * recommended only when it beats the defaults' median by more than their noise; the serial
 * baseline, the ceiling and the machine limit beside them. */
static void recommend(const struct pipe_opts *o, const struct game_ctx *gcs,
		      const struct config *cf, int n, const struct pipe_result *serial,
		      const double *limit_of, const char *skipped, struct rec *out)
{
	struct az_bench_row *rec = &out->row;

	for (int gi = 0; gi < o->games.n; gi++) {
		const struct config *best = NULL, *d0 = NULL;
		const struct az_config *dc = &gcs[gi].cfg;
		double ds[MAX_RUNS], de[MAX_RUNS];
		struct az_bench_spread sd, se;
		char key[AZ_BENCH_KEY_MAX];
		const char *g = gcs[gi].g->name;
		int nd = 0, beats;

		for (int i = 0; i < n; i++) {
			if (cf[i].game != gi || !cf[i].done)
				continue;
			if (cf[i].dflt) {
				ds[nd] = cf[i].res.sims_per_s;
				de[nd++] = cf[i].res.evals_per_s;
				d0 = d0 ? d0 : &cf[i];
			} else if (!best || cf[i].res.sims_per_s > best->res.sims_per_s) {
				best = &cf[i];
			}
		}
		az_bench_spread_of(ds, nd, &sd);
		az_bench_spread_of(de, nd, &se);
		beats = best && az_bench_beats(best->res.sims_per_s, &sd);
		append(out, "%s%s: ", out->text[0] ? "; " : "", g);
		if (nd)
			append(out, "azrun's defaults (--workers %u --games-per-worker %u) %.0f sims/s, "
			       "%.0f evals/s (median of %d runs, noise %.1f%% = (max - min) / "
			       "median)", dc->workers, dc->games_per_worker, sd.median, se.median,
			       nd, 100 * sd.noise);
		else
			append(out, "azrun's defaults not measured (--default-runs 0)");
		if (best && beats)
			append(out, "; recommended --workers %u --games-per-worker %u: %.0f sims/s, "
			       "%.0f evals/s (+%.1f%% sims/s, beyond the noise)", best->W, best->G,
			       best->res.sims_per_s, best->res.evals_per_s,
			       100 * (best->res.sims_per_s / sd.median - 1));
		else if (best)
			append(out, "; best other --workers %u --games-per-worker %u: %.0f sims/s, "
			       "%.0f evals/s: %s", best->W, best->G, best->res.sims_per_s,
			       best->res.evals_per_s,
			       nd < 2 ? "no recommendation without two runs of the defaults"
			       : best->res.sims_per_s > sd.median ? "within the noise, keep the defaults"
								  : "slower, keep the defaults");
		if (serial[gi].evals_per_s > 0 && nd)
			append(out, "; %.1fx the sims/s and %.1fx the evals/s of serial batch-1, the "
			       "seed's design (%.0f sims/s)", sd.median / serial[gi].sims_per_s,
			       se.median / serial[gi].evals_per_s, serial[gi].sims_per_s);
		if (d0 && d0->ceiling > 0)
			append(out, "; ceiling %.0f evals/s at batch %.0f, machine limit %.0f evals/s "
			       "(cores / (forward + search per evaluation))", d0->ceiling,
			       d0->res.mean_batch, limit_of[gi]);
		const struct config *pick = beats ? best : NULL;
		snprintf(key, sizeof(key), "%s_workers", g);
		az_bench_row_int(rec, key, pick ? pick->W : dc->workers);
		snprintf(key, sizeof(key), "%s_G", g);
		az_bench_row_int(rec, key, pick ? pick->G : dc->games_per_worker);
		snprintf(key, sizeof(key), "%s_beats_defaults", g);
		az_bench_row_int(rec, key, beats);
		snprintf(key, sizeof(key), "%s_noise", g);
		if (nd >= 2)
			az_bench_row_num(rec, key, sd.noise, 4);
		else
			az_bench_row_none(rec, key);
	}
	if (*skipped)
		append(out, " [skipped for time:%s]", skipped);
}

/* Whether listed configuration W x G of game gi was measured (its run is done). */
static int measured(const struct config *cf, int n, int gi, uint32_t W, uint32_t G)
{
	for (int i = 0; i < n; i++)
		if (cf[i].game == gi && !cf[i].dflt && cf[i].W == W && cf[i].G == G && cf[i].done)
			return 1;
	return 0;
}

/* The listed configurations of game gi measured (want 1) or not (0), as " W x G 1x4 1x16" after
 * the game's name, appended to buf; nothing when there are none. Returns how many. */
static int list_configs(const struct pipe_opts *o, const struct game_ctx *gcs,
			const struct config *cf, int n, int gi, int want, char *buf, size_t len)
{
	const struct az_config *d = &gcs[gi].cfg;
	size_t l = strlen(buf);
	int k = 0;

	for (int w = 0; w < o->workers.n; w++)
		for (int g = 0; g < o->gpw.n; g++) {
			uint32_t W = o->workers.v[w], G = o->gpw.v[g];

			if ((o->default_runs && W == d->workers && G == d->games_per_worker) ||
			    measured(cf, n, gi, W, G) != want || l >= len)
				continue;
			l += (size_t)snprintf(buf + l, len - l, "%s %ux%u",
					      k++ ? "" : " W x G", W, G);
		}
	return k;
}

/* Which runs a budget too short left out: on stderr (unless --quiet), each game's measured and
 * skipped W x G by name and the --seconds that measures them all; the skipped ones into
 * skipped[len] for the recommendation. */
static void name_skipped(const struct pipe_opts *o, const struct game_ctx *gcs,
			 const struct config *cf, int n, int ran, int ntotal, char *skipped,
			 size_t len)
{
	char done[1024] = "", one[512];
	double all = fixed_seconds(o) + ntotal * (OVERHEAD_S + WARM_S + MIN_MEASURE_S) +
		     o->games.n * MIN_MEASURE_S;

	for (int gi = 0; gi < o->games.n; gi++) {
		size_t l = strlen(done);

		snprintf(done + l, sizeof(done) - l, "%s%s", gi ? "; " : "", gcs[gi].g->name);
		l = strlen(done);
		if (o->default_runs)
			snprintf(done + l, sizeof(done) - l, " (azrun's defaults x%u)",
				 o->default_runs);
		list_configs(o, gcs, cf, n, gi, 1, done, sizeof(done));
		snprintf(one, sizeof(one), " %s", gcs[gi].g->name);
		if (list_configs(o, gcs, cf, n, gi, 0, one, sizeof(one)))
			snprintf(skipped + strlen(skipped), len - strlen(skipped), "%s%s",
				 skipped[0] ? ";" : "", one);
	}
	snprintf(skipped + strlen(skipped), len - strlen(skipped), " (%d of %d runs); --seconds "
		 "%.0f or more measures them all", ntotal - ran, ntotal, all + 1);
	az_bench_progress(&o->common, "pipeline: --seconds %.0f measured %d of %d runs: %s; not "
			  "measured, no time left:%s\n", o->common.seconds, ran, ntotal, done,
			  skipped);
}

/* The serial baselines of every game (one child each). */
static int serial_baselines(const struct pipe_opts *o, const struct game_ctx *gcs,
			    double measure, struct serial_result *sr)
{
	for (int gi = 0; gi < o->games.n; gi++) {
		az_bench_progress(&o->common, "pipeline: %s %s serial baseline, %.1fs\n",
				  o->games.name[gi], gcs[gi].net, measure);
		int rc = az_pipeline_run_serial(&gcs[gi], o->backend, measure, &sr[gi]);
		if (rc < 0 && az_sv_interrupted())
			return -EINTR;
		if (rc < 0) {
			/* the child's own reason when it gave one (its exit status is only a
			 * failure) */
			fprintf(stderr, "azbench pipeline: serial baseline: %s\n",
				sr[gi].why[0] ? sr[gi].why : strerror(-rc));
			return rc;
		}
	}
	return 0;
}

/* Run the planned configurations cf[0..n), `measure` seconds each, and mark those done; past
 * deadline only the runs of azrun's defaults and each game's first listed configuration run (a
 * reserve is kept for the ceilings measured after the sweep). *ran gets how many ran. Returns 0
 * or -errno. */
static int run_configs(const struct pipe_opts *o, const struct game_ctx *gcs, struct config *cf,
		       int n, double measure, double deadline, const char *dir, int *ran)
{
	int listed[MAX_GAMES] = { 0 };

	*ran = 0;
	for (int i = 0; i < n && !az_sv_interrupted(); i++) {
		const struct game_ctx *gc = &gcs[cf[i].game];
		struct az_config cfg = gc->cfg;
		double reserve = o->games.n * CEILING_S * 4;
		int rc;

		if (!cf[i].dflt && listed[cf[i].game]++ > 0 &&
		    az_now() + measure + OVERHEAD_S + WARM_S + reserve > deadline)
			continue;
		az_bench_progress(&o->common, "pipeline: %s W=%u G=%u K=%u%s, %.1fs\n",
				  gc->g->name, cf[i].W, cf[i].G, gc->cfg.leaves,
				  cf[i].dflt ? " (azrun's defaults)" : "", measure);
		cfg.workers = cf[i].W;
		cfg.games_per_worker = cf[i].G;
		rc = az_pipeline_run_config(gc, &cfg, o->verbose, dir, measure, &cf[i].res);
		if (rc < 0)
			return rc;
		cf[i].done = 1;
		(*ran)++;
	}
	return 0;
}

/* Game gi's rows: its serial baseline (into *serial), the configurations of cf[0..n) that ran
 * (their ceilings measured into them), its phases; *limit_of gets the machine limit at azrun's
 * defaults. Returns 0, or -errno when the ceilings could not be measured (the rows are added
 * all the same). */
static int game_rows(const struct pipe_opts *o, int gi, const struct game_ctx *gc,
		     struct config *cf, int n, const struct serial_result *s,
		     const struct phase_set *ps, struct pipe_result *serial, double *limit_of,
		     struct az_bench_table *t)
{
	const char *be = strncmp(s->why, "cuda", 4) == 0        ? "cuda"
			 : strncmp(s->why, "cpu-async", 9) == 0 ? "cpu-async"
								: "cpu";
	double sc = 0;
	int rc;

	*serial = (struct pipe_result){ .seconds = s->seconds,
					.evals_per_s = (double)s->evals / s->seconds,
					.sims_per_s = (double)s->sims / s->seconds,
					.games_per_min = (double)s->games / s->seconds * 60,
					.mean_batch = 1.0 };
	rc = game_ceilings(gc, gi, cf, n, o->backend, s, &sc);
	if (rc < 0 && !az_sv_interrupted())
		fprintf(stderr, "azbench pipeline: ceiling: %s\n", strerror(-rc));
	add_row(t, gc, "serial", be, 1, 1, 1, serial, serial, sc,
		machine_limit(be, sc, s->search_s_per_eval));
	for (int i = 0; i < n; i++) {
		double lim = machine_limit(be, cf[i].ceiling, s->search_s_per_eval);

		if (cf[i].game != gi || !cf[i].done)
			continue;
		if (cf[i].dflt && !*limit_of)
			*limit_of = lim;
		add_row(t, gc, cf[i].dflt ? "defaults" : "pipeline", be, cf[i].W, cf[i].G,
			gc->cfg.leaves, &cf[i].res, serial, cf[i].ceiling, lim);
	}
	for (int m = 0; m < 2 && ps->done; m++)
		for (int k = 0; k < 2; k++)
			add_row(t, gc, phase_setup[m][k], be, gc->cfg.workers,
				gc->cfg.games_per_worker, gc->cfg.leaves, &ps->r[m][k], serial, 0,
				0);
	return rc;
}

/* The recommendation's part on the phases: adaptive against fixed-deadline batching. */
static void recommend_phases(const struct pipe_opts *o, const struct game_ctx *gcs,
			     const struct phase_set *phases, struct rec *rec)
{
	for (int gi = 0; gi < o->games.n && !az_sv_interrupted(); gi++) {
		const struct phase_set *ps = &phases[gi];

		if (!ps->done)
			continue;
		append(rec, "%s%s phases, adaptive vs fixed-deadline batching: self-play %.2fx, "
		       "arena %.2fx; arena/self-play evals/s %.2f", rec->text[0] ? "; " : "",
		       gcs[gi].g->name, ps->r[0][0].evals_per_s / ps->r[0][1].evals_per_s,
		       ps->r[1][0].evals_per_s / ps->r[1][1].evals_per_s,
		       ps->r[1][0].evals_per_s / ps->r[0][0].evals_per_s);
	}
}

static int sweep(const struct pipe_opts *o, const char *dir, struct az_bench_table *t,
		 struct rec *rec)
{
	static struct config cf[MAX_CONFIGS + MAX_GAMES * MAX_RUNS];
	static struct game_ctx gcs[MAX_GAMES];
	static struct phase_set phases[MAX_GAMES];
	struct serial_result sr[MAX_GAMES];
	struct pipe_result serial[MAX_GAMES] = { 0 };
	double measure, limit_of[MAX_GAMES] = { 0 };
	char skipped[1024] = "";
	int ntotal, ran, rc = 0;

	for (int gi = 0; gi < o->games.n; gi++) {
		struct az_pipeline_game pg = game_params(o, gi);
		rc = az_pipeline_game_setup(&pg, dir, &gcs[gi]);
		if (rc < 0)
			return rc;
	}
	int n = plan(o, gcs, cf, &ntotal, &measure);
	double deadline = az_now() + o->common.seconds;
	rc = serial_baselines(o, gcs, measure, sr);
	if (rc < 0)
		return rc;
	for (int gi = 0; gi < o->games.n && rc == 0 && o->phases > 0; gi++)
		rc = run_phases(o, &gcs[gi], dir, &phases[gi]);
	if (rc < 0)
		return rc;
	rc = run_configs(o, gcs, cf, n, measure, deadline, dir, &ran);
	if (ran < ntotal)
		name_skipped(o, gcs, cf, n, ran, ntotal, skipped, sizeof(skipped));
	for (int gi = 0; gi < o->games.n && rc == 0; gi++)
		rc = game_rows(o, gi, &gcs[gi], cf, n, &sr[gi], &phases[gi], &serial[gi],
			       &limit_of[gi], t);
	if (rc == 0 && !az_sv_interrupted())
		recommend(o, gcs, cf, n, serial, limit_of, skipped, rec);
	if (rc == 0)
		recommend_phases(o, gcs, phases, rec);
	return az_sv_interrupted() ? -EINTR : rc;
}

int az_bench_pipeline(int argc, char **argv)
{
	struct pipe_opts o;
	struct az_bench_table t = { 0 };
	static struct rec rec;
	char dir[PATH_LEN];
	int rc = parse(&o, argc, argv);

	if (rc)
		return rc == 1 ? 0 : 2;
	if (az_pipeline_tmpdir("pipeline", dir, sizeof(dir)) < 0)
		return 1;
	openblas_set_num_threads(1);
	az_sv_install_signals();
	rc = sweep(&o, dir, &t, &rec);
	az_pipeline_rmdir(dir);
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
