/* SPDX-License-Identifier: MIT */
/* The simulated-annealing adjudicator of TANGLED.md 3.3, after D-Wave's neal settings for the
 * game: h = 0, J from the edge labels, a geometric schedule of `sweeps` betas from
 * beta_min = 1/sqrt(sum J^2 + 0.001) to beta_max = 3 (float32, as numpy.geomspace), one sweep
 * per beta of N single-spin Metropolis updates on uniformly random vertices, every read from
 * uniformly random spins. C = mean of s s^T over the reads, zero diagonal (not connected).
 * This file holds the scalar reference path (xoshiro256** seeded from the caller's seed) and
 * the choice between it and the vector paths of tangled_anneal_simd.c (AZ_TANGLED_ANNEAL). */
#include "games/tangled/tangled_impl.h"

#include "base/rng.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXV AZ_TANGLED_MAX_VERTICES

static const char *const path_names[TG_ANNEAL_PATHS] = { "auto", "scalar", "avx2", "avx512" };

int tg_anneal_path_parse(const char *text, enum tg_anneal_path *path)
{
	for (int i = 0; i < TG_ANNEAL_PATHS; i++)
		if (text && strcmp(text, path_names[i]) == 0) {
			*path = (enum tg_anneal_path)i;
			return 0;
		}
	return -EINVAL;
}

const char *tg_anneal_path_name(enum tg_anneal_path path)
{
	return (unsigned)path < TG_ANNEAL_PATHS ? path_names[path] : "?";
}

int tg_anneal_path_supported(enum tg_anneal_path path)
{
	switch (path) {
	case TG_ANNEAL_AUTO:
	case TG_ANNEAL_SCALAR:
		return 1;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	case TG_ANNEAL_AVX2:
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
	case TG_ANNEAL_AVX512:
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("bmi2");
#endif
	default:
		return 0;
	}
}

int tg_anneal_path_effective(enum tg_anneal_path path, int n)
{
	if (path == TG_ANNEAL_AUTO) {
		const char *env = getenv("AZ_TANGLED_ANNEAL");

		if (env && *env && tg_anneal_path_parse(env, &path))
			return -EINVAL;
	}
	if (path == TG_ANNEAL_AUTO)
		path = tg_anneal_path_supported(TG_ANNEAL_AVX512) ? TG_ANNEAL_AVX512 :
		       tg_anneal_path_supported(TG_ANNEAL_AVX2)   ? TG_ANNEAL_AVX2 :
								    TG_ANNEAL_SCALAR;
	if ((unsigned)path >= TG_ANNEAL_PATHS)
		return -EINVAL;
	if (path != TG_ANNEAL_SCALAR && n > TG_ANNEAL_SIMD_MAX_N)
		path = TG_ANNEAL_SCALAR;
	return (int)path;
}

double tg_anneal_beta(const struct tg_anneal_params *p, double sumj2, uint32_t t)
{
	double b0 = p->beta_min > 0.0 ? p->beta_min : 1.0 / sqrt(sumj2 + 0.001), b1 = p->beta_max;
	double beta = p->sweeps == 1 ? b0 :
		      exp(log(b0) + (log(b1) - log(b0)) * (double)t / (p->sweeps - 1));

	return (double)(float)beta; /* numpy.geomspace(..., dtype=float32) */
}

static int anneal_scalar(const struct az_tangled_graph *g, const uint8_t *labels,
			 const struct tg_anneal_params *p, double *corr)
{
	int n = g->n, deg[MAXV] = { 0 }, maxdeg = 0;
	uint8_t nb[MAXV][MAXV];
	int8_t jn[MAXV][MAXV], s[MAXV];
	double sumj2 = 0.0, *accept = NULL;
	int64_t *acc = NULL;
	struct az_rng r;
	int ret = 0;

	for (int k = 0; k < g->e; k++) {
		int j = labels[k] == 2 ? -1 : labels[k] == 3 ? 1 : 0, u = g->eu[k], v = g->ev[k];

		if (!j)
			continue;
		sumj2 += 1.0;
		nb[u][deg[u]] = (uint8_t)v;
		jn[u][deg[u]++] = (int8_t)j;
		nb[v][deg[v]] = (uint8_t)u;
		jn[v][deg[v]++] = (int8_t)j;
	}
	for (int v = 0; v < n; v++)
		if (deg[v] > maxdeg)
			maxdeg = deg[v];
	/* accept[sweep * (maxdeg + 1) + q] = exp(-beta * 2q): the Metropolis probability of a
	 * flip with dE = 2q > 0 (dE is even, |dE| <= 2 maxdeg) */
	accept = malloc(sizeof(double) * p->sweeps * (size_t)(maxdeg + 1));
	acc = calloc((size_t)n * (size_t)n, sizeof(int64_t));
	if (!accept || !acc) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t t = 0; t < p->sweeps; t++) {
		double beta = tg_anneal_beta(p, sumj2, t);

		for (int q = 0; q <= maxdeg; q++)
			accept[t * (size_t)(maxdeg + 1) + (size_t)q] = exp(-beta * 2.0 * q);
	}
	az_rng_seed(&r, p->seed);
	for (uint32_t read = 0; read < p->reads; read++) {
		for (int v = 0; v < n; v++)
			s[v] = (az_rng_next(&r) >> 63) ? 1 : -1;
		for (uint32_t t = 0; t < p->sweeps; t++) {
			const double *acc_t = accept + t * (size_t)(maxdeg + 1);

			for (int step = 0; step < n; step++) {
				int v = (int)az_rng_below(&r, (uint32_t)n), h = 0, q;

				for (int k = 0; k < deg[v]; k++)
					h += jn[v][k] * s[nb[v][k]];
				/* flipping v changes E = sum J s s by dE = -2 s_v h_v = 2q */
				q = -s[v] * h;
				if (q <= 0 || az_rng_uniform(&r) < acc_t[q])
					s[v] = (int8_t)-s[v];
			}
		}
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				acc[i * n + j] += s[i] * s[j];
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			double c = (double)acc[i * n + j] / (double)p->reads;

			corr[i * n + j] = c;
			corr[j * n + i] = c;
		}
out:
	free(accept);
	free(acc);
	return ret;
}

/* A vector path: agreement counts from the kernel, C_ij = (agree - disagree) / reads. */
static int anneal_simd(const struct az_tangled_graph *g, const uint8_t *labels,
		       const struct tg_anneal_params *p, enum tg_anneal_path path, double *corr)
{
	struct tg_anneal_plan pl;
	uint64_t *agree;
	int n = g->n, ret;

	agree = calloc((size_t)n * (size_t)n, sizeof(uint64_t));
	if (!agree)
		return -ENOMEM;
	ret = tg_anneal_plan_init(&pl, g, labels, p);
	if (ret)
		goto out;
	if (path == TG_ANNEAL_AVX512)
		tg_anneal_run_avx512(&pl, agree);
	else
		tg_anneal_run_avx2(&pl, agree);
	tg_anneal_plan_fini(&pl);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			double c = (2.0 * (double)agree[i * n + j] - (double)p->reads) /
				   (double)p->reads;

			corr[i * n + j] = c;
			corr[j * n + i] = c;
		}
out:
	free(agree);
	return ret;
}

int tg_anneal_correlations(const struct az_tangled_graph *g, const uint8_t *labels,
			   const struct tg_anneal_params *p, double *corr)
{
	int path = tg_anneal_path_effective(p->path, g->n);

	if (!p->reads || !p->sweeps || !(p->beta_max > 0.0) || path < 0 || g->n > MAXV)
		return -EINVAL;
	if (!tg_anneal_path_supported((enum tg_anneal_path)path))
		return -ENODEV;
	memset(corr, 0, sizeof(double) * (size_t)g->n * (size_t)g->n);
	if (path == TG_ANNEAL_SCALAR)
		return anneal_scalar(g, labels, p, corr);
	return anneal_simd(g, labels, p, (enum tg_anneal_path)path, corr);
}
