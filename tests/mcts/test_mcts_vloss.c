/* SPDX-License-Identifier: MIT */
/* Unit tests of the PUCT search's virtual loss and in-flight bookkeeping: batched leaves are
 * distinct, virtual loss steers selection, first-play urgency, leaves interleaved with
 * evaluation, and a busy chain whose only leaf is in flight. */
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

#include "tests/mcts/mcts_test_util.h"
#include "tests/test_util.h"

static void test_vloss_distinct_leaves(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	float uniform[AZ_GAME_ACTIONS_MAX];
	uint32_t visits[AZ_GAME_ACTIONS_MAX];
	struct az_leaf leaf[9];
	struct az_tree *t;

	(void)unused;
	for (int a = 0; a < 9; a++)
		uniform[a] = 1.0f / 9.0f;
	ttt->init(s);
	t = make_tree(ttt, s, 1, 0.0f);
	assert_int_equal(search(t, ttt, 1), 0); /* expands the root */
	assert_int_equal(az_tree_root_children(t, visits, NULL, NULL), 9);

	for (int k = 0; k < 9; k++) {
		assert_int_equal(az_tree_select(t, &leaf[k]), AZ_SELECT_EVAL);
		/* Equal scores and priors: the lowest action first, so leaf k played cell k. */
		assert_int_equal(leaf[k].state[k], 1);
		for (int j = 0; j < k; j++)
			assert_int_not_equal(leaf[k].node, leaf[j].node);
		assert_int_equal(az_tree_inflight(t), k + 1);
		assert_int_equal(az_tree_root_visits(t), 1); /* in flight is not completed */
		assert_tree_ok(t);
	}
	/* Every root child is now in flight: the root's K+1st selection finds only busy leaves. */
	assert_int_equal(az_tree_select(t, &leaf[0]), AZ_SELECT_BUSY);
	assert_int_equal(az_tree_inflight(t), 9);
	assert_tree_ok(t);

	for (int k = 8; k >= 0; k--)
		az_tree_expand(t, leaf[k].node, uniform, 0.0f);
	assert_int_equal(az_tree_inflight(t), 0);
	assert_tree_ok(t); /* all virtual loss gone, N = 1 + sum N(children) everywhere */
	az_tree_root_children(t, visits, NULL, NULL);
	assert_int_equal(az_tree_root_visits(t), 10);
	assert_int_equal(az_tree_root_visits(t), sum_u32(visits, 9) + 1);
	for (int a = 0; a < 9; a++)
		assert_int_equal(visits[a], 1);
	az_tree_destroy(t);
}

/* Virtual loss must outweigh a strong prior: root priors 0.8 on the centre, 0.025 elsewhere.
 * Leaf 1 is the centre; without the -vloss in Q, or without the in-flight visit in N(s,a), the
 * centre would still score highest (busy); with both it scores
 * -1 + 1.5 * 0.8 * sqrt(2) / 2 = -0.15 < 1.5 * 0.025 * sqrt(2) = 0.053, so leaf 2 is cell 1
 * (lowest index among equals); leaf 3: centre -1 + 1.5 * 0.8 * sqrt(3) / 2 = 0.039 against
 * 1.5 * 0.025 * sqrt(3) = 0.065 for cell 2. A 4th descent (N + vl = 4 at the root) scores the
 * centre -1 + 1.5 * 0.8 * 2 / 2 = 0.2 against 0.075 and finds it busy. */
static void test_vloss_steers(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	float pol[9];
	struct az_leaf root, leaf[3];
	struct az_mcts_params p;
	struct az_tree *t;

	(void)unused;
	for (int a = 0; a < 9; a++)
		pol[a] = a == 4 ? 0.8f : 0.025f;
	ttt->init(s);
	az_mcts_params_default(&p, ttt);
	p.fpu_absolute = 1; /* the arithmetic above takes Q = 0 for unvisited children */
	assert_int_equal(az_tree_create(ttt, &p, s, &t), 0);
	assert_int_equal(az_tree_select(t, &root), AZ_SELECT_EVAL);
	az_tree_expand(t, root.node, pol, 0.0f);
	for (int k = 0; k < 3; k++)
		assert_int_equal(az_tree_select(t, &leaf[k]), AZ_SELECT_EVAL);
	assert_int_equal(leaf[0].state[4], 1);
	assert_int_equal(leaf[1].state[0], 1);
	assert_int_equal(leaf[2].state[1], 1);
	assert_int_equal(az_tree_inflight(t), 3);
	assert_int_equal(az_tree_select(t, &root), AZ_SELECT_BUSY);
	assert_int_equal(root.node, leaf[0].node);
	assert_tree_ok(t);
	for (int k = 0; k < 3; k++)
		az_tree_expand(t, leaf[k].node, pol, 0.0f);
	assert_tree_ok(t);
	az_tree_destroy(t);
}

/* First-play urgency: with fpu -1 an unvisited child looks lost, so after the first child
 * returns value 0 the search stays on it; with fpu +1 every child is tried before any repeat. */
static void test_fpu(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	uint32_t visits[9];
	struct az_mcts_params p;
	struct az_tree *t;

	(void)unused;
	ttt->init(s);
	az_mcts_params_default(&p, ttt);
	p.fpu_absolute = 1;
	p.fpu = -1.0f;
	assert_int_equal(az_tree_create(ttt, &p, s, &t), 0);
	assert_int_equal(search(t, ttt, 10), 0);
	az_tree_root_children(t, visits, NULL, NULL);
	assert_int_equal(visits[0], 9);
	az_tree_destroy(t);

	p.fpu = 1.0f;
	assert_int_equal(az_tree_create(ttt, &p, s, &t), 0);
	assert_int_equal(search(t, ttt, 10), 0);
	az_tree_root_children(t, visits, NULL, NULL);
	for (int a = 0; a < 9; a++)
		assert_int_equal(visits[a], 1);
	az_tree_destroy(t);
}

/* Random interleaving of selects and out-of-order expands with up to 8 leaves in flight. */
static void test_vloss_interleaved(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	float pol[AZ_GAME_ACTIONS_MAX] = { 0 };
	struct az_leaf pending[8];
	uint32_t npend = 0, completed = 0, x = 12345;
	struct az_tree *t;

	(void)unused;
	ttt->init(s);
	t = make_tree(ttt, s, 9, 0.25f);
	az_tree_set_noise(t, 1);
	for (int step = 0; step < 3000; step++) {
		x = x * 1103515245u + 12345u;
		if (npend < 8 && ((x >> 16) & 3) != 0) {
			int r = az_tree_select(t, &pending[npend]);

			assert_true(r >= 0);
			if (r == AZ_SELECT_EVAL)
				npend++;
			else if (r == AZ_SELECT_TERMINAL)
				completed++;
		} else if (npend) {
			uint32_t i = (x >> 8) % npend;

			for (int a = 0; a < 9; a++)
				pol[a] = (float)((x >> a) & 7);
			az_tree_expand(t, pending[i].node, pol, (float)((int)(x % 3) - 1));
			pending[i] = pending[--npend];
			completed++;
		}
		assert_int_equal(az_tree_inflight(t), npend);
		assert_int_equal(az_tree_root_visits(t), completed);
		if (step % 97 == 0)
			assert_tree_ok(t);
	}
	while (npend) {
		az_tree_expand(t, pending[npend - 1].node, pol, 0.0f);
		npend--;
	}
	assert_tree_ok(t);
	assert_true(az_tree_node_count(t) > 1024); /* the arena has grown */
	az_tree_destroy(t);
}

/* A leaf in flight at the end of a forced chain: the second descent is BUSY and leaves no
 * virtual loss behind. */
static void test_busy_chain(void **unused)
{
	struct chain_state s;
	float pol[2] = { 1.0f, 0.0f };
	struct az_leaf a, b;
	struct az_tree *t;

	(void)unused;
	chain_init(&s);
	t = make_tree(&chain_game, &s, 1, 0.0f);
	assert_int_equal(az_tree_select(t, &a), AZ_SELECT_EVAL);
	assert_int_equal(a.node, 0);
	assert_int_equal(az_tree_select(t, &b), AZ_SELECT_BUSY); /* the root itself in flight */
	az_tree_expand(t, a.node, pol, 0.5f);
	assert_float_equal(az_tree_root_value(t), 0.5f, 1e-6);

	assert_int_equal(az_tree_select(t, &a), AZ_SELECT_EVAL);
	assert_int_not_equal(a.node, 0);
	assert_int_equal(((struct chain_state *)a.state)->left, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(az_tree_select(t, &b), AZ_SELECT_BUSY);
		assert_int_equal(b.node, a.node);
		assert_int_equal(az_tree_inflight(t), 1);
		assert_tree_ok(t); /* root vl == 1: only the real in-flight leaf */
	}
	az_tree_expand(t, a.node, pol, 0.0f);
	assert_int_equal(az_tree_inflight(t), 0);
	assert_int_equal(az_tree_root_visits(t), 2);
	assert_tree_ok(t);

	/* Down to the terminal end: the mover of the last ply wins, so the first player (who
	 * makes plies 1 and 3) loses a 4-ply chain. */
	assert_int_equal(search(t, &chain_game, 50), 0);
	assert_tree_ok(t);
	assert_true(az_tree_root_value(t) < -0.5f);
	az_tree_destroy(t);
}

AZ_TEST_MAIN(cmocka_unit_test(test_vloss_distinct_leaves), cmocka_unit_test(test_vloss_steers),
	     cmocka_unit_test(test_fpu), cmocka_unit_test(test_vloss_interleaved),
	     cmocka_unit_test(test_busy_chain))
