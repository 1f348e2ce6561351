/* SPDX-License-Identifier: MIT */
/* Unit tests of the watchdog rule (run/watchdog.h): the floor, the learned timeout, the
 * intervals that are not learned, the allowance, and one report per stall. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "run/watchdog.h"
#include "tests/test_util.h"

/* Beats every 0.1 s: the timeout stays at the floor; a stop past it is reported once. */
static void test_floor_and_once(void **state)
{
	(void)state;
	struct az_wd_kind k = {.name = "worker", .floor_s = 3.0};
	struct az_wd_watch w;
	double t = 100.0, idle;
	az_wd_watch_start(&w, 7, t);
	uint64_t beat = 7;
	for (int i = 0; i < 50; i++) {
		t += 0.1;
		assert_int_equal(az_wd_check(&k, &w, ++beat, t, 0, &idle), 0);
		assert_true(idle == 0.0);
	}
	assert_true(az_wd_timeout(&k) == 3.0); /* 8 x 0.1 s is below the floor */
	assert_int_equal(az_wd_check(&k, &w, beat, t + 2.9, 0, NULL), 0);
	assert_int_equal(az_wd_check(&k, &w, beat, t + 3.1, 0, &idle), 1);
	assert_true(idle > 3.0);
	assert_int_equal(az_wd_check(&k, &w, beat, t + 10, 0, NULL), 0); /* reported once */
	az_wd_watch_start(&w, beat, t + 10); /* restarted: watched again */
	assert_int_equal(az_wd_check(&k, &w, beat, t + 13.5, 0, NULL), 1);
}

/* The timeout follows the longest interval seen (x AZ_WD_MULT) in any process of the kind; the
 * first interval after a start is not learned. */
static void test_learned(void **state)
{
	(void)state;
	struct az_wd_kind k = {.name = "inference process", .floor_s = 1.0};
	struct az_wd_watch a, b;
	az_wd_watch_start(&a, 0, 0.0);
	az_wd_watch_start(&b, 0, 0.0);
	assert_int_equal(az_wd_check(&k, &a, 1, 5.0, 0, NULL), 0); /* start-up: not learned */
	assert_true(k.gap_max == 0.0);
	assert_int_equal(az_wd_check(&k, &a, 2, 5.5, 0, NULL), 0);
	assert_true(k.gap_max == 0.5);
	assert_true(az_wd_timeout(&k) == 4.0);
	/* b learns from its own second interval into the same kind */
	assert_int_equal(az_wd_check(&k, &b, 1, 1.0, 0, NULL), 0);
	assert_int_equal(az_wd_check(&k, &b, 2, 3.0, 0, NULL), 0);
	assert_true(k.gap_max == 2.0);
	assert_true(az_wd_timeout(&k) == 16.0);
	assert_int_equal(az_wd_check(&k, &a, 2, 21.0, 0, NULL), 0);
	assert_int_equal(az_wd_check(&k, &a, 2, 21.6, 0, NULL), 1);
}

/* An allowance (a model load) extends the timeout; the supervisor's own absence (shift) is not
 * counted against the process. */
static void test_allowance_and_shift(void **state)
{
	(void)state;
	struct az_wd_kind k = {.name = "trainer", .floor_s = 2.0};
	struct az_wd_watch w;
	az_wd_watch_start(&w, 0, 0.0);
	assert_int_equal(az_wd_check(&k, &w, 0, 5.0, 4.0, NULL), 0);
	assert_int_equal(az_wd_check(&k, &w, 0, 6.5, 4.0, NULL), 1);
	az_wd_watch_start(&w, 0, 10.0);
	az_wd_watch_shift(&w, 30.0); /* the supervisor was away 30 s */
	assert_int_equal(az_wd_check(&k, &w, 0, 41.0, 0, NULL), 0);
	assert_int_equal(az_wd_check(&k, &w, 1, 41.5, 0, NULL), 0);
	assert_true(k.gap_max == 0.0); /* first interval: not learned */
}

AZ_TEST_MAIN(cmocka_unit_test(test_floor_and_once), cmocka_unit_test(test_learned),
	     cmocka_unit_test(test_allowance_and_shift))
