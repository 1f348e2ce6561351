/* SPDX-License-Identifier: MIT */
/* Internals shared by the .cu files of gpu/ (never included from C or from outside gpu/): status
 * checks, launch geometry, block reductions and the masked-softmax row used by both the softmax
 * kernel and the scatter kernel. */
#ifndef AZ_CUDA_IMPL_CUH
#define AZ_CUDA_IMPL_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* cuBLAS's entry points, filled by az_cublas_load() (gpu/cuda_kernels.h, gpu/cuda_blas.cu): the
 * library is opened with dlopen on first use, not linked, so programs that never use the GPU do
 * not map it. */
struct az_cublas_api {
	decltype(&cublasCreate) create;
	decltype(&cublasDestroy) destroy;
	decltype(&cublasSetStream) set_stream;
	decltype(&cublasSetMathMode) set_math_mode;
	decltype(&cublasSetWorkspace) set_workspace;
	/* the C entry point (C++ also sees an inline overload taking a cudaDataType compute type) */
	cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
				  int, const void *, const void *, cudaDataType, int, const void *,
				  cudaDataType, int, const void *, void *, cudaDataType, int,
				  cublasComputeType_t, cublasGemmAlgo_t);
};
extern struct az_cublas_api az_cublas;

/* Init-time checks: set `ret` and jump to the cleanup label of the calling function. An
 * allocation failure is -ENOMEM, anything else -ENODEV (STYLE.md section 3). */
#define AZ_CUDA_CHECK(call, label)                                                          \
	AZ_GPU_CHECK_(cudaError_t, call, cudaSuccess, cudaErrorMemoryAllocation, label)
#define AZ_CUBLAS_CHECK(call, label)                                                        \
	AZ_GPU_CHECK_(cublasStatus_t, call, CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_ALLOC_FAILED,    \
		      label)
/* Both, for a status of type `type` whose success is ok and allocation failure oom. */
#define AZ_GPU_CHECK_(type, call, ok, oom, label)                                          \
	do {                                                                               \
		type st_ = (call);                                                         \
		if (st_ != (ok)) {                                                         \
			ret = st_ == (oom) ? -ENOMEM : -ENODEV;                            \
			goto label;                                                        \
		}                                                                          \
	} while (0)

/* Steady-state checks: a device error after create is fatal (gpu/cuda_util.cu prints file, line
 * and call, then aborts), except while this thread captures a CUDA graph at create: then the
 * failure is only noted, and the capture is abandoned for direct launches. */
void az_cuda_fail(int status, int is_blas, const char *file, int line, const char *call);
extern thread_local int az_cuda_capturing;      /* set around graph capture */
extern thread_local int az_cuda_capture_failed; /* a check failed while capturing */
extern thread_local char az_cuda_capture_error[160]; /* the first such failure: call: error */

#define AZ_CUDA_FATAL(call) AZ_GPU_FATAL_(cudaError_t, call, #call, cudaSuccess, 0)
#define AZ_CUBLAS_FATAL(call) AZ_GPU_FATAL_(cublasStatus_t, call, #call, CUBLAS_STATUS_SUCCESS, 1)
/* Both: text is the call as written, is_blas picks the error-string table. */
#define AZ_GPU_FATAL_(type, call, text, ok, is_blas)                                       \
	do {                                                                               \
		type st_ = (call);                                                         \
		if (st_ != (ok))                                                           \
			az_cuda_fail((int)st_, is_blas, __FILE__, __LINE__, text);         \
	} while (0)

/* Kernel launches: AZ_LAUNCH(kernel, grid, block, shared, stream)(args...) is the <<<>>> launch
 * under nvcc; in the CPU emulation that the tests build (tests/cudasim/, g++ -x c++, AZ_CUDASIM
 * set by its cuda_runtime.h) it queues the kernel on the emulated stream, to run block by block
 * with each block's threads as fibers. AZ_DYNAMIC_SHARED(type, name) declares the launch's
 * dynamic shared memory as `type name[]`. */
#ifdef AZ_CUDASIM
#define AZ_LAUNCH(kernel, grid, block, shared, stream)                                       \
	az_sim_launch(#kernel, kernel, grid, block, shared, stream)
#define AZ_DYNAMIC_SHARED(type, name) type *name = (type *)az_sim_dynamic_shared()
#else
#define AZ_LAUNCH(kernel, grid, block, shared, stream) kernel<<<grid, block, shared, stream>>>
#define AZ_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

/* After every launch: a bad configuration shows here, not at the next synchronisation. */
#define AZ_CUDA_LAUNCHED() AZ_CUDA_FATAL(cudaGetLastError())

/* The elementwise launch: kernel(args...) over n elements, on az_grid_for(n) blocks of AZ_THREADS
 * (both below; the kernel strides over the grid) on stream (the opaque void *), then
 * AZ_CUDA_LAUNCHED(); nothing at all when n is 0. Built on AZ_LAUNCH, so it serves both builds. */
#define AZ_LAUNCH_1D(kernel, n, stream, ...)                                                \
	do {                                                                                \
		size_t n_ = (n);                                                            \
		if (n_ != 0) {                                                              \
			cudaStream_t s_ = az_stream(stream);                                \
			AZ_LAUNCH(kernel, az_grid_for(n_), AZ_THREADS, 0, s_)(__VA_ARGS__); \
			AZ_CUDA_LAUNCHED();                                                 \
		}                                                                           \
	} while (0)

#define AZ_THREADS 256u    /* elementwise kernels */
#define AZ_ROW_THREADS 128u /* one-block-per-row kernels: 4 warps */
#define AZ_MAX_BLOCKS 4096u

/* Record that this process is about to initialise CUDA (gpu/cuda_util.cu): az_cuda_available()
 * then answers from this process instead of a forked probe. Call before the first CUDA call of
 * every create function. */
void az_cuda_note_init(void);

static inline cudaStream_t az_stream(void *s)
{
	return (cudaStream_t)s;
}

static inline unsigned az_grid_for(size_t n)
{
	size_t blocks = (n + AZ_THREADS - 1) / AZ_THREADS;

	if (blocks == 0)
		blocks = 1;
	return (unsigned)(blocks < AZ_MAX_BLOCKS ? blocks : AZ_MAX_BLOCKS);
}

/* ---- block reductions (blockDim.x a multiple of 32, at most 1024) ---- */

template <typename T> struct az_op_sum {
	__device__ T operator()(T a, T b) const { return a + b; }
};

/* Max that skips NaN like the CPU reference's `x > max` test. */
struct az_op_max {
	__device__ float operator()(float a, float b) const { return b > a ? b : a; }
};

/* Reduce v over the block; every thread receives the result. `shared` holds 32 T; identity is
 * the operation's neutral element. The order is fixed by the launch shape: deterministic. */
template <typename T, typename Op> __device__ T az_block_reduce(T v, Op op, T identity, T *shared)
{
	unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
	unsigned nwarps = (blockDim.x + 31u) >> 5;

	/* Lane 0 of each warp ends with the warp's result (the lanes above it read past the warp
	 * and hold partial garbage, never used). */
	for (int o = 16; o > 0; o >>= 1)
		v = op(v, __shfl_down_sync(0xffffffffu, v, o));
	__syncthreads(); /* shared may still be read by the previous reduction */
	if (lane == 0)
		shared[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = lane < nwarps ? shared[lane] : identity;
		for (int o = 16; o > 0; o >>= 1)
			v = op(v, __shfl_down_sync(0xffffffffu, v, o));
		if (lane == 0)
			shared[0] = v;
	}
	__syncthreads();
	return shared[0];
}

/* Masked softmax of one row, computed by a whole block, with the CPU reference's semantics
 * (az_masked_softmax in gpu/cpu_forward.c): the max is taken over legal logits; with legal moves
 * but no usable logit (all -inf or NaN) the result is uniform over the legal moves; with no
 * legal move every entry is 0. legal may be shared, device or mapped host memory; tmp is device
 * scratch of A floats; out may be mapped host memory (written once per entry). As on the CPU,
 * the worker takes the slot's result as its priors without renormalising. */
__device__ inline void az_row_masked_softmax(const float *logits, const uint8_t *legal,
					     uint32_t A, float *tmp, float *out)
{
	__shared__ float sf[32];
	__shared__ unsigned su[32];
	__shared__ double sd[32];
	float m = -INFINITY;
	unsigned cnt = 0;

	for (uint32_t i = threadIdx.x; i < A; i += blockDim.x) {
		if (legal[i]) {
			cnt++;
			if (logits[i] > m)
				m = logits[i];
		}
	}
	m = az_block_reduce(m, az_op_max(), -INFINITY, sf);
	cnt = az_block_reduce(cnt, az_op_sum<unsigned>(), 0u, su);
	if (cnt > 0 && !(m > -INFINITY)) {
		for (uint32_t i = threadIdx.x; i < A; i += blockDim.x)
			out[i] = legal[i] ? 1.0f / (float)cnt : 0.0f;
		return;
	}
	double s = 0.0;

	for (uint32_t i = threadIdx.x; i < A; i += blockDim.x) {
		float e = legal[i] ? expf(logits[i] - m) : 0.0f;

		tmp[i] = e;
		s += e;
	}
	s = az_block_reduce(s, az_op_sum<double>(), 0.0, sd);
	/* No legal move: every tmp entry is 0, and so is every output (the CPU leaves them so). */
	float inv = cnt > 0 ? (float)(1.0 / s) : 1.0f;

	for (uint32_t i = threadIdx.x; i < A; i += blockDim.x)
		out[i] = tmp[i] * inv;
}

#endif
