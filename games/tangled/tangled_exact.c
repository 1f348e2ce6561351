/* SPDX-License-Identifier: MIT */
/* The Schrodinger-equation adjudicator of TANGLED.md 3.2 (generation G2: new_schedule.txt,
 * 5 ns): the anneal schedule, the adaptive step loop shared with the Krylov method, and the
 * dense method, which diagonalises H(s) with LAPACKE dsyevd at every step.
 *
 * Parity blocks. With h = 0, H commutes with the global spin flip P = prod_i X_i. Write a
 * basis state as an N-bit x (bit i set: spin i down) and pair it with its complement ~x; the
 * 2^(N-1) representatives are the x with bit N-1 clear. In the basis (|x> +- |~x>)/sqrt(2)
 * H splits into two blocks: the Ising energy is the same on x and ~x (diagonal), X_i for
 * i < N-1 maps representative x to representative x ^ 2^i (entry -Delta), and X_{N-1} maps x
 * to the representative x ^ (2^(N-1) - 1) with sign +1 in the even block, -1 in the odd one.
 * The anneal starts in the ground state of -Delta sum X (uniform, even), so psi stays in the
 * even block: only that block needs eigenvectors; the odd one contributes eigenvalues to the
 * gap l1 - l0 of the full spectrum (used by the step control). Z_i Z_j is diagonal in both
 * blocks, and <Z_i> = 0 exactly, so the connected correlation is <Z_i Z_j>. */
#include "games/tangled/tangled_impl.h"

#include "base/util.h"

#include <errno.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- schedule ---- */

int tg_schedule_parse(const char *text, const char *source, struct tg_schedule *s, char *err,
		      size_t errlen)
{
	const char *p = text;
	int row = 0, line = 0;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char buf[256], *end, *q;
		double v[3];

		line++;
		if (len >= sizeof(buf))
			goto bad;
		memcpy(buf, p, len);
		buf[len] = '\0';
		p += len + (eol ? 1 : 0);
		q = buf + strspn(buf, " \t\r");
		if (!*q || *q == '#')
			continue;
		for (int i = 0; i < 3; i++) {
			v[i] = strtod(q, &end);
			if (end == q || !isfinite(v[i]))
				goto bad;
			q = end;
		}
		q += strspn(q, " \t\r");
		if (*q)
			goto bad;
		if (row >= TG_SCHEDULE_ROWS || fabs(v[0] - row / 1000.0) > 1e-6) {
			if (err && errlen)
				snprintf(err, errlen,
					 "%s:%d: expected row %d at s = %.3f (%d rows, s = k/1000)",
					 source, line, row, row / 1000.0, TG_SCHEDULE_ROWS);
			return -EINVAL;
		}
		s->a[row] = v[1];
		s->b[row] = v[2];
		row++;
	}
	if (row != TG_SCHEDULE_ROWS) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %d rows, expected %d", source, row,
				 TG_SCHEDULE_ROWS);
		return -EINVAL;
	}
	s->hash = tg_fnv1a(tg_fnv1a(TG_FNV_INIT, s->a, sizeof(s->a)), s->b, sizeof(s->b));
	return 0;
bad:
	if (err && errlen)
		snprintf(err, errlen, "%s:%d: expected three numbers \"s A B\"", source, line);
	return -EINVAL;
}

int tg_schedule_load(const char *path, struct tg_schedule *s, char *err, size_t errlen)
{
	char *buf;
	int ret;

	if (!path)
		return tg_schedule_parse(az_tangled_schedule_text, "built-in new_schedule.txt", s,
					 err, errlen);
	ret = az_read_file(path, &buf, NULL);
	if (ret) {
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot read schedule: %s", path, strerror(-ret));
		return ret;
	}
	ret = tg_schedule_parse(buf, path, s, err, errlen);
	free(buf);
	return ret;
}

void tg_schedule_at(const struct tg_schedule *s, double sv, double *delta, double *ebig)
{
	double x = 1000.0 * sv, w;
	int k = (int)floor(x);

	if (k < 0)
		k = 0;
	if (k > TG_SCHEDULE_ROWS - 2)
		k = TG_SCHEDULE_ROWS - 2;
	w = x - k;
	*delta = 0.5 * (s->a[k] * (1.0 - w) + s->a[k + 1] * w);
	*ebig = s->b[k] * (1.0 - w) + s->b[k + 1] * w;
}

/* ---- the step loop ---- */

#define S_MIN 0.001
#define S_MAX 0.999
#define MAX_STEP 0.0005
#define MAX_PASSES 1000000

int tg_evolve(const struct tg_schedule *s, double tf_ns, const struct tg_evolver *ev, void *ctx)
{
	double sv = S_MIN, ds = MAX_STEP, gap_old = 0.0;
	int passes = 0, ret;

	while (sv <= S_MAX) {
		double delta, ebig, gap;

		if (++passes > MAX_PASSES)
			return -EDOM;
		tg_schedule_at(s, sv, &delta, &ebig);
		ret = ev->prepare(ctx, delta, ebig, passes == 1, &gap);
		if (ret)
			return ret;
		/* the propagator uses the step before this pass's update (3.2 step c) */
		ret = ev->propagate(ctx, 2.0 * M_PI * tf_ns * ds);
		if (ret)
			return ret;
		if (fabs(gap_old - gap) / (gap + 1e-5) > 0.05 && gap > 1e-9)
			ds /= 2.0; /* G2: no doubling back */
		sv += ds;
		if (S_MAX - ds < sv && sv < S_MAX + ds)
			sv = S_MAX;
		gap_old = gap;
	}
	return passes;
}

/* ---- shared helpers ---- */

void tg_ising_diagonal(const struct az_tangled_graph *g, const uint8_t *labels, double *diag)
{
	size_t m = (size_t)1 << (g->n - 1);

	for (size_t x = 0; x < m; x++) {
		double e = 0.0;

		for (int k = 0; k < g->e; k++) {
			int j = labels[k] == 2 ? -1 : labels[k] == 3 ? 1 : 0;
			int same = (int)(((x >> g->eu[k]) ^ (x >> g->ev[k])) & 1) == 0;

			if (j)
				e += same ? j : -j;
		}
		diag[x] = e;
	}
}

void tg_block_correlations(int n, const double *w, double *corr)
{
	size_t m = (size_t)1 << (n - 1);

	memset(corr, 0, sizeof(double) * (size_t)n * (size_t)n);
	for (int i = 0; i < n; i++) {
		for (int j = i + 1; j < n; j++) {
			double c = 0.0;

			for (size_t x = 0; x < m; x++)
				c += (((x >> i) ^ (x >> j)) & 1) ? -w[x] : w[x];
			corr[i * n + j] = c;
			corr[j * n + i] = c;
		}
	}
}

/* ---- dense method ---- */

struct dense {
	int n;
	lapack_int m;       /* block dimension 2^(N-1) */
	double *diag;       /* Ising energies of the representatives */
	double *h;          /* m x m: even block, eigenvectors after dsyevd (column-major) */
	double *ho;         /* m x m: odd block (eigenvalues only) */
	double *w, *wo;     /* eigenvalues */
	double *re, *im;    /* psi in the even block */
	double *cr, *ci;    /* coefficients in the eigenbasis */
	double *work;
	lapack_int *iwork;
	lapack_int lwork, liwork;
};

static void build_block(const struct dense *d, double *h, double delta, double ebig, int odd,
			double shift)
{
	size_t m = (size_t)d->m, top = m - 1;

	memset(h, 0, sizeof(double) * m * m);
	for (size_t x = 0; x < m; x++) {
		h[x * m + x] = ebig * d->diag[x] + shift;
		for (int i = 0; i < d->n - 1; i++)
			h[x * m + (x ^ ((size_t)1 << i))] -= delta;
		/* X_{N-1}: to the representative of x with bit N-1 set, i.e. x ^ (2^(N-1) - 1) */
		h[x * m + (x ^ top)] += odd ? delta : -delta;
	}
}

/* dsyevr into h (eigenvectors copied over the input, as dsyevd leaves them). */
static lapack_int eig_mrrr(struct dense *d, double *h, double *w, char jobz)
{
	size_t m = (size_t)d->m;
	double *z = malloc(sizeof(double) * m * m);
	lapack_int *isuppz = malloc(sizeof(lapack_int) * 2 * m), found = 0, info = -1;

	if (z && isuppz)
		info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, jobz, 'A', 'L', d->m, h, d->m, 0.0, 0.0, 0,
				      0, 0.0, &found, w, z, d->m, isuppz);
	if (info == 0 && found != d->m)
		info = 1;
	if (info == 0 && jobz == 'V')
		memcpy(h, z, sizeof(double) * m * m);
	free(z);
	free(isuppz);
	return info;
}

/* Eigen-decomposition of a block with dsyevd. When it fails to converge (it does, e.g. on the
 * Petersen graph late in the anneal, where H is almost diagonal and highly degenerate), retry
 * with H + 1e-5 I as the reference code does, then with the QR driver dsyev, then with dsyevr.
 * The shift is taken off the eigenvalues again: the reference shifts the whole H, but here the
 * other parity block may not be shifted, and the gap compares the two. */
static int eig(struct dense *d, double *h, double *w, char jobz, double delta, double ebig,
	       int odd)
{
	for (int attempt = 0; attempt < 4; attempt++) {
		double shift = attempt == 1 ? 1e-5 : 0.0;
		lapack_int info;

		build_block(d, h, delta, ebig, odd, shift);
		if (attempt < 2)
			info = LAPACKE_dsyevd_work(LAPACK_COL_MAJOR, jobz, 'L', d->m, h, d->m, w,
						   d->work, d->lwork, d->iwork, d->liwork);
		else if (attempt == 2)
			info = LAPACKE_dsyev(LAPACK_COL_MAJOR, jobz, 'L', d->m, h, d->m, w);
		else
			info = eig_mrrr(d, h, w, jobz);
		if (info == 0) {
			for (lapack_int k = 0; k < d->m; k++)
				w[k] -= shift;
			return 0;
		}
	}
	return -EDOM;
}

/* Both blocks at (delta, ebig): even eigenpairs in d->h / d->w, odd eigenvalues in d->wo,
 * and the gap l1 - l0 of the full spectrum. */
static int dense_spectrum(struct dense *d, double delta, double ebig, double *gap)
{
	size_t m = (size_t)d->m;
	double l0, l1;
	int ret;

	ret = eig(d, d->h, d->w, 'V', delta, ebig, 0);
	if (!ret)
		ret = eig(d, d->ho, d->wo, 'N', delta, ebig, 1);
	if (ret)
		return ret;
	/* the two lowest of the union of both spectra (each sorted ascending) */
	l0 = d->w[0] < d->wo[0] ? d->w[0] : d->wo[0];
	if (d->w[0] <= d->wo[0])
		l1 = m > 1 && d->w[1] < d->wo[0] ? d->w[1] : d->wo[0];
	else
		l1 = m > 1 && d->wo[1] < d->w[0] ? d->wo[1] : d->w[0];
	*gap = l1 - l0;
	return 0;
}

static int dense_prepare(void *ctx, double delta, double ebig, int first, double *gap)
{
	struct dense *d = ctx;
	size_t m = (size_t)d->m;
	int ret;

	ret = dense_spectrum(d, delta, ebig, gap);
	if (ret)
		return ret;
	if (first) {
		if (*gap <= 0.001 || d->wo[0] <= d->w[0])
			return -EDOM; /* never at s_min: the ground state is even, gap ~ 2 Delta */
		for (size_t x = 0; x < m; x++) {
			d->re[x] = d->h[x];
			d->im[x] = 0.0;
		}
	}
	return 0;
}

static int dense_propagate(void *ctx, double theta)
{
	struct dense *d = ctx;
	size_t m = (size_t)d->m;

	for (size_t k = 0; k < m; k++) {
		const double *v = d->h + k * m;
		double ar = 0.0, ai = 0.0, c, sn;

		for (size_t x = 0; x < m; x++) {
			ar += v[x] * d->re[x];
			ai += v[x] * d->im[x];
		}
		c = cos(theta * d->w[k]);
		sn = -sin(theta * d->w[k]);
		d->cr[k] = ar * c - ai * sn;
		d->ci[k] = ar * sn + ai * c;
	}
	memset(d->re, 0, sizeof(double) * m);
	memset(d->im, 0, sizeof(double) * m);
	for (size_t k = 0; k < m; k++) {
		const double *v = d->h + k * m;

		for (size_t x = 0; x < m; x++) {
			d->re[x] += d->cr[k] * v[x];
			d->im[x] += d->ci[k] * v[x];
		}
	}
	return 0;
}

static int dense_init(struct dense *d, int n)
{
	size_t m = (size_t)1 << (n - 1);
	double wq;
	lapack_int iq, info;

	memset(d, 0, sizeof(*d));
	d->n = n;
	d->m = (lapack_int)m;
	d->diag = malloc(sizeof(double) * m);
	d->h = malloc(sizeof(double) * m * m);
	d->ho = malloc(sizeof(double) * m * m);
	d->w = malloc(sizeof(double) * m);
	d->wo = malloc(sizeof(double) * m);
	d->re = malloc(sizeof(double) * m);
	d->im = malloc(sizeof(double) * m);
	d->cr = malloc(sizeof(double) * m);
	d->ci = malloc(sizeof(double) * m);
	if (!d->diag || !d->h || !d->ho || !d->w || !d->wo || !d->re || !d->im || !d->cr ||
	    !d->ci)
		return -ENOMEM;
	/* workspace query for the 'V' case, which also covers 'N' */
	info = LAPACKE_dsyevd_work(LAPACK_COL_MAJOR, 'V', 'L', d->m, d->h, d->m, d->w, &wq, -1,
				   &iq, -1);
	if (info != 0)
		return -EINVAL;
	d->lwork = (lapack_int)wq;
	d->liwork = iq;
	d->work = malloc(sizeof(double) * (size_t)d->lwork);
	d->iwork = malloc(sizeof(lapack_int) * (size_t)d->liwork);
	if (!d->work || !d->iwork)
		return -ENOMEM;
	return 0;
}

static void dense_fini(struct dense *d)
{
	free(d->diag);
	free(d->h);
	free(d->ho);
	free(d->w);
	free(d->wo);
	free(d->re);
	free(d->im);
	free(d->cr);
	free(d->ci);
	free(d->work);
	free(d->iwork);
}

int tg_exact_correlations(const struct az_tangled_graph *g, const uint8_t *labels,
			  const struct tg_schedule *s, double tf_ns, double *corr)
{
	static const struct tg_evolver ev = { dense_prepare, dense_propagate };
	struct dense d;
	int ret;

	if (g->n < 2 || g->n > TG_EXACT_MAX_N)
		return -EINVAL;
	ret = dense_init(&d, g->n);
	if (ret)
		goto out;
	tg_ising_diagonal(g, labels, d.diag);
	ret = tg_evolve(s, tf_ns, &ev, &d);
	if (ret < 0)
		goto out;
	for (lapack_int x = 0; x < d.m; x++)
		d.cr[x] = d.re[x] * d.re[x] + d.im[x] * d.im[x];
	tg_block_correlations(g->n, d.cr, corr);
	ret = 0;
out:
	dense_fini(&d);
	return ret;
}

int tg_exact_gap(const struct az_tangled_graph *g, const uint8_t *labels, double delta,
		 double ebig, double *gap)
{
	struct dense d;
	int ret;

	if (g->n < 2 || g->n > TG_EXACT_MAX_N)
		return -EINVAL;
	ret = dense_init(&d, g->n);
	if (!ret) {
		tg_ising_diagonal(g, labels, d.diag);
		ret = dense_spectrum(&d, delta, ebig, gap);
	}
	dense_fini(&d);
	return ret;
}
