/* SPDX-License-Identifier: MIT */
/* Test helper shared by the games' tests: perft, the number of move sequences of a given length
 * from a position (a finished game is not extended). */
#ifndef AZ_TESTS_GAMES_PERFT_H
#define AZ_TESTS_GAMES_PERFT_H

#include <stdint.h>
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

#endif
