/* SPDX-License-Identifier: MIT */
/* The game registry (games/registry.c): lookup by name and alias, the list of names, and the
 * descriptors' contents (defaults, options) that azrun and the tools rely on. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "games/game.h"
#include "games/tangled/tangled.h"
#include "tests/test_util.h"

static void test_find(void **unused)
{
	(void)unused;
	assert_ptr_equal(az_game_find("tictactoe"), &az_game_tictactoe);
	assert_ptr_equal(az_game_find("ttt"), &az_game_tictactoe);
	assert_ptr_equal(az_game_find("connect4"), &az_game_connect4);
	assert_ptr_equal(az_game_find("c4"), &az_game_connect4);
	assert_null(az_game_find("chess"));
	assert_null(az_game_find(NULL));
	/* known, but configured at run time */
	assert_ptr_equal(az_game_desc_find("tangled"), &az_game_desc_tangled);
	assert_null(az_game_find("tangled"));
	assert_ptr_equal(az_game_desc_find("ttt"), &az_game_desc_tictactoe);
	assert_null(az_game_desc_find(NULL));
}

/* az_game_names() lists every registered game, in registry order, comma-separated: derived
 * from the registry here too, so that adding a game needs no change to this test. */
static void test_names(void **unused)
{
	char want[256] = "";
	size_t n = 0;

	(void)unused;
	for (size_t i = 0; az_game_registry[i]; i++) {
		n += (size_t)snprintf(want + n, sizeof(want) - n, "%s%s", i ? "," : "",
				      az_game_registry[i]->name);
		assert_ptr_equal(az_game_desc_find(az_game_registry[i]->name), az_game_registry[i]);
	}
	assert_true(n > 0 && n < sizeof(want));
	assert_string_equal(az_game_names(), want);
}

/* Every descriptor: a name, sane defaults, options within the limits. */
static void test_descriptors(void **unused)
{
	uint32_t total = 0;

	(void)unused;
	for (size_t i = 0; az_game_registry[i]; i++) {
		const struct az_game_desc *d = az_game_registry[i];
		assert_non_null(d->name);
		assert_true(d->game || d->configured);
		assert_true(d->defaults.iterations && d->defaults.sims && d->defaults.hidden);
		assert_true(d->defaults.lr > 0 && d->defaults.dir_alpha > 0);
		for (uint32_t k = 0; k < d->nopts; k++) {
			assert_non_null(d->opts[k].name);
			assert_non_null(d->opts[k].def);
			assert_true(d->opts[k].type != AZ_GAME_OPT_STR ||
				    d->opts[k].size <= AZ_GAME_OPT_LEN);
		}
		total += d->nopts;
	}
	assert_true(total <= AZ_GAME_OPTS_MAX);
}

static void test_tangled_options(void **unused)
{
	const struct az_game_desc *d = &az_game_desc_tangled;
	union az_game_opt_value v[AZ_TANGLED_OPTS];
	char err[256];

	(void)unused;
	for (int k = 0; k < AZ_TANGLED_OPTS; k++)
		az_game_opt_default(&d->opts[k], &v[k]);
	assert_int_equal(v[AZ_TANGLED_OPT_GRAPH].u32, 3);
	assert_string_equal(v[AZ_TANGLED_OPT_VARIANT].str, "free");
	assert_true(v[AZ_TANGLED_OPT_EPSILON].f32 == 0.5f);
	assert_string_equal(d->opts[AZ_TANGLED_OPT_GRAPH_FILE].name, "graph-file");
	assert_true(d->opts[AZ_TANGLED_OPT_GRAPH].lo == 1 && d->opts[AZ_TANGLED_OPT_GRAPH].hi == 1000);
	/* the checks at configure time: setup's own, with a prefix, and the variant */
	v[AZ_TANGLED_OPT_GRAPH].u32 = 13;
	assert_int_equal(d->configure(v, 1, err, sizeof(err)), -EINVAL);
	assert_memory_equal(err, "tangled: ", 9);
	v[AZ_TANGLED_OPT_GRAPH].u32 = 2;
	snprintf(v[AZ_TANGLED_OPT_VARIANT].str, 8, "odd");
	assert_int_equal(d->configure(v, 1, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--variant: free or fixed, not 'odd'");
	snprintf(v[AZ_TANGLED_OPT_VARIANT].str, 8, "free");
	assert_int_equal(d->configure(v, 1, err, sizeof(err)), 0);
	assert_non_null(az_game_find("tangled"));
	assert_string_equal(az_game_side_name(az_game_find("tangled"), 0), "Red");
	d->record(v, err, sizeof(err));
	assert_string_equal(err, "graph=2;variant=free");
}

AZ_TEST_MAIN(cmocka_unit_test(test_find), cmocka_unit_test(test_names),
	     cmocka_unit_test(test_descriptors), cmocka_unit_test(test_tangled_options))
