/* SPDX-License-Identifier: MIT */
/* The GPU trainer (the device code of gpu/cuda_train.h, and the cuda table of
 * train/train_backend.h) against the CPU trainer (train/trainer.h): same model, same minibatches;
 * loss terms, the full gradient and the parameters after Adam and SGD steps agree within fp32
 * tolerance, for MLPs and ResNets with tanh and win/draw/loss value heads, and load/sync
 * round-trip the parameters. Outputs are poisoned with NaN first. Exits
 * 77 (skipped) without a CUDA device. */
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
#include "gpu/cuda_train.h"
#include "net/model.h"
#include "base/rng.h"
#include "tests/gpu/gpu_test_util.h"
#include "train/train_backend.h"
#include "train/trainer.h"

#define B 13

static const struct az_arch mlp_arch = { .inputs = 9, .hidden = 16, .blocks = 2, .actions = 7 };
/* Connect Four's board: rows and columns differ, so a swapped stride shows */
static const struct az_arch resnet_arch = { .inputs = 84, .hidden = 8, .blocks = 2, .actions = 7,
					    .kind = AZ_NET_RESNET, .planes = 2, .height = 6,
					    .width = 7 };
/* the same with win/draw/loss value heads (cross-entropy value loss, three value outputs) */
static const struct az_arch mlp_wdl_arch = { .inputs = 9, .hidden = 16, .blocks = 2, .actions = 7,
					     .value_head = AZ_VALUE_WDL };
static const struct az_arch resnet_wdl_arch = { .inputs = 84, .hidden = 8, .blocks = 2,
						.actions = 7, .kind = AZ_NET_RESNET, .planes = 2,
						.height = 6, .width = 7,
						.value_head = AZ_VALUE_WDL };
static const struct az_arch *arch_p = &mlp_arch; /* the running test's */
static double g_tol = 1e-5;                      /* and its tolerance */

struct batch {
	float x[B * 84], pi[B * 7], z[B];
};

/* Random inputs; pi a distribution per row with some illegal (-0.0f) and unvisited (0) moves; z
 * a result in {-1, 0, 1}, and for a win/draw/loss head every third row a blend in (-1, 1) (the
 * replay's --value-mix target: a target with mass on a draw and on one result). */
static void make_batch(struct batch *b, uint64_t seed)
{
	struct az_rng rng;

	az_rng_seed(&rng, seed);
	fill_uniform(b->x, sizeof(b->x) / 4, &rng, -1, 1);
	for (uint32_t r = 0; r < B; r++) {
		float *p = b->pi + r * arch_p->actions, sum = 0.0f;

		for (uint32_t a = 0; a < arch_p->actions; a++) {
			double u = az_rng_uniform(&rng);

			/* illegal (-0.0f: train/replay.h), unvisited, or a share of the target */
			p[a] = u < 0.15 ? -0.0f : u < 0.3 ? 0.0f : (float)az_rng_uniform(&rng);
			sum += p[a];
		}
		for (uint32_t a = 0; a < arch_p->actions && sum > 0.0f; a++)
			p[a] /= sum;
		b->z[r] = (float)az_rng_below(&rng, 3) - 1.0f;
		if (arch_p->value_head == AZ_VALUE_WDL && r % 3 == 2)
			b->z[r] = (float)(1.8 * az_rng_uniform(&rng) - 0.9);
	}
}

/* Each tensor of got within tol of want, relative to the tensor's largest entry (normwise:
 * elementwise relative error is meaningless for gradients that cancel to ~0). */
static void check_params(const float *got, const float *want, double tol, const char *what)
{
	for (uint32_t i = 0; i < az_model_tensor_count(arch_p); i++) {
		struct az_tensor t;
		double scale = 1e-6;

		assert_int_equal(az_model_tensor(arch_p, i, &t), 0);
		size_t n = (size_t)t.rows * t.cols;

		for (size_t k = 0; k < n; k++)
			scale = fmax(scale, fabs(want[t.offset + k]));
		double worst = 0.0;

		for (size_t k = 0; k < n; k++) {
			double d = fabs((double)got[t.offset + k] - want[t.offset + k]);

			if (!(d <= tol * scale))
				fail_msg("%s %s[%zu]: gpu %.9g cpu %.9g", what, t.name, k,
					 got[t.offset + k], want[t.offset + k]);
			worst = fmax(worst, d / scale);
		}
		char name[128];

		snprintf(name, sizeof(name), "%s %s", what, t.name);
		report_error(name, "max rel to tensor max", n, worst, tol);
	}
}

static void check_loss(const struct az_loss *got, const struct az_loss *want)
{
	const float g[4] = { got->policy, got->value, got->l2, got->total };
	const float w[4] = { want->policy, want->value, want->l2, want->total };

	check_close_tol(g, w, 4, g_tol, "loss");
}

static struct az_model *copy_model(const struct az_model *src)
{
	struct az_model *m = NULL;

	assert_int_equal(az_model_create(&src->arch, &m), 0);
	memcpy(m->params, src->params, src->n_params * sizeof(float));
	return m;
}

static void test_loss_and_gradient(void **state)
{
	struct az_model *m = random_model(arch_p, 21);
	struct az_cuda_optim o = { .adam = 1, .lr = 1e-3f, .l2 = 1e-4f, .beta1 = 0.9f,
				   .beta2 = 0.999f, .eps = 1e-8f };
	struct az_cuda_train_dev *t = NULL;
	struct az_cuda_loss gl;
	struct az_loss cl;
	struct batch b;
	float *gc = xmalloc(m->n_params * 4), *gg = xmalloc(m->n_params * 4);

	(void)state;
	make_batch(&b, 22);
	assert_int_equal(az_train_loss_grad(m, B, b.x, b.pi, b.z, o.l2, NULL, gc, &cl), 0);
	assert_int_equal(az_cuda_train_dev_create(arch_p, m->params, &o, B, &t), 0);
	poison(gg, m->n_params * 4);
	poison(&gl, sizeof(gl));
	assert_int_equal(az_cuda_train_dev_grad(t, B, b.x, b.pi, b.z, gg, &gl), 0);
	const double got[3] = { gl.policy, gl.value, gl.l2 };
	const double want[3] = { cl.policy, cl.value, cl.l2 };

	check_close_f64(got, want, 3, g_tol, "loss terms");
	check_params(gg, gc, g_tol, "gradient");
	/* Evaluation returns the same loss and leaves the weights alone. */
	poison(&gl, sizeof(gl));
	assert_int_equal(az_cuda_train_dev_eval(t, B, b.x, b.pi, b.z, &gl), 0);
	assert_true(fabs(gl.policy - cl.policy) <= g_tol * fmax(1.0, cl.policy));
	poison(gg, m->n_params * 4);
	assert_int_equal(az_cuda_train_dev_download_params(t, gg), 0);
	assert_memory_equal(gg, m->params, m->n_params * 4);
	assert_int_equal(az_cuda_train_dev_grad(t, B + 1, b.x, b.pi, b.z, NULL, &gl), -EINVAL);
	az_cuda_train_dev_destroy(t);
	az_model_destroy(m);
	free(gc);
	free(gg);
}

/* Three optimiser steps on both trainers: the CPU trainer directly, the GPU one through the
 * training ops table. */
static void steps_agree(enum az_optim optim)
{
	struct az_model *mc = random_model(arch_p, 31), *mg = copy_model(mc);
	struct az_train_params p;
	struct az_train_cpu *tc = NULL;
	struct az_train_backend *tg = NULL;

	az_train_params_default(&p);
	p.optim = optim;
	p.lr = optim == AZ_OPTIM_ADAM ? 1e-3f : 1e-2f;
	assert_int_equal(az_train_cpu_create(mc, &p, B, &tc), 0);
	assert_int_equal(az_train_backend_create(AZ_BACKEND_CUDA, mg, &p, B, &tg, NULL, 0), 0);
	assert_string_equal(az_train_backend_name(tg), "cuda");
	for (int s = 0; s < 3; s++) {
		struct batch b;
		struct az_loss lc, lg;

		make_batch(&b, 40 + (uint64_t)s);
		poison(&lg, sizeof(lg));
		assert_int_equal(az_train_cpu_step(tc, B, b.x, b.pi, b.z, &lc), 0);
		assert_int_equal(az_train_backend_step(tg, B, b.x, b.pi, b.z, &lg), 0);
		check_loss(&lg, &lc);
	}
	poison(mg->params, mg->n_params * 4);
	assert_int_equal(az_train_backend_sync(tg), 0);
	check_params(mg->params, mc->params, g_tol, "params after 3 steps");
	/* load then sync round-trips the model's parameters through the device unchanged. */
	memcpy(mg->params, mc->params, mg->n_params * 4);
	assert_int_equal(az_train_backend_load(tg), 0);
	poison(mg->params, mg->n_params * 4);
	assert_int_equal(az_train_backend_sync(tg), 0);
	assert_memory_equal(mg->params, mc->params, mg->n_params * 4);
	az_train_backend_destroy(tg);
	az_train_cpu_destroy(tc);
	az_model_destroy(mg);
	az_model_destroy(mc);
}

static void test_adam_steps(void **state)
{
	(void)state;
	steps_agree(AZ_OPTIM_ADAM);
}

static void test_sgd_steps(void **state)
{
	(void)state;
	steps_agree(AZ_OPTIM_SGD);
}

/* The tests above on the ResNet (its convs sum in cuBLAS's order: a looser tolerance). */
static int use_resnet(void **state)
{
	(void)state;
	arch_p = &resnet_arch;
	g_tol = 1e-4;
	return 0;
}

static int use_mlp(void **state)
{
	(void)state;
	arch_p = &mlp_arch;
	g_tol = 1e-5;
	return 0;
}

/* And with win/draw/loss value heads, at the tolerances of their tanh twins. */
static int use_mlp_wdl(void **state)
{
	(void)state;
	arch_p = &mlp_wdl_arch;
	g_tol = 1e-5;
	return 0;
}

static int use_resnet_wdl(void **state)
{
	(void)state;
	arch_p = &resnet_wdl_arch;
	g_tol = 1e-4;
	return 0;
}

int main(void)
{
	skip_without_cuda();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loss_and_gradient), cmocka_unit_test(test_adam_steps),
		cmocka_unit_test(test_sgd_steps),
		{ "test_resnet_loss_and_gradient", test_loss_and_gradient, use_resnet, use_mlp, NULL },
		{ "test_resnet_adam_steps", test_adam_steps, use_resnet, use_mlp, NULL },
		{ "test_wdl_loss_and_gradient", test_loss_and_gradient, use_mlp_wdl, use_mlp, NULL },
		{ "test_wdl_adam_steps", test_adam_steps, use_mlp_wdl, use_mlp, NULL },
		{ "test_wdl_sgd_steps", test_sgd_steps, use_mlp_wdl, use_mlp, NULL },
		{ "test_resnet_wdl_loss_and_gradient", test_loss_and_gradient, use_resnet_wdl,
		  use_mlp, NULL },
		{ "test_resnet_wdl_adam_steps", test_adam_steps, use_resnet_wdl, use_mlp, NULL },
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
