/* SPDX-License-Identifier: MIT */
/* CPU reference forward pass of the residual MLP and of the ResNet (OpenBLAS sgemm, sgemv at
 * batch 1, bias fused into the GEMM as beta = 1; convolutions as im2col + sgemm), the
 * activations kept for backprop, and the masked softmax. */
#include "gpu/cpu_forward.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "gpu/cpu_packed.h"
#include "net/model.h"

/* Floats of the ResNet forward scratch: one chunk's im2col matrix, or the policy conv's
 * channels-last output of a whole batch, whichever is larger. */
static size_t resnet_scratch(const struct az_arch *a, size_t B)
{
	size_t cells = (size_t)a->height * a->width;
	size_t C = a->planes > a->hidden ? a->planes : a->hidden;
	size_t chunk = B < AZ_CONV_CHUNK ? B : AZ_CONV_CHUNK;
	size_t col = chunk * cells * 9 * C, pol = B * cells * 2;

	return col > pol ? col : pol;
}

int az_acts_create(const struct az_arch *a, uint32_t max_batch, struct az_acts *acts)
{
	size_t B = max_batch, H = a->hidden, R = a->blocks, A = a->actions;
	size_t cells = (size_t)a->height * a->width, heads = 0;

	if (a->kind == AZ_NET_RESNET) {
		B *= cells; /* trunk rows: one per board cell */
		heads = max_batch * (3 * cells + AZ_RESNET_VALUE_HIDDEN) +
			resnet_scratch(a, max_batch);
	}
	memset(acts, 0, sizeof(*acts));
	acts->max_batch = max_batch;
	/* one pointer array: trunk's R + 1, then inner's R (inner is not NULL even when R = 0) */
	acts->trunk = calloc(2 * R + 1, sizeof(float *));
	acts->buf = calloc((2 * R + 1) * B * H + (size_t)max_batch * (A + 5) + heads,
			   sizeof(float));
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
	acts->value = p + (size_t)max_batch * A;
	acts->draw = acts->value + max_batch;
	acts->wdl = acts->draw + max_batch;
	if (a->kind == AZ_NET_RESNET) {
		acts->pconv = acts->wdl + (size_t)max_batch * 3;
		acts->vconv = acts->pconv + (size_t)max_batch * 2 * cells;
		acts->vhid = acts->vconv + (size_t)max_batch * cells;
		acts->scratch = acts->vhid + (size_t)max_batch * AZ_RESNET_VALUE_HIDDEN;
	}
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
	if (batch <= 6) {
		/* A few positions: y += W x as one GEMV each, which packs nothing. OpenBLAS's sgemm
		 * packs W on every call: `AZ_CPU_GEMM=blas azbench infer --game connect4` gave
		 * 196k evals/s at batch 1 (GEMV), 79k at 2, 172k at 4, 154k at 5 and 246k at 8
		 * (sgemm); one GEMV a row, about 200k at 2-6. */
		for (uint32_t r = 0; r < batch; r++)
			cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)out, (int)in, 1.0f, w, (int)in,
				    x + (size_t)r * in, 1, 1.0f, y + (size_t)r * out, 1);
		return;
	}
	if (out == 1) {
		/* One output (a value head): y[B] += x[B, in] w as a GEMV over the batch. */
		cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)batch, (int)in, 1.0f, x, (int)in, w,
			    1, 1.0f, y, 1);
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

/* W = w[out, in] inside m's params, packed in pk (NULL: not packed, or no pk). */
static const struct az_packed_mat *packed_of(const struct az_model *m, const struct az_packed *pk,
					     const float *w)
{
	return pk ? az_packed_find(pk, (size_t)(w - m->params)) : NULL;
}

/* One layer y = act(x W^T + b (+ res)): the packed AVX-512 kernel on pm (W packed), else
 * C = bias (+ residual), C += x W^T on OpenBLAS with W = w[out, in], then ReLU. */
static void layer_on(const struct az_packed_mat *pm, uint32_t batch, uint32_t in, uint32_t out,
		     const float *x, const float *w, const float *b, const float *res, int act,
		     float *y)
{
	if (pm) {
		AZ_DEBUG_ASSERT(pm->in == in && pm->out == out);
		az_packed_linear(pm, batch, x, b, res, act, y);
		return;
	}
	fill_bias(y, b, res, batch, out);
	linear_acc(batch, in, out, x, w, y);
	if (act)
		relu(y, (size_t)batch * out);
}

/* layer_on() with W looked up in pk. */
static void layer(const struct az_model *m, const struct az_packed *pk, uint32_t batch,
		  uint32_t in, uint32_t out, const float *x, const float *w, const float *b,
		  const float *res, int act, float *y)
{
	layer_on(packed_of(m, pk, w), batch, in, out, x, w, b, res, act, y);
}

/* ---- ResNet ---- */

void az_conv3_im2col(const float *in, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
		     size_t sn, size_t sc, size_t sp, float *col)
{
	size_t K = (size_t)9 * C;

	for (uint32_t n = 0; n < batch; n++) {
		const float *src = in + n * sn;

		for (uint32_t y = 0; y < Hb; y++) {
			for (uint32_t x = 0; x < Wb; x++) {
				float *row = col + ((size_t)n * Hb * Wb + (size_t)y * Wb + x) * K;

				for (uint32_t k = 0; k < 9; k++) {
					int yy = (int)y + (int)(k / 3) - 1, xx = (int)x + (int)(k % 3) - 1;
					int off = yy < 0 || xx < 0 || yy >= (int)Hb || xx >= (int)Wb;
					size_t p = off ? 0 : (size_t)yy * Wb + (size_t)xx;

					for (uint32_t c = 0; c < C; c++)
						row[(size_t)c * 9 + k] = off ? 0.0f
									     : src[c * sc + p * sp];
				}
			}
		}
	}
}

void az_conv3_col2im(const float *col, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
		     float *out)
{
	size_t K = (size_t)9 * C, cells = (size_t)Hb * Wb;

	for (uint32_t n = 0; n < batch; n++) {
		for (uint32_t y = 0; y < Hb; y++) {
			for (uint32_t x = 0; x < Wb; x++) {
				const float *row = col + (n * cells + (size_t)y * Wb + x) * K;

				for (uint32_t k = 0; k < 9; k++) {
					int yy = (int)y + (int)(k / 3) - 1, xx = (int)x + (int)(k % 3) - 1;

					if (yy < 0 || xx < 0 || yy >= (int)Hb || xx >= (int)Wb)
						continue;
					float *dst = out + (n * cells + (size_t)yy * Wb + (size_t)xx) * C;

					for (uint32_t c = 0; c < C; c++)
						dst[c] += row[(size_t)c * 9 + k];
				}
			}
		}
	}
}

/* One row of az_conv3_im2col_tap() for channels-last, dense data (sc = 1, sp = C): each kernel
 * row ky's three taps read the cells (yy, x - 1 .. x + 1), which lie side by side in memory,
 * so one copy of up to 3C floats serves them (one call where there were three), and the taps
 * off the board are zeroed. */
static void im2col_tap_row_dense(const float *src, uint32_t C, uint32_t Hb, uint32_t Wb,
				 uint32_t y, uint32_t x, float *row)
{
	uint32_t x0 = x ? x - 1 : 0, x1 = x + 1 < Wb ? x + 1 : Wb - 1; /* the cells on the board */

	for (int ky = 0; ky < 3; ky++) {
		int yy = (int)y + ky - 1;
		float *dst = row + (size_t)ky * 3 * C;

		if (yy < 0 || yy >= (int)Hb) {
			memset(dst, 0, sizeof(float) * 3 * C);
			continue;
		}
		if (x == 0)
			memset(dst, 0, sizeof(float) * C); /* kx = 0: the cell left of the board */
		memcpy(dst + (size_t)(x0 + 1 - x) * C, src + ((size_t)yy * Wb + x0) * C,
		       sizeof(float) * C * (x1 - x0 + 1));
		if (x + 1 >= Wb)
			memset(dst + 2 * (size_t)C, 0, sizeof(float) * C); /* kx = 2: right of it */
	}
}

void az_conv3_im2col_tap(const float *in, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
			 size_t sn, size_t sc, size_t sp, float *col)
{
	size_t cells = (size_t)Hb * Wb;

	for (uint32_t n = 0; n < batch; n++) {
		const float *src = in + n * sn;

		for (uint32_t y = 0; y < Hb; y++)
			for (uint32_t x = 0; x < Wb; x++) {
				float *row = col + ((size_t)n * cells + (size_t)y * Wb + x) * 9 * C;

				if (sc == 1 && sp == C) {
					im2col_tap_row_dense(src, C, Hb, Wb, y, x, row);
					continue;
				}
				for (int t = 0; t < 9; t++) {
					int yy = (int)y + t / 3 - 1, xx = (int)x + t % 3 - 1;
					float *dst = row + (size_t)t * C;

					if (yy < 0 || xx < 0 || yy >= (int)Hb || xx >= (int)Wb) {
						memset(dst, 0, sizeof(float) * C);
						continue;
					}
					const float *s = src + ((size_t)yy * Wb + (size_t)xx) * sp;

					if (sc == 1) {
						memcpy(dst, s, sizeof(float) * C);
						continue;
					}
					for (uint32_t c = 0; c < C; c++)
						dst[c] = s[c * sc];
				}
			}
	}
}

void az_conv3_col2im_tap(const float *col, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
			 float *out)
{
	size_t cells = (size_t)Hb * Wb;

	for (uint32_t n = 0; n < batch; n++)
		for (uint32_t y = 0; y < Hb; y++)
			for (uint32_t x = 0; x < Wb; x++) {
				const float *row = col + ((size_t)n * cells + (size_t)y * Wb + x) * 9 * C;

				for (int t = 0; t < 9; t++) {
					int yy = (int)y + t / 3 - 1, xx = (int)x + t % 3 - 1;

					if (yy < 0 || xx < 0 || yy >= (int)Hb || xx >= (int)Wb)
						continue;
					float *dst = out + (n * cells + (size_t)yy * Wb + (size_t)xx) * C;
					const float *src = row + (size_t)t * C;

					for (uint32_t c = 0; c < C; c++)
						dst[c] += src[c];
				}
			}
}

/* out[batch * cells, F] = relu(conv3x3(in) + b (+ res)), in read with strides (sn, sc, sp) as
 * az_conv3_im2col; AZ_CONV_CHUNK samples per im2col + GEMM, through col. */
static void conv3_forward(const struct az_model *m, const struct az_packed *pk, const float *in,
			  uint32_t batch, uint32_t C, size_t sn, size_t sc, size_t sp,
			  const float *w, const float *b, const float *res, float *out, float *col)
{
	const struct az_arch *a = &m->arch;
	uint32_t F = a->hidden, Hb = a->height, Wb = a->width;
	size_t cells = (size_t)Hb * Wb;
	/* packed: the weight's columns are tap-major, and so must col's be */
	const struct az_packed_mat *pm = packed_of(m, pk, w);

	AZ_ASSERT(!pm || pm->conv_c == C);
	if (pm && sc == 1 && sp == C && az_packed_conv3_ok(pm)) { /* implicit GEMM: no col matrix */
		/* col holds a chunk's 9 * C * cells floats, more than its padded input */
		AZ_ASSERT(az_packed_conv3_pad_words(pm, AZ_CONV_CHUNK, Hb, Wb) <=
			  (size_t)AZ_CONV_CHUNK * cells * 9 * C);
		for (uint32_t n0 = 0; n0 < batch; n0 += AZ_CONV_CHUNK) {
			uint32_t nb = batch - n0 < AZ_CONV_CHUNK ? batch - n0 : AZ_CONV_CHUNK;
			size_t first = n0 * cells * F;
			const struct az_conv_src cv = { .in = in + n0 * sn, .sn = sn, .c = C,
							.height = Hb, .width = Wb };

			az_packed_conv3(pm, &cv, nb, b, res ? res + first : NULL, 1, out + first,
					col);
		}
		return;
	}
	for (uint32_t n0 = 0; n0 < batch; n0 += AZ_CONV_CHUNK) {
		uint32_t nb = batch - n0 < AZ_CONV_CHUNK ? batch - n0 : AZ_CONV_CHUNK;
		size_t first = n0 * cells * F;

		if (pm)
			az_conv3_im2col_tap(in + n0 * sn, nb, C, Hb, Wb, sn, sc, sp, col);
		else
			az_conv3_im2col(in + n0 * sn, nb, C, Hb, Wb, sn, sc, sp, col);
		layer_on(pm, (uint32_t)(nb * cells), 9 * C, F, col, w, b, res ? res + first : NULL,
			 1, out + first);
	}
}

/* The value head's last layer over h[B, in] (weight w [V, in], then bias [V]): a tanh unit into
 * acts->value (acts->draw 0), or win/draw/loss logits through a softmax into acts->wdl, with
 * value = p_win - p_loss and draw = p_draw. */
static void value_out(const struct az_model *m, const struct az_packed *pk, uint32_t batch,
		      uint32_t in, const float *h, const float *w, struct az_acts *acts)
{
	uint32_t V = az_arch_value_outputs(&m->arch);

	if (V == 1) {
		layer(m, pk, batch, in, 1, h, w, w + in, NULL, 0, acts->value);
		for (uint32_t r = 0; r < batch; r++) {
			acts->value[r] = tanhf(acts->value[r]);
			acts->draw[r] = 0.0f;
		}
		return;
	}
	layer(m, pk, batch, in, 3, h, w, w + (size_t)3 * in, NULL, 0, acts->wdl);
	for (uint32_t r = 0; r < batch; r++) {
		float *q = acts->wdl + (size_t)r * 3;

		az_wdl_softmax(q);
		acts->value[r] = q[0] - q[2];
		acts->draw[r] = q[1];
	}
}

/* The ResNet forward pass (net/model.h); parameters in az_model_tensor() order. */
static void resnet_forward(const struct az_model *m, const struct az_packed *pk, uint32_t batch,
			   const float *x, struct az_acts *acts)
{
	const struct az_arch *a = &m->arch;
	uint32_t C = a->planes, F = a->hidden, R = a->blocks, A = a->actions;
	uint32_t V = AZ_RESNET_VALUE_HIDDEN;
	size_t cells = (size_t)a->height * a->width, rows = batch * cells, conv = (size_t)9 * F * F;
	const float *p = m->params;

	/* the input is plane-major: sample stride C*cells, channel stride cells, cell stride 1 */
	conv3_forward(m, pk, x, batch, C, C * cells, cells, 1, p, p + (size_t)9 * F * C, NULL,
		      acts->trunk[0], acts->scratch);
	p += (size_t)9 * F * C + F;
	for (uint32_t r = 0; r < R; r++) {
		const float *w1 = p, *b1 = w1 + conv, *w2 = b1 + F, *b2 = w2 + conv;

		conv3_forward(m, pk, acts->trunk[r], batch, F, cells * F, 1, F, w1, b1, NULL,
			      acts->inner[r], acts->scratch);
		conv3_forward(m, pk, acts->inner[r], batch, F, cells * F, 1, F, w2, b2,
			      acts->trunk[r], acts->trunk[r + 1], acts->scratch);
		p = b2 + F;
	}
	const float *h = acts->trunk[R];

	/* policy: 1x1 conv to 2 planes (channels last in scratch), ReLU, to channel-major */
	layer(m, pk, (uint32_t)rows, F, 2, h, p, p + 2 * F, NULL, 0, acts->scratch);
	p += 2 * F + 2;
	for (size_t n = 0; n < batch; n++)
		for (size_t c = 0; c < 2; c++)
			for (size_t q = 0; q < cells; q++) {
				float v = acts->scratch[(n * cells + q) * 2 + c];

				acts->pconv[(n * 2 + c) * cells + q] = v < 0.0f ? 0.0f : v;
			}
	layer(m, pk, batch, (uint32_t)(2 * cells), A, acts->pconv, p, p + (size_t)A * 2 * cells,
	      NULL, 0, acts->logits);
	p += (size_t)A * 2 * cells + A;

	/* value: 1x1 conv to 1 plane ([rows, 1] is already [batch, cells]), ReLU, fc1, ReLU, fc2 */
	layer(m, pk, (uint32_t)rows, F, 1, h, p, p + F, NULL, 1, acts->vconv);
	p += F + 1;
	layer(m, pk, batch, (uint32_t)cells, V, acts->vconv, p, p + (size_t)V * cells, NULL, 1,
	      acts->vhid);
	p += (size_t)V * cells + V;
	value_out(m, pk, batch, V, acts->vhid, p, acts);
	p += (size_t)az_arch_value_outputs(a) * (V + 1);
	AZ_DEBUG_ASSERT(p == m->params + m->n_params);
}

/* ---- forward ---- */

void az_model_forward(const struct az_model *m, uint32_t batch, const float *x,
		      struct az_acts *acts)
{
	az_model_forward_packed(m, NULL, batch, x, acts);
}

void az_model_forward_packed(const struct az_model *m, const struct az_packed *pk,
			     uint32_t batch, const float *x, struct az_acts *acts)
{
	const struct az_arch *a = &m->arch;
	uint32_t D = a->inputs, H = a->hidden, R = a->blocks, A = a->actions;
	size_t HH = (size_t)H * H;
	const float *p = m->params;

	AZ_ASSERT(batch <= acts->max_batch);
	if (batch == 0)
		return;
	if (a->kind == AZ_NET_RESNET) {
		AZ_ASSERT(acts->scratch); /* acts made for this arch */
		resnet_forward(m, pk, batch, x, acts);
		return;
	}

	/* Parameters are consumed in az_model_tensor() order. Each layer: C = bias (+ residual),
	 * C += x W^T, then ReLU: two passes over C besides the GEMM's, none of them zeroing. */
	const float *w0 = p, *b0 = w0 + (size_t)H * D;

	layer(m, pk, batch, D, H, x, w0, b0, NULL, 1, acts->trunk[0]);
	p = b0 + H;
	for (uint32_t r = 0; r < R; r++) {
		const float *w1 = p, *b1 = w1 + HH, *w2 = b1 + H, *b2 = w2 + HH;

		layer(m, pk, batch, H, H, acts->trunk[r], w1, b1, NULL, 1, acts->inner[r]);
		/* the residual sum: trunk[r + 1] = max(0, trunk[r] + b2 + W2 inner[r]) */
		layer(m, pk, batch, H, H, acts->inner[r], w2, b2, acts->trunk[r], 1,
		      acts->trunk[r + 1]);
		p = b2 + H;
	}

	const float *h = acts->trunk[R];

	layer(m, pk, batch, H, A, h, p, p + (size_t)A * H, NULL, 0, acts->logits);
	p += (size_t)A * H + A;
	value_out(m, pk, batch, H, h, p, acts);
	p += (size_t)az_arch_value_outputs(a) * (H + 1);
	AZ_DEBUG_ASSERT(p == m->params + m->n_params);
}

void az_wdl_softmax(float *q)
{
	float mx = q[0] > q[1] ? q[0] : q[1];

	if (q[2] > mx)
		mx = q[2];
	/* NaN or inf logits: no outcome favoured. The max's comparisons skip a NaN in q[0] or q[1]
	 * when a later logit is finite; the sum does not. */
	if (!isfinite(mx) || isnan(q[0] + q[1] + q[2])) {
		q[0] = q[1] = q[2] = 1.0f / 3.0f;
		return;
	}
	float e0 = expf(q[0] - mx), e1 = expf(q[1] - mx), e2 = expf(q[2] - mx);
	float inv = 1.0f / (e0 + e1 + e2); /* >= 1: the largest term is exactly 1 */

	q[0] = e0 * inv;
	q[1] = e1 * inv;
	q[2] = e2 * inv;
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
