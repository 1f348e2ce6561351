/* SPDX-License-Identifier: MIT */
/* Plain Monte Carlo tree search without a network: an az_eval_fn that gives uniform priors over
 * the legal moves and, as the value, the result of one uniformly random playout. It is the
 * classic baseline opponent for a trained agent (azplay --opponent rollout, azeval). */
#ifndef AZ_TOOLS_ROLLOUT_H
#define AZ_TOOLS_ROLLOUT_H

#include <stdint.h>

#include "games/game.h"
#include "base/rng.h"

/* Evaluator context: the game and the playouts' RNG. One per search (not thread-safe). */
struct az_rollout {
	const struct az_game *g;
	struct az_rng rng;
	uint32_t playouts; /* random playouts averaged per leaf (>= 1) */
};

/* Set up c for game g with one playout per leaf, deterministic in seed. */
void az_rollout_init(struct az_rollout *c, const struct az_game *g, uint64_t seed);

/* az_eval_fn for az_mcts_search(): ctx is a struct az_rollout. Writes policy[A] (1/n on each of
 * the n legal moves, 0 elsewhere) and *value, the mean result of ctx->playouts random games
 * played from `state` to the end, from the point of view of the side to move at `state`
 * (-1 loss, 0 draw, +1 win). A terminal `state` gets its exact value and an all-zero policy.
 * Returns 0, or -EINVAL when a playout exceeds the game's max_plies (a broken game). */
int az_rollout_eval(void *ctx, const void *state, float *policy, float *value, float *draw);

#endif
