/* SPDX-License-Identifier: MIT */
/* Elementwise kernels of the residual MLP: fused bias + activation, residual add + relu, the relu
 * gradient, and column sums (bias gradients). Grid-stride loops over row-major [rows, cols]; each
 * computes what the matching loop of gpu/cpu_forward.c or train/trainer.c computes, in the same
 * order of operations, except the column sums (a tree per column, see colsum_kernel). */
#include "gpu/cuda_impl.cuh"
#include "gpu/cuda_kernels.h"

static __global__ void bias_act_kernel(float *y, const float *b, size_t n, uint32_t cols, int act)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float v = y[i] + b[i % cols];

		if (act == AZ_CUDA_ACT_RELU)
			v = v < 0.0f ? 0.0f : v;
		else if (act == AZ_CUDA_ACT_TANH)
			v = tanhf(v);
		y[i] = v;
	}
}

/* h + out first, then + b: the CPU reference's summation order. */
static __global__ void residual_relu_kernel(float *out, const float *h, const float *b, size_t n,
					    uint32_t cols)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float v = __fadd_rn(__fadd_rn(h[i], out[i]), b[i % cols]);

		out[i] = v < 0.0f ? 0.0f : v;
	}
}

static __global__ void relu_grad_kernel(const float *y, const float *dy, float *g, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		g[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* One block per column: thread t sums rows t, t + blockDim.x, ... (the blocks of neighbouring
 * columns read the rest of each line, mostly from L2), then az_block_reduce's fixed shuffle tree
 * adds the partial sums, so rows x cols elements are read by cols x AZ_THREADS threads rather
 * than cols threads. Deterministic for a launch shape, but not the CPU trainer's row order: sums
 * agree with it within fp32 rounding, not bit for bit. */
static __global__ void colsum_kernel(const float *m, uint32_t rows, uint32_t cols, float *out)
{
	__shared__ float part[32];
	uint32_t c = blockIdx.x;
	float s = 0.0f;

	for (uint32_t r = threadIdx.x; r < rows; r += blockDim.x)
		s += m[(size_t)r * cols + c];
	s = az_block_reduce(s, az_op_sum<float>(), 0.0f, part);
	if (threadIdx.x == 0)
		out[c] = s;
}

extern "C" {

void az_cuda_bias_act(float *y, const float *b, uint32_t rows, uint32_t cols, int act,
		      void *stream)
{
	size_t n = (size_t)rows * cols;

	AZ_LAUNCH_1D(bias_act_kernel, n, stream, y, b, n, cols, act);
}

void az_cuda_residual_relu(float *out, const float *h, const float *b, uint32_t rows,
			   uint32_t cols, void *stream)
{
	size_t n = (size_t)rows * cols;

	AZ_LAUNCH_1D(residual_relu_kernel, n, stream, out, h, b, n, cols);
}

void az_cuda_relu_grad(const float *y, const float *dy, float *g, size_t n, void *stream)
{
	AZ_LAUNCH_1D(relu_grad_kernel, n, stream, y, dy, g, n);
}

void az_cuda_colsum(const float *m, uint32_t rows, uint32_t cols, float *out, void *stream)
{
	if (cols == 0)
		return;
	AZ_LAUNCH(colsum_kernel, cols, AZ_THREADS, 0, az_stream(stream))(m, rows, cols, out);
	AZ_CUDA_LAUNCHED();
}

} /* extern "C" */
