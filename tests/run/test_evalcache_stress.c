/* SPDX-License-Identifier: MIT */
/* Stress test of the shared evaluation cache (run/evalcache.c's seqlock per entry): threads,
 * each with its own handle on one small table, look up and insert colliding keys of two models
 * and two generations; every hit must return exactly the policy and value that some insert of
 * that (key, model, gen) stored: never a torn entry, never another key's. Threads (not
 * processes), so that ThreadSanitizer sees every access. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run/evalcache.h"
#include "tests/test_util.h"

#define THREADS 4
#define ITERS 100000u
#define KEYS 64u      /* distinct positions */
#define ACTIONS 61u   /* long entries: a copy takes long enough to be overtaken */
#define ENTRIES 64u   /* far fewer lines than keys: writers collide all the time */

struct stats {
	uint64_t hits, misses, bad;
};

struct arg {
	void *mem;
	size_t bytes;
	uint32_t seed;
	struct stats st;
};

/* What an insert of (key, model, gen) stores: every word depends on all three, so a mix of
 * two entries' words, or another key's entry, fails the check. */
static void expected(uint64_t key, uint32_t model, uint32_t gen, float *pol, float *v)
{
	uint64_t h = key ^ ((uint64_t)model << 40) ^ ((uint64_t)gen << 48);
	for (uint32_t a = 0; a < ACTIONS; a++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		pol[a] = (float)(h >> 40);
	}
	*v = (float)(uint32_t)(h >> 8 & 0xffffff);
}

static void *thread_main(void *p)
{
	struct arg *a = p;
	struct az_evalcache *c;
	float want[ACTIONS], wv;
	uint32_t x = a->seed;
	if (az_evalcache_attach(a->mem, a->bytes, ACTIONS, &c) != 0)
		return NULL;
	for (uint32_t i = 0; i < ITERS; i++) {
		x ^= x << 13; /* xorshift32 (Marsaglia 2003) */
		x ^= x >> 17;
		x ^= x << 5;
		uint64_t key = (uint64_t)(x % KEYS) * 0x9e3779b97f4a7c15ull + 1;
		uint32_t model = (x >> 16) & 1, gen = 1 + ((x >> 17) & 1);
		float v, d;
		expected(key, model, gen, want, &wv);
		/* the draw a function of the value: a torn entry shows as a mismatch */
		const float wd = 0.5f - 0.25f * wv;
		const float *got = az_evalcache_find(c, key, model, gen, &v, &d);
		if (got) {
			a->st.hits++;
			if (memcmp(got, want, sizeof(want)) != 0 || v != wv || d != wd)
				a->st.bad++;
		} else {
			a->st.misses++;
			az_evalcache_put(c, key, model, gen, want, wv, wd);
		}
	}
	az_evalcache_destroy(c);
	return NULL;
}

static void test_concurrent_find_put(void **unused)
{
	(void)unused;
	size_t bytes = az_evalcache_shm_memsize(ACTIONS, 64 + 320 * ENTRIES);
	assert_int_equal(bytes, 64 + 320 * ENTRIES); /* 24 + 61 * 4 = 268 -> 320 bytes */
	void *mem = aligned_alloc(64, bytes);
	assert_non_null(mem);
	memset(mem, 0, bytes);
	assert_int_equal(az_evalcache_shm_init(mem, bytes, ACTIONS), 0);
	pthread_t t[THREADS];
	struct arg args[THREADS];
	for (int i = 0; i < THREADS; i++) {
		args[i] = (struct arg){.mem = mem, .bytes = bytes, .seed = 0x9e3779b9u * (i + 1)};
		assert_int_equal(pthread_create(&t[i], NULL, thread_main, &args[i]), 0);
	}
	struct stats sum = {0};
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		sum.hits += args[i].st.hits;
		sum.misses += args[i].st.misses;
		sum.bad += args[i].st.bad;
	}
	print_message("%llu hits, %llu misses, %llu bad\n", (unsigned long long)sum.hits,
		      (unsigned long long)sum.misses, (unsigned long long)sum.bad);
	assert_int_equal(sum.hits + sum.misses, (uint64_t)THREADS * ITERS); /* all attached */
	assert_int_equal(sum.bad, 0);
	/* 256 (key, model, gen) triples over 64 lines: both outcomes happen. */
	assert_true(sum.hits > 0 && sum.misses > 0);
	free(mem);
}

AZ_TEST_MAIN(cmocka_unit_test(test_concurrent_find_put))
