/* SPDX-License-Identifier: MIT */
/* The network's parameter layout (one contiguous float vector, tensor after tensor), model
 * lifecycle, deterministic He-normal initialisation and the "HxR" architecture parser. */
#include "net/model.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"

/* Sanity bound on inputs and actions that keeps every size product inside 64 bits; real games
 * are far smaller. The hidden width and the blocks: AZ_NET_HIDDEN_MAX, AZ_NET_BLOCKS_MAX. */
#define ARCH_MAX_WIDTH (1u << 24)

/* Initial scale of the layers that feed a residual sum or a head (see az_model_init_random). */
#define INIT_OUT_SCALE 0.1

/* ResNet bounds: filters and board cells small enough that every conv product stays far inside
 * 64 bits (9 F^2 R and B * cells * 9F), and a board no game comes near. */
#define ARCH_MAX_FILTERS 4096u
#define ARCH_MAX_SIDE 64u

int az_arch_valid(const struct az_arch *a)
{
	if (!a || a->inputs == 0 || a->hidden == 0 || a->actions == 0 ||
	    a->inputs > ARCH_MAX_WIDTH || a->hidden > AZ_NET_HIDDEN_MAX ||
	    a->actions > ARCH_MAX_WIDTH || a->blocks > AZ_NET_BLOCKS_MAX ||
	    a->value_head > AZ_VALUE_WDL)
		return 0;
	if (a->kind == AZ_NET_MLP)
		return 1;
	return a->kind == AZ_NET_RESNET && a->hidden <= ARCH_MAX_FILTERS && a->planes > 0 &&
	       a->height > 0 && a->width > 0 && a->height <= ARCH_MAX_SIDE &&
	       a->width <= ARCH_MAX_SIDE && a->planes <= ARCH_MAX_FILTERS &&
	       (uint64_t)a->planes * a->height * a->width == a->inputs;
}

uint32_t az_model_tensor_count(const struct az_arch *a)
{
	return 2 + 4 * a->blocks + (a->kind == AZ_NET_RESNET ? 10 : 4);
}

/* Set t's shape to the ndim sizes given (rows = first, cols = the product of the others). */
static void set_shape(struct az_tensor *t, uint32_t ndim, uint32_t d0, uint32_t d1, uint32_t d2,
		      uint32_t d3)
{
	uint32_t d[4] = {d0, d1, d2, d3};

	t->ndim = ndim;
	t->rows = d0;
	t->cols = 1;
	for (uint32_t k = 0; k < 4; k++) {
		t->shape[k] = k < ndim ? d[k] : 0;
		if (k > 0 && k < ndim)
			t->cols *= d[k];
	}
}

/* Name and shape of ResNet tensor i (order in net/model.h). */
static void resnet_shape(const struct az_arch *a, uint32_t i, struct az_tensor *t)
{
	static const char *const heads[10] = {
		"policy.conv.weight", "policy.conv.bias", "policy.fc.weight", "policy.fc.bias",
		"value.conv.weight", "value.conv.bias", "value.fc1.weight", "value.fc1.bias",
		"value.fc2.weight", "value.fc2.bias"};
	uint32_t F = a->hidden, R = a->blocks, cells = a->height * a->width;
	uint32_t V = AZ_RESNET_VALUE_HIDDEN;

	if (i < 2 + 4 * R) {
		/* trunk.conv (i = 0, 1), then block b's conv1 and conv2 (k = 0..3 from i = 2) */
		uint32_t b = i < 2 ? 0 : (i - 2) / 4, k = i < 2 ? i : (i - 2) % 4;
		int weight = k % 2 == 0;

		if (i < 2)
			snprintf(t->name, sizeof(t->name), "trunk.conv.%s", weight ? "weight" : "bias");
		else
			snprintf(t->name, sizeof(t->name), "block.%u.conv%u.%s", b, k / 2 + 1,
				 weight ? "weight" : "bias");
		if (weight)
			set_shape(t, 4, F, i < 2 ? a->planes : F, 3, 3);
		else
			set_shape(t, 1, F, 0, 0, 0);
		return;
	}
	uint32_t k = i - 2 - 4 * R;
	/* [out, in] of each head layer; the 1x1 convs get ndim 4 with kh = kw = 1 */
	static const uint32_t conv[10] = {1, 0, 0, 0, 1, 0, 0, 0, 0, 0};
	uint32_t vo = az_arch_value_outputs(a);
	uint32_t out[10] = {2, 2, a->actions, a->actions, 1, 1, V, V, vo, vo};
	uint32_t in[10] = {F, 0, 2 * cells, 0, F, 0, cells, 0, V, 0};

	snprintf(t->name, sizeof(t->name), "%s", heads[k]);
	if (k % 2 == 1)
		set_shape(t, 1, out[k], 0, 0, 0);
	else if (conv[k])
		set_shape(t, 4, out[k], in[k], 1, 1);
	else
		set_shape(t, 2, out[k], in[k], 0, 0);
}

/* Shape and name of tensor i, without its offset. */
static void tensor_shape(const struct az_arch *a, uint32_t i, struct az_tensor *t)
{
	uint32_t H = a->hidden, R = a->blocks;

	if (a->kind == AZ_NET_RESNET) {
		resnet_shape(a, i, t);
		return;
	}
	t->cols = 1;
	t->ndim = 1;
	if (i < 2) {
		snprintf(t->name, sizeof(t->name), "trunk.in.%s", i == 0 ? "weight" : "bias");
		t->rows = H;
		if (i == 0) {
			t->cols = a->inputs;
			t->ndim = 2;
		}
		return;
	}
	if (i < 2 + 4 * R) {
		uint32_t b = (i - 2) / 4, k = (i - 2) % 4;

		snprintf(t->name, sizeof(t->name), "block.%u.fc%u.%s", b, k / 2 + 1,
			 k % 2 == 0 ? "weight" : "bias");
		t->rows = H;
		if (k % 2 == 0) {
			t->cols = H;
			t->ndim = 2;
		}
		return;
	}
	uint32_t k = i - 2 - 4 * R;

	snprintf(t->name, sizeof(t->name), "%s.%s", k < 2 ? "policy" : "value",
		 k % 2 == 0 ? "weight" : "bias");
	t->rows = k < 2 ? a->actions : az_arch_value_outputs(a);
	if (k % 2 == 0) {
		t->cols = H;
		t->ndim = 2;
	}
}

int az_model_tensor(const struct az_arch *a, uint32_t i, struct az_tensor *t)
{
	if (!a || !t || i >= az_model_tensor_count(a))
		return -EINVAL;
	size_t off = 0;

	for (uint32_t j = 0; j < i; j++) {
		tensor_shape(a, j, t);
		off += (size_t)t->rows * t->cols;
	}
	memset(t, 0, sizeof(*t));
	tensor_shape(a, i, t);
	if (t->ndim <= 2) { /* the MLP's tensors set rows and cols only */
		t->shape[0] = t->rows;
		t->shape[1] = t->ndim == 2 ? t->cols : 0;
	}
	t->offset = off;
	return 0;
}

size_t az_model_param_count(const struct az_arch *a)
{
	size_t D = a->inputs, H = a->hidden, R = a->blocks, A = a->actions;
	size_t VO = az_arch_value_outputs(a);

	if (a->kind == AZ_NET_RESNET) {
		size_t C = a->planes, cells = (size_t)a->height * a->width;
		size_t V = AZ_RESNET_VALUE_HIDDEN;

		return 9 * H * C + H + R * (2 * 9 * H * H + 2 * H) + (2 * H + 2) +
		       (A * 2 * cells + A) + (H + 1) + (V * cells + V) + VO * (V + 1);
	}
	return H * D + H + R * (2 * H * H + 2 * H) + A * H + A + VO * (H + 1);
}

int az_model_create(const struct az_arch *a, struct az_model **out)
{
	if (!out || !az_arch_valid(a))
		return -EINVAL;
	struct az_model *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->arch = *a;
	m->n_params = az_model_param_count(a);
	m->params = calloc(m->n_params, sizeof(float));
	if (!m->params) {
		free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

void az_model_destroy(struct az_model *m)
{
	if (!m)
		return;
	free(m->params);
	free(m);
}

/* Scale of the initial weights of tensor t: He normal, std = sqrt(2 / fan_in), shrunk for the
 * second layer of each block (so each block starts close to the identity) and for both heads (so
 * the untrained policy is near uniform and the value near 0). */
static double init_std(const struct az_arch *a, uint32_t i, const struct az_tensor *t)
{
	double std = sqrt(2.0 / (double)t->cols);
	uint32_t first_head = 2 + 4 * a->blocks;
	int block_out = i >= 2 && i < first_head && (i - 2) % 4 == 2;
	/* The ResNet heads' 1x1 convs and value fc1 feed ReLUs: He scale; their last layers (the
	 * policy fc, value fc2) are the outputs that start small. */
	int head_out = a->kind != AZ_NET_RESNET || i == first_head + 2 || i == first_head + 8;

	if (block_out || (i >= first_head && head_out))
		std *= INIT_OUT_SCALE;
	return std;
}

void az_model_init_random(struct az_model *m, uint64_t seed)
{
	struct az_rng rng;
	uint32_t n = az_model_tensor_count(&m->arch);

	az_rng_seed(&rng, seed);
	for (uint32_t i = 0; i < n; i++) {
		struct az_tensor t;

		if (az_model_tensor(&m->arch, i, &t) < 0)
			continue; /* cannot happen: i < count */
		float *p = m->params + t.offset;
		size_t len = (size_t)t.rows * t.cols;

		if (t.ndim == 1) {
			memset(p, 0, len * sizeof(float));
			continue;
		}
		double std = init_std(&m->arch, i, &t);

		for (size_t k = 0; k < len; k++)
			p[k] = (float)(std * az_rng_normal(&rng));
	}
}

/* Parse a decimal uint32 from [s, end); 0 or -EINVAL (empty, non-digit, overflow). */
static int parse_u32(const char *s, const char *end, uint32_t *v)
{
	uint64_t acc = 0;

	if (s == end)
		return -EINVAL;
	for (; s < end; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		acc = acc * 10 + (uint64_t)(*s - '0');
		if (acc > UINT32_MAX)
			return -EINVAL;
	}
	*v = (uint32_t)acc;
	return 0;
}

int az_arch_equal(const struct az_arch *a, const struct az_arch *b)
{
	return a->inputs == b->inputs && a->hidden == b->hidden && a->blocks == b->blocks &&
	       a->actions == b->actions && a->kind == b->kind && a->planes == b->planes &&
	       a->height == b->height && a->width == b->width && a->value_head == b->value_head;
}

const char *az_value_head_name(uint32_t value_head)
{
	return value_head == AZ_VALUE_TANH ? "tanh" : value_head == AZ_VALUE_WDL ? "wdl" : "?";
}

int az_value_head_parse(const char *text, uint32_t *value_head)
{
	if (!text || !value_head)
		return -EINVAL;
	if (strcmp(text, "tanh") == 0)
		*value_head = AZ_VALUE_TANH;
	else if (strcmp(text, "wdl") == 0)
		*value_head = AZ_VALUE_WDL;
	else
		return -EINVAL;
	return 0;
}

const char *az_net_kind_name(uint32_t kind)
{
	return kind == AZ_NET_MLP ? "mlp" : kind == AZ_NET_RESNET ? "resnet" : "?";
}

int az_arch_format(const struct az_arch *a, char *buf, size_t len)
{
	return snprintf(buf, len, "%s:%ux%u", az_net_kind_name(a->kind), a->hidden, a->blocks);
}

int az_arch_parse_net(const char *text, uint32_t *kind, uint32_t *hidden, uint32_t *blocks)
{
	static const char *const names[] = {"mlp", "resnet"};

	if (!text || !kind || !hidden || !blocks)
		return -EINVAL;
	for (uint32_t k = 0; k < 2; k++) {
		size_t n = strlen(names[k]);

		if (strncmp(text, names[k], n) != 0 || (text[n] && text[n] != ':'))
			continue;
		if (text[n] == ':' && az_arch_parse(text + n + 1, hidden, blocks) < 0)
			return -EINVAL;
		*kind = k;
		return 0;
	}
	return -EINVAL;
}

int az_arch_parse(const char *text, uint32_t *hidden, uint32_t *blocks)
{
	if (!text || !hidden || !blocks)
		return -EINVAL;
	const char *x = strchr(text, 'x');
	uint32_t h, r;

	if (!x || parse_u32(text, x, &h) || parse_u32(x + 1, x + 1 + strlen(x + 1), &r))
		return -EINVAL;
	/* Zero blocks is a valid (plain MLP) net; zero width is not. */
	if (h == 0 || h > AZ_NET_HIDDEN_MAX || r > AZ_NET_BLOCKS_MAX)
		return -EINVAL;
	*hidden = h;
	*blocks = r;
	return 0;
}
