/* SPDX-License-Identifier: MIT */
/* azbench ring harness: fork one consumer and P producers, pin them, line them up at a start
 * line, stop and reap them (killing stalled ones), and turn their counters and round-trip samples
 * into a struct rb_result. The transports themselves are in tools/bench/ring_bench_xport.c. */

/* cpu_set_t and sched_setaffinity() are glibc extensions: the only reason for _GNU_SOURCE. */
#define _GNU_SOURCE

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/ring_bench_impl.h"

/* Children must reach the start line within START_NS and finish within GRACE_NS of the hard
 * end. */
#define START_NS (5ull * 1000000000u)
#define GRACE_NS (3ull * 1000000000u)
/* The hard end is at least this long after the end. */
#define HARD_MIN_NS (50ull * 1000000u)
/* Warm-up before measuring: a tenth of the time, at most WARM_MAX_NS. */
#define WARM_MAX_NS (20ull * 1000000u)

static void nap_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

void *rb_map_shared(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void rb_add_error(struct rb_ctx *c)
{
	/* Relaxed: a counter read by the parent after waitpid(), which orders it. */
	atomic_fetch_add_explicit(&c->ctl->errors, 1, memory_order_relaxed);
}

/* ---- harness ---- */

int rb_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int i = 0; i < CPU_SETSIZE && n < max; i++)
			if (CPU_ISSET(i, &set))
				cpus[n++] = i;
	if (n == 0)
		cpus[n++] = 0;
	return n;
}

/* same: everyone on the first CPU; cross: the consumer on the first CPU, producers spread over
 * the others; any: left to the scheduler. */
static void pin(const struct rb_ctx *c, uint32_t role)
{
	cpu_set_t set;
	int cpu;

	if (c->cfg.place == RB_ANY)
		return;
	if (c->cfg.place == RB_SAME || c->ncpus < 2 || role == c->cfg.producers)
		cpu = c->cpus[0];
	else
		cpu = c->cpus[1 + role % (uint32_t)(c->ncpus - 1)];
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void child_main(struct rb_ctx *c, const struct rb_ops *ops, uint32_t role)
{
	pin(c, role);
	if (ops->child_init(c, role) != 0)
		rb_add_error(c);
	/* Relaxed: the parent only counts arrivals; nothing is published with them. */
	atomic_fetch_add_explicit(&c->ctl->ready, 1, memory_order_relaxed);
	/* G1': acquire, pairs with G1 in run(): t_warm_ns and t_end_ns are visible. */
	while (!atomic_load_explicit(&c->ctl->go, memory_order_acquire))
		nap_us(50);
	if (role == c->cfg.producers) {
		ops->consumer(c);
	} else {
		ops->producer(c, role);
		/* Release: our stats are written before the consumer may see us done. */
		atomic_fetch_add_explicit(&c->ctl->done, 1, memory_order_release);
	}
	_exit(0);
}

/* Wait for the children; kill them when they are not done by deadline. Returns 1 on a stall. */
static int reap(pid_t *pid, uint32_t n, uint64_t deadline, uint32_t *crashed)
{
	uint32_t left = 0, i;
	int stalled = 0;

	for (i = 0; i < n; i++)
		left += pid[i] > 0;
	while (left) {
		for (i = 0; i < n; i++) {
			int st = 0;

			if (pid[i] <= 0 || waitpid(pid[i], &st, stalled ? 0 : WNOHANG) != pid[i])
				continue;
			*crashed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
			pid[i] = 0;
			left--;
		}
		if (left && !stalled && az_bench_now_ns() > deadline) {
			for (i = 0; i < n; i++)
				if (pid[i] > 0)
					kill(pid[i], SIGKILL);
			stalled = 1;
		} else if (left && !stalled) {
			nap_us(200);
		}
	}
	return stalled;
}

static void run(struct rb_ctx *c, const struct rb_ops *ops, struct rb_result *res)
{
	uint32_t n = c->cfg.producers + 1, started, crashed = 0;
	uint64_t warm, slice = (uint64_t)(c->cfg.seconds * 1e9), t0, limit;
	pid_t pid[RB_MAX_PRODUCERS + 1];

	fflush(NULL); /* children exit with _exit(), but never write twice what we buffered */
	for (started = 0; started < n; started++) {
		pid[started] = fork();
		if (pid[started] < 0) {
			res->rc = -errno;
			break;
		}
		if (pid[started] == 0)
			child_main(c, ops, started);
	}
	if (ops->after_fork)
		ops->after_fork(c);
	limit = az_bench_now_ns() + START_NS;
	/* Relaxed: a count (see child_main()). */
	while (started == n && atomic_load_explicit(&c->ctl->ready, memory_order_relaxed) < n &&
	       az_bench_now_ns() < limit)
		nap_us(100);
	if (started == n && atomic_load_explicit(&c->ctl->ready, memory_order_relaxed) == n) {
		warm = (uint64_t)(c->cfg.seconds * 1e8); /* a tenth of the measuring time */
		warm = warm < WARM_MAX_NS ? warm : WARM_MAX_NS;
		t0 = az_bench_now_ns();
		c->ctl->t_warm_ns = t0 + warm;
		c->ctl->t_end_ns = t0 + warm + slice;
		c->ctl->t_hard_ns = c->ctl->t_end_ns + (2 * slice > HARD_MIN_NS ? 2 * slice
										: HARD_MIN_NS);
		/* G1: release, pairs with G1' in child_main(). */
		atomic_store_explicit(&c->ctl->go, 1, memory_order_release);
		limit = c->ctl->t_hard_ns + GRACE_NS;
	} else {
		limit = 0; /* not all children started: stop the ones that did */
		res->rc = res->rc ? res->rc : -ETIMEDOUT;
	}
	res->stalled = reap(pid, started, limit, &crashed) && limit != 0;
	res->errors += crashed;
}

static void summarise(struct rb_ctx *c, struct rb_result *res)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < c->cfg.producers; i++) {
		const struct rb_prod_stats *st = &c->ctl->prod[i];

		res->requests += st->requests;
		if (st->measured_ns)
			res->rps += (double)st->requests * 1e9 / (double)st->measured_ns;
		res->errors += st->errors;
		if (c->samples && st->nsamples) {
			/* Compact every producer's samples to the front of the array. */
			memmove(c->samples + total, c->samples + (size_t)i * RB_MAX_SAMPLES,
				(size_t)st->nsamples * sizeof(uint32_t));
			total += st->nsamples;
		}
	}
	if (c->cfg.transport == RB_MEMCPY && c->ctl->copy_ns)
		res->rps = fmin(res->rps, (double)c->ctl->copy_requests * 1e9 /
					  (double)c->ctl->copy_ns);
	/* Relaxed: the children are gone (waitpid ordered their writes before this). */
	res->errors += atomic_load_explicit(&c->ctl->errors, memory_order_relaxed);
	res->samples = total;
	if (total) {
		az_bench_sort_u32(c->samples, total);
		res->rtt_median_ns = az_bench_quantile(c->samples, total, 0.5);
		res->rtt_p99_ns = az_bench_quantile(c->samples, total, 0.99);
		res->rtt_p999_ns = az_bench_quantile(c->samples, total, 0.999);
	}
}

static int check_cfg(const struct rb_cfg *cfg)
{
	if (cfg->transport >= RB_NTRANSPORTS || cfg->producers < 1 ||
	    cfg->producers > RB_MAX_PRODUCERS || cfg->slot_bytes < 64 ||
	    cfg->slot_bytes % AZ_CACHELINE || cfg->batch < 1 || !(cfg->seconds > 0))
		return -EINVAL;
	if ((cfg->transport == RB_STREAM || cfg->transport == RB_MEMCPY) && cfg->producers != 1)
		return -EINVAL;
	return 0;
}

void rb_measure(const struct rb_cfg *cfg, const int *cpus, int ncpus, struct rb_result *res)
{
	const struct rb_ops *ops = rb_ops_of[cfg->transport < RB_NTRANSPORTS ? cfg->transport : 0];
	struct rb_ctx *c;

	memset(res, 0, sizeof(*res));
	res->batch = cfg->batch;
	res->rc = check_cfg(cfg);
	if (res->rc)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		res->rc = -ENOMEM;
		return;
	}
	c->cfg = *cfg;
	c->cpus = cpus;
	c->ncpus = ncpus;
	c->batch = cfg->batch;
	c->mq_req = (mqd_t)-1;
	for (uint32_t i = 0; i < RB_MAX_PRODUCERS; i++)
		for (int k = 0; k < 4; k++)
			c->fd[i][k] = -1;
	c->ctl = rb_map_shared(sizeof(*c->ctl));
	c->tx = aligned_alloc(AZ_CACHELINE, cfg->slot_bytes);
	c->buf = aligned_alloc(AZ_CACHELINE, cfg->slot_bytes);
	if (!c->ctl || !c->tx || !c->buf) {
		res->rc = -ENOMEM;
		goto out_free;
	}
	for (uint32_t i = 0; i < cfg->slot_bytes; i++)
		c->tx[i] = (uint8_t)(i * 31 + 7);
	if (ops->send) {
		c->samples_bytes = (size_t)cfg->producers * RB_MAX_SAMPLES * sizeof(uint32_t);
		c->samples = rb_map_shared(c->samples_bytes);
		if (!c->samples) {
			res->rc = -ENOMEM;
			goto out_free;
		}
	}
	res->rc = ops->setup(c);
	if (res->rc) {
		ops->teardown(c); /* undoes what setup got done */
		goto out_free;
	}
	res->batch = c->batch;
	run(c, ops, res);
	ops->teardown(c);
	summarise(c, res);
out_free:
	if (c->samples)
		munmap(c->samples, c->samples_bytes);
	if (c->ctl)
		munmap(c->ctl, sizeof(*c->ctl));
	free(c->buf);
	free(c->tx);
	free(c);
}
