/* SPDX-License-Identifier: MIT */
/* The vector annealing kernel of tangled_anneal_simd.c, written once over a few vector macros
 * and compiled per instruction set: included only by tangled_anneal_simd.c (AVX2) and
 * tangled_anneal_avx512.c, after they define K_TARGET (the target attribute), K_FN(x) (name
 * suffix), KV (the vector type), K_LANES (16-bit lanes per register), K_W64 (64-bit lanes),
 * K_VECS (registers per block; a block holds at most 64 reads) and the V_ operations.
 *
 * One read per 16-bit lane: its spins are the lane's bits (1 = up). A step of a read draws a
 * vertex v (16 bits, exact by Lemire's rejection) and a 32-bit acceptance number u (16 bits
 * here, the low 16 only on a tie with the threshold), looks up v's neighbour masks with pshufb,
 * and counts the unsatisfied bonds of v by popcount (TANGLED.md 3.3: E = sum J s s):
 *   c = popcount((x ^ P_v) & A_v),  q = dE / 2 = x_v ? 2c - deg_v : deg_v - 2c,
 * accepting the flip iff u >= R[t][q] (R = 0 for q <= 0). Every lane has its own draws from
 * its own bits of a vectorised xoshiro256++ (Blackman and Vigna 2018), so reads stay
 * independent; the rare redraws (rejected vertex, tie) come from one scalar xoshiro256**. */

/* Four xoshiro256++ state words, each holding K_W64 independent generators. */
struct K_FN(rng) {
	KV s0, s1, s2, s3;
};

static inline __attribute__((target(K_TARGET))) KV K_FN(next)(struct K_FN(rng) *r)
{
	KV out = V_ADD64(V_ROTL64(V_ADD64(r->s0, r->s3), 23), r->s0);
	KV t = V_SLLI64(r->s1, 17);

	r->s2 = V_XOR(r->s2, r->s0);
	r->s3 = V_XOR(r->s3, r->s1);
	r->s1 = V_XOR(r->s1, r->s2);
	r->s0 = V_XOR(r->s0, r->s3);
	r->s2 = V_XOR(r->s2, t);
	r->s3 = V_ROTL64(r->s3, 45);
	return out;
}

/* Lanes whose vertex draw hit the rejection zone draw again (from the scalar stream). */
static void K_FN(redraw)(const struct tg_anneal_plan *pl, struct az_rng *slow, uint16_t *v,
			 const uint16_t *lo)
{
	for (int i = 0; i < K_LANES; i++) {
		uint32_t m;

		if (lo[i] >= pl->reject)
			continue;
		do
			m = (uint32_t)(az_rng_next(slow) >> 48) * (uint32_t)pl->n;
		while ((m & 0xffffu) < pl->reject);
		v[i] = (uint16_t)(m >> 16);
	}
}

/* Lanes whose high 16 bits tied with R_hi decide on 16 fresh low bits against R_lo. */
static void K_FN(untie)(const uint16_t *rl, struct az_rng *slow, uint16_t *acc,
			const uint16_t *tie, const uint16_t *q)
{
	for (int i = 0; i < K_LANES; i++)
		if (tie[i]) {
			uint16_t u = (uint16_t)(az_rng_next(slow) >> 48);
			int8_t qi = (int8_t)(q[i] & 0xff); /* q[i] = q * 257 */

			acc[i] = u >= (qi > 0 ? rl[qi] : 0) ? 0xffff : 0;
		}
}

#define K_BLOCK (K_LANES * K_VECS) /* reads per block: at most 64, a bit each in a slice */
_Static_assert(K_BLOCK <= 64, "a block's reads must fit the 64-bit slices");

#define LUT16(lo, hi, idx) V_BLENDHI(V_SHUF(lo, idx), V_SHUF(hi, idx))

/* One Metropolis step of every lane of the block x[K_VECS] in sweep t. The registers advance
 * stage by stage together: their independent dependency chains sit side by side in the
 * instruction stream, and the two rare slow paths are tested once per block. */
static inline __attribute__((target(K_TARGET))) void K_FN(step)(const struct tg_anneal_plan *pl,
							       struct K_FN(rng) *r,
							       struct az_rng *slow, uint32_t t,
							       KV *x, KV trl, KV trh)
{
	const KV nv = V_SET16((short)pl->n), k257 = V_SET16(257), x0f = V_SET16(0x0f0f);
	const KV zero = V_SET16(0), rej = V_SET16((short)pl->reject);
	static const uint8_t nib[16] = { 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4 };
	static const uint8_t swapb[16] = { 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14 };
	const KV swap = V_TABLE(swapb);
	KV u[K_VECS], v[K_VECS], lo[K_VECS], b[K_VECS], q[K_VECS], acc[K_VECS], tie[K_VECS];
	KV any = zero;
	int k;

	for (k = 0; k < K_VECS; k++) {
		KV r1 = K_FN(next)(r);

		u[k] = K_FN(next)(r);
		v[k] = V_MULHI(r1, nv);
		lo[k] = V_MULLO(r1, nv);
		any = V_OR(any, V_SUBS(rej, lo[k])); /* lo < reject in some lane */
	}
	if (V_ANY(any))
		for (k = 0; k < K_VECS; k++) {
			uint16_t va[K_LANES], la[K_LANES];

			V_STORE(va, v[k]);
			V_STORE(la, lo[k]);
			K_FN(redraw)(pl, slow, va, la);
			v[k] = V_LOAD(va);
		}
	any = zero;
	for (k = 0; k < K_VECS; k++) {
		KV vv = V_MULLO(v[k], k257); /* v in both bytes: pshufb index of either byte */
		KV a = LUT16(V_TABLE(pl->alo), V_TABLE(pl->ahi), vv);
		KV pm = LUT16(V_TABLE(pl->plo), V_TABLE(pl->phi), vv);
		KV y = V_AND(V_XOR(x[k], pm), a), cb, c, m, z, big;

		b[k] = LUT16(V_TABLE(pl->blo), V_TABLE(pl->bhi), vv);
		/* per-byte popcounts, then their sum c in both bytes: c * 257 */
		cb = V_ADD16(V_SHUF(V_TABLE(nib), V_AND(y, x0f)),
			     V_SHUF(V_TABLE(nib), V_AND(V_SRLI16(y, 4), x0f)));
		c = V_ADD16(cb, V_SHUF(cb, swap));
		m = V_SUB16(V_ADD16(c, c), V_SHUF(V_TABLE(pl->deg), vv)); /* (2c - deg) * 257 */
		z = V_CMPEQ16(V_AND(x[k], b[k]), zero); /* spin v down */
		/* q * 257 = -m where z. q < 0 has bit 7 set in both bytes of q * 257, which pshufb
		 * reads as R = 0; q >= 0 has q in both */
		q[k] = V_SUB16(V_XOR(m, z), z);
		big = LUT16(trl, trh, q[k]);
		acc[k] = V_CMPEQ16(V_MAXU16(u[k], big), u[k]);
		tie[k] = V_CMPEQ16(u[k], big);
		any = V_OR(any, tie[k]);
	}
	if (V_ANY(any))
		for (k = 0; k < K_VECS; k++) {
			uint16_t aa[K_LANES], ta[K_LANES], qa[K_LANES];

			V_STORE(aa, acc[k]);
			V_STORE(ta, tie[k]);
			V_STORE(qa, q[k]);
			K_FN(untie)(pl->rl[t], slow, aa, ta, qa);
			acc[k] = V_LOAD(aa);
		}
	for (k = 0; k < K_VECS; k++)
		x[k] = V_XOR(x[k], V_AND(acc[k], b[k]));
}

/* Add the agreements of one block (valid = mask of the block's reads that count). */
static inline __attribute__((target(K_TARGET))) void K_FN(count)(const struct tg_anneal_plan *pl,
								const KV *x, uint64_t valid,
								uint64_t *agree)
{
	uint64_t sl[TG_ANNEAL_SIMD_MAX_N];
	int n = pl->n;

	for (int v = 0; v < n; v++) {
		sl[v] = 0;
		for (int k = 0; k < K_VECS; k++)
			sl[v] |= (uint64_t)V_SIGNMASK16(V_SLLI16(x[k], 15 - v)) << (k * K_LANES);
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			agree[i * n + j] += (uint64_t)__builtin_popcountll(~(sl[i] ^ sl[j]) & valid);
}

__attribute__((target(K_TARGET))) void K_FN(tg_anneal_run)(const struct tg_anneal_plan *pl,
							   uint64_t *agree)
{
	uint64_t seeds[4 * K_W64], x0 = pl->seed;
	struct K_FN(rng) r;
	struct az_rng slow;

	for (int i = 0; i < 4 * K_W64; i++)
		seeds[i] = az_rng_splitmix(&x0);
	r.s0 = V_LOAD(seeds);
	r.s1 = V_LOAD(seeds + K_W64);
	r.s2 = V_LOAD(seeds + 2 * K_W64);
	r.s3 = V_LOAD(seeds + 3 * K_W64);
	az_rng_seed(&slow, x0); /* continues the splitmix sequence: a separate stream */
	for (uint64_t base = 0; base < pl->reads; base += K_BLOCK) {
		uint64_t left = pl->reads - base;
		KV x[K_VECS];

		for (int k = 0; k < K_VECS; k++)
			x[k] = V_AND(K_FN(next)(&r), V_SET16((short)pl->nmask));
		for (uint32_t t = 0; t < pl->sweeps; t++) {
			const KV trl = V_TABLE(pl->rhlo[t]), trh = V_TABLE(pl->rhhi[t]);

			for (int s = 0; s < pl->n; s++)
				K_FN(step)(pl, &r, &slow, t, x, trl, trh);
		}
		K_FN(count)(pl, x, left >= K_BLOCK ? ~0ull >> (64 - K_BLOCK) : (1ull << left) - 1,
			    agree);
	}
}

#undef LUT16
#undef K_BLOCK
