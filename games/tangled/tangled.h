/* SPDX-License-Identifier: MIT */
/* Tangled (Geordie Rose / Snowdrop Quantum; spec: shared/TANGLED.md): colour the edges of a graph,
 * each player owns one vertex, the winner is decided by the "influence" of the vertices in an
 * Ising model of the coloured graph, computed by an adjudicator. The game object is process-wide:
 * az_tangled_setup() configures it (graph, variant, adjudicator), after which
 * az_game_find("tangled") returns it.
 *
 * Sections and the files implementing them:
 *   game, options, setup, state checks ........ games/tangled/tangled.c
 *   descriptor, the tools' options ............ games/tangled/tangled_options.c
 *   graphs, edge-list files, automorphisms ..... games/tangled/tangled_graphs.c
 *   adjudicators and their caches .............. games/tangled/tangled_table.c (front, cache, file),
 *       games/tangled/tangled_map.c (the caches' hash map),
 *       games/tangled/tangled_outcomes.c (complete outcome tables),
 *       games/tangled/tangled_exact.c (dense Schrodinger), games/tangled/tangled_krylov.c (sparse Schrodinger),
 *       games/tangled/tangled_anneal.c (simulated annealing)
 *
 * State of the game (state_bytes = N + E): exactly the state vector of TANGLED.md 1.2, one byte
 * per entry: bytes 0..N-1 vertex owners (0 free, 1 red, 2 blue), bytes N..N+E-1 the edge labels
 * in dictionary edge order (0 uncoloured, 1 grey, 2 green, 3 purple). Red moves when the number
 * of non-zero bytes is even. Actions (N + 3E): a < N takes vertex a; N + 3k + c colours edge k
 * with label c + 1. Features (N + 3E), for the side to move p (+1 red, -1 blue): vertex v is
 * p * (+1 red, -1 blue, 0 free), edge k is three bits (grey, green, purple). With inputs
 * "completions" 6 more follow (features = N + 3E + 6): for the position completed with every
 * uncoloured edge grey, then green, then purple, the adjudicated outcome for the side to move
 * (+1 / 0 / -1), then tanh(p * score) of the same three; all 0 until both tokens are placed.
 * They are what the rules (the complete outcome table) say of three terminal positions, not a
 * search: invariant under the symmetries, which move only the board's part.
 * Symmetries: the graph's automorphisms (computed; at most AZ_TANGLED_MAX_SYMMETRIES, the first
 * ones found, identity first); in the fixed-token variant only those fixing both token vertices.
 * Graphs 9 and 10 (Zephyr Z(1,3), Z(1,4)) have N + 3E > AZ_GAME_ACTIONS_MAX: setup refuses them
 * as games; the adjudicator API below still accepts them (aztangled --adjudicator anneal). */
#ifndef AZ_TANGLED_H
#define AZ_TANGLED_H

#include <stddef.h>
#include <stdint.h>

#include "games/game.h"

#define AZ_TANGLED_MAX_VERTICES 64
#define AZ_TANGLED_MAX_EDGES 1024     /* any graph; a game also needs N + 3E <= actions max */
#define AZ_TANGLED_MAX_SYMMETRIES 1024 /* automorphisms kept (the first ones found) */

enum az_tangled_variant { AZ_TANGLED_FREE = 0, AZ_TANGLED_FIXED = 1 };

/* The network's input (az_game.features): the board alone, or the board plus what the outcome
 * table says of its three uniform completions (AZ_TANGLED_COMPLETION_FEATURES more values). */
enum az_tangled_inputs { AZ_TANGLED_INPUTS_PLAIN = 0, AZ_TANGLED_INPUTS_COMPLETIONS = 1 };
#define AZ_TANGLED_COMPLETION_FEATURES 6

/* The vector annealing paths hold a read in a 16-bit lane: larger graphs anneal on the scalar
 * path whatever anneal_path (or AZ_TANGLED_ANNEAL) asks. */
#define AZ_TANGLED_ANNEAL_VECTOR_MAX_N 16

struct az_tangled_options {
	int graph;               /* numbered graph of TANGLED.md section 2 (default 3, K4) */
	const char *graph_file;  /* edge-list file instead of a numbered graph (NULL: none) */
	enum az_tangled_variant variant;
	int red_vertex;          /* fixed variant: token vertices; -1 = the graph's default */
	int blue_vertex;
	const char *adjudicator; /* "table" | "exact" | "exact-krylov" | "anneal"; NULL = default */
	double epsilon;          /* draw band, default 0.5 */
	enum az_tangled_inputs inputs; /* default plain; completions needs a complete table */
	const char *schedule;    /* anneal schedule file; NULL = the copy shipped in games/data */
	const char *cache_dir;   /* directory for outcome tables/caches; NULL = no file cache */
	uint32_t anneal_reads;   /* simulated annealing reads (default 10000) */
	uint32_t anneal_sweeps;  /* sweeps per read (default 16) */
	uint64_t seed;
	/* Added by tangled.c (defaults in brackets): */
	double anneal_time_ns;   /* tf of the Schrodinger evolutions, ns [5] */
	double beta_min;         /* simulated annealing first beta; 0 = 1/sqrt(sum J^2 + 0.001) */
	double beta_max;         /* simulated annealing last beta [3] */
	const char *anneal_path; /* "auto" | "scalar" | "avx2" | "avx512"; NULL = the environment
				  * variable AZ_TANGLED_ANNEAL, else auto (the fastest this CPU
				  * runs). Same distribution, different numbers per path: the path
				  * is part of the cache key */
	/* Complete outcome tables (graphs with 6 < E <= 16 under a "table" adjudicator): */
	const char *table_dir;   /* where they live; NULL = cache_dir (none: no table file) */
	int table_workers;       /* processes building one; 0 = the online CPUs */
	/* Build progress, called in the calling process with records done of the total (NULL:
	 * none). The library never prints; a tool draws a bar. */
	void (*table_progress)(void *ctx, uint64_t done, uint64_t total);
	void *table_progress_ctx;
};

/* Defaults: graph 3, free tokens, adjudicator "table", epsilon 0.5, 10000 reads, 16 sweeps,
 * seed 0, anneal time 5 ns, beta_min 0 (automatic), beta_max 3.
 * Adjudicator names: "exact" (dense Schrodinger evolution, N <= 12), "exact-krylov" (sparse
 * Krylov propagator, N <= 20), "anneal" (simulated annealing), "table" or "table:INNER": every
 * colouring of a graph with E <= 6 computed once at setup with INNER (default: exact for
 * N <= 6, anneal otherwise) and kept in the cache file; with 6 < E <= 16 every canonical
 * colouring in a complete outcome table file (table_dir or cache_dir; see
 * az_tangled_adj_create); for larger graphs "table" caches as the others do. Every
 * adjudicator caches results per colouring (in memory, and in a file in cache_dir when set), so terminal() is a lookup after a colouring's first adjudication. */
void az_tangled_options_default(struct az_tangled_options *o);

/* Configure the process-wide Tangled game. Returns 0, or -EINVAL / -ENOENT / -ENOMEM with a
 * message in err (unknown graph number, malformed graph file with line number, bad adjudicator
 * name, missing schedule file ...). Call before az_game_find("tangled") is used, and before
 * forking workers (the configured game is inherited). Not thread-safe; may be called again to
 * reconfigure (the previous configuration is released). */
int az_tangled_setup(const struct az_tangled_options *o, char *err, size_t errlen);

/* The configured game (NULL before a successful az_tangled_setup()). */
const struct az_game *az_tangled_game(void);

/* ==== the descriptor and the tools' options (games/tangled/tangled_options.c) ==== */

/* Tangled's descriptor (games/game.h): its options, in this order, are the ones every tool
 * takes (azrun, azeval, azplay; aztangled uses the ranges of graph and epsilon). */
enum {
	AZ_TANGLED_OPT_GRAPH,       /* U32, default 3 */
	AZ_TANGLED_OPT_GRAPH_FILE,  /* STR, default "" (none) */
	AZ_TANGLED_OPT_VARIANT,     /* STR, "free" | "fixed" */
	AZ_TANGLED_OPT_ADJUDICATOR, /* STR, default "" (the graph's default) */
	AZ_TANGLED_OPT_EPSILON,     /* F32, default 0.5 */
	AZ_TANGLED_OPT_INPUTS,      /* STR, "plain" | "completions" */
	AZ_TANGLED_OPTS
};
extern const struct az_game_desc az_game_desc_tangled;

/* "free" / "fixed" into *v: 0, or -EINVAL for anything else. */
int az_tangled_variant_parse(const char *text, enum az_tangled_variant *v);

/* "plain" / "completions" into *v: 0, or -EINVAL for anything else. */
int az_tangled_inputs_parse(const char *text, enum az_tangled_inputs *v);

/* Validate the option values v[AZ_TANGLED_OPTS] and configure the game (az_tangled_setup()
 * with the given seed): the descriptor's configure(). 0, or -EINVAL ("--variant: free or fixed,
 * not 'x'") / -ENOENT / -ENOMEM with a message in err ("tangled: ..." for setup failures). */
int az_tangled_configure(const union az_game_opt_value *v, uint64_t seed, char *err,
			 size_t errlen);

/* ==== graphs (games/tangled/tangled_graphs.c) ==== */

/* A board: N vertices, E edges (u < v) in dictionary order. ~10 KiB; copy freely. */
struct az_tangled_graph {
	int number;             /* numbered graph, 0 for a graph read from a file */
	char name[64];          /* "K4", "Petersen", or the file name */
	int n, e;
	uint8_t eu[AZ_TANGLED_MAX_EDGES]; /* edge k = (eu[k], ev[k]), eu[k] < ev[k] */
	uint8_t ev[AZ_TANGLED_MAX_EDGES];
	int16_t edge_of[AZ_TANGLED_MAX_VERTICES][AZ_TANGLED_MAX_VERTICES]; /* edge index or -1 */
	int red_default;        /* fixed-token variant default tokens (TANGLED.md 1.6) */
	int blue_default;
};

/* Numbered graph 1-12, 18, 19 or 20 (TANGLED.md section 2). 0, or -EINVAL with a message. */
int az_tangled_graph_numbered(int number, struct az_tangled_graph *g, char *err, size_t errlen);

/* Edge-list text: one or more edges per line, each "u-v" or two numbers "u v" (commas allowed
 * as separators), '#' starts a comment; an optional line "vertices N" fixes N (otherwise
 * N = largest vertex + 1). Edges may come in any order; they are sorted. `source` names the
 * text in messages. Returns 0, or -EINVAL with "SOURCE:LINE: what is wrong" in err (not a
 * number, self-loop, duplicate edge, vertex out of range, missing partner, no edges ...). */
int az_tangled_graph_parse(const char *text, const char *source, struct az_tangled_graph *g,
			   char *err, size_t errlen);

/* az_tangled_graph_parse() on a file's contents; -ENOENT (or -errno) when it cannot be read. */
int az_tangled_graph_load(const char *path, struct az_tangled_graph *g, char *err,
			  size_t errlen);

/* Automorphisms of g (vertex permutations preserving adjacency) by backtracking with colour
 * refinement: perm[k][v] is the image of v. Fills at most cap (>= 1) permutations, identity
 * first, then in the order found; *complete (may be NULL) is 1 when the group was exhausted.
 * Returns the count. */
int az_tangled_graph_automorphisms(const struct az_tangled_graph *g,
				   uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES], int cap,
				   int *complete);

/* Validate a state vector of N + E entries (values as ints, so that out-of-range input can be
 * reported): vertex entries 0-2 with at most one 1 and one 2, edge labels 0-3, and when
 * need_terminal every edge coloured and both tokens placed. 0, or -EINVAL with a message. */
int az_tangled_state_check(const struct az_tangled_graph *g, const int *state, int len,
			   int need_terminal, char *err, size_t errlen);

/* ==== adjudicators (games/tangled/tangled_table.c) ==== */

enum az_tangled_winner { AZ_TANGLED_DRAW = 0, AZ_TANGLED_RED = 1, AZ_TANGLED_BLUE = 2 };

struct az_tangled_outcome {
	enum az_tangled_winner winner; /* red if score > epsilon, blue if < -epsilon */
	double score;                  /* influence[red] - influence[blue] */
	double influence[AZ_TANGLED_MAX_VERTICES]; /* n entries: column sums of C */
};

/* An adjudicator for one graph with its per-colouring cache. Single-threaded; a forked child
 * may keep using its copy (file appends are single O_APPEND writes of checksummed records). */
struct az_tangled_adj;

/* Uses o->adjudicator (NULL: "table"), schedule, anneal_time_ns, anneal_reads, anneal_sweeps,
 * beta_min, beta_max, seed and cache_dir; ignores graph, variant and epsilon. Loads the cache
 * file when cache_dir is set (a file with another key, version or a bad checksum is ignored
 * and rewritten). A "table" adjudicator of a small graph computes its whole table here: with
 * E <= 6 in memory (and the cache file); with 6 < E <= 16 (Moser spindle, 3-prism, barbell,
 * Petersen) as a complete outcome table file in table_dir (or cache_dir) keyed by graph, method
 * and parameters, mapped read-only (forked children share it) and built first when absent or
 * damaged, by table_workers forked processes, resuming an interrupted build (this call forks:
 * make it before starting threads). Without either directory such a graph caches lazily.
 * Returns 0, -EINVAL (bad name, graph too large for the method, bad schedule), -ENOENT,
 * -ENOMEM, with a message in err. */
int az_tangled_adj_create(const struct az_tangled_graph *g, const struct az_tangled_options *o,
			  struct az_tangled_adj **out, char *err, size_t errlen);
void az_tangled_adj_destroy(struct az_tangled_adj *a);

/* Resolved method name ("exact", "exact-krylov", "anneal", "table:exact" ...). */
const char *az_tangled_adj_name(const struct az_tangled_adj *a);

/* Correlation matrix C[N*N] (row-major, symmetric, zero diagonal) of the colouring labels[E]
 * (labels 0-3; 0 counts as grey). Returns 0, or -ENOMEM / -EDOM (eigensolver failure). */
int az_tangled_adj_correlations(struct az_tangled_adj *a, const uint8_t *labels, double *corr);

/* Influence vector F[N] of the colouring (cheap after the colouring's first adjudication). */
int az_tangled_adj_influence(struct az_tangled_adj *a, const uint8_t *labels, double *f);

/* Adjudicate a terminal state vector (N + E bytes, as the game state): 0 or -errno; -EINVAL
 * when the state has no red or no blue vertex. */
int az_tangled_adj_judge(struct az_tangled_adj *a, const uint8_t *state, double epsilon,
			 struct az_tangled_outcome *out);

struct az_tangled_adj_stats {
	uint64_t evaluations;  /* evolutions / annealing runs actually performed */
	uint64_t lookups;      /* influence requests */
	uint64_t cached;       /* distinct colourings held, up to symmetry */
	uint64_t file_loaded;  /* entries read from the cache file */
	int file_rejected;     /* the cache file was present but not trusted (rewritten) */
	int automorphisms;     /* automorphisms used to share evaluations */
	uint64_t table_entries; /* canonical colourings in the complete table (0: none) */
	uint64_t table_bytes;   /* its file size */
	int table_built;        /* this call built (or finished) it */
};
void az_tangled_adj_stats(const struct az_tangled_adj *a, struct az_tangled_adj_stats *st);

/* Path of the cache file ("" when there is none). */
const char *az_tangled_adj_cache_path(const struct az_tangled_adj *a);

/* Path of the complete outcome table in use ("" when there is none). */
const char *az_tangled_adj_table_path(const struct az_tangled_adj *a);

/* ==== the configured game (games/tangled/tangled.c) ==== */

/* Graph, tokens and adjudicator of the configured game (NULL before setup).
 * az_tangled_current_tokens() returns the variant (-EINVAL before setup) and sets the token
 * vertices of the fixed variant (-1 for free tokens). */
const struct az_tangled_graph *az_tangled_current_graph(void);
int az_tangled_current_tokens(int *red, int *blue);
struct az_tangled_adj *az_tangled_current_adj(void);

/* Vertex permutation of the game's symmetry k (NULL when out of range). */
const uint8_t *az_tangled_symmetry_perm(int k);

#endif
