/* SPDX-License-Identifier: MIT */
/* `azbench pipeline`'s parts (tools/bench/pipeline_bench.c: options, the pipeline runs, the
 * sweep; tools/bench/pipeline_serial.c: the serial baseline and the backend ceiling). */
#ifndef AZ_BENCH_PIPELINE_IMPL_H
#define AZ_BENCH_PIPELINE_IMPL_H

#include <stdint.h>

#include "games/game.h"
#include "gpu/backend.h"
#include "run/roles.h"
#include "tools/config.h"

#define MAX_GAMES 2
#define MAX_LIST 8
#define MAX_CONFIGS (MAX_GAMES * MAX_LIST * MAX_LIST)
#define DEFAULT_SECONDS 60.0
#define MIN_MEASURE_S 1.0  /* per configuration, after warm-up, when the budget allows */
#define WARM_S 0.3         /* after the first evaluation: trees and rings reach steady state */
#define OVERHEAD_S 0.4     /* per configuration: forks, checkpoint load, teardown (estimate) */
#define CEILING_S 0.25     /* per distinct batch size of the ceiling measurement */
#define PHASES_EST_S 4.0   /* per game and --phases run: both phases, both batchings */
#define PATH_LEN 1024

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
