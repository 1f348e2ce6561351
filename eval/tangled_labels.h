/* SPDX-License-Identifier: MIT */
/* Tangled positions labelled by the exact solver (games/tangled/tangled_solve.h): AlphaZero.jl's
 * mistake metric on a positions file, with the labels cached as for Connect Four
 * (eval/c4_labels.h), and labelled sets drawn from random or policy-sampled games at a chosen
 * number of uncoloured edges. Everything here works on the configured Tangled game. */
#ifndef AZ_EVAL_TANGLED_LABELS_H
#define AZ_EVAL_TANGLED_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "eval/labels.h"
#include "games/tangled/tangled_solve.h"

/* The labels of one Tangled positions file (eval/labels.h), every one solved (scores and best
 * moves in the file are not trusted). The cache file opens with the line
 * "# tangled-labels 1 KEY" (KEY names the game's configuration: labels of another graph,
 * variant or adjudicator are ignored).
 *
 * Read the first `limit` positions (0: all) of positions file src and what cache (may not
 * exist) knows about them. The solver s (borrowed, used by later calls until az_labels_close)
 * sets the budget of each solve: positions it cannot solve get -ETIMEDOUT from
 * az_labels_outcome and az_labels_keeps. Returns 0 with *out, -EINVAL (Tangled not configured;
 * bad line: message in err with file and line), -ENOENT, -EIO or -ENOMEM. */
int az_tangled_labels_open(const char *src, const char *cache, const char *key, long limit,
			   struct az_tangled_solver *s, struct az_labels **out, char *err,
			   size_t errlen);

/* A move chooser for az_tangled_labelled_write: policy[A] (any non-negative weights over the
 * legal moves) for state. Returns 0 or a negative errno. */
typedef int (*az_tangled_policy_fn)(void *ctx, const void *state, float *policy);

struct az_tangled_sample {
	int uncoloured;           /* the positions taken have exactly this many uncoloured edges */
	long count;               /* distinct positions wanted */
	long max_games;           /* games tried at most (0: 100 x count) */
	uint64_t seed;
	az_tangled_policy_fn policy; /* NULL: uniformly random moves */
	void *ctx;
	float temperature;        /* with a policy: weights raised to 1 / temperature (> 0) */
	/* Optional (NULL): called before every game with the positions written so far and count,
	 * for a progress display; a non-zero return stops the sampling (an interrupt). */
	int (*tick)(void *arg, long written, long count);
	void *tick_arg;
	/* Optional (NULL): the board the file's first line names (eval/positions.h,
	 * AZ_POSITIONS_BOARD), so that a reader evaluating another board refuses the file. */
	const char *board;
};

struct az_tangled_sample_result {
	long written, unsolved, games;
	double seconds;           /* spent solving */
};

/* Play games from the start (seeded), take each game's first non-terminal position with
 * p->uncoloured uncoloured edges unless it was taken before, label it with solver s and write
 * "<moves> <value> <optimal moves>" lines to path (temporary name, then rename), until count
 * positions are written or max_games games were played. Positions the solver's budget cannot
 * solve are counted in r->unsolved and left out. Returns 0, or -EIO / -ENOMEM / the policy's
 * error with a message in err, or -EINTR when p->tick stopped it; on any error the temporary
 * file is removed and path is left as it was. */
int az_tangled_labelled_write(const char *path, const struct az_tangled_sample *p,
			      struct az_tangled_solver *s, struct az_tangled_sample_result *r,
			      char *err, size_t errlen);

#endif
