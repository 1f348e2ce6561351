/* SPDX-License-Identifier: MIT */
/* Connect Four positions labelled by the exact solver (games/connect4_solver.h), for
 * AlphaZero.jl's mistake metric: a move is a mistake when it changes the game-theoretic outcome
 * (win -> draw or loss, draw -> loss). Also tactical test sets (wins in one, forced blocks). */
#ifndef AZ_EVAL_C4_LABELS_H
#define AZ_EVAL_C4_LABELS_H

#include <stddef.h>

#include "eval/labels.h"

/* Where the labels of positions file `src` are cached: "<src>.labels" when src's folder is
 * writable (and has a write bit: root ignores read-only modes), otherwise in the machine's cache
 * folder (az_cache_dir(): $RINGZERO_CACHE_DIR, $XDG_CACHE_HOME/ringzero or ~/.cache/ringzero),
 * named after src's absolute path with '/' written as '%' (a long path: its last 150 bytes and a
 * hash of the whole, so that the name stays under 255 bytes). Returns 0, -ENOENT (src cannot be
 * resolved), -ENOTDIR (no cache folder: none of those variables is set, or RINGZERO_CACHE_DIR is
 * "none") or -ENAMETOOLONG. */
int az_c4_labels_path(const char *src, char *out, size_t n);

/* The labels of one Connect Four positions file (eval/labels.h): each position's outcome comes
 * from the file's score when it has one, else it is solved; each column's, by one null-window
 * search of the position after the move. The cache file has no header line; its lines beyond
 * the positions read (a smaller limit) are kept as they are.
 *
 * Read the first `limit` positions (0: all) of positions file src (moves and optional score;
 * the game connect4) and what cache (may not exist) knows about them. Returns 0 with *out
 * (az_labels_close() it), -EINVAL (bad line: message in err with file and line), -ENOENT,
 * -EIO or -ENOMEM. */
int az_c4_labels_open(const char *src, const char *cache, long limit, struct az_labels **out,
		      char *err, size_t errlen);

enum az_c4_tactic {
	AZ_C4_TACTIC_WIN,   /* the side to move wins at once while the opponent threatens too */
	AZ_C4_TACTIC_BLOCK, /* no win at once; the opponent threatens exactly one cell */
};

/* Write `count` positions of one tactic, taken from uniformly random games (seeded; at most one
 * per game, the first one met), to `path` in positions format: "<moves> <score> <moves>",
 * the moves being the winning columns or the block; the score is 1 for a win in one and "?"
 * (unknown) for a block. Returns count, or -EIO / -ENOMEM with a message in err. */
long az_c4_tactics_write(const char *path, enum az_c4_tactic kind, long count,
			 unsigned long long seed, char *err, size_t errlen);

#endif
