/* SPDX-License-Identifier: MIT */
/* The Tangled strength benchmark that azrun --bench auto runs during training: AlphaZero.jl's
 * mistake rate of the raw policy and of the search agent on sets of positions drawn from
 * uniformly random games at a few numbers of uncoloured edges, labelled once per run by the
 * exact solver (eval/tangled_labels.h), and the agent's score against rollout MCTS
 * (eval/match.h). Works on the configured Tangled game (az_tangled_setup). */
#ifndef AZ_EVAL_TANGLED_BENCH_H
#define AZ_EVAL_TANGLED_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "mcts/mcts.h"

/* At most this many sets (depths). */
#define AZ_TANGLED_BENCH_SETS 3
/* The deepest set has at most this many uncoloured edges: the solver's cost grows about
 * five-fold per edge (Petersen, 20 positions: 4 edges 0.15 s, 6 edges 2 s, 7 edges 23 s,
 * 8 edges 97 s on a 2-vCPU machine; docs/benchmark.md). */
#define AZ_TANGLED_BENCH_DEEPEST 8
/* The sets' sampling seed (each depth adds its own): fixed, so a regenerated set is the same. */
#define AZ_TANGLED_BENCH_SEED 1ull

struct az_tangled_bench_params {
	const char *work;          /* created if missing: tangled_u<K>.txt per depth K and the
	                            * manifest tangled_sets.txt */
	long positions;            /* positions per set (distinct; fewer when the depth has fewer) */
	long games;                /* games against rollout MCTS (colours alternated; 0: none) */
	uint32_t sims;             /* the agent's and the rollout opponent's simulations (>= 2) */
	struct az_mcts_params mp;  /* the agent's search; dir_eps is forced to 0 (no noise) */
	uint64_t solve_nodes;      /* solver budget per position (0: none); positions beyond it
	                            * are left out of the set */
	const char *board;         /* optional (NULL): the board line of the sets' files
	                            * (eval/positions.h) */
	/* Optional (NULL): called with the steps done and the total (positions labelled,
	 * positions measured twice, games played), for a progress display. */
	void (*tick)(void *arg, long done, long total);
	void *tick_arg;
};

struct az_tangled_bench_result {
	int sets;                                  /* depths measured */
	int depth[AZ_TANGLED_BENCH_SETS];          /* uncoloured edges of each set, ascending */
	long n[AZ_TANGLED_BENCH_SETS];             /* positions in each */
	double policy[AZ_TANGLED_BENCH_SETS];      /* mistake rates in [0, 1]: raw policy */
	double agent[AZ_TANGLED_BENCH_SETS];       /*   and search agent */
	long wins, draws, losses;                  /* the agent against rollout MCTS */
	double vs_rollout;                         /* its score in [0, 1] */
	int labelled;                              /* 1: this call generated the sets */
	double label_seconds, seconds;             /* labelling; the whole benchmark */
};

/* The depths (uncoloured edges) of a graph with `edges` edges: the deepest D is
 * min(round(3E/4), AZ_TANGLED_BENCH_DEEPEST), the others round(D/2) and round(3D/4), without
 * repeats and at least 1. Returns how many (1..AZ_TANGLED_BENCH_SETS), in depth[] ascending. */
int az_tangled_bench_depths(int edges, int *depth);

/* Whether p->work holds the sets of the configured game for p->positions (its manifest names
 * them, each loads): 1 yes, 0 no (az_tangled_bench_run would label them first). */
int az_tangled_bench_ready(const struct az_tangled_bench_params *p);

/* The whole benchmark of evaluator fn(ctx) (a Tangled network, or a test's fake): the sets
 * labelled into p->work unless az_tangled_bench_ready (uniformly random games, seeded, the
 * exact solver within p->solve_nodes; the manifest written last), then each set for the raw
 * policy and the agent, then p->games games against rollout MCTS. Returns 0, or -errno with a
 * one-line message in err (-EINVAL: Tangled not configured, or a depth without a position the
 * solver could label). */
int az_tangled_bench_run(const struct az_tangled_bench_params *p, az_eval_fn fn, void *ctx,
			 struct az_tangled_bench_result *r, char *err, size_t errlen);

/* az_tangled_bench_run for the network in checkpoint `ckpt`, evaluated in this process on the
 * CPU backend, batch 1 (eval/net_open.h). Returns 0, or -errno with a one-line message in err (a
 * checkpoint that is not a network of the configured Tangled game: -EPROTO). */
int az_tangled_bench_checkpoint(const struct az_tangled_bench_params *p, const char *ckpt,
				struct az_tangled_bench_result *r, char *err, size_t errlen);

#endif
