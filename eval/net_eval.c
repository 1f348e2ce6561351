/* SPDX-License-Identifier: MIT */
/* The network as a search evaluator in one process (see eval/net_eval.h). */
#include "eval/net_eval.h"

#include <errno.h>
#include <stdlib.h>

#include "gpu/cpu_forward.h"
#include "net/model.h"

int az_net_eval_init(struct az_net_eval *n, const struct az_game *g, struct az_backend *be)
{
	n->g = g;
	n->be = be;
	n->x = calloc(g->features ? g->features : 1, sizeof(float));
	return n->x ? 0 : -ENOMEM;
}

void az_net_eval_fini(struct az_net_eval *n)
{
	free(n->x);
	n->x = NULL;
}

int az_net_eval(void *ctx, const void *state, float *policy, float *value)
{
	struct az_net_eval *n = ctx;
	n->g->encode(state, n->x);
	int rc = az_backend_forward(n->be, 0, 1, n->x, n->logits, value);
	if (rc < 0)
		return rc;
	n->g->legal(state, n->mask);
	az_masked_softmax(n->logits, n->mask, n->g->actions, policy);
	return 0;
}

int az_eval_move(const struct az_game *g, az_eval_fn fn, void *ctx, struct az_tree *t,
		 uint32_t sims, const void *state)
{
	if (sims == 0 || !t) {
		float pol[AZ_GAME_ACTIONS_MAX], v;
		uint8_t mask[AZ_GAME_ACTIONS_MAX];
		int rc = fn(ctx, state, pol, &v), a = -1;
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
