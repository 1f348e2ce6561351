/* SPDX-License-Identifier: MIT */
/* azbench ring transports over shared memory: round trips over az_ring, a 512-byte ring stream,
 * and the memcpy baseline; the message format and the generic round-trip producer that
 * tools/bench/ring_bench_ipc.c's kernel transports share. Each transport is a struct rb_ops run
 * by the harness in tools/bench/ring_bench_run.c. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "shm/ring.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/ring_bench_impl.h"

/* "spin" waiting: polls before the futex. The ring library yields the CPU every 32 polls, so this
 * is bounded busy-waiting even when both sides share one CPU. */
#define SPIN_POLLS (1u << 14)
/* A reply slower than this is counted as an error (a stall), never waited for forever. */
#define WAIT_LIMIT_US 2000000u
/* An idle ring consumer re-checks for finished producers this often. */
#define IDLE_US 1000u
/* A producer goes on past the end time (up to the hard end) until it has measured this many
 * round trips, so that a preemption during a short slice does not leave a row empty. Past the
 * hard end it stops only once it has measured at least one: a process starved by load through
 * its whole slice still measures a round (the reaper's grace, seconds later, is what calls a
 * configuration stalled), so a row is never empty from load alone. */
#define MIN_ROUNDS 64u
/* Largest shared mapping one configuration may ask for. */
#define REGION_MAX (1ull << 30)

/* ---- helpers ---- */

static void nap_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* Keep the compiler from dropping a copy whose destination is only partly read. */
static void touch(const void *p)
{
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

static void relax(uint32_t i)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
	/* Bounded busy-wait, as in the ring library: never starve a peer on the same CPU. */
	if (i % 32 == 31)
		sched_yield();
}

static uint64_t answer(const struct rb_msg *m, uint64_t tail)
{
	return (m->seq * 0x9e3779b97f4a7c15ull) ^ m->stamp ^ ((uint64_t)m->producer << 48) ^
	       (tail << 1) ^ 0x5a5a5a5a;
}

static uint64_t tail_of(const uint8_t *msg, uint32_t bytes)
{
	uint64_t t;

	memcpy(&t, msg + bytes - 8, 8);
	return t;
}

void rb_msg_fill(struct rb_ctx *c, uint32_t id, uint64_t seq, uint64_t stamp, uint32_t kind)
{
	struct rb_msg *m = (struct rb_msg *)c->tx;

	m->seq = seq;
	m->stamp = stamp;
	m->producer = id;
	m->kind = kind;
	m->resp = 0;
	memcpy(c->tx + c->cfg.slot_bytes - 8, &seq, 8);
}

void rb_msg_serve(uint8_t *buf, uint32_t bytes)
{
	struct rb_msg *m = (struct rb_msg *)buf;

	m->resp = answer(m, tail_of(buf, bytes));
}

int rb_msg_ok(const uint8_t *buf, uint32_t bytes, uint32_t id, uint64_t seq, uint64_t stamp)
{
	const struct rb_msg *m = (const struct rb_msg *)buf;
	uint64_t tail = tail_of(buf, bytes);

	return m->seq == seq && m->stamp == stamp && m->producer == id && tail == seq &&
	       m->resp == answer(m, tail);
}

/* ---- the generic round-trip producer ---- */

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Publish a batch, wait for every reply, repeat until the end time. Each reply's round trip is
 * measured from the start of its batch. */
void rb_producer_rtt(struct rb_ctx *c, const struct rb_ops *ops, uint32_t id)
{
	struct rb_prod_stats *st = &c->ctl->prod[id];
	uint32_t *samp = c->samples + (size_t)id * RB_MAX_SAMPLES;
	uint64_t seq = 0, seen = 0, t_first = 0, t_last = 0, rng = 0x2545f4914f6cdd1dull + id;
	uint32_t b = c->batch, bad = 0, k;

	for (;;) {
		uint64_t t0 = az_bench_now_ns(), t1 = t0;
		int measure = t0 >= c->ctl->t_warm_ns;

		if (t0 >= c->ctl->t_end_ns &&
		    (st->requests >= MIN_ROUNDS || (t0 >= c->ctl->t_hard_ns && st->requests > 0)))
			break;
		for (k = 0; k < b; k++)
			if (ops->send(c, id, seq + k, t0) < 0)
				goto fail;
		for (k = 0; k < b;) {
			int n = ops->recv(c, id, seq + k, t0, b - k, &bad);

			if (n <= 0)
				goto fail;
			t1 = az_bench_now_ns();
			for (int j = 0; j < n && measure; j++, seen++) {
				uint64_t pick = seen < RB_MAX_SAMPLES ? seen
								      : xorshift(&rng) % (seen + 1);
				uint64_t rtt = t1 - t0;

				if (pick < RB_MAX_SAMPLES)
					samp[pick] = rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt;
			}
			k += (uint32_t)n;
		}
		seq += b;
		if (measure) {
			if (!t_first)
				t_first = t0;
			t_last = t1;
			st->requests += b;
		}
	}
	goto out;
fail:
	bad++;
out:
	st->measured_ns = t_last - t_first;
	st->nsamples = seen < RB_MAX_SAMPLES ? (uint32_t)seen : RB_MAX_SAMPLES;
	st->errors = bad;
}

/* ---- az_ring round trips ---- */

static int ring_setup(struct rb_ctx *c)
{
	uint32_t cap = c->cfg.capacity, bytes = c->cfg.slot_bytes, i;
	size_t ring = az_ring_memsize(cap, bytes);

	if (!ring || c->batch > cap)
		return -EINVAL;
	c->ring_stride = (ring + 4095) & ~(size_t)4095;
	c->region_bytes = 4096 + (size_t)c->cfg.producers * c->ring_stride;
	if (c->region_bytes > REGION_MAX)
		return -ENOMEM;
	c->region = rb_map_shared(c->region_bytes);
	if (!c->region)
		return -ENOMEM;
	/* Doorbell at offset 0 (zeroed by mmap), rings page-aligned after it. */
	for (i = 0; i < c->cfg.producers; i++)
		AZ_ASSERT(az_ring_init(c->region + 4096 + i * c->ring_stride, cap, bytes) == 0);
	return 0;
}

static void ring_teardown(struct rb_ctx *c)
{
	if (c->region)
		munmap(c->region, c->region_bytes);
	c->region = NULL;
}

/* Map every page of a ring's slots into this process before the start line: a large ring is
 * otherwise measured page fault by page fault until it wraps. Slot contents are not read before
 * the producer writes them, so the zeros are harmless. */
static void prefault(const struct az_ring *r)
{
	size_t bytes = (size_t)r->capacity * r->slot_bytes;

	for (size_t off = 0; off < bytes; off += 4096)
		r->slots[off] = 0;
}

static int ring_child_init(struct rb_ctx *c, uint32_t role)
{
	struct az_doorbell_shm *bell = (struct az_doorbell_shm *)c->region;
	uint32_t i;
	int rc;

	if (role < c->cfg.producers) {
		rc = az_ring_attach(&c->ring, c->region + 4096 + role * c->ring_stride, bell);
		if (rc == 0)
			prefault(&c->ring);
		return rc;
	}
	for (i = 0; i < c->cfg.producers; i++) {
		rc = az_ring_attach(&c->rings[i], c->region + 4096 + i * c->ring_stride, bell);
		if (rc)
			return rc;
		prefault(&c->rings[i]);
	}
	return 0;
}

static int ring_send(struct rb_ctx *c, uint32_t id, uint64_t seq, uint64_t stamp)
{
	uint64_t s;
	void *slot = az_ring_claim(&c->ring, &s);

	if (!slot || s != seq)
		return -EPROTO;
	rb_msg_fill(c, id, seq, stamp, RB_MSG_REQ);
	memcpy(slot, c->tx, c->cfg.slot_bytes);
	az_ring_publish(&c->ring);
	return 0;
}

static int ring_recv(struct rb_ctx *c, uint32_t id, uint64_t expect, uint64_t stamp, uint32_t max,
		     uint32_t *bad)
{
	struct az_wait w = { .spin = c->cfg.wait == RB_SPIN ? SPIN_POLLS : 0,
			     .timeout_us = WAIT_LIMIT_US };
	uint32_t n = 0;
	void *slot;
	uint64_t s;
	int rc = az_ring_wait_result(&c->ring, &w);

	if (rc)
		return rc;
	while (n < max && (slot = az_ring_result(&c->ring, &s)) != NULL) {
		memcpy(c->buf, slot, c->cfg.slot_bytes);
		*bad += s != expect + n ||
			!rb_msg_ok(c->buf, c->cfg.slot_bytes, id, expect + n, stamp);
		az_ring_release(&c->ring);
		n++;
	}
	return (int)n;
}

static void ring_producer(struct rb_ctx *c, uint32_t id);

/* Serve every request as soon as it is seen (deadline 0): the latency configuration. */
static void ring_consumer(struct rb_ctx *c)
{
	uint32_t P = c->cfg.producers, bytes = c->cfg.slot_bytes, total;
	struct az_batch_params bp = { .max_batch = P * c->batch, .deadline_us = 0,
				      .spin = c->cfg.wait == RB_SPIN ? SPIN_POLLS : 0,
				      .idle_timeout_us = IDLE_US };
	struct az_batch_span runs[2 * RB_MAX_PRODUCERS];

	for (;;) {
		int nr = az_batch_collect(c->rings, P, &bp, runs, 2 * P, &total), k;

		if (nr < 0) {
			rb_add_error(c);
			return;
		}
		/* Acquire: pairs with the release increment of done by each producer. */
		if (nr == 0 && atomic_load_explicit(&c->ctl->done, memory_order_acquire) == P)
			return;
		for (k = 0; k < nr; k++) {
			struct az_ring *r = &c->rings[runs[k].ring];

			for (uint32_t j = 0; j < runs[k].count; j++) {
				uint8_t *slot = az_ring_slot(r, runs[k].first + j);

				memcpy(c->buf, slot, bytes);
				rb_msg_serve(c->buf, bytes);
				memcpy(slot, c->buf, bytes);
			}
			az_ring_serve(r, runs[k].first + runs[k].count);
		}
	}
}

/* ---- one ring streaming 512-byte requests, and the memcpy baseline ---- */

static void stream_producer(struct rb_ctx *c, uint32_t id)
{
	struct az_wait w = { .spin = SPIN_POLLS, .timeout_us = WAIT_LIMIT_US };
	struct rb_prod_stats *st = &c->ctl->prod[id];
	uint32_t bytes = c->cfg.slot_bytes, bad = 0;
	uint64_t got = 0, base = 0, t_first = 0, t = 0;
	struct az_ring *r = &c->ring;
	int sending = 1;
	uint64_t s;
	void *slot;

	for (;;) {
		while (sending && (slot = az_ring_claim(r, &s)) != NULL) {
			rb_msg_fill(c, id, s, 0, RB_MSG_REQ);
			memcpy(slot, c->tx, bytes);
			az_ring_publish(r);
		}
		if (!az_ring_result(r, NULL)) {
			if (!sending && az_ring_inflight(r) == 0)
				break;
			if (az_ring_wait_result(r, &w) < 0) {
				bad++;
				break;
			}
		}
		/* The response is the 8-byte answer in the slot header: read only that. */
		while ((slot = az_ring_result(r, &s)) != NULL) {
			const struct rb_msg *m = slot;

			bad += m->seq != got || m->resp != answer(m, got);
			az_ring_release(r);
			got++;
		}
		t = az_bench_now_ns();
		if (!t_first && t >= c->ctl->t_warm_ns) {
			t_first = t;
			base = got;
		}
		if (t >= c->ctl->t_end_ns &&
		    t_first && (got - base >= 8ull * c->cfg.capacity ||
				(t >= c->ctl->t_hard_ns && got > base)))
			sending = 0;
	}
	st->requests = t_first ? got - base : 0;
	st->measured_ns = t_first ? t - t_first : 0;
	st->errors = bad;
}

/* Drain whatever is waiting (up to the whole ring) in one collect: batch draining. */
static void stream_consumer(struct rb_ctx *c)
{
	struct az_batch_params bp = { .max_batch = c->cfg.capacity, .deadline_us = 0,
				      .spin = SPIN_POLLS, .idle_timeout_us = IDLE_US };
	uint32_t bytes = c->cfg.slot_bytes, total;
	struct az_batch_span runs[2];

	for (;;) {
		int nr = az_batch_collect(c->rings, 1, &bp, runs, 2, &total);

		if (nr < 0) {
			rb_add_error(c);
			return;
		}
		/* Acquire: pairs with the producer's release increment of done. */
		if (nr == 0 && atomic_load_explicit(&c->ctl->done, memory_order_acquire) == 1)
			return;
		for (int k = 0; k < nr; k++) {
			for (uint32_t j = 0; j < runs[k].count; j++) {
				struct rb_msg *slot = az_ring_slot(&c->rings[0], runs[k].first + j);

				/* Read the whole request, answer in place. */
				memcpy(c->buf, slot, bytes);
				touch(c->buf);
				slot->resp = answer((struct rb_msg *)c->buf,
						    tail_of(c->buf, bytes));
			}
			az_ring_serve(&c->rings[0], runs[k].first + runs[k].count);
		}
	}
}

/*
 * The memcpy baseline: what moving the same bytes from one core to another costs with nothing
 * but memcpy. The producer fills the whole buffer (capacity messages), hands it over with one
 * flag, the consumer copies every message out and hands it back. Only the copy loops are timed,
 * on each side; with the two copies overlapped (as a ring overlaps them) the rate is the slower
 * side's: min(producer messages / producer copy time, consumer messages / consumer copy time).
 * Hand-over waits are not counted, so scheduling noise does not lower the baseline.
 */
static int memcpy_setup(struct rb_ctx *c)
{
	c->region_bytes = (size_t)c->cfg.capacity * c->cfg.slot_bytes;
	if (c->region_bytes > REGION_MAX)
		return -ENOMEM;
	c->region = rb_map_shared(c->region_bytes);
	return c->region ? 0 : -ENOMEM;
}

static int memcpy_child_init(struct rb_ctx *c, uint32_t role)
{
	/* As for rings (prefault()): no page faults inside the timed copies. */
	for (size_t off = 0; off < c->region_bytes; off += 4096)
		c->region[off] = 0;
	return 0;
}

/* Wait (bounded spin, then naps) until the flag is (is != 0) or is not (is == 0) v. Returns it. */
static uint32_t flag_wait(struct rb_ctx *c, uint32_t v, int is)
{
	for (uint32_t i = 0;; i++) {
		/* M1'/M2': acquire, pairs with the release store that set the value (M1/M2). */
		uint32_t f = atomic_load_explicit(&c->ctl->full, memory_order_acquire);

		if ((f == v) == is)
			return f;
		if (i < (1u << 20))
			relax(i);
		else
			nap_us(50);
	}
}

static void memcpy_producer(struct rb_ctx *c, uint32_t id)
{
	struct rb_prod_stats *st = &c->ctl->prod[id];
	uint32_t bytes = c->cfg.slot_bytes, n = c->cfg.capacity;
	uint64_t seq = 0;

	for (;;) {
		uint64_t t0, t1;

		flag_wait(c, 0, 1);
		t0 = az_bench_now_ns();
		if (t0 >= c->ctl->t_end_ns &&
		    (st->requests >= 8ull * n || (t0 >= c->ctl->t_hard_ns && st->requests > 0)))
			break;
		for (uint32_t k = 0; k < n; k++) {
			rb_msg_fill(c, id, seq++, 0, RB_MSG_REQ);
			memcpy(c->region + (size_t)k * bytes, c->tx, bytes);
		}
		t1 = az_bench_now_ns();
		if (t0 >= c->ctl->t_warm_ns) {
			st->requests += n;
			st->measured_ns += t1 - t0;
		}
		/* M1: release, pairs with M1' in memcpy_consumer(): the bytes are visible. */
		atomic_store_explicit(&c->ctl->full, 1, memory_order_release);
	}
	/* M1: release, pairs with M1' in memcpy_consumer(): stop (the buffer is free: no copy
	 * is in progress). */
	atomic_store_explicit(&c->ctl->full, 2, memory_order_release);
}

static void memcpy_consumer(struct rb_ctx *c)
{
	uint32_t bytes = c->cfg.slot_bytes, n = c->cfg.capacity;
	uint64_t expect = 0;

	while (flag_wait(c, 0, 0) != 2) {
		uint64_t t0 = az_bench_now_ns(), t1;
		uint32_t bad = 0;

		for (uint32_t k = 0; k < n; k++, expect++) {
			memcpy(c->buf, c->region + (size_t)k * bytes, bytes);
			touch(c->buf);
			bad += ((struct rb_msg *)c->buf)->seq != expect ||
			       tail_of(c->buf, bytes) != expect;
		}
		t1 = az_bench_now_ns();
		if (t0 >= c->ctl->t_warm_ns) {
			c->ctl->copy_requests += n;
			c->ctl->copy_ns += t1 - t0;
		}
		if (bad)
			rb_add_error(c);
		/* M2: release, pairs with M2' in memcpy_producer(): our reads are done. */
		atomic_store_explicit(&c->ctl->full, 0, memory_order_release);
	}
}

/* ---- transports ---- */

static const struct rb_ops ring_ops = {
	ring_setup, NULL, ring_teardown, ring_child_init, ring_producer, ring_consumer, ring_send,
	ring_recv,
};
static const struct rb_ops stream_ops = {
	ring_setup, NULL, ring_teardown, ring_child_init, stream_producer, stream_consumer, NULL,
	NULL,
};
static const struct rb_ops memcpy_ops = {
	memcpy_setup, NULL, ring_teardown, memcpy_child_init, memcpy_producer, memcpy_consumer,
	NULL, NULL,
};

const struct rb_ops *const rb_ops_of[RB_NTRANSPORTS] = {
	[RB_RING] = &ring_ops,  [RB_PIPE] = &rb_ops_fd,      [RB_SOCKET] = &rb_ops_fd,
	[RB_MQ] = &rb_ops_mq,   [RB_STREAM] = &stream_ops,   [RB_MEMCPY] = &memcpy_ops,
};

static void ring_producer(struct rb_ctx *c, uint32_t id)
{
	rb_producer_rtt(c, &ring_ops, id);
}
