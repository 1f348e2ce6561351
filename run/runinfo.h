/* SPDX-License-Identifier: MIT */
/* A run directory as `azrun status` and `azrun report` show it: what run.json, state.json,
 * metrics.jsonl and progress.json say (run/rundir.h names the files). Read-only, safe while
 * azrun runs. */
#ifndef AZ_RUN_RUNINFO_H
#define AZ_RUN_RUNINFO_H

#include <stddef.h>
#include <stdint.h>

/* The benchmark's sets (azrun --bench; eval/c4_bench.h measures them), in the order of its
 * metrics keys bench_policy_<key> and bench_agent_<key>: Pascal Pons' six Connect Four sets
 * (mistake rates), then the two tactical sets (success rates). */
#define AZ_RUN_BENCH_SETS 8
#define AZ_RUN_BENCH_PONS 6 /* the first six are mistake rates */
struct az_run_bench_set {
	const char *key;   /* "L1_R1" */
	const char *title; /* "beginning-easy" */
};
extern const struct az_run_bench_set az_run_bench_sets[AZ_RUN_BENCH_SETS];

/* The Tangled benchmark's keys (azrun --bench auto; eval/tangled_bench.h measures them): per
 * depth K (uncoloured edges) the mistake rates bench_policy_u<K> and bench_agent_u<K>, and
 * bench_vs_rollout, the agent's score against rollout MCTS. A row keeps at most this many
 * depths (the smallest). */
#define AZ_RUN_BENCH_DEPTHS 4

/* One line of metrics.jsonl. Numbers absent from the line are NAN. */
struct az_metric_row {
	double iteration, games, positions, policy_loss, value_loss;
	double best_iteration; /* the best network after this iteration's arena (NAN: absent) */
	double arena_score, arena_wins, arena_draws, arena_losses;
	double arena_first[3], arena_second[3]; /* candidate W, D, L moving first / second */
	double arena_distinct_games;            /* different arena games (moves, colours) */
	double evals_per_s, mean_batch, ring_occupancy;
	double eval_cache_hit_rate; /* self-play leaves answered by the workers' caches, 0-1 */
	double adjudication_share;  /* workers' time in the game's adjudicator, 0-1 (Tangled) */
	double sims_per_s;          /* self-play simulations per second */
	double selfplay_s, train_s, arena_s;
	double time;  /* unix seconds when the iteration completed */
	/* the benchmark (fractions 0-1; NAN in an iteration without it) and its seconds */
	double bench_policy[AZ_RUN_BENCH_SETS], bench_agent[AZ_RUN_BENCH_SETS], bench_s;
	/* the Tangled benchmark: bench_depths depths (0: none), ascending, with their mistake
	 * rates; the score against rollout MCTS (NAN: absent) */
	int bench_depths;
	int bench_depth[AZ_RUN_BENCH_DEPTHS];
	double bench_upolicy[AZ_RUN_BENCH_DEPTHS], bench_uagent[AZ_RUN_BENCH_DEPTHS];
	double bench_vs_rollout;
	int promoted;
	int resumed;  /* the first iteration of an azrun that resumed the run */
};

/* What a run directory says about its run. */
struct az_run_info {
	char game[32];
	uint32_t iterations;      /* target (run.json; progress.json while running); 0 unknown */
	double arena_threshold;   /* run.json, default 0.55 */
	double time_limit_s;      /* run.json's --time-limit in seconds; 0: none */
	uint32_t completed;       /* state.json (0 when absent) */
	uint32_t best_iteration;
	struct az_metric_row *rows; /* metrics.jsonl sorted by iteration, malloc'd */
	size_t nrows;
	/* DIR/progress.json, written by azrun about once per second while it runs */
	int have_progress;
	int running;              /* an azrun holds the directory's lock (azrun.lock) */
	char damaged[512];        /* "" or why state.json cannot be trusted (verify's message) */
	long pid;                 /* the lock holder's while running, else progress.json's */
	uint32_t iteration;       /* iteration in progress */
	char phase[16];           /* "selfplay" | "train" | "arena" | "bench" | "done" */
	double phase_started;     /* unix seconds */
	double done, total;       /* games (or steps) of the phase */
	double evals_per_s;
	double updated;           /* unix seconds of the last write */
};

/* Read DIR/run.json, state.json, metrics.jsonl (unparsable lines skipped) and progress.json.
 * Returns 0, or -ENOENT when DIR has no run.json (not a run directory), -EINVAL when its
 * run.json is there but does not load (damage), -ENOMEM, with a message in err. Free with
 * az_run_info_free(). */
int az_run_info_load(const char *dir, struct az_run_info *ri, char *err, size_t errlen);
void az_run_info_free(struct az_run_info *ri);

/* Elo estimates from the arena scores (candidate against the best network of the time):
 * d = 400 * log10(s / (1 - s)), s clamped to [0.01, 0.99] (so |d| <= 798); the candidate of
 * row i is rated best + d, and a promoted candidate's rating becomes the best's. Ratings are
 * relative to the first network (iteration 0, rating 0). Fills best[n] (the best network's
 * rating after row i) and cand[n] (row i's candidate; NAN without an arena score). A row without
 * an arena score (a line a repair replaced) that may have promoted (the next row's
 * best_iteration is its iteration or later, or unknown) makes every later rating NAN. */
void az_elo_estimate(const struct az_metric_row *rows, size_t n, double *best, double *cand);

#endif
