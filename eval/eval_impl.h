/* SPDX-License-Identifier: MIT */
/* What the benchmarks of eval/ share (c4_bench.c, tangled_bench.c; implemented in
 * bench_util.c): reading a set of labelled positions, counting an agent's best moves on it,
 * and measuring a checkpoint on the CPU. Private to az_eval. */
#ifndef AZ_EVAL_EVAL_IMPL_H
#define AZ_EVAL_EVAL_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "eval/positions.h"
#include "games/game.h"
#include "mcts/mcts.h"

struct az_tree;

/* Read positions of game g from f (opened by the caller, who closes it; path names it in
 * messages) until its end or `limit` positions (0: no limit); every position needs its best
 * moves. Returns 0 with *out (malloc'd, caller frees; NULL when *n is 0) and *n, or -EINVAL
 * ("<path>:<line>: ...") / -ENOMEM with a message in err and *out NULL, *n 0. */
int az_eval_read_best(const struct az_game *g, FILE *f, const char *path, long limit,
		      struct az_position **out, long *n, char *err, size_t errlen);

/* How many of the n positions the agent on fn(ctx) answers with one of their best moves (its
 * move by az_eval_move: the raw policy when sims is 0 or t NULL). Returns the count or fn's /
 * the search's negative errno. */
long az_eval_count_best(const struct az_game *g, const struct az_position *pos, long n,
			az_eval_fn fn, void *ctx, struct az_tree *t, uint32_t sims);

/* Measure checkpoint ckpt: load it, check that it is a network of game g (else -EINVAL and
 * "<ckpt> is not <what> (<game>, <inputs> inputs)"), put it on a batch-1 CPU backend and call
 * measure(arg, az_net_eval, net, err, errlen) with it; everything is freed before returning.
 * Returns measure's result, or the loader's negative errno (its message in err) or the
 * backend's (-ENOMEM included; "benchmark backend: ..." in err). */
int az_eval_checkpoint_measure(const struct az_game *g, const char *what, const char *ckpt,
			       int (*measure)(void *arg, az_eval_fn fn, void *ctx, char *err,
					      size_t errlen),
			       void *arg, char *err, size_t errlen);

#endif
