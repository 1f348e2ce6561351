/* SPDX-License-Identifier: MIT */
/* The network as a search evaluator in one process (azeval, azplay): an az_eval_fn that encodes
 * the position, runs a batch-1 forward pass on a backend and returns the policy softmaxed over
 * the legal moves with the value (or a batch of positions in one pass). Self-play does not use it:
 * there, leaves go through the rings. */
#ifndef AZ_EVAL_NET_EVAL_H
#define AZ_EVAL_NET_EVAL_H

#include <stdint.h>

#include "games/game.h"
#include "gpu/backend.h"
#include "mcts/mcts.h"

/* Evaluator context. One per thread: the buffers are scratch space of each call. A network
 * opened from a checkpoint (eval/net_open.h) comes with one. */
struct az_net_eval {
	const struct az_game *g;
	struct az_backend *be;             /* borrowed: model slot 0 holds the network */
	uint32_t batch;                    /* the most positions one call evaluates */
	float *x;                          /* [batch * g->features], owned */
	float *logits;                     /* [batch * g->actions], owned */
	uint8_t mask[AZ_GAME_ACTIONS_MAX]; /* legal moves of the last position evaluated */
	/* Symmetry averaging (az_net_eval_average_symmetries): 0 off, else the game's S */
	uint32_t sym_avg;
	uint16_t *sym_src;                 /* [S * A]: action of symmetry k's policy slot a */
	float *xt, *vt, *dt, *pt;          /* scratch: [batch * D], [batch], [batch], [A] */
};

/* Set up n for game g on backend be (not owned; created for at least `batch` rows; batch 0
 * counts as 1). Returns 0 or -ENOMEM (n then holds nothing to free). */
int az_net_eval_init(struct az_net_eval *n, const struct az_game *g, struct az_backend *be,
		     uint32_t batch);

/* Free n's buffers (not the backend). Safe on a zeroed or finished n. */
void az_net_eval_fini(struct az_net_eval *n);

/* Average every evaluation over the game's S symmetries (on != 0) or stop (on == 0): each
 * position is encoded, transformed by each symmetry (g->symmetry), evaluated, its policy mapped
 * back and masked-softmaxed; policies, values and draws are the means over the S images (AlphaGo,
 * Silver et al., Nature 2016, "Methods": the value network's output averaged over the board's 8
 * dihedral images). Costs S forward passes per call; a no-op for S = 1. The game's symmetries
 * must move policy entries as a permutation (they do: moves map to moves). Returns 0 or
 * -ENOMEM (then off). */
int az_net_eval_average_symmetries(struct az_net_eval *n, int on);

/* az_eval_fn for az_mcts_search(): ctx is a struct az_net_eval. Writes policy[A] (masked
 * softmax of the logits over the legal moves, which are left in ctx->mask), *value and *draw
 * (p_draw of a win/draw/loss value head, 0 for a tanh head; draw may be NULL), for the side to
 * move at `state`. Returns 0 or the backend's negative errno. */
int az_net_eval(void *ctx, const void *state, float *policy, float *value, float *draw);

/* az_net_eval of count positions in one forward pass (1 <= count <= n->batch): states[i] (not
 * owned) into policy[i * A .. i * A + A), value[i] and draw[i] (draw may be NULL); n->mask is left with the last one's legal
 * moves. The same numbers as count calls of az_net_eval, to the backend's rounding. Returns 0,
 * -EINVAL (count 0 or above n->batch) or the backend's negative errno. */
int az_net_eval_batch(struct az_net_eval *n, const void *const *states, uint32_t count,
		      float *policy, float *value, float *draw);

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
