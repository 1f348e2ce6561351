/* SPDX-License-Identifier: MIT */
/* Tangled (Geordie Rose / Snowdrop Quantum; spec: shared/TANGLED.md): colour the edges of a graph,
 * each player owns one vertex, the winner is decided by the "influence" of the vertices in an
 * Ising model of the coloured graph, computed by an adjudicator. The game object is process-wide:
 * az_tangled_setup() configures it (graph, variant, adjudicator), after which
 * az_game_find("tangled") returns it. */
#ifndef AZ_TANGLED_H
#define AZ_TANGLED_H

#include <stddef.h>
#include <stdint.h>

#include "games/game.h"

#define AZ_TANGLED_MAX_VERTICES 64

enum az_tangled_variant { AZ_TANGLED_FREE = 0, AZ_TANGLED_FIXED = 1 };

struct az_tangled_options {
	int graph;               /* numbered graph of TANGLED.md section 2 (default 3, K4) */
	const char *graph_file;  /* edge-list file instead of a numbered graph (NULL: none) */
	enum az_tangled_variant variant;
	int red_vertex;          /* fixed variant: token vertices; -1 = the graph's default */
	int blue_vertex;
	const char *adjudicator; /* "table" | "exact" | "exact-krylov" | "anneal"; NULL = default */
	double epsilon;          /* draw band, default 0.5 */
	const char *schedule;    /* anneal schedule file; NULL = the copy shipped in games/data */
	const char *cache_dir;   /* directory for outcome tables/caches; NULL = no file cache */
	uint32_t anneal_reads;   /* simulated annealing reads (default 10000) */
	uint32_t anneal_sweeps;  /* sweeps per read (default 16) */
	uint64_t seed;
};

/* Defaults: graph 3, free tokens, adjudicator "table", epsilon 0.5, 10000 reads, 16 sweeps. */
void az_tangled_options_default(struct az_tangled_options *o);

/* Configure the process-wide Tangled game. Returns 0, or -EINVAL / -ENOENT / -ENOMEM with a
 * message in err (unknown graph number, malformed graph file with line number, bad adjudicator
 * name, missing schedule file ...). Call before az_game_find("tangled") is used, and before
 * forking workers (the configured game is inherited). */
int az_tangled_setup(const struct az_tangled_options *o, char *err, size_t errlen);

/* The configured game (NULL before a successful az_tangled_setup()). */
const struct az_game *az_tangled_game(void);

#endif
