/* SPDX-License-Identifier: MIT */
/* cuBLAS, loaded with dlopen the first time a CUDA backend or GPU trainer creates a handle,
 * instead of linked into every program (gpu/cuda_impl.cuh's az_cublas). Loading libcublas maps
 * libcublasLt, whose static initialisers touch about 94 MB of private memory; linked, every
 * process paid it, and every fork of the supervisor (workers, trainer, arena, each phase)
 * copied the page tables for it and unmapped them at the worker's exit: on tic-tac-toe that was
 * a third of a self-play phase. Now only a process that uses the GPU loads it. */
#include "gpu/cuda_impl.cuh"
#include "gpu/cuda_kernels.h"

#include <dlfcn.h>
#include <pthread.h>

struct az_cublas_api az_cublas;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc;

#define AZ_STR_(x) #x
#define AZ_STR(x) AZ_STR_(x) /* expands the macro first: cublasCreate -> "cublasCreate_v2" */

static void load(void)
{
	/* The soname of the toolkit built against, then the toolkit's own folder (for a program
	 * run without LD_LIBRARY_PATH), then the unversioned name. */
	const char *names[] = {"libcublas.so." AZ_STR(CUBLAS_VER_MAJOR),
			       AZ_CUBLAS_DIR "/libcublas.so." AZ_STR(CUBLAS_VER_MAJOR),
			       "libcublas.so"};
	void *h = NULL;
	char first[256] = ""; /* why the soname failed: the one worth telling */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !h; i++) {
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (!h && i == 0)
			snprintf(first, sizeof(first), "%s", dlerror());
	}
	if (!h) {
		fprintf(stderr, "cuda: cannot load cuBLAS: %s\n", first);
		load_rc = -ENODEV;
		return;
	}
#define AZ_CUBLAS_SYM(field, fn)                                                            \
	do {                                                                               \
		az_cublas.field = (decltype(az_cublas.field))dlsym(h, AZ_STR(fn));         \
		if (!az_cublas.field) {                                                    \
			fprintf(stderr, "cuda: cuBLAS lacks %s (a different major "        \
				"version?)\n", AZ_STR(fn));                                \
			load_rc = -ENODEV;                                                 \
			return;                                                            \
		}                                                                          \
	} while (0)
	AZ_CUBLAS_SYM(create, cublasCreate);
	AZ_CUBLAS_SYM(destroy, cublasDestroy);
	AZ_CUBLAS_SYM(set_stream, cublasSetStream);
	AZ_CUBLAS_SYM(set_math_mode, cublasSetMathMode);
	AZ_CUBLAS_SYM(set_workspace, cublasSetWorkspace);
	AZ_CUBLAS_SYM(gemm_ex, cublasGemmEx);
#undef AZ_CUBLAS_SYM
}

int az_cublas_load(void)
{
	pthread_once(&load_once, load); /* load() tells why it failed, once */
	return load_rc;
}
