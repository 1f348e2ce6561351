/* SPDX-License-Identifier: MIT */
/* cudasim: a test double of the CUDA runtime, so that gpu/'s .cu files, compiled as C++ (g++ -x
 * c++) against this folder, run their host code and kernels on the CPU (tests/cudasim/README.md).
 * Only the part of the runtime API that gpu/ uses; on the include path of the cudasim targets only.
 *
 * The model, in one paragraph: device memory is host memory tracked in an allocation table (every
 * copy, memset and cuBLAS operand is checked against it); work queued on a stream runs lazily, in
 * enqueue order, only when something waits for it (cudaStreamSynchronize, cudaEventSynchronize,
 * cudaDeviceSynchronize, a blocking copy, a second cudaEventQuery); a kernel launch runs block by
 * block, each block's threads as fibers that meet at __syncthreads() and at warp shuffles, where
 * divergence is reported (abort with the kernel, block, thread and source line). */
#ifndef AZ_CUDASIM_CUDA_RUNTIME_H
#define AZ_CUDASIM_CUDA_RUNTIME_H

#ifndef __cplusplus
#error "cudasim's cuda_runtime.h is for the .cu files compiled as C++"
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <math.h>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#define AZ_CUDASIM 1

/* ---- CUDA's keywords: host code all of it; shared memory is a static, one block runs at once */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict

/* ---- types ---- */

typedef enum cudaError {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorInvalidConfiguration = 9,
	cudaErrorInvalidDevicePointer = 17,
	cudaErrorInvalidMemcpyDirection = 21,
	cudaErrorInsufficientDriver = 35,
	cudaErrorNoDevice = 100,
	cudaErrorInvalidResourceHandle = 400,
	cudaErrorNotReady = 600,
	cudaErrorHostMemoryAlreadyRegistered = 712,
	cudaErrorHostMemoryNotRegistered = 713,
	cudaErrorLaunchFailure = 719,
	cudaErrorStreamCaptureUnsupported = 900,
	cudaErrorStreamCaptureInvalidated = 901,
	cudaErrorStreamCaptureUnmatched = 903,
} cudaError_t;

enum cudaMemcpyKind {
	cudaMemcpyHostToHost = 0,
	cudaMemcpyHostToDevice = 1,
	cudaMemcpyDeviceToHost = 2,
	cudaMemcpyDeviceToDevice = 3,
	cudaMemcpyDefault = 4,
};

enum cudaStreamCaptureMode {
	cudaStreamCaptureModeGlobal = 0,
	cudaStreamCaptureModeThreadLocal = 1,
	cudaStreamCaptureModeRelaxed = 2,
};

typedef enum cudaDataType_t {
	CUDA_R_32F = 0,
	CUDA_R_64F = 1,
	CUDA_R_16F = 2,
	CUDA_R_16BF = 14,
} cudaDataType;

#define cudaStreamDefault 0x0u
#define cudaStreamNonBlocking 0x1u
#define cudaEventDefault 0x0u
#define cudaEventDisableTiming 0x2u
#define cudaHostRegisterDefault 0x0u
#define cudaHostRegisterPortable 0x1u
#define cudaHostRegisterMapped 0x2u

typedef struct CUstream_st *cudaStream_t; /* NULL: the legacy default stream */
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;

struct uint3 {
	unsigned x, y, z;
};

struct dim3 {
	unsigned x, y, z;
	dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz)
	{
	}
};

struct cudaDeviceProp {
	char name[256];
	size_t totalGlobalMem, sharedMemPerBlock;
	int warpSize, maxThreadsPerBlock, major, minor, multiProcessorCount;
};

/* ---- the runtime API gpu/ calls (tests/cudasim/runtime.cc, streams.cc) ---- */

extern "C" {
const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaDriverGetVersion(int *version);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int dev);

cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned flags);
cudaError_t cudaHostUnregister(void *p);
cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned flags);

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
			    cudaStream_t s);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
			      size_t width, size_t height, enum cudaMemcpyKind kind,
			      cudaStream_t s);
cudaError_t cudaMemset(void *p, int byte, size_t bytes);
cudaError_t cudaMemsetAsync(void *p, int byte, size_t bytes, cudaStream_t s);

cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventSynchronize(cudaEvent_t e);

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
}

/* ---- inside a kernel (tests/cudasim/exec.cc) ---- */

/* The running thread's coordinates; set by the scheduler before it switches to a thread. Plain
 * globals: kernels run only under the device lock, one at a time. */
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
static constexpr int warpSize = 32;

/* Barrier of the block: every thread that has not exited must reach the same __syncthreads()
 * (same file and line), and none may have exited; otherwise the launch fails (abort). */
void az_sim_syncthreads(const char *file, int line);
#define __syncthreads() az_sim_syncthreads(__FILE__, __LINE__)

/* Warp shuffles. Every lane named in mask must execute a shuffle with the same mask; the calling
 * lane must be in mask, lanes past the block's end may not be, and a lane may not read a lane
 * outside mask; otherwise the launch fails. width: a power of two up to 32. */
enum az_sim_shfl_op { AZ_SIM_SHFL_IDX, AZ_SIM_SHFL_UP, AZ_SIM_SHFL_DOWN, AZ_SIM_SHFL_XOR };
uint64_t az_sim_shfl(enum az_sim_shfl_op op, unsigned mask, uint64_t bits, int arg, int width);

template <typename T>
static inline T az_sim_shfl_t(enum az_sim_shfl_op op, unsigned mask, T v, int arg, int width)
{
	static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffle type");
	uint64_t bits = 0;

	memcpy(&bits, &v, sizeof(T));
	bits = az_sim_shfl(op, mask, bits, arg, width);
	memcpy(&v, &bits, sizeof(T));
	return v;
}
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src, int w = 32)
{
	return az_sim_shfl_t(AZ_SIM_SHFL_IDX, mask, v, src, w);
}
template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int w = 32)
{
	return az_sim_shfl_t(AZ_SIM_SHFL_UP, mask, v, (int)d, w);
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int w = 32)
{
	return az_sim_shfl_t(AZ_SIM_SHFL_DOWN, mask, v, (int)d, w);
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int w = 32)
{
	return az_sim_shfl_t(AZ_SIM_SHFL_XOR, mask, v, m, w);
}

/* The launch's dynamic shared memory (its third launch parameter, poisoned with 0xff bytes). */
void *az_sim_dynamic_shared(void);

/* Atomics: one block runs at a time and its threads are fibers of one host thread, so a plain
 * read-modify-write is atomic. Each returns the old value, as CUDA's do. */
template <typename T, typename F> static inline T az_sim_rmw(T *p, F f)
{
	T old = *p;

	*p = f(old);
	return old;
}
template <typename T> static inline T atomicAdd(T *p, T v)
{
	return az_sim_rmw(p, [v](T o) { return o + v; });
}
template <typename T> static inline T atomicSub(T *p, T v)
{
	return az_sim_rmw(p, [v](T o) { return o - v; });
}
template <typename T> static inline T atomicMax(T *p, T v)
{
	return az_sim_rmw(p, [v](T o) { return v > o ? v : o; });
}
template <typename T> static inline T atomicMin(T *p, T v)
{
	return az_sim_rmw(p, [v](T o) { return v < o ? v : o; });
}
template <typename T> static inline T atomicExch(T *p, T v)
{
	return az_sim_rmw(p, [v](T) { return v; });
}
template <typename T> static inline T atomicCAS(T *p, T cmp, T v)
{
	return az_sim_rmw(p, [cmp, v](T o) { return o == cmp ? v : o; });
}

static inline void __threadfence(void)
{
}
static inline void __threadfence_block(void)
{
}
static inline void __threadfence_system(void)
{
}

/* Round-to-nearest arithmetic: the cudasim targets build with -ffp-contract=off, so these are
 * never fused, like the intrinsics on the device. */
static inline float __fadd_rn(float a, float b)
{
	return a + b;
}
static inline float __fsub_rn(float a, float b)
{
	return a - b;
}
static inline float __fmul_rn(float a, float b)
{
	return a * b;
}
static inline float __fdiv_rn(float a, float b)
{
	return a / b;
}
static inline float __fsqrt_rn(float a)
{
	return sqrtf(a);
}

/* ---- kernel launches (gpu/cuda_impl.cuh's AZ_LAUNCH) ---- */

/* Queue one launch of body on s (checks the configuration first: a bad one sets the last error,
 * as on the device, and queues nothing). body runs once per thread, on that thread's fiber. */
void az_sim_launch_enqueue(const char *name, dim3 grid, dim3 block, size_t smem, cudaStream_t s,
			   std::function<void()> body);

/* kernel<<<grid, block, smem, s>>>(args...): the arguments are converted to the kernel's
 * parameter types and copied when the launch is queued, as CUDA does. */
template <typename... P> struct az_sim_launcher {
	const char *name;
	void (*kernel)(P...);
	dim3 grid, block;
	size_t smem;
	cudaStream_t s;

	template <typename... A> void operator()(A &&...args) const
	{
		void (*k)(P...) = kernel;
		std::tuple<typename std::decay<P>::type...> a(std::forward<A>(args)...);

		az_sim_launch_enqueue(name, grid, block, smem, s, [k, a]() { std::apply(k, a); });
	}
};

template <typename... P>
static inline az_sim_launcher<P...> az_sim_launch(const char *name, void (*kernel)(P...), dim3 grid,
						  dim3 block, size_t smem, cudaStream_t s)
{
	return az_sim_launcher<P...>{name, kernel, grid, block, smem, s};
}

#endif
