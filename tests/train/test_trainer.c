/* SPDX-License-Identifier: MIT */
/* The optimisers on a fixed tiny dataset: Adam must fit 8 examples (loss down by > 3x), SGD with
 * momentum must lower the loss, eval must not move the weights, and a batch above max_batch is
 * rejected. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/model.h"
#include "base/rng.h"
#include "tests/test_util.h"
#include "train/trainer.h"

enum { D = 6, H = 16, R = 1, A = 4, N = 8 };

static const struct az_arch arch = { .inputs = D, .hidden = H, .blocks = R, .actions = A };

struct data {
	float x[N * D], pi[N * A], z[N];
};

/* Random inputs with one-hot policy targets and +-1 outcomes, so a perfect fit has loss ~0 (the
 * minimum cross-entropy of a one-hot target is 0). */
static void make_data(struct data *d)
{
	struct az_rng rng;

	az_rng_seed(&rng, 77);
	memset(d, 0, sizeof(*d));
	for (int i = 0; i < N * D; i++)
		d->x[i] = (float)(2.0 * az_rng_uniform(&rng) - 1.0);
	for (int b = 0; b < N; b++) {
		d->pi[b * A + az_rng_below(&rng, A)] = 1.0f;
		d->z[b] = b % 2 ? 1.0f : -1.0f;
	}
}

static struct az_model *new_model(void)
{
	struct az_model *m = NULL;

	assert_int_equal(az_model_create(&arch, &m), 0);
	az_model_init_random(m, 5);
	return m;
}

static void test_params_default(void **state)
{
	struct az_train_params p;

	(void)state;
	memset(&p, 0xff, sizeof(p));
	az_train_params_default(&p);
	assert_int_equal(p.optim, AZ_OPTIM_ADAM);
	assert_true(p.lr == 1e-3f && p.l2 == 1e-4f && p.momentum == 0.9f);
	assert_true(p.beta1 == 0.9f && p.beta2 == 0.999f && p.eps == 1e-8f);
}

/* Train full-batch for steps steps; returns the loss reported by the last step. Checks that each
 * step's reported loss is the loss before that step (it matches eval just before it). */
static struct az_loss train(struct az_train_cpu *t, const struct data *d, int steps)
{
	struct az_loss pre, rep = { 0 };

	for (int s = 0; s < steps; s++) {
		if (s % 50 == 0)
			assert_int_equal(az_train_cpu_eval(t, N, d->x, d->pi, d->z, &pre), 0);
		assert_int_equal(az_train_cpu_step(t, N, d->x, d->pi, d->z, &rep), 0);
		if (s % 50 == 0)
			assert_true(rep.total == pre.total);
	}
	return rep;
}

/* Train a fresh model with p, full-batch, for steps steps: the loss before (*first) and after
 * (*last) the training. */
static void fit(const struct az_train_params *p, int steps, struct az_loss *first,
		struct az_loss *last)
{
	struct az_model *m = new_model();
	struct az_train_cpu *t = NULL;
	struct data d;

	make_data(&d);
	assert_int_equal(az_train_cpu_create(m, p, N, &t), 0);
	assert_int_equal(az_train_cpu_eval(t, N, d.x, d.pi, d.z, first), 0);
	train(t, &d, steps);
	assert_int_equal(az_train_cpu_eval(t, N, d.x, d.pi, d.z, last), 0);
	az_train_cpu_destroy(t);
	az_model_destroy(m);
}

static void test_adam_fits(void **state)
{
	struct az_train_params p;
	struct az_loss first, last;

	(void)state;
	az_train_params_default(&p);
	p.lr = 1e-2f;
	fit(&p, 300, &first, &last);
	/* An untrained net starts near a uniform policy and a zero value. */
	assert_true(fabsf(first.policy - logf(A)) < 0.1f);
	assert_true(first.value > 0.8f && first.value < 1.2f);
	assert_true(last.total < 0.3f * first.total);
	assert_true(last.policy < 0.3f * first.policy);
	assert_true(last.value < 0.3f * first.value);
}

static void test_sgd_momentum_decreases(void **state)
{
	struct az_train_params p;
	struct az_loss first, last;

	(void)state;
	az_train_params_default(&p);
	p.optim = AZ_OPTIM_SGD;
	p.lr = 0.02f;
	p.momentum = 0.9f;
	fit(&p, 150, &first, &last);
	assert_true(last.total < 0.3f * first.total);
}

/* Two steps of each optimiser against the update rules written out from the gradients that
 * az_train_loss_grad reports at the same points. */
static void test_update_rules(void **state)
{
	const enum az_optim kinds[2] = { AZ_OPTIM_SGD, AZ_OPTIM_ADAM };
	struct data d;

	(void)state;
	make_data(&d);
	for (int k = 0; k < 2; k++) {
		struct az_model *m = new_model();
		size_t n = m->n_params;
		float *w0 = malloc(n * sizeof(float)), *w1 = malloc(n * sizeof(float));
		float *g0 = malloc(n * sizeof(float)), *g1 = malloc(n * sizeof(float));
		struct az_train_params p;
		struct az_train_cpu *t = NULL;
		struct az_loss l;

		assert_true(w0 && w1 && g0 && g1);
		az_train_params_default(&p);
		p.optim = kinds[k];
		p.lr = 0.01f;
		assert_int_equal(az_train_cpu_create(m, &p, N, &t), 0);
		memcpy(w0, m->params, n * sizeof(float));
		assert_int_equal(az_train_loss_grad(m, N, d.x, d.pi, d.z, p.l2, NULL, g0, &l), 0);
		assert_int_equal(az_train_cpu_step(t, N, d.x, d.pi, d.z, NULL), 0);
		memcpy(w1, m->params, n * sizeof(float));
		assert_int_equal(az_train_loss_grad(m, N, d.x, d.pi, d.z, p.l2, NULL, g1, &l), 0);
		assert_int_equal(az_train_cpu_step(t, N, d.x, d.pi, d.z, NULL), 0);
		for (size_t i = 0; i < n; i++) {
			double want1, want2;

			if (kinds[k] == AZ_OPTIM_SGD) {
				want1 = w0[i] - p.lr * g0[i];
				want2 = w1[i] - p.lr * (p.momentum * g0[i] + g1[i]);
			} else {
				/* Bias-corrected moments: step 1 is lr * g / (|g| + eps). */
				double m1 = 0.1 * g0[i], v1 = 0.001 * g0[i] * g0[i];
				double m2 = 0.9 * m1 + 0.1 * g1[i];
				double v2 = 0.999 * v1 + 0.001 * g1[i] * g1[i];
				double mh1 = m1 / 0.1, vh1 = v1 / 0.001;
				double mh2 = m2 / (1 - 0.81), vh2 = v2 / (1 - 0.999 * 0.999);

				want1 = w0[i] - p.lr * mh1 / (sqrt(vh1) + p.eps);
				want2 = w1[i] - p.lr * mh2 / (sqrt(vh2) + p.eps);
			}
			if (fabs(w1[i] - want1) > 1e-6 || fabs(m->params[i] - want2) > 1e-6)
				fail_msg("optim %d param %zu: %g %g want %g %g", kinds[k], i, w1[i],
					 m->params[i], want1, want2);
		}
		az_train_cpu_destroy(t);
		az_model_destroy(m);
		free(g1);
		free(g0);
		free(w1);
		free(w0);
	}
}

static void test_eval_and_limits(void **state)
{
	struct az_model *m = new_model();
	struct az_train_params p;
	struct az_train_cpu *t = NULL;
	struct az_loss l1, l2;
	struct data d;
	size_t bytes = m->n_params * sizeof(float);
	float *copy = malloc(bytes);

	(void)state;
	assert_non_null(copy);
	make_data(&d);
	az_train_params_default(&p);
	p.lr = 0.0f;
	assert_int_equal(az_train_cpu_create(m, &p, N, &t), -EINVAL);
	az_train_params_default(&p);
	assert_int_equal(az_train_cpu_create(m, &p, 0, &t), -EINVAL);
	assert_int_equal(az_train_cpu_create(m, &p, N / 2, &t), 0);

	memcpy(copy, m->params, bytes);
	assert_int_equal(az_train_cpu_step(t, N / 2 + 1, d.x, d.pi, d.z, &l1), -EINVAL);
	assert_int_equal(az_train_cpu_eval(t, N / 2 + 1, d.x, d.pi, d.z, &l1), -EINVAL);
	assert_int_equal(az_train_cpu_step(t, 0, d.x, d.pi, d.z, &l1), -EINVAL);
	assert_memory_equal(copy, m->params, bytes); /* rejected steps do not touch the weights */
	assert_int_equal(az_train_cpu_eval(t, N / 2, d.x, d.pi, d.z, &l1), 0);
	assert_int_equal(az_train_cpu_eval(t, N / 2, d.x, d.pi, d.z, &l2), 0);
	assert_memory_equal(copy, m->params, bytes); /* eval does not either */
	assert_true(l1.total == l2.total);
	assert_true(l1.l2 > 0.0f); /* default l2 = 1e-4 is applied */
	assert_int_equal(az_train_cpu_step(t, N / 2, d.x, d.pi, d.z, NULL), 0);
	assert_memory_not_equal(copy, m->params, bytes);
	az_train_cpu_destroy(t);
	az_model_destroy(m);
	free(copy);
}

/* A value-only row (all-zero policy: a fast search under playout-cap randomisation) adds no
 * policy loss and no policy gradient, but its value error still trains. */
static void test_value_only_rows(void **state)
{
	struct az_model *m = new_model();
	struct az_loss full, half, none;
	struct az_tensor pw = {.rows = 0}, vw = {.rows = 0};
	struct data d;
	float *grad = malloc(m->n_params * sizeof(float));
	float lg[A] = {0.3f, -1.0f, 2.0f, 0.1f}, tp[A] = {0}, dl[A];

	(void)state;
	assert_non_null(grad);
	assert_true(az_train_policy_xent(lg, tp, A, 1.0, dl) == 0.0);
	for (int a = 0; a < A; a++)
		assert_true(dl[a] == 0.0f);

	make_data(&d);
	assert_int_equal(az_train_loss_grad(m, N / 2, d.x, d.pi, d.z, 0.0f, NULL, grad, &full), 0);
	memset(d.pi + (N / 2) * A, 0, (N / 2) * A * sizeof(float)); /* rows N/2.. value only */
	assert_int_equal(az_train_loss_grad(m, N, d.x, d.pi, d.z, 0.0f, NULL, grad, &half), 0);
	/* Mean over the batch: the value-only half adds nothing to the sum. */
	assert_float_equal(half.policy, full.policy * 0.5f, 1e-5);

	memset(d.pi, 0, sizeof(d.pi));
	assert_int_equal(az_train_loss_grad(m, N, d.x, d.pi, d.z, 0.0f, NULL, grad, &none), 0);
	assert_true(none.policy == 0.0f && none.value > 0.0f);
	for (uint32_t i = 0; i < az_model_tensor_count(&arch); i++) {
		struct az_tensor t;

		assert_int_equal(az_model_tensor(&arch, i, &t), 0);
		if (!strcmp(t.name, "policy.weight"))
			pw = t;
		if (!strcmp(t.name, "value.weight"))
			vw = t;
	}
	assert_true(pw.rows == A && vw.rows == 1);
	for (size_t k = 0; k < (size_t)pw.rows * pw.cols; k++)
		assert_true(grad[pw.offset + k] == 0.0f);
	double vsq = 0.0;
	for (size_t k = 0; k < (size_t)vw.rows * vw.cols; k++)
		vsq += (double)grad[vw.offset + k] * grad[vw.offset + k];
	assert_true(vsq > 0.0);
	free(grad);
	az_model_destroy(m);
}

AZ_TEST_MAIN(cmocka_unit_test(test_params_default), cmocka_unit_test(test_adam_fits),
	     cmocka_unit_test(test_sgd_momentum_decreases), cmocka_unit_test(test_update_rules),
	     cmocka_unit_test(test_eval_and_limits), cmocka_unit_test(test_value_only_rows))
