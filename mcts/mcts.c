/* SPDX-License-Identifier: MIT */
/* PUCT tree search over an arena of nodes addressed by uint32 index, with virtual loss so that
 * several leaves of one tree can be in flight, root Dirichlet noise and subtree-copying reuse.
 * Gumbel AlphaZero's selection (params.search) lives in gumbel.c and plugs into the descent.
 *
 * Conventions (read these before touching the arithmetic):
 * - The root is always node 0. Children of a node are contiguous: [first, first + nchild).
 * - W of a node is the sum of backed-up values from the point of view of the player who moved
 *   INTO the node, i.e. the side to move at its parent. So at a parent, Q(s,a) = W/N of the child
 *   with no sign flip, and a leaf evaluated with value v (for its own side to move) adds -v to
 *   its own W, +v to its parent's, and so on up (games alternate strictly: both games do).
 *   The root's W follows the same rule, so az_tree_root_value() returns -W/N.
 * - N counts completed simulations through the node; the evaluation of a node counts as one
 *   visit of that node. Hence N(expanded node) = 1 + sum of N(children), at every moment.
 * - vl counts simulations in flight through the node. Selection treats each as a completed visit
 *   with value -vloss for the selecting player: Q = (W - vl*vloss) / (N + vl), and N + vl is used
 *   wherever N(s,a) and N(s) appear in PUCT (N(s) without the descent being made, which adds its
 *   own virtual loss to a node only after choosing the node's child). Children with N + vl == 0
 *   get the first-play urgency: Q = Q(parent) - fpu_reduction * sqrt(prior mass of the visited
 *   children), Q(parent) = -W/N of the parent (lc0's "reduction" FPU; KataGo does the same), or
 *   the constant fpu with fpu_absolute. Ties go to the higher prior, then to the lower action.
 * - Terminal nodes are flagged with their exact value and never expanded; each later visit backs
 *   that value up again. Without the solver they are found by az_tree_select() (game->terminal
 *   on the replayed state); with it, when their parent's children are created.
 * - MCTS-Solver (Winands, Bjornsson, Saito 2008, "Monte-Carlo Tree Search Solver"), params.solver:
 *   a node is PROVEN when its game-theoretic value tvalue (side to move at the node) is known:
 *   terminal; or some child is a proven loss for its own side to move (tvalue +1: a winning
 *   move); or every child is proven (tvalue = max over children of -child tvalue, which also
 *   proves draws). A leaf proven by its children at creation is not sent to the network. Each
 *   proof is propagated up at once (prove_up). A proven node is treated like a terminal one:
 *   selection stops there and backs its exact value up, so N(proven) >= 1 + sum N(children).
 *   Selection never enters a child that is a proven win for the opponent; pick and the visit
 *   policy (the recorded target) take a proven win at the root (a win in one first) and never
 *   choose a proven loss while some move does not lose.
 * - Forced playouts and policy-target pruning (params.forced_k, KataGo) live in targets.c;
 *   they change only which root child is selected and the counts pick and the target read.
 * - No states are stored: select replays the actions from the root state. The leaf's children
 *   are created (all legal moves, prior 0) when the leaf is handed out, because that is where the
 *   state is at hand; az_tree_expand() only fills in their priors. Selection never enters a node
 *   in flight, so nobody sees the zero priors.
 * - The only allocations are the amortised doubling of the arena in select and the spare arena
 *   that az_tree_advance() copies the kept subtree into (the two are swapped, so a game's memory
 *   stays bounded by the largest tree it searched); az_tree_shrink() gives the excess back.
 *
 * Single-threaded: one tree per game, every call from the thread that owns the game. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mcts/mcts.h"
#include "mcts/mcts_impl.h"
#include "mcts/tree.h"
#include "base/az_assert.h"
#include "base/rng.h"

#define INITIAL_NODES 1024u

void az_mcts_params_default(struct az_mcts_params *p, const struct az_game *g)
{
	float alpha = 0.3f;

	if (g && g->actions > 0)
		alpha = 10.0f / (float)g->actions;
	if (alpha < 0.03f)
		alpha = 0.03f;
	if (alpha > 1.0f)
		alpha = 1.0f;
	*p = (struct az_mcts_params){.search = AZ_SEARCH_PUCT, .gumbel_m = 16, .c_visit = 50.0f,
				     .c_scale = 0.1f, .c_puct = 1.5f, .vloss = 1.0f, .fpu = 0.0f, .fpu_absolute = 0,
				     .fpu_reduction = 0.25f, .solver = 1, .dir_alpha = alpha,
				     .dir_eps = 0.25f, .forced_k = 0.0f, .seed = 0};
}

static void node_clear(struct node *nd, uint32_t parent, uint16_t action)
{
	memset(nd, 0, sizeof(*nd));
	nd->parent = parent;
	nd->action = action;
}

/* Make room for `extra` more nodes; pointers into the arena are invalid afterwards. */
static int reserve(struct az_tree *t, uint32_t extra)
{
	uint64_t need = (uint64_t)t->count + extra;
	uint64_t cap = t->cap;
	struct node *nodes;

	if (need <= cap)
		return 0;
	if (need >= NONE)
		return -ENOMEM;
	while (cap < need)
		cap *= 2;
	if (cap >= NONE)
		cap = NONE - 1;
	nodes = realloc(t->nodes, (size_t)cap * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	t->nodes = nodes;
	t->cap = (uint32_t)cap;
	return 0;
}

static void fresh_root(struct az_tree *t)
{
	node_clear(&t->nodes[0], NONE, 0);
	t->count = 1;
	t->inflight = 0;
	t->root_noisy = 0;
	t->root_base = 0;
	t->gstale = 1;
}

/* Mix Dirichlet noise into the root's priors when noise is on and the root has priors. */
static void root_noise(struct az_tree *t)
{
	const struct node *root = &t->nodes[0];
	const struct node *c;
	float eps = t->params.dir_eps;

	t->root_noisy = 0;
	if (!t->noise_on || !(root->flags & F_EXPANDED) || root->nchild == 0 || !(eps > 0.0f) ||
	    t->params.search == AZ_SEARCH_GUMBEL) /* Gumbel's noise replaces Dirichlet's */
		return;
	az_rng_dirichlet(&t->rng, t->params.dir_alpha, t->noisy, root->nchild);
	c = &t->nodes[root->first];
	for (uint32_t i = 0; i < root->nchild; i++)
		t->noisy[i] = (1.0f - eps) * c[i].prior + eps * t->noisy[i];
	t->root_noisy = 1;
}

int az_tree_create(const struct az_game *g, const struct az_mcts_params *p, const void *root,
		   struct az_tree **out)
{
	struct az_tree *t;

	if (!g || !p || !root || !out || g->actions == 0 || g->actions > AZ_GAME_ACTIONS_MAX ||
	    g->state_bytes == 0 || g->state_bytes > AZ_GAME_STATE_MAX || !(p->dir_alpha > 0.0f) ||
	    !(p->forced_k >= 0.0f) || (p->search != AZ_SEARCH_PUCT && p->search != AZ_SEARCH_GUMBEL) ||
	    p->gumbel_m == 0 || !(p->c_visit >= 0.0f) || !(p->c_scale >= 0.0f) ||
	    !isfinite(p->c_visit) || !isfinite(p->c_scale))
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->game = g;
	t->params = *p;
	az_rng_seed(&t->rng, p->seed);
	t->nodes = malloc(INITIAL_NODES * sizeof(*t->nodes));
	if (!t->nodes)
		goto err_free_tree;
	t->cap = INITIAL_NODES;
	t->noisy = malloc(g->actions * sizeof(*t->noisy));
	if (!t->noisy)
		goto err_free_nodes;
	t->policy = malloc(g->actions * sizeof(*t->policy));
	if (!t->policy)
		goto err_free_noisy;
	t->mask = malloc(g->actions);
	if (!t->mask)
		goto err_free_policy;
	t->counts = malloc(g->actions * sizeof(*t->counts));
	if (!t->counts)
		goto err_free_mask;
	t->gnoise = malloc(g->actions * (sizeof(*t->gnoise) + sizeof(*t->gbase) + 1));
	if (!t->gnoise)
		goto err_free_counts;
	t->gbase = (uint32_t *)(t->gnoise + g->actions);
	t->gcons = (uint8_t *)(t->gbase + g->actions);
	memcpy(t->root_state, root, g->state_bytes);
	fresh_root(t);
	*out = t;
	return 0;

err_free_counts:
	free(t->counts);
err_free_mask:
	free(t->mask);
err_free_policy:
	free(t->policy);
err_free_noisy:
	free(t->noisy);
err_free_nodes:
	free(t->nodes);
err_free_tree:
	free(t);
	return -ENOMEM;
}

void az_tree_destroy(struct az_tree *t)
{
	if (!t)
		return;
	free(t->gnoise);
	free(t->counts);
	free(t->mask);
	free(t->policy);
	free(t->noisy);
	free(t->spare);
	free(t->nodes);
	free(t);
}

/* The RNG is not reseeded: successive games from one tree get different noise. */
void az_tree_reset(struct az_tree *t, const void *root)
{
	memcpy(t->root_state, root, t->game->state_bytes);
	fresh_root(t);
}

void az_tree_shrink(struct az_tree *t, uint32_t target_nodes)
{
	uint32_t target = target_nodes < INITIAL_NODES ? INITIAL_NODES : target_nodes;
	struct node *nodes;

	if (target < t->count)
		target = t->count;
	if (t->spare_cap > target) { /* keep_subtree() allocates it again when needed */
		free(t->spare);
		t->spare = NULL;
		t->spare_cap = 0;
	}
	if (t->cap <= target)
		return;
	nodes = realloc(t->nodes, (size_t)target * sizeof(*nodes));
	if (!nodes)
		return; /* the larger block stays: still a valid arena */
	t->nodes = nodes;
	t->cap = target;
}

void az_tree_set_leaf_hook(struct az_tree *t, az_leaf_fn fn, void *ctx)
{
	t->leaf_fn = fn;
	t->leaf_ctx = ctx;
}

void az_tree_set_noise(struct az_tree *t, int on)
{
	t->noise_on = on != 0;
	t->gstale = 1;
	if (!t->noise_on)
		t->root_noisy = 0;
	else if (!t->root_noisy)
		root_noise(t);
}

void az_tree_set_target(struct az_tree *t, uint32_t target)
{
	t->gtarget = target;
	t->gstale = 1;
}

/* Complete one simulation from `idx` up to the root: value v is for the side to move at idx,
 * so each node gets it from its mover's side (-v at idx, +v at its parent, ...). With
 * remove_vl the path's virtual loss goes too. */
static void backup(struct az_tree *t, uint32_t idx, float v, int remove_vl)
{
	for (;;) {
		struct node *nd = &t->nodes[idx];

		v = -v;
		nd->n++;
		nd->w += v;
		if (remove_vl) {
			AZ_DEBUG_ASSERT(nd->vl > 0);
			nd->vl--;
		}
		if (idx == 0)
			return;
		idx = nd->parent;
	}
}

static void undo_vl(struct az_tree *t, uint32_t idx)
{
	for (;;) {
		struct node *nd = &t->nodes[idx];

		AZ_DEBUG_ASSERT(nd->vl > 0);
		nd->vl--;
		if (idx == 0)
			return;
		idx = nd->parent;
	}
}

/* The value backed up for an exact result tv (side to move at a node `odd` plies below the
 * root): tv itself, except a draw, which is worth params.draw_value to the root's side. */
static float exact_value(const struct az_tree *t, int tv, int odd)
{
	if (tv != 0)
		return (float)tv;
	return odd ? -t->params.draw_value : t->params.draw_value;
}

/* The reduction FPU of node nd (children c, priors noisy or the clean ones) given the prior mass
 * of its visited children, summed in child order as a double. */
static float fpu_reduced(const struct az_tree *t, const struct node *nd, double mass)
{
	return (nd->n ? -nd->w / (float)nd->n : 0.0f) - t->params.fpu_reduction * sqrtf((float)mass);
}

/* PUCT child of expanded node idx: argmax Q + c * P * sqrt(N + vl) / (1 + N(a) + vl(a)); ties
 * go to the higher prior, then to the lower action (children are in action order). At the root
 * a child short of its forced playouts comes first (params.forced_k, mcts/targets.c).
 * One pass over the children: with the reduction FPU and c * sqrt(N + vl) >= 0, an unvisited
 * child's score fpu + c * P * sqrt(N + vl) does not decrease with P (rounding is monotone), so
 * the best unvisited child is the one of highest prior (lowest index among equals); it is scored
 * after the loop, once the visited children's prior mass gives the FPU, and ranked against the
 * visited ones by the same order (score, then prior, then index) that a scan in child order
 * applies, so the choice is exactly the two-pass one's. */
static uint32_t puct_child(const struct az_tree *t, uint32_t idx, int odd)
{
	const struct node *nd = &t->nodes[idx];
	const struct node *c = &t->nodes[nd->first];
	const float *noisy = (idx == 0 && t->root_noisy) ? t->noisy : NULL;
	float cs = t->params.c_puct * sqrtf((float)(nd->n + nd->vl));
	float vloss = t->params.vloss, fpu = t->params.fpu;
	float best = -INFINITY, best_p = -INFINITY, unv_p = -INFINITY;
	uint32_t besti = 0, unv = NONE;
	int solver = t->params.solver;
	int late = !t->params.fpu_absolute && cs >= 0.0f; /* FPU after the loop */
	double mass = 0.0;

	if (idx == 0 && t->params.forced_k > 0.0f) {
		uint32_t forced = az_tree_forced_child(t);

		if (forced != NONE)
			return forced;
	}
	if (!t->params.fpu_absolute && !late) {
		for (uint32_t i = 0; i < nd->nchild; i++)
			if (c[i].n + c[i].vl)
				mass += noisy ? noisy[i] : c[i].prior;
		fpu = fpu_reduced(t, nd, mass);
	}
	for (uint32_t i = 0; i < nd->nchild; i++) {
		uint32_t visits = c[i].n + c[i].vl;
		float p = noisy ? noisy[i] : c[i].prior;
		float q;
		float s;

		if (late && visits)
			mass += p;
		if (solver && (c[i].flags & F_PROVEN)) {
			if (c[i].tvalue > 0)
				continue; /* a proven win for the opponent: never worth a visit */
			q = c[i].tvalue ? (float)-c[i].tvalue : exact_value(t, 0, odd);
		} else if (visits) {
			q = (c[i].w - (float)c[i].vl * vloss) / (float)visits;
		} else if (late) {
			if (p > unv_p) {
				unv_p = p;
				unv = i;
			}
			continue;
		} else {
			q = fpu;
		}
		s = q + cs * p / (float)(1 + visits);

		if (s > best || (s == best && p > best_p)) {
			best = s;
			best_p = p;
			besti = i;
		}
	}
	if (unv != NONE) {
		float s = fpu_reduced(t, nd, mass) + cs * unv_p; /* / (1 + 0 visits) */

		if (s > best || (s == best && (unv_p > best_p || (unv_p == best_p && unv < besti)))) {
			best = s;
			besti = unv;
		}
	}
	AZ_ASSERT(best > -INFINITY); /* a node whose children all lose is proven: not descended */
	return nd->first + besti;
}

/* Prove node idx from its children if their proofs decide it (see the conventions). Returns 1
 * when idx became proven. */
static int solve_node(struct az_tree *t, uint32_t idx)
{
	struct node *nd = &t->nodes[idx];
	const struct node *c = &t->nodes[nd->first];
	int best = -2, open = 0;

	for (uint32_t i = 0; i < nd->nchild; i++) {
		if (!(c[i].flags & F_PROVEN))
			open = 1;
		else if (-c[i].tvalue > best)
			best = -c[i].tvalue;
	}
	if (best == -2 || (open && best < 1))
		return 0;
	nd->flags |= F_PROVEN;
	nd->tvalue = (int8_t)best;
	return 1;
}

/* Node idx was just proven: prove its ancestors as far as that decides them. */
static void prove_up(struct az_tree *t, uint32_t idx)
{
	while (idx != 0) {
		idx = t->nodes[idx].parent;
		if ((t->nodes[idx].flags & F_PROVEN) || !solve_node(t, idx))
			return;
	}
}

/* Flag the children of idx (at `state`) whose position is terminal, with their exact value. */
static void flag_terminal_children(struct az_tree *t, uint32_t idx, const void *state)
{
	const struct az_game *g = t->game;
	struct node *c = &t->nodes[t->nodes[idx].first];
	uint8_t next[AZ_GAME_STATE_MAX];
	float v;

	if (g->terminal_after) { /* the game's own answer, no move played */
		int8_t tv[64];
		uint64_t term = g->terminal_after(state, tv);
		for (uint32_t i = 0; term && i < t->nodes[idx].nchild; i++) {
			uint16_t a = c[i].action;
			if (a < 64 && (term >> a & 1)) {
				c[i].flags |= F_TERMINAL | F_PROVEN;
				c[i].tvalue = tv[a];
			}
		}
		return;
	}
	if (g->min_moves_left && g->min_moves_left(state) >= 2)
		return; /* no single move ends the game */
	for (uint32_t i = 0; i < t->nodes[idx].nchild; i++) {
		az_game_after(g, state, c[i].action, next);
		if (g->terminal(next, &v)) {
			c[i].flags |= F_TERMINAL | F_PROVEN;
			c[i].tvalue = (int8_t)(v > 0.0f ? 1 : v < 0.0f ? -1 : 0);
		}
	}
}

/* Create prior-0 children for every legal move of leaf idx at `state`. Returns the child count
 * (0: no legal move) or -ENOMEM. */
static int add_children(struct az_tree *t, uint32_t idx, const void *state)
{
	uint32_t A = t->game->actions, first;
	int k = t->game->legal(state, t->mask);

	if (k <= 0)
		return 0;
	if (reserve(t, (uint32_t)k) < 0)
		return -ENOMEM;
	first = t->count;
	for (uint32_t a = 0, j = 0; a < A && j < (uint32_t)k; a++) {
		if (t->mask[a])
			node_clear(&t->nodes[first + j++], idx, (uint16_t)a);
	}
	t->nodes[idx].first = first;
	t->nodes[idx].nchild = (uint16_t)k;
	t->count += (uint32_t)k;
	if (t->params.solver)
		flag_terminal_children(t, idx, state);
	return k;
}

/* Mark idx (`odd` plies below the root) terminal with value v (side to move at idx) and
 * complete the simulation. */
static int finish_terminal(struct az_tree *t, uint32_t idx, float v, int odd)
{
	struct node *nd = &t->nodes[idx];

	nd->flags |= F_TERMINAL | F_PROVEN;
	nd->tvalue = (int8_t)(v > 0.0f ? 1 : v < 0.0f ? -1 : 0);
	backup(t, idx, exact_value(t, nd->tvalue, odd), 1);
	if (t->params.solver)
		prove_up(t, idx);
	return AZ_SELECT_TERMINAL;
}

/* The child the descent enters from expanded, unproven node idx. */
static uint32_t select_child(struct az_tree *t, uint32_t idx, int odd)
{
	if (t->params.search != AZ_SEARCH_GUMBEL)
		return puct_child(t, idx, odd);
	return idx == 0 ? az_gumbel_root_child(t) : az_gumbel_child(t, idx);
}

/* Returns AZ_SELECT_* or -ENOMEM (arena growth failed; virtual loss undone, tree unchanged).
 * leaf->node is set in every case (BUSY: the busy leaf; TERMINAL: the terminal node); leaf->state
 * is the leaf's position for EVAL and TERMINAL. */
int az_tree_select(struct az_tree *t, struct az_leaf *leaf)
{
	const struct az_game *g = t->game;
	struct node *nd;
	uint32_t idx = 0;
	float v;
	int k, odd = 0;

	memcpy(leaf->state, t->root_state, g->state_bytes);
	/* Each node's virtual loss is added after its child is chosen, so that PUCT at a node sees
	 * the other simulations in flight but not this one. */
	while ((t->nodes[idx].flags & (F_EXPANDED | F_PROVEN)) == F_EXPANDED) {
		uint32_t child = select_child(t, idx, odd);

		t->nodes[idx].vl++;
		idx = child;
		odd ^= 1;
		g->apply(leaf->state, t->nodes[idx].action);
	}
	nd = &t->nodes[idx];
	nd->vl++;
	leaf->node = idx;
	if (nd->flags & F_PROVEN) {
		backup(t, idx, exact_value(t, nd->tvalue, odd), 1);
		return AZ_SELECT_TERMINAL;
	}
	if (nd->flags & F_INFLIGHT) {
		undo_vl(t, idx);
		return AZ_SELECT_BUSY;
	}
	if (g->terminal(leaf->state, &v))
		return finish_terminal(t, idx, v, odd);
	if (t->leaf_fn)
		t->leaf_fn(t->leaf_ctx, leaf->state);
	k = add_children(t, idx, leaf->state);
	if (k < 0) {
		undo_vl(t, idx);
		return k;
	}
	if (k == 0) /* no legal move although not terminal: a game bug; score it a draw */
		return finish_terminal(t, idx, 0.0f, odd);
	if (t->params.solver && solve_node(t, idx)) {
		/* A win in one (or only terminal moves): exact, no network needed. */
		nd = &t->nodes[idx];
		backup(t, idx, exact_value(t, nd->tvalue, odd), 1);
		prove_up(t, idx);
		return AZ_SELECT_TERMINAL;
	}
	t->nodes[idx].flags |= F_INFLIGHT;
	t->inflight++;
	leaf->n_legal = (uint32_t)k;
	leaf->legal = t->mask; /* add_children's legal() call: the caller need not repeat it */
	return AZ_SELECT_EVAL;
}

/* The children's priors from policy: entries that are not finite or negative count as 0; uniform
 * when every legal entry counts as 0. normalised = 0: divided by the sum of the legal entries;
 * 1: taken as they are (the caller's policy already sums to 1 over the legal moves). */
static void set_priors(struct az_tree *t, struct node *nd, const float *policy, int normalised)
{
	struct node *c = &t->nodes[nd->first];
	double sum = 0.0;

	for (uint32_t i = 0; i < nd->nchild; i++) {
		float p = policy[c[i].action];

		c[i].prior = (isfinite(p) && p > 0.0f) ? p : 0.0f;
		sum += c[i].prior;
	}
	if (normalised && sum > 0.0)
		return;
	for (uint32_t i = 0; i < nd->nchild; i++) {
		if (sum > 0.0 && isfinite(sum))
			c[i].prior = (float)(c[i].prior / sum);
		else
			c[i].prior = 1.0f / (float)nd->nchild;
	}
}

/* 1 when node lies an odd number of plies below the root (its side to move is the root's
 * opponent: turns alternate in every game here). */
static int odd_depth(const struct az_tree *t, uint32_t node)
{
	int odd = 0;

	for (; node != 0; node = t->nodes[node].parent)
		odd ^= 1;
	return odd;
}

static void expand(struct az_tree *t, uint32_t node, const float *policy, float value,
		   float draw, int normalised)
{
	struct node *nd;

	AZ_ASSERT(node < t->count);
	nd = &t->nodes[node];
	AZ_ASSERT(nd->flags & F_INFLIGHT);
	set_priors(t, nd, policy, normalised);
	nd->flags = (uint8_t)((nd->flags & ~F_INFLIGHT) | F_EXPANDED);
	t->inflight--;
	if (!isfinite(value))
		value = 0.0f;
	if (t->params.draw_value != 0.0f && draw > 0.0f && draw <= 1.0f)
		value += exact_value(t, 0, odd_depth(t, node)) * draw; /* contempt (mcts.h) */
	backup(t, node, value, 1);
	if (node == 0)
		root_noise(t);
}

void az_tree_expand(struct az_tree *t, uint32_t node, const float *policy, float value)
{
	expand(t, node, policy, value, 0.0f, 0);
}

void az_tree_expand_normalised(struct az_tree *t, uint32_t node, const float *policy,
			       float value)
{
	expand(t, node, policy, value, 0.0f, 1);
}

void az_tree_expand_wdl(struct az_tree *t, uint32_t node, const float *policy, float value,
			float draw, int normalised)
{
	expand(t, node, policy, value, draw, normalised != 0);
}

/* Copy the subtree of old node `from` into the spare arena as a compact breadth-first tree with
 * `from` at index 0, then swap arenas. While node i waits in the queue its `first` field holds
 * its index in the old arena. Returns 0 or -ENOMEM (tree unchanged). */
static int keep_subtree(struct az_tree *t, uint32_t from)
{
	struct node *old = t->nodes, *nw;
	uint32_t next = 1;

	if (t->spare_cap < t->count) {
		nw = realloc(t->spare, (size_t)t->cap * sizeof(*nw));
		if (!nw)
			return -ENOMEM;
		t->spare = nw;
		t->spare_cap = t->cap;
	}
	nw = t->spare;
	nw[0] = old[from];
	nw[0].parent = NONE;
	nw[0].first = from;
	for (uint32_t i = 0; i < next; i++) {
		const struct node *o = &old[nw[i].first];

		nw[i].first = next;
		for (uint32_t j = 0; j < o->nchild; j++) {
			nw[next + j] = old[o->first + j];
			nw[next + j].parent = i;
			nw[next + j].first = o->first + j;
		}
		next += o->nchild;
	}
	t->spare = old;
	t->nodes = nw;
	{
		uint32_t cap = t->cap;

		t->cap = t->spare_cap;
		t->spare_cap = cap;
	}
	t->count = next;
	return 0;
}

int az_tree_advance(struct az_tree *t, int action)
{
	const struct az_game *g = t->game;
	const struct node *root = &t->nodes[0];
	uint32_t child = NONE;
	float v;

	if (t->inflight || action < 0 || (uint32_t)action >= g->actions ||
	    (root->flags & F_TERMINAL))
		return -EINVAL;
	for (uint32_t i = 0; i < root->nchild; i++) {
		if (t->nodes[root->first + i].action == action)
			child = root->first + i;
	}
	if (root->nchild && child == NONE)
		return -EINVAL; /* children cover every legal move */
	if (!root->nchild && (g->terminal(t->root_state, &v) ||
			      g->legal(t->root_state, t->mask) <= 0 || !t->mask[action]))
		return -EINVAL;
	g->apply(t->root_state, action);
	if (child == NONE || keep_subtree(t, child) < 0)
		fresh_root(t);
	t->root_base = t->nodes[0].n;
	t->root_noisy = 0;
	t->gstale = 1;
	root_noise(t);
	return 0;
}

const void *az_tree_root_state(const struct az_tree *t)
{
	return t->root_state;
}

/* Take back the leaf just handed out, as if it had never been selected: its virtual loss, its
 * in-flight mark and its children (the last nodes allocated, since nothing ran in between). */
static void abandon(struct az_tree *t, uint32_t idx)
{
	struct node *nd = &t->nodes[idx];

	undo_vl(t, idx);
	nd->flags &= (uint8_t)~F_INFLIGHT;
	t->inflight--;
	AZ_ASSERT(nd->first + nd->nchild == t->count);
	t->count = nd->first;
	nd->nchild = 0;
	nd->first = 0;
}

/* Returns 0, the evaluator's error (the failed leaf is taken back, nothing stays in flight),
 * -ENOMEM, or -EAGAIN when it meets a leaf put in flight by someone else (BUSY). */
int az_mcts_search(struct az_tree *t, uint32_t sims, az_eval_fn eval, void *ctx)
{
	struct az_leaf leaf;
	float value, draw;
	int r;

	az_tree_set_target(t, sims);
	while (t->nodes[0].n < sims) {
		r = az_tree_select(t, &leaf);
		if (r < 0)
			return r;
		if (r == AZ_SELECT_BUSY)
			return -EAGAIN; /* a leaf from outside this loop is still in flight */
		if (r != AZ_SELECT_EVAL)
			continue;
		draw = 0.0f;
		r = eval(ctx, leaf.state, t->policy, &value, &draw);
		if (r < 0) {
			abandon(t, leaf.node);
			return r;
		}
		az_tree_expand_wdl(t, leaf.node, t->policy, value, draw, 0);
	}
	return 0;
}
