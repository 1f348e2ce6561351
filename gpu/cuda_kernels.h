/* SPDX-License-Identifier: MIT */
/* Plain C interface of the CUDA kernels and of the network passes built from them (no CUDA types:
 * streams and cuBLAS handles cross as opaque pointers, NULL meaning the legacy default stream).
 * Every pointer argument is device memory (or mapped host memory, where a comment says so).
 * Launchers only enqueue; a launch error after create is fatal (abort with file and line, the
 * ggml stance: azrun restarts the inference server). Sections name the implementing file. */
#ifndef AZ_CUDA_KERNELS_H
#define AZ_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "net/model.h" /* C linkage also when included from a .cu file */

/* GEMM precision (AZ_CUDA_MATH=fp32|tf32|bf16). tf32 and bf16 keep fp32 storage and let cuBLAS
 * down-convert the GEMM inputs on the tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32 / _FAST_16BF);
 * accumulation and every hand-written kernel stay fp32. */
enum az_cuda_math {
	AZ_CUDA_MATH_FP32 = 0,
	AZ_CUDA_MATH_TF32 = 1,
	AZ_CUDA_MATH_BF16 = 2,
};

enum az_cuda_act {
	AZ_CUDA_ACT_NONE = 0,
	AZ_CUDA_ACT_RELU = 1,
	AZ_CUDA_ACT_TANH = 2,
};

/* Where a request/response slot keeps its fields (byte offsets from the slot start): a copy of
 * shm/slot.h's struct az_slot_layout plus the three header fields the scatter kernel writes. C++
 * cannot include shm/slot.h (it uses _Static_assert), so gpu/backend.c fills this in C and pins
 * the header offsets with compile-time asserts. */
struct az_cuda_slot_geom {
	uint32_t features;     /* D floats at off_features */
	uint32_t actions;      /* A: legal mask bytes at off_legal, policy floats at off_policy */
	uint32_t off_features;
	uint32_t off_legal;
	uint32_t off_policy;
	uint32_t off_status;   /* uint32_t status in the slot header */
	uint32_t off_value;    /* float value in the slot header */
	uint32_t off_draw;     /* float draw in the slot header */
	uint32_t bytes;        /* slot size */
};

/* Fill g for a game with `features` inputs and `actions` moves (gpu/backend.c). */
void az_cuda_slot_geom_init(struct az_cuda_slot_geom *g, uint32_t features, uint32_t actions);

/* A batch descriptor, device memory, read by the gather and scatter kernels:
 *   desc[0] = n (rows holding requests), desc[1] = device address of the registered segment,
 *   desc[2 + i] = byte offset of row i's slot from that address (i < n).
 * The kernels are launched for `rows` >= n rows (a CUDA graph's bucket); rows >= n are padding. */
#define AZ_CUDA_DESC_HEAD 2u

/* ---- gpu/cuda_util.cu: device discovery, settings, memory ---- */

/* Parse AZ_CUDA_MATH from the environment: unset or "fp32" -> FP32, "tf32", "bf16".
 * Returns the enum value, or -EINVAL for any other text. */
int az_cuda_math_env(void);

/* Name of a math mode ("fp32", "tf32", "bf16"). */
const char *az_cuda_math_name(int math);

/* Device memory for tests and tools: allocate (0, -ENOMEM, -ENODEV), free (NULL ok), blocking
 * copies in either direction (cudaMemcpyDefault; 0 or -EIO), fill with a byte (0 or -EIO), and
 * wait for all device work (0 or -EIO). */
int az_cuda_dev_alloc(void **p, size_t bytes);
void az_cuda_dev_free(void *p);
int az_cuda_copy(void *dst, const void *src, size_t bytes);
int az_cuda_memset(void *p, int byte, size_t bytes);
int az_cuda_sync(void);

/* Page-lock and map host memory [p, p + bytes) (cudaHostRegister, mapped + portable) and return
 * the address kernels use for it. Returns 0, -EINVAL, -ENOMEM or -ENODEV. */
int az_cuda_host_register(void *p, size_t bytes, void **dev);
void az_cuda_host_unregister(void *p);

/* ---- gpu/cuda_kernels_act.cu: elementwise (grid-stride over row-major [rows, cols]) ---- */

/* y[r, c] = act(y[r, c] + b[c]). */
void az_cuda_bias_act(float *y, const float *b, uint32_t rows, uint32_t cols, int act,
		      void *stream);
/* out[r, c] = relu(h[r, c] + out[r, c] + b[c]): the residual sum, out holding W2 t on entry. */
void az_cuda_residual_relu(float *out, const float *h, const float *b, uint32_t rows,
			   uint32_t cols, void *stream);
/* g[i] = y[i] > 0 ? dy[i] : 0 for n elements (g may alias dy). */
void az_cuda_relu_grad(const float *y, const float *dy, float *g, size_t n, void *stream);
/* out[c] = sum over r of m[r, c], summed in row order in fp32 (the CPU trainer's order). */
void az_cuda_colsum(const float *m, uint32_t rows, uint32_t cols, float *out, void *stream);

/* ---- gpu/cuda_kernels_softmax.cu: softmax family (one block per row) ---- */

/* prob[r] = masked softmax of logits[r] over legal[r] (uint8, 1 = legal), as
 * az_masked_softmax(): 0 on illegal moves, uniform when no legal logit is usable. */
void az_cuda_masked_softmax(const float *logits, const uint8_t *legal, uint32_t rows,
			    uint32_t actions, float *prob, void *stream);
/* Policy cross-entropy of each row: row_ce[r] = -sum_a pi log softmax(logits)_a (double) and,
 * when dlogits is not NULL, dlogits = (softmax * sum(pi) - pi) * inv_b, the softmax over the
 * legal actions only (pi not -0.0f; dlogits 0 elsewhere), as az_train_policy_xent(). */
void az_cuda_policy_xent(const float *logits, const float *pi, uint32_t rows, uint32_t actions,
			 double inv_b, float *dlogits, double *row_ce, void *stream);
/* The win/draw/loss head's output, in place over wdl[rows, 3] (on entry the last layer's product
 * without its bias b[3]): wdl[r] = softmax(wdl[r] + b) (win, draw, loss), as az_wdl_softmax()
 * (1/3 each for NaN or infinite logits), then value[r] = p_win - p_loss and draw[r] = p_draw. */
void az_cuda_wdl_softmax(float *wdl, const float *b, uint32_t rows, float *value, float *draw,
			 void *stream);
/* Value loss of each row against its target z[r] in [-1, 1], as value_loss() in
 * train/trainer.c. wdl NULL (a tanh head): row_loss[r] = (value[r] - z[r])^2 and, when dpre
 * [rows] is not NULL, the gradient w.r.t. the pre-tanh value, dpre[r] = 2 (v - z) (1 - v^2)
 * inv_b. wdl [rows, 3] (a win/draw/loss head's probabilities, az_cuda_wdl_softmax): row_loss[r]
 * = -sum_k t_k log max(p_k, 1e-30) over t = (max(z, 0), 1 - |z|, max(-z, 0)) and, when dpre
 * [rows, 3] is not NULL, the gradient w.r.t. the three logits, dpre[r, k] = (p_k - t_k) inv_b;
 * value is not read then. */
void az_cuda_value_loss(const float *value, const float *wdl, const float *z, uint32_t rows,
			double inv_b, float *dpre, double *row_loss, void *stream);

/* ---- gpu/cuda_gather.cu: ring slots <-> device buffers (slots in mapped host memory) ---- */

/* x[i, :] = features of row i's slot for i < desc[0]; zero for the padding rows up to `rows`. */
void az_cuda_gather_slots(const uint64_t *desc, const struct az_cuda_slot_geom *g, uint32_t rows,
			  float *x, void *stream);
/* For each row i < desc[0]: the slot's policy = masked softmax of logits[i] over the slot's legal
 * mask, value = value[i], draw = draw[i] (0 when draw is NULL: a tanh head), status = 0. tmp is
 * [rows, A] device scratch. Padding rows are left alone, so no slot outside the batch is
 * written. */
void az_cuda_scatter_slots(const uint64_t *desc, const struct az_cuda_slot_geom *g, uint32_t rows,
			   const float *logits, const float *value, const float *draw, float *tmp,
			   void *stream);

/* ---- gpu/cuda_kernels_optim.cu: optimiser steps and reductions ---- */

/* Adam with the bias corrections folded into step and eps (as train/trainer.c):
 * m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; w -= step m / (sqrt(v) + eps). */
void az_cuda_adam(float *w, const float *g, float *m, float *v, size_t n, float beta1,
		  float beta2, float step, float eps, void *stream);
/* SGD with heavy-ball momentum: vel = mu vel + g; w -= lr vel. */
void az_cuda_sgd(float *w, const float *g, float *vel, size_t n, float momentum, float lr,
		 void *stream);
/* g[i] += coef * w[i] where decay[i] is nonzero (weights; biases are not decayed). */
void az_cuda_l2_grad(const float *w, const uint8_t *decay, size_t n, float coef, float *g,
		     void *stream);
/* out[0] = sum of w[i]^2 where decay[i] (double, deterministic: fixed grid, then one block);
 * partial holds AZ_CUDA_REDUCE_BLOCKS doubles of scratch. */
#define AZ_CUDA_REDUCE_BLOCKS 128u
void az_cuda_sumsq_masked(const float *w, const uint8_t *decay, size_t n, double *partial,
			  double *out, void *stream);
/* out[0] = sum of in[0 .. n) in a fixed order (one block). */
void az_cuda_sum_f64(const double *in, uint32_t n, double *out, void *stream);

/* ---- gpu/cuda_kernels_conv.cu: the ResNet's convolution plumbing (net/model.h) ---- */

/* col = az_conv3_im2col(in, batch, C, Hb, Wb, sn, sc, sp) (gpu/cpu_forward.h): batch * Hb*Wb rows of
 * 9C floats. */
void az_cuda_im2col(const float *in, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
		    size_t sn, size_t sc, size_t sp, float *col, void *stream);
/* out[batch * Hb*Wb, C] (channels last) = (accumulate ? out : 0) + az_conv3_col2im of col. */
void az_cuda_col2im(const float *col, uint32_t batch, uint32_t C, uint32_t Hb, uint32_t Wb,
		    float *out, int accumulate, void *stream);
/* to_major != 0: out[n][c][q] = in[n][q][c] (channels last -> channel-major, planes x cells per
 * sample); 0: the inverse. */
void az_cuda_planes(const float *in, uint32_t batch, uint32_t cells, uint32_t planes,
		    float *out, int to_major, void *stream);

/* ---- gpu/cuda_net.cu: the networks of net/model.h with cuBLAS + the kernels above ---- */

/* Activations of a pass over up to max_batch samples: trunk holds R + 1 arrays (h0 and each
 * block's output), inner R arrays (each block's t), consecutive arrays `stride` floats apart,
 * each [B, H] for an MLP, [B * cells, F] for a ResNet (channels last); logits [B, A]; value [B]
 * (after the tanh, or p_win - p_loss). A win/draw/loss value head only (NULL for a tanh head):
 * draw [B] (p_draw) and wdl [B, 3] (the softmax, kept for the loss). ResNet only (NULL for an
 * MLP): heads, az_cuda_net_heads_floats() floats holding the policy planes, the value plane,
 * value fc1, and the im2col matrix of a whole batch. */
struct az_cuda_acts {
	float *trunk;
	float *inner;
	size_t stride;
	float *logits;
	float *value;
	float *draw;
	float *wdl;
	float *heads;
};

/* Gradient scratch: dh, dg, dt each `stride` floats as above; ResNet only: heads,
 * az_cuda_net_bwd_heads_floats() floats (the heads' gradients; the column gradient reuses the
 * activations' im2col matrix). */
struct az_cuda_bwd_ws {
	float *dh;
	float *dg;
	float *dt;
	float *heads;
};

/* Floats of one trunk array for max_batch samples (the stride above), and of the ResNet's extra
 * activation and gradient blocks (0 for an MLP). */
size_t az_cuda_net_stride(const struct az_arch *a, uint32_t max_batch);
size_t az_cuda_net_heads_floats(const struct az_arch *a, uint32_t max_batch);
size_t az_cuda_net_bwd_heads_floats(const struct az_arch *a, uint32_t max_batch);

/* Forward pass of `batch` rows of x[B, D] with params (az_model_tensor() order), on cuBLAS handle
 * blas (bound to `stream` by the caller). */
void az_cuda_net_forward(void *blas, void *stream, int math, const struct az_arch *a,
			 const float *params, uint32_t batch, const float *x,
			 const struct az_cuda_acts *acts);

/* Backward pass of the data terms, given dlogits [B, A] and dpre [B, V] (the gradient w.r.t. the
 * value head's last layer's V = az_arch_value_outputs(a) outputs, az_cuda_value_loss) and the
 * activations of the forward pass: grad (n_params, parameter layout) is overwritten. */
void az_cuda_net_backward(void *blas, void *stream, int math, const struct az_arch *a,
			  const float *params, uint32_t batch, const float *x,
			  const struct az_cuda_acts *acts, const float *dlogits, const float *dpre,
			  const struct az_cuda_bwd_ws *ws, float *grad);

/* cuBLAS handle for the passes above: created bound to `stream` with its own workspace (so CUDA
 * graph capture never allocates). Returns 0, -ENOMEM or -ENODEV. */
int az_cuda_blas_create(void *stream, void **blas, void **workspace);
void az_cuda_blas_destroy(void *blas, void *workspace);

/* gpu/cuda_blas.cu: opens libcublas with dlopen and resolves the entry points the passes use,
 * once per process (thread-safe; az_cuda_blas_create calls it). cuBLAS is not linked: loading
 * it maps ~94 MB of private memory, which every process and every fork would pay. Returns 0,
 * or -ENODEV when the library or a symbol is missing (the reason printed once to stderr). */
int az_cublas_load(void);

#ifdef __cplusplus
}
#endif

#endif
