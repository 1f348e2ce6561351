/* SPDX-License-Identifier: MIT */
/* The networks of net/model.h on the GPU, the residual MLP and the ResNet: forward pass
 * (inference and training) and backward pass (training), composed from cuBLAS GEMMs and the
 * kernels of gpu/cuda_kernels_*.cu. Mirrors az_model_forward() (gpu/cpu_forward.c) and
 * backprop() (train/trainer.c) step for step, with parameters consumed in az_model_tensor()
 * order. A ResNet conv is im2col + one GEMM over the whole batch (no chunks: device memory holds
 * the batch's im2col matrix), its input gradient a GEMM + col2im.
 *
 * Layout: every matrix is row-major, weights [out, in] (PyTorch). cuBLAS is column-major, so a
 * row-major [r, c] matrix is read as its column-major transpose [c, r] with leading dimension c;
 * each GEMM below states the product it computes in both views. */
#include "gpu/cuda_impl.cuh"
#include "gpu/cuda_kernels.h"

/* 4 MiB per handle is plenty for these small GEMMs (cuBLAS asks for up to 32 MiB on Hopper only
 * for large problems); it is allocated once so graph capture never allocates. */
#define WORKSPACE_BYTES ((size_t)4 << 20)

static cublasComputeType_t compute_type(int math)
{
	switch (math) {
	case AZ_CUDA_MATH_TF32:
		return CUBLAS_COMPUTE_32F_FAST_TF32;
	case AZ_CUDA_MATH_BF16:
		return CUBLAS_COMPUTE_32F_FAST_16BF;
	default:
		return CUBLAS_COMPUTE_32F;
	}
}

/* Column-major C[m, n] = op(A) op(B) + beta C, fp32 storage. */
static void gemm(void *blas, int math, cublasOperation_t ta, cublasOperation_t tb, uint32_t m,
		 uint32_t n, uint32_t k, const float *A, uint32_t lda, const float *B, uint32_t ldb,
		 float beta, float *C, uint32_t ldc)
{
	const float one = 1.0f;

	AZ_CUBLAS_FATAL(az_cublas.gemm_ex((cublasHandle_t)blas, ta, tb, (int)m, (int)n, (int)k, &one, A,
				     CUDA_R_32F, (int)lda, B, CUDA_R_32F, (int)ldb, &beta, C,
				     CUDA_R_32F, (int)ldc, compute_type(math),
				     CUBLAS_GEMM_DEFAULT));
}

/* y[B, out] = x[B, in] w[out, in]^T. Column-major: y^T[out, B] = w^T' x^T, i.e. op(A) = T on w
 * read as [in, out], op(B) = N on x read as [in, B]. */
static void linear(void *blas, int math, uint32_t batch, uint32_t in, uint32_t out,
		   const float *x, const float *w, float *y)
{
	gemm(blas, math, CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, w, in, x, in, 0.0f, y, out);
}

/* dw[out, in] = dy[B, out]^T x[B, in]. Column-major: dw^T[in, out] = x^T[in, B] (dy^T)^T, i.e.
 * op(A) = N on x read as [in, B], op(B) = T on dy read as [out, B]. */
static void linear_grad_w(void *blas, int math, uint32_t batch, uint32_t in, uint32_t out,
			  const float *dy, const float *x, float *dw)
{
	gemm(blas, math, CUBLAS_OP_N, CUBLAS_OP_T, in, out, batch, x, in, dy, out, 0.0f, dw, in);
}

/* dx[B, in] = dy[B, out] w[out, in] + beta dx. Column-major: dx^T[in, B] = w^T[in, out]
 * dy^T[out, B], both read as stored (op N). */
static void linear_grad_x(void *blas, int math, uint32_t batch, uint32_t in, uint32_t out,
			  const float *dy, const float *w, float beta, float *dx)
{
	gemm(blas, math, CUBLAS_OP_N, CUBLAS_OP_N, in, batch, out, w, in, dy, out, beta, dx, in);
}

/* Offset (floats) of block r's fc1.weight; r = R gives the policy head's weight. */
static size_t block_offset(const struct az_arch *a, uint32_t r)
{
	size_t H = a->hidden;

	return H * a->inputs + H + (size_t)r * (2 * H * H + 2 * H);
}

/* The value head's last layer over h[B, in] (weight w [V, in], then bias [V]), as value_out() in
 * gpu/cpu_forward.c: a tanh unit into acts->value, or the win/draw/loss logits into acts->wdl
 * and their softmax (value = p_win - p_loss, draw = p_draw). */
static void value_out(void *blas, void *stream, int math, const struct az_arch *a, uint32_t batch,
		      uint32_t in, const float *h, const float *w, const struct az_cuda_acts *acts)
{
	if (az_arch_value_outputs(a) == 1) {
		linear(blas, math, batch, in, 1, h, w, acts->value);
		az_cuda_bias_act(acts->value, w + in, batch, 1, AZ_CUDA_ACT_TANH, stream);
		return;
	}
	linear(blas, math, batch, in, 3, h, w, acts->wdl);
	az_cuda_wdl_softmax(acts->wdl, w + (size_t)3 * in, batch, acts->value, acts->draw, stream);
}

/* ---- ResNet ---- */

/* The ResNet's extra blocks, carved from acts->heads and ws->heads for max_batch samples. */
struct resnet_bufs {
	float *pconv, *vconv, *vhid, *pcl, *col;          /* activations */
	float *dvhid, *dvconv, *dpconv, *dpcl;            /* gradients */
};

static size_t resnet_col_floats(const struct az_arch *a, size_t B)
{
	size_t C = a->planes > a->hidden ? a->planes : a->hidden;

	return B * a->height * a->width * 9 * C;
}

static void resnet_carve(const struct az_arch *a, size_t B, float *heads, float *bwd,
			 struct resnet_bufs *r)
{
	size_t cells = (size_t)a->height * a->width;

	r->pconv = heads;
	r->vconv = r->pconv + B * 2 * cells;
	r->vhid = r->vconv + B * cells;
	r->pcl = r->vhid + B * AZ_RESNET_VALUE_HIDDEN;
	r->col = r->pcl + B * 2 * cells;
	r->dvhid = bwd;
	r->dvconv = bwd ? r->dvhid + B * AZ_RESNET_VALUE_HIDDEN : NULL;
	r->dpconv = bwd ? r->dvconv + B * cells : NULL;
	r->dpcl = bwd ? r->dpconv + B * 2 * cells : NULL;
}

/* out[rows, F] = relu(conv3x3(in) + b (+ res)); in read with strides (sn, sc, sp) as
 * az_conv3_im2col. */
static void conv3_fwd(void *blas, void *stream, int math, const struct az_arch *a,
		      uint32_t batch, const float *in, uint32_t C, size_t sn, size_t sc, size_t sp,
		      const float *w, const float *b, const float *res, float *out, float *col)
{
	uint32_t rows = batch * a->height * a->width, F = a->hidden;

	az_cuda_im2col(in, batch, C, a->height, a->width, sn, sc, sp, col, stream);
	linear(blas, math, rows, 9 * C, F, col, w, out);
	if (res)
		az_cuda_residual_relu(out, res, b, rows, F, stream);
	else
		az_cuda_bias_act(out, b, rows, F, AZ_CUDA_ACT_RELU, stream);
}

/* dw, db of out = conv3x3(in) + b given dy[rows, F]; dx (channels last) = (accumulate ? dx : 0)
 * + the input gradient when dx is not NULL. col is overwritten (im2col, then its gradient). */
static void conv3_bwd(void *blas, void *stream, int math, const struct az_arch *a,
		      uint32_t batch, const float *in, uint32_t C, size_t sn, size_t sc, size_t sp,
		      const float *dy, const float *w, float *dw, float *db, float *dx,
		      int accumulate, float *col)
{
	uint32_t rows = batch * a->height * a->width, F = a->hidden;

	az_cuda_im2col(in, batch, C, a->height, a->width, sn, sc, sp, col, stream);
	linear_grad_w(blas, math, rows, 9 * C, F, dy, col, dw);
	az_cuda_colsum(dy, rows, F, db, stream);
	if (!dx)
		return;
	/* same stream: the GEMM above has read col before this one overwrites it */
	linear_grad_x(blas, math, rows, 9 * C, F, dy, w, 0.0f, col);
	az_cuda_col2im(col, batch, C, a->height, a->width, dx, accumulate, stream);
}

/* Offset (floats) of ResNet tensor i. */
static size_t tensor_off(const struct az_arch *a, uint32_t i)
{
	struct az_tensor t;

	az_model_tensor(a, i, &t);
	return t.offset;
}

static void resnet_forward(void *blas, void *stream, int math, const struct az_arch *a,
			   const float *params, uint32_t batch, const float *x,
			   const struct az_cuda_acts *acts)
{
	uint32_t C = a->planes, F = a->hidden, R = a->blocks, A = a->actions;
	uint32_t V = AZ_RESNET_VALUE_HIDDEN, head = 2 + 4 * R;
	uint32_t cells = a->height * a->width, rows = batch * cells;
	size_t cw = (size_t)9 * F * F;
	struct resnet_bufs rb;
	const float *p = params;

	resnet_carve(a, acts->stride / ((size_t)cells * F), acts->heads, NULL, &rb);
	conv3_fwd(blas, stream, math, a, batch, x, C, (size_t)C * cells, cells, 1, p,
		  p + (size_t)9 * F * C, NULL, acts->trunk, rb.col);
	for (uint32_t r = 0; r < R; r++) {
		const float *w1 = params + tensor_off(a, 2 + 4 * r), *w2 = w1 + cw + F;
		float *in = acts->trunk + r * acts->stride, *out = in + acts->stride;
		float *t = acts->inner + r * acts->stride;

		conv3_fwd(blas, stream, math, a, batch, in, F, (size_t)cells * F, 1, F, w1, w1 + cw,
			  NULL, t, rb.col);
		conv3_fwd(blas, stream, math, a, batch, t, F, (size_t)cells * F, 1, F, w2, w2 + cw,
			  in, out, rb.col);
	}
	const float *h = acts->trunk + R * acts->stride;
	const float *pc = params + tensor_off(a, head), *pf = params + tensor_off(a, head + 2);
	const float *vc = params + tensor_off(a, head + 4), *v1 = params + tensor_off(a, head + 6);
	const float *v2 = params + tensor_off(a, head + 8);

	linear(blas, math, rows, F, 2, h, pc, rb.pcl);
	az_cuda_bias_act(rb.pcl, pc + 2 * F, rows, 2, AZ_CUDA_ACT_RELU, stream);
	az_cuda_planes(rb.pcl, batch, cells, 2, rb.pconv, 1, stream);
	linear(blas, math, batch, 2 * cells, A, rb.pconv, pf, acts->logits);
	az_cuda_bias_act(acts->logits, pf + (size_t)A * 2 * cells, batch, A, AZ_CUDA_ACT_NONE,
			 stream);
	linear(blas, math, rows, F, 1, h, vc, rb.vconv);
	az_cuda_bias_act(rb.vconv, vc + F, rows, 1, AZ_CUDA_ACT_RELU, stream);
	linear(blas, math, batch, cells, V, rb.vconv, v1, rb.vhid);
	az_cuda_bias_act(rb.vhid, v1 + (size_t)V * cells, batch, V, AZ_CUDA_ACT_RELU, stream);
	value_out(blas, stream, math, a, batch, V, rb.vhid, v2, acts);
}

static void resnet_backward(void *blas, void *stream, int math, const struct az_arch *a,
			    const float *params, uint32_t batch, const float *x,
			    const struct az_cuda_acts *acts, const float *dlogits,
			    const float *dpre, const struct az_cuda_bwd_ws *ws, float *grad)
{
	uint32_t C = a->planes, F = a->hidden, R = a->blocks, A = a->actions;
	uint32_t V = AZ_RESNET_VALUE_HIDDEN, head = 2 + 4 * R, VO = az_arch_value_outputs(a);
	uint32_t cells = a->height * a->width, rows = batch * cells;
	size_t cw = (size_t)9 * F * F, nF = (size_t)rows * F, sn = (size_t)cells * F;
	size_t pc = tensor_off(a, head), pf = tensor_off(a, head + 2);
	size_t vc = tensor_off(a, head + 4), v1 = tensor_off(a, head + 6);
	size_t v2 = tensor_off(a, head + 8);
	const float *hR = acts->trunk + R * acts->stride, *P = params;
	struct resnet_bufs rb;

	resnet_carve(a, acts->stride / sn, acts->heads, ws->heads, &rb);
	/* value: fc2, ReLU, fc1, ReLU, 1x1 conv */
	linear_grad_w(blas, math, batch, V, VO, dpre, rb.vhid, grad + v2);
	az_cuda_colsum(dpre, batch, VO, grad + v2 + (size_t)VO * V, stream);
	linear_grad_x(blas, math, batch, V, VO, dpre, P + v2, 0.0f, rb.dvhid);
	az_cuda_relu_grad(rb.vhid, rb.dvhid, rb.dvhid, (size_t)batch * V, stream);
	linear_grad_w(blas, math, batch, cells, V, rb.dvhid, rb.vconv, grad + v1);
	az_cuda_colsum(rb.dvhid, batch, V, grad + v1 + (size_t)V * cells, stream);
	linear_grad_x(blas, math, batch, cells, V, rb.dvhid, P + v1, 0.0f, rb.dvconv);
	az_cuda_relu_grad(rb.vconv, rb.dvconv, rb.dvconv, rows, stream);
	linear_grad_w(blas, math, rows, F, 1, rb.dvconv, hR, grad + vc);
	az_cuda_colsum(rb.dvconv, rows, 1, grad + vc + F, stream);
	linear_grad_x(blas, math, rows, F, 1, rb.dvconv, P + vc, 0.0f, ws->dh);
	/* policy: fc, ReLU, back to channels last, 1x1 conv */
	linear_grad_w(blas, math, batch, 2 * cells, A, dlogits, rb.pconv, grad + pf);
	az_cuda_colsum(dlogits, batch, A, grad + pf + (size_t)A * 2 * cells, stream);
	linear_grad_x(blas, math, batch, 2 * cells, A, dlogits, P + pf, 0.0f, rb.dpconv);
	az_cuda_relu_grad(rb.pconv, rb.dpconv, rb.dpconv, (size_t)rows * 2, stream);
	az_cuda_planes(rb.dpconv, batch, cells, 2, rb.dpcl, 0, stream);
	linear_grad_w(blas, math, rows, F, 2, rb.dpcl, hR, grad + pc);
	az_cuda_colsum(rb.dpcl, rows, 2, grad + pc + 2 * F, stream);
	linear_grad_x(blas, math, rows, F, 2, rb.dpcl, P + pc, 1.0f, ws->dh);
	/* blocks, last first: out = relu(in + conv2(t)), t = relu(conv1(in)) */
	for (uint32_t r = R; r-- > 0;) {
		size_t o1 = tensor_off(a, 2 + 4 * r), o2 = o1 + cw + F;
		const float *in = acts->trunk + r * acts->stride;
		const float *out = in + acts->stride, *t = acts->inner + r * acts->stride;

		az_cuda_relu_grad(out, ws->dh, ws->dg, nF, stream);
		conv3_bwd(blas, stream, math, a, batch, t, F, sn, 1, F, ws->dg, P + o2, grad + o2,
			  grad + o2 + cw, ws->dt, 0, rb.col);
		az_cuda_relu_grad(t, ws->dt, ws->dt, nF, stream);
		AZ_CUDA_FATAL(cudaMemcpyAsync(ws->dh, ws->dg, nF * sizeof(float),
					      cudaMemcpyDeviceToDevice, az_stream(stream)));
		conv3_bwd(blas, stream, math, a, batch, in, F, sn, 1, F, ws->dt, P + o1, grad + o1,
			  grad + o1 + cw, ws->dh, 1, rb.col);
	}
	/* trunk conv over the plane-major input; no input gradient */
	az_cuda_relu_grad(acts->trunk, ws->dh, ws->dg, nF, stream);
	conv3_bwd(blas, stream, math, a, batch, x, C, (size_t)C * cells, cells, 1, ws->dg, P, grad,
		  grad + (size_t)9 * F * C, NULL, 0, rb.col);
}

extern "C" {

size_t az_cuda_net_stride(const struct az_arch *a, uint32_t max_batch)
{
	size_t rows = a->kind == AZ_NET_RESNET ? (size_t)max_batch * a->height * a->width
					       : max_batch;

	return rows * a->hidden;
}

size_t az_cuda_net_heads_floats(const struct az_arch *a, uint32_t max_batch)
{
	size_t B = max_batch, cells = (size_t)a->height * a->width;

	if (a->kind != AZ_NET_RESNET)
		return 0;
	return B * (5 * cells + AZ_RESNET_VALUE_HIDDEN) + resnet_col_floats(a, B);
}

size_t az_cuda_net_bwd_heads_floats(const struct az_arch *a, uint32_t max_batch)
{
	size_t B = max_batch, cells = (size_t)a->height * a->width;

	return a->kind == AZ_NET_RESNET ? B * (5 * cells + AZ_RESNET_VALUE_HIDDEN) : 0;
}

int az_cuda_blas_create(void *stream, void **blas, void **workspace)
{
	cublasHandle_t h = NULL;
	void *ws = NULL;
	int ret = 0;

	ret = az_cublas_load();
	if (ret < 0)
		return ret;
	AZ_CUBLAS_CHECK(az_cublas.create(&h), err);
	AZ_CUBLAS_CHECK(az_cublas.set_stream(h, az_stream(stream)), err_destroy);
	/* Plain fp32 unless a GEMM asks for a fast compute type (the math mode, per call). */
	AZ_CUBLAS_CHECK(az_cublas.set_math_mode(h, CUBLAS_DEFAULT_MATH), err_destroy);
	AZ_CUDA_CHECK(cudaMalloc(&ws, WORKSPACE_BYTES), err_destroy);
	AZ_CUBLAS_CHECK(az_cublas.set_workspace(h, ws, WORKSPACE_BYTES), err_free);
	*blas = h;
	*workspace = ws;
	return 0;

err_free:
	(void)cudaFree(ws);
err_destroy:
	(void)az_cublas.destroy(h);
err:
	return ret;
}

void az_cuda_blas_destroy(void *blas, void *workspace)
{
	if (blas)
		(void)az_cublas.destroy((cublasHandle_t)blas);
	if (workspace)
		(void)cudaFree(workspace);
}

void az_cuda_net_forward(void *blas, void *stream, int math, const struct az_arch *a,
			 const float *params, uint32_t batch, const float *x,
			 const struct az_cuda_acts *acts)
{
	uint32_t D = a->inputs, H = a->hidden, R = a->blocks, A = a->actions;
	size_t HH = (size_t)H * H;
	const float *p = params;
	float *h = acts->trunk;

	if (batch == 0)
		return;
	if (a->kind == AZ_NET_RESNET) {
		resnet_forward(blas, stream, math, a, params, batch, x, acts);
		return;
	}
	linear(blas, math, batch, D, H, x, p, h);
	p += (size_t)H * D;
	az_cuda_bias_act(h, p, batch, H, AZ_CUDA_ACT_RELU, stream);
	p += H;
	for (uint32_t r = 0; r < R; r++) {
		const float *w1 = p, *b1 = w1 + HH, *w2 = b1 + H, *b2 = w2 + HH;
		float *in = acts->trunk + r * acts->stride, *out = in + acts->stride;
		float *t = acts->inner + r * acts->stride;

		linear(blas, math, batch, H, H, in, w1, t);
		az_cuda_bias_act(t, b1, batch, H, AZ_CUDA_ACT_RELU, stream);
		linear(blas, math, batch, H, H, t, w2, out);
		az_cuda_residual_relu(out, in, b2, batch, H, stream);
		p = b2 + H;
	}
	h = acts->trunk + R * acts->stride;
	linear(blas, math, batch, H, A, h, p, acts->logits);
	p += (size_t)A * H;
	az_cuda_bias_act(acts->logits, p, batch, A, AZ_CUDA_ACT_NONE, stream);
	p += A;
	value_out(blas, stream, math, a, batch, H, h, p, acts);
}

void az_cuda_net_backward(void *blas, void *stream, int math, const struct az_arch *a,
			  const float *params, uint32_t batch, const float *x,
			  const struct az_cuda_acts *acts, const float *dlogits, const float *dpre,
			  const struct az_cuda_bwd_ws *ws, float *grad)
{
	uint32_t D = a->inputs, H = a->hidden, R = a->blocks, A = a->actions;
	uint32_t VO = az_arch_value_outputs(a);
	size_t HH = (size_t)H * H, BH = (size_t)batch * H, head = block_offset(a, R);
	const float *hR = acts->trunk + R * acts->stride;
	const float *wp = params + head, *wv = wp + (size_t)A * H + A;
	float *gwp = grad + head, *gwv = gwp + (size_t)A * H + A;

	if (batch == 0)
		return;
	if (a->kind == AZ_NET_RESNET) {
		resnet_backward(blas, stream, math, a, params, batch, x, acts, dlogits, dpre, ws,
				grad);
		return;
	}
	/* Heads: logits = hR Wp^T + bp, value pre-activation(s) = hR Wv^T + bv ([B, VO]). */
	linear_grad_w(blas, math, batch, H, A, dlogits, hR, gwp);
	az_cuda_colsum(dlogits, batch, A, gwp + (size_t)A * H, stream);
	linear_grad_w(blas, math, batch, H, VO, dpre, hR, gwv);
	az_cuda_colsum(dpre, batch, VO, gwv + (size_t)VO * H, stream);
	linear_grad_x(blas, math, batch, H, A, dlogits, wp, 0.0f, ws->dh);
	linear_grad_x(blas, math, batch, H, VO, dpre, wv, 1.0f, ws->dh);

	/* Blocks, last first: out = relu(in + W2 t + b2), t = relu(W1 in + b1). */
	for (uint32_t r = R; r-- > 0;) {
		size_t off = block_offset(a, r);
		const float *w1 = params + off, *w2 = w1 + HH + H;
		float *gw1 = grad + off, *gw2 = gw1 + HH + H;
		const float *in = acts->trunk + r * acts->stride;
		const float *out = in + acts->stride, *t = acts->inner + r * acts->stride;

		az_cuda_relu_grad(out, ws->dh, ws->dg, BH, stream);
		linear_grad_w(blas, math, batch, H, H, ws->dg, t, gw2);
		az_cuda_colsum(ws->dg, batch, H, gw2 + HH, stream);
		linear_grad_x(blas, math, batch, H, H, ws->dg, w2, 0.0f, ws->dt);
		az_cuda_relu_grad(t, ws->dt, ws->dt, BH, stream);
		linear_grad_w(blas, math, batch, H, H, ws->dt, in, gw1);
		az_cuda_colsum(ws->dt, batch, H, gw1 + HH, stream);
		/* d in = dg (skip connection) + dt W1. */
		AZ_CUDA_FATAL(cudaMemcpyAsync(ws->dh, ws->dg, BH * sizeof(float),
					      cudaMemcpyDeviceToDevice, az_stream(stream)));
		linear_grad_x(blas, math, batch, H, H, ws->dt, w1, 1.0f, ws->dh);
	}

	/* Input layer: h0 = relu(W_in x + b_in); no gradient w.r.t. x is needed. */
	az_cuda_relu_grad(acts->trunk, ws->dh, ws->dg, BH, stream);
	linear_grad_w(blas, math, batch, D, H, ws->dg, x, grad);
	az_cuda_colsum(ws->dg, batch, H, grad + (size_t)H * D, stream);
}

} /* extern "C" */
