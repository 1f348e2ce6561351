/* SPDX-License-Identifier: MIT */
/* gpu/ internals shared by backend.c and cpu_async.c (never included from outside gpu/). */
#ifndef AZ_GPU_BACKEND_IMPL_H
#define AZ_GPU_BACKEND_IMPL_H

#include <stdint.h>

#include "gpu/backend.h"
#include "shm/slot.h"

/* Host buffers of a staged slot pass: x[max_batch, inputs], logits[max_batch, actions],
 * value[max_batch], draw[max_batch] (az_stage_bufs_create), owned by the caller. */
struct az_stage_bufs {
	float *x, *logits, *value, *draw;
	int vec_softmax; /* 1: az_packed_softmax() writes the policies (az_stage_bufs_create) */
};

/* Allocate s's buffers for batches of up to max_batch rows of arch a and set s->vec_softmax: 1
 * when AVX-512 is chosen (az_cpu_gemm_select(): AZ_CPU_GEMM=blas keeps the scalar reference) and
 * a->actions <= AZ_PACKED_SOFTMAX_MAX. Returns 0, or -ENOMEM with nothing left allocated. */
int az_stage_bufs_create(const struct az_arch *a, uint32_t max_batch, struct az_stage_bufs *s);

/* Free what az_stage_bufs_create allocated (s may be zeroed: nothing to free). */
void az_stage_bufs_destroy(struct az_stage_bufs *s);

/* One staged pass over n ring slots at base + slot_offsets[i] (checked by the caller): gather
 * the features into s->x, ops->forward(ctx, model, ...), write the masked softmax, value,
 * draw and status 0 into each slot. The NVTX ranges gather, forward, publish (docs/profiling.md) are
 * pushed on the calling thread. Returns 0 or what forward returns (slots untouched then). */
int az_stage_forward_slots(const struct az_backend_ops *ops, void *ctx, uint8_t *base,
			   uint32_t model, uint32_t n, const uint64_t *slot_offsets,
			   const struct az_slot_layout *l, const struct az_stage_bufs *s);

#endif
