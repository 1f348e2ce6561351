/* SPDX-License-Identifier: MIT */
/* The AVX-512 (F + BW) instance of tangled_anneal_kernel.h: 32 reads per register, 64 per
 * block. Compiled with target attributes only (no global -mavx512 flag) and run only when
 * tg_anneal_path_supported(TG_ANNEAL_AVX512) says the CPU has it. */
#include "games/tangled/tangled_impl.h"

#include "base/rng.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define K_TARGET "avx512f,avx512bw,bmi2,popcnt"
#define K_FN(x) x##_avx512
#define KV __m512i
#define K_LANES 32
#define K_W64 8
#define K_VECS 2
#define V_SET16(x) _mm512_set1_epi16(x)
#define V_LOAD(p) _mm512_loadu_si512((const void *)(p))
#define V_STORE(p, x) _mm512_storeu_si512((void *)(p), x)
#define V_TABLE(p) _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define V_AND(a, b) _mm512_and_si512(a, b)
#define V_XOR(a, b) _mm512_xor_si512(a, b)
#define V_OR(a, b) _mm512_or_si512(a, b)
#define V_ADD16(a, b) _mm512_add_epi16(a, b)
#define V_SUB16(a, b) _mm512_sub_epi16(a, b)
#define V_SRLI16(a, k) _mm512_srli_epi16(a, k)
#define V_SLLI16(a, k) _mm512_slli_epi16(a, k)
#define V_MULHI(a, b) _mm512_mulhi_epu16(a, b)
#define V_MULLO(a, b) _mm512_mullo_epi16(a, b)
#define V_SUBS(a, b) _mm512_subs_epu16(a, b)
#define V_MAXU16(a, b) _mm512_max_epu16(a, b)
#define V_CMPEQ16(a, b) _mm512_movm_epi16(_mm512_cmpeq_epi16_mask(a, b))
#define V_SHUF(t, i) _mm512_shuffle_epi8(t, i)
#define V_BLENDHI(a, b) _mm512_mask_blend_epi8(0xaaaaaaaaaaaaaaaaull, a, b)
#define V_ANY(a) (_mm512_test_epi16_mask(a, a) != 0)
#define V_SIGNMASK16(a) ((uint32_t)_mm512_movepi16_mask(a))
#define V_ADD64(a, b) _mm512_add_epi64(a, b)
#define V_SLLI64(a, k) _mm512_slli_epi64(a, k)
#define V_ROTL64(a, k) _mm512_rol_epi64(a, k)

#include "games/tangled/tangled_anneal_kernel.h"

#else
#include "base/az_assert.h"

void tg_anneal_run_avx512(const struct tg_anneal_plan *pl, uint64_t *agree)
{
	(void)pl;
	(void)agree;
	AZ_ASSERT(!"AVX-512 annealing path on a CPU without it");
}
#endif
