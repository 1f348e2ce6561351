/* SPDX-License-Identifier: MIT */
/* Training-target changes of the search: KataGo's forced playouts and policy-target pruning,
 * and the budget of fresh simulations per move under tree reuse. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "mcts_test_util.h"
#include "tests/test_util.h"

#define TINY 0.01f /* the root prior of move 0 */

/* At the root: prior TINY on move 0, the rest on moves 1-3; below it uniform. Every position
 * after first move 0 is worth -0.9 to the first player, the others 0: PUCT alone hardly ever
 * tries move 0. */
static int eval_bandit(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	const struct bandit_state *s = state;
	int *calls = ctx;

	(*calls)++;
	for (int a = 0; a < 4; a++)
		policy[a] = s->plies ? 0.25f : a ? (1.0f - TINY) / 3.0f : TINY;
	*value = 0.0f;
	if (s->first == 0) /* for the side to move: the first player moves at even plies */
		*value = (s->plies & 1) ? 0.9f : -0.9f;
	return 0;
}

static struct az_tree *bandit_tree(float forced_k, int noise)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_mcts_params p;
	struct az_tree *t = NULL;

	bandit_init(s);
	az_mcts_params_default(&p, &bandit_game);
	p.dir_eps = 0.0f; /* noise "on" with weight 0: forced playouts see the clean priors */
	p.forced_k = forced_k;
	assert_int_equal(az_tree_create(&bandit_game, &p, s, &t), 0);
	az_tree_set_noise(t, noise);
	return t;
}

/* The child with prior TINY gets its sqrt(k P N) visits, no more than one over; without forced
 * playouts (k 0, or noise off as in the arena and fast searches) it gets at most one. */
static void test_forced_reaches_formula(void **unused)
{
	const uint32_t sims = 3000;
	uint32_t visits[4];
	int calls = 0;
	struct az_tree *t = bandit_tree(2.0f, 1);

	(void)unused;
	assert_int_equal(az_mcts_search(t, sims, eval_bandit, &calls), 0);
	az_tree_root_children(t, visits, NULL, NULL);
	double need = sqrt(2.0 * TINY * (double)sum_u32(visits, 4)); /* 7.74 at 2999 */
	assert_true((double)visits[0] >= need);
	assert_true((double)visits[0] < need + 1.0);
	assert_tree_ok(t);
	az_tree_destroy(t);

	for (int noise = 0; noise < 2; noise++) {
		t = bandit_tree(noise ? 0.0f : 2.0f, noise);
		assert_int_equal(az_mcts_search(t, sims, eval_bandit, &calls), 0);
		az_tree_root_children(t, visits, NULL, NULL);
		assert_true(visits[0] <= 1);
		az_tree_destroy(t);
	}
}

/* The forced visits of the bad move are pruned from the target and from temperature sampling;
 * the raw visits are still there. */
static void test_forced_pruned_from_target(void **unused)
{
	float pi[4];
	uint32_t visits[4];
	int calls = 0;
	struct az_tree *t = bandit_tree(2.0f, 1);

	(void)unused;
	assert_int_equal(az_mcts_search(t, 3000, eval_bandit, &calls), 0);
	az_tree_root_children(t, visits, NULL, NULL);
	assert_true(visits[0] >= 7);
	az_tree_visit_policy(t, pi);
	assert_float_equal(pi[0], 0.0f, 0);
	assert_float_equal(pi[1] + pi[2] + pi[3], 1.0f, 1e-5);
	for (int i = 0; i < 200; i++)
		assert_int_not_equal(az_tree_pick(t, 1.0f, NULL), 0);
	az_tree_destroy(t);
}

/* Hand-built: N = 101 at the node, c_puct 1.5, k 2; c0 (60 visits, Q 0.1, P 0.4) is c* with
 * PUCT 0.1 + 1.5 * sqrt(101) * 0.4 / 61 = 0.1989. c1 may give floor(sqrt(2 * 0.3 * 100)) = 7
 * and stays below at 13 (PUCT 0.0479 there): 20 -> 13, the cap decides. c2 may give 6, but at
 * 7 visits its PUCT would be -0.15 + 3.015 / 8 = 0.2269 > 0.1989: 10 -> 8, PUCT decides. c3
 * gives its 3: 7 -> 4. c4 gives 3 -> 0 (0.2537 at 0 is above c*, so 1 is left: dropped). */
static void test_prune_hand_built(void **unused)
{
	const uint32_t n[5] = {60, 20, 10, 7, 3};
	const float q[5] = {0.10f, -0.30f, -0.15f, 0.0f, -0.5f};
	const float p[5] = {0.40f, 0.30f, 0.20f, 0.05f, 0.05f};
	const uint32_t want[5] = {60, 13, 8, 4, 0};
	uint32_t out[5];

	(void)unused;
	az_mcts_prune_visits(5, n, q, p, 101, 100, 1.5f, 2.0f, out);
	for (int i = 0; i < 5; i++)
		assert_int_equal(out[i], want[i]);

	/* The most visited child is c* wherever it sits; a child whose PUCT is already above
	 * c*'s gives nothing (c0 here: 0.1 + 13.5 * 0.4 / 21 = 0.357 > c1's 0.189). */
	const uint32_t n2[2] = {20, 60};
	const float q2[2] = {0.10f, 0.10f}, p2[2] = {0.40f, 0.40f};
	az_mcts_prune_visits(2, n2, q2, p2, 81, 80, 1.5f, 2.0f, out);
	assert_int_equal(out[0], 20);
	assert_int_equal(out[1], 60);
}

/* With reuse, a fresh budget runs exactly sims new simulations; the default budget counts the
 * reused visits. */
static void test_fresh_sims_after_reuse(void **unused)
{
	const struct az_game *c4 = &az_game_connect4;
	uint8_t s[AZ_GAME_STATE_MAX];
	struct eval_ctx e = {.g = c4};
	struct az_tree *t;
	uint32_t reused;
	int a;

	(void)unused;
	c4->init(s);
	t = make_tree(c4, s, 3, 0.0f);
	assert_int_equal(az_tree_sims_target(t, 200, 1), 200);
	assert_int_equal(az_mcts_search(t, az_tree_sims_target(t, 200, 1), eval_uniform, &e), 0);
	assert_int_equal(az_tree_root_visits(t), 200);
	a = az_tree_pick(t, 0.0f, NULL);
	assert_int_equal(az_tree_advance(t, a), 0);
	reused = az_tree_root_visits(t);
	assert_true(reused > 10);
	assert_int_equal(az_tree_sims_target(t, 200, 0), 200);
	assert_int_equal(az_tree_sims_target(t, 200, 1), reused + 200);

	e.calls = 0;
	assert_int_equal(az_mcts_search(t, az_tree_sims_target(t, 200, 1), eval_uniform, &e), 0);
	assert_int_equal(az_tree_root_visits(t), reused + 200);
	assert_int_equal(e.calls, 200); /* no terminal position this early: one call each */
	assert_tree_ok(t);

	/* The base stays with the root, not with the last search: a second call adds nothing. */
	assert_int_equal(az_mcts_search(t, az_tree_sims_target(t, 200, 1), eval_uniform, &e), 0);
	assert_int_equal(e.calls, 200);

	/* The default budget: only sims - reused new ones. */
	a = az_tree_pick(t, 0.0f, NULL);
	assert_int_equal(az_tree_advance(t, a), 0);
	reused = az_tree_root_visits(t);
	e.calls = 0;
	assert_int_equal(az_mcts_search(t, az_tree_sims_target(t, 200, 0), eval_uniform, &e), 0);
	assert_int_equal((uint32_t)e.calls, 200 - reused);

	assert_int_equal(az_tree_sims_target(t, UINT32_MAX, 1), UINT32_MAX); /* saturates */
	az_tree_reset(t, s);
	assert_int_equal(az_tree_sims_target(t, 200, 1), 200);
	az_tree_destroy(t);
}

AZ_TEST_MAIN(cmocka_unit_test(test_forced_reaches_formula),
	     cmocka_unit_test(test_forced_pruned_from_target),
	     cmocka_unit_test(test_prune_hand_built), cmocka_unit_test(test_fresh_sims_after_reuse))
