/* SPDX-License-Identifier: MIT */
/* The inference server loop: collect a batch from all rings, gather inputs, group rows by model,
 * run the backend, scatter masked-softmax policies and values back into the slots, serve.
 *
 * Two paths. Staging (every backend; the only one of the cpu backend): the batch's features are
 * copied into x, the backend's forward() returns logits and values, the softmax is written into
 * the slots here. Zero-copy (a backend with forward_slots, i.e. cuda, once the segment is
 * registered): the server only builds slot offsets; the device gathers from the slots and
 * scatters the results into them. Up to two batches are in flight on two streams: while batch k
 * computes, the server collects the requests that arrived since (beyond those in flight) and
 * submits them as batch k+1, then waits for batch k's event and serves it. A ring's in-flight
 * requests are always the prefix [served, served + taken) of its pending range, and batches are
 * served in submission order, so az_ring_serve() still releases exactly the slots written. */
#include "infer/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/checkpoint.h"
#include "base/az_assert.h"
#include "run/control.h"
#include "base/nvtx.h"
#include "shm/slot.h"

#define PIPES 2 /* batches in flight on the zero-copy path */

/* One batch submitted to the backend's slot path and not yet served. */
struct pipe_batch {
	int busy;
	uint32_t stream;
	int nruns;
	struct az_run *runs; /* [2 * nrings] */
	uint32_t n;
	uint64_t t0;
};

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
	/* zero-copy path: streams > 0 once the backend has it and the segment is registered */
	uint32_t streams;
	struct pipe_batch pipe[PIPES];
	uint32_t cur;      /* the oldest batch in flight (when any is) */
	uint32_t *taken;   /* [nrings] requests of each ring inside in-flight batches */
	uint64_t *offsets; /* [max_batch] slot offsets from the segment base */
	uint8_t *model_of; /* [max_batch] model of each batch row, read once */
	uint32_t rr;       /* round-robin cursor of collect_more() */
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

/* Register the segment with a new backend; the zero-copy path is used when that works. A
 * backend without the path (cpu) registers nothing and keeps the staging path silently. */
static void enable_slot_path(struct server *sv)
{
	char msg[64];
	/* Whole pages: the mapping covers them (mmap rounds up); page-locking works on pages. */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size = (sv->seg->size + page - 1) / page * page;
	int rc = az_backend_register_host(sv->be, sv->seg->base, size);
	sv->streams = 0;
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "%d", rc);
		logf_fd(sv->cfg->log_fd, "inference: zero-copy feed unavailable (register: %s); "
			"%s\n", msg, "using staging copies");
		return;
	}
	uint32_t n = az_backend_slot_streams(sv->be);
	sv->streams = n < PIPES ? n : PIPES;
	if (sv->streams) {
		snprintf(msg, sizeof(msg), "%u stream(s)", sv->streams);
		logf_fd(sv->cfg->quiet ? -1 : sv->cfg->log_fd,
			"inference: zero-copy feed: segment registered, %s%s\n", msg, "");
	}
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
		/* Nothing is in flight here (the slot path drains before polling models); destroy
		 * unregisters the segment before freeing the device state. */
		az_backend_destroy(sv->be);
		sv->be = NULL;
		sv->streams = 0;
		memset(sv->loaded, 0, sizeof(sv->loaded));
	}
	if (!sv->be) {
		rc = az_backend_create(sv->cfg->backend, &m->arch, sv->cfg->max_batch, &sv->be, why,
				       sizeof(why));
		logf_fd(rc < 0 || !sv->cfg->quiet ? sv->cfg->log_fd : -1, "inference: backend %s%s\n",
			why, "");
		if (rc < 0)
			goto out;
		sv->arch = m->arch;
		enable_slot_path(sv);
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

/* 1 when azrun announced a model the server has not loaded yet. */
static int models_changed(struct server *sv)
{
	for (uint32_t s = 0; s < AZ_MODEL_SLOTS; s++)
		/* C1': as in poll_models(), which reloads the slot after this. */
		if (atomic_load_explicit(&sv->ctl->model_gen[s], memory_order_acquire) !=
		    sv->loaded_gen[s])
			return 1;
	return 0;
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
	AZ_NVTX_PUSH("gather");
	for (uint32_t i = 0; i < n; i++) {
		struct az_slot_hdr *h = az_slot_hdr(sv->slots[i]);
		if (h->model != s)
			continue;
		memcpy(sv->x + (size_t)m * l->features, az_slot_features(sv->slots[i], l),
		       sizeof(float) * l->features);
		sv->rows[m++] = i;
	}
	AZ_NVTX_POP();
	if (m == 0)
		return;
	AZ_NVTX_PUSH("forward");
	int rc = (sv->be && sv->loaded[s])
			 ? az_backend_forward(sv->be, s, m, sv->x, sv->logits, sv->value)
			 : -EINVAL;
	AZ_NVTX_POP();
	AZ_NVTX_PUSH("publish");
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
	AZ_NVTX_POP();
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
	AZ_NVTX_PUSH("publish");
	for (uint32_t r = 0; r < nruns; r++)
		az_ring_serve(&sv->rings[sv->runs[r].ring], sv->runs[r].first + sv->runs[r].count);
	AZ_NVTX_POP();
	/* Relaxed: statistics only. */
	atomic_fetch_add_explicit(&sv->ctl->evals, n, memory_order_relaxed);
	atomic_fetch_add_explicit(&sv->ctl->batches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&sv->ctl->forward_ns, t1 - t0, memory_order_relaxed);
}

/* ---- zero-copy path ---- */

/* Submit the batch of pb's runs (n requests): offsets per model, one forward_slots per model on
 * pb's stream. Rows the device will not answer (bad model id, model not loaded) get status 1
 * here, before the batch is served. */
static void submit(struct server *sv, struct pipe_batch *pb)
{
	uint32_t n = 0;
	AZ_NVTX_PUSH("gather");
	for (int r = 0; r < pb->nruns; r++) {
		const struct az_run *run = &pb->runs[r];
		for (uint32_t k = 0; k < run->count; k++) {
			void *slot = az_ring_slot(&sv->rings[run->ring], run->first + k);
			/* Untrusted peer input: read once. */
			uint32_t model = az_slot_hdr(slot)->model;
			sv->slots[n] = slot;
			sv->model_of[n++] = model < AZ_MODEL_SLOTS ? (uint8_t)model : UINT8_MAX;
		}
		sv->taken[run->ring] += run->count;
	}
	AZ_ASSERT(n == pb->n);
	AZ_NVTX_POP();
	pb->busy = 1;
	pb->t0 = now_ns();
	for (uint32_t s = 0; s <= AZ_MODEL_SLOTS; s++) {
		uint32_t m = 0;
		int rc = -EINVAL;
		uint8_t want = s < AZ_MODEL_SLOTS ? (uint8_t)s : UINT8_MAX;
		for (uint32_t i = 0; i < n; i++)
			if (sv->model_of[i] == want)
				sv->offsets[m++] = (uint64_t)((uint8_t *)sv->slots[i] -
							      (uint8_t *)sv->seg->base);
		if (m == 0)
			continue;
		if (s < AZ_MODEL_SLOTS && sv->loaded[s])
			rc = az_backend_forward_slots(sv->be, s, m, sv->offsets, &sv->lay,
						      pb->stream);
		if (rc == 0)
			continue;
		for (uint32_t i = 0; i < n; i++) {
			if (sv->model_of[i] != want)
				continue;
			struct az_slot_hdr *h = az_slot_hdr(sv->slots[i]);
			h->status = 1;
			h->value = 0.0f;
		}
	}
}

/* Wait for pb's batch on the device, then publish it. */
static void finish(struct server *sv, struct pipe_batch *pb)
{
	AZ_NVTX_PUSH("D2H");
	int rc = az_backend_wait_slots(sv->be, pb->stream, 1);
	AZ_NVTX_POP();
	AZ_ASSERT(rc == 1);
	AZ_NVTX_PUSH("publish");
	/* Batches are served in submission order and a ring's runs within one are in sequence
	 * order, so each serve releases exactly this batch's slots of that ring. */
	for (int r = 0; r < pb->nruns; r++) {
		const struct az_run *run = &pb->runs[r];
		az_ring_serve(&sv->rings[run->ring], run->first + run->count);
		sv->taken[run->ring] -= run->count;
	}
	AZ_NVTX_POP();
	/* Relaxed: statistics only. forward_ns is submit-to-completion time per batch. */
	atomic_fetch_add_explicit(&sv->ctl->evals, pb->n, memory_order_relaxed);
	atomic_fetch_add_explicit(&sv->ctl->batches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&sv->ctl->forward_ns, now_ns() - pb->t0, memory_order_relaxed);
	pb->busy = 0;
}

/* Requests of ring i waiting beyond those already in flight. */
static uint32_t beyond(const struct server *sv, uint32_t i)
{
	uint32_t pending = az_ring_pending(&sv->rings[i]);
	return pending > sv->taken[i] ? pending - sv->taken[i] : 0;
}

/* While `busy` computes, take the requests that arrived since into pb's runs: poll until
 * max_batch are waiting, the busy batch completed, or `spin` polls passed. Returns the count. */
static uint32_t collect_more(struct server *sv, struct pipe_batch *pb,
			     const struct pipe_batch *busy)
{
	uint32_t budget = sv->cfg->max_batch, total = 0, taken = 0;
	AZ_NVTX_PUSH("wait");
	for (uint32_t polls = 0;; polls++) {
		total = 0;
		for (uint32_t i = 0; i < sv->nrings && total < budget; i++)
			total += beyond(sv, i);
		if (total >= budget || polls >= sv->cfg->spin ||
		    az_backend_wait_slots(sv->be, busy->stream, 0) == 1)
			break;
	}
	AZ_NVTX_POP();
	pb->nruns = 0;
	for (uint32_t k = 0; k < sv->nrings && taken < budget; k++) {
		uint32_t i = (sv->rr + k) % sv->nrings, n = beyond(sv, i);
		struct az_ring *r = &sv->rings[i];
		if (n == 0)
			continue;
		if (n > budget - taken)
			n = budget - taken;
		/* Relaxed: `served` is written only by this process (az_ring_serve), so the load
		 * returns our own last store. The acquire of `published` in az_ring_pending() (A1)
		 * made the request bytes visible. */
		uint64_t first = atomic_load_explicit(&r->shm->served, memory_order_relaxed) +
				 sv->taken[i];
		uint32_t idx = (uint32_t)(first & r->mask);
		uint32_t part = r->capacity - idx < n ? r->capacity - idx : n;
		/* A run never wraps the slot array: split at the end, as az_batch_collect does. */
		pb->runs[pb->nruns++] = (struct az_run){ .ring = i, .count = part, .first = first };
		if (part < n)
			pb->runs[pb->nruns++] = (struct az_run){
				.ring = i, .count = n - part, .first = first + part };
		taken += n;
		sv->rr = i + 1;
	}
	pb->n = taken;
	return taken;
}

/* Finish every batch in flight, oldest first. */
static void drain(struct server *sv)
{
	for (uint32_t k = 0; k < PIPES; k++) {
		if (sv->pipe[sv->cur].busy)
			finish(sv, &sv->pipe[sv->cur]);
		sv->cur = (sv->cur + 1) % PIPES;
	}
}

/* One round of the zero-copy path: with nothing in flight, block for a batch (deadline and all)
 * and submit it; else submit what arrived meanwhile on the other stream, then publish the
 * oldest batch. Model changes wait until nothing is in flight. */
static void slots_round(struct server *sv, const struct az_batch_params *bp)
{
	struct pipe_batch *old = &sv->pipe[sv->cur];
	struct pipe_batch *next = &sv->pipe[(sv->cur + 1) % PIPES];
	if (models_changed(sv)) {
		drain(sv);
		poll_models(sv);
		return;
	}
	if (!old->busy) {
		uint32_t total = 0;
		AZ_NVTX_PUSH("wait");
		old->nruns = az_batch_collect(sv->rings, sv->nrings, bp, old->runs,
					      2 * sv->nrings, &total);
		AZ_NVTX_POP();
		if (old->nruns > 0) {
			old->n = total;
			submit(sv, old);
		}
		return;
	}
	if (sv->streams > 1 && !next->busy && collect_more(sv, next, old) > 0)
		submit(sv, next);
	finish(sv, old);
	if (sv->streams > 1)
		sv->cur = (sv->cur + 1) % PIPES;
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
	sv->taken = calloc(sv->nrings, sizeof(*sv->taken));
	sv->offsets = calloc(B, sizeof(*sv->offsets));
	sv->model_of = calloc(B, 1);
	if (!sv->rings || !sv->runs || !sv->slots || !sv->rows || !sv->x || !sv->logits ||
	    !sv->value || !sv->taken || !sv->offsets || !sv->model_of)
		return -ENOMEM;
	for (uint32_t k = 0; k < PIPES; k++) {
		sv->pipe[k].stream = k;
		sv->pipe[k].runs = calloc(2 * (size_t)sv->nrings, sizeof(struct az_run));
		if (!sv->pipe[k].runs)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < sv->nrings; i++) {
		int rc = az_seg_ring(seg, i, &sv->rings[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void server_fini(struct server *sv)
{
	if (sv->be) {
		drain(sv); /* nothing in flight may outlive the registration */
		az_backend_destroy(sv->be); /* unregisters the segment first */
	}
	for (uint32_t k = 0; k < PIPES; k++)
		free(sv->pipe[k].runs);
	free(sv->taken);
	free(sv->offsets);
	free(sv->model_of);
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
		if (sv.streams) {
			slots_round(&sv, &bp);
			continue;
		}
		poll_models(&sv);
		uint32_t total = 0;
		AZ_NVTX_PUSH("wait");
		int nruns = az_batch_collect(sv.rings, sv.nrings, &bp, sv.runs, 2 * sv.nrings,
					     &total);
		AZ_NVTX_POP();
		if (nruns > 0)
			serve_batch(&sv, (uint32_t)nruns, total);
	}
out:
	server_fini(&sv);
	return rc;
}
