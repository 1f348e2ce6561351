/* SPDX-License-Identifier: MIT */
/* CPU training of the residual MLP: the AlphaZero loss, its gradient by backprop through the
 * activations az_model_forward() keeps, and the optimisers (Adam, SGD with momentum).
 * Gradient layout equals the parameter layout (az_model_tensor() order). Single-threaded. */
#include "train/trainer.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct az_train_ws {
	struct az_arch arch;
	uint32_t max_batch;
	struct az_acts acts;
	float *dh;      /* [B, H] gradient w.r.t. the current trunk activation */
	float *dg;      /* [B, H] gradient w.r.t. a block's pre-relu residual sum */
	float *dt;      /* [B, H] gradient w.r.t. a block's inner activation */
	float *dlogits; /* [B, A] */
	float *dpre;    /* [B] gradient w.r.t. the value pre-activation */
	float *buf;     /* owned storage of the five arrays above */
};

struct az_train_cpu {
	struct az_model *m;
	struct az_train_params p;
	uint32_t max_batch;
	struct az_train_ws *ws;
	float *grad;   /* [n_params] */
	float *mom1;   /* Adam first moment, or SGD velocity */
	float *mom2;   /* Adam second moment (NULL for SGD) */
	uint64_t steps;
};

void az_train_params_default(struct az_train_params *p)
{
	p->optim = AZ_OPTIM_ADAM;
	p->lr = 1e-3f;
	p->momentum = 0.9f;
	p->l2 = 1e-4f;
	p->beta1 = 0.9f;
	p->beta2 = 0.999f;
	p->eps = 1e-8f;
}

int az_train_ws_create(const struct az_arch *a, uint32_t max_batch, struct az_train_ws **out)
{
	size_t B = max_batch, H = a->hidden, A = a->actions;
	struct az_train_ws *ws;

	if (max_batch == 0)
		return -EINVAL;
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	ws->arch = *a;
	ws->max_batch = max_batch;
	ws->buf = calloc(3 * B * H + B * A + B, sizeof(float));
	/* ws is zeroed: az_train_ws_destroy frees whatever of it exists */
	if (!ws->buf || az_acts_create(a, max_batch, &ws->acts)) {
		az_train_ws_destroy(ws);
		return -ENOMEM;
	}
	ws->dh = ws->buf;
	ws->dg = ws->dh + B * H;
	ws->dt = ws->dg + B * H;
	ws->dlogits = ws->dt + B * H;
	ws->dpre = ws->dlogits + B * A;
	*out = ws;
	return 0;
}

void az_train_ws_destroy(struct az_train_ws *ws)
{
	if (!ws)
		return;
	free(ws->buf);
	az_acts_destroy(&ws->acts);
	free(ws);
}

/* ---- loss ---- */

/* Sum of squares of every weight tensor (biases are not decayed); when grad is not NULL, also
 * grad += 2 * l2 * w on those tensors. */
static double l2_pass(const struct az_model *m, float l2, float *grad)
{
	uint32_t n = az_model_tensor_count(&m->arch);
	double sq = 0.0;

	for (uint32_t i = 0; i < n; i++) {
		struct az_tensor t;

		az_model_tensor(&m->arch, i, &t);
		if (t.ndim != 2)
			continue;
		const float *w = m->params + t.offset;

		for (size_t k = 0; k < (size_t)t.rows * t.cols; k++) {
			sq += (double)w[k] * w[k];
			if (grad)
				grad[t.offset + k] += 2.0f * l2 * w[k];
		}
	}
	return sq;
}

double az_train_policy_xent(const float *lg, const float *tp, uint32_t A, double inv_b,
			    float *dl)
{
	double max = lg[0], lse = 0.0, mass = 0.0, cross = 0.0;

	for (uint32_t i = 1; i < A; i++)
		max = lg[i] > max ? lg[i] : max;
	for (uint32_t i = 0; i < A; i++)
		lse += exp(lg[i] - max);
	lse = max + log(lse);
	for (uint32_t i = 0; i < A; i++) {
		cross += tp[i] * (lg[i] - lse);
		mass += tp[i];
	}
	/* d/dlogit_i of -sum_a pi_a log softmax_a = softmax_i * sum(pi) - pi_i. */
	for (uint32_t i = 0; dl && i < A; i++)
		dl[i] = (float)((exp(lg[i] - lse) * mass - tp[i]) * inv_b);
	return -cross;
}

/* Forward pass plus the three loss terms. With want_grad, also the loss gradient w.r.t. the
 * logits (ws->dlogits) and the value pre-activation (ws->dpre), each already divided by B. */
static void forward_loss(const struct az_model *m, uint32_t batch, const float *x,
			 const float *pi, const float *z, float l2, struct az_train_ws *ws,
			 int want_grad, struct az_loss *loss)
{
	uint32_t A = m->arch.actions;
	double ce = 0.0, se = 0.0, sq, inv_b = 1.0 / batch;

	az_model_forward(m, batch, x, &ws->acts);
	for (uint32_t b = 0; b < batch; b++) {
		size_t row = (size_t)b * A;

		ce += az_train_policy_xent(ws->acts.logits + row, pi + row, A, inv_b,
					   want_grad ? ws->dlogits + row : NULL);

		double v = ws->acts.value[b], d = v - z[b];

		se += d * d;
		if (want_grad)
			ws->dpre[b] = (float)(2.0 * d * (1.0 - v * v) * inv_b);
	}
	sq = l2_pass(m, 0.0f, NULL);
	loss->policy = (float)(ce * inv_b);
	loss->value = (float)(se * inv_b);
	loss->l2 = (float)(l2 * sq);
	loss->total = (float)(ce * inv_b + se * inv_b + l2 * sq);
}

/* ---- backprop ---- */

/* dw[out, in] = dy[B, out]^T * x[B, in]; db[out] = column sums of dy. */
static void linear_grad_params(uint32_t batch, uint32_t in, uint32_t out, const float *dy,
			       const float *x, float *dw, float *db)
{
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)out, (int)in, (int)batch, 1.0f,
		    dy, (int)out, x, (int)in, 0.0f, dw, (int)in);
	memset(db, 0, out * sizeof(float));
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t o = 0; o < out; o++)
			db[o] += dy[(size_t)b * out + o];
}

/* dx[B, in] = dy[B, out] * w[out, in] + beta * dx. */
static void linear_grad_input(uint32_t batch, uint32_t in, uint32_t out, const float *dy,
			      const float *w, float beta, float *dx)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)batch, (int)in, (int)out, 1.0f,
		    dy, (int)out, w, (int)in, beta, dx, (int)in);
}

/* g = dy where the relu output y was positive, else 0 (in place allowed). */
static void relu_grad(const float *y, const float *dy, float *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* Offsets of the first tensor of block r (fc1.weight) and of the policy head. */
static size_t block_offset(const struct az_arch *a, uint32_t r)
{
	size_t H = a->hidden;

	return H * a->inputs + H + (size_t)r * (2 * H * H + 2 * H);
}

/* Gradient of the data terms through the whole net, given ws->dlogits and ws->dpre. */
static void backprop(const struct az_model *m, uint32_t batch, const float *x,
		     struct az_train_ws *ws, float *grad)
{
	const struct az_arch *a = &m->arch;
	uint32_t D = a->inputs, H = a->hidden, R = a->blocks, A = a->actions;
	size_t HH = (size_t)H * H, BH = (size_t)batch * H, head = block_offset(a, R);
	const float *hR = ws->acts.trunk[R];
	const float *wp = m->params + head, *wv = wp + (size_t)A * H + A;
	float *gwp = grad + head, *gwv = gwp + (size_t)A * H + A;

	/* Heads: logits = hR Wp^T + bp, value pre-activation = hR wv + bv. */
	linear_grad_params(batch, H, A, ws->dlogits, hR, gwp, gwp + (size_t)A * H);
	linear_grad_params(batch, H, 1, ws->dpre, hR, gwv, gwv + H);
	linear_grad_input(batch, H, A, ws->dlogits, wp, 0.0f, ws->dh);
	linear_grad_input(batch, H, 1, ws->dpre, wv, 1.0f, ws->dh);

	/* Blocks, last first: out = relu(in + W2 t + b2), t = relu(W1 in + b1). */
	for (uint32_t r = R; r-- > 0;) {
		size_t off = block_offset(a, r);
		const float *w1 = m->params + off, *w2 = w1 + HH + H;
		float *gw1 = grad + off, *gw2 = gw1 + HH + H;
		const float *in = ws->acts.trunk[r], *t = ws->acts.inner[r];

		relu_grad(ws->acts.trunk[r + 1], ws->dh, ws->dg, BH);
		linear_grad_params(batch, H, H, ws->dg, t, gw2, gw2 + HH);
		linear_grad_input(batch, H, H, ws->dg, w2, 0.0f, ws->dt);
		relu_grad(t, ws->dt, ws->dt, BH);
		linear_grad_params(batch, H, H, ws->dt, in, gw1, gw1 + HH);
		/* d in = dg (skip connection) + dt W1. */
		memcpy(ws->dh, ws->dg, BH * sizeof(float));
		linear_grad_input(batch, H, H, ws->dt, w1, 1.0f, ws->dh);
	}

	/* Input layer: h0 = relu(W_in x + b_in); no gradient w.r.t. x is needed. */
	relu_grad(ws->acts.trunk[0], ws->dh, ws->dg, BH);
	linear_grad_params(batch, D, H, ws->dg, x, grad, grad + (size_t)H * D);
}

/* grad += 2 * l2 * w on every weight tensor (biases are not decayed). */
static void l2_grad(const struct az_model *m, float l2, float *grad)
{
	l2_pass(m, l2, grad);
}

int az_train_loss_grad(const struct az_model *m, uint32_t batch, const float *x, const float *pi,
		       const float *z, float l2, struct az_train_ws *ws, float *grad,
		       struct az_loss *loss)
{
	struct az_train_ws *own = NULL;
	struct az_loss scratch;
	int ret;

	if (!m || !x || !pi || !z || !grad || batch == 0)
		return -EINVAL;
	if (!ws) {
		ret = az_train_ws_create(&m->arch, batch, &own);
		if (ret)
			return ret;
		ws = own;
	}
	if (batch > ws->max_batch) {
		az_train_ws_destroy(own);
		return -EINVAL;
	}
	forward_loss(m, batch, x, pi, z, l2, ws, 1, loss ? loss : &scratch);
	backprop(m, batch, x, ws, grad);
	l2_grad(m, l2, grad);
	az_train_ws_destroy(own);
	return 0;
}

/* ---- optimiser ---- */

int az_train_cpu_create(struct az_model *m, const struct az_train_params *p, uint32_t max_batch,
			struct az_train_cpu **out)
{
	struct az_train_cpu *t;
	int ret;

	if (!m || !p || !out || max_batch == 0 || !(p->lr > 0.0f) ||
	    (p->optim != AZ_OPTIM_ADAM && p->optim != AZ_OPTIM_SGD))
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
	*out = t;
	return 0;
}

void az_train_cpu_destroy(struct az_train_cpu *t)
{
	if (!t)
		return;
	free(t->grad); /* and the moments, in the same block */
	az_train_ws_destroy(t->ws);
	free(t);
}

/* Adam (Kingma and Ba 2015, Algorithm 1) with bias-corrected moments. */
static void adam_update(struct az_train_cpu *t)
{
	const struct az_train_params *p = &t->p;
	float *w = t->m->params;
	double c1 = 1.0 - pow(p->beta1, (double)t->steps);
	double c2 = 1.0 - pow(p->beta2, (double)t->steps);
	float step = (float)(p->lr * sqrt(c2) / c1);
	/* lr * mhat / (sqrt(vhat) + eps) = step * m / (sqrt(v) + eps * sqrt(c2)). */
	float eps = (float)(p->eps * sqrt(c2));

	for (size_t i = 0; i < t->m->n_params; i++) {
		float g = t->grad[i];

		t->mom1[i] = p->beta1 * t->mom1[i] + (1.0f - p->beta1) * g;
		t->mom2[i] = p->beta2 * t->mom2[i] + (1.0f - p->beta2) * g * g;
		w[i] -= step * t->mom1[i] / (sqrtf(t->mom2[i]) + eps);
	}
}

/* SGD with (heavy-ball) momentum: v = mu v + g; w -= lr v. */
static void sgd_update(struct az_train_cpu *t)
{
	float *w = t->m->params;

	for (size_t i = 0; i < t->m->n_params; i++) {
		t->mom1[i] = t->p.momentum * t->mom1[i] + t->grad[i];
		w[i] -= t->p.lr * t->mom1[i];
	}
}

int az_train_cpu_step(struct az_train_cpu *t, uint32_t batch, const float *x, const float *pi,
		      const float *z, struct az_loss *loss)
{
	int ret;

	if (!t || batch == 0 || batch > t->max_batch)
		return -EINVAL;
	ret = az_train_loss_grad(t->m, batch, x, pi, z, t->p.l2, t->ws, t->grad, loss);
	if (ret)
		return ret;
	t->steps++;
	if (t->p.optim == AZ_OPTIM_ADAM)
		adam_update(t);
	else
		sgd_update(t);
	return 0;
}

int az_train_cpu_eval(struct az_train_cpu *t, uint32_t batch, const float *x, const float *pi,
		      const float *z, struct az_loss *loss)
{
	if (!t || !x || !pi || !z || !loss || batch == 0 || batch > t->max_batch)
		return -EINVAL;
	forward_loss(t->m, batch, x, pi, z, t->p.l2, t->ws, 0, loss);
	return 0;
}
