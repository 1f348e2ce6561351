/* SPDX-License-Identifier: MIT */
/* mcts/ internals that the module's own tests inspect: root statistics per action and a full
 * invariant check of the node arena. Not part of the public contract; never include it from
 * outside mcts/ and tests/mcts/. */
#ifndef AZ_MCTS_IMPL_H
#define AZ_MCTS_IMPL_H

#include <stdint.h>

#include "mcts/mcts.h"

/* Per-action view of the root's children over all A actions: visits[A] (completed visits),
 * clean[A] (normalised network priors) and used[A] (the priors selection uses: clean mixed with
 * Dirichlet noise while noise is applied to this root). Entries of actions without a child are 0.
 * Any pointer may be NULL. Returns the number of children (0 when the root is not expanded). */
int az_tree_root_children(const struct az_tree *t, uint32_t *visits, float *clean, float *used);

/* Nodes currently allocated in the arena (including the root). */
uint32_t az_tree_node_count(const struct az_tree *t);

/* Nodes the arena and the spare arena have room for (allocated, in use or not). */
uint32_t az_tree_capacity(const struct az_tree *t);

/* Walk the whole arena and check the invariants: parent/child links, N(node) = 1 + sum N(child)
 * for expanded nodes, virtual loss of each node = in-flight leaves below it, root virtual loss =
 * az_tree_inflight(). Returns 0, or -EPROTO with the first broken invariant at *bad_node. */
int az_tree_check(const struct az_tree *t, uint32_t *bad_node);

/* KataGo's policy-target pruning (Wu 2019, section 3.1) of one node's nchild children: visits
 * n[i], mean value q[i] (for the node's side to move, as PUCT reads it), priors p[i] (as
 * selection used them, noise included), the node's N parent_n (PUCT's N(s)), total = sum of the
 * children's visits, c_puct and the forced-playout k. Into out[nchild]: the most visited child
 * c* (ties: higher prior, then lower index) keeps its visits; every other child gives up to
 * floor(sqrt(k p[i] total)) visits while its PUCT value q + c_puct p sqrt(parent_n) / (1 + n)
 * stays below c*'s, and is dropped (0) when 1 or fewer are left. out may not alias n. */
void az_mcts_prune_visits(uint32_t nchild, const uint32_t *n, const float *q, const float *p,
			  uint32_t parent_n, uint64_t total, float c_puct, float k, uint32_t *out);

/* Sequential halving's schedule (mcts/gumbel.c; mctx's sequence of considered visits): the
 * visits, within the move's search, of the action that simulation k (from 0) of a budget of n
 * goes to, with m actions considered. Phases give each of the r actions left max(1, floor(n /
 * (ceil(log2 m) * r))) visits, then r becomes max(2, floor(r / 2)); past n the last phase's
 * pattern goes on. m <= 1: k. */
uint32_t az_gumbel_considered_visit(uint32_t m, uint32_t n, uint32_t k);

/* Gumbel's root state for the current move: considered[A] (1: considered) and noise[A] (the
 * Gumbel draws; 0 with noise off), by action; either may be NULL. Returns the number of
 * considered actions, or -1 when there is none yet (PUCT, or no selection since the move
 * began). */
int az_tree_gumbel_considered(const struct az_tree *t, uint8_t *considered, float *noise);

#endif
