/* SPDX-License-Identifier: MIT */
/* Helpers shared by the tangled cmocka tests: the game set up, an adjudicator built, each
 * failing the test on an error. Public API only (games/tangled/tangled.h), so tests that link
 * az_tangled alone use them too. Include after <cmocka.h>. */
#ifndef AZ_TANGLED_TEST_H
#define AZ_TANGLED_TEST_H

#include <string.h>

#include "games/tangled/tangled.h"

/* Configure the game (az_tangled_setup) with options o on numbered graph `graph` and tokens
 * `variant` (set in *o). Fails the test, naming the graph and the error, when setup fails;
 * returns the configured game. */
static inline const struct az_game *az_test_tangled_setup(struct az_tangled_options *o, int graph,
							  enum az_tangled_variant variant)
{
	const struct az_game *g;
	char err[256] = "";

	o->graph = graph;
	o->variant = variant;
	if (az_tangled_setup(o, err, sizeof(err)))
		fail_msg("setup graph %d: %s", graph, err);
	g = az_tangled_game();
	assert_non_null(g);
	return g;
}

/* The adjudicator options o build (o->adjudicator names the method) for numbered graph `graph`,
 * which is read into *g (g must outlive the adjudicator). Fails the test, naming the method, the
 * graph and the error, when either step fails. The caller destroys the result. */
static inline struct az_tangled_adj *az_test_tangled_adj(int graph, struct az_tangled_graph *g,
							 const struct az_tangled_options *o)
{
	struct az_tangled_adj *a = NULL;
	char err[256] = "";

	if (az_tangled_graph_numbered(graph, g, err, sizeof(err)) ||
	    az_tangled_adj_create(g, o, &a, err, sizeof(err)))
		fail_msg("adjudicator %s on graph %d: %s", o->adjudicator, graph, err);
	return a;
}

/* The image t of state s (N + E bytes) under the configured game's symmetry k: token owners move
 * with the vertices, each edge's label to the image edge. */
static inline void az_test_tangled_image(int k, const uint8_t *s, uint8_t *t)
{
	const struct az_tangled_graph *gr = az_tangled_current_graph();
	const uint8_t *p = az_tangled_symmetry_perm(k);

	assert_non_null(p);
	memset(t, 0, (size_t)(gr->n + gr->e));
	for (int v = 0; v < gr->n; v++)
		t[p[v]] = s[v];
	for (int e = 0; e < gr->e; e++)
		t[gr->n + gr->edge_of[p[gr->eu[e]]][p[gr->ev[e]]]] = s[gr->n + e];
}

#endif
