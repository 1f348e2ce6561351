/* SPDX-License-Identifier: MIT */
/* KataGo's forced playouts and policy-target pruning at the root (Wu 2019, "Accelerating
 * Self-Play Learning in Go", section 3.1), and the fresh-simulation budget.
 *
 * Forced playouts: while root noise is on, a root child c with N(c) < sqrt(k P(c) sum N) is
 * selected before PUCT is asked (P: the priors selection uses, noise included; N with the
 * visits in flight). That spends a few playouts on every move the noise made plausible, so
 * the noise is not wasted on children PUCT would never try. The visits so forced would teach
 * the policy to like those children, so the target is pruned: every child but the most
 * visited one c* gives up to floor(sqrt(k P(c) sum N)) of its visits, as many as it can lose
 * with its PUCT value Q(c) + c_puct P(c) sqrt(N) / (1 + n) still below c*'s, and a child left
 * with one visit or none drops out. */
#include <math.h>
#include <string.h>

#include "mcts/mcts.h"
#include "mcts/mcts_impl.h"
#include "mcts/tree.h"

/* The forced visits of a child with prior p among `total` visits. */
static double forced_visits(float k, float p, uint64_t total)
{
	return sqrt((double)k * (double)p * (double)total);
}

uint32_t az_tree_forced_child(const struct az_tree *t)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	const float *noisy = t->root_noisy ? t->noisy : NULL;
	uint64_t total = 0;
	double most = 0.0;
	uint32_t besti = NONE;

	if (!(t->params.forced_k > 0.0f) || !t->noise_on)
		return NONE;
	for (uint32_t i = 0; i < root->nchild; i++)
		total += (uint64_t)c[i].n + c[i].vl;
	for (uint32_t i = 0; i < root->nchild; i++) {
		float p = noisy ? noisy[i] : c[i].prior;
		double gap = forced_visits(t->params.forced_k, p, total) - (c[i].n + c[i].vl);

		if (t->params.solver && (c[i].flags & F_PROVEN) && c[i].tvalue > 0)
			continue; /* a proven loss for the root's mover: selection never enters it */
		if (gap > most) { /* the child furthest below its count; ties to the lower action */
			most = gap;
			besti = i;
		}
	}
	return besti == NONE ? NONE : root->first + besti;
}

static double puct_value(double q, double p, double c_sqrt_n, uint32_t visits)
{
	return q + c_sqrt_n * p / (1.0 + visits);
}

void az_mcts_prune_visits(uint32_t nchild, const uint32_t *n, const float *q, const float *p,
			  uint32_t parent_n, uint64_t total, float c_puct, float k, uint32_t *out)
{
	double cs = (double)c_puct * sqrt((double)parent_n), best_u;
	uint32_t best = 0;

	if (nchild == 0)
		return;
	for (uint32_t i = 1; i < nchild; i++)
		if (n[i] > n[best] || (n[i] == n[best] && p[i] > p[best]))
			best = i;
	best_u = puct_value(q[best], p[best], cs, n[best]);
	for (uint32_t i = 0; i < nchild; i++) {
		double give = floor(forced_visits(k, p[i], total));
		uint32_t lo = give >= (double)n[i] ? 0 : n[i] - (uint32_t)give, m = n[i];

		if (i != best) {
			while (m > lo && puct_value(q[i], p[i], cs, m - 1) < best_u)
				m--;
			if (m <= 1)
				m = 0;
		}
		out[i] = m;
	}
}

const uint32_t *az_tree_root_counts(const struct az_tree *t, int rank)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	uint32_t *cnt = t->counts, m = 0;
	uint64_t total = 0;
	/* Scratch for the ranked children; at most A each, on the stack (A <= 512). */
	uint32_t n[AZ_GAME_ACTIONS_MAX], pruned[AZ_GAME_ACTIONS_MAX];
	float q[AZ_GAME_ACTIONS_MAX], p[AZ_GAME_ACTIONS_MAX];

	for (uint32_t i = 0; i < root->nchild; i++) {
		cnt[i] = c[i].n;
		total += c[i].n;
	}
	if (!(t->params.forced_k > 0.0f) || !t->noise_on)
		return cnt;
	for (uint32_t i = 0; i < root->nchild; i++) {
		if (az_tree_rank(t, &c[i]) != rank)
			continue;
		n[m] = c[i].n;
		q[m] = c[i].n ? c[i].w / (float)c[i].n : 0.0f;
		if (t->params.solver && (c[i].flags & F_PROVEN))
			q[m] = (float)-c[i].tvalue; /* as PUCT sees it */
		p[m] = t->root_noisy ? t->noisy[i] : c[i].prior;
		m++;
	}
	az_mcts_prune_visits(m, n, q, p, root->n, total, t->params.c_puct, t->params.forced_k,
			     pruned);
	for (uint32_t i = 0, j = 0; i < root->nchild; i++)
		if (az_tree_rank(t, &c[i]) == rank)
			cnt[i] = pruned[j++];
	return cnt;
}

uint32_t az_tree_sims_target(const struct az_tree *t, uint32_t sims, int fresh)
{
	uint64_t target = (uint64_t)sims + (fresh ? t->root_base : 0);

	return target > UINT32_MAX ? UINT32_MAX : (uint32_t)target;
}
