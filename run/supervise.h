/* SPDX-License-Identifier: MIT */
/* Starting and supervising the processes of a pipeline: the shared-memory segment and the
 * inference process (struct az_pipeline), the model hand-over to it, and one phase's children
 * (struct az_phase: self-play or arena workers, or the trainer) with their restart policy.
 * azrun's iteration loop (run/loop.h) and `azbench pipeline` both start and stop processes
 * through this file; nothing else forks.
 *
 * Children die with their parent (PR_SET_PDEATHSIG) and ignore SIGINT: the supervisor decides
 * when they stop (SIGTERM, or phase_stop in the control area). Single-threaded: call everything
 * from the supervising process's main thread.
 *
 * Watchdog: every child beats (a heartbeat counter: the control area's server_beat and
 * worker[i].beat, infer/control.h and run/control.h; the trainer's az_train_progress.beat),
 * and whenever the supervisor waits (a phase, a model load) it samples the beats. A process
 * whose beat stops for longer than the rule of run/watchdog.h allows is logged by name, killed
 * (SIGKILL) and then restarted like a dead one, within the same restart budgets; nothing else
 * times out (a worker waiting for a stalled inference process waits while the watchdog
 * restarts it). */
#ifndef AZ_RUN_SUPERVISE_H
#define AZ_RUN_SUPERVISE_H

#include <stdint.h>
#include <sys/types.h>

#include "infer/server.h"
#include "infer/control.h"
#include "run/control.h"
#include "run/watchdog.h"
#include "shm/segment.h"

/* SIGINT, SIGTERM, SIGHUP and SIGPIPE set the interrupted flag (az_sv_interrupted) and are
 * unblocked (one that arrived while blocked counts now); SIGXFSZ is ignored (a file size limit
 * surfaces as EFBIG from write()). Call once in the supervising process, first thing in main:
 * a signal before it would be lost (a background job of a shell inherits SIGINT ignored).
 * Children forked by az_sv_spawn ignore all but SIGTERM. */
void az_sv_install_signals(void);

/* The number of the first stop signal that arrived (exit with 128 + it), or 0. */
int az_sv_interrupted(void);

/* Sleeps until a child of this process exits (SIGCHLD, seen through a self-pipe that
 * az_sv_install_signals sets up) or max_s seconds pass, whichever is first; a stop signal
 * also ends it early. Returns 1 when a child exit woke it, 0 otherwise (without
 * az_sv_install_signals it just sleeps max_s). Never reaps: the caller's waitpid does. */
int az_sv_wait_child(double max_s);

/* Fork a child named `name` (prctl PR_SET_NAME, at most 15 characters) that dies with its
 * parent and exits with status 0 when fn returns >= 0, 1 otherwise. Returns the child's pid in
 * the parent, or -errno when fork failed. */
pid_t az_sv_spawn(int (*fn)(void *), void *arg, const char *name);

/* Wait up to timeout_s seconds for pid to exit, then SIGKILL it. Returns 0 when it exited with
 * status 0, -ECHILD otherwise (killed, failed, or timed out). */
int az_sv_reap(pid_t pid, double timeout_s);

/* ---- the segment and the inference process ---- */

struct az_pipeline_params {
	uint32_t rings;          /* one single-producer ring per worker */
	uint32_t ring_capacity;  /* slots per ring, a power of two */
	struct az_infer_config infer;
	const char *seg_tag;     /* segment name tag: /az-<uid>-<pid>-<tag> */
	int reap_stale;          /* first remove the segments of dead runs (and log them) */
	uint32_t max_server_restarts; /* restarts of a dead inference process within
				       * restart_window_s (at most AZ_SV_BUDGET_MAX); 0: a death
				       * fails */
	double restart_window_s;      /* the window; 0: the life of the pipeline */
	/* At most this many bytes of one evaluation cache shared by every worker, in the segment
	 * after the control area (run/evalcache.h); 0: none. */
	size_t eval_cache_shared_bytes;
	/* The watchdog's floor: no process counts as stalled before this many seconds without a
	 * heartbeat (run/watchdog.h); 0: AZ_WD_FLOOR_S. */
	double watchdog_floor_s;
};

/* A restart budget: at most `max` restarts in any `window_s` seconds (a sliding window), so
 * that crashes spread over a long run do not add up to its end. */
#define AZ_SV_BUDGET_MAX 64
/* The model load rate the watchdog assumes before it has measured one, bytes per second:
 * reading, parsing and uploading a checkpoint on a slow disk. */
#define AZ_SV_LOAD_RATE 20e6
struct az_sv_budget {
	uint32_t max;       /* 0: no restart allowed */
	double window_s;    /* 0: an infinite window (max restarts in all) */
	double at[AZ_SV_BUDGET_MAX]; /* times of the last restarts, a ring */
	uint32_t n;         /* restarts so far */
};

/* Take one restart at time now (seconds, any monotonic clock): 1 and recorded when fewer than
 * max restarts happened in (now - window_s, now], 0 otherwise. max is clamped to
 * AZ_SV_BUDGET_MAX. */
int az_sv_budget_take(struct az_sv_budget *b, double now);

struct az_pipeline {
	struct az_pipeline_params pp;
	struct az_seg seg;
	/* The control area, inside seg (run/control.h): run is all of it, ctl the inference
	 * process's part at its start (&run->infer). */
	struct az_run_ctl_shm *run;
	struct az_infer_ctl_shm *ctl;
	pid_t server;            /* 0 when not running */
	uint32_t server_restarts;
	struct az_sv_budget server_budget;
	/* the watchdog: what it learned per kind of process, the inference process's watch */
	struct az_wd_kind wd_server, wd_worker, wd_trainer;
	struct az_wd_watch server_watch;
	double wd_tick;    /* az_now() of the last sample of the beats (0: none yet) */
	double load_rate;  /* slowest model load seen, bytes per second (0: none yet) */
};

/* Create the segment and fork the inference process; then serve best_path in the best model
 * slot (NULL: serve nothing yet). Returns 0 or -errno (logged); az_pipeline_stop() cleans up
 * either way. */
int az_pipeline_start(struct az_pipeline *pl, const struct az_pipeline_params *pp,
		      const char *best_path);

/* Point model slot s at the checkpoint at path and wait until the inference process has loaded
 * it (it is restarted if it dies meanwhile, or if the watchdog finds it stalled, within the
 * restart budget). The load has no heartbeat inside it: the watchdog allows AZ_WD_MULT times its
 * expected time on top of the timeout, the file's bytes at the slowest load rate seen so far
 * (AZ_SV_LOAD_RATE before any load). Returns 0, the load error (-errno, logged), -EINTR after
 * SIGINT/SIGTERM or -ECHILD (the restart budget is spent). */
int az_pipeline_serve_model(struct az_pipeline *pl, enum az_model_slot s, const char *path);

/* The inference process exited with wait status st (the caller reaped it): log it and restart
 * it when the budget allows. Returns 0 (restarted) or -ECHILD. */
int az_pipeline_server_died(struct az_pipeline *pl, int st);

/* Ask the inference process to stop (5 s, then SIGKILL), reap it, destroy the segment. Safe to
 * call on a pipeline that never started. */
void az_pipeline_stop(struct az_pipeline *pl);

/* Zero the control area's per-phase counters and set the phase's games target. Only while no
 * worker runs (fork orders these stores before anything the next workers do). */
void az_pipeline_reset_phase(struct az_pipeline *pl, uint64_t games_target);

/* A snapshot of the control area's counters (relaxed loads: exact once every writer has been
 * reaped, a little stale otherwise). */
struct az_pipeline_counters {
	uint64_t evals, batches, forward_ns;   /* inference process */
	uint64_t games, positions, moves, sims; /* workers */
	uint64_t occ_sum, occ_n;               /* ring occupancy samples */
	uint64_t cache_hits, cache_lookups;    /* workers' evaluation caches */
	uint64_t arena_wins, arena_draws, arena_losses;
	uint64_t arena_first_wins, arena_first_draws, arena_first_losses; /* candidate moved first */
	uint64_t arena_distinct, arena_hashed; /* 0 here; the arena phase's caller sets them from
						* az_pipeline_arena_distinct() */
	uint64_t adjudicate_ns, busy_ns;       /* workers: adjudicating, running (wall ns) */
	int32_t worker_error;
};
void az_pipeline_sample(const struct az_pipeline *pl, struct az_pipeline_counters *c);

/* The arena phase's distinct games: how many different hashes (moves and the candidate's
 * colour) its finished games with numbers below AZ_CTL_ARENA_HASHES left in the control area;
 * *hashed (may be NULL) gets how many games were hashed. A deterministic arena (no noise, no
 * temperature, no random ties) plays each colour's game once and repeats it. Call once the
 * phase's workers have been reaped. Returns the count or -ENOMEM. */
int az_pipeline_arena_distinct(const struct az_pipeline *pl, uint64_t *hashed);

/* Replace the phase's games and positions counts (the sums of the workers' counters) by what the
 * replay store holds, once every worker of the phase has been reaped: az_pipeline_sample()
 * reports them until the next phase. */
void az_pipeline_set_store_counts(struct az_pipeline *pl, uint64_t games, uint64_t positions);

/* ---- one phase's children ---- */

#define AZ_PHASE_MAX_TORN 64

struct az_phase {
	/* set by the caller */
	const char *name;        /* "selfplay" | "arena" | "train" | ... (progress, messages) */
	const char *child_name;  /* "worker" | "trainer": messages and process names (az-NAME) */
	uint32_t iteration;
	uint32_t n;              /* children, at most AZ_CTL_MAX_WORKERS */
	int workers;             /* 1: children are ring workers (child i uses ring i); a dead one's
				  * unfinished games are handed back to the phase */
	uint32_t max_restarts;   /* restarts of dead children in this phase; 0: a death fails */
	/* Runs in child i (attempt 0 first, then one more per restart). Returns 0 or -errno. */
	int (*child)(struct az_phase *ph, uint32_t i);
	void *arg;
	/* Called about every 20 ms while az_phase_wait supervises (progress); may be NULL. */
	void (*tick)(struct az_phase *ph);
	/* Heartbeats of children that are not workers (workers beat in the control area): beats[i]
	 * is child i's (run/watchdog.h); NULL: not watched. */
	_Atomic uint64_t *beats;

	/* kept by the supervisor */
	pid_t pids[AZ_CTL_MAX_WORKERS];
	uint32_t attempt[AZ_CTL_MAX_WORKERS];
	uint32_t restarts;
	int stopping;            /* told to stop: deaths are expected, not restarted */
	/* starts of workers that died (their files may end in a torn record) */
	uint32_t torn_worker[AZ_PHASE_MAX_TORN], torn_attempt[AZ_PHASE_MAX_TORN];
	uint32_t ntorn;
	double t0;               /* az_now() at az_phase_start */
	struct az_wd_watch watch[AZ_CTL_MAX_WORKERS]; /* the watchdog's, per child */
	struct az_pipeline *pl;
};

/* Fork the phase's n children. On a fork failure the started ones are sent SIGTERM (reap them
 * with az_phase_wait). Returns 0 or -errno. */
int az_phase_start(struct az_pipeline *pl, struct az_phase *ph);

/* Supervise until every child has exited: restart the dead (within max_restarts), restart the
 * inference process if it dies, stop everything on SIGINT/SIGTERM or a failure (SIGTERM to the
 * children). Returns 0, -ECHILD (a child failed), -EINTR or -errno. */
int az_phase_wait(struct az_pipeline *pl, struct az_phase *ph);

/* Supervise for at most `seconds` while the children play an open-ended phase: returns 0 when
 * the time is up with every child alive, -ECHILD when one died, -EINTR on SIGINT/SIGTERM. */
int az_phase_watch(struct az_pipeline *pl, struct az_phase *ph, double seconds);

/* End the phase early: set phase_stop (workers abandon unfinished games and exit) and reap
 * every child (SIGKILL after timeout_s). Returns 0 or -ECHILD when one did not exit cleanly. */
int az_phase_stop(struct az_pipeline *pl, struct az_phase *ph, double timeout_s);

#endif
