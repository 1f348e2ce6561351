/* SPDX-License-Identifier: MIT */
/* Unit tests of az_arena_leaves and az_tail_leaves (run/roles.h): the arena's leaves in flight
 * per game, and self-play's in the phase's tail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "run/roles.h"
#include "tests/test_util.h"

static struct az_worker_params params(uint32_t g, uint32_t k, uint32_t sims)
{
	return (struct az_worker_params){.games_per_worker = g, .leaves = k, .sims = sims};
}

/* Connect Four's defaults: G 128, K 2, 100 sims, 40 arena games over 2 workers = 20 each:
 * ceil(256 / 20) = 13, capped at 8 (and sims / 8 = 12). */
static void test_connect4_defaults(void **state)
{
	(void)state;
	struct az_worker_params wp = params(128, 2, 100);
	assert_int_equal(az_arena_leaves(&wp, 20), 8);
	/* few simulations: sims / 8 caps it */
	wp.sims = 40;
	assert_int_equal(az_arena_leaves(&wp, 20), 5);
}

/* Enough arena games per worker to fill its ring at K: K stays. */
static void test_many_games_keep_k(void **state)
{
	(void)state;
	struct az_worker_params wp = params(128, 2, 100);
	assert_int_equal(az_arena_leaves(&wp, 128), 2);
	assert_int_equal(az_arena_leaves(&wp, 100), 3); /* ceil(256 / 100) */
	/* never below K, even when the caps are lower */
	wp = params(4, 16, 16);
	assert_int_equal(az_arena_leaves(&wp, 1), 16);
	assert_int_equal(az_arena_leaves(&wp, 0), 16);
}

/* --arena-leaves K > 0 is taken as given. */
static void test_explicit(void **state)
{
	(void)state;
	struct az_worker_params wp = params(128, 2, 100);
	wp.arena_leaves = 3;
	assert_int_equal(az_arena_leaves(&wp, 20), 3);
	wp.arena_leaves = 64;
	assert_int_equal(az_arena_leaves(&wp, 20), 64);
}

/* Self-play's tail: K while every slot plays, then ceil(G*K / playing) up to min(8, sims/8). */
static void test_tail(void **state)
{
	(void)state;
	struct az_worker_params wp = params(128, 2, 100);
	assert_int_equal(az_tail_leaves(&wp, 100, 100), 2); /* all slots playing */
	assert_int_equal(az_tail_leaves(&wp, 100, 0), 2);
	assert_int_equal(az_tail_leaves(&wp, 100, 80), 3);  /* ceil(200 / 80) */
	assert_int_equal(az_tail_leaves(&wp, 100, 50), 4);
	assert_int_equal(az_tail_leaves(&wp, 100, 10), 8);  /* 20, capped at 8 */
	wp.sims = 40;
	assert_int_equal(az_tail_leaves(&wp, 100, 10), 5);  /* sims / 8 */
	wp.sims = 8;
	assert_int_equal(az_tail_leaves(&wp, 100, 10), 2);  /* cap 1 < K: K */
	/* an explicit cap; one at most K turns it off */
	wp = params(128, 2, 100);
	wp.tail_leaves = 16;
	assert_int_equal(az_tail_leaves(&wp, 100, 10), 16);
	wp.tail_leaves = 2;
	assert_int_equal(az_tail_leaves(&wp, 100, 10), 2);
	wp.tail_leaves = 1;
	assert_int_equal(az_tail_leaves(&wp, 100, 10), 2);
	/* --deterministic keeps K */
	wp = params(128, 2, 100);
	wp.lockstep = 1;
	assert_int_equal(az_tail_leaves(&wp, 100, 10), 2);
}

AZ_TEST_MAIN(cmocka_unit_test(test_connect4_defaults), cmocka_unit_test(test_many_games_keep_k),
	     cmocka_unit_test(test_explicit), cmocka_unit_test(test_tail))
