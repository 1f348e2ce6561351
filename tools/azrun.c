/* SPDX-License-Identifier: MIT */
/* azrun: the command line of a training run. Parses the options (tools/config.c), checks the
 * run directory, and hands the run to the iteration loop (run/loop.h), which supervises the
 * inference process, the workers and the trainer (run/supervise.h); `azrun status|report|verify`
 * are read-only subcommands on a run directory. */
#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "base/version.h"
#include "run/loop.h"
#include "tools/config.h"
#include "tools/subcommands.h"
#include "tools/verify.h"

/* The loop's parameters from azrun's configuration. */
static void run_params(const struct az_config *c, const struct az_game *g, const char *options,
		       struct az_run_params *p)
{
	*p = (struct az_run_params){
		.out = c->out, .g = g, .iterations = c->iterations, .workers = c->workers,
		.games_per_iter = c->games_per_iter, .arena_games = c->arena_games,
		.arena_threshold = c->arena_threshold, .window = c->window, .hidden = c->hidden,
		.blocks = c->blocks, .seed = c->seed, .game_options = options, .quiet = c->quiet};
	az_config_worker_params(c, &p->worker);
	az_config_train_params(c, &p->train);
	p->pipeline = (struct az_pipeline_params){
		.rings = c->workers, .ring_capacity = c->ring_capacity, .seg_tag = "run",
		.reap_stale = 1, .max_server_restarts = 8,
		.infer = {.backend = c->backend, .features = g->features, .actions = g->actions,
			  .max_batch = c->max_batch, .deadline_us = c->deadline_us, .spin = c->spin,
			  .log_fd = STDERR_FILENO, .quiet = c->quiet}};
}

/* Create (or reopen) the run directory, lock it, save run.json, open the log. */
static int prepare_dir(const struct az_config *c)
{
	char p[AZ_RUNDIR_PATH_MAX], err[1200];
	int rc = az_rundir_create_locked(c->out, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		return -EINVAL;
	}
	if (err[0])
		fprintf(stderr, "azrun: %s\n", err);
	az_rundir_path(p, sizeof(p), c->out, AZ_RUNDIR_CONFIG);
	if (!c->resume && access(p, F_OK) == 0) {
		fprintf(stderr, "azrun: %s already holds a run; continue it with --resume --out %s, "
			"or choose a new --out\n", c->out, c->out);
		return -EINVAL;
	}
	rc = az_config_save(c, p, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		return rc;
	}
	az_rundir_path(p, sizeof(p), c->out, AZ_RUNDIR_LOG);
	az_log_open(p);
	return 0;
}

int main(int argc, char **argv)
{
	static struct az_config cfg;
	static struct az_run_loop r; /* static: the forked children read it */
	const struct az_game *g;
	char err[1024], options[256];
	if (az_version_option(argc, argv, "azrun"))
		return 0;
	if (argc >= 2 && strcmp(argv[1], "verify") == 0)
		return az_verify_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "status") == 0)
		return az_status_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "report") == 0)
		return az_report_main(argc - 1, argv + 1);
	int rc = az_config_parse(&cfg, argc, argv, err, sizeof(err));
	if (rc == 1) {
		az_config_usage("azrun");
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		return 2;
	}
	if (cfg.backend == AZ_BACKEND_CUDA && !az_cuda_available()) {
		fprintf(stderr, "azrun: --backend cuda: no CUDA device visible (no device or driver, "
			"or built without CUDA); use --backend auto or cpu\n");
		return 2;
	}
	openblas_set_num_threads(1); /* one BLAS thread per process: processes are the parallelism */
	az_log_set_quiet(cfg.quiet);
	if (az_config_game(&cfg, &g, err, sizeof(err)) < 0) {
		fprintf(stderr, "azrun: %s\n", err);
		return 2;
	}
	az_config_game_options(&cfg, options, sizeof(options));
	run_params(&cfg, g, options, &r.p);
	az_sv_install_signals();
	if (cfg.resume) {
		rc = az_run_check_resume(&r, err, sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "azrun: %s\n", err);
			return 2;
		}
	}
	if (cfg.resume && r.completed >= cfg.iterations) {
		fprintf(stderr, "azrun: %s has completed %u of %u iteration%s; nothing to do (raise "
			"--iterations to continue)\n", cfg.out, r.completed, cfg.iterations,
			az_plural(cfg.iterations));
		return 0;
	}
	rc = prepare_dir(&cfg);
	if (rc < 0)
		return rc == -EINVAL ? 2 : 1;
	rc = az_run_prepare_models(&r, cfg.resume);
	if (rc == 0 && r.completed >= cfg.iterations) {
		az_info("azrun: %s has completed %u of %u iteration%s; nothing to do (raise "
		       "--iterations to continue)", cfg.out, r.completed, cfg.iterations,
		       az_plural(cfg.iterations));
		return 0;
	}
	if (rc == 0)
		rc = az_run_start(&r);
	if (rc == 0)
		az_info("azrun: %s, %u worker%s x %u game%s, %u sim%s, net %ux%u, %u iteration%s -> %s",
		       g->name, cfg.workers, az_plural(cfg.workers), cfg.games_per_worker,
		       az_plural(cfg.games_per_worker), cfg.sims, az_plural(cfg.sims), cfg.hidden,
		       cfg.blocks, cfg.iterations, az_plural(cfg.iterations), cfg.out);
	double t0 = az_now();
	if (rc == 0)
		rc = az_run_iterate(&r);
	az_run_finish(&r);
	if (rc == -EINTR) {
		az_log("azrun: interrupted; %u iteration%s complete, continue with --resume "
		       "--out %s", r.completed, r.completed == 1 ? " is" : "s are", cfg.out);
		return 130;
	}
	if (rc < 0) {
		az_log("azrun: stopped after %u completed iteration%s: %s; what is complete is "
		       "intact and --resume --out %s continues", r.completed, az_plural(r.completed),
		       rc == -ECHILD ? "a process failed (see above)" : strerror(-rc), cfg.out);
		return 1;
	}
	char took[32];
	az_format_duration(az_now() - t0, took, sizeof(took));
	if (r.first > 1) /* resumed: this azrun ran iterations first..completed */
		az_info("azrun: done, %u iteration%s (%u-%u) in %s after resuming, %u in all; best "
			"network: %s (iteration %u)", r.completed - r.first + 1,
			r.completed == r.first ? "" : "s", r.first, r.completed, took, r.completed,
			r.best, r.best_iteration);
	else
		az_info("azrun: done, %u iteration%s in %s; best network: %s (iteration %u)",
			r.completed, r.completed == 1 ? "" : "s", took, r.best, r.best_iteration);
	return 0;
}
