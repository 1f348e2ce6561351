/* SPDX-License-Identifier: MIT */
/* `azbench pipeline`'s finite phases: one self-play phase of games_per_iter games and one arena
 * of arena_games games (best against a candidate, two model slots), each as azrun runs it
 * (azrun's defaults: W workers, G games each, the same supervisor), timed from the fork of the
 * workers to the last one reaped, so the tail where games run out counts as in azrun. Each
 * runs under the adaptive batching and under the old fixed-deadline batching (the baseline). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "infer/control.h"
#include "run/roles.h"
#include "run/supervise.h"
#include "tools/bench/pipeline_impl.h"

struct phase_run {
	const struct game_ctx *gc;
	struct az_config cfg;
	struct az_worker_params wp;
	enum az_worker_mode mode;
	struct az_pipeline pl;
	struct az_phase ph;
	const char *dir;
	uint32_t run; /* a fresh replay file name per run */
};

static int phase_worker(struct az_phase *ph, uint32_t i)
{
	struct phase_run *pr = ph->arg;
	char path[PATH_LEN + 64];

	snprintf(path, sizeof(path), "%s/%s-phase%u-%02u.rpl", pr->dir, pr->gc->g->name, pr->run,
		 i);
	int rc = az_worker_run(&pr->wp, &pr->pl.seg, i, pr->mode, 1, path);
	if (rc < 0)
		fprintf(stderr, "azbench pipeline: phase worker %u: %s\n", i, strerror(-rc));
	return rc;
}

int az_pipeline_run_phase(const struct game_ctx *gc, enum az_worker_mode mode, int fixed,
			  int verbose, const char *dir, struct pipe_result *res)
{
	static struct phase_run pr;
	static uint32_t runs;
	const struct az_config *cfg = &gc->cfg;
	struct az_pipeline_counters c;

	memset(&pr, 0, sizeof(pr));
	pr.run = runs++;
	pr.gc = gc;
	pr.cfg = *cfg;
	pr.mode = mode;
	pr.dir = dir;
	az_config_worker_params(&pr.cfg, &pr.wp);
	struct az_pipeline_params pp;

	az_config_pipeline_params(cfg, gc->g, "phase", verbose ? STDERR_FILENO : -1, &pp);
	pp.infer.quiet = 0;
	pp.infer.fixed_deadline = (uint32_t)fixed;
	uint64_t games = mode == AZ_WORKER_ARENA ? cfg->arena_games : cfg->games_per_iter;
	int rc = az_pipeline_start(&pr.pl, &pp, gc->ckpt);
	if (rc == 0 && mode == AZ_WORKER_ARENA)
		rc = az_pipeline_serve_model(&pr.pl, AZ_MODEL_CANDIDATE, gc->ckpt);
	if (rc < 0)
		goto out;
	pr.ph = (struct az_phase){.name = mode == AZ_WORKER_ARENA ? "arena" : "selfplay",
				  .child_name = "worker", .iteration = 1, .n = cfg->workers,
				  .workers = 1, .child = phase_worker, .arg = &pr};
	az_pipeline_reset_phase(&pr.pl, games);
	struct az_pipeline_counters c0;
	az_pipeline_sample(&pr.pl, &c0); /* forward_ns is not reset with the phase */
	double t0 = az_now();
	rc = az_phase_start(&pr.pl, &pr.ph);
	int wrc = az_phase_wait(&pr.pl, &pr.ph);
	double dt = az_now() - t0;
	rc = rc < 0 ? rc : wrc;
	if (rc < 0)
		goto out;
	az_pipeline_sample(&pr.pl, &c);
	rc = c.worker_error;
	*res = (struct pipe_result){
		.seconds = dt,
		.evals_per_s = (double)c.evals / dt,
		.sims_per_s = (double)c.sims / dt,
		.games_per_min = (double)c.games / dt * 60.0,
		.mean_batch = c.batches ? (double)c.evals / (double)c.batches : 0.0,
		.occupancy = c.occ_n ? (double)c.occ_sum / (double)c.occ_n : 0.0,
		.busy = (double)(c.forward_ns - c0.forward_ns) * 1e-9 / dt,
	};
out:
	az_pipeline_stop(&pr.pl);
	return rc;
}
