/* SPDX-License-Identifier: MIT */
/* The worker's evaluation cache (run/evalcache.h): one flat array of fixed-size entries,
 * direct-mapped by key. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "run/evalcache.h"

/* One entry: the header, then policy[A]. `used` 0 marks an empty line. */
struct entry {
	uint64_t key;
	uint32_t gen;
	uint16_t model;
	uint16_t used;
	float value;
	float policy[];
};

struct az_evalcache {
	uint32_t actions;
	uint32_t mask;   /* entries - 1 */
	size_t stride;   /* bytes per entry, a multiple of 8 */
	uint8_t *mem;    /* entries * stride */
	struct az_evalcache_stats st;
};

size_t az_evalcache_entry_bytes(uint32_t actions)
{
	return (sizeof(struct entry) + sizeof(float) * actions + 7u) & ~(size_t)7u;
}

int az_evalcache_create(uint32_t actions, size_t max_bytes, struct az_evalcache **out)
{
	*out = NULL;
	if (actions == 0 || actions > AZ_GAME_ACTIONS_MAX)
		return -EINVAL;
	size_t stride = az_evalcache_entry_bytes(actions);
	if (max_bytes < sizeof(struct az_evalcache) + stride)
		return -EINVAL;
	size_t fit = (max_bytes - sizeof(struct az_evalcache)) / stride;
	size_t n = 1;
	while (n * 2 <= fit && n * 2 <= ((size_t)1 << 31))
		n *= 2;
	struct az_evalcache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->mem = calloc(n, stride); /* zeroed: every line unused */
	if (!c->mem) {
		free(c);
		return -ENOMEM;
	}
	c->actions = actions;
	c->mask = (uint32_t)(n - 1);
	c->stride = stride;
	c->st.entries = (uint32_t)n;
	c->st.bytes = sizeof(*c) + n * stride;
	*out = c;
	return 0;
}

void az_evalcache_destroy(struct az_evalcache *c)
{
	if (!c)
		return;
	free(c->mem);
	free(c);
}

/* The SplitMix64 finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014): a bijection that spreads every input bit over the output. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t az_evalcache_key(const struct az_game *g, const void *state)
{
	const uint8_t *p = state;
	size_t n = g->state_bytes;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = mix64(h ^ w);
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, p, n);
		h = mix64(h ^ w ^ ((uint64_t)n << 56));
	}
	/* Side to move: already in every game's state bytes, mixed in again so the key does not
	 * depend on that. */
	return mix64(h ^ (uint64_t)(g->to_move(state) + 1));
}

static struct entry *line(struct az_evalcache *c, uint64_t key, uint32_t model, uint32_t gen)
{
	uint64_t i = mix64(key ^ ((uint64_t)gen << 32 | model)) & c->mask;
	return (struct entry *)(c->mem + (size_t)i * c->stride);
}

const float *az_evalcache_find(struct az_evalcache *c, uint64_t key, uint32_t model,
			       uint32_t gen, float *value)
{
	struct entry *e = line(c, key, model, gen);
	if (e->used && e->key == key && e->gen == gen && e->model == model) {
		c->st.hits++;
		*value = e->value;
		return e->policy;
	}
	c->st.misses++;
	return NULL;
}

void az_evalcache_put(struct az_evalcache *c, uint64_t key, uint32_t model, uint32_t gen,
		      const float *policy, float value)
{
	struct entry *e = line(c, key, model, gen);
	if (e->used && (e->key != key || e->gen != gen || e->model != model))
		c->st.evictions++; /* another position's line: it is forgotten */
	c->st.inserts++;
	e->key = key;
	e->gen = gen;
	e->model = (uint16_t)model;
	e->used = 1;
	e->value = value;
	memcpy(e->policy, policy, sizeof(float) * c->actions);
}

void az_evalcache_stats(const struct az_evalcache *c, struct az_evalcache_stats *st)
{
	*st = c->st;
}
