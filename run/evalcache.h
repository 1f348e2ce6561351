/* SPDX-License-Identifier: MIT */
/* The evaluation cache: position -> (policy, value) as the inference process answered it, so a
 * leaf whose position was evaluated before is expanded at once, with no ring round trip
 * (KataGo's and lc0's NN cache, same idea; this code is ours). Two variants behind one handle:
 * - private (az_evalcache_create): one per worker process, in its own memory;
 * - shared (az_evalcache_shm_init + az_evalcache_attach): one table in the run's segment, after
 *   the control area, used by every worker of the node; lock-free, one seqlock per entry
 *   (the protocol is at the top of run/evalcache.c).
 * A handle is used by one thread; a shared table by any number of handles at once. */
#ifndef AZ_RUN_EVALCACHE_H
#define AZ_RUN_EVALCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "games/game.h"
#include "shm/segment.h"

struct az_evalcache;

/* What the cache did through this handle since it was created (hits + misses = lookups). */
struct az_evalcache_stats {
	uint64_t hits, misses, inserts, evictions;
	uint32_t entries;     /* capacity in positions */
	size_t bytes;         /* memory held, entries and handle together */
};

/* Bytes one entry takes for a game of `actions` moves (key, generation, value, policy[A]). */
size_t az_evalcache_entry_bytes(uint32_t actions);

/* The largest worker cache in MiB (az_evalcache_create()); azrun's --eval-cache-mb takes its
 * range from here. */
#define AZ_EVALCACHE_MB_MAX 65536

/* Create a cache of at most max_bytes (entries and handle together): the largest power of two
 * of entries that fits. Direct-mapped: a new position replaces whatever held its line. Returns
 * 0, -EINVAL when actions is 0 or above AZ_GAME_ACTIONS_MAX, not even one entry fits (the
 * caller disables the cache with a size of 0 instead of creating one) or max_bytes is above
 * AZ_EVALCACHE_MB_MAX MiB, or -ENOMEM. */
int az_evalcache_create(uint32_t actions, size_t max_bytes, struct az_evalcache **out);
void az_evalcache_destroy(struct az_evalcache *c);

/* The key of `state`: a 64-bit hash of its g->state_bytes with the side to move mixed in.
 * Positions are compared by key only (no copy of the state is kept): two positions that share
 * a key would share an evaluation, which at 64 bits and a bounded cache of at most millions of
 * entries has a probability below 1e-6 per run; state bytes are canonical in every game
 * (games/game.h: plain bytes, no padding left uninitialised), as games/solve.c relies on too. */
uint64_t az_evalcache_key(const struct az_game *g, const void *state);

/* The cached evaluation of key under model `model` at generation `gen`, or NULL (a miss). On a
 * hit *value and *draw (p_draw of a win/draw/loss head, 0 for a tanh head) are set and the
 * returned policy[A] is valid until the next az_evalcache_find() or
 * az_evalcache_put() on this handle (a shared hit is a copy, validated against concurrent
 * writers: never a torn or another position's entry). Counts a hit or a miss. */
const float *az_evalcache_find(struct az_evalcache *c, uint64_t key, uint32_t model,
			       uint32_t gen, float *value, float *draw);

/* A hint: start loading the memory that az_evalcache_find(c, key, model, gen) will read (the
 * entry's first and last cache lines), so that a find issued some work later does not wait for
 * it. Reads and changes nothing, counts nothing; any arguments are fine. */
void az_evalcache_prefetch(const struct az_evalcache *c, uint64_t key, uint32_t model,
			   uint32_t gen);

/* Remember policy[A], value and draw for (key, model, gen), replacing its line's entry. Shared: when
 * another writer holds the line at that moment, this insert is dropped (a cache may forget). */
void az_evalcache_put(struct az_evalcache *c, uint64_t key, uint32_t model, uint32_t gen,
		      const float *policy, float value, float draw);

void az_evalcache_stats(const struct az_evalcache *c, struct az_evalcache_stats *st);

/* ---- the shared table ---- */

/* Bytes of a shared table for `actions` moves in at most max_bytes: a 64-byte header and the
 * largest power of two of 64-byte-aligned entries that fits; 0 when actions is 0 or above
 * AZ_GAME_ACTIONS_MAX or not even one entry fits. */
size_t az_evalcache_shm_memsize(uint32_t actions, size_t max_bytes);

/* The largest shared table in MiB: the run's segment sizes its control region, which holds the
 * table after the control area, in 32 bits (run/supervise.c refuses a table that leaves it at
 * 4 GiB or more). azrun's --eval-cache-mb with --eval-cache shared is checked against it. */
#define AZ_EVALCACHE_SHARED_MB_MAX 4095

/* Initialise a shared table in `bytes` (az_evalcache_shm_memsize()) of zeroed, 64-byte aligned
 * caller memory: every entry empty. Only before any handle attaches (azrun, before it forks the
 * workers; fork orders these stores before theirs). Returns 0 or -EINVAL. */
int az_evalcache_shm_init(void *mem, size_t bytes, uint32_t actions);

/* A handle on the shared table at mem (bytes available there) for a game of `actions` moves:
 * validates the header written by az_evalcache_shm_init(). The memory stays the caller's;
 * az_evalcache_destroy() frees the handle only. Returns 0, -EPROTO (no table there, or one for
 * another game or size) or -ENOMEM. */
int az_evalcache_attach(void *mem, size_t bytes, uint32_t actions, struct az_evalcache **out);

/* Where the shared table lives in a run's segment: right after the control area
 * (run/control.h's struct az_run_ctl_shm, rounded up to 64 bytes), to the end of the segment's
 * control region. az_evalcache_seg_offset() is that offset from az_seg_ctl(); the region's
 * bytes go to *bytes (0: the segment has no table). */
size_t az_evalcache_seg_offset(void);
void *az_evalcache_seg_region(const struct az_seg *seg, size_t *bytes);

#endif
