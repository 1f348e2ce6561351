/* SPDX-License-Identifier: MIT */
/* base/pool.h: a generation counter under one mutex starts a job on every helper; a count of
 * parts still running, under the same mutex, tells the caller when all have finished. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "base/pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

struct az_pool {
	pthread_mutex_t mu;
	pthread_cond_t start; /* a new generation (a job, or stop) */
	pthread_cond_t done;  /* running reached 0 */
	uint64_t generation;  /* jobs started so far */
	uint32_t running;     /* helpers still in the current job */
	int stop;
	az_pool_fn fn;
	void *arg;
	uint32_t threads;
	uint32_t started; /* helpers created (az_pool_destroy joins these) */
	struct helper {
		struct az_pool *pool;
		uint32_t part;
		pthread_t tid;
	} helpers[AZ_POOL_THREADS_MAX];
};

static void *helper_main(void *v)
{
	struct helper *h = v;
	struct az_pool *p = h->pool;
	uint64_t seen = 0;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->generation == seen && !p->stop)
			pthread_cond_wait(&p->start, &p->mu);
		if (p->stop)
			break;
		seen = p->generation;
		az_pool_fn fn = p->fn;
		void *arg = p->arg;

		pthread_mutex_unlock(&p->mu);
		fn(arg, h->part);
		pthread_mutex_lock(&p->mu);
		if (--p->running == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int az_pool_create(uint32_t threads, struct az_pool **out)
{
	struct az_pool *p;

	if (!out || threads < 1 || threads > AZ_POOL_THREADS_MAX)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->start, NULL);
	pthread_cond_init(&p->done, NULL);
	p->threads = threads;
	for (uint32_t k = 1; k < threads; k++) {
		struct helper *h = &p->helpers[k];

		h->pool = p;
		h->part = k;
		int rc = pthread_create(&h->tid, NULL, helper_main, h);

		if (rc) {
			az_pool_destroy(p);
			return -rc;
		}
		p->started = k;
	}
	*out = p;
	return 0;
}

void az_pool_destroy(struct az_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->start);
	pthread_mutex_unlock(&p->mu);
	for (uint32_t k = 1; k <= p->started; k++)
		pthread_join(p->helpers[k].tid, NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->start);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

uint32_t az_pool_threads(const struct az_pool *p)
{
	return p ? p->threads : 1;
}

void az_pool_run(struct az_pool *p, az_pool_fn fn, void *arg)
{
	if (!p || p->threads == 1) {
		fn(arg, 0);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->arg = arg;
	p->running = p->threads - 1;
	p->generation++;
	pthread_cond_broadcast(&p->start);
	pthread_mutex_unlock(&p->mu);
	fn(arg, 0);
	pthread_mutex_lock(&p->mu);
	while (p->running)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

uint32_t az_cpus_available(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (uint32_t)CPU_COUNT(&set);
	return 1;
}
