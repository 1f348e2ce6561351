/* SPDX-License-Identifier: MIT */
/* The simulated-annealing adjudicator of TANGLED.md 3.3, after D-Wave's neal settings for the
 * game: h = 0, J from the edge labels, a geometric schedule of `sweeps` betas from
 * beta_min = 1/sqrt(sum J^2 + 0.001) to beta_max = 3 (float32, as numpy.geomspace), one sweep
 * per beta of N single-spin Metropolis updates on uniformly random vertices, every read from
 * uniformly random spins. C = mean of s s^T over the reads, zero diagonal (not connected).
 * Reproducible: xoshiro256** seeded from the caller's seed. */
#include "games/tangled/tangled_impl.h"

#include "base/rng.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXV AZ_TANGLED_MAX_VERTICES

int tg_anneal_correlations(const struct az_tangled_graph *g, const uint8_t *labels,
			   const struct tg_anneal_params *p, double *corr)
{
	int n = g->n, deg[MAXV] = { 0 }, maxdeg = 0;
	uint8_t nb[MAXV][MAXV];
	int8_t jn[MAXV][MAXV], s[MAXV];
	double sumj2 = 0.0, b0, b1, *accept = NULL;
	int64_t *acc = NULL;
	struct az_rng r;
	int ret = 0;

	if (!p->reads || !p->sweeps || !(p->beta_max > 0.0))
		return -EINVAL;
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
	b0 = p->beta_min > 0.0 ? p->beta_min : 1.0 / sqrt(sumj2 + 0.001);
	b1 = p->beta_max;
	/* accept[sweep * (maxdeg + 1) + q] = exp(-beta * 2q): the Metropolis probability of a
	 * flip with dE = 2q > 0 (dE is even, |dE| <= 2 maxdeg) */
	accept = malloc(sizeof(double) * p->sweeps * (size_t)(maxdeg + 1));
	acc = calloc((size_t)n * (size_t)n, sizeof(int64_t));
	if (!accept || !acc) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint32_t t = 0; t < p->sweeps; t++) {
		double beta = p->sweeps == 1 ? b0 :
			      exp(log(b0) + (log(b1) - log(b0)) * (double)t / (p->sweeps - 1));

		beta = (double)(float)beta; /* numpy.geomspace(..., dtype=float32) */
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
	memset(corr, 0, sizeof(double) * (size_t)n * (size_t)n);
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
