/* SPDX-License-Identifier: MIT */
/* The cpu backend's packed-weight kernels (gpu/cpu_packed.h): linear layers, 3x3 convolutions
 * as implicit GEMMs, the transposed GEMM of training, the softmax; AVX-512 code compiled with
 * target attributes and chosen at run time (gpu/cpu_packed.c), so the same binary runs (on
 * OpenBLAS) where AVX-512 is missing.
 *
 * The kernel: for each 32-output panel of W (32 x in floats: 16 KB at in = 128, resident in L1
 * while every row of x streams past it), tiles of MR = 8 rows of x accumulate 8 x 2 vectors
 * with one FMA per (row, vector) per k, the row's x[k] broadcast from memory: 16 FMAs on 2
 * weight loads and 8 broadcasts, the register blocking of BLIS/OpenBLAS's AVX-512 kernels
 * (16 of the 32 zmm registers hold C). Outputs start at the bias, so no pass zeroes C; the
 * residual input and the ReLU are applied as each tile is stored. Measured at 128 x 128 on this
 * project's machine: 250 GFLOPS against OpenBLAS sgemm's 110 (its Haswell kernels, with the
 * separate bias and ReLU passes).
 *
 * The bf16 form (AZ_CPU_GEMM=bf16, CPUs with AVX512_BF16): the same panels hold bf16 weights in
 * column pairs, and VDPBF16PS (Intel's ISA reference: the sum of two bf16 products added to
 * each fp32 lane) does the work of two FMAs per instruction; each tile's rows of x are rounded
 * to bf16 pairs on the stack (KPAIRS at a time) and broadcast 32 bits at a time. Same register
 * blocking, the bias, residual and ReLU in fp32. */
#include "gpu/cpu_packed.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "gpu/cpu_forward.h"
#include "gpu/cpu_packed_impl.h"

#ifdef HAVE_X86


/* acc[r][v] = the bias of the tile's outputs (columns col ...), for r < mr, v < nv. */
INLINE512 void tile_init(const unsigned nv, const unsigned mr, __m512 acc[MR][2], const float *b,
			 size_t col, __mmask16 m0, __mmask16 m1)
{
	__m512 b0 = _mm512_maskz_loadu_ps(m0, b + col);
	__m512 b1 = nv > 1 ? _mm512_maskz_loadu_ps(m1, b + col + 16) : b0;

	for (unsigned r = 0; r < mr; r++) {
		acc[r][0] = b0;
		acc[r][1] = b1;
	}
}

/* The epilogue: y[r0 + r, col ...] = act(acc[r] (+ res)), masked by m0 / m1. */
INLINE512 void tile_store(const unsigned nv, const unsigned mr, __m512 acc[MR][2], size_t out,
			  size_t r0, size_t col, const float *res, int relu, float *y,
			  __mmask16 m0, __mmask16 m1)
{
	const __m512 zero = _mm512_setzero_ps();

	for (unsigned r = 0; r < mr; r++) {
		size_t at = (r0 + r) * out + col;

		for (unsigned v = 0; v < nv; v++) {
			__mmask16 mk = v ? m1 : m0;
			__m512 s = acc[r][v];

			if (res)
				s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(mk, res + at + 16 * v));
			if (relu)
				s = _mm512_max_ps(s, zero);
			_mm512_mask_storeu_ps(y + at + 16 * v, mk, s);
		}
	}
}

/* One tile: mr (<= MR, a constant after inlining) rows from row r0, nv (1 or 2) vectors of panel
 * p; m0/m1 mask the outputs that exist (a partial last panel). */
INLINE512 void tile(const unsigned nv, const unsigned mr, const struct az_packed_mat *pm,
		    size_t p, size_t r0, const float *x, const float *b, const float *res,
		    int relu, float *y, __mmask16 m0, __mmask16 m1)
{
	const size_t in = pm->in, col = p * AZ_PACKED_PANEL;
	const float *panel = pm->w + p * in * AZ_PACKED_PANEL, *xr = x + r0 * in;
	__m512 acc[MR][2];

	tile_init(nv, mr, acc, b, col, m0, m1);
	for (size_t k = 0; k < in; k++) {
		const float *wk = panel + k * AZ_PACKED_PANEL;
		__m512 w0 = _mm512_load_ps(wk);
		__m512 w1 = nv > 1 ? _mm512_load_ps(wk + 16) : w0;

		for (unsigned r = 0; r < mr; r++) {
			__m512 v = _mm512_set1_ps(xr[r * in + k]);

			acc[r][0] = _mm512_fmadd_ps(v, w0, acc[r][0]);
			if (nv > 1)
				acc[r][1] = _mm512_fmadd_ps(v, w1, acc[r][1]);
		}
	}
	tile_store(nv, mr, acc, pm->out, r0, col, res, relu, y, m0, m1);
}

/* Column pairs of x rounded to bf16 at a time: MR rows x 256 pairs, 8 KB on the stack. */
#define KPAIRS 256u

/* xb[r * KPAIRS + q] = the bf16 pair (x[r, k0 + 2q], x[r, k0 + 2q + 1]), low half first (0
 * past in), for r < mr and q < nq (<= KPAIRS), rounded as VCVTNE2PS2BF16 does; the 16-pair
 * block that holds q = nq - 1 is written whole. */
INLINE_BF16 void rows_to_bf16(const unsigned mr, const float *xr, size_t in, size_t k0,
			      size_t nq, uint32_t *xb)
{
	for (unsigned r = 0; r < mr; r++)
		for (size_t q = 0; q < nq; q += 16) {
			size_t k = k0 + 2 * q; /* k < in */

			_mm512_storeu_si512(xb + r * KPAIRS + q, round_pairs32(xr + r * in + k, in - k));
		}
}

/* acc[r][v] += the nq bf16 pairs of row r of xb (row stride KPAIRS) dotted with the pairs of
 * panel wq (two vectors of 16 outputs a pair, nv of them used): per pair one VDPBF16PS per
 * (row, vector), 32 products summed into 16 fp32 lanes. */
INLINE_BF16 void dot_pairs(const unsigned nv, const unsigned mr, const uint16_t *wq, size_t nq,
			   const uint32_t *xb, __m512 acc[MR][2])
{
	for (size_t q = 0; q < nq; q++, wq += 2 * AZ_PACKED_PANEL) {
		__m512bh w0 = (__m512bh)_mm512_load_si512(wq);
		__m512bh w1 = nv > 1 ? (__m512bh)_mm512_load_si512(wq + 32) : w0;

		for (unsigned r = 0; r < mr; r++) {
			__m512bh v = (__m512bh)_mm512_set1_epi32((int)xb[r * KPAIRS + q]);

			acc[r][0] = _mm512_dpbf16_ps(acc[r][0], v, w0);
			if (nv > 1)
				acc[r][1] = _mm512_dpbf16_ps(acc[r][1], v, w1);
		}
	}
}

/* tile() on bf16 panels: x's rows rounded to bf16 KPAIRS column pairs at a time, then
 * dot_pairs() on each block (for an input of more than KPAIRS pairs; linear_bf16() rounds a
 * narrower one once for every panel). */
INLINE_BF16 void tile_bf16(const unsigned nv, const unsigned mr, const struct az_packed_mat *pm,
			   size_t p, size_t r0, const float *x, const struct conv_pad *cp,
			   const float *b, const float *res, int relu, float *y, __mmask16 m0,
			   __mmask16 m1)
{
	const size_t in = pm->in, np = pairs(pm->in), col = p * AZ_PACKED_PANEL;
	const uint16_t *panel = pm->wb + p * np * 2 * AZ_PACKED_PANEL;
	uint32_t xb[MR * KPAIRS] __attribute__((aligned(64)));
	__m512 acc[MR][2];

	(void)cp;
	tile_init(nv, mr, acc, b, col, m0, m1);
	for (size_t q0 = 0; q0 < np; q0 += KPAIRS) {
		size_t nq = np - q0 < KPAIRS ? np - q0 : KPAIRS;

		rows_to_bf16(mr, x + r0 * in, in, 2 * q0, nq, xb);
		dot_pairs(nv, mr, panel + q0 * 2 * AZ_PACKED_PANEL, nq, xb, acc);
	}
	tile_store(nv, mr, acc, pm->out, r0, col, res, relu, y, m0, m1);
}

/* Rows r0 .. r0 + mr of a layer whose input fits one block (at most KPAIRS pairs): the rows
 * rounded to bf16 once, then every panel's tile from them (the same sums, in the same order, as
 * tile_bf16() panel by panel). */
INLINE_BF16 void rows_bf16(const unsigned mr, const struct az_packed_mat *pm, size_t r0,
			   const float *x, const float *b, const float *res, int relu, float *y)
{
	const size_t np = pairs(pm->in);
	uint32_t xb[MR * KPAIRS] __attribute__((aligned(64)));

	rows_to_bf16(mr, x + r0 * pm->in, pm->in, 0, np, xb);
	for (size_t p = 0; p < panels(pm->out); p++) {
		const uint16_t *panel = pm->wb + p * np * 2 * AZ_PACKED_PANEL;
		uint32_t left = pm->out - (uint32_t)(p * AZ_PACKED_PANEL);
		size_t col = p * AZ_PACKED_PANEL;
		__mmask16 m0, m1;
		__m512 acc[MR][2];

		block_masks(left, &m0, &m1);
		if (left > 16) {
			tile_init(2, mr, acc, b, col, m0, m1);
			dot_pairs(2, mr, panel, np, xb, acc);
			tile_store(2, mr, acc, pm->out, r0, col, res, relu, y, m0, m1);
		} else {
			tile_init(1, mr, acc, b, col, m0, m1);
			dot_pairs(1, mr, panel, np, xb, acc);
			tile_store(1, mr, acc, pm->out, r0, col, res, relu, y, m0, m1);
		}
	}
}

/* One tile of a 3x3 convolution as an implicit GEMM (tile_conv on fp32 panels, tile_conv_bf16 on
 * bf16 ones): row r0 + r is cell (n, y, x), and its im2col row, tap-major, is read in place from
 * cp's zero-padded copy of the input (PAD: padf, floats, or pad, bf16 pairs; STEP floats a
 * unit): tap (ky, kx) is the C / STEP units of padded cell (y + ky, x + kx). The same units in
 * the same order as TILE_DENSE (tile() or tile_bf16()) on the materialised im2col matrix, so the
 * same sums to the bit. A panel holds STEP * AZ_PACKED_PANEL weights a unit (an fp32 column, or
 * a bf16 column pair: 9C is even whenever bf16 takes a convolution), LOADW loads 16 outputs'
 * worth, BCAST broadcasts one unit of x, MAC(acc, v, w) accumulates. */
#define DEFINE_TILE_CONV(NAME, ATTR, WEIGHTS, STEP, PAD, VEC, LOADW, BCAST, MAC)                \
	ATTR void NAME(const unsigned nv, const unsigned mr, const struct az_packed_mat *pm,   \
		       size_t p, size_t r0, const float *x, const struct conv_pad *cp,        \
		       const float *b, const float *res, int relu, float *y, __mmask16 m0,    \
		       __mmask16 m1)                                                          \
	{                                                                                     \
		const size_t unit = cp->c / (STEP), col = p * AZ_PACKED_PANEL;                \
		const size_t pw = (size_t)cp->width + 2, cells = (size_t)cp->height * cp->width; \
		const __typeof__(*pm->WEIGHTS) *panel = pm->WEIGHTS + p * pm->in * AZ_PACKED_PANEL; \
		const __typeof__(*cp->PAD) *base[MR];                                         \
		__m512 acc[MR][2];                                                            \
                                                                                              \
		(void)x;                                                                      \
		for (unsigned r = 0; r < mr; r++) {                                           \
			size_t row = r0 + r, n = row / cells, pos = row % cells;              \
                                                                                              \
			base[r] = cp->PAD + n * cp->sn +                                      \
				  (pos / cp->width * pw + pos % cp->width) * unit;            \
		}                                                                             \
		tile_init(nv, mr, acc, b, col, m0, m1);                                       \
		for (unsigned t = 0; t < 9; t++) {                                            \
			const size_t off = ((t / 3) * pw + t % 3) * unit;                     \
			const __typeof__(*panel) *wt = panel + t * unit * (STEP)*AZ_PACKED_PANEL; \
                                                                                              \
			for (size_t q = 0; q < unit; q++) {                                   \
				const __typeof__(*panel) *wq = wt + q * (STEP)*AZ_PACKED_PANEL; \
				VEC w0 = LOADW(wq);                                           \
				VEC w1 = nv > 1 ? LOADW(wq + 16 * (STEP)) : w0;               \
                                                                                              \
				for (unsigned r = 0; r < mr; r++) {                           \
					VEC v = BCAST(base[r][off + q]);                      \
                                                                                              \
					acc[r][0] = MAC(acc[r][0], v, w0);                    \
					if (nv > 1)                                           \
						acc[r][1] = MAC(acc[r][1], v, w1);            \
				}                                                             \
			}                                                                     \
		}                                                                             \
		tile_store(nv, mr, acc, pm->out, r0, col, res, relu, y, m0, m1);              \
	}

#define LOAD_PS(w) _mm512_load_ps(w)
#define BCAST_PS(e) _mm512_set1_ps(e)
#define MAC_PS(acc, v, w) _mm512_fmadd_ps(v, w, acc)
#define LOAD_BH(w) ((__m512bh)_mm512_load_si512(w))
#define BCAST_BH(e) ((__m512bh)_mm512_set1_epi32((int)(e)))
#define MAC_BH(acc, v, w) _mm512_dpbf16_ps(acc, v, w)

DEFINE_TILE_CONV(tile_conv, INLINE512, w, 1, padf, __m512, LOAD_PS, BCAST_PS, MAC_PS)
DEFINE_TILE_CONV(tile_conv_bf16, INLINE_BF16, wb, 2, pad, __m512bh, LOAD_BH, BCAST_BH, MAC_BH)

/* Every row tile of panel p through TILE (tile, tile_bf16 or tile_conv_bf16): full MR-row
 * tiles, then one tile of the rows left. cp (tile_conv_bf16 only, else NULL) is the
 * convolution whose im2col rows the tiles read in place of x's. */
#define DEFINE_PANEL_ROWS(NAME, ATTR, TILE)                                                    \
	ATTR void NAME(const unsigned nv, const struct az_packed_mat *pm, size_t p,            \
		       uint32_t batch, const float *x, const struct conv_pad *cp,              \
		       const float *b, const float *res, int relu, float *y, __mmask16 m0,     \
		       __mmask16 m1)                                                           \
	{                                                                                      \
		size_t r0 = 0;                                                                 \
                                                                                               \
		for (; r0 + MR <= batch; r0 += MR)                                             \
			TILE(nv, MR, pm, p, r0, x, cp, b, res, relu, y, m0, m1);               \
		switch (batch - r0) {                                                          \
		case 1: TILE(nv, 1, pm, p, r0, x, cp, b, res, relu, y, m0, m1); break;         \
		case 2: TILE(nv, 2, pm, p, r0, x, cp, b, res, relu, y, m0, m1); break;         \
		case 3: TILE(nv, 3, pm, p, r0, x, cp, b, res, relu, y, m0, m1); break;         \
		case 4: TILE(nv, 4, pm, p, r0, x, cp, b, res, relu, y, m0, m1); break;         \
		case 5: TILE(nv, 5, pm, p, r0, x, cp, b, res, relu, y, m0, m1); break;         \
		case 6: TILE(nv, 6, pm, p, r0, x, cp, b, res, relu, y, m0, m1); break;         \
		case 7: TILE(nv, 7, pm, p, r0, x, cp, b, res, relu, y, m0, m1); break;         \
		default: break;                                                                \
		}                                                                              \
	}

/* tile() with tile_bf16()'s arguments (cp unused: the fp32 path reads x's rows). */
#define TILE_FP32(nv, mr, pm, p, r0, x, cp, b, res, relu, y, m0, m1)                           \
	tile(nv, mr, pm, p, r0, x, b, res, relu, y, m0, m1)

DEFINE_PANEL_ROWS(panel_rows, INLINE512, TILE_FP32)
DEFINE_PANEL_ROWS(panel_rows_bf16, INLINE_BF16, tile_bf16)
DEFINE_PANEL_ROWS(panel_rows_conv_bf16, INLINE_BF16, tile_conv_bf16)
DEFINE_PANEL_ROWS(panel_rows_conv, INLINE512, tile_conv)

/* az_packed_linear()'s body with PANEL_ROWS (panel_rows or panel_rows_bf16): each panel with
 * one vector of outputs or two, masked to the outputs that exist; cp as DEFINE_PANEL_ROWS. */
#define LINEAR_PANELS(PANEL_ROWS, cp)                                                      \
	for (size_t p = 0; p < panels(pm->out); p++) {                                     \
		uint32_t left = pm->out - (uint32_t)(p * AZ_PACKED_PANEL);                 \
		__mmask16 m0, m1;                                                          \
                                                                                           \
		block_masks(left, &m0, &m1);                                               \
		if (left > 16)                                                             \
			PANEL_ROWS(2, pm, p, batch, x, cp, b, res, relu, y, m0, m1);       \
		else                                                                       \
			PANEL_ROWS(1, pm, p, batch, x, cp, b, res, relu, y, m0, m1);       \
	}

/* az_packed_linear() on bf16 panels (pm->wb): an input of at most KPAIRS pairs (the MLPs'
 * layers) row tile by row tile, each tile's rows rounded once for all panels; a wider one panel
 * by panel. */
BF16_TARGET static void linear_bf16(const struct az_packed_mat *pm, uint32_t batch,
				    const float *x, const float *b, const float *res, int relu,
				    float *y)
{
	size_t r0 = 0;

	if (pairs(pm->in) > KPAIRS) {
		LINEAR_PANELS(panel_rows_bf16, NULL)
		return;
	}
	for (; r0 + MR <= batch; r0 += MR)
		rows_bf16(MR, pm, r0, x, b, res, relu, y);
	switch (batch - r0) {
#define TAIL(q)                                                 \
	case q: rows_bf16(q, pm, r0, x, b, res, relu, y); break;
		TAIL(1) TAIL(2) TAIL(3) TAIL(4) TAIL(5) TAIL(6) TAIL(7)
#undef TAIL
	default: break;
	}
}

/* pad = cv's samples, zero-padded by one cell on each side, as bf16 pairs of channels (rounded
 * as VCVTNE2PS2BF16 does, 32 floats at a time); returns its description. */
INLINE_BF16 struct conv_pad pad_bf16(const struct az_conv_src *cv, uint32_t samples, uint32_t *pad)
{
	const uint32_t C = cv->c, Hb = cv->height, Wb = cv->width;
	const struct conv_pad pc = { .pad = pad, .sn = (size_t)(Hb + 2) * (Wb + 2) * (C / 2),
				     .c = C, .height = Hb, .width = Wb };

	memset(pad, 0, sizeof(uint32_t) * pc.sn * samples);
	for (size_t n = 0; n < samples; n++)
		for (size_t cell = 0; cell < (size_t)Hb * Wb; cell++) {
			const float *src = cv->in + n * cv->sn + cell * C;
			uint32_t *dst = pad + n * pc.sn +
					((cell / Wb + 1) * (Wb + 2) + cell % Wb + 1) * (C / 2);

			for (uint32_t c = 0; c < C; c += 32) {
				uint32_t left = C - c;
				__m512i v = round_pairs32(src + c, left);

				if (left >= 32) /* a whole block: no mask (slow stores on Zen 4) */
					_mm512_storeu_si512(dst + c / 2, v);
				else /* left / 2 pairs of the 16: no write past the cell */
					_mm512_mask_storeu_epi32(
						dst + c / 2, (__mmask16)((1u << (left / 2)) - 1), v);
			}
		}
	return pc;
}

/* pad_bf16(), then az_packed_conv3()'s rows through tile_conv_bf16(). */
BF16_TARGET static void conv3_bf16(const struct az_packed_mat *pm, const struct az_conv_src *cv,
				   uint32_t samples, const float *b, const float *res, int relu,
				   float *y, uint32_t *pad)
{
	const struct conv_pad pc = pad_bf16(cv, samples, pad);
	const struct conv_pad *cp = &pc;
	const uint32_t batch = samples * cv->height * cv->width;
	const float *x = NULL;

	LINEAR_PANELS(panel_rows_conv_bf16, cp)
}

/* conv3_bf16() on the AMX tiles (az_amx_conv3()): the same padded bf16 input, each 16-row block
 * of the implicit im2col matrix gathered from it into the tile's rows. */
BF16_TARGET static void conv3_amx(const struct az_packed_mat *pm, const struct az_conv_src *cv,
				  uint32_t samples, const float *b, const float *res, int relu,
				  float *y, uint32_t *pad)
{
	const struct conv_pad pc = pad_bf16(cv, samples, pad);
	const uint32_t batch = samples * cv->height * cv->width;

	if (az_amx_emulate)
		az_amx_conv3_emulated(pm, batch, &pc, b, res, relu, y);
	else
		az_amx_conv3(pm, batch, &pc, b, res, relu, y);
}

/* conv3_bf16() on fp32 panels: cp->padf = cv's samples, zero-padded, as floats; the rows through
 * tile_conv(). */
AVX512 static void conv3_fp32(const struct az_packed_mat *pm, const struct az_conv_src *cv,
			      uint32_t samples, const float *b, const float *res, int relu, float *y,
			      float *pad)
{
	const uint32_t C = cv->c, Hb = cv->height, Wb = cv->width;
	const struct conv_pad pc = { .padf = pad, .sn = (size_t)(Hb + 2) * (Wb + 2) * C, .c = C,
				     .height = Hb, .width = Wb };
	const struct conv_pad *cp = &pc;
	const uint32_t batch = samples * Hb * Wb;
	const float *x = NULL;

	memset(pad, 0, sizeof(float) * pc.sn * samples);
	for (size_t n = 0; n < samples; n++)
		for (size_t yy = 0; yy < Hb; yy++)
			memcpy(pad + n * pc.sn + ((yy + 1) * (Wb + 2) + 1) * C,
			       cv->in + n * cv->sn + yy * Wb * C, sizeof(float) * Wb * C);
	LINEAR_PANELS(panel_rows_conv, cp)
}

AVX512 void az_packed_linear(const struct az_packed_mat *pm, uint32_t batch, const float *x,
			     const float *b, const float *res, int relu, float *y)
{
	if (pm->amx) {
		if (az_amx_emulate)
			az_amx_linear_emulated(pm, batch, x, b, res, relu, y);
		else
			az_amx_linear(pm, batch, x, b, res, relu, y);
		return;
	}
	if (pm->wb) {
		linear_bf16(pm, batch, x, b, res, relu, y);
		return;
	}
	LINEAR_PANELS(panel_rows, NULL)
}

int az_packed_conv3_ok(const struct az_packed_mat *pm)
{
	return pm->conv_c && (pm->wb ? pm->conv_c % 2 == 0 : pm->w != NULL);
}

void az_packed_conv3(const struct az_packed_mat *pm, const struct az_conv_src *cv,
		     uint32_t samples, const float *b, const float *res, int relu, float *y,
		     void *pad)
{
	AZ_ASSERT(az_packed_conv3_ok(pm) && cv->c == pm->conv_c);
	if (pm->amx)
		conv3_amx(pm, cv, samples, b, res, relu, y, pad);
	else if (pm->wb)
		conv3_bf16(pm, cv, samples, b, res, relu, y, pad);
	else
		conv3_fp32(pm, cv, samples, b, res, relu, y, pad);
}

/* One tile of az_packed_gemm_tn(): rows i0 .. i0 + mr of C (mr a constant after inlining), nv
 * vectors of columns from j0, masked by m0 / m1. */
INLINE512 void tile_tn(const unsigned nv, const unsigned mr, uint32_t kdim, const float *a,
		       size_t lda, const float *b, size_t ldb, int accumulate, float *c,
		       size_t ldc, size_t i0, size_t j0, __mmask16 m0, __mmask16 m1)
{
	__m512 acc[MR][2];

	for (unsigned r = 0; r < mr; r++)
		acc[r][0] = acc[r][1] = _mm512_setzero_ps();
	for (size_t k = 0; k < kdim; k++) {
		const float *bk = b + k * ldb + j0, *ak = a + k * lda + i0;
		__m512 b0 = _mm512_maskz_loadu_ps(m0, bk);
		__m512 b1 = nv > 1 ? _mm512_maskz_loadu_ps(m1, bk + 16) : b0;

		for (unsigned r = 0; r < mr; r++) {
			__m512 v = _mm512_set1_ps(ak[r]);

			acc[r][0] = _mm512_fmadd_ps(v, b0, acc[r][0]);
			if (nv > 1)
				acc[r][1] = _mm512_fmadd_ps(v, b1, acc[r][1]);
		}
	}
	for (unsigned r = 0; r < mr; r++)
		for (unsigned v = 0; v < nv; v++) {
			__mmask16 mk = v ? m1 : m0;
			float *at = c + (i0 + r) * ldc + j0 + 16 * v;
			__m512 s = acc[r][v];

			if (accumulate)
				s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(mk, at));
			_mm512_mask_storeu_ps(at, mk, s);
		}
}

/* Every row tile of C for the column block at j0. */
INLINE512 void tn_rows(const unsigned nv, uint32_t m, uint32_t kdim, const float *a, size_t lda,
		       const float *b, size_t ldb, int accumulate, float *c, size_t ldc,
		       size_t j0, __mmask16 m0, __mmask16 m1)
{
	size_t i0 = 0;

	for (; i0 + MR <= m; i0 += MR)
		tile_tn(nv, MR, kdim, a, lda, b, ldb, accumulate, c, ldc, i0, j0, m0, m1);
	switch (m - i0) {
#define TAIL(q)                                                                         \
	case q:                                                                         \
		tile_tn(nv, q, kdim, a, lda, b, ldb, accumulate, c, ldc, i0, j0, m0, m1); \
		break;
		TAIL(1) TAIL(2) TAIL(3) TAIL(4) TAIL(5) TAIL(6) TAIL(7)
#undef TAIL
	default:
		break;
	}
}

AVX512 void az_packed_gemm_tn(uint32_t m, uint32_t n, uint32_t kdim, const float *a, size_t lda,
			      const float *b, size_t ldb, int accumulate, float *c, size_t ldc)
{
	for (size_t j0 = 0; j0 < n; j0 += AZ_PACKED_PANEL) {
		uint32_t left = n - (uint32_t)j0;
		__mmask16 m0, m1;

		block_masks(left, &m0, &m1);

		if (left > 16)
			tn_rows(2, m, kdim, a, lda, b, ldb, accumulate, c, ldc, j0, m0, m1);
		else
			tn_rows(1, m, kdim, a, lda, b, ldb, accumulate, c, ldc, j0, m0, m1);
	}
}

/* Cephes expf's constants (Stephen L. Moshier, Cephes Math Library, expf.c): ln 2 in a part
 * exact in float and a remainder, and the polynomial for e^r on [-ln2/2, ln2/2]. */
#define EXP_LN2_HI 0.693359375f
#define EXP_LN2_LO -2.12194440e-4f
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f

/* e^x for x <= 0 (an underflow gives 0: scalef by a very negative n). */
INLINE512 __m512 exp_nonpositive(__m512 x)
{
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504089f)),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_LN2_HI), x);

	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_LN2_LO), r);
	__m512 p = _mm512_set1_ps(EXP_P0);

	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P1));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P2));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P3));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P4));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P5));
	/* e^r = 1 + r + r^2 P(r) */
	p = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
	return _mm512_scalef_ps(p, n);
}

AVX512 void az_packed_softmax(const float *logits, const uint8_t *legal, uint32_t actions,
			      float *prob)
{
	__mmask16 all = (__mmask16)((1u << actions) - 1), ok = 0;

	for (uint32_t a = 0; a < actions; a++)
		ok |= (__mmask16)((legal[a] != 0) << a);
	__m512 z = _mm512_maskz_loadu_ps(ok, logits);
	/* finite: |z| < inf (false for NaN); lanes outside ok read as 0, which passes */
	__mmask16 fin = _mm512_cmp_ps_mask(_mm512_abs_ps(z), _mm512_set1_ps(INFINITY), _CMP_LT_OQ);

	if (!ok || fin != 0xffff) {
		az_masked_softmax(logits, legal, actions, prob);
		return;
	}
	float max = _mm512_mask_reduce_max_ps(ok, z);
	__m512 e = _mm512_maskz_mov_ps(ok, exp_nonpositive(_mm512_sub_ps(z, _mm512_set1_ps(max))));
	float sum = _mm512_reduce_add_ps(e); /* >= 1: the max's own term is exactly 1 */

	_mm512_mask_storeu_ps(prob, all, _mm512_mul_ps(e, _mm512_set1_ps(1.0f / sum)));
}

#else

void az_packed_gemm_tn(uint32_t m, uint32_t n, uint32_t kdim, const float *a, size_t lda,
		       const float *b, size_t ldb, int accumulate, float *c, size_t ldc)
{
	(void)m, (void)n, (void)kdim, (void)a, (void)lda, (void)b, (void)ldb, (void)accumulate;
	(void)c, (void)ldc;
	abort(); /* az_cpu_gemm_select() never chooses AVX-512 off x86 */
}

void az_packed_softmax(const float *logits, const uint8_t *legal, uint32_t actions,
		       float *prob)
{
	az_masked_softmax(logits, legal, actions, prob); /* never chosen off x86 */
}

void az_packed_linear(const struct az_packed_mat *pm, uint32_t batch, const float *x,
		      const float *b, const float *res, int relu, float *y)
{
	(void)pm, (void)batch, (void)x, (void)b, (void)res, (void)relu, (void)y;
	abort(); /* az_cpu_gemm_select() never chooses AVX-512 off x86 */
}

int az_packed_conv3_ok(const struct az_packed_mat *pm)
{
	(void)pm;
	return 0; /* no packed panels off x86 */
}

void az_packed_conv3(const struct az_packed_mat *pm, const struct az_conv_src *cv,
		     uint32_t samples, const float *b, const float *res, int relu, float *y,
		     void *pad)
{
	(void)pm, (void)cv, (void)samples, (void)b, (void)res, (void)relu, (void)y, (void)pad;
	abort(); /* az_packed_conv3_ok() is 0 off x86 */
}

#endif
