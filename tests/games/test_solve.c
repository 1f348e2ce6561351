/* SPDX-License-Identifier: MIT */
/* The exact solver and the enumerator: known tic-tac-toe values, optimal-move masks, the census
 * of solved states cross-checked with a memo-free negamax, and Connect Four end-games checked
 * against the scores of the benchmark file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "games/game.h"
#include "tests/games/perft.h"
#include "tests/test_util.h"

static const struct az_game *T = &az_game_tictactoe;

/* Value and optimal mask by the reference (negamax). */
static int brute_moves(const struct az_game *g, const uint8_t *state, uint8_t *optimal)
{
	uint8_t child[AZ_GAME_STATE_MAX], mask[AZ_GAME_ACTIONS_MAX];
	int vals[AZ_GAME_ACTIONS_MAX], best = -1;

	memset(optimal, 0, g->actions);
	if (!g->legal(state, mask))
		return negamax(g, state);
	for (uint32_t a = 0; a < g->actions; a++) {
		if (!mask[a])
			continue;
		az_game_after(g, state, (int)a, child);
		vals[a] = -negamax(g, child);
		if (vals[a] > best)
			best = vals[a];
	}
	for (uint32_t a = 0; a < g->actions; a++)
		optimal[a] = mask[a] && vals[a] == best;
	return best;
}

static void test_start(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX], opt[9];

	T->init(s);
	assert_int_equal(az_solve(T, s, opt), 0);
	for (int a = 0; a < 9; a++) /* every opening move draws */
		assert_int_equal(opt[a], 1);
	assert_int_equal(az_solve(T, s, NULL), 0);
}

static void test_win_in_one(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX], opt[9], ref[9];

	/* X 1 2, O 4 5, X to move: only 3 wins (6 merely blocks O's row) */
	play(T, s, "1425");
	assert_int_equal(az_solve(T, s, opt), 1);
	for (int a = 0; a < 9; a++)
		assert_int_equal(opt[a], a == 2);
	assert_int_equal(brute_moves(T, s, ref), 1);
	assert_memory_equal(opt, ref, sizeof(opt));
	/* X to move with two lines to complete (7 and 9) and O threatening nothing: both win
	 * at once, and the last free cell (8) wins too, since O cannot block both threats */
	play(T, s, "123456");
	assert_int_equal(az_solve(T, s, opt), 1);
	assert_int_equal(brute_moves(T, s, ref), 1);
	assert_memory_equal(opt, ref, sizeof(opt));
	assert_int_equal(opt[6] + opt[7] + opt[8], 3);
}

static void test_lost(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX], opt[9], mask[9];

	/* X 1 5 7 against O 2 9: X threatens 3 and 4, O to move cannot stop both */
	play(T, s, "12597");
	assert_int_equal(az_solve(T, s, opt), -1);
	assert_int_equal(T->legal(s, mask), 4);
	assert_memory_equal(opt, mask, sizeof(opt));
}

static void test_terminal_root(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX], opt[9];

	memset(opt, 1, sizeof(opt));
	play(T, s, "14253");
	assert_int_equal(az_solve(T, s, opt), -1);
	for (int a = 0; a < 9; a++)
		assert_int_equal(opt[a], 0);
	play(T, s, "123546879");
	assert_int_equal(az_solve(T, s, opt), 0);
}

struct census {
	int count[3]; /* states with value -1, 0, +1 for the side to move */
	int checked;
};

static void solve_and_check(void *ctx, const void *state, const char *moves)
{
	struct census *c = ctx;
	uint8_t opt[9], ref[9];
	int v = az_solve(T, state, opt);

	assert_true(v >= -1 && v <= 1);
	c->count[v + 1]++;
	/* the reference is slow near the start; check the memo-free values everywhere, the
	 * per-move masks on all states past the second ply */
	if (strlen(moves) > 2) {
		assert_int_equal(brute_moves(T, state, ref), v);
		assert_memory_equal(opt, ref, sizeof(opt));
		c->checked++;
	} else {
		assert_int_equal(negamax(T, state), v);
	}
}

static void test_census(void **unused)
{
	struct census c = { .checked = 0 };

	assert_int_equal(az_game_enumerate(T, 1, solve_and_check, &c), 4520);
	assert_int_equal(c.count[0] + c.count[1] + c.count[2], 4520);
	assert_true(c.checked > 4000);
	/* pinned after the cross-check above: non-terminal states by value for the side to move */
	assert_int_equal(c.count[2], 2836); /* win */
	assert_int_equal(c.count[1], 1052); /* draw */
	assert_int_equal(c.count[0], 632);  /* loss */
}

static void hash_moves(void *ctx, const void *state, const char *moves)
{
	uint64_t *h = ctx;

	for (const char *p = moves; *p; p++)
		*h = (*h ^ (uint8_t)*p) * 1099511628211ull;
	*h = (*h ^ '\n') * 1099511628211ull;
}

static void first_path(void *ctx, const void *state, const char *moves)
{
	char (*paths)[16] = ctx;
	int i = 0;

	while (paths[i][0])
		i++;
	if (i < 4)
		snprintf(paths[i], sizeof(paths[i]), "%s", moves);
}

static void test_enumerate_order(void **unused)
{
	uint64_t h1 = 14695981039346656037ull, h2 = h1;
	char paths[5][16] = { "" };

	assert_int_equal(az_game_enumerate(T, 0, hash_moves, &h1), 5478);
	assert_int_equal(az_game_enumerate(T, 0, hash_moves, &h2), 5478);
	assert_true(h1 == h2);
	/* depth first, actions in increasing order */
	az_game_enumerate(T, 0, first_path, paths);
	assert_string_equal(paths[0], "-");
	assert_string_equal(paths[1], "1");
	assert_string_equal(paths[2], "12");
	assert_string_equal(paths[3], "123");
}

/* Connect Four end-games of the benchmark file (at most 13 empty cells left): the sign of the
 * published score is the value for the side to move. */
static void test_connect4_endgames(void **unused)
{
	const struct az_game *g = &az_game_connect4;
	const char *dir = getenv("AZ_SHARED_DIR");
	char path[1024], line[256], moves[64];
	uint8_t s[AZ_GAME_STATE_MAX], opt[7];
	int score, checked = 0, wins = 0;
	FILE *f = NULL;

	if (dir) {
		snprintf(path, sizeof(path), "%s/data/connect4/Test_L3_R1", dir);
		f = fopen(path, "r");
	}
	if (!f)
		f = fopen("/work/shared/data/connect4/Test_L3_R1", "r");
	if (!f)
		skip();
	while (fgets(line, sizeof(line), f)) {
		int v, sign;

		assert_int_equal(sscanf(line, "%63s %d", moves, &score), 2);
		play(g, s, moves);
		v = az_solve(g, s, opt);
		sign = score > 0 ? 1 : score < 0 ? -1 : 0;
		if (v != sign)
			fail_msg("%s: solved %d, published score %d", moves, v, score);
		if (v > 0) {
			/* a winning move leads to a position lost for the opponent */
			for (int a = 0; a < 7; a++) {
				uint8_t child[AZ_GAME_STATE_MAX];

				if (!opt[a])
					continue;
				az_game_after(g, s, a, child);
				assert_int_equal(az_solve(g, child, NULL), -1);
			}
			wins++;
		}
		checked++;
	}
	fclose(f);
	assert_int_equal(checked, 1000);
	assert_int_equal(wins, 327);
}

AZ_TEST_MAIN(cmocka_unit_test(test_start), cmocka_unit_test(test_win_in_one),
	     cmocka_unit_test(test_lost), cmocka_unit_test(test_terminal_root),
	     cmocka_unit_test(test_census), cmocka_unit_test(test_enumerate_order),
	     cmocka_unit_test(test_connect4_endgames))
