/* SPDX-License-Identifier: MIT */
/* Root queries of the search tree (visits, value, proof), the move choice and policy target
 * with the MCTS-Solver's restrictions, and the introspection mcts_impl.h offers the tests. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "mcts/mcts.h"
#include "mcts/mcts_impl.h"
#include "mcts/tree.h"
#include "base/rng.h"

uint32_t az_tree_root_visits(const struct az_tree *t)
{
	return t->nodes[0].n;
}

uint32_t az_tree_inflight(const struct az_tree *t)
{
	return t->inflight;
}

float az_tree_root_value(const struct az_tree *t)
{
	const struct node *root = &t->nodes[0];

	if (root->flags & F_PROVEN)
		return (float)root->tvalue;
	return root->n ? -root->w / (float)root->n : 0.0f;
}

int az_tree_root_proven(const struct az_tree *t, int *value)
{
	const struct node *root = &t->nodes[0];

	if (!(root->flags & F_PROVEN))
		return 0;
	if (value)
		*value = root->tvalue;
	return 1;
}

/* How much the solver likes root child c: 3 a win in one, 2 a proven win, 1 open or a proven
 * draw, 0 a proven loss. Without the solver every child is 1. */
static int rank_of(const struct az_tree *t, const struct node *c)
{
	if (!t->params.solver || !(c->flags & F_PROVEN))
		return 1;
	if (c->tvalue > 0)
		return 0;
	if (c->tvalue < 0)
		return (c->flags & F_TERMINAL) ? 3 : 2;
	return 1;
}

int az_tree_rank(const struct az_tree *t, const struct node *c)
{
	return rank_of(t, c);
}

/* The best rank among the root's children (-1: no children). */
static int root_best_rank(const struct az_tree *t)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	int best = -1;

	for (uint32_t i = 0; i < root->nchild; i++) {
		int r = rank_of(t, &c[i]);

		if (r > best)
			best = r;
	}
	return best;
}

void az_tree_visit_policy(const struct az_tree *t, float *pi)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	int best = root_best_rank(t);
	const uint32_t *n = az_tree_root_counts(t, best);
	uint64_t sum = 0;
	uint32_t k = 0;

	memset(pi, 0, t->game->actions * sizeof(*pi));
	for (uint32_t i = 0; i < root->nchild; i++) {
		if (rank_of(t, &c[i]) == best) {
			sum += n[i];
			k++;
		}
	}
	if (k == 0 || (root->n <= 1 && !(root->flags & F_PROVEN))) /* no child visited */
		return;
	for (uint32_t i = 0; i < root->nchild; i++) {
		if (rank_of(t, &c[i]) != best)
			continue;
		/* A proven win: every winning move alike, whatever the visits. */
		if (best >= 2 || sum == 0)
			pi[c[i].action] = 1.0f / (float)k;
		else
			pi[c[i].action] = (float)((double)n[i] / (double)sum);
	}
}

void az_tree_policy_target(const struct az_tree *t, float *pi)
{
	int best = root_best_rank(t);

	/* A proven win, or nothing expanded: the visit policy's answer (uniform over the wins, or
	 * all 0) is Gumbel's too. */
	if (t->params.search != AZ_SEARCH_GUMBEL || best >= 2 ||
	    !(t->nodes[0].flags & F_EXPANDED)) {
		az_tree_visit_policy(t, pi);
		return;
	}
	az_gumbel_policy(t, best, pi);
}

/* The prior of root child i as the search used it (with the root's noise when it has some). */
static float used_prior(const struct az_tree *t, const struct node *c, uint32_t i)
{
	return t->root_noisy ? t->noisy[i] : c[i].prior;
}

/* Among the root children of rank best_rank with the most visits and, among those, the highest
 * prior, the one `ties` draws (uniformly; the first when ties is NULL or there is one). Returns
 * the child's index, or -1 when no child has that rank; *nmax gets the visits. */
static int pick_best(const struct az_tree *t, int best_rank, const uint32_t *n,
		     struct az_rng *ties, uint32_t *nmax)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	float best_p = -INFINITY;
	uint32_t k = 0, j;
	int besti = -1;

	*nmax = 0;
	for (uint32_t i = 0; i < root->nchild; i++) {
		float p = used_prior(t, c, i);

		if (rank_of(t, &c[i]) != best_rank)
			continue;
		if (besti < 0 || n[i] > *nmax || (n[i] == *nmax && p > best_p)) {
			*nmax = n[i];
			best_p = p;
			besti = (int)i;
			k = 1;
		} else if (n[i] == *nmax && p == best_p) {
			k++;
		}
	}
	if (k < 2 || !ties)
		return besti;
	/* One draw, and only on a tie, so a stream without ties is not disturbed. */
	j = az_rng_below(ties, k);
	for (uint32_t i = (uint32_t)besti; i < root->nchild; i++)
		if (rank_of(t, &c[i]) == best_rank && n[i] == *nmax && used_prior(t, c, i) == best_p &&
		    j-- == 0)
			return (int)i;
	return besti; /* not reached: k ties lie at or after besti */
}

int az_tree_pick(struct az_tree *t, float temperature, struct az_rng *ties)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	int best_rank = root_best_rank(t);
	const uint32_t *n = az_tree_root_counts(t, best_rank);
	uint32_t nmax;
	double total = 0.0, x;
	int besti;

	if (!(temperature >= 0.0f))
		return -EINVAL;
	if (t->params.search == AZ_SEARCH_GUMBEL && best_rank < 2 && root->nchild > 0) {
		if (!(root->flags & (F_PROVEN | F_EXPANDED)))
			return -EINVAL;
		return az_gumbel_pick(t, temperature, best_rank);
	}
	besti = pick_best(t, best_rank, n, ties, &nmax);
	/* Nothing visited among the best (a short search whose visits all went to moves it then
	 * proved lost): the highest prior among them. */
	if (besti < 0 || (nmax == 0 && !(root->flags & (F_PROVEN | F_EXPANDED))))
		return -EINVAL;
	if (temperature == 0.0f || nmax == 0 || best_rank >= 2)
		return c[besti].action;
	/* Weights relative to the maximum, so that small temperatures cannot overflow. */
	for (uint32_t i = 0; i < root->nchild; i++)
		if (rank_of(t, &c[i]) == best_rank)
			total += pow((double)n[i] / nmax, 1.0 / temperature);
	x = az_rng_uniform(&t->rng) * total;
	for (uint32_t i = 0; i < root->nchild; i++) {
		double wgt = rank_of(t, &c[i]) == best_rank ?
			     pow((double)n[i] / nmax, 1.0 / temperature) : 0.0;

		if (wgt > 0.0 && x < wgt)
			return c[i].action;
		x -= wgt;
	}
	return c[besti].action; /* rounding left x >= the last weight */
}

/* ---- introspection for tests (mcts_impl.h) ---- */

int az_tree_root_children(const struct az_tree *t, uint32_t *visits, float *clean, float *used)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	uint32_t A = t->game->actions;

	if (visits)
		memset(visits, 0, A * sizeof(*visits));
	if (clean)
		memset(clean, 0, A * sizeof(*clean));
	if (used)
		memset(used, 0, A * sizeof(*used));
	if (!(root->flags & F_EXPANDED))
		return 0;
	for (uint32_t i = 0; i < root->nchild; i++) {
		if (visits)
			visits[c[i].action] = c[i].n;
		if (clean)
			clean[c[i].action] = c[i].prior;
		if (used)
			used[c[i].action] = t->root_noisy ? t->noisy[i] : c[i].prior;
	}
	return root->nchild;
}

uint32_t az_tree_node_count(const struct az_tree *t)
{
	return t->count;
}

uint32_t az_tree_capacity(const struct az_tree *t)
{
	return t->cap + t->spare_cap;
}

int az_tree_check(const struct az_tree *t, uint32_t *bad_node)
{
	const struct node *nd = t->nodes;

	if (nd[0].parent != NONE || nd[0].vl != t->inflight)
		goto bad_root;
	for (uint32_t i = 0; i < t->count; i++) {
		uint64_t n = 0, vl = 0;

		if (nd[i].nchild && ((uint64_t)nd[i].first + nd[i].nchild > t->count ||
				     nd[i].first <= i))
			goto bad;
		for (uint32_t j = 0; j < nd[i].nchild; j++) {
			const struct node *c = &nd[nd[i].first + j];

			if (c->parent != i || (j && c->action <= c[-1].action))
				goto bad;
			n += c->n;
			vl += c->vl;
		}
		if (nd[i].flags & F_INFLIGHT)
			vl++;
		if (nd[i].vl != vl)
			goto bad;
		/* A proven node's later visits stop at it: N >= 1 + sum, not equal. */
		if ((nd[i].flags & F_EXPANDED) && !(nd[i].flags & F_PROVEN) && nd[i].n != n + 1)
			goto bad;
		if ((nd[i].flags & F_PROVEN) && nd[i].n < n + !!(nd[i].flags & F_EXPANDED))
			goto bad;
		if (!(nd[i].flags & (F_EXPANDED | F_PROVEN)) && nd[i].n != 0)
			goto bad;
		if ((nd[i].flags & F_EXPANDED) && (nd[i].flags & (F_INFLIGHT | F_TERMINAL)))
			goto bad;
		if ((nd[i].flags & F_PROVEN) && (nd[i].flags & F_INFLIGHT))
			goto bad;
		continue;
bad:
		if (bad_node)
			*bad_node = i;
		return -EPROTO;
	}
	return 0;

bad_root:
	if (bad_node)
		*bad_node = 0;
	return -EPROTO;
}
