/* SPDX-License-Identifier: MIT */
/* The policy/value network description, one of two kinds (struct az_arch.kind):
 * AZ_NET_MLP, a residual MLP over the flattened game encoding:
 *   h0 = relu(W_in x + b_in)                                   [H]
 *   block b: t = relu(W1 h + b1); h = relu(h + W2 t + b2)       [H]   (R blocks)
 *   policy logits = W_p h + b_p                                 [A]
 *   value = tanh(w_v h + b_v)                                   scalar, side to move
 *   (or, with a win/draw/loss value head, softmax(W_v h + b_v)  [3]: see enum az_value_head)
 * AZ_NET_RESNET, AlphaZero's residual convolutional net (Silver et al. 2017, "Methods: neural
 * network architecture") over the encoding read as C planes of Hb x Wb cells, F filters:
 *   h0 = relu(conv3x3(x))                                       [F, Hb, Wb]  (padding 1)
 *   block b: t = relu(conv3x3(h)); h = relu(h + conv3x3(t))     [F, Hb, Wb]  (R blocks)
 *   policy logits = fc(relu(conv1x1 to 2 planes))               [A]
 *   value = tanh(fc2(relu(fc1(relu(conv1x1 to 1 plane)))))      fc1: Hb*Wb -> 64 -> 1
 *   (fc2: 64 -> 3 and a softmax in place of the tanh with a win/draw/loss value head)
 * without batch normalisation: the nets are small and shallow enough to train without it, and
 * plain convolutions leave no running statistics to carry, fold or keep equal across backends.
 * All parameters live in one contiguous float array, tensor after tensor in the order of
 * az_model_tensor() (row-major [out, in] linear weights, [out, in, kh, kw] conv weights: the
 * layout of a PyTorch nn.Linear / nn.Conv2d state_dict), so optimisers and checkpoints see one
 * vector. */
#ifndef AZ_MODEL_H
#define AZ_MODEL_H

#include <stddef.h>
#include <stdint.h>

enum az_net_kind { AZ_NET_MLP = 0, AZ_NET_RESNET = 1 };

/* The value head's output. AZ_VALUE_TANH: one unit and a tanh, the expected outcome for the side
 * to move in [-1, 1] (AlphaZero). AZ_VALUE_WDL: three logits (win, draw, loss for the side to
 * move, in that order) and a softmax, trained by cross-entropy (Lc0's WDL head; KataGo's value
 * head is the same three classes). Its expected outcome is p_win - p_loss; p_draw is what lets a
 * search give every position's draw chance a value of its own (contempt, mcts.h draw_value). */
enum az_value_head { AZ_VALUE_TANH = 0, AZ_VALUE_WDL = 1 };

/* Outputs of the value head's last layer: 1 (tanh) or 3 (win/draw/loss). */
#define AZ_VALUE_OUTPUTS_MAX 3u

/* Hidden units of the ResNet value head's first fully connected layer (AlphaZero: 256). */
#define AZ_RESNET_VALUE_HIDDEN 64u

struct az_arch {
	uint32_t inputs;  /* D */
	uint32_t hidden;  /* H: MLP width, or ResNet filters F */
	uint32_t blocks;  /* R */
	uint32_t actions; /* A */
	uint32_t kind;    /* enum az_net_kind; 0 (MLP) in a zero-initialised arch */
	/* ResNet only (0 for an MLP): the input as planes x height x width = inputs, plane-major
	 * (features[(c * height + y) * width + x]), the game descriptor's board shape */
	uint32_t planes, height, width;
	uint32_t value_head; /* enum az_value_head; 0 (tanh) in a zero-initialised arch */
};

/* The value head's last layer's outputs: 3 for AZ_VALUE_WDL, else 1. */
static inline uint32_t az_arch_value_outputs(const struct az_arch *a)
{
	return a->value_head == AZ_VALUE_WDL ? 3u : 1u;
}

/* "tanh" or "wdl" (static storage; "?" for an unknown value). */
const char *az_value_head_name(uint32_t value_head);

/* Parse "tanh" or "wdl" into *value_head. Returns 0 or -EINVAL. */
int az_value_head_parse(const char *text, uint32_t *value_head);

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
	uint32_t rows;   /* out features or channels (1 for the value weight row) */
	uint32_t cols;   /* in features, or in channels * kh * kw; 1 for biases (ndim 1) */
	uint32_t ndim;   /* 4 for conv weights, 2 for linear weights, 1 for biases */
	uint32_t shape[4]; /* ndim sizes: [out, in, kh, kw], [out, in] or [out] */
	size_t offset;   /* in floats from params */
};

/* Number of tensors: MLP 2 + 4R + 4; ResNet 2 + 4R + 10. */
uint32_t az_model_tensor_count(const struct az_arch *a);

/* Description of tensor i (0 <= i < count). Returns 0 or -EINVAL. MLP order: trunk.in.weight,
 * trunk.in.bias, block.<b>.fc1.weight, .fc1.bias, .fc2.weight, .fc2.bias for each block,
 * policy.weight, policy.bias, value.weight [V,H], value.bias [V] (V = az_arch_value_outputs()). ResNet order:
 * trunk.conv.weight [F,C,3,3], trunk.conv.bias, block.<b>.conv1.weight [F,F,3,3], .conv1.bias,
 * .conv2.weight, .conv2.bias, policy.conv.weight [2,F,1,1], policy.conv.bias [2],
 * policy.fc.weight [A, 2*Hb*Wb], policy.fc.bias, value.conv.weight [1,F,1,1], value.conv.bias,
 * value.fc1.weight [64, Hb*Wb], value.fc1.bias, value.fc2.weight [V,64], value.fc2.bias [V]
 * (the fc inputs flattened channel-major, as torch.flatten of an NCHW tensor). */
int az_model_tensor(const struct az_arch *a, uint32_t i, struct az_tensor *t);

/* Total parameter count. */
size_t az_model_param_count(const struct az_arch *a);

/* The widest and deepest network az_arch_valid() accepts: hidden units a layer (a ResNet's
 * filters, further bounded by 4096) and residual blocks. azrun's --hidden and --blocks take
 * their ranges from here. */
#define AZ_NET_HIDDEN_MAX 8192u
#define AZ_NET_BLOCKS_MAX 128u

/* 1 when a describes a network this build can create: non-zero sizes within the sanity bounds
 * (hidden <= AZ_NET_HIDDEN_MAX, blocks <= AZ_NET_BLOCKS_MAX), a known value head and, for a ResNet, planes * height *
 * width == inputs. */
int az_arch_valid(const struct az_arch *a);

/* Allocate a zeroed model. Returns 0, -EINVAL (zero sizes) or -ENOMEM. */
int az_model_create(const struct az_arch *a, struct az_model **out);
void az_model_destroy(struct az_model *m);

/* He-normal weights (He et al. 2015), zero biases, deterministic in seed. The last layer of each
 * residual block and the heads are scaled down so an untrained net starts near uniform. */
void az_model_init_random(struct az_model *m, uint64_t seed);

/* 1 when a and b describe the same network (kind, inputs, width, blocks, actions, board shape,
 * value head),
 * else 0: the test for whether a model's parameters fit a backend or a server built for another
 * architecture. */
int az_arch_equal(const struct az_arch *a, const struct az_arch *b);

/* Parse "HxR" style text ("64x2": hidden 64, 2 blocks). Returns 0 or -EINVAL (not that form, H
 * 0 or above AZ_NET_HIDDEN_MAX, R above AZ_NET_BLOCKS_MAX). */
int az_arch_parse(const char *text, uint32_t *hidden, uint32_t *blocks);

/* Parse a --net value: "mlp:HxR" or "resnet:FxR" (kind, width, blocks), or "mlp" / "resnet"
 * alone (kind only; *hidden and *blocks untouched). Returns 0 or -EINVAL. */
int az_arch_parse_net(const char *text, uint32_t *kind, uint32_t *hidden, uint32_t *blocks);

/* "mlp" or "resnet" (static storage; "?" for an unknown kind). */
const char *az_net_kind_name(uint32_t kind);

/* The --net text of a: "mlp:128x3", "resnet:32x3" (snprintf rules). */
int az_arch_format(const struct az_arch *a, char *buf, size_t len);

#endif
