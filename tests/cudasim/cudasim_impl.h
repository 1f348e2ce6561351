/* SPDX-License-Identifier: MIT */
/* cudasim internals shared by its files (memory.cc, streams.cc, exec.cc, cublas.cc); never
 * included by the code under test. One lock covers every table and queue, and work runs with it
 * held: the emulated device runs one operation at a time, which is also what makes the
 * `static` behind __shared__ safe when several host threads synchronise streams at once. */
#ifndef AZ_CUDASIM_IMPL_H
#define AZ_CUDASIM_IMPL_H

#include <cuda_runtime.h>

#include <functional>
#include <mutex>

/* The device lock (recursive: a blocking call runs queued work, which may take it again). */
std::recursive_mutex &az_sim_lock(void);

/* Print "cudasim: <message>" on stderr: why a call returns an error. */
void az_sim_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, then abort: a broken rule inside a kernel (barrier or shuffle divergence). */
[[noreturn]] void az_sim_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Set the calling host thread's last error (cudaGetLastError) and return e. */
cudaError_t az_sim_set_error(cudaError_t e);

/* ---- memory.cc: the allocation table ---- */

enum az_sim_mem {
	AZ_SIM_MEM_PAGEABLE,   /* in no table entry: ordinary host memory */
	AZ_SIM_MEM_DEVICE,     /* cudaMalloc */
	AZ_SIM_MEM_PINNED,     /* cudaMallocHost */
	AZ_SIM_MEM_REGISTERED, /* cudaHostRegister (mapped: the device addresses it too) */
};

/* Which kind of memory p lies in (the entry holding p, or PAGEABLE). */
enum az_sim_mem az_sim_mem_kind(const void *p);

/* 0 when [p, p + bytes) lies inside one entry of the table that the device can address (device
 * or registered memory); else -1 after a note naming call and what ("dst", "A", ...). */
int az_sim_check_device_range(const void *p, size_t bytes, const char *call, const char *what);

/* ---- streams.cc: lazy streams ---- */

/* Queue op on stream s (NULL: the legacy stream), or add it to the graph s is capturing. Returns
 * cudaSuccess, cudaErrorInvalidResourceHandle for a stream that does not exist, or the capture
 * rules' errors. */
cudaError_t az_sim_enqueue(cudaStream_t s, const char *what, std::function<void()> op);
/* Run every op queued on s so far (and, by the legacy stream's rules, what it waits for). */
cudaError_t az_sim_stream_drain(cudaStream_t s);
/* Run every op queued on every stream, in the order they were queued. */
void az_sim_drain_all(void);
/* A blocking or synchronising call made while this thread captures a graph: invalidates the
 * capture and returns cudaErrorStreamCaptureUnsupported; cudaSuccess when not capturing. */
cudaError_t az_sim_capture_forbids(const char *call);
/* Whether s is capturing (its ops become graph nodes instead of running). */
bool az_sim_stream_capturing(cudaStream_t s);

/* ---- exec.cc: running a grid ---- */

/* Run body for every thread of every block, blocks in order, a block's threads as fibers. */
void az_sim_run_grid(const char *name, dim3 grid, dim3 block, size_t smem,
		     const std::function<void()> &body);

#endif
