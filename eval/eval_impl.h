/* SPDX-License-Identifier: MIT */
/* What eval/'s files share: the benchmarks (c4_bench.c, tangled_bench.c) reading a set of
 * labelled positions, counting an agent's best moves on it and measuring a checkpoint on the
 * CPU (bench_util.c); the labels caches (c4_labels.c, tangled_labels.c) reading a source and
 * writing cache lines (labels_util.c). Private to az_eval. */
#ifndef AZ_EVAL_EVAL_IMPL_H
#define AZ_EVAL_EVAL_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "eval/net_open.h"
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

/* Open checkpoint ckpt as a network of game g for the benchmarks: the CPU backend, batch 1
 * (az_net_open()); the caller az_net_close()s *net. Returns 0, or az_net_open's negative errno
 * with its message in err (-EPROTO: "<ckpt> is a <game> network, not <g>", or of another
 * shape). */
int az_eval_open_cpu(const struct az_game *g, const char *ckpt, struct az_opened_net *net,
		     char *err, size_t errlen);

/* ---- labels_util.c ---- */

/* A cache entry's outcome before it is known (outcomes are -1, 0, +1). */
#define AZ_EVAL_LABEL_UNKNOWN 2

/* The first blank-separated field of a positions-file line (its moves) into out, cut to n - 1
 * bytes ("" for a blank line). */
void az_eval_first_field(const char *line, char *out, size_t n);

/* Read positions file src of game g, calling add(arg, moves, pos, line) for each position
 * (moves: its line's first field, line: its number in src from 1), until the end of the file,
 * `limit` positions (0: no limit) or add's failure. Returns 0; -ENOENT (no src) or -EIO (cannot open it) and -EINVAL ("<src>:<line>:
 * ...") with a message in err; or add's negative errno. */
int az_eval_read_source(const struct az_game *g, const char *src, long limit,
			int (*add)(void *arg, const char *moves, const struct az_position *pos,
				   long line),
			void *arg, char *err, size_t errlen);

/* Write one cache line, "<moves> <outcome> <keeps>", to f; an outcome of
 * AZ_EVAL_LABEL_UNKNOWN is written "?" (a line the readers skip). Returns 0, or -EIO when
 * fprintf failed. */
int az_eval_write_label(FILE *f, const char *moves, int outcome, const char *keeps);

/* ---- labels.c: the labels caches' core (eval/labels.h), for their openers c4_labels.c and
 * tangled_labels.c ---- */

struct az_labels;

/* What a labels cache asks of its game's exact solver. create (NULL: the solver is the
 * opener's, borrowed) makes it on the first question the cache cannot answer; destroy frees
 * what create made, at az_labels_close. outcome: *v, state's outcome for the side to move (-1,
 * 0, +1). worse: *worse, whether the move to child changes its parent's outcome o (whether the
 * opponent at child gets at least 1 - o). Each returns 0 or a negative errno. */
struct az_labels_solver {
	int (*create)(void **ctx);
	int (*outcome)(void *ctx, const void *state, int *v);
	int (*worse)(void *ctx, const void *child, int o, int *worse);
	void (*destroy)(void *ctx);
};

/* What sets one game's labels cache apart. */
struct az_labels_spec {
	const struct az_game *g;
	const struct az_labels_solver *solver;
	void *ctx;          /* the solver when solver->create is NULL (borrowed), else NULL */
	const char *header; /* the cache file's first line, without its newline (NULL: none) */
	int keep_tail;      /* a save keeps the lines of the old file beyond the positions read */
	int scores;         /* a position's score in src gives its outcome (else it is solved) */
};

/* Read the first `limit` positions (0: all) of positions file src of game p->g and what the
 * cache file `cache` (may not exist; with p->header, only when its first line is that) knows
 * about them. Returns 0 with *out (az_labels_close() it), -EINVAL (bad line: message in err
 * with file and line; or cache exists and is not a labels cache, which a save would replace),
 * -ENOENT, -EIO or -ENOMEM. */
int az_labels_open(const struct az_labels_spec *p, const char *src, const char *cache, long limit,
		   struct az_labels **out, char *err, size_t errlen);

#endif
