/* SPDX-License-Identifier: MIT */
/* Convolution kernels of the ResNet: im2col (a 3x3, padding-1 convolution as one GEMM), its
 * adjoint col2im as a gather (each output written by one thread: no atomics, a fixed summation
 * order), and the channels-last <-> channel-major transpose of the heads' planes. Index for
 * index what az_conv3_im2col / az_conv3_col2im and the head loops of gpu/cpu_forward.c and
 * train/trainer.c compute. Grid-stride loops. */
#include "gpu/cuda_impl.cuh"
#include "gpu/cuda_kernels.h"

/* col[(n * cells + y * Wb + x) * 9C + c * 9 + k] = in(n, c, y + ky - 1, x + kx - 1) or 0, one
 * thread per col entry. */
static __global__ void im2col_kernel(const float *in, size_t n_all, uint32_t C, uint32_t Hb,
				     uint32_t Wb, size_t sn, size_t sc, size_t sp, float *col)
{
	size_t K = (size_t)9 * C, cells = (size_t)Hb * Wb;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_all;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t row = i / K, n = row / cells;
		uint32_t j = (uint32_t)(i % K), c = j / 9, k = j % 9;
		int y = (int)((row % cells) / Wb) + (int)(k / 3) - 1;
		int x = (int)((row % cells) % Wb) + (int)(k % 3) - 1;

		col[i] = y < 0 || x < 0 || y >= (int)Hb || x >= (int)Wb
				 ? 0.0f
				 : in[n * sn + c * sc + ((size_t)y * Wb + (size_t)x) * sp];
	}
}

/* out[(n * cells + p) * C + c] (+)= sum over k of the col entries im2col read from (n, c, p):
 * the rows q = p - offset(k) that lie on the board, k in increasing order. */
static __global__ void col2im_kernel(const float *col, size_t n_all, uint32_t C, uint32_t Hb,
				     uint32_t Wb, float *out, int accumulate)
{
	size_t K = (size_t)9 * C, cells = (size_t)Hb * Wb;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_all;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t pos = i / C, n = pos / cells;
		uint32_t c = (uint32_t)(i % C);
		int py = (int)((pos % cells) / Wb), px = (int)((pos % cells) % Wb);
		float s = accumulate ? out[i] : 0.0f;

		for (uint32_t k = 0; k < 9; k++) {
			int qy = py - ((int)(k / 3) - 1), qx = px - ((int)(k % 3) - 1);

			if (qy < 0 || qx < 0 || qy >= (int)Hb || qx >= (int)Wb)
				continue;
			size_t q = n * cells + (size_t)qy * Wb + (size_t)qx;

			s = __fadd_rn(s, col[q * K + (size_t)c * 9 + k]);
		}
		out[i] = s;
	}
}

/* to_major: out[(n * planes + c) * cells + q] = in[(n * cells + q) * planes + c]; else the
 * inverse. One thread per output entry. */
static __global__ void planes_kernel(const float *in, size_t n_all, uint32_t cells,
				     uint32_t planes, float *out, int to_major)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_all;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t per = (size_t)cells * planes, n = i / per, r = i % per;
		size_t c = to_major ? r / cells : r % planes, q = to_major ? r % cells : r / planes;
		size_t cl = (n * cells + q) * planes + c, cm = (n * planes + c) * cells + q;

		out[i] = to_major ? in[cl] : in[cm];
	}
}

extern "C" {

void az_cuda_im2col(const float *in, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
		    size_t sn, size_t sc, size_t sp, float *col, void *stream)
{
	size_t n = (size_t)batch * Hb * Wb * 9 * C;

	AZ_LAUNCH_1D(im2col_kernel, n, stream, in, n, C, Hb, Wb, sn, sc, sp, col);
}

void az_cuda_col2im(const float *col, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
		    float *out, int accumulate, void *stream)
{
	size_t n = (size_t)batch * Hb * Wb * C;

	AZ_LAUNCH_1D(col2im_kernel, n, stream, col, n, C, Hb, Wb, out, accumulate);
}

void az_cuda_planes(const float *in, uint32_t batch, uint32_t cells, uint32_t planes,
		    float *out, int to_major, void *stream)
{
	size_t n = (size_t)batch * cells * planes;

	AZ_LAUNCH_1D(planes_kernel, n, stream, in, n, cells, planes, out, to_major);
}

} /* extern "C" */
