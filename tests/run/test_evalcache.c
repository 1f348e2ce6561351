/* SPDX-License-Identifier: MIT */
/* Unit tests of the evaluation cache (run/evalcache.c): keys, generations and models, the
 * memory bound, a cached search that plays the same games as an uncached one, private and
 * shared; the shared table's header checks. Concurrency: test_evalcache_stress.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "games/game.h"
#include "mcts/mcts.h"
#include "run/evalcache.h"
#include "tests/test_util.h"

static const struct az_game *ttt(void)
{
	return &az_game_tictactoe;
}

/* ---- keys ---- */

struct keys {
	uint64_t *k;
	size_t n;
};

static void collect(void *ctx, const void *state, const char *moves)
{
	struct keys *ks = ctx;
	(void)moves;
	ks->k[ks->n++] = az_evalcache_key(ttt(), state);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Every tic-tac-toe position has its own key, and the same position always the same one. */
static void test_key_distinct(void **unused)
{
	(void)unused;
	struct keys ks = {.k = calloc(8192, sizeof(uint64_t))};
	assert_non_null(ks.k);
	int n = az_game_enumerate(ttt(), 0, collect, &ks);
	assert_int_equal(n, 5478);
	assert_int_equal((int)ks.n, 5478);
	qsort(ks.k, ks.n, sizeof(uint64_t), cmp_u64);
	for (size_t i = 1; i < ks.n; i++)
		assert_true(ks.k[i] != ks.k[i - 1]);
	uint8_t a[AZ_GAME_STATE_MAX], b[AZ_GAME_STATE_MAX];
	ttt()->init(a);
	ttt()->init(b);
	assert_true(az_evalcache_key(ttt(), a) == az_evalcache_key(ttt(), b));
	free(ks.k);
}

/* The same stones with the other side to move is another position. */
static void test_key_side_to_move(void **unused)
{
	(void)unused;
	const struct az_game *g = &az_game_connect4;
	uint8_t a[AZ_GAME_STATE_MAX], b[AZ_GAME_STATE_MAX];
	g->init(a);
	g->apply(a, 3);
	g->apply(a, 3);
	memcpy(b, a, g->state_bytes);
	b[16] ^= 1; /* c4_state.plies: the side to move is plies & 1 */
	assert_int_not_equal(g->to_move(a), g->to_move(b));
	assert_true(az_evalcache_key(g, a) != az_evalcache_key(g, b));
}

/* ---- find and put ---- */

/* Put through wr, find through rd (the same handle, or two on one shared table): the entry
 * comes back exactly; another generation, model or key never hits; rd counted 1 hit, 4 misses. */
static void put_find(struct az_evalcache *wr, struct az_evalcache *rd)
{
	float pol[9] = {0.1f, 0.2f, 0.3f, 0, 0, 0, 0, 0, 0.4f}, v = 0, d = 0;
	assert_null(az_evalcache_find(rd, 42, 0, 1, &v, &d));
	az_evalcache_put(wr, 42, 0, 1, pol, -0.25f, 0.625f);
	const float *got = az_evalcache_find(rd, 42, 0, 1, &v, &d);
	assert_non_null(got);
	assert_memory_equal(got, pol, sizeof(pol));
	assert_true(v == -0.25f);
	assert_true(d == 0.625f); /* a win/draw/loss head's p_draw comes back with the value */
	/* another generation of the same model, or the other model: never a hit */
	assert_null(az_evalcache_find(rd, 42, 0, 2, &v, &d));
	assert_null(az_evalcache_find(rd, 42, 1, 1, &v, &d));
	assert_null(az_evalcache_find(rd, 43, 0, 1, &v, &d));
	struct az_evalcache_stats st;
	az_evalcache_stats(rd, &st);
	assert_int_equal((int)st.hits, 1);
	assert_int_equal((int)st.misses, 4);
	az_evalcache_stats(wr, &st);
	assert_int_equal((int)st.inserts, 1);
}

static void test_put_find(void **unused)
{
	(void)unused;
	struct az_evalcache *c;
	assert_int_equal(az_evalcache_create(9, 1 << 16, &c), 0);
	/* a prefetch reads nothing and counts nothing, whatever it is asked */
	az_evalcache_prefetch(c, 0, 0, 0);
	az_evalcache_prefetch(c, UINT64_MAX, UINT32_MAX, UINT32_MAX);
	struct az_evalcache_stats st;
	az_evalcache_stats(c, &st);
	assert_int_equal((int)(st.hits + st.misses + st.inserts), 0);
	put_find(c, c);
	az_evalcache_destroy(c);
}

/* A model that changed generation never answers from entries of the old one, even when the
 * new generation's entries are stored for the same positions. */
static void test_generation_never_hits(void **unused)
{
	(void)unused;
	struct az_evalcache *c;
	assert_int_equal(az_evalcache_create(3, 1 << 20, &c), 0);
	float old[3] = {1, 0, 0}, neu[3] = {0, 0, 1}, v, d;
	for (uint64_t k = 1; k <= 1000; k++)
		az_evalcache_put(c, k * 0x9e3779b97f4a7c15ull, 0, 7, old, 1.0f, 0.0f);
	for (uint64_t k = 1; k <= 1000; k++)
		assert_null(az_evalcache_find(c, k * 0x9e3779b97f4a7c15ull, 0, 8, &v, &d));
	for (uint64_t k = 1; k <= 1000; k++)
		az_evalcache_put(c, k * 0x9e3779b97f4a7c15ull, 0, 8, neu, -1.0f, 0.0f);
	for (uint64_t k = 1; k <= 1000; k++) {
		const float *p = az_evalcache_find(c, k * 0x9e3779b97f4a7c15ull, 0, 8, &v, &d);
		if (p) { /* a line may have been taken by another key; a hit is the new answer */
			assert_memory_equal(p, neu, sizeof(neu));
			assert_true(v == -1.0f);
		}
	}
	az_evalcache_destroy(c);
}

/* The cache never holds more than it was given, however many positions pass through it. */
static void test_bound(void **unused)
{
	(void)unused;
	struct az_evalcache *c;
	const size_t max = 100000;
	assert_int_equal(az_evalcache_create(7, max, &c), 0);
	struct az_evalcache_stats st;
	az_evalcache_stats(c, &st);
	assert_true(st.bytes <= max);
	assert_true(st.entries > 0 && (st.entries & (st.entries - 1)) == 0);
	/* the largest power of two that fits */
	assert_true(st.bytes + (size_t)st.entries * az_evalcache_entry_bytes(7) > max);
	size_t bytes = st.bytes;
	float pol[7] = {0};
	for (uint64_t k = 0; k < 20u * st.entries; k++)
		az_evalcache_put(c, k, 0, 1, pol, 0, 0.0f);
	az_evalcache_stats(c, &st);
	assert_true(st.bytes == bytes);
	assert_true(st.evictions >= 19u * st.entries);
	az_evalcache_destroy(c);
	assert_int_equal(az_evalcache_create(7, 8, &c), -EINVAL);
	assert_null(c);
	assert_int_equal(az_evalcache_create(0, max, &c), -EINVAL);
	assert_int_equal(az_evalcache_create(AZ_GAME_ACTIONS_MAX + 1, max, &c), -EINVAL);
	/* past the library's limit: refused before any allocation */
	assert_int_equal(az_evalcache_create(7, ((size_t)AZ_EVALCACHE_MB_MAX << 20) + 1, &c),
			 -EINVAL);
}

/* ---- a cached search against an uncached one ---- */

/* A deterministic stand-in for the network that differs from position to position: priors and
 * value from an FNV-1a hash of the state (independent of the cache's key). */
static void fake_net(const struct az_game *g, const void *state, float *policy, float *value)
{
	const uint8_t *p = state;
	uint64_t h = 1469598103934665603ull;
	for (uint32_t i = 0; i < g->state_bytes; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	for (uint32_t a = 0; a < g->actions; a++) {
		h = (h ^ a) * 1099511628211ull;
		policy[a] = 0.05f + (float)((h >> 40) & 0xffff) / 65536.0f;
	}
	*value = (float)((h >> 20) & 0xfff) / 2048.0f - 1.0f;
}

/* Play a game of g by `sims` simulations a move, one leaf at a time as a worker with --leaves 1
 * does, through cache c (NULL: every leaf evaluated). The moves go into moves[]; returns the
 * number of plies, with the network's calls in *evals. */
static int play(const struct az_game *g, struct az_evalcache *c, uint32_t sims, int *moves,
		uint64_t *evals)
{
	struct az_mcts_params mp;
	az_mcts_params_default(&mp, g);
	mp.seed = 5;
	uint8_t s[AZ_GAME_STATE_MAX];
	g->init(s);
	struct az_tree *t;
	assert_int_equal(az_tree_create(g, &mp, s, &t), 0);
	az_tree_set_noise(t, 1);
	struct az_leaf leaf;
	float pol[AZ_GAME_ACTIONS_MAX], v, d;
	int plies = 0;
	*evals = 0;
	for (;;) {
		while (az_tree_root_visits(t) < sims) {
			int rc = az_tree_select(t, &leaf);
			assert_true(rc >= 0 && rc != AZ_SELECT_BUSY);
			if (rc == AZ_SELECT_TERMINAL)
				continue;
			uint64_t key = az_evalcache_key(g, leaf.state);
			const float *hit = c ? az_evalcache_find(c, key, 0, 1, &v, &d) : NULL;
			if (hit) {
				az_tree_expand(t, leaf.node, hit, v);
				continue;
			}
			fake_net(g, leaf.state, pol, &v);
			(*evals)++;
			if (c)
				az_evalcache_put(c, key, 0, 1, pol, v, 0.0f);
			az_tree_expand(t, leaf.node, pol, v);
		}
		int a = az_tree_pick(t, plies < 4 ? 1.0f : 0.0f, NULL);
		assert_true(a >= 0);
		moves[plies++] = a;
		g->apply(s, a);
		float fin;
		if (g->terminal(s, &fin))
			break;
		assert_int_equal(az_tree_advance(t, a), 0);
	}
	az_tree_destroy(t);
	return plies;
}

/* A shared table of at most max_bytes for g in 64-byte aligned zeroed memory, and a handle. */
static void *shared_table(const struct az_game *g, size_t max_bytes, struct az_evalcache **c)
{
	size_t bytes = az_evalcache_shm_memsize(g->actions, max_bytes);
	assert_true(bytes > 0 && bytes <= max_bytes);
	void *mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	assert_non_null(mem);
	memset(mem, 0, bytes);
	assert_int_equal(az_evalcache_shm_init(mem, bytes, g->actions), 0);
	assert_int_equal(az_evalcache_attach(mem, bytes, g->actions, c), 0);
	return mem;
}

static void same_game(const struct az_game *g, size_t cache_bytes, uint32_t sims, int shared)
{
	int m0[64], m1[64];
	uint64_t e0, e1;
	int n0 = play(g, NULL, sims, m0, &e0);
	struct az_evalcache *c;
	void *mem = NULL;
	if (shared)
		mem = shared_table(g, cache_bytes, &c);
	else
		assert_int_equal(az_evalcache_create(g->actions, cache_bytes, &c), 0);
	int n1 = play(g, c, sims, m1, &e1);
	assert_int_equal(n0, n1);
	assert_memory_equal(m0, m1, sizeof(int) * (size_t)n0);
	struct az_evalcache_stats st;
	az_evalcache_stats(c, &st);
	assert_true(st.hits > 0);       /* transpositions were answered by the cache ... */
	assert_true(e1 + st.hits == e0); /* ... and each hit saved one network call */
	az_evalcache_destroy(c);
	free(mem);
}

static void test_cached_search_same_moves(void **unused)
{
	(void)unused;
	for (int shared = 0; shared < 2; shared++) {
		same_game(ttt(), 1 << 20, 200, shared);
		same_game(&az_game_connect4, 1 << 20, 300, shared);
		/* a cache far smaller than the search: evictions everywhere, the same game */
		same_game(&az_game_connect4, 4096, 300, shared);
	}
}

/* The shared table: sizes, header checks, two handles seeing each other's entries, generations
 * and models kept apart. */
static void test_shared_table(void **unused)
{
	(void)unused;
	const struct az_game *g = ttt();
	/* 64-byte header + entries of 64 bytes (24 + 9 * 4 rounded up), a power of two of them */
	assert_int_equal(az_evalcache_shm_memsize(9, 64 + 64 * 100), 64 + 64 * 64);
	assert_int_equal(az_evalcache_shm_memsize(9, 64 + 63), 0);
	assert_int_equal(az_evalcache_shm_memsize(0, 1 << 20), 0);
	assert_int_equal(az_evalcache_shm_memsize(AZ_GAME_ACTIONS_MAX + 1, 1 << 20), 0);
	struct az_evalcache *a, *b, *x;
	void *mem = shared_table(g, 1 << 16, &a);
	size_t bytes = az_evalcache_shm_memsize(9, 1 << 16);
	assert_int_equal(az_evalcache_shm_init(mem, bytes - 64, 9), -EINVAL); /* not a size */
	assert_int_equal(az_evalcache_attach(mem, bytes, 9, &b), 0);
	assert_int_equal(az_evalcache_attach(mem, bytes, 7, &x), -EPROTO);   /* another game */
	assert_int_equal(az_evalcache_attach(mem, bytes - 64, 9, &x), -EPROTO); /* cut short */
	assert_null(x);
	az_evalcache_prefetch(b, UINT64_MAX, 3, 9); /* a hint only: changes nothing below */
	put_find(a, b); /* b sees a's entry */
	struct az_evalcache_stats st;
	az_evalcache_stats(b, &st);
	assert_int_equal(st.entries, (bytes - 64) / 64);
	az_evalcache_destroy(a);
	az_evalcache_destroy(b);
	/* a zeroed region without init is no table */
	memset(mem, 0, bytes);
	assert_int_equal(az_evalcache_attach(mem, bytes, 9, &x), -EPROTO);
	free(mem);
}

AZ_TEST_MAIN(cmocka_unit_test(test_key_distinct), cmocka_unit_test(test_key_side_to_move),
	     cmocka_unit_test(test_put_find), cmocka_unit_test(test_generation_never_hits),
	     cmocka_unit_test(test_bound), cmocka_unit_test(test_cached_search_same_moves),
	     cmocka_unit_test(test_shared_table))
