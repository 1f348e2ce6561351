/* SPDX-License-Identifier: MIT */
/* Inference backends behind one ops table: "cpu" (OpenBLAS, always built, the reference) and
 * "cuda" (cuBLAS + kernels, built when nvcc is present, usable when a device is). A backend holds
 * up to AZ_BACKEND_MODELS models (slot 0: best, slot 1: candidate in the arena). */
#ifndef AZ_BACKEND_H
#define AZ_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/model.h"

#define AZ_BACKEND_MODELS 2

enum az_backend_kind {
	AZ_BACKEND_AUTO = 0,
	AZ_BACKEND_CPU = 1,
	AZ_BACKEND_CUDA = 2,
};

struct az_backend;

struct az_backend_ops {
	const char *name;
	int (*create)(const struct az_arch *a, uint32_t max_batch, void **ctx);
	int (*load)(void *ctx, uint32_t slot, const struct az_model *m);
	/* x[B, D] host memory in, logits[B, A] and value[B] host memory out. */
	int (*forward)(void *ctx, uint32_t slot, uint32_t batch, const float *x, float *logits,
		       float *value);
	void (*destroy)(void *ctx);
};

/* Parse "auto" | "cpu" | "cuda". Returns 0 or -EINVAL. */
int az_backend_parse(const char *text, enum az_backend_kind *kind);

/* Create a backend. AUTO picks cuda when built with CUDA and a device is present, else cpu; the
 * choice and the reason go to why[]. CUDA requested without a device: -ENODEV (why says so).
 * Returns 0, -ENODEV, -EINVAL or -ENOMEM. */
int az_backend_create(enum az_backend_kind kind, const struct az_arch *a, uint32_t max_batch,
		      struct az_backend **out, char *why, size_t whylen);

/* Copy the weights of m (same arch) into model slot `slot`. Returns 0 or -EINVAL/-ENOMEM. */
int az_backend_load(struct az_backend *b, uint32_t slot, const struct az_model *m);

/* Forward batch <= max_batch rows through model `slot`. Returns 0 or -EINVAL (slot not loaded
 * or batch too large). */
int az_backend_forward(struct az_backend *b, uint32_t slot, uint32_t batch, const float *x,
		       float *logits, float *value);

const char *az_backend_name(const struct az_backend *b);
void az_backend_destroy(struct az_backend *b);

/* 1 when the CUDA backend is compiled in and a device is visible (gpu/cuda_backend.cu). */
int az_cuda_available(void);
extern const struct az_backend_ops az_backend_cpu_ops;
extern const struct az_backend_ops az_backend_cuda_ops; /* only when built with CUDA */

#endif
