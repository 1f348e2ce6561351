/* SPDX-License-Identifier: MIT */
/* Packed-weight linear layers for the cpu backend (gpu/cpu_packed.h): the kernel's choice
 * (AZ_CPU_GEMM and the CPU's flags) and the packing of a model's weight matrices into the
 * panels the kernels read (gpu/cpu_packed_kernels.c: fp32 panels of 32 outputs, or bf16 ones
 * in column pairs). */
#include "gpu/cpu_packed.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "gpu/cpu_forward.h"
#include "gpu/cpu_packed_impl.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

enum az_cpu_gemm az_cpu_gemm_auto(int avx512, int bf16, int amx, int amd)
{
	if (amx)
		return AZ_CPU_GEMM_AMX; /* 4.0x (MLP) / 1.7x (ResNet) the fp32 kernel (docs/cpu.md) */
	if (bf16 && amd)
		return AZ_CPU_GEMM_BF16; /* Zen 4: 1.6-2.0x the fp32 kernel */
	return avx512 ? AZ_CPU_GEMM_AVX512 : AZ_CPU_GEMM_BLAS;
}

int az_cpu_gemm_select(enum az_cpu_gemm *kind)
{
	const char *env = getenv("AZ_CPU_GEMM");
	int have = 0, have_bf16 = 0, amd = 0;

#ifdef HAVE_X86
	__builtin_cpu_init();
	have = __builtin_cpu_supports("avx512f");
	have_bf16 = have && __builtin_cpu_supports("avx512bf16");
	amd = __builtin_cpu_is("amd");
#endif
	if (!env || !*env || strcmp(env, "auto") == 0) {
		*kind = az_cpu_gemm_auto(have, have_bf16, have_bf16 && az_amx_usable(), amd);
		return 0;
	}
	if (strcmp(env, "fp32") == 0) { /* the fastest fp32 path: exact fp32 products */
		*kind = have ? AZ_CPU_GEMM_AVX512 : AZ_CPU_GEMM_BLAS;
		return 0;
	}
	if (strcmp(env, "blas") == 0) {
		*kind = AZ_CPU_GEMM_BLAS;
		return 0;
	}
	if (strcmp(env, "avx512") == 0) {
		*kind = AZ_CPU_GEMM_AVX512;
		return have ? 0 : -ENOTSUP;
	}
	if (strcmp(env, "bf16") == 0) {
		*kind = AZ_CPU_GEMM_BF16;
		return have_bf16 ? 0 : -ENOTSUP;
	}
	if (strcmp(env, "amx") == 0) {
		*kind = AZ_CPU_GEMM_AMX;
		return have_bf16 && az_amx_usable() ? 0 : -ENOTSUP;
	}
	return -EINVAL;
}

int az_cpu_gemm_packed(enum az_cpu_gemm kind)
{
	return kind == AZ_CPU_GEMM_AVX512 || kind == AZ_CPU_GEMM_BF16 || kind == AZ_CPU_GEMM_AMX;
}

int az_cpu_gemm_error(int err, char *buf, size_t len)
{
	const char *env = getenv("AZ_CPU_GEMM");

	if (err == -ENOTSUP && env && strcmp(env, "amx") == 0)
		return snprintf(buf, len, "AZ_CPU_GEMM=amx but this CPU or OS has no AMX bf16 tiles "
				"(AMX-BF16, Linux 5.16+); unset it or use bf16, avx512 or blas");
	if (err == -ENOTSUP && env && strcmp(env, "bf16") == 0)
		return snprintf(buf, len, "AZ_CPU_GEMM=bf16 but this CPU has no AVX512_BF16 (with "
				"AVX-512F); unset it or use avx512 or blas");
	if (err == -ENOTSUP)
		return snprintf(buf, len, "AZ_CPU_GEMM=avx512 but this CPU has no AVX-512F; unset "
				"it or use blas");
	return snprintf(buf, len, "AZ_CPU_GEMM='%s': must be auto, fp32, blas, avx512, bf16 or amx "
			"(or unset: auto)", env ? env : "");
}

const char *az_cpu_gemm_name(enum az_cpu_gemm kind)
{
	return kind == AZ_CPU_GEMM_AMX	   ? "amx"
	       : kind == AZ_CPU_GEMM_BF16   ? "bf16"
	       : kind == AZ_CPU_GEMM_AVX512 ? "avx512"
					    : "blas";
}

/* Floats of one packed matrix, rounded up to a 64-byte multiple (16 floats). */
static size_t mat_floats(uint32_t out, uint32_t in)
{
	return panels(out) * in * AZ_PACKED_PANEL; /* a multiple of 32 */
}

/* The weight matrices of arch a in az_model_tensor() order; fills mats (when not NULL) and
 * returns their count. */
static uint32_t list_mats(const struct az_arch *a, struct az_packed_mat *mats)
{
	uint32_t n = 0, count = az_model_tensor_count(a);

	for (uint32_t i = 0; i < count; i++) {
		struct az_tensor t;

		if (az_model_tensor(a, i, &t) || t.ndim < 2)
			continue;
		if (mats) {
			mats[n].offset = t.offset;
			mats[n].out = t.rows;
			mats[n].in = t.cols;
			mats[n].conv_c = t.ndim == 4 && t.shape[2] == 3 && t.shape[3] == 3
						 ? t.shape[1] : 0;
		}
		n++;
	}
	return n;
}

/* Column pairs per panel row of a bf16-packed matrix of `in` inputs: ceil(in / 2), rounded up to
 * whole AMX tiles (16 pairs) for amx. */
static uint32_t panel_pairs(uint32_t in, int amx)
{
	size_t np = pairs(in);

	return (uint32_t)(amx ? (np + AZ_AMX_PAIRS - 1) / AZ_AMX_PAIRS * AZ_AMX_PAIRS : np);
}

/* uint16 entries of one bf16-packed matrix: 64 a column pair and panel (128 bytes). */
static size_t mat_bf16(uint32_t out, uint32_t np)
{
	return panels(out) * np * 2 * AZ_PACKED_PANEL;
}

/* az_packed_alloc() for fp32 panels (bf16 0), bf16 ones (bf16 1: w stays NULL) or bf16 ones for
 * AMX tiles (bf16 2: AZ_CPU_GEMM_AMX; matrices of more than AZ_AMX_MAX_IN inputs stay on the
 * AVX512_BF16 kernel). */
static int alloc_as(const struct az_arch *a, int bf16, struct az_packed *pk)
{
	uint32_t n = list_mats(a, NULL);
	size_t total = 0;

	memset(pk, 0, sizeof(*pk));
	pk->mats = calloc(n ? n : 1, sizeof(*pk->mats));
	if (!pk->mats)
		return -ENOMEM;
	pk->n = list_mats(a, pk->mats);
	for (uint32_t i = 0; i < pk->n; i++) {
		struct az_packed_mat *pm = &pk->mats[i];

		pm->amx = (uint8_t)(bf16 == 2 && pm->in <= AZ_AMX_MAX_IN);
		pm->np = panel_pairs(pm->in, pm->amx);
		total += bf16 ? mat_bf16(pm->out, pm->np) : mat_floats(pm->out, pm->in);
	}
	if (bf16)
		pk->bbuf = aligned_alloc(128, (total ? total : 64) * sizeof(uint16_t));
	else
		pk->buf = aligned_alloc(64, (total ? total : 16) * sizeof(float));
	if (bf16 ? !pk->bbuf : !pk->buf) {
		az_packed_destroy(pk);
		return -ENOMEM;
	}
	float *p = pk->buf;
	uint16_t *q = pk->bbuf;

	for (uint32_t i = 0; i < pk->n; i++) {
		struct az_packed_mat *pm = &pk->mats[i];

		if (bf16) {
			pm->wb = q;
			q += mat_bf16(pm->out, pm->np);
		} else {
			pm->w = p;
			p += mat_floats(pm->out, pm->in);
		}
	}
	return 0;
}

int az_packed_create(const struct az_model *m, enum az_cpu_gemm kind, struct az_packed *pk)
{
	int rc = alloc_as(&m->arch, kind == AZ_CPU_GEMM_AMX ? 2 : kind == AZ_CPU_GEMM_BF16, pk);

	if (rc == 0)
		az_packed_update(m, pk);
	return rc;
}

int az_packed_alloc(const struct az_arch *a, struct az_packed *pk)
{
	return alloc_as(a, 0, pk);
}

/* The source column of packed column k: itself for a dense layer; for a 3x3 convolution of C
 * channels (tap-major packing, column t * C + c), the tensor's column c * 9 + t. */
static size_t source_col(size_t C, size_t k)
{
	return C ? k % C * 9 + k / C : k;
}

/* f rounded to the nearest bf16, ties to even (the rounding of VCVTNE2PS2BF16, which the
 * kernel applies to x); a NaN stays a (quiet) NaN. */
static uint16_t to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* pm->wb from the matrix whose entry (j, k) is src[j * rs + k * cs], columns in pack_cols()'s
 * order (tap-major for a convolution). */
static void pack_bf16(struct az_packed_mat *pm, const float *src, size_t rs, size_t cs)
{
	size_t in = pm->in, C = pm->conv_c, np = pm->np;

	for (size_t p = 0; p < panels(pm->out); p++)
		for (size_t q = 0; q < np; q++)
			for (size_t j = 0; j < AZ_PACKED_PANEL; j++)
				for (size_t e = 0; e < 2; e++) {
					size_t row = p * AZ_PACKED_PANEL + j, k = 2 * q + e;
					float v = row < pm->out && k < in
							  ? src[row * rs + source_col(C, k) * cs]
							  : 0.0f;

					pm->wb[((p * np + q) * 2 + j / 16) * AZ_PACKED_PANEL +
					       2 * (j % 16) + e] = to_bf16(v);
				}
}

/* pm->w from the matrix whose entry (j, k) is src[j * rs + k * cs]; with pm->conv_c = C, packed
 * column k = t * C + c (tap-major) reads the tensor's column c * 9 + t. */
static void pack_cols(struct az_packed_mat *pm, const float *src, size_t rs, size_t cs)
{
	size_t in = pm->in, C = pm->conv_c;

	for (size_t p = 0; p < panels(pm->out); p++)
		for (size_t k = 0; k < in; k++) {
			float *dst = pm->w + (p * in + k) * AZ_PACKED_PANEL;
			size_t from = source_col(C, k);

			for (size_t j = 0; j < AZ_PACKED_PANEL; j++) {
				size_t row = p * AZ_PACKED_PANEL + j;

				dst[j] = row < pm->out ? src[row * rs + from * cs] : 0.0f;
			}
		}
}

void az_packed_update(const struct az_model *m, struct az_packed *pk)
{
	for (uint32_t i = 0; i < pk->n; i++) {
		struct az_packed_mat *pm = &pk->mats[i];

		if (pm->wb)
			pack_bf16(pm, m->params + pm->offset, pm->in, 1);
		else
			pack_cols(pm, m->params + pm->offset, pm->in, 1);
	}
}

size_t az_packed_conv3_pad_words(const struct az_packed_mat *pm, uint32_t samples,
				 uint32_t height, uint32_t width)
{
	size_t cell = pm->wb ? pm->conv_c / 2 : pm->conv_c; /* bf16 pairs, or floats */

	return (size_t)samples * (height + 2) * (width + 2) * cell;
}

size_t az_packed_floats(uint32_t out, uint32_t in)
{
	return mat_floats(out, in);
}

void az_packed_pack(struct az_packed_mat *pm, const float *src, size_t rs, size_t cs)
{
	pm->conv_c = 0;
	pm->wb = NULL;
	pm->amx = 0;
	pm->np = 0;
	pack_cols(pm, src, rs, cs);
}

void az_packed_destroy(struct az_packed *pk)
{
	if (!pk)
		return;
	free(pk->buf);
	free(pk->bbuf);
	free(pk->mats);
	memset(pk, 0, sizeof(*pk));
}

const struct az_packed_mat *az_packed_find(const struct az_packed *pk, size_t offset)
{
	for (uint32_t i = 0; pk && i < pk->n; i++)
		if (pk->mats[i].offset == offset)
			return &pk->mats[i];
	return NULL;
}
