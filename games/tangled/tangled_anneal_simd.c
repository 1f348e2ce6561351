/* SPDX-License-Identifier: MIT */
/* The vector paths of the simulated-annealing adjudicator (TANGLED.md 3.3): the tables they
 * share (tg_anneal_plan) and the AVX2 instance of tangled_anneal_kernel.h, 16 reads per
 * register, 64 per block. Compiled with target attributes only, run after
 * tg_anneal_path_supported() says so; AZ_TANGLED_ANNEAL picks the path (tangled.h). */
#include "games/tangled/tangled_impl.h"

#include "base/rng.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int tg_anneal_plan_init(struct tg_anneal_plan *pl, const struct az_tangled_graph *g,
			const uint8_t *labels, const struct tg_anneal_params *p)
{
	uint16_t a[TG_ANNEAL_SIMD_MAX_N] = { 0 }, pm[TG_ANNEAL_SIMD_MAX_N] = { 0 };
	double sumj2 = 0.0;
	int n = g->n;

	memset(pl, 0, sizeof(*pl));
	if (n < 1 || n > TG_ANNEAL_SIMD_MAX_N || !p->sweeps)
		return -EINVAL;
	for (int k = 0; k < g->e; k++) {
		int j = labels[k] == 2 ? -1 : labels[k] == 3 ? 1 : 0, u = g->eu[k], v = g->ev[k];

		if (!j)
			continue;
		sumj2 += 1.0;
		a[u] |= (uint16_t)(1u << v);
		a[v] |= (uint16_t)(1u << u);
		if (j > 0) {
			pm[u] |= (uint16_t)(1u << v);
			pm[v] |= (uint16_t)(1u << u);
		}
	}
	pl->n = n;
	pl->reads = p->reads;
	pl->sweeps = p->sweeps;
	pl->seed = p->seed;
	pl->nmask = (uint16_t)((1u << n) - 1);
	pl->reject = (uint16_t)(65536u % (unsigned)n);
	for (int v = 0; v < n; v++) {
		uint16_t b = (uint16_t)(1u << v);

		pl->alo[v] = (uint8_t)a[v];
		pl->ahi[v] = (uint8_t)(a[v] >> 8);
		pl->plo[v] = (uint8_t)pm[v];
		pl->phi[v] = (uint8_t)(pm[v] >> 8);
		pl->blo[v] = (uint8_t)b;
		pl->bhi[v] = (uint8_t)(b >> 8);
		pl->deg[v] = (uint8_t)__builtin_popcount(a[v]);
	}
	pl->rhlo = malloc(sizeof(*pl->rhlo) * p->sweeps);
	pl->rhhi = malloc(sizeof(*pl->rhhi) * p->sweeps);
	pl->rl = malloc(sizeof(*pl->rl) * p->sweeps);
	if (!pl->rhlo || !pl->rhhi || !pl->rl) {
		tg_anneal_plan_fini(pl);
		return -ENOMEM;
	}
	for (uint32_t t = 0; t < p->sweeps; t++) {
		double beta = tg_anneal_beta(p, sumj2, t);

		for (int q = 0; q < 16; q++) {
			/* P(u >= R) = 1 - R / 2^32 = exp(-2 beta q) to 2^-33 (2^-32 where the
			 * clamp to 32 bits bites, probabilities below 2^-33) */
			uint64_t big = 0;

			if (q > 0) {
				double tp = ldexp(exp(-2.0 * beta * q), 32);

				big = (1ull << 32) - (uint64_t)llround(tp);
				if (big > 0xffffffffull)
					big = 0xffffffffull;
			}
			pl->rhlo[t][q] = (uint8_t)(big >> 16);
			pl->rhhi[t][q] = (uint8_t)(big >> 24);
			pl->rl[t][q] = (uint16_t)big;
		}
	}
	return 0;
}

void tg_anneal_plan_fini(struct tg_anneal_plan *pl)
{
	free(pl->rhlo);
	free(pl->rhhi);
	free(pl->rl);
	pl->rhlo = pl->rhhi = NULL;
	pl->rl = NULL;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define K_TARGET "avx2,bmi2,popcnt"
#define K_FN(x) x##_avx2
#define KV __m256i
#define K_LANES 16
#define K_W64 4
#define K_VECS 4
#define V_SET16(x) _mm256_set1_epi16(x)
#define V_LOAD(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define V_STORE(p, x) _mm256_storeu_si256((__m256i *)(void *)(p), x)
#define V_TABLE(p) _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(p)))
#define V_AND(a, b) _mm256_and_si256(a, b)
#define V_XOR(a, b) _mm256_xor_si256(a, b)
#define V_OR(a, b) _mm256_or_si256(a, b)
#define V_ADD16(a, b) _mm256_add_epi16(a, b)
#define V_SUB16(a, b) _mm256_sub_epi16(a, b)
#define V_SRLI16(a, k) _mm256_srli_epi16(a, k)
#define V_SLLI16(a, k) _mm256_slli_epi16(a, k)
#define V_MULHI(a, b) _mm256_mulhi_epu16(a, b)
#define V_MULLO(a, b) _mm256_mullo_epi16(a, b)
#define V_SUBS(a, b) _mm256_subs_epu16(a, b)
#define V_MAXU16(a, b) _mm256_max_epu16(a, b)
#define V_CMPEQ16(a, b) _mm256_cmpeq_epi16(a, b)
#define V_SHUF(t, i) _mm256_shuffle_epi8(t, i)
#define V_BLENDHI(a, b) _mm256_blendv_epi8(a, b, _mm256_set1_epi16((short)0xff00))
#define V_ANY(a) (!_mm256_testz_si256(a, a))
#define V_SIGNMASK16(a) _pext_u32((uint32_t)_mm256_movemask_epi8(a), 0xaaaaaaaau)
#define V_ADD64(a, b) _mm256_add_epi64(a, b)
#define V_SLLI64(a, k) _mm256_slli_epi64(a, k)
#define V_ROTL64(a, k) _mm256_or_si256(_mm256_slli_epi64(a, k), _mm256_srli_epi64(a, 64 - (k)))

#include "games/tangled/tangled_anneal_kernel.h"

#else
#include "base/az_assert.h"

void tg_anneal_run_avx2(const struct tg_anneal_plan *pl, uint64_t *agree)
{
	(void)pl;
	(void)agree;
	AZ_ASSERT(!"AVX2 annealing path on a CPU without it");
}
#endif
