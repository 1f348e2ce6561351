/* SPDX-License-Identifier: MIT */
/* The cpu backend's linear layers on Intel's AMX tiles (AZ_CPU_GEMM=amx; gpu/cpu_packed.h):
 * the bf16 panels of gpu/cpu_packed.c (32 outputs, each output's two weights of a column pair
 * adjacent, as VDPBF16PS takes them) are already the layout TDPBF16PS takes for its second
 * operand: a tile of 16 rows (column pairs) x 16 outputs x 2 bf16, read with a row stride of
 * one panel row (128 bytes). Per block of 16 rows of x: the rows rounded to bf16 once (the
 * rounding of the AVX512_BF16 kernel), then per 32-output panel two 16 x 16 fp32 accumulator
 * tiles, each 16-pair step one load of x's tile, two of the panel's and two TDPBF16PS; the
 * accumulators stored and the bias, residual and ReLU applied with AVX-512 as they go to y.
 *
 * Intel 64 and IA-32 Architectures Software Developer's Manual, vol. 2 (LDTILECFG, TILELOADD,
 * TDPBF16PS, TILESTORED, TILERELEASE) and vol. 1 ch. 18 (the tile configuration); Linux's
 * Documentation/arch/x86/xstate.rst (the tile data permission). The same kernel is compiled a
 * second time with the tile instructions emulated in C from the manual's pseudocode, so that
 * the tests check its logic on CPUs without AMX. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "gpu/cpu_packed_impl.h"

#ifdef HAVE_X86
#include <cpuid.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

int az_amx_emulate;

/* Linux's arch_prctl requests for an extended state component's permission, and AMX's tile data
 * component (arch/x86/include/uapi/asm/prctl.h, asm/fpu/types.h). */
#define AZ_ARCH_GET_XCOMP_PERM 0x1022
#define AZ_ARCH_REQ_XCOMP_PERM 0x1023
#define AZ_XFEATURE_XTILEDATA 18

/* az_amx_usable()'s checks, run once. */
static int amx_check(void)
{
	unsigned a, b, c, d, lo, hi;
	unsigned long perm = 0;

	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bf16"))
		return 0;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 22)) || !(d & (1u << 24)))
		return 0; /* AMX-BF16, AMX-TILE */
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
		return 0; /* OSXSAVE: xgetbv allowed */
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	(void)hi;
	if ((lo & (3u << 17)) != (3u << 17))
		return 0; /* the OS enables XTILECFG and XTILEDATA */
	if (syscall(SYS_arch_prctl, AZ_ARCH_REQ_XCOMP_PERM, AZ_XFEATURE_XTILEDATA) != 0)
		return 0; /* a kernel before 5.16, or refused */
	/* granted: confirmed as the kernel's own AMX selftest confirms it */
	if (syscall(SYS_arch_prctl, AZ_ARCH_GET_XCOMP_PERM, &perm) != 0 ||
	    !(perm & (1ul << AZ_XFEATURE_XTILEDATA)))
		return 0;
	return 1;
}

int az_amx_usable(void)
{
	/* one answer a process (-1: not asked yet); threads that race compute the same answer
	 * (the permission request is idempotent) and store it alike */
	static atomic_int usable = -1;
	int u = atomic_load_explicit(&usable, memory_order_relaxed);

	if (u < 0) {
		u = amx_check();
		atomic_store_explicit(&usable, u, memory_order_relaxed);
	}
	return u;
}

/* LDTILECFG's 64-byte operand, palette 1 (SDM vol. 1, 18.2): per tile its rows and bytes a
 * row. */
struct tile_cfg {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
};

/* The tiles of the kernel: x's 16 rows x 16 pairs, the panel's two 16-pair x 16-output halves,
 * the two 16 x 16 fp32 accumulators. Macros, not an enum: GCC's tile intrinsics paste the
 * number into the instruction's text. */
#define T_X 0
#define T_W0 1
#define T_C0 2
#define T_C1 3
#define T_W1 4

_Static_assert(sizeof(struct tile_cfg) == 64, "LDTILECFG reads 64 bytes");
_Static_assert(AZ_AMX_MAX_IN % 32 == 0, "x's tile block is whole 32-column tiles");

/* Tiles T_X .. T_W1 (0-4) of 16 rows of 64 bytes, 5-7 unused (0 rows, 0 bytes). A constant:
 * GCC's _tile_loadconfig() does not tell the compiler that it reads all 64 bytes, so no store
 * into a configuration made at run time could be dropped. */
static const struct tile_cfg tile_cfg_used __attribute__((aligned(64))) = {
	.palette = 1,
	.colsb = {64, 64, 64, 64, 64},
	.rows = {16, 16, 16, 16, 16},
};

/* GCC's tile loads and stores do not name the memory they touch: a compiler barrier keeps the
 * stores into x's block before them and the reads of the accumulators after them. */
#define TILE_MEMORY_BARRIER() __asm__ volatile("" ::: "memory")

/* xb[r * kp + k] = x[r0 + r, k] rounded to bf16 (0 past in, and for rows past `rows`), r < 16,
 * k < kp (a multiple of 32). */
INLINE_BF16 void rows_to_tile(const float *x, size_t in, unsigned rows, size_t kp, uint16_t *xb)
{
	for (unsigned r = 0; r < 16; r++)
		for (size_t k = 0; k < kp; k += 32) {
			__m512i v = r < rows && k < in ? round_pairs32(x + r * in + k, in - k) :
							 _mm512_setzero_si512();

			_mm512_storeu_si512(xb + r * kp + k, v);
		}
}

/* xb's 16 rows: rows r0 .. r0 + rows of a 3x3 convolution's implicit im2col matrix (columns
 * tap-major, t * c + channel, t = 3 ky + kx) gathered from cp's zero-padded bf16 input: row g is
 * sample g / cells, cell g % cells = (y, x), and its tap t the c / 2 pairs of padded cell
 * (y + ky, x + kx); 0 from column 9c to kp and in the rows past `rows`. */
INLINE_BF16 void conv_rows_to_tile(const struct conv_pad *cp, size_t r0, unsigned rows, size_t kp,
				   uint16_t *xb)
{
	const size_t cells = (size_t)cp->height * cp->width, half = cp->c / 2;
	const size_t w2 = (size_t)cp->width + 2;

	for (unsigned r = 0; r < 16; r++) {
		uint16_t *row = xb + r * kp;
		size_t done = 0;

		if (r < rows) {
			size_t g = r0 + r, cell = g % cells;
			const uint32_t *at = cp->pad + g / cells * cp->sn +
					     (cell / cp->width * w2 + cell % cp->width) * half;

			for (unsigned t = 0; t < 9; t++)
				memcpy(row + t * cp->c, at + (t / 3 * w2 + t % 3) * half,
				       half * sizeof(uint32_t));
			done = 9 * (size_t)cp->c;
		}
		memset(row + done, 0, (kp - done) * sizeof(uint16_t));
	}
}

/* y[r0 + r, col + j] = act(cb[r][j] + b[col + j] (+ res)), r < rows, j < 32 and col + j < out. */
INLINE_BF16 void tile_epilogue(const float cb[16][32], unsigned rows, size_t r0, size_t col,
			       size_t out, const float *b, const float *res, int relu, float *y)
{
	__mmask16 m[2];

	block_masks((uint32_t)(out - col), &m[0], &m[1]);
	for (unsigned v = 0; v < 2; v++) {
		if (!m[v])
			continue;
		__m512 bias = _mm512_maskz_loadu_ps(m[v], b + col + 16 * v);

		for (unsigned r = 0; r < rows; r++) {
			size_t at = (r0 + r) * out + col + 16 * v;
			__m512 s = _mm512_add_ps(_mm512_loadu_ps(cb[r] + 16 * v), bias);

			if (res)
				s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m[v], res + at));
			if (relu)
				s = _mm512_max_ps(s, _mm512_setzero_ps());
			_mm512_mask_storeu_ps(y + at, m[v], s);
		}
	}
}

/* ---- the tile instructions emulated (SDM vol. 2, TILELOADD / TILESTORED / TDPBF16PS) ---- */

static _Thread_local struct tile_cfg emu_cfg;
static _Thread_local uint8_t emu_tile[8][16][64];

/* The faults of LDTILECFG (palette 1, reserved bytes 0, at most 16 rows of 64 bytes, rows and
 * bytes both 0 or neither) as assertions, and the tiles cleared. */
static void emu_loadconfig(const struct tile_cfg *cfg)
{
	AZ_ASSERT(cfg->palette == 1 && cfg->start_row == 0);
	for (size_t i = 0; i < sizeof(cfg->reserved); i++)
		AZ_ASSERT(cfg->reserved[i] == 0);
	for (int t = 0; t < 16; t++) {
		AZ_ASSERT(t < 8 || (cfg->rows[t] == 0 && cfg->colsb[t] == 0));
		AZ_ASSERT(cfg->rows[t] <= 16 && cfg->colsb[t] <= 64 && cfg->colsb[t] % 4 == 0);
		AZ_ASSERT((cfg->rows[t] == 0) == (cfg->colsb[t] == 0));
	}
	emu_cfg = *cfg;
	memset(emu_tile, 0, sizeof(emu_tile));
}

/* Tile t configured (a tile instruction on an unconfigured tile faults). */
static void emu_need(int t)
{
	AZ_ASSERT(t >= 0 && t < 8 && emu_cfg.palette == 1 && emu_cfg.rows[t] > 0);
}

static void emu_zero(int t)
{
	emu_need(t);
	memset(emu_tile[t], 0, sizeof(emu_tile[t]));
}

static void emu_load(int t, const void *base, size_t stride)
{
	emu_need(t);
	for (unsigned r = 0; r < emu_cfg.rows[t]; r++)
		memcpy(emu_tile[t][r], (const uint8_t *)base + r * stride, emu_cfg.colsb[t]);
}

static void emu_store(int t, void *base, size_t stride)
{
	emu_need(t);
	for (unsigned r = 0; r < emu_cfg.rows[t]; r++)
		memcpy((uint8_t *)base + r * stride, emu_tile[t][r], emu_cfg.colsb[t]);
}

/* f with a denormal flushed to (signed) 0: the instruction's DAZ on inputs, FTZ on results. */
static float emu_ftz(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if ((u & 0x7f800000u) == 0)
		u &= 0x80000000u;
	memcpy(&f, &u, sizeof(f));
	return f;
}

/* A bf16 as fp32, a denormal read as 0. */
static float emu_bf16(const uint8_t *p)
{
	uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return emu_ftz(f);
}

/* TDPBF16PS tc, ta, tb as the SDM's Operation section has it: per row m of C, the even and the
 * odd products of every pair k summed apart from 0 (a product of two bf16s is exact in fp32, so
 * its FMAs are these additions), then their sum added to C[m][n]. Its #UD conditions as
 * assertions: three distinct tiles, C's rows A's, C's bytes B's, A's bytes 4 x B's rows. */
static void emu_dpbf16ps(int tc, int ta, int tb)
{
	emu_need(tc);
	emu_need(ta);
	emu_need(tb);
	AZ_ASSERT(tc != ta && tc != tb && ta != tb);
	AZ_ASSERT(emu_cfg.rows[tc] == emu_cfg.rows[ta] && emu_cfg.colsb[tc] == emu_cfg.colsb[tb] &&
		  emu_cfg.colsb[ta] == 4u * emu_cfg.rows[tb]);
	for (unsigned m = 0; m < emu_cfg.rows[tc]; m++) {
		float even[16] = {0}, odd[16] = {0};

		for (unsigned k = 0; k < emu_cfg.colsb[ta] / 4u; k++)
			for (unsigned n = 0; n < emu_cfg.colsb[tc] / 4u; n++) {
				const uint8_t *a = &emu_tile[ta][m][4 * k],
					      *b = &emu_tile[tb][k][4 * n];

				even[n] = emu_ftz(even[n] + emu_bf16(a) * emu_bf16(b));
				odd[n] = emu_ftz(odd[n] + emu_bf16(a + 2) * emu_bf16(b + 2));
			}
		for (unsigned n = 0; n < emu_cfg.colsb[tc] / 4u; n++) {
			float acc;

			memcpy(&acc, &emu_tile[tc][m][4 * n], sizeof(acc));
			acc = emu_ftz(acc + emu_ftz(even[n] + odd[n]));
			memcpy(&emu_tile[tc][m][4 * n], &acc, sizeof(acc));
		}
	}
}

/* The kernel, twice: on the tiles (AMX_HW) and emulated. */
#define AMX_KERNEL_NAME amx_kernel
#define AMX_KERNEL_TARGET __attribute__((target("avx512f,avx512bf16,amx-tile,amx-bf16")))
#define TILE_LOADCONFIG(cfg) _tile_loadconfig(cfg)
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_LOAD(t, base, stride) _tile_loadd(t, base, stride)
#define TILE_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#define TILE_STORE(t, base, stride) _tile_stored(t, base, stride)
#define TILE_RELEASE() _tile_release()
#include "gpu/cpu_amx_kernel.h"

#define AMX_KERNEL_NAME amx_kernel_emulated
#define AMX_KERNEL_TARGET BF16_TARGET
#define TILE_LOADCONFIG(cfg) emu_loadconfig(cfg)
#define TILE_ZERO(t) emu_zero(t)
#define TILE_LOAD(t, base, stride) emu_load(t, base, stride)
#define TILE_DP(c, a, b) emu_dpbf16ps(c, a, b)
#define TILE_STORE(t, base, stride) emu_store(t, base, stride)
#define TILE_RELEASE() ((void)0)
#include "gpu/cpu_amx_kernel.h"

void az_amx_linear(const struct az_packed_mat *pm, uint32_t batch, const float *x, const float *b,
		   const float *res, int relu, float *y)
{
	amx_kernel(pm, batch, x, NULL, b, res, relu, y);
}

void az_amx_linear_emulated(const struct az_packed_mat *pm, uint32_t batch, const float *x,
			    const float *b, const float *res, int relu, float *y)
{
	amx_kernel_emulated(pm, batch, x, NULL, b, res, relu, y);
}

void az_amx_conv3(const struct az_packed_mat *pm, uint32_t batch, const struct conv_pad *cp,
		  const float *b, const float *res, int relu, float *y)
{
	amx_kernel(pm, batch, NULL, cp, b, res, relu, y);
}

void az_amx_conv3_emulated(const struct az_packed_mat *pm, uint32_t batch,
			   const struct conv_pad *cp, const float *b, const float *res, int relu,
			   float *y)
{
	amx_kernel_emulated(pm, batch, NULL, cp, b, res, relu, y);
}

#else

int az_amx_emulate;

int az_amx_usable(void)
{
	return 0;
}

void az_amx_linear(const struct az_packed_mat *pm, uint32_t batch, const float *x, const float *b,
		   const float *res, int relu, float *y)
{
	(void)pm, (void)batch, (void)x, (void)b, (void)res, (void)relu, (void)y;
	abort(); /* az_cpu_gemm_select() never chooses AMX off x86 */
}

void az_amx_linear_emulated(const struct az_packed_mat *pm, uint32_t batch, const float *x,
			    const float *b, const float *res, int relu, float *y)
{
	az_amx_linear(pm, batch, x, b, res, relu, y);
}

void az_amx_conv3(const struct az_packed_mat *pm, uint32_t batch, const struct conv_pad *cp,
		  const float *b, const float *res, int relu, float *y)
{
	(void)pm, (void)batch, (void)cp, (void)b, (void)res, (void)relu, (void)y;
	abort(); /* az_cpu_gemm_select() never chooses AMX off x86 */
}

void az_amx_conv3_emulated(const struct az_packed_mat *pm, uint32_t batch,
			   const struct conv_pad *cp, const float *b, const float *res, int relu,
			   float *y)
{
	az_amx_conv3(pm, batch, cp, b, res, relu, y);
}

#endif
