/* SPDX-License-Identifier: MIT */
/* The network as a search evaluator in one process (see eval/net_eval.h). */
#include "eval/net_eval.h"

#include <errno.h>
#include <stdlib.h>

#include "gpu/cpu_forward.h"
#include "net/model.h"

int az_net_eval_init(struct az_net_eval *n, const struct az_game *g, struct az_backend *be,
		     uint32_t batch)
{
	size_t rows = batch ? batch : 1;

	n->g = g;
	n->be = be;
	n->batch = (uint32_t)rows;
	n->x = calloc(rows * (g->features ? g->features : 1), sizeof(float));
	n->logits = calloc(rows * (g->actions ? g->actions : 1), sizeof(float));
	if (n->x && n->logits)
		return 0;
	az_net_eval_fini(n);
	return -ENOMEM;
}

void az_net_eval_fini(struct az_net_eval *n)
{
	free(n->x);
	free(n->logits);
	n->x = NULL;
	n->logits = NULL;
}

int az_net_eval_batch(struct az_net_eval *n, const void *const *states, uint32_t count,
		      float *policy, float *value, float *draw)
{
	const struct az_game *g = n->g;

	if (count == 0 || count > n->batch)
		return -EINVAL;
	for (uint32_t i = 0; i < count; i++)
		g->encode(states[i], n->x + (size_t)i * g->features);
	int rc = az_backend_forward(n->be, 0, count, n->x, n->logits, value, draw);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < count; i++) {
		g->legal(states[i], n->mask);
		az_masked_softmax(n->logits + (size_t)i * g->actions, n->mask, g->actions,
				  policy + (size_t)i * g->actions);
	}
	return 0;
}

int az_net_eval(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	return az_net_eval_batch(ctx, &state, 1, policy, value, draw);
}

int az_eval_move(const struct az_game *g, az_eval_fn fn, void *ctx, struct az_tree *t,
		 uint32_t sims, const void *state)
{
	if (sims == 0 || !t) {
		float pol[AZ_GAME_ACTIONS_MAX], v, d = 0.0f;
		uint8_t mask[AZ_GAME_ACTIONS_MAX];
		int rc = fn(ctx, state, pol, &v, &d), a = -1;
		if (rc < 0)
			return rc;
		g->legal(state, mask);
		for (uint32_t i = 0; i < g->actions; i++)
			if (mask[i] && (a < 0 || pol[i] > pol[a]))
				a = (int)i;
		return a < 0 ? -EINVAL : a;
	}
	az_tree_reset(t, state);
	int rc = az_mcts_search(t, sims < 2 ? 2 : sims, fn, ctx);
	return rc < 0 ? rc : az_tree_pick(t, 0.0f, NULL);
}
