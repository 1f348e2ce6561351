/* SPDX-License-Identifier: MIT */
/* The emulator's own checks: each rule that tests/cudasim/README.md promises is broken once on
 * purpose and must show (a FAIL abort in a forked child, an error status, or stale host data),
 * and the legal uses give CUDA's answers. Compiled as C++ against the doubles. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern "C" {
#include <cmocka.h>
}

#include <cublas_v2.h>
#include <cuda_runtime.h>

/* ---- kernels ---- */

/* out[block] = sum of in over the block: shuffles within warps, shared memory across them. */
static __global__ void block_sum(const float *in, float *out)
{
	__shared__ float part[32];
	float v = in[blockIdx.x * blockDim.x + threadIdx.x];

	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	if ((threadIdx.x & 31u) == 0)
		part[threadIdx.x >> 5] = v;
	__syncthreads();
	if (threadIdx.x == 0) {
		float s = 0.0f;

		for (unsigned w = 0; w < blockDim.x / 32; w++)
			s += part[w];
		out[blockIdx.x] = s;
	}
}

/* Thread 0 skips the barrier. */
static __global__ void divergent_barrier(float *out)
{
	if (threadIdx.x != 0)
		__syncthreads();
	out[threadIdx.x] = 1.0f;
}

/* Lanes 16..31 exit before the full-mask shuffle. */
static __global__ void shuffle_after_exit(float *out)
{
	if (threadIdx.x >= 16)
		return;
	out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1.0f, 1);
}

static __global__ void count(unsigned *n)
{
	atomicAdd(n, 1u);
}

/* Run fn in a child and expect it to abort (a cudasim FAIL). */
static void expect_abort(void (*fn)(void))
{
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
}

static float *dev_floats(size_t n)
{
	void *p = NULL;

	assert_int_equal(cudaMalloc(&p, n * sizeof(float)), cudaSuccess);
	return (float *)p;
}

/* ---- tests ---- */

static void test_block_sum(void **state)
{
	const unsigned blocks = 3, threads = 96;
	float in[blocks * threads], out[blocks], *d_in = dev_floats(blocks * threads);
	float *d_out = dev_floats(blocks);
	unsigned *d_n, n = 0;

	(void)state;
	for (unsigned i = 0; i < blocks * threads; i++)
		in[i] = (float)(i % 7);
	assert_int_equal(cudaMemcpy(d_in, in, sizeof(in), cudaMemcpyHostToDevice), cudaSuccess);
	az_sim_launch("block_sum", block_sum, blocks, threads, 0, NULL)(d_in, d_out);
	assert_int_equal(cudaGetLastError(), cudaSuccess);
	assert_int_equal(cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost), cudaSuccess);
	for (unsigned b = 0; b < blocks; b++) {
		float want = 0.0f;

		for (unsigned t = 0; t < threads; t++)
			want += in[b * threads + t];
		assert_true(out[b] == want);
	}
	assert_int_equal(cudaMalloc((void **)&d_n, 4), cudaSuccess);
	assert_int_equal(cudaMemset(d_n, 0, 4), cudaSuccess);
	az_sim_launch("count", count, 4, dim3(8, 2), 0, NULL)(d_n);
	assert_int_equal(cudaMemcpy(&n, d_n, 4, cudaMemcpyDeviceToHost), cudaSuccess);
	assert_int_equal(n, 64);
	/* a bad configuration is the last error, and nothing runs */
	az_sim_launch("count", count, 1, 2048, 0, NULL)(d_n);
	assert_int_equal(cudaGetLastError(), cudaErrorInvalidConfiguration);
	cudaFree(d_in);
	cudaFree(d_out);
	cudaFree(d_n);
}

static void run_divergent_barrier(void)
{
	float *d = dev_floats(64);

	az_sim_launch("divergent_barrier", divergent_barrier, 1, 64, 0, NULL)(d);
	cudaDeviceSynchronize();
}

static void run_shuffle_after_exit(void)
{
	float *d = dev_floats(32);

	az_sim_launch("shuffle_after_exit", shuffle_after_exit, 1, 32, 0, NULL)(d);
	cudaDeviceSynchronize();
}

static void test_kernel_rules(void **state)
{
	(void)state;
	expect_abort(run_divergent_barrier);
	expect_abort(run_shuffle_after_exit);
}

/* Work queued on a stream runs only when the host waits for it. */
static void test_lazy_stream(void **state)
{
	cudaStream_t s;
	cudaEvent_t ev;
	float *h, *d = dev_floats(4), src[4] = {1, 2, 3, 4};

	(void)state;
	assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
	assert_int_equal(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), cudaSuccess);
	assert_int_equal(cudaMallocHost((void **)&h, sizeof(src)), cudaSuccess);
	memset(h, 0, sizeof(src));
	assert_int_equal(cudaMemcpyAsync(d, src, sizeof(src), cudaMemcpyHostToDevice, s),
			 cudaSuccess);
	src[0] = 99.0f; /* pageable source: staged at the call, so this change does not travel */
	assert_int_equal(cudaMemcpyAsync(h, d, sizeof(src), cudaMemcpyDeviceToHost, s),
			 cudaSuccess);
	assert_int_equal(cudaEventRecord(ev, s), cudaSuccess);
	assert_true(h[0] == 0.0f); /* the missing synchronisation shows */
	assert_int_equal(cudaEventQuery(ev), cudaErrorNotReady);
	assert_true(h[0] == 0.0f);
	assert_int_equal(cudaEventQuery(ev), cudaSuccess);
	assert_true(h[0] == 1.0f && h[3] == 4.0f);
	/* the legacy stream does not wait for a non-blocking one */
	h[1] = 0.0f;
	assert_int_equal(cudaMemcpyAsync(h, d, sizeof(src), cudaMemcpyDeviceToHost, s),
			 cudaSuccess);
	assert_int_equal(cudaStreamSynchronize(NULL), cudaSuccess);
	assert_true(h[1] == 0.0f);
	assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
	assert_true(h[1] == 2.0f);
	cudaEventDestroy(ev);
	cudaStreamDestroy(s);
	cudaFreeHost(h);
	cudaFree(d);
}

static void test_copy_extents(void **state)
{
	float *d = dev_floats(8), h[16];

	(void)state;
	assert_int_equal(cudaMemcpy(d, h, 9 * sizeof(float), cudaMemcpyHostToDevice),
			 cudaErrorInvalidValue);
	assert_int_equal(cudaMemcpy(h, d + 1, 8 * sizeof(float), cudaMemcpyDeviceToHost),
			 cudaErrorInvalidValue);
	/* kind says device, pointer is host */
	assert_int_equal(cudaMemcpy(h, h + 8, 4, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
	assert_int_equal(cudaMemcpy2DAsync(d, 8, h, 16, 8, 5, cudaMemcpyHostToDevice, NULL),
			 cudaErrorInvalidValue); /* 4 * 8 + 8 = 40 bytes > 32 */
	assert_int_equal(cudaMemset(d, 0, 33), cudaErrorInvalidValue);
	assert_int_equal(cudaFree(h), cudaErrorInvalidValue);
	(void)cudaGetLastError();
	cudaFree(d);
}

static void test_capture(void **state)
{
	cudaStream_t s;
	cudaGraph_t g = NULL;
	cudaGraphExec_t x = NULL;
	float *d = dev_floats(1), h = 0.0f, one = 1.0f;
	void *p = NULL;

	(void)state;
	assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
	assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
	assert_int_equal(cudaMemsetAsync(d, 0, 4, s), cudaSuccess);
	assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
	assert_int_equal(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
	assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
	assert_int_equal(cudaMemcpy(d, &one, 4, cudaMemcpyHostToDevice), cudaSuccess);
	assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
	assert_int_equal(cudaGraphLaunch(x, s), cudaSuccess);
	assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
	assert_int_equal(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost), cudaSuccess);
	assert_true(h == 0.0f); /* the graph's memset ran */
	/* an allocation during capture invalidates it */
	assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
	assert_int_equal(cudaMalloc(&p, 4), cudaErrorStreamCaptureUnsupported);
	assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
	(void)cudaGetLastError();
	cudaGraphExecDestroy(x);
	cudaStreamDestroy(s);
	cudaFree(d);
}

/* C[2, 3] = A^T B with A stored 4 x 2 (lda 5) and B 4 x 3 (ldb 4), column-major. */
static void test_gemm(void **state)
{
	float A[5 * 2], B[4 * 3], C[2 * 3], want[2 * 3], alpha = 1.0f, beta = 0.0f;
	float *dA = dev_floats(10), *dB = dev_floats(12), *dC = dev_floats(6);
	cublasHandle_t h;

	(void)state;
	for (int i = 0; i < 10; i++)
		A[i] = (float)(i + 1);
	for (int i = 0; i < 12; i++)
		B[i] = (float)(i % 5) - 2.0f;
	for (int j = 0; j < 3; j++)
		for (int i = 0; i < 2; i++) {
			want[j * 2 + i] = 0.0f;
			for (int p = 0; p < 4; p++)
				want[j * 2 + i] += A[i * 5 + p] * B[j * 4 + p];
		}
	cudaMemcpy(dA, A, sizeof(A), cudaMemcpyHostToDevice);
	cudaMemcpy(dB, B, sizeof(B), cudaMemcpyHostToDevice);
	assert_int_equal(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
	assert_int_equal(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 3, 4, &alpha, dA, CUDA_R_32F,
				      5, dB, CUDA_R_32F, 4, &beta, dC, CUDA_R_32F, 2,
				      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
			 CUBLAS_STATUS_SUCCESS);
	assert_int_equal(cudaMemcpy(C, dC, sizeof(C), cudaMemcpyDeviceToHost), cudaSuccess);
	assert_memory_equal(C, want, sizeof(C));
	/* lda below A's stored rows (4), ldc below m, B running past its allocation */
	assert_int_equal(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 3, 4, &alpha, dA, CUDA_R_32F,
				      3, dB, CUDA_R_32F, 4, &beta, dC, CUDA_R_32F, 2,
				      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
			 CUBLAS_STATUS_INVALID_VALUE);
	assert_int_equal(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 3, 4, &alpha, dA, CUDA_R_32F,
				      5, dB, CUDA_R_32F, 4, &beta, dC, CUDA_R_32F, 1,
				      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
			 CUBLAS_STATUS_INVALID_VALUE);
	assert_int_equal(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 3, 4, &alpha, dA, CUDA_R_32F,
				      5, dB, CUDA_R_32F, 5, &beta, dC, CUDA_R_32F, 2,
				      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
			 CUBLAS_STATUS_INVALID_VALUE);
	cublasDestroy(h);
	cudaFree(dA);
	cudaFree(dB);
	cudaFree(dC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_sum),   cmocka_unit_test(test_kernel_rules),
		cmocka_unit_test(test_lazy_stream), cmocka_unit_test(test_copy_extents),
		cmocka_unit_test(test_capture),     cmocka_unit_test(test_gemm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
