/* SPDX-License-Identifier: MIT */
/* Unit tests of az_arena_leaves and az_tail_leaves (run/roles.h): the arena's leaves in flight
 * per game, and self-play's in the phase's tail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/az_assert.h"
#include "run/roles.h"
#include "tests/test_util.h"

/* The tests, each a group of the cases below. */
enum group { DEFAULTS, MANY_GAMES, EXPLICIT, TAIL };

/* One call: the worker's G, K and sims, its explicit cap (--arena-leaves in the arena groups,
 * --tail-leaves in TAIL; 0: none) and --deterministic; the arena's games per worker, or the
 * tail's games and games still playing; the leaves expected. */
struct leaves_case {
	enum group group;
	uint32_t g, k, sims, cap;
	int lockstep;
	uint32_t games, playing;
	uint32_t want;
	const char *why;
};

static const struct leaves_case cases[] = {
	/* Connect Four's defaults: G 128, K 2, 100 sims, 40 arena games over 2 workers = 20
	 * each: ceil(256 / 20) = 13, capped at 8 (and sims / 8 = 12). */
	{DEFAULTS, 128, 2, 100, 0, 0, 20, 0, 8, "connect4's defaults"},
	{DEFAULTS, 128, 2, 40, 0, 0, 20, 0, 5, "few simulations: sims / 8 caps it"},
	/* Enough arena games per worker to fill its ring at K: K stays. */
	{MANY_GAMES, 128, 2, 100, 0, 0, 128, 0, 2, "G games fill the ring"},
	{MANY_GAMES, 128, 2, 100, 0, 0, 100, 0, 3, "ceil(256 / 100)"},
	{MANY_GAMES, 4, 16, 16, 0, 0, 1, 0, 16, "never below K, even when the caps are lower"},
	{MANY_GAMES, 4, 16, 16, 0, 0, 0, 0, 16, "never below K, no games"},
	/* --arena-leaves K > 0 is taken as given. */
	{EXPLICIT, 128, 2, 100, 3, 0, 20, 0, 3, "--arena-leaves 3"},
	{EXPLICIT, 128, 2, 100, 64, 0, 20, 0, 64, "--arena-leaves 64"},
	/* Self-play's tail: K while every slot plays, then ceil(G*K / playing) up to
	 * min(8, sims/8). */
	{TAIL, 128, 2, 100, 0, 0, 100, 100, 2, "all slots playing"},
	{TAIL, 128, 2, 100, 0, 0, 100, 0, 2, "none playing"},
	{TAIL, 128, 2, 100, 0, 0, 100, 80, 3, "ceil(200 / 80)"},
	{TAIL, 128, 2, 100, 0, 0, 100, 50, 4, "ceil(200 / 50)"},
	{TAIL, 128, 2, 100, 0, 0, 100, 10, 8, "20, capped at 8"},
	{TAIL, 128, 2, 40, 0, 0, 100, 10, 5, "sims / 8"},
	{TAIL, 128, 2, 8, 0, 0, 100, 10, 2, "cap 1 < K: K"},
	/* an explicit cap; one at most K turns it off */
	{TAIL, 128, 2, 100, 16, 0, 100, 10, 16, "--tail-leaves 16"},
	{TAIL, 128, 2, 100, 2, 0, 100, 10, 2, "--tail-leaves 2 = K"},
	{TAIL, 128, 2, 100, 1, 0, 100, 10, 2, "--tail-leaves 1 < K"},
	{TAIL, 128, 2, 100, 0, 1, 100, 10, 2, "--deterministic keeps K"},
};

/* Every case of group *state, in the table's order. */
static void check_group(void **state)
{
	const enum group group = *(const enum group *)*state;

	for (size_t i = 0; i < AZ_ARRAY_LEN(cases); i++) {
		const struct leaves_case *c = &cases[i];
		struct az_worker_params wp = {.games_per_worker = c->g,
					      .leaves = c->k,
					      .sims = c->sims,
					      .lockstep = c->lockstep};
		uint32_t got;

		if (c->group != group)
			continue;
		if (group == TAIL) {
			wp.tail_leaves = c->cap;
			got = az_tail_leaves(&wp, c->games, c->playing);
		} else {
			wp.arena_leaves = c->cap;
			got = az_arena_leaves(&wp, c->games);
		}
		if (got != c->want)
			fail_msg("case %zu (%s): %u leaves, want %u", i, c->why, got, c->want);
	}
}

static enum group group_of[] = {DEFAULTS, MANY_GAMES, EXPLICIT, TAIL};

/* One test a group, named as when each was a function of its own. */
AZ_TEST_MAIN({"test_connect4_defaults", check_group, NULL, NULL, &group_of[DEFAULTS]},
	     {"test_many_games_keep_k", check_group, NULL, NULL, &group_of[MANY_GAMES]},
	     {"test_explicit", check_group, NULL, NULL, &group_of[EXPLICIT]},
	     {"test_tail", check_group, NULL, NULL, &group_of[TAIL]})
