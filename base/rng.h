/* SPDX-License-Identifier: MIT */
/* Small deterministic RNG (splitmix64 seeding + xoshiro256**) and the samplers search and training
 * need: uniform, normal, gamma and Dirichlet. Header-only; process-local state, not thread-safe. */
#ifndef AZ_RNG_H
#define AZ_RNG_H

#include <math.h>
#include <stdint.h>

struct az_rng {
	uint64_t s[4];
};

/* The SplitMix64 finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014): a bijection of 64-bit words that spreads every input bit over the
 * output. Pure; any thread. */
static inline uint64_t az_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* splitmix64 (Steele, Lea, Flood 2014), used only to expand a 64-bit seed: advances *x by the
 * golden-ratio increment and returns the finalised value. */
static inline uint64_t az_rng_splitmix(uint64_t *x)
{
	return az_mix64(*x += 0x9e3779b97f4a7c15ULL);
}

static inline void az_rng_seed(struct az_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = az_rng_splitmix(&seed);
}

static inline uint64_t az_rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** 1.0 (Blackman and Vigna 2018). */
static inline uint64_t az_rng_next(struct az_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = az_rng_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = az_rng_rotl(s[3], 45);
	return out;
}

/* Uniform double in [0, 1) with 53 random bits. */
static inline double az_rng_uniform(struct az_rng *r)
{
	return (double)(az_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n), n > 0 (multiply-shift; bias below 2^-32 for n < 2^32). */
static inline uint32_t az_rng_below(struct az_rng *r, uint32_t n)
{
	return (uint32_t)(((az_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Standard normal by Box-Muller. */
static inline double az_rng_normal(struct az_rng *r)
{
	double u1 = az_rng_uniform(r), u2 = az_rng_uniform(r);
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Gamma(shape, 1) by Marsaglia and Tsang (2000), "A simple method for generating gamma
 * variables"; shape < 1 uses the boost Gamma(a) = Gamma(a + 1) * U^(1/a). */
static inline double az_rng_gamma(struct az_rng *r, double shape)
{
	if (shape < 1.0) {
		double u = az_rng_uniform(r);
		return az_rng_gamma(r, shape + 1.0) * pow(u < 1e-300 ? 1e-300 : u, 1.0 / shape);
	}
	double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
	for (;;) {
		double x = az_rng_normal(r), v = 1.0 + c * x;
		if (v <= 0.0)
			continue;
		v = v * v * v;
		double u = az_rng_uniform(r);
		if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
			return d * v;
	}
}

/* Dirichlet(alpha, ..., alpha) over n entries into out[n] (sums to 1). */
static inline void az_rng_dirichlet(struct az_rng *r, double alpha, float *out, int n)
{
	double sum = 0.0;
	for (int i = 0; i < n; i++) {
		double g = az_rng_gamma(r, alpha);
		out[i] = (float)g;
		sum += g;
	}
	for (int i = 0; i < n; i++)
		out[i] = sum > 0.0 ? (float)(out[i] / sum) : 1.0f / (float)n;
}

#endif
