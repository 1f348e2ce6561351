/* SPDX-License-Identifier: MIT */
/* azrun: the command line of a training run. Parses the options (tools/config.c), checks the
 * run directory, and hands the run to the iteration loop (run/loop.h), which supervises the
 * inference process, the workers and the trainer (run/supervise.h); `azrun status|report|verify`
 * are read-only subcommands on a run directory. Built twice: azrun links no MPI and hands
 * `--mpi` to azrun-mpi (AZ_MPI_BUILD, run/mpi.h) next to it, so only MPI runs need libmpi. */
#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "base/version.h"
#include "gpu/cpu_gemm.h"
#include "run/loop.h"
#include "tools/config.h"
#include "tools/run_bench.h"
#include "tools/subcommands.h"
#include "tools/repair.h"
#include "tools/verify.h"
#ifdef AZ_MPI_BUILD
#include "run/mpi.h"
#endif

/* The loop's parameters from azrun's configuration. */
/* The inference process's lines go to the run log (azrun.log, and stderr unless --quiet) with
 * the time, as azrun's own. */
static void infer_log_line(int error, const char *line)
{
	if (error)
		az_log("%s", line);
	else
		az_info("%s", line);
}

static void run_params(const struct az_config *c, const struct az_game *g, const char *options,
		       struct az_run_params *p)
{
	*p = (struct az_run_params){
		.out = c->out, .g = g, .iterations = c->iterations, .workers = c->workers,
		.games_per_iter = c->games_per_iter, .arena_games = c->arena_games,
		.arena_threshold = c->arena_threshold, .window = c->window, .net = c->net,
		.hidden = c->hidden, .blocks = c->blocks, .seed = c->seed, .game_options = options,
		.quiet = c->quiet};
	if (az_value_head_parse(c->value_head, &p->value_head) < 0)
		p->value_head = AZ_VALUE_TANH; /* the option table checked the word */
	if (c->time_limit[0] && az_parse_duration(c->time_limit, &p->time_limit_s) < 0)
		p->time_limit_s = 0; /* checked before: az_config_check() */
	az_config_worker_params(c, &p->worker);
	az_config_train_params(c, &p->train);
	az_run_bench_params(c, &p->bench);
	az_config_pipeline_params(c, g, "run", STDERR_FILENO, &p->pipeline);
	p->pipeline.reap_stale = 1;
	p->pipeline.max_server_restarts = 8;
	p->pipeline.restart_window_s = 3600;
	p->pipeline.infer.log_line = infer_log_line;
	/* Hidden, for tests: the watchdog's floor in seconds (run/watchdog.h), so that a stop of a
	 * few seconds is a stall; unset or not a positive number: the default. */
	const char *wd = getenv("AZ_WATCHDOG_FLOOR_S");
	if (wd)
		p->pipeline.watchdog_floor_s = strtod(wd, NULL);
}

/* 1 when name is one of a run directory's fixed names (run/rundir.h) or a temporary file of one
 * ("run.json.tmp.PID"): what a fresh run stopped before its run.json can leave. */
static int run_entry(const char *name)
{
	for (int f = 0; f < AZ_RUNDIR_NFILES; f++) {
		const char *r = az_rundir_name((enum az_rundir_file)f);
		size_t n = strlen(r);

		if (strncmp(name, r, n) == 0 && (!name[n] || strncmp(name + n, ".tmp.", 5) == 0))
			return 1;
	}
	return 0;
}

/* The first entry of directory dir other than ".", ".." and run_entry() names into name, or ""
 * when there is none or dir cannot be read. */
static void foreign_entry(const char *dir, char *name, size_t n)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	name[0] = '\0';
	while (d && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !run_entry(e->d_name)) {
			snprintf(name, n, "%s", e->d_name);
			break;
		}
	if (d)
		closedir(d);
}

/* A fresh run into a directory that already holds one, or that holds anything else (a mistyped
 * --out such as "." or a home directory), is refused before anything is touched (the lock file
 * included). Returns 0 or -EINVAL after its message. */
static int refuse_taken(const struct az_config *c)
{
	char p[AZ_RUNDIR_PATH_MAX], other[256];
	long pid;

	az_rundir_path(p, sizeof(p), c->out, AZ_RUNDIR_CONFIG);
	if (c->resume)
		return 0;
	if (access(p, F_OK) != 0) {
		foreign_entry(c->out, other, sizeof(other));
		if (!other[0])
			return 0; /* new, empty, or only a lock file */
		fprintf(stderr, "azrun: --out %s already holds files that are not a run's ('%s'; no "
			"run.json); choose a new or an empty directory\n", c->out, other);
		return -EINVAL;
	}
	if (az_rundir_lock_holder(c->out, &pid) == 1)
		fprintf(stderr, "azrun: %s is in use by another azrun (pid %ld); wait for it or stop "
			"it first\n", c->out, pid);
	else
		fprintf(stderr, "azrun: %s already holds a run; continue it with --resume --out %s, "
			"or choose a new --out\n", c->out, c->out);
	return -EINVAL;
}

/* Create (or reopen) the run directory, lock it, save run.json, open the log. A refusal
 * removes the lock file when it made it (!had_lock). */
static int prepare_dir(const struct az_config *c, int had_lock)
{
	char p[AZ_RUNDIR_PATH_MAX], err[1200];
	int rc = refuse_taken(c);
	if (rc < 0)
		return rc;
	rc = az_rundir_create_locked(c->out, err, sizeof(err));
	if (rc < 0) { /* -EBUSY: another azrun has it; otherwise --out cannot be made */
		fprintf(stderr, "azrun: %s%s\n", rc == -EBUSY ? "" : "--out: ", err);
		return -EINVAL;
	}
	if (err[0])
		fprintf(stderr, "azrun: %s\n", err);
	az_rundir_path(p, sizeof(p), c->out, AZ_RUNDIR_CONFIG);
	rc = az_config_save(c, p, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		if (!had_lock) {
			az_rundir_path(p, sizeof(p), c->out, AZ_RUNDIR_LOCK);
			unlink(p);
		}
		return rc;
	}
	az_rundir_path(p, sizeof(p), c->out, AZ_RUNDIR_LOG);
	az_log_open(p);
	return 0;
}

/* How a run ended, in the log: a signal, an error, damage met on the way, or done (with what
 * this azrun ran in `seconds`). rc: az_run_iterate()'s. Returns azrun's exit status. */
static int say_how_it_ended(const struct az_config *c, const struct az_run_loop *r, int rc,
			    double seconds)
{
	if (az_sv_interrupted()) {
		int sig = az_sv_interrupted();
		az_log("azrun: stopped by %s; %u iteration%s complete, continue with --resume "
		       "--out %s", strsignal(sig), r->completed, r->completed == 1 ? " is" : "s are",
		       c->out);
		return 128 + sig;
	}
	if (rc < 0) {
		const char *why = rc == -ECHILD ? "a process failed (see above)"
				  : rc == -EDOM ? "training diverged (see above; lower --lr)"
						: strerror(-rc);

		if (r->completed == 0 && rc == -ENOMEM) /* the settings themselves do not fit */
			az_log("azrun: stopped before the first iteration: %s (see above); with "
			       "smaller settings, start again in another --out (or remove %s: it "
			       "holds no completed iteration)", why, c->out);
		else
			az_log("azrun: stopped after %u completed iteration%s: %s; what is complete "
			       "is intact and --resume --out %s continues", r->completed,
			       az_plural(r->completed), why, c->out);
		if (r->damage_seen)
			az_log("azrun: %ld damaged file%s met on the way (see above): azrun verify "
			       "--out %s names them, azrun repair --out %s sets them aside",
			       r->damage_seen, az_plural(r->damage_seen), c->out, c->out);
		return 1;
	}
	if (r->damage_seen) {
		az_log("azrun: %u iteration%s complete, but %ld damaged file%s met on the way (see "
		       "the warnings above); azrun verify --out %s names them, azrun repair --out %s "
		       "sets them aside", r->completed, r->completed == 1 ? "" : "s", r->damage_seen,
		       az_plural(r->damage_seen), c->out, c->out);
		return 1;
	}
	if (r->time_limited)
		az_info("azrun: stopped at --time-limit; --resume --out %s --time-limit LONGER "
			"continues", c->out);
	char took[32];
	az_format_duration(seconds, took, sizeof(took));
	if (r->first > 1 && r->completed < r->first) /* resumed, and ran none (a time limit) */
		az_info("azrun: done, no iteration run after resuming, %u in all; best network: %s "
			"(iteration %u)", r->completed, r->best, r->best_iteration);
	else if (r->first > 1) /* resumed: this azrun ran iterations first..completed */
		az_info("azrun: done, %u iteration%s (%u-%u) in %s after resuming, %u in all; best "
			"network: %s (iteration %u)", r->completed - r->first + 1,
			r->completed == r->first ? "" : "s", r->first, r->completed, took, r->completed,
			r->best, r->best_iteration);
	else
		az_info("azrun: done, %u iteration%s in %s; best network: %s (iteration %u)",
			r->completed, r->completed == 1 ? "" : "s", took, r->best, r->best_iteration);
	return 0;
}

/* Before the run directory is touched: resume's check of what is there, whether anything is
 * left to do, and the replay the iterations to come write against the free disk (warn[n] a
 * warning for the log, or ""). Returns -1 to go on, or the exit status (message printed). */
static int check_first(const struct az_config *c, const struct az_game *g,
		       struct az_run_loop *r, char *warn, size_t n)
{
	char err[AZ_ERR_LEN];
	if (c->resume && az_run_check_resume(r, err, sizeof(err)) < 0) {
		long k = r->check.problems;
		fprintf(stderr, "azrun: %s (%ld problem%s: azrun verify --out %s lists %s, azrun "
			"repair --out %s sets aside or rebuilds what it can)\n", err, k,
			az_plural(k), c->out, k == 1 ? "it" : "them", c->out);
		return 2;
	}
	if (c->resume && r->completed >= c->iterations && !r->check.repairs) {
		if (r->completed > c->iterations) /* asked for fewer than it has: nothing undone */
			fprintf(stderr, "azrun: %s has completed %u iterations, more than --iterations "
				"%u; nothing to do (give --iterations above %u to continue)\n",
				c->out, r->completed, c->iterations, r->completed);
		else
			fprintf(stderr, "azrun: %s has completed all %u iteration%s; nothing to do "
				"(raise --iterations to continue)\n", c->out, r->completed,
				az_plural(r->completed));
		return 0;
	}
	if (az_sv_interrupted())
		return 128 + az_sv_interrupted(); /* stopped before anything was written */
	uint32_t left = c->iterations > r->completed ? c->iterations - r->completed : 0;
	if (az_config_check_replay(c, g, left, err, sizeof(err), warn, n) < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		return 2;
	}
	return -1;
}

/* After the configuration: check or prepare the run directory and run the iterations. Returns
 * the exit status. */
static int run(struct az_config *c, const struct az_game *g, struct az_run_loop *r, int mpi)
{
	char warn[512], lock[AZ_RUNDIR_PATH_MAX];
	int rc = check_first(c, g, r, warn, sizeof(warn));
	if (rc >= 0)
		return rc;
	az_rundir_path(lock, sizeof(lock), c->out, AZ_RUNDIR_LOCK);
	int had_lock = access(lock, F_OK) == 0;
	rc = prepare_dir(c, had_lock);
	if (rc < 0)
		return rc == -EINVAL ? 2 : 1;
	if (warn[0]) /* in azrun.log too */
		az_log("azrun: %s", warn);
	rc = az_run_prepare_models(r, c->resume);
	if (rc < 0 && !had_lock) /* a run refused here leaves no lock file of its own */
		unlink(lock);
	if (rc == 0 && r->completed >= c->iterations) {
		az_info("azrun: %s has completed %u of %u iteration%s; nothing to do (raise "
		       "--iterations to continue)", c->out, r->completed, c->iterations,
		       az_plural(c->iterations));
		return 0;
	}
#ifdef AZ_MPI_BUILD
	if (rc == 0 && mpi)
		rc = az_mpi_leader_start(r);
#endif
	if (rc == 0)
		rc = az_run_start(r);
	if (rc == 0)
		az_info("azrun: %s, %u worker%s x %u game%s, %u sim%s, net %s:%ux%u, %u iteration%s "
			"-> %s", g->name, c->workers, az_plural(c->workers), c->games_per_worker,
			az_plural(c->games_per_worker), c->sims, az_plural(c->sims),
			az_net_kind_name(c->net), c->hidden, c->blocks, c->iterations,
			az_plural(c->iterations), c->out);
	if (rc == 0 && c->backend != AZ_BACKEND_CUDA) {
		uint32_t T = r->p.train.train_threads;

		az_info("trainer: cpu, %u thread%s, each a share of every minibatch of %u (%s)", T,
			az_plural(T), c->train_batch,
			c->train_threads ? "--train-threads" : "one per CPU, at most B/16");
	}
	double t0 = az_now();
	if (rc == 0)
		rc = az_run_iterate(r);
	az_run_finish(r);
	return say_how_it_ended(c, r, rc, az_now() - t0);
}

/* Parse the command line into c. Returns -1 to go on, or the exit status (message printed). */
static int configure(struct az_config *c, int argc, char **argv)
{
	char err[AZ_ERR_LEN];
	int rc = az_config_parse(c, argc, argv, err, sizeof(err));
	if (rc > 0) {
		if (rc == 1)
			az_config_usage("azrun");
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		return 2;
	}
	if (c->backend == AZ_BACKEND_CUDA && !az_cuda_available()) {
		fprintf(stderr, "azrun: --backend cuda: no CUDA device visible (no device or driver, "
			"or built without CUDA); use --backend auto or cpu\n");
		return 2;
	}
	enum az_cpu_gemm gemm;

	rc = az_cpu_gemm_select(&gemm); /* here, before the run directory is touched */
	if (rc < 0) {
		az_cpu_gemm_error(rc, err, sizeof(err));
		fprintf(stderr, "azrun: %s\n", err);
		return 2;
	}
	return -1;
}

/* The game and the loop's parameters (every process of a run, before anything forks). */
static int setup(const struct az_config *c, const struct az_game **g, char *options, size_t n,
		 struct az_run_params *p)
{
	char err[AZ_ERR_LEN];
	openblas_set_num_threads(1); /* one BLAS thread per process: processes are the parallelism */
	az_log_set_quiet(c->quiet);
	if (az_config_game(c, g, err, sizeof(err)) < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		return 2;
	}
	az_config_game_options(c, options, n);
	run_params(c, *g, options, p);
	az_sv_install_signals();
	return -1;
}

static int has_arg(int argc, char **argv, const char *a)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], a) == 0)
			return 1;
	return 0;
}

#ifdef AZ_MPI_BUILD
/* azrun-mpi --mpi: rank 0 parses (it may need --out's run.json, which only it must see) and
 * hands the configuration to the others; see run/mpi.h. */
static int mpi_main(int argc, char **argv)
{
	static struct az_config cfg;
	static struct az_run_loop r; /* static: the forked children read it */
	const struct az_game *g;
	char options[256];
	int rank, size, st = -1;
	if (az_mpi_init(&argc, &argv, &rank, &size) < 0) {
		fprintf(stderr, "azrun: --mpi: MPI_Init failed (start it with mpirun or srun)\n");
		return 1;
	}
	if (rank == 0) {
		st = configure(&cfg, argc, argv);
		if (st < 0 && cfg.workers > AZ_MPI_MAX_WORKERS) {
			fprintf(stderr, "azrun: --mpi: --workers is at most %d per rank\n",
				AZ_MPI_MAX_WORKERS);
			st = 2;
		}
	}
	if (az_mpi_share_config(&st, &cfg, sizeof(cfg)) < 0)
		return 1;
	if (st < 0)
		st = setup(&cfg, &g, options, sizeof(options), &r.p);
	if (st >= 0) { /* rank 0 said why; a failed setup fails the same way on every rank */
		az_mpi_finalize();
		return st;
	}
	if (rank == 0) {
		az_mpi_leader_attach(&r);
		return az_mpi_leader_stop(&r, run(&cfg, g, &r, 1));
	}
	r.p.quiet = 1;
	/* Distinct games on every rank: its own seed for the workers' streams. */
	r.p.worker.seed = cfg.seed + (uint64_t)rank * 0x9e3779b97f4a7c15ull;
	return az_mpi_follower_run(&r);
}
#else
/* --mpi without MPI linked in: the MPI build of azrun is azrun-mpi next to this binary. */
static int exec_mpi(char **argv)
{
	char self[1024], path[1100];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash)
			*slash = 0;
		snprintf(path, sizeof(path), "%s/azrun-mpi", self);
		execv(path, argv);
	}
	fprintf(stderr, "azrun: --mpi: this azrun was built without MPI (no azrun-mpi next to it); "
		"install Open MPI (tools/install-deps.sh) and rebuild, see docs/cluster.md\n");
	return 2;
}
#endif

int main(int argc, char **argv)
{
	static struct az_config cfg;
	static struct az_run_loop r; /* static: the forked children read it */
	const struct az_game *g;
	char options[256];
	if (az_version_option(argc, argv, "azrun"))
		return 0;
	if (argc >= 2 && strcmp(argv[1], "verify") == 0)
		return az_verify_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "repair") == 0)
		return az_repair_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "status") == 0)
		return az_status_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "report") == 0)
		return az_report_main(argc - 1, argv + 1);
	if (has_arg(argc, argv, "--mpi") && !has_arg(argc, argv, "--help")) {
#ifdef AZ_MPI_BUILD
		return mpi_main(argc, argv);
#else
		return exec_mpi(argv);
#endif
	}
	az_sv_install_signals(); /* before anything else: no window in which a stop is lost */
	az_fault_init();
	int st = configure(&cfg, argc, argv);
	if (st < 0)
		st = setup(&cfg, &g, options, sizeof(options), &r.p);
	return st >= 0 ? st : run(&cfg, g, &r, 0);
}
