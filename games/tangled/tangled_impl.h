/* SPDX-License-Identifier: MIT */
/* Tangled internals shared by games/tangled*.c (and their unit tests): the anneal schedule,
 * the raw adjudication methods (no cache, no symmetry reduction) and colouring canonical forms.
 * Never included from outside games/ except by tests/games/test_tangled*.c. */
#ifndef AZ_TANGLED_IMPL_H
#define AZ_TANGLED_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "games/tangled/tangled.h"

/* ---- anneal schedule (games/tangled/tangled_exact.c) ---- */

#define TG_SCHEDULE_ROWS 1001

/* Rows k = 0..1000 at s = k / 1000: A(s), B(s) in GHz; hash identifies the contents. */
struct tg_schedule {
	double a[TG_SCHEDULE_ROWS];
	double b[TG_SCHEDULE_ROWS];
	uint64_t hash;
};

/* The shipped schedule text (games/tangled/data/new_schedule.txt, compiled in by CMake). */
extern const char az_tangled_schedule_text[];

/* Parse schedule text (1001 rows "s A B", s = k/1000). 0 or -EINVAL with a message. */
int tg_schedule_parse(const char *text, const char *source, struct tg_schedule *s, char *err,
		      size_t errlen);
/* path NULL: the built-in copy. 0, -ENOENT / -errno (unreadable), -EINVAL (malformed). */
int tg_schedule_load(const char *path, struct tg_schedule *s, char *err, size_t errlen);
/* G2 Hamiltonian coefficients at s: Delta = A(s)/2, Ebig = B(s) (linear interpolation). */
void tg_schedule_at(const struct tg_schedule *s, double sv, double *delta, double *ebig);

/* ---- the evolution loop of TANGLED.md 3.2 shared by the two Schrodinger methods ---- */

/* One method: at each s, prepare() builds H(s), returns the gap l1 - l0 of the full spectrum
 * and, on the first pass, sets psi to the ground state; propagate() applies exp(-i theta H). */
struct tg_evolver {
	int (*prepare)(void *ctx, double delta, double ebig, int first, double *gap);
	int (*propagate)(void *ctx, double theta);
};

/* The G2 step-size loop from s = 0.001 to 0.999. Returns the number of passes or -errno. */
int tg_evolve(const struct tg_schedule *s, double tf_ns, const struct tg_evolver *ev, void *ctx);

/* Ising energies (h = 0, J from labels) of the 2^(N-1) parity-block representatives x (bit
 * N-1 clear; bit i set = spin i down): diag[x] = sum over edges J_uv z_u z_v. */
void tg_ising_diagonal(const struct az_tangled_graph *g, const uint8_t *labels, double *diag);

/* <Z_i Z_j> of a parity-block vector with weights w[x] = |psi_x|^2 into corr[N*N]. */
void tg_block_correlations(int n, const double *w, double *corr);

/* Dense method (N <= TG_EXACT_MAX_N): corr[N*N]. 0, -ENOMEM, -EDOM (eigensolver failure). */
#define TG_EXACT_MAX_N 12
int tg_exact_correlations(const struct az_tangled_graph *g, const uint8_t *labels,
			  const struct tg_schedule *s, double tf_ns, double *corr);
/* The dense method's gap l1 - l0 of H(delta, ebig) (both blocks, with the eigensolver
 * fallbacks). 0, -EINVAL, -ENOMEM, -EDOM. */
int tg_exact_gap(const struct az_tangled_graph *g, const uint8_t *labels, double delta,
		 double ebig, double *gap);

/* ---- Krylov method (games/tangled/tangled_krylov.c), N <= TG_KRYLOV_MAX_N ---- */
#define TG_KRYLOV_MAX_N 20
int tg_krylov_correlations(const struct az_tangled_graph *g, const uint8_t *labels,
			   const struct tg_schedule *s, double tf_ns, double *corr);

/* ---- simulated annealing (games/tangled/tangled_anneal.c) ---- */

/* Implementations of the same sampler. The vector paths run each read in its own SIMD lane with
 * its own random initial spins, vertex choices and acceptance draws: the distribution of C is
 * the scalar path's, the numbers for a given seed are not (reproducible per seed and path). */
enum tg_anneal_path {
	TG_ANNEAL_AUTO,   /* AZ_TANGLED_ANNEAL if set, else the best this CPU runs */
	TG_ANNEAL_SCALAR, /* the reference (tangled_anneal.c), any N */
	TG_ANNEAL_AVX2,   /* 16 reads per register, N <= TG_ANNEAL_SIMD_MAX_N */
	TG_ANNEAL_AVX512, /* 32 reads per register (AVX-512BW), N <= TG_ANNEAL_SIMD_MAX_N */
	TG_ANNEAL_PATHS
};

struct tg_anneal_params {
	uint32_t reads;
	uint32_t sweeps;
	double beta_min; /* 0: 1 / sqrt(sum J^2 + 0.001) */
	double beta_max;
	uint64_t seed;
	enum tg_anneal_path path; /* 0 = TG_ANNEAL_AUTO */
};

/* C = mean over reads of s s^T, zero diagonal (TANGLED.md 3.3), corr[N*N], on the path
 * tg_anneal_path_effective(p->path, N) names. 0, or -ENOMEM / -EINVAL (no reads or sweeps,
 * beta_max <= 0, AZ_TANGLED_ANNEAL unparsable) / -ENODEV (the path needs an ISA this CPU
 * lacks). */
int tg_anneal_correlations(const struct az_tangled_graph *g, const uint8_t *labels,
			   const struct tg_anneal_params *p, double *corr);

/* "auto" | "scalar" | "avx2" | "avx512" into *path: 0 or -EINVAL. */
int tg_anneal_path_parse(const char *text, enum tg_anneal_path *path);
const char *tg_anneal_path_name(enum tg_anneal_path path);
/* 1 when this CPU runs the path (scalar and auto: always). */
int tg_anneal_path_supported(enum tg_anneal_path path);
/* The path that runs for a request on an N-vertex graph: AUTO becomes AZ_TANGLED_ANNEAL's path
 * (when set and parsable, else -EINVAL) or the best supported one; a vector path on N above
 * TG_ANNEAL_SIMD_MAX_N becomes SCALAR. Returns the path, or -EINVAL. */
int tg_anneal_path_effective(enum tg_anneal_path path, int n);

/* ---- the vector paths (games/tangled/tangled_anneal_simd.c, tangled_anneal_avx512.c) ---- */

#define TG_ANNEAL_SIMD_MAX_N AZ_TANGLED_ANNEAL_VECTOR_MAX_N /* a read in one 16-bit lane */

/* Everything the kernels read, built once per call by tg_anneal_plan_init(). Byte tables are
 * indexed by vertex (pshufb): neighbour masks split in low/high bytes, a = J != 0 neighbours,
 * p = J = +1 (purple), b = 1 << v. Acceptance: flipping a spin with dE = 2q is accepted iff
 * the lane's 32-bit draw u >= R[t][q] (R = 2^32 - round(exp(-2 beta_t q) 2^32), R = 0 for
 * q <= 0), tested on the high 16 bits (rh) and on the low ones (rl) only on a tie. */
struct tg_anneal_plan {
	int n;
	uint32_t reads, sweeps;
	uint64_t seed;
	uint16_t nmask;  /* (1 << n) - 1 */
	uint16_t reject; /* 65536 mod n: a 16-bit vertex draw r with (r n) mod 2^16 below it is
			  * redrawn (Lemire), so vertex choices are exactly uniform */
	uint8_t alo[16], ahi[16], plo[16], phi[16], blo[16], bhi[16], deg[16];
	uint8_t (*rhlo)[16], (*rhhi)[16]; /* [sweeps][q]: bytes of R_hi */
	uint16_t (*rl)[16];               /* [sweeps][q]: R_lo */
};

/* Tables for labels[E] on g (N <= TG_ANNEAL_SIMD_MAX_N): 0, -EINVAL, -ENOMEM. */
int tg_anneal_plan_init(struct tg_anneal_plan *pl, const struct az_tangled_graph *g,
			const uint8_t *labels, const struct tg_anneal_params *p);
void tg_anneal_plan_fini(struct tg_anneal_plan *pl);
/* Beta of sweep t: geometric from b0 (p->beta_min, or 1/sqrt(sumj2 + 0.001) when that is 0) to
 * p->beta_max over p->sweeps sweeps, rounded to float32 as numpy.geomspace(dtype=float32). */
double tg_anneal_beta(const struct tg_anneal_params *p, double sumj2, uint32_t t);
/* Run every read of pl; agree[i * N + j] (i < j) += number of reads whose spins i and j agree.
 * Callers check tg_anneal_path_supported() first. */
void tg_anneal_run_avx2(const struct tg_anneal_plan *pl, uint64_t *agree);
void tg_anneal_run_avx512(const struct tg_anneal_plan *pl, uint64_t *agree);

/* ---- colourings up to symmetry (games/tangled/tangled_graphs.c) ---- */

/* A symmetry of the colourings: automorphism perm (edge map emap) followed by a gauge flip g
 * (g[v] = +-1) that turns green into purple and back on every edge with g[u] g[v] = -1. The
 * evolutions (and the annealing statistics) commute with both, and
 * C(labels)[u][v] = g[p[u]] g[p[v]] C(canonical)[p[u]][p[v]]. */
struct tg_transform {
	uint8_t perm[AZ_TANGLED_MAX_VERTICES];
	int8_t gauge[AZ_TANGLED_MAX_VERTICES];
};

/* Edge maps of the automorphisms: emap[k * E + e] = image of edge e under perm[k]. */
void tg_edge_maps(const struct az_tangled_graph *g, const uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES],
		  int count, int16_t *emap);

/* Canonical form of labels[E] (labels 1-3; 0 read as grey): the smallest labelling, in
 * dictionary edge order with grey < green < purple, over the given automorphisms and (when
 * use_gauge) all gauge flips. canon[E] receives it and t (may be NULL) the transform. */
void tg_canonical(const struct az_tangled_graph *g, const uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES],
		  const int16_t *emap, int count, int use_gauge, const uint8_t *labels,
		  uint8_t *canon, struct tg_transform *t);

/* tg_canonical's work for automorphism k alone (with gauge flips): canon[E] and t receive what
 * tg_canonical gives when k is the first automorphism reaching the smallest candidate (the
 * orbit index below says which k that is). */
void tg_canonical_at(const struct az_tangled_graph *g,
		     const uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES], const int16_t *emap, int k,
		     const uint8_t *labels, uint8_t *canon, struct tg_transform *t);

/* ---- orbit index (games/tangled/tangled_orbits.c) ---- */

/* Graphs with at most this many edges (and vertices, automorphisms) get an orbit index:
 * 3^15 = 14,348,907 bytes for Petersen. */
#define TG_ORBIT_MAX_EDGES 15
#define TG_ORBIT_MAX_VERTICES 20

/* Orbit index of g: idx[code(x)] (3^E bytes, malloc'd, caller frees) for every colouring x with
 * labels 1-3 is the first automorphism k (0 <= k < naut <= 255) under which x is
 * gauge-equivalent to its canonical colouring, which is the k tg_canonical settles on; so
 * tg_canonical_at(k) replaces tg_canonical's naut candidates by one, with the same result to
 * the bit. Built from the canonical codes (sorted, every orbit's representative, as
 * tg_outcomes_enumerate gives them) by walking each orbit: the automorphisms in order, the
 * gauge flips in Gray-code order (one vertex per step). 0; -EINVAL (graph too large, naut >
 * 255); -ENOMEM; -EPROTO when the orbits do not cover every colouring exactly (codes not a
 * complete set of representatives): nothing is returned then. Petersen: about 0.5 s. */
int tg_orbit_build(const struct az_tangled_graph *g, const int16_t *emap, int naut,
		   const uint64_t *codes, uint64_t count, uint8_t **idx);

struct tg_outcomes;

/* An adjudicator's orbit index: once the complete table has served TG_ORBIT_AFTER colourings
 * the slow way (so short-lived processes never pay), mapped from "<table path>.orbits", or
 * built (Petersen: about a second) and saved there for every later process. */
#define TG_ORBIT_AFTER 256
struct tg_orbit {
	const uint8_t *idx; /* tg_orbit_build's index, NULL until there */
	uint8_t *own;       /* built here (freed), or NULL */
	void *map;          /* mapped from the file (unmapped), or NULL */
	size_t map_len;
	uint32_t slow;      /* colourings canonicalised by the full scan */
	int tried;          /* set up once */
	char path[4096];    /* the index file, "" for none */
};

/* Zero o; its file is "<table_path>.orbits" (NULL or "": kept in memory only). */
void tg_orbit_init(struct tg_orbit *o, const char *table_path);

/* Set the index up now (map the file, or build and save it) rather than after TG_ORBIT_AFTER
 * slow lookups: a process that forks workers does it once for all of them (they inherit the
 * read-only mapping). Failures leave the full scan in place. */
void tg_orbit_prepare(struct tg_orbit *o, const struct az_tangled_graph *g, const int16_t *emap,
		      int naut, const struct tg_outcomes *tab);

/* tg_canonical (with gauge flips) of labels, through o's index when it has one and the
 * colouring is complete (no label 0); otherwise the full scan, which counts towards setting
 * the index up from tab's codes (tab NULL: never). Same canon and t either way. */
void tg_orbit_canonical(struct tg_orbit *o, const struct az_tangled_graph *g,
			const uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES], const int16_t *emap,
			int naut, const struct tg_outcomes *tab, const uint8_t *labels,
			uint8_t *canon, struct tg_transform *t);
void tg_orbit_fini(struct tg_orbit *o);

/* ---- complete outcome tables (games/tangled/tangled_outcomes.c) ---- */

/* Graphs with at most this many edges get a complete table (Petersen: 15). */
#define TG_OUTCOMES_MAX_EDGES 16

/* Code of a colouring labels[e] (labels 1-3, 0 read as 1): sum (label - 1) 3^k; and back. */
uint64_t tg_outcomes_code(int e, const uint8_t *labels);
void tg_outcomes_decode(int e, uint64_t code, uint8_t *labels);

/* The canonical colourings of g (tg_canonical with gauge flips over perm[0..naut-1], identity
 * first) as sorted codes: *codes is malloc'd (caller frees), *count their number. 0, -EINVAL
 * (E outside 1..TG_OUTCOMES_MAX_EDGES), -ENOMEM. Costs one tg_canonical per gauge-canonical
 * colouring (Petersen: about a second). */
int tg_outcomes_enumerate(const struct az_tangled_graph *g,
			  const uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES], const int16_t *emap,
			  int naut, uint64_t **codes, uint64_t *count);

/* What a table file is for: its path, the key text (graph, method, every parameter) and its
 * hash, the graph, npairs = N (N - 1) / 2; for building, the sorted codes and their count. */
struct tg_outcomes_spec {
	const char *path;
	const char *key;
	uint64_t key_hash;
	const struct az_tangled_graph *g;
	uint32_t npairs;
	const uint64_t *codes; /* build only */
	uint64_t count;        /* build only */
};

/* A mapped, verified table. Read-only: forked children may use their inherited copy. */
struct tg_outcomes;

/* Map s->path read-only and verify all of it (header, key, every chunk checksum, codes
 * increasing, values in [-1, 1]). 0, -ENOENT (absent), -EPROTO (not this key, or damaged:
 * never served), -errno. The caller closes the result. */
int tg_outcomes_open(const struct tg_outcomes_spec *s, struct tg_outcomes **out);
void tg_outcomes_close(struct tg_outcomes *t);

/* The upper triangle (npairs doubles, row-wise) of the canonical colouring `code`, or NULL
 * when the table has no such colouring. Binary search; any process holding t. */
const double *tg_outcomes_find(const struct tg_outcomes *t, uint64_t code);
uint64_t tg_outcomes_count(const struct tg_outcomes *t);
/* The table's canonical codes, sorted (tg_outcomes_count of them; valid while t is open). */
const uint64_t *tg_outcomes_codes(const struct tg_outcomes *t);
size_t tg_outcomes_bytes(const struct tg_outcomes *t);

/* How to build: workers (<= 1: in this process), records per chunk (0: count / 64 within
 * 1..256), stop_after (tests: claim at most this many chunks, then -EINTR with the parts
 * kept; 0: no limit),
 * eval (corr[N*N] of a canonical colouring; called in the workers), progress (records done of
 * the total, in the builder process, about ten times a second; may be NULL). On return kept
 * (records found in verified chunks of an earlier build) and computed (records evaluated). */
struct tg_outcomes_build {
	int workers;
	uint32_t chunk_records;
	uint32_t stop_after;
	int (*eval)(void *ctx, const uint8_t *labels, double *corr);
	void *eval_ctx;
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	uint64_t kept, computed;
};

/* Build s->path (see the file's essay: lock, resume from verified chunks, forked workers,
 * crash-safe renames). Returns 0 (also when another process finished it meanwhile), -EINTR
 * (stop_after reached), -ECHILD (a worker died), the evaluator's -errno, -ENOMEM or an I/O
 * -errno, with a message in err. Call from a single-threaded process (it forks). */
int tg_outcomes_build(const struct tg_outcomes_spec *s, struct tg_outcomes_build *b,
		      char *err, size_t errlen);

/* 64-bit FNV-1a, continued from h (start with TG_FNV_INIT). */
#define TG_FNV_INIT 14695981039346656037ull
uint64_t tg_fnv1a(uint64_t h, const void *p, size_t n);

/* ==== the adjudicator's caches (games/tangled/tangled_map.c) ==== */

/* kb-byte keys -> vn doubles, open addressing; cap a power of two. One thread. */
struct tg_map {
	uint8_t *keys;
	double *vals;
	uint8_t *used;
	size_t cap, count;
	uint32_t kb, vn;
};
int tg_map_init(struct tg_map *m, uint32_t kb, uint32_t vn, size_t cap); /* 0 or -ENOMEM */
void tg_map_fini(struct tg_map *m);
/* The vn values of key, or NULL when absent (valid until the next put). */
const double *tg_map_get(const struct tg_map *m, const uint8_t *key);
/* Insert or overwrite key's values (the map grows as needed): 0 or -ENOMEM. */
int tg_map_put(struct tg_map *m, const uint8_t *key, const double *val);

#endif
