/* SPDX-License-Identifier: MIT */
/* A fixed set of threads that run one function over parts 0..n-1 of a job and wait for all of
 * them: the data-parallel minibatch of the CPU trainer (train/trainer.c). Part 0 runs on the
 * calling thread, parts 1..n-1 on the pool's helpers, so a pool of 1 thread has no helper and
 * costs nothing. Synchronised by one mutex and two condition variables (no lock-free code). */
#ifndef AZ_BASE_POOL_H
#define AZ_BASE_POOL_H

#include <stdint.h>

struct az_pool;

/* The function a job runs: part in [0, threads), arg as given to az_pool_run(). */
typedef void (*az_pool_fn)(void *arg, uint32_t part);

/* A pool of `threads` threads in all (the caller plus threads - 1 helpers, started now and
 * asleep between jobs); threads 1..AZ_POOL_THREADS_MAX. Returns 0, -EINVAL, or -errno of
 * pthread_create / -ENOMEM (nothing is left running). */
#define AZ_POOL_THREADS_MAX 64
int az_pool_create(uint32_t threads, struct az_pool **out);

/* Stop and join the helpers, free the pool. NULL: no-op. */
void az_pool_destroy(struct az_pool *p);

/* Threads in the pool (1 for NULL). */
uint32_t az_pool_threads(const struct az_pool *p);

/* Run fn(arg, k) for every k in [0, threads): k = 0 on the calling thread, the others on the
 * helpers; returns when all have returned (their writes are then visible to the caller: the
 * mutex orders them). One job at a time: the pool is not reentrant and not for two callers. */
void az_pool_run(struct az_pool *p, az_pool_fn fn, void *arg);

/* CPUs this process may run on (sched_getaffinity: a taskset or cgroup cpuset counts), at
 * least 1. */
uint32_t az_cpus_available(void);

#endif
