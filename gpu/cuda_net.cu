/* SPDX-License-Identifier: MIT */
/* The residual MLP of net/model.h on the GPU: forward pass (inference and training) and backward
 * pass (training), composed from cuBLAS GEMMs and the kernels of gpu/cuda_kernels_*.cu. Mirrors
 * az_model_forward() (gpu/cpu_forward.c) and backprop() (train/trainer.c) step for step, with
 * parameters consumed in az_model_tensor() order.
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

	AZ_CUBLAS_FATAL(cublasGemmEx((cublasHandle_t)blas, ta, tb, (int)m, (int)n, (int)k, &one, A,
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

extern "C" {

int az_cuda_blas_create(void *stream, void **blas, void **workspace)
{
	cublasHandle_t h = NULL;
	void *ws = NULL;
	int ret = 0;

	AZ_CUBLAS_CHECK(cublasCreate(&h), err);
	AZ_CUBLAS_CHECK(cublasSetStream(h, az_stream(stream)), err_destroy);
	/* Plain fp32 unless a GEMM asks for a fast compute type (the math mode, per call). */
	AZ_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), err_destroy);
	AZ_CUDA_CHECK(cudaMalloc(&ws, WORKSPACE_BYTES), err_destroy);
	AZ_CUBLAS_CHECK(cublasSetWorkspace(h, ws, WORKSPACE_BYTES), err_free);
	*blas = h;
	*workspace = ws;
	return 0;

err_free:
	(void)cudaFree(ws);
err_destroy:
	(void)cublasDestroy(h);
err:
	return ret;
}

void az_cuda_blas_destroy(void *blas, void *workspace)
{
	if (blas)
		(void)cublasDestroy((cublasHandle_t)blas);
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
	linear(blas, math, batch, H, 1, h, p, acts->value);
	p += H;
	az_cuda_bias_act(acts->value, p, batch, 1, AZ_CUDA_ACT_TANH, stream);
}

void az_cuda_net_backward(void *blas, void *stream, int math, const struct az_arch *a,
			  const float *params, uint32_t batch, const float *x,
			  const struct az_cuda_acts *acts, const float *dlogits, const float *dpre,
			  const struct az_cuda_bwd_ws *ws, float *grad)
{
	uint32_t D = a->inputs, H = a->hidden, R = a->blocks, A = a->actions;
	size_t HH = (size_t)H * H, BH = (size_t)batch * H, head = block_offset(a, R);
	const float *hR = acts->trunk + R * acts->stride;
	const float *wp = params + head, *wv = wp + (size_t)A * H + A;
	float *gwp = grad + head, *gwv = gwp + (size_t)A * H + A;

	if (batch == 0)
		return;
	/* Heads: logits = hR Wp^T + bp, value pre-activation = hR wv + bv. */
	linear_grad_w(blas, math, batch, H, A, dlogits, hR, gwp);
	az_cuda_colsum(dlogits, batch, A, gwp + (size_t)A * H, stream);
	linear_grad_w(blas, math, batch, H, 1, dpre, hR, gwv);
	az_cuda_colsum(dpre, batch, 1, gwv + H, stream);
	linear_grad_x(blas, math, batch, H, A, dlogits, wp, 0.0f, ws->dh);
	linear_grad_x(blas, math, batch, H, 1, dpre, wv, 1.0f, ws->dh);

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
