/* SPDX-License-Identifier: MIT */
/* The device probe of tools/gpu-check.sh's preflight (built by gpu-pack.sh, or by gpu-check.sh
 * itself when it builds): driver and runtime versions, each device, then a context, a copy and
 * one kernel launch on device 0, each failure printed with its CUDA error string, so "no
 * CUDA-capable device", "driver version is insufficient" and "no kernel image is available"
 * (built for another architecture) read differently; then cuBLAS opened and a handle created as
 * gpu/cuda_blas.cu does. It times the context and cuBLAS: the fixed cost every process that
 * uses the GPU pays (azrun's trainer is a new process each iteration). Exit 0 when all of it
 * worked, else 1. */
#include <cstdio>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <time.h>

static __global__ void add_one(int *p)
{
	p[threadIdx.x] += 1;
}

/* Print the failed call and its error; 1 when it failed. */
static int failed(cudaError_t e, const char *call)
{
	if (e == cudaSuccess)
		return 0;
	printf("%s: %s (%s, error %d)\n", call, cudaGetErrorString(e), cudaGetErrorName(e), (int)e);
	return 1;
}

static double now_ms()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Open cuBLAS by its soname (the library path decides where from), create and destroy a handle.
 * Returns 0, or 1 with the reason printed. */
static int probe_cublas()
{
	typedef int (*create_fn)(void **);
	typedef int (*destroy_fn)(void *);
	char name[32];
	void *h, *handle = NULL;
	double t0 = now_ms();

	snprintf(name, sizeof(name), "libcublas.so.%d", CUDART_VERSION / 1000);
	h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("cuBLAS: %s\n", dlerror());
		return 1;
	}
	double t1 = now_ms();
	create_fn create = (create_fn)dlsym(h, "cublasCreate_v2");
	destroy_fn destroy = (destroy_fn)dlsym(h, "cublasDestroy_v2");
	int st = create && destroy ? create(&handle) : -1;

	if (st != 0) {
		printf("cuBLAS: cublasCreate failed (status %d)\n", st);
		return 1;
	}
	printf("cuBLAS %s: load %.0f ms, handle %.0f ms\n", name, t1 - t0, now_ms() - t1);
	destroy(handle);
	return 0;
}

int main()
{
	int n = 0, drv = 0, rt = 0, host[32], *d = NULL;

	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	printf("driver API %d, runtime %d\n", drv, rt);
	if (failed(cudaGetDeviceCount(&n), "cudaGetDeviceCount"))
		return 1;
	for (int i = 0; i < n; i++) {
		cudaDeviceProp p;

		if (failed(cudaGetDeviceProperties(&p, i), "cudaGetDeviceProperties"))
			return 1;
		printf("device %d: %s, sm_%d%d, %d SMs, %.0f GiB\n", i, p.name, p.major, p.minor,
		       p.multiProcessorCount, p.totalGlobalMem / 1073741824.0);
	}
	if (n == 0) {
		printf("no device\n");
		return 1;
	}
	for (int i = 0; i < 32; i++)
		host[i] = i;
	double t0 = now_ms();

	if (failed(cudaFree(0), "context (cudaFree(0))"))
		return 1;
	printf("context: %.0f ms\n", now_ms() - t0);
	if (failed(cudaMalloc((void **)&d, sizeof(host)), "cudaMalloc") ||
	    failed(cudaMemcpy(d, host, sizeof(host), cudaMemcpyHostToDevice), "cudaMemcpy H2D"))
		return 1;
	add_one<<<1, 32>>>(d);
	if (failed(cudaGetLastError(), "kernel launch") ||
	    failed(cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost), "cudaMemcpy D2H"))
		return 1;
	for (int i = 0; i < 32; i++) {
		if (host[i] != i + 1) {
			printf("kernel result wrong at %d: %d\n", i, host[i]);
			return 1;
		}
	}
	cudaFree(d);
	printf("copy and kernel launch: ok\n");
	return probe_cublas();
}
