/* SPDX-License-Identifier: MIT */
/* The CPU reference forward pass (gpu/cpu_forward.c: OpenBLAS cblas_sgemm, or the packed AVX-512
 * kernels of gpu/cpu_gemm.h), the activations it keeps for backprop, the ResNet convolution
 * helpers it shares with the trainer, and the masked softmax of the self-play path. */
#ifndef AZ_GPU_CPU_FORWARD_H
#define AZ_GPU_CPU_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/cpu_gemm.h"
#include "net/model.h"

/* Activations kept by the forward pass for backprop. MLP: all arrays are [B, H] except logits
 * [B, A] and value [B]; trunk holds h0 and each block's output (R + 1 arrays), inner each
 * block's t. ResNet: trunk and inner are [B * Hb * Wb, F] (one row per cell, channels last), and
 * the heads' arrays below are set (NULL for an MLP). */
struct az_acts {
	uint32_t max_batch;
	float **trunk;  /* R + 1 pointers to [B, H] */
	float **inner;  /* R pointers to [B, H] */
	float *logits;  /* [B, A] */
	float *value;   /* [B] the expected outcome for the side to move: after the tanh, or
	                 * p_win - p_loss for a win/draw/loss head */
	float *draw;    /* [B] p_draw of a win/draw/loss head; 0 for a tanh head */
	float *wdl;     /* [B, 3] a win/draw/loss head's softmax (win, draw, loss); unused (but
	                 * allocated) for a tanh head */
	float *pconv;   /* ResNet: [B, 2 * Hb * Wb] policy planes after ReLU, channel-major */
	float *vconv;   /* ResNet: [B, Hb * Wb] value plane after ReLU */
	float *vhid;    /* ResNet: [B, 64] value fc1 after ReLU */
	float *scratch; /* ResNet: the forward pass's im2col and transpose buffer */
	float *buf;     /* owned storage */
};

/* Allocate activation storage for up to max_batch rows. Returns 0 or -ENOMEM. */
int az_acts_create(const struct az_arch *a, uint32_t max_batch, struct az_acts *acts);
void az_acts_destroy(struct az_acts *acts);

/* Forward pass of B <= acts->max_batch rows of x[B, D]; results in acts->logits, acts->value and
 * acts->draw (and acts->wdl for a win/draw/loss head).
 * Uses one BLAS thread per call's process (set OPENBLAS_NUM_THREADS=1 in the environment). */
void az_model_forward(const struct az_model *m, uint32_t batch, const float *x,
		      struct az_acts *acts);

/* az_model_forward() with the weights packed in pk (made from m's parameters) and the AVX-512
 * kernel; pk NULL: az_model_forward() itself. Same activations kept; the results match
 * OpenBLAS's to float rounding (a different summation order). */
void az_model_forward_packed(const struct az_model *m, const struct az_packed *pk, uint32_t batch,
			     const float *x, struct az_acts *acts);

/* ---- ResNet convolution helpers, shared by the forward pass and backprop ----
 * A 3x3 convolution with padding 1 over batch samples of C channels on an Hb x Wb board is one
 * GEMM: out[batch * Hb * Wb, F] = col[batch * Hb * Wb, 9C] * weight[F, 9C]^T, where col is the
 * im2col matrix below and weight the [F, C, 3, 3] tensor read as [F, 9C]. */

/* Samples a ResNet convolution handles per GEMM: bounds the im2col buffer at
 * AZ_CONV_CHUNK * Hb * Wb * 9 * max(C, F) floats while keeping the GEMMs large. */
#define AZ_CONV_CHUNK 32u

/* col[n * Hb*Wb + y * Wb + x][c * 9 + ky * 3 + kx] = in(n, c, y + ky - 1, x + kx - 1), or 0 off
 * the board, for n < batch; in(n, c, p) (p = y * Wb + x) is in[n * sn + c * sc + p * sp], so
 * plane-major game input (sn = C*Hb*Wb, sc = Hb*Wb, sp = 1) and channels-last activations
 * (sn = Hb*Wb*C, sc = 1, sp = C) share it. col holds batch * Hb*Wb * 9C floats. */
void az_conv3_im2col(const float *in, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
		     size_t sn, size_t sc, size_t sp, float *col);

/* The adjoint of az_conv3_im2col for channels-last data: out[n * Hb*Wb + p][c] += every col
 * entry that im2col read from (n, c, p). out holds batch * Hb*Wb * C floats. */
void az_conv3_col2im(const float *col, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
		     float *out);

/* az_conv3_im2col with the columns tap-major: col[row][t * C + c] (t = ky * 3 + kx) for the same
 * rows, inputs and strides, so each row is nine runs of C channels (a copy each when sc = 1).
 * What the packed kernels (gpu/cpu_gemm.h) and the trainer use, with the weight's columns in
 * the same order. */
void az_conv3_im2col_tap(const float *in, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
			 size_t sn, size_t sc, size_t sp, float *col);

/* The adjoint of az_conv3_im2col_tap for channels-last data, as az_conv3_col2im. */
void az_conv3_col2im_tap(const float *col, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
			 float *out);

/* In place: the softmax of a win/draw/loss head's three logits q[3] (win, draw, loss); non-finite
 * logits give 1/3 each. The one definition of that softmax on the CPU: forward pass, trainer. */
void az_wdl_softmax(float *q);

/* Masked softmax of logits[A] over legal[A] (1 = legal) into prob[A]; illegal entries get 0.
 * With no legal move every entry is 0. What the CPU backends write into the ring slots: the one
 * normalisation of the self-play path (the worker takes it as is, az_tree_expand_normalised). */
void az_masked_softmax(const float *logits, const uint8_t *legal, uint32_t actions, float *prob);

#endif
