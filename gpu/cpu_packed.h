/* SPDX-License-Identifier: MIT */
/* The CPU backend's packed-weight linear layers: each weight matrix of a network copied once
 * (at load) into 32-output panels that an AVX-512 micro-kernel streams from L1, with the bias,
 * the residual input and the ReLU applied in the kernel's epilogue. Used by the cpu backend's
 * forward pass; OpenBLAS stays the reference and the fallback on CPUs without AVX-512. Private to
 * gpu/ (and its white-box tests): what the trainer and azrun use is in gpu/cpu_gemm.h. */
#ifndef AZ_GPU_CPU_PACKED_H
#define AZ_GPU_CPU_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/cpu_gemm.h"
#include "net/model.h"

/* Outputs per packed panel (two 16-float AVX-512 vectors). */
#define AZ_PACKED_PANEL 32u

/* The batch the cpu backend asks for on these kernels (az_backend_preferred_batch()): they
 * reach their peak from about 8 rows (`azbench infer --game connect4`: 1.09M evals/s at 8-64,
 * 1.07M at 256), so a larger batch only adds latency. Connect Four's self-play with the
 * defaults, `azrun --game connect4 --iterations 4 --max-batch B`: 1.33-1.44M sims/s at
 * B = 16-64, 1.01M at 256 (the workers wait for answers a bigger batch holds back). */
#define AZ_CPU_PACKED_BATCH 64u

/* Pack every weight matrix of m: fp32 panels for AZ_CPU_GEMM_AVX512, bf16 panels only
 * (az_packed_mat.wb, half the bytes) for AZ_CPU_GEMM_BF16. az_packed_update() re-packs in the
 * same form. Returns 0 or -ENOMEM (pk zeroed then). */
int az_packed_create(const struct az_model *m, enum az_cpu_gemm kind, struct az_packed *pk);

/* A 3x3 convolution's input (padding 1), channels last and dense: channel c of cell (y, x) of
 * sample n is in[n * sn + (y * width + x) * c_count + c]. */
struct az_conv_src {
	const float *in;
	size_t sn;
	uint32_t c; /* channels: the packed weight's conv_c */
	uint32_t height, width;
};

/* 1 when az_packed_conv3() takes pm: the packed weight of a 3x3 convolution, fp32 panels, or
 * bf16 panels with an even channel count (a bf16 pair never straddles two taps). */
int az_packed_conv3_ok(const struct az_packed_mat *pm);

/* 4-byte words of az_packed_conv3()'s pad for samples of pm's convolution on a height x width
 * board: samples * (height + 2) * (width + 2) cells of conv_c floats (fp32 panels) or conv_c / 2
 * bf16 pairs (bf16 panels): the input with a zero border. */
size_t az_packed_conv3_pad_words(const struct az_packed_mat *pm, uint32_t samples,
				 uint32_t height, uint32_t width);

/* y[row, f] = act(conv3x3(cv)[row, f] + b[f] (+ res[row, f])) for the samples * height * width
 * rows (n, y, x) of cv, as an implicit GEMM: cv's samples are copied once (as bf16 pairs, rounded
 * as VCVTNE2PS2BF16 does, for bf16 panels) into pad, the caller's scratch of
 * az_packed_conv3_pad_words() words (overwritten, 64-byte alignment not needed), with a zero
 * border, and each tile reads its im2col rows (tap-major) from there in place; no im2col matrix.
 * Same results as az_conv3_im2col_tap() + az_packed_linear() to the bit. Needs
 * az_packed_conv3_ok(pm) (asserted). */
void az_packed_conv3(const struct az_packed_mat *pm, const struct az_conv_src *cv,
		     uint32_t samples, const float *b, const float *res, int relu, float *y,
		     void *pad);

/* The packed matrix of the weight at params + offset, or NULL. */
const struct az_packed_mat *az_packed_find(const struct az_packed *pk, size_t offset);

/* Largest action count az_packed_softmax() takes (one 16-float vector). */
#define AZ_PACKED_SOFTMAX_MAX 16u

/* az_masked_softmax() (gpu/cpu_forward.h) of one row of actions <= AZ_PACKED_SOFTMAX_MAX logits in
 * one AVX-512 vector: prob[a] = exp(logit[a] - max) / sum over the legal a, 0 elsewhere. The
 * exponential is Cephes's expf (range reduction by ln 2 in two parts, a degree-5 polynomial,
 * about 1 ulp), the sum in float: equal to az_masked_softmax()'s to about 2e-7. Rows with a
 * non-finite legal logit or no legal move go to az_masked_softmax() itself. Needs
 * AZ_CPU_GEMM_AVX512 support (the caller checks). */
void az_packed_softmax(const float *logits, const uint8_t *legal, uint32_t actions,
		       float *prob);

#endif
