/* SPDX-License-Identifier: MIT */
/* cudasim: a test double of cuBLAS's v2 API, the part gpu/ uses (handles, stream, math mode,
 * workspace, cublasGemmEx in fp32). The symbols live in the shim libcublas.so.0
 * (tests/cudasim/cublas.cc) that gpu/cuda_blas.cu opens with dlopen as it would the real one.
 * Every argument rule of the real call is checked (lda >= rows of op(A) as stored, ...), and each
 * operand's extent must lie inside one device allocation. */
#ifndef AZ_CUDASIM_CUBLAS_V2_H
#define AZ_CUDASIM_CUBLAS_V2_H

#include <cuda_runtime.h>

/* gpu/cuda_blas.cu opens "libcublas.so.<CUBLAS_VER_MAJOR>": 0 names the shim, never a real one. */
#define CUBLAS_VER_MAJOR 0

typedef enum {
	CUBLAS_STATUS_SUCCESS = 0,
	CUBLAS_STATUS_NOT_INITIALIZED = 1,
	CUBLAS_STATUS_ALLOC_FAILED = 3,
	CUBLAS_STATUS_INVALID_VALUE = 7,
	CUBLAS_STATUS_EXECUTION_FAILED = 13,
	CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

typedef enum {
	CUBLAS_DEFAULT_MATH = 0,
	CUBLAS_TENSOR_OP_MATH = 1,
	CUBLAS_PEDANTIC_MATH = 2,
	CUBLAS_TF32_TENSOR_OP_MATH = 3,
} cublasMath_t;

typedef enum {
	CUBLAS_COMPUTE_32F = 68,
	CUBLAS_COMPUTE_32F_PEDANTIC = 69,
	CUBLAS_COMPUTE_32F_FAST_16F = 74,
	CUBLAS_COMPUTE_32F_FAST_16BF = 75,
	CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
} cublasComputeType_t;

typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

typedef struct cublasContext *cublasHandle_t;

#define cublasCreate cublasCreate_v2
#define cublasDestroy cublasDestroy_v2
#define cublasSetStream cublasSetStream_v2
#define cublasSetWorkspace cublasSetWorkspace_v2

extern "C" {
cublasStatus_t cublasCreate_v2(cublasHandle_t *h);
cublasStatus_t cublasDestroy_v2(cublasHandle_t h);
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode);
/* ws: device memory of at least bytes (checked). */
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t bytes);
/* Column-major C[m, n] = alpha op(A) op(B) + beta C on the handle's stream (queued). fp32
 * storage only; FAST_TF32 / FAST_16BF round A and B to tf32 / bf16 first, as tensor cores do.
 * C is not read when beta is 0. */
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
			    int n, int k, const void *alpha, const void *A, cudaDataType at,
			    int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
			    void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
			    cublasGemmAlgo_t algo);
}

#endif
