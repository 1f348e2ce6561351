/* SPDX-License-Identifier: MIT */
/* The node arena and the tree, shared by the files of mcts/ (mcts.c: search; root.c: root
 * queries, move choice and the test introspection; targets.c: forced playouts and policy-target
 * pruning; gumbel.c: Gumbel AlphaZero's selection, target and move). The conventions are in
 * mcts.c's opening comment. Private to mcts/: never include it from anywhere else. */
#ifndef AZ_MCTS_TREE_H
#define AZ_MCTS_TREE_H

#include <stdint.h>

#include "mcts/mcts.h"
#include "base/rng.h"

#define NONE UINT32_MAX

enum {
	F_EXPANDED = 1u << 0, /* priors set by az_tree_expand() */
	F_INFLIGHT = 1u << 1, /* handed out as a leaf, not yet expanded */
	F_TERMINAL = 1u << 2, /* game over at this node; tvalue is exact */
	F_PROVEN = 1u << 3,   /* game-theoretic value known (terminal or solved); tvalue is exact */
};

struct node {
	uint32_t parent; /* NONE for the root */
	uint32_t first;  /* first child; valid when nchild > 0 */
	uint32_t n;      /* completed visits */
	uint32_t vl;     /* visits in flight through this node */
	float w;         /* value sum, for the player who moved into this node */
	float prior;     /* clean P(parent, action), normalised over the parent's legal moves */
	uint16_t action; /* action from the parent */
	uint16_t nchild;
	uint8_t flags;
	int8_t tvalue; /* exact value for the side to move at this node (F_PROVEN): -1, 0, +1 */
	uint8_t pad[2];
};

_Static_assert(sizeof(struct node) == 32, "two nodes per cache line");
_Static_assert(AZ_GAME_ACTIONS_MAX <= UINT16_MAX, "action and nchild are 16-bit");

struct az_tree {
	const struct az_game *game;
	struct az_mcts_params params;
	struct az_rng rng;

	struct node *nodes; /* arena; nodes[0] is the root */
	uint32_t count;
	uint32_t cap;
	struct node *spare; /* second arena for az_tree_advance(); swapped with nodes */
	uint32_t spare_cap;

	uint32_t inflight; /* leaves handed out and not yet expanded */
	uint32_t root_base; /* the root's visits when it became the root (az_tree_sims_target) */
	int noise_on;
	int root_noisy;   /* noisy[] holds the root's mixed priors, by child offset */
	float *noisy;     /* [A] */
	float *policy;    /* [A] scratch for az_mcts_search() */
	uint8_t *mask;    /* [A] scratch for legal moves */
	uint32_t *counts; /* [A] scratch: the root children's (pruned) visits, by child offset */
	/* Gumbel (mcts/gumbel.c): the root's state for the current move's search, by child
	 * offset; gnoise, gbase and gcons share one allocation. */
	float *gnoise;      /* [A] Gumbel noise g(a) (0 with noise off) */
	uint32_t *gbase;    /* [A] N + vl of each root child when the move's search began */
	uint8_t *gcons;     /* [A] 1: a considered action */
	uint32_t gtarget;   /* az_tree_set_target() */
	uint32_t gbudget;   /* simulations the move's schedule is laid out over */
	uint32_t gm;        /* considered actions */
	int gstale;         /* build the state anew before its next use (a new root or move) */
	az_leaf_fn leaf_fn; /* az_tree_set_leaf_hook(); NULL: none */
	void *leaf_ctx;
	uint8_t root_state[AZ_GAME_STATE_MAX];
};

/* targets.c. The root child that forced playouts select next, or NONE when forced playouts
 * are off (forced_k 0 or noise off) or no child is short of its forced visits. */
uint32_t az_tree_forced_child(const struct az_tree *t);

/* targets.c. The visits of the root's children (by child offset, nchild entries) that the move
 * choice and the policy target use: t->counts filled with the raw counts, or with forced
 * playouts on, the pruned ones for the children of solver rank `rank` (others raw). */
const uint32_t *az_tree_root_counts(const struct az_tree *t, int rank);

/* root.c. How much the solver likes root child c (3 a win in one, 2 a proven win, 1 open or a
 * proven draw, 0 a proven loss; 1 for every child without the solver). */
int az_tree_rank(const struct az_tree *t, const struct node *c);

/* gumbel.c. The root child Gumbel selects next (sequential halving over the considered
 * actions), building the move's root state first when it is stale. */
uint32_t az_gumbel_root_child(struct az_tree *t);

/* gumbel.c. The non-root rule at expanded, unproven node idx: argmax pi'(a) - N(a) / (1 + sum N)
 * (N with the visits in flight). */
uint32_t az_gumbel_child(const struct az_tree *t, uint32_t idx);

/* gumbel.c. The improved policy over the root children of solver rank `rank` into pi[A]. */
void az_gumbel_policy(const struct az_tree *t, int rank, float *pi);

/* gumbel.c. az_tree_pick() under Gumbel for a root whose best solver rank is `rank` (< 2). */
int az_gumbel_pick(struct az_tree *t, float temperature, int rank);

#endif
