/* SPDX-License-Identifier: MIT */
/* Device discovery, settings from the environment and small memory helpers of the CUDA build.
 *
 * Fork safety: the CUDA driver cannot be used in a child forked after the parent initialised it,
 * and azrun checks for a device in its main before it forks the inference server and trainer.
 * az_cuda_available() therefore probes in a short-lived child process unless this process has
 * already initialised CUDA itself, and caches the answer (children inherit the cache). */
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/cuda_impl.cuh"
#include "gpu/cuda_kernels.h"

extern "C" {
#include "gpu/backend.h"
}

static int cached_available = -1;
/* Why no device is usable, from the probe (the CUDA error string): "" while unknown or usable. */
static char probe_reason[160];

thread_local int az_cuda_capturing = 0;
thread_local int az_cuda_capture_failed = 0;
thread_local char az_cuda_capture_error[160];

void az_cuda_fail(int status, int is_blas, const char *file, int line, const char *call)
{
	if (az_cuda_capturing) {
		if (!az_cuda_capture_failed)
			snprintf(az_cuda_capture_error, sizeof(az_cuda_capture_error), "%s: %s",
				 call, is_blas ? "cublas error"
					       : cudaGetErrorString((cudaError_t)status));
		az_cuda_capture_failed = 1;
		(void)cudaGetLastError();
		return;
	}
	if (is_blas)
		fprintf(stderr, "%s:%d: %s: cublas status %d\n", file, line, call, status);
	else
		fprintf(stderr, "%s:%d: %s: %s\n", file, line, call,
			cudaGetErrorString((cudaError_t)status));
	abort();
}

/* 1 when a device is visible; else 0 with probe_reason saying why, with the CUDA error string
 * ("no CUDA-capable device is detected", "CUDA driver version is insufficient for CUDA runtime
 * version", ...), so "no device" and "driver too old" read differently. The runtime reports a
 * machine with no NVIDIA driver at all (a CPU-only machine running the CUDA build) as a driver
 * too old: cudaDriverGetVersion's 0 ("no driver is installed", CUDA Runtime API reference)
 * tells the two apart, and the reason then says so. */
static int probe_here(void)
{
	int n = 0, driver = -1;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess &&
	    driver == 0) {
		snprintf(probe_reason, sizeof(probe_reason), "no NVIDIA driver loaded "
			 "(cudaDriverGetVersion: none; cudaGetDeviceCount error %d)", (int)e);
		(void)cudaGetLastError();
		return 0;
	}
	if (e != cudaSuccess) {
		snprintf(probe_reason, sizeof(probe_reason), "cudaGetDeviceCount: %s (error %d)",
			 cudaGetErrorString(e), (int)e);
		/* Clear the error so it does not leak into later calls. */
		(void)cudaGetLastError();
		return 0;
	}
	if (n == 0)
		snprintf(probe_reason, sizeof(probe_reason), "cudaGetDeviceCount: 0 devices");
	return n > 0;
}

/* probe_here() in a child; its reason comes back through a pipe. */
static int probe_in_child(void)
{
	int status = 0, fds[2];
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		/* Dies with the caller (a killed inference process leaves no probe behind). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		int ok = probe_here();
		ssize_t w = write(fds[1], probe_reason, strlen(probe_reason));
		(void)w;
		_exit(ok ? 0 : 1);
	}
	close(fds[1]);
	ssize_t got = read(fds[0], probe_reason, sizeof(probe_reason) - 1);
	probe_reason[got > 0 ? got : 0] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Called before anything that initialises CUDA in this process: once it is initialised, a child
 * could no longer probe for us. */
void az_cuda_note_init(void)
{
	if (cached_available < 0)
		cached_available = probe_here();
}

extern "C" {

int az_cuda_available(void)
{
	if (cached_available < 0) {
		int r = probe_in_child();

		cached_available = r < 0 ? probe_here() : r;
	}
	return cached_available;
}

const char *az_cuda_unavailable(void)
{
	if (az_cuda_available())
		return NULL;
	return probe_reason[0] ? probe_reason : "no CUDA device visible";
}

int az_cuda_math_env(void)
{
	const char *s = getenv("AZ_CUDA_MATH");

	if (!s || !*s || strcmp(s, "fp32") == 0)
		return AZ_CUDA_MATH_FP32;
	if (strcmp(s, "tf32") == 0)
		return AZ_CUDA_MATH_TF32;
	if (strcmp(s, "bf16") == 0)
		return AZ_CUDA_MATH_BF16;
	return -EINVAL;
}

const char *az_cuda_math_name(int math)
{
	switch (math) {
	case AZ_CUDA_MATH_TF32:
		return "tf32";
	case AZ_CUDA_MATH_BF16:
		return "bf16";
	default:
		return "fp32";
	}
}

int az_cuda_dev_alloc(void **p, size_t bytes)
{
	cudaError_t e;

	az_cuda_note_init();
	e = cudaMalloc(p, bytes ? bytes : 1);
	if (e == cudaSuccess)
		return 0;
	*p = NULL;
	return e == cudaErrorMemoryAllocation ? -ENOMEM : -ENODEV;
}

void az_cuda_dev_free(void *p)
{
	if (p)
		(void)cudaFree(p);
}

int az_cuda_copy(void *dst, const void *src, size_t bytes)
{
	return cudaMemcpy(dst, src, bytes, cudaMemcpyDefault) == cudaSuccess ? 0 : -EIO;
}

int az_cuda_memset(void *p, int byte, size_t bytes)
{
	return cudaMemset(p, byte, bytes) == cudaSuccess ? 0 : -EIO;
}

int az_cuda_sync(void)
{
	return cudaDeviceSynchronize() == cudaSuccess ? 0 : -EIO;
}

int az_cuda_host_register(void *p, size_t bytes, void **dev)
{
	cudaError_t e;

	if (!p || bytes == 0 || !dev)
		return -EINVAL;
	az_cuda_note_init();
	/* Mapped: kernels address it directly; portable: every context may use it. */
	e = cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		return e == cudaErrorMemoryAllocation ? -ENOMEM
		       : e == cudaErrorInvalidValue   ? -EINVAL
						      : -ENODEV;
	}
	e = cudaHostGetDevicePointer(dev, p, 0);
	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		(void)cudaHostUnregister(p);
		return -ENODEV;
	}
	return 0;
}

void az_cuda_host_unregister(void *p)
{
	if (p)
		(void)cudaHostUnregister(p);
}

} /* extern "C" */
