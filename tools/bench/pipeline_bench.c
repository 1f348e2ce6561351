/* SPDX-License-Identifier: MIT */
/* `azbench pipeline`: end-to-end self-play throughput of the real system (W worker processes,
 * one inference process, the shared-memory rings) for several W and G, against the serial
 * baseline (one game, one leaf at a time, batch 1, in one process) and the backend's own
 * ceiling (`azbench infer`) at the mean batch the pipeline achieved. */
#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "games/game.h"
#include "net/checkpoint.h"
#include "infer/server.h"
#include "mcts/mcts.h"
#include "base/az_assert.h"
#include "run/control.h"
#include "shm/slot.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/infer_bench.h"
#include "tools/config.h"
#include "run/roles.h"

#define MAX_GAMES 2
#define MAX_LIST 8
#define MAX_CONFIGS (MAX_GAMES * MAX_LIST * MAX_LIST)
#define DEFAULT_SECONDS 60.0
#define MIN_MEASURE_S 1.0  /* per configuration, after warm-up, when the budget allows */
#define WARM_S 0.3         /* after the first evaluation: trees and rings reach steady state */
#define OVERHEAD_S 0.4     /* per configuration: forks, checkpoint load, teardown (estimate) */
#define CEILING_S 0.25     /* per distinct batch size of the ceiling measurement */
#define PATH_LEN 1024

static volatile sig_atomic_t interrupted; /* set by the SIGINT/SIGTERM handler only */

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static double now_s(void)
{
	return (double)az_bench_now_ns() * 1e-9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* ---- options ---- */

struct pipe_opts {
	struct az_bench_opts common;
	const char *games[MAX_GAMES];
	int ngames;
	uint32_t workers[MAX_LIST];
	int nworkers;
	uint32_t gpw[MAX_LIST];
	int ngpw;
	uint32_t sims, leaves; /* 0: the game's default */
	enum az_backend_kind backend;
	int verbose;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: azbench pipeline [options]\n"
		"End-to-end self-play throughput (W workers, one inference process, the shm\n"
		"rings) on the real game and network (azrun's defaults), against the serial\n"
		"baseline (one game, one leaf at a time, batch 1, one process) and the\n"
		"backend's ceiling (azbench infer) at the mean batch achieved.\n\n"
		"  --game NAME              tictactoe | connect4 | all (default all)\n"
		"  --workers LIST           worker counts W (default 1,2,4,8,16)\n"
		"  --games-per-worker LIST  games in flight per worker G (default 4,16)\n"
		"  --sims N                 simulations per move (default: the game's)\n"
		"  --leaves K               leaves in flight per game (default: azrun's)\n"
		"  --backend B              auto | cpu | cuda (default auto)\n"
		"  --verbose                the inference process logs its backend choice\n"
		"  --help                   this text\n"
		"%s\n"
		"The budget (default --seconds %.0f) is split across the configurations;\n"
		"each gets at least %.0f s of measurement after warm-up, and those that do\n"
		"not fit (largest W first) are skipped and named on stderr.\n"
		"Columns: evals_per_s (network evaluations served), sims_per_s (MCTS\n"
		"simulations, terminal visits included), games_per_min, mean_batch,\n"
		"ring_occupancy (mean requests in flight per ring), server_busy (share of\n"
		"time in forward passes), speedup (evals/s over the serial baseline),\n"
		"ceiling_evals_per_s (backend alone at round(mean_batch)), ceiling_frac\n"
		"(evals_per_s / ceiling).\n"
		"--plot: evals/s against W, one line per game and G.\n",
		az_bench_common_help, DEFAULT_SECONDS, MIN_MEASURE_S);
}

/* A pipeline option that az_bench_parse_argv() does not handle (az_bench_argv.opt). */
static int parse_opt(void *mode_opts, int c, const char *arg)
{
	struct pipe_opts *o = mode_opts;
	uint32_t one[MAX_LIST];
	int n = 0;

	switch (c) {
	case 'w':
		return az_bench_opt_list("pipeline", "--workers", arg, o->workers, &o->nworkers,
					 MAX_LIST, 256);
	case 'G':
		return az_bench_opt_list("pipeline", "--games-per-worker", arg, o->gpw, &o->ngpw,
					 MAX_LIST, 4096);
	case 's':
	case 'K':
		if (az_bench_opt_list("pipeline", c == 's' ? "--sims" : "--leaves", arg, one, &n,
				      MAX_LIST, 100000) < 0 || n != 1)
			return -EINVAL;
		*(c == 's' ? &o->sims : &o->leaves) = one[0];
		return 0;
	case 'v':
		o->verbose = 1;
		return 0;
	default:
		return -ENOENT;
	}
}

/* Returns 0 to run, 1 after --help, 2 on bad usage. */
static int parse(struct pipe_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		AZ_BENCH_LONGOPT_GAME,
		{ "workers", required_argument, NULL, 'w' },
		{ "games-per-worker", required_argument, NULL, 'G' },
		{ "sims", required_argument, NULL, 's' },
		{ "leaves", required_argument, NULL, 'K' },
		AZ_BENCH_LONGOPT_BACKEND,
		{ "verbose", no_argument, NULL, 'v' },
		AZ_BENCH_LONGOPT_HELP,
		AZ_BENCH_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	const struct az_bench_argv p = {
		.mode = "pipeline", .longopts = longopts, .common = &o->common, .usage = usage,
		.games = o->games, .ngames = &o->ngames, .backend = &o->backend,
		.opt = parse_opt, .mode_opts = o,
	};

	memset(o, 0, sizeof(*o));
	o->common.seconds = DEFAULT_SECONDS;
	o->nworkers = az_bench_parse_u32_list("1,2,4,8,16", o->workers, MAX_LIST, 1, 256);
	o->ngpw = az_bench_parse_u32_list("4,16", o->gpw, MAX_LIST, 1, 4096);
	return az_bench_parse_argv(&p, argc, argv);
}

/* ---- child processes ---- */

/* Fork a child that dies with the parent and ignores Ctrl-C (the parent tears down). Returns
 * the pid in the parent, 0 in the child, -errno on failure. */
static pid_t fork_child(void)
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
		_exit(3);
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_DFL);
	return 0;
}

/* Wait for pid up to timeout seconds (less after Ctrl-C), then SIGKILL it. Returns 0 when it
 * exited with status 0, -ECHILD otherwise. */
static int reap(pid_t pid, double timeout)
{
	double t0 = now_s();
	int st, cut = 0;

	for (;;) {
		pid_t p = waitpid(pid, &st, WNOHANG);
		if (p == pid)
			return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
		if (p < 0 && errno != EINTR)
			return -ECHILD;
		if (interrupted && !cut) {
			timeout = now_s() - t0 + 2; /* Ctrl-C: 2 s more, then kill */
			cut = 1;
		}
		if (now_s() - t0 > timeout) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return -ECHILD;
		}
		sleep_s(0.005);
	}
}

/* One game's fixed context: defaults, network, checkpoint. */
struct game_ctx {
	const struct az_game *g;
	struct az_config cfg; /* azrun's defaults for the game, with the bench's overrides */
	struct az_arch arch;
	char net[32];
	char ckpt[PATH_LEN];
};

/* ---- the serial baseline (in a child: a CUDA context must not be inherited by forks) ---- */

struct serial_result {
	int32_t rc;
	char why[128];
	double seconds;
	uint64_t evals, sims, moves, games;
};

struct serial_eval_ctx {
	const struct az_game *g;
	struct az_backend *be;
	float x[4096];
	float logits[AZ_GAME_ACTIONS_MAX];
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	uint64_t evals;
};

/* One leaf, batch 1, straight through the backend: what a worker + the inference process do for
 * a leaf, without rings or batching. */
static int serial_eval(void *ctx, const void *state, float *policy, float *value)
{
	struct serial_eval_ctx *c = ctx;
	float v;

	c->g->encode(state, c->x);
	c->g->legal(state, c->mask);
	int rc = az_backend_forward(c->be, 0, 1, c->x, c->logits, &v);
	if (rc < 0)
		return rc;
	az_masked_softmax(c->logits, c->mask, c->g->actions, policy);
	*value = v;
	c->evals++;
	return 0;
}

/* Self-play games as a worker plays them (noise, temperature, tree reuse), one at a time. */
static int serial_games(const struct game_ctx *gc, struct serial_eval_ctx *ec, double seconds,
			struct serial_result *res)
{
	const struct az_game *g = gc->g;
	const struct az_config *cfg = &gc->cfg;
	struct az_mcts_params mp;
	struct az_tree *t;
	uint8_t state[AZ_GAME_STATE_MAX];

	az_mcts_params_default(&mp, g);
	mp.c_puct = cfg->c_puct;
	mp.dir_alpha = cfg->dir_alpha;
	mp.dir_eps = cfg->dir_eps;
	mp.seed = cfg->seed;
	g->init(state);
	int rc = az_tree_create(g, &mp, state, &t);
	if (rc < 0)
		return rc;
	az_tree_set_noise(t, 1);
	double t0 = now_s(), end = t0 + seconds;
	while (rc == 0 && now_s() < end) {
		g->init(state);
		az_tree_reset(t, state);
		for (uint32_t ply = 0; rc == 0; ply++) {
			uint32_t before = az_tree_root_visits(t);
			float v;

			rc = az_mcts_search(t, cfg->sims, serial_eval, ec);
			if (rc < 0)
				break;
			res->sims += az_tree_root_visits(t) - before;
			int a = az_tree_pick(t, ply < cfg->temp_plies ? 1.0f : 0.0f);
			AZ_ASSERT(a >= 0);
			g->apply(state, a);
			res->moves++;
			if (g->terminal(state, &v)) {
				res->games++;
				break;
			}
			AZ_ASSERT(az_tree_advance(t, a) == 0);
			if (now_s() >= end)
				break;
		}
	}
	res->seconds = now_s() - t0;
	res->evals = ec->evals;
	az_tree_destroy(t);
	return rc;
}

static int serial_child(const struct game_ctx *gc, enum az_backend_kind kind, double seconds,
			struct serial_result *res)
{
	struct serial_eval_ctx *ec = calloc(1, sizeof(*ec));
	struct az_model *m = NULL;
	char err[256];
	int rc = -ENOMEM;

	if (!ec)
		return rc;
	openblas_set_num_threads(1);
	AZ_ASSERT(gc->g->features <= AZ_ARRAY_LEN(ec->x));
	ec->g = gc->g;
	rc = az_ckpt_load(gc->ckpt, &m, err, sizeof(err));
	if (rc < 0) {
		snprintf(res->why, sizeof(res->why), "%s", err);
		goto out;
	}
	rc = az_backend_create(kind, &m->arch, 1, &ec->be, res->why, sizeof(res->why));
	if (rc == 0)
		rc = az_backend_load(ec->be, 0, m);
	if (rc == 0)
		rc = serial_games(gc, ec, seconds, res);
	az_backend_destroy(ec->be);
	az_model_destroy(m);
out:
	free(ec);
	return rc;
}

/* Run fn-like work in a forked child writing into an anonymous shared page. */
static void *shared_page(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int run_serial(const struct game_ctx *gc, enum az_backend_kind kind, double seconds,
		      struct serial_result *out)
{
	struct serial_result *res = shared_page(sizeof(*res));

	if (!res)
		return -ENOMEM;
	memset(res, 0, sizeof(*res));
	res->rc = -ECHILD;
	pid_t pid = fork_child();
	if (pid == 0) {
		res->rc = serial_child(gc, kind, seconds, res);
		_exit(res->rc < 0 ? 1 : 0);
	}
	int rc = pid < 0 ? (int)pid : reap(pid, seconds + 120);
	*out = *res;
	munmap(res, sizeof(*res));
	if (rc == 0 && out->rc < 0)
		rc = out->rc;
	return rc;
}

/* ---- the ceiling at the achieved batch sizes (also in a child) ---- */

struct ceiling_result {
	int32_t rc;
	char why[128];
	double eps[MAX_CONFIGS];
};

static int run_ceiling(const struct game_ctx *gc, enum az_backend_kind kind,
		       const uint32_t *batches, int n, double *eps, char *why, size_t whylen)
{
	struct ceiling_result *res = shared_page(sizeof(*res));

	if (!res)
		return -ENOMEM;
	memset(res, 0, sizeof(*res));
	res->rc = -ECHILD;
	pid_t pid = fork_child();
	if (pid == 0) {
		openblas_set_num_threads(1);
		res->rc = az_bench_infer_measure(kind, &gc->arch, batches, n, CEILING_S, res->eps,
						 res->why, sizeof(res->why));
		_exit(res->rc < 0 ? 1 : 0);
	}
	int rc = pid < 0 ? (int)pid : reap(pid, n * CEILING_S * 4 + 120);
	if (rc == 0 && res->rc < 0)
		rc = res->rc;
	memcpy(eps, res->eps, sizeof(double) * (size_t)n);
	snprintf(why, whylen, "%s", res->why);
	munmap(res, sizeof(*res));
	return rc;
}

/* ---- one pipeline configuration ---- */

struct counters {
	double t;
	uint64_t evals, batches, forward_ns, games, occ_sum, occ_n;
};

static void sample(struct az_ctl_shm *c, struct counters *s)
{
	s->t = now_s();
	/* Relaxed loads: statistics counters; a sample a little stale only blurs the window. */
	s->evals = atomic_load_explicit(&c->evals, memory_order_relaxed);
	s->batches = atomic_load_explicit(&c->batches, memory_order_relaxed);
	s->forward_ns = atomic_load_explicit(&c->forward_ns, memory_order_relaxed);
	s->games = atomic_load_explicit(&c->games_done, memory_order_relaxed);
	s->occ_sum = atomic_load_explicit(&c->occupancy_sum, memory_order_relaxed);
	s->occ_n = atomic_load_explicit(&c->occupancy_samples, memory_order_relaxed);
}

struct pipe_result {
	double seconds, evals_per_s, sims_per_s, games_per_min, mean_batch, occupancy, busy;
};

struct pipe_run {
	const struct game_ctx *gc;
	struct az_config cfg;
	struct az_seg seg;
	struct az_ctl_shm *ctl;
	pid_t server;
	pid_t workers[256];
	uint32_t nworkers;
	char dir[PATH_LEN];
};

/* Point model slot s of the inference process at path and wait until it has loaded it: the
 * protocol of azrun's serve_model() (tools/azrun.c), duplicated here. */
static int serve_model(struct pipe_run *pr, uint32_t s, const char *path)
{
	struct az_ctl_shm *c = pr->ctl;

	snprintf(c->model_path[s], AZ_CTL_PATH_MAX, "%s", path);
	/* Relaxed read of our own counter (only this process writes model_gen). */
	uint32_t gen = atomic_load_explicit(&c->model_gen[s], memory_order_relaxed) + 1;
	/* C1: publishes model_path[s]; pairs with C1' in the inference process (infer/server.c). */
	atomic_store_explicit(&c->model_gen[s], gen, memory_order_release);
	double t0 = now_s();
	/* C2': pairs with C2 in the inference process; model_err is valid after it. */
	while (atomic_load_explicit(&c->model_ack[s], memory_order_acquire) != gen) {
		if (now_s() - t0 > 120 || waitpid(pr->server, NULL, WNOHANG) != 0)
			return -ETIMEDOUT;
		sleep_s(0.002);
	}
	return atomic_load_explicit(&c->model_err[s], memory_order_relaxed);
}

static int start_server(struct pipe_run *pr, int verbose)
{
	struct az_slot_layout lay;
	const struct az_config *cfg = &pr->cfg;
	char name[64];

	az_slot_layout_init(&lay, pr->gc->g->features, pr->gc->g->actions);
	struct az_seg_params sp = { .nrings = cfg->workers, .capacity = cfg->ring_capacity,
				    .slot_bytes = lay.bytes,
				    .ctl_bytes = (uint32_t)sizeof(struct az_ctl_shm) };
	az_seg_name(name, sizeof(name), "bench");
	int rc = az_seg_create(&pr->seg, name, &sp);
	if (rc < 0)
		return rc;
	pr->ctl = az_seg_ctl(&pr->seg);
	pr->server = fork_child();
	if (pr->server == 0) {
		struct az_infer_config ic = {
			.backend = cfg->backend,
			.features = pr->gc->g->features,
			.actions = pr->gc->g->actions,
			.max_batch = cfg->max_batch,
			.deadline_us = cfg->deadline_us,
			.spin = cfg->spin,
			.log_fd = verbose ? STDERR_FILENO : -1,
		};
		openblas_set_num_threads(1);
		_exit(az_infer_serve(&pr->seg, &ic) < 0 ? 1 : 0);
	}
	if (pr->server < 0)
		return (int)pr->server;
	return serve_model(pr, AZ_MODEL_BEST, pr->gc->ckpt);
}

static void stop_server(struct pipe_run *pr)
{
	if (pr->server > 0) {
		/* Release: pairs with the inference loop's acquire load of stop. */
		atomic_store_explicit(&pr->ctl->stop, 1, memory_order_release);
		reap(pr->server, 5);
		pr->server = 0;
	}
	if (pr->seg.base)
		az_seg_destroy(&pr->seg);
}

static int start_workers(struct pipe_run *pr)
{
	/* Plain store: no worker exists yet; fork orders it before anything they do. */
	pr->ctl->games_target = UINT64_MAX / 2;
	for (uint32_t i = 0; i < pr->cfg.workers; i++) {
		char path[PATH_LEN + 64];

		snprintf(path, sizeof(path), "%s/%s-w%ug%u-%02u.rpl", pr->dir, pr->gc->g->name,
			 pr->cfg.workers, pr->cfg.games_per_worker, i);
		pid_t pid = fork_child();
		if (pid == 0) {
			struct az_worker_params wp;
			az_config_worker_params(&pr->cfg, &wp);
			int rc = az_worker_run(&wp, &pr->seg, i, AZ_WORKER_SELFPLAY, 1, path);
			if (rc < 0)
				fprintf(stderr, "azbench pipeline: worker %u: %s\n", i,
					strerror(-rc));
			_exit(rc < 0 ? 1 : 0);
		}
		if (pid < 0)
			return (int)pid;
		pr->workers[pr->nworkers++] = pid;
	}
	return 0;
}

/* Nonzero when a worker has exited (they only stop on phase_stop) or the server has; the dead
 * child is reaped and forgotten. */
static int someone_died(struct pipe_run *pr)
{
	for (uint32_t i = 0; i < pr->nworkers; i++) {
		if (pr->workers[i] > 0 && waitpid(pr->workers[i], NULL, WNOHANG) != 0) {
			pr->workers[i] = 0;
			return 1;
		}
	}
	if (waitpid(pr->server, NULL, WNOHANG) != 0) {
		pr->server = 0;
		return 1;
	}
	return 0;
}

/* Sleep `seconds` in short ticks, watching the children. 0, -ECHILD or -EINTR. */
static int watch(struct pipe_run *pr, double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end) {
		if (interrupted)
			return -EINTR;
		if (someone_died(pr))
			return -ECHILD;
		sleep_s(0.02);
	}
	return 0;
}

static int stop_workers(struct pipe_run *pr)
{
	int rc = 0;

	if (!pr->ctl)
		return 0;
	/* Release: pairs with the workers' acquire load of phase_stop (run/worker.c). */
	atomic_store_explicit(&pr->ctl->phase_stop, 1, memory_order_release);
	for (uint32_t i = 0; i < pr->nworkers; i++)
		if (pr->workers[i] > 0 && reap(pr->workers[i], 30) < 0)
			rc = -ECHILD;
	pr->nworkers = 0;
	return rc;
}

static void measure_window(const struct counters *a, const struct counters *b,
			   struct pipe_result *res)
{
	double dt = b->t - a->t;
	uint64_t de = b->evals - a->evals, db = b->batches - a->batches;
	uint64_t dn = b->occ_n - a->occ_n;

	res->seconds = dt;
	res->evals_per_s = (double)de / dt;
	res->games_per_min = (double)(b->games - a->games) / dt * 60.0;
	res->mean_batch = db ? (double)de / (double)db : 0.0;
	res->occupancy = dn ? (double)(b->occ_sum - a->occ_sum) / (double)dn : 0.0;
	res->busy = (double)(b->forward_ns - a->forward_ns) * 1e-9 / dt;
}

static int run_config(const struct game_ctx *gc, const struct pipe_opts *o, const char *dir,
		      uint32_t W, uint32_t G, double measure, struct pipe_result *res)
{
	struct pipe_run pr;
	struct counters a, b;

	memset(&pr, 0, sizeof(pr));
	pr.gc = gc;
	pr.cfg = gc->cfg;
	pr.cfg.workers = W;
	pr.cfg.games_per_worker = G;
	snprintf(pr.dir, sizeof(pr.dir), "%s", dir);
	int rc = start_server(&pr, o->verbose);
	if (rc < 0) {
		fprintf(stderr, "azbench pipeline: the inference process did not start: %s\n",
			strerror(-rc));
		goto out;
	}
	rc = start_workers(&pr);
	/* Warm-up: the first evaluation (trees, rings and caches alive), then WARM_S more. */
	double t0 = now_s();
	while (rc == 0 && atomic_load_explicit(&pr.ctl->evals, memory_order_relaxed) == 0) {
		rc = watch(&pr, 0.01); /* relaxed load above: a counter, polled */
		if (rc == 0 && now_s() - t0 > 60)
			rc = -ETIMEDOUT;
	}
	if (rc == 0)
		rc = watch(&pr, WARM_S);
	sample(pr.ctl, &a);
	if (rc == 0)
		rc = watch(&pr, measure);
	sample(pr.ctl, &b);
	int rc2 = stop_workers(&pr);
	rc = rc ? rc : rc2;
	if (rc == 0) {
		/* Relaxed: every worker has been reaped (waitpid orders their writes). Workers add
		 * their simulations once, at exit; their share per evaluation scales the window. */
		uint64_t sims = atomic_load_explicit(&pr.ctl->sims, memory_order_relaxed);
		uint64_t evals = atomic_load_explicit(&pr.ctl->evals, memory_order_relaxed);
		int32_t werr = atomic_load_explicit(&pr.ctl->worker_error, memory_order_relaxed);
		measure_window(&a, &b, res);
		res->sims_per_s = evals ? res->evals_per_s * (double)sims / (double)evals : 0.0;
		rc = werr;
	}
	if (rc == -ECHILD)
		fprintf(stderr, "azbench pipeline: a worker or the inference process failed\n");
out:
	stop_workers(&pr);
	stop_server(&pr);
	return rc;
}

/* ---- the sweep ---- */

struct config {
	int game;
	uint32_t W, G;
	int done;
	struct pipe_result res;
	double ceiling;
};

/* Priority of a configuration when the budget cannot fit them all: first, for every game, the
 * one azrun would use by default (one worker per core, 16 games each, or the nearest listed);
 * then the rest by W, then G. */
static int first_choice(const struct pipe_opts *o, const struct config *c)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t bw = o->workers[0], bg = o->gpw[0];
	for (int w = 1; w < o->nworkers; w++)
		if (labs((long)o->workers[w] - cores) < labs((long)bw - cores))
			bw = o->workers[w];
	for (int g = 1; g < o->ngpw; g++)
		if (abs((int)o->gpw[g] - 16) < abs((int)bg - 16))
			bg = o->gpw[g];
	return c->W == bw && c->G == bg;
}

/* Order configurations by priority and keep as many as the budget allows with MIN_MEASURE_S
 * each; returns the count kept and *measure. */
static int plan(const struct pipe_opts *o, struct config *cf, int *ntotal, double *measure)
{
	int n = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int w = 0; w < o->nworkers; w++)
			for (int g = 0; g < o->ngpw; g++)
				for (int gi = 0; gi < o->ngames; gi++) {
					struct config c = { .game = gi, .W = o->workers[w],
							    .G = o->gpw[g] };
					if (first_choice(o, &c) == (pass == 0))
						cf[n++] = c;
				}
	*ntotal = n;
	/* Serial baselines and a handful of ceiling batch sizes per game; the sweep loop enforces
	 * the real deadline, so this estimate only sets the time per configuration. */
	double fixed = o->ngames * (CEILING_S * 4 + 1.0);
	for (int k = n; k >= 1; k--) {
		/* serial baselines get a share like a configuration */
		double m = (o->common.seconds - fixed - k * (OVERHEAD_S + WARM_S)) /
			   (k + o->ngames);
		if (m >= MIN_MEASURE_S || k == 1) {
			*measure = m > 0.25 ? m : 0.25;
			return k;
		}
	}
	*measure = MIN_MEASURE_S; /* not reached: k == 1 always returns */
	return 1;
}

static void add_row(struct az_bench_table *t, const struct game_ctx *gc, const char *setup,
		    const char *backend, uint32_t W, uint32_t G, uint32_t K,
		    const struct pipe_result *r, double serial_eps, double ceiling)
{
	struct az_bench_row row = { 0 };
	int pipe = strcmp(setup, "pipeline") == 0;

	az_bench_row_str(&row, "game", gc->g->name);
	az_bench_row_str(&row, "net", gc->net);
	az_bench_row_str(&row, "backend", backend);
	az_bench_row_str(&row, "setup", setup);
	az_bench_row_int(&row, "workers", W);
	az_bench_row_int(&row, "G", G);
	az_bench_row_int(&row, "K", K);
	az_bench_row_num(&row, "evals_per_s", r->evals_per_s, 0);
	az_bench_row_num(&row, "sims_per_s", r->sims_per_s, 0);
	az_bench_row_num(&row, "games_per_min", r->games_per_min, 1);
	az_bench_row_num(&row, "mean_batch", r->mean_batch, 1);
	if (pipe) {
		az_bench_row_num(&row, "ring_occupancy", r->occupancy, 1);
		az_bench_row_num(&row, "server_busy", r->busy, 2);
	} else {
		az_bench_row_none(&row, "ring_occupancy");
		az_bench_row_none(&row, "server_busy");
	}
	if (serial_eps > 0)
		az_bench_row_num(&row, "speedup", r->evals_per_s / serial_eps, 2);
	else
		az_bench_row_none(&row, "speedup");
	if (ceiling > 0) {
		az_bench_row_num(&row, "ceiling_evals_per_s", ceiling, 0);
		az_bench_row_num(&row, "ceiling_frac", r->evals_per_s / ceiling, 3);
	} else {
		az_bench_row_none(&row, "ceiling_evals_per_s");
		az_bench_row_none(&row, "ceiling_frac");
	}
	az_bench_row_num(&row, "seconds", r->seconds, 2);
	AZ_ASSERT(az_bench_table_add(t, &row) == 0);
}

static int game_setup(const struct pipe_opts *o, const char *game, const char *dir,
		      struct game_ctx *gc)
{
	char err[512];
	struct az_model *m;

	gc->g = az_game_find(game);
	AZ_ASSERT(gc->g && az_config_defaults(&gc->cfg, game) == 0);
	gc->cfg.backend = o->backend;
	gc->cfg.quiet = 1;
	if (o->sims)
		gc->cfg.sims = o->sims;
	if (o->leaves)
		gc->cfg.leaves = o->leaves;
	gc->arch = (struct az_arch){ .inputs = gc->g->features, .hidden = gc->cfg.hidden,
				     .blocks = gc->cfg.blocks, .actions = gc->g->actions };
	snprintf(gc->net, sizeof(gc->net), "%ux%u", gc->arch.hidden, gc->arch.blocks);
	snprintf(gc->ckpt, sizeof(gc->ckpt), "%s/%s.safetensors", dir, game);
	int rc = az_model_create(&gc->arch, &m);
	if (rc < 0)
		return rc;
	az_model_init_random(m, gc->cfg.seed);
	snprintf(m->game, sizeof(m->game), "%s", game);
	rc = az_ckpt_save(gc->ckpt, m, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "azbench pipeline: %s\n", err);
	az_model_destroy(m);
	return rc;
}

static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_LEN + 300];

	while (d && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Ceilings of one game at each configuration's round(mean_batch), measured in one child. */
static int game_ceilings(const struct game_ctx *gc, int gi, struct config *cf, int n,
			 enum az_backend_kind kind, const struct serial_result *sr,
			 double *serial_ceiling)
{
	uint32_t batches[MAX_CONFIGS + 1];
	double eps[MAX_CONFIGS + 1];
	int idx[MAX_CONFIGS], nb = 1;
	char why[128];
	uint32_t maxb = gc->cfg.max_batch;

	batches[0] = 1; /* the serial baseline's batch */
	for (int i = 0; i < n; i++) {
		if (cf[i].game != gi || !cf[i].done)
			continue;
		double mb = cf[i].res.mean_batch + 0.5;
		uint32_t b = mb < 1 ? 1 : mb > maxb ? maxb : (uint32_t)mb;
		int j = 0;
		while (j < nb && batches[j] != b)
			j++;
		if (j == nb)
			batches[nb++] = b;
		idx[i] = j;
	}
	int rc = run_ceiling(gc, kind, batches, nb, eps, why, sizeof(why));
	if (rc < 0)
		return rc;
	*serial_ceiling = sr->rc == 0 ? eps[0] : 0;
	for (int i = 0; i < n; i++)
		if (cf[i].game == gi && cf[i].done)
			cf[i].ceiling = eps[idx[i]];
	return 0;
}

static int keep_pipeline(const struct az_bench_row *r, void *arg)
{
	(void)arg;
	return strcmp(az_bench_row_sval(r, "setup"), "pipeline") == 0;
}

struct rec {
	char text[1024];
	struct az_bench_row row;
};

/* The best configuration of each game, as a recommendation. */
static void recommend(const struct pipe_opts *o, const struct game_ctx *gcs,
		      const struct config *cf, int n, const double *serial_eps, const char *skipped,
		      struct rec *out)
{
	char *text = out->text;
	size_t cap = sizeof(out->text);
	struct az_bench_row *rec = &out->row;

	for (int gi = 0; gi < o->ngames; gi++) {
		const struct config *best = NULL;
		char key[AZ_BENCH_KEY_MAX];

		for (int i = 0; i < n; i++)
			if (cf[i].game == gi && cf[i].done &&
			    (!best || cf[i].res.evals_per_s > best->res.evals_per_s))
				best = &cf[i];
		if (!best)
			continue;
		size_t l = strlen(text);
		snprintf(text + l, cap - l,
			 "%s%s: --workers %u --games-per-worker %u (%.0f evals/s, %.1fx serial, "
			 "%.0f%% of the ceiling at batch %.0f)", l ? "; " : "", gcs[gi].g->name,
			 best->W, best->G, best->res.evals_per_s,
			 serial_eps[gi] > 0 ? best->res.evals_per_s / serial_eps[gi] : 0.0,
			 best->ceiling > 0 ? 100 * best->res.evals_per_s / best->ceiling : 0.0,
			 best->res.mean_batch);
		snprintf(key, sizeof(key), "%s_workers", gcs[gi].g->name);
		az_bench_row_int(rec, key, best->W);
		snprintf(key, sizeof(key), "%s_G", gcs[gi].g->name);
		az_bench_row_int(rec, key, best->G);
	}
	if (*skipped) {
		size_t l = strlen(text);
		snprintf(text + l, cap - l, " [skipped for time:%s]", skipped);
	}
}

static int sweep(const struct pipe_opts *o, const char *dir, struct az_bench_table *t,
		 struct rec *rec)
{
	static struct config cf[MAX_CONFIGS];
	struct game_ctx gcs[MAX_GAMES];
	struct serial_result sr[MAX_GAMES];
	double serial_eps[MAX_GAMES] = { 0 }, measure;
	char skipped[256] = "";
	int ntotal, rc = 0;
	int n = plan(o, cf, &ntotal, &measure);
	double deadline = now_s() + o->common.seconds;
	for (int gi = 0; gi < o->ngames && rc == 0; gi++) {
		rc = game_setup(o, o->games[gi], dir, &gcs[gi]);
		if (rc < 0)
			return rc;
		az_bench_progress(&o->common, "pipeline: %s %s serial baseline, %.1fs\n",
				  o->games[gi], gcs[gi].net, measure);
		rc = run_serial(&gcs[gi], o->backend, measure, &sr[gi]);
		if (rc < 0 && interrupted)
			return -EINTR;
		if (rc < 0) {
			fprintf(stderr, "azbench pipeline: serial baseline: %s %s\n", strerror(-rc),
				sr[gi].why);
			return rc;
		}
		serial_eps[gi] = (double)sr[gi].evals / sr[gi].seconds;
	}
	int planned = n;
	for (int i = 0; i < planned && !interrupted; i++) {
		const struct game_ctx *gc = &gcs[cf[i].game];
		/* Keep a reserve for the ceilings measured after the sweep. */
		double reserve = o->ngames * CEILING_S * 4;
		if (i > 0 && now_s() + measure + OVERHEAD_S + WARM_S + reserve > deadline) {
			n = i;
			break;
		}

		az_bench_progress(&o->common, "pipeline: %s W=%u G=%u K=%u, %.1fs\n",
				  gc->g->name, cf[i].W, cf[i].G, gc->cfg.leaves, measure);
		rc = run_config(gc, o, dir, cf[i].W, cf[i].G, measure, &cf[i].res);
		if (rc < 0)
			break;
		cf[i].done = 1;
	}
	if (n < ntotal) {
		double all = o->ngames * (CEILING_S * 4 + 1.0) +
			     ntotal * (OVERHEAD_S + WARM_S + MIN_MEASURE_S) + o->ngames * MIN_MEASURE_S;
		snprintf(skipped, sizeof(skipped), " %d of %d configurations; --seconds %.0f or "
			 "more measures them all", ntotal - n, ntotal, all + 1);
		az_bench_progress(&o->common, "pipeline: --seconds %.0f measured %d of %d "
				  "configurations (azrun's defaults first); skipped:%s\n",
				  o->common.seconds, n, ntotal, skipped);
	}
	for (int gi = 0; gi < o->ngames && rc == 0; gi++) {
		const struct serial_result *s = &sr[gi];
		struct pipe_result r = { .seconds = s->seconds,
					 .evals_per_s = serial_eps[gi],
					 .sims_per_s = (double)s->sims / s->seconds,
					 .games_per_min = (double)s->games / s->seconds * 60.0,
					 .mean_batch = 1.0 };
		const char *be = strncmp(s->why, "cuda", 4) == 0 ? "cuda" : "cpu";
		double sc = 0;

		rc = game_ceilings(&gcs[gi], gi, cf, n, o->backend, s, &sc);
		if (rc < 0 && !interrupted)
			fprintf(stderr, "azbench pipeline: ceiling: %s\n", strerror(-rc));
		add_row(t, &gcs[gi], "serial", be, 1, 1, 1, &r, serial_eps[gi], sc);
		for (int i = 0; i < n; i++)
			if (cf[i].game == gi && cf[i].done)
				add_row(t, &gcs[gi], "pipeline", be, cf[i].W, cf[i].G,
					gcs[gi].cfg.leaves, &cf[i].res, serial_eps[gi],
					cf[i].ceiling);
	}
	if (rc == 0 && !interrupted)
		recommend(o, gcs, cf, n, serial_eps, skipped, rec);
	return interrupted ? -EINTR : rc;
}

int az_bench_pipeline(int argc, char **argv)
{
	struct pipe_opts o;
	struct az_bench_table t = { 0 };
	static struct rec rec;
	struct sigaction sa, old_int, old_term;
	char dir[PATH_LEN];
	const char *tmp = getenv("TMPDIR");
	int rc = parse(&o, argc, argv);

	if (rc)
		return rc == 1 ? 0 : 2;
	snprintf(dir, sizeof(dir), "%s/azbench-pipeline-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "azbench pipeline: cannot create %s: %s\n", dir, strerror(errno));
		return 1;
	}
	openblas_set_num_threads(1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	rc = sweep(&o, dir, &t, &rec);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	remove_dir(dir);
	if (rc == -EINTR) {
		fprintf(stderr, "azbench pipeline: interrupted\n");
		az_bench_table_free(&t);
		return 130;
	}
	struct az_bench_plot_spec ps = {
		.title = "self-play pipeline: evals/s vs workers",
		.xkey = "workers",
		.ykey = "evals_per_s",
		.series = { "game", "G", NULL },
		.logx = 1,
		.keep = keep_pipeline,
	};
	int erc = t.n ? az_bench_emit(&t, &o.common, &ps) : 0;
	if (rc == 0)
		az_bench_recommend(&o.common, rec.text, &rec.row);
	az_bench_table_free(&t);
	return rc < 0 ? 1 : erc;
}
