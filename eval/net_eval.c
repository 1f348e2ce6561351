/* SPDX-License-Identifier: MIT */
/* The network as a search evaluator in one process (see eval/net_eval.h). */
#include "eval/net_eval.h"

#include <errno.h>
#include <stdlib.h>

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
