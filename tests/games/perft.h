/* SPDX-License-Identifier: MIT */
/* Test helpers shared by the games' tests: perft, the number of move sequences of a given length
 * from a position (a finished game is not extended), a plain negamax (the solvers' reference), a
 * move-string player that fails the test on a bad string, and checks of terminal_after, of a game
 * table's sizes and of the one-digit move notation. Include after <cmocka.h>. */
#ifndef AZ_TESTS_GAMES_PERFT_H
#define AZ_TESTS_GAMES_PERFT_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "games/game.h"

/* Positions at exactly `depth` plies from `state` in game g. Recursion depth = depth. */
static inline uint64_t perft(const struct az_game *g, const uint8_t *state, int depth)
{
	uint8_t child[AZ_GAME_STATE_MAX], mask[AZ_GAME_ACTIONS_MAX];
	uint64_t n = 0;

	if (depth == 0)
		return 1;
	if (!g->legal(state, mask))
		return 0;
	for (uint32_t a = 0; a < g->actions; a++) {
		if (!mask[a])
			continue;
		az_game_after(g, state, (int)a, child);
		n += perft(g, child, depth - 1);
	}
	return n;
}

/* The exact value of `state` for the side to move (-1, 0, +1) by plain negamax over the whole
 * subtree, with no memo, no cut-off and the game's own terminal(): the reference the solvers are
 * checked against. Fails the test at a position that is not over and has no legal move. */
static inline int negamax(const struct az_game *g, const uint8_t *state)
{
	uint8_t child[AZ_GAME_STATE_MAX], mask[AZ_GAME_ACTIONS_MAX];
	int best = -2;
	float v;

	if (g->terminal(state, &v))
		return v > 0.5f ? 1 : v < -0.5f ? -1 : 0;
	g->legal(state, mask);
	for (uint32_t a = 0; a < g->actions; a++) {
		int r;

		if (!mask[a])
			continue;
		az_game_after(g, state, (int)a, child);
		r = -negamax(g, child);
		if (r > best)
			best = r;
	}
	assert_true(best >= -1); /* no dead ends */
	return best;
}

/* What check_terminal_after saw: the legal moves it checked, and those that end the game. */
struct after_counts {
	long moves, decisive, draws;
};

/* terminal_after (MCTS-Solver's check at each expansion) at `state`, where the game goes on,
 * against playing each legal move and asking terminal(): it flags exactly the moves that end the
 * game, no illegal one and no bit past g->actions, with the result after each, and leaves the
 * other entries untouched. Adds to *c; returns the flags. */
static inline uint64_t check_terminal_after(const struct az_game *g, const uint8_t *state,
					    struct after_counts *c)
{
	uint8_t mask[AZ_GAME_ACTIONS_MAX], next[AZ_GAME_STATE_MAX];
	int8_t tv[64];
	uint64_t term;

	memset(tv, 99, sizeof(tv));
	g->legal(state, mask);
	term = g->terminal_after(state, tv);
	assert_true(g->actions <= 64);
	assert_true(g->actions == 64 || term >> g->actions == 0);
	for (uint32_t a = 0; a < g->actions; a++) {
		float v;
		int over;

		if (!mask[a]) {
			assert_false(term >> a & 1);
			continue;
		}
		az_game_after(g, state, (int)a, next);
		over = g->terminal(next, &v);
		assert_int_equal((int)(term >> a & 1), over);
		c->moves++;
		if (!over) {
			assert_int_equal(tv[a], 99); /* untouched */
			continue;
		}
		assert_int_equal(tv[a], (int)v);
		if (v == 0.0f)
			c->draws++;
		else
			c->decisive++;
	}
	return term;
}

/* Play the move string `moves` from the start into state (az_game_play_moves); fails the test on
 * an error, or when the count of moves played is not the string's length ("-" is none). */
static inline void play(const struct az_game *g, uint8_t *state, const char *moves)
{
	char err[128] = "";
	int n = az_game_play_moves(g, state, moves, err, sizeof(err));

	if (n < 0)
		fail_msg("play_moves(%s): %s", moves, err);
	assert_int_equal(n, strcmp(moves, "-") ? (int)strlen(moves) : 0);
}

/* A game table's sizes: name, actions, features, symmetries and max_plies as given, and a state
 * that fits AZ_GAME_STATE_MAX. */
static inline void check_sizes(const struct az_game *g, const char *name, uint32_t actions,
			       uint32_t features, uint32_t symmetries, uint32_t max_plies)
{
	assert_string_equal(g->name, name);
	assert_int_equal(g->actions, actions);
	assert_int_equal(g->features, features);
	assert_int_equal(g->symmetries, symmetries);
	assert_int_equal(g->max_plies, max_plies);
	assert_true(g->state_bytes > 0 && g->state_bytes <= AZ_GAME_STATE_MAX);
}

/* The one-digit notation (az_game_parse_digit) of a game with n actions: from the start every
 * action a formats as the digit '1' + a and parses back, with the start position and without a
 * state; "0", the digit past n, two digits, a letter and "" are not moves, and action n does not
 * format. Leaves the start position in state[AZ_GAME_STATE_MAX]. */
static inline void check_digit_notation(const struct az_game *g, int n, uint8_t *state)
{
	char buf[8], past[2] = { (char)('1' + n), 0 };

	g->init(state);
	for (int a = 0; a < n; a++) {
		assert_int_equal(g->format_action(a, buf, sizeof(buf)), 1);
		assert_int_equal(buf[0], '1' + a);
		assert_int_equal(g->parse_action(state, buf), a);
		assert_int_equal(g->parse_action(NULL, buf), a);
	}
	assert_int_equal(g->parse_action(state, "0"), -EINVAL);
	assert_int_equal(g->parse_action(state, past), -EINVAL);
	assert_int_equal(g->parse_action(state, "11"), -EINVAL);
	assert_int_equal(g->parse_action(state, "x"), -EINVAL);
	assert_int_equal(g->parse_action(state, ""), -EINVAL);
	assert_int_equal(g->format_action(n, buf, sizeof(buf)), -EINVAL);
}

#endif
