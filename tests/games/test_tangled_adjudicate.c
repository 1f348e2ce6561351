/* SPDX-License-Identifier: MIT */
/* Tangled adjudication against the reference figures of TANGLED.md section 4 (G2 schedule,
 * 5 ns, epsilon 0.5): outcome counts over every terminal state of K2, K3, K4 and P3 (all
 * placements and the fixed placements, the blog's 137 / 137 / 455, the 405 orbits), the spot
 * influence values, exact symmetry of the raw evolution under automorphisms and gauge flips
 * (which the cache relies on), Krylov versus dense scores, simulated annealing agreement and
 * reproducibility, and the time for every K4 terminal state. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/util.h"
#include "games/tangled/tangled_impl.h"
#include "tests/games/tangled_test.h"

#define MAXV AZ_TANGLED_MAX_VERTICES

static struct az_tangled_graph G;
static struct az_tangled_adj *exact_table[4]; /* graphs 2 and 3, built once */

static struct az_tangled_adj *make_adj(int graph, const char *method, uint32_t reads,
				       uint64_t seed)
{
	struct az_tangled_options o;

	az_tangled_options_default(&o);
	o.adjudicator = method;
	o.anneal_reads = reads;
	o.seed = seed;
	return az_test_tangled_adj(graph, &G, &o);
}

/* Colouring number c (base 3, edge 0 least significant) into labels 1-3. */
static void colouring(int c, int e, uint8_t *labels)
{
	for (int k = 0; k < e; k++, c /= 3)
		labels[k] = (uint8_t)(1 + c % 3);
}

static int pow3(int e)
{
	int t = 1;

	while (e--)
		t *= 3;
	return t;
}

/* Winner counts [draw, red, blue] over every terminal state; red_only/blue_only >= 0 restrict
 * to one placement. */
static void count_outcomes(struct az_tangled_adj *a, int red_only, int blue_only, int *cnt)
{
	uint8_t s[MAXV + AZ_TANGLED_MAX_EDGES];
	struct az_tangled_outcome out;

	cnt[0] = cnt[1] = cnt[2] = 0;
	for (int c = 0; c < pow3(G.e); c++) {
		colouring(c, G.e, s + G.n);
		for (int r = 0; r < G.n; r++)
			for (int b = 0; b < G.n; b++) {
				if (r == b || (red_only >= 0 && (r != red_only || b != blue_only)))
					continue;
				memset(s, 0, (size_t)G.n);
				s[r] = 1;
				s[b] = 2;
				assert_int_equal(az_tangled_adj_judge(a, s, 0.5, &out), 0);
				cnt[out.winner]++;
			}
	}
}

/* The shared "table:exact" adjudicator of K3 or K4 (others: a new one); sets G. */
static struct az_tangled_adj *table_of(int graph)
{
	char err[64];

	if (graph != 2 && graph != 3)
		return make_adj(graph, "table:exact", 0, 0);
	if (!exact_table[graph])
		exact_table[graph] = make_adj(graph, "table:exact", 0, 0);
	assert_int_equal(az_tangled_graph_numbered(graph, &G, err, sizeof(err)), 0);
	return exact_table[graph];
}

static void release_table(struct az_tangled_adj *a)
{
	if (a != exact_table[2] && a != exact_table[3])
		az_tangled_adj_destroy(a);
}

static int teardown(void **st)
{
	(void)st;
	az_tangled_adj_destroy(exact_table[2]);
	az_tangled_adj_destroy(exact_table[3]);
	return 0;
}

static void expect_counts(int graph, int red, int blue, int want_red, int want_blue,
			  int want_draw)
{
	struct az_tangled_adj *a = table_of(graph);
	int cnt[3];

	count_outcomes(a, red, blue, cnt);
	print_message("graph %d red %d blue %d: red %d, blue %d, draw %d\n", graph, red, blue,
		      cnt[AZ_TANGLED_RED], cnt[AZ_TANGLED_BLUE], cnt[AZ_TANGLED_DRAW]);
	assert_int_equal(cnt[AZ_TANGLED_RED], want_red);
	assert_int_equal(cnt[AZ_TANGLED_BLUE], want_blue);
	assert_int_equal(cnt[AZ_TANGLED_DRAW], want_draw);
	release_table(a);
}

/* TANGLED.md 4.1 / 4.2. */
static void test_outcome_counts(void **st)
{
	(void)st;
	expect_counts(1, -1, -1, 0, 0, 6);
	expect_counts(2, -1, -1, 42, 42, 78);
	expect_counts(2, 1, 2, 7, 7, 13);
	expect_counts(3, -1, -1, 1644, 1644, 5460);
	expect_counts(3, 2, 3, 137, 137, 455);
	expect_counts(11, -1, -1, 14, 14, 26);
	expect_counts(11, 1, 2, 2, 2, 5);
}

/* K4 terminal states up to automorphism: 405 orbits, 79 / 79 / 247 (TANGLED.md 1.9, 4.2). */
static void test_k4_orbits(void **st)
{
	static uint8_t perm[24][MAXV];
	struct az_tangled_adj *a = table_of(3);
	int16_t emap[24 * 6];
	static uint32_t seen[8748];
	int nseen = 0, cnt[3] = { 0 };

	(void)st;
	assert_int_equal(az_tangled_graph_automorphisms(&G, perm, 24, NULL), 24);
	tg_edge_maps(&G, (const uint8_t (*)[MAXV])perm, 24, emap);
	for (int c = 0; c < 729; c++)
		for (int r = 0; r < 4; r++)
			for (int b = 0; b < 4; b++) {
				uint8_t s[10], t[10];
				uint32_t best = UINT32_MAX;
				struct az_tangled_outcome out;
				int known = 0;

				if (r == b)
					continue;
				memset(s, 0, 4);
				s[r] = 1;
				s[b] = 2;
				colouring(c, 6, s + 4);
				/* orbit representative: smallest image, coded in base 4 */
				for (int k = 0; k < 24; k++) {
					uint32_t code = 0;

					for (int v = 0; v < 4; v++)
						t[perm[k][v]] = s[v];
					for (int e = 0; e < 6; e++)
						t[4 + emap[k * 6 + e]] = s[4 + e];
					for (int i = 0; i < 10; i++)
						code = code * 4 + t[i];
					if (code < best)
						best = code;
				}
				for (int i = 0; i < nseen && !known; i++)
					known = seen[i] == best;
				if (known)
					continue;
				seen[nseen++] = best;
				assert_int_equal(az_tangled_adj_judge(a, s, 0.5, &out), 0);
				cnt[out.winner]++;
			}
	assert_int_equal(nseen, 405);
	assert_int_equal(cnt[AZ_TANGLED_RED], 79);
	assert_int_equal(cnt[AZ_TANGLED_BLUE], 79);
	assert_int_equal(cnt[AZ_TANGLED_DRAW], 247);
}

struct spot {
	int graph;
	uint8_t state[10];
	double f[4];
	double score;
	enum az_tangled_winner winner;
};

/* TANGLED.md 4.2, G2 column. */
static const struct spot spots[] = {
	{ 2, { 0, 1, 2, 1, 2, 1 }, { 0.9991, 0, 0.9991 }, -0.9991, AZ_TANGLED_BLUE },
	{ 2, { 0, 1, 2, 2, 2, 3 }, { 0.6667, 0, 0 }, 0, AZ_TANGLED_DRAW },
	{ 2, { 0, 1, 2, 2, 3, 2 }, { 0, 0.6667, 0 }, 0.6667, AZ_TANGLED_RED },
	{ 2, { 0, 1, 2, 3, 3, 3 }, { -0.6667, -0.6667, -0.6667 }, 0, AZ_TANGLED_DRAW },
	{ 2, { 0, 1, 2, 2, 2, 2 }, { 1.9976, 1.9976, 1.9976 }, 0, AZ_TANGLED_DRAW },
	{ 3, { 0, 0, 1, 2, 1, 1, 2, 1, 2, 3 }, { 0.9823, 0.9823, -2.9113, 0.9823 }, -3.8935,
	  AZ_TANGLED_BLUE },
	{ 3, { 0, 0, 1, 2, 1, 1, 2, 2, 2, 1 }, { 2.7643, 2.8245, 2.7643, 2.8245 }, -0.0602,
	  AZ_TANGLED_DRAW },
	{ 3, { 0, 0, 1, 2, 3, 2, 3, 2, 3, 2 }, { -0.3333, -0.3333, 0.9998, -0.3333 }, 1.3331,
	  AZ_TANGLED_RED },
	{ 3, { 0, 0, 1, 2, 1, 2, 3, 2, 3, 2 }, { 0.9084, 0.9084, 1.0, -2.6193 }, 3.6193,
	  AZ_TANGLED_RED },
};

static void check_spots(const char *method, double tol)
{
	struct az_tangled_adj *a[4] = { NULL };

	for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
		const struct spot *sp = &spots[i];
		struct az_tangled_outcome out;

		if (!a[sp->graph])
			a[sp->graph] = make_adj(sp->graph, method, 0, 0);
		az_tangled_graph_numbered(sp->graph, &G, NULL, 0);
		assert_int_equal(az_tangled_adj_judge(a[sp->graph], sp->state, 0.5, &out), 0);
		for (int v = 0; v < G.n; v++)
			if (fabs(out.influence[v] - sp->f[v]) > tol)
				fail_msg("%s spot %zu: F[%d] = %.6f, want %.4f", method, i, v,
					 out.influence[v], sp->f[v]);
		assert_true(fabs(out.score - sp->score) <= tol);
		assert_int_equal(out.winner, sp->winner);
	}
	for (int g = 0; g < 4; g++)
		az_tangled_adj_destroy(a[g]);
}

static void test_spot_values(void **st)
{
	(void)st;
	check_spots("exact", 1e-3);
	check_spots("exact-krylov", 1e-3);
	check_spots("table", 1e-3);
}

/* The raw evolution (no cache, no canonical forms) commutes with automorphisms and gauge
 * flips: the sharing of evolutions is exact. */
static void check_raw_symmetry(int graph, const uint8_t *labels)
{
	static uint8_t perm[AZ_TANGLED_MAX_SYMMETRIES][MAXV];
	struct tg_schedule sch;
	double c0[MAXV * MAXV], c1[MAXV * MAXV];
	uint8_t lab2[AZ_TANGLED_MAX_EDGES];
	int8_t gauge[MAXV];
	char err[256];
	int count, k;

	assert_int_equal(tg_schedule_load(NULL, &sch, err, sizeof(err)), 0);
	assert_int_equal(az_tangled_graph_numbered(graph, &G, err, sizeof(err)), 0);
	count = az_tangled_graph_automorphisms(&G, perm, AZ_TANGLED_MAX_SYMMETRIES, NULL);
	k = count - 1; /* some non-trivial automorphism */
	for (int v = 0; v < G.n; v++)
		gauge[v] = (int8_t)((v * 7 + graph) % 3 == 0 ? -1 : 1);
	/* lab2 = gauge(perm(labels)) */
	for (int e = 0; e < G.e; e++) {
		int u = perm[k][G.eu[e]], w = perm[k][G.ev[e]], ne = G.edge_of[u][w];
		uint8_t l = labels[e];

		if (l > 1 && gauge[u] * gauge[w] < 0)
			l = (uint8_t)(5 - l);
		lab2[ne] = l;
	}
	assert_int_equal(tg_exact_correlations(&G, labels, &sch, 5.0, c0), 0);
	assert_int_equal(tg_exact_correlations(&G, lab2, &sch, 5.0, c1), 0);
	for (int u = 0; u < G.n; u++)
		for (int v = 0; v < G.n; v++) {
			int pu = perm[k][u], pv = perm[k][v];

			assert_true(fabs(c0[u * G.n + v] -
					 gauge[pu] * gauge[pv] * c1[pu * G.n + pv]) < 1e-9);
		}
}

static void test_raw_symmetry(void **st)
{
	static const uint8_t k3[][3] = { { 1, 2, 3 }, { 2, 2, 3 }, { 3, 1, 2 } };
	static const uint8_t k4[] = { 1, 2, 3, 2, 3, 3 };
	static const uint8_t p3[] = { 2, 3 };

	(void)st;
	for (int i = 0; i < 3; i++)
		check_raw_symmetry(2, k3[i]);
	check_raw_symmetry(3, k4);
	check_raw_symmetry(11, p3);
}

/* Krylov versus dense: every K3 and K4 terminal state. */
static void test_krylov_vs_exact(void **st)
{
	(void)st;
	for (int graph = 2; graph <= 3; graph++) {
		struct az_tangled_adj *kr = make_adj(graph, "table:exact-krylov", 0, 0);
		struct az_tangled_adj *ex = table_of(graph);
		double maxdf = 0.0, maxds = 0.0;
		uint8_t labels[6];
		double fe[MAXV], fk[MAXV];

		for (int c = 0; c < pow3(G.e); c++) {
			colouring(c, G.e, labels);
			assert_int_equal(az_tangled_adj_influence(ex, labels, fe), 0);
			assert_int_equal(az_tangled_adj_influence(kr, labels, fk), 0);
			for (int r = 0; r < G.n; r++) {
				if (fabs(fe[r] - fk[r]) > maxdf)
					maxdf = fabs(fe[r] - fk[r]);
				for (int b = 0; b < G.n; b++) {
					double d = fabs((fe[r] - fe[b]) - (fk[r] - fk[b]));

					if (r != b && d > maxds)
						maxds = d;
				}
			}
		}
		print_message("krylov vs exact, graph %d (%s), all terminal states: max |dF| "
			      "%.2e, max |dscore| %.2e\n", graph, G.name, maxdf, maxds);
		assert_true(maxds < 1e-4);
		/* so the outcome tables are identical */
		{
			int ce[3], ck[3];

			count_outcomes(ex, -1, -1, ce);
			count_outcomes(kr, -1, -1, ck);
			assert_memory_equal(ce, ck, sizeof(ce));
		}
		az_tangled_adj_destroy(kr);
	}
}

/* Simulated annealing: the same K3 / K4 winners as the exact method (TANGLED.md 3.3),
 * reproducible from the seed, the classical frustrated-triangle correlations. */
static void test_anneal(void **st)
{
	struct az_tangled_adj *a, *b;
	double c1[9], c2[9];
	int ce[3], ca[3];
	static const uint8_t frustrated[3] = { 2, 2, 3 };

	(void)st;
	for (int graph = 2; graph <= 3; graph++) {
		struct az_tangled_adj *ex;

		a = make_adj(graph, "table:anneal", 10000, 7);
		ex = table_of(graph);
		count_outcomes(ex, -1, -1, ce);
		count_outcomes(a, -1, -1, ca);
		assert_memory_equal(ce, ca, sizeof(ce));
		az_tangled_adj_destroy(a);
	}
	a = make_adj(2, "anneal", 20000, 11);
	b = make_adj(2, "anneal", 20000, 11);
	assert_int_equal(az_tangled_adj_correlations(a, frustrated, c1), 0);
	assert_int_equal(az_tangled_adj_correlations(b, frustrated, c2), 0);
	assert_memory_equal(c1, c2, sizeof(c1));
	/* +1/3 on the green edges 0-1, 0-2; -1/3 on the purple edge 1-2 */
	assert_true(fabs(c1[0 * 3 + 1] - 1.0 / 3) < 0.03);
	assert_true(fabs(c1[0 * 3 + 2] - 1.0 / 3) < 0.03);
	assert_true(fabs(c1[1 * 3 + 2] + 1.0 / 3) < 0.03);
	assert_true(c1[0] == 0.0 && c1[4] == 0.0 && c1[8] == 0.0);
	az_tangled_adj_destroy(b);
	b = make_adj(2, "anneal", 20000, 12);
	assert_int_equal(az_tangled_adj_correlations(b, frustrated, c2), 0);
	assert_memory_not_equal(c1, c2, sizeof(c1));
	az_tangled_adj_destroy(a);
	az_tangled_adj_destroy(b);
}

/* TANGLED.md 3.3 via the raw method: an unfrustrated ferromagnet orders fully, grey edges
 * decouple. */
static void test_anneal_raw(void **st)
{
	struct tg_anneal_params p = { 2000, 16, 0.0, 3.0, 5, TG_ANNEAL_AUTO };
	static const uint8_t green[6] = { 2, 2, 2, 2, 2, 2 };
	double c[16];
	char err[64];

	(void)st;
	az_tangled_graph_numbered(3, &G, err, sizeof(err));
	assert_int_equal(tg_anneal_correlations(&G, green, &p, c), 0);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			assert_true(i == j ? c[i * 4 + j] == 0.0 : c[i * 4 + j] > 0.95);
	p.reads = 0;
	assert_int_equal(tg_anneal_correlations(&G, green, &p, c), -EINVAL);
}

/* Regression: dsyevd fails to converge on the Petersen graph's even block at the loop's
 * s = 0.001 + 3142 x 0.00025 = 0.78649999999994 (OpenBLAS 0.3.21's LAPACK); the retry on
 * H + 1e-5 I used to leave the shift in the even eigenvalues
 * only, so the gap l1 - l0 (compared across the blocks) read 2 Delta instead of ~0, and the
 * step control halved ds forever. The classical ground level there is a degenerate pair of
 * parity partners: the gap must be ~0. */
static void test_gap_with_eigensolver_retry(void **st)
{
	static const uint8_t petersen[15] = { 2, 2, 3, 2, 2, 3, 2, 2, 3, 2, 2, 3, 1, 2, 3 };
	struct tg_schedule sch;
	double delta, ebig, gap, sv = 0.001;
	char err[256];

	(void)st;
	assert_int_equal(tg_schedule_load(NULL, &sch, err, sizeof(err)), 0);
	assert_int_equal(az_tangled_graph_numbered(5, &G, err, sizeof(err)), 0);
	for (int k = 0; k < 3142; k++) /* the same rounding as the step loop */
		sv += 0.00025;
	tg_schedule_at(&sch, sv, &delta, &ebig);
	assert_true(fabs(delta - 8.61e-7) < 1e-12);
	assert_int_equal(tg_exact_gap(&G, petersen, delta, ebig, &gap), 0);
	assert_true(fabs(gap) < 1e-9);
	/* at the start, the transverse field dominates: gap ~ 2 Delta (even vs odd ground) */
	tg_schedule_at(&sch, 0.001, &delta, &ebig);
	assert_int_equal(tg_exact_gap(&G, petersen, delta, ebig, &gap), 0);
	assert_true(gap > 1.5 * delta && gap < 2.5 * delta);
}

/* Every K4 terminal state with the exact method from scratch (no cache file). */
static void test_k4_timing(void **st)
{
	struct az_tangled_adj_stats s;
	struct az_tangled_adj *a;
	double t0 = az_now(), t;
	int cnt[3];

	(void)st;
	a = make_adj(3, "exact", 0, 0);
	count_outcomes(a, -1, -1, cnt);
	t = az_now() - t0;
	az_tangled_adj_stats(a, &s);
	print_message("all 8748 K4 terminal states, exact: %.2f s, %llu evolutions "
		      "(729 colourings, %d automorphisms x gauge flips)\n", t,
		      (unsigned long long)s.evaluations, s.automorphisms);
	assert_int_equal(cnt[AZ_TANGLED_RED], 1644);
	assert_int_equal((int)s.evaluations, (int)s.cached);
	assert_true(s.evaluations < 729); /* symmetry sharing works; the time is only printed */
	az_tangled_adj_destroy(a);
}

/* The schedule: 1001 rows, sample rows of TANGLED.md 3.2, interpolation, G2 scaling. */
static void test_schedule(void **st)
{
	struct tg_schedule s;
	double d, b;
	char err[256];

	(void)st;
	assert_int_equal(tg_schedule_load(NULL, &s, err, sizeof(err)), 0);
	assert_true(fabs(s.a[0] - 3.8771432) < 1e-12 && fabs(s.b[0] - 0.19753668) < 1e-12);
	assert_true(fabs(s.a[300] - 1.117632) < 1e-12 && fabs(s.b[300] - 0.6317296) < 1e-12);
	assert_true(s.a[999] == 0.0 && fabs(s.b[1000] - 6.144336) < 1e-12);
	tg_schedule_at(&s, 0.3, &d, &b);
	assert_true(fabs(d - 1.117632 / 2) < 1e-9 && fabs(b - 0.6317296) < 1e-9);
	tg_schedule_at(&s, 0.0005, &d, &b);
	assert_true(fabs(d - (3.8771432 + 3.8697344) / 4) < 1e-9);
	/* Malformed text: -EINVAL, and the message says what and where. */
	static const char *const bad[][2] = {
		{"0 1 2\n", "1 rows, expected 1001"},
		{"0 1 2\n0.5 1 2\n", "t:2: expected row 1"},
		{"0 1 x\n", "t:1:"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(tg_schedule_parse(bad[i][0], "t", &s, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, bad[i][1]));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_spot_values),
		cmocka_unit_test(test_outcome_counts),
		cmocka_unit_test(test_k4_orbits),
		cmocka_unit_test(test_raw_symmetry),
		cmocka_unit_test(test_krylov_vs_exact),
		cmocka_unit_test(test_anneal),
		cmocka_unit_test(test_anneal_raw),
		cmocka_unit_test(test_gap_with_eigensolver_retry),
		cmocka_unit_test(test_k4_timing),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
