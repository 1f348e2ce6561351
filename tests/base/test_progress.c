/* SPDX-License-Identifier: MIT */
/* base/util.h: the progress bar's text (label with the iteration, fill, count, elapsed, ETA),
 * durations, game results in words and the machine's cache folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/util.h"
#include "tests/test_util.h"

static void test_bar_text(void **state)
{
	(void)state;
	struct az_progress p;
	char line[256];
	az_progress_begin(&p, "iter 3/10 selfplay", 12, 1);
	az_progress_format(&p, 6, "games, 812 evals/s", 4.0, line, sizeof(line));
	assert_string_equal(line, "iter 3/10 selfplay [############------------] 6/12 games, "
				  "812 evals/s  4.0s, eta 4.0s");
	/* Nothing done: no ETA yet; past the total: full bar, no negative ETA. */
	az_progress_format(&p, 0, NULL, 1.0, line, sizeof(line));
	assert_string_equal(line, "iter 3/10 selfplay [------------------------] 0/12  1.0s, "
				  "eta ?");
	az_progress_format(&p, 15, "steps", 90.0, line, sizeof(line));
	assert_string_equal(line, "iter 3/10 selfplay [########################] 15/12 steps  "
				  "1m30s, eta 0.0s");
	/* A long label is cut to the struct's size, never overflowing. */
	az_progress_begin(&p, "a label that is much longer than forty-seven characters in all",
			  0, 1);
	assert_int_equal(strlen(p.label), sizeof(p.label) - 1);
	assert_int_equal(p.total, 1);
}

static void test_duration(void **state)
{
	(void)state;
	char b[32];
	az_format_duration(4.25, b, sizeof(b));
	assert_string_equal(b, "4.2s");
	az_format_duration(187, b, sizeof(b));
	assert_string_equal(b, "3m07s");
	az_format_duration(7500, b, sizeof(b));
	assert_string_equal(b, "2h05m");
	az_format_duration(-1, b, sizeof(b));
	assert_string_equal(b, "?");
	az_format_duration(NAN, b, sizeof(b));
	assert_string_equal(b, "?");
}

/* Game results in words: singular for exactly one ("1 loss"), plural otherwise ("0 losses"). */
static void test_wdl(void **state)
{
	char b[64];

	(void)state;
	assert_string_equal(az_format_wdl(1, 1, 1, b, sizeof(b)), "1 win, 1 draw, 1 loss");
	assert_string_equal(az_format_wdl(0, 2, 0, b, sizeof(b)), "0 wins, 2 draws, 0 losses");
	assert_string_equal(az_format_wdl(12, 0, 3, b, sizeof(b)), "12 wins, 0 draws, 3 losses");
}

/* The machine's cache folder: RINGZERO_CACHE_DIR, then XDG_CACHE_HOME, then HOME; none (never
 * /tmp) without them or with RINGZERO_CACHE_DIR=none; a path too long for the buffer refused. */
static void test_cache_dir(void **state)
{
	char b[64];

	(void)state;
	setenv("RINGZERO_CACHE_DIR", "/r/z", 1);
	setenv("XDG_CACHE_HOME", "/x", 1);
	setenv("HOME", "/h", 1);
	assert_int_equal(az_cache_dir(b, sizeof(b)), 0);
	assert_string_equal(b, "/r/z");
	setenv("RINGZERO_CACHE_DIR", "", 1);
	assert_int_equal(az_cache_dir(b, sizeof(b)), 0);
	assert_string_equal(b, "/x/ringzero");
	unsetenv("XDG_CACHE_HOME");
	assert_int_equal(az_cache_dir(b, sizeof(b)), 0);
	assert_string_equal(b, "/h/.cache/ringzero");
	assert_int_equal(az_cache_dir(b, 8), -ENAMETOOLONG);
	unsetenv("HOME");
	assert_int_equal(az_cache_dir(b, sizeof(b)), -ENOENT);
	setenv("HOME", "/h", 1);
	setenv("RINGZERO_CACHE_DIR", "none", 1);
	assert_int_equal(az_cache_dir(b, sizeof(b)), -ENOENT);
}

/* --time-limit's durations: units h, m, s in order, each once; a bare number is seconds. */
static void test_parse_duration(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		double s;
	} ok[] = {{"90s", 90}, {"50m", 3000},  {"2h", 7200},     {"1h30m", 5400},
		  {"45", 45},  {"1h5s", 3605}, {"1h2m3s", 3723}, {"0h1s", 1}};
	static const char *const bad[] = {"",     "0",    "0s",        "5x",   "m",
					  "1m1h", "1h1h", "-5m",       "1.5h", "2h ",
					  " 2h",  "1s5",  "99999999h", "1h30", "2m5"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		double s = -1;
		assert_int_equal(az_parse_duration(ok[i].text, &s), 0);
		assert_true(s == ok[i].s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double s = -1;
		assert_int_equal(az_parse_duration(bad[i], &s), -EINVAL);
		assert_true(s == -1);
	}
}

AZ_TEST_MAIN(cmocka_unit_test(test_bar_text), cmocka_unit_test(test_duration),
	     cmocka_unit_test(test_parse_duration), cmocka_unit_test(test_wdl),
	     cmocka_unit_test(test_cache_dir))
