/* SPDX-License-Identifier: MIT */
/* The softmax family: the legal-move masked softmax served to the workers and the policy
 * cross-entropy of training (loss and gradient w.r.t. the logits, the softmax over the legal
 * moves that the targets' sign bits mark), one block per row; the win/draw/loss value head's
 * three-way softmax and the value loss (squared error or win/draw/loss cross-entropy), one
 * thread per row. Reductions run in double like the CPU trainer's, in a fixed order. */
#include "gpu/cuda_impl.cuh"
#include "gpu/cuda_kernels.h"

static __global__ void masked_softmax_kernel(const float *logits, const uint8_t *legal,
					     uint32_t A, float *prob)
{
	size_t r = blockIdx.x;

	/* prob is its own scratch: each entry is written by the thread that later scales it. */
	az_row_masked_softmax(logits + r * A, legal + r * A, A, prob + r * A, prob + r * A);
}

/* As az_train_policy_xent() in train/trainer.c: the softmax over the legal actions only (those
 * whose target is not -0.0f; all of them when every target is), lse = max + log sum exp(l - max),
 * ce = -sum pi (l - lse), d l_i = (exp(l_i - lse) sum(pi) - pi_i) inv_b on legal i, 0 on the
 * others. */
static __global__ void policy_xent_kernel(const float *logits, const float *pi, uint32_t A,
					  double inv_b, float *dlogits, double *row_ce)
{
	__shared__ float sf[32];
	__shared__ double sd[32];
	__shared__ unsigned su[32];
	size_t r = blockIdx.x;
	const float *lg = logits + r * A, *tp = pi + r * A;
	float m = -INFINITY;
	double s = 0.0, cross = 0.0, mass = 0.0;
	unsigned nlegal = 0;

	for (uint32_t i = threadIdx.x; i < A; i += blockDim.x)
		nlegal += !signbit(tp[i]);
	nlegal = az_block_reduce(nlegal, az_op_sum<unsigned>(), 0u, su);
	const bool all = nlegal == 0;

	for (uint32_t i = threadIdx.x; i < A; i += blockDim.x)
		if (all || !signbit(tp[i]))
			m = lg[i] > m ? lg[i] : m;
	m = az_block_reduce(m, az_op_max(), -INFINITY, sf);
	for (uint32_t i = threadIdx.x; i < A; i += blockDim.x)
		if (all || !signbit(tp[i]))
			s += exp((double)lg[i] - (double)m);
	s = az_block_reduce(s, az_op_sum<double>(), 0.0, sd);
	double lse = (double)m + log(s);

	for (uint32_t i = threadIdx.x; i < A; i += blockDim.x) {
		if (!all && signbit(tp[i]))
			continue;
		cross += (double)tp[i] * ((double)lg[i] - lse);
		mass += tp[i];
	}
	cross = az_block_reduce(cross, az_op_sum<double>(), 0.0, sd);
	mass = az_block_reduce(mass, az_op_sum<double>(), 0.0, sd);
	if (threadIdx.x == 0)
		row_ce[r] = -cross;
	if (!dlogits)
		return;
	for (uint32_t i = threadIdx.x; i < A; i += blockDim.x)
		dlogits[r * A + i] = !all && signbit(tp[i]) ? 0.0f :
			(float)((exp((double)lg[i] - lse) * mass - tp[i]) * inv_b);
}

/* As az_wdl_softmax() (gpu/cpu_forward.c), the bias added first as the CPU's layer() does. */
static __global__ void wdl_softmax_kernel(float *wdl, const float *b, uint32_t rows, float *value,
					  float *draw)
{
	for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < rows;
	     r += gridDim.x * blockDim.x) {
		float *q = wdl + (size_t)r * 3;
		float q0 = q[0] + b[0], q1 = q[1] + b[1], q2 = q[2] + b[2];
		float mx = q0 > q1 ? q0 : q1;

		if (q2 > mx)
			mx = q2;
		/* NaN or inf logits: no outcome favoured (the sum catches a NaN the max skipped) */
		if (!isfinite(mx) || isnan(q0 + q1 + q2)) {
			q0 = q1 = q2 = 1.0f / 3.0f;
		} else {
			float e0 = expf(q0 - mx), e1 = expf(q1 - mx), e2 = expf(q2 - mx);
			float inv = 1.0f / (e0 + e1 + e2);

			q0 = e0 * inv;
			q1 = e1 * inv;
			q2 = e2 * inv;
		}
		q[0] = q0;
		q[1] = q1;
		q[2] = q2;
		value[r] = q0 - q2;
		draw[r] = q1;
	}
}

/* As value_loss() in train/trainer.c, in double: (v - z)^2 for a tanh head (wdl NULL), the
 * cross-entropy against t = (max(z, 0), 1 - |z|, max(-z, 0)) for a win/draw/loss head. */
static __global__ void value_loss_kernel(const float *value, const float *wdl, const float *z,
					 uint32_t rows, double inv_b, float *dpre, double *row_loss)
{
	for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < rows;
	     r += gridDim.x * blockDim.x) {
		if (!wdl) {
			double v = value[r], d = v - z[r];

			row_loss[r] = d * d;
			if (dpre)
				dpre[r] = (float)(2.0 * d * (1.0 - v * v) * inv_b);
			continue;
		}
		double zr = z[r], za = fabs(zr);
		double t[3] = { zr > 0 ? za : 0.0, 1.0 - za, zr < 0 ? za : 0.0 };
		const float *p = wdl + (size_t)r * 3;
		double ce = 0.0;

		for (int k = 0; k < 3; k++) {
			/* the floor keeps a saturated logit's loss finite, as on the CPU */
			if (t[k] > 0.0)
				ce -= t[k] * log(p[k] > 1e-30f ? (double)p[k] : 1e-30);
			if (dpre)
				dpre[(size_t)r * 3 + k] = (float)((p[k] - t[k]) * inv_b);
		}
		row_loss[r] = ce;
	}
}

extern "C" {

void az_cuda_masked_softmax(const float *logits, const uint8_t *legal, uint32_t rows,
			    uint32_t actions, float *prob, void *stream)
{
	if (rows == 0 || actions == 0)
		return;
	AZ_LAUNCH(masked_softmax_kernel, rows, AZ_ROW_THREADS, 0, az_stream(stream))(
		logits, legal, actions, prob);
	AZ_CUDA_LAUNCHED();
}

void az_cuda_policy_xent(const float *logits, const float *pi, uint32_t rows, uint32_t actions,
			 double inv_b, float *dlogits, double *row_ce, void *stream)
{
	if (rows == 0 || actions == 0)
		return;
	AZ_LAUNCH(policy_xent_kernel, rows, AZ_ROW_THREADS, 0, az_stream(stream))(
		logits, pi, actions, inv_b, dlogits, row_ce);
	AZ_CUDA_LAUNCHED();
}

void az_cuda_wdl_softmax(float *wdl, const float *b, uint32_t rows, float *value, float *draw,
			 void *stream)
{
	AZ_LAUNCH_1D(wdl_softmax_kernel, rows, stream, wdl, b, rows, value, draw);
}

void az_cuda_value_loss(const float *value, const float *wdl, const float *z, uint32_t rows,
			double inv_b, float *dpre, double *row_loss, void *stream)
{
	AZ_LAUNCH_1D(value_loss_kernel, rows, stream, value, wdl, z, rows, inv_b, dpre, row_loss);
}

} /* extern "C" */
