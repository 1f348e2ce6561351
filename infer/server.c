/* SPDX-License-Identifier: MIT */
/* The inference server loop: collect a batch from all rings, group rows by model, hand each
 * model's ring slots to the backend's slot path (gather, forward, masked softmax and scatter
 * happen there), wait for completion, serve.
 *
 * One path for every backend. The server only builds ring slot offsets; the backend layer
 * (gpu/backend.c) reads the slots in place on a zero-copy backend (cuda, once the segment is
 * registered) or through its staging fallback (cpu: one synchronous stream). With two streams,
 * up to two batches are in flight: while batch k computes, the server takes the requests that
 * arrived since (after those in flight: az_ring_take() with skip = taken) and submits them as
 * batch k+1, then waits for batch k and serves it. A ring's in-flight requests are always the
 * prefix [served, served + taken) of its pending range, and batches are served in submission
 * order, so az_ring_serve() still releases exactly the slots written. */
#include "infer/server.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/checkpoint.h"
#include "base/az_assert.h"
#include "base/util.h"
#include "infer/control.h"
#include "base/nvtx.h"
#include "shm/slot.h"

#define PIPES 2 /* batches in flight at most */

/* One batch submitted to the backend's slot path and not yet served. */
struct pipe_batch {
	int busy;
	int submitted; /* some forward_slots call on `stream` was accepted (wait for it) */
	uint32_t stream;
	int nruns;
	struct az_batch_span *runs; /* [2 * nrings] */
	uint32_t n;
	uint64_t t0;
};

struct server {
	const struct az_infer_config *cfg;
	struct az_seg *seg;
	struct az_infer_ctl_shm *ctl;
	struct az_ring *rings;
	uint32_t nrings;
	struct az_slot_layout lay;
	struct az_backend *be;
	struct az_arch arch;
	uint32_t loaded_gen[AZ_MODEL_SLOTS];
	int loaded[AZ_MODEL_SLOTS];
	void **slots;  /* [max_batch] ring slot pointers of the batch, in run order */
	/* streams of the slot path (at most PIPES): > 0 once a backend exists */
	uint32_t streams;
	struct pipe_batch pipe[PIPES];
	uint32_t cur;      /* the oldest batch in flight (when any is) */
	uint32_t *taken;   /* [nrings] requests of each ring inside in-flight batches */
	uint64_t *offsets; /* [max_batch] ring slot offsets from the segment base */
	uint8_t *model_of; /* [max_batch] model slot of each batch row, read once */
	uint32_t rr;       /* round-robin cursor of collect_more() */
	uint32_t cap;      /* rows the arrays above and the backend are made for */
	/* the largest batch formed: cfg->max_batch, or (auto) the backend's choice once it
	 * exists, cap before */
	uint32_t batch;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

enum log_level { LOG_ERROR, LOG_INFO };

/* The server's only output: one printf-style line to cfg->log_fd (none when it is -1); LOG_INFO
 * lines are dropped when cfg->quiet. */
__attribute__((format(printf, 3, 4))) static void infer_log(const struct server *sv,
							     enum log_level level,
							     const char *fmt, ...)
{
	va_list ap;

	if (sv->cfg->log_line) {
		char line[1024];

		va_start(ap, fmt);
		vsnprintf(line, sizeof(line), fmt, ap);
		va_end(ap);
		line[strcspn(line, "\n")] = '\0';
		sv->cfg->log_line(level == LOG_ERROR, line);
		return;
	}
	if (sv->cfg->log_fd < 0 || (level == LOG_INFO && sv->cfg->quiet))
		return;
	va_start(ap, fmt);
	vdprintf(sv->cfg->log_fd, fmt, ap);
	va_end(ap);
}

/* Register the segment with a new backend for the slot path: zero copy when the backend reads
 * slots in place, else (cpu, or a failed device registration) the backend layer's staging
 * fallback, silently for a backend that never had zero copy. */
static void enable_slot_path(struct server *sv)
{
	/* Whole pages: the mapping covers them (mmap rounds up); page-locking works on pages. */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size = (sv->seg->size + page - 1) / page * page;
	int rc = az_backend_register_host(sv->be, sv->seg->base, size);
	uint32_t n = az_backend_slot_streams(sv->be);

	sv->streams = n < PIPES ? n : PIPES;
	AZ_ASSERT(sv->streams > 0); /* registered: for the fallback even when the device failed */
	if (rc < 0)
		infer_log(sv, LOG_ERROR, "inference: zero-copy feed unavailable (register: %d); "
			  "using staging copies\n", rc);
	else if (az_backend_zero_copy(sv->be))
		infer_log(sv, LOG_INFO, "inference: zero-copy feed: segment registered, "
			  "%u stream(s)\n", sv->streams);
}

/* The configured backend, or the caller's ops table when one is given (tests). */
static int create_backend(struct server *sv, const struct az_arch *a, char *why, size_t len)
{
	if (!sv->cfg->backend_ops)
		return az_backend_create(sv->cfg->backend, a, sv->cap, &sv->be, why, len);
	snprintf(why, len, "%s: supplied by the caller", sv->cfg->backend_ops->name);
	return az_backend_create_ops(sv->cfg->backend_ops, a, sv->cap, &sv->be);
}

/* Load model slot `model` from the path azrun published. Creates the backend on first use (the
 * architecture is only known from the first checkpoint). */
static int load_model(struct server *sv, uint32_t model, uint32_t gen)
{
	char err[512], why[256];
	struct az_model *m = NULL;
	/* Until this load succeeds the slot is not served (status 1), never with the weights of
	 * the generation before. */
	sv->loaded[model] = 0;
	int rc = az_ckpt_load(sv->ctl->model_path[model], &m, err, sizeof(err));
	if (rc < 0) {
		infer_log(sv, LOG_ERROR, "inference: %s\n", err);
		return rc;
	}
	if (m->arch.inputs != sv->lay.features || m->arch.actions != sv->lay.actions) {
		infer_log(sv, LOG_ERROR, "inference: %s: network input/action sizes do not match "
			  "the game\n", sv->ctl->model_path[model]);
		rc = -EINVAL;
		goto out;
	}
	if (sv->be && !az_arch_equal(&sv->arch, &m->arch)) {
		/* Nothing is in flight here (the slot path drains before polling models); destroy
		 * unregisters the segment before freeing the device state. */
		az_backend_destroy(sv->be);
		sv->be = NULL;
		sv->streams = 0;
		memset(sv->loaded, 0, sizeof(sv->loaded));
	}
	if (!sv->be) {
		rc = create_backend(sv, &m->arch, why, sizeof(why));
		infer_log(sv, rc < 0 ? LOG_ERROR : LOG_INFO, "inference: backend %s\n", why);
		if (rc < 0)
			goto out;
		sv->batch = sv->cfg->max_batch ? sv->cfg->max_batch
					       : az_backend_preferred_batch(sv->be);
		infer_log(sv, LOG_INFO, "inference: batches of up to %u (%s)\n", sv->batch,
			  sv->cfg->max_batch ? "as configured" : "the backend's choice");
		sv->arch = m->arch;
		enable_slot_path(sv);
	}
	rc = az_backend_load(sv->be, model, m);
	if (rc == 0) {
		sv->loaded[model] = 1;
		sv->loaded_gen[model] = gen;
	}
out:
	az_model_destroy(m);
	return rc;
}

/* 1 when azrun announced a model the server has not loaded yet. */
static int models_changed(struct server *sv)
{
	for (uint32_t model = 0; model < AZ_MODEL_SLOTS; model++)
		/* C1': as in poll_models(), which reloads the model slot after this. */
		if (atomic_load_explicit(&sv->ctl->model_gen[model], memory_order_acquire) !=
		    sv->loaded_gen[model])
			return 1;
	return 0;
}

/* Reload any model slot whose generation azrun bumped. */
static int poll_models(struct server *sv)
{
	for (uint32_t model = 0; model < AZ_MODEL_SLOTS; model++) {
		/* C1': pairs with C1 in azrun (model_path written before model_gen). */
		uint32_t gen =
			atomic_load_explicit(&sv->ctl->model_gen[model], memory_order_acquire);
		if (gen == sv->loaded_gen[model])
			continue;
		int rc = load_model(sv, model, gen);
		if (rc < 0)
			sv->loaded_gen[model] = gen; /* do not retry a broken file in a loop */
		/* Relaxed: model_err is published by the release store of model_ack below. */
		atomic_store_explicit(&sv->ctl->model_err[model], rc, memory_order_relaxed);
		/* C2: pairs with C2' in azrun's wait for the acknowledgement. */
		atomic_store_explicit(&sv->ctl->model_ack[model], gen, memory_order_release);
	}
	return 0;
}

/* Submit the batch of pb's runs (n requests): offsets per model, one forward_slots per model on
 * pb's stream. Rows the backend will not answer (bad model id, model not loaded, no backend yet)
 * get status 1 here, before the batch is served. */
static void submit(struct server *sv, struct pipe_batch *pb)
{
	uint32_t n = 0;
	AZ_NVTX_PUSH("gather");
	for (int r = 0; r < pb->nruns; r++) {
		const struct az_batch_span *run = &pb->runs[r];
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
	pb->submitted = 0;
	pb->t0 = now_ns();
	for (uint32_t model = 0; model <= AZ_MODEL_SLOTS; model++) {
		uint32_t m = 0;
		int rc = -EINVAL;
		uint8_t want = model < AZ_MODEL_SLOTS ? (uint8_t)model : UINT8_MAX;
		for (uint32_t i = 0; i < n; i++)
			if (sv->model_of[i] == want)
				sv->offsets[m++] = (uint64_t)((uint8_t *)sv->slots[i] -
							      (uint8_t *)sv->seg->base);
		if (m == 0)
			continue;
		if (model < AZ_MODEL_SLOTS && sv->loaded[model])
			rc = az_backend_forward_slots(sv->be, model, m, sv->offsets, &sv->lay,
						      pb->stream);
		if (rc == 0) {
			pb->submitted = 1;
			continue;
		}
		for (uint32_t i = 0; i < n; i++) {
			if (sv->model_of[i] != want)
				continue;
			struct az_slot_hdr *h = az_slot_hdr(sv->slots[i]);
			h->status = 1;
			h->value = 0.0f;
			h->draw = 0.0f;
		}
	}
}

/* 1 when pb's batch has completed on the backend (block != 0: wait for it). */
static int batch_done(struct server *sv, const struct pipe_batch *pb, int block)
{
	if (!pb->submitted)
		return 1; /* every row was answered with status 1 in submit() */
	int rc = az_backend_wait_slots(sv->be, pb->stream, block);
	AZ_ASSERT(rc == 0 || rc == 1);
	return rc;
}

/* Wait for pb's batch on the backend, then publish it. */
static void finish(struct server *sv, struct pipe_batch *pb)
{
	AZ_NVTX_PUSH("D2H");
	int rc = batch_done(sv, pb, 1);
	AZ_NVTX_POP();
	AZ_ASSERT(rc == 1);
	AZ_NVTX_PUSH("publish");
	/* Batches are served in submission order and a ring's runs within one are in sequence
	 * order, so each serve releases exactly this batch's slots of that ring. */
	for (int r = 0; r < pb->nruns; r++) {
		const struct az_batch_span *run = &pb->runs[r];
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

/* 1 when some ring's producer may still add a request (az_ring_producer_live()); always 1 with
 * the fixed-deadline baseline, which does not look. */
static int any_live(const struct server *sv)
{
	if (sv->cfg->fixed_deadline)
		return 1;
	for (uint32_t i = 0; i < sv->nrings; i++)
		if (az_ring_producer_live(&sv->rings[i]))
			return 1;
	return 0;
}

/* While `busy` computes, take the requests that arrived since into pb's runs: poll until
 * max_batch are waiting, no producer can add more (each is blocked on a request already taken
 * or waiting, or detached), the busy batch completed, or `spin` polls passed. Rings are visited
 * round-robin from the one after the last ring taken from, each once. Returns the count. */
static uint32_t collect_more(struct server *sv, struct pipe_batch *pb,
			     const struct pipe_batch *busy)
{
	uint32_t budget = sv->batch, total = 0, taken = 0, start = sv->rr;
	AZ_NVTX_PUSH("wait");
	for (uint32_t polls = 0;; polls++) {
		total = 0;
		for (uint32_t i = 0; i < sv->nrings && total < budget; i++)
			total += beyond(sv, i);
		if (total >= budget || polls >= sv->cfg->spin || !any_live(sv) ||
		    batch_done(sv, busy, 0) == 1)
			break;
	}
	AZ_NVTX_POP();
	pb->nruns = 0;
	/* `start` is fixed before the loop: moving the cursor inside it would skip rings or visit
	 * one twice (taking its slots twice). */
	for (uint32_t k = 0; k < sv->nrings && taken < budget; k++) {
		uint32_t i = (start + k) % sv->nrings;
		struct az_ring_span span[2];
		/* After the requests of ring i already in flight (A1 inside az_ring_take()). */
		uint32_t n = az_ring_take(&sv->rings[i], sv->taken[i], budget - taken, span);
		if (n == 0)
			continue;
		for (int h = 0; h < 2 && span[h].count; h++)
			pb->runs[pb->nruns++] = (struct az_batch_span){
				.ring = i, .count = span[h].count, .first = span[h].first };
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

/* One round of the loop: with nothing in flight, block for a batch (deadline and all) and
 * submit it; else submit what arrived meanwhile on the other stream, then publish the oldest
 * batch. Model changes wait until nothing is in flight. */
static void serve_round(struct server *sv, const struct az_batch_params *bp)
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
	sv->cap = sv->batch = az_infer_batch_cap(cfg->max_batch);
	size_t B = sv->cap;
	sv->rings = calloc(sv->nrings, sizeof(*sv->rings));
	sv->slots = calloc(B, sizeof(*sv->slots));
	sv->taken = calloc(sv->nrings, sizeof(*sv->taken));
	sv->offsets = calloc(B, sizeof(*sv->offsets));
	sv->model_of = calloc(B, 1);
	if (!sv->rings || !sv->slots || !sv->taken || !sv->offsets || !sv->model_of)
		return -ENOMEM;
	for (uint32_t k = 0; k < PIPES; k++) {
		sv->pipe[k].stream = k;
		sv->pipe[k].runs = calloc(2 * (size_t)sv->nrings, sizeof(struct az_batch_span));
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
	free(sv->slots);
}

int az_infer_serve(struct az_seg *seg, const struct az_infer_config *cfg)
{
	struct server sv;

	az_fp_flush_denormals(); /* the fp32 CPU path reads the weights the trainer wrote */
	if (cfg->deadline_us > AZ_INFER_DEADLINE_MAX_US) {
		if (cfg->log_fd >= 0)
			dprintf(cfg->log_fd, "inference: batch deadline %u us is above the maximum "
				"%u us\n", cfg->deadline_us, AZ_INFER_DEADLINE_MAX_US);
		return -EINVAL;
	}
	if (cfg->max_batch > AZ_INFER_BATCH_MAX) {
		if (cfg->log_fd >= 0)
			dprintf(cfg->log_fd, "inference: max batch %u is above the maximum %u\n",
				cfg->max_batch, AZ_INFER_BATCH_MAX);
		return -EINVAL;
	}
	int rc = server_init(&sv, seg, cfg);
	if (rc < 0)
		goto out;
	/* Relaxed: informational. */
	atomic_store_explicit(&sv.ctl->server_pid, (uint32_t)getpid(), memory_order_relaxed);
	struct az_batch_params bp = {
		.max_batch = sv.batch, /* set again each round: auto changes it at the first load */
		.deadline_us = cfg->deadline_us,
		.spin = cfg->spin,
		.idle_timeout_us = 20000, /* wake up to notice model changes and stop requests */
		.fixed_deadline = cfg->fixed_deadline,
	};
	/* Relaxed: the heartbeat orders nothing (infer/control.h); a predecessor that wrote it
	 * has been reaped, so continuing its value never repeats one the watchdog saw. */
	uint64_t beat = atomic_load_explicit(&sv.ctl->server_beat, memory_order_relaxed);
	/* S1': pairs with S1 in az_pipeline_stop (infer/control.h); nothing else rides on it. */
	while (!atomic_load_explicit(&sv.ctl->stop, memory_order_acquire)) {
		/* Relaxed: liveness only (infer/control.h). */
		atomic_store_explicit(&sv.ctl->server_beat, ++beat, memory_order_relaxed);
		bp.max_batch = sv.batch;
		serve_round(&sv, &bp);
	}
out:
	server_fini(&sv);
	return rc;
}
