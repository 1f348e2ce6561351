/* SPDX-License-Identifier: MIT */
/* azrun: the orchestrator. Owns the run directory and the shared-memory segment, forks the
 * inference process once, then per iteration forks the self-play workers, the trainer and the
 * arena workers, and commits checkpoints, metrics and state at the end of each iteration. */
#include <cblas.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "games/game.h"
#include "net/checkpoint.h"
#include "infer/server.h"
#include "base/az_assert.h"
#include "run/control.h"
#include "shm/slot.h"
#include "tools/config.h"
#include "run/roles.h"
#include "tools/subcommands.h"
#include "tools/verify.h"
#include "train/replay.h"
#include "base/util.h"

#define PATH_LEN 1024

struct run {
	struct az_config cfg;
	const struct az_game *g;
	struct az_seg seg;
	struct az_ctl_shm *ctl;
	pid_t server;
	uint32_t completed;      /* last completed iteration */
	uint32_t best_iteration; /* iteration whose candidate is best (0: the random init) */
	char best[PATH_LEN];
	char latest[PATH_LEN];
};

static volatile sig_atomic_t interrupted; /* set by the SIGINT/SIGTERM handler only */

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void path_in(char *buf, const struct run *r, const char *fmt, uint32_t a, uint32_t b)
{
	char rel[256];
	snprintf(rel, sizeof(rel), fmt, a, b);
	snprintf(buf, PATH_LEN, "%s/%s", r->cfg.out, rel);
}

/* ---- child processes ---- */

/* Fork a child that dies with its parent (PR_SET_PDEATHSIG) and runs fn. */
static pid_t spawn(int (*fn)(struct run *, void *), struct run *r, void *arg)
{
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(3);
	signal(SIGINT, SIG_IGN); /* the orchestrator decides when children stop */
	signal(SIGTERM, SIG_DFL);
	_exit(fn(r, arg) < 0 ? 1 : 0);
}

static int server_main(struct run *r, void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "az-infer");
	struct az_infer_config ic = {
		.backend = r->cfg.backend,
		.features = r->g->features,
		.actions = r->g->actions,
		.max_batch = r->cfg.max_batch,
		.deadline_us = r->cfg.deadline_us,
		.spin = r->cfg.spin,
		.log_fd = STDERR_FILENO,
		.quiet = r->cfg.quiet,
	};
	return az_infer_serve(&r->seg, &ic);
}

struct worker_arg {
	uint32_t id;
	enum az_worker_mode mode;
	uint32_t iteration;
	uint32_t attempt; /* 0 first start, then restarts (each writes its own replay file) */
};

/* The replay segment of one worker start: iter-N-wK.rpl, then iter-N-wK-rA.rpl after restarts. */
static void replay_path(const struct run *r, const struct worker_arg *wa, char *path)
{
	if (wa->attempt == 0)
		path_in(path, r, "replay/iter-%04u-w%02u.rpl", wa->iteration, wa->id);
	else
		snprintf(path, PATH_LEN, "%s/replay/iter-%04u-w%02u-r%u.rpl", r->cfg.out,
			 wa->iteration, wa->id, wa->attempt);
}

static int worker_main(struct run *r, void *arg)
{
	struct worker_arg *wa = arg;
	char path[PATH_LEN], name[16];
	replay_path(r, wa, path);
	snprintf(name, sizeof(name), "az-worker-%u", wa->id);
	prctl(PR_SET_NAME, name);
	struct az_worker_params wp;
	az_config_worker_params(&r->cfg, &wp);
	int rc = az_worker_run(&wp, &r->seg, wa->id, wa->mode, wa->iteration, path);
	if (rc < 0)
		fprintf(stderr, "worker %u: failed: %s\n", wa->id, strerror(-rc));
	return rc;
}

/* The children of one phase and what azrun does when one dies. */
struct phase {
	const char *name;
	uint32_t iteration;
	uint32_t n;
	pid_t pids[AZ_CTL_MAX_WORKERS];
	struct worker_arg args[AZ_CTL_MAX_WORKERS];
	int trainer;    /* 1: pids[0] is the trainer, restarted with the same job */
	void *job;
	uint32_t restarts;
	int stopping;   /* children were told to stop: deaths are expected, not restarted */
	struct worker_arg torn[64]; /* self-play starts that died: their files may end torn */
	uint32_t ntorn;
	double t0;
	double last_progress;
	struct az_progress pg;
};

#define MAX_RESTARTS 16 /* per phase; more means something is systematically wrong */
#define MAX_SERVER_RESTARTS 8

static int trainer_main(struct run *r, void *arg);

/* Write DIR/progress.json (for `azrun status`); best effort, about once a second. */
static void write_progress(struct run *r, struct phase *ph, uint64_t done, uint64_t total,
			   double evals_per_s)
{
	char path[PATH_LEN], text[512], err[256];
	path_in(path, r, "progress.json", 0, 0);
	snprintf(text, sizeof(text),
		 "{\"pid\": %ld, \"iteration\": %u, \"iterations\": %u, \"phase\": \"%s\", "
		 "\"phase_started\": %.0f, \"done\": %llu, \"total\": %llu, "
		 "\"evals_per_s\": %.1f, \"updated\": %ld}\n",
		 (long)getpid(), ph ? ph->iteration : r->completed, r->cfg.iterations,
		 ph ? ph->name : "done",
		 ph ? (double)time(NULL) - (az_now() - ph->t0) : (double)time(NULL),
		 (unsigned long long)done, (unsigned long long)total, evals_per_s,
		 (long)time(NULL));
	az_write_file_atomic(path, text, strlen(text), err, sizeof(err));
}

static void phase_progress(struct run *r, struct phase *ph)
{
	double now = az_now();
	if (ph->trainer) {
		if (now - ph->last_progress >= 1.0) {
			ph->last_progress = now;
			write_progress(r, ph, 0, 1, 0.0);
		}
		return;
	}
	char extra[64];
	/* Relaxed: display only. */
	uint64_t ev = atomic_load_explicit(&r->ctl->evals, memory_order_relaxed);
	uint64_t done = atomic_load_explicit(&r->ctl->games_done, memory_order_relaxed);
	uint64_t total = atomic_load_explicit(&r->ctl->games_target, memory_order_relaxed);
	double el = now - ph->t0, eps = el > 0 ? (double)ev / el : 0.0;
	snprintf(extra, sizeof(extra), "games, %.0f evals/s", eps);
	ph->pg.total = total;
	az_progress_update(&ph->pg, done, extra);
	if (now - ph->last_progress >= 1.0) {
		ph->last_progress = now;
		write_progress(r, ph, done, total, eps);
	}
}

/* Start (or restart) child i of the phase. */
static int phase_spawn(struct run *r, struct phase *ph, uint32_t i)
{
	if (ph->trainer) {
		ph->pids[i] = spawn(trainer_main, r, ph->job);
	} else {
		/* Relaxed: the new worker does not exist yet; fork orders these stores. */
		atomic_store_explicit(&r->ctl->worker_claimed[i], 0, memory_order_relaxed);
		atomic_store_explicit(&r->ctl->worker_done[i], 0, memory_order_relaxed);
		ph->pids[i] = spawn(worker_main, r, &ph->args[i]);
	}
	if (ph->pids[i] < 0) {
		ph->pids[i] = 0;
		az_log("azrun: fork failed: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int restart_server(struct run *r)
{
	static uint32_t restarts;
	if (++restarts > MAX_SERVER_RESTARTS) {
		az_log("azrun: the inference process died %u times; giving up", restarts - 1);
		return -ECHILD;
	}
	r->server = spawn(server_main, r, NULL);
	if (r->server < 0) {
		r->server = 0;
		return -errno;
	}
	/* It reloads every model whose generation it has not seen (all of them), and serves the
	 * requests left unserved by its predecessor: the rings keep their counters. */
	az_log("azrun: restarted the inference process (pid %ld)", (long)r->server);
	return 0;
}

/* A child of the phase exited with status st. Returns 0 (finished, or restarted) or an error. */
static int phase_reap(struct run *r, struct phase *ph, uint32_t i, int st)
{
	ph->pids[i] = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (ph->stopping)
		return 0; /* we asked it to stop; the reason is reported already */
	if (WIFEXITED(st) || interrupted) /* it reported an error itself: do not loop on it */
		return -ECHILD;
	const char *who = ph->trainer ? "trainer" : "worker";
	if (++ph->restarts > MAX_RESTARTS) {
		az_log("azrun: %s died again (signal %d); too many restarts", who, WTERMSIG(st));
		return -ECHILD;
	}
	if (!ph->trainer) {
		/* Its unfinished games are dropped (the replay store keeps whole games only) and
		 * handed back to the phase so the iteration still plays its full count. */
		uint64_t lost =
			atomic_load_explicit(&r->ctl->worker_claimed[i], memory_order_relaxed) -
			atomic_load_explicit(&r->ctl->worker_done[i], memory_order_relaxed);
		atomic_fetch_add_explicit(&r->ctl->games_target, lost, memory_order_relaxed);
		if (ph->args[i].mode == AZ_WORKER_SELFPLAY && ph->ntorn < AZ_ARRAY_LEN(ph->torn))
			ph->torn[ph->ntorn++] = ph->args[i];
		ph->args[i].attempt++;
		az_log("azrun: worker %u died (signal %d); %llu unfinished games dropped; "
		       "restarting it", i, WTERMSIG(st), (unsigned long long)lost);
	} else {
		az_log("azrun: the trainer died (signal %d); restarting it", WTERMSIG(st));
	}
	return phase_spawn(r, ph, i);
}

/* Supervise the phase's children until all have finished: restart the dead, restart the
 * inference process if it dies, stop everything on SIGINT/SIGTERM or a failure. Returns 0,
 * -ECHILD (a child failed) or -EINTR. */
static int phase_wait(struct run *r, struct phase *ph)
{
	int rc = 0;
	for (;;) {
		uint32_t left = 0;
		for (uint32_t i = 0; i < ph->n; i++)
			left += ph->pids[i] > 0;
		if (!left)
			break;
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p > 0) {
			if (p == r->server) {
				az_log("azrun: the inference process exited (%s %d)",
				       WIFSIGNALED(st) ? "signal" : "status",
				       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
				r->server = 0;
				if (rc == 0 && !interrupted)
					rc = restart_server(r);
				continue;
			}
			for (uint32_t i = 0; i < ph->n; i++) {
				if (ph->pids[i] != p)
					continue;
				int prc = phase_reap(r, ph, i, st);
				if (rc == 0)
					rc = prc;
			}
			continue;
		}
		if ((interrupted || rc < 0) && !ph->stopping) {
			ph->stopping = 1;
			for (uint32_t i = 0; i < ph->n; i++)
				if (ph->pids[i] > 0)
					kill(ph->pids[i], SIGTERM);
			if (!rc)
				rc = -EINTR;
		}
		phase_progress(r, ph);
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	az_progress_end(&ph->pg);
	return rc;
}

/* ---- models ---- */

/* Point model slot s of the inference process at path and wait until it has loaded it. */
static int serve_model(struct run *r, uint32_t s, const char *path)
{
	snprintf(r->ctl->model_path[s], AZ_CTL_PATH_MAX, "%s", path);
	/* Relaxed read of our own counter (only azrun writes model_gen). */
	uint32_t gen = atomic_load_explicit(&r->ctl->model_gen[s], memory_order_relaxed) + 1;
	/* C1: publishes model_path[s]; pairs with C1' in the inference process (infer/server.c). */
	atomic_store_explicit(&r->ctl->model_gen[s], gen, memory_order_release);
	double t0 = az_now();
	/* C2': pairs with C2 in the inference process; model_err is valid after it. */
	while (atomic_load_explicit(&r->ctl->model_ack[s], memory_order_acquire) != gen) {
		if (interrupted)
			return -EINTR;
		int st;
		if (r->server > 0 && waitpid(r->server, &st, WNOHANG) == r->server) {
			/* Died while loading: its successor loads every slot and acknowledges the
			 * current generations, so keep waiting. */
			az_log("azrun: the inference process exited (%s %d) while loading a model",
			       WIFSIGNALED(st) ? "signal" : "status",
			       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			r->server = 0;
			int rc = restart_server(r);
			if (rc < 0)
				return rc;
		}
		if (az_now() - t0 > 120 || r->server <= 0) {
			az_log("azrun: the inference process did not load %s", path);
			return -ETIMEDOUT;
		}
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	int err = atomic_load_explicit(&r->ctl->model_err[s], memory_order_relaxed);
	if (err < 0)
		az_log("azrun: the inference process could not load %s: %s", path, strerror(-err));
	return err;
}

static int copy_file(const char *from, const char *to, char *err, size_t errlen)
{
	char *data;
	size_t len;
	int rc = az_read_file(from, &data, &len);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", from, strerror(-rc));
		return rc;
	}
	rc = az_write_file_atomic(to, data, len, err, errlen);
	free(data);
	return rc;
}

/* ---- phases ---- */

static void reset_phase_counters(struct az_ctl_shm *c, uint64_t games)
{
	/* Relaxed: no worker of this phase exists yet; fork orders these stores before them. */
	atomic_store_explicit(&c->games_target, games, memory_order_relaxed);
	atomic_store_explicit(&c->next_game, 0, memory_order_relaxed);
	atomic_store_explicit(&c->games_done, 0, memory_order_relaxed);
	atomic_store_explicit(&c->positions, 0, memory_order_relaxed);
	atomic_store_explicit(&c->moves, 0, memory_order_relaxed);
	atomic_store_explicit(&c->sims, 0, memory_order_relaxed);
	atomic_store_explicit(&c->occupancy_sum, 0, memory_order_relaxed);
	atomic_store_explicit(&c->occupancy_samples, 0, memory_order_relaxed);
	atomic_store_explicit(&c->arena_wins, 0, memory_order_relaxed);
	atomic_store_explicit(&c->arena_draws, 0, memory_order_relaxed);
	atomic_store_explicit(&c->arena_losses, 0, memory_order_relaxed);
	atomic_store_explicit(&c->evals, 0, memory_order_relaxed);
	atomic_store_explicit(&c->batches, 0, memory_order_relaxed);
	atomic_store_explicit(&c->worker_error, 0, memory_order_relaxed);
	atomic_store_explicit(&c->phase_stop, 0, memory_order_relaxed);
}

/* A worker killed mid-write leaves a torn record and the records of the game it was writing at
 * the end of its file: drop them now, while the phase's files are still ours, and say so. */
static void cut_torn_tail(struct run *r, const struct worker_arg *wa)
{
	char path[PATH_LEN], err[512];
	struct az_replay_buf b;
	size_t dropped = 0;
	replay_path(r, wa, path);
	if (access(path, F_OK) != 0)
		return; /* died before it created the file */
	az_replay_buf_init(&b, r->g->features, r->g->actions);
	long n = az_replay_load_file(path, &b, 1, &dropped, err, sizeof(err));
	az_replay_buf_free(&b);
	if (n < 0)
		az_log("azrun: %s", err);
	else if (dropped)
		az_log("azrun: %s: truncated a torn tail of %zu bytes (the game the dead worker was "
		       "writing); %ld whole-game records kept", path, dropped, n);
}

static int run_workers(struct run *r, enum az_worker_mode mode, uint32_t it, uint64_t games,
		       const char *label)
{
	static struct phase ph;
	memset(&ph, 0, sizeof(ph));
	ph.name = label;
	ph.iteration = it;
	ph.n = r->cfg.workers;
	ph.t0 = az_now();
	reset_phase_counters(r->ctl, games);
	az_progress_begin(&ph.pg, label, games, r->cfg.quiet);
	int rc = 0;
	for (uint32_t i = 0; i < ph.n && rc == 0; i++) {
		ph.args[i] = (struct worker_arg){.id = i, .mode = mode, .iteration = it};
		rc = phase_spawn(r, &ph, i);
	}
	if (rc < 0) /* fork failed: stop what started, reap it below, report the failure */
		for (uint32_t i = 0; i < ph.n; i++)
			if (ph.pids[i] > 0)
				kill(ph.pids[i], SIGTERM);
	int wrc = phase_wait(r, &ph);
	if (rc == 0)
		rc = wrc;
	for (uint32_t i = 0; i < ph.ntorn; i++)
		cut_torn_tail(r, &ph.torn[i]);
	int werr = atomic_load_explicit(&r->ctl->worker_error, memory_order_relaxed);
	if (rc == 0 && werr < 0) {
		az_log("azrun: a worker reported %s", strerror(-werr));
		rc = werr;
	}
	return rc;
}

static int trainer_main(struct run *r, void *arg)
{
	struct az_train_job *job = arg;
	struct az_train_report *rep = (struct az_train_report *)(job + 1);
	char err[512];
	prctl(PR_SET_NAME, "az-trainer");
	int rc = az_train_run(job, rep, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "trainer: %s\n", err);
	return rc;
}

/* Replay files of iterations (it - window, it]. */
static int list_window(struct run *r, uint32_t it, char ***paths, uint32_t *n)
{
	char dir[PATH_LEN];
	path_in(dir, r, "replay", 0, 0);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	uint32_t cap = 16, cnt = 0;
	char **v = malloc(cap * sizeof(*v));
	struct dirent *e;
	while (v && (e = readdir(d)) != NULL) {
		unsigned a, w;
		size_t len = strlen(e->d_name);
		if (sscanf(e->d_name, "iter-%4u-w%2u", &a, &w) != 2 || len < 4 ||
		    strcmp(e->d_name + len - 4, ".rpl") != 0)
			continue;
		if (a > it || a + r->cfg.window <= it)
			continue;
		if (cnt == cap) {
			cap *= 2;
			char **nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[cnt] = malloc(PATH_LEN);
		if (v[cnt])
			snprintf(v[cnt++], PATH_LEN, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	if (!v)
		return -ENOMEM;
	*paths = v;
	*n = cnt;
	return 0;
}

static int run_trainer(struct run *r, uint32_t it, const char *cand, struct az_train_report *out)
{
	char **paths = NULL;
	uint32_t n = 0;
	int rc = list_window(r, it, &paths, &n);
	if (rc < 0)
		return rc;
	/* The report comes back through an anonymous shared page. */
	size_t sz = sizeof(struct az_train_job) + sizeof(struct az_train_report);
	static struct az_trainer_proc_params tp; /* read by the forked trainer */
	az_config_train_params(&r->cfg, &tp);
	void *mem = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		rc = -errno;
		goto out;
	}
	struct az_train_job *job = mem;
	*job = (struct az_train_job){.tp = &tp, .iteration = it, .init_path = r->latest,
				     .out_path = cand, .replay_paths = paths, .n_replay = n};
	static struct phase ph;
	memset(&ph, 0, sizeof(ph));
	ph.name = "train";
	ph.iteration = it;
	ph.n = 1;
	ph.trainer = 1;
	ph.job = job;
	ph.t0 = az_now();
	az_progress_begin(&ph.pg, "train", 1, 1);
	rc = phase_spawn(r, &ph, 0);
	int wrc = phase_wait(r, &ph);
	if (rc == 0)
		rc = wrc;
	*out = *(struct az_train_report *)(job + 1);
	munmap(mem, sz);
out:
	for (uint32_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

/* ---- run directory state ---- */

/* Rewrite metrics.jsonl without lines of iterations after `keep`, then append `line` (may be
 * NULL). Atomic replace, so a crash leaves the old or the new file. */
static int metrics_commit(struct run *r, uint32_t keep, const char *line)
{
	char path[PATH_LEN], err[512];
	path_in(path, r, "metrics.jsonl", 0, 0);
	char *old = NULL;
	size_t len = 0;
	if (az_read_file(path, &old, &len) < 0)
		old = NULL;
	size_t cap = len + (line ? strlen(line) : 0) + 2;
	char *out = malloc(cap);
	if (!out) {
		free(old);
		return -ENOMEM;
	}
	size_t n = 0;
	for (char *s = old, *nl; s && *s; s = nl ? nl + 1 : s + strlen(s)) {
		nl = strchr(s, '\n');
		size_t l = nl ? (size_t)(nl - s) : strlen(s);
		cJSON *j = cJSON_ParseWithLength(s, l);
		cJSON *itv = j ? cJSON_GetObjectItem(j, "iteration") : NULL;
		if (cJSON_IsNumber(itv) && itv->valuedouble <= keep) {
			memcpy(out + n, s, l);
			n += l;
			out[n++] = '\n';
		}
		cJSON_Delete(j);
	}
	if (line)
		n += (size_t)sprintf(out + n, "%s\n", line);
	int rc = az_write_file_atomic(path, out, n, err, sizeof(err));
	if (rc < 0)
		az_log("azrun: %s", err);
	free(out);
	free(old);
	return rc;
}

static int state_save(struct run *r)
{
	char path[PATH_LEN], err[512], text[256];
	path_in(path, r, "state.json", 0, 0);
	snprintf(text, sizeof(text), "{\"completed\": %u, \"best_iteration\": %u}\n", r->completed,
		 r->best_iteration);
	int rc = az_write_file_atomic(path, text, strlen(text), err, sizeof(err));
	if (rc < 0)
		az_log("azrun: %s", err);
	return rc;
}

static int state_load(struct run *r, char *err, size_t errlen)
{
	char path[PATH_LEN], *text = NULL;
	path_in(path, r, "state.json", 0, 0);
	int rc = az_read_file(path, &text, NULL);
	if (rc == -ENOENT)
		return 0; /* nothing completed yet */
	if (rc < 0) {
		snprintf(err, errlen, "%s: cannot read (%s)", path, strerror(-rc));
		return -EINVAL;
	}
	cJSON *j = cJSON_Parse(text);
	free(text);
	cJSON *c = j ? cJSON_GetObjectItem(j, "completed") : NULL;
	cJSON *b = j ? cJSON_GetObjectItem(j, "best_iteration") : NULL;
	int ok = cJSON_IsNumber(c) && cJSON_IsNumber(b) && c->valuedouble >= 0 &&
		 c->valuedouble < 1e6 && b->valuedouble >= 0 && b->valuedouble <= c->valuedouble;
	if (ok) {
		r->completed = (uint32_t)c->valuedouble;
		r->best_iteration = (uint32_t)b->valuedouble;
	}
	cJSON_Delete(j);
	if (!ok) {
		snprintf(err, errlen, "%s is damaged (not a RingZero state file); restore it or start "
			 "a new run", path);
		return -EINVAL;
	}
	return 0;
}

/* A checkpoint the run depends on must load and be a network of this run's game and
 * architecture. Returns 0 or -EINVAL / -ENOENT with a one-line message. */
static int check_checkpoint(const struct run *r, const char *path, char *err, size_t errlen)
{
	struct az_model *m;
	char e[512];
	int rc = az_ckpt_load(path, &m, e, sizeof(e));
	if (rc < 0) {
		snprintf(err, errlen, "cannot resume: %s", e);
		return rc == -ENOENT ? -ENOENT : -EINVAL;
	}
	const struct az_arch *a = &m->arch;
	if (strcmp(m->game, r->g->name) != 0)
		snprintf(err, errlen, "cannot resume: %s is a %s network, but the run plays %s", path,
			 m->game, r->g->name);
	else if (a->inputs != r->g->features || a->actions != r->g->actions ||
		 a->hidden != r->cfg.hidden || a->blocks != r->cfg.blocks)
		snprintf(err, errlen, "cannot resume: %s has architecture %ux%u (%u inputs, %u "
			 "actions), but run.json says %ux%u (%u, %u)", path, a->hidden, a->blocks,
			 a->inputs, a->actions, r->cfg.hidden, r->cfg.blocks, r->g->features,
			 r->g->actions);
	else
		rc = 1;
	az_model_destroy(m);
	return rc == 1 ? 0 : -EINVAL;
}

/* Before anything in the run directory is touched: is it a run we can continue? */
static int check_resume(struct run *r, char *err, size_t errlen)
{
	int rc = state_load(r, err, errlen);
	if (rc < 0)
		return rc;
	path_in(r->best, r, "best.safetensors", 0, 0);
	if (r->completed == 0 && access(r->best, F_OK) != 0)
		return 0; /* stopped before its first network was saved: starts over */
	rc = check_checkpoint(r, r->best, err, errlen);
	if (rc == 0 && r->completed) {
		char latest[PATH_LEN];
		path_in(latest, r, "checkpoints/iter-%04u.safetensors", r->completed, 0);
		rc = check_checkpoint(r, latest, err, errlen);
	}
	return rc;
}

/* Remove replay files of iterations that never completed (a crash mid-iteration): their
 * games are dropped whole, never half-counted. */
static void drop_incomplete_replay(struct run *r)
{
	char dir[PATH_LEN], p[PATH_LEN + 300];
	path_in(dir, r, "replay", 0, 0);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		unsigned a, w;
		if (sscanf(e->d_name, "iter-%4u-w%2u", &a, &w) == 2 && a > r->completed) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	}
	if (d)
		closedir(d);
}

/* ---- one iteration ---- */

struct iter_stats {
	double selfplay_s, train_s, arena_s;
	uint64_t games, positions, evals, batches, sims, occ_sum, occ_n;
	uint64_t wins, draws, losses;
	double score;
	int promoted;
	struct az_train_report tr;
};

static int selfplay_phase(struct run *r, uint32_t it, struct iter_stats *st)
{
	double t0 = az_now();
	int rc = run_workers(r, AZ_WORKER_SELFPLAY, it, r->cfg.games_per_iter, "selfplay");
	st->selfplay_s = az_now() - t0;
	struct az_ctl_shm *c = r->ctl;
	/* Relaxed loads: every worker has been reaped (waitpid orders their writes). */
	st->games = atomic_load_explicit(&c->games_done, memory_order_relaxed);
	st->positions = atomic_load_explicit(&c->positions, memory_order_relaxed);
	st->evals = atomic_load_explicit(&c->evals, memory_order_relaxed);
	st->batches = atomic_load_explicit(&c->batches, memory_order_relaxed);
	st->sims = atomic_load_explicit(&c->sims, memory_order_relaxed);
	st->occ_sum = atomic_load_explicit(&c->occupancy_sum, memory_order_relaxed);
	st->occ_n = atomic_load_explicit(&c->occupancy_samples, memory_order_relaxed);
	if (rc == 0)
		az_info("iter %u selfplay: %llu games, %llu positions, %.1fs, %.0f evals/s, "
		       "mean batch %.1f", it, (unsigned long long)st->games,
		       (unsigned long long)st->positions, st->selfplay_s,
		       (double)st->evals / (st->selfplay_s > 0 ? st->selfplay_s : 1),
		       st->batches ? (double)st->evals / (double)st->batches : 0.0);
	return rc;
}

static int arena_phase(struct run *r, uint32_t it, const char *cand, struct iter_stats *st)
{
	double t0 = az_now();
	int rc = serve_model(r, AZ_MODEL_CANDIDATE, cand);
	if (rc == 0)
		rc = run_workers(r, AZ_WORKER_ARENA, it, r->cfg.arena_games, "arena");
	st->arena_s = az_now() - t0;
	if (rc < 0)
		return rc;
	struct az_ctl_shm *c = r->ctl;
	/* Relaxed: workers reaped, as in selfplay_phase. */
	st->wins = atomic_load_explicit(&c->arena_wins, memory_order_relaxed);
	st->draws = atomic_load_explicit(&c->arena_draws, memory_order_relaxed);
	st->losses = atomic_load_explicit(&c->arena_losses, memory_order_relaxed);
	uint64_t n = st->wins + st->draws + st->losses;
	st->score = n ? ((double)st->wins + 0.5 * (double)st->draws) / (double)n : 0.0;
	/* The threshold is a float (0.55f is slightly above 0.55): compare with a tolerance so an
	 * exact 22/40 promotes. */
	st->promoted = st->score >= (double)r->cfg.arena_threshold - 1e-6;
	az_info("iter %u arena: candidate %llu-%llu-%llu (W-D-L) score %.3f -> %s", it,
	       (unsigned long long)st->wins, (unsigned long long)st->draws,
	       (unsigned long long)st->losses, st->score, st->promoted ? "promoted" : "kept best");
	return 0;
}

static int write_metrics(struct run *r, uint32_t it, const struct iter_stats *st)
{
	char line[1024];
	double sp = st->selfplay_s > 0 ? st->selfplay_s : 1;
	snprintf(line, sizeof(line),
		 "{\"iteration\": %u, \"games\": %llu, \"positions\": %llu, "
		 "\"policy_loss\": %.5f, \"value_loss\": %.5f, \"arena_score\": %.4f, "
		 "\"promoted\": %s, \"arena_wins\": %llu, \"arena_draws\": %llu, "
		 "\"arena_losses\": %llu, \"evals_per_s\": %.1f, \"sims_per_s\": %.1f, "
		 "\"mean_batch\": %.2f, \"ring_occupancy\": %.2f, \"train_samples\": %llu, "
		 "\"train_steps\": %u, \"selfplay_s\": %.3f, \"train_s\": %.3f, "
		 "\"arena_s\": %.3f, \"best_iteration\": %u}",
		 it, (unsigned long long)st->games, (unsigned long long)st->positions,
		 st->tr.policy_loss, st->tr.value_loss, st->score, st->promoted ? "true" : "false",
		 (unsigned long long)st->wins, (unsigned long long)st->draws,
		 (unsigned long long)st->losses, (double)st->evals / sp, (double)st->sims / sp,
		 st->batches ? (double)st->evals / (double)st->batches : 0.0,
		 st->occ_n ? (double)st->occ_sum / (double)st->occ_n : 0.0,
		 (unsigned long long)st->tr.samples, st->tr.steps, st->selfplay_s, st->train_s,
		 st->arena_s, r->best_iteration);
	return metrics_commit(r, it - 1, line);
}

static int iteration(struct run *r, uint32_t it)
{
	struct iter_stats st;
	char cand[PATH_LEN], err[512];
	memset(&st, 0, sizeof(st));
	path_in(cand, r, "checkpoints/iter-%04u.safetensors", it, 0);
	int rc = selfplay_phase(r, it, &st);
	if (rc < 0)
		return rc;
	double t0 = az_now();
	rc = run_trainer(r, it, cand, &st.tr);
	st.train_s = az_now() - t0;
	if (rc < 0)
		return rc;
	az_info("iter %u train: %u steps on %llu samples, policy loss %.4f, value loss %.4f, "
	       "%.1fs", it, st.tr.steps, (unsigned long long)st.tr.samples, st.tr.policy_loss,
	       st.tr.value_loss, st.train_s);
	rc = arena_phase(r, it, cand, &st);
	if (rc < 0)
		return rc;
	if (st.promoted) {
		rc = copy_file(cand, r->best, err, sizeof(err));
		if (rc < 0) {
			az_log("azrun: %s", err);
			return rc;
		}
		r->best_iteration = it;
		rc = serve_model(r, AZ_MODEL_BEST, r->best);
		if (rc < 0)
			return rc;
	}
	snprintf(r->latest, PATH_LEN, "%s", cand);
	rc = write_metrics(r, it, &st);
	if (rc < 0)
		return rc;
	r->completed = it;
	return state_save(r);
}

/* ---- setup and main ---- */

static int prepare_dir(struct run *r)
{
	char p[PATH_LEN], err[512];
	static const char *subdirs[] = {"", "checkpoints", "replay"};
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", r->cfg.out, subdirs[i]);
		int rc = az_mkdir_p(p);
		if (rc < 0) {
			fprintf(stderr, "azrun: --out: cannot create %s: %s\n", p, strerror(-rc));
			return -EINVAL;
		}
	}
	/* One azrun per run directory: an flock held for the life of this process (and its
	 * children, which share the open file) and released by the kernel however it ends. */
	path_in(p, r, "azrun.lock", 0, 0);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char owner[32] = "?";
		ssize_t n = fd >= 0 ? pread(fd, owner, sizeof(owner) - 1, 0) : -1;
		if (n > 0)
			owner[strcspn(owner, "\n")] = 0;
		fprintf(stderr, "azrun: %s is in use by another azrun (pid %s); wait for it or stop "
			"it first\n", r->cfg.out, n > 0 ? owner : "?");
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	char pid[32];
	int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len)
		fprintf(stderr, "azrun: note: cannot record the pid in %s\n", p);
	path_in(p, r, "run.json", 0, 0);
	if (!r->cfg.resume && access(p, F_OK) == 0) {
		fprintf(stderr, "azrun: %s already holds a run; continue it with --resume --out %s, "
			"or choose a new --out\n", r->cfg.out, r->cfg.out);
		return -EINVAL;
	}
	int rc = az_config_save(&r->cfg, p, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		return rc;
	}
	path_in(p, r, "azrun.log", 0, 0);
	az_log_open(p);
	path_in(r->best, r, "best.safetensors", 0, 0);
	return 0;
}

/* First start: a random network is the first best. Resume: pick up state and files. */
static int prepare_models(struct run *r)
{
	char err[512];
	if (r->cfg.resume) {
		/* check_resume() has validated state.json and the checkpoints. */
		drop_incomplete_replay(r);
		metrics_commit(r, r->completed, NULL);
		if (r->completed)
			path_in(r->latest, r, "checkpoints/iter-%04u.safetensors", r->completed, 0);
		else
			snprintf(r->latest, PATH_LEN, "%s", r->best);
		if (access(r->best, R_OK) == 0 && access(r->latest, R_OK) == 0) {
			az_info("azrun: resuming %s after iteration %u (best from iteration %u)",
			       r->cfg.out, r->completed, r->best_iteration);
			return 0;
		}
		if (r->completed) {
			az_log("azrun: cannot resume: %s or %s is missing", r->best, r->latest);
			return -ENOENT;
		}
	}
	struct az_arch a = {.inputs = r->g->features, .hidden = r->cfg.hidden,
			    .blocks = r->cfg.blocks, .actions = r->g->actions};
	struct az_model *m;
	int rc = az_model_create(&a, &m);
	if (rc < 0)
		return rc;
	az_model_init_random(m, r->cfg.seed);
	snprintf(m->game, sizeof(m->game), "%s", r->g->name);
	az_config_game_options(&r->cfg, m->game_options, sizeof(m->game_options));
	m->iteration = 0;
	char first[PATH_LEN];
	path_in(first, r, "checkpoints/iter-%04u.safetensors", 0, 0);
	rc = az_ckpt_save(first, m, err, sizeof(err)); /* the untrained baseline, kept */
	if (rc == 0)
		rc = az_ckpt_save(r->best, m, err, sizeof(err));
	az_model_destroy(m);
	if (rc < 0) {
		az_log("azrun: %s", err);
		return rc;
	}
	snprintf(r->latest, PATH_LEN, "%s", r->best);
	r->completed = 0;
	r->best_iteration = 0;
	return state_save(r);
}

static int start_server(struct run *r)
{
	struct az_slot_layout lay;
	az_slot_layout_init(&lay, r->g->features, r->g->actions);
	struct az_seg_params sp = {.nrings = r->cfg.workers, .capacity = r->cfg.ring_capacity,
				   .slot_bytes = lay.bytes,
				   .ctl_bytes = (uint32_t)sizeof(struct az_ctl_shm)};
	char name[64], stale[512];
	int n = az_seg_reap_stale(stale, sizeof(stale));
	if (n > 0)
		az_info("azrun: removed %d shared-memory segment(s) left by dead runs: %s", n, stale);
	az_seg_name(name, sizeof(name), "run");
	int rc = az_seg_create(&r->seg, name, &sp);
	if (rc < 0) {
		az_log("azrun: cannot create shared memory %s: %s", name, strerror(-rc));
		return rc;
	}
	r->ctl = az_seg_ctl(&r->seg);
	r->server = spawn(server_main, r, NULL);
	if (r->server < 0) {
		r->server = 0;
		return -errno;
	}
	return serve_model(r, AZ_MODEL_BEST, r->best);
}

static void stop_server(struct run *r)
{
	if (r->server > 0) {
		/* Release: pairs with the inference loop's acquire load of stop. */
		atomic_store_explicit(&r->ctl->stop, 1, memory_order_release);
		double t0 = az_now();
		while (waitpid(r->server, NULL, WNOHANG) == 0) {
			if (az_now() - t0 > 5) {
				kill(r->server, SIGKILL);
				waitpid(r->server, NULL, 0);
				break;
			}
			struct timespec ts = {0, 5 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		r->server = 0;
	}
	if (r->seg.base)
		az_seg_destroy(&r->seg);
}

int main(int argc, char **argv)
{
	static struct run r;
	char err[1024];
	if (argc >= 2 && strcmp(argv[1], "verify") == 0)
		return az_verify_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "status") == 0)
		return az_status_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "report") == 0)
		return az_report_main(argc - 1, argv + 1);
	int rc = az_config_parse(&r.cfg, argc, argv, err, sizeof(err));
	if (rc == 1) {
		az_config_usage("azrun");
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		return 2;
	}
	if (r.cfg.backend == AZ_BACKEND_CUDA && !az_cuda_available()) {
		fprintf(stderr, "azrun: --backend cuda: no CUDA device visible (no device or driver, "
			"or built without CUDA); use --backend auto or cpu\n");
		return 2;
	}
	openblas_set_num_threads(1); /* one BLAS thread per process: processes are the parallelism */
	az_log_set_quiet(r.cfg.quiet);
	if (az_config_game(&r.cfg, &r.g, err, sizeof(err)) < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A file-size limit must surface as EFBIG from write(), a clear error, not as a signal. */
	signal(SIGXFSZ, SIG_IGN);
	if (r.cfg.resume) {
		rc = check_resume(&r, err, sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "azrun: %s\n", err);
			return 2;
		}
	}
	if (r.cfg.resume && r.completed >= r.cfg.iterations) {
		fprintf(stderr, "azrun: %s has completed %u of %u iterations; nothing to do (raise "
			"--iterations to continue)\n", r.cfg.out, r.completed, r.cfg.iterations);
		return 0;
	}
	rc = prepare_dir(&r);
	if (rc < 0)
		return rc == -EINVAL ? 2 : 1;
	rc = prepare_models(&r);
	if (rc == 0 && r.completed >= r.cfg.iterations) {
		az_info("azrun: %s has completed %u of %u iterations; nothing to do (raise "
		       "--iterations to continue)", r.cfg.out, r.completed, r.cfg.iterations);
		return 0;
	}
	if (rc == 0)
		rc = start_server(&r);
	if (rc == 0)
		az_info("azrun: %s, %u workers x %u games, %u sims, net %ux%u, %u iterations -> %s",
		       r.g->name, r.cfg.workers, r.cfg.games_per_worker, r.cfg.sims, r.cfg.hidden,
		       r.cfg.blocks, r.cfg.iterations, r.cfg.out);
	double t0 = az_now();
	for (uint32_t it = r.completed + 1; rc == 0 && it <= r.cfg.iterations; it++) {
		rc = iteration(&r, it);
		if (interrupted && rc == 0)
			rc = -EINTR;
	}
	stop_server(&r);
	write_progress(&r, NULL, r.completed, r.cfg.iterations, 0.0);
	if (rc == -EINTR) {
		az_log("azrun: interrupted; %u iterations are complete, continue with --resume "
		       "--out %s", r.completed, r.cfg.out);
		return 130;
	}
	if (rc < 0) {
		az_log("azrun: stopped after %u completed iterations: %s; what is complete is intact "
		       "and --resume --out %s continues", r.completed,
		       rc == -ECHILD ? "a process failed (see above)" : strerror(-rc), r.cfg.out);
		return 1;
	}
	az_info("azrun: done, %u iterations in %.1fs; best network: %s (iteration %u)",
	       r.completed, az_now() - t0, r.best, r.best_iteration);
	return 0;
}
