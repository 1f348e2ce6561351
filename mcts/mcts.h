/* SPDX-License-Identifier: MIT */
/* Monte Carlo tree search with PUCT, virtual loss (several leaves in flight per tree), Dirichlet
 * noise at the root, temperature move choice and tree reuse; or Gumbel AlphaZero's search
 * (params.search, mcts/gumbel.c). The tree never calls the network:
 * az_tree_select() hands out leaves, the caller evaluates them (through a ring or directly) and
 * returns the result with az_tree_expand(). One tree per game; not thread-safe. */
#ifndef AZ_MCTS_H
#define AZ_MCTS_H

#include <stdint.h>

#include "games/game.h"

/* The search at the root and below it (az_mcts_params.search). */
enum az_search_kind {
	AZ_SEARCH_PUCT = 0,   /* AlphaZero's PUCT with Dirichlet noise, visit-count targets */
	AZ_SEARCH_GUMBEL = 1, /* Gumbel AlphaZero (Danihelka et al., ICLR 2022; mcts/gumbel.c) */
};

struct az_mcts_params {
	int search;          /* enum az_search_kind; default AZ_SEARCH_PUCT */
	/* Gumbel only (ignored by PUCT): */
	uint32_t gumbel_m;   /* most root actions considered (Gumbel-top-m); default 16 */
	float c_visit;       /* sigma(q) = (c_visit + max_b N(b)) * c_scale * q; default 50 */
	float c_scale;       /* default 0.1, mctx's for its per-node [0, 1] rescale of q (the
	                      * paper's 1.0 made near one-hot targets and repeated arena games:
	                      * docs/targets.md) */
	float c_puct;        /* PUCT exploration constant (AlphaZero: ~1.25-2.5); default 1.5 */
	float vloss;         /* virtual loss per in-flight visit, in value units; default 1 */
	float fpu;           /* with fpu_absolute: Q of unvisited children (parent's side); default 0 */
	int fpu_absolute;    /* 1: unvisited children get Q = fpu; 0 (default): Q = parent's mean
	                      * value - fpu_reduction * sqrt(prior mass of visited children) (lc0) */
	float fpu_reduction; /* default 0.25 (lc0 uses 0.33 below the root, KataGo 0.2) */
	int solver;          /* MCTS-Solver: terminal children flagged when created, proven wins
	                      * and losses propagated and used by pick and visit policy; default 1 */
	float dir_alpha;     /* Dirichlet alpha (AlphaZero: 0.3 chess, 0.03 Go); default game-specific */
	float dir_eps;       /* noise weight at the root (AlphaZero: 0.25); 0 disables */
	float forced_k;      /* KataGo's forced playouts while root noise is on: a root child c
	                      * with N(c) < sqrt(forced_k * P(c) * sum N) is selected first, and
	                      * the policy target is pruned (az_tree_visit_policy); 0 (default)
	                      * off; KataGo uses 2 */
	uint64_t seed;       /* RNG seed for noise and temperature sampling */
	float draw_value;    /* contempt: what a proven or terminal draw is worth to the side to
	                      * move at the root, in (-1, 1), and its negation to the other side
	                      * (turns alternate: every game here); backed-up values and PUCT's Q
	                      * of proven draws use it, proofs stay exact. A win/draw/loss value
	                      * head's p_draw is valued the same way (az_tree_expand_wdl): a leaf
	                      * backs up W - L + draw_value * D for the root's side. 0 (default) in
	                      * self-play and arena; below 0 makes an agent avoid draws against a
	                      * weaker opponent (lc0's contempt) */
};

/* Defaults above, with dir_alpha chosen as 10 / A (the usual scaling with branching factor). */
void az_mcts_params_default(struct az_mcts_params *p, const struct az_game *g);

/* "puct" or "gumbel" into *kind. Returns 0, or -EINVAL for any other text. */
int az_search_parse(const char *text, int *kind);

/* The name az_search_parse() reads for kind ("puct" for an unknown value). */
const char *az_search_name(int kind);

struct az_tree;
struct az_rng; /* base/rng.h */

/* A leaf handed out by az_tree_select(). */
struct az_leaf {
	uint32_t node;                         /* pass back to az_tree_expand() */
	uint32_t n_legal;                      /* AZ_SELECT_EVAL: legal moves at the leaf */
	const uint8_t *legal;                  /* AZ_SELECT_EVAL: the leaf's legal mask[A] (1 =
	                                        * legal), as game->legal() wrote it when the leaf's
	                                        * children were created; owned by the tree, valid
	                                        * until its next az_tree_select() or
	                                        * az_tree_advance() */
	uint8_t state[AZ_GAME_STATE_MAX];      /* position to evaluate (game->state_bytes used) */
};

enum az_select_result {
	AZ_SELECT_EVAL = 0,     /* *leaf needs a network evaluation, then az_tree_expand() */
	AZ_SELECT_TERMINAL = 1, /* reached a terminal position; the exact value was backed up */
	AZ_SELECT_BUSY = 2,     /* reached a leaf already in flight; virtual loss undone, nothing to do */
};

/* Create a tree rooted at `root` (copied). Returns 0, -ENOMEM or -EINVAL. */
int az_tree_create(const struct az_game *g, const struct az_mcts_params *p, const void *root,
		   struct az_tree **out);
void az_tree_destroy(struct az_tree *t);

/* Drop the whole tree and start again from `root` (keeps the allocation). */
void az_tree_reset(struct az_tree *t, const void *root);

/* Give back arena memory beyond target_nodes nodes (at least the nodes in use and 1024): the node
 * arena is cut down to that size and the spare arena az_tree_advance() copies into is freed when
 * larger (both grow again on demand). Call it between games, after az_tree_reset(), so that one
 * long game does not keep its largest tree's memory for the rest of the run. No allocation can
 * fail the call: when the smaller block cannot be had, the larger one is kept. */
void az_tree_shrink(struct az_tree *t, uint32_t target_nodes);

/* Turn root Dirichlet noise on or off. When on, noise (dir_alpha, dir_eps) is mixed into the
 * priors of every node at the moment it is the root and has priors: when the root is expanded,
 * or at once by az_tree_advance() to an expanded child. The clean priors are kept, so noise
 * never accumulates. Gumbel search: no Dirichlet noise; "on" draws Gumbel noise for the root's
 * actions at the start of each move's search (off: the noise is 0, a deterministic search). */
void az_tree_set_noise(struct az_tree *t, int on);

/* The root visit count at which the coming search of this root stops (az_tree_sims_target()'s
 * result). Gumbel lays its sequential-halving schedule over the simulations from the root's
 * visits now (and in flight) up to target; PUCT ignores it. az_mcts_search() sets it itself.
 * Not set (0): the schedule gives each phase one round. */
void az_tree_set_target(struct az_tree *t, uint32_t target);


/* Called by az_tree_select() with a new leaf's position (game->state_bytes) as soon as the
 * descent has reached it and found it not terminal, before the leaf's children are created: the
 * caller can start work on the position (a cache prefetch) that overlaps the children's creation.
 * It comes for every AZ_SELECT_EVAL leaf, with the leaf->state that select then returns, and for
 * leaves the solver proves from their children (AZ_SELECT_TERMINAL). It must not call into the
 * tree; `state` is valid during the call only. */
typedef void (*az_leaf_fn)(void *ctx, const void *state);

/* Install fn(ctx, state) as the tree's leaf hook (NULL: none, the default). The hook does not
 * change the search. */
void az_tree_set_leaf_hook(struct az_tree *t, az_leaf_fn fn, void *ctx);
/* Descend from the root by PUCT, adding virtual loss along the path (AZ_SELECT_EVAL). */
int az_tree_select(struct az_tree *t, struct az_leaf *leaf);

/* Expand leaf `node` with the network's policy[A] (probabilities; entries of illegal moves are
 * ignored and the legal ones renormalised) and value (for the side to move at the leaf), remove
 * the virtual loss of its path and back the value up. */
void az_tree_expand(struct az_tree *t, uint32_t node, const float *policy, float value);

/* az_tree_expand() for a policy that is already a distribution over the leaf's legal moves: the
 * masked softmax the inference server writes into a ring slot (az_masked_softmax() on the CPU,
 * the scatter kernel's az_row_masked_softmax() on CUDA), which is the one place self-play
 * normalises. Its legal entries become the priors as they are, not renormalised (entries that
 * are not finite or negative count as 0; uniform when none is left). */
void az_tree_expand_normalised(struct az_tree *t, uint32_t node, const float *policy,
			       float value);

/* az_tree_expand() (normalised 0) or az_tree_expand_normalised() (1) for a win/draw/loss value
 * head: value = p_win - p_loss for the side to move at the leaf and draw = p_draw. With
 * params.draw_value != 0 the leaf backs up value + draw_value * draw when its side to move is
 * the root's, value - draw_value * draw otherwise (what exact draws are worth there too); with
 * draw_value 0, or draw 0 (a tanh head), exactly az_tree_expand[_normalised](). */
void az_tree_expand_wdl(struct az_tree *t, uint32_t node, const float *policy, float value,
			float draw, int normalised);

/* Completed simulations through the root since it became the root (incl. reused visits). */
uint32_t az_tree_root_visits(const struct az_tree *t);

/* The root visit count at which a move's search of `sims` simulations is complete. fresh == 0:
 * sims itself, so visits reused from the previous move's search count (AlphaZero's budget);
 * fresh != 0: the root's visits when it became the root (az_tree_reset, az_tree_advance) plus
 * sims, so every move runs sims new simulations. Saturates at UINT32_MAX. */
uint32_t az_tree_sims_target(const struct az_tree *t, uint32_t sims, int fresh);

/* Leaves handed out and not yet expanded. */
uint32_t az_tree_inflight(const struct az_tree *t);

/* Mean value of the root for its side to move (0 when unvisited; the exact value when proven). */
float az_tree_root_value(const struct az_tree *t);

/* 1 when the root's game-theoretic value is known (terminal, or proven by the solver), with
 * *value (may be NULL) set to it for the side to move: -1, 0 or +1; 0 otherwise. A proven root
 * needs no more simulations. */
int az_tree_root_proven(const struct az_tree *t, int *value);

/* The root's policy target over all A actions into pi[A]: visit counts, normalised (all 0 when
 * nothing was visited). With the solver: a proven win puts all the mass on the winning moves
 * (the wins in one when there are any); proven losing moves get 0 while some move does not
 * lose; uniform over the remaining moves when none of them was visited. With forced playouts
 * (forced_k > 0, noise on) the counts are pruned first (az_mcts_prune_visits in mcts_impl.h,
 * KataGo's policy-target pruning), so the forced visits do not reach the target. */
void az_tree_visit_policy(const struct az_tree *t, float *pi);

/* The root's policy target into pi[A]: az_tree_visit_policy() under PUCT; under Gumbel the
 * improved policy softmax(logits + sigma(completed Q)) over the root's legal moves (illegal
 * entries 0), with the solver's restrictions of az_tree_visit_policy() (a proven win: uniform
 * over the winning moves; proven losses 0 while some move does not lose). All 0 while the root
 * is not expanded. */
void az_tree_policy_target(const struct az_tree *t, float *pi);

/* Choose a root action: temperature 0 picks the most visited (ties by prior; moves equal in
 * both, as under a network with uniform priors, drawn uniformly from `ties`, the caller's seeded
 * stream, which is drawn from only then; the first in the game's action order when ties is
 * NULL), otherwise samples from visits^(1/T) (the pruned visits with forced playouts, as
 * az_tree_visit_policy). With the solver the choice is restricted as in az_tree_visit_policy(),
 * and a proven win is always played (a win in one first) at any temperature; when no allowed
 * move was visited, the one with the highest prior. Returns the action, or -EINVAL when the
 * root is neither expanded nor proven (nothing searched yet) or has no children.
 * Gumbel: a proven win as above; otherwise the sequential-halving winner (the considered action
 * with the most visits of this move's search, ties by Gumbel + logit + sigma(completed Q)), at
 * any temperature while Gumbel noise is on (the noise is the sample); with the noise off and
 * temperature > 0 (arena openings), a sample from the improved policy^(1/T). */
int az_tree_pick(struct az_tree *t, float temperature, struct az_rng *ties);

/* Move the root to the child reached by `action`, keeping its subtree (tree reuse); unknown
 * children start a fresh tree. Must be called with nothing in flight. Returns 0 or -EINVAL. */
int az_tree_advance(struct az_tree *t, int action);

/* The root position. */
const void *az_tree_root_state(const struct az_tree *t);

/* Synchronous evaluator for direct (non-ring) use: fill policy[A] and *value for `state`, and
 * *draw with p_draw when it has a win/draw/loss value head (*draw is 0 on entry: an evaluator
 * without one leaves it). Returns 0 or a negative errno which aborts the search. */
typedef int (*az_eval_fn)(void *ctx, const void *state, float *policy, float *value,
			  float *draw);

/* Run simulations one leaf at a time until the root has `sims` visits (az_tree_set_target(t,
 * sims) first). Returns 0 or the evaluator's error. */
int az_mcts_search(struct az_tree *t, uint32_t sims, az_eval_fn eval, void *ctx);

#endif
