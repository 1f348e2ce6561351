/* SPDX-License-Identifier: MIT */
/* Unit tests of the network description and the CPU reference forward pass: tensor table, arch
 * parser, init, forward vs a naive double-precision reference, batch invariance, masked softmax
 * and the cpu backend / backend selection. */
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
#include "gpu/cpu_forward.h"
#include "net/model.h"
#include "base/rng.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/test_util.h"

static const struct az_arch small = { .inputs = 9, .hidden = 16, .blocks = 3, .actions = 7 };

/* random_model() (tests/gpu/gpu_test_util.h): every parameter, biases included, is random, so
 * a skipped bias or a transposed weight changes the output. */

static void random_fill(float *x, size_t n, uint64_t seed)
{
	struct az_rng rng;

	az_rng_seed(&rng, seed);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)(2.0 * az_rng_uniform(&rng) - 1.0);
}

/* Parameters of the tensor called name, looked up through the table. */
static const float *tensor(const struct az_model *m, const char *name, uint32_t rows,
			   uint32_t cols)
{
	uint32_t n = az_model_tensor_count(&m->arch);

	for (uint32_t i = 0; i < n; i++) {
		struct az_tensor t;

		assert_int_equal(az_model_tensor(&m->arch, i, &t), 0);
		if (strcmp(t.name, name) == 0) {
			assert_int_equal(t.rows, rows);
			assert_int_equal(t.cols, cols);
			return m->params + t.offset;
		}
	}
	fail_msg("no tensor %s", name);
	return NULL;
}

/* y[out] = act(W[out, in] x + b), naive, in double. act: 0 none, 1 relu. */
static void ref_linear(const float *w, const float *b, const double *x, uint32_t in,
		       uint32_t out, int relu, double *y)
{
	for (uint32_t o = 0; o < out; o++) {
		double s = b[o];

		for (uint32_t i = 0; i < in; i++)
			s += (double)w[(size_t)o * in + i] * x[i];
		y[o] = relu && s < 0.0 ? 0.0 : s;
	}
}

/* Naive reference forward of one row, written from the formulas in net/model.h. */
static void ref_forward(const struct az_model *m, const float *x, double *logits, double *value)
{
	uint32_t D = m->arch.inputs, H = m->arch.hidden, A = m->arch.actions;
	double xd[64], h[64], t[64], u[64];
	char name[48];

	assert_true(D <= 64 && H <= 64);
	for (uint32_t i = 0; i < D; i++)
		xd[i] = x[i];
	ref_linear(tensor(m, "trunk.in.weight", H, D), tensor(m, "trunk.in.bias", H, 1), xd, D, H,
		   1, h);
	for (uint32_t b = 0; b < m->arch.blocks; b++) {
		const float *w1, *b1, *w2, *b2;

		snprintf(name, sizeof(name), "block.%u.fc1.weight", b);
		w1 = tensor(m, name, H, H);
		snprintf(name, sizeof(name), "block.%u.fc1.bias", b);
		b1 = tensor(m, name, H, 1);
		snprintf(name, sizeof(name), "block.%u.fc2.weight", b);
		w2 = tensor(m, name, H, H);
		snprintf(name, sizeof(name), "block.%u.fc2.bias", b);
		b2 = tensor(m, name, H, 1);
		ref_linear(w1, b1, h, H, H, 1, t);
		ref_linear(w2, b2, t, H, H, 0, u);
		for (uint32_t i = 0; i < H; i++)
			h[i] = h[i] + u[i] > 0.0 ? h[i] + u[i] : 0.0;
	}
	ref_linear(tensor(m, "policy.weight", A, H), tensor(m, "policy.bias", A, 1), h, H, A, 0,
		   logits);
	ref_linear(tensor(m, "value.weight", 1, H), tensor(m, "value.bias", 1, 1), h, H, 1, 0,
		   value);
	*value = tanh(*value);
}

static void assert_close(double got, double want, double rel)
{
	double tol = rel * (fabs(want) > 1.0 ? fabs(want) : 1.0);

	if (!(fabs(got - want) <= tol))
		fail_msg("got %.9g want %.9g (tol %.3g)", got, want, tol);
}

static void test_tensor_table(void **state)
{
	const struct az_arch *a = &small;
	uint32_t n = az_model_tensor_count(a), H = 16, D = 9, A = 7;
	struct az_tensor t;
	size_t next = 0, weights = 0;

	(void)state;
	assert_int_equal(n, 2 + 4 * 3 + 4);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(az_model_tensor(a, i, &t), 0);
		assert_int_equal(t.offset, next);
		assert_true(t.ndim == 2 || (t.ndim == 1 && t.cols == 1));
		next += (size_t)t.rows * t.cols;
		weights += t.ndim == 2;
	}
	assert_int_equal(next, az_model_param_count(a));
	assert_int_equal(next, H * D + H + 3 * (2 * H * H + 2 * H) + A * H + A + H + 1);
	assert_int_equal(weights, 1 + 2 * 3 + 2);
	assert_int_equal(az_model_tensor(a, n, &t), -EINVAL);

	static const struct {
		uint32_t i;
		const char *name;
		uint32_t rows, cols, ndim;
	} want[] = {
		{ 0, "trunk.in.weight", 16, 9, 2 },    { 1, "trunk.in.bias", 16, 1, 1 },
		{ 2, "block.0.fc1.weight", 16, 16, 2 }, { 3, "block.0.fc1.bias", 16, 1, 1 },
		{ 4, "block.0.fc2.weight", 16, 16, 2 }, { 5, "block.0.fc2.bias", 16, 1, 1 },
		{ 13, "block.2.fc2.bias", 16, 1, 1 },   { 14, "policy.weight", 7, 16, 2 },
		{ 15, "policy.bias", 7, 1, 1 },         { 16, "value.weight", 1, 16, 2 },
		{ 17, "value.bias", 1, 1, 1 },
	};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		assert_int_equal(az_model_tensor(a, want[k].i, &t), 0);
		assert_string_equal(t.name, want[k].name);
		assert_int_equal(t.rows, want[k].rows);
		assert_int_equal(t.cols, want[k].cols);
		assert_int_equal(t.ndim, want[k].ndim);
	}
	assert_int_equal(t.offset + 1, az_model_param_count(a));
}

static void test_arch_parse(void **state)
{
	uint32_t h = 0, r = 0;

	(void)state;
	assert_int_equal(az_arch_parse("64x2", &h, &r), 0);
	assert_int_equal(h, 64);
	assert_int_equal(r, 2);
	assert_int_equal(az_arch_parse("128x10", &h, &r), 0);
	assert_int_equal(h, 128);
	assert_int_equal(r, 10);
	/* the library's limits (AZ_NET_HIDDEN_MAX 8192, AZ_NET_BLOCKS_MAX 128): at them, and past */
	assert_int_equal(az_arch_parse("8192x128", &h, &r), 0);
	struct az_arch a = { .inputs = 9, .hidden = AZ_NET_HIDDEN_MAX, .blocks = AZ_NET_BLOCKS_MAX,
			     .actions = 9 };

	assert_true(az_arch_valid(&a));
	a.hidden++;
	assert_false(az_arch_valid(&a));
	a.hidden--;
	a.blocks++;
	assert_false(az_arch_valid(&a));
	static const char *bad[] = { "x",     "0x1",  "64x",   "x2",  "64", "", "64x2x",
				     "6a4x2", "-1x2", "64x-2", "99999999999x1", "8193x1", "64x129" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h = r = 7;
		assert_int_equal(az_arch_parse(bad[i], &h, &r), -EINVAL);
		assert_int_equal(h, 7);
		assert_int_equal(r, 7);
	}
}

static void test_create_and_init(void **state)
{
	struct az_model *m1 = NULL, *m2 = NULL, *m3 = NULL, *bad = NULL;
	struct az_arch zero = small;
	struct az_tensor t;

	(void)state;
	zero.hidden = 0;
	assert_int_equal(az_model_create(&zero, &bad), -EINVAL);
	assert_null(bad);
	assert_int_equal(az_model_create(&small, &m1), 0);
	assert_int_equal(az_model_create(&small, &m2), 0);
	assert_int_equal(az_model_create(&small, &m3), 0);
	assert_int_equal(m1->n_params, az_model_param_count(&small));
	az_model_init_random(m1, 42);
	az_model_init_random(m2, 42);
	az_model_init_random(m3, 43);
	assert_memory_equal(m1->params, m2->params, m1->n_params * sizeof(float));
	assert_memory_not_equal(m1->params, m3->params, m1->n_params * sizeof(float));

	for (uint32_t i = 0; i < az_model_tensor_count(&small); i++) {
		assert_int_equal(az_model_tensor(&small, i, &t), 0);
		const float *p = m1->params + t.offset;
		size_t len = (size_t)t.rows * t.cols;
		double sq = 0.0;

		for (size_t k = 0; k < len; k++)
			sq += (double)p[k] * p[k];
		if (t.ndim == 1) {
			assert_true(sq == 0.0); /* biases start at zero */
			continue;
		}
		assert_true(sq > 0.0);
	}
	/* The input layer is plain He normal: sample std within 15 % of sqrt(2 / fan_in). */
	assert_int_equal(az_model_tensor(&small, 0, &t), 0);
	double sq = 0.0;

	for (size_t k = 0; k < (size_t)t.rows * t.cols; k++)
		sq += (double)m1->params[k] * m1->params[k];
	double std = sqrt(sq / (t.rows * t.cols)), he = sqrt(2.0 / small.inputs);

	assert_true(std > 0.85 * he && std < 1.15 * he);
	az_model_destroy(m1);
	az_model_destroy(m2);
	az_model_destroy(m3);
}

static void test_forward_reference(void **state)
{
	enum { B = 5 };
	struct az_model *m = random_model(&small, 7);
	struct az_acts acts;
	float x[B * 9];
	double logits[7], value;

	(void)state;
	random_fill(x, B * 9, 99);
	assert_int_equal(az_acts_create(&small, B, &acts), 0);
	az_model_forward(m, B, x, &acts);
	for (int b = 0; b < B; b++) {
		ref_forward(m, x + b * 9, logits, &value);
		for (int i = 0; i < 7; i++)
			assert_close(acts.logits[b * 7 + i], logits[i], 1e-5);
		assert_close(acts.value[b], value, 1e-5);
		/* A saturated tanh would make the value check vacuous. */
		assert_true(fabs(value) < 0.999);
	}
	az_acts_destroy(&acts);
	az_model_destroy(m);
}

static void test_forward_no_blocks(void **state)
{
	const struct az_arch a = { .inputs = 5, .hidden = 8, .blocks = 0, .actions = 3 };
	struct az_model *m = random_model(&a, 3);
	struct az_acts acts;
	float x[2 * 5];
	double logits[3], value;

	(void)state;
	random_fill(x, 10, 5);
	assert_int_equal(az_acts_create(&a, 2, &acts), 0);
	az_model_forward(m, 2, x, &acts);
	for (int b = 0; b < 2; b++) {
		ref_forward(m, x + b * 5, logits, &value);
		for (int i = 0; i < 3; i++)
			assert_close(acts.logits[b * 3 + i], logits[i], 1e-5);
		assert_close(acts.value[b], value, 1e-5);
	}
	az_acts_destroy(&acts);
	az_model_destroy(m);
}

static void test_batch_invariance(void **state)
{
	enum { B = 7 };
	struct az_model *m = random_model(&small, 11);
	struct az_acts big, one;
	float x[B * 9];

	(void)state;
	random_fill(x, B * 9, 12);
	assert_int_equal(az_acts_create(&small, B, &big), 0);
	assert_int_equal(az_acts_create(&small, 1, &one), 0);
	az_model_forward(m, B, x, &big);
	for (int b = 0; b < B; b++) {
		az_model_forward(m, 1, x + b * 9, &one);
		for (int i = 0; i < 7; i++)
			assert_close(one.logits[i], big.logits[b * 7 + i], 1e-6);
		assert_close(one.value[0], big.value[b], 1e-6);
	}
	az_acts_destroy(&big);
	az_acts_destroy(&one);
	az_model_destroy(m);
}

static void test_masked_softmax(void **state)
{
	const float logits[6] = { 1.0f, 2.0f, -3.0f, 1000.0f, 0.5f, 999.0f };
	const uint8_t legal[6] = { 1, 1, 0, 0, 1, 1 };
	const uint8_t none[6] = { 0 };
	float p[6];
	double sum = 0.0;

	(void)state;
	az_masked_softmax(logits, legal, 6, p);
	for (int i = 0; i < 6; i++) {
		assert_true(isfinite(p[i]) && p[i] >= 0.0f);
		if (!legal[i])
			assert_true(p[i] == 0.0f);
		sum += p[i];
	}
	assert_close(sum, 1.0, 1e-6);
	/* The illegal 1000 must not take part: 999 dominates, its ratio to 1.0 is e^998 (so 0). */
	assert_close(p[5], 1.0, 1e-6);
	/* Ratios follow exp of the logit difference. */
	const float small_l[3] = { 0.0f, 1.0f, 2.0f };
	const uint8_t all[3] = { 1, 1, 1 };

	az_masked_softmax(small_l, all, 3, p);
	assert_close(p[1] / p[0], exp(1.0), 1e-5);
	assert_close(p[2] / p[0], exp(2.0), 1e-5);
	assert_close(p[0] + p[1] + p[2], 1.0, 1e-6);

	az_masked_softmax(logits, none, 6, p);
	for (int i = 0; i < 6; i++)
		assert_true(p[i] == 0.0f);
}

/* The win/draw/loss softmax: ordinary logits, a saturating gap, and non-finite logits (1/3 each,
 * a NaN in any of the three positions: the max alone skips one in the first two). */
static void test_wdl_softmax(void **state)
{
	static const float bad[][3] = { { INFINITY, 0, 0 }, { -INFINITY, -INFINITY, -INFINITY },
					{ NAN, 1, 2 },      { 1, NAN, 2 },
					{ 1, 2, NAN },      { INFINITY, -INFINITY, 0 } };
	float q[3] = { 0.0f, 1.0f, 2.0f };

	(void)state;
	az_wdl_softmax(q);
	assert_close(q[0] + q[1] + q[2], 1.0, 1e-6);
	assert_close(q[1] / q[0], exp(1.0), 1e-5);
	assert_close(q[2] / q[0], exp(2.0), 1e-5);
	q[0] = 200.0f;
	q[1] = -200.0f;
	q[2] = -INFINITY; /* a loss ruled out */
	az_wdl_softmax(q);
	assert_true(q[0] == 1.0f && q[1] == 0.0f && q[2] == 0.0f);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(q, bad[i], sizeof(q));
		az_wdl_softmax(q);
		for (int k = 0; k < 3; k++)
			assert_true(q[k] == 1.0f / 3.0f);
	}
}

static void test_backend_cpu(void **state)
{
	enum { B = 6 };
	struct az_model *m0 = random_model(&small, 21), *m1 = random_model(&small, 22);
	struct az_arch other = small;
	struct az_model *wrong;
	struct az_backend *be = NULL;
	struct az_acts acts;
	float x[B * 9], logits[B * 7], value[B];
	char why[96];

	az_test_fp32_kernels(); /* compared bit for bit with the fp32 reference */
	(void)state;
	other.hidden = 8;
	wrong = random_model(&other, 23);
	random_fill(x, B * 9, 24);
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &small, B, &be, why, sizeof(why)), 0);
	assert_string_equal(az_backend_name(be), "cpu");
	assert_int_equal(az_backend_forward(be, 0, B, x, logits, value, NULL), -EINVAL); /* not loaded */
	assert_int_equal(az_backend_load(be, 0, m0), 0);
	assert_int_equal(az_backend_load(be, 1, m1), 0);
	assert_int_equal(az_backend_load(be, AZ_BACKEND_MODELS, m0), -EINVAL);
	assert_int_equal(az_backend_load(be, 0, wrong), -EINVAL);
	assert_int_equal(az_backend_forward(be, 0, B + 1, x, logits, value, NULL), -EINVAL);
	assert_int_equal(az_backend_forward(be, AZ_BACKEND_MODELS, B, x, logits, value, NULL), -EINVAL);

	assert_int_equal(az_acts_create(&small, B, &acts), 0);
	const struct az_model *ms[2] = { m0, m1 };

	for (uint32_t s = 0; s < 2; s++) {
		memset(logits, 0xff, sizeof(logits)); /* NaN poison */
		memset(value, 0xff, sizeof(value));
		assert_int_equal(az_backend_forward(be, s, B, x, logits, value, NULL), 0);
		cpu_backend_forward(ms[s], B, x, &acts);
		assert_memory_equal(logits, acts.logits, sizeof(logits));
		assert_memory_equal(value, acts.value, sizeof(value));
	}
	/* The backend keeps its own copy: changing the model after load changes nothing. */
	m0->params[0] += 1.0f;
	float again[B * 7], vagain[B];

	assert_int_equal(az_backend_forward(be, 1, B, x, logits, value, NULL), 0);
	assert_int_equal(az_backend_forward(be, 0, B, x, again, vagain, NULL), 0);
	cpu_backend_forward(m0, B, x, &acts);
	assert_memory_not_equal(again, acts.logits, sizeof(again));
	assert_memory_not_equal(again, logits, sizeof(again)); /* slots stay distinct */

	az_acts_destroy(&acts);
	az_backend_destroy(be);
	az_model_destroy(m0);
	az_model_destroy(m1);
	az_model_destroy(wrong);
}

static void test_backend_select(void **state)
{
	struct az_backend *be = NULL;
	enum az_backend_kind k;
	char why[96] = "";

	(void)state;
	assert_int_equal(az_backend_parse("auto", &k), 0);
	assert_int_equal(k, AZ_BACKEND_AUTO);
	assert_int_equal(az_backend_parse("cpu", &k), 0);
	assert_int_equal(k, AZ_BACKEND_CPU);
	assert_int_equal(az_backend_parse("cuda", &k), 0);
	assert_int_equal(k, AZ_BACKEND_CUDA);
	assert_int_equal(az_backend_parse("gpu", &k), -EINVAL);
	assert_int_equal(az_backend_parse("", &k), -EINVAL);
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &small, 0, &be, why, sizeof(why)),
			 -EINVAL);

	assert_int_equal(az_backend_create(AZ_BACKEND_AUTO, &small, 4, &be, why, sizeof(why)), 0);
	if (az_cuda_available()) {
		assert_string_equal(az_backend_name(be), "cuda");
		az_backend_destroy(be);
		return;
	}
	assert_string_equal(az_backend_name(be), "cpu");
	assert_true(strncmp(why, "cpu: ", 5) == 0);
	assert_true(strstr(why, "CUDA") != NULL);
	az_backend_destroy(be);

	be = NULL;
	why[0] = '\0';
	assert_int_equal(az_backend_create(AZ_BACKEND_CUDA, &small, 4, &be, why, sizeof(why)),
			 -ENODEV);
	assert_null(be);
	assert_true(strstr(why, "cuda") != NULL);
	/* A NULL why buffer is allowed. */
	assert_int_equal(az_backend_create(AZ_BACKEND_CUDA, &small, 4, &be, NULL, 0), -ENODEV);
}

AZ_TEST_MAIN(cmocka_unit_test(test_tensor_table), cmocka_unit_test(test_arch_parse),
	     cmocka_unit_test(test_create_and_init), cmocka_unit_test(test_forward_reference),
	     cmocka_unit_test(test_forward_no_blocks), cmocka_unit_test(test_batch_invariance),
	     cmocka_unit_test(test_masked_softmax), cmocka_unit_test(test_wdl_softmax),
	     cmocka_unit_test(test_backend_cpu),
	     cmocka_unit_test(test_backend_select))
