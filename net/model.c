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

/* Sanity bounds that keep every size product inside 64 bits (H*H*2R < 2^62); real nets are far
 * smaller. */
#define ARCH_MAX_WIDTH (1u << 24)
#define ARCH_MAX_BLOCKS 4096u

/* Initial scale of the layers that feed a residual sum or a head (see az_model_init_random). */
#define INIT_OUT_SCALE 0.1

static int arch_valid(const struct az_arch *a)
{
	return a && a->inputs > 0 && a->hidden > 0 && a->actions > 0 &&
	       a->inputs <= ARCH_MAX_WIDTH && a->hidden <= ARCH_MAX_WIDTH &&
	       a->actions <= ARCH_MAX_WIDTH && a->blocks <= ARCH_MAX_BLOCKS;
}

uint32_t az_model_tensor_count(const struct az_arch *a)
{
	return 2 + 4 * a->blocks + 4;
}

/* Shape and name of tensor i, without its offset. */
static void tensor_shape(const struct az_arch *a, uint32_t i, struct az_tensor *t)
{
	uint32_t H = a->hidden, R = a->blocks;

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
	t->rows = k < 2 ? a->actions : 1;
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
	t->offset = off;
	return 0;
}

size_t az_model_param_count(const struct az_arch *a)
{
	size_t D = a->inputs, H = a->hidden, R = a->blocks, A = a->actions;

	return H * D + H + R * (2 * H * H + 2 * H) + A * H + A + H + 1;
}

int az_model_create(const struct az_arch *a, struct az_model **out)
{
	if (!out || !arch_valid(a))
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

	if (block_out || i >= first_head)
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
	       a->actions == b->actions;
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
	if (h == 0 || h > ARCH_MAX_WIDTH || r > ARCH_MAX_BLOCKS)
		return -EINVAL;
	*hidden = h;
	*blocks = r;
	return 0;
}
