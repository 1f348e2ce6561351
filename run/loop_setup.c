/* SPDX-License-Identifier: MIT */
/* The iteration loop's setup (run/loop.h): checking a run directory before resuming, the first
 * models of a new run or repairs on resume, starting and stopping the pipeline. */
#include "run/loop.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "net/checkpoint.h"
#include "run/loop_impl.h"
#include "run/rundir.h"
#include "run/tbevents.h"

/* ---- setup ---- */

/* The first damage az_rundir_verify reports, for a one-line refusal. */
struct first_damage {
	char *err;
	size_t errlen;
	long n;
};

static void keep_first_damage(void *ctx, int damaged, const char *msg)
{
	struct first_damage *f = ctx;
	if (damaged && f->n++ == 0)
		snprintf(f->err, f->errlen, "%s", msg);
}

int az_run_check_resume(struct az_run_loop *r, char *err, size_t errlen)
{
	char first[768];
	struct first_damage f = {first, sizeof(first), 0};
	struct az_rundir_check *t = &r->check;
	*t = (struct az_rundir_check){.report = keep_first_damage, .ctx = &f,
				      .net = r->p.net, .hidden = r->p.hidden,
				      .blocks = r->p.blocks};
	az_rundir_verify(r->p.out, r->p.g, t);
	if (t->problems) {
		snprintf(err, errlen, "cannot resume: %s; nothing was changed", first);
		return -EINVAL;
	}
	r->completed = t->completed > 0 ? (uint32_t)t->completed : 0;
	r->best_iteration = t->completed >= 0 ? t->best_iteration : 0;
	return 0;
}

static void log_repair(void *ctx, const char *msg)
{
	(void)ctx;
	az_log("run: %s", msg);
}

int az_run_prepare_models(struct az_run_loop *r, int resume)
{
	char err[512];
	const struct az_game *g = r->p.g;
	az_rundir_path(r->best, sizeof(r->best), r->p.out, AZ_RUNDIR_BEST);
	if (resume && r->check.completed >= 0) {
		/* az_run_check_resume() found no damage: roll back or complete what lies beyond
		 * the last committed iteration, then go on from it. */
		int rc = az_rundir_repair(r->p.out, &r->check, log_repair, NULL, err, sizeof(err));
		if (rc < 0) {
			az_log("run: resume: %s", err);
			return rc;
		}
		if (r->check.metrics_lines > r->check.completed &&
		    az_tb_write_run(r->p.out, err, sizeof(err)) < 0) /* its view of the lines */
			az_log("run: warning: TensorBoard events not rewritten: %s", err);
		az_rundir_checkpoint_path(r->latest, sizeof(r->latest), r->p.out, r->completed);
		az_info("run: resuming %s after iteration %u (best from iteration %u)", r->p.out,
			r->completed, r->best_iteration);
		return 0;
	}
	if (resume) {
		az_log("run: resume: %s has no state.json and no completed iteration; starting "
		       "the run over", r->p.out);
		az_rundir_drop_replay_after(r->p.out, 0);
	}
	az_rundir_drop_temps(r->p.out, log_repair, NULL); /* a first start killed in a write */
	struct az_arch a = {.inputs = g->features, .hidden = r->p.hidden, .blocks = r->p.blocks,
			    .actions = g->actions, .kind = r->p.net, .value_head = r->p.value_head};
	if (a.kind == AZ_NET_RESNET) { /* the board the game's encoding lays out */
		a.planes = g->planes;
		a.height = g->height;
		a.width = g->width;
	}
	if (!az_arch_valid(&a)) {
		az_log("run: a %s network does not fit %s's encoding (%u inputs%s)",
		       az_net_kind_name(a.kind), g->name, g->features,
		       g->planes ? "" : ", no board shape");
		return -EINVAL;
	}
	struct az_model *m;
	int rc = az_model_create(&a, &m);
	if (rc < 0) {
		char net[48];

		az_arch_format(&a, net, sizeof(net));
		az_log("run: cannot create the first network, %s (%.1f M parameters, %.1f GB): %s; "
		       "a smaller network needs less memory", net, az_model_param_count(&a) / 1e6,
		       az_model_param_count(&a) * 4.0 / 1e9, strerror(-rc));
		return rc;
	}
	az_model_init_random(m, r->p.seed);
	snprintf(m->game, sizeof(m->game), "%s", g->name);
	snprintf(m->game_options, sizeof(m->game_options), "%s",
		 r->p.game_options ? r->p.game_options : "");
	m->iteration = 0;
	char first[AZ_RUNDIR_PATH_MAX];
	az_rundir_checkpoint_path(first, sizeof(first), r->p.out, 0);
	rc = az_ckpt_save(first, m, err, sizeof(err)); /* the untrained baseline, kept */
	if (rc == 0)
		rc = az_ckpt_save(r->best, m, err, sizeof(err));
	az_model_destroy(m);
	if (rc < 0) {
		az_log("run: %s", err);
		return rc;
	}
	snprintf(r->latest, sizeof(r->latest), "%s", r->best);
	r->completed = 0;
	r->best_iteration = 0;
	return loop_save_state(r);
}

int az_run_start(struct az_run_loop *r)
{
	return az_pipeline_start(&r->pl, &r->p.pipeline, r->best);
}

void az_run_finish(struct az_run_loop *r)
{
	az_pipeline_stop(&r->pl);
	loop_write_progress(r, NULL, r->completed, r->p.iterations, 0.0);
}
