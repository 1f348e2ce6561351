/* SPDX-License-Identifier: MIT */
/* A checkpoint opened for evaluation in one call (eval/net_open.c): the network it opens answers
 * as the model written does, a network of another game or shape and a missing file are refused
 * with their messages, and a batch of positions evaluates as the same positions one at a time. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "eval/net_eval.h"
#include "eval/net_open.h"
#include "games/game.h"
#include "gpu/backend.h"
#include "gpu/cpu_forward.h"
#include "net/checkpoint.h"
#include "net/model.h"
#include "tests/test_util.h"

AZ_TEST_TMPDIR_FIXTURE("/tmp/az-net-open-XXXXXX", "ttt.safetensors")

static const struct az_game *const ttt = &az_game_tictactoe;

/* Tic-tac-toe positions, as move strings from the start: none of them over. */
static const char *const moves[] = {"-", "5", "51", "519", "5193", "51937", "2"};
#define N_POS (sizeof(moves) / sizeof(moves[0]))

/* A network of `game` with `inputs` inputs and ttt's actions, saved to p. Every weight is set
 * (az_model_init_random leaves the value head near 0), so that each position has its own value
 * and policy. */
static void write_ckpt(const char *p, const char *game, uint32_t inputs, uint64_t seed)
{
	struct az_arch a = {.inputs = inputs, .hidden = 16, .blocks = 1, .actions = ttt->actions};
	struct az_model *m;
	char err[256];

	assert_int_equal(az_model_create(&a, &m), 0);
	for (size_t i = 0; i < m->n_params; i++)
		m->params[i] = 0.4f * sinf(0.7f * (float)i + (float)seed);
	snprintf(m->game, sizeof(m->game), "%s", game);
	assert_int_equal(az_ckpt_save(p, m, err, sizeof(err)), 0);
	az_model_destroy(m);
}

static void pos_state(int i, void *st)
{
	char err[128];

	ttt->init(st);
	assert_true(az_game_play_moves(ttt, st, moves[i], err, sizeof(err)) >= 0);
}

static int group_setup(void **state)
{
	char p[160];

	if (setup(state) != 0)
		return -1;
	write_ckpt(path, "tictactoe", ttt->features, 7);
	snprintf(p, sizeof(p), "%s/shape.safetensors", dir);
	write_ckpt(p, "tictactoe", ttt->features + 2, 7);
	return 0;
}

/* The opened network's answers are the written model's: its forward pass on the CPU reference,
 * softmaxed over the legal moves. */
static void test_open_answers_as_the_model(void **unused)
{
	struct az_net_open_args a = {.ckpt = path, .game = ttt, .backend = AZ_BACKEND_CPU};
	struct az_opened_net n;
	struct az_model *m;
	struct az_acts acts;
	char err[256];

	(void)unused;
	assert_int_equal(az_net_open(&a, &n, err, sizeof(err)), 0);
	assert_non_null(n.be);
	assert_int_equal(n.eval.batch, 1); /* batch 0 counts as 1 */
	assert_string_equal(az_backend_name(n.be), "cpu");
	assert_int_equal(az_ckpt_load(path, &m, err, sizeof(err)), 0);
	assert_int_equal(az_acts_create(&m->arch, 1, &acts), 0);
	for (size_t i = 0; i < N_POS; i++) {
		uint8_t st[AZ_GAME_STATE_MAX], mask[AZ_GAME_ACTIONS_MAX];
		float x[64], pol[AZ_GAME_ACTIONS_MAX], want[AZ_GAME_ACTIONS_MAX], v;

		pos_state((int)i, st);
		assert_int_equal(az_net_eval(&n.eval, st, pol, &v, NULL), 0);
		ttt->encode(st, x);
		ttt->legal(st, mask);
		az_model_forward(m, 1, x, &acts);
		az_masked_softmax(acts.logits, mask, ttt->actions, want);
		assert_float_equal(v, acts.value[0], 1e-5f);
		assert_true(v != 0.0f); /* random weights: not an empty network */
		for (uint32_t k = 0; k < ttt->actions; k++)
			assert_float_equal(pol[k], want[k], 1e-5f);
	}
	az_acts_destroy(&acts);
	az_model_destroy(m);
	az_net_close(&n);
	assert_null(n.be);
	az_net_close(&n); /* a second close is a no-op */
}

/* A tic-tac-toe network opened for Connect Four: -EPROTO, both games named, nothing open. */
static void test_game_mismatch(void **unused)
{
	struct az_net_open_args a = {.ckpt = path, .game = &az_game_connect4};
	struct az_opened_net n;
	char err[512], want[300];

	(void)unused;
	assert_int_equal(az_net_open(&a, &n, err, sizeof(err)), -EPROTO);
	snprintf(want, sizeof(want), "%s is a tictactoe network, not connect4", path);
	assert_string_equal(err, want);
	assert_null(n.be);
	assert_null(n.eval.x);
	az_net_close(&n); /* no-op on a failed open */
}

/* "tictactoe" with 20 inputs: the same game name, another shape; refused with both shapes. */
static void test_shape_mismatch(void **unused)
{
	char p[160], err[512], want[400];

	(void)unused;
	snprintf(p, sizeof(p), "%s/shape.safetensors", dir);
	struct az_net_open_args a = {.ckpt = p, .game = ttt, .backend = AZ_BACKEND_CPU};
	struct az_opened_net n;
	assert_int_equal(az_net_open(&a, &n, err, sizeof(err)), -EPROTO);
	snprintf(want, sizeof(want),
		 "%s has %u inputs and %u actions, but tictactoe needs %u and %u", p,
		 ttt->features + 2, ttt->actions, ttt->features, ttt->actions);
	assert_string_equal(err, want);
	assert_null(n.be);
}

/* A missing file: the loader's -ENOENT and a message naming the path; no arguments: -EINVAL. */
static void test_missing_file(void **unused)
{
	char p[160], err[512];
	struct az_opened_net n;

	(void)unused;
	snprintf(p, sizeof(p), "%s/nope.safetensors", dir);
	struct az_net_open_args a = {.ckpt = p, .game = ttt, .backend = AZ_BACKEND_CPU};
	assert_int_equal(az_net_open(&a, &n, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, p));
	assert_null(n.be);
	a.ckpt = NULL;
	assert_int_equal(az_net_open(&a, &n, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "open: no checkpoint or no game");
}

/* CUDA asked for where there is none: -ENODEV, "backend: ..." (skipped where there is one). */
static void test_backend_unavailable(void **unused)
{
	struct az_net_open_args a = {.ckpt = path, .game = ttt, .backend = AZ_BACKEND_CUDA};
	struct az_opened_net n;
	char err[512];

	(void)unused;
	if (az_cuda_available())
		skip();
	assert_int_equal(az_net_open(&a, &n, err, sizeof(err)), -ENODEV);
	assert_memory_equal(err, "backend: ", 9);
	assert_null(n.be);
}

/* Every position of a batch in one forward pass (up to batch 5, count 1 to 5) equals the
 * same position on a batch-1 network, policy and value, on each cpu backend; counts of 0 or
 * above the batch are refused. */
static void test_batch_matches_batch_1(void **unused)
{
	static const enum az_backend_kind kinds[] = {AZ_BACKEND_CPU, AZ_BACKEND_CPU_ASYNC};
	uint8_t st[N_POS][AZ_GAME_STATE_MAX];
	const void *sp[N_POS];
	float one[N_POS][AZ_GAME_ACTIONS_MAX], one_v[N_POS];
	float pol[N_POS * 9], v[N_POS];
	char err[256];

	(void)unused;
	assert_int_equal(ttt->actions, 9);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct az_net_open_args a1 = {.ckpt = path, .game = ttt, .backend = kinds[k]};
		struct az_net_open_args a5 = a1;
		struct az_opened_net n1, n5;

		a5.batch = 5;
		assert_int_equal(az_net_open(&a1, &n1, err, sizeof(err)), 0);
		assert_int_equal(az_net_open(&a5, &n5, err, sizeof(err)), 0);
		assert_int_equal(n5.eval.batch, 5);
		for (size_t i = 0; i < N_POS; i++) {
			pos_state((int)i, st[i]);
			sp[i] = st[i];
			assert_int_equal(az_net_eval(&n1.eval, st[i], one[i], &one_v[i], NULL), 0);
		}
		/* positions 0-4 in one pass, then 2-6 (a window that moves), then 6 alone */
		for (size_t first = 0; first + 1 < N_POS; first += 2) {
			uint32_t count = N_POS - first < 5 ? (uint32_t)(N_POS - first) : 5;

			assert_int_equal(
				az_net_eval_batch(&n5.eval, sp + first, count, pol, v, NULL), 0);
			for (uint32_t i = 0; i < count; i++) {
				assert_float_equal(v[i], one_v[first + i], 1e-5f);
				for (uint32_t c = 0; c < 9; c++)
					assert_float_equal(pol[i * 9 + c], one[first + i][c],
							   1e-5f);
			}
		}
		/* the positions differ: a batch that repeated one would not pass */
		assert_true(one_v[0] != one_v[1] || one[0][0] != one[1][0]);
		assert_int_equal(az_net_eval_batch(&n5.eval, sp, 6, pol, v, NULL), -EINVAL);
		assert_int_equal(az_net_eval_batch(&n5.eval, sp, 0, pol, v, NULL), -EINVAL);
		assert_int_equal(az_net_eval_batch(&n1.eval, sp, 2, pol, v, NULL), -EINVAL);
		az_net_close(&n5);
		az_net_close(&n1);
	}
}

/* The position of moves[i] moved by the symmetry whose policy map is src (slot j of the moved
 * policy holds the original's action src[j]): a stone on cell a goes to the j with src[j] = a. */
static void moved_state(int i, const uint16_t *src, void *st)
{
	char text[16] = "-", err[128];
	size_t len = 0;

	for (const char *c = moves[i]; *c; c++)
		for (int j = 0; j < 9 && *c != '-'; j++)
			if (src[j] == *c - '1')
				text[len++] = (char)('1' + j);
	text[len ? len : 1] = '\0';
	ttt->init(st);
	assert_true(az_game_play_moves(ttt, st, text, err, sizeof(err)) >= 0);
}

/* Symmetry averaging over tic-tac-toe's 8 board symmetries: the averaged value of a position is
 * the mean of the plain values of its 8 images, the averaged policy the mean of their policies
 * mapped back, the averaged answers of an image are the position's moved, a batch of 5 answers
 * as one at a time, and turned off the answers are the plain ones again. */
static void test_symmetry_average(void **unused)
{
	struct az_net_open_args a = {
		.ckpt = path, .game = ttt, .backend = AZ_BACKEND_CPU, .batch = 5};
	struct az_opened_net n;
	uint16_t src[8][9];
	char err[256];
	int differ = 0;

	(void)unused;
	assert_int_equal(ttt->symmetries, 8);
	assert_int_equal(az_net_open(&a, &n, err, sizeof(err)), 0);
	assert_int_equal(az_net_eval_average_symmetries(&n.eval, 1), 0);
	assert_int_equal(n.eval.sym_avg, 8);
	memcpy(src, n.eval.sym_src, sizeof(src));
	for (size_t i = 0; i < N_POS; i++) {
		uint8_t st[AZ_GAME_STATE_MAX], im[8][AZ_GAME_STATE_MAX];
		float pol[9], v, v0 = 0, want[9] = {0}, want_v = 0, avg[8][9], avg_v[8];
		float bp[5 * 9], bv[5];
		const void *sp[5];

		pos_state((int)i, st);
		assert_int_equal(az_net_eval_average_symmetries(&n.eval, 1), 0);
		for (int k = 0; k < 8; k++) {
			moved_state((int)i, src[k], im[k]);
			assert_int_equal(az_net_eval(&n.eval, im[k], avg[k], &avg_v[k], NULL), 0);
		}
		for (int b = 0; b < 5; b++)
			sp[b] = im[b];
		assert_int_equal(az_net_eval_batch(&n.eval, sp, 5, bp, bv, NULL), 0);
		for (int b = 0; b < 5; b++) {
			assert_float_equal(bv[b], avg_v[b], 1e-5f);
			for (int j = 0; j < 9; j++)
				assert_float_equal(bp[b * 9 + j], avg[b][j], 1e-5f);
		}
		assert_int_equal(az_net_eval_average_symmetries(&n.eval, 0), 0);
		assert_int_equal(n.eval.sym_avg, 0);
		for (int k = 0; k < 8; k++) {
			assert_int_equal(az_net_eval(&n.eval, im[k], pol, &v, NULL), 0);
			want_v += v / 8;
			for (int j = 0; j < 9; j++)
				want[src[k][j]] += pol[j] / 8;
			if (k == 0)
				v0 = v;
			differ += fabsf(v - v0) > 1e-4f;
			/* the averaged answers of image k are the position's (image 0), moved */
			assert_float_equal(avg_v[k], avg_v[0], 1e-5f);
			for (int j = 0; j < 9; j++)
				assert_float_equal(avg[k][j], avg[0][src[k][j]], 1e-5f);
		}
		assert_float_equal(avg_v[0], want_v, 1e-5f);
		for (int j = 0; j < 9; j++)
			assert_float_equal(avg[0][j], want[j], 1e-5f);
		assert_int_equal(az_net_eval(&n.eval, st, pol, &v, NULL), 0);
		assert_float_equal(v, v0, 0.0f); /* off again: the plain answer of image 0 */
	}
	/* the images' plain values differ: averaging has something to average */
	assert_true(differ > 0);
	az_net_close(&n);
}

int main(void)
{
	az_test_fp32_kernels(); /* compared with the fp32 reference */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_answers_as_the_model),
		cmocka_unit_test(test_game_mismatch),
		cmocka_unit_test(test_shape_mismatch),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_backend_unavailable),
		cmocka_unit_test(test_batch_matches_batch_1),
		cmocka_unit_test(test_symmetry_average),
	};
	return cmocka_run_group_tests(tests, group_setup, teardown);
}
