/* SPDX-License-Identifier: MIT */
/* CPU reference forward pass of the residual MLP (OpenBLAS sgemm, sgemv at batch 1, bias fused
 * into the GEMM as beta = 1), the activations kept for backprop, and the masked softmax. */
#include "net/model.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"

int az_acts_create(const struct az_arch *a, uint32_t max_batch, struct az_acts *acts)
{
	size_t B = max_batch, H = a->hidden, R = a->blocks, A = a->actions;

	memset(acts, 0, sizeof(*acts));
	acts->max_batch = max_batch;
	/* one pointer array: trunk's R + 1, then inner's R (inner is not NULL even when R = 0) */
	acts->trunk = calloc(2 * R + 1, sizeof(float *));
	acts->buf = calloc((2 * R + 1) * B * H + B * A + B, sizeof(float));
	if (!acts->trunk || !acts->buf) {
		az_acts_destroy(acts);
		return -ENOMEM;
	}
	acts->inner = acts->trunk + R + 1;

	float *p = acts->buf;

	for (size_t r = 0; r <= R; r++, p += B * H)
		acts->trunk[r] = p;
	for (size_t r = 0; r < R; r++, p += B * H)
		acts->inner[r] = p;
	acts->logits = p;
	acts->value = p + B * A;
	return 0;
}

void az_acts_destroy(struct az_acts *acts)
{
	if (!acts)
		return;
	free(acts->buf);
	free(acts->trunk); /* and inner, in the same array */
	memset(acts, 0, sizeof(*acts));
}

/* y[B, out] += x[B, in] * w[out, in]^T (row-major; w is the PyTorch [out, in] layout). beta = 1:
 * y arrives holding the bias (and the residual input), so OpenBLAS skips its pass that scales
 * or zeroes C for beta != 1, and no separate bias pass follows. */
static void linear_acc(uint32_t batch, uint32_t in, uint32_t out, const float *x, const float *w,
		       float *y)
{
	if (batch == 1) {
		/* One position: y += W x as a GEMV, which reads W once and packs nothing (sgemm
		 * at M = 1 spends about half its time packing W and x). */
		cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)out, (int)in, 1.0f, w, (int)in, x, 1,
			    1.0f, y, 1);
		return;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)batch, (int)out, (int)in, 1.0f,
		    x, (int)in, w, (int)in, 1.0f, y, (int)out);
}

/* y[r, c] = b[c] (+ res[r, c] when res is not NULL): the GEMM's starting C. */
static void fill_bias(float *y, const float *b, const float *res, uint32_t rows, uint32_t cols)
{
	for (uint32_t r = 0; r < rows; r++) {
		float *row = y + (size_t)r * cols;

		if (!res) {
			memcpy(row, b, sizeof(float) * cols);
			continue;
		}
		const float *rr = res + (size_t)r * cols;

		for (uint32_t c = 0; c < cols; c++)
			row[c] = rr[c] + b[c];
	}
}

/* y = max(0, y) over n entries. */
static void relu(float *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = y[i] < 0.0f ? 0.0f : y[i];
}

void az_model_forward(const struct az_model *m, uint32_t batch, const float *x,
		      struct az_acts *acts)
{
	const struct az_arch *a = &m->arch;
	uint32_t D = a->inputs, H = a->hidden, R = a->blocks, A = a->actions;
	size_t HH = (size_t)H * H, BH = (size_t)batch * H;
	const float *p = m->params;

	AZ_ASSERT(batch <= acts->max_batch);
	if (batch == 0)
		return;

	/* Parameters are consumed in az_model_tensor() order. Each layer: C = bias (+ residual),
	 * C += x W^T, then ReLU: two passes over C besides the GEMM's, none of them zeroing. */
	const float *w0 = p, *b0 = w0 + (size_t)H * D;

	fill_bias(acts->trunk[0], b0, NULL, batch, H);
	linear_acc(batch, D, H, x, w0, acts->trunk[0]);
	relu(acts->trunk[0], BH);
	p = b0 + H;
	for (uint32_t r = 0; r < R; r++) {
		const float *w1 = p, *b1 = w1 + HH, *w2 = b1 + H, *b2 = w2 + HH;

		fill_bias(acts->inner[r], b1, NULL, batch, H);
		linear_acc(batch, H, H, acts->trunk[r], w1, acts->inner[r]);
		relu(acts->inner[r], BH);
		/* the residual sum: trunk[r + 1] = max(0, trunk[r] + b2 + W2 inner[r]) */
		fill_bias(acts->trunk[r + 1], b2, acts->trunk[r], batch, H);
		linear_acc(batch, H, H, acts->inner[r], w2, acts->trunk[r + 1]);
		relu(acts->trunk[r + 1], BH);
		p = b2 + H;
	}

	const float *h = acts->trunk[R];

	fill_bias(acts->logits, p + (size_t)A * H, NULL, batch, A);
	linear_acc(batch, H, A, h, p, acts->logits);
	p += (size_t)A * H + A;
	for (uint32_t r = 0; r < batch; r++)
		acts->value[r] = p[H];
	cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)batch, (int)H, 1.0f, h, (int)H, p, 1, 1.0f,
		    acts->value, 1);
	p += H;
	for (uint32_t r = 0; r < batch; r++)
		acts->value[r] = tanhf(acts->value[r]);
	AZ_DEBUG_ASSERT(p + 1 == m->params + m->n_params);
}

void az_masked_softmax(const float *logits, const uint8_t *legal, uint32_t actions, float *prob)
{
	float max = -INFINITY;
	uint32_t n_legal = 0;

	for (uint32_t i = 0; i < actions; i++) {
		if (legal[i] && logits[i] > max)
			max = logits[i];
		n_legal += legal[i] != 0;
	}
	if (n_legal > 0 && !(max > -INFINITY)) {
		/* No usable legal logit (all -inf or NaN): uniform over the legal moves. */
		for (uint32_t i = 0; i < actions; i++)
			prob[i] = legal[i] ? 1.0f / (float)n_legal : 0.0f;
		return;
	}
	/* Subtracting the legal max keeps every exponent <= 0: no overflow, and the largest term is
	 * exactly 1, so the sum is >= 1 and the division is safe. */
	double sum = 0.0;

	for (uint32_t i = 0; i < actions; i++) {
		prob[i] = legal[i] ? expf(logits[i] - max) : 0.0f;
		sum += prob[i];
	}
	if (n_legal == 0)
		return;
	float inv = (float)(1.0 / sum);

	for (uint32_t i = 0; i < actions; i++)
		prob[i] *= inv;
}
