/* SPDX-License-Identifier: MIT */
/* The game interface (a vtable): every game the search, the trainer and the tools know is one
 * `struct az_game`. States are plain bytes (state_bytes <= AZ_GAME_STATE_MAX), copied freely. */
#ifndef AZ_GAME_H
#define AZ_GAME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define AZ_GAME_STATE_MAX 1024
#define AZ_GAME_ACTIONS_MAX 512

struct az_game {
	const char *name;      /* "tictactoe", "connect4" */
	uint32_t state_bytes;  /* size of a state */
	uint32_t actions;      /* A: size of the policy vector */
	uint32_t features;     /* D: size of the encoded input */
	uint32_t symmetries;   /* S >= 1; symmetry 0 is the identity */
	uint32_t max_plies;    /* upper bound on the length of a game */
	/* The encoding as a board: encode() writes planes x height x width = features values,
	 * plane-major (features[(c * height + y) * width + x]), what a convolutional net reads;
	 * all 0 for a game without a board shape (Tangled), which only an MLP can learn. */
	uint32_t planes, height, width;

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
	/* Optional (NULL: the search applies each move and asks terminal()), for games of at most
	 * 64 actions: which moves from `state` (not terminal) end the game, as a bit mask over
	 * actions, each with tvalue[a] the result for the side to move after it (-1 loss, 0
	 * draw, +1 win; entries of other actions untouched). MCTS-Solver asks it at every
	 * expansion; a game answers it from its own representation without playing each move. */
	uint64_t (*terminal_after)(const void *state, int8_t *tvalue);
	/* Optional (NULL: unknown), for games without terminal_after: a lower bound on the moves
	 * left before the game can end from `state` (not terminal). MCTS-Solver skips playing
	 * each child move to look for terminal children when it is 2 or more (Tangled: the
	 * uncoloured edges plus the tokens not yet placed). */
	int (*min_moves_left)(const void *state);
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
	/* Words for people (NULL: "first player"/"second player", "not a move", "illegal move"):
	 * the sides as the board shows them ("X", "O"), why a text is not a move at all ("not a
	 * cell (1-9)") and why a well-formed move is refused ("cell occupied"). */
	const char *sides[2];
	const char *not_notation;
	const char *illegal;
	/* Optional (NULL: terminal() is a cheap rule check): wall-clock ns this process has spent
	 * adjudicating terminal states (Tangled's Ising adjudicator: an annealing run or a table
	 * lookup), a running total since the process started. The run reports its share of each
	 * worker's time (metrics.jsonl "adjudication_share", azrun status). */
	uint64_t (*adjudicate_ns)(void);
};

/* Designated initialisers for a game whose functions are named <prefix>_<member>:
 * AZ_GAME_RULES(ttt) sets .init = ttt_init through .terminal = ttt_terminal (what search needs);
 * AZ_GAME_IO(ttt) sets .encode, .symmetry, .format, .format_action and .parse_action. */
#define AZ_GAME_RULES(prefix)                                                                  \
	.init = prefix##_init, .to_move = prefix##_to_move, .legal = prefix##_legal,           \
	.apply = prefix##_apply, .terminal = prefix##_terminal
#define AZ_GAME_IO(prefix)                                                                     \
	.encode = prefix##_encode, .symmetry = prefix##_symmetry, .format = prefix##_format,   \
	.format_action = prefix##_format_action, .parse_action = prefix##_parse_action

/* The one-digit move notation of tic-tac-toe and Connect Four: action a of n (n <= 9) is the
 * digit '1' + a. az_game_format_digit writes it into buf[len] and returns snprintf's count, or
 * -EINVAL for an action outside [0, n). az_game_parse_digit reads one such digit, blanks around
 * it allowed, and returns the action, or -EINVAL for any other text (legality is the game's). */
int az_game_format_digit(int action, int n, char *buf, size_t len);
int az_game_parse_digit(const char *text, int n);

/* Whether text is some action's notation in game g, legal in a given position or not: some
 * action formats (g->format_action) to exactly text. 1 or 0. */
int az_game_in_notation(const struct az_game *g, const char *text);

/* The position after action in state: copies g->state_bytes of state into out (a different
 * buffer) and applies the action there; state is not changed. action must be legal. */
static inline void az_game_after(const struct az_game *g, const void *state, int action,
				 void *out)
{
	memcpy(out, state, g->state_bytes);
	g->apply(out, action);
}

/* Name of side 0 (first player) or 1 as the board shows it. */
const char *az_game_side_name(const struct az_game *g, int side);

/* ---- game descriptors (one per game, in the game's own files; listed in games/registry.c) ---- */

/* azrun's defaults for a game (tools/config.c copies them into its configuration). */
struct az_game_defaults {
	uint32_t iterations, games_per_iter, sims, temp_plies;
	uint32_t arena_games, arena_temp_plies;
	uint32_t hidden, blocks, train_steps_max, window;
	float dir_alpha, train_epochs, lr;
	float explore; /* --explore: self-play's probability of a random move (docs/targets.md) */
	/* --arena-threshold: the candidate's arena score that promotes it (AlphaGo Zero: 0.55).
	 * A drawish game wants 0.5 (promote unless measurably worse): between two good networks
	 * nearly every arena game is a draw, and 0.55 would keep the first network for ever. */
	float arena_threshold;
};

/* A game option (Tangled: --graph, --variant ...), declared by its game. The tools take it as
 * "--NAME ARG"; azrun saves it in run.json under NAME. */
enum az_game_opt_type { AZ_GAME_OPT_U32, AZ_GAME_OPT_F32, AZ_GAME_OPT_STR };

#define AZ_GAME_OPT_LEN 256 /* longest string value + 1 */
#define AZ_GAME_OPTS_MAX 8  /* options of all registered games together */

struct az_game_opt {
	const char *name;           /* "graph" */
	enum az_game_opt_type type;
	uint32_t size;              /* STR: longest value + 1 (<= AZ_GAME_OPT_LEN) */
	const char *arg, *help;     /* "N", "tangled: numbered graph ..." */
	const char *def;            /* default, as text */
	double lo, hi;              /* U32/F32: the range the tools accept (their option
	                             * tables take it from here; configure() checks too) */
	int recorded;               /* part of the configuration a checkpoint records */
};

union az_game_opt_value {
	uint32_t u32;
	float f32;
	char str[AZ_GAME_OPT_LEN];
};

struct az_game_desc {
	const char *name;           /* canonical name, as --game takes it and checkpoints record */
	const char *alias;          /* short name ("ttt") or NULL */
	/* The game object; NULL for a game configured at run time, which sets `configured`. */
	const struct az_game *game;
	const struct az_game *(*configured)(void); /* NULL until configure() succeeded */
	struct az_game_defaults defaults;
	const struct az_game_opt *opts; /* nopts options (NULL, 0: none) */
	uint32_t nopts;
	/* Validate the option values v[nopts] and configure the game (once per process, before
	 * forking). 0, or -EINVAL / -ENOENT / -ENOMEM with a message in err. NULL: nothing to do. */
	int (*configure)(const union az_game_opt_value *v, uint64_t seed, char *err,
			 size_t errlen);
	/* The configuration a checkpoint records ("graph=3;variant=free"); NULL: "". */
	void (*record)(const union az_game_opt_value *v, char *buf, size_t n);
};

/* The descriptor's game object (NULL when configured at run time and not configured yet). */
const struct az_game *az_game_desc_game(const struct az_game_desc *d);

/* Set v to the default of o. */
void az_game_opt_default(const struct az_game_opt *o, union az_game_opt_value *v);

extern const struct az_game_desc az_game_desc_tictactoe;
extern const struct az_game_desc az_game_desc_connect4;

extern const struct az_game az_game_tictactoe;
extern const struct az_game az_game_connect4;

/* ---- the registry (games/registry.c, library az_game_registry: links every game) ---- */

/* The registered descriptors, NULL-terminated, in registration order. */
extern const struct az_game_desc *const az_game_registry[];

/* Descriptor by name or alias, or NULL. */
const struct az_game_desc *az_game_desc_find(const char *name);

/* Game by name or alias, or NULL (also NULL for a game configured at run time and not yet
 * configured: Tangled before az_tangled_setup()). */
const struct az_game *az_game_find(const char *name);

/* Progress of long one-time work a game does in configure() (Tangled builds a missing outcome
 * table, seconds to minutes): a tool installs fn before configuring and NULL after; the game
 * calls az_game_progress() with what it does ("outcome table"), done of total. Process-wide,
 * one thread; libraries never print, the tool draws. */
void az_game_set_progress(void (*fn)(void *ctx, const char *what, uint64_t done,
				     uint64_t total),
			  void *ctx);
void az_game_progress(const char *what, uint64_t done, uint64_t total);

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
