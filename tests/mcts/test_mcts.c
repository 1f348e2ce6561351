/* SPDX-License-Identifier: MIT */
/* Unit tests of the PUCT search: parameters, tactics on tic-tac-toe with a network-free
 * evaluator, root noise, tree reuse, move choice and a golden self-play transcript
 * (tests/data/golden/ttt_selfplay.txt; AZ_GOLDEN_UPDATE=1 rewrites it). Virtual loss and
 * in-flight leaves: test_mcts_vloss.c. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "tests/mcts/mcts_test_util.h"

#ifndef AZ_GOLDEN_DIR
#define AZ_GOLDEN_DIR "tests/data/golden"
#endif

/* ---- parameters and arguments ---- */

static void test_params_default(void **unused)
{
	struct az_game wide = chain_game;
	struct az_mcts_params p;

	(void)unused;
	az_mcts_params_default(&p, ttt);
	assert_float_equal(p.c_puct, 1.5f, 1e-6);
	assert_float_equal(p.vloss, 1.0f, 1e-6);
	assert_float_equal(p.fpu, 0.0f, 1e-6);
	assert_float_equal(p.dir_alpha, 1.0f, 1e-6); /* 10/9 clamped to 1 */
	assert_float_equal(p.dir_eps, 0.25f, 1e-6);
	assert_true(p.seed == 0);
	wide.actions = 100;
	az_mcts_params_default(&p, &wide);
	assert_float_equal(p.dir_alpha, 0.1f, 1e-6);
	wide.actions = 512;
	az_mcts_params_default(&p, &wide);
	assert_float_equal(p.dir_alpha, 0.03f, 1e-6); /* 10/512 clamped */
}

static void test_create_invalid(void **unused)
{
	struct az_game bad = chain_game;
	struct az_mcts_params p;
	struct az_tree *t = NULL;
	struct chain_state s;

	(void)unused;
	chain_init(&s);
	az_mcts_params_default(&p, &chain_game);
	assert_int_equal(az_tree_create(NULL, &p, &s, &t), -EINVAL);
	assert_int_equal(az_tree_create(&chain_game, NULL, &s, &t), -EINVAL);
	assert_int_equal(az_tree_create(&chain_game, &p, NULL, &t), -EINVAL);
	bad.actions = AZ_GAME_ACTIONS_MAX + 1;
	assert_int_equal(az_tree_create(&bad, &p, &s, &t), -EINVAL);
	bad.actions = 2;
	bad.state_bytes = AZ_GAME_STATE_MAX + 1;
	assert_int_equal(az_tree_create(&bad, &p, &s, &t), -EINVAL);
	assert_null(t);
	az_tree_destroy(NULL);
}

/* ---- tactics with the network-free evaluator ---- */

/* 200 simulations from the tic-tac-toe position after moves; the pick must be want and the
 * tree sound. Returns the tree (the caller destroys it). */
static struct az_tree *ttt_pick(const char *moves, int want)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_tree *t = ttt_tree(moves, s);

	assert_int_equal(search(t, ttt, 200), 0);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), want);
	assert_tree_ok(t);
	return t;
}

/* X: 1 2, O: 4 5; X to move wins at 3 (O threatens 6). */
static void test_win_in_one(void **unused)
{
	struct az_tree *t = ttt_pick("1425", 2);

	(void)unused;
	assert_int_equal(az_tree_root_visits(t), 200);
	assert_true(az_tree_root_value(t) > 0.5f); /* won position: positive for the side to move */
	az_tree_destroy(t);
}

/* X: 1 2, O: 5; O to move must block at 3 (action 2): X has no other threat, O none at all. */
static void test_block(void **unused)
{
	(void)unused;
	az_tree_destroy(ttt_pick("152", 2));
}

/* Connect Four, 2000 simulations: X (to move) completes column 1; O blocks X's column 1. */
static void test_connect4_tactics(void **unused)
{
	static const char *const pos[2] = { "121212", "1213124" };
	uint8_t s[AZ_GAME_STATE_MAX];
	const struct az_game *c4 = &az_game_connect4;
	char err[128];
	struct az_tree *t;

	(void)unused;
	for (int i = 0; i < 2; i++) {
		assert_true(az_game_play_moves(c4, s, pos[i], err, sizeof(err)) >= 0);
		t = make_tree(c4, s, 1, 0.0f);
		assert_int_equal(search(t, c4, 2000), 0);
		assert_int_equal(az_tree_pick(t, 0.0f, NULL), 0);
		if (i == 0)
			assert_true(az_tree_root_value(t) > 0.5f);
		assert_tree_ok(t);
		az_tree_destroy(t);
	}
}

/* Every reachable tic-tac-toe position where the side to move can win at once: the search must
 * pick a winning move and see a positive root value. */
static void sweep_win(void *ctx, const void *state, const char *moves)
{
	struct ttt_sweep *w = ctx;
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	int win = 0, a;

	ttt->legal(state, mask);
	for (a = 0; a < (int)ttt->actions; a++)
		win |= mask[a] && wins_at_once(ttt, state, a);
	if (!win)
		return;
	w->positions++;
	az_tree_reset(w->t, state);
	assert_int_equal(search(w->t, ttt, 100), 0);
	a = az_tree_pick(w->t, 0.0f, NULL);
	if (a < 0 || !wins_at_once(ttt, state, a) || !(az_tree_root_value(w->t) > 0.0f)) {
		w->failures++;
		print_message("win in one missed after %s: picked %d\n", moves, a);
	}
}

static void test_win_in_one_all_positions(void **unused)
{
	struct ttt_sweep w = { 0 };

	(void)unused;
	assert_true(ttt_sweep(&w, 3, sweep_win) > 0);
	assert_true(w.positions > 1000);
	assert_int_equal(w.failures, 0);
}

/* Terminal root: every simulation is TERMINAL with the exact value, nothing to pick. */
static void test_terminal_root(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_leaf leaf;
	struct az_tree *t;

	(void)unused;
	t = ttt_tree("14253", s); /* X completes 1-2-3 */
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_TERMINAL);
	assert_int_equal(leaf.node, 0);
	assert_int_equal(search(t, ttt, 10), 0);
	assert_int_equal(az_tree_root_visits(t), 10);
	assert_float_equal(az_tree_root_value(t), -1.0f, 1e-6); /* O to move has lost */
	assert_int_equal(az_tree_inflight(t), 0);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), -EINVAL);
	assert_int_equal(az_tree_advance(t, 5), -EINVAL);
	az_tree_destroy(t);
}

/* ---- priors, noise, reuse ---- */

/* t's root at s (tic-tac-toe, cells 1 and 5 taken) expanded with expand_fn and a policy whose
 * legal entries are all unusable (NaN) gets uniform priors over its 7 legal moves. */
static void assert_unusable_uniform(struct az_tree *t, const void *s,
				    void (*expand_fn)(struct az_tree *, uint32_t, const float *,
						      float))
{
	float pol[9], clean[9];
	struct az_leaf leaf;

	for (int a = 0; a < 9; a++)
		pol[a] = a == 0 ? 1.0f : NAN;
	az_tree_reset(t, s);
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	expand_fn(t, leaf.node, pol, 0.0f);
	az_tree_root_children(t, NULL, clean, NULL);
	for (int a = 0; a < 9; a++)
		assert_float_equal(clean[a], (a == 0 || a == 4) ? 0.0f : 1.0f / 7.0f, 1e-6);
}

static void test_policy_normalised(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	float pol[9], clean[9];
	struct az_leaf leaf;
	struct az_tree *t;

	(void)unused;
	t = ttt_tree("15", s); /* cells 1 and 5 taken */
	for (int a = 0; a < 9; a++)
		pol[a] = 0.0f;
	pol[0] = 5.0f;	/* illegal: ignored */
	pol[4] = NAN;	/* illegal */
	pol[1] = 1.0f;
	pol[2] = 3.0f;
	pol[3] = -2.0f; /* negative: 0 */
	pol[5] = INFINITY; /* not finite: 0 */
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	az_tree_expand(t, leaf.node, pol, 0.0f);
	assert_int_equal(az_tree_root_children(t, NULL, clean, NULL), 7);
	assert_float_equal(clean[0], 0.0f, 0);
	assert_float_equal(clean[4], 0.0f, 0);
	assert_float_equal(clean[1], 0.25f, 1e-6);
	assert_float_equal(clean[2], 0.75f, 1e-6);
	assert_float_equal(clean[3], 0.0f, 0);
	assert_float_equal(clean[5], 0.0f, 0);

	/* All legal entries unusable: uniform over the 7 legal moves. */
	assert_unusable_uniform(t, s, az_tree_expand);
	az_tree_destroy(t);
}

/* az_tree_expand_normalised: the legal entries of an already normalised policy become the
 * priors bit for bit (no renormalisation, which az_tree_expand would do), unusable entries
 * count as 0, and a policy with no usable legal entry gives uniform priors, as az_tree_expand
 * does. */
static void test_policy_as_given(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	float pol[9], clean[9];
	const float want[7] = {0.1f, 0.2f, 0.3f, 0.05f, 0.15f, 0.13f, 0.06f};
	struct az_leaf leaf;
	struct az_tree *t;

	(void)unused;
	t = ttt_tree("15", s); /* cells 1 and 5 taken: legal 1, 2, 3, 5, 6, 7, 8 (0-based) */
	for (int a = 0, j = 0; a < 9; a++)
		pol[a] = (a == 0 || a == 4) ? 0.0f : want[j++];
	/* They sum to 0.99: az_tree_expand divides by that, changing every prior. */
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	az_tree_expand(t, leaf.node, pol, 0.0f);
	az_tree_root_children(t, NULL, clean, NULL);
	assert_float_equal(clean[1], 0.1f / 0.99f, 1e-6);
	az_tree_reset(t, s);
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	az_tree_expand_normalised(t, leaf.node, pol, 0.0f);
	assert_int_equal(az_tree_root_children(t, NULL, clean, NULL), 7);
	for (int a = 0; a < 9; a++)
		assert_memory_equal(&clean[a], &pol[a], sizeof(float));

	pol[2] = NAN;
	pol[3] = -0.5f;
	az_tree_reset(t, s);
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	az_tree_expand_normalised(t, leaf.node, pol, 0.0f);
	az_tree_root_children(t, NULL, clean, NULL);
	assert_float_equal(clean[2], 0.0f, 0);
	assert_float_equal(clean[3], 0.0f, 0);
	assert_memory_equal(&clean[1], &pol[1], sizeof(float));

	assert_unusable_uniform(t, s, az_tree_expand_normalised);
	assert_tree_ok(t);
	az_tree_destroy(t);
}

/* az_tree_expand_wdl: a win/draw/loss head's p_draw is valued at draw_value for the root's side
 * and -draw_value for the other (mcts.h); with draw_value 0 it is az_tree_expand itself. */
static void test_wdl_contempt(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	float pol[9];
	struct az_mcts_params p;
	struct az_leaf leaf;
	struct az_tree *t = NULL;

	(void)unused;
	for (int a = 0; a < 9; a++)
		pol[a] = 1.0f / 9.0f;
	ttt_position("", s);
	az_mcts_params_default(&p, ttt);
	p.dir_eps = 0.0f;
	p.draw_value = -0.4f;
	assert_int_equal(az_tree_create(ttt, &p, s, &t), 0);
	/* the root (the root's side to move): 0.2 + (-0.4) * 0.5 = 0.0 */
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	az_tree_expand_wdl(t, leaf.node, pol, 0.2f, 0.5f, 0);
	assert_float_equal(az_tree_root_value(t), 0.0f, 1e-6);
	/* a child (the opponent to move): 0.2 + 0.4 * 0.5 = 0.4 for it, -0.4 for the root's side;
	 * the root's mean (0 - 0.4) / 2 */
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	az_tree_expand_wdl(t, leaf.node, pol, 0.2f, 0.5f, 1);
	assert_float_equal(az_tree_root_value(t), -0.2f, 1e-6);
	/* a grandchild (the root's side again): 0.2 - 0.4 * 0.5 = 0.0 */
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	assert_int_not_equal(leaf.node, 0);
	az_tree_expand_wdl(t, leaf.node, pol, 0.2f, 0.5f, 0);
	assert_tree_ok(t);
	az_tree_destroy(t);

	/* draw_value 0: the draw changes nothing */
	p.draw_value = 0.0f;
	assert_int_equal(az_tree_create(ttt, &p, s, &t), 0);
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	az_tree_expand_wdl(t, leaf.node, pol, 0.2f, 0.5f, 0);
	assert_float_equal(az_tree_root_value(t), 0.2f, 1e-6);
	az_tree_destroy(t);
}

static int argmax_f(const float *x, int n)
{
	int best = 0;

	for (int i = 1; i < n; i++)
		if (x[i] > x[best])
			best = i;
	return best;
}

/* Root priors of a fresh tic-tac-toe tree with noise after its first evaluation; the next
 * selection (all children unvisited) must follow the noisy priors. */
static void root_used_priors(uint64_t seed, float *clean, float *used)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_leaf leaf;
	struct az_tree *t;

	ttt->init(s);
	t = make_tree(ttt, s, seed, 0.25f);
	az_tree_set_noise(t, 1);
	assert_int_equal(search(t, ttt, 1), 0);
	assert_int_equal(az_tree_root_children(t, NULL, clean, used), 9);
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	assert_int_equal(leaf.state[argmax_f(used, 9)], 1);
	az_tree_destroy(t);
}

static void test_noise(void **unused)
{
	float clean[9], used[9], used2[9], used3[9];
	double sum = 0.0, diff = 0.0;
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_tree *t;

	(void)unused;
	root_used_priors(42, clean, used);
	for (int a = 0; a < 9; a++) {
		assert_float_equal(clean[a], 1.0f / 9.0f, 1e-6); /* clean priors kept */
		assert_true(used[a] >= 0.75f / 9.0f - 1e-6f); /* (1 - eps) P + eps D */
		sum += used[a];
		diff += fabs(used[a] - clean[a]);
	}
	assert_float_equal(sum, 1.0, 1e-5);
	assert_true(diff > 1e-3);
	assert_int_not_equal(argmax_f(used, 9), 0); /* so that the next check means something */
	root_used_priors(42, clean, used2);
	assert_memory_equal(used, used2, sizeof(used)); /* same seed, same noise */
	root_used_priors(43, clean, used3);
	assert_memory_not_equal(used, used3, sizeof(used));

	/* eps 0, or noise off: the clean priors are used. */
	ttt->init(s);
	t = make_tree(ttt, s, 42, 0.0f);
	az_tree_set_noise(t, 1);
	assert_int_equal(search(t, ttt, 1), 0);
	az_tree_root_children(t, NULL, clean, used);
	assert_memory_equal(clean, used, sizeof(used));
	az_tree_destroy(t);

	t = make_tree(ttt, s, 42, 0.25f);
	az_tree_set_noise(t, 1);
	assert_int_equal(search(t, ttt, 1), 0);
	az_tree_set_noise(t, 0);
	az_tree_root_children(t, NULL, clean, used);
	assert_memory_equal(clean, used, sizeof(used));
	az_tree_set_noise(t, 1); /* turned on with the root expanded: applied at once */
	az_tree_root_children(t, NULL, clean, used);
	assert_memory_not_equal(clean, used, sizeof(used));
	az_tree_destroy(t);
}

static void test_advance_reuse(void **unused)
{
	uint32_t visits[9], visits2[9], nodes;
	float clean[9], used[9];
	uint8_t s[AZ_GAME_STATE_MAX], s2[AZ_GAME_STATE_MAX];
	struct az_leaf leaf;
	struct az_tree *t;
	int a;

	(void)unused;
	ttt->init(s);
	t = make_tree(ttt, s, 5, 0.25f);
	az_tree_set_noise(t, 1);
	assert_int_equal(search(t, ttt, 300), 0);
	az_tree_root_children(t, visits, NULL, NULL);
	a = az_tree_pick(t, 0.0f, NULL);
	assert_true(a >= 0 && visits[a] > 1);
	nodes = az_tree_node_count(t);

	/* Not with a leaf in flight, and not an illegal or out-of-range action. */
	assert_int_equal(az_tree_select(t, &leaf), AZ_SELECT_EVAL);
	assert_int_equal(az_tree_advance(t, a), -EINVAL);
	for (int i = 0; i < 9; i++)
		clean[i] = 1.0f / 9.0f;
	az_tree_expand(t, leaf.node, clean, 0.0f);
	az_tree_root_children(t, visits, NULL, NULL);
	assert_int_equal(az_tree_advance(t, 9), -EINVAL);
	assert_int_equal(az_tree_advance(t, -1), -EINVAL);

	assert_int_equal(az_tree_advance(t, a), 0);
	assert_int_equal(az_tree_root_visits(t), visits[a]); /* subtree kept */
	assert_true(az_tree_node_count(t) < nodes);	    /* and compacted */
	assert_tree_ok(t);
	assert_int_equal(az_tree_root_children(t, visits2, clean, used), 8);
	assert_int_equal(sum_u32(visits2, 9) + 1, visits[a]);
	assert_int_equal(visits2[a], 0);
	assert_memory_not_equal(clean, used, sizeof(used)); /* noise mixed in at once */
	az_game_after(ttt, s, a, s2);
	assert_memory_equal(az_tree_root_state(t), s2, ttt->state_bytes);
	assert_int_equal(az_tree_advance(t, a), -EINVAL); /* occupied now */

	/* The search continues from the reused counts. */
	assert_int_equal(search(t, ttt, visits[a] + 50), 0);
	assert_int_equal(az_tree_root_visits(t), visits[a] + 50);
	assert_tree_ok(t);

	/* A child never visited: a fresh root at the right position. */
	az_tree_root_children(t, visits2, NULL, NULL);
	for (a = 0; a < 9 && !(visits2[a] == 0 && s2[a] == 0); a++)
		;
	if (a < 9) {
		assert_int_equal(az_tree_advance(t, a), 0);
		assert_int_equal(az_tree_root_visits(t), 0);
		assert_int_equal(az_tree_node_count(t), 1);
	}

	/* Unexpanded root: advance still works and checks legality. */
	ttt->init(s);
	az_tree_reset(t, s);
	assert_int_equal(az_tree_advance(t, 4), 0);
	assert_int_equal(az_tree_advance(t, 4), -EINVAL);
	assert_int_equal(az_tree_advance(t, 0), 0);
	ttt_position("51", s2);
	assert_memory_equal(az_tree_root_state(t), s2, ttt->state_bytes);
	az_tree_destroy(t);
}

/* ---- move choice ---- */

static void test_visit_policy_and_pick(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX], mask[9];
	float pi[9];
	uint32_t visits[9], best = 0, hits[9] = { 0 };
	struct az_tree *t;
	double sum = 0.0;
	const int draws = 20000;
	int argmax = -1;

	(void)unused;
	ttt_position("15", s);
	t = make_tree(ttt, s, 11, 0.0f);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), -EINVAL); /* nothing visited yet */
	assert_int_equal(search(t, ttt, 120), 0);
	ttt->legal(s, mask);
	az_tree_visit_policy(t, pi);
	az_tree_root_children(t, visits, NULL, NULL);
	for (int a = 0; a < 9; a++) {
		if (!mask[a])
			assert_float_equal(pi[a], 0.0f, 0);
		sum += pi[a];
		assert_float_equal(pi[a], visits[a] / 119.0, 1e-6);
		if (visits[a] > best) {
			best = visits[a];
			argmax = a;
		}
	}
	assert_float_equal(sum, 1.0, 1e-5);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), argmax);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), argmax); /* deterministic */
	assert_int_equal(az_tree_pick(t, -1.0f, NULL), -EINVAL);

	for (int i = 0; i < draws; i++) {
		int a = az_tree_pick(t, 1.0f, NULL);

		assert_true(a >= 0 && a < 9 && mask[a]);
		hits[a]++;
	}
	for (int a = 0; a < 9; a++)
		assert_float_equal((double)hits[a] / draws, pi[a], 0.015);

	/* T = 0.5 sharpens to visits^2. */
	memset(hits, 0, sizeof(hits));
	sum = 0.0;
	for (int a = 0; a < 9; a++)
		sum += (double)visits[a] * visits[a];
	for (int i = 0; i < draws; i++)
		hits[az_tree_pick(t, 0.5f, NULL)]++;
	for (int a = 0; a < 9; a++)
		assert_float_equal((double)hits[a] / draws, visits[a] * visits[a] / sum, 0.015);

	/* A tiny temperature is all but greedy (the runner-up may have only one visit less:
	 * (29/30)^1000 ~ 2e-15). */
	for (int i = 0; i < 20; i++)
		assert_int_equal(az_tree_pick(t, 0.001f, NULL), argmax);
	az_tree_destroy(t);
}

/* Issue 23: at temperature 0, moves equal in visits and prior are drawn from the caller's
 * stream. On the empty tic-tac-toe board with a uniform evaluator, every opening ties after 10
 * simulations (one visit each); X's opening varies with the seed, a seed always gives the same
 * move, and without a stream it is the first (the old choice, kept for NULL). A position
 * without a tie draws nothing from the stream. */
static void test_pick_ties_seeded(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	uint32_t visits[9], seen[9] = { 0 }, distinct = 0;
	struct az_tree *t = ttt_tree("", s);
	struct az_rng rng, again;

	(void)unused;
	assert_int_equal(search(t, ttt, 10), 0);
	az_tree_root_children(t, visits, NULL, NULL);
	for (int a = 0; a < 9; a++)
		assert_int_equal(visits[a], 1);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), 0);
	for (uint64_t seed = 0; seed < 90; seed++) {
		az_rng_seed(&rng, seed);
		az_rng_seed(&again, seed);
		int a = az_tree_pick(t, 0.0f, &rng);

		assert_true(a >= 0 && a < 9);
		assert_int_equal(az_tree_pick(t, 0.0f, &again), a); /* same seed, same move */
		distinct += seen[a]++ == 0;
	}
	assert_int_equal(distinct, 9); /* 90 seeds reach all 9 openings (each ~1/9) */
	az_tree_destroy(t);

	/* X: 1 2, O: 4 5: the win at 3 has the most visits, no tie, no draw. */
	t = ttt_tree("1425", s);
	assert_int_equal(search(t, ttt, 200), 0);
	az_rng_seed(&rng, 7);
	again = rng;
	assert_int_equal(az_tree_pick(t, 0.0f, &rng), 2);
	assert_memory_equal(&rng, &again, sizeof(rng));
	az_tree_destroy(t);
}

/* ---- search loop ---- */

/* Every leaf handed out for evaluation carries the legal mask and count of its position, as
 * game->legal() gives them (the worker copies them into the slot instead of calling legal()
 * again): checked on Connect Four and tic-tac-toe leaves, with several leaves in flight. */
static void test_leaf_legal(void **unused)
{
	const struct az_game *games[2] = {&az_game_connect4, ttt};
	float pol[AZ_GAME_ACTIONS_MAX];
	uint8_t s[AZ_GAME_STATE_MAX], want[AZ_GAME_ACTIONS_MAX];

	(void)unused;
	for (int gi = 0; gi < 2; gi++) {
		const struct az_game *g = games[gi];
		struct az_leaf leaf[3];
		struct az_tree *t;
		int evals = 0;

		assert_non_null(g);
		for (uint32_t a = 0; a < g->actions; a++)
			pol[a] = 1.0f;
		g->init(s);
		t = make_tree(g, s, 5, 0.25f);
		for (int round = 0; round < 60; round++) {
			int n = 0;

			for (int k = 0; k < 3; k++) {
				int r = az_tree_select(t, &leaf[n]);

				assert_true(r >= 0);
				if (r != AZ_SELECT_EVAL)
					continue;
				int nl = g->legal(leaf[n].state, want);

				assert_int_equal(leaf[n].n_legal, (uint32_t)nl);
				assert_memory_equal(leaf[n].legal, want, g->actions);
				n++;
				evals++;
			}
			for (int k = 0; k < n; k++)
				az_tree_expand(t, leaf[k].node, pol, 0.1f * (float)(k - 1));
		}
		assert_true(evals > 60);
		assert_tree_ok(t);
		az_tree_destroy(t);
	}
}

struct hook_log {
	const struct az_game *g;
	int calls;
	uint8_t state[AZ_GAME_STATE_MAX];
};

static void log_leaf(void *ctx, const void *state)
{
	struct hook_log *h = ctx;

	h->calls++;
	memcpy(h->state, state, h->g->state_bytes);
}

/* The leaf hook: called once in each selection that returns EVAL, with the leaf's state, never
 * for BUSY; a tree with the hook makes the same selections as one without. */
static void test_leaf_hook(void **unused)
{
	const struct az_game *games[2] = {&az_game_connect4, ttt};
	float pol[AZ_GAME_ACTIONS_MAX];
	uint8_t s[AZ_GAME_STATE_MAX];

	(void)unused;
	for (int gi = 0; gi < 2; gi++) {
		const struct az_game *g = games[gi];
		struct hook_log h = {.g = g};
		struct az_tree *t, *plain;
		int evals = 0;

		for (uint32_t a = 0; a < g->actions; a++)
			pol[a] = 1.0f + (float)a;
		g->init(s);
		t = make_tree(g, s, 5, 0.25f);
		plain = make_tree(g, s, 5, 0.25f);
		az_tree_set_leaf_hook(t, log_leaf, &h);
		for (int round = 0; round < 80; round++) {
			struct az_leaf leaf[3], other;
			int n = 0;

			for (int k = 0; k < 3; k++) {
				int before = h.calls;
				int r = az_tree_select(t, &leaf[n]);

				assert_int_equal(az_tree_select(plain, &other), r);
				assert_int_equal(other.node, leaf[n].node);
				assert_true(r >= 0);
				if (r == AZ_SELECT_BUSY)
					assert_int_equal(h.calls, before);
				if (r != AZ_SELECT_EVAL)
					continue;
				assert_int_equal(h.calls, before + 1);
				assert_memory_equal(h.state, leaf[n].state, g->state_bytes);
				n++;
				evals++;
			}
			for (int k = 0; k < n; k++) {
				az_tree_expand(t, leaf[k].node, pol, 0.1f * (float)(k - 1));
				az_tree_expand(plain, leaf[k].node, pol, 0.1f * (float)(k - 1));
			}
		}
		assert_true(evals > 80);
		assert_int_equal(az_tree_root_visits(t), az_tree_root_visits(plain));
		az_tree_set_leaf_hook(t, NULL, NULL); /* off again: no more calls */
		h.calls = 0;
		assert_int_equal(search(t, g, az_tree_root_visits(t) + 20), 0);
		assert_int_equal(h.calls, 0);
		assert_tree_ok(t);
		az_tree_destroy(plain);
		az_tree_destroy(t);
	}
}

/* az_tree_shrink: after a big search the arenas hold far more than 1024 nodes; between games
 * (after a reset) they go back to the target, or to the nodes in use when more; the tree
 * searches, advances and grows again afterwards. */
static void test_shrink(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_tree *t;

	(void)unused;
	ttt->init(s);
	t = make_tree(ttt, s, 3, 0.0f);
	assert_int_equal(search(t, ttt, 3000), 0);
	assert_int_equal(az_tree_advance(t, 4), 0); /* the spare arena is in use too */
	assert_int_equal(search(t, ttt, 3000), 0);
	uint32_t big = az_tree_capacity(t), used = az_tree_node_count(t);
	assert_true(used > 2048 && big >= 2 * used);
	az_tree_shrink(t, 100); /* not below the nodes in use */
	assert_int_equal(az_tree_node_count(t), used);
	assert_true(az_tree_capacity(t) < big && az_tree_capacity(t) >= used);
	assert_tree_ok(t);
	az_tree_reset(t, s);
	az_tree_shrink(t, 1500);
	assert_int_equal(az_tree_capacity(t), 1500);
	az_tree_reset(t, s);
	az_tree_shrink(t, 10); /* 1024 at least */
	assert_int_equal(az_tree_capacity(t), 1024);
	assert_int_equal(search(t, ttt, 3000), 0);
	assert_true(az_tree_node_count(t) > 2048);
	assert_int_equal(az_tree_advance(t, 0), 0);
	assert_int_equal(search(t, ttt, 2000), 0);
	assert_tree_ok(t);
	az_tree_destroy(t);
}

static void test_search_eval_error(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct eval_ctx e = { .g = ttt, .fail_after = 4 };
	struct az_tree *t;

	(void)unused;
	ttt->init(s);
	t = make_tree(ttt, s, 1, 0.0f);
	assert_int_equal(az_mcts_search(t, 100, eval_uniform, &e), -EIO);
	assert_int_equal(e.calls, 4);
	assert_int_equal(az_tree_inflight(t), 0);
	assert_int_equal(az_tree_root_visits(t), 3); /* the failed leaf left no trace */
	assert_int_equal(az_tree_node_count(t), 1 + 9 + 8 + 8);
	assert_tree_ok(t);
	e.fail_after = 0;
	assert_int_equal(az_mcts_search(t, 100, eval_uniform, &e), 0);
	assert_int_equal(az_tree_root_visits(t), 100);
	az_tree_destroy(t);
}

/* ---- golden self-play transcript ---- */

/* One game: 100 simulations a move, noise on, temperature 1 for two plies then 0, tree reuse.
 * Each line: the move played (1-9) and the root's visit counts for cells 1..9. */
static int selfplay_move(struct az_tree *t, int ply)
{
	assert_int_equal(search(t, ttt, 100), 0);
	return az_tree_pick(t, ply < 2 ? 1.0f : 0.0f, NULL);
}

static void selfplay_transcript(char *out, size_t len)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_tree *t;

	ttt->init(s);
	t = make_tree(ttt, s, 2024, 0.25f);
	az_tree_set_noise(t, 1);
	ttt_transcript(t, selfplay_move, 0,
		       "# tic-tac-toe self-play: seed 2024, 100 sims a move, eps 0.25, "
		       "T=1 for 2 plies then 0\n# move: visits of cells 1-9\n",
		       out, len);
}

static void test_golden_selfplay(void **unused)
{
	const char *path = AZ_GOLDEN_DIR "/ttt_selfplay.txt";
	char got[2048], again[2048];

	(void)unused;
	selfplay_transcript(got, sizeof(got));
	selfplay_transcript(again, sizeof(again));
	assert_string_equal(got, again); /* deterministic in-process */
	assert_golden(path, got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_params_default),
		cmocka_unit_test(test_create_invalid),
		cmocka_unit_test(test_win_in_one),
		cmocka_unit_test(test_block),
		cmocka_unit_test(test_win_in_one_all_positions),
		cmocka_unit_test(test_connect4_tactics),
		cmocka_unit_test(test_terminal_root),
		cmocka_unit_test(test_policy_normalised),
		cmocka_unit_test(test_policy_as_given),
		cmocka_unit_test(test_wdl_contempt),
		cmocka_unit_test(test_noise),
		cmocka_unit_test(test_advance_reuse),
		cmocka_unit_test(test_visit_policy_and_pick),
		cmocka_unit_test(test_pick_ties_seeded),
		cmocka_unit_test(test_leaf_legal),
		cmocka_unit_test(test_leaf_hook),
		cmocka_unit_test(test_shrink),
		cmocka_unit_test(test_search_eval_error),
		cmocka_unit_test(test_golden_selfplay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
