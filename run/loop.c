/* SPDX-License-Identifier: MIT */
/* The iteration loop (run/loop.h); its setup (resume check, first models, start, finish) is
 * run/loop_setup.c. */
#include "run/loop.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "net/checkpoint.h"
#include "run/loop_impl.h"
#include "run/runinfo.h"
#include "run/tbevents.h"
#include "train/replay.h"

#define MAX_RESTARTS 16 /* per phase; more means something is systematically wrong */

/* ---- progress ---- */

void loop_write_progress(struct az_run_loop *r, const struct az_phase *ph, uint64_t done,
			 uint64_t total, double evals_per_s)
{
	struct az_rundir_progress p = {
		.pid = (long)getpid(), .iteration = ph ? ph->iteration : r->completed,
		.iterations = r->p.iterations, .phase = ph ? ph->name : "done",
		.phase_started = ph ? (double)time(NULL) - (az_now() - ph->t0) : (double)time(NULL),
		.done = done, .total = total, .evals_per_s = evals_per_s};
	az_rundir_progress_write(r->p.out, &p);
}

/* The trainer's steps (run/roles.h): its bar and progress.json. */
static void train_tick(struct az_run_loop *r, struct az_phase *ph, double now)
{
	struct az_train_progress *tp = r->train ? &r->train->progress : NULL;
	/* Relaxed: display only (run/roles.h). */
	uint32_t done = tp ? atomic_load_explicit(&tp->done, memory_order_relaxed) : 0;
	uint32_t total = tp ? atomic_load_explicit(&tp->total, memory_order_relaxed) : 0;
	if (total) {
		r->bar.total = total;
		az_progress_update(&r->bar, done, "steps");
	}
	if (now - r->last_progress >= 1.0) {
		r->last_progress = now;
		loop_write_progress(r, ph, done, total ? total : 1, 0.0);
	}
}

static void phase_tick(struct az_phase *ph)
{
	struct az_run_loop *r = ph->arg;
	double now = az_now();
	if (r->hooks && r->hooks->tick)
		r->hooks->tick(r);
	if (!ph->workers) {
		train_tick(r, ph, now);
		return;
	}
	char extra[64];
	struct az_pipeline_counters c;
	az_pipeline_sample(&r->pl, &c);
	/* Relaxed: display only. */
	uint64_t total = atomic_load_explicit(&r->pl.run->games_target, memory_order_relaxed);
	double el = now - ph->t0, eps = el > 0 ? (double)c.evals / el : 0.0;
	snprintf(extra, sizeof(extra), "games, %.0f evals/s", eps);
	r->bar.total = total;
	az_progress_update(&r->bar, c.games, extra);
	if (now - r->last_progress >= 1.0) {
		r->last_progress = now;
		loop_write_progress(r, ph, c.games, total, eps);
	}
}

/* Start the bar of a phase: "iter 3/10 selfplay". */
static void bar_begin(struct az_run_loop *r, const char *phase, uint32_t it, uint64_t total)
{
	char label[48];
	snprintf(label, sizeof(label), "iter %u/%u %s", it, r->p.iterations, phase);
	az_progress_begin(&r->bar, label, total, r->p.quiet);
}

/* ---- phases ---- */

static int worker_child(struct az_phase *ph, uint32_t i)
{
	struct az_run_loop *r = ph->arg;
	char path[AZ_RUNDIR_PATH_MAX];
	az_rundir_replay_path(path, sizeof(path), r->p.out, ph->iteration, i, ph->attempt[i]);
	int rc = az_worker_run(&r->p.worker, &r->pl.seg, i, r->mode, ph->iteration, path);
	if (rc == -EPROTO)
		az_log("worker %u: stopped: the inference process answered that it has not loaded "
		       "the model asked for (see its error above)", i);
	else if (rc < 0)
		az_log("worker %u: failed: %s", i, strerror(-rc));
	return rc;
}

static int trainer_child(struct az_phase *ph, uint32_t i)
{
	struct az_run_loop *r = ph->arg;
	char err[512];
	(void)i;
	int rc = az_train_run(&r->train->job, &r->train->report, err, sizeof(err));
	if (rc < 0)
		az_log("trainer: %s", err);
	return rc;
}

/* A worker killed mid-write leaves a torn record and the records of the game it was writing at
 * the end of its file: drop them now, while the phase's files are still ours, and say so (with
 * any game of a record that fails its checksum: the file then holds its intact games only). */
static void cut_torn_tail(struct az_run_loop *r, uint32_t it, uint32_t worker, uint32_t attempt)
{
	char path[AZ_RUNDIR_PATH_MAX], err[512];
	struct az_replay_buf b;
	size_t dropped = 0;
	az_rundir_replay_path(path, sizeof(path), r->p.out, it, worker, attempt);
	if (access(path, F_OK) != 0)
		return; /* died before it created the file */
	az_replay_buf_init(&b, r->p.g->features, r->p.g->actions);
	long n = az_replay_load_file(path, &b, 1, &dropped, err, sizeof(err));
	az_replay_buf_free(&b);
	if (n < 0) {
		r->damage_seen++;
		az_log("run: warning: %s", err);
	} else if (dropped)
		az_log("run: %s: dropped %zu bytes (the game the dead worker was writing, and any "
		       "game of a record that fails its checksum); %ld whole-game records kept",
		       path, dropped, n);
}

/* The whole games and their records at the start of replay file `path` (after its header).
 * Returns 0, -ENOENT when there is no such file, or -errno. */
static int count_whole_games(const struct az_game *g, const char *path, uint64_t *games,
			     uint64_t *records)
{
	struct stat st;
	int rc = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
	*games = *records = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		goto out;
	}
	if ((size_t)st.st_size <= AZ_REPLAY_HEADER_BYTES)
		goto out;
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		goto out;
	}
	uint32_t n = 0;
	size_t len = az_replay_whole_games((const char *)p + AZ_REPLAY_HEADER_BYTES,
					   (size_t)st.st_size - AZ_REPLAY_HEADER_BYTES,
					   g->features, g->actions, &n);
	munmap(p, (size_t)st.st_size);
	*games = n;
	*records = len / az_replay_record_bytes(g->features, g->actions);
out:
	close(fd);
	return rc;
}

/* After a worker died: the games and positions counters hold every game a worker finished, but
 * a dead worker's replay writer may not have written its last games yet (they were staged), so
 * count the whole games and records that are in this node's files of the phase instead: metrics
 * and store agree. The dead worker's staged games are lost, not played again: the iteration has
 * that many games fewer (logged). */
static void recount_store(struct az_run_loop *r, uint32_t it)
{
	char path[AZ_RUNDIR_PATH_MAX];
	uint64_t games = 0, records = 0;
	for (uint32_t w = 0; w < r->ph.n; w++) {
		for (uint32_t a = 0; a <= r->ph.attempt[w]; a++) {
			uint64_t ng, nr;
			az_rundir_replay_path(path, sizeof(path), r->p.out, it, w, a);
			int rc = count_whole_games(r->p.g, path, &ng, &nr);
			if (rc == -ENOENT)
				continue;
			if (rc < 0) {
				az_log("run: %s: %s; the workers' counts are kept", path,
				       strerror(-rc));
				return;
			}
			games += ng;
			records += nr;
		}
	}
	/* Every worker has been reaped (waitpid orders their writes). */
	struct az_pipeline_counters c;
	az_pipeline_sample(&r->pl, &c);
	if (c.games != games || c.positions != records)
		az_log("run: iteration %u: %llu games (%llu positions) in the store, %llu (%llu) "
		       "counted by the workers (the rest were staged by a worker that died); the "
		       "store's counts are kept", it, (unsigned long long)games,
		       (unsigned long long)records, (unsigned long long)c.games,
		       (unsigned long long)c.positions);
	az_pipeline_set_store_counts(&r->pl, games, records);
}

static void phase_init(struct az_run_loop *r, const char *name, uint32_t it, uint32_t n,
		       int workers)
{
	struct az_phase *ph = &r->ph;
	memset(ph, 0, sizeof(*ph));
	ph->name = name;
	ph->child_name = workers ? "worker" : "trainer";
	ph->iteration = it;
	ph->n = n;
	ph->workers = workers;
	ph->max_restarts = MAX_RESTARTS;
	ph->child = workers ? worker_child : trainer_child;
	ph->arg = r;
	ph->tick = phase_tick;
}

static int run_phase(struct az_run_loop *r)
{
	int rc = az_phase_start(&r->pl, &r->ph);
	int wrc = az_phase_wait(&r->pl, &r->ph);
	az_progress_end(&r->bar);
	return rc < 0 ? rc : wrc;
}

static int run_workers(struct az_run_loop *r, enum az_worker_mode mode, uint32_t it, uint64_t games,
		       const char *label)
{
	phase_init(r, label, it, r->p.workers, 1);
	r->mode = mode;
	az_pipeline_reset_phase(&r->pl, games);
	bar_begin(r, label, it, games);
	int rc = run_phase(r);
	if (mode == AZ_WORKER_SELFPLAY && r->ph.ntorn > 0) {
		for (uint32_t i = 0; i < r->ph.ntorn; i++)
			cut_torn_tail(r, it, r->ph.torn_worker[i], r->ph.torn_attempt[i]);
		recount_store(r, it);
	}
	/* Relaxed: every worker has been reaped (waitpid orders their writes). */
	int werr = atomic_load_explicit(&r->pl.run->worker_error, memory_order_relaxed);
	if (rc == 0 && werr < 0) {
		az_log("run: a worker reported %s", strerror(-werr));
		rc = werr;
	}
	return rc;
}

int az_run_play(struct az_run_loop *r, enum az_worker_mode mode, uint32_t it, uint64_t games)
{
	return run_workers(r, mode, it, games, mode == AZ_WORKER_SELFPLAY ? "selfplay" : "arena");
}

/* This process's share of a phase of `total` games (all of it on one machine). */
static uint64_t share(struct az_run_loop *r, enum az_worker_mode mode, uint64_t total)
{
	return r->hooks ? r->hooks->share(r, mode, total) : total;
}

/* The learning rate of iteration it: --lr, or --lr-late once the run has passed --lr-late-at
 * of its --time-limit (training time before this iteration, every azrun of the run counted) or,
 * without one, of its --iterations (those completed before it). The switch is logged once. */
static float iteration_lr(struct az_run_loop *r, uint32_t it)
{
	const struct az_trainer_proc_params *tp = &r->p.train;
	double done = r->p.time_limit_s > 0 ? r->trained_s / r->p.time_limit_s
					    : (double)(it - 1) / r->p.iterations;

	if (!(tp->lr_late > 0) || done < tp->lr_late_at)
		return tp->lr;
	if (!r->lr_late_said) {
		az_info("iter %u train: learning rate %g from here on (the late rate, %.0f %% of the "
			"%s done)", it, (double)tp->lr_late, 100.0 * done,
			r->p.time_limit_s > 0 ? "time limit" : "iterations");
		r->lr_late_said = 1;
	}
	return tp->lr_late;
}

static int run_trainer(struct az_run_loop *r, uint32_t it, const char *cand,
		       struct az_train_report *out)
{
	char **paths = NULL;
	uint32_t n = 0;
	int rc = az_rundir_replay_window(r->p.out, it, r->p.window, &paths, &n);
	if (rc < 0)
		return rc;
	/* The report and the step counts come back through an anonymous shared page. */
	struct az_train_page *pg = mmap(NULL, sizeof(*pg), PROT_READ | PROT_WRITE,
					MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (pg == MAP_FAILED) {
		rc = -errno;
		goto out;
	}
	r->train = pg;
	pg->job = (struct az_train_job){.tp = &r->p.train, .iteration = it,
					.init_path = r->latest, .out_path = cand,
					.replay_paths = paths, .n_replay = n,
					.lr = iteration_lr(r, it), .progress = &pg->progress};
	phase_init(r, "train", it, 1, 0);
	r->ph.beats = &pg->progress.beat; /* the watchdog's (run/watchdog.h) */
	bar_begin(r, "train", it, 1);
	rc = run_phase(r);
	*out = pg->report;
	munmap(pg, sizeof(*pg));
	r->train = NULL;
out:
	for (uint32_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

/* ---- one iteration ---- */

struct iter_stats {
	double selfplay_s, train_s, arena_s;
	double arena_evals_per_s; /* arena leaf evaluations per second of its games */
	struct az_pipeline_counters sp; /* self-play's counters */
	double score;
	int promoted;
	struct az_train_report tr;
	uint64_t wins, draws, losses;
	uint64_t first[3], second[3]; /* candidate W, D, L moving first and moving second */
	uint64_t distinct;            /* distinct arena games (moves and colours) */
	int bench;       /* the benchmark ran (or was repeated): r->bench_json holds its keys */
	double bench_s;  /* its wall time in this iteration */
};

/* Share of the workers' time spent adjudicating terminal states (0 for games without an
 * adjudicator). */
static double adjudication_share(const struct az_pipeline_counters *c)
{
	return c->busy_ns ? (double)c->adjudicate_ns / (double)c->busy_ns : 0.0;
}

/* The self-play phase's log line: evals/s beside sims/s and the evaluation cache's hit rate
 * (with the cache on, most simulations need no network evaluation, so evals/s alone reads as
 * a collapse), and the adjudicator's share of the workers' time when the game has one. */
static void log_selfplay(uint32_t it, const struct iter_stats *st)
{
	const struct az_pipeline_counters *c = &st->sp;
	double sp = st->selfplay_s > 0 ? st->selfplay_s : 1;
	char adj[48] = "";

	if (c->adjudicate_ns)
		snprintf(adj, sizeof(adj), ", adjudication %.1f %%", 100.0 * adjudication_share(c));
	az_info("iter %u selfplay: %llu games, %llu positions, %.1fs, %.0f sims/s, %.0f evals/s "
		"(cache hits %.1f %%), mean batch %.1f%s", it, (unsigned long long)c->games,
		(unsigned long long)c->positions, st->selfplay_s, (double)c->sims / sp,
		(double)c->evals / sp,
		c->cache_lookups ? 100.0 * (double)c->cache_hits / (double)c->cache_lookups : 0.0,
		c->batches ? (double)c->evals / (double)c->batches : 0.0, adj);
}

static int selfplay_phase(struct az_run_loop *r, uint32_t it, struct iter_stats *st)
{
	double t0 = az_now();
	int rc = r->hooks ? r->hooks->selfplay_begin(r, it) : 0;
	if (rc == 0)
		rc = run_workers(r, AZ_WORKER_SELFPLAY, it,
				 share(r, AZ_WORKER_SELFPLAY, r->p.games_per_iter), "selfplay");
	az_pipeline_sample(&r->pl, &st->sp);
	if (rc == 0 && r->hooks)
		rc = r->hooks->selfplay_end(r, it, &st->sp);
	st->selfplay_s = az_now() - t0;
	if (rc == 0)
		log_selfplay(it, st);
	return rc;
}

static int arena_phase(struct az_run_loop *r, uint32_t it, const char *cand, struct iter_stats *st)
{
	double t0 = az_now(), t1 = t0;
	int rc = r->hooks ? r->hooks->arena_begin(r, it, cand) : 0;
	if (rc == 0)
		rc = az_pipeline_serve_model(&r->pl, AZ_MODEL_CANDIDATE, cand);
	if (rc == 0) {
		t1 = az_now();
		rc = run_workers(r, AZ_WORKER_ARENA, it, share(r, AZ_WORKER_ARENA, r->p.arena_games),
				 "arena");
	}
	struct az_pipeline_counters c;
	az_pipeline_sample(&r->pl, &c);
	/* Over the games only, as evals_per_s is over self-play's (the model load is excluded). */
	double games_s = az_now() - t1;
	st->arena_evals_per_s = (double)c.evals / (games_s > 0 ? games_s : 1);
	if (rc == 0) {
		int d = az_pipeline_arena_distinct(&r->pl, &c.arena_hashed);

		rc = d < 0 ? d : 0;
		c.arena_distinct = d < 0 ? 0 : (uint64_t)d;
	}
	if (rc == 0 && r->hooks)
		rc = r->hooks->arena_end(r, it, &c);
	st->arena_s = az_now() - t0;
	if (rc < 0)
		return rc;
	st->wins = c.arena_wins;
	st->draws = c.arena_draws;
	st->losses = c.arena_losses;
	st->first[0] = c.arena_first_wins;
	st->first[1] = c.arena_first_draws;
	st->first[2] = c.arena_first_losses;
	st->second[0] = c.arena_wins - c.arena_first_wins;
	st->second[1] = c.arena_draws - c.arena_first_draws;
	st->second[2] = c.arena_losses - c.arena_first_losses;
	st->distinct = c.arena_distinct;
	uint64_t n = st->wins + st->draws + st->losses;
	st->score = n ? ((double)st->wins + 0.5 * (double)st->draws) / (double)n : 0.0;
	/* The threshold is a float (0.55f is slightly above 0.55): compare with a tolerance so an
	 * exact 22/40 promotes. */
	st->promoted = st->score >= (double)r->p.arena_threshold - 1e-6;
	az_info("iter %u arena: candidate %llu-%llu-%llu (W-D-L) score %.3f -> %s; moving first "
		"%llu-%llu-%llu, second %llu-%llu-%llu; %llu distinct games", it,
		(unsigned long long)st->wins, (unsigned long long)st->draws,
		(unsigned long long)st->losses, st->score, st->promoted ? "promoted" : "kept best",
		(unsigned long long)st->first[0], (unsigned long long)st->first[1],
		(unsigned long long)st->first[2], (unsigned long long)st->second[0],
		(unsigned long long)st->second[1], (unsigned long long)st->second[2],
		(unsigned long long)st->distinct);
	/* A deterministic arena (greedy play, no noise, ties always broken alike) plays one game
	 * per colour over and over: its score measures two games, not n. Some repeats are normal
	 * in a small game (tic-tac-toe's good openings are few): warn when fewer than half of the
	 * games are distinct. */
	if (2 * c.arena_distinct < c.arena_hashed)
		az_log("run: warning: iter %u arena: %llu of %llu games repeat an earlier game "
		       "(a deterministic arena? opening plies at temperature 1 vary its games)", it,
		       (unsigned long long)(c.arena_hashed - c.arena_distinct),
		       (unsigned long long)c.arena_hashed);
	return 0;
}

/* ---- the strength benchmark (struct az_run_bench) ---- */

struct bench_job {
	struct az_run_loop *r;
	const char *ckpt;
	struct az_run_bench_out *out;
};

static int bench_child(void *arg)
{
	struct bench_job *j = arg;
	const struct az_run_bench *b = &j->r->p.bench;
	return b->measure(b->ctx, j->ckpt, j->out);
}

/* Run the child to its end, with a progress bar and progress.json. Ctrl-C kills it (the
 * iteration then commits without the benchmark). Returns 0 when it exited with status 0. */
static int bench_wait(struct az_run_loop *r, pid_t pid, struct az_run_bench_out *out)
{
	for (int st;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
		if (w < 0 && errno != EINTR)
			return -ECHILD;
		if (az_sv_interrupted()) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return -EINTR;
		}
		if (r->hooks && r->hooks->tick)
			r->hooks->tick(r);
		/* Relaxed: display only (run/loop.h). */
		uint64_t done = atomic_load_explicit(&out->done, memory_order_relaxed);
		uint64_t total = atomic_load_explicit(&out->total, memory_order_relaxed);
		if (total) {
			r->bar.total = total;
			az_progress_update(&r->bar, done, "positions");
		}
		double now = az_now();
		if (now - r->last_progress >= 1.0) {
			r->last_progress = now;
			loop_write_progress(r, &r->ph, done, total ? total : 1, 0.0);
		}
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

/* Whether the child's fragment is what a metrics line may hold: "bench_..." keys with numbers
 * in [0, 1], nothing else (a broken child must not make the line unreadable). */
static int bench_json_ok(const char *json)
{
	char buf[sizeof(((struct az_run_bench_out *)0)->json) + 2];
	snprintf(buf, sizeof(buf), "{%s}", json);
	cJSON *j = cJSON_Parse(buf), *it;
	int ok = cJSON_IsObject(j) && cJSON_GetArraySize(j) > 0;
	cJSON_ArrayForEach(it, j)
		ok = ok && it->string && !strncmp(it->string, "bench_", 6) && cJSON_IsNumber(it) &&
		     it->valuedouble >= 0 && it->valuedouble <= 1;
	cJSON_Delete(j);
	return ok;
}

/* After the arena, every p.bench.every iterations: the benchmark of the best network as it
 * stands after the arena (the candidate when promoted), in a child process; its keys land in
 * r->bench_json for this iteration's metrics line. A failed benchmark is logged and leaves
 * the line without them: the iteration goes on. */
static void bench_phase(struct az_run_loop *r, uint32_t it, const char *cand,
			struct iter_stats *st)
{
	const struct az_run_bench *b = &r->p.bench;
	if (!b->measure || it % b->every != 0)
		return;
	double t0 = az_now();
	if (r->bench_of == (long)r->best_iteration) {
		st->bench = 1;
		st->bench_s = az_now() - t0;
		az_info("iter %u bench: best network unchanged (iteration %u): %s", it,
			r->best_iteration, r->bench_summary);
		return;
	}
	struct az_run_bench_out *out = mmap(NULL, sizeof(*out), PROT_READ | PROT_WRITE,
					    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (out == MAP_FAILED) {
		az_log("run: iter %u bench: %s; the iteration goes on without it", it,
		       strerror(errno));
		return;
	}
	memset(out, 0, sizeof(*out));
	phase_init(r, "bench", it, 1, 0);
	r->ph.t0 = t0;
	bar_begin(r, "bench", it, 1);
	struct bench_job j = {.r = r, .ckpt = r->best_iteration == it ? cand : r->best, .out = out};
	pid_t pid = az_sv_spawn(bench_child, &j, "az-bench");
	int rc = pid < 0 ? (int)pid : bench_wait(r, pid, out);
	az_progress_end(&r->bar);
	out->json[sizeof(out->json) - 1] = '\0'; /* the child is untrusted: bound its strings */
	out->summary[sizeof(out->summary) - 1] = '\0';
	st->bench_s = az_now() - t0;
	if (rc == 0 && !bench_json_ok(out->json)) {
		snprintf(out->summary, sizeof(out->summary), "the benchmark process returned "
			 "malformed results");
		rc = -EPROTO;
	}
	if (rc == 0) {
		memcpy(r->bench_json, out->json, sizeof(r->bench_json));
		memcpy(r->bench_summary, out->summary, sizeof(r->bench_summary));
		r->bench_of = r->best_iteration;
		st->bench = 1;
		az_info("iter %u bench: best network (iteration %u), %.1fs: %s", it,
			r->best_iteration, st->bench_s, r->bench_summary);
	} else {
		az_log("run: iter %u bench: %s; the iteration goes on without it", it,
		       rc == -EINTR ? "stopped" : out->summary[0] ? out->summary
		       : "the benchmark process failed");
	}
	munmap(out, sizeof(*out));
}

/* Seconds as the metrics line holds them, with three decimals: the time limit sums these in
 * this azrun and reads them back after a resume (prior_training_s()), and the two sums must
 * agree to the bit, or a resume at the limit would find a few milliseconds left and run one
 * more iteration. */
static double as_written(double s)
{
	char b[32];

	snprintf(b, sizeof(b), "%.3f", s);
	return strtod(b, NULL);
}

/* Unix time in seconds, for the metrics' "time" (TensorBoard's wall time). */
static double wall_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int write_metrics(struct az_run_loop *r, uint32_t it, const struct iter_stats *st)
{
	char line[6144], err[512], bench[sizeof(r->bench_json) + 64] = "";
	double sp = st->selfplay_s > 0 ? st->selfplay_s : 1;
	const struct az_pipeline_counters *c = &st->sp;
	if (st->bench)
		snprintf(bench, sizeof(bench), "\"bench_s\": %.3f, %s, ", st->bench_s, r->bench_json);
	snprintf(line, sizeof(line),
		 "{\"iteration\": %u, \"games\": %llu, \"positions\": %llu, "
		 "\"policy_loss\": %.5f, \"value_loss\": %.5f, \"arena_score\": %.4f, "
		 "\"promoted\": %s, \"arena_wins\": %llu, \"arena_draws\": %llu, "
		 "\"arena_losses\": %llu, \"arena_first_wins\": %llu, \"arena_first_draws\": %llu, "
		 "\"arena_first_losses\": %llu, \"arena_second_wins\": %llu, "
		 "\"arena_second_draws\": %llu, \"arena_second_losses\": %llu, "
		 "\"arena_distinct_games\": %llu, \"evals_per_s\": %.1f, \"sims_per_s\": %.1f, "
		 "\"mean_batch\": %.2f, \"ring_occupancy\": %.2f, \"train_samples\": %llu, "
		 "\"train_steps\": %u, \"train_lr\": %g, \"train_threads\": %u, "
		 "\"selfplay_s\": %.3f, \"train_s\": %.3f, "
		 "\"arena_s\": %.3f, \"arena_evals_per_s\": %.1f, \"best_iteration\": %u, "
		 "\"eval_cache_hit_rate\": %.4f, \"adjudication_share\": %.4f, %s"
		 "\"time\": %.3f%s}",
		 it, (unsigned long long)c->games, (unsigned long long)c->positions,
		 st->tr.policy_loss, st->tr.value_loss, st->score, st->promoted ? "true" : "false",
		 (unsigned long long)st->wins, (unsigned long long)st->draws,
		 (unsigned long long)st->losses, (unsigned long long)st->first[0],
		 (unsigned long long)st->first[1], (unsigned long long)st->first[2],
		 (unsigned long long)st->second[0], (unsigned long long)st->second[1],
		 (unsigned long long)st->second[2], (unsigned long long)st->distinct,
		 (double)c->evals / sp, (double)c->sims / sp,
		 c->batches ? (double)c->evals / (double)c->batches : 0.0,
		 c->occ_n ? (double)c->occ_sum / (double)c->occ_n : 0.0,
		 (unsigned long long)st->tr.samples, st->tr.steps, (double)st->tr.lr,
		 st->tr.threads, st->selfplay_s, st->train_s,
		 st->arena_s, st->arena_evals_per_s, r->best_iteration,
		 c->cache_lookups ? (double)c->cache_hits / (double)c->cache_lookups : 0.0,
		 adjudication_share(c), bench, wall_clock(),
		 it == r->first && r->first > 1 ? ", \"resumed\": true" : "");
	int rc = az_rundir_metrics_commit(r->p.out, it - 1, line, err, sizeof(err));
	/* what --time-limit counts, one term at a time in prior_training_s()'s order, so that a
	 * resume reads back the same sum */
	if (rc >= 0) {
		r->trained_s += as_written(st->selfplay_s);
		r->trained_s += as_written(st->train_s);
		r->trained_s += as_written(st->arena_s);
		r->trained_s += st->bench ? as_written(st->bench_s) : 0.0;
	}
	if (rc == -EINVAL) /* a damaged line in the file (err says which) */
		r->damage_seen++;
	if (rc < 0)
		az_log("run: %s", err);
	else if (az_tb_write_run(r->p.out, err, sizeof(err)) < 0) /* a view: the run goes on */
		az_log("run: warning: TensorBoard events not written: %s", err);
	return rc;
}

int loop_save_state(struct az_run_loop *r)
{
	char err[512];
	struct az_rundir_state st = {.completed = r->completed, .best_iteration = r->best_iteration};
	int rc = az_rundir_state_save(r->p.out, &st, err, sizeof(err));
	if (rc < 0)
		az_log("run: %s", err);
	return rc;
}

/* The commit protocol (run/rundir.h, struct az_rundir_check): the candidate checkpoint and the
 * metrics line are prepared, state.json commits the iteration, then best.safetensors follows
 * the record. A kill before the commit leaves iteration it - 1 whole (resume rolls the rest
 * back); a kill after it leaves iteration it whole but for the copy of best, which resume
 * completes. */
static int iteration(struct az_run_loop *r, uint32_t it)
{
	struct iter_stats st;
	char cand[AZ_RUNDIR_PATH_MAX], err[512];
	memset(&st, 0, sizeof(st));
	az_rundir_checkpoint_path(cand, sizeof(cand), r->p.out, it);
	int rc = selfplay_phase(r, it, &st);
	if (rc < 0)
		return rc;
	double t0 = az_now();
	rc = run_trainer(r, it, cand, &st.tr);
	st.train_s = az_now() - t0;
	if (rc < 0)
		return rc;
	if (st.tr.damaged_files) /* trained on what was intact; the run ends non-zero */
		r->damage_seen += st.tr.damaged_files;
	az_info("iter %u train: %u step%s on %llu samples, policy loss %.4f, value loss %.4f, "
		"%.1fs", it, st.tr.steps, st.tr.steps == 1 ? "" : "s", (unsigned long long)st.tr.samples,
		st.tr.policy_loss, st.tr.value_loss, st.train_s);
	if (!isfinite(st.tr.policy_loss) || !isfinite(st.tr.value_loss)) {
		az_log("run: iteration %u: training diverged (policy loss %g, value loss %g); "
		       "nothing of it is committed", it,
		       (double)st.tr.policy_loss, (double)st.tr.value_loss);
		return -EDOM;
	}
	rc = arena_phase(r, it, cand, &st);
	if (rc < 0)
		return rc;
	uint32_t best_before = r->best_iteration;
	if (st.promoted)
		r->best_iteration = it; /* the metrics line and the record name the new best */
	bench_phase(r, it, cand, &st);
	rc = write_metrics(r, it, &st);
	if (rc == 0) {
		r->completed = it;
		rc = loop_save_state(r); /* the commit */
	}
	if (rc < 0) {
		r->completed = it - 1;
		r->best_iteration = best_before;
		return rc;
	}
	snprintf(r->latest, sizeof(r->latest), "%s", cand);
	if (st.promoted) {
		rc = az_copy_file_atomic(cand, r->best, err, sizeof(err));
		if (rc < 0) {
			az_log("run: %s (iteration %u is committed; a resume completes the copy)",
			       err, it);
			return rc;
		}
		rc = az_pipeline_serve_model(&r->pl, AZ_MODEL_BEST, r->best);
	}
	return rc;
}

/* Training time of the iterations before `first` (earlier azruns of the run), in seconds: the
 * phases' times in metrics.jsonl. 0 when there is none or it cannot be read (the limit then
 * counts this azrun alone; resume has verified the file already). */
static double prior_training_s(const struct az_run_loop *r)
{
	struct az_run_info ri;
	char err[256];
	double s = 0.0;

	if (r->first <= 1 || az_run_info_load(r->p.out, &ri, err, sizeof(err)) < 0)
		return 0.0;
	for (size_t i = 0; i < ri.nrows; i++) {
		const struct az_metric_row *m = &ri.rows[i];
		const double ph[] = {m->selfplay_s, m->train_s, m->arena_s, m->bench_s};

		if (!(m->iteration < r->first))
			continue;
		for (size_t k = 0; k < AZ_ARRAY_LEN(ph); k++)
			s += isnan(ph[k]) ? 0.0 : ph[k];
	}
	az_run_info_free(&ri);
	return s;
}

/* Iterations still to run after `it`: up to --iterations, and with a time limit as many as
 * fit at this azrun's mean iteration time, plus the one during which the limit passes. */
static uint32_t iterations_left(const struct az_run_loop *r, uint32_t it, double mean,
				double used)
{
	uint32_t left = r->p.iterations - it;
	if (r->p.time_limit_s > 0) {
		double fit = used >= r->p.time_limit_s ? 0.0
			     : ceil((r->p.time_limit_s - used) / (mean > 0 ? mean : 1e-9));
		if (fit < left)
			left = (uint32_t)fit;
	}
	return left;
}

/* After an iteration: how long it took and when the run should end, from this azrun's mean. */
static void log_eta(const struct az_run_loop *r, uint32_t it, double t_it, double t_all,
		    double used)
{
	char a[32], b[32], lim[64] = "";
	double mean = t_all / (double)(it - r->first + 1);
	uint32_t left = iterations_left(r, it, mean, used);
	az_format_duration(t_it, a, sizeof(a));
	az_format_duration(mean * left, b, sizeof(b));
	if (r->p.time_limit_s > 0) {
		char u[32], l[32];
		az_format_duration(used, u, sizeof(u));
		az_format_duration(r->p.time_limit_s, l, sizeof(l));
		snprintf(lim, sizeof(lim), " (%s of the %s time limit used)", u, l);
	}
	if (left)
		az_info("iter %u/%u done in %s; eta %s for the %u iteration%s left%s", it,
			r->p.iterations, a, b, left, left == 1 ? "" : "s", lim);
	else
		az_info("iter %u/%u done in %s%s", it, r->p.iterations, a, lim);
}

int az_run_iterate(struct az_run_loop *r)
{
	int rc = 0;
	double t0 = az_now();
	r->first = r->completed + 1;
	r->bench_of = -1;
	r->time_limited = 0;
	r->trained_s = r->p.time_limit_s > 0 ? prior_training_s(r) : 0.0;
	for (uint32_t it = r->first; rc == 0 && it <= r->p.iterations; it++) {
		if (az_sv_interrupted())
			return -EINTR; /* before it started: nothing of it is on disk */
		if (r->p.time_limit_s > 0 && r->trained_s >= r->p.time_limit_s) {
			char u[32], l[32];
			az_format_duration(r->trained_s, u, sizeof(u));
			az_format_duration(r->p.time_limit_s, l, sizeof(l));
			az_info("run: time limit reached (%s of training, limit %s) after "
				"iteration %u of %u", u, l, it - 1, r->p.iterations);
			r->time_limited = 1;
			break;
		}
		double t = az_now();
		rc = iteration(r, it);
		if (rc == 0)
			log_eta(r, it, az_now() - t, az_now() - t0, r->trained_s);
		if (az_sv_interrupted() && rc == 0)
			rc = -EINTR;
	}
	return rc;
}
