/* SPDX-License-Identifier: MIT */
/* Inference backends behind one ops table: "cpu" (OpenBLAS, always built, the reference) and
 * "cuda" (cuBLAS + kernels, built when nvcc is present, usable when a device is). A backend holds
 * up to AZ_BACKEND_MODELS models, indexed by model slot (0: best, 1: candidate in the arena; see
 * enum az_model_slot in infer/control.h). Ring slots (request records in shm) are a different
 * thing: they are only ever passed as byte offsets (slot_offsets). */
#ifndef AZ_BACKEND_H
#define AZ_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "net/model.h"

#define AZ_BACKEND_MODELS 2

enum az_backend_kind {
	AZ_BACKEND_AUTO = 0,
	AZ_BACKEND_CPU = 1,
	AZ_BACKEND_CUDA = 2,
	AZ_BACKEND_CPU_ASYNC = 3, /* the cpu forward pass with the cuda backend's async contract */
};

struct az_backend;
struct az_slot_layout; /* shm/slot.h */

struct az_backend_ops {
	const char *name;
	int (*create)(const struct az_arch *a, uint32_t max_batch, void **ctx);
	int (*load)(void *ctx, uint32_t model, const struct az_model *m);
	/* x[B, D] host memory in, logits[B, A], value[B] and draw[B] host memory out (draw: the
	 * value head's p_draw, 0 for a tanh head). */
	int (*forward)(void *ctx, uint32_t model, uint32_t batch, const float *x, float *logits,
		       float *value, float *draw);
	void (*destroy)(void *ctx);
	/* Optional (NULL when absent): one line about the device and settings for the log. */
	void (*describe)(void *ctx, char *buf, size_t len);
	/* Optional zero-copy slot path (all NULL and slot_streams 0 in the cpu backend; then
	 * gpu/backend.c supplies the slot path itself: gather, forward(), masked softmax, scatter,
	 * on one synchronous stream). Arguments are checked by gpu/backend.c before these are
	 * called. */
	int (*register_host)(void *ctx, void *base, size_t size);
	void (*unregister_host)(void *ctx);
	int (*forward_slots)(void *ctx, uint32_t model, uint32_t n, const uint64_t *slot_offsets,
			     const struct az_slot_layout *l, uint32_t stream);
	int (*wait_slots)(void *ctx, uint32_t stream, int block);
	uint32_t slot_streams;
	/* Optional (NULL or 0: no preference): the batch size this backend reaches its peak at,
	 * which the server uses when it was given no --max-batch. */
	uint32_t (*preferred_batch)(void *ctx);
};

/* Designated initialisers for a backend whose ops are named <prefix>_<op> (as AZ_GAME_RULES in
 * games/game.h): AZ_BACKEND_OPS(cpu) sets .create = cpu_create, .load, .forward and .destroy
 * (what every backend has); AZ_BACKEND_SLOT_OPS(cpu) sets .register_host, .unregister_host,
 * .forward_slots and .wait_slots (the optional zero-copy slot path; .slot_streams is the table's
 * own). */
#define AZ_BACKEND_OPS(prefix)                                                         \
	.create = prefix##_create, .load = prefix##_load, .forward = prefix##_forward, \
	.destroy = prefix##_destroy
#define AZ_BACKEND_SLOT_OPS(prefix)                                                           \
	.register_host = prefix##_register_host, .unregister_host = prefix##_unregister_host, \
	.forward_slots = prefix##_forward_slots, .wait_slots = prefix##_wait_slots

/* Parse "auto" | "cpu" | "cpu-async" | "cuda". Returns 0 or -EINVAL. */
int az_backend_parse(const char *text, enum az_backend_kind *kind);

/* Create a backend. AUTO picks cuda when built with CUDA and a device is present, else cpu; the
 * choice and the reason go to why[] (for cuda followed by the device and settings). CUDA requested
 * without a device: -ENODEV (why says so). The cuda backend reads AZ_CUDA_MATH = fp32 (default) |
 * tf32 | bf16, the GEMM precision (tensor-core paths; storage and kernels stay fp32; -EINVAL for
 * other text), AZ_CUDA_GRAPHS=0 turns its CUDA graphs off (direct launches; for debugging), and
 * AZ_CUDA_FEED = gather (default: a kernel reads the mapped slots) | dma (one copy-engine
 * cudaMemcpy2DAsync per run of contiguous slots; direct launches; -EINVAL for other text).
 * Returns 0, -ENODEV, -EINVAL or -ENOMEM. */
int az_backend_create(enum az_backend_kind kind, const struct az_arch *a, uint32_t max_batch,
		      struct az_backend **out, char *why, size_t whylen);

/* Create a backend on a caller-supplied ops table (a stand-in in tests, a meta-backend); ops must
 * outlive the backend. Returns 0, -EINVAL (bad arguments) or what ops->create returns. */
int az_backend_create_ops(const struct az_backend_ops *ops, const struct az_arch *a,
			  uint32_t max_batch, struct az_backend **out);

/* Copy the weights of m (same arch) into model slot `model` (< AZ_BACKEND_MODELS). Returns 0 or
 * -EINVAL/-ENOMEM. */
int az_backend_load(struct az_backend *b, uint32_t model, const struct az_model *m);

/* Forward batch <= max_batch rows through model slot `model`: x[batch, inputs] in,
 * logits[batch, actions], value[batch] and draw[batch] out (draw: p_draw of a win/draw/loss
 * value head, 0 for a tanh head; NULL when not wanted), all host memory owned by the caller.
 * Returns 0 or -EINVAL (model not loaded or batch too large). */
int az_backend_forward(struct az_backend *b, uint32_t model, uint32_t batch, const float *x,
		       float *logits, float *value, float *draw);

/* ---- slot path (every backend; infer/server.c has no other) ----
 * The caller registers the mapped ring segment once (after attach), then submits batches as ring
 * slot offsets from its base: the backend reads features and legal masks from the slots and
 * writes the masked-softmax policy, value, draw and status 0 into them, on one of slot_streams streams,
 * in submission order per stream. Results may be published only after az_backend_wait_slots()
 * has reported the stream complete. Unregister before detaching (az_backend_destroy does it too).
 * A backend with its own forward_slots (cuda) reads the slots in place (zero copy); for one
 * without (cpu), or when the device registration failed, this layer supplies the path: gather
 * into a staging buffer, forward(), masked softmax and scatter into the slots, synchronously, on
 * one stream (the batch is complete when az_backend_forward_slots() returns). */

/* Register [base, base + size) for the slot path (page-locked and mapped for the device when the
 * backend reads slots in place). Returns 0, or -EINVAL (already registered, bad arguments);
 * -ENOMEM or -ENODEV when the device registration failed: the segment is then registered for the
 * staging fallback, so the slot path still works (through host copies). */
int az_backend_register_host(struct az_backend *b, void *base, size_t size);

/* Undo az_backend_register_host after the device finished with the segment (no-op when none). */
void az_backend_unregister_host(struct az_backend *b);

/* Streams of the slot path: 0 when no memory is registered, 1 for the staging fallback, the
 * backend's slot_streams when it reads the slots in place. */
uint32_t az_backend_slot_streams(const struct az_backend *b);

/* 1 when the registered segment is read in place by the device (the backend's own
 * forward_slots), 0 for the staging fallback or when nothing is registered. */
int az_backend_zero_copy(const struct az_backend *b);

/* The largest batch worth forming for this backend, at most the max_batch it was created
 * with: its preferred_batch (the cpu backend on AVX-512: AZ_CPU_PACKED_BATCH), or max_batch
 * when it has no preference (OpenBLAS and CUDA gain from every row up to their limits). */
uint32_t az_backend_preferred_batch(const struct az_backend *b);

/* Submit n (1 <= n <= max_batch) requests of model slot `model` on stream `stream`:
 * slot_offsets[i] is the byte offset of request i's ring slot from the registered base; l must be
 * the layout of the backend's arch (az_slot_layout_init(inputs, actions)). Asynchronous on a
 * zero-copy backend (returns at once). Returns 0, or -EINVAL (model not loaded, n, stream, layout
 * or an offset out of range, nothing registered); -EINVAL leaves the slots untouched. */
int az_backend_forward_slots(struct az_backend *b, uint32_t model, uint32_t n,
			     const uint64_t *slot_offsets, const struct az_slot_layout *l,
			     uint32_t stream);

/* 1 when everything submitted on `stream` has completed (responses are in the slots), 0 when not
 * yet (block == 0 only), -EINVAL for a bad stream. block != 0 waits. */
int az_backend_wait_slots(struct az_backend *b, uint32_t stream, int block);

/* The ops table's name ("cpu", "cuda", ...), or "none" for NULL. Static storage. */
const char *az_backend_name(const struct az_backend *b);

/* Unregister the segment (if registered), then free the backend and all its memory. The caller
 * must have waited for every stream of the slot path. NULL is a no-op. */
void az_backend_destroy(struct az_backend *b);

/* 1 when the CUDA backend is compiled in and a device is visible (gpu/cuda_util.cu). Safe to call
 * before fork(): unless this process already uses CUDA, the probe runs in a short-lived child,
 * so the caller's children can still initialise CUDA. The answer is cached. */
int az_cuda_available(void);

/* Why the CUDA backends cannot be used here, for messages: "built without CUDA", or the
 * device probe's CUDA error string ("cudaGetDeviceCount: CUDA driver version is insufficient
 * for CUDA runtime version (error 35)", "... no CUDA-capable device is detected ..."), so "no
 * device" and "driver too old" read differently, or "no NVIDIA driver loaded (...)" where the
 * runtime says "driver too old" and cudaDriverGetVersion finds no driver (a CPU-only machine);
 * NULL when az_cuda_available() is 1. Static storage. */
const char *az_cuda_unavailable(void);
extern const struct az_backend_ops az_backend_cpu_ops;
/* "cpu-async" (gpu/cpu_async.c): the cpu forward pass behind the cuda backend's asynchronous
 * slot contract, so the pipelined zero-copy server path runs on any machine: forward_slots
 * queues the batch for a helper thread and returns; responses are in the slots only once
 * wait_slots reports the stream complete; two streams, so two batches can be in flight. */
extern const struct az_backend_ops az_backend_cpu_async_ops;
extern const struct az_backend_ops az_backend_cuda_ops; /* only when built with CUDA */

#endif
