/* SPDX-License-Identifier: MIT */
/* Tangled rules and boards: numbered graphs and the edge-list parser (errors with line numbers),
 * computed automorphism groups, the turn rule and legal moves (forced vertex pick, fixed tokens),
 * reachable-state counts and game length by exhaustive enumeration, action indexing and
 * notation, features, symmetries of features and policies, setup errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/az_assert.h"
#include "games/tangled/tangled.h"
#include "tests/games/tangled_test.h"

#define MAXV AZ_TANGLED_MAX_VERTICES

static struct az_tangled_graph G;

static void setup_game(int graph, enum az_tangled_variant variant, const char *adj)
{
	struct az_tangled_options o;

	az_tangled_options_default(&o);
	o.adjudicator = adj;
	o.anneal_reads = 200;
	az_test_tangled_setup(&o, graph, variant);
}

static int nonzero(const uint8_t *s, int len)
{
	int c = 0;

	for (int i = 0; i < len; i++)
		c += s[i] != 0;
	return c;
}

/* ---- graphs ---- */

static void test_find_before_setup(void **st)
{
	(void)st;
	/* runs first: nothing configured yet */
	assert_null(az_game_find("tangled"));
	assert_null(az_tangled_game());
	assert_non_null(strstr(az_game_names(), "tangled"));
}

static void test_numbered_graphs(void **st)
{
	static const struct { int number, n, e; } sizes[] = {
		{ 1, 2, 1 }, { 2, 3, 3 }, { 3, 4, 6 }, { 4, 6, 6 }, { 5, 10, 15 }, { 6, 16, 32 },
		{ 7, 12, 22 }, { 8, 24, 76 }, { 9, 36, 162 }, { 10, 48, 280 }, { 11, 3, 2 },
		{ 12, 7, 11 }, { 18, 6, 9 }, { 19, 6, 7 }, { 20, 4, 5 },
	};
	char err[256];

	(void)st;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(az_tangled_graph_numbered(sizes[i].number, &G, err, sizeof(err)),
				 0);
		assert_int_equal(G.n, sizes[i].n);
		assert_int_equal(G.e, sizes[i].e);
		for (int k = 0; k < G.e; k++) {
			assert_true(G.eu[k] < G.ev[k]);
			assert_int_equal(G.edge_of[G.eu[k]][G.ev[k]], k);
			assert_int_equal(G.edge_of[G.ev[k]][G.eu[k]], k);
			if (k)
				assert_true(G.eu[k - 1] < G.eu[k] ||
					    (G.eu[k - 1] == G.eu[k] && G.ev[k - 1] < G.ev[k]));
		}
	}
	/* K4: dictionary order 01, 02, 03, 12, 13, 23 */
	az_tangled_graph_numbered(3, &G, err, sizeof(err));
	assert_int_equal(G.eu[3], 1);
	assert_int_equal(G.ev[3], 2);
	/* Zephyr Z(1,1) is listed out of order in the source: sorted here */
	az_tangled_graph_numbered(7, &G, err, sizeof(err));
	assert_int_equal(G.eu[21], 10);
	assert_int_equal(G.ev[21], 11);
	assert_int_equal(az_tangled_graph_numbered(13, &G, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown Tangled graph 13"));
}

static void expect_parse_error(const char *text, const char *want)
{
	char err[256] = "";

	assert_int_equal(az_tangled_graph_parse(text, "g.txt", &G, err, sizeof(err)), -EINVAL);
	if (!strstr(err, want))
		fail_msg("parse of \"%s\": got \"%s\", want \"%s\"", text, err, want);
}

static void test_parser(void **st)
{
	char err[256] = "";

	(void)st;
	/* any order, both notations, comments, commas */
	assert_int_equal(az_tangled_graph_parse("# a square\n2-3, 0 1\n\n3 0   1-2 # c\n", "sq",
						&G, err, sizeof(err)), 0);
	assert_int_equal(G.n, 4);
	assert_int_equal(G.e, 4);
	assert_int_equal(G.eu[0], 0);
	assert_int_equal(G.ev[0], 1);
	assert_int_equal(G.eu[1], 0);
	assert_int_equal(G.ev[1], 3);
	assert_int_equal(G.eu[3], 2);
	assert_int_equal(G.ev[3], 3);
	assert_string_equal(G.name, "sq");
	assert_int_equal(az_tangled_graph_parse("vertices 6\n0-1\n", "iso", &G, err, sizeof(err)),
			 0);
	assert_int_equal(G.n, 6);

	expect_parse_error("0-1\n1-1\n", "g.txt:2: self-loop 1-1");
	expect_parse_error("0-1\n1-2\n\n1-0\n", "g.txt:4: duplicate edge 0-1 (already on line 1)");
	expect_parse_error("0-1\n0-x\n", "g.txt:2: 'x' is not a vertex number");
	expect_parse_error("0-99\n", "g.txt:1: vertex number 99 out of range");
	expect_parse_error("0 1 2\n", "g.txt:1: vertex 2 has no partner");
	expect_parse_error("# nothing\n", "g.txt: no edges");
	expect_parse_error("vertices 3\n0-1\n1-5\n", "g.txt:3: edge 1-5: vertex 5 out of range");
	expect_parse_error("vertices 3\nvertices 4\n", "g.txt:2: 'vertices' given twice");
	expect_parse_error("vertices 1\n", "at least 2 vertices");
	expect_parse_error("0-1 2-\n", "g.txt:1: empty vertex number");

	assert_true(az_tangled_graph_load("/nonexistent/graph.txt", &G, err, sizeof(err)) ==
		    -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/graph.txt"));
}

static void test_graph_file(void **st)
{
	char path[] = "/tmp/az_tangled_graphXXXXXX", err[256] = "";
	int fd = mkstemp(path);
	FILE *f;

	(void)st;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs("# triangle with a tail\n0-1 1-2\n2-0\n2 3\n", f);
	fclose(f);
	assert_int_equal(az_tangled_graph_load(path, &G, err, sizeof(err)), 0);
	assert_int_equal(G.n, 4);
	assert_int_equal(G.e, 4);
	assert_int_equal(G.number, 0);
	f = fopen(path, "w");
	fputs("0-1\n1-2\n2 2\n", f);
	fclose(f);
	assert_int_equal(az_tangled_graph_load(path, &G, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":3: self-loop 2-2"));
	unlink(path);
}

static int perm_n;

static int cmp_perm(const void *a, const void *b)
{
	return memcmp(a, b, (size_t)perm_n);
}

/* Each permutation found preserves adjacency (both ways), they are distinct, identity first;
 * a complete group is closed under composition. */
static int check_automorphisms(int number, int want, int want_complete)
{
	static uint8_t perm[AZ_TANGLED_MAX_SYMMETRIES][MAXV];
	static uint8_t sorted[AZ_TANGLED_MAX_SYMMETRIES][MAXV];
	char err[256];
	int complete = -1, count;

	assert_int_equal(az_tangled_graph_numbered(number, &G, err, sizeof(err)), 0);
	count = az_tangled_graph_automorphisms(&G, perm, AZ_TANGLED_MAX_SYMMETRIES, &complete);
	for (int v = 0; v < G.n; v++)
		assert_int_equal(perm[0][v], v);
	for (int k = 0; k < count; k++) {
		uint8_t seen[MAXV] = { 0 };

		for (int v = 0; v < G.n; v++) {
			assert_false(seen[perm[k][v]]);
			seen[perm[k][v]] = 1;
			for (int w = 0; w < G.n; w++)
				assert_int_equal(G.edge_of[v][w] >= 0,
						 G.edge_of[perm[k][v]][perm[k][w]] >= 0);
		}
	}
	perm_n = G.n;
	memcpy(sorted, perm, sizeof(perm));
	qsort(sorted, (size_t)count, sizeof(sorted[0]), cmp_perm);
	for (int k = 1; k < count; k++)
		assert_memory_not_equal(sorted[k - 1], sorted[k], (size_t)G.n);
	for (int i = 0; complete && i < count; i++)
		for (int j = 0; j < count; j++) {
			uint8_t c[MAXV];

			for (int v = 0; v < G.n; v++)
				c[v] = perm[i][perm[j][v]];
			assert_non_null(bsearch(c, sorted, (size_t)count, sizeof(sorted[0]),
						cmp_perm));
		}
	if (want)
		assert_int_equal(count, want);
	if (want_complete >= 0)
		assert_int_equal(complete, want_complete);
	return count;
}

static void test_automorphisms(void **st)
{
	/* graph number, group order, whether the search finished */
	static const int want[][3] = {
		{ 1, 2, 1 }, { 2, 6, 1 }, { 3, 24, 1 }, { 4, 12, 1 }, { 5, 120, 1 },
		{ 6, 384, 1 }, { 11, 2, 1 }, { 12, 8, 1 }, { 18, 12, 1 }, { 19, 8, 1 },
		{ 20, 4, 1 },
		/* Zephyr graphs: Z(1,3) and Z(1,4) have more than AZ_TANGLED_MAX_SYMMETRIES */
		{ 7, 8, 1 }, { 8, 512, 1 }, { 9, AZ_TANGLED_MAX_SYMMETRIES, 0 },
		{ 10, AZ_TANGLED_MAX_SYMMETRIES, 0 },
	};

	(void)st;
	for (size_t i = 0; i < AZ_ARRAY_LEN(want); i++)
		check_automorphisms(want[i][0], want[i][1], want[i][2]);
}

/* ok with entry at set to v must be rejected (terminal states required) with what in the
 * message. */
static void expect_bad_state(const int *ok, int at, int v, const char *what)
{
	int bad[6];
	char err[256];

	memcpy(bad, ok, sizeof(bad));
	bad[at] = v;
	assert_int_equal(az_tangled_state_check(&G, bad, 6, 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, what));
}

static void test_state_check(void **st)
{
	int ok[] = { 0, 1, 2, 1, 2, 1 }, bad[6];
	char err[256];

	(void)st;
	az_tangled_graph_numbered(2, &G, err, sizeof(err));
	assert_int_equal(az_tangled_state_check(&G, ok, 6, 1, err, sizeof(err)), 0);
	assert_int_equal(az_tangled_state_check(&G, ok, 5, 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "expected 6 entries"));
	expect_bad_state(ok, 0, 3, "vertex 0");
	expect_bad_state(ok, 5, 4, "edge 1-2");
	expect_bad_state(ok, 4, 0, "not terminal: edge 0-2");
	memcpy(bad, ok, sizeof(bad));
	bad[4] = 0; /* not terminal, but fine when terminal states are not required */
	assert_int_equal(az_tangled_state_check(&G, bad, 6, 0, err, sizeof(err)), 0);
	expect_bad_state(ok, 1, 0, "no vertex is red");
	memcpy(bad, ok, sizeof(bad));
	bad[1] = 0;
	bad[0] = 2;
	assert_int_equal(az_tangled_state_check(&G, bad, 6, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "blue (2) owns two vertices"));
}

/* ---- rules ---- */

static void test_free_rules_k4(void **st)
{
	const struct az_game *g;
	uint8_t s[AZ_GAME_STATE_MAX], mask[AZ_GAME_ACTIONS_MAX];

	(void)st;
	setup_game(3, AZ_TANGLED_FREE, "anneal");
	g = az_game_find("tangled");
	assert_non_null(g);
	assert_ptr_equal(g, az_tangled_game());
	assert_string_equal(g->name, "tangled");
	assert_int_equal(g->state_bytes, 10);
	assert_int_equal(g->actions, 4 + 18);
	assert_int_equal(g->features, 4 + 18);
	assert_int_equal(g->symmetries, 24);
	assert_int_equal(g->max_plies, 8);
	g->init(s);
	assert_int_equal(nonzero(s, 10), 0);
	assert_int_equal(g->to_move(s), 0);
	assert_int_equal(g->legal(s, mask), 4 + 18);
	/* red takes vertex 2; blue to move; red's vertex is gone from blue's choices */
	g->apply(s, 2);
	assert_int_equal(s[2], 1);
	assert_int_equal(g->to_move(s), 1);
	assert_int_equal(g->legal(s, mask), 3 + 18);
	assert_int_equal(mask[2], 0);
	/* blue colours edge 1-2 purple: action N + 3*3 + 2 */
	g->apply(s, 4 + 3 * 3 + 2);
	assert_int_equal(s[4 + 3], 3);
	assert_int_equal(g->to_move(s), 0);
	/* red owns a vertex: only edges (5 uncoloured) */
	assert_int_equal(g->legal(s, mask), 15);
	for (int v = 0; v < 4; v++)
		assert_int_equal(mask[v], 0);

	/* forced pick: every edge coloured but the last, red to move without a vertex */
	memset(s, 0, 10);
	s[3] = 2;
	for (int k = 0; k < 5; k++)
		s[4 + k] = 2;
	assert_int_equal(g->to_move(s), 0);
	assert_int_equal(g->legal(s, mask), 3);
	assert_true(mask[0] && mask[1] && mask[2] && !mask[3]);
	assert_int_equal(mask[4 + 15], 0);
	g->apply(s, 0);
	/* blue owns a vertex: the last edge, three colours */
	assert_int_equal(g->legal(s, mask), 3);
	assert_true(mask[4 + 15] && mask[4 + 16] && mask[4 + 17]);
	g->apply(s, 4 + 16);
	assert_int_equal(s[9], 2);
	assert_true(g->terminal(s, NULL));
	assert_int_equal(g->legal(s, mask), 0);

	/* all edges coloured, nobody has a vertex: both picks are forced */
	memset(s, 0, 10);
	memset(s + 4, 1, 6);
	assert_false(g->terminal(s, NULL));
	assert_int_equal(g->legal(s, mask), 4);
	g->apply(s, 1);
	assert_int_equal(s[1], 1);
	assert_int_equal(g->legal(s, mask), 3);
	g->apply(s, 3);
	assert_int_equal(s[3], 2);
	assert_true(g->terminal(s, NULL));
}

static void test_fixed_rules(void **st)
{
	const struct az_game *g;
	uint8_t s[AZ_GAME_STATE_MAX], mask[AZ_GAME_ACTIONS_MAX];
	int red, blue;

	(void)st;
	setup_game(3, AZ_TANGLED_FIXED, "anneal");
	g = az_game_find("tangled");
	assert_int_equal(az_tangled_current_tokens(&red, &blue), AZ_TANGLED_FIXED);
	assert_int_equal(red, 2); /* the blog's placement */
	assert_int_equal(blue, 3);
	assert_int_equal(g->max_plies, 6);
	assert_int_equal(g->actions, 22);
	/* automorphisms fixing vertices 2 and 3: identity and the swap of 0 and 1 */
	assert_int_equal(g->symmetries, 2);
	assert_int_equal(az_tangled_symmetry_perm(1)[0], 1);
	g->init(s);
	assert_int_equal(s[2], 1);
	assert_int_equal(s[3], 2);
	assert_int_equal(g->to_move(s), 0);
	assert_int_equal(g->legal(s, mask), 18);
	for (int v = 0; v < 4; v++)
		assert_int_equal(mask[v], 0);
	for (int ply = 0; ply < 6; ply++) {
		assert_false(g->terminal(s, NULL));
		assert_int_equal(g->to_move(s), ply & 1);
		assert_int_equal(g->legal(s, mask), 3 * (6 - ply));
		g->apply(s, 4 + 3 * ply + (ply % 3));
	}
	assert_true(g->terminal(s, NULL));

	/* engine graph 20 (diamond): blue 2, red 0 by default; explicit tokens override */
	setup_game(20, AZ_TANGLED_FIXED, "anneal");
	az_tangled_current_tokens(&red, &blue);
	assert_int_equal(red, 0);
	assert_int_equal(blue, 2);
	{
		struct az_tangled_options o;
		char err[256];

		az_tangled_options_default(&o);
		o.graph = 20;
		o.variant = AZ_TANGLED_FIXED;
		o.adjudicator = "anneal";
		o.red_vertex = 3;
		assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), 0);
		az_tangled_current_tokens(&red, &blue);
		assert_int_equal(red, 3);
		o.red_vertex = 2;
		assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "distinct"));
		assert_null(az_game_find("tangled"));
	}
}

struct census {
	const struct az_game *g;
	int states, terminal, e;
};

/* For every reachable state: a non-terminal state has a legal move and every legal move adds
 * exactly one non-zero entry; a terminal state has exactly E + 2 of them. */
static void census_fn(void *ctx, const void *state, const char *moves)
{
	struct census *c = ctx;
	const struct az_game *g = c->g;
	uint8_t mask[AZ_GAME_ACTIONS_MAX], child[AZ_GAME_STATE_MAX];
	int nz = nonzero(state, (int)g->state_bytes), legal;

	(void)moves;
	c->states++;
	if (g->terminal(state, NULL)) {
		c->terminal++;
		assert_int_equal(nz, c->e + 2);
		assert_int_equal(g->legal(state, mask), 0);
		return;
	}
	legal = g->legal(state, mask);
	assert_true(legal > 0);
	assert_int_equal(g->to_move(state), nz & 1);
	for (uint32_t a = 0; a < g->actions; a++) {
		if (!mask[a])
			continue;
		az_game_after(g, state, (int)a, child);
		assert_int_equal(nonzero(child, (int)g->state_bytes), nz + 1);
	}
}

static void census(int graph, int states, int terminal)
{
	struct census c = { 0 };
	int n;

	setup_game(graph, AZ_TANGLED_FREE, "anneal");
	c.g = az_game_find("tangled");
	c.e = az_tangled_current_graph()->e;
	n = az_game_enumerate(c.g, 0, census_fn, &c);
	assert_int_equal(n, states);
	assert_int_equal(c.states, states);
	assert_int_equal(c.terminal, terminal);
}

/* TANGLED.md 1.4 / 1.9: reachable states (start included) and terminal states; every game
 * lasts E + 2 moves. */
static void test_reachable_counts(void **st)
{
	/* graph number, states, terminal states */
	static const int want[][3] = {
		{ 1, 11, 6 }, { 11, 169, 54 }, { 2, 721, 162 }, { 3, 82367, 8748 },
	};

	(void)st;
	for (size_t i = 0; i < AZ_ARRAY_LEN(want); i++)
		census(want[i][0], want[i][1], want[i][2]);
}

/* Length of every game by walking every path (K3: small enough). */
static int longest = -1, shortest = 1000;

static void all_games(const struct az_game *g, uint8_t *s, int depth)
{
	uint8_t mask[AZ_GAME_ACTIONS_MAX], child[AZ_GAME_STATE_MAX];

	if (g->terminal(s, NULL)) {
		if (depth > longest)
			longest = depth;
		if (depth < shortest)
			shortest = depth;
		return;
	}
	g->legal(s, mask);
	for (uint32_t a = 0; a < g->actions; a++) {
		if (!mask[a])
			continue;
		az_game_after(g, s, (int)a, child);
		all_games(g, child, depth + 1);
	}
}

static void test_game_length(void **st)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	const struct az_game *g;

	(void)st;
	setup_game(2, AZ_TANGLED_FREE, "anneal");
	g = az_game_find("tangled");
	g->init(s);
	all_games(g, s, 0);
	assert_int_equal(shortest, 5);
	assert_int_equal(longest, 5);
	setup_game(11, AZ_TANGLED_FREE, "anneal");
	g = az_game_find("tangled");
	longest = -1, shortest = 1000;
	g->init(s);
	all_games(g, s, 0);
	assert_int_equal(shortest, 4);
	assert_int_equal(longest, 4);
}

/* Shortest path to a terminal state from s; checks min_moves_left (MCTS-Solver's licence to skip
 * looking for terminal children) against it at every non-terminal state on the way. */
static int check_moves_left(const struct az_game *g, uint8_t *s)
{
	uint8_t mask[AZ_GAME_ACTIONS_MAX], child[AZ_GAME_STATE_MAX];
	int best = 1000;

	if (g->terminal(s, NULL))
		return 0;
	g->legal(s, mask);
	for (uint32_t a = 0; a < g->actions; a++) {
		if (!mask[a])
			continue;
		az_game_after(g, s, (int)a, child);
		int d = 1 + check_moves_left(g, child);
		if (d < best)
			best = d;
	}
	assert_int_equal(g->min_moves_left(s), best);
	return best;
}

static void test_min_moves_left(void **st)
{
	static const struct {
		int graph;
		enum az_tangled_variant variant;
		int moves;
	} cases[] = { { 2, AZ_TANGLED_FREE, 5 }, { 11, AZ_TANGLED_FREE, 4 },
		      { 2, AZ_TANGLED_FIXED, 3 }, { 1, AZ_TANGLED_FREE, 3 } };
	uint8_t s[AZ_GAME_STATE_MAX];

	(void)st;
	for (size_t i = 0; i < AZ_ARRAY_LEN(cases); i++) {
		const struct az_game *g;

		setup_game(cases[i].graph, cases[i].variant, "anneal");
		g = az_game_find("tangled");
		assert_non_null(g->min_moves_left);
		g->init(s);
		assert_int_equal(check_moves_left(g, s), cases[i].moves);
	}
}

static void test_notation(void **st)
{
	const struct az_game *g;
	uint8_t s[AZ_GAME_STATE_MAX];
	char buf[32];

	(void)st;
	setup_game(3, AZ_TANGLED_FREE, "anneal");
	g = az_game_find("tangled");
	g->format_action(2, buf, sizeof(buf));
	assert_string_equal(buf, "v2");
	g->format_action(4 + 3 * 5 + 1, buf, sizeof(buf));
	assert_string_equal(buf, "2-3g");
	g->format_action(4 + 0 + 0, buf, sizeof(buf));
	assert_string_equal(buf, "0-1x");
	g->format_action(4 + 3 * 1 + 2, buf, sizeof(buf));
	assert_string_equal(buf, "0-2p");
	for (uint32_t a = 0; a < g->actions; a++) {
		g->format_action((int)a, buf, sizeof(buf));
		assert_int_equal(g->parse_action(NULL, buf), (int)a);
	}
	assert_int_equal(g->parse_action(NULL, " 1-3 purple "), 4 + 3 * 4 + 2);
	assert_int_equal(g->parse_action(NULL, "3-1g"), 4 + 3 * 4 + 1);
	assert_int_equal(g->parse_action(NULL, "#21"), 21);
	assert_int_equal(g->parse_action(NULL, "#22"), -EINVAL);
	assert_int_equal(g->parse_action(NULL, "v4"), -EINVAL);
	assert_int_equal(g->parse_action(NULL, "0-1q"), -EINVAL);
	assert_int_equal(g->parse_action(NULL, "0-0g"), -EINVAL);
	assert_int_equal(g->parse_action(NULL, "x"), -EINVAL);
	g->init(s);
	g->apply(s, g->parse_action(s, "0-1g"));
	assert_int_equal(g->parse_action(s, "0-1p"), -EINVAL); /* already coloured */
	assert_int_equal(g->format(s, NULL, 0) > 0, 1);
	{
		char text[512];

		g->format(s, text, sizeof(text));
		assert_non_null(strstr(text, "0-1g"));
		assert_non_null(strstr(text, "blue to move"));
		assert_non_null(strstr(text, "state: 0,0,0,0,2,0,0,0,0,0"));
	}
}

static void test_encode(void **st)
{
	const struct az_game *g;
	uint8_t s[6] = { 0, 1, 2, 1, 2, 0 };
	float f[16];
	const float red_view[12] = { 0, 1, -1, 1, 0, 0, 0, 1, 0, 0, 0, 0 };

	(void)st;
	setup_game(2, AZ_TANGLED_FREE, "anneal");
	g = az_game_find("tangled");
	assert_int_equal(g->features, 12);
	/* four non-zero entries: red to move, vertex part as is */
	g->encode(s, f);
	assert_memory_equal(f, red_view, sizeof(red_view));
	/* blue to move: vertex part negated, edges unchanged */
	s[5] = 3;
	g->encode(s, f);
	assert_true(f[0] == 0.0f && f[1] == -1.0f && f[2] == 1.0f);
	assert_true(f[9] == 0.0f && f[10] == 0.0f && f[11] == 1.0f);
}

/* Applying symmetry k to the encoding of s equals encoding the permuted state; the legal mask
 * permutes the same way (as a policy). */
static void test_symmetries(void **st)
{
	const struct az_game *g;
	uint8_t s[16], t[16], mask[64], tmask[64];
	float fs[64], ft[64], out[64], pm[64], pout[64];

	(void)st;
	setup_game(3, AZ_TANGLED_FREE, "anneal");
	g = az_game_find("tangled");
	/* a mid-game position: red on 0, edges 01 green, 13 purple, 23 grey */
	memset(s, 0, sizeof(s));
	s[0] = 1;
	s[4 + 0] = 2;
	s[4 + 4] = 3;
	s[4 + 5] = 1;
	g->encode(s, fs);
	g->legal(s, mask);
	for (uint32_t a = 0; a < g->actions; a++)
		pm[a] = mask[a];
	for (uint32_t k = 0; k < g->symmetries; k++) {
		az_test_tangled_image((int)k, s, t);
		g->encode(t, ft);
		g->symmetry((int)k, fs, out, pm, pout);
		assert_memory_equal(out, ft, sizeof(float) * g->features);
		g->legal(t, tmask);
		for (uint32_t a = 0; a < g->actions; a++)
			assert_true(pout[a] == (float)tmask[a]);
	}
	assert_null(az_tangled_symmetry_perm(24));
	/* symmetry 0 is the identity */
	g->symmetry(0, fs, out, NULL, NULL);
	assert_memory_equal(out, fs, sizeof(float) * g->features);
}

/* The default game (K4, free tokens, table): terminal() values for the side to move over all
 * 8748 terminal states (red moves at K4's terminal states: E + 2 = 8 non-zero entries). */
static void test_terminal_values(void **st)
{
	const struct az_game *g;
	uint8_t s[10];
	int cnt[3] = { 0 };
	float v;

	(void)st;
	setup_game(3, AZ_TANGLED_FREE, NULL);
	g = az_game_find("tangled");
	assert_string_equal(az_tangled_adj_name(az_tangled_current_adj()), "table:exact");
	for (int c = 0; c < 729; c++)
		for (int r = 0; r < 4; r++)
			for (int b = 0; b < 4; b++) {
				if (r == b)
					continue;
				memset(s, 0, 4);
				s[r] = 1;
				s[b] = 2;
				for (int e = 0, x = c; e < 6; e++, x /= 3)
					s[4 + e] = (uint8_t)(1 + x % 3);
				assert_int_equal(g->to_move(s), 0);
				assert_true(g->terminal(s, &v));
				cnt[(int)v + 1]++;
			}
	assert_int_equal(cnt[2], 1644); /* red (to move) wins */
	assert_int_equal(cnt[0], 1644);
	assert_int_equal(cnt[1], 5460);
}

static void test_setup_errors(void **st)
{
	struct az_tangled_options o;
	char err[256];

	(void)st;
	az_tangled_options_default(&o);
	assert_int_equal(o.graph, 3);
	assert_true(o.epsilon == 0.5);
	assert_int_equal(o.anneal_reads, 10000);
	assert_int_equal(o.anneal_sweeps, 16);
	/* Zephyr Z(1,3) and Z(1,4): N + 3E > AZ_GAME_ACTIONS_MAX, refused as games */
	for (int graph = 9; graph <= 10; graph++) {
		o.graph = graph;
		o.adjudicator = "anneal";
		assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "AZ_GAME_ACTIONS_MAX"));
		assert_null(az_game_find("tangled"));
	}
	o.graph = 8; /* 24 + 3 * 76 = 252 actions: fine */
	assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), 0);
	assert_int_equal(az_game_find("tangled")->actions, 252);
	o.graph = 3;
	o.adjudicator = "quantum";
	assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown adjudicator 'quantum'"));
	o.graph = 6;
	o.adjudicator = "exact";
	assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at most 12 vertices"));
	o.graph = 3;
	o.adjudicator = "exact";
	o.schedule = "/nonexistent/schedule.txt";
	assert_true(az_tangled_setup(&o, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "/nonexistent/schedule.txt"));
	o.schedule = NULL;
	o.graph_file = "/nonexistent/graph.txt";
	assert_true(az_tangled_setup(&o, err, sizeof(err)) < 0);
	assert_null(az_tangled_game());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_before_setup),
		cmocka_unit_test(test_numbered_graphs),
		cmocka_unit_test(test_parser),
		cmocka_unit_test(test_graph_file),
		cmocka_unit_test(test_automorphisms),
		cmocka_unit_test(test_state_check),
		cmocka_unit_test(test_free_rules_k4),
		cmocka_unit_test(test_fixed_rules),
		cmocka_unit_test(test_reachable_counts),
		cmocka_unit_test(test_game_length),
		cmocka_unit_test(test_min_moves_left),
		cmocka_unit_test(test_notation),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_symmetries),
		cmocka_unit_test(test_terminal_values),
		cmocka_unit_test(test_setup_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
