/* SPDX-License-Identifier: MIT */
/* The exact Connect Four solver: hand positions, a brute-force minimax on random end games,
 * and Pons' benchmark scores (shared/data/connect4): every position of the three easy sets, a
 * prefix of the others (a few seconds in all); AZ_C4_SOLVER_FULL=1 checks all 6,000 (Begin-Hard
 * alone takes over an hour here), AZ_C4_SOLVER_LIMIT=N the first N of each set. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "games/connect4_solver.h"
#include "games/game.h"
#include "base/rng.h"
#include "tests/test_util.h"

static const struct az_game *const g = &az_game_connect4;

static void position(const char *moves, void *state)
{
	char err[128];

	g->init(state);
	assert_true(az_game_play_moves(g, state, moves, err, sizeof(err)) >= 0);
}

static struct az_c4_solver *solver(void)
{
	struct az_c4_solver *s = NULL;

	assert_int_equal(az_c4_solver_create(22, &s), 0);
	return s;
}

static void test_hand_positions(void **unused)
{
	struct az_c4_solver *s = solver();
	uint8_t st[AZ_GAME_STATE_MAX];
	int8_t out[7];
	int score, outcome;

	(void)unused;
	/* X wins in column 1 with its 4th stone: 22 - 4. */
	position("121314", st);
	assert_int_equal(az_c4_solver_score(s, st, &score), 0);
	assert_int_equal(score, 18);
	assert_int_equal(az_c4_solver_move_outcomes(s, st, out, &outcome), 0);
	assert_int_equal(outcome, 1);
	assert_int_equal(out[0], 1);
	/* O threatens column 5 and X cannot win at once: every other move loses. */
	position("727314", st);
	assert_int_equal(az_c4_solver_move_outcomes(s, st, out, &outcome), 0);
	for (int c = 0; c < 7; c++)
		if (c != 4)
			assert_int_equal(out[c], -1);
	/* Game over and bad sizes are refused. */
	position("1212121", st);
	assert_int_equal(az_c4_solver_score(s, st, &score), -EINVAL);
	assert_int_equal(az_c4_solver_outcome(s, st, &outcome), -EINVAL);
	{
		struct az_c4_solver *bad = NULL;

		assert_int_equal(az_c4_solver_create(9, &bad), -EINVAL);
		assert_null(bad);
	}
	az_c4_solver_destroy(s);
}

/* Plain minimax over the game interface, in Pons' score convention. */
static int brute(const uint8_t *st, int plies)
{
	uint8_t mask[7], c[AZ_GAME_STATE_MAX];
	int best = -100;
	float v;

	g->legal(st, mask);
	for (int a = 0; a < 7; a++) {
		int sc;

		if (!mask[a])
			continue;
		memcpy(c, st, g->state_bytes);
		g->apply(c, a);
		if (g->terminal(c, &v))
			sc = v < 0 ? (43 - plies) / 2 : 0; /* the mover won, or the board is full */
		else
			sc = -brute(c, plies + 1);
		if (sc > best)
			best = sc;
	}
	return best;
}

/* Random games stopped 6 stones before the board is full: solver = brute force, and each
 * move's outcome = the sign of minus the brute-force score after it. */
static void test_brute_force(void **unused)
{
	struct az_c4_solver *s = solver();
	uint8_t st[AZ_GAME_STATE_MAX], mask[7], c[AZ_GAME_STATE_MAX];
	struct az_rng rng;
	int checked = 0;
	float v;

	(void)unused;
	az_rng_seed(&rng, 42);
	for (int game = 0; game < 300; game++) {
		int plies = 0, ended = 0, score, outcome;
		int8_t out[7];

		g->init(st);
		/* Random moves that do not end the game, so that most games get that far. */
		while (plies < 36 && !ended) {
			uint8_t quiet[7];
			int n = 0, k;

			g->legal(st, mask);
			for (int a = 0; a < 7; a++) {
				memcpy(c, st, g->state_bytes);
				quiet[a] = mask[a] && (g->apply(c, a), !g->terminal(c, &v));
				n += quiet[a];
			}
			if (n == 0) {
				ended = 1;
				break;
			}
			k = (int)az_rng_below(&rng, (uint32_t)n);
			for (int a = 0; a < 7; a++)
				if (quiet[a] && k-- == 0) {
					g->apply(st, a);
					break;
				}
			plies++;
		}
		if (ended)
			continue;
		assert_int_equal(az_c4_solver_score(s, st, &score), 0);
		assert_int_equal(score, brute(st, plies));
		assert_int_equal(az_c4_solver_move_outcomes(s, st, out, &outcome), 0);
		assert_int_equal(outcome, (score > 0) - (score < 0));
		g->legal(st, mask);
		for (int a = 0; a < 7; a++) {
			int want;

			if (!mask[a]) {
				assert_int_equal(out[a], -2);
				continue;
			}
			memcpy(c, st, g->state_bytes);
			g->apply(c, a);
			want = g->terminal(c, &v) ? (v < 0 ? 1 : 0) : -((brute(c, plies + 1) > 0) -
								       (brute(c, plies + 1) < 0));
			assert_int_equal(out[a], want);
		}
		checked++;
	}
	assert_true(checked > 100);
	az_c4_solver_destroy(s);
}

/* One benchmark file: every line's score, exactly; at most `limit` lines (0: all). */
static void check_set(const char *name, int limit)
{
	const char *dir = getenv("AZ_SHARED_DIR");
	char path[1024], line[256], err[128], moves[128];
	struct az_c4_solver *s;
	uint8_t st[AZ_GAME_STATE_MAX];
	struct timespec t0, t1;
	int n = 0, bad = 0, want, got;
	double secs;
	FILE *f;

	if (!dir)
		dir = "../shared";
	snprintf(path, sizeof(path), "%s/data/connect4/%s", dir, name);
	f = fopen(path, "r");
	if (!f) {
		print_message("skipping %s: cannot open %s\n", name, path);
		skip();
	}
	if (getenv("AZ_C4_SOLVER_FULL"))
		limit = 0;
	if (getenv("AZ_C4_SOLVER_LIMIT"))
		limit = atoi(getenv("AZ_C4_SOLVER_LIMIT"));
	s = solver();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((limit == 0 || n < limit) && fgets(line, sizeof(line), f)) {
		assert_int_equal(sscanf(line, "%127s %d", moves, &want), 2);
		g->init(st);
		assert_true(az_game_play_moves(g, st, moves, err, sizeof(err)) > 0);
		assert_int_equal(az_c4_solver_score(s, st, &got), 0);
		if (got != want) {
			print_message("%s: %s: solver %d, file %d\n", name, moves, got, want);
			bad++;
		}
		n++;
		if (n % 100 == 0) /* progress of the long sets */
			print_message("%s: %d positions so far, %d mismatches\n", name, n, bad);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fclose(f);
	secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	print_message("%s: %d positions, %d mismatches, %.3f s (%.2f ms each), %llu nodes\n", name,
		      n, bad, secs, 1e3 * secs / (n ? n : 1),
		      (unsigned long long)az_c4_solver_nodes(s));
	assert_true(n > 0);
	assert_int_equal(bad, 0);
	az_c4_solver_destroy(s);
}

static void test_end_easy(void **unused) { (void)unused; check_set("Test_L3_R1", 0); }
static void test_middle_easy(void **unused) { (void)unused; check_set("Test_L2_R1", 0); }
static void test_middle_medium(void **unused) { (void)unused; check_set("Test_L2_R2", 200); }
static void test_begin_easy(void **unused) { (void)unused; check_set("Test_L1_R1", 0); }
static void test_begin_medium(void **unused) { (void)unused; check_set("Test_L1_R2", 10); }
static void test_begin_hard(void **unused) { (void)unused; check_set("Test_L1_R3", 1); }

AZ_TEST_MAIN(cmocka_unit_test(test_hand_positions), cmocka_unit_test(test_brute_force),
	     cmocka_unit_test(test_end_easy), cmocka_unit_test(test_middle_easy),
	     cmocka_unit_test(test_middle_medium), cmocka_unit_test(test_begin_easy),
	     cmocka_unit_test(test_begin_medium), cmocka_unit_test(test_begin_hard))
