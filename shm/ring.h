/* SPDX-License-Identifier: MIT */
/* Single-producer / single-consumer request rings in shared memory: a worker publishes leaf
 * requests, the inference process serves them in place, the worker consumes the results.
 * The protocol essay (roles, invariants, acquire/release pairs, waiting) is at the top of
 * shm/ring.c. */
#ifndef AZ_RING_H
#define AZ_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define AZ_CACHELINE 64
#define AZ_RING_MAGIC 0x415a5247u /* "AZRG" */

/* Doorbell shared by all rings of a segment: the consumer (inference process) sleeps on it. */
struct az_doorbell_shm {
	/* any process, atomic RMW */
	_Atomic uint32_t seq;      /* futex word: bumped by a producer that saw `sleeping` set */
	/* consumer announces it is about to sleep (before its last check), and on what:
	 * AZ_BELL_WAKE_PUBLISH or AZ_BELL_WAKE_BLOCK; 0 when awake */
	_Atomic uint32_t sleeping;
	uint8_t pad[AZ_CACHELINE - 8];
};

/* What a sleeping consumer waits for (the doorbell's `sleeping`): any new request (it has none),
 * or a producer that stops adding requests (it has some and waits for the batch to be complete:
 * every producer blocked on a result or detached). */
#define AZ_BELL_WAKE_PUBLISH 1u
#define AZ_BELL_WAKE_BLOCK 2u

/* Producer wait marks (struct az_ring_shm's wait_mark). A mark whose two 32-bit halves differ is
 * "blocked": the producer waits for a result with published (high half) and served (low half)
 * as it saw them, and adds nothing before one arrives. Equal halves are these two values. */
#define AZ_RING_RUNNING 0ull            /* may publish at any time */
#define AZ_RING_DETACHED UINT64_MAX      /* publishes nothing more (exited); a new producer clears
					  * it by publishing */

/* One ring in shared memory. Three monotonically increasing sequence counters, each on its own
 * cache line with a guard line between producer- and consumer-written lines:
 *   consumed <= served <= published, published - consumed <= capacity (unsigned wrap).
 * Slots (capacity x slot_bytes, each slot_bytes a multiple of 64) follow the struct. */
struct az_ring_shm {
	/* immutable after init */
	uint32_t magic;
	uint32_t capacity; /* power of two */
	uint32_t slot_bytes;
	uint32_t reserved;
	uint8_t pad0[AZ_CACHELINE - 16];
	/* producer-owned: next sequence number to publish */
	_Atomic uint64_t published;
	uint8_t pad1[AZ_CACHELINE - 8];
	/* producer-owned: results below this have been read by the producer */
	_Atomic uint64_t consumed;
	/* producer-owned: AZ_RING_RUNNING, AZ_RING_DETACHED or a blocked mark (see above); read by
	 * the consumer to close a batch early, never to decide correctness */
	_Atomic uint64_t wait_mark;
	uint8_t pad2[AZ_CACHELINE - 16];
	uint8_t guard[AZ_CACHELINE]; /* keeps producer and consumer lines apart */
	/* consumer-owned: requests below this have results written */
	_Atomic uint64_t served;
	uint8_t pad3[AZ_CACHELINE - 8];
	/* any process, atomic RMW: producer futex (sleeps for `served` to move) */
	_Atomic uint32_t served_futex;    /* bumped by the consumer when it serves and a producer sleeps */
	_Atomic uint32_t producer_sleeping;
	uint8_t pad4[AZ_CACHELINE - 8];
};

/* Process-local handle (liburing's "cached" copies live here). */
struct az_ring {
	struct az_ring_shm *shm;
	struct az_doorbell_shm *bell;
	uint8_t *slots;
	uint32_t capacity;
	uint32_t mask;
	uint32_t slot_bytes;
	uint64_t cached_published; /* producer: its own counter */
	uint64_t cached_consumed;  /* producer: its own counter */
	uint64_t cached_served;    /* producer: last value loaded from the consumer */
};

/* Waiting policy: spin `spin` polls, then sleep on the futex; give up after timeout_us
 * (0 = wait forever). */
struct az_wait {
	uint32_t spin;
	uint32_t timeout_us;
};

/* The most slots a ring holds: a worker has at most games x leaves requests in flight, far
 * below this; a bound that keeps a run's segment (rings x capacity x slot bytes) sane. azrun's
 * --ring-capacity takes its range from here. */
#define AZ_RING_CAPACITY_MAX 65536u

/* Bytes a ring with this capacity and slot size needs: 0 when capacity is not a power of two
 * in [2, AZ_RING_CAPACITY_MAX] or slot_bytes is 0 or not a multiple of AZ_CACHELINE. */
size_t az_ring_memsize(uint32_t capacity, uint32_t slot_bytes);

/* Initialise a ring in caller-provided memory (az_ring_memsize bytes, 64-byte aligned).
 * Returns 0, or -EINVAL for a bad capacity/slot size (see az_ring_memsize). */
int az_ring_init(void *mem, uint32_t capacity, uint32_t slot_bytes);

/* Attach a process-local handle to an initialised ring; bell is the segment's doorbell.
 * Returns 0, or -EPROTO when the magic or geometry is wrong. */
int az_ring_attach(struct az_ring *r, void *mem, struct az_doorbell_shm *bell);

/* Slot for sequence number seq (either side). */
static inline void *az_ring_slot(const struct az_ring *r, uint64_t seq)
{
	return r->slots + (size_t)(seq & r->mask) * r->slot_bytes;
}

/* ---- producer side (one process: the worker owning the ring) ---- */

/* Slot the next request may be written into, or NULL when the ring is full
 * (published - consumed == capacity). *seq (may be NULL) receives its sequence number.
 * The slot is private to the producer until az_ring_publish(). */
void *az_ring_claim(struct az_ring *r, uint64_t *seq);

/* Publish the slot returned by the last az_ring_claim() (store-release of `published`) and ring
 * the doorbell when the consumer sleeps. */
void az_ring_publish(struct az_ring *r);

/* Oldest slot whose result is ready and not yet released, or NULL. *seq receives its number.
 * The slot stays borrowed until az_ring_release(). */
void *az_ring_result(struct az_ring *r, uint64_t *seq);

/* Release the slot returned by az_ring_result() (store-release of `consumed`). */
void az_ring_release(struct az_ring *r);

/* Requests published and not yet released by the producer. */
static inline uint32_t az_ring_inflight(const struct az_ring *r)
{
	return (uint32_t)(r->cached_published - r->cached_consumed);
}

/* Wait until a result is ready (served > consumed): spin, then futex. While it waits the ring's
 * wait mark says "blocked" (and a consumer sleeping on AZ_BELL_WAKE_BLOCK is woken), so the
 * consumer can run its batch at once instead of waiting for requests that cannot come; the
 * spin yields the core every few polls (the consumer never does: it is the one we wait for).
 * Returns 0, -ETIMEDOUT, or -EAGAIN when nothing is in flight (waiting would never end). */
int az_ring_wait_result(struct az_ring *r, const struct az_wait *w);

/* The producer will publish nothing more (it is exiting): mark the ring detached and wake a
 * consumer waiting for producers to stop. A later producer of the ring undoes it by publishing.
 * Producer only. */
void az_ring_detach(struct az_ring *r);

/* ---- consumer side (one process: the inference server) ---- */

/* A span of ring slots, by sequence number: first .. first + count - 1. A span never wraps the
 * slot array, so its slots are contiguous in memory (az_ring_slot(r, first) onwards). */
struct az_ring_span {
	uint64_t first;
	uint32_t count;
};

/* A span of ring slots in ring number `ring` of a ring set (what az_batch_collect returns). */
struct az_batch_span {
	uint32_t ring;
	uint32_t count;
	uint64_t first;
};

/* Take up to `max` waiting requests after the first `skip` ones (those the caller already took
 * and has not served yet): the range [served + skip, published), cut to `max` requests and split
 * where it wraps the slot array into span[0] and span[1] (span[1].count is 0 when it does not
 * wrap; both counts are 0 when nothing waits beyond skip). Returns the number taken
 * (span[0].count + span[1].count). One acquire load of published (A1): the request bytes of the
 * taken slots are visible afterwards. Consumer only. Taken requests are answered in sequence
 * order with az_ring_serve(); nothing is marked in the ring, so taking again with the same skip
 * returns the same slots. */
uint32_t az_ring_take(const struct az_ring *r, uint32_t skip, uint32_t max,
		      struct az_ring_span span[2]);

/* Batch collection over all rings. Waits for the first request (spin, then futex on the
 * doorbell, up to idle_timeout_us; 0 = forever), then keeps polling until max_batch requests are
 * waiting, or no producer can add one (every ring's producer is blocked on a result or detached,
 * az_ring_producer_live(); skipped when fixed_deadline is set: the old fixed-deadline batching,
 * kept as a baseline for azbench), or deadline_us has passed since the first one was seen.
 * The consumer polls without yielding its core and then sleeps on the doorbell for exactly the
 * condition it waits for (AZ_BELL_WAKE_PUBLISH, then AZ_BELL_WAKE_BLOCK). Takes at most max_batch
 * requests in total, round-robin over rings starting after the last ring served (fairness), as at
 * most max_runs runs (a ring gives one run, or two when its pending range wraps).
 * Returns the number of runs (0 on idle timeout) and the total request count in *total.
 * Every request in the returned runs must be answered with az_ring_serve() before the next call. */
struct az_batch_params {
	uint32_t max_batch;
	uint32_t deadline_us;
	uint32_t spin;
	uint32_t idle_timeout_us;
	uint32_t fixed_deadline; /* 1: ignore blocked producers, wait for max_batch or deadline */
};
int az_batch_collect(struct az_ring *rings, uint32_t nrings, const struct az_batch_params *p,
		     struct az_batch_span *runs, uint32_t max_runs, uint32_t *total);

/* Mark requests below `upto` served (store-release of `served`) and wake the producer when it
 * sleeps. Consumer only; upto must not exceed the published count it observed. */
void az_ring_serve(struct az_ring *r, uint64_t upto);

/* 1 when ring r's producer may still add requests before any of its requests is served: it
 * runs (AZ_RING_RUNNING, or published/served moved since its blocked mark), or a new producer
 * publishes on a detached ring. 0 when it is blocked on a result or detached with nothing
 * waiting. A hint read with acquire loads (A7); a stale answer only moves a batch's start.
 * Consumer only. */
int az_ring_producer_live(const struct az_ring *r);

/* Consumer's view of requests waiting (published - served), one acquire load. */
uint32_t az_ring_pending(const struct az_ring *r);

#endif
