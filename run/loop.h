/* SPDX-License-Identifier: MIT */
/* The AlphaZero iteration loop: self-play -> train on the replay window -> arena (candidate vs
 * best, promoted at a score >= the threshold) -> checkpoint, metrics, state; over a run
 * directory (run/rundir.h) and a supervised pipeline (run/supervise.h). azrun fills
 * struct az_run_params from its configuration; nothing here sees the command line.
 *
 * Messages: what happens during a run goes to the run log (base/util.h's az_log), each line
 * prefixed with who speaks ("run:", "supervisor:", "worker N:", ...), never as the program and
 * never naming its options. What the user should do next is the caller's to say, from what the
 * calls return: az_run_check_resume's err and r->check, -EDOM from az_run_iterate,
 * r->damage_seen and r->time_limited. */
#ifndef AZ_RUN_LOOP_H
#define AZ_RUN_LOOP_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/util.h"
#include "games/game.h"
#include "run/roles.h"
#include "run/rundir.h"
#include "run/supervise.h"

/* What a benchmark child hands back (run/loop.c maps it shared before the fork). */
struct az_run_bench_out {
	/* ---- written by the child (relaxed: a progress display only) ---- */
	_Atomic uint64_t done, total; /* positions measured, of all */
	/* ---- written by the child, read by the orchestrator after waitpid (which orders them) */
	char json[2048];  /* metrics keys, a JSON fragment: "bench_policy_L1_R1": 0.05, ... */
	char summary[512]; /* one line for the log; on failure, why */
};

/* The strength benchmark after the arena (azrun --bench; measure NULL: none). */
struct az_run_bench {
	uint32_t every; /* in iterations that are multiples of it (>= 1) */
	/* Runs in a child process forked from the orchestrator, so that nothing it does can
	 * reach the run's state: measure the network in checkpoint ckpt, fill out->json and
	 * out->summary. Returns 0, or -errno with the reason in out->summary. */
	int (*measure)(void *ctx, const char *ckpt, struct az_run_bench_out *out);
	void *ctx;
};

struct az_run_params {
	const char *out;              /* the run directory */
	const struct az_game *g;      /* configured before anything forks */
	uint32_t iterations;          /* run up to this iteration */
	uint32_t workers;             /* worker processes per phase (= rings) */
	uint32_t games_per_iter;      /* self-play games per iteration */
	uint32_t arena_games;
	float arena_threshold;        /* promote at score >= this */
	uint32_t window;              /* replay window, in iterations */
	uint32_t net;                 /* enum az_net_kind (net/model.h) of a new run's networks */
	uint32_t hidden, blocks;      /* their width (ResNet: filters) and residual blocks */
	uint32_t value_head;          /* enum az_value_head (net/model.h) of a new run's networks */
	uint64_t seed;
	const char *game_options;     /* recorded in checkpoints ("graph=3;variant=free" or "") */
	int quiet;                    /* no progress bars */
	/* Stop after the iteration during which the run's training time (the iterations in
	 * metrics.jsonl, earlier azruns' included, plus this azrun's) reaches this many seconds;
	 * 0: no limit. */
	double time_limit_s;
	struct az_worker_params worker;
	struct az_trainer_proc_params train;
	struct az_pipeline_params pipeline;
	struct az_run_bench bench;
};

struct az_run_loop;

/* Hooks of a run spread over several machines (run/mpi.h fills them; NULL for a single-node
 * run). Each int-returning hook returns 0 or -errno, which fails the iteration. */
struct az_run_hooks {
	/* This process's share of a phase of `total` games. */
	uint64_t (*share)(struct az_run_loop *r, enum az_worker_mode mode, uint64_t total);
	/* Before this process's self-play of iteration it (tell the others to play). */
	int (*selfplay_begin)(struct az_run_loop *r, uint32_t it);
	/* After it: bring in the others' games (stored in the run directory) and add their
	 * counts to sp. */
	int (*selfplay_end)(struct az_run_loop *r, uint32_t it, struct az_pipeline_counters *sp);
	/* Before the arena: hand the candidate checkpoint at cand to the others. */
	int (*arena_begin)(struct az_run_loop *r, uint32_t it, const char *cand);
	/* After this process's arena games: add the others' results to c. */
	int (*arena_end)(struct az_run_loop *r, uint32_t it, struct az_pipeline_counters *c);
	/* Every supervision tick of every phase (about 20 ms). */
	void (*tick)(struct az_run_loop *r);
	void *ctx;
};

/* One run in progress. Lives in static storage of the orchestrator (children read it after
 * fork). */
/* The trainer phase's anonymous shared page (MAP_SHARED, inherited by the trainer process): the
 * orchestrator fills job before the fork; the trainer writes report, read after waitpid, and
 * progress (run/roles.h). */
struct az_train_page {
	struct az_train_job job;
	struct az_train_report report;
	struct az_train_progress progress;
};

struct az_run_loop {
	struct az_run_params p;
	struct az_pipeline pl;
	uint32_t completed;      /* last completed iteration */
	uint32_t first;          /* the first iteration this azrun ran (> 1 after a resume) */
	int time_limited;        /* az_run_iterate() stopped at p.time_limit_s */
	long damage_seen;        /* damaged files met and not repaired (the caller exits 1) */
	/* the phase times of every azrun's iterations of this run, as metrics.jsonl holds them
	 * (what --time-limit counts): read back at the start, then summed on */
	double trained_s;
	uint32_t best_iteration; /* iteration whose candidate is best (0: the random init) */
	char best[AZ_RUNDIR_PATH_MAX];
	char latest[AZ_RUNDIR_PATH_MAX];
	struct az_phase ph;      /* the phase in progress */
	enum az_worker_mode mode;   /* its workers' mode */
	struct az_train_page *train; /* the trainer's shared page (NULL outside its phase) */
	struct az_progress bar;     /* its progress bar */
	double last_progress;       /* az_now() of the last progress.json */
	const struct az_run_hooks *hooks; /* NULL: one machine */
	struct az_rundir_check check; /* what az_run_check_resume found */
	/* The last benchmark this azrun ran: of the best network of iteration bench_of (-1:
	 * none yet); an iteration whose best network is the same repeats it (the benchmark is
	 * deterministic in the network). */
	long bench_of;
	char bench_json[2048], bench_summary[512];
	int lr_late_said; /* the switch to --lr-late is logged once per azrun */
};

/* Before anything in the run directory is touched: is it a run that can be continued? The
 * check is az_rundir_verify's, the one behind `azrun verify`: any damage it reports is
 * refused. Sets r->completed, r->best_iteration and r->check. Returns 0 or -EINVAL with a
 * one-line message in err (the first damage found; r->check.problems counts them all). */
int az_run_check_resume(struct az_run_loop *r, char *err, size_t errlen);

/* First start (resume = 0, or resume of a directory without state.json and without a
 * completed iteration): a random network is iteration 0's checkpoint and the first best.
 * Resume: roll back or complete what lies beyond the last committed iteration
 * (az_rundir_repair, each action logged), pick up the best and latest networks. Returns 0 or
 * -errno (logged). */
int az_run_prepare_models(struct az_run_loop *r, int resume);

/* Start the pipeline (segment + inference process serving the best network). 0 or -errno. */
int az_run_start(struct az_run_loop *r);

/* Run iterations completed+1 .. p.iterations; stops after the current one on SIGINT/SIGTERM,
 * or before the next one once p.time_limit_s is reached (r->time_limited, logged). Returns 0,
 * -EINTR, -ECHILD (a process failed, logged), -EDOM (training diverged, logged; nothing of
 * that iteration is committed) or -errno. What is complete stays intact in the run directory
 * whatever happens; damaged files met on the way are counted in r->damage_seen. */
int az_run_iterate(struct az_run_loop *r);

/* Play one phase of `games` games of iteration `it` in `mode` with p.workers workers (the
 * replay files go to p.out's replay/); the control area's counters hold its results. For a
 * rank of an MPI run that is not the learner (run/mpi.c). Returns 0 or -errno / -ECHILD. */
int az_run_play(struct az_run_loop *r, enum az_worker_mode mode, uint32_t it, uint64_t games);

/* Stop the pipeline and write the final progress.json. */
void az_run_finish(struct az_run_loop *r);

#endif
