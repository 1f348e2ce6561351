/* SPDX-License-Identifier: MIT */
/* The labels of one positions file for AlphaZero.jl's mistake metric, solved on demand by a
 * game's exact solver and cached in a text file: opened by az_c4_labels_open (eval/c4_labels.h)
 * or az_tangled_labels_open (eval/tangled_labels.h), used and saved through the functions here.
 * A move is a mistake when it changes the position's game-theoretic outcome (win -> draw or
 * loss, draw -> loss); every move keeps a loss. */
#ifndef AZ_EVAL_LABELS_H
#define AZ_EVAL_LABELS_H

#include <stddef.h>

/* Per position of the source, in order: its outcome for the side to move (-1, 0, +1) and, per
 * action, whether playing it keeps that outcome. The cache file (a header line first for some
 * games) has one line per position:
 *   <moves> <outcome or ?> <one character per action: '+' keeps, 'x' changes, '?' not solved,
 *   '-' illegal>
 * Lines whose moves do not match the source's are ignored and rewritten. One thread at a time. */
struct az_labels;

void az_labels_close(struct az_labels *l);

long az_labels_count(const struct az_labels *l);

/* Position i's moves as the source gives them (owned by l), 0 <= i < count. */
const char *az_labels_moves(const struct az_labels *l, long i);

/* Position i's line in the source file, from 1 (comment, blank and board lines count too). */
long az_labels_line(const struct az_labels *l, long i);

/* Position i's state (the game's state bytes, owned by l), 0 <= i < count. */
const void *az_labels_state(const struct az_labels *l, long i);

/* Position i's outcome (-1, 0, +1 for the side to move). Returns 0, -ETIMEDOUT (Tangled: the
 * solver's budget ran out; unsolved) or -ENOMEM. */
int az_labels_outcome(struct az_labels *l, long i, int *outcome);

/* Whether action a keeps position i's outcome (*keeps 0: a mistake). Returns 0, -EINVAL (an
 * illegal action or out of range), -ETIMEDOUT or -ENOMEM. */
int az_labels_keeps(struct az_labels *l, long i, int a, int *keeps);

/* Whether l knows something its cache file does not (az_labels_save would write). */
int az_labels_dirty(const struct az_labels *l);

/* Write the cache when something new was solved (temporary name, then rename). Returns 0 or
 * -EIO with a message in err. */
int az_labels_save(struct az_labels *l, char *err, size_t errlen);

/* Write the labels to path instead of the cache l was opened with (always, dirty or not;
 * temporary name, then rename). Returns 0 or -EIO with a message in err. */
int az_labels_save_as(const struct az_labels *l, const char *path, char *err, size_t errlen);

/* Take what another cache file of the same source knows (lines matched as by open; a missing
 * file adds nothing). Returns the number of positions that learned something. */
int az_labels_merge(struct az_labels *l, const char *cache);

#endif
