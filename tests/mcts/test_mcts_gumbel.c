/* SPDX-License-Identifier: MIT */
/* Gumbel AlphaZero search (mcts/gumbel.c): the sequential-halving schedule against schedules
 * worked out by hand, the improved policy of a bandit whose values are known, the visits the
 * schedule hands out, MCTS-Solver proofs at the root, leaves in flight, determinism, and a
 * golden self-play transcript (tests/data/golden/ttt_gumbel_selfplay.txt; AZ_GOLDEN_UPDATE=1
 * rewrites it). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mcts_test_util.h"
#include "tests/test_util.h"

#ifndef AZ_GOLDEN_DIR
#define AZ_GOLDEN_DIR "tests/data/golden"
#endif

/* ---- the schedule ---- */

static void check_schedule(uint32_t m, uint32_t n, const uint32_t *want, uint32_t len)
{
	for (uint32_t k = 0; k < len; k++) {
		uint32_t got = az_gumbel_considered_visit(m, n, k);

		if (got != want[k])
			fail_msg("m %u n %u: simulation %u goes to visit %u, want %u", m, n, k, got,
				 want[k]);
	}
}

/* Worked out from the rule: phases give each of the r actions left max(1, floor(n / (ceil(log2
 * m) * r))) visits, then r = max(2, r / 2). The first five are mctx's own test cases. */
static void test_schedule_by_hand(void **unused)
{
	/* m 8, n 24: log2 3; r 8: 24/24 = 1 round; r 4: 24/12 = 2; r 2: 24/6 = 4 */
	static const uint32_t s8_24[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1,
					 2, 2, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6};
	/* m 8, n 47: r 8: 47/24 = 1; r 4: 47/12 = 3; r 2: 47/6 = 7, then on */
	static const uint32_t s8_47[] = {0,  0,  0,  0,  0,  0,  0,  0,  1,  1,  1,  1,
					 2,  2,  2,  2,  3,  3,  3,  3,  4,  4,  5,  5,
					 6,  6,  7,  7,  8,  8,  9,  9,  10, 10, 11, 11,
					 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17};
	/* m 8, n 13: r 8: 13/24 -> 1; r 4: 13/12 = 1; r 2: 13/6 = 2 */
	static const uint32_t s8_13[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2};
	/* m 7, n 24: log2 3; r 7: 24/21 = 1; r 3: 24/9 = 2; r 2: 24/6 = 4 */
	static const uint32_t s7_24[] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2,
					 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8};
	static const uint32_t s8_2[] = {0, 0};
	/* Connect Four at 16 simulations (15 after the root's own): m 7, n 15: r 7: 15/21 -> 1;
	 * r 3: 15/9 = 1; r 2: 15/6 = 2, twice */
	static const uint32_t s7_15[] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 3, 4};
	/* Tic-tac-toe at 32 (31 after the root): m 9, n 31: log2 4; r 9: 31/36 -> 1; r 4: 31/16
	 * = 1; r 2: 31/8 = 3, and again */
	static const uint32_t s9_31[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2,  2, 3,
					 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10};
	/* m 4, n 8: log2 2; r 4: 8/8 = 1; r 2: 8/4 = 2 */
	static const uint32_t s4_8[] = {0, 0, 0, 0, 1, 1, 2, 2};
	/* m 16, n 8: fewer simulations than actions: the first 8 of the first round */
	static const uint32_t s16_8[] = {0, 0, 0, 0, 0, 0, 0, 0};
	/* m 2, n 5: log2 1; r 2: 5/2 = 2 rounds, then 2 more */
	static const uint32_t s2_5[] = {0, 0, 1, 1, 2};

	(void)unused;
	check_schedule(8, 24, s8_24, 24);
	check_schedule(8, 47, s8_47, 47);
	check_schedule(8, 13, s8_13, 13);
	check_schedule(7, 24, s7_24, 24);
	check_schedule(8, 2, s8_2, 2);
	check_schedule(7, 15, s7_15, 15);
	check_schedule(9, 31, s9_31, 31);
	check_schedule(4, 8, s4_8, 8);
	check_schedule(16, 8, s16_8, 8);
	check_schedule(2, 5, s2_5, 5);
	for (uint32_t k = 0; k < 16; k++) { /* one action (or none): every visit to it */
		assert_int_equal(az_gumbel_considered_visit(0, 16, k), k);
		assert_int_equal(az_gumbel_considered_visit(1, 16, k), k);
	}
}

/* ---- the bandit (mcts_test_util.h): the first move decides the value ---- */

static const float ROOT_P[4] = {0.1f, 0.2f, 0.3f, 0.4f};
static const float ARM[4] = {0.5f, -0.5f, 0.0f, 0.25f}; /* value to the first player */
#define ROOT_V 0.2f                                     /* the root's own network value */

/* Root priors ROOT_P and value ROOT_V; below it uniform priors and value ARM[first] for the
 * first player (its negation when the second is to move). */
static int eval_bandit(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	const struct bandit_state *s = state;

	(void)ctx;
	for (int a = 0; a < 4; a++)
		policy[a] = s->plies ? 0.25f : ROOT_P[a];
	if (s->plies == 0)
		*value = ROOT_V;
	else
		*value = (s->plies & 1) ? -ARM[s->first] : ARM[s->first];
	return 0;
}

static struct az_tree *gumbel_tree(const struct az_game *g, const void *root, uint32_t m,
				   float c_scale, uint64_t seed, int noise)
{
	struct az_mcts_params p;
	struct az_tree *t = NULL;

	az_mcts_params_default(&p, g);
	p.search = AZ_SEARCH_GUMBEL;
	p.gumbel_m = m;
	p.c_scale = c_scale;
	p.seed = seed;
	assert_int_equal(az_tree_create(g, &p, root, &t), 0);
	az_tree_set_noise(t, noise);
	return t;
}

/* softmax(logit + sigma) by hand into pi[4]: q[] the completed Q, max_n the most visits. */
static void improved_by_hand(const float *q, uint32_t max_n, float c_scale, double *pi)
{
	double lo = q[0], hi = q[0], sum = 0.0;

	for (int a = 1; a < 4; a++) {
		lo = q[a] < lo ? q[a] : lo;
		hi = q[a] > hi ? q[a] : hi;
	}
	for (int a = 0; a < 4; a++) {
		double sigma = (50.0 + max_n) * c_scale * (q[a] - lo) / (hi - lo);

		pi[a] = ROOT_P[a] * exp(sigma);
		sum += pi[a];
	}
	for (int a = 0; a < 4; a++)
		pi[a] /= sum;
}

/* The bandit from its start searched with sims simulations of eval_bandit (m considered,
 * c_scale, seed 1, no noise); the root's visit counts in visits[4]. The caller destroys the
 * tree. */
static struct az_tree *bandit_search(uint32_t m, float c_scale, uint32_t sims, uint32_t *visits)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_tree *t;

	bandit_init(s);
	t = gumbel_tree(&bandit_game, s, m, c_scale, 1, 0);
	assert_int_equal(az_mcts_search(t, sims, eval_bandit, NULL), 0);
	az_tree_root_children(t, visits, NULL, NULL);
	return t;
}

/* Every arm visited once (m 4, budget 4: one round): completed Q = the arms' values. */
static void test_improved_policy_all_visited(void **unused)
{
	uint32_t visits[4];
	float pi[4];
	double want[4];
	struct az_tree *t;

	(void)unused;
	t = bandit_search(4, 0.1f, 5, visits);
	for (int a = 0; a < 4; a++)
		assert_int_equal(visits[a], 1);
	az_tree_policy_target(t, pi);
	improved_by_hand(ARM, 1, 0.1f, want);
	for (int a = 0; a < 4; a++)
		assert_float_equal(pi[a], want[a], 1e-5);
	/* noise off: the winner is the best logit + sigma among the equally visited: arm 3
	 * (ln 0.4 + 5.1 * 0.75 = 2.91 against arm 0's ln 0.1 + 5.1 = 2.80) */
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), 3);
	assert_tree_ok(t);
	az_tree_destroy(t);
}

/* Two arms considered (the top 2 priors, arms 3 and 2), one visit each: the other two are
 * completed with the mixed value (v_raw + 2 * sum P q / sum P) / 3 over the visited two. */
static void test_improved_policy_mixed_value(void **unused)
{
	uint8_t cons[4];
	uint32_t visits[4];
	float pi[4], q[4];
	double want[4];
	struct az_tree *t;
	double vmix = (ROOT_V + 2.0 * (0.3 * ARM[2] + 0.4 * ARM[3]) / (0.3 + 0.4)) / 3.0;

	(void)unused;
	t = bandit_search(2, 0.1f, 3, visits);
	assert_int_equal(az_tree_gumbel_considered(t, cons, NULL), 2);
	assert_true(cons[2] && cons[3] && !cons[0] && !cons[1]);
	assert_int_equal(visits[2], 1);
	assert_int_equal(visits[3], 1);
	az_tree_policy_target(t, pi);
	q[0] = q[1] = (float)vmix;
	q[2] = ARM[2];
	q[3] = ARM[3];
	improved_by_hand(q, 1, 0.1f, want);
	for (int a = 0; a < 4; a++)
		assert_float_equal(pi[a], want[a], 1e-5);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), 3);
	az_tree_destroy(t);
}

/* One leaf at a time, the visits follow the schedule: m 4 and budget 8 (s4_8 above) give the
 * two best arms 3 visits each and the other two 1; the two best are arms 0 and 3 (c_scale 1:
 * Q dominates), and the winner the better of them, arm 0. */
static void test_visits_follow_schedule(void **unused)
{
	uint32_t visits[4];
	struct az_tree *t;

	(void)unused;
	t = bandit_search(4, 1.0f, 9, visits);
	assert_int_equal(visits[0], 3);
	assert_int_equal(visits[1], 1);
	assert_int_equal(visits[2], 1);
	assert_int_equal(visits[3], 3);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), 0);
	assert_tree_ok(t);
	az_tree_destroy(t);
}

/* ---- MCTS-Solver at the root ---- */

/* A Gumbel search (m 16, c_scale 1, this seed) of sims simulations at the tic-tac-toe position
 * after moves, which proves the root's value to be v. The caller destroys the tree. */
static struct az_tree *proven_root(const char *moves, uint64_t seed, uint32_t sims, int v)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_tree *t;
	int got;

	ttt_position(moves, s);
	t = gumbel_tree(ttt, s, 16, 1.0f, seed, 1);
	assert_int_equal(search(t, ttt, sims), 0);
	assert_true(az_tree_root_proven(t, &got));
	assert_int_equal(got, v);
	return t;
}

/* X to move with a win in one (square 3): the root is proven, the win is played and the
 * target is all on it. */
static void test_solver_win_played(void **unused)
{
	float pi[AZ_GAME_ACTIONS_MAX];
	struct az_tree *t;

	(void)unused;
	t = proven_root("1425", 7, 32, 1);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), 2);
	assert_int_equal(az_tree_pick(t, 1.0f, NULL), 2);
	az_tree_policy_target(t, pi);
	assert_float_equal(pi[2], 1.0f, 1e-6);
	az_tree_destroy(t);
}

/* O to move must block square 3: every other move is a proven loss once searched (8
 * simulations: one round over the 7 moves). The block is played, the target gives the losses
 * 0, and the next search's considered actions leave them out. */
static void test_solver_losses_dropped(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX], cons[AZ_GAME_ACTIONS_MAX];
	float pi[AZ_GAME_ACTIONS_MAX];
	struct az_tree *t;
	struct eval_ctx ec = {.g = ttt};

	(void)unused;
	ttt_position("152", s);
	t = gumbel_tree(ttt, s, 16, 1.0f, 3, 1);
	assert_int_equal(az_mcts_search(t, 8, eval_uniform, &ec), 0);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), 2);
	az_tree_policy_target(t, pi);
	assert_float_equal(pi[2], 1.0f, 1e-6); /* the only move that does not lose */
	assert_int_equal(az_mcts_search(t, 16, eval_uniform, &ec), 0);
	assert_int_equal(az_tree_gumbel_considered(t, cons, NULL), 1);
	assert_true(cons[2]);
	assert_int_equal(az_tree_pick(t, 0.0f, NULL), 2);
	assert_tree_ok(t);
	az_tree_destroy(t);
}

/* O to move against two threats (X 1 9 7, O 5 3): every move loses, all children carry the
 * exact value -1. The target spreads evenly over them; it was NaN when sigma's rescale divided
 * by max - min = 0 (a span of 1e-8 added to -1 is -1 in float). */
static void test_solver_all_lost_finite(void **unused)
{
	float pi[AZ_GAME_ACTIONS_MAX], sum = 0.0f;
	struct az_tree *t;

	(void)unused;
	t = proven_root("15937", 9, 8, -1);
	az_tree_policy_target(t, pi);
	for (int a = 0; a < 9; a++) {
		assert_true(isfinite(pi[a]));
		sum += pi[a];
	}
	assert_float_equal(sum, 1.0f, 1e-5);
	assert_float_equal(pi[1], 0.25f, 1e-5);
	assert_true(az_tree_pick(t, 0.0f, NULL) >= 0);
	az_tree_destroy(t);
}

/* ---- leaves in flight ---- */

/* With the root expanded, four selections without answers go to four different considered
 * children (none of them busy), and the tree's invariants hold throughout. */
static void test_batch_spreads(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_leaf leaf[4];
	float pol[AZ_GAME_ACTIONS_MAX], v;
	struct az_tree *t;
	struct eval_ctx ec = {.g = ttt};

	(void)unused;
	ttt_position("", s);
	t = gumbel_tree(ttt, s, 8, 1.0f, 5, 1);
	az_tree_set_target(t, 33);
	assert_int_equal(az_tree_select(t, &leaf[0]), AZ_SELECT_EVAL); /* the root */
	eval_uniform(&ec, leaf[0].state, pol, &v, NULL);
	az_tree_expand(t, leaf[0].node, pol, v);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(az_tree_select(t, &leaf[i]), AZ_SELECT_EVAL);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(leaf[i].node, leaf[j].node);
	}
	assert_int_equal(az_tree_inflight(t), 4);
	assert_tree_ok(t);
	for (int i = 0; i < 4; i++) {
		eval_uniform(&ec, leaf[i].state, pol, &v, NULL);
		az_tree_expand(t, leaf[i].node, pol, v);
	}
	assert_int_equal(az_mcts_search(t, 33, eval_uniform, &ec), 0);
	assert_int_equal(az_tree_root_visits(t), 33);
	assert_tree_ok(t);
	az_tree_destroy(t);
}

/* ---- golden self-play transcript ---- */

/* One game: 16 fresh simulations a move (az_tree_sims_target), Gumbel noise on, tree reuse,
 * the sequential-halving winner played. Each line: the move (1-9), the root's visit counts
 * for cells 1..9, and the improved policy target in hundredths. */
static int gumbel_move(struct az_tree *t, int ply)
{
	(void)ply;
	assert_int_equal(search(t, ttt, az_tree_sims_target(t, 16, 1)), 0);
	return az_tree_pick(t, 0.0f, NULL);
}

static void gumbel_transcript(char *out, size_t len)
{
	uint8_t s[AZ_GAME_STATE_MAX];

	ttt->init(s);
	ttt_transcript(gumbel_tree(ttt, s, 16, 0.1f, 2024, 1), gumbel_move, 1,
		       "# tic-tac-toe Gumbel self-play: seed 2024, 16 fresh sims a move, m 16, "
		       "c_scale 0.1\n# move: visits of cells 1-9 | target x 100\n",
		       out, len);
}

static void test_golden_gumbel_selfplay(void **unused)
{
	char got[4096], again[4096];

	(void)unused;
	gumbel_transcript(got, sizeof(got));
	gumbel_transcript(again, sizeof(again));
	assert_string_equal(got, again); /* deterministic in-process */
	assert_golden(AZ_GOLDEN_DIR "/ttt_gumbel_selfplay.txt", got);
}

/* ---- determinism ---- */

static void run_seeded(uint64_t seed, uint32_t *visits, float *pi, int *action, float *noise)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	struct az_tree *t;
	struct eval_ctx ec = {.g = ttt};

	ttt_position("", s);
	t = gumbel_tree(ttt, s, 16, 1.0f, seed, 1);
	assert_int_equal(az_mcts_search(t, 24, eval_uniform, &ec), 0);
	az_tree_gumbel_considered(t, NULL, noise);
	az_tree_root_children(t, visits, NULL, NULL);
	az_tree_policy_target(t, pi);
	*action = az_tree_pick(t, 0.0f, NULL);
	az_tree_destroy(t);
}

/* The same seed gives the same noise, visits, target and move; another seed other noise. */
static void test_deterministic_seed(void **unused)
{
	uint32_t v1[9], v2[9];
	float p1[9], p2[9], n1[9], n2[9];
	int a1, a2;

	(void)unused;
	run_seeded(42, v1, p1, &a1, n1);
	run_seeded(42, v2, p2, &a2, n2);
	assert_memory_equal(v1, v2, sizeof(v1));
	assert_memory_equal(p1, p2, sizeof(p1));
	assert_memory_equal(n1, n2, sizeof(n1));
	assert_int_equal(a1, a2);
	run_seeded(43, v2, p2, &a2, n2);
	assert_memory_not_equal(n1, n2, sizeof(n1));
}

AZ_TEST_MAIN(cmocka_unit_test(test_schedule_by_hand),
	     cmocka_unit_test(test_improved_policy_all_visited),
	     cmocka_unit_test(test_improved_policy_mixed_value),
	     cmocka_unit_test(test_visits_follow_schedule),
	     cmocka_unit_test(test_solver_win_played), cmocka_unit_test(test_solver_losses_dropped),
	     cmocka_unit_test(test_solver_all_lost_finite), cmocka_unit_test(test_batch_spreads),
	     cmocka_unit_test(test_deterministic_seed),
	     cmocka_unit_test(test_golden_gumbel_selfplay))
