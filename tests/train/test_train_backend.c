/* SPDX-License-Identifier: MIT */
/* The training ops table (train/train_backend.h): the cpu table gives bit-identical losses and
 * parameters to the CPU trainer called directly (Adam and SGD, a few steps); auto picks cpu; cuda
 * without a device is -ENODEV with a reason (skipped where a device is visible); bad arguments are
 * -EINVAL. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "gpu/backend.h"
#include "net/model.h"
#include "tests/test_util.h"
#include "train/train_backend.h"
#include "train/trainer.h"

enum { D = 6, H = 16, R = 2, A = 5, N = 8, STEPS = 4 };

static const struct az_arch arch = { .inputs = D, .hidden = H, .blocks = R, .actions = A };

struct data {
	float x[N * D], pi[N * A], z[N];
};

/* Random inputs, a random distribution per policy row, outcomes in {-1, 0, 1}. */
static void make_data(struct data *d, uint64_t seed)
{
	struct az_rng rng;

	az_rng_seed(&rng, seed);
	for (int i = 0; i < N * D; i++)
		d->x[i] = (float)(2.0 * az_rng_uniform(&rng) - 1.0);
	for (int b = 0; b < N; b++) {
		float sum = 0.0f;

		for (int a = 0; a < A; a++) {
			d->pi[b * A + a] = (float)az_rng_uniform(&rng);
			sum += d->pi[b * A + a];
		}
		for (int a = 0; a < A; a++)
			d->pi[b * A + a] /= sum;
		d->z[b] = (float)az_rng_below(&rng, 3) - 1.0f;
	}
}

static struct az_model *new_model(void)
{
	struct az_model *m = NULL;

	assert_int_equal(az_model_create(&arch, &m), 0);
	az_model_init_random(m, 9);
	return m;
}

/* Minibatch s: full batches and half batches in turn, so both sizes go through each path. */
static uint32_t batch_of(int s)
{
	return s % 2 ? N / 2 : N;
}

static void same_steps(enum az_optim optim, enum az_backend_kind kind)
{
	struct az_model *md = new_model(), *mt = new_model();
	struct az_train_cpu *direct = NULL;
	struct az_train_backend *table = NULL;
	struct az_train_params p;
	struct az_loss ld, lt;
	char why[128];

	az_train_params_default(&p);
	p.optim = optim;
	p.lr = optim == AZ_OPTIM_ADAM ? 1e-3f : 1e-2f;
	assert_int_equal(az_train_cpu_create(md, &p, N, &direct), 0);
	assert_int_equal(az_train_backend_create(kind, mt, &p, N, &table, why, sizeof(why)), 0);
	assert_string_equal(az_train_backend_name(table), "cpu");
	assert_non_null(strstr(why, "cpu"));
	for (int s = 0; s < STEPS; s++) {
		struct data d;

		make_data(&d, 100 + (uint64_t)s);
		memset(&ld, 0xa5, sizeof(ld));
		memset(&lt, 0x5a, sizeof(lt));
		assert_int_equal(az_train_cpu_step(direct, batch_of(s), d.x, d.pi, d.z, &ld), 0);
		assert_int_equal(az_train_backend_step(table, batch_of(s), d.x, d.pi, d.z, &lt), 0);
		assert_memory_equal(&ld, &lt, sizeof(ld));
		assert_int_equal(az_train_cpu_eval(direct, N, d.x, d.pi, d.z, &ld), 0);
		assert_int_equal(az_train_backend_eval(table, N, d.x, d.pi, d.z, &lt), 0);
		assert_memory_equal(&ld, &lt, sizeof(ld));
	}
	assert_int_equal(az_train_backend_sync(table), 0);
	assert_memory_equal(md->params, mt->params, md->n_params * sizeof(float));
	az_train_backend_destroy(table);
	az_train_cpu_destroy(direct);
	az_model_destroy(mt);
	az_model_destroy(md);
}

static void test_adam_table_matches_direct(void **state)
{
	(void)state;
	same_steps(AZ_OPTIM_ADAM, AZ_BACKEND_CPU);
}

static void test_sgd_table_matches_direct(void **state)
{
	(void)state;
	same_steps(AZ_OPTIM_SGD, AZ_BACKEND_CPU);
}

static void test_auto_is_cpu(void **state)
{
	(void)state;
	same_steps(AZ_OPTIM_ADAM, AZ_BACKEND_AUTO);
}

static void test_cuda_needs_device(void **state)
{
	struct az_model *m = new_model();
	struct az_train_backend *b = NULL;
	struct az_train_params p;
	void *ctx = NULL;
	char why[128] = "";

	(void)state;
	if (az_cuda_available()) {
		az_model_destroy(m);
		skip();
	}
	az_train_params_default(&p);
	assert_int_equal(az_train_backend_create(AZ_BACKEND_CUDA, m, &p, N, &b, why, sizeof(why)),
			 -ENODEV);
	assert_null(b);
	assert_non_null(strstr(why, "cuda requested but unavailable"));
	/* The table itself refuses too (gpu/cuda_absent.c or the device probe). */
	assert_int_equal(az_train_cuda_ops.create(m, &p, N, &ctx), -ENODEV);
	assert_null(ctx);
	az_model_destroy(m);
}

static void test_bad_arguments(void **state)
{
	struct az_model *m = new_model();
	struct az_train_backend *b = NULL;
	struct az_train_params p;
	struct az_loss l;
	struct data d;

	(void)state;
	make_data(&d, 7);
	az_train_params_default(&p);
	assert_int_equal(az_train_backend_create((enum az_backend_kind)7, m, &p, N, &b, NULL, 0),
			 -EINVAL);
	assert_int_equal(az_train_backend_create(AZ_BACKEND_CPU, m, &p, 0, &b, NULL, 0), -EINVAL);
	assert_int_equal(az_train_backend_create(AZ_BACKEND_CPU, m, &p, AZ_TRAIN_BATCH_MAX + 1, &b,
						 NULL, 0),
			 -EINVAL);
	assert_int_equal(az_train_backend_create(AZ_BACKEND_CPU, NULL, &p, N, &b, NULL, 0),
			 -EINVAL);
	p.lr = 0.0f;
	assert_int_equal(az_train_backend_create(AZ_BACKEND_CPU, m, &p, N, &b, NULL, 0), -EINVAL);
	assert_null(b);
	az_train_params_default(&p);
	assert_int_equal(az_train_backend_create(AZ_BACKEND_CPU, m, &p, N / 2, &b, NULL, 0), 0);
	assert_int_equal(az_train_backend_step(b, N / 2 + 1, d.x, d.pi, d.z, &l), -EINVAL);
	assert_int_equal(az_train_backend_step(b, 0, d.x, d.pi, d.z, &l), -EINVAL);
	assert_int_equal(az_train_backend_step(b, N / 2, NULL, d.pi, d.z, &l), -EINVAL);
	assert_int_equal(az_train_backend_eval(b, N / 2, d.x, d.pi, d.z, NULL), -EINVAL);
	assert_int_equal(az_train_backend_step(b, N / 2, d.x, d.pi, d.z, NULL), 0);
	assert_int_equal(az_train_backend_load(b), 0); /* cpu: m->params is the state */
	assert_int_equal(az_train_backend_sync(NULL), -EINVAL);
	assert_int_equal(az_train_backend_load(NULL), -EINVAL);
	az_train_backend_destroy(b);
	az_train_backend_destroy(NULL);
	az_model_destroy(m);
}

AZ_TEST_MAIN(cmocka_unit_test(test_adam_table_matches_direct),
	     cmocka_unit_test(test_sgd_table_matches_direct), cmocka_unit_test(test_auto_is_cpu),
	     cmocka_unit_test(test_cuda_needs_device), cmocka_unit_test(test_bad_arguments))
