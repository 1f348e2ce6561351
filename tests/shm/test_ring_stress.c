/* SPDX-License-Identifier: MIT */
/* Stress test of the rings over a real segment: W producers and one consumer, as processes (the
 * deployment shape) and as threads (so ThreadSanitizer can see both sides), with a fill/verify
 * payload of producer id, sequence number and checksum (DPDK ring_stress), and random pauses on
 * both sides so that every waiting path (spin, futex sleep, wake) is taken. Built twice:
 * test_ring_stress (3 x 10^5 requests per variant) and test_ring_stress_1m (STRESS_W=4,
 * STRESS_N=250000: 10^6 requests per variant). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/rng.h"
#include "shm/segment.h"
#include "tests/test_util.h"

#ifndef STRESS_W
#define STRESS_W 3
#endif
#ifndef STRESS_N
#define STRESS_N 100000u
#endif
#define W STRESS_W
/* Requests per producer in each variant (W x STRESS_N in total). */
#define N_PROC STRESS_N
#define N_THREAD STRESS_N
#define CAPACITY 64u
#define PAYLOAD 88u
#define WAIT_LIMIT_US (10u * 1000 * 1000) /* a stuck wait is a failure, not a hang */

/* One slot (128 bytes): request fields, then the response written in place by the consumer. */
struct msg {
	uint32_t producer;
	uint32_t len;
	uint64_t seq;
	uint64_t sum; /* checksum of producer, seq, len and payload */
	uint64_t resp_seq;
	uint64_t resp;
	uint8_t payload[PAYLOAD];
};
_Static_assert(sizeof(struct msg) == 128, "one 128-byte slot");

/* Control area of the segment. */
struct stress_ctl {
	_Atomic uint32_t done;   /* producers finished (successfully or not) */
	_Atomic uint32_t errors; /* verification failures anywhere */
	_Atomic uint64_t served; /* requests answered by the consumer */
	_Atomic uint64_t verified; /* responses verified by producers */
};

static uint64_t checksum(const struct msg *m)
{
	uint64_t h = 1469598103934665603ull;
	uint64_t head[3] = { m->producer, m->seq, m->len };

	for (size_t i = 0; i < sizeof(head); i++) {
		h ^= ((const uint8_t *)head)[i];
		h *= 1099511628211ull;
	}
	for (uint32_t i = 0; i < m->len && i < PAYLOAD; i++) {
		h ^= m->payload[i];
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t response_of(const struct msg *m)
{
	return (m->sum * 0x9e3779b97f4a7c15ull) ^ m->seq ^ ((uint64_t)m->producer << 56);
}

static void pause_us(uint32_t us)
{
	struct timespec ts = { 0, (long)us * 1000 };

	nanosleep(&ts, NULL);
}

/* Worker side: send n requests, verify each response in order. Returns the error count. */
static uint32_t producer_run(struct az_seg *seg, uint32_t id, uint32_t n)
{
	struct stress_ctl *ctl = az_seg_ctl(seg);
	struct az_wait wt = { .spin = 32, .timeout_us = WAIT_LIMIT_US };
	uint32_t sent = 0, recv = 0, errors = 0;
	struct az_rng rng;
	struct az_ring r;

	az_rng_seed(&rng, 1000 + id);
	if (az_seg_ring(seg, id, &r) != 0)
		errors++;
	while (!errors && recv < n) {
		uint32_t burst = 1 + az_rng_below(&rng, 16);
		int progress = 0;
		struct msg *m;
		uint64_t seq;

		while (sent < n && burst-- && (m = az_ring_claim(&r, &seq)) != NULL) {
			m->producer = id;
			m->seq = sent;
			m->len = az_rng_below(&rng, PAYLOAD + 1);
			for (uint32_t i = 0; i < m->len; i++)
				m->payload[i] = (uint8_t)az_rng_next(&rng);
			m->sum = checksum(m);
			errors += seq != sent;
			az_ring_publish(&r);
			sent++;
			progress = 1;
		}
		while ((m = az_ring_result(&r, &seq)) != NULL) {
			/* In order, none lost or duplicated: the k-th response answers request k. */
			errors += seq != recv || m->seq != recv || m->resp_seq != recv;
			errors += m->producer != id || m->resp != response_of(m);
			az_ring_release(&r);
			recv++;
			progress = 1;
		}
		if (az_rng_below(&rng, 512) == 0)
			pause_us(1 + az_rng_below(&rng, 50));
		else if (az_rng_below(&rng, 64) == 0)
			sched_yield();
		if (!progress && az_ring_wait_result(&r, &wt) == -ETIMEDOUT)
			errors++;
	}
	atomic_fetch_add_explicit(&ctl->verified, recv, memory_order_relaxed);
	atomic_fetch_add_explicit(&ctl->errors, errors, memory_order_relaxed);
	/* Release: our counters above are visible to whoever sees done reach W. */
	atomic_fetch_add_explicit(&ctl->done, 1, memory_order_release);
	return errors;
}

/* Server side: answer requests until every producer is done. Returns the error count. */
static uint32_t consumer_run(struct az_seg *seg)
{
	struct stress_ctl *ctl = az_seg_ctl(seg);
	struct az_batch_params bp = {
		.max_batch = 32, .deadline_us = 50, .spin = 64, .idle_timeout_us = 20000
	};
	uint64_t next[W] = { 0 }, served = 0;
	struct az_ring rings[W];
	struct az_batch_span runs[2 * W];
	uint32_t errors = 0, total;
	struct az_rng rng;

	az_rng_seed(&rng, 77);
	for (uint32_t i = 0; i < W; i++)
		if (az_seg_ring(seg, i, &rings[i]) != 0)
			return 1;
	for (;;) {
		int nr = az_batch_collect(rings, W, &bp, runs, 2 * W, &total);

		if (nr < 0)
			return 1;
		/* Acquire: pairs with the producers' release increments of done. */
		if (nr == 0 && atomic_load_explicit(&ctl->done, memory_order_acquire) == W)
			break;
		for (int k = 0; k < nr; k++) {
			struct az_batch_span *run = &runs[k];
			struct az_ring *r = &rings[run->ring];

			errors += run->first != next[run->ring];
			for (uint32_t j = 0; j < run->count; j++) {
				struct msg *m = az_ring_slot(r, run->first + j);

				errors += m->producer != run->ring || m->seq != run->first + j;
				errors += m->len > PAYLOAD || m->sum != checksum(m);
				m->resp_seq = m->seq;
				m->resp = response_of(m);
			}
			next[run->ring] = run->first + run->count;
			served += run->count;
			az_ring_serve(r, run->first + run->count);
		}
		/* Random pauses of the server, so producers fill their rings and sleep. */
		if (az_rng_below(&rng, 1024) == 0)
			pause_us(1 + az_rng_below(&rng, 200));
		else if (az_rng_below(&rng, 128) == 0)
			sched_yield();
	}
	atomic_fetch_add_explicit(&ctl->served, served, memory_order_relaxed);
	atomic_fetch_add_explicit(&ctl->errors, errors, memory_order_relaxed);
	return errors;
}

static void create_segment(struct az_seg *seg, const char *tag)
{
	struct az_seg_params p = { .nrings = W, .capacity = CAPACITY,
				   .slot_bytes = sizeof(struct msg),
				   .ctl_bytes = sizeof(struct stress_ctl) };
	char name[64];

	az_seg_name(name, sizeof(name), tag);
	shm_unlink(name);
	assert_int_equal(az_seg_create(seg, name, &p), 0);
}

static void check_totals(struct az_seg *seg, uint32_t n)
{
	struct stress_ctl *ctl = az_seg_ctl(seg);
	struct az_ring r;

	assert_int_equal(atomic_load(&ctl->errors), 0);
	assert_int_equal(atomic_load(&ctl->done), W);
	assert_true(atomic_load(&ctl->served) == (uint64_t)W * n);
	assert_true(atomic_load(&ctl->verified) == (uint64_t)W * n);
	for (uint32_t i = 0; i < W; i++) {
		assert_int_equal(az_seg_ring(seg, i, &r), 0);
		assert_true(atomic_load(&r.shm->published) == n);
		assert_true(atomic_load(&r.shm->served) == n);
		assert_true(atomic_load(&r.shm->consumed) == n);
	}
}

/* Processes: each child attaches by name, as workers and the server do. */
static void test_stress_processes(void **state)
{
	struct az_seg seg;
	pid_t pids[W + 1];

	(void)state;
	create_segment(&seg, "stress-proc");
	for (uint32_t i = 0; i <= W; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			struct az_seg mine;
			uint32_t errors;

			if (az_seg_attach(&mine, seg.name) != 0)
				_exit(2);
			errors = i == W ? consumer_run(&mine) : producer_run(&mine, i, N_PROC);
			az_seg_detach(&mine);
			_exit(errors ? 1 : 0);
		}
	}
	for (uint32_t i = 0; i <= W; i++) {
		int status = 0;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	check_totals(&seg, N_PROC);
	assert_int_equal(az_seg_destroy(&seg), 0);
}

struct thread_arg {
	struct az_seg *seg;
	uint32_t id; /* W: the consumer */
	uint32_t errors;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;

	a->errors = a->id == W ? consumer_run(a->seg) : producer_run(a->seg, a->id, N_THREAD);
	return NULL;
}

/* Threads over one mapping: the same protocol, visible to ThreadSanitizer. */
static void test_stress_threads(void **state)
{
	struct thread_arg args[W + 1];
	pthread_t t[W + 1];
	struct az_seg seg;

	(void)state;
	create_segment(&seg, "stress-thr");
	for (uint32_t i = 0; i <= W; i++) {
		args[i] = (struct thread_arg){ &seg, i, 0 };
		assert_int_equal(pthread_create(&t[i], NULL, thread_main, &args[i]), 0);
	}
	for (uint32_t i = 0; i <= W; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(args[i].errors, 0);
	}
	check_totals(&seg, N_THREAD);
	assert_int_equal(az_seg_destroy(&seg), 0);
}

AZ_TEST_MAIN(cmocka_unit_test(test_stress_processes), cmocka_unit_test(test_stress_threads))
