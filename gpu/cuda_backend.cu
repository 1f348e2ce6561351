/* SPDX-License-Identifier: MIT */
/* The cuda inference backend: cuBLAS SGEMMs for every linear layer plus hand-written kernels for
 * bias+relu, residual add+relu and bias+tanh, on one stream. It computes exactly what
 * az_model_forward() does on the CPU and is tested against it (tests/gpu/test_backend_cuda.c).
 *
 * Memory ownership (STYLE.md section 5): the context owns all device memory (weights for
 * AZ_BACKEND_MODELS slots, activation buffers for max_batch rows), pinned host staging, the cuBLAS
 * handle and the stream; all of it is allocated in cuda_create() and freed in cuda_destroy(), so
 * load and forward never allocate. One context is used by one thread at a time.
 *
 * Errors: during create every CUDA/cuBLAS failure becomes -ENOMEM (allocation) or -ENODEV
 * (anything else); after that a failure is fatal (abort with file and line), as in ggml: the
 * supervisor restarts the inference server. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "gpu/backend.h"
}
#include "shm/az_assert.h"

/* Init-time checks: set ret and jump to the cleanup label of the calling function. */
#define AZ_CUDA_CHECK(call, label)                                                         \
	do {                                                                               \
		cudaError_t err_ = (call);                                                 \
		if (err_ != cudaSuccess) {                                                 \
			ret = err_ == cudaErrorMemoryAllocation ? -ENOMEM : -ENODEV;       \
			goto label;                                                        \
		}                                                                          \
	} while (0)

#define AZ_CUBLAS_CHECK(call, label)                                                       \
	do {                                                                               \
		cublasStatus_t st_ = (call);                                               \
		if (st_ != CUBLAS_STATUS_SUCCESS) {                                        \
			ret = st_ == CUBLAS_STATUS_ALLOC_FAILED ? -ENOMEM : -ENODEV;       \
			goto label;                                                        \
		}                                                                          \
	} while (0)

/* Steady-state checks: a device error after create is fatal. */
#define AZ_CUDA_FATAL(call)                                                                \
	do {                                                                               \
		cudaError_t err_ = (call);                                                 \
		if (err_ != cudaSuccess) {                                                 \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,      \
				cudaGetErrorString(err_));                                 \
			abort();                                                           \
		}                                                                          \
	} while (0)

#define AZ_CUBLAS_FATAL(call)                                                              \
	do {                                                                               \
		cublasStatus_t st_ = (call);                                               \
		if (st_ != CUBLAS_STATUS_SUCCESS) {                                        \
			fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__,         \
				__LINE__, #call, (int)st_);                                \
			abort();                                                           \
		}                                                                          \
	} while (0)

#define THREADS 256
#define MAX_BLOCKS 4096

struct cuda_ctx {
	struct az_arch arch;
	uint32_t max_batch;
	size_t n_params;
	cublasHandle_t blas;
	cudaStream_t stream;
	bool have_blas, have_stream;
	float *d_params[AZ_BACKEND_MODELS];
	float *d_x;      /* [B, D] */
	float *d_h[2];   /* [B, H] trunk, ping-pong between blocks */
	float *d_t;      /* [B, H] inner activation of the current block */
	float *d_logits; /* [B, A] */
	float *d_value;  /* [B] */
	float *h_x, *h_logits, *h_value; /* pinned staging, same shapes */
};

/* ---- kernels (grid-stride loops over row-major [rows, cols]) ---- */

/* y[r, c] = act(y[r, c] + b[c]), act = relu or identity. */
static __global__ void bias_act_kernel(float *y, const float *b, size_t n, uint32_t cols,
				       int relu)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float v = y[i] + b[i % cols];

		y[i] = relu && v < 0.0f ? 0.0f : v;
	}
}

/* out[r, c] = relu(h[r, c] + out[r, c] + b[c]); out holds W2 t on entry. Same summation order as
 * the CPU reference. */
static __global__ void residual_relu_kernel(float *out, const float *h, const float *b, size_t n,
				     uint32_t cols)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float v = h[i] + out[i] + b[i % cols];

		out[i] = v < 0.0f ? 0.0f : v;
	}
}

/* v[r] = tanh(v[r] + b[0]). */
static __global__ void bias_tanh_kernel(float *v, const float *b, uint32_t n)
{
	for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		v[i] = tanhf(v[i] + b[0]);
}

static unsigned grid_for(size_t n)
{
	size_t blocks = (n + THREADS - 1) / THREADS;

	return (unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS);
}

/* Y[B, out] = X[B, in] * W[out, in]^T, all row-major. cuBLAS is column-major, so the same memory
 * is Y^T[out, B] = W * X^T: W read as col-major [in, out] and transposed, X as col-major
 * [in, B]. */
static void gemm(struct cuda_ctx *c, uint32_t batch, uint32_t in, uint32_t out, const float *w,
		 const float *x, float *y)
{
	const float one = 1.0f, zero = 0.0f;

	AZ_CUBLAS_FATAL(cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)out, (int)batch,
				    (int)in, &one, w, (int)in, x, (int)in, &zero, y, (int)out));
}

static void bias_act(struct cuda_ctx *c, float *y, const float *b, uint32_t rows, uint32_t cols,
		     int relu)
{
	size_t n = (size_t)rows * cols;

	bias_act_kernel<<<grid_for(n), THREADS, 0, c->stream>>>(y, b, n, cols, relu);
	AZ_CUDA_FATAL(cudaGetLastError());
}

static void residual_relu(struct cuda_ctx *c, float *out, const float *h, const float *b,
			  uint32_t rows, uint32_t cols)
{
	size_t n = (size_t)rows * cols;

	residual_relu_kernel<<<grid_for(n), THREADS, 0, c->stream>>>(out, h, b, n, cols);
	AZ_CUDA_FATAL(cudaGetLastError());
}

static void bias_tanh(struct cuda_ctx *c, float *v, const float *b, uint32_t n)
{
	bias_tanh_kernel<<<grid_for(n), THREADS, 0, c->stream>>>(v, b, n);
	AZ_CUDA_FATAL(cudaGetLastError());
}

/* ---- ops ---- */

extern "C" {

int az_cuda_available(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		/* No driver or no device: clear the error so it does not leak into later calls. */
		(void)cudaGetLastError();
		return 0;
	}
	return n > 0;
}

static void cuda_destroy(void *ctx)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;

	if (!c)
		return;
	/* Teardown is best effort: errors here cannot be acted on. */
	if (c->have_stream)
		(void)cudaStreamSynchronize(c->stream);
	for (int i = 0; i < AZ_BACKEND_MODELS; i++)
		(void)cudaFree(c->d_params[i]);
	(void)cudaFree(c->d_x);
	(void)cudaFree(c->d_h[0]);
	(void)cudaFree(c->d_h[1]);
	(void)cudaFree(c->d_t);
	(void)cudaFree(c->d_logits);
	(void)cudaFree(c->d_value);
	if (c->h_x)
		(void)cudaFreeHost(c->h_x);
	if (c->h_logits)
		(void)cudaFreeHost(c->h_logits);
	if (c->h_value)
		(void)cudaFreeHost(c->h_value);
	if (c->have_blas)
		(void)cublasDestroy(c->blas);
	if (c->have_stream)
		(void)cudaStreamDestroy(c->stream);
	free(c);
}

static int cuda_create(const struct az_arch *a, uint32_t max_batch, void **ctx)
{
	struct cuda_ctx *c = (struct cuda_ctx *)calloc(1, sizeof(*c));
	size_t B = max_batch, D = a->inputs, H = a->hidden, A = a->actions;
	size_t f = sizeof(float);
	int ret = 0;

	if (!c)
		return -ENOMEM;
	c->arch = *a;
	c->max_batch = max_batch;
	c->n_params = az_model_param_count(a);
	AZ_CUDA_CHECK(cudaStreamCreate(&c->stream), err_destroy);
	c->have_stream = true;
	AZ_CUBLAS_CHECK(cublasCreate(&c->blas), err_destroy);
	c->have_blas = true;
	AZ_CUBLAS_CHECK(cublasSetStream(c->blas, c->stream), err_destroy);
	/* Plain FP32 GEMMs (no TF32): the backend must agree with the CPU reference to ~1e-5. */
	AZ_CUBLAS_CHECK(cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH), err_destroy);
	for (int i = 0; i < AZ_BACKEND_MODELS; i++)
		AZ_CUDA_CHECK(cudaMalloc((void **)&c->d_params[i], c->n_params * f), err_destroy);
	AZ_CUDA_CHECK(cudaMalloc((void **)&c->d_x, B * D * f), err_destroy);
	AZ_CUDA_CHECK(cudaMalloc((void **)&c->d_h[0], B * H * f), err_destroy);
	AZ_CUDA_CHECK(cudaMalloc((void **)&c->d_h[1], B * H * f), err_destroy);
	AZ_CUDA_CHECK(cudaMalloc((void **)&c->d_t, B * H * f), err_destroy);
	AZ_CUDA_CHECK(cudaMalloc((void **)&c->d_logits, B * A * f), err_destroy);
	AZ_CUDA_CHECK(cudaMalloc((void **)&c->d_value, B * f), err_destroy);
	AZ_CUDA_CHECK(cudaMallocHost((void **)&c->h_x, B * D * f), err_destroy);
	AZ_CUDA_CHECK(cudaMallocHost((void **)&c->h_logits, B * A * f), err_destroy);
	AZ_CUDA_CHECK(cudaMallocHost((void **)&c->h_value, B * f), err_destroy);
	*ctx = c;
	return 0;

err_destroy:
	cuda_destroy(c); /* every handle starts NULL/false, so partial state frees cleanly */
	return ret;
}

static int cuda_load(void *ctx, uint32_t slot, const struct az_model *m)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;

	AZ_CUDA_FATAL(cudaMemcpyAsync(c->d_params[slot], m->params, c->n_params * sizeof(float),
				      cudaMemcpyHostToDevice, c->stream));
	/* m->params is pageable and the caller may free it on return. */
	AZ_CUDA_FATAL(cudaStreamSynchronize(c->stream));
	return 0;
}

static int cuda_forward(void *ctx, uint32_t slot, uint32_t batch, const float *x, float *logits,
			float *value)
{
	struct cuda_ctx *c = (struct cuda_ctx *)ctx;
	uint32_t D = c->arch.inputs, H = c->arch.hidden, R = c->arch.blocks, A = c->arch.actions;
	size_t HH = (size_t)H * H, f = sizeof(float);
	const float *p = c->d_params[slot];
	int cur = 0;

	memcpy(c->h_x, x, (size_t)batch * D * f);
	AZ_CUDA_FATAL(cudaMemcpyAsync(c->d_x, c->h_x, (size_t)batch * D * f,
				      cudaMemcpyHostToDevice, c->stream));
	/* Parameters are consumed in az_model_tensor() order, as in az_model_forward(). */
	gemm(c, batch, D, H, p, c->d_x, c->d_h[0]);
	p += (size_t)H * D;
	bias_act(c, c->d_h[0], p, batch, H, 1);
	p += H;
	for (uint32_t r = 0; r < R; r++) {
		const float *w1 = p, *b1 = w1 + HH, *w2 = b1 + H, *b2 = w2 + HH;

		gemm(c, batch, H, H, w1, c->d_h[cur], c->d_t);
		bias_act(c, c->d_t, b1, batch, H, 1);
		gemm(c, batch, H, H, w2, c->d_t, c->d_h[cur ^ 1]);
		residual_relu(c, c->d_h[cur ^ 1], c->d_h[cur], b2, batch, H);
		cur ^= 1;
		p = b2 + H;
	}
	gemm(c, batch, H, A, p, c->d_h[cur], c->d_logits);
	p += (size_t)A * H;
	bias_act(c, c->d_logits, p, batch, A, 0);
	p += A;
	gemm(c, batch, H, 1, p, c->d_h[cur], c->d_value);
	p += H;
	bias_tanh(c, c->d_value, p, batch);

	AZ_CUDA_FATAL(cudaMemcpyAsync(c->h_logits, c->d_logits, (size_t)batch * A * f,
				      cudaMemcpyDeviceToHost, c->stream));
	AZ_CUDA_FATAL(cudaMemcpyAsync(c->h_value, c->d_value, (size_t)batch * f,
				      cudaMemcpyDeviceToHost, c->stream));
	AZ_CUDA_FATAL(cudaStreamSynchronize(c->stream));
	memcpy(logits, c->h_logits, (size_t)batch * A * f);
	memcpy(value, c->h_value, (size_t)batch * f);
	return 0;
}

extern const struct az_backend_ops az_backend_cuda_ops = {
	"cuda", cuda_create, cuda_load, cuda_forward, cuda_destroy,
};

} /* extern "C" */
