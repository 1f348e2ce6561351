/* SPDX-License-Identifier: MIT */
/* `azbench search`: simulations per second of the tree search alone (selection, expansion,
 * backup, the game's legal() and apply()), with a stub evaluator in place of the network, on
 * self-play games played the way a worker plays them (noise, temperature, tree reuse). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "games/game.h"
#include "games/tangled/tangled.h"
#include "mcts/mcts.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/bench_opts.h"
#include "help_text.h" /* generated from tools/help/ */

#define MAX_GAMES 4
#define DEFAULT_MOVES 500

/* --game: the registered games named, comma-separated. */
struct game_list {
	char text[256]; /* the value, split in place */
	const char *name[MAX_GAMES];
	int n;
};

struct search_opts {
	struct az_bench_opts common;
	struct game_list games;
	uint32_t graph, sims, moves, reads;
	const char *stub; /* uniform or peaked (hashed priors) */
	int peaked;       /* stub is "peaked" */
};

/* The stub evaluator's context. */
struct stub {
	const struct az_game *g;
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	int peaked;
	uint64_t evals;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* uniform: 1/n over the n legal moves, value 0. peaked: priors proportional to 1 + 15 u^4 for a
 * u in [0, 1) hashed from the position and the action (a few moves stand out, as with a
 * trained network), value in [-0.5, 0.5) hashed from the position. Deterministic either way. */
static int stub_eval(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	struct stub *s = ctx;
	const struct az_game *g = s->g;
	uint64_t h = 0x9e3779b97f4a7c15ULL;
	float sum = 0.0f;

	g->legal(state, s->mask);
	for (uint32_t i = 0; s->peaked && i < g->state_bytes; i++)
		h = mix64(h ^ ((const uint8_t *)state)[i]);
	for (uint32_t a = 0; a < g->actions; a++) {
		float u = (float)(mix64(h + a) >> 40) / (float)(1u << 24);
		float p = s->peaked ? 1.0f + 15.0f * u * u * u * u : 1.0f;

		policy[a] = s->mask[a] ? p : 0.0f;
		sum += policy[a];
	}
	for (uint32_t a = 0; a < g->actions; a++)
		policy[a] = sum > 0.0f ? policy[a] / sum : 0.0f;
	*value = s->peaked ? (float)(mix64(h) >> 40) / (float)(1u << 24) - 0.5f : 0.0f;
	s->evals++;
	return 0;
}

struct search_result {
	uint64_t sims, evals, moves, games, hash; /* hash: of every move chosen, in order */
	double seconds, cpu_seconds; /* wall clock; this thread's CPU time */
};

/* This thread's CPU time in seconds: the rates use it, so that other load on a shared machine
 * (which stretches the wall clock) blurs them less. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Self-play moves of `sims` simulations each until `moves` moves were chosen (games restart
 * from the start position). Returns 0 or -errno. */
static int run_games(const struct az_game *g, const struct search_opts *o, uint32_t temp_plies,
		     struct search_result *res)
{
	struct az_mcts_params mp;
	struct az_tree *t;
	struct stub s = {.g = g, .peaked = o->peaked};
	uint8_t state[AZ_GAME_STATE_MAX];
	uint64_t hash = 0;
	uint32_t ply = 0;
	int rc;

	az_mcts_params_default(&mp, g);
	mp.seed = 1;
	g->init(state);
	rc = az_tree_create(g, &mp, state, &t);
	if (rc < 0)
		return rc;
	az_tree_set_noise(t, 1);
	memset(res, 0, sizeof(*res));
	double t0 = az_now(), c0 = cpu_now();
	while (rc == 0 && res->moves < o->moves) {
		uint32_t before = az_tree_root_visits(t);
		float v;
		int a;

		rc = az_mcts_search(t, az_tree_sims_target(t, o->sims, 1), stub_eval, &s);
		if (rc < 0)
			break;
		res->sims += az_tree_root_visits(t) - before;
		a = az_tree_pick(t, ply < temp_plies ? 1.0f : 0.0f, NULL);
		AZ_ASSERT(a >= 0);
		hash = mix64(hash ^ (uint64_t)a);
		g->apply(state, a);
		res->moves++;
		ply++;
		if (g->terminal(state, &v)) {
			res->games++;
			ply = 0;
			g->init(state);
			az_tree_reset(t, state);
		} else {
			AZ_ASSERT(az_tree_advance(t, a) == 0);
		}
	}
	res->seconds = az_now() - t0;
	res->cpu_seconds = cpu_now() - c0;
	res->evals = s.evals;
	res->hash = hash;
	az_tree_destroy(t);
	return rc;
}

/* The game by name; Tangled is set up first with graph o->graph and a cheap adjudicator
 * (simulated annealing with o->reads reads of 4 sweeps: the search, not the adjudicator, is
 * measured). Returns NULL after a message on stderr. */
static const struct az_game *game_setup(const struct search_opts *o, const char *name)
{
	const struct az_game_desc *d = az_game_desc_find(name);
	char err[256];

	if (d && strcmp(d->name, "tangled") == 0) {
		struct az_tangled_options to;

		az_tangled_options_default(&to);
		to.graph = (int)o->graph;
		to.adjudicator = "anneal";
		to.anneal_reads = o->reads;
		to.anneal_sweeps = 4;
		if (az_tangled_setup(&to, err, sizeof(err)) < 0) {
			fprintf(stderr, "azbench search: %s\n", err);
			return NULL;
		}
		return az_tangled_game();
	}
	if (!d || !az_game_desc_game(d)) {
		fprintf(stderr, "azbench search: unknown game '%s' (%s)\n", name, az_game_names());
		return NULL;
	}
	return az_game_desc_game(d);
}

/* An AZ_OPT_PARSE parser of --game: at most MAX_GAMES registered games, comma-separated. */
static int parse_games(const char *v, void *field)
{
	struct game_list *l = field;
	char *save = NULL;

	if (strlen(v) >= sizeof(l->text))
		return -EINVAL;
	snprintf(l->text, sizeof(l->text), "%s", v);
	l->n = 0;
	for (char *s = strtok_r(l->text, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		if (l->n == MAX_GAMES || !az_game_desc_find(s))
			return -EINVAL;
		l->name[l->n++] = s;
	}
	return l->n ? 0 : -EINVAL;
}

/* Every option of azbench search, in --help's order (tools/options.h). */
#define O(field) offsetof(struct search_opts, field)
static const struct az_opt search_opt[] = {
	{"game", AZ_OPT_PARSE, O(games), "LIST", 0, 0, "connect4,tangled",
	 "comma-separated games (at most " AZ_BENCH_STR(MAX_GAMES) ")",
	 az_bench_all_games_choices, NULL, parse_games},
	{"graph", AZ_OPT_U32, O(graph), "N", 0, 0, "5",
	 "Tangled's numbered graph (5: Petersen, 55 actions); adjudicated by simulated "
	 "annealing with --reads reads of 4 sweeps", NULL, &az_game_desc_tangled, NULL},
	{"reads", AZ_OPT_U32, O(reads), "N", 1, 100000, "4",
	 "annealing reads per terminal colouring", NULL, NULL, NULL},
	{"sims", AZ_OPT_U32, O(sims), "N", 1, 1000000, "800", "simulations per move", NULL, NULL,
	 NULL},
	{"moves", AZ_OPT_U32, O(moves), "N", 1, 10000000, AZ_BENCH_STR(DEFAULT_MOVES),
	 "moves to search per game", NULL, NULL, NULL},
	{"stub", AZ_OPT_CHOICE, O(stub), "KIND", 0, 0, "uniform",
	 "the evaluator: uniform priors and value 0, or priors and value hashed from the "
	 "position", "uniform|peaked", NULL, NULL},
	AZ_BENCH_COMMON_OPTS(O, common, NULL),
};
#undef O

/* One game's row. */
static void add_row(struct az_bench_table *t, const struct az_game *g,
		    const struct search_opts *o, const struct search_result *r, int *status)
{
	struct az_bench_row row = { 0 };
	char hex[20];

	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)r->hash);
	az_bench_row_str(&row, "game", g->name);
	az_bench_row_int(&row, "actions", g->actions);
	az_bench_row_str(&row, "stub", o->stub);
	az_bench_row_int(&row, "sims", (int64_t)r->sims);
	az_bench_row_int(&row, "moves", (int64_t)r->moves);
	az_bench_row_int(&row, "games", (int64_t)r->games);
	az_bench_row_num(&row, "seconds", r->seconds, 3);
	az_bench_row_num(&row, "cpu_s", r->cpu_seconds, 3);
	az_bench_row_num(&row, "sims_per_s", (double)r->sims / r->cpu_seconds, 0);
	az_bench_row_num(&row, "ns_per_sim", r->cpu_seconds * 1e9 / (double)r->sims, 0);
	az_bench_row_num(&row, "evals_per_s", (double)r->evals / r->cpu_seconds, 0);
	az_bench_row_str(&row, "moves_hash", hex);
	if (az_bench_table_add(t, &row) < 0)
		*status = 1;
}

int az_bench_search(int argc, char **argv)
{
	static const struct az_opts opts_table = {
		.tool = "azbench search", .opt = search_opt, .n = AZ_ARRAY_LEN(search_opt),
		.help = az_help_azbench_search
	};
	struct search_opts o = { 0 };
	struct az_bench_table t = { 0 };
	int rc, status = 0;

	rc = az_bench_parse(&opts_table, &o, &o.common, argc, argv);
	if (rc)
		return rc == 1 ? 0 : 2;
	o.peaked = strcmp(o.stub, "peaked") == 0;
	for (int i = 0; i < o.games.n; i++) {
		const struct az_game *g = game_setup(&o, o.games.name[i]);
		const struct az_game_desc *d = az_game_desc_find(o.games.name[i]);
		struct search_result r;

		if (!g)
			return 2;
		az_bench_progress(&o.common, "search: %s, %u moves of %u sims\n", g->name, o.moves,
				  o.sims);
		rc = run_games(g, &o, d->defaults.temp_plies, &r);
		if (rc < 0) {
			fprintf(stderr, "azbench search: %s: %s\n", g->name, strerror(-rc));
			status = 1;
			continue;
		}
		add_row(&t, g, &o, &r, &status);
	}
	if (az_bench_emit(&t, &o.common, NULL))
		status = 1;
	az_bench_recommend(&o.common, "none: this mode measures the search alone", NULL);
	az_bench_table_free(&t);
	return status;
}
