/* SPDX-License-Identifier: MIT */
/* The cuda backend against the cpu reference (ggml test-backend-ops style): same weights, same
 * random inputs, outputs within 1e-5 relative. Exits 77 (skipped) without a CUDA device. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu/backend.h"
#include "gpu/model.h"
#include "shm/rng.h"

#define MAX_BATCH 64

/* Random weights and biases (biases nonzero so a dropped bias kernel shows). */
static struct az_model *random_model(const struct az_arch *a, uint64_t seed)
{
	struct az_model *m = NULL;
	struct az_rng rng;

	assert_int_equal(az_model_create(a, &m), 0);
	az_rng_seed(&rng, seed);
	for (uint32_t i = 0; i < az_model_tensor_count(a); i++) {
		struct az_tensor t;

		assert_int_equal(az_model_tensor(a, i, &t), 0);
		double std = t.ndim == 2 ? 1.0 / sqrt((double)t.cols) : 0.3;

		for (size_t k = 0; k < (size_t)t.rows * t.cols; k++)
			m->params[t.offset + k] = (float)(std * az_rng_normal(&rng));
	}
	return m;
}

static void check_close(const float *got, const float *want, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		double tol = 1e-5 * (fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0);

		/* NaN (the poison left in an unwritten element) fails this comparison too. */
		if (!(fabs((double)got[i] - want[i]) <= tol))
			fail_msg("%s[%zu]: cuda %.9g cpu %.9g", what, i, got[i], want[i]);
	}
}

static void compare_arch(const struct az_arch *a, uint64_t seed)
{
	static const uint32_t batches[] = { 1, 7, MAX_BATCH };
	struct az_backend *cpu = NULL, *cuda = NULL;
	struct az_model *m[AZ_BACKEND_MODELS];
	size_t D = a->inputs, A = a->actions;
	float *x = malloc(MAX_BATCH * D * sizeof(float));
	float *lc = malloc(MAX_BATCH * A * sizeof(float));
	float *lg = malloc(MAX_BATCH * A * sizeof(float));
	float vc[MAX_BATCH], vg[MAX_BATCH];
	struct az_rng rng;
	char why[128];

	assert_non_null(x);
	assert_non_null(lc);
	assert_non_null(lg);
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, a, MAX_BATCH, &cpu, why, sizeof(why)),
			 0);
	assert_int_equal(az_backend_create(AZ_BACKEND_CUDA, a, MAX_BATCH, &cuda, why, sizeof(why)),
			 0);
	assert_string_equal(az_backend_name(cuda), "cuda");
	for (uint32_t s = 0; s < AZ_BACKEND_MODELS; s++) {
		m[s] = random_model(a, seed + s);
		assert_int_equal(az_backend_load(cpu, s, m[s]), 0);
		assert_int_equal(az_backend_load(cuda, s, m[s]), 0);
	}
	az_rng_seed(&rng, seed ^ 0x5eed);
	for (size_t i = 0; i < MAX_BATCH * D; i++)
		x[i] = (float)(2.0 * az_rng_uniform(&rng) - 1.0);

	for (uint32_t s = 0; s < AZ_BACKEND_MODELS; s++) {
		for (size_t k = 0; k < sizeof(batches) / sizeof(batches[0]); k++) {
			uint32_t B = batches[k];

			memset(lg, 0xff, MAX_BATCH * A * sizeof(float)); /* NaN poison */
			memset(vg, 0xff, sizeof(vg));
			assert_int_equal(az_backend_forward(cpu, s, B, x, lc, vc), 0);
			assert_int_equal(az_backend_forward(cuda, s, B, x, lg, vg), 0);
			check_close(lg, lc, B * A, "logits");
			check_close(vg, vc, B, "value");
		}
	}
	for (uint32_t s = 0; s < AZ_BACKEND_MODELS; s++)
		az_model_destroy(m[s]);
	az_backend_destroy(cuda);
	az_backend_destroy(cpu);
	free(lg);
	free(lc);
	free(x);
}

static void test_small(void **state)
{
	const struct az_arch a = { .inputs = 9, .hidden = 16, .blocks = 3, .actions = 7 };

	(void)state;
	compare_arch(&a, 1);
}

static void test_no_blocks(void **state)
{
	const struct az_arch a = { .inputs = 5, .hidden = 8, .blocks = 0, .actions = 3 };

	(void)state;
	compare_arch(&a, 2);
}

static void test_connect4_size(void **state)
{
	const struct az_arch a = { .inputs = 126, .hidden = 64, .blocks = 2, .actions = 7 };

	(void)state;
	compare_arch(&a, 3);
}

int main(void)
{
	if (!az_cuda_available()) {
		fprintf(stderr, "no CUDA device: skipped\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small),
		cmocka_unit_test(test_no_blocks),
		cmocka_unit_test(test_connect4_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
