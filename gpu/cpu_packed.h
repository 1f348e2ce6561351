/* SPDX-License-Identifier: MIT */
/* The CPU backend's packed-weight linear layers: each weight matrix of a network copied once
 * (at load) into 32-output panels that an AVX-512 micro-kernel streams from L1, with the bias,
 * the residual input and the ReLU applied in the kernel's epilogue. Used by the cpu backend's
 * forward pass; OpenBLAS stays the reference and the fallback on CPUs without AVX-512. */
#ifndef AZ_GPU_CPU_PACKED_H
#define AZ_GPU_CPU_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "net/model.h"

/* Outputs per packed panel (two 16-float AVX-512 vectors). */
#define AZ_PACKED_PANEL 32u

/* The batch the cpu backend asks for on these kernels (az_backend_preferred_batch()): they
 * reach their peak from about 8 rows (`azbench infer --game connect4`: 1.09M evals/s at 8-64,
 * 1.07M at 256), so a larger batch only adds latency. Connect Four's self-play with the
 * defaults, `azrun --game connect4 --iterations 4 --max-batch B`: 1.33-1.44M sims/s at
 * B = 16-64, 1.01M at 256 (the workers wait for answers a bigger batch holds back). */
#define AZ_CPU_PACKED_BATCH 64u

/* One packed weight matrix: W[out, in] (PyTorch layout, row-major) as ceil(out / 32) panels,
 * panel p holding w[(p * in + k) * 32 + i] = W[p * 32 + i, k], 0 past out. A 3x3 convolution's
 * [F, C, 3, 3] weight (in = 9C) has its columns in tap-major order instead, column t * C + c
 * holding W[f, c, t] (t = ky * 3 + kx), so that its im2col rows are runs of C channels
 * (az_conv3_im2col_tap(), net/model.h). */
struct az_packed_mat {
	size_t offset;    /* of W in the model's params, in floats: the forward pass's key */
	uint32_t out, in;
	uint32_t conv_c;  /* C of a 3x3 convolution (tap-major columns), 0 for a dense layer */
	float *w;         /* 64-byte aligned, inside az_packed.buf */
};

/* Every weight matrix of one model, packed. */
struct az_packed {
	struct az_packed_mat *mats;
	uint32_t n;
	float *buf;       /* owned */
};

/* Which kernel az_packed_linear() uses: AZ_CPU_GEMM_BLAS means "none, call OpenBLAS". */
enum az_cpu_gemm {
	AZ_CPU_GEMM_BLAS = 0,
	AZ_CPU_GEMM_AVX512 = 1,
};

/* The kernel the cpu backend uses on this machine: the environment's AZ_CPU_GEMM ("auto", the
 * default, "blas" or "avx512") against what the CPU can run (AVX-512F with OS support, from
 * cpuid and xgetbv through __builtin_cpu_supports). Returns 0 with *kind set; -EINVAL for an
 * unknown AZ_CPU_GEMM; -ENOTSUP for "avx512" on a CPU without it. */
int az_cpu_gemm_select(enum az_cpu_gemm *kind);

/* The message for an az_cpu_gemm_select() error (-EINVAL or -ENOTSUP), naming the variable
 * and its value, into buf (snprintf rules). */
int az_cpu_gemm_error(int err, char *buf, size_t len);

/* "blas" or "avx512" (static storage). */
const char *az_cpu_gemm_name(enum az_cpu_gemm kind);

/* Allocate pk for every weight matrix of architecture a (az_model_tensor() entries with
 * ndim >= 2, the MLP's value row among them), nothing packed yet. Returns 0 or -ENOMEM (pk
 * zeroed then). */
int az_packed_alloc(const struct az_arch *a, struct az_packed *pk);

/* az_packed_alloc() for m's architecture, then az_packed_update() from m. */
int az_packed_create(const struct az_model *m, struct az_packed *pk);

/* Floats of a packed out x in matrix (a multiple of 16: 64-byte aligned blocks). */
size_t az_packed_floats(uint32_t out, uint32_t in);

/* Pack the pm->out x pm->in matrix whose entry (j, k) is src[j * rs + k * cs] (rs = in, cs = 1:
 * a row-major W[out, in]; rs = 1, cs = out: its transpose stored row-major) into pm->w, which
 * the caller allocated with az_packed_floats() floats, 64-byte aligned (pm->conv_c set to 0).
 * For products with matrices that are not a model's weights (the trainer's input gradient
 * dX = dY W). */
void az_packed_pack(struct az_packed_mat *pm, const float *src, size_t rs, size_t cs);

/* Re-pack m's parameters into pk, made by az_packed_create() for the same architecture (after
 * the parameters changed: a new network loaded into the slot). */
void az_packed_update(const struct az_model *m, struct az_packed *pk);

void az_packed_destroy(struct az_packed *pk);

/* The packed matrix of the weight at params + offset, or NULL. */
const struct az_packed_mat *az_packed_find(const struct az_packed *pk, size_t offset);

/* y[r, j] = act(sum_k x[r, k] W[j, k] + b[j] (+ res[r, j])) for r < batch, j < out, with W
 * packed in pm; act is max(0, .) when relu is set, the identity otherwise. x is [batch, in],
 * res (or NULL) and y are [batch, out], all row-major and dense; y may be res. Needs
 * AZ_CPU_GEMM_AVX512 (az_cpu_gemm_select()); the caller checks. */
void az_packed_linear(const struct az_packed_mat *pm, uint32_t batch, const float *x,
		      const float *b, const float *res, int relu, float *y);

/* c[i, j] = (accumulate ? c[i, j] : 0) + sum_k a[k, i] b[k, j] for i < m, j < n, k < kdim: C =
 * A^T B with A [kdim, m] and B [kdim, n] row-major (leading dimensions lda, ldb) and C [m, n]
 * (ldc): the trainer's weight gradients dW = dy^T x, a reduction over the minibatch's rows. The
 * forward kernel's register tile (8 rows of C x 32 columns) held across all kdim rows, a's 8
 * entries broadcast and b's 32 loaded per k. Needs AZ_CPU_GEMM_AVX512 support (the caller
 * checks). */
void az_packed_gemm_tn(uint32_t m, uint32_t n, uint32_t kdim, const float *a, size_t lda,
		       const float *b, size_t ldb, int accumulate, float *c, size_t ldc);

/* Largest action count az_packed_softmax() takes (one 16-float vector). */
#define AZ_PACKED_SOFTMAX_MAX 16u

/* az_masked_softmax() (net/model.h) of one row of actions <= AZ_PACKED_SOFTMAX_MAX logits in
 * one AVX-512 vector: prob[a] = exp(logit[a] - max) / sum over the legal a, 0 elsewhere. The
 * exponential is Cephes's expf (range reduction by ln 2 in two parts, a degree-5 polynomial,
 * about 1 ulp), the sum in float: equal to az_masked_softmax()'s to about 2e-7. Rows with a
 * non-finite legal logit or no legal move go to az_masked_softmax() itself. Needs
 * AZ_CPU_GEMM_AVX512 support (the caller checks). */
void az_packed_softmax(const float *logits, const uint8_t *legal, uint32_t actions,
		       float *prob);

/* az_model_forward() (net/model.h) with the weights packed in pk (made from m's parameters)
 * and the AVX-512 kernel; pk NULL: az_model_forward() itself. Same activations kept; the
 * results match OpenBLAS's to float rounding (a different summation order). */
void az_model_forward_packed(const struct az_model *m, const struct az_packed *pk,
			     uint32_t batch, const float *x, struct az_acts *acts);

#endif
