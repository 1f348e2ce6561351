/* SPDX-License-Identifier: MIT */
/* The game interface (a vtable): every game the search, the trainer and the tools know is one
 * `struct az_game`. States are plain bytes (state_bytes <= AZ_GAME_STATE_MAX), copied freely. */
#ifndef AZ_GAME_H
#define AZ_GAME_H

#include <stddef.h>
#include <stdint.h>

#define AZ_GAME_STATE_MAX 1024
#define AZ_GAME_ACTIONS_MAX 512

struct az_game {
	const char *name;      /* "tictactoe", "connect4" */
	uint32_t state_bytes;  /* size of a state */
	uint32_t actions;      /* A: size of the policy vector */
	uint32_t features;     /* D: size of the encoded input */
	uint32_t symmetries;   /* S >= 1; symmetry 0 is the identity */
	uint32_t max_plies;    /* upper bound on the length of a game */

	/* Start position into state. */
	void (*init)(void *state);
	/* Player to move: 0 = first player, 1 = second. */
	int (*to_move)(const void *state);
	/* Legal moves into mask[A] (1 legal, 0 not); returns their count (0 when terminal). */
	int (*legal)(const void *state, uint8_t *mask);
	/* Play a legal action (caller guarantees legality). */
	void (*apply)(void *state, int action);
	/* 1 when the game is over, with *value the result for the side to move at `state`
	 * (-1 loss, 0 draw, +1 win); 0 otherwise. */
	int (*terminal)(const void *state, float *value);
	/* Encode for the network, from the point of view of the side to move: features[D]. */
	void (*encode)(const void *state, float *features);
	/* Apply symmetry k (0 <= k < S) to an encoded position and/or a policy vector; either pair
	 * may be NULL. In and out must not alias. */
	void (*symmetry)(int k, const float *feat_in, float *feat_out, const float *pol_in,
			 float *pol_out);
	/* Board as text (several lines, ends with '\n'); returns length written (snprintf rules). */
	int (*format)(const void *state, char *buf, size_t len);
	/* Action in the game's notation (tic-tac-toe cells 1-9, Connect Four columns 1-7). */
	int (*format_action)(int action, char *buf, size_t len);
	/* Parse one action in that notation; returns the action or -EINVAL (unknown or illegal). */
	int (*parse_action)(const void *state, const char *text);
};

extern const struct az_game az_game_tictactoe;
extern const struct az_game az_game_connect4;

/* Game by name, or NULL. */
const struct az_game *az_game_find(const char *name);

/* Comma-separated list of the known game names (static string). */
const char *az_game_names(void);

/* 1 when some move of g takes more than one character in its notation (Tangled: "v2", "0-1g"):
 * move strings of such games separate moves with '.'. */
int az_game_move_separator(const struct az_game *g);

/* Play a move string of the positions-file format from the start position: one character per
 * move in the game's notation ('1'..'9' tic-tac-toe, '1'..'7' Connect Four), or, for games
 * whose moves take several characters (az_game_move_separator), moves separated by dots
 * ("v2.0-1g.v3"); "-" is the empty sequence. Returns the number of moves played, or -EINVAL
 * with a message in err (which move, why) when a move is malformed, illegal or comes after the
 * end of the game. */
int az_game_play_moves(const struct az_game *g, void *state, const char *moves, char *err,
		       size_t errlen);

/* ---- exact solver (games/solve.c) for small games such as tic-tac-toe ---- */

/* Exact minimax value for the side to move (-1, 0, +1) with memoisation; fills optimal[A]
 * (may be NULL) with 1 for every legal move that achieves that value. Returns the value, or
 * -ENOMEM. Intended for games whose state space fits in memory (tic-tac-toe: 5,478 states). */
int az_solve(const struct az_game *g, const void *state, uint8_t *optimal);

/* Visit every distinct state reachable from the start (non-terminal ones only when
 * nonterminal_only) in a deterministic order, calling fn(ctx, state, moves) where `moves` is the
 * move string (positions format) of one path reaching it. Returns the count, or -ENOMEM. */
int az_game_enumerate(const struct az_game *g, int nonterminal_only,
		      void (*fn)(void *ctx, const void *state, const char *moves), void *ctx);

#endif
