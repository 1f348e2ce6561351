/* SPDX-License-Identifier: MIT */
/* The Schrodinger adjudicator with a sparse structured propagator ("exact-krylov"): the same
 * step loop as the dense method (tangled_exact.c, which also explains the parity blocks), but H
 * is never formed. A matrix-vector product is the diagonal Ising energy plus N - 1 single spin
 * flips and the block's X_{N-1} term, O(N 2^(N-1)).
 *
 * - Propagation: psi <- exp(-i theta H) psi by a Lanczos (Krylov) expansion with full
 *   reorthogonalisation, stopped when the a-posteriori error estimate beta_{k+1} |(e^{-i theta
 *   T_k} e_1)_k| falls below KRYLOV_TOL; a step that does not converge within MAX_KRYLOV
 *   vectors is split in two halves.
 * - Gap l1 - l0 for the step control: Rayleigh-Ritz on a block Krylov space of each parity
 *   block, started from the previous step's lowest Ritz vectors (two in the even block, whose
 *   l0 and l1 matter, one in the odd block, whose lowest level is the other candidate for l1),
 *   plus a fresh pseudo-random vector every RANDOM_EVERY steps (so that levels of other
 *   symmetry sectors, which cross, are seen), grown until the residuals of those Ritz pairs
 *   are below RITZ_TOL. A block of two resolves a doubly degenerate lowest level, which a
 *   single-vector Lanczos cannot.
 * The first pass takes psi as the converged even-block ground Ritz vector. */
#include "games/tangled/tangled_impl.h"

#include <errno.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KRYLOV 40   /* propagation basis size before the step is split */
#define KRYLOV_TOL 1e-12
#define MAX_RITZ 48     /* Rayleigh-Ritz basis size */
#define RANDOM_EVERY 8 /* passes between fresh random start vectors */
#define RITZ_TOL 1e-6   /* residual norm of the lowest Ritz pairs, GHz */

struct krylov {
	int n;
	size_t m;
	double *diag;
	double delta, ebig;
	/* propagation */
	double *re, *im;          /* psi */
	double *qr, *qi;          /* MAX_KRYLOV + 1 basis vectors */
	double *wr;               /* scratch vector */
	/* Rayleigh-Ritz, per block */
	double *q;                /* MAX_RITZ basis vectors */
	double *hq;               /* H times each */
	double *ritz[2];          /* two lowest Ritz vectors of each block, 2 m each */
	int have_ritz;
	long steps;
	uint64_t rng;
};

/* y = H x on the even (odd = 0) or odd block. */
static void matvec(const struct krylov *k, int odd, const double *x, double *y)
{
	size_t top = k->m - 1;
	double d = k->delta;

	for (size_t a = 0; a < k->m; a++) {
		double s = k->ebig * k->diag[a] * x[a];

		for (int i = 0; i < k->n - 1; i++)
			s -= d * x[a ^ ((size_t)1 << i)];
		s += odd ? d * x[a ^ top] : -d * x[a ^ top];
		y[a] = s;
	}
}

static double dot(const double *a, const double *b, size_t m)
{
	double s = 0.0;

	for (size_t i = 0; i < m; i++)
		s += a[i] * b[i];
	return s;
}

static void axpy(double alpha, const double *x, double *y, size_t m)
{
	for (size_t i = 0; i < m; i++)
		y[i] += alpha * x[i];
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Orthonormalise v against the first nb columns of q (two Gram-Schmidt passes); appends it
 * and returns 1, or 0 when v lies (numerically) in their span. */
static int ortho_append(double *q, int nb, double *v, size_t m)
{
	double n0 = sqrt(dot(v, v, m)), n1 = n0;

	/* classical Gram-Schmidt, repeated when the norm dropped a lot (DGKS criterion) */
	for (int pass = 0; pass < 2; pass++) {
		double before = n1;

		for (int j = 0; j < nb; j++)
			axpy(-dot(q + (size_t)j * m, v, m), q + (size_t)j * m, v, m);
		n1 = sqrt(dot(v, v, m));
		if (n1 > 0.7 * before)
			break;
	}
	if (!(n1 > 1e-10 * n0) || n1 < 1e-200)
		return 0;
	for (size_t i = 0; i < m; i++)
		q[(size_t)nb * m + i] = v[i] / n1;
	return 1;
}

/* Append v (orthonormalised) and H v to the block basis, with the new column of T = Q^T H Q.
 * Returns 1 when appended, 0 when v was in the span already. */
static int ritz_append(struct krylov *k, int odd, int nb, double *v, double *t)
{
	size_t m = k->m;
	const double *hq;

	if (!ortho_append(k->q, nb, v, m))
		return 0;
	matvec(k, odd, k->q + (size_t)nb * m, k->hq + (size_t)nb * m);
	hq = k->hq + (size_t)nb * m;
	for (int i = 0; i <= nb; i++)
		t[i * MAX_RITZ + nb] = t[nb * MAX_RITZ + i] = dot(k->q + (size_t)i * m, hq, m);
	return 1;
}

/* Rayleigh-Ritz on the first nb basis vectors: eigenvalues ev, the nvec lowest Ritz vectors
 * into k->ritz[odd]; returns 1 when all their residuals are below RITZ_TOL, -EDOM. */
static int ritz_solve(struct krylov *k, int odd, int nb, int nvec, const double *t, double *ev)
{
	double z[MAX_RITZ * MAX_RITZ], *v = k->wr;
	size_t m = k->m;
	int done = 1;

	for (int i = 0; i < nb; i++)
		for (int j = 0; j < nb; j++)
			z[j * nb + i] = t[j * MAX_RITZ + i];
	if (LAPACKE_dsyev(LAPACK_COL_MAJOR, 'V', 'L', nb, z, nb, ev))
		return -EDOM;
	for (int r = 0; r < nvec && r < nb; r++) {
		double *y = k->ritz[odd] + (size_t)r * m, res = 0.0;

		memset(y, 0, sizeof(double) * m);
		memset(v, 0, sizeof(double) * m);
		for (int j = 0; j < nb; j++) {
			axpy(z[r * nb + j], k->q + (size_t)j * m, y, m);
			axpy(z[r * nb + j], k->hq + (size_t)j * m, v, m);
		}
		for (size_t i = 0; i < m; i++) {
			double d = v[i] - ev[r] * y[i];

			res += d * d;
		}
		done &= sqrt(res) < RITZ_TOL;
	}
	return done && nb >= nvec;
}

/* The nvec (1 or 2) lowest eigenvalues of a block, with multiplicity: l[0] <= l[1] (l[1]
 * only when nvec is 2). Updates the block's Ritz vectors. */
static int ritz_block(struct krylov *k, int odd, int nvec, double *l)
{
	size_t m = k->m;
	double *v = k->wr, t[MAX_RITZ * MAX_RITZ], ev[MAX_RITZ];
	int nb = 0, ret = 0, since = 0;

	if ((size_t)nvec > m)
		nvec = (int)m;
	/* start block: previous Ritz vectors, then a fresh random vector */
	for (int j = 0; j <= nvec && (size_t)nb < m; j++) {
		if (j == nvec && k->have_ritz && (k->steps % RANDOM_EVERY) != 0)
			break;
		if (j < nvec && k->have_ritz)
			memcpy(v, k->ritz[odd] + (size_t)j * m, sizeof(double) * m);
		else if (j == 0 && !odd)
			for (size_t i = 0; i < m; i++)
				v[i] = 1.0; /* the ground state of -Delta sum X */
		else
			for (size_t i = 0; i < m; i++)
				v[i] = (double)(splitmix(&k->rng) >> 11) * 0x1p-53 - 0.5;
		nb += ritz_append(k, odd, nb, v, t);
	}
	/* grow by H applied to the basis vectors in turn (a block Krylov space), checking the
	 * residuals every few vectors */
	for (int next = 0; next < nb && nb < MAX_RITZ && (size_t)nb < m; next++) {
		if (since >= 3) {
			ret = ritz_solve(k, odd, nb, nvec, t, ev);
			if (ret)
				break;
			since = 0;
		}
		memcpy(v, k->hq + (size_t)next * m, sizeof(double) * m);
		if (ritz_append(k, odd, nb, v, t)) {
			nb++;
			since++;
		}
	}
	if (ret <= 0 || since)
		ret = ritz_solve(k, odd, nb, nvec, t, ev);
	if (ret < 0)
		return ret;
	l[0] = ev[0];
	l[1] = nb > 1 ? ev[1] : INFINITY;
	return 0;
}

static int krylov_prepare(void *ctx, double delta, double ebig, int first, double *gap)
{
	struct krylov *k = ctx;
	double e[2], o[2];
	int ret;

	k->delta = delta;
	k->ebig = ebig;
	ret = ritz_block(k, 0, 2, e);
	if (!ret)
		ret = ritz_block(k, 1, 1, o);
	if (ret)
		return ret;
	k->have_ritz = 1;
	k->steps++;
	/* the even ground state is the ground state (Perron-Frobenius, Delta > 0): l0 = e0, and
	 * l1 = min(e1, o0); the odd block only needs its lowest level */
	*gap = (e[1] < o[0] ? e[1] : o[0]) - (e[0] < o[0] ? e[0] : o[0]);
	if (first) {
		if (*gap <= 0.001 || o[0] <= e[0])
			return -EDOM;
		memcpy(k->re, k->ritz[0], sizeof(double) * k->m);
		memset(k->im, 0, sizeof(double) * k->m);
	}
	return 0;
}

/* c = exp(-i theta T) e_1 for the j x j tridiagonal T (alpha, beta). */
static int expm_tridiag(int j, const double *alpha, const double *beta, double theta, double *cr,
			double *ci)
{
	double d[MAX_KRYLOV], e[MAX_KRYLOV], z[MAX_KRYLOV * MAX_KRYLOV];

	memcpy(d, alpha, sizeof(double) * (size_t)j);
	memcpy(e, beta, sizeof(double) * (size_t)j);
	if (LAPACKE_dstev(LAPACK_COL_MAJOR, 'V', j, d, e, z, j))
		return -EDOM;
	for (int r = 0; r < j; r++) {
		cr[r] = 0.0;
		ci[r] = 0.0;
		for (int l = 0; l < j; l++) {
			double w = z[l * j + r] * z[l * j], a = theta * d[l];

			cr[r] += w * cos(a);
			ci[r] -= w * sin(a);
		}
	}
	return 0;
}

/* psi <- exp(-i theta H) psi on the even block; H real, psi complex. */
static int propagate_once(struct krylov *k, double theta, int *converged)
{
	size_t m = k->m;
	double alpha[MAX_KRYLOV], beta[MAX_KRYLOV], cr[MAX_KRYLOV], ci[MAX_KRYLOV];
	double nrm = sqrt(dot(k->re, k->re, m) + dot(k->im, k->im, m));
	int j, ret;

	*converged = 0;
	for (size_t i = 0; i < m; i++) {
		k->qr[i] = k->re[i] / nrm;
		k->qi[i] = k->im[i] / nrm;
	}
	for (j = 0; j < MAX_KRYLOV; j++) {
		double *vr = k->qr + (size_t)j * m, *vi = k->qi + (size_t)j * m;
		double *nr = vr + m, *ni = vi + m, b;

		matvec(k, 0, vr, nr);
		matvec(k, 0, vi, ni);
		alpha[j] = dot(vr, nr, m) + dot(vi, ni, m); /* real: H is symmetric */
		/* full reorthogonalisation against the basis (complex inner products) */
		for (int pass = 0; pass < 1; pass++)
			for (int l = 0; l <= j; l++) {
				double *ur = k->qr + (size_t)l * m, *ui = k->qi + (size_t)l * m;
				double pr = dot(ur, nr, m) + dot(ui, ni, m);
				double pi = dot(ur, ni, m) - dot(ui, nr, m);

				for (size_t i = 0; i < m; i++) {
					nr[i] -= pr * ur[i] - pi * ui[i];
					ni[i] -= pr * ui[i] + pi * ur[i];
				}
			}
		b = sqrt(dot(nr, nr, m) + dot(ni, ni, m));
		beta[j] = b;
		ret = expm_tridiag(j + 1, alpha, beta, theta, cr, ci);
		if (ret)
			return ret;
		if (b * hypot(cr[j], ci[j]) < KRYLOV_TOL || b < 1e-14) {
			j++;
			*converged = 1;
			break;
		}
		if (j + 1 < MAX_KRYLOV)
			for (size_t i = 0; i < m; i++) {
				nr[i] /= b;
				ni[i] /= b;
			}
	}
	if (!*converged)
		return 0;
	memset(k->re, 0, sizeof(double) * m);
	memset(k->im, 0, sizeof(double) * m);
	for (int l = 0; l < j; l++) {
		const double *ur = k->qr + (size_t)l * m, *ui = k->qi + (size_t)l * m;
		double a = nrm * cr[l], bb = nrm * ci[l];

		for (size_t i = 0; i < m; i++) {
			k->re[i] += a * ur[i] - bb * ui[i];
			k->im[i] += a * ui[i] + bb * ur[i];
		}
	}
	return 0;
}

static int propagate(struct krylov *k, double theta, int depth)
{
	int converged, ret = propagate_once(k, theta, &converged);

	if (ret || converged)
		return ret;
	if (depth > 20)
		return -EDOM;
	ret = propagate(k, theta / 2, depth + 1);
	return ret ? ret : propagate(k, theta / 2, depth + 1);
}

static int krylov_propagate(void *ctx, double theta)
{
	return propagate(ctx, theta, 0);
}

int tg_krylov_correlations(const struct az_tangled_graph *g, const uint8_t *labels,
			   const struct tg_schedule *s, double tf_ns, double *corr)
{
	static const struct tg_evolver ev = { krylov_prepare, krylov_propagate };
	struct krylov k;
	size_t m;
	int ret = -ENOMEM;

	if (g->n < 2 || g->n > TG_KRYLOV_MAX_N)
		return -EINVAL;
	m = (size_t)1 << (g->n - 1);
	memset(&k, 0, sizeof(k));
	k.n = g->n;
	k.m = m;
	k.rng = tg_fnv1a(TG_FNV_INIT, labels, (size_t)g->e);
	k.diag = malloc(sizeof(double) * m);
	k.re = malloc(sizeof(double) * m);
	k.im = malloc(sizeof(double) * m);
	k.qr = malloc(sizeof(double) * m * (MAX_KRYLOV + 1));
	k.qi = malloc(sizeof(double) * m * (MAX_KRYLOV + 1));
	k.wr = malloc(sizeof(double) * m);
	k.q = malloc(sizeof(double) * m * MAX_RITZ);
	k.hq = malloc(sizeof(double) * m * MAX_RITZ);
	k.ritz[0] = calloc(2 * m, sizeof(double));
	k.ritz[1] = calloc(2 * m, sizeof(double));
	if (!k.diag || !k.re || !k.im || !k.qr || !k.qi || !k.wr || !k.q || !k.hq ||
	    !k.ritz[0] || !k.ritz[1])
		goto out;
	tg_ising_diagonal(g, labels, k.diag);
	ret = tg_evolve(s, tf_ns, &ev, &k);
	if (ret < 0)
		goto out;
	for (size_t x = 0; x < m; x++)
		k.wr[x] = k.re[x] * k.re[x] + k.im[x] * k.im[x];
	tg_block_correlations(g->n, k.wr, corr);
	ret = 0;
out:
	free(k.diag);
	free(k.re);
	free(k.im);
	free(k.qr);
	free(k.qi);
	free(k.wr);
	free(k.q);
	free(k.hq);
	free(k.ritz[0]);
	free(k.ritz[1]);
	return ret;
}
