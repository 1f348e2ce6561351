/* SPDX-License-Identifier: MIT */
/* The trainer process of one iteration: load the replay window, continue from the latest
 * network, take minibatch steps with random symmetry augmentation, write the candidate. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "net/checkpoint.h"
#include "base/nvtx.h"
#include "base/util.h"
#include "base/rng.h"
#include "run/roles.h"
#include "train/replay.h"
#include "train/train_backend.h"

/* Copy record r of the window into row i of the minibatch, transformed by a random symmetry. */
static void sample_row(const struct az_game *g, const struct az_replay_buf *b, size_t r,
		       uint32_t i, struct az_rng *rng, float *x, float *pi, float *z)
{
	const float *rx = b->x + r * b->features, *rp = b->pi + r * b->actions;
	int k = (int)az_rng_below(rng, g->symmetries);
	g->symmetry(k, rx, x + (size_t)i * b->features, rp, pi + (size_t)i * b->actions);
	z[i] = b->z[r];
}

/* One heartbeat for azrun's watchdog (run/roles.h). */
static void beat(const struct az_train_job *job)
{
	if (job->progress) /* Relaxed: liveness only (run/roles.h) */
		atomic_fetch_add_explicit(&job->progress->beat, 1, memory_order_relaxed);
}

static long load_window(const struct az_train_job *job, struct az_replay_buf *buf,
			struct az_train_report *rep, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < job->n_replay; i++) {
		size_t dropped = 0;
		/* Never truncate here: azrun already cut the tails of dead workers' files, so
		 * anything dropped now is damage to keep for inspection (azrun verify). */
		long n = az_replay_load_file(job->replay_paths[i], buf, 0, &dropped, err, errlen);
		if (n < 0)
			return n;
		beat(job);
		if (dropped) { /* in azrun.log too; azrun ends non-zero (run/loop.c) */
			rep->damaged_files++;
			az_log("trainer: warning: %s: damaged: %zu bytes ignored (the games of "
			       "records that fail their checksums, or a torn tail), %ld records "
			       "loaded (the run names the damage when it ends)",
			       job->replay_paths[i], dropped, n);
		}
	}
	return (long)buf->count;
}

int az_train_run(const struct az_train_job *job, struct az_train_report *rep, char *err,
		 size_t errlen)
{
	const struct az_trainer_proc_params *cfg = job->tp;
	const struct az_game *g = az_game_find(cfg->game);
	struct az_replay_buf buf;
	struct az_model *m = NULL;
	struct az_train_backend *tb = NULL;
	float *x = NULL, *pi = NULL, *z = NULL;
	int rc;
	memset(rep, 0, sizeof(*rep));
	az_fp_flush_denormals(); /* weights decayed to denormals slowed every step 2.5x */
	az_replay_buf_init(&buf, g->features, g->actions);
	long count = load_window(job, &buf, rep, err, errlen);
	if (count <= 0) {
		rc = count < 0 ? (int)count : -EINVAL;
		if (count == 0)
			snprintf(err, errlen, "trainer: the replay window is empty");
		goto out;
	}
	rc = az_ckpt_load(job->init_path, &m, err, errlen);
	if (rc < 0)
		goto out;
	beat(job);
	struct az_train_params tp;
	az_train_params_default(&tp);
	tp.lr = job->lr > 0 ? job->lr : cfg->lr;
	tp.l2 = cfg->l2;
	uint32_t B = cfg->train_batch;
	tp.threads = cfg->train_threads;
	/* AZ_BACKEND_AUTO trains on the CPU: the GPU trainer runs only for an explicit --backend
	 * cuda (train/train_backend.h). */
	char why[400];
	rc = az_train_backend_create(cfg->backend, m, &tp, B, &tb, why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "trainer: cannot create the training backend: %s (%s)", why,
			 strerror(-rc));
		goto out;
	}
	beat(job);
	x = malloc(sizeof(float) * B * g->features);
	pi = malloc(sizeof(float) * B * g->actions);
	z = malloc(sizeof(float) * B);
	if (!x || !pi || !z) {
		rc = -ENOMEM;
		goto out;
	}
	double steps_f = ceil(cfg->train_epochs * (double)count / B);
	uint32_t steps = steps_f > cfg->train_steps_max ? cfg->train_steps_max : (uint32_t)steps_f;
	if (steps < 1)
		steps = 1;
	if (job->progress) /* Relaxed: display only (run/roles.h) */
		atomic_store_explicit(&job->progress->total, steps, memory_order_relaxed);
	struct az_rng rng;
	az_rng_seed(&rng, cfg->seed * 31 + job->iteration);
	/* Report the mean loss over the last quarter of the steps: the state the candidate ends in,
	 * smoothed over minibatch noise. */
	uint32_t tail = steps - steps / 4;
	double pl = 0, vl = 0;
	uint32_t nl = 0;
	for (uint32_t s = 0; s < steps; s++) {
		AZ_NVTX_PUSH("sample");
		for (uint32_t i = 0; i < B; i++)
			sample_row(g, &buf, az_rng_below(&rng, (uint32_t)count), i, &rng, x, pi, z);
		AZ_NVTX_POP();
		struct az_loss loss;
		/* The GPU trainer opens its own forward/backward/step ranges inside this one. */
		AZ_NVTX_PUSH("train_step");
		rc = az_train_backend_step(tb, B, x, pi, z, &loss);
		AZ_NVTX_POP();
		if (rc < 0)
			goto out;
		if (job->progress) /* Relaxed: display only (run/roles.h) */
			atomic_store_explicit(&job->progress->done, s + 1, memory_order_relaxed);
		beat(job);
		if (s >= tail || steps < 4) {
			pl += loss.policy;
			vl += loss.value;
			nl++;
		}
	}
	rep->policy_loss = nl ? pl / nl : 0;
	rep->value_loss = nl ? vl / nl : 0;
	rep->samples = (uint64_t)count;
	rep->steps = steps;
	rep->lr = tp.lr;
	rep->threads = cfg->backend == AZ_BACKEND_CUDA ? 1 : tp.threads;
	m->iteration = job->iteration;
	rc = az_train_backend_sync(tb); /* a GPU trainer holds the trained weights */
	if (rc == 0)
		rc = az_ckpt_save(job->out_path, m, err, errlen);
out:
	free(x);
	free(pi);
	free(z);
	az_train_backend_destroy(tb);
	if (m)
		az_model_destroy(m);
	az_replay_buf_free(&buf);
	rep->error = rc;
	return rc;
}
