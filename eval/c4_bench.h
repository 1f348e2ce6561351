/* SPDX-License-Identifier: MIT */
/* The Connect Four strength benchmark that azrun --bench runs during training: AlphaZero.jl's
 * mistake rate on Pascal Pons' test sets and the success rate on two tactical sets (a win in
 * one while the opponent threatens; a forced block), for the raw policy and the search agent,
 * judged by the exact solver (eval/c4_labels.h). */
#ifndef AZ_EVAL_C4_BENCH_H
#define AZ_EVAL_C4_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "eval/c4_labels.h"
#include "eval/positions.h"
#include "mcts/mcts.h"

/* The sets, in this order everywhere (results, metrics keys): Pons' six that exist
 * (Test_L1_R1 .. Test_L3_R1: stage L1 beginning, L2 middle, L3 end; difficulty R1 easy, R2
 * medium, R3 hard), then the two tactical sets. */
#define AZ_C4_BENCH_PONS 6
#define AZ_C4_BENCH_SETS 8
#define AZ_C4_BENCH_WIN1 6
#define AZ_C4_BENCH_BLOCK 7
extern const char *const az_c4_bench_names[AZ_C4_BENCH_SETS]; /* "L1_R1", .., "win1", "block" */

/* The tactical sets' seed: fixed, so every run (and every resume) measures the same positions. */
#define AZ_C4_BENCH_TACTIC_SEED 1ull

struct az_c4_bench_params {
	const char *dir;           /* Pons' sets: dir/Test_L1_R1 ... dir/Test_L3_R1 */
	const char *work;          /* created if missing: the labels caches (Test_*.labels) and
	                            * the tactical sets (tactic_win1.txt, tactic_block.txt) */
	long positions;            /* the first N of each Pons set; N positions per tactical set */
	uint32_t sims;             /* the agent's simulations per move (>= 2) */
	struct az_mcts_params mp;  /* the agent's search; dir_eps is forced to 0 (no noise) */
	/* Optional (NULL): called after each position with the positions done and the total
	 * (8 * positions at most), for a progress display. */
	void (*tick)(void *arg, long done, long total);
	void *tick_arg;
};

struct az_c4_bench_result {
	/* Fractions in [0, 1]: for the Pons sets the mistake rate (moves that change the
	 * game-theoretic outcome), for win1 / block the success rate (the move is the win or
	 * the block); policy: the raw policy's argmax over the legal moves, agent: the search. */
	double policy[AZ_C4_BENCH_SETS], agent[AZ_C4_BENCH_SETS];
	long n[AZ_C4_BENCH_SETS]; /* positions measured */
	double seconds;           /* wall time of the whole benchmark, labelling included */
};

/* Check dir for the benchmark without writing anything: a folder holding the six Pons files,
 * each readable, with at least one position in its first `positions` lines and no malformed
 * line among them. Returns 0, or -ENOENT / -EINVAL with a one-line message in err naming the
 * file and what to do. */
int az_c4_bench_check(const char *dir, long positions, char *err, size_t errlen);

/* Mistakes of an agent over the first n positions of l: the moves (az_eval_move: raw policy
 * when t is NULL, else t's search at sims) that do not keep the position's outcome. Positions
 * the side to move has lost count (no move is a mistake there), as in AlphaZero.jl. Labels
 * missing from l are solved (az_labels_keeps). Returns the count, or a negative errno of
 * fn, the search or the solver. */
long az_c4_bench_mistakes(struct az_labels *l, long n, az_eval_fn fn, void *ctx,
			  struct az_tree *t, uint32_t sims);

/* Solve every legal move of the first n positions of l that the labels do not know yet, so
 * that later benchmarks solve nothing; tick (may be NULL) after each position. Returns 0 or
 * the solver's negative errno. */
int az_c4_bench_label(struct az_labels *l, long n, void (*tick)(void *arg, long i),
		      void *arg);

/* Read the first `limit` (0: all) positions of a tactical-set file (az_c4_tactics_write's
 * format; each line needs its best field) into *out (malloc'd, *n of them). Returns 0, or
 * -ENOENT / -EINVAL (message in err with file and line) / -ENOMEM. */
int az_c4_bench_load_tactics(const char *path, long limit, struct az_position **out, long *n,
			     char *err, size_t errlen);

/* Successes of an agent (as in az_c4_bench_mistakes) on n tactical positions: its move is one
 * of the position's best moves. Returns the count or a negative errno. */
long az_c4_bench_tactics(const struct az_position *pos, long n, az_eval_fn fn, void *ctx,
			 struct az_tree *t, uint32_t sims);

/* The whole benchmark of evaluator fn(ctx) (a Connect Four network, or a test's fake): the
 * tactical sets written into p->work when missing or of another size (az_c4_tactics_write,
 * AZ_C4_BENCH_TACTIC_SEED), then every set for the raw policy and the agent. Labels: the run's
 * cache p->work/Test_<set>.labels, merged with the machine's (az_c4_labels_path of the set,
 * which azeval --mistakes uses); every legal move of the sample is solved when unknown
 * (az_c4_bench_label), so only a run's first benchmark solves; what was solved is saved to
 * both caches (temporary name, then rename; the machine's cache best effort). Writes nothing
 * else. Returns 0, or -errno with a one-line message in err. */
int az_c4_bench_run(const struct az_c4_bench_params *p, az_eval_fn fn, void *ctx,
		    struct az_c4_bench_result *r, char *err, size_t errlen);

/* az_c4_bench_run for the network in checkpoint `ckpt`, evaluated in this process on the CPU
 * backend, batch 1 (eval/net_open.h; the caller sets the BLAS threads). Returns 0, or -errno
 * with a one-line message in err (a checkpoint that is not a Connect Four network: -EPROTO). */
int az_c4_bench_checkpoint(const struct az_c4_bench_params *p, const char *ckpt,
			   struct az_c4_bench_result *r, char *err, size_t errlen);

#endif
