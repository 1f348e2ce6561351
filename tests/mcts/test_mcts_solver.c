/* SPDX-License-Identifier: MIT */
/* MCTS-Solver and parent-relative first-play urgency: wins in one and forced blocks found with
 * a network that all but hides them, proofs checked against the exact tic-tac-toe solver. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "mcts_test_util.h"
#include "tests/test_util.h"

static const struct az_game *const c4 = &az_game_connect4;

/* A misleading network: prior `fav` on column fav_col (0-based), the rest spread evenly over
 * the other actions, and a confident value `value` for every position. */
struct liar {
	int calls;
	int fav_col;
	float fav, value;
};

static int eval_liar(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	struct liar *l = ctx;
	float rest = (1.0f - l->fav) / (float)(c4->actions - 1);

	(void)state;
	l->calls++;
	for (uint32_t a = 0; a < c4->actions; a++)
		policy[a] = (int)a == l->fav_col ? l->fav : rest;
	*value = l->value;
	return 0;
}

static struct az_tree *c4_tree(const char *moves, int solver, float fpu_reduction, int absolute)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_mcts_params p;
	struct az_tree *t = NULL;
	char err[128];

	assert_true(az_game_play_moves(c4, s, moves, err, sizeof(err)) >= 0);
	az_mcts_params_default(&p, c4);
	p.dir_eps = 0.0f;
	p.solver = solver;
	p.fpu_reduction = fpu_reduction;
	p.fpu_absolute = absolute;
	assert_int_equal(az_tree_create(c4, &p, s, &t), 0);
	return t;
}

/* "121314": X (to move) wins in column 1 while O threatens column 5. The network puts 94 % on
 * column 5 and says the position is lost. The solver sees the win when the root's children
 * are created: no network call, the win is played and is the whole policy target. */
static void test_win_in_one(void **unused)
{
	struct liar l = {.fav_col = 4, .fav = 0.94f, .value = -0.9f};
	float pi[AZ_GAME_ACTIONS_MAX];
	struct az_tree *t = c4_tree("121314", 1, 0.25f, 0);
	int v = 7;

	(void)unused;
	assert_int_equal(az_mcts_search(t, 200, eval_liar, &l), 0);
	assert_int_equal(l.calls, 0);
	assert_int_equal(az_tree_root_proven(t, &v), 1);
	assert_int_equal(v, 1);
	assert_float_equal(az_tree_root_value(t), 1.0f, 0);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), 0);
	assert_int_equal(az_tree_pick(t, 1.0f, NULL), 0); /* a proven win is played at any temperature */
	az_tree_visit_policy(t, pi);
	assert_float_equal(pi[0], 1.0f, 0);
	assert_float_equal(pi[4], 0.0f, 0);
	assert_tree_ok(t);
	az_tree_destroy(t);

	/* Without the solver the same network and budget never try column 1: the blind spot. */
	l.calls = 0;
	t = c4_tree("121314", 0, 0.0f, 1);
	assert_int_equal(az_mcts_search(t, 50, eval_liar, &l), 0);
	assert_true(l.calls > 0);
	assert_int_equal(az_tree_root_proven(t, NULL), 0);
	assert_int_not_equal(az_tree_pick(t, 0.0f, NULL), 0);
	az_tree_destroy(t);
}

/* "727314": O threatens column 5 and X has no win. The network puts 94 % on column 7 and 1 %
 * on each other column. Every other move is proven lost on its first visit (O wins at once
 * below it), so the block gets all the remaining visits and the whole target. */
static void test_forced_block(void **unused)
{
	struct liar l = {.fav_col = 6, .fav = 0.94f, .value = 0.5f};
	float pi[AZ_GAME_ACTIONS_MAX];
	uint32_t visits[AZ_GAME_ACTIONS_MAX];
	struct az_tree *t = c4_tree("727314", 1, 0.25f, 0);

	(void)unused;
	assert_int_equal(az_mcts_search(t, 40, eval_liar, &l), 0);
	assert_int_equal(az_tree_root_proven(t, NULL), 0);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), 4);
	for (int i = 0; i < 50; i++)
		assert_int_equal(az_tree_pick(t, 1.0f, NULL), 4); /* losing moves are never sampled */
	az_tree_visit_policy(t, pi);
	assert_float_equal(pi[4], 1.0f, 0);
	az_tree_root_children(t, visits, NULL, NULL);
	for (int a = 0; a < 7; a++)
		if (a != 4)
			assert_true(visits[a] <= 1); /* a visit proves the loss; no second one */
	assert_true(visits[4] >= 30);
	assert_true(visits[6] == 1); /* the favourite was tried, and dropped */
	assert_tree_ok(t);
	az_tree_destroy(t);

	/* Without the solver the 94 % prior keeps most visits on column 7. */
	l.calls = 0;
	t = c4_tree("727314", 0, 0.0f, 1);
	assert_int_equal(az_mcts_search(t, 40, eval_liar, &l), 0);
	assert_int_not_equal(az_tree_pick(t, 0.0f, NULL), 4);
	az_tree_destroy(t);
}

/* First-play urgency below the parent, uniform priors 1/7, fpu_reduction 0, every child
 * evaluated at 0. Root value +0.9: after one child, the parent's mean is 0.45 and an unvisited
 * child scores 0.45 + 1.5/7 * sqrt(2) = 0.75 against 0 + 1.5/7 * sqrt(2) / 2 = 0.15 for the
 * visited one, so three simulations visit three children. Root value -0.9: the unvisited score
 * -0.45 + 0.30 = -0.15 < 0.15 (and at N = 3: -0.3 + 0.37 = 0.07 < 0.19), so the first child
 * takes all three. An absolute fpu of 0 could not tell the two apart. */
static void fpu_visits(float root_value, uint32_t *visits)
{
	struct az_tree *t = c4_tree("", 1, 0.0f, 0);
	float pol[AZ_GAME_ACTIONS_MAX];
	struct az_leaf leaf;

	for (int a = 0; a < 7; a++)
		pol[a] = 1.0f / 7.0f;
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	az_tree_expand(t, leaf.node, pol, root_value);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
		az_tree_expand(t, leaf.node, pol, 0.0f);
	}
	az_tree_root_children(t, visits, NULL, NULL);
	assert_tree_ok(t);
	az_tree_destroy(t);
}

static void test_fpu_parent(void **unused)
{
	uint32_t visits[AZ_GAME_ACTIONS_MAX];

	(void)unused;
	fpu_visits(0.9f, visits);
	for (int a = 0; a < 7; a++)
		assert_int_equal(visits[a], a < 3);
	fpu_visits(-0.9f, visits);
	assert_int_equal(visits[0], 3);
}

/* Proofs are exact: over every non-terminal tic-tac-toe position, a 300-simulation search with
 * the uniform evaluator either leaves the root open or proves exactly the solver's value, and a
 * proven root's pick is an optimal move. Most positions get proven (tic-tac-toe is small). */
static void sweep_one(void *ctx, const void *state, const char *moves)
{
	struct ttt_sweep *w = ctx;
	uint8_t opt[AZ_GAME_ACTIONS_MAX];
	int exact = az_solve(ttt, state, opt), v, a;

	(void)moves;
	az_tree_reset(w->t, state);
	w->positions++;
	if (search(w->t, ttt, 300) != 0 || az_tree_check(w->t, NULL) != 0) {
		w->failures++;
		return;
	}
	if (!az_tree_root_proven(w->t, &v))
		return;
	w->proven++;
	a = az_tree_pick(w->t, 0.0f, NULL);
	if (v != exact || a < 0 || !opt[a])
		w->failures++;
}

static void test_proofs_exact(void **unused)
{
	struct ttt_sweep w = {0};

	(void)unused;
	assert_true(ttt_sweep(&w, 5, sweep_one) > 4000);
	assert_int_equal(w.failures, 0);
	assert_true(w.proven > w.positions / 2);
}

/* ---- contempt (params.draw_value) ---- */

/* A fork: at the root, action 0 ends the game in a draw at once, action 1 enters a forced line
 * of 60 moves that also ends drawn; the network calls every position on that line slightly bad
 * (-0.1) for the root's side. */
struct fork_state {
	uint8_t left; /* moves left on the forced line; 255 at the root */
	uint8_t to_move;
};

static void fork_init(void *state)
{
	*(struct fork_state *)state = (struct fork_state){.left = 255};
}

static int fork_to_move(const void *state)
{
	return ((const struct fork_state *)state)->to_move;
}

static int fork_legal(const void *state, uint8_t *mask)
{
	const struct fork_state *s = state;

	mask[0] = s->left > 0;
	mask[1] = s->left == 255;
	return mask[0] + mask[1];
}

static void fork_apply(void *state, int action)
{
	struct fork_state *s = state;

	s->left = s->left == 255 ? (action == 0 ? 0 : 60) : (uint8_t)(s->left - 1);
	s->to_move ^= 1;
}

static int fork_terminal(const void *state, float *value)
{
	if (((const struct fork_state *)state)->left)
		return 0;
	if (value)
		*value = 0.0f;
	return 1;
}

static const struct az_game fork_game = TEST_GAME(fork, 2, 255);

static int eval_fork(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	(void)ctx;
	policy[0] = policy[1] = 0.5f;
	*value = fork_to_move(state) == 0 ? -0.1f : 0.1f; /* -0.1 for the root's side */
	return 0;
}

/* Without contempt the settled draw (Q 0) beats the line the network dislikes (Q -0.1); at
 * draw value -0.3 the settled draw is worth -0.3 to the root's side and the search plays on.
 * Either way the draw stays a proof of 0 (the exact value is not changed). */
static void test_draw_value(void **unused)
{
	static const struct { float dv; int pick; } cases[] = { { 0.0f, 0 }, { -0.3f, 1 } };
	uint8_t s[AZ_GAME_STATE_MAX];

	(void)unused;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct az_mcts_params p;
		struct az_tree *t = NULL;

		fork_init(s);
		az_mcts_params_default(&p, &fork_game);
		p.dir_eps = 0.0f;
		p.draw_value = cases[i].dv;
		assert_int_equal(az_tree_create(&fork_game, &p, s, &t), 0);
		assert_int_equal(az_mcts_search(t, 40, eval_fork, NULL), 0);
		assert_int_equal(az_tree_pick(t, 0.0f, NULL), cases[i].pick);
		assert_int_equal(az_tree_root_proven(t, NULL), 0);
		assert_tree_ok(t);
		az_tree_destroy(t);
	}
}

AZ_TEST_MAIN(cmocka_unit_test(test_win_in_one), cmocka_unit_test(test_forced_block),
	     cmocka_unit_test(test_fpu_parent), cmocka_unit_test(test_proofs_exact),
	     cmocka_unit_test(test_draw_value))
