/* SPDX-License-Identifier: MIT */
/* `azbench pipeline`'s parts (tools/bench/pipeline_bench.c: options and the sweep;
 * tools/bench/pipeline_run.c: one pipeline run, a game's checkpoint, run-to-run noise, also used
 * by `azbench ring`; tools/bench/pipeline_serial.c: the serial baseline, the search's own cost
 * and the backend ceiling; tools/bench/pipeline_phases.c: the finite phases). */
#ifndef AZ_BENCH_PIPELINE_IMPL_H
#define AZ_BENCH_PIPELINE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "gpu/backend.h"
#include "run/roles.h"
#include "tools/config.h"

#define MAX_GAMES 2
#define MAX_LIST 8
#define MAX_CONFIGS (MAX_GAMES * MAX_LIST * MAX_LIST)
#define DEFAULT_SECONDS "60" /* --seconds, as its option table shows it */
#define MIN_MEASURE_S 1.0  /* per configuration, after warm-up, when the budget allows */
#define WARM_S 0.3         /* after the first evaluation: trees and rings reach steady state */
#define OVERHEAD_S 0.4     /* per configuration: forks, checkpoint load, teardown (estimate) */
#define CEILING_S 0.25     /* per distinct batch size of the ceiling measurement */
#define PHASES_EST_S 4.0   /* per game and --phases run: both phases, both batchings */
#define PATH_LEN 1024
#define MAX_RUNS 16        /* runs of azrun's defaults per game (--default-runs) */
#define DEFAULT_RUNS 3     /* the default of --default-runs */

/* One game's fixed context: defaults, network, checkpoint. */
struct game_ctx {
	const struct az_game *g;
	struct az_config cfg; /* azrun's defaults for the game, with the bench's overrides */
	struct az_arch arch;
	char net[32];
	char ckpt[PATH_LEN];
};

/* What one pipeline run measured (a window of an open-ended phase, or a whole finite phase). */
struct pipe_result {
	double seconds, evals_per_s, sims_per_s, games_per_min, mean_batch, occupancy, busy;
};

/* What az_pipeline_game_setup() builds a game_ctx from. */
struct az_pipeline_game {
	const char *game;
	enum az_backend_kind backend;
	uint32_t sims, leaves; /* 0: the game's default */
	int64_t cache_mb;      /* --eval-cache-mb; -1: azrun's default */
	const char *cache;     /* --eval-cache worker | shared | off; NULL: azrun's default */
	uint32_t hidden, blocks, net; /* --net (net: enum az_net_kind); hidden 0: the game's */
};

/* azrun's defaults for p->game with p's overrides (--sims, --leaves, --eval-cache[-mb], --net,
 * --backend) into *cfg. p->game must be a registered game. */
void az_pipeline_game_config(const struct az_pipeline_game *p, struct az_config *cfg);

/* az_pipeline_game_config() into gc->cfg, and a randomly initialised network of azrun's default
 * shape (or p's --net) saved to dir/GAME.safetensors. Returns 0 or -errno (a message on
 * stderr). */
int az_pipeline_game_setup(const struct az_pipeline_game *p, const char *dir, struct game_ctx *gc);

/* Run the pipeline under cfg (W = cfg->workers, G = cfg->games_per_worker, cfg's ring, batch
 * and cache options) open-ended: wait for the first evaluation, WARM_S more, then measure for
 * `measure` seconds and stop. Replay files go to dir. Returns 0 or -errno (a message on
 * stderr). Not reentrant (one run at a time). */
int az_pipeline_run_config(const struct game_ctx *gc, const struct az_config *cfg, int verbose,
			   const char *dir, double measure, struct pipe_result *res);

/* mkdtemp() of $TMPDIR/azbench-MODE-XXXXXX (or /tmp) into dir. Returns 0 or -errno after one
 * line on stderr. az_pipeline_rmdir() removes it and the plain files in it. */
int az_pipeline_tmpdir(const char *mode, char *dir, size_t len);
void az_pipeline_rmdir(const char *dir);

/* Median and run-to-run noise of n <= MAX_RUNS measurements of one configuration: noise is
 * (max - min) / median, the relative range of the repeats. */
struct az_bench_spread {
	int n;
	double median, min, max, noise;
};
void az_bench_spread_of(const double *v, int n, struct az_bench_spread *s);

/* A candidate's measurement beats the defaults' runs by more than their noise: at least two
 * runs (one run has no noise to measure) and cand > median * (1 + noise). */
int az_bench_beats(double cand, const struct az_bench_spread *def);

/* A candidate configuration against azrun's defaults, both measured in the same run. */
struct az_bench_versus {
	struct az_config defaults; /* azrun's defaults for the game (with p's overrides) */
	struct az_bench_spread def_sims, def_evals, cand_sims, cand_evals;
};

/* `runs` (1..MAX_RUNS) runs each of azrun's defaults for p->game and of the same with cand's
 * workers, games_per_worker, ring_capacity, max_batch and deadline_us, alternated (which goes
 * first swaps every run), `measure` seconds each after warm-up, in a scratch directory of its
 * own. Progress on stderr unless quiet. Returns 0, -EINTR on a signal, or -errno. */
int az_bench_versus_defaults(const struct az_pipeline_game *p, const struct az_config *cand,
			     int runs, double measure, int quiet, struct az_bench_versus *out);

/* Run one finite phase as azrun does (tools/bench/pipeline_phases.c): self-play of
 * gc->cfg.games_per_iter games or the arena of arena_games games (mode), on azrun's W and G,
 * with the adaptive batching (fixed 0) or the fixed-deadline baseline (fixed 1); rates over the
 * whole phase, tail included. Returns 0 or -errno. */
int az_pipeline_run_phase(const struct game_ctx *gc, enum az_worker_mode mode, int fixed,
			  int verbose, const char *dir, struct pipe_result *res);

/* What the serial baseline measured (one game, one leaf at a time, batch 1, one process). */
struct serial_result {
	int32_t rc;
	char why[128];
	double seconds;
	uint64_t evals, sims, moves, games;
	/* The search alone: the same games with a stand-in network (uniform priors over the legal
	 * moves, value 0, no forward pass), its seconds per evaluation requested. */
	double search_s_per_eval;
	uint64_t search_evals;
};

/* Run the serial baseline for `seconds` in a forked child (a CUDA context must not be inherited
 * by forks). Returns 0 or -errno; out->why says why on failure. */
int az_pipeline_run_serial(const struct game_ctx *gc, enum az_backend_kind kind, double seconds,
			   struct serial_result *out);

/* The backend's evals/s alone at each of batches[n] (azbench infer), in a forked child, into
 * eps[n]. Returns 0 or -errno with a reason in why. */
int az_pipeline_run_ceiling(const struct game_ctx *gc, enum az_backend_kind kind,
			    const uint32_t *batches, int n, double *eps, char *why, size_t whylen);

#endif
