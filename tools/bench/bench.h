/* SPDX-License-Identifier: MIT */
/* The azbench modes. Each takes the arguments after the mode name (argv[0] is the mode name, as
 * az_opts_parse() expects), parses them through its option table (tools/bench/bench_opts.h) and
 * returns the process exit status: 0 ok, 1 a measurement or output failed, 2 bad usage. Results
 * go through tools/bench/bench_common.h. */
#ifndef AZ_BENCH_H
#define AZ_BENCH_H

/* Rings against pipes, Unix sockets and POSIX message queues (tools/bench/ring_bench.c). */
int az_bench_ring(int argc, char **argv);

/* Inference batch throughput and latency. */
int az_bench_infer(int argc, char **argv);

/* Self-play workers feeding one inference process end to end. */
int az_bench_pipeline(int argc, char **argv);

/* Trainer steps per second. */
int az_bench_train(int argc, char **argv);

/* Simulations per second of the tree search alone, with a stub evaluator
 * (tools/bench/search_bench.c). */
int az_bench_search(int argc, char **argv);
/* Tangled's simulated-annealing paths side by side (tools/bench/tangled_bench.c). */
int az_bench_tangled(int argc, char **argv);

#endif
