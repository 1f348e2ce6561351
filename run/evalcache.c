/* SPDX-License-Identifier: MIT */
/* The evaluation cache (run/evalcache.h): one flat array of fixed-size entries, direct-mapped by
 * key; private to a worker, or one shared table in the run's segment.
 *
 * The shared table's protocol: a seqlock per entry, without fences (Boehm, "Can seqlocks get
 * along with programming language memory models?", MSPC 2012, discusses the variants; this is
 * the one where the data words themselves carry release/acquire, which costs nothing on x86
 * and is what ThreadSanitizer can check: GCC's TSan does not support atomic_thread_fence).
 * Roles: every worker process is both a reader (az_evalcache_find) and a writer
 * (az_evalcache_put) of any entry, through its own handle; nobody waits for anybody.
 * Each entry starts with a sequence number `seq`: even, the entry is stable; odd, one writer owns
 * it. Every other field of the entry is an _Atomic word, so a reader racing a writer reads a
 * mix of old and new words, never undefined behaviour, and then discards it:
 * - writer: load seq; odd: another writer holds the entry, drop this insert. Otherwise claim it
 *   with a CAS seq: s -> s + 1 (S0, acquire on success: the previous writer's S3 happens before
 *   our stores, so the words' modification orders agree with the writers' order); store the
 *   fields, each with release (S1: whoever reads one of them also sees the claim); then
 *   seq = s + 2 with a release store (S3).
 * - reader: s1 = seq, acquire (S3'; pairs with S3: a stable s1 shows every field as that writer
 *   left it); odd: a miss. Read key, gen, tag, value, policy into a private copy, each with
 *   acquire (S1'; pairs with S1: a word from a later writer makes that writer's claim visible
 *   to the next load, and keeps that load after it); s2 = seq, relaxed (ordered by S1').
 *   s1 == s2: the copy is one writer's whole entry; otherwise a miss. The key, generation and
 *   model are compared on the copy.
 * Invariant: a hit returns exactly the policy and value some put() stored for that
 * (key, model, gen). The 32-bit seq would have to advance by exactly 2^32 between a reader's
 * two loads (2^31 inserts into one entry within a few hundred nanoseconds) to fool it.
 * Restart: the table is zeroed with the segment when azrun creates it (all entries empty) and
 * lives as long as the segment; entries are tagged with the model generation, so those of a
 * replaced network never hit. A writer killed inside put() leaves its entry odd: that one
 * entry stays empty (misses, inserts dropped) for the rest of the run. */
#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "base/rng.h"
#include "run/control.h"
#include "run/evalcache.h"

/* One private entry: the header, then policy[A]. `used` 0 marks an empty line. */
struct entry {
	uint64_t key;
	uint32_t gen;
	uint16_t model;
	uint16_t used;
	float value;
	float draw; /* p_draw of a win/draw/loss head, 0 for a tanh head */
	float policy[];
};

#define SHM_MAGIC 0x32454843414345ull /* "ECACHE2" little-endian (2: entries hold draw) */

/* The shared table's header, at its start. */
struct evalcache_hdr_shm {
	/* immutable after init (written before the workers are forked) */
	uint64_t magic;
	uint32_t actions;
	uint32_t mask;   /* entries - 1 */
	uint64_t stride; /* bytes per entry, a multiple of 64 */
	uint64_t bytes;  /* header and entries */
	uint8_t pad[AZ_CACHELINE - 32];
};
_Static_assert(sizeof(struct evalcache_hdr_shm) == AZ_CACHELINE, "one line of header");

/* One shared entry (stride bytes, 64-byte aligned). */
struct entry_shm {
	/* any process, atomic RMW: even stable, odd owned by a writer */
	_Atomic uint32_t seq;
	/* written by the seq owner (release), read by anyone (acquire, validated by seq) */
	_Atomic uint32_t gen;
	_Atomic uint64_t key;
	_Atomic uint32_t tag;   /* model + 1; 0: never written */
	_Atomic uint32_t value; /* float bits */
	_Atomic uint32_t draw;  /* float bits: p_draw, 0 for a tanh head */
	_Atomic uint32_t policy[]; /* [actions] float bits */
};
_Static_assert(offsetof(struct entry_shm, policy) == 28, "entry header layout");
_Static_assert(sizeof(_Atomic uint32_t) == 4 && _Alignof(_Atomic uint64_t) == 8,
	       "lock-free word sizes");

struct az_evalcache {
	uint32_t actions;
	uint32_t mask;   /* entries - 1 */
	size_t stride;   /* bytes per entry, a multiple of 8 (64 shared) */
	uint8_t *mem;    /* entries * stride */
	int shared;      /* mem is a shared table's entries, not ours to free */
	float *copy;     /* shared: [actions], the last hit's policy */
	struct az_evalcache_stats st;
};

size_t az_evalcache_entry_bytes(uint32_t actions)
{
	return (sizeof(struct entry) + sizeof(float) * actions + 7u) & ~(size_t)7u;
}

/* The largest power of two n <= fit, at most 2^31; 0 when fit is 0. */
static size_t pow2_fit(size_t fit)
{
	size_t n = fit ? 1 : 0;
	while (n && n * 2 <= fit && n * 2 <= ((size_t)1 << 31))
		n *= 2;
	return n;
}

int az_evalcache_create(uint32_t actions, size_t max_bytes, struct az_evalcache **out)
{
	*out = NULL;
	if (actions == 0 || actions > AZ_GAME_ACTIONS_MAX ||
	    max_bytes > ((size_t)AZ_EVALCACHE_MB_MAX << 20))
		return -EINVAL;
	size_t stride = az_evalcache_entry_bytes(actions);
	if (max_bytes < sizeof(struct az_evalcache) + stride)
		return -EINVAL;
	size_t n = pow2_fit((max_bytes - sizeof(struct az_evalcache)) / stride);
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
	if (!c->shared)
		free(c->mem);
	free(c->copy);
	free(c);
}

uint64_t az_evalcache_key(const struct az_game *g, const void *state)
{
	const uint8_t *p = state;
	size_t n = g->state_bytes;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = az_mix64(h ^ w);
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, p, n);
		h = az_mix64(h ^ w ^ ((uint64_t)n << 56));
	}
	/* Side to move: already in every game's state bytes, mixed in again so the key does not
	 * depend on that. */
	return az_mix64(h ^ (uint64_t)(g->to_move(state) + 1));
}

static void *line(const struct az_evalcache *c, uint64_t key, uint32_t model, uint32_t gen)
{
	uint64_t i = az_mix64(key ^ ((uint64_t)gen << 32 | model)) & c->mask;
	return c->mem + (size_t)i * c->stride;
}

void az_evalcache_prefetch(const struct az_evalcache *c, uint64_t key, uint32_t model,
			   uint32_t gen)
{
	const uint8_t *e = line(c, key, model, gen);
	/* Read (0), keep in every cache level (3). The last byte's line: a private entry's stride
	 * is not a multiple of 64, so it may span two lines (same line: a no-op). */
	__builtin_prefetch(e, 0, 3);
	__builtin_prefetch(e + c->stride - 1, 0, 3);
}

static uint32_t f2u(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float u2f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* A validated copy of a shared entry into c->copy when it holds (key, model, gen): 1, or 0. */
static int shm_find(struct az_evalcache *c, struct entry_shm *e, uint64_t key, uint32_t model,
		    uint32_t gen, float *value, float *draw)
{
	/* S3': pairs with S3 in shm_put(): a stable seq shows that writer's fields. */
	uint32_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
	if (s1 & 1)
		return 0; /* a writer owns it */
	/* S1': pairs with S1 in shm_put(), every word. */
	uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
	uint32_t g = atomic_load_explicit(&e->gen, memory_order_acquire);
	uint32_t tag = atomic_load_explicit(&e->tag, memory_order_acquire);
	if (k != key || g != gen || tag != model + 1)
		return 0; /* another position, or empty: a miss whatever seq does */
	uint32_t v = atomic_load_explicit(&e->value, memory_order_acquire); /* S1' */
	uint32_t d = atomic_load_explicit(&e->draw, memory_order_acquire);  /* S1' */
	for (uint32_t a = 0; a < c->actions; a++) /* S1' */
		c->copy[a] = u2f(atomic_load_explicit(&e->policy[a], memory_order_acquire));
	/* Relaxed: kept after the reads above by their acquire (S1'). */
	if (atomic_load_explicit(&e->seq, memory_order_relaxed) != s1)
		return 0; /* a writer came meanwhile: the copy may be torn */
	*value = u2f(v);
	*draw = u2f(d);
	return 1;
}

static void shm_put(struct az_evalcache *c, struct entry_shm *e, uint64_t key, uint32_t model,
		    uint32_t gen, const float *policy, float value, float draw)
{
	/* Relaxed: only a guess for the CAS, which decides. */
	uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if (s & 1)
		return; /* another writer owns it: drop this insert */
	/* S0: claim. Acquire on success: pairs with the previous owner's S3, so its stores happen
	 * before ours. Relaxed on failure: we give up without reading anything. */
	if (!atomic_compare_exchange_strong_explicit(&e->seq, &s, s + 1, memory_order_acquire,
						     memory_order_relaxed))
		return;
	/* Relaxed: our own entry now (the claim's acquire ordered the previous owner's stores). */
	if (atomic_load_explicit(&e->tag, memory_order_relaxed) &&
	    (atomic_load_explicit(&e->key, memory_order_relaxed) != key ||
	     atomic_load_explicit(&e->gen, memory_order_relaxed) != gen ||
	     atomic_load_explicit(&e->tag, memory_order_relaxed) != model + 1))
		c->st.evictions++;
	/* S1: pairs with S1' in shm_find(), every word: none is seen without the claim. */
	atomic_store_explicit(&e->key, key, memory_order_release);
	atomic_store_explicit(&e->gen, gen, memory_order_release);
	atomic_store_explicit(&e->tag, model + 1, memory_order_release);
	atomic_store_explicit(&e->value, f2u(value), memory_order_release);
	atomic_store_explicit(&e->draw, f2u(draw), memory_order_release); /* S1 */
	for (uint32_t a = 0; a < c->actions; a++) /* S1 */
		atomic_store_explicit(&e->policy[a], f2u(policy[a]), memory_order_release);
	/* S3: publish; pairs with S3' in shm_find() and with the next writer's S0. */
	atomic_store_explicit(&e->seq, s + 2, memory_order_release);
	c->st.inserts++;
}

const float *az_evalcache_find(struct az_evalcache *c, uint64_t key, uint32_t model,
			       uint32_t gen, float *value, float *draw)
{
	if (c->shared) {
		if (shm_find(c, line(c, key, model, gen), key, model, gen, value, draw)) {
			c->st.hits++;
			return c->copy;
		}
		c->st.misses++;
		return NULL;
	}
	struct entry *e = line(c, key, model, gen);
	if (e->used && e->key == key && e->gen == gen && e->model == model) {
		c->st.hits++;
		*value = e->value;
		*draw = e->draw;
		return e->policy;
	}
	c->st.misses++;
	return NULL;
}

void az_evalcache_put(struct az_evalcache *c, uint64_t key, uint32_t model, uint32_t gen,
		      const float *policy, float value, float draw)
{
	if (c->shared) {
		shm_put(c, line(c, key, model, gen), key, model, gen, policy, value, draw);
		return;
	}
	struct entry *e = line(c, key, model, gen);
	if (e->used && (e->key != key || e->gen != gen || e->model != model))
		c->st.evictions++; /* another position's line: it is forgotten */
	c->st.inserts++;
	e->key = key;
	e->gen = gen;
	e->model = (uint16_t)model;
	e->used = 1;
	e->value = value;
	e->draw = draw;
	memcpy(e->policy, policy, sizeof(float) * c->actions);
}

void az_evalcache_stats(const struct az_evalcache *c, struct az_evalcache_stats *st)
{
	*st = c->st;
}

/* ---- the shared table ---- */

static size_t shm_stride(uint32_t actions)
{
	size_t b = offsetof(struct entry_shm, policy) + sizeof(uint32_t) * actions;
	return (b + AZ_CACHELINE - 1) & ~(size_t)(AZ_CACHELINE - 1);
}

size_t az_evalcache_shm_memsize(uint32_t actions, size_t max_bytes)
{
	if (actions == 0 || actions > AZ_GAME_ACTIONS_MAX ||
	    max_bytes < sizeof(struct evalcache_hdr_shm) + shm_stride(actions))
		return 0;
	size_t stride = shm_stride(actions);
	size_t n = pow2_fit((max_bytes - sizeof(struct evalcache_hdr_shm)) / stride);
	return sizeof(struct evalcache_hdr_shm) + n * stride;
}

int az_evalcache_shm_init(void *mem, size_t bytes, uint32_t actions)
{
	size_t stride = shm_stride(actions);
	if (az_evalcache_shm_memsize(actions, bytes) != bytes || ((uintptr_t)mem & 63))
		return -EINVAL;
	struct evalcache_hdr_shm *h = mem;
	*h = (struct evalcache_hdr_shm){.magic = SHM_MAGIC, .actions = actions,
					.mask = (uint32_t)((bytes - sizeof(*h)) / stride - 1),
					.stride = stride, .bytes = bytes};
	return 0;
}

int az_evalcache_attach(void *mem, size_t bytes, uint32_t actions, struct az_evalcache **out)
{
	const struct evalcache_hdr_shm *h = mem;
	*out = NULL;
	/* Plain reads: immutable since before this process was forked. */
	if (!mem || bytes < sizeof(*h) || h->magic != SHM_MAGIC || h->actions != actions ||
	    h->stride != shm_stride(actions) || h->bytes > bytes ||
	    h->bytes != sizeof(*h) + ((uint64_t)h->mask + 1) * h->stride)
		return -EPROTO;
	struct az_evalcache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->copy = calloc(actions, sizeof(float));
	if (!c->copy) {
		free(c);
		return -ENOMEM;
	}
	c->actions = actions;
	c->mask = h->mask;
	c->stride = (size_t)h->stride;
	c->mem = (uint8_t *)mem + sizeof(*h);
	c->shared = 1;
	c->st.entries = h->mask + 1;
	c->st.bytes = (size_t)h->bytes;
	*out = c;
	return 0;
}

size_t az_evalcache_seg_offset(void)
{
	return (sizeof(struct az_run_ctl_shm) + AZ_CACHELINE - 1) & ~(size_t)(AZ_CACHELINE - 1);
}

void *az_evalcache_seg_region(const struct az_seg *seg, size_t *bytes)
{
	size_t off = az_evalcache_seg_offset(), ctl = seg->hdr->ctl_bytes;
	*bytes = ctl > off ? ctl - off : 0;
	return (uint8_t *)az_seg_ctl(seg) + off;
}
