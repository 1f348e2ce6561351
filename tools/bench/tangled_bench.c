/* SPDX-License-Identifier: MIT */
/* `azbench tangled`: simulated-annealing adjudications per second of every annealing path this
 * CPU runs (scalar, avx2, avx512: AZ_TANGLED_ANNEAL's values) on one graph, side by side, with
 * each path's speed over the scalar one. Paths alternate in short rounds, so that load from
 * other processes falls on all of them alike. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "base/rng.h"
#include "games/tangled/tangled.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/bench_opts.h"
#include "help_text.h" /* generated from tools/help/ */

#define DEFAULT_SECONDS "6"
#define ROUND_S 0.25
#define NPATHS 3

struct tangled_opts {
	struct az_bench_opts common;
	int graph;
	uint32_t reads, sweeps;
};

static const char *const path_names[NPATHS] = { "scalar", "avx2", "avx512" };

static void tangled_notes(FILE *f)
{
	fprintf(f, "Vector paths cover graphs of up to %d vertices.\n", AZ_TANGLED_ANNEAL_VECTOR_MAX_N);
}

/* Every option of azbench tangled, in --help's order (tools/options.h). */
#define O(field) offsetof(struct tangled_opts, field)
static const struct az_opt tangled_opt[] = {
	{"graph", AZ_OPT_INT, O(graph), "N", 0, 0, "5", "numbered graph (5: Petersen)", NULL,
	 &az_game_desc_tangled, NULL},
	{"reads", AZ_OPT_U32, O(reads), "R", 1, 100000000, "10000", "reads per adjudication",
	 NULL, NULL, NULL},
	{"sweeps", AZ_OPT_U32, O(sweeps), "S", 1, 100000000, "16", "sweeps per read", NULL, NULL,
	 NULL},
	AZ_BENCH_COMMON_OPTS(O, common, DEFAULT_SECONDS),
};
#undef O

/* Adjudicate random colourings for about `seconds`; adds the annealing runs done and their
 * time. A colouring whose orbit under the graph's symmetries was already adjudicated is a
 * cache hit (Petersen has only a few hundred orbits): neither counted nor timed. */
static int measure(struct az_tangled_adj *a, const struct az_tangled_graph *g, struct az_rng *r,
		   double seconds, uint64_t *runs, double *elapsed)
{
	uint8_t labels[AZ_TANGLED_MAX_EDGES];
	double *corr = malloc(sizeof(double) * (size_t)g->n * (size_t)g->n);
	uint64_t start = az_bench_now_ns(), t0, t1;
	int rc = 0;

	if (!corr)
		return -ENOMEM;
	do {
		struct az_tangled_adj_stats st0, st1;

		for (int e = 0; e < g->e; e++)
			labels[e] = (uint8_t)(1 + az_rng_below(r, 3));
		az_tangled_adj_stats(a, &st0);
		t0 = az_bench_now_ns();
		rc = az_tangled_adj_correlations(a, labels, corr);
		t1 = az_bench_now_ns();
		az_tangled_adj_stats(a, &st1);
		if (st1.evaluations != st0.evaluations) {
			*runs += st1.evaluations - st0.evaluations;
			*elapsed += (double)(t1 - t0) * 1e-9;
		}
	} while (!rc && (double)(t1 - start) < 1e9 * seconds);
	free(corr);
	return rc;
}

static int add_rows(const struct tangled_opts *o, const struct az_tangled_graph *g,
		    const int *ok, const uint64_t *runs, const double *secs,
		    struct az_bench_table *t, char *text, size_t len)
{
	double rate[NPATHS];
	int best = 0;

	for (int i = 0; i < NPATHS; i++) {
		struct az_bench_row r = { 0 };

		if (!ok[i])
			continue;
		rate[i] = (double)runs[i] / secs[i];
		best = rate[i] > rate[best] ? i : best;
		az_bench_row_str(&r, "graph", g->name);
		az_bench_row_int(&r, "n", g->n);
		az_bench_row_str(&r, "path", path_names[i]);
		az_bench_row_int(&r, "reads", o->reads);
		az_bench_row_int(&r, "sweeps", o->sweeps);
		az_bench_row_int(&r, "adjudications", (int64_t)runs[i]);
		az_bench_row_num(&r, "adj_per_s", rate[i], 1);
		az_bench_row_num(&r, "ns_per_update",
				 1e9 / rate[i] / ((double)o->reads * o->sweeps * g->n), 3);
		az_bench_row_num(&r, "vs_scalar", rate[i] / rate[0], 2);
		if (az_bench_table_add(t, &r) < 0)
			return -ENOMEM;
	}
	snprintf(text, len, "AZ_TANGLED_ANNEAL=%s (auto picks the fastest path this CPU runs): "
		 "%.1f adjudications/s on %s, %.1fx the scalar path", path_names[best], rate[best],
		 g->name, rate[best] / rate[0]);
	return 0;
}

int az_bench_tangled(int argc, char **argv)
{
	static const struct az_opts opts_table = {
		.tool = "azbench tangled", .opt = tangled_opt, .n = AZ_ARRAY_LEN(tangled_opt),
		.help = az_help_azbench_tangled, .notes = tangled_notes
	};
	struct az_tangled_adj *adj[NPATHS] = { NULL };
	struct az_bench_table t = { 0 };
	struct az_tangled_options to;
	struct az_tangled_graph g;
	struct tangled_opts o = { 0 };
	struct az_rng rng;
	uint64_t runs[NPATHS] = { 0 };
	double secs[NPATHS] = { 0 }, rounds;
	int ok[NPATHS] = { 0 }, npaths = 0;
	int rc = az_bench_parse(&opts_table, &o, &o.common, argc, argv);
	char err[256], text[512];

	if (rc)
		return rc == 1 ? 0 : 2;
	if (az_tangled_graph_numbered(o.graph, &g, err, sizeof(err))) {
		fprintf(stderr, "azbench tangled: %s\n", err);
		return 2;
	}
	az_tangled_options_default(&to);
	to.adjudicator = "anneal";
	to.anneal_reads = o.reads;
	to.anneal_sweeps = o.sweeps;
	for (int i = 0; i < NPATHS; i++) {
		to.anneal_path = path_names[i];
		rc = az_tangled_adj_create(&g, &to, &adj[i], err, sizeof(err));
		if (rc == -ENODEV || (i && g.n > AZ_TANGLED_ANNEAL_VECTOR_MAX_N)) {
			az_bench_progress(&o.common, "tangled: %s skipped (%s)\n", path_names[i],
					  rc ? err : "more vertices than a 16-bit lane holds");
			continue;
		}
		if (rc) {
			fprintf(stderr, "azbench tangled: %s: %s\n", path_names[i], err);
			rc = 1;
			goto out;
		}
		ok[i] = 1;
		npaths++;
	}
	rounds = o.common.seconds / (ROUND_S * npaths);
	az_bench_progress(&o.common, "tangled: %s, %d paths, %u reads x %u sweeps, %.0f rounds "
			  "of %.2fs each\n", g.name, npaths, o.reads, o.sweeps, rounds < 1 ? 1 : rounds,
			  ROUND_S);
	az_rng_seed(&rng, 1);
	for (int k = 0; k < (rounds < 1 ? 1 : (int)rounds); k++)
		for (int i = 0; i < NPATHS; i++) {
			if (!ok[i])
				continue;
			rc = measure(adj[i], &g, &rng, ROUND_S, &runs[i], &secs[i]);
			if (rc) {
				fprintf(stderr, "azbench tangled: %s: %s\n", path_names[i],
					strerror(-rc));
				rc = 1;
				goto out;
			}
		}
	rc = add_rows(&o, &g, ok, runs, secs, &t, text, sizeof(text));
	if (rc) {
		rc = 1;
		goto out;
	}
	o.common.table_cols = NULL;
	rc = az_bench_emit(&t, &o.common, NULL);
	az_bench_recommend(&o.common, text, NULL);
out:
	for (int i = 0; i < NPATHS; i++)
		az_tangled_adj_destroy(adj[i]);
	az_bench_table_free(&t);
	return rc;
}
