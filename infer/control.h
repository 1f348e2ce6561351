/* SPDX-License-Identifier: MIT */
/* The inference process's control area inside the segment: how the orchestrator (run/supervise.c,
 * or a test) tells the inference process which checkpoints to serve and when to stop, and what
 * the inference process reports back (acknowledgements, heartbeat, statistics). It lives at the
 * start of az_seg_ctl(); an orchestrator may keep state of its own after it (the run's game
 * accounting, run/control.h, embeds this struct as its first member). The server reads nothing
 * else there. Cold path only: nothing here is touched per leaf (the statistics are per batch).
 *
 * Pairs (release -> acquire), each labelled at both ends:
 *   C1  orchestrator: model_path[s], then model_gen[s]  ->  C1'  server (poll_models)
 *   C2  server: model_err[s], then model_ack[s]         ->  C2'  orchestrator's wait
 *   S1  orchestrator: stop                              ->  S1'  server's loop
 * Everything else is relaxed (liveness, statistics). Restart: a new inference process starts
 * with no model loaded, so every model_gen[s] is new to it: it reloads and acknowledges each
 * slot, and continues its predecessor's server_beat. */
#ifndef AZ_CONTROL_H
#define AZ_CONTROL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/backend.h"
#include "shm/ring.h"

/* Longest checkpoint path a model slot takes, terminator included. */
#define AZ_CTL_PATH_MAX 512

/* Model slots: which network a request asks for (the slot header's `model`), and the index of a
 * model in the backend. One count for both: the backend holds every model slot azrun serves. */
enum az_model_slot {
	AZ_MODEL_BEST = 0,
	AZ_MODEL_CANDIDATE = 1,
	AZ_MODEL_SLOTS = AZ_BACKEND_MODELS,
};
_Static_assert(AZ_MODEL_CANDIDATE < AZ_MODEL_SLOTS, "the backend holds the candidate too");

struct az_infer_ctl_shm {
	/* ---- written by the orchestrator only ---- */
	/* Checkpoint path of each model slot. Written before the matching model_gen release. */
	char model_path[AZ_MODEL_SLOTS][AZ_CTL_PATH_MAX];
	/* C1: the orchestrator bumps model_gen[s] with a release store after writing
	 * model_path[s] (az_pipeline_serve_model); pairs with C1' in the inference process
	 * (infer/server.c poll_models, models_changed), which load-acquires it before reading the
	 * path. Workers load-acquire it too (run/worker_setup.c), only to tag cache entries. */
	_Atomic uint32_t model_gen[AZ_MODEL_SLOTS];
	/* S1: set (release) to ask the inference process to exit (az_pipeline_stop); pairs with
	 * S1' in az_infer_serve's loop, which load-acquires it once per round (an idle round ends
	 * after 20 ms). */
	_Atomic uint32_t stop;

	/* ---- written by the inference process only ---- */
	/* C2: release-stored once model_gen[s] has been loaded (or failed, model_err[s] != 0);
	 * pairs with C2' in the orchestrator, which waits for ack == gen with load-acquire. */
	_Alignas(AZ_CACHELINE) _Atomic uint32_t model_ack[AZ_MODEL_SLOTS];
	/* Relaxed: published by the C2 release store of model_ack[s] that follows it. */
	_Atomic int32_t model_err[AZ_MODEL_SLOTS];
	_Atomic uint32_t server_pid; /* relaxed: informational */
	/* Heartbeat of the inference process: bumped once per round of its loop, idle rounds
	 * included (they end at most every 20 ms), so it stops only when the process does or
	 * hangs in a forward pass or a model load. A liveness count: relaxed store here, relaxed
	 * load in the orchestrator's watchdog; it orders nothing, and a stale value only makes the
	 * watchdog see the beat a tick later. Never zeroed: a restarted server continues it. */
	_Atomic uint64_t server_beat;
	/* Statistics; relaxed RMW: readers (the orchestrator between phases, a progress line)
	 * only need eventual values. evals and batches are zeroed by the orchestrator between
	 * phases (az_pipeline_reset_phase), relaxed too: a batch counted across the reset is
	 * statistics lost, nothing more. */
	_Atomic uint64_t evals;
	_Atomic uint64_t batches;
	_Atomic uint64_t forward_ns;
};
/* Each writer's fields on lines of their own (no false sharing between the orchestrator's
 * stores and the server's), and the whole struct in whole lines, so that what an orchestrator
 * puts after it starts on a fresh line. */
_Static_assert(offsetof(struct az_infer_ctl_shm, model_ack) % AZ_CACHELINE == 0,
	       "the server's fields start a cache line");
_Static_assert(sizeof(struct az_infer_ctl_shm) % AZ_CACHELINE == 0, "whole cache lines");
_Static_assert(offsetof(struct az_infer_ctl_shm, server_beat) % 8 == 0, "aligned 64-bit atomics");

#endif
