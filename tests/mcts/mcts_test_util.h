/* SPDX-License-Identifier: MIT */
/* Helpers shared by the mcts test executables (tests/mcts/mcts_test_util.c): a forced-move
 * game, a network-free evaluator and tree helpers that fail the test on any error. Include
 * after <cmocka.h>. */
#ifndef AZ_MCTS_TEST_UTIL_H
#define AZ_MCTS_TEST_UTIL_H

#include <stdint.h>

#include "games/game.h"
#include "mcts/mcts.h"
#include "mcts/mcts_impl.h"

/* Tic-tac-toe, the game most tests search. */
extern const struct az_game *const ttt;

/* The az_game of the test game `prefix`: named "prefix", its state a struct prefix_state, its
 * rules prefix_init .. prefix_terminal (AZ_GAME_RULES), with one feature plane and no symmetry
 * but the identity (the tests' evaluators need neither), n_actions moves, at most plies plies. */
#define TEST_GAME(prefix, n_actions, plies)                                                   \
	{                                                                                     \
		.name = #prefix, .state_bytes = sizeof(struct prefix##_state),                \
		.actions = (n_actions), .features = 1, .symmetries = 1, .max_plies = (plies), \
		AZ_GAME_RULES(prefix),                                                        \
	}

/* A forced-move game: `left` plies to go (4 after chain_init), only action 0 is ever legal,
 * and whoever makes the last move wins. */
struct chain_state {
	uint8_t left;
	uint8_t to_move;
};
extern const struct az_game chain_game;
void chain_init(void *state);

/* A four-armed bandit: any of 4 moves for 30 plies, then a draw; the tests' evaluators decide
 * the values by the first move. */
struct bandit_state {
	uint8_t first; /* the first move played (0xff: none yet) */
	uint8_t plies;
};
extern const struct az_game bandit_game;
void bandit_init(void *state);

/* The evaluator's context: counts calls and can fail one. */
struct eval_ctx {
	const struct az_game *g;
	int calls;
	int fail_after; /* return -EIO on this call (1-based); 0 never */
};

/* Uniform over all A entries (illegal ones included, the tree must drop them), value 0. */
int eval_uniform(void *ctx, const void *state, float *policy, float *value, float *draw);

/* A tree over root with the default parameters but this seed and root-noise weight eps. */
struct az_tree *make_tree(const struct az_game *g, const void *root, uint64_t seed, float eps);

/* The tic-tac-toe position after moves ("1425": squares 1-9). */
void ttt_position(const char *moves, void *state);

/* ttt_position(moves, state), then make_tree(ttt, state, 1, 0.0f): seed 1, no root noise. */
struct az_tree *ttt_tree(const char *moves, void *state);

/* Fail the test when az_tree_check() finds a broken invariant. */
void assert_tree_ok(const struct az_tree *t);

/* sims simulations with eval_uniform. Returns az_mcts_search()'s result. */
int search(struct az_tree *t, const struct az_game *g, uint32_t sims);

/* Whether playing a at state ends the game with a win for the player who played it. */
int wins_at_once(const struct az_game *g, const void *state, int a);

uint32_t sum_u32(const uint32_t *x, uint32_t n);

/* A sweep over every reachable tic-tac-toe position where the game goes on (az_game_enumerate
 * with nonterminal_only): visit(w, state, moves) at each, with w->t one tree for them all (created
 * at the start with this seed and no root noise; the visitor resets it to the position) and
 * the counters left to the visitor. Returns the positions enumerated; destroys the tree. */
struct ttt_sweep {
	struct az_tree *t;
	int positions, proven, failures;
};
int ttt_sweep(struct ttt_sweep *w, uint64_t seed,
	      void (*visit)(void *w, const void *state, const char *moves));

/* A golden self-play transcript of tic-tac-toe into out[0..len): the header line(s), then until
 * the game ends one line a move: the move (1-9) that move(t, ply) searched for and picked, the
 * root's visit counts of cells 1..9 and, with target set, " |" and the root's policy target in
 * hundredths; the move is played with tree reuse. Ends with the final board; destroys t. */
void ttt_transcript(struct az_tree *t, int (*move)(struct az_tree *t, int ply), int target,
		    const char *header, char *out, size_t len);

/* Compare a golden transcript: fail the test when got differs from the file at path (at most
 * 8 KiB); with AZ_GOLDEN_UPDATE set in the environment, rewrite the file instead. */
void assert_golden(const char *path, const char *got);

#endif
