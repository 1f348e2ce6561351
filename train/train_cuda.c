/* SPDX-License-Identifier: MIT */
/* The cuda training backend (az_train_cuda_ops of train/train_backend.h): adapts the device code
 * of gpu/cuda_train.h to train/trainer.h's types (parameters in, loss structs out). Holds no
 * device state of its own; between create and sync the device copy of the weights is current. */
#include <errno.h>
#include <stdlib.h>

#include "gpu/cuda_train.h"
#include "train/train_backend.h"

struct cuda_ctx {
	struct az_model *m; /* borrowed: the starting weights, and where sync writes */
	struct az_cuda_train_dev *dev;
};

static int cuda_create(struct az_model *m, const struct az_train_params *p, uint32_t max_batch,
		       void **ctx)
{
	struct az_cuda_optim o;
	struct cuda_ctx *c;
	int ret;

	if (p->optim != AZ_OPTIM_ADAM && p->optim != AZ_OPTIM_SGD)
		return -EINVAL;
	o.adam = p->optim == AZ_OPTIM_ADAM;
	o.lr = p->lr;
	o.momentum = p->momentum;
	o.l2 = p->l2;
	o.beta1 = p->beta1;
	o.beta2 = p->beta2;
	o.eps = p->eps;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->m = m;
	ret = az_cuda_train_dev_create(&m->arch, m->params, &o, max_batch, &c->dev);
	if (ret) {
		free(c);
		return ret;
	}
	*ctx = c;
	return 0;
}

static void cuda_destroy(void *ctx)
{
	struct cuda_ctx *c = ctx;

	az_cuda_train_dev_destroy(c->dev);
	free(c);
}

/* The device reduces in double; the total is summed there too, as the CPU trainer does. */
static void to_loss(const struct az_cuda_loss *g, struct az_loss *loss)
{
	loss->policy = (float)g->policy;
	loss->value = (float)g->value;
	loss->l2 = (float)g->l2;
	loss->total = (float)(g->policy + g->value + g->l2);
}

static int cuda_step(void *ctx, uint32_t batch, const float *x, const float *pi, const float *z,
		     struct az_loss *loss)
{
	struct cuda_ctx *c = ctx;
	struct az_cuda_loss g;
	int ret = az_cuda_train_dev_step(c->dev, batch, x, pi, z, &g);

	if (ret == 0 && loss)
		to_loss(&g, loss);
	return ret;
}

static int cuda_eval(void *ctx, uint32_t batch, const float *x, const float *pi, const float *z,
		     struct az_loss *loss)
{
	struct cuda_ctx *c = ctx;
	struct az_cuda_loss g;
	int ret = az_cuda_train_dev_eval(c->dev, batch, x, pi, z, &g);

	if (ret == 0)
		to_loss(&g, loss);
	return ret;
}

static int cuda_sync(void *ctx)
{
	struct cuda_ctx *c = ctx;

	return az_cuda_train_dev_download_params(c->dev, c->m->params);
}

static int cuda_load(void *ctx)
{
	struct cuda_ctx *c = ctx;

	return az_cuda_train_dev_upload_params(c->dev, c->m->params);
}

const struct az_train_backend_ops az_train_cuda_ops = {
	.name = "cuda",
	AZ_TRAIN_BACKEND_FNS(cuda),
	.sync = cuda_sync,
	.load = cuda_load,
};
