/* SPDX-License-Identifier: MIT */
/* The policy/value network description: a residual MLP over the flattened game encoding.
 *   h0 = relu(W_in x + b_in)                                   [H]
 *   block b: t = relu(W1 h + b1); h = relu(h + W2 t + b2)       [H]   (R blocks)
 *   policy logits = W_p h + b_p                                 [A]
 *   value = tanh(w_v h + b_v)                                   scalar, side to move
 * All parameters live in one contiguous float array, tensor after tensor in the order of
 * az_model_tensor() (row-major [out, in] weights), so optimisers and checkpoints see one vector. */
#ifndef AZ_MODEL_H
#define AZ_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct az_arch {
	uint32_t inputs;  /* D */
	uint32_t hidden;  /* H */
	uint32_t blocks;  /* R */
	uint32_t actions; /* A */
};

struct az_model {
	struct az_arch arch;
	float *params; /* n_params floats, owned */
	size_t n_params;
	char game[32];
	uint32_t iteration;
	/* How the game was configured, "key=value;..." (Tangled: "graph=3;variant=free"), so a
	 * checkpoint can be used without repeating those options; "" when there is nothing. */
	char game_options[160];
};

/* One named tensor inside params. */
struct az_tensor {
	char name[48];   /* e.g. "trunk.in.weight", "block.0.fc1.bias", "policy.weight" */
	uint32_t rows;   /* out features (1 for the value weight row) */
	uint32_t cols;   /* in features; 1 for biases stored as [rows] (ndim 1) */
	uint32_t ndim;   /* 2 for weights, 1 for biases */
	size_t offset;   /* in floats from params */
};

/* Number of tensors: 2 + 4R + 4. */
uint32_t az_model_tensor_count(const struct az_arch *a);

/* Description of tensor i (0 <= i < count). Returns 0 or -EINVAL. Order: trunk.in.weight,
 * trunk.in.bias, block.<b>.fc1.weight, .fc1.bias, .fc2.weight, .fc2.bias for each block,
 * policy.weight, policy.bias, value.weight [1,H], value.bias [1]. */
int az_model_tensor(const struct az_arch *a, uint32_t i, struct az_tensor *t);

/* Total parameter count. */
size_t az_model_param_count(const struct az_arch *a);

/* Allocate a zeroed model. Returns 0, -EINVAL (zero sizes) or -ENOMEM. */
int az_model_create(const struct az_arch *a, struct az_model **out);
void az_model_destroy(struct az_model *m);

/* He-normal weights (He et al. 2015), zero biases, deterministic in seed. The last layer of each
 * residual block and the heads are scaled down so an untrained net starts near uniform. */
void az_model_init_random(struct az_model *m, uint64_t seed);

/* 1 when a and b describe the same network (inputs, width, blocks, actions), else 0: the test
 * for whether a model's parameters fit a backend or a server built for another architecture. */
int az_arch_equal(const struct az_arch *a, const struct az_arch *b);

/* Parse "HxR" style text ("64x2": hidden 64, 2 blocks). Returns 0 or -EINVAL. */
int az_arch_parse(const char *text, uint32_t *hidden, uint32_t *blocks);

/* ---- CPU reference forward pass (gpu/cpu_forward.c, OpenBLAS cblas_sgemm) ---- */

/* Activations kept by the forward pass for backprop. All arrays are [B, H] except logits [B, A]
 * and value [B]; trunk holds h0 and each block's output (R + 1 arrays), inner each block's t. */
struct az_acts {
	uint32_t max_batch;
	float **trunk;  /* R + 1 pointers to [B, H] */
	float **inner;  /* R pointers to [B, H] */
	float *logits;  /* [B, A] */
	float *value;   /* [B] (after tanh) */
	float *buf;     /* owned storage */
};

/* Allocate activation storage for up to max_batch rows. Returns 0 or -ENOMEM. */
int az_acts_create(const struct az_arch *a, uint32_t max_batch, struct az_acts *acts);
void az_acts_destroy(struct az_acts *acts);

/* Forward pass of B <= acts->max_batch rows of x[B, D]; results in acts->logits and acts->value.
 * Uses one BLAS thread per call's process (set OPENBLAS_NUM_THREADS=1 in the environment). */
void az_model_forward(const struct az_model *m, uint32_t batch, const float *x,
		      struct az_acts *acts);

/* Masked softmax of logits[A] over legal[A] (1 = legal) into prob[A]; illegal entries get 0.
 * With no legal move every entry is 0. What the CPU backends write into the ring slots: the one
 * normalisation of the self-play path (the worker takes it as is, az_tree_expand_normalised). */
void az_masked_softmax(const float *logits, const uint8_t *legal, uint32_t actions, float *prob);

#endif
