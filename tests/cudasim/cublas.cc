/* SPDX-License-Identifier: MIT */
/* cudasim's cuBLAS: built as the shim libcublas.so.0 that gpu/cuda_blas.cu opens with dlopen, so
 * the project's loader runs too. Handles carry a stream and a workspace; cublasGemmEx checks the
 * arguments as cuBLAS documents them (CUBLAS_STATUS_INVALID_VALUE for m, n, k < 0, lda <
 * max(1, rows of op(A) as stored), ldb likewise, ldc < max(1, m)), checks each operand's extent
 * against the device allocations, and queues a column-major product on the handle's stream. */
#include "tests/cudasim/cudasim_impl.h"

#include <cublas_v2.h>

#include <string.h>
#include <vector>

struct cublasContext {
	cudaStream_t stream;
	void *workspace;
	size_t workspace_bytes;
	cublasMath_t math;
};

namespace {

/* Round to the nearest value with `bits` mantissa bits, ties to even (tf32: 10, bf16: 7); NaN and
 * infinities pass. */
float round_mantissa(float v, int bits)
{
	uint32_t u, drop = 23 - bits;

	if (bits >= 23)
		return v;
	memcpy(&u, &v, 4);
	if ((u & 0x7f800000u) == 0x7f800000u)
		return v;
	u += ((1u << drop) >> 1) - 1 + ((u >> drop) & 1u);
	u &= ~((1u << drop) - 1);
	memcpy(&v, &u, 4);
	return v;
}

/* Element (r, c) of op(X) for column-major X with leading dimension ld. */
inline float at(const float *x, int ld, bool trans, int r, int c)
{
	return trans ? x[(size_t)r * ld + c] : x[(size_t)c * ld + r];
}

struct gemm_args {
	bool ta, tb;
	int m, n, k, lda, ldb, ldc, bits; /* bits: input mantissa, 23 for plain fp32 */
	float alpha, beta;
	const float *A, *B;
	float *C;
};

void gemm_run(const gemm_args &g)
{
	std::vector<float> a((size_t)g.m * g.k), b((size_t)g.k * g.n);

	for (int p = 0; p < g.k; p++) {
		for (int i = 0; i < g.m; i++)
			a[(size_t)i * g.k + p] = round_mantissa(at(g.A, g.lda, g.ta, i, p), g.bits);
		for (int j = 0; j < g.n; j++)
			b[(size_t)j * g.k + p] = round_mantissa(at(g.B, g.ldb, g.tb, p, j), g.bits);
	}
	for (int j = 0; j < g.n; j++) {
		for (int i = 0; i < g.m; i++) {
			const float *ai = &a[(size_t)i * g.k], *bj = &b[(size_t)j * g.k];
			double s = 0.0;
			float *c = &g.C[(size_t)j * g.ldc + i];

			for (int p = 0; p < g.k; p++)
				s += (double)ai[p] * bj[p];
			/* beta == 0: C is not read (it may hold NaN), as cuBLAS specifies */
			*c = g.beta == 0.0f ? (float)(g.alpha * s)
					    : (float)(g.alpha * s + (double)g.beta * *c);
		}
	}
}

/* The bytes a column-major rows x cols operand with leading dimension ld spans. */
size_t span(int rows, int cols, int ld)
{
	if (rows == 0 || cols == 0)
		return 0;
	return ((size_t)(cols - 1) * ld + rows) * sizeof(float);
}

cublasStatus_t invalid(const char *why, int a, int b)
{
	az_sim_note("cublasGemmEx: %s (%d < %d): CUBLAS_STATUS_INVALID_VALUE", why, a, b);
	return CUBLAS_STATUS_INVALID_VALUE;
}

int max1(int v)
{
	return v > 1 ? v : 1;
}

} /* namespace */

extern "C" {

cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
	if (!h)
		return CUBLAS_STATUS_INVALID_VALUE;
	*h = new cublasContext{NULL, NULL, 0, CUBLAS_DEFAULT_MATH};
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	delete h;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	h->stream = s;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	h->math = mode;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t bytes)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (bytes && az_sim_check_device_range(ws, bytes, "cublasSetWorkspace", "workspace"))
		return CUBLAS_STATUS_INVALID_VALUE;
	h->workspace = ws;
	h->workspace_bytes = bytes;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
			    int n, int k, const void *alpha, const void *A, cudaDataType at_,
			    int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
			    void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
			    cublasGemmAlgo_t algo)
{
	gemm_args g;

	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (m < 0 || n < 0 || k < 0) {
		az_sim_note("cublasGemmEx: negative size m %d n %d k %d", m, n, k);
		return CUBLAS_STATUS_INVALID_VALUE;
	}
	if ((ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
		return invalid("transpose other than N or T (not emulated)", 0, 0);
	g.ta = ta == CUBLAS_OP_T;
	g.tb = tb == CUBLAS_OP_T;
	/* A is stored m x k (N) or k x m (T); B k x n or n x k; C m x n. */
	int arows = g.ta ? k : m, acols = g.ta ? m : k, brows = g.tb ? n : k, bcols = g.tb ? k : n;

	if (lda < max1(arows))
		return invalid("lda below the rows of A as stored", lda, max1(arows));
	if (ldb < max1(brows))
		return invalid("ldb below the rows of B as stored", ldb, max1(brows));
	if (ldc < max1(m))
		return invalid("ldc below m", ldc, max1(m));
	if (at_ != CUDA_R_32F || bt != CUDA_R_32F || ct != CUDA_R_32F) {
		az_sim_note("cublasGemmEx: only CUDA_R_32F operands are emulated");
		return CUBLAS_STATUS_NOT_SUPPORTED;
	}
	switch (compute) {
	case CUBLAS_COMPUTE_32F:
	case CUBLAS_COMPUTE_32F_PEDANTIC:
		g.bits = 23;
		break;
	case CUBLAS_COMPUTE_32F_FAST_TF32:
		g.bits = 10;
		break;
	case CUBLAS_COMPUTE_32F_FAST_16BF:
		g.bits = 7;
		break;
	default:
		az_sim_note("cublasGemmEx: compute type %d is not emulated", (int)compute);
		return CUBLAS_STATUS_NOT_SUPPORTED;
	}
	if (algo != CUBLAS_GEMM_DEFAULT || !alpha || !beta)
		return invalid("algorithm other than CUBLAS_GEMM_DEFAULT, or no alpha/beta", 0, 0);
	if (m == 0 || n == 0)
		return CUBLAS_STATUS_SUCCESS;
	/* Host pointer mode: alpha and beta are read now, as cuBLAS does. */
	g.alpha = *(const float *)alpha;
	g.beta = *(const float *)beta;
	if ((k > 0 && az_sim_check_device_range(A, span(arows, acols, lda), "cublasGemmEx", "A")) ||
	    (k > 0 && az_sim_check_device_range(B, span(brows, bcols, ldb), "cublasGemmEx", "B")) ||
	    az_sim_check_device_range(C, span(m, n, ldc), "cublasGemmEx", "C"))
		return CUBLAS_STATUS_INVALID_VALUE;
	g.m = m;
	g.n = n;
	g.k = k;
	g.lda = lda;
	g.ldb = ldb;
	g.ldc = ldc;
	g.A = (const float *)A;
	g.B = (const float *)B;
	g.C = (float *)C;
	if (az_sim_enqueue(h->stream, "cublasGemmEx", [g]() { gemm_run(g); }) != cudaSuccess)
		return CUBLAS_STATUS_EXECUTION_FAILED;
	return CUBLAS_STATUS_SUCCESS;
}

} /* extern "C" */
