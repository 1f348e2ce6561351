/* SPDX-License-Identifier: MIT */
/* The process roles of a run: self-play / arena workers (run/worker.c) and the trainer process
 * (run/trainer_proc.c). Each runs in its own process, started by the supervisor
 * (run/supervise.h), and reports through the control area (run/control.h). Each takes its own
 * parameter struct, so any program (azrun, azbench) can run them without azrun's CLI. */
#ifndef AZ_RUN_ROLES_H
#define AZ_RUN_ROLES_H

#include <stdatomic.h>
#include <stdint.h>

#include "gpu/backend.h"
#include "shm/segment.h"

/* What a self-play or arena worker needs (azrun fills it from its configuration). */
struct az_worker_params {
	const char *game;          /* game name; Tangled configured before the fork */
	uint32_t games_per_worker; /* G: games kept in flight by one worker */
	/* W: workers of the phase (0: unknown). A worker keeps at most ceil(games/W) games in
	 * flight, so a phase of fewer than W·G games (the arena) is shared by all W. */
	uint32_t workers;
	uint32_t sims;             /* simulations per move */
	uint32_t leaves;           /* K: leaves in flight per game (virtual loss) */
	/* Arena: leaves in flight per game; 0: az_arena_leaves() (enough for the batches that
	 * self-play's G·K leaves per worker make). */
	uint32_t arena_leaves;
	/* Self-play: the most leaves in flight per game in the phase's tail (az_tail_leaves);
	 * 0: min(8, sims / 8); at most `leaves` turns the tail rule off. */
	uint32_t tail_leaves;
	uint64_t seed;             /* run seed; per game streams are derived from it */
	float c_puct, dir_alpha, dir_eps;
	uint32_t solver;           /* MCTS-Solver on (1) or off (0) */
	float fpu_reduction;       /* az_mcts_params.fpu_reduction; < 0: constant fpu 0 */
	float forced_k;            /* self-play: az_mcts_params.forced_k (0: off) */
	int search;                /* az_mcts_params.search: AZ_SEARCH_PUCT or AZ_SEARCH_GUMBEL */
	uint32_t gumbel_m;         /* az_mcts_params.gumbel_m */
	float gumbel_scale;        /* az_mcts_params.c_scale */
	/* Self-play playout-cap randomisation (Wu 2019, section 3.2): a move is searched with
	 * `sims` and noise, and recorded with its policy target, with probability playout_cap_p;
	 * otherwise with sims_fast and no noise, recorded with an all-zero policy (value only). */
	float playout_cap_p;       /* outside (0, 1): off, every move a full search */
	uint32_t sims_fast;
	float value_mix;           /* value target (1 - m) z + m q, q the root's search value */
	uint32_t sims_fresh;       /* 1: each move runs sims new simulations (az_tree_sims_target) */
	uint32_t temp_plies;       /* self-play: tau = 1 for the first N plies, then greedy */
	uint32_t random_opening;   /* self-play: up to R uniformly random plies first (0: none) */
	/* Self-play: each move is a uniformly random legal move with this probability (0: never);
	 * records before the game's last such move take the root's search value as value target. */
	float explore;
	/* Self-play: the share of games that explore at all, drawn per game from its stream (at
	 * 1 nothing is drawn, so streams are as without it); the others have no random move. */
	float explore_games;
	float draw_value;          /* az_mcts_params.draw_value (contempt; 0: off) */
	uint32_t arena_temp_plies; /* arena: opening plies sampled at tau = 1 */
	uint32_t spin;             /* ring wait: polls before the futex sleep */
	/* Bytes of each worker's evaluation cache (run/evalcache.h); 0: no cache. */
	size_t eval_cache_bytes;
	/* 1: use the segment's shared evaluation cache instead (az_pipeline_params'
	 * eval_cache_shared_bytes made it); eval_cache_bytes is then ignored. */
	int eval_cache_shared;
	int lockstep;              /* rounds: every game submits, then all results are awaited
				    * before any tree moves on (azrun --deterministic) */
};

enum az_worker_mode { AZ_WORKER_SELFPLAY = 0, AZ_WORKER_ARENA = 1 };

/* Leaves in flight per arena game when --arena-leaves is 0. The arena plays few games (40 by
 * default for Connect Four, shared by all workers), so at self-play's K per game a worker keeps
 * only ngames·K leaves in flight, split over two networks: batches of a few dozen where
 * self-play fills max_batch. This raises K to ceil(G·K / ngames), the leaves a self-play worker
 * has in flight, capped at 8 and at sims / 8 (virtual loss spreads a search more the larger a
 * share of its simulations is in flight; both players of an arena game get the same K, so the
 * comparison stays fair). Never below K. */
uint32_t az_arena_leaves(const struct az_worker_params *wp, uint32_t ngames);

/* Leaves in flight per self-play game when `nactive` of a worker's `ngames` game slots are
 * still playing. While the phase has games to start, every finished game is replaced and this
 * is K (wp->leaves). In the phase's tail no game replaces a finished one and the worker's
 * G·K leaves in flight shrink to nactive·K: batches fall to a few positions and each move of
 * the last (longest) games waits on round trips of nearly empty batches. So K rises to
 * ceil(ngames·K / nactive), capped at wp->tail_leaves (0: min(8, sims / 8), the cap of
 * az_arena_leaves and for the same reason), never below K. Under lockstep (--deterministic)
 * it stays K. */
uint32_t az_tail_leaves(const struct az_worker_params *wp, uint32_t ngames, uint32_t nactive);

/* Play games of the current phase through ring `worker` of seg until games_target games
 * (run/control.h) have been claimed and finished. Self-play writes every finished game to
 * replay_path (io_uring writer); the arena adds results to the control area. Returns 0 or a
 * negative errno. */
int az_worker_run(const struct az_worker_params *wp, struct az_seg *seg, uint32_t worker,
		  enum az_worker_mode mode, uint32_t iteration, const char *replay_path);

/* The trainer process's hyper-parameters (azrun fills them from its configuration). */
struct az_trainer_proc_params {
	const char *game;
	enum az_backend_kind backend; /* AZ_BACKEND_CUDA trains on the GPU, anything else on the CPU */
	uint32_t train_batch;         /* minibatch size */
	uint32_t train_threads;       /* CPU trainer threads, >= 1 (azrun resolves its 0) */
	float train_epochs;           /* passes over the window per iteration */
	uint32_t train_steps_max;     /* cap on the steps of one iteration */
	float lr, l2;
	float lr_late, lr_late_at; /* azrun's loop picks az_train_job.lr from these */
	uint64_t seed;
};

struct az_train_job {
	const struct az_trainer_proc_params *tp;
	uint32_t iteration;
	const char *init_path;  /* checkpoint to continue from */
	const char *out_path;   /* candidate checkpoint to write */
	char **replay_paths;    /* segment files of the window */
	uint32_t n_replay;
	float lr; /* this iteration's learning rate (tp->lr, or tp->lr_late late in the run) */
	/* Steps taken and planned, for azrun's progress bar (NULL: not reported). The trainer
	 * stores, the orchestrator loads, both relaxed: display only, and the report is read
	 * after waitpid. */
	struct az_train_progress *progress;
};

struct az_train_progress {
	_Atomic uint32_t done, total;
	/* Heartbeat for azrun's watchdog (run/watchdog.h): bumped after each replay file loaded,
	 * the model's load and each step. The trainer alone writes it (relaxed RMW, continuing a
	 * killed predecessor's value), azrun loads it relaxed: liveness only, it orders nothing. */
	_Atomic uint64_t beat;
};

struct az_train_report {
	double policy_loss;
	double value_loss;
	uint64_t samples;   /* records in the window */
	uint32_t steps;
	float lr;           /* the learning rate it trained at */
	uint32_t threads;   /* CPU trainer threads (1 on the GPU trainer) */
	int32_t error;
	uint32_t damaged_files; /* replay files of the window with games that did not load */
};

/* Load the window, train, write the candidate. Returns 0 or -errno with a message in err. */
int az_train_run(const struct az_train_job *job, struct az_train_report *rep, char *err,
		 size_t errlen);

#endif
