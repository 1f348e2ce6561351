/* SPDX-License-Identifier: MIT */
/* The CPU trainer (train/trainer.h's az_train_cpu): the optimisers (Adam, SGD with momentum)
 * bound to one model, and the data-parallel step: the minibatch split between the threads of
 * az_train_params.threads (base/pool.h), each taking the gradient of its rows
 * (az_train_part_grad), then each thread adding the parts' gradients in part order and applying
 * the L2 term and the optimiser on its own range of the parameters. The same thread count gives
 * the same sums. */
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/pool.h"
#include "train/trainer_impl.h"

struct az_train_cpu {
	struct az_model *m;
	struct az_train_params p;
	uint32_t max_batch;
	struct az_train_ws *ws; /* part 0 of a step (and az_train_cpu_eval): max_batch rows */
	float *grad;            /* [n_params] */
	/* threads > 1: the helpers of a step, and for each part k >= 1 its workspace (the part's
	 * rows at most) and gradient (part_grad + (k - 1) * n_params) */
	struct az_pool *pool;
	struct az_train_ws *part_ws[AZ_TRAIN_THREADS_MAX];
	float *part_grad;
	float *mom1; /* Adam first moment, or SGD velocity */
	float *mom2; /* Adam second moment (NULL for SGD) */
	uint64_t steps;
};

/* ---- the data-parallel step ---- */

uint32_t az_train_threads_auto(uint32_t batch)
{
	uint32_t n = az_cpus_available();

	if (n > batch / 16)
		n = batch / 16;
	if (n > AZ_TRAIN_THREADS_MAX)
		n = AZ_TRAIN_THREADS_MAX;
	return n ? n : 1;
}

/* The pool and the workspaces of parts 1..threads-1 (each for its share of max_batch rows). */
static int parts_create(struct az_train_cpu *t)
{
	uint32_t T = t->p.threads, rows = (t->max_batch + T - 1) / T;

	t->part_grad = calloc((size_t)(T - 1) * t->m->n_params, sizeof(float));
	if (!t->part_grad)
		return -ENOMEM;
	for (uint32_t k = 1; k < T; k++) {
		int ret = az_train_ws_create(&t->m->arch, rows, &t->part_ws[k]);

		if (ret)
			return ret;
	}
	return az_pool_create(T, &t->pool);
}

/* ---- optimiser ---- */

int az_train_cpu_create(struct az_model *m, const struct az_train_params *p, uint32_t max_batch,
			struct az_train_cpu **out)
{
	struct az_train_cpu *t;
	int ret;

	if (!m || !p || !out || max_batch == 0 || !(p->lr > 0.0f) ||
	    (p->optim != AZ_OPTIM_ADAM && p->optim != AZ_OPTIM_SGD) || p->threads < 1 ||
	    p->threads > AZ_TRAIN_THREADS_MAX)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->m = m;
	t->p = *p;
	t->max_batch = max_batch;
	ret = az_train_ws_create(&m->arch, max_batch, &t->ws);
	/* one block: the gradient, the first moment, and for Adam the second */
	t->grad = calloc((p->optim == AZ_OPTIM_ADAM ? 3 : 2) * m->n_params, sizeof(float));
	if (!ret && !t->grad)
		ret = -ENOMEM;
	if (ret) {
		az_train_cpu_destroy(t); /* t is zeroed: frees whatever of it exists */
		return ret;
	}
	t->mom1 = t->grad + m->n_params;
	if (p->optim == AZ_OPTIM_ADAM)
		t->mom2 = t->mom1 + m->n_params;
	if (t->p.threads > 1)
		ret = parts_create(t);
	if (ret) {
		az_train_cpu_destroy(t);
		return ret;
	}
	*out = t;
	return 0;
}

void az_train_cpu_destroy(struct az_train_cpu *t)
{
	if (!t)
		return;
	az_pool_destroy(t->pool); /* first: its helpers use the workspaces */
	for (uint32_t k = 0; k < AZ_TRAIN_THREADS_MAX; k++)
		az_train_ws_destroy(t->part_ws[k]);
	free(t->part_grad);
	free(t->grad); /* and the moments, in the same block */
	az_train_ws_destroy(t->ws);
	free(t);
}

/* Adam (Kingma and Ba 2015, Algorithm 1) with bias-corrected moments, on params [lo, hi). */
static void adam_update(struct az_train_cpu *t, size_t lo, size_t hi)
{
	const struct az_train_params *p = &t->p;
	/* four arrays that never overlap: restrict (and -fno-math-errno for sqrtf, CMakeLists.txt)
	 * lets the compiler vectorise the loop, with the same IEEE results per element */
	float *restrict w = t->m->params, *restrict m1 = t->mom1, *restrict m2 = t->mom2;
	const float *restrict gr = t->grad;
	double c1 = 1.0 - pow(p->beta1, (double)t->steps);
	double c2 = 1.0 - pow(p->beta2, (double)t->steps);
	float step = (float)(p->lr * sqrt(c2) / c1);
	/* lr * mhat / (sqrt(vhat) + eps) = step * m / (sqrt(v) + eps * sqrt(c2)). */
	float eps = (float)(p->eps * sqrt(c2)), b1 = p->beta1, b2 = p->beta2;

	for (size_t i = lo; i < hi; i++) {
		float g = gr[i];

		m1[i] = b1 * m1[i] + (1.0f - b1) * g;
		m2[i] = b2 * m2[i] + (1.0f - b2) * g * g;
		w[i] -= step * m1[i] / (sqrtf(m2[i]) + eps);
	}
}

/* SGD with (heavy-ball) momentum: v = mu v + g; w -= lr v, on params [lo, hi). */
static void sgd_update(struct az_train_cpu *t, size_t lo, size_t hi)
{
	float *w = t->m->params;

	for (size_t i = lo; i < hi; i++) {
		t->mom1[i] = t->p.momentum * t->mom1[i] + t->grad[i];
		w[i] -= t->p.lr * t->mom1[i];
	}
}

/* One minibatch, split between the pool's threads. */
struct step_job {
	struct az_train_cpu *t;
	uint32_t batch;
	const float *x, *pi, *z;
	double ce[AZ_TRAIN_THREADS_MAX], se[AZ_TRAIN_THREADS_MAX];
};

/* Part k of a step (az_pool_fn): rows [batch k / T, batch (k + 1) / T) forward and back, into
 * its own gradient (t->grad for part 0), scaled by 1 / batch. */
static void step_part(void *arg, uint32_t k)
{
	struct step_job *j = arg;
	struct az_train_cpu *t = j->t;
	const struct az_model *m = t->m;
	uint32_t T = az_pool_threads(t->pool), lo = (uint32_t)((uint64_t)j->batch * k / T);
	uint32_t n = (uint32_t)((uint64_t)j->batch * (k + 1) / T) - lo;
	struct az_train_ws *ws = k ? t->part_ws[k] : t->ws;
	float *g = k ? t->part_grad + (size_t)(k - 1) * m->n_params : t->grad;
	const float *x = j->x + (size_t)lo * m->arch.inputs;

	j->ce[k] = j->se[k] = 0.0;
	if (n == 0) { /* a minibatch smaller than the pool */
		memset(g, 0, m->n_params * sizeof(float));
		return;
	}
	az_train_part_grad(m, n, x, j->pi + (size_t)lo * m->arch.actions, j->z + lo, 1.0 / j->batch,
			   ws, g, &j->ce[k], &j->se[k]);
}

/* Where part k of T of the update phase starts in n parameters: a multiple of 16 floats (64
 * bytes, so that two threads share a cache line of the arrays only where those are not
 * 64-byte aligned), n for k = T. */
static size_t update_edge(size_t n, uint32_t k, uint32_t T)
{
	return k == T ? n : (n * k / T) & ~(size_t)15;
}

struct update_job {
	struct az_train_cpu *t;
	double sq[AZ_TRAIN_THREADS_MAX];
};

/* Part k of a step's update phase (az_pool_fn), on its range of the parameters: t->grad += the
 * other parts' gradients in part order, the L2 term (its sum of squares into sq[k]), then the
 * optimiser. */
static void update_part(void *arg, uint32_t k)
{
	struct update_job *j = arg;
	struct az_train_cpu *t = j->t;
	uint32_t T = az_pool_threads(t->pool);
	size_t n = t->m->n_params, lo = update_edge(n, k, T), hi = update_edge(n, k + 1, T);

	for (uint32_t p = 1; p < T; p++) {
		const float *g = t->part_grad + (size_t)(p - 1) * n;

		for (size_t i = lo; i < hi; i++)
			t->grad[i] += g[i];
	}
	j->sq[k] = az_train_l2_range(t->m, t->p.l2, t->grad, lo, hi);
	if (t->p.optim == AZ_OPTIM_ADAM)
		adam_update(t, lo, hi);
	else
		sgd_update(t, lo, hi);
}

/* A step on t's threads (one: the caller alone, t->pool NULL): the gradient phase (each part's
 * rows), then the update phase (each part's parameters); *loss (may be NULL) the loss before
 * the step. */
static void parallel_step(struct az_train_cpu *t, uint32_t batch, const float *x, const float *pi,
			  const float *z, struct az_loss *loss)
{
	struct step_job j = {.t = t, .batch = batch, .x = x, .pi = pi, .z = z};
	struct update_job u = {.t = t};
	double ce = 0.0, se = 0.0, sq = 0.0;

	az_pool_run(t->pool, step_part, &j);
	t->steps++;
	az_pool_run(t->pool, update_part, &u);
	for (uint32_t k = 0; k < az_pool_threads(t->pool); k++) {
		ce += j.ce[k];
		se += j.se[k];
		sq += u.sq[k];
	}
	if (loss)
		az_train_loss_terms(ce, se, sq, batch, t->p.l2, loss);
}

int az_train_cpu_step(struct az_train_cpu *t, uint32_t batch, const float *x, const float *pi,
		      const float *z, struct az_loss *loss)
{
	if (!t || batch == 0 || batch > t->max_batch)
		return -EINVAL;
	parallel_step(t, batch, x, pi, z, loss);
	return 0;
}

int az_train_cpu_eval(struct az_train_cpu *t, uint32_t batch, const float *x, const float *pi,
		      const float *z, struct az_loss *loss)
{
	if (!t || !x || !pi || !z || !loss || batch == 0 || batch > t->max_batch)
		return -EINVAL;
	az_train_forward_loss(t->m, batch, x, pi, z, t->p.l2, t->ws, 0, loss);
	return 0;
}
