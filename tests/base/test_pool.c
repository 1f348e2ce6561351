/* SPDX-License-Identifier: MIT */
/* base/pool.h: every part of a job runs exactly once, part 0 on the caller and the others on
 * distinct helper threads; a part's writes are visible when az_pool_run returns; thousands of
 * jobs back to back (a lost wake-up hangs, a missed "done" reads a stale sum: ThreadSanitizer
 * runs this as a stress test); bad sizes are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "base/pool.h"
#include "tests/test_util.h"

enum { MAXT = 8, JOBS = 20000 };

struct job {
	uint32_t round;
	uint32_t ran[MAXT];  /* times each part ran in this job */
	uint64_t sum[MAXT];  /* each part's running total over the rounds */
	pthread_t who[MAXT]; /* the thread that ran each part */
};

static void part(void *arg, uint32_t k)
{
	struct job *j = arg;

	j->ran[k]++;
	j->sum[k] += (uint64_t)j->round * (k + 1);
	j->who[k] = pthread_self();
}

static void test_parts_once_each(void **state)
{
	(void)state;
	for (uint32_t T = 1; T <= MAXT; T++) {
		struct az_pool *p = NULL;
		struct job j;

		assert_int_equal(az_pool_create(T, &p), 0);
		assert_int_equal(az_pool_threads(p), T);
		memset(&j, 0, sizeof(j));
		az_pool_run(p, part, &j);
		for (uint32_t k = 0; k < MAXT; k++)
			assert_int_equal(j.ran[k], k < T ? 1 : 0);
		assert_true(pthread_equal(j.who[0], pthread_self()));
		for (uint32_t a = 1; a < T; a++) {
			assert_false(pthread_equal(j.who[a], pthread_self()));
			for (uint32_t b = a + 1; b < T; b++)
				assert_false(pthread_equal(j.who[a], j.who[b]));
		}
		az_pool_destroy(p);
	}
}

/* Many short jobs: each reads what the previous one wrote (the sums), so a helper still running
 * the last job, or a job started before the last ended, shows as a wrong total or a data race. */
static void test_many_jobs(void **state)
{
	(void)state;
	uint32_t T = 4;
	struct az_pool *p = NULL;
	struct job j;

	assert_int_equal(az_pool_create(T, &p), 0);
	memset(&j, 0, sizeof(j));
	for (uint32_t r = 1; r <= JOBS; r++) {
		j.round = r;
		az_pool_run(p, part, &j);
		for (uint32_t k = 0; k < T; k++)
			assert_int_equal(j.ran[k], r);
	}
	uint64_t total = (uint64_t)JOBS * (JOBS + 1) / 2;

	for (uint32_t k = 0; k < T; k++)
		assert_true(j.sum[k] == total * (k + 1));
	az_pool_destroy(p);
}

static void test_limits(void **state)
{
	(void)state;
	struct az_pool *p = NULL;
	struct job j;

	assert_int_equal(az_pool_create(0, &p), -EINVAL);
	assert_int_equal(az_pool_create(AZ_POOL_THREADS_MAX + 1, &p), -EINVAL);
	assert_int_equal(az_pool_create(2, NULL), -EINVAL);
	assert_null(p);
	/* no pool: part 0 alone, on the caller */
	memset(&j, 0, sizeof(j));
	az_pool_run(NULL, part, &j);
	assert_int_equal(j.ran[0], 1);
	assert_int_equal(j.ran[1], 0);
	assert_int_equal(az_pool_threads(NULL), 1);
	az_pool_destroy(NULL);
	assert_true(az_cpus_available() >= 1);
}

AZ_TEST_MAIN(cmocka_unit_test(test_parts_once_each), cmocka_unit_test(test_many_jobs),
	     cmocka_unit_test(test_limits))
