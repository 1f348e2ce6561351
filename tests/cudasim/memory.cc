/* SPDX-License-Identifier: MIT */
/* cudasim's memory: the allocation table (device, pinned and registered host memory), the
 * device queries, errors, and the copies and memsets with their extent checks and the runtime's
 * documented host synchronisation (which copies return before the data has landed). */
#include "tests/cudasim/cudasim_impl.h"

#include <map>
#include <memory>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

namespace {

struct entry {
	size_t size;
	enum az_sim_mem kind;
};

/* base address -> entry; entries never overlap */
std::map<uintptr_t, entry> &table()
{
	static std::map<uintptr_t, entry> t;
	return t;
}

thread_local cudaError_t last_error = cudaSuccess;

/* The entry holding p, or end(). */
std::map<uintptr_t, entry>::iterator find(const void *p)
{
	auto &t = table();
	uintptr_t a = (uintptr_t)p;
	auto it = t.upper_bound(a);

	if (it == t.begin())
		return t.end();
	--it;
	if (a >= it->first && (a < it->first + it->second.size || a == it->first))
		return it;
	return t.end();
}

const char *kind_name(enum az_sim_mem k)
{
	static const char *const names[] = {"pageable host", "device", "pinned host",
					    "registered host"};
	return names[k];
}

/* An allocation of bytes (0 allowed), 256-aligned like cudaMalloc's, entered as kind. */
cudaError_t table_alloc(void **p, size_t bytes, enum az_sim_mem kind, const char *call)
{
	void *q = NULL;

	if (!p)
		return az_sim_set_error(cudaErrorInvalidValue);
	if (posix_memalign(&q, 256, bytes ? bytes : 1) != 0) {
		*p = NULL;
		return az_sim_set_error(cudaErrorMemoryAllocation);
	}
	/* Uninitialised memory reads as NaN (0xff bytes): a kernel or copy that reads what nobody
	 * wrote poisons the result the test compares. */
	memset(q, 0xff, bytes ? bytes : 1);
	table()[(uintptr_t)q] = entry{bytes, kind};
	*p = q;
	(void)call;
	return cudaSuccess;
}

/* Remove the entry based at p, of kind; the error when p is not such a base. */
cudaError_t table_free(void *p, enum az_sim_mem kind, const char *call, bool release)
{
	auto it = table().find((uintptr_t)p);

	if (it == table().end() || it->second.kind != kind) {
		az_sim_note("%s(%p): not the start of a %s allocation", call, p, kind_name(kind));
		return az_sim_set_error(kind == AZ_SIM_MEM_REGISTERED
						? cudaErrorHostMemoryNotRegistered
						: cudaErrorInvalidValue);
	}
	table().erase(it);
	if (release)
		free(p);
	return cudaSuccess;
}

/* [p, p + bytes) as host memory: not device memory, and inside its entry when pinned or
 * registered (a range running off a pinned buffer is a wrong size, not pageable memory). */
int check_host_range(const void *p, size_t bytes, const char *call, const char *what)
{
	auto it = find(p);

	if (it == table().end())
		return 0;
	if (it->second.kind == AZ_SIM_MEM_DEVICE) {
		az_sim_note("%s: %s %p is device memory, but the copy's kind says host", call,
			    what, p);
		return -1;
	}
	if ((uintptr_t)p - it->first + bytes > it->second.size) {
		az_sim_note("%s: %s [%p, +%zu) runs past its %s allocation of %zu bytes at %p",
			    call, what, p, bytes, kind_name(it->second.kind), it->second.size,
			    (void *)it->first);
		return -1;
	}
	return 0;
}

/* Is the side at p device memory, by kind (or, for cudaMemcpyDefault, by the table)? */
bool side_is_device(enum cudaMemcpyKind kind, const void *p, bool dst)
{
	if (kind == cudaMemcpyDefault)
		return az_sim_mem_kind(p) == AZ_SIM_MEM_DEVICE;
	if (dst)
		return kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
	return kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
}

/* Extent checks of a (possibly pitched) copy: each side spans (rows - 1) * pitch + width. */
cudaError_t check_copy(const char *call, void *dst, size_t dpitch, const void *src,
		       size_t spitch, size_t width, size_t rows, enum cudaMemcpyKind kind)
{
	if ((unsigned)kind > cudaMemcpyDefault)
		return az_sim_set_error(cudaErrorInvalidMemcpyDirection);
	if (width > dpitch || width > spitch) {
		az_sim_note("%s: width %zu exceeds a pitch (dst %zu, src %zu)", call, width, dpitch,
			    spitch);
		return az_sim_set_error(cudaErrorInvalidValue);
	}
	if (width == 0 || rows == 0)
		return cudaSuccess;
	size_t dspan = (rows - 1) * dpitch + width, sspan = (rows - 1) * spitch + width;
	int bad = side_is_device(kind, dst, true) ? az_sim_check_device_range(dst, dspan, call, "dst")
						  : check_host_range(dst, dspan, call, "dst");

	bad |= side_is_device(kind, src, false) ? az_sim_check_device_range(src, sspan, call, "src")
						: check_host_range(src, sspan, call, "src");
	return bad ? az_sim_set_error(cudaErrorInvalidValue) : cudaSuccess;
}

void copy_2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t rows)
{
	for (size_t r = 0; r < rows; r++)
		memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
}

/* Queue a pitched copy on s with the runtime's host synchronisation:
 * - from pageable host memory: the source is staged (copied) now, the copy lands later;
 * - to pageable host memory: the call returns after the copy (the stream is drained);
 * - otherwise (pinned, registered, device) the copy runs when the stream is next drained, so a
 *   host read of its destination before a synchronisation sees the old bytes.
 * blocking: cudaMemcpy's rules (pinned/device to host and pinned to device also complete). */
cudaError_t queue_copy(const char *call, void *dst, size_t dpitch, const void *src,
		       size_t spitch, size_t width, size_t rows, enum cudaMemcpyKind kind,
		       cudaStream_t s, bool blocking)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	cudaError_t e = check_copy(call, dst, dpitch, src, spitch, width, rows, kind);
	bool dst_dev = side_is_device(kind, dst, true), src_dev = side_is_device(kind, src, false);
	bool src_pageable = !src_dev && az_sim_mem_kind(src) == AZ_SIM_MEM_PAGEABLE;
	bool dst_pageable = !dst_dev && az_sim_mem_kind(dst) == AZ_SIM_MEM_PAGEABLE;

	if (e != cudaSuccess || width == 0 || rows == 0)
		return e;
	if ((src_pageable || dst_pageable) && az_sim_stream_capturing(s)) {
		az_sim_note("%s: pageable host memory in a captured copy", call);
		return az_sim_set_error(cudaErrorStreamCaptureUnsupported);
	}
	if (src_pageable && !dst_pageable) {
		/* Staging: "a stream sync is performed before the copy is initiated". */
		e = az_sim_stream_drain(s);
		if (e != cudaSuccess)
			return e;
		auto staged = std::make_shared<std::vector<char>>(rows * width);

		copy_2d(staged->data(), width, src, spitch, width, rows);
		e = az_sim_enqueue(s, call, [=]() {
			copy_2d(dst, dpitch, staged->data(), width, width, rows);
		});
		return e;
	}
	e = az_sim_enqueue(s, call, [=]() { copy_2d(dst, dpitch, src, spitch, width, rows); });
	if (e != cudaSuccess)
		return e;
	if (dst_pageable || (blocking && (!dst_dev || !src_dev)))
		e = az_sim_stream_drain(s);
	return e;
}

} /* namespace */

/* ---- internals ---- */

std::recursive_mutex &az_sim_lock(void)
{
	static std::recursive_mutex m;
	return m;
}

static void vnote(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void az_sim_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vnote("cudasim: ", fmt, ap);
	va_end(ap);
}

void az_sim_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vnote("cudasim: FAIL: ", fmt, ap);
	va_end(ap);
	abort();
}

cudaError_t az_sim_set_error(cudaError_t e)
{
	if (e != cudaSuccess)
		last_error = e;
	return e;
}

enum az_sim_mem az_sim_mem_kind(const void *p)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	auto it = find(p);

	return it == table().end() ? AZ_SIM_MEM_PAGEABLE : it->second.kind;
}

int az_sim_check_device_range(const void *p, size_t bytes, const char *call, const char *what)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	auto it = find(p);

	if (it == table().end() || it->second.kind == AZ_SIM_MEM_PINNED ||
	    it->second.kind == AZ_SIM_MEM_PAGEABLE) {
		az_sim_note("%s: %s %p is not device memory", call, what, p);
		return -1;
	}
	if ((uintptr_t)p - it->first + bytes > it->second.size) {
		az_sim_note("%s: %s [%p, +%zu) runs past its %s allocation of %zu bytes at %p "
			    "(by %zu bytes)", call, what, p, bytes, kind_name(it->second.kind),
			    it->second.size, (void *)it->first,
			    (size_t)((uintptr_t)p - it->first + bytes - it->second.size));
		return -1;
	}
	return 0;
}

/* ---- the API ---- */

extern "C" {

const char *cudaGetErrorString(cudaError_t e)
{
	switch (e) {
	case cudaSuccess:
		return "no error";
	case cudaErrorInvalidValue:
		return "invalid argument";
	case cudaErrorMemoryAllocation:
		return "out of memory";
	case cudaErrorInvalidConfiguration:
		return "invalid configuration argument";
	case cudaErrorInvalidMemcpyDirection:
		return "invalid copy direction for memcpy";
	case cudaErrorInsufficientDriver:
		return "CUDA driver version is insufficient for CUDA runtime version";
	case cudaErrorInvalidResourceHandle:
		return "invalid resource handle";
	case cudaErrorNotReady:
		return "device not ready";
	case cudaErrorHostMemoryAlreadyRegistered:
		return "part or all of the requested memory range is already mapped";
	case cudaErrorHostMemoryNotRegistered:
		return "pointer does not correspond to a registered memory region";
	case cudaErrorStreamCaptureUnsupported:
		return "operation not permitted when stream is capturing";
	case cudaErrorStreamCaptureInvalidated:
		return "operation failed due to a previous error during capture";
	default:
		return "cudasim error";
	}
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = last_error;

	last_error = cudaSuccess;
	return e;
}

cudaError_t cudaPeekAtLastError(void)
{
	return last_error;
}

/* AZ_CUDASIM_DRIVER=none: a machine without the NVIDIA driver, which the CUDA runtime reports
 * as a driver too old for it (cudaErrorInsufficientDriver). */
cudaError_t cudaGetDeviceCount(int *n)
{
	const char *driver = getenv("AZ_CUDASIM_DRIVER");

	if (!n)
		return az_sim_set_error(cudaErrorInvalidValue);
	if (driver && strcmp(driver, "none") == 0)
		return az_sim_set_error(cudaErrorInsufficientDriver);
	*n = 1;
	return cudaSuccess;
}

/* 13000 (CUDA 13.0), or 0 (no driver installed) with AZ_CUDASIM_DRIVER=none. */
cudaError_t cudaDriverGetVersion(int *version)
{
	const char *driver = getenv("AZ_CUDASIM_DRIVER");

	if (!version)
		return az_sim_set_error(cudaErrorInvalidValue);
	*version = driver && strcmp(driver, "none") == 0 ? 0 : 13000;
	return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev)
{
	if (!dev)
		return az_sim_set_error(cudaErrorInvalidValue);
	*dev = 0;
	return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int dev)
{
	if (!prop || dev != 0)
		return az_sim_set_error(cudaErrorInvalidValue);
	memset(prop, 0, sizeof(*prop));
	snprintf(prop->name, sizeof(prop->name), "cudasim (CPU emulation)");
	prop->totalGlobalMem = (size_t)1 << 34;
	prop->sharedMemPerBlock = 48 << 10;
	prop->warpSize = 32;
	prop->maxThreadsPerBlock = 1024;
	prop->major = 9;
	prop->multiProcessorCount = 1;
	return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	cudaError_t e = az_sim_capture_forbids("cudaMalloc");

	return e != cudaSuccess ? e : table_alloc(p, bytes, AZ_SIM_MEM_DEVICE, "cudaMalloc");
}

cudaError_t cudaFree(void *p)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());

	if (!p)
		return cudaSuccess;
	az_sim_drain_all(); /* cudaFree synchronises the device */
	return table_free(p, AZ_SIM_MEM_DEVICE, "cudaFree", true);
}

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());

	return table_alloc(p, bytes, AZ_SIM_MEM_PINNED, "cudaMallocHost");
}

cudaError_t cudaFreeHost(void *p)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());

	if (!p)
		return cudaSuccess;
	az_sim_drain_all();
	return table_free(p, AZ_SIM_MEM_PINNED, "cudaFreeHost", true);
}

cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned flags)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	uintptr_t a = (uintptr_t)p;

	if (!p || bytes == 0 || (flags & ~(cudaHostRegisterPortable | cudaHostRegisterMapped)))
		return az_sim_set_error(cudaErrorInvalidValue);
	auto it = table().lower_bound(a);
	bool overlap = (it != table().end() && it->first < a + bytes) ||
		       find(p) != table().end();
	if (overlap)
		return az_sim_set_error(cudaErrorHostMemoryAlreadyRegistered);
	table()[a] = entry{bytes, AZ_SIM_MEM_REGISTERED};
	return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *p)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());

	return table_free(p, AZ_SIM_MEM_REGISTERED, "cudaHostUnregister", false);
}

cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned flags)
{
	enum az_sim_mem k = az_sim_mem_kind(host);

	if (!dev || flags != 0 || (k != AZ_SIM_MEM_REGISTERED && k != AZ_SIM_MEM_PINNED)) {
		az_sim_note("cudaHostGetDevicePointer(%p): not registered or pinned memory", host);
		return az_sim_set_error(cudaErrorInvalidValue);
	}
	*dev = host; /* unified addressing: the same address on both sides */
	return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	cudaError_t e = az_sim_capture_forbids("cudaMemcpy");

	return e != cudaSuccess ? e
				: queue_copy("cudaMemcpy", dst, bytes, src, bytes, bytes, 1, kind,
					     NULL, true);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
			    cudaStream_t s)
{
	return queue_copy("cudaMemcpyAsync", dst, bytes, src, bytes, bytes, 1, kind, s, false);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
			      size_t width, size_t height, enum cudaMemcpyKind kind,
			      cudaStream_t s)
{
	return queue_copy("cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, s,
			  false);
}

cudaError_t cudaMemsetAsync(void *p, int byte, size_t bytes, cudaStream_t s)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());

	if (bytes == 0)
		return cudaSuccess;
	if (az_sim_check_device_range(p, bytes, "cudaMemset", "dst"))
		return az_sim_set_error(cudaErrorInvalidValue);
	return az_sim_enqueue(s, "cudaMemset", [=]() { memset(p, byte, bytes); });
}

/* Asynchronous with respect to the host for device memory: queued on the legacy stream. */
cudaError_t cudaMemset(void *p, int byte, size_t bytes)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	cudaError_t e = az_sim_capture_forbids("cudaMemset");

	return e != cudaSuccess ? e : cudaMemsetAsync(p, byte, bytes, NULL);
}

} /* extern "C" */
