/* SPDX-License-Identifier: MIT */
/* No lost wake-up: 10^5 cycles in which the consumer (az_batch_collect with spin 0) really goes
 * to sleep on the doorbell and one request wakes it, and the producer (az_ring_wait_result with
 * spin 0) sleeps on its futex and the response wakes it. Every futex call of the ring library is
 * counted through -Wl,--wrap=syscall, and a FUTEX_WAIT that times out while its condition already
 * holds and its futex word was never bumped is a lost wake-up (a negative control shows that the
 * counter sees one). */

/* cpu_set_t and sched_setaffinity() are glibc extensions: the only reason for _GNU_SOURCE. */
#define _GNU_SOURCE

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/util.h"
#include "shm/ring.h"
#include "base/rng.h"
#include "tests/test_util.h"

#define CAPACITY 4u
#define SLOT 64u
#define CYCLES_PROC 100000u
#define CYCLES_THREAD 10000u
#define SLOW_NS (10ull * 1000000u) /* half the library's 20 ms futex cap */
#define WAIT_LIMIT_US (5u * 1000 * 1000) /* a stuck test fails instead of hanging */
#define STOP_TAG UINT64_MAX

/* Counters kept by __wrap_syscall(), in shared memory so that a forked consumer adds to them. */
struct counters {
	_Atomic uint64_t bell_waits;    /* consumer FUTEX_WAIT calls on the doorbell */
	_Atomic uint64_t bell_woken;    /* ... that returned 0: slept, then FUTEX_WAKE'd */
	_Atomic uint64_t served_waits;  /* producer FUTEX_WAIT calls on served_futex */
	_Atomic uint64_t served_woken;
	_Atomic uint64_t wakes;         /* FUTEX_WAKE calls */
	_Atomic uint64_t timeouts;      /* FUTEX_WAIT calls that ran into their timeout */
	_Atomic uint64_t lost;          /* timeouts whose wake-up was lost (see classify()) */
	_Atomic uint32_t in_bell_wait;  /* set just before the consumer's FUTEX_WAIT */
};

/* The shared region: counters, doorbell, one ring. */
struct region {
	struct counters cnt;
	uint8_t pad0[AZ_CACHELINE];
	struct az_doorbell_shm bell;
	_Alignas(AZ_CACHELINE) uint8_t ring[];
};

static struct region *g; /* set before any thread or child starts */

long __real_syscall(long nr, ...);
long __wrap_syscall(long nr, ...);

/* A FUTEX_WAIT on `word` for `expect` timed out. It was a lost wake-up when the condition it
 * waited for already holds and nobody bumped the word: the peer published without seeing the
 * sleeper's announcement, which is exactly what the announce/re-check protocol must prevent.
 * (A peer still between its counter store and its bump would also match: a window of a few
 * instructions against a 20 ms timeout.) */
static void classify(const _Atomic uint32_t *word, uint32_t expect)
{
	struct az_ring_shm *shm = (struct az_ring_shm *)g->ring;
	uint64_t a, b;

	if (word == &g->bell.seq) {
		a = atomic_load(&shm->published);
		b = atomic_load(&shm->served);
	} else if (word == &shm->served_futex) {
		a = atomic_load(&shm->served);
		b = atomic_load(&shm->consumed);
	} else {
		return;
	}
	if (a != b && atomic_load(word) == expect)
		atomic_fetch_add(&g->cnt.lost, 1);
}

/* Every syscall() of the ring library comes here. The futex calls pass six arguments; reading
 * them all as long is what glibc's syscall() itself does on LP64 targets. */
long __wrap_syscall(long nr, ...)
{
	long a[6], rc;
	int op, err;
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	op = (int)(a[1] & FUTEX_CMD_MASK);
	if (nr == SYS_futex && g && op == FUTEX_WAIT && (void *)a[0] == (void *)&g->bell.seq)
		atomic_store(&g->cnt.in_bell_wait, 1);
	rc = __real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	err = errno;
	if (nr == SYS_futex && g) {
		const _Atomic uint32_t *word = (const _Atomic uint32_t *)a[0];
		int bell = word == &g->bell.seq;

		if (op == FUTEX_WAKE) {
			atomic_fetch_add(&g->cnt.wakes, 1);
		} else if (op == FUTEX_WAIT) {
			atomic_fetch_add(bell ? &g->cnt.bell_waits : &g->cnt.served_waits, 1);
			if (rc == 0)
				atomic_fetch_add(bell ? &g->cnt.bell_woken
						      : &g->cnt.served_woken, 1);
			if (rc < 0 && err == ETIMEDOUT) {
				atomic_fetch_add(&g->cnt.timeouts, 1);
				classify(word, (uint32_t)a[2]);
			}
		}
	}
	errno = err;
	return rc;
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = az_now_ns() + ns;

	while (az_now_ns() < end)
		;
}

/* Put the calling thread on the n-th CPU it may use (modulo their count). Returns 1 when there
 * were at least two CPUs: producer and consumer then truly run at the same time. Without this
 * the scheduler's wake-affine placement tends to run them in turn on one CPU, where the waker is
 * preempted by the woken side and the races this test is after hardly happen. */
static int pin_to(int n)
{
	cpu_set_t set, one;
	int count, k = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0 || (count = CPU_COUNT(&set)) < 2)
		return 0;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set) || k++ != n % count)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
	}
	return 0;
}

static void unpin(void)
{
	cpu_set_t all;

	CPU_ZERO(&all);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		CPU_SET(cpu, &all);
	pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
}

/* cmocka fixtures around each test: the shared region g (ring initialised), then its unmapping
 * (which runs also when the test fails). */
static int setup_region(void **state)
{
	(void)state;
	size_t bytes = sizeof(struct region) + az_ring_memsize(CAPACITY, SLOT);

	g = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(g != MAP_FAILED);
	assert_int_equal(az_ring_init(g->ring, CAPACITY, SLOT), 0);
	return 0;
}

static int teardown_region(void **state)
{
	struct region *r = g;

	(void)state;
	g = NULL;
	munmap(r, sizeof(struct region) + az_ring_memsize(CAPACITY, SLOT));
	return 0;
}

/* Consumer: sleep until a request comes (spin 0, no idle timeout), answer it; stop on STOP_TAG.
 * Returns the number of errors. */
static uint32_t consumer_run(void)
{
	struct az_batch_params bp = { .max_batch = 1, .deadline_us = 0, .spin = 0,
				      .idle_timeout_us = 0 };
	uint32_t errors = 0, total;
	uint64_t expect = 0;
	struct az_ring r;

	pin_to(1);
	if (az_ring_attach(&r, g->ring, &g->bell) != 0)
		return 1;
	for (;;) {
		struct az_batch_span run;
		uint64_t *slot;
		int nr = az_batch_collect(&r, 1, &bp, &run, 1, &total);

		if (nr != 1 || total != 1 || run.first != expect) {
			errors++;
			if (nr < 0)
				return errors;
			continue;
		}
		slot = az_ring_slot(&r, run.first);
		spin_ns(slot[2]); /* the producer asks for a late answer, so that it falls asleep */
		slot[1] = slot[0] ^ 0xa5a5a5a5a5a5a5a5ull;
		expect++;
		az_ring_serve(&r, run.first + 1);
		if (slot[0] == STOP_TAG)
			return errors;
	}
}

struct cycle_stats {
	uint64_t slow, max_ns, errors;
};

static int send_one(struct az_ring *r, uint64_t tag, uint32_t spin, uint64_t delay_ns,
		    struct cycle_stats *st)
{
	struct az_wait w = { .spin = spin, .timeout_us = WAIT_LIMIT_US };
	uint64_t *slot = az_ring_claim(r, NULL), t0, dt;

	if (!slot)
		return -1;
	slot[0] = tag;
	slot[2] = delay_ns;
	t0 = az_now_ns();
	az_ring_publish(r);
	if (az_ring_wait_result(r, &w) != 0)
		return -1;
	dt = az_now_ns() - t0;
	slot = az_ring_result(r, NULL);
	st->errors += !slot || slot[1] != (tag ^ 0xa5a5a5a5a5a5a5a5ull);
	az_ring_release(r);
	st->slow += dt > SLOW_NS;
	st->max_ns = dt > st->max_ns ? dt : st->max_ns;
	return 0;
}

/* Producer: per cycle, either (a, one cycle in three) wait until the consumer has announced that
 * it sleeps, let it reach FUTEX_WAIT (0-10 us), publish, ask for the answer 0-20 us late and
 * sleep for it (spin 0), or (b) spin for the previous answer and publish 0-2 us later, racing the
 * consumer on its way to sleep. */
static void producer_run(uint32_t cycles, struct cycle_stats *st)
{
	struct az_ring r;
	struct az_rng rng;

	az_rng_seed(&rng, 2024);
	assert_int_equal(az_ring_attach(&r, g->ring, &g->bell), 0);
	for (uint32_t i = 0; i < cycles; i++) {
		int racing = az_rng_below(&rng, 3) != 0;

		if (!racing) {
			for (uint32_t k = 0; !atomic_load(&g->bell.sleeping); k++)
				if (k % 16 == 15)
					sched_yield();
			spin_ns(az_rng_below(&rng, 10000));
		} else {
			spin_ns(az_rng_below(&rng, 2000));
		}
		if (send_one(&r, i, racing ? 1u << 14 : 0, racing ? 0 : az_rng_below(&rng, 20000),
			     st) != 0) {
			st->errors++;
			return;
		}
	}
	if (send_one(&r, STOP_TAG, 0, 0, st) != 0)
		st->errors++;
}

static void check(uint32_t cycles, const struct cycle_stats *st, int parallel)
{
	struct counters *c = &g->cnt;

	printf("# %u cycles: consumer slept %llu times (%llu woken by FUTEX_WAKE), producer %llu "
	       "(%llu), %llu wakes, %llu timeouts, %llu lost; cycles > 10 ms: %llu, max %.2f ms\n",
	       cycles, (unsigned long long)c->bell_waits, (unsigned long long)c->bell_woken,
	       (unsigned long long)c->served_waits, (unsigned long long)c->served_woken,
	       (unsigned long long)c->wakes, (unsigned long long)c->timeouts,
	       (unsigned long long)c->lost, (unsigned long long)st->slow, st->max_ns / 1e6);
	assert_int_equal(st->errors, 0);
	/* The test must really exercise sleeping: the consumer went to sleep in a third of the
	 * cycles at least and was woken by a FUTEX_WAKE in a quarter (it does in nearly every
	 * cycle: even a racing producer is slower than its way to sleep). The producer, answered
	 * up to 20 us late in a third of the cycles, sleeps in about 12-30 % of them, but how
	 * often depends on how fast the consumer's answer comes: under ASan on a loaded 2-vCPU
	 * machine it slept in 12.47 % (CI, 10^4 cycles). The floors below only require that the
	 * producer's sleep was exercised hundreds of times; the protocol is checked by lost and
	 * errors, not by these rates. */
	assert_true(c->bell_waits >= cycles / 3);
	assert_true(c->bell_woken >= cycles / 4);
	if (parallel) {
		assert_true(c->served_waits >= cycles / 50);
		assert_true(c->served_woken >= cycles / 60);
	}
	/* No wake-up was lost: no waiter needed its timeout to see a request or a result. */
	assert_int_equal(c->lost, 0);
	/* A lost wake-up costs a cycle >= 20 ms (the futex cap), and the lost counter above
	 * catches each one exactly. Cycles over 10 ms are printed, not asserted: a pinned process
	 * on a shared machine is also stalled past 10 ms when other processes hold its CPU (60
	 * cycles in 10^5 at a load of 8 on 2 vCPUs, with lost still 0), so a bound on them would
	 * test the machine's load, not the protocol. */
}

/* The producer side of a test, pinned to CPU 0: cycles round trips, timed into st. Returns
 * pin_to's answer (whether the consumer can run in parallel). */
static int produce(uint32_t cycles, struct cycle_stats *st)
{
	int parallel = pin_to(0);

	producer_run(cycles, st);
	unpin();
	return parallel;
}

static void *consumer_thread(void *arg)
{
	*(uint32_t *)arg = consumer_run();
	return NULL;
}

/* Consumer in another process: the deployment shape (a shared, not private, futex). */
static void test_wakeup_processes(void **state)
{
	struct cycle_stats st = { 0 };
	int status = 0;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(consumer_run() ? 1 : 0);
	int parallel = produce(CYCLES_PROC, &st);

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	check(CYCLES_PROC, &st, parallel);
}

/* Consumer in a thread: the same protocol where ThreadSanitizer sees both sides. */
static void test_wakeup_threads(void **state)
{
	struct cycle_stats st = { 0 };
	uint32_t errors = 1;
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, consumer_thread, &errors), 0);
	int parallel = produce(CYCLES_THREAD, &st);

	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(errors, 0);
	check(CYCLES_THREAD, &st, parallel);
}

struct collect_arg {
	uint64_t ns;
	uint32_t total;
	int nr;
};

static void *collect_once(void *p)
{
	struct collect_arg *a = p;
	struct az_batch_params bp = { .max_batch = 1, .spin = 0 };
	struct az_ring r;
	struct az_batch_span run;
	uint64_t t0 = az_now_ns();

	assert_int_equal(az_ring_attach(&r, g->ring, &g->bell), 0);
	a->nr = az_batch_collect(&r, 1, &bp, &run, 1, &a->total);
	a->ns = az_now_ns() - t0;
	return NULL;
}

/* Negative control: a publish that skips the doorbell (a store of `published` alone, as a broken
 * az_ring_publish() would do) while the consumer sleeps is a lost wake-up. The counters must see
 * it, and only the 20 ms futex timeout rescues the consumer: the detector above is not blind. */
static void test_detector_sees_lost_wakeup(void **state)
{
	struct az_ring_shm *shm;
	struct collect_arg a = { 0 };
	pthread_t t;

	(void)state;
	shm = (struct az_ring_shm *)g->ring;
	assert_int_equal(pthread_create(&t, NULL, collect_once, &a), 0);
	/* The consumer has made its final check once it calls FUTEX_WAIT. */
	while (!atomic_load(&g->cnt.in_bell_wait))
		sched_yield();
	atomic_store_explicit(&shm->published, 1, memory_order_release);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(a.nr, 1);
	assert_int_equal(a.total, 1);
	assert_true(atomic_load(&g->cnt.lost) >= 1);
	assert_true(a.ns > SLOW_NS);
}

AZ_TEST_MAIN(cmocka_unit_test_setup_teardown(test_detector_sees_lost_wakeup, setup_region,
					     teardown_region),
	     cmocka_unit_test_setup_teardown(test_wakeup_processes, setup_region, teardown_region),
	     cmocka_unit_test_setup_teardown(test_wakeup_threads, setup_region, teardown_region))
