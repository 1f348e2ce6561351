/* SPDX-License-Identifier: MIT */
/* Wraps the GPU trainer of gpu/cuda_train.h in train/trainer.h's types: parameters in, loss
 * structs out. Holds no device state of its own. */
#include "train/trainer_cuda.h"

#include <errno.h>
#include <stdlib.h>

#include "gpu/cuda_train.h"

struct az_trainer_cuda {
	struct az_model *m;
	struct az_cuda_trainer *gpu;
};

int az_trainer_cuda_create(struct az_model *m, const struct az_train_params *p,
			   uint32_t max_batch, struct az_trainer_cuda **out)
{
	struct az_cuda_optim o;
	struct az_trainer_cuda *t;
	int ret;

	if (!m || !p || !out || (p->optim != AZ_OPTIM_ADAM && p->optim != AZ_OPTIM_SGD))
		return -EINVAL;
	o.adam = p->optim == AZ_OPTIM_ADAM;
	o.lr = p->lr;
	o.momentum = p->momentum;
	o.l2 = p->l2;
	o.beta1 = p->beta1;
	o.beta2 = p->beta2;
	o.eps = p->eps;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->m = m;
	ret = az_cuda_trainer_create(&m->arch, m->params, &o, max_batch, &t->gpu);
	if (ret) {
		free(t);
		return ret;
	}
	*out = t;
	return 0;
}

void az_trainer_cuda_destroy(struct az_trainer_cuda *t)
{
	if (!t)
		return;
	az_cuda_trainer_destroy(t->gpu);
	free(t);
}

static void to_loss(const struct az_cuda_loss *g, struct az_loss *loss)
{
	loss->policy = (float)g->policy;
	loss->value = (float)g->value;
	loss->l2 = (float)g->l2;
	loss->total = (float)(g->policy + g->value + g->l2);
}

int az_trainer_cuda_step(struct az_trainer_cuda *t, uint32_t batch, const float *x,
			 const float *pi, const float *z, struct az_loss *loss)
{
	struct az_cuda_loss g;
	int ret;

	if (!t)
		return -EINVAL;
	ret = az_cuda_trainer_step(t->gpu, batch, x, pi, z, &g);
	if (ret == 0 && loss)
		to_loss(&g, loss);
	return ret;
}

int az_trainer_cuda_eval(struct az_trainer_cuda *t, uint32_t batch, const float *x,
			 const float *pi, const float *z, struct az_loss *loss)
{
	struct az_cuda_loss g;
	int ret;

	if (!t || !loss)
		return -EINVAL;
	ret = az_cuda_trainer_eval(t->gpu, batch, x, pi, z, &g);
	if (ret == 0)
		to_loss(&g, loss);
	return ret;
}

int az_trainer_cuda_sync(struct az_trainer_cuda *t)
{
	if (!t)
		return -EINVAL;
	return az_cuda_trainer_params(t->gpu, t->m->params);
}
