/* SPDX-License-Identifier: MIT */
/* Training the residual MLP on the GPU (gpu/cuda_train.cu): the loss, backprop and optimiser of
 * train/trainer.c with cuBLAS and the kernels of gpu/cuda_kernels.h, agreeing with the CPU
 * trainer within fp32 tolerance (tests/gpu/test_train_cuda.c). train/trainer_cuda.h wraps it in
 * the trainer's own types; this header keeps gpu/ free of train/ (the link edge is train -> gpu).
 * Without CUDA (gpu/cuda_absent.c) every function returns -ENODEV. One thread uses a trainer. */
#ifndef AZ_CUDA_TRAIN_H
#define AZ_CUDA_TRAIN_H

#include <stdint.h>

#include "net/model.h"

struct az_cuda_optim {
	int adam;       /* 1: Adam (beta1, beta2, eps); 0: SGD with momentum */
	float lr;
	float momentum; /* SGD */
	float l2;       /* L2 coefficient on weights (not biases) */
	float beta1, beta2, eps;
};

/* Loss terms before the step, as struct az_loss of train/trainer.h. */
struct az_cuda_loss {
	double policy, value, l2;
};

struct az_cuda_trainer;

/* Copy the parameters of an `a` network (params, az_model_param_count(a) floats) to a new GPU
 * trainer for minibatches of up to max_batch rows. The GEMM precision follows AZ_CUDA_MATH (see
 * gpu/backend.h; fp32 when unset). Returns 0, -EINVAL, -ENOMEM or -ENODEV (no device). */
int az_cuda_trainer_create(const struct az_arch *a, const float *params,
			   const struct az_cuda_optim *o, uint32_t max_batch,
			   struct az_cuda_trainer **out);
void az_cuda_trainer_destroy(struct az_cuda_trainer *t);

/* One optimisation step on host arrays x[B, D], pi[B, A], z[B] (the shapes of
 * az_trainer_step()). *loss (may be NULL) receives the loss before the step.
 * Returns 0 or -EINVAL (batch 0 or > max_batch). */
int az_cuda_trainer_step(struct az_cuda_trainer *t, uint32_t batch, const float *x,
			 const float *pi, const float *z, struct az_cuda_loss *loss);

/* Loss and gradient without a step (az_train_loss_grad()); grad (host, n_params) may be NULL. */
int az_cuda_trainer_grad(struct az_cuda_trainer *t, uint32_t batch, const float *x,
			 const float *pi, const float *z, float *grad, struct az_cuda_loss *loss);

/* Loss only (evaluation). */
int az_cuda_trainer_eval(struct az_cuda_trainer *t, uint32_t batch, const float *x,
			 const float *pi, const float *z, struct az_cuda_loss *loss);

/* Copy the current parameters to params (host, n_params floats). Returns 0. */
int az_cuda_trainer_params(struct az_cuda_trainer *t, float *params);

#endif
