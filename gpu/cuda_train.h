/* SPDX-License-Identifier: MIT */
/* The raw device side of GPU training (gpu/cuda_train.cu): device-resident weights, gradient,
 * optimiser moments and activations of one network (residual MLP or ResNet, tanh or
 * win/draw/loss value head), and the loss, backprop and optimiser of train/trainer.c run with
 * cuBLAS and the kernels of gpu/cuda_kernels.h, agreeing with the CPU trainer within fp32
 * tolerance (tests/gpu/test_train_cuda.c). Callers train through the ops table of
 * train/train_backend.h, whose cuda table (train/train_cuda.c) wraps this; the header keeps gpu/
 * free of train/ types (the link edge is train -> gpu). Without CUDA (gpu/cuda_absent.c) every
 * function returns -ENODEV. One thread uses a context at a time. */
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

/* Loss terms before the step, as struct az_loss of train/trainer.h (double: reduced so): value is
 * the mean squared error of a tanh head, the mean win/draw/loss cross-entropy of a WDL head. */
struct az_cuda_loss {
	double policy, value, l2;
};

/* Device training state of one network; owns all its device memory and pinned staging. */
struct az_cuda_train_dev;

/* Copy the parameters of an `a` network (params, az_model_param_count(a) floats, host) to a new
 * device context for minibatches of up to max_batch rows; moments start at zero. The GEMM
 * precision follows AZ_CUDA_MATH (see gpu/backend.h; fp32 when unset). All device memory is
 * allocated here. Returns 0, -EINVAL, -ENOMEM or -ENODEV (no device). */
int az_cuda_train_dev_create(const struct az_arch *a, const float *params,
			     const struct az_cuda_optim *o, uint32_t max_batch,
			     struct az_cuda_train_dev **out);

/* Wait for the stream and free everything (NULL: no-op). */
void az_cuda_train_dev_destroy(struct az_cuda_train_dev *t);

/* One optimisation step on host arrays x[B, D], pi[B, A], z[B] (the shapes of
 * az_train_cpu_step()). *loss (may be NULL) receives the loss before the step.
 * Returns 0 or -EINVAL (batch 0 or > max_batch, NULL arrays). */
int az_cuda_train_dev_step(struct az_cuda_train_dev *t, uint32_t batch, const float *x,
			   const float *pi, const float *z, struct az_cuda_loss *loss);

/* Loss and gradient without a step (az_train_loss_grad()); grad (host, n_params) may be NULL.
 * Returns 0 or -EINVAL. */
int az_cuda_train_dev_grad(struct az_cuda_train_dev *t, uint32_t batch, const float *x,
			   const float *pi, const float *z, float *grad,
			   struct az_cuda_loss *loss);

/* Loss only (evaluation; loss must not be NULL). Returns 0 or -EINVAL. */
int az_cuda_train_dev_eval(struct az_cuda_train_dev *t, uint32_t batch, const float *x,
			   const float *pi, const float *z, struct az_cuda_loss *loss);

/* Copy the current device parameters to params (host, n_params floats) after the stream has
 * finished. Returns 0 or -EINVAL. */
int az_cuda_train_dev_download_params(struct az_cuda_train_dev *t, float *params);

/* Replace the device parameters with params (host, n_params floats); the moments and the step
 * count are kept. Returns 0 or -EINVAL. */
int az_cuda_train_dev_upload_params(struct az_cuda_train_dev *t, const float *params);

#endif
