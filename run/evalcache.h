/* SPDX-License-Identifier: MIT */
/* A worker's evaluation cache: position -> (policy, value) as the inference process answered
 * it, so a leaf whose position was evaluated before is expanded at once, with no ring round
 * trip (KataGo's and lc0's NN cache, same idea; this code is ours). One per worker process,
 * private to it: not thread-safe, nothing in shared memory. */
#ifndef AZ_RUN_EVALCACHE_H
#define AZ_RUN_EVALCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "games/game.h"

struct az_evalcache;

/* What the cache did since it was created (hits + misses = lookups). */
struct az_evalcache_stats {
	uint64_t hits, misses, inserts, evictions;
	uint32_t entries;     /* capacity in positions */
	size_t bytes;         /* memory held, entries and handle together */
};

/* Bytes one entry takes for a game of `actions` moves (key, generation, value, policy[A]). */
size_t az_evalcache_entry_bytes(uint32_t actions);

/* Create a cache of at most max_bytes (entries and handle together): the largest power of two
 * of entries that fits. Direct-mapped: a new position replaces whatever held its line. Returns
 * 0, -EINVAL when actions is 0 or above AZ_GAME_ACTIONS_MAX or not even one entry fits (the
 * caller disables the cache with a size of 0 instead of creating one), or -ENOMEM. */
int az_evalcache_create(uint32_t actions, size_t max_bytes, struct az_evalcache **out);
void az_evalcache_destroy(struct az_evalcache *c);

/* The key of `state`: a 64-bit hash of its g->state_bytes with the side to move mixed in.
 * Positions are compared by key only (no copy of the state is kept): two positions that share
 * a key would share an evaluation, which at 64 bits and a bounded cache of at most millions of
 * entries has a probability below 1e-6 per run; state bytes are canonical in every game
 * (games/game.h: plain bytes, no padding left uninitialised), as games/solve.c relies on too. */
uint64_t az_evalcache_key(const struct az_game *g, const void *state);

/* The cached evaluation of key under model `model` at generation `gen`, or NULL (a miss). On a
 * hit *value is set and the returned policy[A] is valid until the next az_evalcache_put().
 * Counts a hit or a miss. */
const float *az_evalcache_find(struct az_evalcache *c, uint64_t key, uint32_t model,
			       uint32_t gen, float *value);

/* Remember policy[A] and value for (key, model, gen), replacing its line's entry. */
void az_evalcache_put(struct az_evalcache *c, uint64_t key, uint32_t model, uint32_t gen,
		      const float *policy, float value);

void az_evalcache_stats(const struct az_evalcache *c, struct az_evalcache_stats *st);

#endif
