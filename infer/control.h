/* SPDX-License-Identifier: MIT */
/* The run's control area inside the segment (it lives with the inference process, its main
 * reader; the supervisor in run/ and the workers include it from above): how the supervisor
 * (run/supervise.c) tells the inference process which checkpoints to serve and when to stop, how workers claim games, and where every
 * process adds its counters. Lives at az_seg_ctl(); cold path only (nothing here is touched per
 * leaf except the stats, which are relaxed counters). */
#ifndef AZ_CONTROL_H
#define AZ_CONTROL_H

#include <stdatomic.h>
#include <stdint.h>

#include "gpu/backend.h"
#include "shm/ring.h"

#define AZ_CTL_PATH_MAX 512
#define AZ_CTL_MAX_WORKERS 256
/* Arena games whose move hashes are kept (az_ctl_shm.arena_hash): game numbers below this. */
#define AZ_CTL_ARENA_HASHES 8192

/* Model slots: which network a request asks for (the slot header's `model`), and the index of a
 * model in the backend. One count for both: the backend holds every model slot azrun serves. */
enum az_model_slot {
	AZ_MODEL_BEST = 0,
	AZ_MODEL_CANDIDATE = 1,
	AZ_MODEL_SLOTS = AZ_BACKEND_MODELS,
};
_Static_assert(AZ_MODEL_CANDIDATE < AZ_MODEL_SLOTS, "the backend holds the candidate too");

/* One worker's counters, alone on their cache lines (no line shared with another worker, no
 * read-modify-write): written only by that worker, as relaxed stores of its running totals,
 * which it loads when it starts, so a restarted worker continues its predecessor's totals.
 * az_pipeline_sample() sums them over the workers (relaxed loads; exact once the writers are
 * reaped, waitpid orders them). claimed and done count this process's games and are zeroed when
 * azrun (re)starts the worker: their difference is what a dead worker left unfinished; the rest
 * count the phase and are zeroed by az_pipeline_reset_phase(). */
struct az_ctl_worker {
	_Alignas(AZ_CACHELINE) _Atomic uint64_t claimed; /* games claimed by this process */
	_Atomic uint64_t done;              /* games it finished */
	_Atomic uint64_t games_done;        /* games finished in the phase */
	_Atomic uint64_t positions;         /* replay records written */
	_Atomic uint64_t moves;
	_Atomic uint64_t sims;              /* leaf evaluations + terminal visits */
	_Atomic uint64_t occupancy_sum;     /* sum over loop samples of ring in-flight */
	_Atomic uint64_t occupancy_samples;
	_Atomic uint64_t cache_hits;        /* leaves answered by the evaluation cache */
	_Atomic uint64_t cache_lookups;     /* leaves looked up there (hits + misses) */
	/* arena results, from the candidate's point of view; arena_first_* are those of the games
	 * where the candidate moved first (the second-player results are the differences) */
	_Atomic uint64_t arena_wins, arena_draws, arena_losses;
	_Atomic uint64_t arena_first_wins, arena_first_draws, arena_first_losses;
	_Atomic uint64_t adjudicate_ns;     /* wall ns in the game's adjudicator (az_game) */
	_Atomic uint64_t busy_ns;           /* wall ns this worker has run in the phase */
	/* Heartbeat (the supervisor's watchdog, run/supervise.c): bumped once per pass of the
	 * worker's loop, waiting passes included, so it stops only when the process does (a
	 * stop signal, a hang). A liveness count, not a statistic: never zeroed (a restarted
	 * worker continues its predecessor's value), and not in az_pipeline_sample's sums.
	 * Relaxed store here, relaxed load in azrun: it orders nothing, and a stale value only
	 * makes the watchdog see the beat a tick later. */
	_Atomic uint64_t beat;
};
_Static_assert(sizeof(struct az_ctl_worker) % AZ_CACHELINE == 0, "whole cache lines");

struct az_ctl_shm {
	/* ---- written by azrun only ---- */
	/* Checkpoint path of each model slot. Written before the matching model_gen release. */
	char model_path[AZ_MODEL_SLOTS][AZ_CTL_PATH_MAX];
	/* C1: azrun bumps model_gen[s] with a release store after writing model_path[s];
	 * pairs with C1' in the inference process, which load-acquires it before reading the path. */
	_Atomic uint32_t model_gen[AZ_MODEL_SLOTS];
	/* Set (release) to ask the inference process to exit; it is also woken via the doorbell. */
	_Atomic uint32_t stop;
	/* Set (release) to end the current phase early: workers abandon their unfinished games (never
	 * written) and exit. Pairs with the acquire load in the worker loop (run/worker.c). */
	_Atomic uint32_t phase_stop;
	/* Games to play in the current phase; set by azrun before it forks the phase's workers
	 * (fork orders it before anything the workers do) and raised (relaxed RMW) when a dead
	 * worker's unfinished games must be played again. */
	_Atomic uint64_t games_target;
	uint8_t pad0[AZ_CACHELINE];

	/* ---- written by the inference process only ---- */
	/* C2: release-stored once model_gen[s] has been loaded (or failed, model_err[s] != 0);
	 * pairs with C2' in azrun, which waits for ack == gen with load-acquire. */
	_Atomic uint32_t model_ack[AZ_MODEL_SLOTS];
	_Atomic int32_t model_err[AZ_MODEL_SLOTS];
	_Atomic uint32_t server_pid;
	/* Heartbeat of the inference process: bumped once per round of its loop, idle rounds
	 * included (they end at most every 20 ms), so it stops only when the process does or
	 * hangs in a forward pass or a model load. Relaxed, as struct az_ctl_worker's beat. */
	_Atomic uint64_t server_beat;
	/* Statistics; relaxed stores: readers (azrun between phases) only need eventual values. */
	_Atomic uint64_t evals;
	_Atomic uint64_t batches;
	_Atomic uint64_t forward_ns;
	uint8_t pad1[AZ_CACHELINE];

	/* ---- any process, atomic RMW (relaxed: plain counters, ordering comes from waitpid) ---- */
	_Atomic uint64_t next_game;   /* workers claim game numbers with a CAS */
	_Atomic int32_t worker_error; /* first error a worker hit (negative errno) */

	/* ---- per worker, written by that worker only ---- */
	struct az_ctl_worker worker[AZ_CTL_MAX_WORKERS];

	/* ---- per arena game, written once by the worker that finished it ----
	 * arena_hash[n]: a hash of arena game n's moves and of the candidate's colour, never 0;
	 * 0 while game n is unfinished (or was abandoned). A game number is claimed by one worker
	 * only (next_game), so each entry has one writer. Relaxed stores and loads: azrun counts
	 * the distinct games (az_pipeline_arena_distinct) after reaping the phase's workers,
	 * waitpid orders the stores before its loads. Zeroed by az_pipeline_reset_phase(). */
	_Atomic uint64_t arena_hash[AZ_CTL_ARENA_HASHES];
};

#endif
