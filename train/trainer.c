/* SPDX-License-Identifier: MIT */
/* CPU training of the residual MLP and the ResNet: the AlphaZero loss and its gradient by
 * backprop through the activations az_model_forward() keeps, for a whole minibatch or one
 * thread's part of it (train/trainer_impl.h); the optimisers and the threads are in
 * train/train_cpu.c. Gradient layout equals the parameter layout (az_model_tensor() order). */
#include "train/trainer.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "gpu/cpu_forward.h"
#include "gpu/cpu_gemm.h"
#include "train/trainer_impl.h"

struct az_train_ws {
	struct az_arch arch;
	uint32_t max_batch;
	struct az_acts acts;
	float *dh;      /* [B, H] gradient w.r.t. the current trunk activation */
	float *dg;      /* [B, H] gradient w.r.t. a block's pre-relu residual sum */
	float *dt;      /* [B, H] gradient w.r.t. a block's inner activation */
	float *dlogits; /* [B, A] */
	float *dpre;    /* [B, V] gradient w.r.t. the value head's pre-activation (V outputs:
	                 * az_arch_value_outputs()) */
	/* ResNet only (NULL for an MLP; dh, dg and dt are then [B * cells, F]): */
	float *dvhid;   /* [B, 64] value fc1 output */
	float *dvconv;  /* [B, cells] value plane */
	float *dpconv;  /* [B, 2 * cells] policy planes, channel-major */
	float *dpcl;    /* [B * cells, 2] the same, channels last */
	float *dcol;    /* one chunk's im2col gradient, as acts.scratch */
	float *wt;      /* a conv weight [F, 9C] with its columns tap-major (t * C + c) */
	float *dwt;     /* its gradient, tap-major, before it is put back in W's order */
	float *buf;     /* owned storage of the arrays above */
	/* AZ_CPU_GEMM_AVX512, _BF16 or _AMX (az_cpu_gemm_select(); the trainer stays fp32 on all): the
	 * weights packed again before every forward pass (gpu/cpu_packed.h; n = 0 otherwise: the
	 * OpenBLAS forward pass) */
	struct az_packed pk;
	/* with pk: a weight transposed and packed (pack_transposed(): a conv's tap-major [F, 9C]
	 * or a linear layer's [out, in]) for the input gradients dx = dy w, and the zero bias
	 * those products start from */
	struct az_packed_mat wtp;
	float *zero;
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
	p->threads = 1;
}

int az_train_ws_create(const struct az_arch *a, uint32_t max_batch, struct az_train_ws **out)
{
	size_t B = max_batch, H = a->hidden, A = a->actions, rows = B, extra = 0;
	size_t cells = (size_t)a->height * a->width, V = AZ_RESNET_VALUE_HIDDEN, col = 0;
	struct az_train_ws *ws;

	if (max_batch == 0)
		return -EINVAL;
	if (a->kind == AZ_NET_RESNET) {
		size_t C = a->planes > a->hidden ? a->planes : a->hidden;

		rows = B * cells;
		col = (B < AZ_CONV_CHUNK ? B : AZ_CONV_CHUNK) * cells * 9 * C;
		extra = B * (V + 5 * cells) + col + 2 * H * 9 * C;
	}
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	ws->arch = *a;
	ws->max_batch = max_batch;
	ws->buf = calloc(3 * rows * H + B * A + B * AZ_VALUE_OUTPUTS_MAX + extra, sizeof(float));
	/* ws is zeroed: az_train_ws_destroy frees whatever of it exists */
	if (!ws->buf || az_acts_create(a, max_batch, &ws->acts)) {
		az_train_ws_destroy(ws);
		return -ENOMEM;
	}
	enum az_cpu_gemm gemm;

	if (az_cpu_gemm_select(&gemm) == 0 && az_cpu_gemm_packed(gemm)) {
		/* wtp holds any weight transposed: a conv's [9C, F] or a linear layer's [in, out] */
		size_t conv = a->kind == AZ_NET_RESNET ? 9 * (a->planes > H ? a->planes : H) : 0;
		size_t dims[] = { conv, H, A, a->inputs, V, 2 * cells };
		size_t K = 0;

		for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
			K = dims[i] > K ? dims[i] : K;
		ws->wtp.w = aligned_alloc(64, az_packed_floats((uint32_t)K, (uint32_t)K) *
						      sizeof(float));
		ws->zero = calloc(K, sizeof(float));
		if (az_packed_alloc(a, &ws->pk) < 0 || !ws->wtp.w || !ws->zero) {
			az_train_ws_destroy(ws);
			return -ENOMEM;
		}
	}
	ws->dh = ws->buf;
	ws->dg = ws->dh + rows * H;
	ws->dt = ws->dg + rows * H;
	ws->dlogits = ws->dt + rows * H;
	ws->dpre = ws->dlogits + B * A;
	if (a->kind == AZ_NET_RESNET) {
		ws->dvhid = ws->dpre + B * AZ_VALUE_OUTPUTS_MAX;
		ws->dvconv = ws->dvhid + B * V;
		ws->dpconv = ws->dvconv + B * cells;
		ws->dpcl = ws->dpconv + B * 2 * cells;
		ws->dcol = ws->dpcl + B * 2 * cells;
		ws->wt = ws->dcol + col;
		ws->dwt = ws->wt + H * 9 * (a->planes > H ? a->planes : H);
	}
	*out = ws;
	return 0;
}

void az_train_ws_destroy(struct az_train_ws *ws)
{
	if (!ws)
		return;
	free(ws->buf);
	az_acts_destroy(&ws->acts);
	az_packed_destroy(&ws->pk);
	free(ws->wtp.w);
	free(ws->zero);
	free(ws);
}

/* ---- loss ---- */

/* Sum of squares of the weights (biases are not decayed) among params [lo, hi); when grad is not
 * NULL, also grad += 2 * l2 * w on them. */
double az_train_l2_range(const struct az_model *m, float l2, float *grad, size_t lo, size_t hi)
{
	uint32_t n = az_model_tensor_count(&m->arch);
	double sq = 0.0;

	for (uint32_t i = 0; i < n; i++) {
		struct az_tensor t;

		az_model_tensor(&m->arch, i, &t);
		size_t a = t.offset > lo ? t.offset : lo, end = t.offset + (size_t)t.rows * t.cols;

		if (t.ndim < 2) /* biases */
			continue;
		for (size_t k = a; k < (end < hi ? end : hi); k++) {
			sq += (double)m->params[k] * m->params[k];
			if (grad)
				grad[k] += 2.0f * l2 * m->params[k];
		}
	}
	return sq;
}

/* l2_range over every parameter. */
static double l2_pass(const struct az_model *m, float l2, float *grad)
{
	return az_train_l2_range(m, l2, grad, 0, m->n_params);
}

/* Whether action i of policy target tp, which has nlegal entries not marked illegal, is in the
 * softmax. */
static inline int in_softmax(const float *tp, uint32_t i, uint32_t nlegal)
{
	return nlegal == 0 || !signbit(tp[i]);
}

double az_train_policy_xent(const float *lg, const float *tp, uint32_t A, double inv_b,
			    float *dl)
{
	double max = -INFINITY, lse = 0.0, mass = 0.0, cross = 0.0;
	uint32_t nlegal = 0;

	/* The softmax runs over the legal moves only (train/replay.h: -0.0f marks an illegal
	 * one); a row marking every move illegal cannot come from a game, and is read unmasked. */
	for (uint32_t i = 0; i < A; i++)
		nlegal += !signbit(tp[i]);
	for (uint32_t i = 0; i < A; i++)
		if (in_softmax(tp, i, nlegal))
			max = lg[i] > max ? lg[i] : max;
	for (uint32_t i = 0; i < A; i++)
		if (in_softmax(tp, i, nlegal))
			lse += exp(lg[i] - max);
	lse = max + log(lse);
	for (uint32_t i = 0; i < A; i++) {
		if (!in_softmax(tp, i, nlegal))
			continue;
		cross += tp[i] * (lg[i] - lse);
		mass += tp[i];
	}
	/* d/dlogit_i of -sum_a pi_a log softmax_a = softmax_i * sum(pi) - pi_i on a legal i; an
	 * illegal logit is outside the softmax, so its gradient is 0. */
	for (uint32_t i = 0; dl && i < A; i++)
		dl[i] = in_softmax(tp, i, nlegal) ?
			(float)((exp(lg[i] - lse) * mass - tp[i]) * inv_b) : 0.0f;
	return -cross;
}

/* The value term of row b against its target z in [-1, 1], and with dpre its gradient w.r.t. the
 * head's pre-activation times inv_b. A tanh head: (v - z)^2. A win/draw/loss head: the
 * cross-entropy -sum_k t_k log p_k against t = (max(z, 0), 1 - |z|, max(-z, 0)), the one
 * distribution over win/draw/loss with no mass on both a win and a loss whose expected outcome
 * is z (a result gives a one-hot t; --value-mix's blend of result and search value a mixed one);
 * its gradient w.r.t. the logits is p - t. */
static double value_loss(const struct az_acts *ac, int wdl, uint32_t b, float z, double inv_b,
			 float *dpre)
{
	if (!wdl) {
		double v = ac->value[b], d = v - z;

		if (dpre)
			dpre[b] = (float)(2.0 * d * (1.0 - v * v) * inv_b);
		return d * d;
	}
	double za = fabs((double)z), t[3] = {z > 0 ? za : 0.0, 1.0 - za, z < 0 ? za : 0.0};
	const float *p = ac->wdl + (size_t)b * 3;
	double ce = 0.0;

	for (int k = 0; k < 3; k++) {
		/* p_k >= FLT_MIN-ish after the softmax; the floor keeps a saturated logit finite */
		if (t[k] > 0.0)
			ce -= t[k] * log(p[k] > 1e-30f ? (double)p[k] : 1e-30);
		if (dpre)
			dpre[(size_t)b * 3 + k] = (float)((p[k] - t[k]) * inv_b);
	}
	return ce;
}

/* Forward pass over rows [0, batch) of a minibatch and the sums of their data terms (*ce: the
 * policy cross-entropies, *se: the value terms, undivided). With want_grad, also the loss
 * gradient w.r.t. the logits (ws->dlogits) and the value pre-activation (ws->dpre), each times
 * inv_b: 1 / the whole minibatch's rows, so that the parts of a minibatch split between threads
 * add up to its gradient. */
static void forward_data(const struct az_model *m, uint32_t batch, const float *x,
			 const float *pi, const float *z, double inv_b, struct az_train_ws *ws,
			 int want_grad, double *ce, double *se)
{
	uint32_t A = m->arch.actions;

	if (ws->pk.n) {
		/* packing costs about one pass over the weights: small against a batch's forward
		 * pass, which the AVX-512 kernels run ~2x faster than OpenBLAS here */
		az_packed_update(m, &ws->pk);
		az_model_forward_packed(m, &ws->pk, batch, x, &ws->acts);
	} else {
		az_model_forward(m, batch, x, &ws->acts);
	}
	*ce = *se = 0.0;
	for (uint32_t b = 0; b < batch; b++) {
		size_t row = (size_t)b * A;

		*ce += az_train_policy_xent(ws->acts.logits + row, pi + row, A, inv_b,
					    want_grad ? ws->dlogits + row : NULL);

		*se += value_loss(&ws->acts, m->arch.value_head == AZ_VALUE_WDL, b, z[b], inv_b,
				  want_grad ? ws->dpre : NULL);
	}
}

/* The three loss terms from the data sums of a whole minibatch of `batch` rows and the sum of
 * squared weights sq. */
void az_train_loss_terms(double ce, double se, double sq, uint32_t batch, float l2,
			 struct az_loss *loss)
{
	double inv_b = 1.0 / batch;

	loss->policy = (float)(ce * inv_b);
	loss->value = (float)(se * inv_b);
	loss->l2 = (float)(l2 * sq);
	loss->total = (float)(ce * inv_b + se * inv_b + l2 * sq);
}

/* Forward pass plus the three loss terms of a whole minibatch. With want_grad, also the loss
 * gradient w.r.t. the logits (ws->dlogits) and the value pre-activation (ws->dpre), each already
 * divided by B. */
void az_train_forward_loss(const struct az_model *m, uint32_t batch, const float *x,
			   const float *pi, const float *z, float l2, struct az_train_ws *ws,
			   int want_grad, struct az_loss *loss)
{
	double ce, se;

	forward_data(m, batch, x, pi, z, 1.0 / batch, ws, want_grad, &ce, &se);
	az_train_loss_terms(ce, se, l2_pass(m, 0.0f, NULL), batch, l2, loss);
}

/* ---- backprop ---- */

/* dw[out, in] = dy[B, out]^T * x[B, in]; db[out] = column sums of dy. On the packed kernels
 * (az_packed_gemm_tn) when ws has them, else OpenBLAS. */
static void linear_grad_params(const struct az_train_ws *ws, uint32_t batch, uint32_t in,
			       uint32_t out, const float *dy, const float *x, float *dw, float *db)
{
	if (ws->pk.n)
		az_packed_gemm_tn(out, in, batch, dy, out, x, in, 0, dw, in);
	else
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)out, (int)in,
			    (int)batch, 1.0f, dy, (int)out, x, (int)in, 0.0f, dw, (int)in);
	memset(db, 0, out * sizeof(float));
	for (uint32_t b = 0; b < batch; b++)
		for (uint32_t o = 0; o < out; o++)
			db[o] += dy[(size_t)b * out + o];
}

/* ws->wtp = the transpose of the row-major w[rows, cols], packed: entry (j, k) is w[k][j], so
 * az_packed_linear() on it computes dy w. */
static struct az_packed_mat *pack_transposed(struct az_train_ws *ws, const float *w,
					     uint32_t rows, uint32_t cols)
{
	ws->wtp.out = cols;
	ws->wtp.in = rows;
	az_packed_pack(&ws->wtp, w, 1, cols);
	return &ws->wtp;
}

/* dx[B, in] = dy[B, out] * w[out, in] + beta * dx (beta 0 or 1). On the packed kernels when ws
 * has them: w transposed and packed into ws->wtp, dx the residual input for beta = 1. */
static void linear_grad_input(struct az_train_ws *ws, uint32_t batch, uint32_t in, uint32_t out,
			      const float *dy, const float *w, float beta, float *dx)
{
	AZ_ASSERT(beta == 0.0f || beta == 1.0f);
	if (ws->pk.n) {
		az_packed_linear(pack_transposed(ws, w, out, in), batch, dy, ws->zero,
				 beta != 0.0f ? dx : NULL, 0, dx);
		return;
	}
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

/* ---- ResNet backprop ---- */

/* w[F, 9C] (columns c * 9 + t, the [F, C, 3, 3] tensor) to tap-major wt (columns t * C + c),
 * or back (to_tap 0). */
static void tap_order(const float *from, uint32_t F, uint32_t C, int to_tap, float *to)
{
	size_t K = (size_t)9 * C;

	for (size_t f = 0; f < F; f++)
		for (size_t c = 0; c < C; c++)
			for (size_t t = 0; t < 9; t++) {
				size_t std = f * K + c * 9 + t, tap = f * K + t * C + c;

				to[to_tap ? tap : std] = from[to_tap ? std : tap];
			}
}

/* dw/db of a 3x3 conv out = conv3x3(in) + b with out-gradient dy[batch * cells, F] (after the
 * ReLU's mask), in read with strides (sn, sc, sp) as az_conv3_im2col. When dx is not NULL,
 * dx[batch * cells, C] (channels last) += the input gradient. The im2col is recomputed chunk by
 * chunk (AZ_CONV_CHUNK samples) in col; dcol holds a chunk's column gradient. Both are
 * tap-major (az_conv3_im2col_tap: runs of C channels, 2-3x cheaper to build and to fold back
 * than channels 9 floats apart), with w permuted to match in wt and the gradient put back in
 * W's order from dwt at the end. With packed kernels (ws->pk), dwt and dcol = dy wt run on
 * them, wt transposed and packed in ws->wtp. ws provides wt, dwt, wtp and zero. */
static void conv3_backward(const struct az_arch *a, const float *in, uint32_t batch, uint32_t C,
			   size_t sn, size_t sc, size_t sp, const float *dy, const float *w,
			   float *dw, float *db, float *dx, float *col, float *dcol,
			   struct az_train_ws *ws)
{
	uint32_t F = a->hidden, Hb = a->height, Wb = a->width;
	size_t cells = (size_t)Hb * Wb, K = (size_t)9 * C;
	float *wt = ws->wt, *dwt = ws->dwt;
	int packed = ws->pk.n != 0;
	const struct az_packed_mat *pm = NULL;

	if (dx)
		tap_order(w, F, C, 1, wt);
	if (dx && packed)
		pm = pack_transposed(ws, wt, F, (uint32_t)K);
	memset(db, 0, F * sizeof(float));
	for (uint32_t n0 = 0; n0 < batch; n0 += AZ_CONV_CHUNK) {
		uint32_t nb = batch - n0 < AZ_CONV_CHUNK ? batch - n0 : AZ_CONV_CHUNK;
		int rows = (int)(nb * cells);
		const float *dyc = dy + n0 * cells * F;

		az_conv3_im2col_tap(in + n0 * sn, nb, C, Hb, Wb, sn, sc, sp, col);
		/* dwt[F, 9C] (+)= dy^T col: the first chunk overwrites, the others add */
		if (packed)
			az_packed_gemm_tn(F, (uint32_t)K, (uint32_t)rows, dyc, F, col, K, n0 != 0,
					  dwt, K);
		else
			cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)F, (int)K, rows,
				    1.0f, dyc, (int)F, col, (int)K, n0 == 0 ? 0.0f : 1.0f, dwt,
				    (int)K);
		for (int r = 0; r < rows; r++)
			for (uint32_t o = 0; o < F; o++)
				db[o] += dyc[(size_t)r * F + o];
		if (!dx)
			continue;
		if (pm)
			az_packed_linear(pm, (uint32_t)rows, dyc, ws->zero, NULL, 0, dcol);
		else
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, (int)K,
				    (int)F, 1.0f, dyc, (int)F, wt, (int)K, 0.0f, dcol, (int)K);
		az_conv3_col2im_tap(dcol, nb, C, Hb, Wb, dx + n0 * cells * C);
	}
	tap_order(dwt, F, C, 0, dw);
}

/* Offset of ResNet tensor i in params (and grad). */
static size_t tensor_off(const struct az_arch *a, uint32_t i)
{
	struct az_tensor t;

	az_model_tensor(a, i, &t);
	return t.offset;
}

/* The ResNet's data-term gradient, given ws->dlogits and ws->dpre (net/model.h's layers in
 * reverse: value head, policy head, blocks last first, the trunk conv). */
static void resnet_backprop(const struct az_model *m, uint32_t batch, const float *x,
			    struct az_train_ws *ws, float *grad)
{
	const struct az_arch *a = &m->arch;
	const struct az_acts *ac = &ws->acts;
	uint32_t C = a->planes, F = a->hidden, R = a->blocks, A = a->actions;
	uint32_t V = AZ_RESNET_VALUE_HIDDEN, head = 2 + 4 * R, VO = az_arch_value_outputs(a);
	size_t cells = (size_t)a->height * a->width, rows = batch * cells, nF = rows * F;
	const float *hR = ac->trunk[R], *P = m->params;
	size_t pc = tensor_off(a, head), pf = tensor_off(a, head + 2);
	size_t vc = tensor_off(a, head + 4), v1 = tensor_off(a, head + 6);
	size_t v2 = tensor_off(a, head + 8);

	/* value: fc2, ReLU, fc1, ReLU, 1x1 conv (its [rows, 1] gradient is dvconv) */
	linear_grad_params(ws, batch, V, VO, ws->dpre, ac->vhid, grad + v2, grad + v2 + VO * V);
	linear_grad_input(ws, batch, V, VO, ws->dpre, P + v2, 0.0f, ws->dvhid);
	relu_grad(ac->vhid, ws->dvhid, ws->dvhid, (size_t)batch * V);
	linear_grad_params(ws, batch, (uint32_t)cells, V, ws->dvhid, ac->vconv, grad + v1,
			   grad + v1 + V * cells);
	linear_grad_input(ws, batch, (uint32_t)cells, V, ws->dvhid, P + v1, 0.0f, ws->dvconv);
	relu_grad(ac->vconv, ws->dvconv, ws->dvconv, rows);
	linear_grad_params(ws, (uint32_t)rows, F, 1, ws->dvconv, hR, grad + vc, grad + vc + F);
	linear_grad_input(ws, (uint32_t)rows, F, 1, ws->dvconv, P + vc, 0.0f, ws->dh);

	/* policy: fc, ReLU, back to channels last, 1x1 conv */
	linear_grad_params(ws, batch, (uint32_t)(2 * cells), A, ws->dlogits, ac->pconv, grad + pf,
			   grad + pf + (size_t)A * 2 * cells);
	linear_grad_input(ws, batch, (uint32_t)(2 * cells), A, ws->dlogits, P + pf, 0.0f, ws->dpconv);
	relu_grad(ac->pconv, ws->dpconv, ws->dpconv, rows * 2);
	for (size_t n = 0; n < batch; n++)
		for (size_t c = 0; c < 2; c++)
			for (size_t q = 0; q < cells; q++)
				ws->dpcl[(n * cells + q) * 2 + c] = ws->dpconv[(n * 2 + c) * cells + q];
	linear_grad_params(ws, (uint32_t)rows, F, 2, ws->dpcl, hR, grad + pc, grad + pc + 2 * F);
	linear_grad_input(ws, (uint32_t)rows, F, 2, ws->dpcl, P + pc, 1.0f, ws->dh);

	/* blocks, last first: out = relu(in + conv2(t)), t = relu(conv1(in)) */
	for (uint32_t r = R; r-- > 0;) {
		size_t o1 = tensor_off(a, 2 + 4 * r), o2 = tensor_off(a, 4 + 4 * r);
		size_t cw = (size_t)9 * F * F;

		relu_grad(ac->trunk[r + 1], ws->dh, ws->dg, nF);
		memset(ws->dt, 0, nF * sizeof(float));
		conv3_backward(a, ac->inner[r], batch, F, cells * F, 1, F, ws->dg, P + o2, grad + o2,
			       grad + o2 + cw, ws->dt, ac->scratch, ws->dcol, ws);
		relu_grad(ac->inner[r], ws->dt, ws->dt, nF);
		memcpy(ws->dh, ws->dg, nF * sizeof(float)); /* the skip connection */
		conv3_backward(a, ac->trunk[r], batch, F, cells * F, 1, F, ws->dt, P + o1, grad + o1,
			       grad + o1 + cw, ws->dh, ac->scratch, ws->dcol, ws);
	}
	/* trunk conv over the plane-major input; no input gradient */
	relu_grad(ac->trunk[0], ws->dh, ws->dg, nF);
	conv3_backward(a, x, batch, C, C * cells, cells, 1, ws->dg, P, grad, grad + (size_t)9 * F * C,
		       NULL, ac->scratch, ws->dcol, ws);
}

/* Gradient of the data terms through the whole net, given ws->dlogits and ws->dpre. */
static void backprop(const struct az_model *m, uint32_t batch, const float *x,
		     struct az_train_ws *ws, float *grad)
{
	const struct az_arch *a = &m->arch;
	uint32_t D = a->inputs, H = a->hidden, R = a->blocks, A = a->actions;
	uint32_t VO = az_arch_value_outputs(a);
	size_t HH = (size_t)H * H, BH = (size_t)batch * H, head = block_offset(a, R);
	const float *hR = ws->acts.trunk[R];
	const float *wp = m->params + head, *wv = wp + (size_t)A * H + A;
	float *gwp = grad + head, *gwv = gwp + (size_t)A * H + A;

	if (a->kind == AZ_NET_RESNET) {
		resnet_backprop(m, batch, x, ws, grad);
		return;
	}
	/* Heads: logits = hR Wp^T + bp, value pre-activation = hR wv + bv. */
	linear_grad_params(ws, batch, H, A, ws->dlogits, hR, gwp, gwp + (size_t)A * H);
	linear_grad_params(ws, batch, H, VO, ws->dpre, hR, gwv, gwv + (size_t)VO * H);
	linear_grad_input(ws, batch, H, A, ws->dlogits, wp, 0.0f, ws->dh);
	linear_grad_input(ws, batch, H, VO, ws->dpre, wv, 1.0f, ws->dh);

	/* Blocks, last first: out = relu(in + W2 t + b2), t = relu(W1 in + b1). */
	for (uint32_t r = R; r-- > 0;) {
		size_t off = block_offset(a, r);
		const float *w1 = m->params + off, *w2 = w1 + HH + H;
		float *gw1 = grad + off, *gw2 = gw1 + HH + H;
		const float *in = ws->acts.trunk[r], *t = ws->acts.inner[r];

		relu_grad(ws->acts.trunk[r + 1], ws->dh, ws->dg, BH);
		linear_grad_params(ws, batch, H, H, ws->dg, t, gw2, gw2 + HH);
		linear_grad_input(ws, batch, H, H, ws->dg, w2, 0.0f, ws->dt);
		relu_grad(t, ws->dt, ws->dt, BH);
		linear_grad_params(ws, batch, H, H, ws->dt, in, gw1, gw1 + HH);
		/* d in = dg (skip connection) + dt W1. */
		memcpy(ws->dh, ws->dg, BH * sizeof(float));
		linear_grad_input(ws, batch, H, H, ws->dt, w1, 1.0f, ws->dh);
	}

	/* Input layer: h0 = relu(W_in x + b_in); no gradient w.r.t. x is needed. */
	relu_grad(ws->acts.trunk[0], ws->dh, ws->dg, BH);
	linear_grad_params(ws, batch, D, H, ws->dg, x, grad, grad + (size_t)H * D);
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
	az_train_forward_loss(m, batch, x, pi, z, l2, ws, 1, loss ? loss : &scratch);
	backprop(m, batch, x, ws, grad);
	l2_grad(m, l2, grad);
	az_train_ws_destroy(own);
	return 0;
}

void az_train_part_grad(const struct az_model *m, uint32_t batch, const float *x,
			const float *pi, const float *z, double inv_b, struct az_train_ws *ws,
			float *grad, double *ce, double *se)
{
	forward_data(m, batch, x, pi, z, inv_b, ws, 1, ce, se);
	backprop(m, batch, x, ws, grad);
}
