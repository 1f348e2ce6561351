/* SPDX-License-Identifier: MIT */
/* Gather and scatter between ring slots and device buffers. The slots live in the run's shared-
 * memory segment, which the inference process registered with cudaHostRegister (mapped), so these
 * kernels read requests and write responses over PCIe/NVLink directly: no staging copy on the
 * host. One block per row; a batch descriptor (gpu/cuda_kernels.h) names the rows' slots.
 *
 * Visibility: a worker's request bytes were published (release) before the server load-acquired
 * `published` and then launched the gather, so the host-side order covers the device's reads.
 * The scatter's writes are complete and visible to the host once the batch's event has completed
 * (the server waits for it before az_ring_serve()); the __threadfence_system() makes the order
 * explicit for the mapped writes. */
#include "gpu/cuda_impl.cuh"
#include "gpu/cuda_kernels.h"

struct geom {
	uint32_t D, A, off_features, off_legal, off_policy, off_status, off_value, off_draw;
};

static struct geom geom_of(const struct az_cuda_slot_geom *g)
{
	struct geom k = { g->features, g->actions, g->off_features, g->off_legal,
			  g->off_policy, g->off_status, g->off_value, g->off_draw };
	return k;
}

static __device__ uint8_t *slot_of(const uint64_t *desc, uint32_t row)
{
	return (uint8_t *)(uintptr_t)(desc[1] + desc[AZ_CUDA_DESC_HEAD + row]);
}

static __global__ void gather_kernel(const uint64_t *desc, struct geom k, float *x)
{
	uint32_t row = blockIdx.x;
	float *dst = x + (size_t)row * k.D;

	if (row >= desc[0]) {
		/* Padding row of a graph bucket: zeros keep every later value finite. */
		for (uint32_t j = threadIdx.x; j < k.D; j += blockDim.x)
			dst[j] = 0.0f;
		return;
	}
	const float *src = (const float *)(slot_of(desc, row) + k.off_features);

	for (uint32_t j = threadIdx.x; j < k.D; j += blockDim.x)
		dst[j] = src[j];
}

/* The legal mask is read once into shared memory (A bytes, dynamic), the softmax numerators go to
 * device scratch, and each policy entry is written to the slot exactly once. */
static __global__ void scatter_kernel(const uint64_t *desc, struct geom k, const float *logits,
				      const float *value, const float *draw, float *tmp)
{
	AZ_DYNAMIC_SHARED(uint8_t, legal);
	uint32_t row = blockIdx.x;

	if (row >= desc[0])
		return; /* padding: no slot */
	uint8_t *slot = slot_of(desc, row);
	const uint8_t *src = slot + k.off_legal;

	for (uint32_t i = threadIdx.x; i < k.A; i += blockDim.x)
		legal[i] = src[i];
	__syncthreads();
	az_row_masked_softmax(logits + (size_t)row * k.A, legal, k.A, tmp + (size_t)row * k.A,
			      (float *)(slot + k.off_policy));
	if (threadIdx.x == 0) {
		*(float *)(slot + k.off_value) = value[row];
		*(float *)(slot + k.off_draw) = draw ? draw[row] : 0.0f;
		*(uint32_t *)(slot + k.off_status) = 0;
	}
	__threadfence_system();
}

extern "C" {

void az_cuda_gather_slots(const uint64_t *desc, const struct az_cuda_slot_geom *g, uint32_t rows,
			  float *x, void *stream)
{
	if (rows == 0)
		return;
	AZ_LAUNCH(gather_kernel, rows, AZ_ROW_THREADS, 0, az_stream(stream))(desc, geom_of(g), x);
	AZ_CUDA_LAUNCHED();
}

void az_cuda_scatter_slots(const uint64_t *desc, const struct az_cuda_slot_geom *g, uint32_t rows,
			   const float *logits, const float *value, const float *draw, float *tmp,
			   void *stream)
{
	if (rows == 0)
		return;
	AZ_LAUNCH(scatter_kernel, rows, AZ_ROW_THREADS, g->actions, az_stream(stream))(
		desc, geom_of(g), logits, value, draw, tmp);
	AZ_CUDA_LAUNCHED();
}

} /* extern "C" */
