/* SPDX-License-Identifier: MIT */
/* Process supervision for a pipeline (run/supervise.h). */
#include "run/supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "run/evalcache.h"
#include "shm/slot.h"

static volatile sig_atomic_t interrupted; /* the first stop signal's number; set by on_signal */

static void on_signal(int sig)
{
	if (!interrupted)
		interrupted = sig;
}

/* The self-pipe that SIGCHLD writes to, so that a supervisor waiting for its children wakes
 * the moment one exits (a poll on the read end) instead of at its next tick; -1 until
 * az_sv_install_signals. Both ends are non-blocking: a full pipe already says "wake up". */
static int chld_pipe[2] = {-1, -1};

static void on_sigchld(int sig)
{
	(void)sig;
	int e = errno;
	if (chld_pipe[1] >= 0)
		(void)!write(chld_pipe[1], "", 1);
	errno = e;
}

/* The signals that stop a run cleanly: ^C, kill, a closed terminal, a closed pipe (`azrun |
 * head`). */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
#define N_STOP ((int)(sizeof(stop_signals) / sizeof(stop_signals[0])))

void az_sv_install_signals(void)
{
	struct sigaction sa;
	sigset_t set;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&set);
	for (int i = 0; i < N_STOP; i++) {
		sigaction(stop_signals[i], &sa, NULL);
		sigaddset(&set, stop_signals[i]);
	}
	signal(SIGXFSZ, SIG_IGN);
	if (chld_pipe[0] < 0 && pipe(chld_pipe) == 0) {
		for (int i = 0; i < 2; i++) {
			fcntl(chld_pipe[i], F_SETFD, FD_CLOEXEC);
			fcntl(chld_pipe[i], F_SETFL, fcntl(chld_pipe[i], F_GETFL) | O_NONBLOCK);
		}
		/* SA_RESTART: a blocking call elsewhere is resumed, not failed with EINTR. */
		sa.sa_handler = on_sigchld;
		sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
		sigaction(SIGCHLD, &sa, NULL);
	}
	/* Unblocked in case the parent left them blocked (then one is delivered here). */
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

int az_sv_interrupted(void)
{
	return interrupted;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};
	nanosleep(&ts, NULL);
}

int az_sv_wait_child(double max_s)
{
	if (chld_pipe[0] < 0) {
		sleep_ms((long)(max_s * 1000 + 0.5));
		return 0;
	}
	struct pollfd p = {.fd = chld_pipe[0], .events = POLLIN};
	int n = poll(&p, 1, (int)(max_s * 1000 + 0.5));
	char buf[64];
	while (read(chld_pipe[0], buf, sizeof(buf)) > 0)
		;
	return n > 0;
}

pid_t az_sv_spawn(int (*fn)(void *), void *arg, const char *name)
{
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(3); /* the parent died before prctl: nobody supervises us */
	signal(SIGINT, SIG_IGN); /* the supervisor decides when children stop */
	signal(SIGHUP, SIG_IGN); /* the terminal's hangup reaches the whole group */
	signal(SIGPIPE, SIG_IGN); /* a closed pipe is a write error (EPIPE), not a death */
	signal(SIGTERM, SIG_DFL);
	signal(SIGCHLD, SIG_DFL); /* the supervisor's self-pipe is not ours to write */
	if (chld_pipe[0] >= 0) {
		close(chld_pipe[0]);
		close(chld_pipe[1]);
		chld_pipe[0] = chld_pipe[1] = -1;
	}
	sigset_t set;
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	if (name)
		prctl(PR_SET_NAME, name);
	_exit(fn(arg) < 0 ? 1 : 0);
}

int az_sv_reap(pid_t pid, double timeout_s)
{
	double t0 = az_now();
	int st, cut = 0;
	for (;;) {
		pid_t p = waitpid(pid, &st, WNOHANG);
		if (p == pid)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
		if (p < 0 && errno != EINTR)
			return -ECHILD;
		if (interrupted && !cut) {
			timeout_s = az_now() - t0 + 2; /* Ctrl-C: 2 s more, then kill */
			cut = 1;
		}
		if (az_now() - t0 > timeout_s) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return -ECHILD;
		}
		sleep_ms(5);
	}
}

/* ---- the inference process ---- */

static int server_child(void *arg)
{
	struct az_pipeline *pl = arg;
	return az_infer_serve(&pl->seg, &pl->pp.infer);
}

static int spawn_server(struct az_pipeline *pl)
{
	pid_t pid = az_sv_spawn(server_child, pl, "az-infer");
	if (pid < 0) {
		pl->server = 0;
		az_log("supervisor: fork failed: %s", strerror((int)-pid));
		return (int)pid;
	}
	pl->server = pid;
	/* Relaxed: liveness only (infer/control.h); the predecessor has been reaped. */
	az_wd_watch_start(&pl->server_watch,
			  atomic_load_explicit(&pl->ctl->server_beat, memory_order_relaxed), az_now());
	return 0;
}

/* ---- the watchdog (run/watchdog.h) ---- */

/* One sample of the supervisor's own clock: when it was away for more than a second
 * (descheduled, busy between phases), move every watch's clock forward by that time so that it
 * is neither blamed on a child nor learned. ph may be NULL (no phase running). */
static void wd_clock(struct az_pipeline *pl, struct az_phase *ph, double now)
{
	double dt = now - pl->wd_tick;
	if (pl->wd_tick > 0 && dt > 1.0) {
		az_wd_watch_shift(&pl->server_watch, dt);
		for (uint32_t i = 0; ph && i < ph->n; i++)
			az_wd_watch_shift(&ph->watch[i], dt);
	}
	pl->wd_tick = now;
}

/* Kill the inference process when its heartbeat has stopped (allow_s: the allowance for a
 * model load in progress); the caller's waitpid reaps it and server_died() restarts it. */
static void wd_server(struct az_pipeline *pl, double now, double allow_s)
{
	double idle;
	if (pl->server <= 0)
		return;
	/* Relaxed: liveness only (infer/control.h). */
	uint64_t beat = atomic_load_explicit(&pl->ctl->server_beat, memory_order_relaxed);
	if (!az_wd_check(&pl->wd_server, &pl->server_watch, beat, now, allow_s, &idle))
		return;
	az_log("supervisor: watchdog: the inference process (pid %ld) made no progress for %.1f s "
	       "(timeout %.1f s); killing it to restart it", (long)pl->server, idle,
	       az_wd_timeout(&pl->wd_server) + allow_s);
	kill(pl->server, SIGKILL);
}

/* Child i's heartbeat counter, or NULL when it has none. */
static _Atomic uint64_t *child_beat(struct az_pipeline *pl, struct az_phase *ph, uint32_t i)
{
	if (ph->workers)
		return &pl->run->worker[i].beat;
	return ph->beats ? &ph->beats[i] : NULL;
}

/* Kill each child whose heartbeat has stopped; phase_step's waitpid reaps it and phase_reap()
 * restarts it within the phase's budget, as any child killed by a signal. */
static void wd_children(struct az_pipeline *pl, struct az_phase *ph, double now)
{
	struct az_wd_kind *k = ph->workers ? &pl->wd_worker : &pl->wd_trainer;
	double idle;
	for (uint32_t i = 0; i < ph->n && !ph->stopping; i++) {
		_Atomic uint64_t *b = child_beat(pl, ph, i);
		if (ph->pids[i] <= 0 || !b)
			continue;
		/* Relaxed: liveness only (run/control.h, run/roles.h). */
		uint64_t beat = atomic_load_explicit(b, memory_order_relaxed);
		if (!az_wd_check(k, &ph->watch[i], beat, now, 0, &idle))
			continue;
		if (ph->workers)
			az_log("supervisor: watchdog: worker %u (pid %ld) made no progress for "
			       "%.1f s (timeout %.1f s); killing it to restart it", i,
			       (long)ph->pids[i], idle, az_wd_timeout(k));
		else
			az_log("supervisor: watchdog: the %s (pid %ld) made no progress for %.1f s "
			       "(timeout %.1f s); killing it to restart it", ph->child_name,
			       (long)ph->pids[i], idle, az_wd_timeout(k));
		kill(ph->pids[i], SIGKILL);
	}
}

/* The watchdog's allowance for loading the checkpoint at path: AZ_WD_MULT times its expected
 * time, its bytes at the slowest load rate seen (AZ_SV_LOAD_RATE before any). */
static double load_allowance(const struct az_pipeline *pl, const char *path)
{
	struct stat st;
	double rate = pl->load_rate > 0 ? pl->load_rate : AZ_SV_LOAD_RATE;
	if (stat(path, &st) != 0)
		return 0;
	return AZ_WD_MULT * (double)st.st_size / rate;
}

static void log_exit(const char *what, int st)
{
	az_log("supervisor: the inference process exited (%s %d)%s",
	       WIFSIGNALED(st) ? "signal" : "status",
	       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), what);
}

/* The inference process exited (status st, reaped) `what`: restart it within the budget. */
static int server_died(struct az_pipeline *pl, int st, const char *what)
{
	log_exit(what, st);
	pl->server = 0;
	if (interrupted)
		return -EINTR;
	pl->server_restarts++;
	if (!az_sv_budget_take(&pl->server_budget, az_now())) {
		if (pl->pp.max_server_restarts && pl->pp.restart_window_s > 0)
			az_log("supervisor: the inference process died %u times in %.0f s; giving "
			       "up", pl->server_budget.max + 1, pl->pp.restart_window_s);
		else if (pl->pp.max_server_restarts)
			az_log("supervisor: the inference process died %u times; giving up",
			       pl->server_restarts);
		return -ECHILD;
	}
	int rc = spawn_server(pl);
	if (rc < 0)
		return rc;
	/* It reloads every model whose generation it has not seen (all of them), and serves the
	 * requests left unserved by its predecessor: the rings keep their counters. */
	az_log("supervisor: restarted the inference process (pid %ld)", (long)pl->server);
	return 0;
}

int az_sv_budget_take(struct az_sv_budget *b, double now)
{
	uint32_t max = b->max < AZ_SV_BUDGET_MAX ? b->max : AZ_SV_BUDGET_MAX;
	if (max == 0)
		return 0;
	if (b->n >= max) {
		/* The max-th most recent restart: still inside the window means one too many. */
		double oldest = b->at[(b->n - max) % AZ_SV_BUDGET_MAX];
		if (b->window_s <= 0 || now - oldest < b->window_s)
			return 0;
	}
	b->at[b->n % AZ_SV_BUDGET_MAX] = now;
	b->n++;
	return 1;
}

int az_pipeline_server_died(struct az_pipeline *pl, int st)
{
	return server_died(pl, st, "");
}

int az_pipeline_start(struct az_pipeline *pl, const struct az_pipeline_params *pp,
		      const char *best_path)
{
	memset(pl, 0, sizeof(*pl));
	pl->pp = *pp;
	double floor_s = pp->watchdog_floor_s > 0 ? pp->watchdog_floor_s : AZ_WD_FLOOR_S;
	pl->wd_server = (struct az_wd_kind){.name = "inference process", .floor_s = floor_s};
	pl->wd_worker = (struct az_wd_kind){.name = "worker", .floor_s = floor_s};
	pl->wd_trainer = (struct az_wd_kind){.name = "trainer", .floor_s = floor_s};
	pl->server_budget.max = pp->max_server_restarts;
	pl->server_budget.window_s = pp->restart_window_s;
	struct az_slot_layout lay;
	az_slot_layout_init(&lay, pp->infer.features, pp->infer.actions);
	struct az_seg_params sp = {.nrings = pp->rings, .capacity = pp->ring_capacity,
				   .slot_bytes = lay.bytes,
				   .ctl_bytes = (uint32_t)sizeof(struct az_run_ctl_shm)};
	size_t cache = 0;
	if (pp->eval_cache_shared_bytes) {
		cache = az_evalcache_shm_memsize(pp->infer.actions, pp->eval_cache_shared_bytes);
		if (cache == 0 || cache > UINT32_MAX - AZ_CACHELINE - az_evalcache_seg_offset()) {
			az_log("supervisor: a shared evaluation cache of %zu bytes does not fit "
			       "(at least one entry, below 4 GiB)", pp->eval_cache_shared_bytes);
			return -EINVAL;
		}
		sp.ctl_bytes = (uint32_t)(az_evalcache_seg_offset() + cache);
	}
	char name[64], stale[512];
	if (pp->reap_stale) {
		int n = az_seg_reap_stale(stale, sizeof(stale));
		if (n > 0)
			az_info("supervisor: removed %d shared-memory segment(s) left by dead "
				"runs: %s", n, stale);
	}
	az_seg_name(name, sizeof(name), pp->seg_tag);
	int rc = az_seg_create(&pl->seg, name, &sp);
	if (rc < 0) {
		az_log("supervisor: cannot create shared memory %s: %s", name, strerror(-rc));
		return rc;
	}
	pl->run = az_seg_ctl(&pl->seg);
	pl->ctl = &pl->run->infer;
	if (cache) {
		size_t bytes;
		void *mem = az_evalcache_seg_region(&pl->seg, &bytes);
		rc = az_evalcache_shm_init(mem, cache, pp->infer.actions);
		AZ_ASSERT(rc == 0 && bytes >= cache); /* sized above, zeroed by az_seg_create */
	}
	rc = spawn_server(pl);
	if (rc == 0 && best_path)
		rc = az_pipeline_serve_model(pl, AZ_MODEL_BEST, best_path);
	return rc;
}

int az_pipeline_serve_model(struct az_pipeline *pl, enum az_model_slot s, const char *path)
{
	struct az_infer_ctl_shm *c = pl->ctl;
	snprintf(c->model_path[s], AZ_CTL_PATH_MAX, "%s", path);
	/* Relaxed read of our own counter (only the supervisor writes model_gen). */
	uint32_t gen = atomic_load_explicit(&c->model_gen[s], memory_order_relaxed) + 1;
	/* C1: publishes model_path[s]; pairs with C1' in the inference process (infer/server.c). */
	atomic_store_explicit(&c->model_gen[s], gen, memory_order_release);
	double t0 = az_now(), allow = load_allowance(pl, path);
	uint32_t restarts = pl->server_restarts;
	/* C2': pairs with C2 in the inference process; model_err is valid after it. */
	while (atomic_load_explicit(&c->model_ack[s], memory_order_acquire) != gen) {
		if (interrupted)
			return -EINTR;
		int st;
		if (pl->server > 0 && waitpid(pl->server, &st, WNOHANG) == pl->server) {
			/* Died while loading: its successor loads every slot and acknowledges the
			 * current generations, so keep waiting. */
			int rc = server_died(pl, st, " while loading a model");
			if (rc < 0)
				return rc;
		}
		if (pl->server <= 0) {
			az_log("supervisor: the inference process did not load %s", path);
			return -ECHILD;
		}
		double now = az_now();
		wd_clock(pl, NULL, now);
		wd_server(pl, now, allow);
		sleep_ms(2);
	}
	/* The slowest load rate seen sizes the next loads' allowance; a load that needed a restart
	 * says nothing about the rate. The load's interval is not learned as a heartbeat gap. */
	struct stat fst;
	double now = az_now();
	if (pl->server_restarts == restarts && now > t0 && stat(path, &fst) == 0) {
		double rate = (double)fst.st_size / (now - t0);
		if (pl->load_rate <= 0 || rate < pl->load_rate)
			pl->load_rate = rate;
	}
	/* Relaxed: liveness only (infer/control.h). */
	az_wd_watch_start(&pl->server_watch,
			  atomic_load_explicit(&c->server_beat, memory_order_relaxed), now);
	int err = atomic_load_explicit(&c->model_err[s], memory_order_relaxed);
	if (err < 0)
		az_log("supervisor: the inference process could not load %s: %s", path,
		       strerror(-err));
	return err;
}

void az_pipeline_stop(struct az_pipeline *pl)
{
	if (pl->server > 0) {
		/* S1: pairs with S1' in the inference loop (infer/control.h). */
		atomic_store_explicit(&pl->ctl->stop, 1, memory_order_release);
		double t0 = az_now();
		while (waitpid(pl->server, NULL, WNOHANG) == 0) {
			if (az_now() - t0 > 5) {
				kill(pl->server, SIGKILL);
				waitpid(pl->server, NULL, 0);
				break;
			}
			sleep_ms(5);
		}
		pl->server = 0;
	}
	if (pl->seg.base)
		az_seg_destroy(&pl->seg);
	pl->ctl = NULL;
	pl->run = NULL;
}

/* Every counter of struct az_ctl_worker. */
#define W(f) offsetof(struct az_ctl_worker, f)
static const size_t wfield[] = {
	W(claimed), W(done), W(games_done), W(positions), W(moves), W(sims), W(occupancy_sum),
	W(occupancy_samples), W(cache_hits), W(cache_lookups), W(arena_wins), W(arena_draws),
	W(arena_losses), W(arena_first_wins), W(arena_first_draws), W(arena_first_losses),
	W(adjudicate_ns), W(busy_ns)};
#undef W
_Static_assert(sizeof(wfield) / sizeof(wfield[0]) * 8 ==
		       offsetof(struct az_ctl_worker, busy_ns) + 8,
	       "wfield lists every counter of struct az_ctl_worker");

static _Atomic uint64_t *wcounter(struct az_run_ctl_shm *c, uint32_t w, size_t off)
{
	return (_Atomic uint64_t *)((char *)&c->worker[w] + off);
}

void az_pipeline_reset_phase(struct az_pipeline *pl, uint64_t games)
{
	struct az_run_ctl_shm *c = pl->run;
	/* Relaxed: no worker of this phase exists yet; fork orders these stores before them. */
	atomic_store_explicit(&c->games_target, games, memory_order_relaxed);
	_Atomic uint64_t *zero[] = {&c->next_game, &c->infer.evals, &c->infer.batches};
	for (size_t i = 0; i < AZ_ARRAY_LEN(zero); i++)
		atomic_store_explicit(zero[i], 0, memory_order_relaxed);
	for (uint32_t w = 0; w < AZ_CTL_MAX_WORKERS; w++)
		for (size_t k = 0; k < AZ_ARRAY_LEN(wfield); k++)
			atomic_store_explicit(wcounter(c, w, wfield[k]), 0, memory_order_relaxed);
	for (size_t n = 0; n < AZ_CTL_ARENA_HASHES; n++)
		atomic_store_explicit(&c->arena_hash[n], 0, memory_order_relaxed);
	atomic_store_explicit(&c->worker_error, 0, memory_order_relaxed);
	atomic_store_explicit(&c->phase_stop, 0, memory_order_relaxed);
}

void az_pipeline_sample(const struct az_pipeline *pl, struct az_pipeline_counters *s)
{
	struct az_run_ctl_shm *c = pl->run;
	struct {
		uint64_t *to;
		_Atomic uint64_t *from;
	} map[] = {{&s->evals, &c->infer.evals}, {&s->batches, &c->infer.batches},
		   {&s->forward_ns, &c->infer.forward_ns}};
	/* Relaxed loads: statistics; exact once their writers are reaped (waitpid orders them). */
	for (size_t i = 0; i < AZ_ARRAY_LEN(map); i++)
		*map[i].to = atomic_load_explicit(map[i].from, memory_order_relaxed);
	/* The workers' counters, each on its own lines (run/control.h), summed. */
	struct {
		uint64_t *to;
		size_t off;
	} sum[] = {
		{&s->games, offsetof(struct az_ctl_worker, games_done)},
		{&s->positions, offsetof(struct az_ctl_worker, positions)},
		{&s->moves, offsetof(struct az_ctl_worker, moves)},
		{&s->sims, offsetof(struct az_ctl_worker, sims)},
		{&s->occ_sum, offsetof(struct az_ctl_worker, occupancy_sum)},
		{&s->occ_n, offsetof(struct az_ctl_worker, occupancy_samples)},
		{&s->cache_hits, offsetof(struct az_ctl_worker, cache_hits)},
		{&s->cache_lookups, offsetof(struct az_ctl_worker, cache_lookups)},
		{&s->arena_wins, offsetof(struct az_ctl_worker, arena_wins)},
		{&s->arena_draws, offsetof(struct az_ctl_worker, arena_draws)},
		{&s->arena_losses, offsetof(struct az_ctl_worker, arena_losses)},
		{&s->arena_first_wins, offsetof(struct az_ctl_worker, arena_first_wins)},
		{&s->arena_first_draws, offsetof(struct az_ctl_worker, arena_first_draws)},
		{&s->arena_first_losses, offsetof(struct az_ctl_worker, arena_first_losses)},
		{&s->adjudicate_ns, offsetof(struct az_ctl_worker, adjudicate_ns)},
		{&s->busy_ns, offsetof(struct az_ctl_worker, busy_ns)}};
	for (size_t i = 0; i < AZ_ARRAY_LEN(sum); i++) {
		uint64_t v = 0;
		for (uint32_t w = 0; w < AZ_CTL_MAX_WORKERS; w++)
			v += atomic_load_explicit(wcounter(c, w, sum[i].off), memory_order_relaxed);
		*sum[i].to = v;
	}
	s->worker_error = atomic_load_explicit(&c->worker_error, memory_order_relaxed);
	s->arena_distinct = s->arena_hashed = 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int az_pipeline_arena_distinct(const struct az_pipeline *pl, uint64_t *hashed)
{
	uint64_t *h = malloc(AZ_CTL_ARENA_HASHES * sizeof(*h));
	size_t n = 0, distinct = 0;

	if (!h)
		return -ENOMEM;
	/* Relaxed: the writers have been reaped (waitpid orders their stores before these). */
	for (size_t i = 0; i < AZ_CTL_ARENA_HASHES; i++) {
		uint64_t v = atomic_load_explicit(&pl->run->arena_hash[i], memory_order_relaxed);

		if (v)
			h[n++] = v;
	}
	qsort(h, n, sizeof(*h), cmp_u64);
	for (size_t i = 0; i < n; i++)
		distinct += i == 0 || h[i] != h[i - 1];
	free(h);
	if (hashed)
		*hashed = n;
	return (int)distinct;
}

void az_pipeline_set_store_counts(struct az_pipeline *pl, uint64_t games, uint64_t positions)
{
	/* Relaxed: no worker is left to write these (waitpid ordered their last stores). */
	for (uint32_t w = 0; w < AZ_CTL_MAX_WORKERS; w++) {
		atomic_store_explicit(&pl->run->worker[w].games_done, w == 0 ? games : 0,
				      memory_order_relaxed);
		atomic_store_explicit(&pl->run->worker[w].positions, w == 0 ? positions : 0,
				      memory_order_relaxed);
	}
}

/* ---- one phase ---- */

struct child_arg {
	struct az_phase *ph;
	uint32_t i;
};

static int phase_child(void *arg)
{
	struct child_arg *ca = arg;
	return ca->ph->child(ca->ph, ca->i);
}

/* Start (or restart) child i of the phase. */
static int phase_spawn(struct az_pipeline *pl, struct az_phase *ph, uint32_t i)
{
	char name[16];
	struct child_arg ca = {ph, i};
	if (ph->workers) {
		/* Relaxed: the new worker does not exist yet; fork orders these stores. */
		atomic_store_explicit(&pl->run->worker[i].claimed, 0, memory_order_relaxed);
		atomic_store_explicit(&pl->run->worker[i].done, 0, memory_order_relaxed);
		snprintf(name, sizeof(name), "az-worker-%u", i);
	} else {
		snprintf(name, sizeof(name), "az-%s", ph->child_name);
	}
	_Atomic uint64_t *b = child_beat(pl, ph, i);
	/* Relaxed: liveness only; the predecessor (if any) has been reaped. */
	az_wd_watch_start(&ph->watch[i], b ? atomic_load_explicit(b, memory_order_relaxed) : 0,
			  az_now());
	pid_t pid = az_sv_spawn(phase_child, &ca, name);
	if (pid < 0) {
		ph->pids[i] = 0;
		az_log("supervisor: fork failed: %s", strerror((int)-pid));
		return (int)pid;
	}
	ph->pids[i] = pid;
	return 0;
}

int az_phase_start(struct az_pipeline *pl, struct az_phase *ph)
{
	AZ_ASSERT(ph->n <= AZ_CTL_MAX_WORKERS);
	ph->pl = pl;
	ph->t0 = az_now();
	ph->restarts = 0;
	ph->stopping = 0;
	ph->ntorn = 0;
	int rc = 0;
	for (uint32_t i = 0; i < ph->n; i++) {
		ph->pids[i] = 0;
		ph->attempt[i] = 0;
	}
	for (uint32_t i = 0; i < ph->n && rc == 0; i++)
		rc = phase_spawn(pl, ph, i);
	if (rc < 0) { /* fork failed: stop what started; az_phase_wait reaps it */
		ph->stopping = 1;
		for (uint32_t i = 0; i < ph->n; i++)
			if (ph->pids[i] > 0)
				kill(ph->pids[i], SIGTERM);
	}
	return rc;
}

/* Child i of the phase exited with status st. Returns 0 (finished, or restarted) or an error. */
static int phase_reap(struct az_pipeline *pl, struct az_phase *ph, uint32_t i, int st)
{
	ph->pids[i] = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (ph->stopping)
		return 0; /* we asked it to stop; the reason is reported already */
	if (WIFEXITED(st) || interrupted) /* it reported an error itself: do not loop on it */
		return -ECHILD;
	const char *who = ph->child_name;
	if (++ph->restarts > ph->max_restarts) {
		az_log("supervisor: %s died%s (signal %d)%s", who, ph->max_restarts ? " again" : "",
		       WTERMSIG(st), ph->max_restarts ? "; too many restarts" : "");
		return -ECHILD;
	}
	if (ph->workers) {
		/* Its unfinished games are dropped (the replay store keeps whole games only) and
		 * handed back to the phase so the iteration still plays its full count. */
		struct az_run_ctl_shm *c = pl->run;
		uint64_t lost = atomic_load_explicit(&c->worker[i].claimed, memory_order_relaxed) -
				atomic_load_explicit(&c->worker[i].done, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->games_target, lost, memory_order_relaxed);
		if (ph->ntorn < AZ_PHASE_MAX_TORN) {
			ph->torn_worker[ph->ntorn] = i;
			ph->torn_attempt[ph->ntorn++] = ph->attempt[i];
		}
		ph->attempt[i]++;
		az_log("supervisor: worker %u died (signal %d); %llu unfinished games dropped; "
		       "restarting it", i, WTERMSIG(st), (unsigned long long)lost);
	} else {
		ph->attempt[i]++;
		az_log("supervisor: the %s died (signal %d); restarting it", who, WTERMSIG(st));
	}
	return phase_spawn(pl, ph, i);
}

/* One supervision step: reap what exited (restarting within the budgets), and on SIGINT or a
 * failure tell the children to stop. Returns the number of children still alive; *rc keeps
 * the first error. */
static uint32_t phase_step(struct az_pipeline *pl, struct az_phase *ph, int *rc)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p <= 0)
			break;
		if (p == pl->server) {
			int src = az_pipeline_server_died(pl, st);
			if (*rc == 0 && src != -EINTR)
				*rc = src;
			continue;
		}
		for (uint32_t i = 0; i < ph->n; i++) {
			if (ph->pids[i] != p)
				continue;
			int prc = phase_reap(pl, ph, i, st);
			if (*rc == 0)
				*rc = prc;
		}
	}
	double now = az_now();
	wd_clock(pl, ph, now);
	wd_server(pl, now, 0);
	wd_children(pl, ph, now);
	if ((interrupted || *rc < 0) && !ph->stopping) {
		ph->stopping = 1;
		for (uint32_t i = 0; i < ph->n; i++)
			if (ph->pids[i] > 0)
				kill(ph->pids[i], SIGTERM);
		if (!*rc)
			*rc = -EINTR;
	}
	uint32_t left = 0;
	for (uint32_t i = 0; i < ph->n; i++)
		left += ph->pids[i] > 0;
	return left;
}

int az_phase_wait(struct az_pipeline *pl, struct az_phase *ph)
{
	int rc = 0;
	while (phase_step(pl, ph, &rc) > 0) {
		if (ph->tick)
			ph->tick(ph);
		az_sv_wait_child(0.02); /* woken at once by a child's exit (SIGCHLD) */
	}
	return rc;
}

int az_phase_watch(struct az_pipeline *pl, struct az_phase *ph, double seconds)
{
	int rc = 0;
	double end = az_now() + seconds;
	while (az_now() < end) {
		uint32_t left = phase_step(pl, ph, &rc);
		if (rc < 0 || left < ph->n)
			return rc < 0 ? rc : -ECHILD;
		if (ph->tick)
			ph->tick(ph);
		sleep_ms(20);
	}
	return 0;
}

int az_phase_stop(struct az_pipeline *pl, struct az_phase *ph, double timeout_s)
{
	int rc = 0;
	if (!pl->run)
		return 0;
	ph->stopping = 1;
	/* P1: pairs with P1' in the workers' loops (run/control.h). */
	atomic_store_explicit(&pl->run->phase_stop, 1, memory_order_release);
	for (uint32_t i = 0; i < ph->n; i++) {
		if (ph->pids[i] > 0 && az_sv_reap(ph->pids[i], timeout_s) < 0)
			rc = -ECHILD;
		ph->pids[i] = 0;
	}
	return rc;
}
