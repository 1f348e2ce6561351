/* SPDX-License-Identifier: MIT */
/* Unit tests of the SPSC request ring (shm/ring.c) in process-local memory: geometry, full and
 * empty rings, counter wrap-around past 2^64, untrusted peer counters, batch collection, taking
 * spans after those already taken. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/util.h"
#include "shm/ring.h"

#define MAX_RINGS 4

/* A few rings sharing one doorbell; each has a producer handle and a consumer handle. The batch
 * tests also collect from them with bp into runs (fx_setup_batch(), collect()). */
struct fixture {
	void *mem[MAX_RINGS];
	struct az_doorbell_shm bell;
	struct az_ring prod[MAX_RINGS];
	struct az_ring cons[MAX_RINGS];
	uint32_t n;
	struct az_batch_params bp;
	struct az_batch_span runs[8];
	uint32_t total; /* the requests in runs, as the last collect() left it */
};

static uint64_t now_us(void)
{
	return az_now_ns() / 1000u;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static void *ring_alloc(uint32_t capacity, uint32_t slot_bytes)
{
	size_t bytes = az_ring_memsize(capacity, slot_bytes);
	void *mem;

	assert_true(bytes > 0);
	mem = aligned_alloc(AZ_CACHELINE, bytes);
	assert_non_null(mem);
	memset(mem, 0xa5, bytes); /* init must not rely on zeroed memory */
	assert_int_equal(az_ring_init(mem, capacity, slot_bytes), 0);
	return mem;
}

/* n rings; when start is nonzero every counter is poked to start before attaching. */
static void fx_setup(struct fixture *f, uint32_t n, uint32_t capacity, uint64_t start)
{
	memset(f, 0, sizeof(*f));
	f->n = n;
	for (uint32_t i = 0; i < n; i++) {
		struct az_ring_shm *shm;

		f->mem[i] = ring_alloc(capacity, 64);
		shm = f->mem[i];
		atomic_store_explicit(&shm->published, start, memory_order_relaxed);
		atomic_store_explicit(&shm->consumed, start, memory_order_relaxed);
		atomic_store_explicit(&shm->served, start, memory_order_relaxed);
		assert_int_equal(az_ring_attach(&f->prod[i], f->mem[i], &f->bell), 0);
		assert_int_equal(az_ring_attach(&f->cons[i], f->mem[i], &f->bell), 0);
	}
}

/* fx_setup() for a batch test: n rings of capacity 8 from 0, to be collected with bp. */
static void fx_setup_batch(struct fixture *f, uint32_t n, struct az_batch_params bp)
{
	fx_setup(f, n, 8, 0);
	f->bp = bp;
}

static void fx_teardown(struct fixture *f)
{
	for (uint32_t i = 0; i < f->n; i++)
		free(f->mem[i]);
}

/* az_batch_collect over f's first n rings with f->bp into f->runs[0..max_runs) (max_runs at
 * most 8), the request count into f->total: returns the number of runs, or -errno. */
static int collect(struct fixture *f, uint32_t n, uint32_t max_runs)
{
	assert_true(max_runs <= sizeof(f->runs) / sizeof(f->runs[0]));
	return az_batch_collect(f->cons, n, &f->bp, f->runs, max_runs, &f->total);
}

/* Batch parameters that take at most max_batch of the requests already waiting: no spinning, no
 * deadline (and no idle timeout: the caller publishes first). */
static struct az_batch_params take_now(uint32_t max_batch)
{
	return (struct az_batch_params){ .max_batch = max_batch, .deadline_us = 0, .spin = 0 };
}

/* Producer: claim, write val, publish. */
static uint64_t push(struct az_ring *p, uint64_t val)
{
	uint64_t seq;
	uint64_t *slot = az_ring_claim(p, &seq);

	assert_non_null(slot);
	slot[0] = val;
	az_ring_publish(p);
	return seq;
}

/* Consumer: answer every request of ring c with val * 3 + 1 and serve it. */
static uint32_t answer_all(struct az_ring *c)
{
	uint64_t first = atomic_load_explicit(&c->shm->served, memory_order_relaxed);
	uint32_t n = az_ring_pending(c);

	for (uint32_t k = 0; k < n; k++) {
		uint64_t *slot = az_ring_slot(c, first + k);

		slot[1] = slot[0] * 3 + 1;
	}
	az_ring_serve(c, first + n);
	return n;
}

/* Producer: take one result, check it answers val, release it. */
static void pop_expect(struct az_ring *p, uint64_t seq, uint64_t val)
{
	uint64_t got_seq;
	uint64_t *slot = az_ring_result(p, &got_seq);

	assert_non_null(slot);
	assert_true(got_seq == seq);
	assert_true(slot[0] == val);
	assert_true(slot[1] == val * 3 + 1);
	az_ring_release(p);
}

static void test_memsize_geometry(void **state)
{
	static _Alignas(64) uint8_t buf[4096];
	struct az_doorbell_shm bell = { 0 };
	struct az_ring r;
	struct az_ring_shm *shm = (struct az_ring_shm *)buf;

	(void)state;
	assert_int_equal(az_ring_memsize(0, 64), 0);
	assert_int_equal(az_ring_memsize(1, 64), 0);
	assert_int_equal(az_ring_memsize(3, 64), 0);
	assert_int_equal(az_ring_memsize(12, 64), 0);
	assert_int_equal(az_ring_memsize(8, 0), 0);
	assert_int_equal(az_ring_memsize(8, 32), 0);
	assert_int_equal(az_ring_memsize(8, 100), 0);
	assert_int_equal(az_ring_memsize(8, 64), sizeof(struct az_ring_shm) + 8 * 64);
	assert_int_equal(az_ring_memsize(2, 128), sizeof(struct az_ring_shm) + 2 * 128);
	assert_int_equal(az_ring_memsize(AZ_RING_CAPACITY_MAX, 64),
			 sizeof(struct az_ring_shm) + (size_t)AZ_RING_CAPACITY_MAX * 64);
	assert_int_equal(az_ring_memsize(2 * AZ_RING_CAPACITY_MAX, 64), 0); /* past the limit */
	assert_int_equal(az_ring_init(buf, 6, 64), -EINVAL);
	assert_int_equal(az_ring_init(buf, 8, 48), -EINVAL);
	assert_int_equal(az_ring_init(buf + 8, 8, 64), -EINVAL); /* not 64-byte aligned */

	assert_int_equal(az_ring_init(buf, 8, 64), 0);
	assert_int_equal(az_ring_attach(&r, buf, &bell), 0);
	assert_int_equal(r.capacity, 8);
	assert_int_equal(r.mask, 7);
	assert_ptr_equal(r.slots, buf + sizeof(struct az_ring_shm));
	assert_ptr_equal(az_ring_slot(&r, 9), buf + sizeof(struct az_ring_shm) + 64);

	shm->magic ^= 1; /* corrupted magic */
	assert_int_equal(az_ring_attach(&r, buf, &bell), -EPROTO);
	shm->magic ^= 1;
	shm->capacity = 12; /* corrupted geometry */
	assert_int_equal(az_ring_attach(&r, buf, &bell), -EPROTO);
	shm->capacity = 8;
	/* Inconsistent counters: served beyond published, and more than a ring in flight. */
	atomic_store_explicit(&shm->served, 3, memory_order_relaxed);
	assert_int_equal(az_ring_attach(&r, buf, &bell), -EPROTO);
	atomic_store_explicit(&shm->served, 0, memory_order_relaxed);
	atomic_store_explicit(&shm->published, 9, memory_order_relaxed);
	assert_int_equal(az_ring_attach(&r, buf, &bell), -EPROTO);
	atomic_store_explicit(&shm->published, 8, memory_order_relaxed);
	assert_int_equal(az_ring_attach(&r, buf, &bell), 0);
	assert_int_equal(az_ring_inflight(&r), 8);
}

static void test_claim_until_full(void **state)
{
	struct fixture f;
	uint64_t seq = 99;
	void *s0, *s1;

	(void)state;
	fx_setup(&f, 1, 8, 0);
	/* Claim without publish hands out the same slot again. */
	s0 = az_ring_claim(&f.prod[0], &seq);
	assert_non_null(s0);
	assert_true(seq == 0);
	assert_ptr_equal(az_ring_claim(&f.prod[0], NULL), s0);
	for (uint64_t i = 0; i < 8; i++) {
		assert_int_equal(az_ring_inflight(&f.prod[0]), i);
		assert_true(push(&f.prod[0], 100 + i) == i);
	}
	assert_null(az_ring_claim(&f.prod[0], &seq)); /* exactly at capacity */
	assert_int_equal(az_ring_inflight(&f.prod[0]), 8);
	assert_true(atomic_load(&f.prod[0].shm->published) == 8);

	/* Free one slot: serve everything, release one result; the claim reuses slot 0. */
	assert_int_equal(answer_all(&f.cons[0]), 8);
	pop_expect(&f.prod[0], 0, 100);
	assert_true(atomic_load(&f.prod[0].shm->consumed) == 1);
	s1 = az_ring_claim(&f.prod[0], &seq);
	assert_ptr_equal(s1, s0);
	assert_true(seq == 8);
	az_ring_publish(&f.prod[0]);
	assert_null(az_ring_claim(&f.prod[0], NULL)); /* full again */
	fx_teardown(&f);
}

static void test_result_empty(void **state)
{
	struct fixture f;
	uint64_t seq;

	(void)state;
	fx_setup(&f, 1, 4, 0);
	assert_null(az_ring_result(&f.prod[0], &seq));
	push(&f.prod[0], 7);
	assert_null(az_ring_result(&f.prod[0], &seq)); /* published, not served */
	assert_int_equal(az_ring_pending(&f.cons[0]), 1);
	assert_int_equal(answer_all(&f.cons[0]), 1);
	assert_int_equal(az_ring_pending(&f.cons[0]), 0);
	pop_expect(&f.prod[0], 0, 7);
	assert_null(az_ring_result(&f.prod[0], &seq));
	fx_teardown(&f);
}

/* Many laps with a varying number in flight; the counters must track exactly. */
static void run_laps(uint64_t start)
{
	struct fixture f;
	uint64_t sent = 0, got = 0, total = 5000;

	fx_setup(&f, 1, 4, start);
	while (got < total) {
		uint32_t burst = (uint32_t)(sent % 5);

		for (uint32_t k = 0; k < burst && sent < total && az_ring_claim(&f.prod[0], NULL);
		     k++, sent++)
			push(&f.prod[0], sent);
		assert_int_equal(az_ring_pending(&f.cons[0]), (uint32_t)(sent - got));
		answer_all(&f.cons[0]);
		while (got < sent) {
			pop_expect(&f.prod[0], start + got, got);
			got++;
		}
		if (burst == 0 && sent < total)
			push(&f.prod[0], sent++);
	}
	assert_true(atomic_load(&f.cons[0].shm->published) == start + total);
	assert_true(atomic_load(&f.cons[0].shm->served) == start + total);
	assert_true(atomic_load(&f.cons[0].shm->consumed) == start + total);
	assert_int_equal(az_ring_inflight(&f.prod[0]), 0);
	fx_teardown(&f);
}

static void test_laps(void **state)
{
	(void)state;
	run_laps(0);
}

static void test_wrap_2_64(void **state)
{
	struct fixture f;
	uint64_t start = UINT64_MAX - 2; /* slot index 5 of 8; wraps after 3 requests */

	(void)state;
	run_laps(UINT64_MAX - 100);
	fx_setup(&f, 1, 8, start);
	f.bp = take_now(16);
	for (uint64_t i = 0; i < 6; i++)
		assert_true(push(&f.prod[0], i) == start + i);
	assert_int_equal(az_ring_pending(&f.cons[0]), 6);
	assert_int_equal(az_ring_inflight(&f.prod[0]), 6);
	assert_true(atomic_load(&f.cons[0].shm->published) == 3);
	/* The pending range crosses both 2^64 and the end of the slot array: two runs. */
	assert_int_equal(collect(&f, 1, 4), 2);
	assert_int_equal(f.total, 6);
	assert_true(f.runs[0].first == start && f.runs[0].count == 3);
	assert_true(f.runs[1].first == 0 && f.runs[1].count == 3);
	answer_all(&f.cons[0]);
	for (uint64_t i = 0; i < 6; i++)
		pop_expect(&f.prod[0], start + i, i);
	fx_teardown(&f);
}

/* A peer's counters are untrusted: out-of-window values are ignored, not followed. */
static void test_untrusted_counters(void **state)
{
	struct fixture f;
	struct az_ring_shm *shm;
	uint64_t seq = 99;

	(void)state;
	fx_setup(&f, 1, 8, 0);
	shm = f.mem[0];
	push(&f.prod[0], 1);
	push(&f.prod[0], 2);
	/* served beyond published: the producer must not read results that do not exist. */
	atomic_store_explicit(&shm->served, 5, memory_order_relaxed);
	assert_null(az_ring_result(&f.prod[0], NULL));
	atomic_store_explicit(&shm->served, 1, memory_order_relaxed);
	assert_non_null(az_ring_result(&f.prod[0], &seq));
	assert_true(seq == 0);
	/* published more than a ring ahead of served, or behind it: the consumer sees nothing. */
	atomic_store_explicit(&shm->published, 1 + 9, memory_order_relaxed);
	assert_int_equal(az_ring_pending(&f.cons[0]), 0);
	atomic_store_explicit(&shm->published, 0, memory_order_relaxed);
	assert_int_equal(az_ring_pending(&f.cons[0]), 0);
	atomic_store_explicit(&shm->published, 1 + 8, memory_order_relaxed);
	assert_int_equal(az_ring_pending(&f.cons[0]), 8);
	fx_teardown(&f);
}

/* Publish and serve ring their peer only when it announced it sleeps, and clear the flag. */
static void test_wake_handshake(void **state)
{
	struct fixture f;
	struct az_ring_shm *shm;

	(void)state;
	fx_setup(&f, 1, 8, 0);
	shm = f.mem[0];
	push(&f.prod[0], 1);
	assert_int_equal(atomic_load(&f.bell.seq), 0);
	atomic_store(&f.bell.sleeping, 1);
	push(&f.prod[0], 2);
	assert_int_equal(atomic_load(&f.bell.seq), 1);
	assert_int_equal(atomic_load(&f.bell.sleeping), 0);
	push(&f.prod[0], 3);
	assert_int_equal(atomic_load(&f.bell.seq), 1);

	az_ring_serve(&f.cons[0], 1);
	assert_int_equal(atomic_load(&shm->served_futex), 0);
	atomic_store(&shm->producer_sleeping, 1);
	az_ring_serve(&f.cons[0], 2);
	assert_int_equal(atomic_load(&shm->served_futex), 1);
	assert_int_equal(atomic_load(&shm->producer_sleeping), 0);
	fx_teardown(&f);
}

static void test_pending(void **state)
{
	struct fixture f;

	(void)state;
	fx_setup(&f, 1, 8, 0);
	for (int i = 0; i < 5; i++)
		push(&f.prod[0], (uint64_t)i);
	assert_int_equal(az_ring_pending(&f.cons[0]), 5);
	az_ring_serve(&f.cons[0], 2);
	assert_int_equal(az_ring_pending(&f.cons[0]), 3);
	az_ring_serve(&f.cons[0], 5);
	assert_int_equal(az_ring_pending(&f.cons[0]), 0);
	fx_teardown(&f);
}

static uint32_t sum_counts(const struct az_batch_span *runs, int n)
{
	uint32_t s = 0;

	for (int i = 0; i < n; i++)
		s += runs[i].count;
	return s;
}

/* collect(): expect want_runs runs of want_total requests in all. Returns the microseconds the
 * call took. */
static uint64_t timed_collect(struct fixture *f, uint32_t n, uint32_t max_runs, int want_runs,
			      uint32_t want_total)
{
	uint64_t t0;

	f->total = 99; /* collect() must set it */
	t0 = now_us();
	assert_int_equal(collect(f, n, max_runs), want_runs);
	uint64_t dt = now_us() - t0;
	assert_int_equal(f->total, want_total);
	return dt;
}

/* Serve the first n of f->runs. */
static void serve_runs(struct fixture *f, int n)
{
	for (int i = 0; i < n; i++)
		az_ring_serve(&f->cons[f->runs[i].ring], f->runs[i].first + f->runs[i].count);
}

static void test_collect_max_batch(void **state)
{
	struct fixture f;
	const struct az_batch_params bp = { .max_batch = 7, .deadline_us = 0, .spin = 4 };
	int n;

	(void)state;
	fx_setup_batch(&f, 3, bp);
	for (uint32_t r = 0; r < 3; r++)
		for (int i = 0; i < 5; i++)
			push(&f.prod[r], (uint64_t)i);
	n = collect(&f, 3, 8);
	assert_true(n >= 2);
	assert_int_equal(f.total, 7);
	assert_int_equal(sum_counts(f.runs, n), 7);
	for (int i = 0; i < n; i++) {
		const struct az_batch_span *run = &f.runs[i];
		const struct az_ring *c = &f.cons[run->ring];

		assert_true(run->count > 0);
		assert_true((run->first & c->mask) + run->count <= c->capacity);
	}
	serve_runs(&f, n);
	assert_int_equal(az_ring_pending(&f.cons[0]) + az_ring_pending(&f.cons[1]) +
				 az_ring_pending(&f.cons[2]),
			 15 - 7);
	/* max_runs caps the run count (and with it the batch). */
	n = collect(&f, 3, 1);
	assert_int_equal(n, 1);
	assert_int_equal(f.total, f.runs[0].count);
	assert_int_equal(az_batch_collect(f.cons, 3, NULL, f.runs, 1, &f.total), -EINVAL);
	fx_teardown(&f);
}

static void test_collect_wrapped(void **state)
{
	struct fixture f;

	(void)state;
	fx_setup_batch(&f, 1, take_now(8));
	for (uint64_t i = 0; i < 6; i++)
		push(&f.prod[0], i);
	answer_all(&f.cons[0]);
	for (uint64_t i = 0; i < 6; i++)
		pop_expect(&f.prod[0], i, i);
	for (uint64_t i = 6; i < 10; i++)
		push(&f.prod[0], i); /* slots 6, 7, 0, 1 */
	assert_int_equal(collect(&f, 1, 4), 2);
	assert_int_equal(f.total, 4);
	assert_true(f.runs[0].ring == 0 && f.runs[0].first == 6 && f.runs[0].count == 2);
	assert_true(f.runs[1].ring == 0 && f.runs[1].first == 8 && f.runs[1].count == 2);
	/* With room for one run only, the batch stops at the end of the slot array. */
	assert_int_equal(collect(&f, 1, 1), 1);
	assert_int_equal(f.total, 2);
	assert_true(f.runs[0].first == 6 && f.runs[0].count == 2);
	fx_teardown(&f);
}

static void test_collect_round_robin(void **state)
{
	struct fixture f;

	(void)state;
	fx_setup_batch(&f, 3, take_now(2));
	/* Pin the cursor: a batch from ring 0 alone leaves it at ring 1. */
	push(&f.prod[0], 0);
	assert_int_equal(collect(&f, 3, 4), 1);
	assert_int_equal(f.runs[0].ring, 0);
	serve_runs(&f, 1);
	for (uint32_t r = 0; r < 3; r++)
		for (int i = 0; i < 4; i++)
			push(&f.prod[r], (uint64_t)i);
	/* Every ring has 4 waiting and a batch takes 2: rings take turns 1, 2, 0, 1, 2, 0. */
	for (uint32_t k = 0; k < 6; k++) {
		assert_int_equal(collect(&f, 3, 4), 1);
		assert_int_equal(f.total, 2);
		assert_int_equal(f.runs[0].ring, (k + 1) % 3);
		serve_runs(&f, 1);
	}
	for (uint32_t r = 0; r < 3; r++)
		assert_int_equal(az_ring_pending(&f.cons[r]), 0);
	fx_teardown(&f);
}

static void test_collect_timeouts(void **state)
{
	struct fixture f;
	const struct az_batch_params bp = { .max_batch = 8, .deadline_us = 5000, .spin = 16,
					    .idle_timeout_us = 3000 };
	uint64_t dt;

	(void)state;
	fx_setup_batch(&f, 2, bp);
	/* Idle: nothing arrives, 0 runs after the idle timeout. */
	dt = timed_collect(&f, 2, 4, 0, 0);
	assert_true(dt >= 3000);
	/* One request, batch not full: returned after the batch deadline, not before. */
	push(&f.prod[1], 1);
	dt = timed_collect(&f, 2, 4, 1, 1);
	assert_true(dt >= 5000);
	serve_runs(&f, 1);
	/* A full batch returns without waiting for a long deadline. */
	f.bp.deadline_us = 10u * 1000 * 1000;
	for (int i = 0; i < 8; i++)
		push(&f.prod[0], (uint64_t)i);
	assert_true(timed_collect(&f, 2, 4, 1, 8) < 2u * 1000 * 1000);
	fx_teardown(&f);
}

struct waker {
	struct fixture *f;
	int serve; /* 1: serve ring 0 after a pause; 0: publish into ring 0 after a pause */
};

static void *waker_main(void *arg)
{
	struct waker *w = arg;

	sleep_us(30000);
	if (w->serve)
		answer_all(&w->f->cons[0]);
	else
		push(&w->f->prod[0], 42);
	return NULL;
}

/* End to end through the futex: a sleeping consumer is woken by a publish from another thread. */
static void test_collect_wakes(void **state)
{
	struct fixture f;
	const struct az_batch_params bp = { .max_batch = 1, .spin = 0, .idle_timeout_us = 0 };
	struct waker w = { &f, 0 };
	pthread_t t;

	(void)state;
	fx_setup_batch(&f, 1, bp);
	assert_int_equal(pthread_create(&t, NULL, waker_main, &w), 0);
	assert_int_equal(collect(&f, 1, 2), 1);
	assert_int_equal(f.total, 1);
	assert_true(*(uint64_t *)az_ring_slot(&f.cons[0], f.runs[0].first) == 42);
	pthread_join(t, NULL);
	fx_teardown(&f);
}

static void test_wait_result(void **state)
{
	struct fixture f;
	struct az_wait wt = { .spin = 8, .timeout_us = 3000 };
	struct waker w = { &f, 1 };
	uint64_t t0;
	pthread_t t;

	(void)state;
	fx_setup(&f, 1, 8, 0);
	assert_int_equal(az_ring_wait_result(&f.prod[0], &wt), -EAGAIN);
	push(&f.prod[0], 5);
	t0 = now_us();
	assert_int_equal(az_ring_wait_result(&f.prod[0], &wt), -ETIMEDOUT);
	assert_true(now_us() - t0 >= 3000);
	/* Served by another thread while we sleep on the futex. */
	wt.timeout_us = 0;
	assert_int_equal(pthread_create(&t, NULL, waker_main, &w), 0);
	assert_int_equal(az_ring_wait_result(&f.prod[0], &wt), 0);
	pop_expect(&f.prod[0], 0, 5);
	pthread_join(t, NULL);
	assert_int_equal(az_ring_wait_result(&f.prod[0], NULL), -EAGAIN);
	fx_teardown(&f);
}

/* ---- adaptive batching: producer wait marks ---- */

/* The adaptive tests' batching: room for all they publish, and a deadline of 1 s that a batch
 * started by blocked producers comes in far below. */
static const struct az_batch_params adaptive_bp = { .max_batch = 8, .deadline_us = 1000000,
						    .spin = 16, .idle_timeout_us = 0 };

struct blocker {
	struct az_ring *prod;
	uint32_t delay_us; /* before blocking */
	int rc;
};

/* A producer that (after a pause) waits for its result: blocked until the consumer serves. */
static void *blocker_main(void *arg)
{
	struct blocker *b = arg;
	struct az_wait wt = { .spin = 0, .timeout_us = 0 };

	sleep_us(b->delay_us);
	b->rc = az_ring_wait_result(b->prod, &wt);
	return NULL;
}

/* Poll az_ring_producer_live() until it reads `want` (at most 5 s). */
static void wait_live(const struct az_ring *c, int want)
{
	for (int i = 0; i < 5000 && az_ring_producer_live(c) != want; i++)
		sleep_us(1000);
	assert_int_equal(az_ring_producer_live(c), want);
}

/* Start a thread whose producer (f's ring 0) blocks on its result at once (blocker_main, b), and
 * wait until the consumer side sees it not live. */
static void block_producer(struct fixture *f, struct blocker *b, pthread_t *t)
{
	*b = (struct blocker){ &f->prod[0], 0, -1 };
	assert_int_equal(pthread_create(t, NULL, blocker_main, b), 0);
	wait_live(&f->cons[0], 0);
}

static void test_producer_marks(void **state)
{
	struct fixture f;
	struct blocker b;
	pthread_t t;

	(void)state;
	fx_setup(&f, 1, 8, (uint64_t)1 << 32); /* the mark keeps the low halves: past 2^32 too */
	/* A fresh ring has no producer yet; publishing makes one. */
	assert_int_equal(az_ring_producer_live(&f.cons[0]), 0);
	push(&f.prod[0], 1);
	assert_int_equal(az_ring_producer_live(&f.cons[0]), 1);
	/* Waiting for its result, the producer can add nothing: not live until served. */
	block_producer(&f, &b, &t);
	/* Served: live again at once, before the producer has even woken. */
	answer_all(&f.cons[0]);
	assert_int_equal(az_ring_producer_live(&f.cons[0]), 1);
	pthread_join(t, NULL);
	assert_int_equal(b.rc, 0);
	assert_int_equal(az_ring_producer_live(&f.cons[0]), 1); /* running */
	pop_expect(&f.prod[0], (uint64_t)1 << 32, 1);
	/* Detached with nothing pending: nothing more can come. */
	az_ring_detach(&f.prod[0]);
	assert_int_equal(az_ring_producer_live(&f.cons[0]), 0);
	fx_teardown(&f);
}

/* The batch starts as soon as every producer is blocked or detached, not after the deadline;
 * the fixed-deadline baseline and a producer still running both wait for it. */
static void test_collect_adaptive(void **state)
{
	struct fixture f;
	struct blocker b;
	pthread_t t;

	(void)state;
	fx_setup_batch(&f, 2, adaptive_bp); /* ring 1 stays detached */
	for (int i = 0; i < 3; i++)
		push(&f.prod[0], (uint64_t)i);
	block_producer(&f, &b, &t);
	/* far below the 1 s deadline */
	assert_true(timed_collect(&f, 2, 4, 1, 3) < 500000);
	/* The same state under the fixed-deadline baseline: the whole deadline. */
	f.bp.fixed_deadline = 1;
	f.bp.deadline_us = 100000;
	assert_true(timed_collect(&f, 2, 4, 1, 3) >= 100000);
	answer_all(&f.cons[0]);
	pthread_join(t, NULL);
	for (int i = 0; i < 3; i++)
		pop_expect(&f.prod[0], (uint64_t)i, (uint64_t)i);
	/* A producer that may still publish (ring 1, running): the deadline holds. */
	f.bp.fixed_deadline = 0;
	push(&f.prod[0], 7);
	push(&f.prod[1], 8);
	assert_true(timed_collect(&f, 2, 4, 2, 2) >= 100000);
	fx_teardown(&f);
}

/* A consumer asleep waiting for producers to stop (AZ_BELL_WAKE_BLOCK) is woken by the producer
 * that blocks, long before the deadline. */
static void test_collect_block_wakes(void **state)
{
	struct fixture f;
	struct blocker b;
	uint64_t t0, dt;
	pthread_t t;

	(void)state;
	fx_setup_batch(&f, 1, adaptive_bp);
	f.bp.spin = 0; /* asleep on the doorbell at once */
	push(&f.prod[0], 3);
	b = (struct blocker){ &f.prod[0], 30000, -1 };
	t0 = now_us();
	assert_int_equal(pthread_create(&t, NULL, blocker_main, &b), 0);
	assert_int_equal(collect(&f, 1, 2), 1);
	dt = now_us() - t0;
	assert_int_equal(f.total, 1);
	assert_true(dt >= 25000 && dt < 500000);
	answer_all(&f.cons[0]);
	pthread_join(t, NULL);
	assert_int_equal(b.rc, 0);
	fx_teardown(&f);
}

/* az_ring_take(): spans after the ones already taken, split where they wrap the slot array. */
static void test_take_after_taken(void **state)
{
	struct fixture f;
	struct az_ring_span sp[2];
	struct az_ring *c;

	(void)state;
	fx_setup(&f, 1, 8, 0);
	c = &f.cons[0];
	assert_int_equal(az_ring_take(c, 0, 8, sp), 0);
	assert_true(sp[0].count == 0 && sp[1].count == 0);
	for (uint64_t i = 0; i < 6; i++)
		push(&f.prod[0], i);
	/* The first batch takes 4; the next one starts after them. */
	assert_int_equal(az_ring_take(c, 0, 4, sp), 4);
	assert_true(sp[0].first == 0 && sp[0].count == 4 && sp[1].count == 0);
	assert_int_equal(az_ring_take(c, 4, 8, sp), 2);
	assert_true(sp[0].first == 4 && sp[0].count == 2 && sp[1].count == 0);
	/* Nothing beyond what was taken (skip == pending, and skip past pending). */
	assert_int_equal(az_ring_take(c, 6, 8, sp), 0);
	assert_int_equal(az_ring_take(c, 7, 8, sp), 0);
	/* Taking marks nothing: the same skip returns the same slots. */
	assert_int_equal(az_ring_take(c, 4, 1, sp), 1);
	assert_true(sp[0].first == 4 && sp[0].count == 1);
	answer_all(c);
	for (uint64_t i = 0; i < 6; i++)
		pop_expect(&f.prod[0], i, i);
	/* Slots 6, 7, 0, 1, 2 pending: with 1 taken, the rest wraps the slot array. */
	for (uint64_t i = 6; i < 11; i++)
		push(&f.prod[0], i);
	assert_int_equal(az_ring_take(c, 1, 8, sp), 4);
	assert_true(sp[0].first == 7 && sp[0].count == 1);
	assert_true(sp[1].first == 8 && sp[1].count == 3);
	assert_true((sp[1].first & c->mask) == 0);
	/* max cuts the second part. */
	assert_int_equal(az_ring_take(c, 1, 2, sp), 2);
	assert_true(sp[0].first == 7 && sp[0].count == 1);
	assert_true(sp[1].first == 8 && sp[1].count == 1);
	/* Serving the first taken request moves the window: skip counts from served. */
	az_ring_serve(c, 7);
	assert_int_equal(az_ring_take(c, 0, 8, sp), 4);
	assert_true(sp[0].first == 7 && sp[0].count == 1 && sp[1].count == 3);
	fx_teardown(&f);
}

/* az_ring_take() across 2^64 and the end of the slot array at once. */
static void test_take_wrap_2_64(void **state)
{
	struct fixture f;
	struct az_ring_span sp[2];
	uint64_t start = UINT64_MAX - 4; /* slot index 3 of 8 */

	(void)state;
	fx_setup(&f, 1, 8, start);
	for (uint64_t i = 0; i < 8; i++)
		push(&f.prod[0], i);
	/* Two taken; the remaining six run from slot 5 to the end (3) and on from slot 0 (3). */
	assert_int_equal(az_ring_take(&f.cons[0], 2, 16, sp), 6);
	assert_true(sp[0].first == start + 2 && sp[0].count == 3);
	assert_true(sp[1].first == 0 && sp[1].count == 3);
	answer_all(&f.cons[0]);
	for (uint64_t i = 0; i < 8; i++)
		pop_expect(&f.prod[0], start + i, i);
	fx_teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memsize_geometry),
		cmocka_unit_test(test_claim_until_full),
		cmocka_unit_test(test_result_empty),
		cmocka_unit_test(test_laps),
		cmocka_unit_test(test_wrap_2_64),
		cmocka_unit_test(test_untrusted_counters),
		cmocka_unit_test(test_wake_handshake),
		cmocka_unit_test(test_pending),
		cmocka_unit_test(test_collect_max_batch),
		cmocka_unit_test(test_collect_wrapped),
		cmocka_unit_test(test_collect_round_robin),
		cmocka_unit_test(test_collect_timeouts),
		cmocka_unit_test(test_collect_wakes),
		cmocka_unit_test(test_producer_marks),
		cmocka_unit_test(test_collect_adaptive),
		cmocka_unit_test(test_collect_block_wakes),
		cmocka_unit_test(test_wait_result),
		cmocka_unit_test(test_take_after_taken),
		cmocka_unit_test(test_take_wrap_2_64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
