/* SPDX-License-Identifier: MIT */
/* aztangled: adjudicate Tangled terminal states (TANGLED.md section 3) with the exact
 * Schrodinger evolution, its Krylov variant or simulated annealing; prints the winner, the
 * score and the influence vector of each state, as text or JSON lines. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "games/tangled/tangled.h"
#include "base/version.h"

#define MAXV AZ_TANGLED_MAX_VERTICES
#define MAX_ENTRIES (AZ_TANGLED_MAX_VERTICES + AZ_TANGLED_MAX_EDGES)

static void usage(const char *prog)
{
	printf("Usage: %s [options] [STATE ...]\n"
	       "       %s table [options]   build the complete outcome table of a graph\n\n"
	       "Adjudicates Tangled terminal states: the states given as arguments, or one per\n"
	       "line on standard input when none are given (blank lines and lines starting with\n"
	       "'#' are skipped). A state is the comma-separated state vector of N + E integers:\n"
	       "N vertex entries (0 free, 1 red, 2 blue; exactly one 1 and one 2), then the E\n"
	       "edge labels in dictionary edge order (1 grey J=0, 2 green J=-1, 3 purple J=+1),\n"
	       "e.g. 0,1,2,1,2,1 on K3 (graph 2): red owns vertex 1, blue vertex 2, edge 0-2\n"
	       "green, edges 0-1 and 1-2 grey. Brackets and blanks are allowed:\n"
	       "[0, 1, 2, 1, 2, 1].\n"
	       "\n"
	       "The influence of vertex k is the sum of its correlations with all other vertices;\n"
	       "score = influence[red] - influence[blue]; red wins if score > epsilon, blue if\n"
	       "score < -epsilon, otherwise it is a draw.\n\n"
	       "Options:\n"
	       "  --graph N            numbered graph (default 3): 1 K2, 2 K3, 3 K4, 4 hexagon,\n"
	       "                       5 Petersen, 6 tesseract, 7-10 Zephyr Z(1,1)-Z(1,4), 11 P3,\n"
	       "                       12 Moser spindle, 18 3-prism, 19 barbell, 20 diamond\n"
	       "  --graph-file F       edge-list file instead: edges u-v or \"u v\", several\n"
	       "                       per line allowed, '#' comments, optional line\n"
	       "                       \"vertices N\"\n"
	       "  --adjudicator A      exact        dense Schrodinger evolution (N <= 12)\n"
	       "                       exact-krylov sparse Krylov propagator (N <= 20)\n"
	       "                       anneal       simulated annealing (any N)\n"
	       "                       table        every colouring once (small graphs), cached\n"
	       "                       default: exact for N <= 8, exact-krylov for N <= 20,\n"
	       "                       anneal above\n"
	       "  --epsilon E          draw band (default 0.5)\n"
	       "  --json               one JSON object per line: {\"state\": [...],\n"
	       "                       \"winner\": \"red\"|\"blue\"|\"draw\", \"score\": S,\n"
	       "                       \"influence\": [...]}\n"
	       "  --schedule F         anneal schedule file, 1001 rows \"s A B\" (default: the\n"
	       "                       built-in new_schedule.txt)\n"
	       "  --anneal-time NS     Schrodinger anneal time in ns (default 5)\n"
	       "  --reads R            simulated annealing reads (default 10000)\n"
	       "  --sweeps S           simulated annealing sweeps (default 16)\n"
	       "  --beta-min B         first beta (default 1/sqrt(sum J^2 + 0.001))\n"
	       "  --beta-max B         last beta (default 3)\n"
	       "  --seed S             simulated annealing seed (default 0)\n"
	       "  --cache-dir D        keep results per colouring in a cache file in D\n"
	       "\n"
	       "table: every canonical colouring (up to automorphisms and gauge flips) of a graph\n"
	       "with at most 16 edges, adjudicated once by forked workers into a checksummed file\n"
	       "that later runs map (azrun uses it automatically). --adjudicator names the inner\n"
	       "method (default: exact for N <= 6, anneal above); the key is the graph, method\n"
	       "and every parameter, the annealing seed included: table's --seed defaults to 1,\n"
	       "the seed azrun, azeval and azplay pass by default, so that the table built here\n"
	       "is the one their runs use. An interrupted build resumes.\n"
	       "  --cache-dir D        where the table lives (default $RINGZERO_CACHE_DIR,\n"
	       "                       $XDG_CACHE_HOME/ringzero or ~/.cache/ringzero)\n"
	       "  --workers N          building processes (default: the online CPUs)\n"
	       "  --quiet              no progress bar\n"
	       "  --version            print the version and exit\n"
	       "  --help               this text\n\n"
	       "Exit status: 0 all states adjudicated; 2 usage error or an invalid state (wrong\n"
	       "length, value out of range, not terminal: reported on stderr, the other states\n"
	       "are still adjudicated); 1 other failures (unreadable graph or schedule file ...).\n"
	       "Set OPENBLAS_NUM_THREADS=1: the eigenproblems are small.\n\n"
	       "Environment: AZ_TANGLED_ANNEAL=auto|scalar|avx2|avx512 picks the simulated\n"
	       "annealing code path (default auto: the fastest this CPU runs). Every path samples\n"
	       "the same distribution; the numbers for a seed differ per path, and the cache key\n"
	       "names the path. The vector paths take graphs of up to 16 vertices (larger ones\n"
	       "run scalar); naming a path the CPU lacks is an error. `azbench tangled` compares\n"
	       "their speed.\n",
	       prog, prog);
}

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

enum {
	OPT_GRAPH = 256, OPT_GRAPH_FILE, OPT_ADJ, OPT_EPS, OPT_JSON, OPT_SCHED, OPT_TIME,
	OPT_READS, OPT_SWEEPS, OPT_BMIN, OPT_BMAX, OPT_SEED, OPT_CACHE, OPT_HELP, OPT_WORKERS,
	OPT_QUIET
};

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
	if (!o->cache_dir && az_tangled_default_cache_dir(dir, sizeof(dir)) == 0)
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

static int number(const char *opt, const char *arg, double lo, double hi, double *out)
{
	char *end;
	double x = strtod(arg, &end);

	if (end == arg || *end || !(x >= lo && x <= hi)) {
		fprintf(stderr, "aztangled: %s: '%s' is not a number in [%g, %g]\n", opt, arg, lo,
			hi);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

int main(int argc, char **argv)
{
	if (az_version_option(argc, argv, "aztangled"))
		return 0;
	static const struct option longopts[] = {
		{ "graph", required_argument, NULL, OPT_GRAPH },
		{ "graph-file", required_argument, NULL, OPT_GRAPH_FILE },
		{ "adjudicator", required_argument, NULL, OPT_ADJ },
		{ "epsilon", required_argument, NULL, OPT_EPS },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "schedule", required_argument, NULL, OPT_SCHED },
		{ "anneal-time", required_argument, NULL, OPT_TIME },
		{ "reads", required_argument, NULL, OPT_READS },
		{ "sweeps", required_argument, NULL, OPT_SWEEPS },
		{ "beta-min", required_argument, NULL, OPT_BMIN },
		{ "beta-max", required_argument, NULL, OPT_BMAX },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "cache-dir", required_argument, NULL, OPT_CACHE },
		{ "workers", required_argument, NULL, OPT_WORKERS },
		{ "quiet", no_argument, NULL, OPT_QUIET },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	/* --graph and --epsilon as the game declares them (games/tangled/tangled_options.c) */
	const struct az_game_opt *gopt = az_game_desc_tangled.opts;
	struct az_tangled_options o;
	struct az_tangled_graph *g;
	struct ctx c = { 0 };
	char err[512] = "";
	int opt, ret, table = 0, quiet = 0;
	double x, graph, reads, sweeps, workers = 0;

	az_tangled_options_default(&o);
	o.adjudicator = NULL;
	c.json = 0;
	graph = o.graph;
	reads = o.anneal_reads;
	sweeps = o.anneal_sweeps;
	/* the numeric options: flag, range, and where the number goes */
	const struct {
		int opt;
		const char *name;
		double lo, hi, *to;
	} nums[] = {
		{ OPT_GRAPH, "--graph", gopt[AZ_TANGLED_OPT_GRAPH].lo, gopt[AZ_TANGLED_OPT_GRAPH].hi,
		  &graph },
		{ OPT_EPS, "--epsilon", gopt[AZ_TANGLED_OPT_EPSILON].lo,
		  gopt[AZ_TANGLED_OPT_EPSILON].hi, &o.epsilon },
		{ OPT_TIME, "--anneal-time", 1e-6, 1e6, &o.anneal_time_ns },
		{ OPT_READS, "--reads", 1, 4e9, &reads },
		{ OPT_SWEEPS, "--sweeps", 1, 1e6, &sweeps },
		{ OPT_BMIN, "--beta-min", 1e-9, 1e9, &o.beta_min },
		{ OPT_BMAX, "--beta-max", 1e-9, 1e9, &o.beta_max },
		{ OPT_SEED, "--seed", 0, 1.8e19, &x }, /* checked here, read exactly below */
		{ OPT_WORKERS, "--workers", 1, 4096, &workers },
	};

	if (argc > 1 && strcmp(argv[1], "table") == 0) {
		table = 1;
		o.seed = 1; /* azrun's default --seed, which seeds the adjudicator of its runs */
		argv[1] = argv[0];
		argv++;
		argc--;
	}

	opterr = 0; /* one line of our own instead of getopt's two */
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		size_t k = 0;

		while (k < AZ_ARRAY_LEN(nums) && nums[k].opt != opt)
			k++;
		if (k < AZ_ARRAY_LEN(nums) &&
		    number(nums[k].name, optarg, nums[k].lo, nums[k].hi, nums[k].to))
			return 2;
		switch (opt) {
		case OPT_GRAPH_FILE:
			o.graph_file = optarg;
			break;
		case OPT_ADJ:
			o.adjudicator = optarg;
			break;
		case OPT_JSON:
			c.json = 1;
			break;
		case OPT_SCHED:
			o.schedule = optarg;
			break;
		case OPT_SEED:
			o.seed = strtoull(optarg, NULL, 10);
			break;
		case OPT_CACHE:
			o.cache_dir = optarg;
			break;
		case OPT_QUIET:
			quiet = 1;
			break;
		case OPT_WORKERS:
		case OPT_GRAPH:
		case OPT_EPS:
		case OPT_TIME:
		case OPT_READS:
		case OPT_SWEEPS:
		case OPT_BMIN:
		case OPT_BMAX:
			break; /* numbers, read above */
		case 'h':
		case OPT_HELP:
			usage("aztangled");
			return 0;
		default: /* '?': unknown option, or one missing its value */
			fprintf(stderr, "aztangled: %s '%s' (aztangled --help lists the options)\n",
				optopt ? "option needs a value:" : "unknown option",
				argv[optind - 1]);
			return 2;
		}
	}
	o.graph = (int)graph;
	o.anneal_reads = (uint32_t)reads;
	o.anneal_sweeps = (uint32_t)sweeps;
	g = malloc(sizeof(*g));
	if (!g)
		return 1;
	if (o.graph_file)
		ret = az_tangled_graph_load(o.graph_file, g, err, sizeof(err));
	else
		ret = az_tangled_graph_numbered(o.graph, g, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "aztangled: %s\n", err);
		free(g);
		return ret == -EINVAL && !o.graph_file ? 2 : 1;
	}
	if (table) {
		o.table_workers = (int)workers;
		ret = table_main(g, &o, quiet);
		free(g);
		return ret;
	}
	if (!o.adjudicator)
		o.adjudicator = g->n <= 8 ? "exact" : g->n <= 20 ? "exact-krylov" : "anneal";
	ret = az_tangled_adj_create(g, &o, &c.adj, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "aztangled: %s\n", err);
		free(g);
		return ret == -EINVAL ? 2 : 1;
	}
	c.g = g;
	c.epsilon = o.epsilon;
	if (optind < argc) {
		for (int i = optind; i < argc; i++)
			one(&c, argv[i]);
	} else {
		char *line = NULL;
		size_t cap = 0;

		while (getline(&line, &cap, stdin) > 0) {
			char *s = line + strspn(line, " \t");

			trim(s);
			if (!*s || *s == '#')
				continue;
			one(&c, s);
		}
		free(line);
	}
	az_tangled_adj_destroy(c.adj);
	free(g);
	return c.invalid ? 2 : c.failed ? 1 : 0;
}
