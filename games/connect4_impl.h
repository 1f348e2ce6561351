/* SPDX-License-Identifier: MIT */
/* The Connect Four state layout, shared by the game (connect4.c) and the exact solver
 * (connect4_solver.c). Private to games/. */
#ifndef AZ_GAMES_CONNECT4_IMPL_H
#define AZ_GAMES_CONNECT4_IMPL_H

#include <stdint.h>

/* Canonical bytes: the padding is explicit and always zero, so memcmp == same position. The
 * callers' state buffers are plain bytes with no alignment promise, so every function copies
 * the state into (and out of) a local struct with memcpy rather than casting the pointer.
 * Bit 7 * col + row of a bitboard is the cell (col, row), row 0 at the bottom; row 6 stays
 * empty. */
struct c4_state {
	uint64_t stones[2]; /* by player: [0] first player (X), [1] second (O) */
	uint8_t plies;      /* stones on the board; the side to move is plies & 1 */
	uint8_t result;     /* 0 in progress, 1 X won, 2 O won, 3 draw */
	uint8_t pad[6];
};
_Static_assert(sizeof(struct c4_state) == 24, "Connect Four state layout");

#endif
