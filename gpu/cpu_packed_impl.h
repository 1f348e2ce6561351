/* SPDX-License-Identifier: MIT */
/* What gpu/cpu_packed.c (packing), gpu/cpu_packed_kernels.c and gpu/cpu_amx.c (the kernels)
 * share: the panel geometry, the tile height, the AVX-512 helpers and the AMX kernel's entry
 * points. Private to gpu/ (and its white-box tests). */
#ifndef AZ_GPU_CPU_PACKED_IMPL_H
#define AZ_GPU_CPU_PACKED_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/cpu_packed.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

#ifdef HAVE_X86
#define AVX512 __attribute__((target("avx512f")))
#define INLINE512 __attribute__((target("avx512f"), always_inline)) static inline
#define BF16_TARGET __attribute__((target("avx512f,avx512bf16")))
#define INLINE_BF16 __attribute__((target("avx512f,avx512bf16"), always_inline)) static inline

/* The lanes of the 32-column block that has `left` columns still to go: m0 the first vector's,
 * m1 the second's. */
INLINE512 void block_masks(uint32_t left, __mmask16 *m0, __mmask16 *m1)
{
	*m0 = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
	*m1 = left >= 32 ? 0xffff : left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : 0;
}

/* The 32 floats from `from` (those past `left`, when fewer than 32 are left, read as 0) rounded
 * to 16 bf16 pairs, low half first, as VCVTNE2PS2BF16 does. Whole blocks load without masks
 * (masked memory operations are slow on Zen 4). */
INLINE_BF16 __m512i round_pairs32(const float *from, size_t left)
{
	__m512 a, c;

	if (left >= 32) {
		a = _mm512_loadu_ps(from);
		c = _mm512_loadu_ps(from + 16);
	} else {
		__mmask16 lo, hi;

		block_masks((uint32_t)left, &lo, &hi);
		a = _mm512_maskz_loadu_ps(lo, from);
		c = _mm512_maskz_loadu_ps(hi, from + 16);
	}
	return (__m512i)_mm512_cvtne2ps_pbh(c, a);
}
#endif

/* Rows of a tile, fp32 and bf16 alike (12 rows for bf16, 24 accumulators, measured no faster
 * on AMD EPYC: azbench infer, resnet:32x3 and mlp 128x3, within noise). */
#define MR 8u

/* Panels of AZ_PACKED_PANEL outputs: ceil(out / AZ_PACKED_PANEL). */
static inline size_t panels(uint32_t out)
{
	return (out + AZ_PACKED_PANEL - 1) / AZ_PACKED_PANEL;
}

/* Column pairs of a bf16 panel row: ceil(in / 2). */
static inline size_t pairs(uint32_t in)
{
	return ((size_t)in + 1) / 2;
}

/* AMX tiles (gpu/cpu_amx.c): pairs of inputs a tile row holds (16 rows of 64 bytes), and the
 * most inputs a matrix packed for them may have (a multiple of 32: its 16-row block of x,
 * rounded to bf16, is on the stack, 16 x 4096 x 2 bytes). */
#define AZ_AMX_PAIRS 16u
#define AZ_AMX_MAX_IN 4096u

/* az_packed_linear() of a matrix packed for AMX (pm->amx): TDPBF16PS on the tiles. Needs
 * az_amx_usable(). */
void az_amx_linear(const struct az_packed_mat *pm, uint32_t batch, const float *x, const float *b,
		   const float *res, int relu, float *y);

/* The same kernel with the tile instructions emulated in C as the SDM's Operation sections
 * define them (tile loads and stores by rows of colsb bytes; TDPBF16PS: per row the even and
 * odd bf16 products summed apart, then added to the accumulator; denormals as 0), their faults
 * as assertions: for tests on CPUs without AMX. Needs AVX512_BF16 (the rounding of x and the
 * epilogue are the real kernel's code). */
void az_amx_linear_emulated(const struct az_packed_mat *pm, uint32_t batch, const float *x,
			    const float *b, const float *res, int relu, float *y);

/* A 3x3 convolution's input as the kernels read it in place (implicit GEMM: tile_conv_bf16()
 * and tile_conv() in gpu/cpu_packed_kernels.c, az_amx_conv3()): each sample's (height + 2) x
 * (width + 2) cells (a zero border), c / 2 bf16 pairs a cell in pad or c floats a cell in padf,
 * sn of them a sample. */
struct conv_pad {
	const uint32_t *pad; /* bf16 pairs (tile_conv_bf16, az_amx_conv3) */
	const float *padf;   /* or floats (tile_conv) */
	size_t sn;
	uint32_t c, height, width;
};

/* az_packed_conv3() of a convolution packed for AMX (pm->amx, cp->c even): the linear kernel
 * above with each 16-row block of x gathered from cp->pad (row g: sample g / cells, cell
 * g % cells; per tap t = 3 ky + kx the c / 2 pairs of padded cell (y + ky, x + kx)) instead of
 * rounded from an im2col matrix: the same bf16 values, so the same bits as
 * az_conv3_im2col_tap() + az_amx_linear(). batch = samples * height * width rows. Needs
 * az_amx_usable(); the _emulated form as az_amx_linear_emulated(). */
void az_amx_conv3(const struct az_packed_mat *pm, uint32_t batch, const struct conv_pad *cp,
		  const float *b, const float *res, int relu, float *y);
void az_amx_conv3_emulated(const struct az_packed_mat *pm, uint32_t batch,
			   const struct conv_pad *cp, const float *b, const float *res, int relu,
			   float *y);

/* Tests only: 1 makes az_packed_linear() and az_packed_conv3() run the _emulated kernels on
 * AMX-packed matrices, so whole networks go through the AMX kernel's code on a CPU without AMX. */
extern int az_amx_emulate;

#endif
