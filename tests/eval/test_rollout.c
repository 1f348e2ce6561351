/* SPDX-License-Identifier: MIT */
/* The random-playout evaluator (eval/rollout.c): uniform priors over the legal moves, and values
 * from the side to move's point of view in positions whose every playout ends the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "games/game.h"
#include "mcts/mcts.h"
#include "eval/rollout.h"
#include "tests/test_util.h"

static void eval_moves(const char *moves, float *policy, float *value)
{
	const struct az_game *g = &az_game_tictactoe;
	uint8_t st[AZ_GAME_STATE_MAX];
	char err[128];
	struct az_rollout r;

	g->init(st);
	assert_true(az_game_play_moves(g, st, moves, err, sizeof(err)) >= 0);
	az_rollout_init(&r, g, 42);
	for (int i = 0; i < 20; i++) /* every playout must agree, whatever the RNG draws */
		assert_int_equal(az_rollout_eval(&r, st, policy, value, NULL), 0);
}

/* Positions whose every playout ends the same way: the value for the side to move, exact, and the
 * priors, uniform over the legal moves (exact where zero, to 1e-6 elsewhere). */
static void test_exact_positions(void **unused)
{
	static const struct {
		const char *moves; /* from the start, cells 1-9 */
		float value;
		float prior[9];
	} cases[] = {
		/* X to move, one empty cell (9) completing X's diagonal 1-5-9: +1 for X */
		{ "12345687", 1.0f, { 0, 0, 0, 0, 0, 0, 0, 0, 1.0f } },
		/* X to move, the last cell draws */
		{ "12354687", 0.0f, { 0, 0, 0, 0, 0, 0, 0, 0, 1.0f } },
		/* O to move with two winning cells (6 and 8): +1 from O's side, uniform 1/2 priors.
		 * This checks the sign flip: the terminal position has X to move with value -1. */
		{ "1235749", 1.0f, { 0, 0, 0, 0, 0, 0.5f, 0, 0.5f, 0 } },
		/* A finished game: its exact value, no priors (X completed 1-5-9 with moves X1 O2 X3
		 * O4 X5 O6 X8 O7 X9; O to move has lost) */
		{ "123456879", -1.0f, { 0 } },
	};
	float pol[9], v;

	(void)unused;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		eval_moves(cases[i].moves, pol, &v);
		assert_float_equal(v, cases[i].value, 0.0f);
		for (int a = 0; a < 9; a++)
			assert_float_equal(pol[a], cases[i].prior[a],
					   cases[i].prior[a] != 0.0f ? 1e-6f : 0.0f);
	}
}

/* Rollout MCTS finds the immediate win for X (cell 3 completes 1-2-3) from a few hundred
 * simulations, through az_mcts_search's evaluator callback. */
static void test_search_finds_win(void **unused)
{
	const struct az_game *g = &az_game_tictactoe;
	uint8_t st[AZ_GAME_STATE_MAX];
	char err[128];
	struct az_rollout r;
	struct az_mcts_params p;
	struct az_tree *t;
	(void)unused;

	g->init(st);
	assert_true(az_game_play_moves(g, st, "1427", err, sizeof(err)) >= 0); /* X 1 2, O 4 7 */
	az_rollout_init(&r, g, 7);
	az_mcts_params_default(&p, g);
	p.dir_eps = 0;
	assert_int_equal(az_tree_create(g, &p, st, &t), 0);
	assert_int_equal(az_mcts_search(t, 400, az_rollout_eval, &r), 0);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), 2);
	az_tree_destroy(t);
}

AZ_TEST_MAIN(cmocka_unit_test(test_exact_positions), cmocka_unit_test(test_search_finds_win))
