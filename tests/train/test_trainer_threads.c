/* SPDX-License-Identifier: MIT */
/* The data-parallel CPU trainer (az_train_params.threads): for the MLP and the ResNet, tanh and
 * win/draw/loss heads, steps on 2, 3 and 5 threads reach the weights and losses of one thread up
 * to float rounding (SGD, whose update is linear in the gradient, so a lost or doubled part
 * shows at once), the same thread count twice gives the same bits, a minibatch smaller than the
 * pool (empty parts) works, and az_train_threads_auto() stays in its bounds. Labelled stress:
 * ThreadSanitizer runs it. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/pool.h"
#include "base/rng.h"
#include "net/model.h"
#include "tests/test_util.h"
#include "train/trainer.h"

enum { A = 4, BMAX = 13, XMAX = 32, STEPS = 4 };

static const struct az_arch archs[] = {
	{.inputs = 5, .hidden = 16, .blocks = 2, .actions = A},
	{.inputs = 5, .hidden = 16, .blocks = 2, .actions = A, .value_head = AZ_VALUE_WDL},
	{.inputs = 24,
	 .hidden = 8,
	 .blocks = 2,
	 .actions = A,
	 .kind = AZ_NET_RESNET,
	 .planes = 2,
	 .height = 3,
	 .width = 4},
	{.inputs = 24,
	 .hidden = 8,
	 .blocks = 1,
	 .actions = A,
	 .kind = AZ_NET_RESNET,
	 .planes = 2,
	 .height = 3,
	 .width = 4,
	 .value_head = AZ_VALUE_WDL},
};

struct data {
	float x[BMAX * XMAX], pi[BMAX * A], z[BMAX];
};

/* Random inputs, target distributions with an illegal move (-0.0f), outcomes in [-1, 1]. */
static void make_data(struct data *d, uint32_t inputs)
{
	struct az_rng rng;

	az_rng_seed(&rng, 99);
	for (uint32_t i = 0; i < BMAX * inputs; i++)
		d->x[i] = (float)(2.0 * az_rng_uniform(&rng) - 1.0);
	for (uint32_t b = 0; b < BMAX; b++) {
		float s = 0.0f;

		for (uint32_t a = 0; a < A; a++)
			s += d->pi[b * A + a] = (float)az_rng_uniform(&rng);
		for (uint32_t a = 0; a < A; a++)
			d->pi[b * A + a] /= s;
		d->pi[b * A + b % A] = -0.0f;
		d->z[b] = (float)(2.0 * az_rng_uniform(&rng) - 1.0);
	}
}

/* STEPS SGD steps of `batch` rows on `threads` threads from the same initial weights; the
 * model (the caller destroys it) and the last step's loss. */
static struct az_model *train(const struct az_arch *a, uint32_t threads, uint32_t batch,
			      struct az_loss *loss)
{
	struct az_model *m = NULL;
	struct az_train_cpu *t = NULL;
	struct az_train_params p;
	struct data d;

	memset(&d, 0, sizeof(d));
	make_data(&d, a->inputs);
	assert_int_equal(az_model_create(a, &m), 0);
	az_model_init_random(m, 11);
	az_train_params_default(&p);
	p.optim = AZ_OPTIM_SGD;
	p.lr = 0.05f;
	p.l2 = 0.01f;
	p.threads = threads;
	assert_int_equal(az_train_cpu_create(m, &p, BMAX, &t), 0);
	for (int s = 0; s < STEPS; s++)
		assert_int_equal(az_train_cpu_step(t, batch, d.x, d.pi, d.z, loss), 0);
	az_train_cpu_destroy(t);
	return m;
}

static void assert_close(const struct az_model *one, const struct az_model *many)
{
	double worst = 0.0;

	for (size_t i = 0; i < one->n_params; i++) {
		double d = fabs((double)one->params[i] - many->params[i]);

		d /= 1.0 + fabs((double)one->params[i]);
		worst = d > worst ? d : worst;
	}
	assert_true(worst < 2e-5);
}

static void test_threads_match_one(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++) {
		struct az_loss l1, ln;
		struct az_model *one = train(&archs[i], 1, BMAX, &l1);
		static const uint32_t counts[] = {2, 3, 5};

		for (size_t c = 0; c < 3; c++) {
			struct az_model *many = train(&archs[i], counts[c], BMAX, &ln);

			assert_close(one, many);
			assert_true(fabsf(l1.total - ln.total) <= 1e-5f * (1.0f + fabsf(l1.total)));
			assert_true(fabsf(l1.policy - ln.policy) <= 1e-5f * (1.0f + l1.policy));
			assert_true(fabsf(l1.value - ln.value) <= 1e-5f * (1.0f + l1.value));
			assert_true(l1.l2 == ln.l2 || fabsf(l1.l2 - ln.l2) <= 1e-5f * l1.l2);
			az_model_destroy(many);
		}
		az_model_destroy(one);
	}
}

static void test_same_count_same_bits(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++) {
		struct az_loss la, lb;
		struct az_model *a = train(&archs[i], 3, BMAX, &la),
				*b = train(&archs[i], 3, BMAX, &lb);

		assert_memory_equal(a->params, b->params, a->n_params * sizeof(float));
		assert_true(la.total == lb.total);
		az_model_destroy(a);
		az_model_destroy(b);
	}
}

/* 2 rows on 5 threads: parts 0, 2 and 4 hold no row. */
static void test_batch_below_threads(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++) {
		struct az_loss l1, l5;
		struct az_model *one = train(&archs[i], 1, 2, &l1),
				*five = train(&archs[i], 5, 2, &l5);

		assert_close(one, five);
		assert_true(fabsf(l1.total - l5.total) <= 1e-5f * (1.0f + fabsf(l1.total)));
		az_model_destroy(one);
		az_model_destroy(five);
	}
}

static void test_limits_and_auto(void **state)
{
	(void)state;
	struct az_model *m = NULL;
	struct az_train_cpu *t = NULL;
	struct az_train_params p;

	assert_int_equal(az_model_create(&archs[0], &m), 0);
	az_train_params_default(&p);
	assert_int_equal(p.threads, 1);
	p.threads = 0;
	assert_int_equal(az_train_cpu_create(m, &p, 8, &t), -EINVAL);
	p.threads = AZ_TRAIN_THREADS_MAX + 1;
	assert_int_equal(az_train_cpu_create(m, &p, 8, &t), -EINVAL);
	assert_null(t);
	az_model_destroy(m);

	uint32_t cpus = az_cpus_available();

	assert_int_equal(az_train_threads_auto(0), 1);
	assert_int_equal(az_train_threads_auto(31), 1); /* a part of fewer than 16 rows: no split */
	uint32_t n = az_train_threads_auto(128);

	assert_true(n >= 1 && n <= 8 && n <= cpus);
	assert_int_equal(n, cpus < 8 ? cpus : 8);
	assert_true(az_train_threads_auto(65536) <= AZ_TRAIN_THREADS_MAX);
}

AZ_TEST_MAIN(cmocka_unit_test(test_threads_match_one), cmocka_unit_test(test_same_count_same_bits),
	     cmocka_unit_test(test_batch_below_threads), cmocka_unit_test(test_limits_and_auto))
