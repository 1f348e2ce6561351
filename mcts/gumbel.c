/* SPDX-License-Identifier: MIT */
/* Gumbel AlphaZero's search (Danihelka, Guez, Schrittwieser, Silver, "Policy improvement by
 * planning with Gumbel", ICLR 2022), as params.search = AZ_SEARCH_GUMBEL selects it.
 *
 * - At the start of a move's search the root draws Gumbel noise g(a) for its actions (0 when
 *   noise is off: evaluation and the arena) and considers the m = min(gumbel_m, allowed) actions
 *   of highest g(a) + logit(a) (Gumbel-top-k: a sample without replacement from the policy).
 *   logit(a) = log P(a): the tree keeps normalised priors, and softmax(log P) = P.
 * - Sequential halving spends the budget (the simulations between the root's visits then and
 *   az_tree_set_target()'s target) in phases: each of the r actions still considered gets
 *   max(1, floor(n / (ceil(log2 m) * r))) visits per phase, then the better half (at least 2)
 *   goes on. It is run as mctx does: simulation k goes to the action of best
 *   g + logit + sigma(completed Q) among the considered ones whose visits of this move equal
 *   az_gumbel_considered_visit(m, n, k), which visits the top r of each phase's round in turn.
 *   Visits "of this move" are N + vl less the child's N + vl when the move's search began, so
 *   tree reuse and the leaves in flight (vl) count the same as in PUCT's arithmetic.
 * - sigma(q) = (c_visit + max_b N(b)) * c_scale * q, q the completed Q rescaled to [0, 1] by
 *   its minimum and maximum over the node's allowed children (mctx's qtransform). Completed Q:
 *   W/N for a visited child, the exact value for a proven one, and for the others the mixed
 *   value (v_raw + sum_b N(b) * sum_visited P q / sum_visited P) / (1 + sum_b N(b)), with v_raw
 *   the node's own network value (appendix D).
 * - Below the root, the deterministic rule: argmax_a pi'(a) - N(a) / (1 + sum_b N(b)), pi' =
 *   softmax(logit + sigma(completed Q)) at that node.
 * - Batching: the leaves in flight count as visits (N + vl) in the schedule and in the non-root
 *   rule, so consecutive selections spread over the actions as PUCT's virtual loss spreads
 *   them; Q itself is never penalised. At the root an action whose child is itself a leaf in
 *   flight is passed over while another action of the same standing is free, so that a phase's
 *   visits go out as one batch instead of stopping at the first busy child.
 * - MCTS-Solver: a child proven lost for the side to move is never considered nor selected
 *   while some child is not; a proven win proves the root, and az_tree_pick() plays it.
 *
 * Single-threaded like the rest of the tree. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "mcts/mcts.h"
#include "mcts/mcts_impl.h"
#include "mcts/tree.h"
#include "base/az_assert.h"
#include "base/rng.h"

int az_search_parse(const char *text, int *kind)
{
	if (text && strcmp(text, "puct") == 0)
		*kind = AZ_SEARCH_PUCT;
	else if (text && strcmp(text, "gumbel") == 0)
		*kind = AZ_SEARCH_GUMBEL;
	else
		return -EINVAL;
	return 0;
}

const char *az_search_name(int kind)
{
	return kind == AZ_SEARCH_GUMBEL ? "gumbel" : "puct";
}

uint32_t az_gumbel_considered_visit(uint32_t m, uint32_t n, uint32_t k)
{
	uint32_t log2m = 0, r = m, base = 0;
	uint64_t pos = 0;

	if (m <= 1)
		return k;
	while ((1u << log2m) < m)
		log2m++;
	for (;;) {
		uint32_t extra = n / (log2m * r);

		if (extra < 1)
			extra = 1;
		if (k < pos + (uint64_t)extra * r)
			return base + (uint32_t)((k - pos) / r);
		pos += (uint64_t)extra * r;
		base += extra;
		r = r / 2 < 2 ? 2 : r / 2;
	}
}

static float logit_of(float p)
{
	return logf(p > 1e-30f ? p : 1e-30f);
}

/* Q of child c for the side to move at its parent: 1 with *q set when it is proven (exact) or
 * visited (W/N), 0 otherwise. */
static int child_q(const struct az_tree *t, const struct node *c, float *q)
{
	if (t->params.solver && (c->flags & F_PROVEN)) {
		*q = (float)-c->tvalue;
		return 1;
	}
	if (c->n == 0)
		return 0;
	*q = c->w / (float)c->n;
	return 1;
}

/* The network's value of expanded node idx for its side to move: every simulation through a
 * child c adds to W(idx) what it takes from W(c), and the node's own evaluation added -v_raw,
 * so v_raw = -W(idx) - sum_c W(c) (conventions in mcts.c). */
static float raw_value(const struct az_tree *t, uint32_t idx)
{
	const struct node *nd = &t->nodes[idx];
	const struct node *c = &t->nodes[nd->first];
	double v = -(double)nd->w;

	if (nd->n == 0)
		return 0.0f;
	for (uint32_t i = 0; i < nd->nchild; i++)
		v -= c[i].w;
	return v > 1.0 ? 1.0f : v < -1.0 ? -1.0f : (float)v;
}

/* sigma(completed Q) of node idx's children into s[nchild] (file comment), rescaled by the
 * minimum and maximum over the children with use[i]. */
static void completed_sigma(const struct az_tree *t, uint32_t idx, const uint8_t *use, float *s)
{
	const struct node *nd = &t->nodes[idx];
	const struct node *c = &t->nodes[nd->first];
	double sum_n = 0.0, sum_p = 0.0, sum_pq = 0.0, vmix;
	float lo = INFINITY, hi = -INFINITY, q, scale, span;
	uint32_t max_n = 0;

	for (uint32_t i = 0; i < nd->nchild; i++) {
		if (c[i].n > max_n)
			max_n = c[i].n;
		if (c[i].n == 0 || !child_q(t, &c[i], &q))
			continue;
		double p = c[i].prior > 1e-30f ? c[i].prior : 1e-30;
		sum_n += c[i].n;
		sum_p += p;
		sum_pq += p * q;
	}
	vmix = raw_value(t, idx);
	if (sum_p > 0.0)
		vmix = (vmix + sum_n * sum_pq / sum_p) / (sum_n + 1.0);
	for (uint32_t i = 0; i < nd->nchild; i++) {
		s[i] = child_q(t, &c[i], &q) ? q : (float)vmix;
		if (!use[i])
			continue;
		lo = s[i] < lo ? s[i] : lo;
		hi = s[i] > hi ? s[i] : hi;
	}
	scale = (t->params.c_visit + (float)max_n) * t->params.c_scale;
	span = hi - lo > 1e-8f ? hi - lo : 1e-8f; /* all equal: 0 for every child */
	for (uint32_t i = 0; i < nd->nchild; i++)
		s[i] = use[i] ? scale * (s[i] - lo) / span : 0.0f;
}

/* use[i] = 1 for node idx's children the search may choose: not a proven loss for the side to
 * move there (solver rank 0), unless all are. */
static void allowed_children(const struct az_tree *t, uint32_t idx, uint8_t *use)
{
	const struct node *nd = &t->nodes[idx];
	const struct node *c = &t->nodes[nd->first];
	int any = 0;

	for (uint32_t i = 0; i < nd->nchild; i++) {
		use[i] = az_tree_rank(t, &c[i]) > 0;
		any |= use[i];
	}
	if (!any)
		memset(use, 1, nd->nchild);
}

/* x[i] = logit + sigma(completed Q) of node idx's children with use[i] (others -inf), softmaxed
 * in place into pi' when softmax is set. */
static void improved_logits(const struct az_tree *t, uint32_t idx, const uint8_t *use, float *x,
			    int softmax)
{
	const struct node *nd = &t->nodes[idx];
	const struct node *c = &t->nodes[nd->first];
	float mx = -INFINITY;
	double sum = 0.0;

	completed_sigma(t, idx, use, x);
	for (uint32_t i = 0; i < nd->nchild; i++) {
		x[i] = use[i] ? logit_of(c[i].prior) + x[i] : -INFINITY;
		mx = x[i] > mx ? x[i] : mx;
	}
	if (!softmax)
		return;
	for (uint32_t i = 0; i < nd->nchild; i++)
		sum += use[i] ? exp((double)(x[i] - mx)) : 0.0;
	for (uint32_t i = 0; i < nd->nchild; i++)
		x[i] = use[i] ? (float)(exp((double)(x[i] - mx)) / sum) : 0.0f;
}

uint32_t az_gumbel_child(const struct az_tree *t, uint32_t idx)
{
	const struct node *nd = &t->nodes[idx];
	const struct node *c = &t->nodes[nd->first];
	uint8_t use[AZ_GAME_ACTIONS_MAX];
	float pi[AZ_GAME_ACTIONS_MAX], best = -INFINITY, best_p = -INFINITY;
	uint64_t total = 0;
	uint32_t besti = NONE;

	allowed_children(t, idx, use);
	improved_logits(t, idx, use, pi, 1);
	for (uint32_t i = 0; i < nd->nchild; i++)
		total += (uint64_t)c[i].n + c[i].vl;
	for (uint32_t i = 0; i < nd->nchild; i++) {
		float s = pi[i] - (float)((double)(c[i].n + c[i].vl) / (double)(1 + total));

		if (!use[i])
			continue;
		if (besti == NONE || s > best || (s == best && c[i].prior > best_p)) {
			best = s;
			best_p = c[i].prior;
			besti = i;
		}
	}
	AZ_ASSERT(besti != NONE);
	return nd->first + besti;
}

/* A Gumbel(0, 1) draw: -log(-log u), u in (0, 1). */
static float gumbel_draw(struct az_rng *r)
{
	double u = az_rng_uniform(r);

	if (u < 1e-300)
		u = 1e-300;
	return (float)-log(-log(u));
}

/* The move's search begins: Gumbel noise, the considered actions (Gumbel-top-m among the
 * allowed), each root child's N + vl now, and the budget up to the target. */
static void gumbel_begin(struct az_tree *t)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	uint8_t use[AZ_GAME_ACTIONS_MAX];
	uint64_t now = (uint64_t)root->n + root->vl;
	uint32_t allowed = 0, m;

	allowed_children(t, 0, use);
	for (uint32_t i = 0; i < root->nchild; i++) {
		t->gnoise[i] = t->noise_on ? gumbel_draw(&t->rng) : 0.0f;
		t->gbase[i] = c[i].n + c[i].vl;
		t->gcons[i] = 0;
		allowed += use[i];
	}
	m = t->params.gumbel_m < allowed ? t->params.gumbel_m : allowed;
	for (uint32_t j = 0; j < m; j++) {
		uint32_t besti = NONE;
		float best = -INFINITY;

		for (uint32_t i = 0; i < root->nchild; i++) {
			float x = t->gnoise[i] + logit_of(c[i].prior);

			if (use[i] && !t->gcons[i] && (besti == NONE || x > best)) {
				best = x;
				besti = i;
			}
		}
		t->gcons[besti] = 1;
	}
	t->gm = m;
	t->gbudget = t->gtarget > now ? (uint32_t)(t->gtarget - now) : 0;
	t->gstale = 0;
}

/* Visits of root child i in this move's search (N + vl since gumbel_begin). */
static uint32_t move_visits(const struct az_tree *t, uint32_t i)
{
	const struct node *c = &t->nodes[t->nodes[0].first + i];
	uint32_t v = c->n + c->vl;

	return v > t->gbase[i] ? v - t->gbase[i] : 0;
}

/* Among the root children with ok[i], those of the `want` visits of this move (want ==
 * UINT32_MAX: the fewest; want == 0 with most: the most), the best by score[i]; children that are
 * themselves leaves in flight only when no other qualifies. NONE when no child has ok[i]. */
static uint32_t best_of(const struct az_tree *t, const uint8_t *ok, const float *score,
			uint32_t want, int most)
{
	const struct node *c = &t->nodes[t->nodes[0].first];
	uint32_t besti = NONE, bestv = 0;
	int best_free = 0;

	for (uint32_t i = 0; i < t->nodes[0].nchild; i++) {
		uint32_t v = move_visits(t, i);
		int free_ = !(c[i].flags & F_INFLIGHT);

		if (!ok[i] || (want != UINT32_MAX && !most && v != want))
			continue;
		if (besti != NONE) {
			int better_v = most ? v > bestv : want == UINT32_MAX && v < bestv;
			int same_v = v == bestv;

			if (!better_v &&
			    !(same_v && (free_ > best_free ||
					 (free_ == best_free && score[i] > score[besti]))))
				continue;
		}
		besti = i;
		bestv = v;
		best_free = free_;
	}
	return besti;
}

/* score[i] = g + logit + sigma(completed Q) of the root's children; ok[i]: considered and
 * allowed (allowed only, when no considered child is). */
static void root_scores(const struct az_tree *t, float *score, uint8_t *ok)
{
	const struct node *root = &t->nodes[0];
	uint8_t use[AZ_GAME_ACTIONS_MAX];
	int any = 0;

	allowed_children(t, 0, use);
	improved_logits(t, 0, use, score, 0);
	for (uint32_t i = 0; i < root->nchild; i++) {
		score[i] += t->gnoise[i];
		ok[i] = use[i] && t->gcons[i];
		any |= ok[i];
	}
	if (!any)
		memcpy(ok, use, root->nchild);
}

uint32_t az_gumbel_root_child(struct az_tree *t)
{
	float score[AZ_GAME_ACTIONS_MAX];
	uint8_t ok[AZ_GAME_ACTIONS_MAX];
	uint64_t k = 0;
	uint32_t want, besti;

	if (t->gstale)
		gumbel_begin(t);
	root_scores(t, score, ok);
	for (uint32_t i = 0; i < t->nodes[0].nchild; i++)
		if (t->gcons[i])
			k += move_visits(t, i);
	want = az_gumbel_considered_visit(t->gm, t->gbudget,
					  k > UINT32_MAX ? UINT32_MAX : (uint32_t)k);
	besti = best_of(t, ok, score, want, 0);
	if (besti == NONE) /* a considered child dropped out (proven lost): the least visited */
		besti = best_of(t, ok, score, UINT32_MAX, 0);
	AZ_ASSERT(besti != NONE);
	return t->nodes[0].first + besti;
}

void az_gumbel_policy(const struct az_tree *t, int rank, float *pi)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	uint8_t use[AZ_GAME_ACTIONS_MAX] = {0}; /* zeroed: gcc cannot see the loop fill it */
	float x[AZ_GAME_ACTIONS_MAX];

	memset(pi, 0, t->game->actions * sizeof(*pi));
	for (uint32_t i = 0; i < root->nchild; i++)
		use[i] = az_tree_rank(t, &c[i]) == rank;
	improved_logits(t, 0, use, x, 1);
	for (uint32_t i = 0; i < root->nchild; i++)
		pi[c[i].action] = x[i];
}

/* A sample from the improved policy over the children of solver rank `rank`, to the power
 * 1 / temperature. */
static int sample_improved(struct az_tree *t, int rank, float temperature)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	uint8_t use[AZ_GAME_ACTIONS_MAX] = {0}; /* as in az_gumbel_policy() */
	float x[AZ_GAME_ACTIONS_MAX], mx = -INFINITY;
	double total = 0.0, u;
	uint32_t last = NONE;

	for (uint32_t i = 0; i < root->nchild; i++)
		use[i] = az_tree_rank(t, &c[i]) == rank;
	improved_logits(t, 0, use, x, 0);
	for (uint32_t i = 0; i < root->nchild; i++)
		mx = use[i] && x[i] > mx ? x[i] : mx;
	for (uint32_t i = 0; i < root->nchild; i++)
		total += use[i] ? exp((double)(x[i] - mx) / temperature) : 0.0;
	u = az_rng_uniform(&t->rng) * total;
	for (uint32_t i = 0; i < root->nchild; i++) {
		double w;

		if (!use[i])
			continue;
		w = exp((double)(x[i] - mx) / temperature);
		if (u < w)
			return c[i].action;
		u -= w;
		last = i;
	}
	AZ_ASSERT(last != NONE);
	return c[last].action; /* rounding left u >= the last weight */
}

int az_gumbel_pick(struct az_tree *t, float temperature, int rank)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];
	float score[AZ_GAME_ACTIONS_MAX];
	uint8_t ok[AZ_GAME_ACTIONS_MAX];
	uint32_t besti;
	int any = 0;

	if (t->gstale)
		gumbel_begin(t);
	if (temperature > 0.0f && !t->noise_on)
		return sample_improved(t, rank, temperature);
	root_scores(t, score, ok);
	for (uint32_t i = 0; i < root->nchild; i++) {
		ok[i] = ok[i] && az_tree_rank(t, &c[i]) == rank;
		any |= ok[i];
	}
	if (!any) /* no considered child of that rank: the best of that rank by score */
		for (uint32_t i = 0; i < root->nchild; i++)
			ok[i] = az_tree_rank(t, &c[i]) == rank;
	besti = best_of(t, ok, score, 0, 1);
	AZ_ASSERT(besti != NONE);
	return c[besti].action;
}

int az_tree_gumbel_considered(const struct az_tree *t, uint8_t *considered, float *noise)
{
	const struct node *root = &t->nodes[0];
	const struct node *c = &t->nodes[root->first];

	if (considered)
		memset(considered, 0, t->game->actions);
	if (noise)
		memset(noise, 0, t->game->actions * sizeof(*noise));
	if (t->gstale || t->params.search != AZ_SEARCH_GUMBEL)
		return -1;
	for (uint32_t i = 0; i < root->nchild; i++) {
		if (considered)
			considered[c[i].action] = t->gcons[i];
		if (noise)
			noise[c[i].action] = t->gnoise[i];
	}
	return (int)t->gm;
}
