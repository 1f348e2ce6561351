/* SPDX-License-Identifier: MIT */
/* Layout of one request/response slot: the worker writes the request (model id, features, legal
 * mask), the inference process writes the response (policy over legal moves, value) in place. */
#ifndef AZ_SLOT_H
#define AZ_SLOT_H

#include <stdint.h>

/* Fixed 64-byte slot header; the payload areas follow at offsets given by az_slot_layout. */
struct az_slot_hdr {
	uint32_t model;   /* request: model slot to evaluate with (0 best, 1 candidate; not a ring
			   * slot: see enum az_model_slot in infer/control.h) */
	uint32_t game;    /* request: the producer's game index, returned untouched */
	uint32_t n_legal; /* request: number of legal moves (nonzero entries in the mask) */
	uint32_t status;  /* response: 0 ok, nonzero: the server could not evaluate (bad model id) */
	float value;      /* response: value head for the side to move, in [-1, 1] */
	uint32_t node;    /* request: the producer's tree node of the leaf, returned untouched */
	float draw;       /* response: p_draw of a win/draw/loss value head, 0 for a tanh head */
	uint8_t pad[36];
};
_Static_assert(sizeof(struct az_slot_hdr) == 64, "slot header is one cache line");

struct az_slot_layout {
	uint32_t features;     /* D floats of input */
	uint32_t actions;      /* A actions */
	uint32_t off_features; /* float[D] */
	uint32_t off_legal;    /* uint8_t[A] (1 = legal) */
	uint32_t off_policy;   /* float[A] response: probabilities summing to 1 over the legal
	                        * moves, 0 on illegal ones; the worker takes them as priors
	                        * without renormalising (az_tree_expand_normalised) */
	uint32_t bytes;        /* total, a multiple of 64 */
};

static inline void az_slot_layout_init(struct az_slot_layout *l, uint32_t features,
				       uint32_t actions)
{
	l->features = features;
	l->actions = actions;
	l->off_features = (uint32_t)sizeof(struct az_slot_hdr);
	l->off_legal = l->off_features + 4u * features;
	l->off_policy = (l->off_legal + actions + 3u) & ~3u;
	l->bytes = (l->off_policy + 4u * actions + 63u) & ~63u;
}

static inline struct az_slot_hdr *az_slot_hdr(void *slot)
{
	return (struct az_slot_hdr *)slot;
}
static inline float *az_slot_features(void *slot, const struct az_slot_layout *l)
{
	return (float *)((uint8_t *)slot + l->off_features);
}
static inline uint8_t *az_slot_legal(void *slot, const struct az_slot_layout *l)
{
	return (uint8_t *)slot + l->off_legal;
}
static inline float *az_slot_policy(void *slot, const struct az_slot_layout *l)
{
	return (float *)((uint8_t *)slot + l->off_policy);
}

#endif
