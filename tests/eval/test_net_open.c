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
	};
	return cmocka_run_group_tests(tests, group_setup, teardown);
}
