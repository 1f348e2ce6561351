/* SPDX-License-Identifier: MIT */
/* Test helpers shared by the games' tests: perft, the number of move sequences of a given length
 * from a position (a finished game is not extended), and a move-string player that fails the test
 * on a bad string. Include after <cmocka.h>. */
#ifndef AZ_TESTS_GAMES_PERFT_H
#define AZ_TESTS_GAMES_PERFT_H

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
		memcpy(child, state, g->state_bytes);
		g->apply(child, (int)a);
		n += perft(g, child, depth - 1);
	}
	return n;
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

#endif
