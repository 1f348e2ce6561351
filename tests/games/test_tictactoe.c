/* SPDX-License-Identifier: MIT */
/* Tic-tac-toe rules: perft and game counts, wins and draws with the sign for the side to move,
 * reachable states, the eight symmetries, notation and the move-string player's errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "games/game.h"
#include "tests/games/perft.h"
#include "tests/test_util.h"

static const struct az_game *G = &az_game_tictactoe;

/* Complete games by result for the first player: [0] X wins, [1] O wins, [2] draws. */
static void count_games(const uint8_t *state, uint64_t games[3])
{
	uint8_t child[AZ_GAME_STATE_MAX], mask[9];
	float v;

	if (G->terminal(state, &v)) {
		/* v is for the side to move; the first player is to move after an even ply count */
		float first = G->to_move(state) == 0 ? v : -v;

		games[first > 0.5f ? 0 : first < -0.5f ? 1 : 2]++;
		return;
	}
	assert_true(G->legal(state, mask) > 0);
	for (int a = 0; a < 9; a++) {
		if (!mask[a])
			continue;
		az_game_after(G, state, a, child);
		count_games(child, games);
	}
}

static void test_descriptor(void **unused)
{
	check_sizes(G, "tictactoe", 9, 18, 8, 9);
	assert_true(G->state_bytes <= 16);
	/* The registry lookups are tested in test_registry.c (this test links no Tangled). */
	assert_string_equal(az_game_desc_tictactoe.name, "tictactoe");
	assert_string_equal(az_game_desc_tictactoe.alias, "ttt");
	assert_ptr_equal(az_game_desc_game(&az_game_desc_tictactoe), G);
	assert_int_equal(az_game_desc_tictactoe.nopts, 0);
	assert_int_equal(az_game_desc_tictactoe.defaults.hidden, 64);
	assert_string_equal(az_game_side_name(G, 0), "X");
	assert_string_equal(az_game_side_name(G, 1), "O");
}

static void test_perft(void **unused)
{
	static const uint64_t expect[6] = { 1, 9, 72, 504, 3024, 15120 };
	uint8_t s[AZ_GAME_STATE_MAX];
	uint64_t games[3] = { 0 };

	G->init(s);
	for (int d = 0; d < 6; d++)
		assert_int_equal(perft(G, s, d), expect[d]);
	count_games(s, games);
	assert_int_equal(games[0] + games[1] + games[2], 255168);
	/* the known split: 131,184 won by X, 77,904 by O, 46,080 drawn */
	assert_int_equal(games[0], 131184);
	assert_int_equal(games[1], 77904);
	assert_int_equal(games[2], 46080);
}

static void expect_result(const char *moves, int to_move, float value)
{
	uint8_t s[AZ_GAME_STATE_MAX], mask[9], before[AZ_GAME_STATE_MAX];
	char prefix[16];
	float v = 99.0f;

	play(G, s, moves);
	assert_int_equal(G->terminal(s, &v), 1);
	assert_true(v == value);
	assert_int_equal(G->terminal(s, NULL), 1);
	assert_int_equal(G->to_move(s), to_move);
	memset(mask, 7, sizeof(mask));
	assert_int_equal(G->legal(s, mask), 0);
	for (int a = 0; a < 9; a++)
		assert_int_equal(mask[a], 0);
	/* one move earlier the game was still on */
	snprintf(prefix, sizeof(prefix), "%.*s", (int)strlen(moves) - 1, moves);
	play(G, before, prefix);
	assert_int_equal(G->terminal(before, &v), 0);
	assert_true(G->legal(before, mask) > 0);
}

static void test_terminal(void **unused)
{
	expect_result("14253", 1, -1.0f);    /* X: top row */
	expect_result("41526", 1, -1.0f);    /* X: middle row */
	expect_result("12457", 1, -1.0f);    /* X: left column */
	expect_result("21538", 1, -1.0f);    /* X: middle column */
	expect_result("12569", 1, -1.0f);    /* X: main diagonal */
	expect_result("32547", 1, -1.0f);    /* X: anti-diagonal */
	expect_result("172869", 0, -1.0f);   /* O: bottom row */
	expect_result("132649", 0, -1.0f);   /* O: right column */
	expect_result("123456879", 1, -1.0f); /* X wins with the last cell */
	expect_result("123546879", 1, 0.0f);  /* full board, no line: draw */
}

static void test_format(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	char buf[128], small[8];
	int n;

	play(G, s, "519");
	n = G->format(s, buf, sizeof(buf));
	assert_string_equal(buf, "O . .\n. X .\n. . X\nO to move\n");
	assert_int_equal(n, (int)strlen(buf));
	play(G, s, "51");
	G->format(s, buf, sizeof(buf));
	assert_string_equal(buf, "O . .\n. X .\n. . .\nX to move\n");
	play(G, s, "123546879");
	G->format(s, buf, sizeof(buf));
	assert_string_equal(buf, "X O X\nX O O\nO X X\ndraw\n");
	play(G, s, "14253");
	G->format(s, buf, sizeof(buf));
	assert_string_equal(buf, "X X X\nO O .\n. . .\nX wins\n");
	/* snprintf rules: truncated, NUL-terminated, full length returned */
	assert_int_equal(G->format(s, small, sizeof(small)), (int)strlen(buf));
	assert_int_equal(strlen(small), sizeof(small) - 1);
}

static void test_notation(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];

	check_digit_notation(G, 9, s);
	assert_int_equal(G->parse_action(s, " 5\n"), 4);
	assert_int_equal(G->parse_action(s, "10"), -EINVAL);
	play(G, s, "5");
	assert_int_equal(G->parse_action(s, "5"), -EINVAL); /* occupied */
	assert_int_equal(G->parse_action(s, "6"), 5);
	play(G, s, "14253");
	assert_int_equal(G->parse_action(s, "9"), -EINVAL); /* game over */
}

static void expect_error(const char *moves, int ret, const char *msg)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	char err[128] = "";

	assert_int_equal(az_game_play_moves(G, s, moves, err, sizeof(err)), ret);
	assert_string_equal(err, msg);
}

static void test_play_moves(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX], start[AZ_GAME_STATE_MAX];
	char err[16] = "";

	G->init(start);
	assert_int_equal(az_game_play_moves(G, s, "-", err, sizeof(err)), 0);
	assert_memory_equal(s, start, G->state_bytes);
	assert_int_equal(az_game_play_moves(G, s, "", err, sizeof(err)), 0);
	assert_int_equal(az_game_play_moves(G, s, "5", NULL, 0), 1);
	assert_int_equal(G->to_move(s), 1);
	expect_error("155", -EINVAL, "move 3 ('5'): cell occupied");
	expect_error("12x", -EINVAL, "move 3 ('x'): not a cell (1-9)");
	expect_error("0", -EINVAL, "move 1 ('0'): not a cell (1-9)");
	expect_error("12 3", -EINVAL, "move 3 (' '): not a cell (1-9)");
	expect_error("--", -EINVAL, "move 1 ('-'): not a cell (1-9)");
	expect_error("142536", -EINVAL, "move 6 ('6'): game already over");
	/* a short err buffer is truncated, never overrun */
	assert_int_equal(az_game_play_moves(G, s, "155", err, sizeof(err)), -EINVAL);
	assert_int_equal(strlen(err), sizeof(err) - 1);
}

struct census {
	int states, terminal;
};

static void visit(void *ctx, const void *state, const char *moves)
{
	struct census *c = ctx;
	uint8_t s[AZ_GAME_STATE_MAX];

	/* the reported path leads to the reported state */
	play(G, s, moves);
	assert_memory_equal(s, state, G->state_bytes);
	c->states++;
	c->terminal += G->terminal(state, NULL);
}

static void test_enumerate(void **unused)
{
	struct census all = { 0 }, live = { 0 };

	assert_int_equal(az_game_enumerate(G, 0, visit, &all), 5478);
	assert_int_equal(all.states, 5478);
	assert_int_equal(all.terminal, 5478 - 4520);
	assert_int_equal(az_game_enumerate(G, 1, visit, &live), 4520);
	assert_int_equal(live.states, 4520);
	assert_int_equal(live.terminal, 0);
	assert_int_equal(az_game_enumerate(G, 0, NULL, NULL), 5478);
}

static void terminal_after_at(void *ctx, const void *state, const char *moves)
{
	(void)moves;
	check_terminal_after(G, state, ctx);
}

/* terminal_after (MCTS-Solver's check at each expansion) agrees with playing each legal move and
 * asking terminal(), at every one of the 4,520 positions where the game goes on. */
static void test_terminal_after(void **unused)
{
	struct after_counts c = { 0 };
	uint8_t s[AZ_GAME_STATE_MAX];
	int8_t tv[64];

	(void)unused;
	assert_non_null(G->terminal_after);
	assert_int_equal(az_game_enumerate(G, 1, terminal_after_at, &c), 4520);
	assert_true(c.decisive > 1000 && c.draws > 0); /* wins and draws were both checked */
	play(G, s, "12539"); /* X holds 1 5 9: over */
	assert_int_equal(G->terminal_after(s, tv), 0); /* over: nothing to flag */
}

/* ---- symmetries ---- */

/* The cell permutation of symmetry k, read off the policy transform. */
static void perm_of(int k, int perm[9])
{
	for (int c = 0; c < 9; c++) {
		float in[9] = { 0 }, out[9];
		int hits = 0;

		in[c] = 1.0f;
		for (int i = 0; i < 9; i++)
			out[i] = -1.0f;
		G->symmetry(k, NULL, NULL, in, out);
		for (int i = 0; i < 9; i++) {
			assert_true(out[i] == 0.0f || out[i] == 1.0f); /* every entry written */
			if (out[i] == 1.0f) {
				perm[c] = i;
				hits++;
			}
		}
		assert_int_equal(hits, 1);
	}
}

static int find_perm(int perms[8][9], const int p[9])
{
	for (int k = 0; k < 8; k++)
		if (memcmp(perms[k], p, sizeof(perms[k])) == 0)
			return k;
	return -1;
}

static void test_symmetry_group(void **unused)
{
	static const int lines[8][3] = { { 0, 1, 2 }, { 3, 4, 5 }, { 6, 7, 8 }, { 0, 3, 6 },
					 { 1, 4, 7 }, { 2, 5, 8 }, { 0, 4, 8 }, { 2, 4, 6 } };
	int perms[8][9];

	for (int k = 0; k < 8; k++) {
		int seen[9] = { 0 };

		perm_of(k, perms[k]);
		for (int c = 0; c < 9; c++)
			seen[perms[k][c]]++;
		for (int c = 0; c < 9; c++)
			assert_int_equal(seen[c], 1); /* bijection */
		assert_int_equal(perms[k][4], 4); /* the centre stays */
		if (k == 0)
			for (int c = 0; c < 9; c++)
				assert_int_equal(perms[0][c], c);
		for (int j = 0; j < k; j++) /* eight distinct elements */
			assert_memory_not_equal(perms[j], perms[k], sizeof(perms[k]));
		/* a board symmetry maps winning lines onto winning lines */
		for (int l = 0; l < 8; l++) {
			int m[3] = { perms[k][lines[l][0]], perms[k][lines[l][1]],
				     perms[k][lines[l][2]] };
			int found = 0;

			for (int l2 = 0; l2 < 8; l2++) {
				int in = 0;

				for (int i = 0; i < 3; i++)
					for (int j = 0; j < 3; j++)
						in += m[i] == lines[l2][j];
				found += in == 3;
			}
			assert_int_equal(found, 1);
		}
	}
	/* closed under composition, and every element has an inverse */
	for (int a = 0; a < 8; a++) {
		int has_inverse = 0;

		for (int b = 0; b < 8; b++) {
			int comp[9], k;

			for (int c = 0; c < 9; c++)
				comp[c] = perms[b][perms[a][c]];
			k = find_perm(perms, comp);
			assert_true(k >= 0);
			has_inverse += k == 0;
		}
		assert_int_equal(has_inverse, 1);
	}
	/* features follow the same permutation in both planes */
	for (int k = 0; k < 8; k++) {
		for (int i = 0; i < 18; i++) {
			float in[18] = { 0 }, out[18];
			int to = (i / 9) * 9 + perms[k][i % 9];

			in[i] = 1.0f;
			G->symmetry(k, in, out, NULL, NULL);
			for (int j = 0; j < 18; j++)
				assert_true(out[j] == (j == to ? 1.0f : 0.0f));
		}
	}
}

struct sym_check {
	int perms[8][9];
	int states;
};

/* Transform a position by playing the transformed moves, and compare with the transformed
 * encoding, legal moves, terminal status and (for every third state) the solver's answer. */
static void check_symmetric(void *ctx, const void *state, const char *moves)
{
	struct sym_check *sc = ctx;
	float f[18], fs[18], ft[18], lm[9], lms[9], om[9], oms[9], v1, v2;
	uint8_t t[AZ_GAME_STATE_MAX], mask[9], tmask[9], opt[9], topt[9];
	char tm[16];
	int solve = sc->states++ % 3 == 0, val = 0;

	G->encode(state, f);
	G->legal(state, mask);
	if (solve) {
		val = az_solve(G, state, opt);
		assert_true(val >= -1 && val <= 1);
	}
	for (int k = 0; k < 8; k++) {
		size_t n = strcmp(moves, "-") ? strlen(moves) : 0;

		for (size_t i = 0; i < n; i++)
			tm[i] = (char)('1' + sc->perms[k][moves[i] - '1']);
		tm[n] = '\0';
		play(G, t, n ? tm : "-");
		G->encode(t, ft);
		G->symmetry(k, f, fs, NULL, NULL);
		assert_memory_equal(fs, ft, sizeof(fs));
		assert_int_equal(G->terminal(t, &v2), G->terminal(state, &v1));
		G->legal(t, tmask);
		for (int c = 0; c < 9; c++)
			lm[c] = mask[c];
		G->symmetry(k, NULL, NULL, lm, lms);
		for (int c = 0; c < 9; c++)
			assert_true(lms[c] == tmask[c]);
		if (!solve)
			continue;
		assert_int_equal(az_solve(G, t, topt), val);
		for (int c = 0; c < 9; c++)
			om[c] = opt[c];
		G->symmetry(k, NULL, NULL, om, oms);
		for (int c = 0; c < 9; c++)
			assert_true(oms[c] == topt[c]);
	}
}

static void test_symmetry_positions(void **unused)
{
	struct sym_check sc = { .states = 0 };

	for (int k = 0; k < 8; k++)
		perm_of(k, sc.perms[k]);
	assert_int_equal(az_game_enumerate(G, 0, check_symmetric, &sc), 5478);
	assert_int_equal(sc.states, 5478);
}

AZ_TEST_MAIN(cmocka_unit_test(test_descriptor), cmocka_unit_test(test_perft),
	     cmocka_unit_test(test_terminal), cmocka_unit_test(test_format),
	     cmocka_unit_test(test_notation), cmocka_unit_test(test_play_moves),
	     cmocka_unit_test(test_enumerate), cmocka_unit_test(test_terminal_after),
	     cmocka_unit_test(test_symmetry_group), cmocka_unit_test(test_symmetry_positions))
