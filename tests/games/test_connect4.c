/* SPDX-License-Identifier: MIT */
/* Connect Four rules: perft, wins in all four directions (and against a naive checker over random
 * games), full columns, the drawn full board, the mirror symmetry, notation, encoding layout and
 * the benchmark positions file. */
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

static const struct az_game *G = &az_game_connect4;

static void test_descriptor(void **unused)
{
	check_sizes(G, "connect4", 7, 84, 2, 42);
}

static void test_perft(void **unused)
{
	/* 7^k up to ply 6; at ply 7 the seven sequences that filled one column lose their 7th
	 * move in it: 823,543 - 7 = 823,536 */
	static const uint64_t expect[8] = { 1, 7, 49, 343, 2401, 16807, 117649, 823536 };
	uint8_t s[AZ_GAME_STATE_MAX];

	G->init(s);
	for (int d = 0; d < 8; d++)
		assert_int_equal(perft(G, s, d), expect[d]);
}

static void expect_win(const char *moves, int to_move)
{
	uint8_t s[AZ_GAME_STATE_MAX], mask[7];
	char prefix[64];
	float v = 99.0f;

	play(G, s, moves);
	assert_int_equal(G->terminal(s, &v), 1);
	assert_true(v == -1.0f); /* the side to move has lost */
	assert_int_equal(G->to_move(s), to_move);
	assert_int_equal(G->legal(s, mask), 0);
	snprintf(prefix, sizeof(prefix), "%.*s", (int)strlen(moves) - 1, moves);
	play(G, s, prefix);
	assert_int_equal(G->terminal(s, &v), 0);
	assert_int_equal(G->legal(s, mask), 7);
}

static void test_wins(void **unused)
{
	expect_win("1212121", 1);     /* X vertical in column 1 */
	expect_win("7676767", 1);     /* X vertical in column 7 */
	expect_win("21212131", 0);    /* O vertical */
	expect_win("1122334", 1);     /* X horizontal, bottom row */
	expect_win("7766554", 1);     /* X horizontal, right end */
	expect_win("12233434474", 1); /* X diagonal rising to the right */
	expect_win("76655454414", 1); /* X diagonal rising to the left */
}

static void test_no_false_wins(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];

	/* X: rows 3-5 of column 1 and row 0 of column 2, adjacent bits if a column had no
	 * sentinel row */
	play(G, s, "21313115151");
	assert_int_equal(G->terminal(s, NULL), 0);
	/* three and a gap */
	play(G, s, "1727375");
	assert_int_equal(G->terminal(s, NULL), 0);
}

/* ---- a naive 2-D reference over random games ---- */

static int naive_four(int board[6][7], int p)
{
	static const int dir[4][2] = { { 0, 1 }, { 1, 0 }, { 1, 1 }, { 1, -1 } };

	for (int r = 0; r < 6; r++)
		for (int c = 0; c < 7; c++)
			for (int d = 0; d < 4; d++) {
				int k = 0;

				for (; k < 4; k++) {
					int rr = r + k * dir[d][0], cc = c + k * dir[d][1];

					if (rr < 0 || rr >= 6 || cc < 0 || cc >= 7 ||
					    board[rr][cc] != p)
						break;
				}
				if (k == 4)
					return 1;
			}
	return 0;
}

static void test_random_games(void **unused)
{
	uint64_t rng = 0x9E3779B97F4A7C15ull;
	int wins = 0, draws = 0;

	for (int game = 0; game < 3000; game++) {
		uint8_t s[AZ_GAME_STATE_MAX], mask[7];
		int board[6][7] = { { 0 } }, height[7] = { 0 };
		float v;

		G->init(s);
		for (int ply = 0;; ply++) {
			int n = G->legal(s, mask), pick, a = -1, over;

			for (int c = 0; c < 7; c++)
				assert_int_equal(mask[c], height[c] < 6 && ply < 42 ? 1 : 0);
			if (n == 0)
				break;
			rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
			pick = (int)(rng % (uint64_t)n);
			for (int c = 0; c < 7; c++)
				if (mask[c] && pick-- == 0)
					a = c;
			assert_int_equal(G->to_move(s), ply & 1);
			G->apply(s, a);
			board[height[a]++][a] = 1 + (ply & 1);
			over = naive_four(board, 1 + (ply & 1));
			assert_int_equal(G->terminal(s, &v), over || ply == 41);
			if (over) {
				assert_true(v == -1.0f);
				wins++;
				break;
			}
			if (ply == 41) {
				assert_true(v == 0.0f);
				draws++;
			}
		}
	}
	assert_true(wins > 2500);
	(void)draws;
}

/* terminal_after (MCTS-Solver's check at each expansion) agrees with playing each legal move and
 * asking terminal(), at every position of 3000 random games and of games that fill the board. */
static void test_terminal_after(void **unused)
{
	uint64_t rng = 0xD1B54A32D192ED03ull;
	struct after_counts seen = { 0 };

	(void)unused;
	assert_non_null(G->terminal_after);
	for (int game = 0; game < 3000; game++) {
		uint8_t s[AZ_GAME_STATE_MAX], mask[7];

		G->init(s);
		for (int n; (n = G->legal(s, mask)) > 0;) {
			uint64_t term = check_terminal_after(G, s, &seen);
			/* mostly random moves; every 4th game avoids wins, so boards fill up (draws) */
			rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
			int a = -1, pick = (int)(rng % (uint64_t)n);
			for (int c = 0; c < 7; c++)
				if (mask[c] && pick-- == 0)
					a = c;
			if (game % 4 == 0 && (term >> a & 1))
				for (int c = 0; c < 7; c++)
					if (mask[c] && !(term >> c & 1))
						a = c;
			G->apply(s, a);
		}
		int8_t tv_end[64];
		assert_int_equal(G->terminal_after(s, tv_end), 0); /* over: nothing to flag */
	}
	assert_true(seen.decisive + seen.draws > 3000);
	assert_true(seen.draws > 0);
}

static void test_full_column(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX], mask[7];
	char err[128] = "";

	play(G, s, "444444");
	assert_int_equal(G->legal(s, mask), 6);
	assert_int_equal(mask[3], 0);
	assert_int_equal(G->parse_action(s, "4"), -EINVAL);
	assert_int_equal(G->parse_action(s, "3"), 2);
	assert_int_equal(az_game_play_moves(G, s, "4444444", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "move 7 ('4'): column full");
	assert_int_equal(az_game_play_moves(G, s, "1238", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "move 4 ('8'): not a column (1-7)");
	assert_int_equal(az_game_play_moves(G, s, "12121212", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "move 8 ('2'): game already over");
}

static void test_draw(void **unused)
{
	static const char *moves = "547125662261271266215743771576315353334444";
	uint8_t s[AZ_GAME_STATE_MAX], mask[7];
	char buf[256];
	float v = 99.0f;

	assert_int_equal(strlen(moves), 42);
	play(G, s, moves);
	assert_int_equal(G->terminal(s, &v), 1);
	assert_true(v == 0.0f);
	assert_int_equal(G->legal(s, mask), 0);
	G->format(s, buf, sizeof(buf));
	assert_non_null(strstr(buf, "draw\n"));
	assert_null(strchr(buf, '.'));
}

static void test_format_encode(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	float f[84];
	char buf[256];
	int ones = 0, n;

	play(G, s, "443");
	n = G->format(s, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(buf));
	assert_string_equal(buf, ". . . . . . .\n"
				 ". . . . . . .\n"
				 ". . . . . . .\n"
				 ". . . . . . .\n"
				 ". . . O . . .\n"
				 ". . X X . . .\n"
				 "1 2 3 4 5 6 7\n"
				 "O to move\n");
	/* O to move: plane 0 = O's stones, plane 1 = X's; index row * 7 + col, row 0 at bottom */
	G->encode(s, f);
	for (int i = 0; i < 84; i++)
		ones += f[i] == 1.0f;
	assert_int_equal(ones, 3);
	assert_true(f[1 * 7 + 3] == 1.0f);
	assert_true(f[42 + 0 * 7 + 3] == 1.0f);
	assert_true(f[42 + 0 * 7 + 2] == 1.0f);
}

static void test_notation(void **unused)
{
	uint8_t s[AZ_GAME_STATE_MAX];

	check_digit_notation(G, 7, s); /* "8" is past the last column */
	assert_int_equal(G->parse_action(s, "44"), -EINVAL);
}

static void mirror(const char *in, char *out)
{
	size_t i = 0;

	for (; in[i]; i++)
		out[i] = (char)('1' + '7' - in[i]);
	out[i] = '\0';
}

static void test_mirror(void **unused)
{
	uint64_t rng = 12345;

	for (int t = 0; t < 500; t++) {
		uint8_t s[AZ_GAME_STATE_MAX], m[AZ_GAME_STATE_MAX], mask[7], mmask[7];
		float f[84], fm[84], fs[84], fi[84], pol[7], pols[7], v1 = 5, v2 = 7;
		char moves[43], mmoves[43];
		int len = 0;

		/* a random legal prefix */
		G->init(s);
		for (int n = (int)(rng % 42); len < n && G->legal(s, mask); len++) {
			int a;

			do {
				rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
				a = (int)(rng % 7);
			} while (!mask[a]);
			G->apply(s, a);
			moves[len] = (char)('1' + a);
		}
		moves[len] = '\0';
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		mirror(moves, mmoves);
		play(G, s, len ? moves : "-");
		play(G, m, len ? mmoves : "-");
		G->encode(s, f);
		G->encode(m, fm);
		G->symmetry(1, f, fs, NULL, NULL);
		assert_memory_equal(fs, fm, sizeof(fs));
		G->symmetry(1, fs, fi, NULL, NULL); /* an involution */
		assert_memory_equal(fi, f, sizeof(f));
		G->symmetry(0, f, fi, NULL, NULL);
		assert_memory_equal(fi, f, sizeof(f));
		assert_int_equal(G->terminal(s, &v1), G->terminal(m, &v2));
		assert_true(!G->terminal(s, NULL) || v1 == v2);
		G->legal(s, mask);
		G->legal(m, mmask);
		for (int c = 0; c < 7; c++)
			pol[c] = (float)mask[c] * (float)(c + 1);
		G->symmetry(1, NULL, NULL, pol, pols);
		for (int c = 0; c < 7; c++) {
			assert_true(pols[c] == (float)mmask[c] * (float)(7 - c));
			assert_int_equal(mask[c], mmask[6 - c]);
		}
	}
}

static FILE *open_shared(const char *rel)
{
	const char *dir = getenv("AZ_SHARED_DIR");
	char path[1024];
	FILE *f = NULL;

	if (dir) {
		snprintf(path, sizeof(path), "%s/%s", dir, rel);
		f = fopen(path, "r");
	}
	if (!f) {
		snprintf(path, sizeof(path), "/work/shared/%s", rel);
		f = fopen(path, "r");
	}
	return f;
}

static void test_benchmark_file(void **unused)
{
	FILE *f = open_shared("data/connect4/Test_L3_R1");
	uint8_t s[AZ_GAME_STATE_MAX];
	char line[256], moves[64], err[128];
	int lines = 0, score;

	if (!f)
		skip();
	while (fgets(line, sizeof(line), f)) {
		int n;

		assert_int_equal(sscanf(line, "%63s %d", moves, &score), 2);
		n = az_game_play_moves(G, s, moves, err, sizeof(err));
		if (n < 0)
			fail_msg("line %d: %s", lines + 1, err);
		assert_int_equal(n, (int)strlen(moves));
		assert_true(n > 28); /* the end-game stage */
		assert_int_equal(G->terminal(s, NULL), 0);
		assert_int_equal(G->to_move(s), n & 1);
		lines++;
	}
	fclose(f);
	assert_int_equal(lines, 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_descriptor),
		cmocka_unit_test(test_perft),
		cmocka_unit_test(test_wins),
		cmocka_unit_test(test_no_false_wins),
		cmocka_unit_test(test_random_games),
		cmocka_unit_test(test_terminal_after),
		cmocka_unit_test(test_full_column),
		cmocka_unit_test(test_draw),
		cmocka_unit_test(test_format_encode),
		cmocka_unit_test(test_notation),
		cmocka_unit_test(test_mirror),
		cmocka_unit_test(test_benchmark_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
