/* SPDX-License-Identifier: MIT */
/* Optimiser kernels (Adam, SGD with momentum, the L2 term's gradient) and the deterministic
 * reductions of the training loss. The update kernels use round-to-nearest intrinsics so the
 * compiler cannot contract them into FMAs: given the same gradient they produce bit for bit what
 * the loops of train/trainer.c produce. */
#include "gpu/cuda_impl.cuh"
#include "gpu/cuda_kernels.h"

static __global__ void adam_kernel(float *w, const float *g, float *m, float *v, size_t n,
				   float b1, float b2, float step, float eps)
{
	float c1 = 1.0f - b1, c2 = 1.0f - b2;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float gi = g[i];
		float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(c1, gi));
		float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(c2, gi), gi));

		m[i] = mi;
		v[i] = vi;
		float den = __fadd_rn(__fsqrt_rn(vi), eps);

		w[i] = __fsub_rn(w[i], __fdiv_rn(__fmul_rn(step, mi), den));
	}
}

static __global__ void sgd_kernel(float *w, const float *g, float *vel, size_t n, float mu,
				  float lr)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float vi = __fadd_rn(__fmul_rn(mu, vel[i]), g[i]);

		vel[i] = vi;
		w[i] = __fsub_rn(w[i], __fmul_rn(lr, vi));
	}
}

static __global__ void l2_grad_kernel(const float *w, const uint8_t *decay, size_t n, float coef,
				      float *g)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		if (decay[i])
			g[i] = __fadd_rn(g[i], __fmul_rn(coef, w[i]));
}

/* Stage 1 of the sum of squares: block b sums its grid-stride share into partial[b]. */
static __global__ void sumsq_kernel(const float *w, const uint8_t *decay, size_t n,
				    double *partial)
{
	__shared__ double sd[32];
	double s = 0.0;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		if (decay[i])
			s += (double)w[i] * w[i];
	s = az_block_reduce(s, az_op_sum<double>(), 0.0, sd);
	if (threadIdx.x == 0)
		partial[blockIdx.x] = s;
}

static __global__ void sum_f64_kernel(const double *in, uint32_t n, double *out)
{
	__shared__ double sd[32];
	double s = 0.0;

	for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
		s += in[i];
	s = az_block_reduce(s, az_op_sum<double>(), 0.0, sd);
	if (threadIdx.x == 0)
		out[0] = s;
}

extern "C" {

void az_cuda_adam(float *w, const float *g, float *m, float *v, size_t n, float beta1,
		  float beta2, float step, float eps, void *stream)
{
	AZ_LAUNCH_1D(adam_kernel, n, stream, w, g, m, v, n, beta1, beta2, step, eps);
}

void az_cuda_sgd(float *w, const float *g, float *vel, size_t n, float momentum, float lr,
		 void *stream)
{
	AZ_LAUNCH_1D(sgd_kernel, n, stream, w, g, vel, n, momentum, lr);
}

void az_cuda_l2_grad(const float *w, const uint8_t *decay, size_t n, float coef, float *g,
		     void *stream)
{
	AZ_LAUNCH_1D(l2_grad_kernel, n, stream, w, decay, n, coef, g);
}

void az_cuda_sumsq_masked(const float *w, const uint8_t *decay, size_t n, double *partial,
			  double *out, void *stream)
{
	AZ_LAUNCH(sumsq_kernel, AZ_CUDA_REDUCE_BLOCKS, AZ_THREADS, 0, az_stream(stream))(
		w, decay, n, partial);
	AZ_CUDA_LAUNCHED();
	az_cuda_sum_f64(partial, AZ_CUDA_REDUCE_BLOCKS, out, stream);
}

void az_cuda_sum_f64(const double *in, uint32_t n, double *out, void *stream)
{
	AZ_LAUNCH(sum_f64_kernel, 1, AZ_THREADS, 0, az_stream(stream))(in, n, out);
	AZ_CUDA_LAUNCHED();
}

} /* extern "C" */
