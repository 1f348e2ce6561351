/* SPDX-License-Identifier: MIT */
/* The network as a search evaluator in one process (azeval, azplay): an az_eval_fn that encodes
 * the position, runs a batch-1 forward pass on a backend and returns the policy softmaxed over
 * the legal moves with the value. Self-play does not use it: there, leaves go through the rings. */
#ifndef AZ_EVAL_NET_EVAL_H
#define AZ_EVAL_NET_EVAL_H

#include <stdint.h>

#include "games/game.h"
#include "gpu/backend.h"
#include "mcts/mcts.h"

/* Evaluator context. One per thread: the buffers are scratch space of each call. */
struct az_net_eval {
	const struct az_game *g;
	struct az_backend *be;             /* borrowed: model slot 0 holds the network */
	float *x;                          /* [g->features], owned */
	float logits[AZ_GAME_ACTIONS_MAX];
	uint8_t mask[AZ_GAME_ACTIONS_MAX]; /* legal moves of the last position evaluated */
};

/* Set up n for game g on backend be (not owned). Returns 0 or -ENOMEM. */
int az_net_eval_init(struct az_net_eval *n, const struct az_game *g, struct az_backend *be);

/* Free n's buffers (not the backend). Safe on a zeroed or finished n. */
void az_net_eval_fini(struct az_net_eval *n);

/* az_eval_fn for az_mcts_search(): ctx is a struct az_net_eval. Writes policy[A] (masked
 * softmax of the logits over the legal moves, which are left in ctx->mask) and *value, for the
 * side to move at `state`. Returns 0 or the backend's negative errno. */
int az_net_eval(void *ctx, const void *state, float *policy, float *value);

struct az_tree;

/* The move of an agent built on evaluator fn(ctx) (any az_eval_fn) at `state` (not terminal):
 * with sims == 0 or t NULL, the raw policy: the argmax of the prior over the legal moves (the
 * first on a tie; prior mass on illegal moves is ignored); otherwise the most visited move of
 * tree t (reset to `state`, its noise as created) after max(sims, 2) simulations
 * (az_mcts_search; temperature 0). Returns the action, or fn's / the search's negative
 * errno. */
int az_eval_move(const struct az_game *g, az_eval_fn fn, void *ctx, struct az_tree *t,
		 uint32_t sims, const void *state);

#endif
