/* SPDX-License-Identifier: MIT */
/* The CPU backend's matrix kernels as the layers above gpu/ use them (gpu/cpu_packed.c): which
 * kernel this machine runs (azrun checks it before a run starts) and weight matrices packed for
 * the AVX-512 micro-kernel, which the CPU trainer's backward pass (train/trainer.c) multiplies
 * with. The backend's own use of them is in gpu/cpu_packed.h, private to gpu/. */
#ifndef AZ_GPU_CPU_GEMM_H
#define AZ_GPU_CPU_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "net/model.h"

/* Which kernel az_packed_linear() uses: AZ_CPU_GEMM_BLAS means "none, call OpenBLAS";
 * AZ_CPU_GEMM_BF16 is the inference backend's bf16 weights (fp32 accumulation) on the
 * AVX-512 kernels, whose fp32 form every other user of the packed kernels (the trainer, the
 * softmax) keeps; AZ_CPU_GEMM_AMX the same bf16 weights multiplied on Intel's AMX tiles
 * (TDPBF16PS, gpu/cpu_amx.c). */
enum az_cpu_gemm {
	AZ_CPU_GEMM_BLAS = 0,
	AZ_CPU_GEMM_AVX512 = 1,
	AZ_CPU_GEMM_BF16 = 2,
	AZ_CPU_GEMM_AMX = 3,
};

/* The kernel the cpu backend uses on this machine: the environment's AZ_CPU_GEMM ("auto", the
 * default, "fp32" (avx512 where the CPU has it, else blas: fp32 products on any CPU), "blas",
 * "avx512", "bf16" or "amx") against what the CPU can run (AVX-512F, and for bf16
 * AVX512_BF16, with OS support, from cpuid and xgetbv through __builtin_cpu_supports; for amx
 * also AMX-TILE and AMX-BF16 and the kernel's permission, az_amx_usable()). auto is
 * az_cpu_gemm_auto() of what this CPU has. Returns 0 with *kind set; -EINVAL for an unknown
 * AZ_CPU_GEMM; -ENOTSUP for "avx512", "bf16" or "amx" on a CPU without it. */
int az_cpu_gemm_select(enum az_cpu_gemm *kind);

/* AZ_CPU_GEMM=auto's choice for a CPU with (1) or without (0) AVX-512F, AVX512_BF16, usable AMX
 * bf16 tiles, made by AMD: amx where the tiles run (Intel Xeon with AMX: 4.0x the avx512
 * kernel's evaluations/s on the MLP 128x3, 1.7x on the ResNet 32x3), else bf16 on an AMD CPU
 * with AVX512_BF16 (Zen 4: 1.6-2.0x, the same mistake rates), else avx512 where the CPU has
 * AVX-512F (on Intel's cores VDPBF16PS does not outrun two 512-bit FMA ports: the bf16 kernel
 * measured 0.56x / 0.62x the avx512 one), else blas. Measurements: docs/cpu.md. */
enum az_cpu_gemm az_cpu_gemm_auto(int avx512, int bf16, int amx, int amd);

/* 1 when kind runs the AVX-512 packed kernels (avx512, bf16 and amx, whose CPUs have
 * AVX-512F): the trainer's fp32 packed path and the vector softmax are open to it. */
int az_cpu_gemm_packed(enum az_cpu_gemm kind);

/* The message for an az_cpu_gemm_select() error (-EINVAL or -ENOTSUP), naming the variable
 * and its value, into buf (snprintf rules). */
int az_cpu_gemm_error(int err, char *buf, size_t len);

/* 1 when this CPU and OS run AMX bf16 tiles: cpuid's AMX-TILE and AMX-BF16 (with AVX-512F and
 * AVX512_BF16), XCR0's tile state enabled by the OS, and the tile data permission granted to
 * this process (Linux 5.16 and later: arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA),
 * requested here, once per process; forked children inherit it). */
int az_amx_usable(void);

/* "blas", "avx512", "bf16" or "amx" (static storage). */
const char *az_cpu_gemm_name(enum az_cpu_gemm kind);

/* One packed weight matrix: W[out, in] (PyTorch layout, row-major) as ceil(out / 32) panels,
 * panel p holding w[(p * in + k) * 32 + i] = W[p * 32 + i, k], 0 past out. A 3x3 convolution's
 * [F, C, 3, 3] weight (in = 9C) has its columns in tap-major order instead, column t * C + c
 * holding W[f, c, t] (t = ky * 3 + kx), so that its im2col rows are runs of C channels
 * (az_conv3_im2col_tap(), gpu/cpu_forward.h). */
struct az_packed_mat {
	size_t offset; /* of W in the model's params, in floats: the forward pass's key */
	uint32_t out, in;
	uint32_t conv_c; /* C of a 3x3 convolution (tap-major columns), 0 for a dense layer */
	float *w;        /* 64-byte aligned, inside az_packed.buf; NULL when packed as bf16 */
	/* bf16 panels (az_packed_create() with AZ_CPU_GEMM_BF16), else NULL: panel p holds, for
	 * each pair of columns k = 2q, 2q + 1 (q < ceil(in / 2)), two 32-entry vectors (outputs
	 * 0-15 and 16-31 of the panel), each output's two weights adjacent, as VDPBF16PS takes
	 * them: wb[((p * ceil(in / 2) + q) * 2 + v) * 32 + 2 * i + e] = W[p * 32 + 16 * v + i,
	 * 2q + e] rounded to nearest even, 0 past out and in. 128-byte aligned, in az_packed.bbuf. */
	uint16_t *wb;
	/* Column pairs per panel of wb: ceil(in / 2), or for AZ_CPU_GEMM_AMX that rounded up to a
	 * multiple of 16 (one tile's 16 rows of pairs; the extra pairs are 0). */
	uint32_t np;
	uint8_t amx; /* 1: wb is multiplied on AMX tiles (az_packed_linear()) */
};

/* Every weight matrix of one model, packed. */
struct az_packed {
	struct az_packed_mat *mats;
	uint32_t n;
	float *buf;     /* owned (fp32 panels) */
	uint16_t *bbuf; /* owned (bf16 panels), or NULL */
};

/* Allocate pk for every weight matrix of architecture a (az_model_tensor() entries with
 * ndim >= 2, the MLP's value row among them), nothing packed yet. Returns 0 or -ENOMEM (pk
 * zeroed then). */
int az_packed_alloc(const struct az_arch *a, struct az_packed *pk);

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

/* y[r, j] = act(sum_k x[r, k] W[j, k] + b[j] (+ res[r, j])) for r < batch, j < out, with W
 * packed in pm; act is max(0, .) when relu is set, the identity otherwise. x is [batch, in],
 * res (or NULL) and y are [batch, out], all row-major and dense; y may be res. Needs
 * AZ_CPU_GEMM_AVX512 (az_cpu_gemm_select()); the caller checks. When pm holds bf16 panels
 * (pm->wb) x is rounded to bf16 too and each product x[r, k] W[j, k] is exact, summed in
 * fp32 (VDPBF16PS; needs AZ_CPU_GEMM_BF16): |y - exact| <= about 2^-8 sum_k |x[r, k] W[j, k]|
 * (two roundings to 8 significant bits). */
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

#endif
