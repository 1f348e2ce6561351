/* SPDX-License-Identifier: MIT */
/* azrun --bench: the Connect Four benchmark (eval/c4_bench.h) and the Tangled one
 * (eval/tangled_bench.h) wired into the iteration loop's benchmark hook (struct az_run_bench,
 * run/loop.h), and the check of their options. */
#ifndef AZ_TOOLS_RUN_BENCH_H
#define AZ_TOOLS_RUN_BENCH_H

#include <stddef.h>

#include "run/loop.h"
#include "tools/config.h"

/* The default of --bench-positions: chosen so that a benchmark costs well under 10 % of a
 * default Connect Four iteration on a 2-vCPU machine (docs/benchmark.md has the measurement). */
#define AZ_RUN_BENCH_POSITIONS 20

/* --bench's value that asks for generated sets (Tangled's only kind). */
#define AZ_RUN_BENCH_AUTO "auto"

/* The solver's budget per position when Tangled's sets are labelled (azeval's default). */
#define AZ_RUN_BENCH_SOLVE_NODES 100000000ull

/* Check c->bench for c->game without writing anything: connect4, a folder of Pons' sets
 * (c->bench_positions of each readable); tangled, "auto"; no other game has a benchmark.
 * Returns 0 or -EINVAL with a one-line message in err. */
int az_run_bench_check(const struct az_config *c, char *err, size_t errlen);

/* Fill b from c: off when c->bench is "", else the benchmark of the run's search (c->sims,
 * c_puct, MCTS-Solver, first-play urgency; no noise) with its labels caches and tactical sets
 * (connect4) or its labelled sets (tangled) in OUT/bench/. Keeps pointers into c (which must
 * outlive the run) and into static storage: one run per process. */
void az_run_bench_params(const struct az_config *c, struct az_run_bench *b);

#endif
