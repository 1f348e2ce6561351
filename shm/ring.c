/* SPDX-License-Identifier: MIT */
/* Single-producer / single-consumer request rings in shared memory: claim/publish/result/release
 * for the worker, batch collection and serve for the inference server, futex waiting for both. */

/*
 * PROTOCOL
 *
 * Roles. Each ring has exactly one producer (the self-play worker that owns it) and one consumer
 * (the inference server). They are different processes that map the same segment. The producer
 * writes a request into a slot and publishes it; the consumer reads the request, writes the
 * response into the same slot and marks it served; the producer reads the response and releases
 * the slot for reuse. No slot ever moves: requests and responses are written in place.
 *
 * State. Three 64-bit sequence counters in struct az_ring_shm, each on its own cache line:
 *
 *     consumed  (producer writes)  results below it were read by the producer, slots are free
 *     served    (consumer writes)  requests below it have their response written
 *     published (producer writes)  requests below it are complete and visible
 *
 * Invariants, with unsigned 64-bit arithmetic so that wrap-around past 2^64 is harmless:
 *
 *     served - consumed <= published - consumed <= capacity
 *
 * i.e. consumed <= served <= published on the circle of width capacity. Slot of sequence number
 * s is s & (capacity - 1). Slots [consumed, served) hold results the producer may read,
 * [served, published) hold requests the consumer may read, [published, consumed + capacity) are
 * free and private to the producer. Each side writes only its own counter(s); every counter read
 * from the peer is loaded once and bounds-checked before use (the peer is untrusted input: a
 * value outside the window above is a protocol violation and is ignored, never followed).
 *
 * Acquire/release pairs (each end is labelled in the code):
 *
 *   R1 az_ring_publish():  store-release published   -> A1 az_batch_collect(), az_ring_take(),
 *                                                        az_ring_pending() (load_published()),
 *                                                        az_ring_attach(): load-acquire published.
 *        The request bytes written into the slot are visible to the consumer.
 *   R2 az_ring_serve():    store-release served      -> A2 az_ring_result(), wait_result(),
 *                                                        attach (refresh_served()): load-acquire.
 *        The response bytes are visible to the producer, and the consumer's reads of the request
 *        happen before the producer reuses the slot (no write-after-read race on the slot).
 *   R3 az_ring_release():  store-release consumed    -> A3 az_ring_attach(): load-acquire consumed.
 *        A restarted producer (or a monitor) that reads consumed sees a slot state at least that
 *        recent. The consumer never reads consumed: R2/A2 alone protects slot reuse.
 *   R4 collect sleep:      store-release bell->sleeping = mode -> A4 bell_wake() (from
 *        az_ring_publish() and announce_wait()): acquire compare-exchange of sleeping.
 *        Orders the consumer's read of bell->seq before any bump by a producer that saw it
 *        sleeping, so that bump always changes the value it waits on.
 *   S1 az_ring_publish():  seq_cst store published (also R1), then seq_cst load sleeping
 *   S2 bell_sleep():       seq_cst store sleeping = 1 (also R4), then seq_cst loads published
 *        Dekker handshake: the four accesses sit in the single total order of seq_cst
 *        operations, so whichever store comes first is seen by the other side's load: either
 *        the consumer's final check finds the request or the producer sees it sleeping.
 *   R5 wait_result sleep:  store-release producer_sleeping = 1 -> A5 az_ring_serve(): acquire
 *        exchange of producer_sleeping (the same role as R4/A4 for served_futex).
 *   S3 az_ring_serve():    seq_cst store served (also R2), then seq_cst load producer_sleeping
 *   S4 producer_sleep():   seq_cst store producer_sleeping = 1 (also R5), then seq_cst load
 *                          served. The same Dekker handshake for the producer's futex.
 *   seq_cst accesses rather than release + atomic_thread_fence(seq_cst): ThreadSanitizer does
 *   not model fences (GCC rejects them under -fsanitize=thread) and the cost is the same (one
 *   xchg per publish/serve on x86, stlr + ldar on arm64). Only the final check before sleeping
 *   uses seq_cst loads; ordinary polling uses the acquire loads A1/A2.
 *   R7 announce_wait(): seq_cst store wait_mark (blocked or detached) -> A7 producer_live():
 *        load-acquire (seq_cst in the final check before sleeping: S5 against S2, the same
 *        Dekker handshake as S1/S2, so a consumer sleeping on AZ_BELL_WAKE_BLOCK is either
 *        woken by the producer or sees its mark). The mark carries no data: a stale read only
 *        starts a batch early (a smaller batch) or late (the deadline still ends the wait).
 *   (R6/A6, the segment header's magic, live in shm/segment.c.)
 *
 * Batches. The consumer runs a batch as soon as max_batch requests wait or no producer can add
 * one: each producer says so in its wait mark (blocked on a result, with the published and
 * served counts it saw; or detached), and the batch deadline is only an upper bound for the
 * remaining case (some producer still computing). Waiting for more requests from producers that
 * are all blocked on the ones already waiting would idle both sides until the deadline.
 *
 * Waiting. Both sides first poll a bounded number of times (`spin`, with a CPU pause). The
 * producers yield the core every few polls; the consumer never does: when there are fewer cores
 * than processes, every producer waits on the consumer sooner or later, and a consumer that gives
 * its core to a producer delays all of them (the rule: the workers yield, not the server).
 * Then both sleep on a 32-bit futex word in shared memory (FUTEX_WAIT/FUTEX_WAKE without
 * FUTEX_PRIVATE_FLAG: waiters and wakers are different processes). A sleeper (1) reads the
 * futex word, (2) announces itself (`sleeping` = its wake mode, R4/R5), (3) re-checks its
 * condition with seq_cst loads (S2/S4), (4) FUTEX_WAITs for the word to change.
 * A waker stores its counter (S1/S3), and when it sees the announcement it clears it (so only one
 * waker pays for the syscall), bumps the word and FUTEX_WAKEs. The consumer's announcement says
 * what it waits for, and only that wakes it: a publish wakes AZ_BELL_WAKE_PUBLISH (no request
 * yet), a producer's wait mark (R7) wakes AZ_BELL_WAKE_BLOCK (it has requests and waits for the
 * producers to stop; a publish alone does not complete that, a full batch found by publishes
 * alone waits for the next mark or the deadline). Whichever order the two run in,
 * either step (3) sees the new counter or the waker sees the announcement and bumps the word after
 * step (1), so FUTEX_WAIT returns at once: no wake-up is lost. Every FUTEX_WAIT still carries a
 * relative timeout of at most NAP_MAX_US, so a waiter re-checks even if a peer died between its
 * store and its wake. When work is flowing nobody sleeps and there are no syscalls.
 *
 * One consumer per doorbell: the `sleeping` flag has room for one sleeper. Several server threads
 * must use separate segments (or serialise collection). az_batch_collect() refuses (-EINVAL) a
 * ring set that spans doorbells, since it can sleep on only one.
 *
 * Restart behaviour. All state lives in the three counters, so either side can be restarted.
 *  - Producer restart: az_ring_attach() reloads published/consumed/served and validates them
 *    (-EPROTO when inconsistent). Requests the previous incarnation published are still in
 *    flight and their results will arrive; the new producer must drain them (wait_result +
 *    release until az_ring_inflight() is 0) before it trusts slot contents, since their tags
 *    belong to dead games. A slot it had claimed but not published is simply reused.
 *  - Consumer restart: requests in [served, published) are collected again by the new server and
 *    any half-written response is overwritten, so the restart is invisible to producers. A
 *    producer asleep on served_futex is woken by the next serve (producer_sleeping is still set)
 *    or by its futex timeout. A stale bell->sleeping = 1 left by a dead consumer costs at most
 *    one spurious wake.
 *  - Segment recreation (azrun restarting the run) gives a new segment; handles into the old
 *    one stay valid memory but see no more traffic.
 */

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "shm/ring.h"

/* ---- layout pins (DPDK): the shm structs are an ABI between processes ---- */

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free (address-free)");
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 || sizeof(long) != 8, "uint64_t atomics lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics (futex words) must be lock-free");
_Static_assert(sizeof(_Atomic uint64_t) == 8 && _Alignof(_Atomic uint64_t) == 8, "u64 atomics");
_Static_assert(sizeof(_Atomic uint32_t) == 4 && _Alignof(_Atomic uint32_t) == 4, "futex word");
_Static_assert(sizeof(struct az_doorbell_shm) == AZ_CACHELINE, "doorbell is one line");
_Static_assert(sizeof(struct az_ring_shm) % AZ_CACHELINE == 0, "ring header whole lines");
_Static_assert(offsetof(struct az_ring_shm, published) == 1 * AZ_CACHELINE, "published line");
_Static_assert(offsetof(struct az_ring_shm, consumed) == 2 * AZ_CACHELINE, "consumed line");
_Static_assert(offsetof(struct az_ring_shm, served) == 4 * AZ_CACHELINE,
	       "served is a guard line away from the producer lines");
_Static_assert(offsetof(struct az_ring_shm, served_futex) == 5 * AZ_CACHELINE, "futex line");
_Static_assert(offsetof(struct az_ring_shm, producer_sleeping) == 5 * AZ_CACHELINE + 4,
	       "producer_sleeping shares the futex line");

/* Longest single FUTEX_WAIT: a bound on how long a lost peer can keep a waiter from re-checking. */
#define NAP_MAX_US 20000u
/* Polls between sched_yield() calls while spinning. */
#define SPIN_YIELD_EVERY 32u
/* Default waiting policy for az_ring_wait_result(r, NULL). */
#define DEFAULT_SPIN 64u

/* Round-robin cursor of az_batch_collect(): the ring after the last one served. Thread-local so
 * that server threads with disjoint ring sets do not disturb each other. */
static _Thread_local uint32_t rr_next;

/* ---- helpers ---- */

/* One CPU pause: the consumer's poll (it never gives its core away, see "Waiting"). */
static void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* The producer's poll: a pause, and the core given up every SPIN_YIELD_EVERY polls. */
static void cpu_relax(uint32_t i)
{
	cpu_pause();
	if (i % SPIN_YIELD_EVERY == SPIN_YIELD_EVERY - 1)
		sched_yield();
}

static uint64_t now_us(void)
{
	return az_now_ns() / 1000u;
}

/* FUTEX_WAIT on a shared (not private) word for at most us microseconds. Every outcome (woken,
 * value changed, timed out, interrupted) sends the caller back to re-check its condition. */
static void futex_wait_us(_Atomic uint32_t *word, uint32_t expect, uint64_t us)
{
	struct timespec ts;

	if (us > NAP_MAX_US)
		us = NAP_MAX_US;
	ts.tv_sec = (time_t)(us / 1000000u);
	ts.tv_nsec = (long)(us % 1000000u) * 1000;
	syscall(SYS_futex, word, FUTEX_WAIT, expect, &ts, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Microseconds left before `deadline` (absolute, now_us() clock); 0 = expired. UINT64_MAX when
 * there is no deadline. */
static uint64_t left_us(uint64_t deadline, uint64_t now)
{
	if (deadline == UINT64_MAX)
		return UINT64_MAX;
	return now < deadline ? deadline - now : 0;
}

static int geometry_ok(uint32_t capacity, uint32_t slot_bytes)
{
	return capacity >= 2 && (capacity & (capacity - 1)) == 0 && capacity <= AZ_RING_CAPACITY_MAX &&
	       slot_bytes != 0 && slot_bytes % AZ_CACHELINE == 0;
}

/* ---- setup ---- */

size_t az_ring_memsize(uint32_t capacity, uint32_t slot_bytes)
{
	uint64_t bytes;

	if (!geometry_ok(capacity, slot_bytes))
		return 0;
	bytes = (uint64_t)capacity * slot_bytes + sizeof(struct az_ring_shm);
#if SIZE_MAX < UINT64_MAX
	if (bytes > SIZE_MAX)
		return 0;
#endif
	return (size_t)bytes;
}

int az_ring_init(void *mem, uint32_t capacity, uint32_t slot_bytes)
{
	struct az_ring_shm *shm = mem;

	if (!mem || !geometry_ok(capacity, slot_bytes) || (uintptr_t)mem % AZ_CACHELINE)
		return -EINVAL;
	memset(shm, 0, sizeof(*shm));
	shm->capacity = capacity;
	shm->slot_bytes = slot_bytes;
	/* Relaxed: no other process can see the ring before its segment header is published with a
	 * release store (R6 in segment.c), which orders all of these. */
	atomic_store_explicit(&shm->published, 0, memory_order_relaxed);
	atomic_store_explicit(&shm->consumed, 0, memory_order_relaxed);
	atomic_store_explicit(&shm->wait_mark, AZ_RING_DETACHED, memory_order_relaxed);
	atomic_store_explicit(&shm->served, 0, memory_order_relaxed);
	atomic_store_explicit(&shm->served_futex, 0, memory_order_relaxed);
	atomic_store_explicit(&shm->producer_sleeping, 0, memory_order_relaxed);
	shm->magic = AZ_RING_MAGIC;
	return 0;
}

int az_ring_attach(struct az_ring *r, void *mem, struct az_doorbell_shm *bell)
{
	struct az_ring_shm *shm = mem;
	uint32_t capacity, slot_bytes;
	uint64_t pub, con, srv;

	if (!r || !mem || !bell)
		return -EINVAL;
	/* Immutable fields are read once into locals; everything below uses the checked copies. */
	capacity = shm->capacity;
	slot_bytes = shm->slot_bytes;
	if (shm->magic != AZ_RING_MAGIC || !geometry_ok(capacity, slot_bytes))
		return -EPROTO;
	/* A1: pairs with R1 in az_ring_publish() (a previous producer incarnation). */
	pub = atomic_load_explicit(&shm->published, memory_order_acquire);
	/* A3: pairs with R3 in az_ring_release(). */
	con = atomic_load_explicit(&shm->consumed, memory_order_acquire);
	/* A2: pairs with R2 in az_ring_serve(). */
	srv = atomic_load_explicit(&shm->served, memory_order_acquire);
	if (pub - con > capacity || srv - con > pub - con)
		return -EPROTO;

	r->shm = shm;
	r->bell = bell;
	r->slots = (uint8_t *)mem + sizeof(*shm);
	r->capacity = capacity;
	r->mask = capacity - 1;
	r->slot_bytes = slot_bytes;
	r->cached_published = pub;
	r->cached_consumed = con;
	r->cached_served = srv;
	return 0;
}

/* ---- producer side ---- */

void *az_ring_claim(struct az_ring *r, uint64_t *seq)
{
	/* Both counters are our own: no shared-memory access on this path. */
	if (r->cached_published - r->cached_consumed >= r->capacity)
		return NULL;
	if (seq)
		*seq = r->cached_published;
	return az_ring_slot(r, r->cached_published);
}

/* After the caller's seq_cst store (S1 or S5): wake the consumer when it announced a sleep on
 * `mode`, clearing the announcement so that only one waker pays for the syscall. */
static void bell_wake(struct az_doorbell_shm *bell, uint32_t mode)
{
	uint32_t expect = mode;

	/* S1/S5: seq_cst, so an announcement ordered before the caller's store cannot be missed. */
	if (atomic_load_explicit(&bell->sleeping, memory_order_seq_cst) != expect)
		return;
	/* A4: pairs with R4 in bell_sleep(). Clearing the flag makes us the only waker. */
	if (!atomic_compare_exchange_strong_explicit(&bell->sleeping, &expect, 0,
						     memory_order_acquire, memory_order_relaxed))
		return;
	/* Relaxed: the word carries no data, only "changed"; the syscall below orders it (the
	 * kernel's futex_wake() has a full barrier before looking for waiters). */
	atomic_fetch_add_explicit(&bell->seq, 1, memory_order_relaxed);
	futex_wake_all(&bell->seq);
}

void az_ring_publish(struct az_ring *r)
{
	struct az_doorbell_shm *bell = r->bell;

	AZ_ASSERT(r->cached_published - r->cached_consumed < r->capacity);
	r->cached_published++;
	/* R1 + S1: publish the request bytes (release part: pairs with A1 in load_published()) and
	 * take part in the doorbell handshake (seq_cst: pairs with S2 in bell_sleep()). */
	atomic_store_explicit(&r->shm->published, r->cached_published, memory_order_seq_cst);
	/* A consumer waiting for producers to stop (AZ_BELL_WAKE_BLOCK) is not woken by this. */
	bell_wake(bell, AZ_BELL_WAKE_PUBLISH);
}

/* Store the producer's wait mark and wake a consumer sleeping for producers to stop
 * (AZ_BELL_WAKE_BLOCK). One waiting for its first request is left asleep: a mark adds none. */
static void announce_wait(struct az_ring *r, uint64_t mark)
{
	/* R7 + S5: pairs with A7 in producer_live() (seq_cst: with S2 in bell_sleep()). */
	atomic_store_explicit(&r->shm->wait_mark, mark, memory_order_seq_cst);
	bell_wake(r->bell, AZ_BELL_WAKE_BLOCK);
}

void az_ring_detach(struct az_ring *r)
{
	announce_wait(r, AZ_RING_DETACHED);
}

/* Load served from the consumer once, validate it, and cache it. Returns 1 when a result is
 * ready (served > consumed). final_check: the last look before sleeping (S4). */
static int refresh_served(struct az_ring *r, int final_check)
{
	uint64_t srv;

	if (r->cached_served != r->cached_consumed)
		return 1;
	if (final_check)
		/* A2 + S4: acquire part pairs with R2, seq_cst part with S3 in az_ring_serve(). */
		srv = atomic_load_explicit(&r->shm->served, memory_order_seq_cst);
	else
		/* A2: pairs with R2 in az_ring_serve(): the response bytes are visible after this. */
		srv = atomic_load_explicit(&r->shm->served, memory_order_acquire);
	/* Untrusted: a served count behind consumed or beyond published is a protocol violation
	 * and is ignored (we keep the last good value). */
	if (srv - r->cached_consumed <= r->cached_published - r->cached_consumed)
		r->cached_served = srv;
	return r->cached_served != r->cached_consumed;
}

void *az_ring_result(struct az_ring *r, uint64_t *seq)
{
	if (!refresh_served(r, 0))
		return NULL;
	if (seq)
		*seq = r->cached_consumed;
	return az_ring_slot(r, r->cached_consumed);
}

void az_ring_release(struct az_ring *r)
{
	AZ_ASSERT(r->cached_served != r->cached_consumed);
	r->cached_consumed++;
	/* R3: pairs with A3 in az_ring_attach(); our reads of the result are done. */
	atomic_store_explicit(&r->shm->consumed, r->cached_consumed, memory_order_release);
}

/* Sleep on served_futex until served moves or `us` passes (the announce-then-check protocol). */
static void producer_sleep(struct az_ring *r, uint64_t us)
{
	struct az_ring_shm *shm = r->shm;
	/* Acquire: keeps this read before the announcement below (it must see the word as it was
	 * before any bump by a consumer that sees us asleep). */
	uint32_t word = atomic_load_explicit(&shm->served_futex, memory_order_acquire);

	/* R5 + S4: announce before the final check (release part pairs with A5, seq_cst part with
	 * S3 in az_ring_serve()). */
	atomic_store_explicit(&shm->producer_sleeping, 1, memory_order_seq_cst);
	if (!refresh_served(r, 1))
		futex_wait_us(&shm->served_futex, word, us);
	/* Relaxed: only a hint to the consumer; a stale 1 costs one needless wake. */
	atomic_store_explicit(&shm->producer_sleeping, 0, memory_order_relaxed);
}

/* The waiting part of az_ring_wait_result(): spin, then sleep, until served moves. */
static int wait_served(struct az_ring *r, uint32_t spin, uint32_t timeout)
{
	uint64_t deadline = timeout ? now_us() + timeout : UINT64_MAX;

	for (uint32_t i = 0; i < spin; i++) {
		cpu_relax(i);
		if (refresh_served(r, 0))
			return 0;
	}
	for (;;) {
		uint64_t left = left_us(deadline, now_us());

		if (left == 0)
			return -ETIMEDOUT;
		producer_sleep(r, left);
		if (refresh_served(r, 0))
			return 0;
	}
}

int az_ring_wait_result(struct az_ring *r, const struct az_wait *w)
{
	uint32_t spin = w ? w->spin : DEFAULT_SPIN;
	uint32_t timeout = w ? w->timeout_us : 0;

	if (r->cached_published == r->cached_consumed)
		return -EAGAIN;
	if (refresh_served(r, 0))
		return 0;
	/* Blocked: nothing more comes from us until a result does. published and served (the
	 * latter equal to consumed here) as we saw them: a mark with differing halves. */
	announce_wait(r, (r->cached_published << 32) | (uint32_t)r->cached_consumed);
	int rc = wait_served(r, spin, timeout);
	/* Relaxed: a hint for the consumer (see R7); running again, we may publish. */
	atomic_store_explicit(&r->shm->wait_mark, AZ_RING_RUNNING, memory_order_relaxed);
	return rc;
}

/* ---- consumer side ---- */

static uint64_t load_published(const struct az_ring *r, int final_check)
{
	if (final_check)
		/* A1 + S2: acquire part pairs with R1, seq_cst part with S1 in az_ring_publish(). */
		return atomic_load_explicit(&r->shm->published, memory_order_seq_cst);
	/* A1: pairs with R1 in az_ring_publish(): the request bytes are visible after this. */
	return atomic_load_explicit(&r->shm->published, memory_order_acquire);
}

/* Requests waiting in ring r (published loaded once and validated); *srv receives served. */
static uint32_t pending_pub(const struct az_ring *r, int final_check, uint64_t *srv)
{
	uint64_t p = load_published(r, final_check);
	/* Relaxed: served is ours (the consumer is its only writer), coherence returns our store. */
	uint64_t s = atomic_load_explicit(&r->shm->served, memory_order_relaxed);

	*srv = s;
	/* Untrusted: more than a ring's worth pending (or published behind served) is a protocol
	 * violation by the producer; the ring is ignored rather than followed. */
	if (p - s > r->capacity)
		return 0;
	return (uint32_t)(p - s);
}

uint32_t az_ring_pending(const struct az_ring *r)
{
	uint64_t s;

	return pending_pub(r, 0, &s);
}

void az_ring_serve(struct az_ring *r, uint64_t upto)
{
	struct az_ring_shm *shm = r->shm;
	/* Relaxed: served is ours (see pending_pub()). */
	uint64_t s = atomic_load_explicit(&shm->served, memory_order_relaxed);

	/* Serving backwards or more than a ring ahead is a bug in the caller. */
	AZ_ASSERT(upto - s <= r->capacity);
	/* R2 + S3: publish the responses (release part: pairs with A2 in refresh_served()) and
	 * take part in the producer's futex handshake (seq_cst: pairs with S4 in producer_sleep()). */
	atomic_store_explicit(&shm->served, upto, memory_order_seq_cst);
	/* S3: seq_cst, so an announcement ordered before our store cannot be missed. */
	if (!atomic_load_explicit(&shm->producer_sleeping, memory_order_seq_cst))
		return;
	/* A5: pairs with R5 in producer_sleep(). */
	if (!atomic_exchange_explicit(&shm->producer_sleeping, 0, memory_order_acquire))
		return;
	/* Relaxed: as for the doorbell in az_ring_publish(). */
	atomic_fetch_add_explicit(&shm->served_futex, 1, memory_order_relaxed);
	futex_wake_all(&shm->served_futex);
}

/* Ring r's producer may add requests before it is served (see az_ring_producer_live()).
 * final_check: the last look before sleeping (S2 against S5). */
static int producer_live(const struct az_ring *r, int final_check)
{
	/* A7: pairs with R7 in announce_wait() (seq_cst part: S2 against S5). */
	uint64_t m = atomic_load_explicit(&r->shm->wait_mark,
					  final_check ? memory_order_seq_cst : memory_order_acquire);
	uint64_t s, p;
	uint32_t n = pending_pub(r, final_check, &s);
	uint32_t hi = (uint32_t)(m >> 32), lo = (uint32_t)m;

	if (hi == lo) /* AZ_RING_RUNNING, or AZ_RING_DETACHED unless a new producer publishes */
		return m != AZ_RING_DETACHED || n > 0;
	p = s + n;
	/* Blocked at (published, served) = (hi, lo): live again once either moved. */
	return hi != (uint32_t)p || lo != (uint32_t)s;
}

int az_ring_producer_live(const struct az_ring *r)
{
	return producer_live(r, 0);
}

/* Requests waiting over all rings; *live (may be NULL) is set when some producer may add more. */
static uint32_t total_pending(const struct az_ring *rings, uint32_t nrings, int final_check,
			      int *live)
{
	uint32_t total = 0, i;
	uint64_t s;

	if (live)
		*live = 0;
	for (i = 0; i < nrings; i++) {
		total += pending_pub(&rings[i], final_check, &s);
		if (live && !*live)
			*live = producer_live(&rings[i], final_check);
	}
	return total;
}

/* What wait_pending() waits for: need requests, or (when adaptive) at least one and no producer
 * able to add another. Returns 1 when met; *total receives the pending count. */
static int batch_ready(const struct az_ring *rings, uint32_t nrings, uint32_t need, int adaptive,
		       int final_check, uint32_t *total)
{
	int live = 1;

	*total = total_pending(rings, nrings, final_check, adaptive ? &live : NULL);
	return *total >= need || (*total > 0 && !live);
}

/* Sleep on the doorbell until a producer rings it or `us` passes (the announce-then-check
 * protocol), announcing what wakes us: a publish while nothing waits, else a producer that
 * blocks or detaches. Returns batch_ready() as seen after waking. */
static int bell_sleep(struct az_ring *rings, uint32_t nrings, uint32_t need, int adaptive,
		      uint64_t us, uint32_t *total)
{
	struct az_doorbell_shm *bell = rings[0].bell;
	/* Acquire: keeps this read before the announcement below (see R4). */
	uint32_t word = atomic_load_explicit(&bell->seq, memory_order_acquire);
	uint32_t have = total_pending(rings, nrings, 0, NULL);
	uint32_t mode = have > 0 && adaptive ? AZ_BELL_WAKE_BLOCK : AZ_BELL_WAKE_PUBLISH;
	int ready;

	/* R4 + S2: announce before the final check (release part pairs with A4, seq_cst part with
	 * S1 in az_ring_publish() and S5 in announce_wait()). */
	atomic_store_explicit(&bell->sleeping, mode, memory_order_seq_cst);
	ready = batch_ready(rings, nrings, need, adaptive, 1, total);
	/* In AZ_BELL_WAKE_BLOCK mode publishes do not wake us: a batch filled to max_batch by
	 * publishes alone starts at the next block, detach or the deadline. */
	if (!ready) {
		futex_wait_us(&bell->seq, word, us);
		ready = batch_ready(rings, nrings, need, adaptive, 0, total);
	}
	/* Relaxed: only a hint to producers; a stale value costs one needless wake. */
	atomic_store_explicit(&bell->sleeping, 0, memory_order_relaxed);
	return ready;
}

/* Wait until batch_ready() or `deadline` passes: poll (never yielding the core), then sleep.
 * Returns the pending total last seen. */
static uint32_t wait_pending(struct az_ring *rings, uint32_t nrings, uint32_t need, int adaptive,
			     uint32_t spin, uint64_t deadline)
{
	uint32_t total, i = 0;
	int ready = batch_ready(rings, nrings, need, adaptive, 0, &total);

	while (!ready) {
		uint64_t left = left_us(deadline, now_us());

		if (left == 0)
			break;
		if (i < spin) {
			cpu_pause();
			i++;
			ready = batch_ready(rings, nrings, need, adaptive, 0, &total);
		} else {
			ready = bell_sleep(rings, nrings, need, adaptive, left, &total);
		}
	}
	return total;
}

uint32_t az_ring_take(const struct az_ring *r, uint32_t skip, uint32_t max,
		      struct az_ring_span span[2])
{
	uint64_t s;
	/* A1 (in load_published()): pairs with R1 in az_ring_publish(); the request bytes of every
	 * slot below the published count loaded here are visible to us. */
	uint32_t n = pending_pub(r, 0, &s), idx, first_part;

	span[0] = (struct az_ring_span){ .first = s + skip, .count = 0 };
	span[1] = (struct az_ring_span){ .first = s + skip, .count = 0 };
	if (n <= skip)
		return 0;
	n -= skip;
	if (n > max)
		n = max;
	idx = (uint32_t)((s + skip) & r->mask);
	first_part = r->capacity - idx < n ? r->capacity - idx : n;
	span[0].count = first_part;
	span[1] = (struct az_ring_span){ .first = s + skip + first_part, .count = n - first_part };
	return n;
}

/* Append ring i's pending requests (at most `budget`) as one or two runs. Returns the number
 * taken. */
static uint32_t take_ring(const struct az_ring *r, uint32_t i, uint32_t budget,
			  struct az_batch_span *runs, uint32_t max_runs, uint32_t *nruns)
{
	struct az_ring_span span[2];
	uint32_t n;

	if (*nruns >= max_runs)
		return 0;
	n = az_ring_take(r, 0, budget, span);
	if (n == 0)
		return 0;
	runs[(*nruns)++] = (struct az_batch_span){ .ring = i, .count = span[0].count,
					    .first = span[0].first };
	if (span[1].count == 0 || *nruns >= max_runs)
		return span[0].count;
	runs[(*nruns)++] = (struct az_batch_span){ .ring = i, .count = span[1].count,
					    .first = span[1].first };
	return n;
}

int az_batch_collect(struct az_ring *rings, uint32_t nrings, const struct az_batch_params *p,
		     struct az_batch_span *runs, uint32_t max_runs, uint32_t *total)
{
	uint64_t idle_deadline = UINT64_MAX, t0;
	uint32_t nruns = 0, taken = 0, k, start;

	if (total)
		*total = 0;
	if (!rings || nrings == 0 || !p || p->max_batch == 0 || !runs || max_runs == 0)
		return -EINVAL;
	for (k = 1; k < nrings; k++)
		if (rings[k].bell != rings[0].bell)
			return -EINVAL; /* one doorbell: the one we sleep on must be the one rung */
	if (p->idle_timeout_us)
		idle_deadline = now_us() + p->idle_timeout_us;
	if (wait_pending(rings, nrings, 1, 0, p->spin, idle_deadline) == 0)
		return 0;
	/* The batch deadline runs from the moment the first request was seen. */
	t0 = now_us();
	wait_pending(rings, nrings, p->max_batch, !p->fixed_deadline, p->spin, t0 + p->deadline_us);

	start = rr_next % nrings;
	for (k = 0; k < nrings && taken < p->max_batch && nruns < max_runs; k++) {
		uint32_t i = (start + k) % nrings;
		uint32_t got = take_ring(&rings[i], i, p->max_batch - taken, runs, max_runs, &nruns);

		if (got) {
			taken += got;
			rr_next = i + 1;
		}
	}
	if (total)
		*total = taken;
	return (int)nruns;
}
