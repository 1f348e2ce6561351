/* SPDX-License-Identifier: MIT */
/* The network as a search evaluator in one process (see eval/net_eval.h). */
#include "eval/net_eval.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

static void sym_free(struct az_net_eval *n)
{
	free(n->sym_src);
	free(n->xt);
	free(n->vt);
	free(n->dt);
	free(n->pt);
	n->sym_src = NULL;
	n->xt = n->vt = n->dt = n->pt = NULL;
	n->sym_avg = 0;
}

void az_net_eval_fini(struct az_net_eval *n)
{
	free(n->x);
	free(n->logits);
	n->x = NULL;
	n->logits = NULL;
	sym_free(n);
}

int az_net_eval_average_symmetries(struct az_net_eval *n, int on)
{
	const struct az_game *g = n->g;
	uint32_t s_count = g->symmetries, a_count = g->actions;
	float idx[AZ_GAME_ACTIONS_MAX], out[AZ_GAME_ACTIONS_MAX];

	sym_free(n);
	if (!on || s_count <= 1)
		return 0;
	n->sym_src = malloc(sizeof(*n->sym_src) * s_count * a_count);
	n->xt = malloc(sizeof(float) * n->batch * g->features);
	n->vt = malloc(sizeof(float) * n->batch);
	n->dt = malloc(sizeof(float) * n->batch);
	n->pt = malloc(sizeof(float) * a_count);
	if (!n->sym_src || !n->xt || !n->vt || !n->dt || !n->pt) {
		sym_free(n);
		return -ENOMEM;
	}
	/* Symmetry k's policy slot a holds the original policy's entry out[a]: found by moving the
	 * vector of action numbers (exact in float for A <= 2^24). */
	for (uint32_t a = 0; a < a_count; a++)
		idx[a] = (float)a;
	for (uint32_t k = 0; k < s_count; k++) {
		g->symmetry((int)k, NULL, NULL, idx, out);
		for (uint32_t a = 0; a < a_count; a++)
			n->sym_src[k * a_count + a] = (uint16_t)out[a];
	}
	n->sym_avg = s_count;
	return 0;
}

/* az_net_eval_batch with symmetry averaging: n->x holds the count encoded positions. */
static int eval_batch_avg(struct az_net_eval *n, const void *const *states, uint32_t count,
			  float *policy, float *value, float *draw)
{
	const struct az_game *g = n->g;
	uint32_t a_count = g->actions, s_count = n->sym_avg;
	float inv = 1.0f / (float)s_count;

	memset(policy, 0, sizeof(float) * count * a_count);
	memset(value, 0, sizeof(float) * count);
	if (draw)
		memset(draw, 0, sizeof(float) * count);
	for (uint32_t k = 0; k < s_count; k++) {
		const uint16_t *src = n->sym_src + (size_t)k * a_count;
		for (uint32_t i = 0; i < count; i++)
			g->symmetry((int)k, n->x + (size_t)i * g->features,
				    n->xt + (size_t)i * g->features, NULL, NULL);
		int rc = az_backend_forward(n->be, 0, count, n->xt, n->logits, n->vt, n->dt);
		if (rc < 0)
			return rc;
		for (uint32_t i = 0; i < count; i++) {
			float *l = n->logits + (size_t)i * a_count,
			      *p = policy + (size_t)i * a_count;
			g->legal(states[i], n->mask);
			for (uint32_t a = 0; a < a_count; a++)
				n->pt[src[a]] = l[a];
			az_masked_softmax(n->pt, n->mask, a_count, n->pt);
			for (uint32_t a = 0; a < a_count; a++)
				p[a] += inv * n->pt[a];
			value[i] += inv * n->vt[i];
			if (draw)
				draw[i] += inv * n->dt[i];
		}
	}
	return 0;
}

int az_net_eval_batch(struct az_net_eval *n, const void *const *states, uint32_t count,
		      float *policy, float *value, float *draw)
{
	const struct az_game *g = n->g;

	if (count == 0 || count > n->batch)
		return -EINVAL;
	for (uint32_t i = 0; i < count; i++)
		g->encode(states[i], n->x + (size_t)i * g->features);
	if (n->sym_avg > 1)
		return eval_batch_avg(n, states, count, policy, value, draw);
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
