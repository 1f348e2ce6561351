/* SPDX-License-Identifier: MIT */
/* The vector simulated-annealing paths (tangled_anneal_simd.c) against two oracles: the exact
 * law of the annealer's final spins (the Markov chain of TANGLED.md 3.3 pushed through every
 * step on all 2^N states, so any bias of a path shows), and the scalar path: correlations within
 * a few standard errors, the same winners wherever the scalar score is clear of +-epsilon.
 * Also reproducibility per seed and path, and the AZ_TANGLED_ANNEAL choice. The AVX-512 path
 * is checked only on a CPU that has it (skipped elsewhere). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/az_assert.h"
#include "base/rng.h"
#include "games/tangled/tangled_impl.h"
#include "tests/test_util.h"

#define MAXV AZ_TANGLED_MAX_VERTICES
#define NSIGMA 5.0

static struct az_tangled_graph G;

static void graph(int number)
{
	char err[256];

	assert_int_equal(az_tangled_graph_numbered(number, &G, err, sizeof(err)), 0);
}

static void random_labels(struct az_rng *r, uint8_t *labels)
{
	for (int e = 0; e < G.e; e++)
		labels[e] = (uint8_t)(1 + az_rng_below(r, 3));
}

/* The expected C of the annealer on G: P over states x (bit v set = spin up) from uniform,
 * through sweeps x N steps of "pick v uniformly, flip with min(1, exp(-2 beta q))". */
static void exact_chain(const uint8_t *labels, const struct tg_anneal_params *p, double *corr)
{
	int n = G.n, ns = 1 << n, jm[MAXV][MAXV] = { { 0 } };
	double sumj2 = 0.0, *pr = malloc(sizeof(double) * (size_t)ns);
	double *nx = malloc(sizeof(double) * (size_t)ns);
	int8_t *qs = malloc((size_t)ns * (size_t)n);

	assert_non_null(pr);
	assert_non_null(nx);
	for (int e = 0; e < G.e; e++) {
		int j = labels[e] == 2 ? -1 : labels[e] == 3 ? 1 : 0;

		jm[G.eu[e]][G.ev[e]] = jm[G.ev[e]][G.eu[e]] = j;
		sumj2 += j != 0;
	}
	assert_non_null(qs);
	for (int x = 0; x < ns; x++) {
		pr[x] = 1.0 / ns;
		for (int v = 0; v < n; v++) {
			int h = 0;

			for (int j = 0; j < n; j++)
				h += jm[v][j] * ((x >> j) & 1 ? 1 : -1);
			qs[x * n + v] = (int8_t)(((x >> v) & 1 ? -1 : 1) * h); /* dE / 2 = -s_v h */
		}
	}
	for (uint32_t t = 0; t < p->sweeps; t++) {
		double beta = tg_anneal_beta(p, sumj2, t), acc[MAXV + 1];

		for (int q = 0; q <= n; q++)
			acc[q] = exp(-2.0 * beta * q);
		for (int step = 0; step < n; step++) {
			memset(nx, 0, sizeof(double) * (size_t)ns);
			for (int x = 0; x < ns; x++)
				for (int v = 0; v < n; v++) {
					int q = qs[x * n + v];
					double a = q <= 0 ? 1.0 : acc[q];

					nx[x] += pr[x] * (1.0 - a) / n;
					nx[x ^ (1 << v)] += pr[x] * a / n;
				}
			memcpy(pr, nx, sizeof(double) * (size_t)ns);
		}
	}
	memset(corr, 0, sizeof(double) * (size_t)n * (size_t)n);
	for (int x = 0; x < ns; x++)
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++)
				if (i != j)
					corr[i * n + j] += pr[x] * ((((x >> i) ^ (x >> j)) & 1) ? -1 : 1);
	free(pr);
	free(nx);
	free(qs);
}

static double var_of(double c, uint32_t reads)
{
	double v = 1.0 - c * c; /* variance of one read's s_i s_j */

	return v > 1.0 / reads ? v : 1.0 / reads;
}

/* C of the path: symmetric, zero diagonal, entries in [-1, 1]. */
static void run(enum tg_anneal_path path, const uint8_t *labels,
		const struct tg_anneal_params *p0, double *corr)
{
	struct tg_anneal_params p = *p0;
	int n = G.n;

	p.path = path;
	assert_int_equal(tg_anneal_correlations(&G, labels, &p, corr), 0);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			assert_true(corr[i * n + j] == corr[j * n + i]);
			assert_true(i != j || corr[i * n + j] == 0.0);
			assert_true(fabs(corr[i * n + j]) <= 1.0);
		}
}

/* The path a test checks: test_exact, test_vs_scalar and test_winners run once per path, with a
 * pointer to one of these in the test's state (PATH_TEST in main). */
static enum tg_anneal_path scalar = TG_ANNEAL_SCALAR, avx2 = TG_ANNEAL_AVX2,
			   avx512 = TG_ANNEAL_AVX512;
#define PATH_TEST(name, test, path) { name, test, NULL, NULL, &(path) }

/* The test's path (PATH_TEST); skips the test on a CPU that lacks it. */
static enum tg_anneal_path path_under_test(void **st)
{
	enum tg_anneal_path path = *(const enum tg_anneal_path *)*st;

	if (!tg_anneal_path_supported(path))
		skip();
	return path;
}

/* The scalar path's C, as a reference for the vector paths. */
static void scalar_correlations(const uint8_t *labels, const struct tg_anneal_params *p,
				double *corr)
{
	run(TG_ANNEAL_SCALAR, labels, p, corr);
}

/* What test_exact and test_vs_scalar hold a path's C against, and on which graphs. */
struct reference {
	const char *name; /* in failure messages */
	/* its C on G for labels and p, into corr */
	void (*correlations)(const uint8_t *labels, const struct tg_anneal_params *p, double *corr);
	int sampled;       /* 1: itself from p->reads reads, with their sampling error */
	const int *graphs; /* the graph numbers, ngraphs of them */
	size_t ngraphs;
	uint64_t labels_seed;      /* seeds the rng that draws each graph's random labels */
	uint64_t seed0, seed_step; /* the reads' seed on the k-th graph: seed0 + seed_step * k */
};

/* On each of ref's graphs with random labels: every entry of path's C (with p, its seed set per
 * graph) within NSIGMA standard errors of ref's. Returns the largest deviation, in standard
 * errors. */
static double versus(enum tg_anneal_path path, const struct reference *ref,
		     struct tg_anneal_params p)
{
	double c[MAXV * MAXV], want[MAXV * MAXV], worst = 0.0;
	uint8_t labels[AZ_TANGLED_MAX_EDGES];
	struct az_rng r;

	az_rng_seed(&r, ref->labels_seed);
	for (size_t k = 0; k < ref->ngraphs; k++) {
		graph(ref->graphs[k]);
		random_labels(&r, labels);
		p.seed = ref->seed0 + ref->seed_step * k;
		ref->correlations(labels, &p, want);
		run(path, labels, &p, c);
		for (int i = 0; i < G.n * G.n; i++) {
			double var = var_of(want[i], p.reads);

			if (ref->sampled)
				var += var_of(c[i], p.reads);
			double z = fabs(want[i] - c[i]) / sqrt(var / p.reads);

			if (z > NSIGMA)
				fail_msg("%s, graph %d, entry %d: %f, %s %f (%.1f sigma)",
					 tg_anneal_path_name(path), ref->graphs[k], i, c[i],
					 ref->name, want[i], z);
			worst = z > worst ? z : worst;
		}
	}
	return worst;
}

/* The references: the exact chain on small graphs (labels from rng seed 2024, the k-th graph's
 * reads seeded 100 + k); the scalar path up to the full 16-bit lane, the tesseract (77, 3 + 7k). */
static const int exact_graphs[] = { 5, 5, 5, 2, 11, 3, 20, 12, 1 };
static const int scalar_graphs[] = { 5, 5, 6, 7 };
static const struct reference exact = { "exact", exact_chain, 0, exact_graphs,
					AZ_ARRAY_LEN(exact_graphs), 2024, 100, 1 };
static const struct reference scalar_path = { "scalar", scalar_correlations, 1, scalar_graphs,
					      AZ_ARRAY_LEN(scalar_graphs), 77, 3, 7 };

/* Every entry of a path's C within NSIGMA standard errors of the chain's exact one. */
static void test_exact(void **st)
{
	const enum tg_anneal_path path = path_under_test(st);
	struct tg_anneal_params p = { 20000, 16, 0.0, 3.0, 1, TG_ANNEAL_AUTO };

	if (path == TG_ANNEAL_SCALAR)
		p.reads = 10000; /* the scalar one is slow */
	print_message("%s vs the exact chain: largest deviation %.2f sigma\n",
		      tg_anneal_path_name(path), versus(path, &exact, p));
}

/* Entry by entry against the scalar path (10,000 reads each) on random colourings. */
static void test_vs_scalar(void **st)
{
	const enum tg_anneal_path path = path_under_test(st);
	struct tg_anneal_params p = { 10000, 16, 0.0, 3.0, 1, TG_ANNEAL_AUTO };

	print_message("%s vs scalar: largest deviation %.2f sigma\n", tg_anneal_path_name(path),
		      versus(path, &scalar_path, p));
}

/* score = influence[red] - influence[blue], influence = column sums of C. */
static double score(const double *c, int red, int blue)
{
	double s = 0.0;

	for (int j = 0; j < G.n; j++)
		s += c[j * G.n + red] - c[j * G.n + blue];
	return s;
}

static int winner(double s)
{
	return s > 0.5 ? 1 : s < -0.5 ? 2 : 0;
}

#define BATCHES 8
#define SREADS 5000
#define COLOURINGS 30

/* Petersen winners (epsilon 0.5) of the path (10,000 reads) and of the scalar path (SREADS)
 * for every ordered token pair of COLOURINGS random colourings: identical wherever the scalar
 * score is clear of +-0.5 by NSIGMA standard errors of the difference (the scalar's standard
 * error from BATCHES independent batches, the path's taken as no larger). */
static void test_winners(void **st)
{
	const enum tg_anneal_path path = path_under_test(st);
	struct tg_anneal_params p = { SREADS / BATCHES, 16, 0.0, 3.0, 0, TG_ANNEAL_AUTO };
	double cb[BATCHES][MAXV * MAXV], cv[MAXV * MAXV];
	uint8_t labels[AZ_TANGLED_MAX_EDGES];
	int compared = 0, close = 0;
	struct az_rng r;

	graph(5);
	az_rng_seed(&r, 5);
	for (int k = 0; k < COLOURINGS; k++) {
		random_labels(&r, labels);
		for (int b = 0; b < BATCHES; b++) {
			p.seed = 1000 * (uint64_t)k + (uint64_t)b;
			run(TG_ANNEAL_SCALAR, labels, &p, cb[b]);
		}
		p.reads = 10000;
		p.seed = 99991 * (uint64_t)k;
		run(path, labels, &p, cv);
		p.reads = SREADS / BATCHES;
		for (int red = 0; red < G.n; red++)
			for (int blue = 0; blue < G.n; blue++) {
				double m = 0.0, ss = 0.0, se, sv = score(cv, red, blue), edge;

				if (red == blue)
					continue;
				for (int b = 0; b < BATCHES; b++)
					m += score(cb[b], red, blue) / BATCHES;
				for (int b = 0; b < BATCHES; b++) {
					double d = score(cb[b], red, blue) - m;

					ss += d * d;
				}
				se = sqrt(ss / (BATCHES - 1) / BATCHES);
				edge = fmin(fabs(m - 0.5), fabs(m + 0.5));
				if (edge <= NSIGMA * sqrt(2.0) * se + 1e-9) {
					close++;
					continue;
				}
				compared++;
				if (winner(m) != winner(sv))
					fail_msg("%s: colouring %d, red %d blue %d: score %f, scalar "
						 "%f +- %f", tg_anneal_path_name(path), k, red, blue,
						 sv, m, se);
			}
	}
	print_message("%s winners: %d identical, %d within sampling error of +-0.5\n",
		      tg_anneal_path_name(path), compared, close);
	assert_true(compared >= COLOURINGS * 90 / 2);
}

/* Same seed and path: the same numbers; another seed: other numbers. */
static void test_reproducible(void **st)
{
	static const enum tg_anneal_path paths[] = { TG_ANNEAL_AVX2, TG_ANNEAL_AVX512 };
	struct tg_anneal_params p = { 1000, 16, 0.0, 3.0, 42, TG_ANNEAL_AUTO };
	static const uint8_t lab[15] = { 2, 2, 3, 2, 2, 3, 2, 2, 3, 2, 2, 3, 1, 2, 3 };
	double a[100], b[100];

	(void)st;
	graph(5);
	for (size_t k = 0; k < 2; k++) {
		if (!tg_anneal_path_supported(paths[k]))
			continue;
		p.seed = 42;
		run(paths[k], lab, &p, a);
		run(paths[k], lab, &p, b);
		assert_memory_equal(a, b, sizeof(a));
		p.seed = 43;
		run(paths[k], lab, &p, b);
		assert_memory_not_equal(a, b, sizeof(a));
		p.reads = 1; /* a partial block: one read, so every entry is +-1 */
		run(paths[k], lab, &p, b);
		for (int i = 0; i < 100; i++)
			assert_true(i % 11 == 0 ? b[i] == 0.0 : fabs(b[i]) == 1.0);
		p.reads = 1000;
	}
}

/* AZ_TANGLED_ANNEAL and the fallback to scalar above 16 vertices. */
static void test_path_choice(void **st)
{
	struct az_tangled_options o;
	struct az_tangled_adj *adj = NULL;
	enum tg_anneal_path e;
	char err[256];

	(void)st;
	assert_int_equal(tg_anneal_path_parse("avx512", &e), 0);
	assert_int_equal(e, TG_ANNEAL_AVX512);
	assert_int_equal(tg_anneal_path_parse("sse", &e), -EINVAL);
	setenv("AZ_TANGLED_ANNEAL", "scalar", 1);
	assert_int_equal(tg_anneal_path_effective(TG_ANNEAL_AUTO, 10), TG_ANNEAL_SCALAR);
	assert_int_equal(tg_anneal_path_effective(TG_ANNEAL_AVX2, 10), TG_ANNEAL_AVX2);
	setenv("AZ_TANGLED_ANNEAL", "avx2", 1);
	assert_int_equal(tg_anneal_path_effective(TG_ANNEAL_AUTO, 16), TG_ANNEAL_AVX2);
	assert_int_equal(tg_anneal_path_effective(TG_ANNEAL_AUTO, 17), TG_ANNEAL_SCALAR);
	setenv("AZ_TANGLED_ANNEAL", "fast", 1);
	assert_int_equal(tg_anneal_path_effective(TG_ANNEAL_AUTO, 10), -EINVAL);
	graph(5);
	az_tangled_options_default(&o);
	o.adjudicator = "anneal";
	assert_int_equal(az_tangled_adj_create(&G, &o, &adj, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "AZ_TANGLED_ANNEAL='fast'"));
	unsetenv("AZ_TANGLED_ANNEAL");
	e = (enum tg_anneal_path)tg_anneal_path_effective(TG_ANNEAL_AUTO, 10);
	assert_true(tg_anneal_path_supported(e) && e != TG_ANNEAL_AUTO);
	assert_true(e != TG_ANNEAL_SCALAR || !tg_anneal_path_supported(TG_ANNEAL_AVX2));
	o.anneal_path = "avx512";
	if (!tg_anneal_path_supported(TG_ANNEAL_AVX512)) {
		assert_int_equal(az_tangled_adj_create(&G, &o, &adj, err, sizeof(err)), -ENODEV);
		assert_non_null(strstr(err, "avx512"));
	}
	o.anneal_path = "scalar";
	assert_int_equal(az_tangled_adj_create(&G, &o, &adj, err, sizeof(err)), 0);
	az_tangled_adj_destroy(adj);
}

AZ_TEST_MAIN(cmocka_unit_test(test_path_choice), cmocka_unit_test(test_reproducible),
	     PATH_TEST("test_scalar_exact", test_exact, scalar),
	     PATH_TEST("test_avx2_exact", test_exact, avx2),
	     PATH_TEST("test_avx512_exact", test_exact, avx512),
	     PATH_TEST("test_avx2_vs_scalar", test_vs_scalar, avx2),
	     PATH_TEST("test_avx512_vs_scalar", test_vs_scalar, avx512),
	     PATH_TEST("test_avx2_winners", test_winners, avx2),
	     PATH_TEST("test_avx512_winners", test_winners, avx512))
