/* SPDX-License-Identifier: MIT */
/* The inference server loop: collect a batch from all rings, gather inputs, group rows by model,
 * run the backend, scatter masked-softmax policies and values back into the slots, serve. */
#include "gpu/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/checkpoint.h"
#include "shm/az_assert.h"
#include "shm/control.h"
#include "shm/slot.h"

struct server {
	const struct az_infer_config *cfg;
	struct az_seg *seg;
	struct az_ctl_shm *ctl;
	struct az_ring *rings;
	uint32_t nrings;
	struct az_slot_layout lay;
	struct az_backend *be;
	struct az_arch arch;
	uint32_t loaded_gen[AZ_MODEL_SLOTS];
	int loaded[AZ_MODEL_SLOTS];
	struct az_run *runs;
	void **slots;  /* [max_batch] slot pointers of the batch, in run order */
	uint32_t *rows; /* [max_batch] slot indices of one model's rows */
	float *x, *logits, *value;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void logf_fd(int fd, const char *fmt, const char *a, const char *b)
{
	if (fd < 0)
		return;
	dprintf(fd, fmt, a, b);
}

static int same_arch(const struct az_arch *a, const struct az_arch *b)
{
	return a->inputs == b->inputs && a->hidden == b->hidden && a->blocks == b->blocks &&
	       a->actions == b->actions;
}

/* Load model slot s from the path azrun published. Creates the backend on first use (the
 * architecture is only known from the first checkpoint). */
static int load_model(struct server *sv, uint32_t s, uint32_t gen)
{
	char err[512], why[256];
	struct az_model *m = NULL;
	int rc = az_ckpt_load(sv->ctl->model_path[s], &m, err, sizeof(err));
	if (rc < 0) {
		logf_fd(sv->cfg->log_fd, "inference: %s%s\n", err, "");
		return rc;
	}
	if (m->arch.inputs != sv->lay.features || m->arch.actions != sv->lay.actions) {
		logf_fd(sv->cfg->log_fd, "inference: %s: %s\n", sv->ctl->model_path[s],
			"network input/action sizes do not match the game");
		rc = -EINVAL;
		goto out;
	}
	if (sv->be && !same_arch(&sv->arch, &m->arch)) {
		az_backend_destroy(sv->be);
		sv->be = NULL;
		memset(sv->loaded, 0, sizeof(sv->loaded));
	}
	if (!sv->be) {
		rc = az_backend_create(sv->cfg->backend, &m->arch, sv->cfg->max_batch, &sv->be, why,
				       sizeof(why));
		logf_fd(sv->cfg->log_fd, "inference: backend %s%s\n", why, "");
		if (rc < 0)
			goto out;
		sv->arch = m->arch;
	}
	rc = az_backend_load(sv->be, s, m);
	if (rc == 0) {
		sv->loaded[s] = 1;
		sv->loaded_gen[s] = gen;
	}
out:
	az_model_destroy(m);
	return rc;
}

/* Reload any model slot whose generation azrun bumped. */
static int poll_models(struct server *sv)
{
	for (uint32_t s = 0; s < AZ_MODEL_SLOTS; s++) {
		/* C1': pairs with C1 in azrun (model_path written before model_gen). */
		uint32_t gen = atomic_load_explicit(&sv->ctl->model_gen[s], memory_order_acquire);
		if (gen == sv->loaded_gen[s])
			continue;
		int rc = load_model(sv, s, gen);
		if (rc < 0)
			sv->loaded_gen[s] = gen; /* do not retry a broken file in a loop */
		/* Relaxed: model_err is published by the release store of model_ack below. */
		atomic_store_explicit(&sv->ctl->model_err[s], rc, memory_order_relaxed);
		/* C2: pairs with C2' in azrun's wait for the acknowledgement. */
		atomic_store_explicit(&sv->ctl->model_ack[s], gen, memory_order_release);
	}
	return 0;
}

/* Evaluate the rows of model `s` among the n batch slots; unknown models get status 1. */
static void eval_model(struct server *sv, uint32_t s, uint32_t n)
{
	const struct az_slot_layout *l = &sv->lay;
	uint32_t m = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct az_slot_hdr *h = az_slot_hdr(sv->slots[i]);
		if (h->model != s)
			continue;
		memcpy(sv->x + (size_t)m * l->features, az_slot_features(sv->slots[i], l),
		       sizeof(float) * l->features);
		sv->rows[m++] = i;
	}
	if (m == 0)
		return;
	int rc = (sv->be && sv->loaded[s])
			 ? az_backend_forward(sv->be, s, m, sv->x, sv->logits, sv->value)
			 : -EINVAL;
	for (uint32_t k = 0; k < m; k++) {
		void *slot = sv->slots[sv->rows[k]];
		struct az_slot_hdr *h = az_slot_hdr(slot);
		if (rc < 0) {
			h->status = 1;
			h->value = 0.0f;
			continue;
		}
		az_masked_softmax(sv->logits + (size_t)k * l->actions, az_slot_legal(slot, l),
				  l->actions, az_slot_policy(slot, l));
		h->value = sv->value[k];
		h->status = 0;
	}
}

/* One collected batch: gather slot pointers, evaluate per model, serve every ring. */
static void serve_batch(struct server *sv, uint32_t nruns, uint32_t total)
{
	uint32_t n = 0;
	for (uint32_t r = 0; r < nruns; r++)
		for (uint32_t k = 0; k < sv->runs[r].count; k++)
			sv->slots[n++] = az_ring_slot(&sv->rings[sv->runs[r].ring],
						      sv->runs[r].first + k);
	AZ_ASSERT(n == total);
	uint64_t t0 = now_ns();
	for (uint32_t i = 0; i < n; i++) {
		struct az_slot_hdr *h = az_slot_hdr(sv->slots[i]);
		if (h->model >= AZ_MODEL_SLOTS) { /* untrusted peer input */
			h->status = 1;
			h->value = 0.0f;
		}
	}
	for (uint32_t s = 0; s < AZ_MODEL_SLOTS; s++)
		eval_model(sv, s, n);
	uint64_t t1 = now_ns();
	/* A ring's runs are adjacent and in sequence order, so serving up to the end of each run
	 * in order releases exactly the slots written above. */
	for (uint32_t r = 0; r < nruns; r++)
		az_ring_serve(&sv->rings[sv->runs[r].ring], sv->runs[r].first + sv->runs[r].count);
	/* Relaxed: statistics only. */
	atomic_fetch_add_explicit(&sv->ctl->evals, n, memory_order_relaxed);
	atomic_fetch_add_explicit(&sv->ctl->batches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&sv->ctl->forward_ns, t1 - t0, memory_order_relaxed);
}

static int server_init(struct server *sv, struct az_seg *seg, const struct az_infer_config *cfg)
{
	memset(sv, 0, sizeof(*sv));
	sv->cfg = cfg;
	sv->seg = seg;
	sv->ctl = az_seg_ctl(seg);
	sv->nrings = seg->hdr->nrings;
	az_slot_layout_init(&sv->lay, cfg->features, cfg->actions);
	if (sv->lay.bytes > seg->hdr->slot_bytes)
		return -EPROTO;
	size_t B = cfg->max_batch;
	sv->rings = calloc(sv->nrings, sizeof(*sv->rings));
	sv->runs = calloc(2 * (size_t)sv->nrings, sizeof(*sv->runs));
	sv->slots = calloc(B, sizeof(*sv->slots));
	sv->rows = calloc(B, sizeof(*sv->rows));
	sv->x = malloc(B * cfg->features * sizeof(float));
	sv->logits = malloc(B * cfg->actions * sizeof(float));
	sv->value = malloc(B * sizeof(float));
	if (!sv->rings || !sv->runs || !sv->slots || !sv->rows || !sv->x || !sv->logits ||
	    !sv->value)
		return -ENOMEM;
	for (uint32_t i = 0; i < sv->nrings; i++) {
		int rc = az_seg_ring(seg, i, &sv->rings[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void server_fini(struct server *sv)
{
	if (sv->be)
		az_backend_destroy(sv->be);
	free(sv->rings);
	free(sv->runs);
	free(sv->slots);
	free(sv->rows);
	free(sv->x);
	free(sv->logits);
	free(sv->value);
}

int az_infer_serve(struct az_seg *seg, const struct az_infer_config *cfg)
{
	struct server sv;
	int rc = server_init(&sv, seg, cfg);
	if (rc < 0)
		goto out;
	/* Relaxed: informational. */
	atomic_store_explicit(&sv.ctl->server_pid, (uint32_t)getpid(), memory_order_relaxed);
	struct az_batch_params bp = {
		.max_batch = cfg->max_batch,
		.deadline_us = cfg->deadline_us,
		.spin = cfg->spin,
		.idle_timeout_us = 20000, /* wake up to notice model changes and stop requests */
	};
	/* Acquire: pairs with azrun's release store of stop (nothing else is read after it). */
	while (!atomic_load_explicit(&sv.ctl->stop, memory_order_acquire)) {
		poll_models(&sv);
		uint32_t total = 0;
		int nruns = az_batch_collect(sv.rings, sv.nrings, &bp, sv.runs, 2 * sv.nrings,
					     &total);
		if (nruns > 0)
			serve_batch(&sv, (uint32_t)nruns, total);
	}
out:
	server_fini(&sv);
	return rc;
}
