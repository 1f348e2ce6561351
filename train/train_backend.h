/* SPDX-License-Identifier: MIT */
/* Training backends behind one ops table, as gpu/backend.h is for inference: "cpu" (the reference
 * trainer of train/trainer.h, always built) and "cuda" (train/train_cuda.c over the device code
 * of gpu/cuda_train.h, usable when built with CUDA and a device is visible). The trainer process,
 * azbench train and the tests train through this interface only. */
#ifndef AZ_TRAIN_BACKEND_H
#define AZ_TRAIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/backend.h"
#include "net/model.h"
#include "train/trainer.h"

/* One implementation. ctx is the implementation's own state; arguments are checked by
 * train/train_backend.c before step and eval are called (batch in [1, max_batch], arrays and,
 * for eval, loss non-NULL). */
struct az_train_backend_ops {
	const char *name;
	/* Bind to m (borrowed) for minibatches of up to max_batch rows; copy what it needs. */
	int (*create)(struct az_model *m, const struct az_train_params *p, uint32_t max_batch,
		      void **ctx);
	/* x[B, D], pi[B, A], z[B] host memory in; *loss (may be NULL for step) out. */
	int (*step)(void *ctx, uint32_t batch, const float *x, const float *pi, const float *z,
		    struct az_loss *loss);
	int (*eval)(void *ctx, uint32_t batch, const float *x, const float *pi, const float *z,
		    struct az_loss *loss);
	/* Store: write the backend's current parameters into m->params. Load: replace the
	 * backend's parameters with m->params (the moments are kept). Both NULL for a backend that
	 * trains m->params in place (the CPU one): nothing to copy either way. */
	int (*sync)(void *ctx);
	int (*load)(void *ctx);
	void (*destroy)(void *ctx);
};

/* Designated initialisers .create, .step, .eval and .destroy for a backend whose functions are
 * named <prefix>_create, <prefix>_step, <prefix>_eval and <prefix>_destroy. */
#define AZ_TRAIN_BACKEND_FNS(prefix)                                                           \
	.create = prefix##_create, .step = prefix##_step, .eval = prefix##_eval,               \
	.destroy = prefix##_destroy

extern const struct az_train_backend_ops az_train_cpu_ops;
extern const struct az_train_backend_ops az_train_cuda_ops; /* -ENODEV from create without CUDA */

struct az_train_backend;

/* Create a trainer of kind AZ_BACKEND_CPU, AZ_BACKEND_CUDA or AZ_BACKEND_AUTO for model m
 * (borrowed: it must outlive the trainer; it holds the starting parameters) with optimiser p, for
 * minibatches of up to max_batch rows. AUTO means cpu: the GPU trainer runs only when asked for
 * until its parity test (tests/gpu/test_train_cuda.c) has passed on a device (docs/gpu.md). The
 * choice and its reason go to why[] (may be NULL). CUDA requested without a device (or without a
 * CUDA build): -ENODEV, and why says which. The cuda trainer reads AZ_CUDA_MATH as inference does
 * (gpu/backend.h). Returns 0, -EINVAL (bad kind or arguments, max_batch 0 or above
 * AZ_TRAIN_BATCH_MAX), -ENOMEM or -ENODEV; *out is set
 * only on success. */
int az_train_backend_create(enum az_backend_kind kind, struct az_model *m,
			    const struct az_train_params *p, uint32_t max_batch,
			    struct az_train_backend **out, char *why, size_t whylen);

/* The largest minibatch a trainer is made for (az_train_backend_create()'s max_batch); azrun's
 * --train-batch takes its range from here. */
#define AZ_TRAIN_BATCH_MAX 65536u

/* One optimisation step on a minibatch: x[batch, D], pi[batch, A] (target distribution), z[batch]
 * (result for the side to move), host memory; loss (may be NULL) receives the loss before the
 * step (the formulas of train/trainer.h). Returns 0 or -EINVAL (batch 0 or > max_batch, NULL
 * arrays). The cpu backend's numbers are bit-identical to az_train_cpu_step(). */
int az_train_backend_step(struct az_train_backend *b, uint32_t batch, const float *x,
			  const float *pi, const float *z, struct az_loss *loss);

/* Loss without a step (evaluation); loss must not be NULL. Returns 0 or -EINVAL. */
int az_train_backend_eval(struct az_train_backend *b, uint32_t batch, const float *x,
			  const float *pi, const float *z, struct az_loss *loss);

/* Make m->params current (before saving or evaluating the model elsewhere): a copy from the
 * device for cuda, nothing for cpu (which trains m->params in place). Returns 0 or -EINVAL. */
int az_train_backend_sync(struct az_train_backend *b);

/* Continue from m->params as changed by the caller since create (optimiser state kept): a copy
 * to the device for cuda, nothing for cpu. Returns 0 or -EINVAL. */
int az_train_backend_load(struct az_train_backend *b);

/* The ops table's name ("cpu" | "cuda"). */
const char *az_train_backend_name(const struct az_train_backend *b);

/* Free the trainer (NULL: no-op); the model is not freed and keeps the parameters of the last
 * sync (call az_train_backend_sync first to keep the trained ones). */
void az_train_backend_destroy(struct az_train_backend *b);

#endif
