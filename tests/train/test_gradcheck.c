/* SPDX-License-Identifier: MIT */
/* Backprop against central finite differences: for every parameter tensor (weights, biases, both
 * heads) several entries are perturbed and the loss slope compared with the analytic gradient,
 * with L2 on, for the residual MLP and for the ResNet (3x4 board: rows and columns differ, so a
 * swapped stride shows), each with a tanh and with a win/draw/loss value head. Also checks the loss terms against a direct computation, and the
 * policy loss masked to the legal moves (issue 23: illegal logits are outside the softmax). */
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

#include "gpu/cpu_forward.h"
#include "net/model.h"
#include "base/rng.h"
#include "tests/test_util.h"
#include "train/trainer.h"

enum { A = 4, B = 3, XMAX = 32 };
#define L2 0.01f
#define FD_EPS 1e-3f

static const struct az_arch mlp_arch = { .inputs = 5, .hidden = 6, .blocks = 2, .actions = A };
static const struct az_arch resnet_arch = { .inputs = 24, .hidden = 3, .blocks = 2, .actions = A,
					    .kind = AZ_NET_RESNET, .planes = 2, .height = 3,
					    .width = 4 };

static const struct az_arch mlp_wdl_arch = { .inputs = 5, .hidden = 6, .blocks = 2, .actions = A,
					     .value_head = AZ_VALUE_WDL };
static const struct az_arch resnet_wdl_arch = { .inputs = 24, .hidden = 3, .blocks = 2,
						.actions = A, .kind = AZ_NET_RESNET, .planes = 2,
						.height = 3, .width = 4,
						.value_head = AZ_VALUE_WDL };

struct fixture {
	struct az_arch arch;
	struct az_model *m;
	float x[B * XMAX], pi[B * A], z[B];
};

/* Random parameters everywhere (biases too, so their gradients are not checked at a special
 * point), random inputs, target distributions with an illegal move (-0.0f: train/replay.h) and
 * outcomes. */
static int setup_arch(void **state, const struct az_arch *arch)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct az_rng rng;

	if (!f || arch->inputs > XMAX || az_model_create(arch, &f->m))
		return -1;
	f->arch = *arch;
	az_rng_seed(&rng, 2024);
	for (size_t i = 0; i < f->m->n_params; i++)
		f->m->params[i] = (float)(0.5 * az_rng_normal(&rng));
	for (uint32_t i = 0; i < B * arch->inputs; i++)
		f->x[i] = (float)(2.0 * az_rng_uniform(&rng) - 1.0);
	for (int b = 0; b < B; b++) {
		float sum = 0.0f;

		for (int a = 0; a < A; a++) {
			f->pi[b * A + a] = a == b ? -0.0f : (float)(0.1 + az_rng_uniform(&rng));
			sum += f->pi[b * A + a];
		}
		for (int a = 0; a < A; a++)
			f->pi[b * A + a] /= sum;
		f->z[b] = (float)(b - 1); /* -1, 0, +1 */
		if (arch->value_head == AZ_VALUE_WDL && b == 1)
			f->z[b] = 0.3f; /* a mixed target: win 0.3, draw 0.7 */
	}
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_arch(state, &mlp_arch);
}

static int setup_resnet(void **state)
{
	return setup_arch(state, &resnet_arch);
}

static int setup_wdl(void **state)
{
	return setup_arch(state, &mlp_wdl_arch);
}

static int setup_resnet_wdl(void **state)
{
	return setup_arch(state, &resnet_wdl_arch);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	az_model_destroy(f->m);
	free(f);
	return 0;
}

static double loss_at(struct fixture *f, struct az_train_ws *ws, float *grad)
{
	struct az_loss l;

	assert_int_equal(az_train_loss_grad(f->m, B, f->x, f->pi, f->z, L2, ws, grad, &l), 0);
	return l.total;
}

/* The on/off pattern of every ReLU of a forward pass, folded into one hash: a finite difference
 * is only the slope where both probes see the same pattern (no unit crosses its kink). */
static uint64_t relu_pattern(struct fixture *f, struct az_acts *acts)
{
	const struct az_arch *a = &f->arch;
	size_t rows = a->kind == AZ_NET_RESNET ? (size_t)B * a->height * a->width : B;
	size_t n = rows * a->hidden, cells = (size_t)a->height * a->width;
	uint64_t h = 1469598103934665603ull;

	az_model_forward(f->m, B, f->x, acts);
	for (uint32_t r = 0; r <= a->blocks; r++)
		for (size_t i = 0; i < n; i++) {
			h = (h ^ (acts->trunk[r][i] > 0.0f)) * 1099511628211ull;
			if (r < a->blocks)
				h = (h ^ (acts->inner[r][i] > 0.0f)) * 1099511628211ull;
		}
	for (size_t i = 0; a->kind == AZ_NET_RESNET && i < B * cells; i++) {
		h = (h ^ (acts->vconv[i] > 0.0f)) * 1099511628211ull;
		h = (h ^ (acts->pconv[2 * i] > 0.0f)) * 1099511628211ull;
		h = (h ^ (acts->pconv[2 * i + 1] > 0.0f)) * 1099511628211ull;
	}
	for (size_t i = 0; a->kind == AZ_NET_RESNET && i < B * AZ_RESNET_VALUE_HIDDEN; i++)
		h = (h ^ (acts->vhid[i] > 0.0f)) * 1099511628211ull;
	return h;
}

static void test_gradcheck_all_tensors(void **state)
{
	struct fixture *f = *state;
	size_t n = f->m->n_params;
	float *grad = malloc(n * sizeof(float)), *scratch = malloc(n * sizeof(float));
	struct az_train_ws *ws = NULL;
	uint32_t checked = 0, nonzero = 0, kinks = 0;
	const struct az_arch *arch = &f->arch;
	struct az_acts acts;

	assert_non_null(grad);
	assert_non_null(scratch);
	assert_int_equal(az_acts_create(arch, B, &acts), 0);
	assert_int_equal(az_train_ws_create(arch, B, &ws), 0);
	loss_at(f, ws, grad);

	for (uint32_t i = 0; i < az_model_tensor_count(arch); i++) {
		struct az_tensor t;

		assert_int_equal(az_model_tensor(arch, i, &t), 0);
		size_t len = (size_t)t.rows * t.cols, prev = len;

		/* First, last and four through the middle: at most 6 entries per tensor. */
		for (size_t j = 0; j < 6; j++) {
			size_t k = j == 5 ? len - 1 : j * len / 5;

			if (k == prev)
				continue;
			prev = k;
			float *p = f->m->params + t.offset + k, keep = *p;

			*p = keep + FD_EPS;
			double up = loss_at(f, ws, scratch);
			uint64_t up_relu = relu_pattern(f, &acts);
			*p = keep - FD_EPS;
			double down = loss_at(f, ws, scratch);
			uint64_t down_relu = relu_pattern(f, &acts);
			*p = keep;
			if (up_relu != down_relu) {
				kinks++; /* the loss is not smooth across this probe */
				continue;
			}
			double num = (up - down) / (2.0 * FD_EPS), ana = grad[t.offset + k];
			double tol = 1e-3 + 1e-2 * fmax(fabs(num), fabs(ana));

			if (!(fabs(num - ana) <= tol))
				fail_msg("%s[%zu]: backprop %.6g, finite diff %.6g", t.name, k, ana,
					 num);
			checked++;
			nonzero += fabs(ana) > 1e-3;
		}
	}
	/* Most sampled gradients must be non-trivial, or the comparison proves little. */
	assert_true(checked >= 40);
	assert_true(nonzero * 4 >= checked * 3);
	assert_true(kinks * 8 <= checked);

	az_acts_destroy(&acts);
	az_train_ws_destroy(ws);
	free(scratch);
	free(grad);
}

/* The loss terms, recomputed from the forward outputs with the formulas in train/trainer.h. */
static void test_loss_terms(void **state)
{
	struct fixture *f = *state;
	size_t n = f->m->n_params;
	float *g1 = malloc(n * sizeof(float)), *g2 = malloc(n * sizeof(float));
	struct az_acts acts;
	struct az_loss l1, l2;
	double ce = 0.0, se = 0.0, sq = 0.0;
	const struct az_arch *arch = &f->arch;

	assert_non_null(g1);
	assert_non_null(g2);
	assert_int_equal(az_acts_create(arch, B, &acts), 0);
	az_model_forward(f->m, B, f->x, &acts);
	for (int b = 0; b < B; b++) {
		double s = 0.0;

		for (int a = 0; a < A; a++) /* the softmax over the legal moves: a != b */
			s += a == b ? 0.0 : exp(acts.logits[b * A + a]);
		for (int a = 0; a < A; a++)
			ce -= f->pi[b * A + a] * (acts.logits[b * A + a] - log(s));
		if (arch->value_head == AZ_VALUE_WDL) {
			/* cross-entropy against (max(z, 0), 1 - |z|, max(-z, 0)); value = win - loss */
			const float *q = acts.wdl + b * 3;
			double z = f->z[b], t[3] = {z > 0 ? z : 0, 1 - fabs(z), z < 0 ? -z : 0};

			assert_true(fabs(q[0] + q[1] + q[2] - 1.0) < 1e-6);
			assert_true(fabs(acts.value[b] - (q[0] - q[2])) < 1e-7);
			assert_true(acts.draw[b] == q[1]);
			for (int k = 0; k < 3; k++)
				se -= t[k] > 0 ? t[k] * log(q[k]) : 0.0;
		} else {
			se += (acts.value[b] - f->z[b]) * (acts.value[b] - f->z[b]);
			assert_true(acts.draw[b] == 0.0f);
		}
	}
	for (uint32_t i = 0; i < az_model_tensor_count(arch); i++) {
		struct az_tensor t;

		assert_int_equal(az_model_tensor(arch, i, &t), 0);
		for (size_t k = 0; t.ndim >= 2 && k < (size_t)t.rows * t.cols; k++)
			sq += (double)f->m->params[t.offset + k] * f->m->params[t.offset + k];
	}
	/* ws == NULL: scratch allocated inside the call; must give the same result. */
	assert_int_equal(az_train_loss_grad(f->m, B, f->x, f->pi, f->z, L2, NULL, g1, &l1), 0);
	struct az_train_ws *ws = NULL;

	assert_int_equal(az_train_ws_create(arch, 8, &ws), 0);
	assert_int_equal(az_train_loss_grad(f->m, B, f->x, f->pi, f->z, L2, ws, g2, &l2), 0);
	assert_memory_equal(g1, g2, n * sizeof(float));
	assert_true(l1.total == l2.total);
	assert_true(fabs(l1.policy - ce / B) < 1e-5);
	assert_true(fabs(l1.value - se / B) < 1e-5);
	assert_true(fabs(l1.l2 - L2 * sq) < 1e-5);
	assert_true(fabs(l1.total - (l1.policy + l1.value + l1.l2)) < 1e-5);
	assert_true(l1.l2 > 0.0f);
	/* Batch beyond the workspace is rejected. */
	assert_int_equal(az_train_loss_grad(f->m, 9, f->x, f->pi, f->z, L2, ws, g2, &l2), -EINVAL);

	az_train_ws_destroy(ws);
	az_acts_destroy(&acts);
	free(g2);
	free(g1);
}

/* Issue 23: the policy softmax is taken over the legal moves only. Per row: the loss is the
 * cross-entropy of the softmax over the legal logits, an illegal logit changes nothing (its
 * gradient is exactly 0), and the legal logits' gradient matches central finite differences. */
static void test_masked_policy_logits(void **state)
{
	enum { N = 9 };
	const float tp[N] = { -0.0f, 0.25f, 0.0f, 0.125f, -0.0f, 0.5f, 0.125f, -0.0f, 0.0f };
	float lg[N], dl[N], ddummy[N];
	struct az_rng rng;
	double s = 0.0, want = 0.0;

	(void)state;
	az_rng_seed(&rng, 23);
	for (int i = 0; i < N; i++)
		lg[i] = (float)(2.0 * az_rng_normal(&rng));
	lg[4] = 40.0f; /* an illegal move the network likes: it must not matter */
	for (int i = 0; i < N; i++)
		s += signbit(tp[i]) ? 0.0 : exp(lg[i]);
	for (int i = 0; i < N; i++)
		want -= tp[i] * (lg[i] - log(s));
	double got = az_train_policy_xent(lg, tp, N, 0.5, dl);

	assert_true(fabs(got - want) < 1e-9 * fmax(1.0, fabs(want)));
	for (int i = 0; i < N; i++) {
		float keep = lg[i];

		lg[i] = keep + FD_EPS;
		double up = az_train_policy_xent(lg, tp, N, 0.5, ddummy);
		lg[i] = keep - FD_EPS;
		double down = az_train_policy_xent(lg, tp, N, 0.5, ddummy);
		lg[i] = keep;
		double num = 0.5 * (up - down) / (2.0 * FD_EPS);

		if (signbit(tp[i])) {
			assert_true(dl[i] == 0.0f);
			assert_true(up == down); /* outside the softmax: the loss does not move */
		} else if (!(fabs(num - dl[i]) <= 1e-4 + 1e-3 * fabs(num))) {
			fail_msg("logit %d: gradient %.6g, finite diff %.6g", i, dl[i], num);
		}
	}
	/* Every entry marked: read unmasked, as a plain softmax over all N. */
	float all[N];

	for (int i = 0; i < N; i++)
		all[i] = -0.0f;
	assert_true(az_train_policy_xent(lg, all, N, 1.0, dl) == 0.0);
	for (int i = 0; i < N; i++)
		assert_true(isfinite(dl[i]) && dl[i] == 0.0f);
}

/* The acceptance case of issue 23: a zero network on tic-tac-toe with one cell taken, the
 * target uniform over the 8 legal moves. Its policy loss is ln 8 (the softmax over the legal
 * moves), not ln 9, and the taken cell's policy bias gets no gradient. */
static void test_masked_policy_zero_net(void **state)
{
	const struct az_arch arch = { .inputs = 18, .hidden = 8, .blocks = 1, .actions = 9 };
	struct az_model *m = NULL;
	float x[18] = { 0 }, pi[9], z = 0.0f;
	struct az_loss l;

	(void)state;
	assert_int_equal(az_model_create(&arch, &m), 0);
	memset(m->params, 0, m->n_params * sizeof(float));
	float *grad = malloc(m->n_params * sizeof(float));

	assert_non_null(grad);
	x[9 + 4] = 1.0f; /* the opponent holds the centre */
	for (int a = 0; a < 9; a++)
		pi[a] = a == 4 ? -0.0f : 0.125f;
	assert_int_equal(az_train_loss_grad(m, 1, x, pi, &z, 0.0f, NULL, grad, &l), 0);
	if (!(fabs(l.policy - log(8.0)) < 1e-6))
		fail_msg("policy loss %.6f, want ln 8 = %.6f (ln 9 = %.6f: the softmax over all 9)",
			 l.policy, log(8.0), log(9.0));
	for (uint32_t i = 0; i < az_model_tensor_count(&arch); i++) {
		struct az_tensor t;

		assert_int_equal(az_model_tensor(&arch, i, &t), 0);
		if (strcmp(t.name, "policy.bias") != 0)
			continue;
		for (int a = 0; a < 9; a++) /* softmax 1/8 minus target 1/8; the centre outside */
			assert_true(fabs(grad[t.offset + a]) < 1e-7);
		assert_true(grad[t.offset + 4] == 0.0f);
	}
	/* Without the mark (+0.0f: an unvisited legal move) the centre is in the softmax. */
	pi[4] = 0.0f;
	assert_int_equal(az_train_loss_grad(m, 1, x, pi, &z, 0.0f, NULL, grad, &l), 0);
	assert_true(fabs(l.policy - log(9.0)) < 1e-6);
	free(grad);
	az_model_destroy(m);
}

AZ_TEST_MAIN(cmocka_unit_test_setup_teardown(test_gradcheck_all_tensors, setup, teardown),
	     cmocka_unit_test_setup_teardown(test_loss_terms, setup, teardown),
	     cmocka_unit_test_setup_teardown(test_gradcheck_all_tensors, setup_resnet, teardown),
	     cmocka_unit_test_setup_teardown(test_loss_terms, setup_resnet, teardown),
	     cmocka_unit_test_setup_teardown(test_gradcheck_all_tensors, setup_wdl, teardown),
	     cmocka_unit_test_setup_teardown(test_loss_terms, setup_wdl, teardown),
	     cmocka_unit_test_setup_teardown(test_gradcheck_all_tensors, setup_resnet_wdl, teardown),
	     cmocka_unit_test_setup_teardown(test_loss_terms, setup_resnet_wdl, teardown),
	     cmocka_unit_test(test_masked_policy_logits),
	     cmocka_unit_test(test_masked_policy_zero_net))
