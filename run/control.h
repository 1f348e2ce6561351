/* SPDX-License-Identifier: MIT */
/* The run's control area inside the segment (at az_seg_ctl()): the inference process's part
 * (infer/control.h) first, then the run's game accounting: how the supervisor
 * (run/supervise.c) sets a phase's games and stops it, how workers (run/worker.c) claim games,
 * and where each worker adds its counters. Cold path only: nothing here is touched per leaf
 * (the counters are relaxed stores of a worker's own totals).
 *
 * One pair (release -> acquire), labelled at both ends:
 *   P1  supervisor: phase_stop  ->  P1'  each worker's loop
 * Everything else is relaxed: the supervisor writes the phase's target and zeroes its counters
 * before it forks the workers (fork orders them), and reads their counters after waitpid (which
 * orders them); while they run, only displays read the counters. A restarted worker loads its
 * own counters and beat back and continues them. */
#ifndef AZ_RUN_CONTROL_H
#define AZ_RUN_CONTROL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "infer/control.h"
#include "shm/ring.h"

#define AZ_CTL_MAX_WORKERS 256
/* Arena games whose move hashes are kept (az_run_ctl_shm.arena_hash): game numbers below this. */
#define AZ_CTL_ARENA_HASHES 8192

/* One worker's counters, alone on their cache lines (no line shared with another worker, no
 * read-modify-write): written only by that worker, as relaxed stores of its running totals,
 * which it loads when it starts, so a restarted worker continues its predecessor's totals.
 * az_pipeline_sample() sums them over the workers (relaxed loads; exact once the writers are
 * reaped, waitpid orders them). claimed and done count this process's games and are zeroed when
 * the supervisor (re)starts the worker: their difference is what a dead worker left unfinished;
 * the rest count the phase and are zeroed by az_pipeline_reset_phase(). */
struct az_ctl_worker {
	_Alignas(AZ_CACHELINE) _Atomic uint64_t claimed; /* games claimed by this process */
	_Atomic uint64_t done;                           /* games it finished */
	_Atomic uint64_t games_done;                     /* games finished in the phase */
	_Atomic uint64_t positions;                      /* replay records written */
	_Atomic uint64_t moves;
	_Atomic uint64_t sims;          /* leaf evaluations + terminal visits */
	_Atomic uint64_t occupancy_sum; /* sum over loop samples of ring in-flight */
	_Atomic uint64_t occupancy_samples;
	_Atomic uint64_t cache_hits;    /* leaves answered by the evaluation cache */
	_Atomic uint64_t cache_lookups; /* leaves looked up there (hits + misses) */
	/* arena results, from the candidate's point of view; arena_first_* are those of the games
	 * where the candidate moved first (the second-player results are the differences) */
	_Atomic uint64_t arena_wins, arena_draws, arena_losses;
	_Atomic uint64_t arena_first_wins, arena_first_draws, arena_first_losses;
	_Atomic uint64_t adjudicate_ns; /* wall ns in the game's adjudicator (az_game) */
	_Atomic uint64_t busy_ns;       /* wall ns this worker has run in the phase */
	/* Heartbeat (the supervisor's watchdog, run/supervise.c): bumped once per pass of the
	 * worker's loop, waiting passes included, so it stops only when the process does (a
	 * stop signal, a hang). A liveness count, not a statistic: never zeroed (a restarted
	 * worker continues its predecessor's value), and not in az_pipeline_sample's sums.
	 * Relaxed store here, relaxed load in the supervisor: it orders nothing, and a stale
	 * value only makes the watchdog see the beat a tick later. */
	_Atomic uint64_t beat;
};
_Static_assert(sizeof(struct az_ctl_worker) % AZ_CACHELINE == 0, "whole cache lines");

struct az_run_ctl_shm {
	/* The inference process's part, first: az_seg_ctl() is both (infer/control.h). */
	struct az_infer_ctl_shm infer;

	/* ---- written by the supervisor only ---- */
	/* P1: set (release) to end the current phase early (az_phase_stop): workers abandon
	 * their unfinished games (never written) and exit. Pairs with P1' in the worker loop
	 * (run/worker.c, run/worker_setup.c), which load-acquires it once per pass. Cleared
	 * (relaxed) by az_pipeline_reset_phase() before the phase's workers are forked. */
	_Alignas(AZ_CACHELINE) _Atomic uint32_t phase_stop;
	/* Games to play in the current phase; set by the supervisor before it forks the
	 * phase's workers (fork orders it before anything the workers do) and raised (relaxed
	 * RMW) when a dead worker's unfinished games must be played again. Workers load it
	 * relaxed when they claim a game (run/worker.c start_game): the CAS on next_game, not
	 * this load, hands each game number out once. */
	_Atomic uint64_t games_target;

	/* ---- any process, atomic RMW (relaxed: plain counters, ordering comes from waitpid) */
	_Alignas(AZ_CACHELINE) _Atomic uint64_t next_game; /* workers claim game numbers (CAS) */
	_Atomic int32_t worker_error; /* first error a worker hit (negative errno) */

	/* ---- per worker, written by that worker only ---- */
	struct az_ctl_worker worker[AZ_CTL_MAX_WORKERS];

	/* ---- per arena game, written once by the worker that finished it ----
	 * arena_hash[n]: a hash of arena game n's moves and of the candidate's colour, never 0;
	 * 0 while game n is unfinished (or was abandoned). A game number is claimed by one worker
	 * only (next_game), so each entry has one writer. Relaxed stores and loads: the
	 * supervisor counts the distinct games (az_pipeline_arena_distinct) after reaping the
	 * phase's workers, waitpid orders the stores before its loads. Zeroed by
	 * az_pipeline_reset_phase(). */
	_Atomic uint64_t arena_hash[AZ_CTL_ARENA_HASHES];
};
_Static_assert(offsetof(struct az_run_ctl_shm, infer) == 0,
	       "the inference process finds its part at az_seg_ctl()");
_Static_assert(offsetof(struct az_run_ctl_shm, phase_stop) % AZ_CACHELINE == 0,
	       "the supervisor's fields start a cache line");
_Static_assert(offsetof(struct az_run_ctl_shm, next_game) % AZ_CACHELINE == 0,
	       "the shared counters start a cache line");
_Static_assert(offsetof(struct az_run_ctl_shm, worker) % AZ_CACHELINE == 0,
	       "each worker's counters on lines of their own");

#endif
