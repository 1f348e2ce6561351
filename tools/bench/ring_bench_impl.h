/* SPDX-License-Identifier: MIT */
/* Private to azbench ring: one measurement of one configuration (harness in
 * tools/bench/ring_bench_run.c, transports in tools/bench/ring_bench_xport.c and
 * tools/bench/ring_bench_ipc.c), driven by the sweep and report in tools/bench/ring_bench.c. */
#ifndef AZ_RING_BENCH_IMPL_H
#define AZ_RING_BENCH_IMPL_H

#include <mqueue.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/ring.h"
#include "tools/bench/bench_common.h"
#include "tools/config.h"

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
	enum rb_wait wait;   /* rings: bounded spin then futex, or futex at once; others block */
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

/* ---- between the harness (ring_bench_run.c) and the transports (ring_bench_xport.c) ---- */

/* Round-trip samples kept per producer; reservoir-sampled beyond. */
#define RB_MAX_SAMPLES (1u << 17)

struct rb_prod_stats {
	uint64_t requests;    /* round trips completed after the warm-up */
	uint64_t measured_ns; /* time those took */
	uint32_t nsamples;
	uint32_t errors;
};

/* Shared by the parent and every child (anonymous MAP_SHARED, created before fork). */
struct rb_ctl {
	_Atomic uint32_t ready;  /* children at the start line */
	_Atomic uint32_t go;     /* set by the parent once t_warm_ns/t_end_ns are written */
	_Atomic uint32_t done;   /* producers finished */
	_Atomic uint32_t errors; /* consumer-side verification failures */
	uint64_t t_warm_ns;      /* measuring starts (written before go's release store) */
	uint64_t t_end_ns;       /* producers stop starting new batches... */
	uint64_t t_hard_ns;      /* ...or, when they measured too little by t_end_ns, here */
	/* Plain fields below: written by one child, read by the parent after waitpid(). */
	struct rb_prod_stats prod[RB_MAX_PRODUCERS]; /* each written by its producer only */
	/* memcpy baseline: the buffer is full (1), free (0), or the producer stopped (2) */
	_Alignas(AZ_CACHELINE) _Atomic uint32_t full;
	uint64_t copy_requests; /* messages the consumer copied out while measuring */
	uint64_t copy_ns;       /* time it spent copying them (written by the consumer only) */
};

struct rb_ctx {
	struct rb_cfg cfg;
	const int *cpus;
	int ncpus;
	uint32_t batch;
	struct rb_ctl *ctl;
	uint32_t *samples;         /* shared: producers x RB_MAX_SAMPLES */
	size_t samples_bytes;
	uint8_t *region;           /* shared: doorbell + rings, or the memcpy buffer */
	size_t region_bytes;
	size_t ring_stride;
	struct az_ring ring;       /* producer: its ring */
	struct az_ring rings[RB_MAX_PRODUCERS]; /* consumer: all rings */
	int fd[RB_MAX_PRODUCERS][4]; /* pipes, sockets: see P_WR.. in ring_bench_ipc.c */
	mqd_t mq_req;
	mqd_t mq_resp[RB_MAX_PRODUCERS];
	uint8_t *tx;               /* process-local request being built */
	uint8_t *buf;              /* process-local copy of a received message */
};

struct rb_ops {
	int (*setup)(struct rb_ctx *c);               /* parent, before fork */
	void (*after_fork)(struct rb_ctx *c);         /* parent, once every child exists */
	void (*teardown)(struct rb_ctx *c);           /* parent, after the children are gone */
	int (*child_init)(struct rb_ctx *c, uint32_t role); /* role == producers: the consumer */
	void (*producer)(struct rb_ctx *c, uint32_t id);
	void (*consumer)(struct rb_ctx *c);
	/* round-trip transports: send one request; receive 1..max responses, verified */
	int (*send)(struct rb_ctx *c, uint32_t id, uint64_t seq, uint64_t stamp);
	int (*recv)(struct rb_ctx *c, uint32_t id, uint64_t expect, uint64_t stamp, uint32_t max,
		    uint32_t *bad);
};

/* The transports, indexed by enum rb_transport (ring_bench_xport.c). */
extern const struct rb_ops *const rb_ops_of[RB_NTRANSPORTS];

/* ---- between the transport files (ring_bench_xport.c, ring_bench_ipc.c) ---- */

/* Every message starts with this header; its last 8 bytes repeat seq (the tail), so that a
 * response proves the whole message made the trip. */
struct rb_msg {
	uint64_t seq;
	uint64_t stamp; /* producer's clock when the request's batch started */
	uint32_t producer;
	uint32_t kind; /* RB_MSG_REQ, or RB_MSG_BYE: a producer is finished (message queues) */
	uint64_t resp; /* written by the consumer: answer() in ring_bench_xport.c */
};
enum { RB_MSG_REQ = 0, RB_MSG_BYE = 1 };
_Static_assert(sizeof(struct rb_msg) + 8 <= 64, "header and tail fit the smallest message");

/* Build request seq of producer id in c->tx (the payload between header and tail never
 * changes). */
void rb_msg_fill(struct rb_ctx *c, uint32_t id, uint64_t seq, uint64_t stamp, uint32_t kind);

/* Consumer: answer the request held in buf (bytes long), in place. */
void rb_msg_serve(uint8_t *buf, uint32_t bytes);

/* Producer: is buf the response to request (id, seq, stamp)? 1 or 0. */
int rb_msg_ok(const uint8_t *buf, uint32_t bytes, uint32_t id, uint64_t seq, uint64_t stamp);

/* Producer id of a round-trip transport (ops->send and ops->recv): publish a batch, wait for
 * every reply, repeat until the end time, recording each round trip in c->ctl->prod[id]. */
void rb_producer_rtt(struct rb_ctx *c, const struct rb_ops *ops, uint32_t id);

/* Pipes and Unix sockets; POSIX message queues (ring_bench_ipc.c). */
extern const struct rb_ops rb_ops_fd;
extern const struct rb_ops rb_ops_mq;

/* Anonymous MAP_SHARED memory (inherited across fork), zeroed; NULL when mmap fails. */
void *rb_map_shared(size_t bytes);

/* Count a consumer-side verification failure (any process). */
void rb_add_error(struct rb_ctx *c);

/* The CPUs this process may run on; returns the count (>= 1). */
int rb_cpus(int *cpus, int max);

/* Measure one configuration: fork cfg->producers producers and one consumer, pinned as
 * cfg->place says over cpus[0..ncpus-1], run for cfg->seconds, verify every response. */
void rb_measure(const struct rb_cfg *cfg, const int *cpus, int ncpus, struct rb_result *res);

/* The round trips' candidate, to be measured against azrun's defaults. */
struct rb_versus {
	const char *game;      /* the pipeline runs' game */
	uint32_t runs;         /* runs each (0: none, and nothing is recommended) */
	int quiet;             /* no progress on stderr */
	uint32_t capacity, batch, deadline_us; /* --ring-capacity, --max-batch, --batch-deadline-us */
	double measure;        /* seconds each run measures after its warm-up */
	double short_of;       /* > 0: --default-runs asked for runs, --seconds left no time for
	                        * them (runs 0); the --seconds that would have */
};

/* Run the candidate and azrun's defaults v->runs times each in the real pipeline (alternated,
 * az_bench_versus_defaults()); *pick gets azrun's defaults, or the candidate when its median
 * sims/s beats theirs by more than their noise; row gets beats_defaults and the medians; text
 * the recommendation's first sentence, in azrun's option names. Returns 0 or -errno. */
int rb_versus_defaults(const struct rb_versus *v, struct az_config *pick, struct az_bench_row *row,
		       char *text, size_t len);

#endif
