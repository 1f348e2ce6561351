/* SPDX-License-Identifier: MIT */
/* An exact Connect Four solver (7 x 6), for evaluation only: scores, outcomes and the outcome
 * of every move of a position. Training never uses it. */
#ifndef AZ_GAMES_CONNECT4_SOLVER_H
#define AZ_GAMES_CONNECT4_SOLVER_H

#include <stdint.h>

/* Scores follow Pascal Pons' convention (blog.gamesolver.org, "Solving Connect Four"), which
 * the benchmark files in shared/data/connect4 use: 0 a draw; positive: the side to move wins,
 * 22 minus the number of its own stones when it does; negative: the opponent wins (minus the
 * opponent's score). */
#define AZ_C4_SCORE_MAX 21

struct az_c4_solver;

/* A solver with a transposition table of 2^log2_entries 8-byte entries (10 <= log2_entries
 * <= 28; 22 = 32 MiB is plenty for the benchmark sets). The table persists across calls, so
 * solving related positions in a row is faster. Returns 0, -EINVAL or -ENOMEM. */
int az_c4_solver_create(unsigned log2_entries, struct az_c4_solver **out);
void az_c4_solver_destroy(struct az_c4_solver *s);

/* Exact score of a Connect Four state (az_game_connect4's state bytes) for the side to move.
 * Returns the score in [-AZ_C4_SCORE_MAX, AZ_C4_SCORE_MAX] into *score and 0, or -EINVAL when
 * the game is over (no score). */
int az_c4_solver_score(struct az_c4_solver *s, const void *state, int *score);

/* The game-theoretic outcome only (-1 loss, 0 draw, +1 win for the side to move): one search
 * with the window (-1, 1), much cheaper than the exact score. Returns it, or -EINVAL (-2 is
 * not a valid outcome; the error is -EINVAL) when the game is over. */
int az_c4_solver_outcome(struct az_c4_solver *s, const void *state, int *outcome);

/* The outcome of each move for the side to move: out[c] for column c (0-6) is -1, 0 or +1
 * (what playing c leads to, for the player who plays it) or -2 when c is full. *outcome gets
 * the position's outcome (the best of them). Returns 0 or -EINVAL (game over). */
int az_c4_solver_move_outcomes(struct az_c4_solver *s, const void *state, int8_t out[7],
			       int *outcome);

/* Whether the score of state is at least `bound` (one null-window search: the cheapest
 * question; bound 1 asks "a win?", bound 0 "at least a draw?"). Returns 0 with *yes set, or
 * -EINVAL (game over). */
int az_c4_solver_at_least(struct az_c4_solver *s, const void *state, int bound, int *yes);

/* Immediate threats: bit c of *mine is set when the side to move wins at once in column c,
 * bit c of *theirs when the opponent would (if it were its turn). Returns 0 or -EINVAL (game
 * over). */
int az_c4_threats(const void *state, unsigned *mine, unsigned *theirs);

/* Positions searched since creation (for speed reports). */
uint64_t az_c4_solver_nodes(const struct az_c4_solver *s);

#endif
