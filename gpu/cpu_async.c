/* SPDX-License-Identifier: MIT */
/* The "cpu-async" backend: the cpu backend's forward pass behind the cuda backend's
 * asynchronous slot contract. forward_slots() queues the batch and returns; one helper thread
 * runs the queued batches in submission order (gather from the slots, forward, masked softmax,
 * scatter into the slots); wait_slots() reports a stream complete once every batch submitted on
 * it has been written. Two streams, so the server keeps two batches in flight exactly as on a
 * GPU, and its pipelined zero-copy path runs (and is tested) on every machine.
 *
 * Threads: the owning thread (the server) calls every op; the helper thread only runs queued
 * jobs. One mutex guards the queue and the per-stream counters; the helper's slot writes happen
 * before its completed[] increment under the mutex, and the owner reads completed[] under the
 * same mutex before it publishes the slots (az_ring_serve), so the responses are visible to the
 * producers through the ring's own release/acquire pair (R2/A2 in shm/ring.c). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/backend.h"
#include "gpu/backend_impl.h"
#include "shm/slot.h"

#define STREAMS 2
/* Queued jobs at most: a batch is one job per model, two batches in flight. */
#define QCAP (STREAMS * AZ_BACKEND_MODELS)

struct job {
	uint32_t model, n, stream;
	uint64_t *offsets; /* [max_batch], owned by the queue */
};

struct async_ctx {
	void *cpu;                      /* the cpu backend's context (models, activations) */
	struct az_stage_bufs stage;     /* the helper's staging buffers */
	struct az_slot_layout l;        /* of the arch: every job uses it (checked upstream) */
	uint8_t *base;                  /* registered segment, or NULL */
	uint32_t max_batch;
	pthread_t helper;
	int started;                    /* helper thread running */
	pthread_mutex_t mu;
	pthread_cond_t work;            /* signalled on a new job or stop */
	pthread_cond_t done;            /* broadcast when a job completes */
	/* ---- under mu ---- */
	struct job q[QCAP];
	uint32_t head, tail;            /* jobs [head, tail) queued; q[head % QCAP] runs next */
	uint64_t submitted[STREAMS], completed[STREAMS];
	int stop;
};

static void *helper_main(void *arg)
{
	struct async_ctx *c = arg;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (c->head == c->tail && !c->stop)
			pthread_cond_wait(&c->work, &c->mu);
		if (c->head == c->tail)
			break; /* stop, with nothing left queued */
		struct job *j = &c->q[c->head % QCAP];
		pthread_mutex_unlock(&c->mu);
		/* The job's fields and offsets are not touched by the owner until head moves. The
		 * checks upstream (gpu/backend.c) make forward succeed: model loaded, n in range. */
		int rc = az_stage_forward_slots(&az_backend_cpu_ops, c->cpu, c->base, j->model,
						j->n, j->offsets, &c->l, &c->stage);
		pthread_mutex_lock(&c->mu);
		if (rc != 0) {
			/* Cannot happen past the checks; as a CUDA launch failure, it is fatal. */
			fprintf(stderr, "cpu-async: forward failed (%d)\n", rc);
			abort();
		}
		c->completed[j->stream]++;
		c->head++;
		pthread_cond_broadcast(&c->done);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Wait (under mu) until the helper has run every queued job. */
static void drain_locked(struct async_ctx *c)
{
	while (c->head != c->tail)
		pthread_cond_wait(&c->done, &c->mu);
}

static void async_destroy(void *ctx)
{
	struct async_ctx *c = ctx;

	if (!c)
		return;
	if (c->started) {
		pthread_mutex_lock(&c->mu);
		c->stop = 1;
		pthread_cond_signal(&c->work);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->helper, NULL);
	}
	pthread_cond_destroy(&c->done);
	pthread_cond_destroy(&c->work);
	pthread_mutex_destroy(&c->mu);
	for (uint32_t k = 0; k < QCAP; k++)
		free(c->q[k].offsets);
	az_stage_bufs_destroy(&c->stage);
	if (c->cpu)
		az_backend_cpu_ops.destroy(c->cpu);
	free(c);
}

static int async_create(const struct az_arch *a, uint32_t max_batch, void **ctx)
{
	struct async_ctx *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->work, NULL);
	pthread_cond_init(&c->done, NULL);
	c->max_batch = max_batch;
	az_slot_layout_init(&c->l, a->inputs, a->actions);
	ret = az_backend_cpu_ops.create(a, max_batch, &c->cpu);
	if (ret) {
		c->cpu = NULL;
		goto err_destroy;
	}
	ret = az_stage_bufs_create(a, max_batch, &c->stage);
	if (ret)
		goto err_destroy;
	ret = -ENOMEM;
	for (uint32_t k = 0; k < QCAP; k++) {
		c->q[k].offsets = malloc((size_t)max_batch * sizeof(uint64_t));
		if (!c->q[k].offsets)
			goto err_destroy;
	}
	if (pthread_create(&c->helper, NULL, helper_main, c) != 0)
		goto err_destroy;
	c->started = 1;
	*ctx = c;
	return 0;

err_destroy:
	async_destroy(c); /* frees whatever part was built */
	return ret;
}

static int async_load(void *ctx, uint32_t model, const struct az_model *m)
{
	struct async_ctx *c = ctx;

	/* The weights are the helper's input: never change them under a queued batch. */
	pthread_mutex_lock(&c->mu);
	drain_locked(c);
	int rc = az_backend_cpu_ops.load(c->cpu, model, m);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static int async_forward(void *ctx, uint32_t model, uint32_t batch, const float *x,
			 float *logits, float *value, float *draw)
{
	struct async_ctx *c = ctx;

	/* The synchronous op shares the activations with the helper: run it when idle. */
	pthread_mutex_lock(&c->mu);
	drain_locked(c);
	int rc = az_backend_cpu_ops.forward(c->cpu, model, batch, x, logits, value, draw);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static void async_describe(void *ctx, char *buf, size_t len)
{
	struct async_ctx *c = ctx;
	char cpu[96];

	az_backend_cpu_ops.describe(c->cpu, cpu, sizeof(cpu));
	snprintf(buf, len, "cpu forward (%s) on a helper thread, %u streams", cpu, STREAMS);
}

/* The cpu backend's own preference (immutable after create: no lock). */
static uint32_t async_preferred_batch(void *ctx)
{
	struct async_ctx *c = ctx;

	return az_backend_cpu_ops.preferred_batch(c->cpu);
}

static int async_register_host(void *ctx, void *base, size_t size)
{
	struct async_ctx *c = ctx;

	(void)size; /* offsets are range-checked against it in gpu/backend.c */
	c->base = base;
	return 0;
}

static void async_unregister_host(void *ctx)
{
	struct async_ctx *c = ctx;

	/* The caller waited for every stream; drain anyway, so no job outlives the mapping. */
	pthread_mutex_lock(&c->mu);
	drain_locked(c);
	c->base = NULL;
	pthread_mutex_unlock(&c->mu);
}

static int async_forward_slots(void *ctx, uint32_t model, uint32_t n,
			       const uint64_t *slot_offsets, const struct az_slot_layout *l,
			       uint32_t stream)
{
	struct async_ctx *c = ctx;

	(void)l; /* equal to c->l: checked in gpu/backend.c */
	pthread_mutex_lock(&c->mu);
	while (c->tail - c->head == QCAP) /* more than two batches' worth queued: wait for one */
		pthread_cond_wait(&c->done, &c->mu);
	struct job *j = &c->q[c->tail % QCAP];
	j->model = model;
	j->n = n;
	j->stream = stream;
	memcpy(j->offsets, slot_offsets, (size_t)n * sizeof(*slot_offsets));
	c->tail++;
	c->submitted[stream]++;
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

static int async_wait_slots(void *ctx, uint32_t stream, int block)
{
	struct async_ctx *c = ctx;

	pthread_mutex_lock(&c->mu);
	while (block && c->completed[stream] != c->submitted[stream])
		pthread_cond_wait(&c->done, &c->mu);
	int done = c->completed[stream] == c->submitted[stream];
	pthread_mutex_unlock(&c->mu);
	return done;
}

const struct az_backend_ops az_backend_cpu_async_ops = {
	.name = "cpu-async",
	AZ_BACKEND_OPS(async),
	.describe = async_describe,
	.preferred_batch = async_preferred_batch,
	AZ_BACKEND_SLOT_OPS(async),
	.slot_streams = STREAMS,
};
