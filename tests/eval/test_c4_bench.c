/* SPDX-License-Identifier: MIT */
/* The benchmark's counting (eval/c4_bench.c): a fake policy that is known to be right or wrong
 * on hand-made positions whose answers follow from the rules alone, the raw policy's argmax
 * restricted to legal moves, the tactical sets, and the check of a benchmark folder. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eval/c4_bench.h"
#include "eval/c4_labels.h"
#include "eval/net_eval.h"
#include "base/util.h"
#include "games/game.h"
#include "tests/test_util.h"

static const struct az_game *const g = &az_game_connect4;

/* A fake network: the prior is 1 on the column listed for the position (matched by state),
 * 0.5 on every other column, and 5 on `trap` (a full column, or -1): prior mass on an illegal
 * move must not be chosen. */
struct fake {
	int n;
	uint8_t state[8][AZ_GAME_STATE_MAX];
	int col[8];
	int trap;
	int calls;
};

static int fake_eval(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	struct fake *f = ctx;
	f->calls++;
	*value = 0.0f;
	for (uint32_t a = 0; a < g->actions; a++)
		policy[a] = 0.5f;
	for (int i = 0; i < f->n; i++)
		if (memcmp(f->state[i], state, g->state_bytes) == 0)
			policy[f->col[i]] = 1.0f;
	if (f->trap >= 0)
		policy[f->trap] = 5.0f;
	return 0;
}

static void fake_add(struct fake *f, const char *moves, int col)
{
	char err[128];
	g->init(f->state[f->n]);
	assert_true(az_game_play_moves(g, f->state[f->n], moves, err, sizeof(err)) >= 0);
	f->col[f->n++] = col;
}

/* Positions whose labels follow from the rules (columns 0-based here, 1-based in the file):
 *   121212  first player to move: column 1 wins at once; column 3 lets the opponent win in
 *           column 2 (win -> loss, a mistake);
 *   212121  the same with columns 2 and 1;
 *   22334   the opponent threatens both ends of the bottom row: lost, so no move is a
 *           mistake. Scores given, so no position needs a full solve. */
static const char positions[] = "121212 18\n212121 18\n22334 -18\n";

static void write_positions(const char *dir, char *src, size_t n)
{
	snprintf(src, n, "%s/pos.txt", dir);
	FILE *f = fopen(src, "w");
	assert_non_null(f);
	assert_int_equal(fputs(positions, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void test_raw_policy_mistakes(void **unused)
{
	char dir[64], src[128], cache[128], err[256];
	struct az_labels *l;
	(void)unused;
	assert_int_equal(az_test_tmpdir_make(dir, sizeof(dir), "/tmp/az-c4b-XXXXXX", cache,
					     sizeof(cache), "pos.labels"), 0);
	write_positions(dir, src, sizeof(src));
	assert_int_equal(az_c4_labels_open(src, cache, 0, &l, err, sizeof(err)), 0);
	assert_int_equal(az_labels_count(l), 3);

	struct fake right = {.trap = -1}, wrong = {.trap = -1};
	fake_add(&right, "121212", 0);
	fake_add(&right, "212121", 1);
	fake_add(&right, "22334", 4);
	fake_add(&wrong, "121212", 2);
	fake_add(&wrong, "212121", 2);
	fake_add(&wrong, "22334", 0);
	assert_int_equal(az_c4_bench_mistakes(l, 3, fake_eval, &right, NULL, 0), 0);
	assert_int_equal(right.calls, 3); /* one evaluation per position: no search */
	assert_int_equal(az_c4_bench_mistakes(l, 3, fake_eval, &wrong, NULL, 0), 2);
	/* n counts positions from the first: the first alone, then one more than there are. */
	assert_int_equal(az_c4_bench_mistakes(l, 1, fake_eval, &wrong, NULL, 0), 1);
	assert_int_equal(az_c4_bench_mistakes(l, 9, fake_eval, &wrong, NULL, 0), 2);

	/* The labels solved on the way are cached: a fresh open knows them without solving. */
	assert_int_equal(az_labels_save(l, err, sizeof(err)), 0);
	az_labels_close(l);
	assert_int_equal(az_c4_labels_open(src, cache, 0, &l, err, sizeof(err)), 0);
	assert_int_equal(az_labels_dirty(l), 0);
	assert_int_equal(az_c4_bench_mistakes(l, 3, fake_eval, &wrong, NULL, 0), 2);
	assert_int_equal(az_labels_dirty(l), 0);
	az_labels_close(l);

	/* Saved from the first position only (a smaller limit): the other lines are kept. */
	char *full = NULL, *after = NULL, other[128];
	assert_int_equal(az_read_file(cache, &full, NULL), 0);
	assert_int_equal(az_c4_labels_open(src, cache, 1, &l, err, sizeof(err)), 0);
	assert_int_equal(az_labels_count(l), 1);
	assert_int_equal(az_labels_save_as(l, cache, err, sizeof(err)), 0);
	az_labels_close(l);
	assert_int_equal(az_read_file(cache, &after, NULL), 0);
	assert_string_equal(after, full);
	/* A cache merged into labels opened without one teaches them everything it knows. */
	snprintf(other, sizeof(other), "%s/none.labels", dir);
	assert_int_equal(az_c4_labels_open(src, other, 0, &l, err, sizeof(err)), 0);
	assert_int_equal(az_labels_merge(l, cache), 3); /* each learned the moves asked */
	assert_int_equal(az_labels_dirty(l), 1);
	assert_int_equal(az_labels_merge(l, cache), 0);
	az_labels_close(l);
	free(full);
	free(after);
	az_test_tmpdir_remove(dir);
}

/* The raw policy's move: the argmax over the legal moves only. */
static void test_argmax_is_legal(void **unused)
{
	struct fake f = {.trap = 0};
	uint8_t st[AZ_GAME_STATE_MAX];
	char err[128];
	(void)unused;
	fake_add(&f, "1111112", 3); /* column 1 is full */
	g->init(st);
	assert_true(az_game_play_moves(g, st, "1111112", err, sizeof(err)) >= 0);
	assert_int_equal(az_eval_move(g, fake_eval, &f, NULL, 0, st), 3);
}

static void test_tactics(void **unused)
{
	char dir[64], path[128], err[256];
	struct az_position *pos;
	long n;
	(void)unused;
	assert_int_equal(az_test_tmpdir_make(dir, sizeof(dir), "/tmp/az-c4t-XXXXXX", path,
					     sizeof(path), "win1.txt"), 0);
	assert_int_equal(az_c4_tactics_write(path, AZ_C4_TACTIC_WIN, 5, 7, err, sizeof(err)), 5);
	assert_int_equal(az_c4_bench_load_tactics(path, 0, &pos, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 5);
	struct fake right = {.trap = -1}, wrong = {.trap = -1};
	for (long i = 0; i < n; i++) {
		int best = -1, other = -1;
		uint8_t mask[AZ_GAME_ACTIONS_MAX];
		g->legal(pos[i].state, mask);
		for (int a = 0; a < 7; a++) {
			if (pos[i].best[a] && best < 0)
				best = a;
			if (!pos[i].best[a] && mask[a] && other < 0)
				other = a;
		}
		assert_true(best >= 0 && other >= 0);
		memcpy(right.state[i], pos[i].state, g->state_bytes);
		memcpy(wrong.state[i], pos[i].state, g->state_bytes);
		right.col[i] = best;
		wrong.col[i] = other;
	}
	right.n = wrong.n = (int)n;
	assert_int_equal(az_c4_bench_tactics(pos, n, fake_eval, &right, NULL, 0), 5);
	assert_int_equal(az_c4_bench_tactics(pos, n, fake_eval, &wrong, NULL, 0), 0);
	free(pos);
	assert_int_equal(az_c4_bench_load_tactics(path, 2, &pos, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	free(pos);
	az_test_tmpdir_remove(dir);
}

/* A folder without Pons' sets, or with a malformed one, is refused with the file's name. */
static void test_check(void **unused)
{
	char dir[64], path[128], err[512];
	(void)unused;
	assert_int_equal(az_test_tmpdir_make(dir, sizeof(dir), "/tmp/az-c4c-XXXXXX", path,
					     sizeof(path), "Test_L1_R1"), 0);
	assert_int_equal(az_c4_bench_check("/nonexistent/bench", 5, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/bench"));
	assert_int_equal(az_c4_bench_check(dir, 5, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "Test_L1_R1"));
	for (int s = 0; s < AZ_C4_BENCH_PONS; s++) {
		snprintf(path, sizeof(path), "%s/Test_%s", dir, az_c4_bench_names[s]);
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs(s == 3 ? "12 0\n18 x\n" : positions, f);
		assert_int_equal(fclose(f), 0);
	}
	/* Test_L2_R1's second line is malformed: refused, unless only the first is read. */
	assert_int_equal(az_c4_bench_check(dir, 5, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "Test_L2_R1:2"));
	assert_int_equal(az_c4_bench_check(dir, 1, err, sizeof(err)), 0);
	az_test_tmpdir_remove(dir);
}

AZ_TEST_MAIN(cmocka_unit_test(test_raw_policy_mistakes), cmocka_unit_test(test_argmax_is_legal),
	     cmocka_unit_test(test_tactics), cmocka_unit_test(test_check))
