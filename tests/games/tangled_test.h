/* SPDX-License-Identifier: MIT */
/* A helper shared by the tangled cmocka tests. Include after <cmocka.h>. */
#ifndef AZ_TANGLED_TEST_H
#define AZ_TANGLED_TEST_H

#include "games/tangled/tangled_impl.h"

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

#endif
