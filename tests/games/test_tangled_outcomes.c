/* SPDX-License-Identifier: MIT */
/* Complete outcome tables (games/tangled/tangled_outcomes.c): canonical colouring counts
 * against Burnside's lemma; the table's answers equal the direct adjudicator's for every
 * colouring; a damaged byte anywhere is refused and the table rebuilt; an interrupted build
 * resumes from its verified chunks and ends byte-identical to an uninterrupted one. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "games/tangled/tangled_impl.h"
#include "tests/games/tangled_test.h"
#include "tests/test_util.h"

#define MAXV AZ_TANGLED_MAX_VERTICES

AZ_TEST_DIR_FIXTURE("/tmp/az_tangled_outXXXXXX")

struct syms {
	struct az_tangled_graph g;
	uint8_t (*perm)[MAXV];
	int16_t *emap;
	int naut;
};

static void syms_load(int graph, struct syms *s)
{
	char err[256];

	assert_int_equal(az_tangled_graph_numbered(graph, &s->g, err, sizeof(err)), 0);
	s->perm = malloc(sizeof(*s->perm) * AZ_TANGLED_MAX_SYMMETRIES);
	assert_non_null(s->perm);
	s->naut = az_tangled_graph_automorphisms(&s->g, s->perm, AZ_TANGLED_MAX_SYMMETRIES, NULL);
	s->emap = malloc(sizeof(int16_t) * (size_t)s->naut * (size_t)s->g.e);
	assert_non_null(s->emap);
	tg_edge_maps(&s->g, (const uint8_t (*)[MAXV])s->perm, s->naut, s->emap);
}

static void syms_free(struct syms *s)
{
	free(s->perm);
	free(s->emap);
}

/* Orbits of the 3^E colourings under automorphism-then-gauge, by Burnside: the mean over the
 * |Aut| 2^N group elements of the colourings each fixes. */
static uint64_t burnside(const struct syms *s)
{
	const struct az_tangled_graph *g = &s->g;
	uint64_t total = 1, fixed = 0;
	uint8_t c[32], img[32];

	for (int e = 0; e < g->e; e++)
		total *= 3;
	for (int k = 0; k < s->naut; k++) {
		const int16_t *em = s->emap + (size_t)k * (size_t)g->e;

		for (uint32_t flips = 0; flips < (1u << g->n); flips++) {
			for (uint64_t code = 0; code < total; code++) {
				tg_outcomes_decode(g->e, code, c);
				for (int e = 0; e < g->e; e++) {
					int f = em[e], u = g->eu[f], v = g->ev[f];
					int odd = ((flips >> u) ^ (flips >> v)) & 1;

					img[f] = (uint8_t)(c[e] > 1 && odd ? 5 - c[e] : c[e]);
				}
				fixed += memcmp(img, c, (size_t)g->e) == 0;
			}
		}
	}
	return fixed / ((uint64_t)s->naut << g->n);
}

static void test_counts_burnside(void **st)
{
	/* K3, K4, diamond, barbell, 3-prism; the counts are reported in the commit */
	static const struct { int graph; uint64_t count; } cases[] = {
		{ 2, 5 }, { 3, 18 }, { 20, 19 }, { 19, 56 }, { 18, 130 },
	};

	(void)st;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct syms s;
		uint64_t *codes, count;

		syms_load(cases[i].graph, &s);
		assert_int_equal(tg_outcomes_enumerate(&s.g, (const uint8_t (*)[MAXV])s.perm, s.emap,
						       s.naut, &codes, &count), 0);
		assert_int_equal(count, cases[i].count);
		if (s.g.e <= 9) /* the brute-force side grows as 3^E |Aut| 2^N */
			assert_int_equal(count, burnside(&s));
		for (uint64_t k = 1; k < count; k++)
			assert_true(codes[k] > codes[k - 1]);
		free(codes);
		syms_free(&s);
	}
}

/* The orbit index picks, for every colouring checked, the automorphism at which tg_canonical's
 * scan settles: the same canonical colouring and the same transform, byte for byte (all
 * colourings of the small graphs, a random 200,000 of Petersen's 3^15); an incomplete set of
 * representatives is refused. */
static void test_orbit_index(void **st)
{
	static const int graphs[] = { 2, 19, 18, 12, 5 };
	uint64_t rng = 0x9e3779b97f4a7c15ull;

	(void)st;
	for (size_t i = 0; i < sizeof(graphs) / sizeof(graphs[0]); i++) {
		struct syms s;
		uint64_t *codes, count, total = 1;
		uint8_t *idx, labels[32], c1[32], c2[32];
		struct tg_transform t1, t2;

		syms_load(graphs[i], &s);
		assert_int_equal(tg_outcomes_enumerate(&s.g, (const uint8_t (*)[MAXV])s.perm, s.emap,
						       s.naut, &codes, &count), 0);
		for (int e = 0; e < s.g.e; e++)
			total *= 3;
		assert_int_equal(tg_orbit_build(&s.g, s.emap, s.naut, codes, count, &idx), 0);
		for (uint64_t n = 0; n < (total < 200000 ? total : 200000); n++) {
			uint64_t code = n;

			if (total > 200000) {
				rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
				code = rng % total;
			}
			tg_outcomes_decode(s.g.e, code, labels);
			tg_canonical(&s.g, (const uint8_t (*)[MAXV])s.perm, s.emap, s.naut, 1, labels,
				     c1, &t1);
			tg_canonical_at(&s.g, (const uint8_t (*)[MAXV])s.perm, s.emap, idx[code],
					labels, c2, &t2);
			assert_memory_equal(c1, c2, (size_t)s.g.e);
			assert_memory_equal(t1.perm, t2.perm, (size_t)s.g.n);
			assert_memory_equal(t1.gauge, t2.gauge, (size_t)s.g.n);
		}
		free(idx);
		/* one orbit's representative missing: its colourings are never reached */
		assert_int_equal(tg_orbit_build(&s.g, s.emap, s.naut, codes + 1, count - 1, &idx),
				 -EPROTO);
		assert_null(idx);
		free(codes);
		syms_free(&s);
	}
}

/* ---- the machinery with a cheap deterministic evaluator ---- */

static int fake_eval(void *ctx, const uint8_t *labels, double *corr)
{
	const struct az_tangled_graph *g = ctx;
	uint64_t h = tg_fnv1a(TG_FNV_INIT, labels, (size_t)g->e);

	for (int u = 0; u < g->n; u++)
		for (int v = 0; v < g->n; v++) {
			int a = u < v ? u : v, b = u < v ? v : u;

			corr[u * g->n + v] = u == v ? 0.0 : (double)((h >> (a + 3 * b)) & 255) / 255.0;
		}
	return 0;
}

static void spec_for(struct syms *s, const char *path, struct tg_outcomes_spec *sp)
{
	uint64_t *codes, count;

	assert_int_equal(tg_outcomes_enumerate(&s->g, (const uint8_t (*)[MAXV])s->perm, s->emap,
					       s->naut, &codes, &count), 0);
	*sp = (struct tg_outcomes_spec){ .path = path, .key = "test key; fake evaluator",
					 .key_hash = 1234, .g = &s->g,
					 .npairs = (uint32_t)(s->g.n * (s->g.n - 1) / 2),
					 .codes = codes, .count = count };
}

static void test_resume_equals_uninterrupted(void **st)
{
	struct syms s;
	struct tg_outcomes_spec a, b;
	struct tg_outcomes_build bl = { .workers = 1, .chunk_records = 4, .eval = fake_eval };
	struct tg_outcomes *t;
	char pa[128], pb[128], chunk[160], err[256];
	unsigned char *fa, *fb;
	size_t la, lb;
	uint8_t labels[32];
	double corr[MAXV * MAXV];

	(void)st;
	syms_load(18, &s); /* 3-prism: 130 canonical colourings, 33 chunks of 4 */
	bl.eval_ctx = &s.g;
	snprintf(pa, sizeof(pa), "%s/whole.table", dir);
	snprintf(pb, sizeof(pb), "%s/resumed.table", dir);
	spec_for(&s, pa, &a);
	spec_for(&s, pb, &b);
	bl.workers = 2; /* the forked path */
	assert_int_equal(tg_outcomes_build(&a, &bl, err, sizeof(err)), 0);
	assert_int_equal(bl.computed, 130);
	/* interrupted after 5 chunks: the parts stay, no table */
	bl.workers = 1;
	bl.stop_after = 5;
	assert_int_equal(tg_outcomes_build(&b, &bl, err, sizeof(err)), -EINTR);
	assert_int_equal(access(pb, F_OK), -1);
	/* a killed writer's temp file, and a torn chunk: swept and recomputed */
	snprintf(chunk, sizeof(chunk), "%s.parts/chunk-000007.tmp.99", pb);
	az_test_write_file(chunk, "x", 1);
	snprintf(chunk, sizeof(chunk), "%s.parts/chunk-000004", pb);
	assert_int_equal(truncate(chunk, 50), 0);
	bl.stop_after = 0;
	bl.workers = 2;
	assert_int_equal(tg_outcomes_build(&b, &bl, err, sizeof(err)), 0);
	assert_int_equal(bl.kept, 16);      /* chunks 0-3 */
	assert_int_equal(bl.computed, 114); /* the rest */
	fa = az_test_read_file(pa, &la);
	fb = az_test_read_file(pb, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(fa, fb, la);
	free(fa);
	free(fb);
	snprintf(chunk, sizeof(chunk), "%s.parts", pb);
	assert_int_equal(access(chunk, F_OK), -1); /* cleaned up */
	/* lookups: every canonical colouring present, with its values; others absent */
	assert_int_equal(tg_outcomes_open(&b, &t), 0);
	for (uint64_t k = 0; k < b.count; k++) {
		const double *v = tg_outcomes_find(t, b.codes[k]);

		assert_non_null(v);
		tg_outcomes_decode(s.g.e, b.codes[k], labels);
		fake_eval(&s.g, labels, corr);
		for (int u = 0, p = 0; u < s.g.n; u++)
			for (int w = u + 1; w < s.g.n; w++)
				assert_true(v[p++] == corr[u * s.g.n + w]);
	}
	assert_null(tg_outcomes_find(t, b.codes[b.count - 1] + 1));
	tg_outcomes_close(t);
	free((void *)a.codes);
	free((void *)b.codes);
	syms_free(&s);
}

/* Damage one byte at each of several places: the table is refused every time. */
static void test_corrupt_refused(void **st)
{
	struct syms s;
	struct tg_outcomes_spec a;
	struct tg_outcomes_build bl = { .workers = 1, .eval = fake_eval };
	struct tg_outcomes *t;
	char pa[128], err[256];
	unsigned char *f;
	size_t len;

	(void)st;
	syms_load(19, &s);
	bl.eval_ctx = &s.g;
	snprintf(pa, sizeof(pa), "%s/corrupt.table", dir);
	spec_for(&s, pa, &a);
	assert_int_equal(tg_outcomes_build(&a, &bl, err, sizeof(err)), 0);
	f = az_test_read_file(pa, &len);
	assert_int_equal(tg_outcomes_open(&a, &t), 0);
	tg_outcomes_close(t);
	size_t spots[] = { 0, 8, 40, 100, len / 2, len - 100, len - 1 };

	for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
		f[spots[i]] ^= 0x10;
		az_test_write_file(pa, f, len);
		assert_int_equal(tg_outcomes_open(&a, &t), -EPROTO);
		f[spots[i]] ^= 0x10;
	}
	az_test_write_file(pa, f, len - 8); /* torn */
	assert_int_equal(tg_outcomes_open(&a, &t), -EPROTO);
	a.key = "another key";
	az_test_write_file(pa, f, len);
	assert_int_equal(tg_outcomes_open(&a, &t), -EPROTO);
	free(f);
	free((void *)a.codes);
	syms_free(&s);
}

/* ---- through the adjudicator ---- */

static struct az_tangled_adj *adj(const char *method, const char *tdir, struct syms *s)
{
	struct az_tangled_options o;

	az_tangled_options_default(&o);
	o.adjudicator = method;
	o.table_dir = tdir;
	o.anneal_reads = 40;
	o.anneal_sweeps = 8;
	o.table_workers = 2;
	return az_test_tangled_adj(19, &s->g, &o);
}

/* Every colouring of the barbell: the table answers exactly as the direct annealer (both
 * evaluate the canonical colouring with the same stream); a damaged table is rebuilt. */
static void test_adj_matches_direct(void **st)
{
	struct syms s;
	struct az_tangled_adj *direct, *tab;
	struct az_tangled_adj_stats sd, stt;
	uint8_t labels[32];
	double f1[MAXV], f2[MAXV];
	uint64_t total = 2187;

	(void)st;
	direct = adj("anneal", NULL, &s);
	tab = adj("table:anneal", dir, &s);
	az_tangled_adj_stats(tab, &stt);
	assert_int_equal(stt.table_entries, 56);
	assert_int_equal(stt.evaluations, 56);
	assert_int_equal(stt.table_built, 1);
	assert_string_not_equal(az_tangled_adj_table_path(tab), "");
	for (uint64_t code = 0; code < total; code++) {
		tg_outcomes_decode(7, code, labels);
		assert_int_equal(az_tangled_adj_influence(direct, labels, f1), 0);
		assert_int_equal(az_tangled_adj_influence(tab, labels, f2), 0);
		assert_memory_equal(f1, f2, sizeof(double) * 6);
	}
	az_tangled_adj_stats(tab, &stt);
	assert_int_equal(stt.evaluations, 56); /* every answer from the table */
	az_tangled_adj_stats(direct, &sd);
	assert_int_equal(sd.evaluations, 56);
	/* reopen: mapped, nothing computed; then a flipped byte: refused and rebuilt */
	char path[4096];
	size_t len;
	unsigned char *f;

	snprintf(path, sizeof(path), "%s", az_tangled_adj_table_path(tab));
	az_tangled_adj_destroy(tab);
	tab = adj("table:anneal", dir, &s);
	az_tangled_adj_stats(tab, &stt);
	assert_int_equal(stt.evaluations, 0);
	assert_int_equal(stt.file_loaded, 56);
	az_tangled_adj_destroy(tab);
	f = az_test_read_file(path, &len);
	f[len - 200] ^= 1;
	az_test_write_file(path, f, len);
	free(f);
	tab = adj("table:anneal", dir, &s);
	az_tangled_adj_stats(tab, &stt);
	assert_int_equal(stt.file_rejected, 1);
	assert_int_equal(stt.evaluations, 56);
	for (uint64_t code = 0; code < total; code += 7) {
		tg_outcomes_decode(7, code, labels);
		assert_int_equal(az_tangled_adj_influence(direct, labels, f1), 0);
		assert_int_equal(az_tangled_adj_influence(tab, labels, f2), 0);
		assert_memory_equal(f1, f2, sizeof(double) * 6);
	}
	az_tangled_adj_destroy(tab);
	az_tangled_adj_destroy(direct);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_burnside),
		cmocka_unit_test(test_orbit_index),
		cmocka_unit_test(test_resume_equals_uninterrupted),
		cmocka_unit_test(test_corrupt_refused),
		cmocka_unit_test(test_adj_matches_direct),
	};

	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
