/* SPDX-License-Identifier: MIT */
/* Matches of an agent (any az_eval_fn, with or without search) against the baseline opponents
 * of eval/rollout.h: uniformly random moves, or plain MCTS over random playouts. azeval --vs
 * and the Tangled benchmark of azrun --bench (eval/tangled_bench.h) play them. */
#ifndef AZ_EVAL_MATCH_H
#define AZ_EVAL_MATCH_H

#include <stdint.h>

#include "games/game.h"
#include "mcts/mcts.h"

enum az_match_opponent {
	AZ_MATCH_RANDOM,  /* a uniformly random legal move */
	AZ_MATCH_ROLLOUT, /* az_rollout_eval under default MCTS parameters, no noise */
};

struct az_match_params {
	const struct az_game *g;
	az_eval_fn fn;                  /* the agent's evaluator */
	void *ctx;
	const struct az_mcts_params *mp; /* the agent's search (NULL: defaults); noise forced off */
	uint32_t sims;                  /* the agent's simulations (0: the raw policy's argmax) */
	enum az_match_opponent opponent;
	uint32_t vs_sims;               /* the rollout opponent's simulations (>= 2 used) */
	long games;                     /* the agent opens the even-numbered games (0, 2, ...) */
	uint64_t seed;                  /* the opponent's randomness */
	/* Optional (NULL): called after each game with the games played. */
	void (*tick)(void *arg, long done);
	void *tick_arg;
};

struct az_match_result {
	long wins, draws, losses; /* the agent's */
	double score;             /* (wins + draws / 2) / games; 0 without games */
};

/* Play p->games games of the agent against p->opponent from the initial position, colours
 * alternated, deterministic in p->seed and the evaluator. Returns 0, -ENOMEM, or the agent's
 * or the opponent's negative errno (the games played until then stay in *r). */
int az_match_play(const struct az_match_params *p, struct az_match_result *r);

#endif
