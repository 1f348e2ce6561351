/* SPDX-License-Identifier: MIT */
/* Connect Four positions labelled by the exact solver (games/connect4_solver.h), for
 * AlphaZero.jl's mistake metric: a move is a mistake when it changes the game-theoretic outcome
 * (win -> draw or loss, draw -> loss). Also tactical test sets (wins in one, forced blocks). */
#ifndef AZ_EVAL_C4_LABELS_H
#define AZ_EVAL_C4_LABELS_H

#include <stddef.h>

/* Where the labels of positions file `src` are cached: "<src>.labels" when src's folder is
 * writable (and has a write bit: root ignores read-only modes), otherwise under
 * $XDG_CACHE_HOME/ringzero (default ~/.cache/ringzero), named after src's absolute path with
 * '/' written as '%'. Returns 0, or -ENAMETOOLONG / -ENOENT (src
 * cannot be resolved). */
int az_c4_labels_path(const char *src, char *out, size_t n);

/* The labels of one positions file: for each position its outcome for the side to move (from the
 * file's score when it has one, else solved) and, per column, whether playing it keeps that
 * outcome, solved on demand (one null-window search of the position after the move) and
 * cached. The cache file has one line per position of the source, in order:
 *   <moves> <outcome> <seven characters: '+' keeps, 'x' changes, '?' not solved, '-' full>
 * Lines whose moves do not match the source's are ignored and rewritten; lines beyond the
 * positions read (a smaller limit) are kept as they are. */
struct az_c4_labels;

/* Read the first `limit` positions (0: all) of positions file src (moves and optional score;
 * the game connect4) and what cache (may not exist) knows about them. Returns 0, -EINVAL (bad
 * line: message in err with file and line), -ENOENT, -EIO or -ENOMEM. */
int az_c4_labels_open(const char *src, const char *cache, long limit, struct az_c4_labels **out,
		      char *err, size_t errlen);
void az_c4_labels_close(struct az_c4_labels *l);

long az_c4_labels_count(const struct az_c4_labels *l);

/* Position i's state (az_game_connect4's state bytes), 0 <= i < count. */
const void *az_c4_labels_state(const struct az_c4_labels *l, long i);

/* Position i's outcome (-1, 0, +1 for the side to move). Returns 0 or -ENOMEM. */
int az_c4_labels_outcome(struct az_c4_labels *l, long i, int *outcome);

/* Whether column col (0-6) keeps position i's outcome: *keeps 0 means the move is a mistake
 * (win -> draw or loss, draw -> loss; every move keeps a loss). Returns 0, -EINVAL (column full
 * or out of range) or -ENOMEM. */
int az_c4_labels_keeps(struct az_c4_labels *l, long i, int col, int *keeps);

/* Write the cache when something new was solved (temporary name, then rename). Returns 0 or
 * -EIO with a message in err. */
int az_c4_labels_save(struct az_c4_labels *l, char *err, size_t errlen);

/* Whether l knows something its cache file does not (az_c4_labels_save would write). */
int az_c4_labels_dirty(const struct az_c4_labels *l);

/* Take what another cache file of the same source knows (lines matched as by open; a missing
 * file adds nothing). Returns the number of positions that learned something. */
int az_c4_labels_merge(struct az_c4_labels *l, const char *cache);

/* Write the labels to path instead of the cache l was opened with (always, dirty or not;
 * temporary name, then rename). Returns 0 or -EIO with a message in err. */
int az_c4_labels_save_as(const struct az_c4_labels *l, const char *path, char *err,
			 size_t errlen);

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
