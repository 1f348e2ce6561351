/* SPDX-License-Identifier: MIT */
/* Training backend dispatch (cpu/cuda selection, argument checks) and the cpu backend's ops
 * table, which forwards to the reference trainer of train/trainer.c unchanged, so the numbers are
 * its numbers bit for bit. A handle is used by one thread at a time. */
#include "train/train_backend.h"

#include <errno.h>
#include <stdlib.h>

#include "base/az_err.h"

struct az_train_backend {
	const struct az_train_backend_ops *ops;
	void *ctx;
	uint32_t max_batch;
};

/* ---- cpu backend: the CPU trainer itself is the context ---- */

static int cpu_create(struct az_model *m, const struct az_train_params *p, uint32_t max_batch,
		      void **ctx)
{
	struct az_train_cpu *t = NULL;
	int ret = az_train_cpu_create(m, p, max_batch, &t);

	if (ret == 0)
		*ctx = t;
	return ret;
}

static int cpu_step(void *ctx, uint32_t batch, const float *x, const float *pi, const float *z,
		    struct az_loss *loss)
{
	return az_train_cpu_step(ctx, batch, x, pi, z, loss);
}

static int cpu_eval(void *ctx, uint32_t batch, const float *x, const float *pi, const float *z,
		    struct az_loss *loss)
{
	return az_train_cpu_eval(ctx, batch, x, pi, z, loss);
}

static void cpu_destroy(void *ctx)
{
	az_train_cpu_destroy(ctx);
}

const struct az_train_backend_ops az_train_cpu_ops = {
	.name = "cpu",
	AZ_TRAIN_BACKEND_FNS(cpu), /* it updates m->params in place: no sync, no load */
};

/* ---- dispatch ---- */

/* The table for a request, or NULL with why filled (CUDA asked for but not usable). */
static const struct az_train_backend_ops *pick(enum az_backend_kind kind, char *why,
					       size_t whylen)
{
	const char *no_cuda;

	switch (kind) {
	case AZ_BACKEND_AUTO:
		az_set_err(why, whylen, "cpu: auto (the GPU trainer runs only when asked for)");
		return &az_train_cpu_ops;
	case AZ_BACKEND_CPU:
	case AZ_BACKEND_CPU_ASYNC: /* an inference-side distinction: training is the cpu's */
		az_set_err(why, whylen, "cpu: requested");
		return &az_train_cpu_ops;
	case AZ_BACKEND_CUDA:
		no_cuda = az_cuda_unavailable();
		if (no_cuda) {
			az_set_err(why, whylen, "cuda requested but unavailable: %s", no_cuda);
			return NULL;
		}
		az_set_err(why, whylen, "cuda: requested");
		return &az_train_cuda_ops;
	}
	return NULL;
}

int az_train_backend_create(enum az_backend_kind kind, struct az_model *m,
			    const struct az_train_params *p, uint32_t max_batch,
			    struct az_train_backend **out, char *why, size_t whylen)
{
	const struct az_train_backend_ops *ops;
	struct az_train_backend *b;
	int ret;

	az_set_err(why, whylen, "invalid arguments");
	if (!out || !m || !p || max_batch == 0 || max_batch > AZ_TRAIN_BATCH_MAX ||
	    (unsigned)kind > AZ_BACKEND_CPU_ASYNC)
		return -EINVAL;
	ops = pick(kind, why, whylen);
	if (!ops)
		return -ENODEV;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->ops = ops;
	b->max_batch = max_batch;
	ret = ops->create(m, p, max_batch, &b->ctx);
	if (ret) {
		free(b);
		return ret;
	}
	*out = b;
	return 0;
}

static int check(const struct az_train_backend *b, uint32_t batch, const float *x,
		 const float *pi, const float *z)
{
	return b && x && pi && z && batch > 0 && batch <= b->max_batch ? 0 : -EINVAL;
}

int az_train_backend_step(struct az_train_backend *b, uint32_t batch, const float *x,
			  const float *pi, const float *z, struct az_loss *loss)
{
	if (check(b, batch, x, pi, z))
		return -EINVAL;
	return b->ops->step(b->ctx, batch, x, pi, z, loss);
}

int az_train_backend_eval(struct az_train_backend *b, uint32_t batch, const float *x,
			  const float *pi, const float *z, struct az_loss *loss)
{
	if (check(b, batch, x, pi, z) || !loss)
		return -EINVAL;
	return b->ops->eval(b->ctx, batch, x, pi, z, loss);
}

int az_train_backend_sync(struct az_train_backend *b)
{
	if (!b)
		return -EINVAL;
	return b->ops->sync ? b->ops->sync(b->ctx) : 0;
}

int az_train_backend_load(struct az_train_backend *b)
{
	if (!b)
		return -EINVAL;
	return b->ops->load ? b->ops->load(b->ctx) : 0;
}

const char *az_train_backend_name(const struct az_train_backend *b)
{
	return b ? b->ops->name : "none";
}

void az_train_backend_destroy(struct az_train_backend *b)
{
	if (!b)
		return;
	b->ops->destroy(b->ctx);
	free(b);
}
