/* SPDX-License-Identifier: MIT */
/* The trainer of train/trainer.h on the GPU (gpu/cuda_train.cu): same loss, gradient and
 * optimisers, same arguments, numbers equal within fp32 tolerance. The model's host parameters are
 * copied to the device at create and written back by az_trainer_cuda_sync(); in between the GPU
 * copy is the current one. Without a CUDA build or device, create returns -ENODEV. */
#ifndef AZ_TRAINER_CUDA_H
#define AZ_TRAINER_CUDA_H

#include <stdint.h>

#include "net/model.h"
#include "train/trainer.h"

struct az_trainer_cuda;

/* As az_trainer_create(). Returns 0, -EINVAL, -ENOMEM or -ENODEV. m must outlive the trainer. */
int az_trainer_cuda_create(struct az_model *m, const struct az_train_params *p,
			   uint32_t max_batch, struct az_trainer_cuda **out);
void az_trainer_cuda_destroy(struct az_trainer_cuda *t);

/* As az_trainer_step() / az_trainer_eval(). Returns 0 or -EINVAL. */
int az_trainer_cuda_step(struct az_trainer_cuda *t, uint32_t batch, const float *x,
			 const float *pi, const float *z, struct az_loss *loss);
int az_trainer_cuda_eval(struct az_trainer_cuda *t, uint32_t batch, const float *x,
			 const float *pi, const float *z, struct az_loss *loss);

/* Copy the trained parameters back into the model's params (before saving it). Returns 0. */
int az_trainer_cuda_sync(struct az_trainer_cuda *t);

#endif
