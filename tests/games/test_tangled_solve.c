/* SPDX-License-Identifier: MIT */
/* The exact Tangled solver against brute-force minimax (no table, no symmetry, the game's own
 * terminal()) on every reachable position of K3 (free tokens) and K4 (fixed tokens), and on
 * every K4 free-token position with at most two uncoloured edges; optimal-move sets; the
 * budget's "unsolved" result and resuming after it; a full table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "games/tangled/tangled.h"
#include "games/tangled/tangled_solve.h"
#include "tests/games/perft.h"
#include "tests/games/tangled_test.h"
#include "tests/test_util.h"

static const struct az_game *G;
/* dir: K4's outcome table, computed by the first setup only */
AZ_TEST_DIR_FIXTURE("/tmp/az_test_solveXXXXXX")

static void setup_game(int graph, enum az_tangled_variant variant)
{
	struct az_tangled_options o;

	az_tangled_options_default(&o);
	o.cache_dir = dir;
	G = az_test_tangled_setup(&o, graph, variant);
}

static int uncoloured(const uint8_t *st)
{
	const struct az_tangled_graph *g = az_tangled_current_graph();
	int k = 0;

	for (int e = 0; e < g->e; e++)
		k += st[g->n + e] == 0;
	return k;
}

struct check {
	struct az_tangled_solver *sym, *plain;
	int max_uncoloured;  /* positions with more uncoloured edges are skipped */
	long checked;
	long by_value[3];    /* -1, 0, +1: the comparison is not vacuous */
};

/* Value and optimal moves of one position, from both solvers, against brute force. */
static void check_one(void *ctx, const void *state, const char *moves)
{
	struct check *c = ctx;
	uint8_t mask[AZ_GAME_ACTIONS_MAX], best[AZ_GAME_ACTIONS_MAX], child[AZ_GAME_STATE_MAX];
	int want, v, w;

	if (uncoloured(state) > c->max_uncoloured)
		return;
	want = negamax(G, state);
	assert_int_equal(az_tangled_solve(c->plain, state, &v), 0);
	if (v != want)
		fail_msg("%s: plain solver %d, brute force %d", moves, v, want);
	assert_int_equal(az_tangled_solve_best(c->sym, state, &w, best), 0);
	if (w != want)
		fail_msg("%s: symmetric solver %d, brute force %d", moves, w, want);
	G->legal(state, mask);
	for (uint32_t a = 0; a < G->actions; a++) {
		if (!mask[a]) {
			assert_int_equal(best[a], 0);
			continue;
		}
		az_game_after(G, state, (int)a, child);
		int cv = negamax(G, child), keeps = -cv == want;
		if (best[a] != keeps)
			fail_msg("%s: move %u marked %d, brute force says keeps=%d", moves, a,
				 best[a], keeps);
		/* the null-window test agrees with the exact value */
		int yes;
		assert_int_equal(az_tangled_solve_at_least(c->sym, child, -want, &yes), 0);
		assert_int_equal(yes, -cv <= want);
	}
	c->checked++;
	c->by_value[want + 1]++;
}

static void check_all(int max_uncoloured, long expect_min)
{
	struct az_tangled_solve_params p;
	struct check c = {.max_uncoloured = max_uncoloured};

	az_tangled_solve_params_default(&p);
	assert_int_equal(az_tangled_solver_create(&p, &c.sym), 0);
	p.symmetry = 0;
	assert_int_equal(az_tangled_solver_create(&p, &c.plain), 0);
	assert_true(az_game_enumerate(G, 1, check_one, &c) > 0);
	assert_true(c.checked >= expect_min);
	/* wins, draws and losses all occur */
	assert_true(c.by_value[0] > 0 && c.by_value[1] > 0 && c.by_value[2] > 0);
	struct az_tangled_solve_stats st;
	az_tangled_solver_stats(c.sym, &st);
	assert_true(st.symmetries > 1);
	assert_true(st.tt_hits > 0);
	az_tangled_solver_stats(c.plain, &st);
	assert_int_equal(st.symmetries, 1);
	az_tangled_solver_destroy(c.sym);
	az_tangled_solver_destroy(c.plain);
}

static void test_k3_free_every_position(void **st)
{
	(void)st;
	setup_game(2, AZ_TANGLED_FREE);
	check_all(3, 721 - 162);
}

static void test_k4_fixed_every_position(void **st)
{
	(void)st;
	setup_game(3, AZ_TANGLED_FIXED);
	check_all(6, 4096 - 729);
}

static void test_k4_free_late_positions(void **st)
{
	(void)st;
	setup_game(3, AZ_TANGLED_FREE);
	check_all(2, 10000);
}

/* K4 with fixed tokens set up, its start position in start, and a solver with parameters p. */
static struct az_tangled_solver *k4_start(uint8_t *start, const struct az_tangled_solve_params *p)
{
	struct az_tangled_solver *s;

	setup_game(3, AZ_TANGLED_FIXED);
	G->init(start);
	assert_int_equal(az_tangled_solver_create(p, &s), 0);
	return s;
}

/* A node budget too small for the start gives -ETIMEDOUT; the same solver without a budget
 * then solves it, and agrees with a fresh one. */
static void test_budget_unsolved(void **st)
{
	struct az_tangled_solve_params p;
	struct az_tangled_solver *s, *fresh;
	uint8_t start[AZ_GAME_STATE_MAX];
	int v = 7, w;

	(void)st;
	az_tangled_solve_params_default(&p);
	p.max_nodes = 10;
	s = k4_start(start, &p);
	assert_int_equal(az_tangled_solve(s, start, &v), -ETIMEDOUT);
	assert_int_equal(v, 7); /* untouched */
	az_tangled_solver_destroy(s);
	p.max_nodes = 0;
	p.max_seconds = 1e-9;
	assert_int_equal(az_tangled_solver_create(&p, &s), 0);
	/* the clock is read every 1024 nodes: the start's tree is larger */
	assert_int_equal(az_tangled_solve(s, start, &v), -ETIMEDOUT);
	az_tangled_solver_destroy(s);
	az_tangled_solve_params_default(&p);
	assert_int_equal(az_tangled_solver_create(&p, &fresh), 0);
	assert_int_equal(az_tangled_solve(fresh, start, &w), 0);
	assert_int_equal(w, negamax(G, start));
	az_tangled_solver_destroy(fresh);
}

/* A table capped at a few entries refuses to store, and the results stay exact. */
static void test_full_table(void **st)
{
	struct az_tangled_solve_params p;
	struct az_tangled_solve_stats s1;
	struct az_tangled_solver *s;
	uint8_t start[AZ_GAME_STATE_MAX];
	int v;

	(void)st;
	az_tangled_solve_params_default(&p);
	p.max_entries = 16;
	s = k4_start(start, &p);
	assert_int_equal(az_tangled_solve(s, start, &v), 0);
	assert_int_equal(v, negamax(G, start));
	az_tangled_solver_stats(s, &s1);
	assert_true(s1.refused > 0);
	assert_true(s1.entries <= 32);
	az_tangled_solver_destroy(s);
}

static void test_terminal_state(void **st)
{
	struct az_tangled_solve_params p;
	struct az_tangled_solver *s;
	uint8_t state[AZ_GAME_STATE_MAX], best[AZ_GAME_ACTIONS_MAX];
	int v;
	float tv;

	(void)st;
	setup_game(2, AZ_TANGLED_FIXED);
	G->init(state);
	memset(state + 3, 2, 3); /* every edge green: terminal */
	assert_true(G->terminal(state, &tv));
	az_tangled_solve_params_default(&p);
	assert_int_equal(az_tangled_solver_create(&p, &s), 0);
	assert_int_equal(az_tangled_solve(s, state, &v), 0);
	assert_int_equal(v, tv > 0.5f ? 1 : tv < -0.5f ? -1 : 0);
	assert_int_equal(az_tangled_solve_best(s, state, &v, best), -EINVAL);
	az_tangled_solver_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_k3_free_every_position),
		cmocka_unit_test(test_k4_fixed_every_position),
		cmocka_unit_test(test_k4_free_late_positions),
		cmocka_unit_test(test_budget_unsolved),
		cmocka_unit_test(test_full_table),
		cmocka_unit_test(test_terminal_state),
	};

	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
