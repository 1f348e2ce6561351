/* SPDX-License-Identifier: MIT */
/* aztangled: adjudicate Tangled terminal states (TANGLED.md section 3) with the exact
 * Schrodinger evolution, its Krylov variant or simulated annealing; prints the winner, the
 * score and the influence vector of each state, as text or JSON lines. */
#include <cblas.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "games/tangled/tangled.h"
#include "base/version.h"
#include "tools/options.h"
#include "help_text.h" /* generated from tools/help/ */

#define MAXV AZ_TANGLED_MAX_VERTICES
#define MAX_ENTRIES (AZ_TANGLED_MAX_VERTICES + AZ_TANGLED_MAX_EDGES)

/* What the command line sets: the adjudicator's options and the tool's own. */
struct cli {
	struct az_tangled_options o;
	int json, quiet;
};

/* Every option of aztangled, in --help's order (tools/options.h). No def: the value is the
 * library's default (az_tangled_options_default), which the help text names. */
#define C(field) offsetof(struct cli, field)
static const struct az_opt tangled_opt[] = {
	{"graph", AZ_OPT_INT, C(o.graph), "N", 0, 0, NULL, "numbered graph (default 3): 1 K2, "
	 "2 K3, 3 K4, 4 hexagon, 5 Petersen, 6 tesseract, 7-10 Zephyr Z(1,1)-Z(1,4), 11 P3, "
	 "12 Moser spindle, 18 3-prism, 19 barbell, 20 diamond", NULL, &az_game_desc_tangled,
	 NULL},
	{"graph-file", AZ_OPT_STR, C(o.graph_file), "F", 0, 0, NULL, "edge-list file instead: "
	 "edges u-v or \"u v\", several per line allowed, '#' comments, optional line "
	 "\"vertices N\"", NULL, NULL, NULL},
	{"adjudicator", AZ_OPT_STR, C(o.adjudicator), "A", 0, 0, NULL, "exact: dense "
	 "Schrodinger evolution (N <= 12); exact-krylov: sparse Krylov propagator (N <= 20); "
	 "anneal: simulated annealing (any N); table: every colouring once (small graphs), "
	 "cached. Default: exact for N <= 8, exact-krylov for N <= 20, anneal above", NULL,
	 NULL, NULL},
	{"epsilon", AZ_OPT_F64, C(o.epsilon), "E", 0, 0, NULL, "draw band (default 0.5)", NULL,
	 &az_game_desc_tangled, NULL},
	{"json", AZ_OPT_FLAG, C(json), NULL, 0, 0, NULL, "one JSON object per line: {\"state\": "
	 "[...], \"winner\": \"red\"|\"blue\"|\"draw\", \"score\": S, \"influence\": [...]}",
	 NULL, NULL, NULL},
	{"schedule", AZ_OPT_STR, C(o.schedule), "F", 0, 0, NULL, "anneal schedule file, 1001 "
	 "rows \"s A B\" (default: the built-in new_schedule.txt)", NULL, NULL, NULL},
	{"anneal-time", AZ_OPT_F64, C(o.anneal_time_ns), "NS", 1e-6, 1e6, NULL,
	 "Schrodinger anneal time in ns (default 5)", NULL, NULL, NULL},
	{"reads", AZ_OPT_U32, C(o.anneal_reads), "R", 1, 4e9, NULL,
	 "simulated annealing reads (default 10000)", NULL, NULL, NULL},
	{"sweeps", AZ_OPT_U32, C(o.anneal_sweeps), "S", 1, 1e6, NULL,
	 "simulated annealing sweeps (default 16)", NULL, NULL, NULL},
	{"beta-min", AZ_OPT_F64, C(o.beta_min), "B", 1e-9, 1e9, NULL,
	 "first beta (default 1/sqrt(sum J^2 + 0.001))", NULL, NULL, NULL},
	{"beta-max", AZ_OPT_F64, C(o.beta_max), "B", 1e-9, 1e9, NULL, "last beta (default 3)",
	 NULL, NULL, NULL},
	{"seed", AZ_OPT_U64, C(o.seed), "S", 0, 0, NULL, "simulated annealing seed (default 0; "
	 "table: 1)", NULL, NULL, NULL},
	{"cache-dir", AZ_OPT_STR, C(o.cache_dir), "D", 0, 0, NULL, "keep results per colouring "
	 "in a cache file in D; table: where the table lives (default $RINGZERO_CACHE_DIR, "
	 "$XDG_CACHE_HOME/ringzero or ~/.cache/ringzero)", NULL, NULL, NULL},
	{"workers", AZ_OPT_INT, C(o.table_workers), "N", 1, 4096, NULL,
	 "table: building processes (default: the online CPUs)", NULL, NULL, NULL},
	{"quiet", AZ_OPT_FLAG, C(quiet), NULL, 0, 0, NULL, "table: no progress bar", NULL, NULL,
	 NULL},
};
#undef C

static const struct az_opts tangled_opts = {
	.tool = "aztangled", .opt = tangled_opt, .n = AZ_ARRAY_LEN(tangled_opt),
	.positionals = 1, .help = az_help_aztangled, .version = 1};

/* Parse "0,1,2" (optional [ ], blanks) into v; 0, or -EINVAL with a message in err. */
static int parse_state(const char *text, int *v, int *len, char *err, size_t errlen)
{
	const char *p = text;
	int n = 0;

	while (*p == ' ' || *p == '\t' || *p == '[')
		p++;
	for (;;) {
		char *end;
		long x;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == ']' || !*p || *p == '\n' || *p == '\r')
			break;
		x = strtol(p, &end, 10);
		if (end == p) {
			snprintf(err, errlen, "entry %d is not a number (at '%.12s')", n, p);
			return -EINVAL;
		}
		if (n >= MAX_ENTRIES) {
			snprintf(err, errlen, "more than %d entries", MAX_ENTRIES);
			return -EINVAL;
		}
		v[n++] = x < -1000 ? -1000 : x > 1000 ? 1000 : (int)x;
		p = end;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == ',')
			p++;
		else if (*p && *p != ']' && *p != '\n' && *p != '\r') {
			snprintf(err, errlen, "unexpected '%c' after entry %d", *p, n - 1);
			return -EINVAL;
		}
	}
	if (*p == ']')
		p++;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p) {
		snprintf(err, errlen, "unexpected text '%.12s' after the state", p);
		return -EINVAL;
	}
	*len = n;
	return 0;
}

static const char *winner_name(enum az_tangled_winner w)
{
	return w == AZ_TANGLED_RED ? "red" : w == AZ_TANGLED_BLUE ? "blue" : "draw";
}

struct ctx {
	const struct az_tangled_graph *g;
	struct az_tangled_adj *adj;
	double epsilon;
	int json;
	int invalid;
	int failed;
};

static void trim(char *s)
{
	size_t l = strlen(s);

	while (l && (s[l - 1] == '\n' || s[l - 1] == '\r' || s[l - 1] == ' ' || s[l - 1] == '\t'))
		s[--l] = '\0';
}

static void one(struct ctx *c, const char *text)
{
	int v[MAX_ENTRIES], len = 0, n = c->g->n, ret;
	uint8_t st[MAX_ENTRIES];
	struct az_tangled_outcome out;
	char err[256];

	ret = parse_state(text, v, &len, err, sizeof(err));
	if (!ret)
		ret = az_tangled_state_check(c->g, v, len, 1, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "aztangled: invalid state '%s' for graph %s (N=%d, E=%d): %s\n",
			text, c->g->name, n, c->g->e, err);
		c->invalid++;
		return;
	}
	for (int i = 0; i < len; i++)
		st[i] = (uint8_t)v[i];
	ret = az_tangled_adj_judge(c->adj, st, c->epsilon, &out);
	if (ret) {
		fprintf(stderr, "aztangled: state '%s': adjudication failed: %s\n", text,
			strerror(-ret));
		c->failed++;
		return;
	}
	if (c->json) {
		printf("{\"state\": [");
		for (int i = 0; i < len; i++)
			printf("%s%d", i ? ", " : "", v[i]);
		printf("], \"winner\": \"%s\", \"score\": %.6f, \"influence\": [",
		       winner_name(out.winner), out.score + 0.0);
		for (int k = 0; k < n; k++)
			printf("%s%.6f", k ? ", " : "", out.influence[k] + 0.0);
		printf("]}\n");
	} else {
		/* + 0.0 turns an exact -0 into 0 */
		printf("%s  winner=%s  score=%+.6f  influence=", text, winner_name(out.winner),
		       out.score + 0.0);
		for (int k = 0; k < n; k++)
			printf("%s%.6f", k ? "," : "", out.influence[k] + 0.0);
		printf("\n");
	}
	fflush(stdout);
}

static void table_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct az_progress *p = ctx;

	p->total = total ? total : 1; /* known once the colourings are enumerated */
	az_progress_update(p, done, "colourings");
}

/* aztangled table: build (or verify) the complete outcome table and print a summary. */
static int table_main(const struct az_tangled_graph *g, struct az_tangled_options *o,
		      int quiet)
{
	char dir[1024], adj[64], err[512] = "", dur[32];
	struct az_tangled_adj *a = NULL;
	struct az_tangled_adj_stats st;
	struct az_progress bar;
	double t0 = az_now(), colourings = 1.0;
	int ret;

	if (g->e > 16) {
		fprintf(stderr, "aztangled: table: graph %s has %d edges; complete tables go up to "
			"16 (larger graphs cache lazily)\n", g->name, g->e);
		return 2;
	}
	if (!o->cache_dir && az_cache_dir(dir, sizeof(dir)) == 0)
		o->cache_dir = dir;
	if (!o->cache_dir) {
		fprintf(stderr, "aztangled: table: no cache directory (--cache-dir, or set HOME)\n");
		return 2;
	}
	o->table_dir = o->cache_dir;
	if (!o->adjudicator)
		o->adjudicator = "table";
	else if (strncmp(o->adjudicator, "table", 5) != 0) {
		snprintf(adj, sizeof(adj), "table:%s", o->adjudicator);
		o->adjudicator = adj;
	}
	char label[80];

	snprintf(label, sizeof(label), "table %s", g->name);
	az_progress_begin(&bar, label, 1, quiet);
	o->table_progress = table_progress;
	o->table_progress_ctx = &bar;
	ret = az_tangled_adj_create(g, o, &a, err, sizeof(err));
	az_progress_end(&bar);
	if (ret) {
		fprintf(stderr, "aztangled: table: %s\n", err);
		return ret == -EINVAL ? 2 : 1;
	}
	az_tangled_adj_stats(a, &st);
	for (int e = 0; e < g->e; e++)
		colourings *= 3.0;
	az_format_duration(az_now() - t0, dur, sizeof(dur));
	if (g->e <= 6)
		printf("graph %s: %d edges, a table computed in memory at setup; no table file\n",
		       g->name, g->e);
	else
		printf("graph %s (N=%d, E=%d): %.0f colourings, %llu canonical (%d automorphisms, "
		       "gauge flips), %s, %s (%llu evaluated%s), %s, %llu bytes\n", g->name, g->n,
		       g->e, colourings, (unsigned long long)st.table_entries, st.automorphisms,
		       az_tangled_adj_name(a), dur, (unsigned long long)st.evaluations,
		       st.table_built ? "" : ", already built", az_tangled_adj_table_path(a),
		       (unsigned long long)st.table_bytes);
	az_tangled_adj_destroy(a);
	return 0;
}

/* The graph of o: numbered or from its file, into *g (free()). Returns 0, or the exit status
 * after a message. */
static int load_graph(const struct az_tangled_options *o, struct az_tangled_graph **g)
{
	char err[AZ_ERR_LEN] = "";
	int ret;

	*g = malloc(sizeof(**g));
	if (!*g)
		return 1;
	if (o->graph_file)
		ret = az_tangled_graph_load(o->graph_file, *g, err, sizeof(err));
	else
		ret = az_tangled_graph_numbered(o->graph, *g, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "aztangled: %s\n", err);
		free(*g);
		return ret == -EINVAL && !o->graph_file ? 2 : 1;
	}
	return 0;
}

/* Adjudicate the npos states of args, or stdin's lines when there are none. */
static void adjudicate_all(struct ctx *c, char **args, int npos)
{
	char *line = NULL;
	size_t cap = 0;

	for (int i = 0; i < npos; i++)
		one(c, args[i]);
	while (npos == 0 && getline(&line, &cap, stdin) > 0) {
		char *s = line + strspn(line, " \t");

		trim(s);
		if (*s && *s != '#')
			one(c, s);
	}
	free(line);
}

int main(int argc, char **argv)
{
	struct az_tangled_graph *g;
	struct ctx c = { 0 };
	struct cli cli = { 0 };
	char err[AZ_ERR_LEN] = "";
	int ret, table = 0, npos = 0;

	if (az_version_option(argc, argv, "aztangled"))
		return 0;
	/* One BLAS thread (inherited by the table's forked builders): the adjudicator's LAPACKE
	 * calls are small, and OpenBLAS's spinning threads stall them on a busy machine. */
	openblas_set_num_threads(1);
	az_tangled_options_default(&cli.o);
	if (argc > 1 && strcmp(argv[1], "table") == 0) {
		table = 1;
		cli.o.seed = 1; /* azrun's default --seed, which seeds the adjudicator of its runs */
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	ret = az_opts_parse(&tangled_opts, &cli, argc, argv, &npos);
	if (ret != 0)
		return ret > 0 ? 0 : 2;
	if (table && npos) {
		fprintf(stderr, "aztangled: table takes no states ('%s'; see aztangled --help)\n",
			argv[1]);
		return 2;
	}
	if ((ret = load_graph(&cli.o, &g)) != 0)
		return ret;
	if (table) {
		ret = table_main(g, &cli.o, cli.quiet);
		free(g);
		return ret;
	}
	if (!cli.o.adjudicator)
		cli.o.adjudicator = g->n <= 8 ? "exact" : g->n <= 20 ? "exact-krylov" : "anneal";
	ret = az_tangled_adj_create(g, &cli.o, &c.adj, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "aztangled: %s\n", err);
		free(g);
		return ret == -EINVAL ? 2 : 1;
	}
	c.g = g;
	c.epsilon = cli.o.epsilon;
	c.json = cli.json;
	adjudicate_all(&c, argv + 1, npos);
	az_tangled_adj_destroy(c.adj);
	free(g);
	return c.invalid ? 2 : c.failed ? 1 : 0;
}
