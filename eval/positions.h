/* SPDX-License-Identifier: MIT */
/* One line of a labelled positions file (azeval --positions): `<moves> [<score> [<best>]]`.
 * Split out of azeval so that the parser can be unit-tested and fuzzed on its own. */
#ifndef AZ_TOOLS_POSITIONS_H
#define AZ_TOOLS_POSITIONS_H

#include <stddef.h>
#include <stdint.h>

#include "games/game.h"

/* Longest line the parser accepts, in bytes, not counting the line end. */
#define AZ_POSITIONS_LINE_MAX 1023

struct az_position {
	uint8_t state[AZ_GAME_STATE_MAX]; /* position reached by the moves (game's state bytes) */
	int plies;			   /* moves played from the start */
	int has_score;			   /* a score field was present */
	double score;			   /* exact value for the side to move (finite) */
	int has_best;			   /* a best field was present */
	int n_best;			   /* distinct best moves listed (>= 1 with has_best) */
	uint8_t best[AZ_GAME_ACTIONS_MAX]; /* best[a] = 1 for each listed optimal action a */
};

/* Parse one line (with or without its '\n' / "\r\n"; NUL-terminated) for game g:
 *   moves  the game's move string from the start (az_game_play_moves; "-" for none); the
 *          position must not be terminal;
 *   score  optional; a finite decimal number (its sign: win/draw/loss for the side to move),
 *          or "?" for unknown (has_score stays 0; lets a best field follow);
 *   best   optional, only after a score; comma-separated moves in the game's notation, each
 *          legal in the position.
 * Fields are separated by blanks (spaces, tabs); a line of blanks only is empty, and so is a
 * comment line, whose first non-blank byte is '#' (no move notation starts with it); a line with
 * more than three fields, or longer than AZ_POSITIONS_LINE_MAX, is malformed.
 * Returns 1 with *out filled, 0 for an empty line (*out untouched), or -EINVAL with a one-line
 * message in err naming the field and the problem ("moves: move 3 ('8'): column full",
 * "score 'x1': not a number"); the caller prefixes file and line number. */
int az_positions_parse_line(const struct az_game *g, const char *line, struct az_position *out,
			    char *err, size_t errlen);

/* A comment line that names the board a file's positions belong to, written first by azeval
 * --write-labelled for Tangled: "# board: <game> <options>" ("# board: tangled
 * graph=5;variant=fixed;adjudicator=table:exact"): the game's name, then what its labels depend on. */
#define AZ_POSITIONS_BOARD "# board: "

/* Check the boards a positions file names against the board evaluated (board, as written after
 * AZ_POSITIONS_BOARD): every board line of the file, wherever it is (files joined with cat keep
 * theirs), must name it, blanks at its end aside. A file without a board line (Pascal Pons'
 * sets, files written before it) passes, as does one that is not a regular file or cannot be
 * opened (its reader reports that). Returns 0, or -EINVAL with "PATH:LINE: its positions are of <board>, ..." (or "its
 * board line names no board") in err for the first line that names another board. */
int az_positions_check_board(const char *path, const char *board, char *err, size_t errlen);

/* The board the file's header names (its board line before its first position, within its
 * first 64 lines; blanks at its end removed) into buf: 1, or 0 when it has none there (a board
 * line further down, of a file joined on with cat, names the positions below it only), or is
 * not a regular file that can be opened (a device or FIFO is not read). */
int az_positions_board(const char *path, char *buf, size_t n);

#endif
