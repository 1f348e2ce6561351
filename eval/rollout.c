/* SPDX-License-Identifier: MIT */
/* The random-playout evaluator (see eval/rollout.h): uniform priors plus the outcome of random
 * games, so MCTS becomes plain UCT-style Monte Carlo search with the same tree code. */
#include "eval/rollout.h"

#include <errno.h>
#include <string.h>

void az_rollout_init(struct az_rollout *c, const struct az_game *g, uint64_t seed)
{
	memset(c, 0, sizeof(*c));
	c->g = g;
	c->playouts = 1;
	az_rng_seed(&c->rng, seed);
}

/* One random game from `start`; the result for the side to move at `start`. */
static int playout(struct az_rollout *c, const void *start, float *result)
{
	const struct az_game *g = c->g;
	uint8_t st[AZ_GAME_STATE_MAX], mask[AZ_GAME_ACTIONS_MAX];
	int me = g->to_move(start);
	float v;

	memcpy(st, start, g->state_bytes);
	/* max_plies bounds a whole game, so a playout from any position ends within it. */
	for (uint32_t ply = 0; ply <= g->max_plies; ply++) {
		if (g->terminal(st, &v)) {
			/* v is for the side to move at the end; turn it to our side. Compare sides
			 * rather than count plies: a game need not alternate strictly. */
			*result = g->to_move(st) == me ? v : -v;
			return 0;
		}
		int n = g->legal(st, mask);
		if (n <= 0)
			return -EINVAL; /* not terminal, yet no move: a broken game */
		uint32_t k = az_rng_below(&c->rng, (uint32_t)n);
		for (uint32_t a = 0; a < g->actions; a++) {
			if (mask[a] && k-- == 0) {
				g->apply(st, (int)a);
				break;
			}
		}
	}
	return -EINVAL;
}

int az_rollout_eval(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	struct az_rollout *c = ctx;
	const struct az_game *g = c->g;
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	float v;

	if (g->terminal(state, &v)) {
		memset(policy, 0, g->actions * sizeof(*policy));
		*value = v;
		return 0;
	}
	int n = g->legal(state, mask);
	if (n <= 0)
		return -EINVAL;
	for (uint32_t a = 0; a < g->actions; a++)
		policy[a] = mask[a] ? 1.0f / (float)n : 0.0f;
	uint32_t reps = c->playouts ? c->playouts : 1;
	double sum = 0;
	for (uint32_t i = 0; i < reps; i++) {
		int rc = playout(c, state, &v);
		if (rc < 0)
			return rc;
		sum += v;
	}
	*value = (float)(sum / reps);
	return 0;
}
