/* SPDX-License-Identifier: MIT */
/* Private to azbench ring: one measurement of one configuration (tools/bench/ring_bench_xport.c),
 * driven by the sweep and report in tools/bench/ring_bench.c. */
#ifndef AZ_RING_BENCH_IMPL_H
#define AZ_RING_BENCH_IMPL_H

#include <stdint.h>

#define RB_MAX_PRODUCERS 32
#define RB_MAX_CPUS 256

enum rb_transport {
	RB_RING,   /* az_ring round trips: claim/publish, collect/serve, wait_result */
	RB_PIPE,   /* two pipes per producer, one write and one read per message each way */
	RB_SOCKET, /* one AF_UNIX SOCK_STREAM socketpair per producer */
	RB_MQ,     /* POSIX message queues: one shared request queue, one reply queue each */
	RB_STREAM, /* one ring, 512-byte requests back to back, the consumer drains batches */
	RB_MEMCPY, /* the same bytes copied across cores through two half-buffers, no protocol */
	RB_NTRANSPORTS
};

enum rb_wait { RB_SPIN, RB_FUTEX, RB_BLOCK };

enum rb_place { RB_SAME, RB_CROSS, RB_ANY };

struct rb_cfg {
	enum rb_transport transport;
	enum rb_wait wait;   /* rings: bounded spin then futex (spin) or futex at once; else block */
	enum rb_place place;
	uint32_t producers;  /* processes; one consumer process serves them all */
	uint32_t capacity;   /* ring slots per producer (RB_RING, RB_STREAM, RB_MEMCPY buffer) */
	uint32_t slot_bytes; /* bytes of every request and response */
	uint32_t batch;      /* requests a producer publishes before it waits for their replies */
	double seconds;      /* measuring time (after a short warm-up) */
};

struct rb_result {
	uint64_t requests;  /* round trips completed while measuring */
	double rps;         /* sum over producers of requests / their measuring time */
	uint32_t rtt_median_ns, rtt_p99_ns, rtt_p999_ns; /* 0 when not measured (stream, memcpy) */
	uint64_t samples;   /* round-trip samples behind the quantiles */
	uint32_t errors;    /* responses that failed verification, timeouts, setup failures */
	uint32_t batch;     /* the batch actually used (POSIX mq may lower it to its queue limit) */
	int stalled;        /* a child did not finish within the grace period and was killed */
	int rc;             /* 0, or -errno when the configuration could not be set up */
};

/* The CPUs this process may run on; returns the count (>= 1). */
int rb_cpus(int *cpus, int max);

/* Measure one configuration: fork cfg->producers producers and one consumer, pinned as
 * cfg->place says over cpus[0..ncpus-1], run for cfg->seconds, verify every response. */
void rb_measure(const struct rb_cfg *cfg, const int *cpus, int ncpus, struct rb_result *res);

#endif
