/* SPDX-License-Identifier: MIT */
/* What run/worker.c (the loop) and run/worker_setup.c (setup, teardown, counters) share: a
 * worker process's state. Private to run/. */
#ifndef AZ_RUN_WORKER_IMPL_H
#define AZ_RUN_WORKER_IMPL_H

#include <stdint.h>

#include "games/game.h"
#include "mcts/mcts.h"
#include "base/rng.h"
#include "run/control.h"
#include "shm/slot.h"
#include "run/evalcache.h"
#include "run/roles.h"
#include "train/replay.h"

struct wgame {
	int active;
	int queued; /* on the worker's ready list */
	uint64_t number;
	struct az_tree *tree[2]; /* self-play: tree[0] for both sides (tree[1] NULL); arena: one
				  * per player */
	uint8_t state[AZ_GAME_STATE_MAX];
	uint32_t ply;
	int cand_player;      /* arena: which player (0 first, 1 second) is the candidate */
	uint64_t moves_hash;  /* arena: FNV-1a of cand_player and the moves so far */
	uint32_t nrec;        /* self-play records so far */
	uint32_t explore_cut; /* records before the last exploratory move (--explore) */
	float explore;        /* this game's random-move probability: --explore or 0 */
	float *hx, *hpi;      /* [max_plies, D], [max_plies, A] */
	float *hz;            /* [max_plies] */
	float *hq;            /* [max_plies] root search value of each record (side to move) */
	int8_t *hplayer;      /* side to move of each record */
	uint32_t target;      /* root visits at which the current move's search is done */
	int full;             /* the current move gets a full search (playout cap) */
	struct az_rng rng;    /* playout-cap draws, tie-breaks, seeded by the game's number */
};

struct worker {
	const struct az_worker_params *cfg;
	const struct az_game *g;
	struct az_run_ctl_shm *ctl;
	struct az_ring ring;
	struct az_slot_layout lay;
	enum az_worker_mode mode;
	uint32_t id;
	uint32_t leaves; /* K now: the arena's (az_arena_leaves), or self-play's (az_tail_leaves) */
	uint32_t iteration;
	struct az_replay_writer *rw;
	struct wgame *games;
	uint32_t ngames;
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	float pi[AZ_GAME_ACTIONS_MAX];
	struct az_leaf leaf;
	int exhausted;       /* no more games to claim in this phase */
	uint32_t nactive;    /* games with active set */
	uint32_t tree_nodes; /* arena size each tree is cut back to between games */
	/* The ready list: games to visit in the next pass (a result arrived, a move is due, or the
	 * ring was full), each once (wgame.queued); work[] holds the pass being visited. */
	uint32_t *ready, *work;
	uint32_t nready;
	/* This worker's counters (run/control.h's struct az_ctl_worker, which st mirrors, with
	 * the totals of a predecessor this process replaced): counted here, stored to the
	 * worker's own lines of the control area by publish_stats(). */
	struct {
		uint64_t games_done, positions, moves, sims, occ_sum, occ_n, cache_hits;
		uint64_t cache_lookups, wins, draws, losses, claimed, done, adj_ns, busy_ns;
		uint64_t first_wins, first_draws, first_losses;
	} st;
	/* This process's start (az_now_ns) and the game's adjudication total then, with the
	 * totals loaded from a predecessor: publish_stats() adds what this process spent. */
	uint64_t t_start, adj_start, adj_base, busy_base;
	uint32_t passes;
	/* Evaluation cache (NULL: off). pend_key[seq & ring mask] is the key of the leaf
	 * published with sequence number seq, stored with its answer when that comes back. */
	struct az_evalcache *cache;
	uint64_t *pend_key;
	/* The leaf hook's (leaf_hook) key of the leaf being selected, for model leaf_model;
	 * leaf_keyed 1 once it is set in this selection. */
	uint64_t leaf_key;
	uint32_t leaf_model;
	int leaf_keyed;
	/* Generation of each model slot for this process's lifetime: azrun changes a model only
	 * between phases, and a phase's workers are forked after its models are loaded. */
	uint32_t gen[AZ_MODEL_SLOTS];
	uint64_t beat; /* this worker's heartbeat (run/control.h), continued from a predecessor */
};

/* Set w up for worker id of a phase (mode, iteration) on segment seg: counters loaded from the
 * control area, stale results drained, games and trees made. 0; 1 when the phase was stopped
 * while it waited; a negative errno. az_worker_teardown frees what it made, in every case. */
int az_worker_setup(struct worker *w, const struct az_worker_params *cfg, struct az_seg *seg,
		    uint32_t id, enum az_worker_mode mode, uint32_t iteration);
void az_worker_teardown(struct worker *w);

/* Store w's counters (busy and adjudication time brought up to now) to its control lines. */
void az_worker_publish_stats(struct worker *w);

/* One heartbeat: the loop made a pass, or a wait for the inference process timed out. */
void az_worker_heartbeat(struct worker *w);

/* The trees' leaf hook with the evaluation cache on (ctx: the worker). */
void az_worker_leaf_hook(void *ctx, const void *state);

#endif
