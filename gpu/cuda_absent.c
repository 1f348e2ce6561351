/* SPDX-License-Identifier: MIT */
/* Built instead of the gpu/cuda_*.cu files when no CUDA compiler is present: no device is ever
 * available, the GPU trainer cannot be created, and az_backend_cuda_ops is not defined
 * (gpu/backend.c never refers to it then). */
#include <errno.h>

#include "gpu/backend.h"
#include "gpu/cuda_train.h"

int az_cuda_available(void)
{
	return 0;
}

const char *az_cuda_unavailable(void)
{
	return "built without CUDA";
}

int az_cuda_train_dev_create(const struct az_arch *a, const float *params,
			     const struct az_cuda_optim *o, uint32_t max_batch,
			     struct az_cuda_train_dev **out)
{
	(void)a;
	(void)params;
	(void)o;
	(void)max_batch;
	(void)out;
	return -ENODEV;
}

void az_cuda_train_dev_destroy(struct az_cuda_train_dev *t)
{
	(void)t;
}

int az_cuda_train_dev_step(struct az_cuda_train_dev *t, uint32_t batch, const float *x,
			   const float *pi, const float *z, struct az_cuda_loss *loss)
{
	(void)t;
	(void)batch;
	(void)x;
	(void)pi;
	(void)z;
	(void)loss;
	return -ENODEV;
}

int az_cuda_train_dev_grad(struct az_cuda_train_dev *t, uint32_t batch, const float *x,
			   const float *pi, const float *z, float *grad, struct az_cuda_loss *loss)
{
	(void)grad;
	return az_cuda_train_dev_step(t, batch, x, pi, z, loss);
}

int az_cuda_train_dev_eval(struct az_cuda_train_dev *t, uint32_t batch, const float *x,
			   const float *pi, const float *z, struct az_cuda_loss *loss)
{
	return az_cuda_train_dev_step(t, batch, x, pi, z, loss);
}

int az_cuda_train_dev_download_params(struct az_cuda_train_dev *t, float *params)
{
	(void)t;
	(void)params;
	return -ENODEV;
}

int az_cuda_train_dev_upload_params(struct az_cuda_train_dev *t, const float *params)
{
	(void)t;
	(void)params;
	return -ENODEV;
}
