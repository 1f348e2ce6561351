/* SPDX-License-Identifier: MIT */
/* run/rundir.h and run/supervise.h pieces that need no processes: metrics.jsonl never loses a
 * line, temporary-file names, the sliding-window restart budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "run/rundir.h"
#include "run/supervise.h"
#include "tests/test_util.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	return az_test_tmpdir_make(dir, sizeof(dir), "/tmp/az-rundir-XXXXXX", NULL, 0, NULL);
}

static int teardown(void **state)
{
	char p[AZ_RUNDIR_PATH_MAX];
	(void)state;
	az_rundir_path(p, sizeof(p), dir, AZ_RUNDIR_METRICS);
	unlink(p);
	return rmdir(dir);
}

static void write_metrics(const char *text)
{
	char p[AZ_RUNDIR_PATH_MAX], err[256];
	az_rundir_path(p, sizeof(p), dir, AZ_RUNDIR_METRICS);
	assert_int_equal(az_write_file_atomic(p, text, strlen(text), err, sizeof(err)), 0);
}

static char *read_metrics(void)
{
	char p[AZ_RUNDIR_PATH_MAX], *t = NULL;
	az_rundir_path(p, sizeof(p), dir, AZ_RUNDIR_METRICS);
	assert_int_equal(az_read_file(p, &t, NULL), 0);
	return t;
}

/* Appending keeps every earlier line verbatim and drops only lines after `keep`. */
static void test_metrics_append(void **state)
{
	char err[256];
	(void)state;
	write_metrics("{\"iteration\": 1, \"x\": 1}\n{\"iteration\": 2, \"x\": 2}\n"
		      "{\"iteration\": 3, \"x\": 3}\n");
	assert_int_equal(az_rundir_metrics_commit(dir, 2, "{\"iteration\": 3, \"x\": 9}", err,
						  sizeof(err)), 0);
	char *t = read_metrics(), want[256] = "{\"iteration\": 3, \"x\": 9}";
	/* the new line sealed (its crc32), the legacy lines kept as they were */
	assert_true(az_rundir_seal(want, sizeof(want)) > 0);
	assert_non_null(strstr(want, "\"crc32\": \""));
	size_t head = strlen("{\"iteration\": 1, \"x\": 1}\n{\"iteration\": 2, \"x\": 2}\n");
	assert_memory_equal(t, "{\"iteration\": 1, \"x\": 1}\n{\"iteration\": 2, \"x\": 2}\n",
			    head);
	assert_string_equal(t + head, want);
	free(t);
}

/* Issue 23: every single-bit flip of a sealed state.json is refused or reads the same state;
 * a legacy file (no crc32) still loads. */
static void test_state_flips(void **state)
{
	char p[AZ_RUNDIR_PATH_MAX], err[512], *text = NULL;
	size_t len = 0;
	struct az_rundir_state st = {.completed = 7, .best_iteration = 3}, back;
	int legacy = -1;
	long refused = 0, same = 0;
	(void)state;
	az_rundir_path(p, sizeof(p), dir, AZ_RUNDIR_STATE);
	assert_int_equal(az_rundir_state_save(dir, &st, err, sizeof(err)), 0);
	assert_int_equal(az_read_file(p, &text, &len), 0);
	assert_int_equal(az_rundir_state_load(dir, &back, &legacy, err, sizeof(err)), 0);
	assert_int_equal(back.completed, 7);
	assert_int_equal(legacy, 0);
	for (size_t i = 0; i < len; i++)
		for (int b = 0; b < 8; b++) {
			text[i] ^= (char)(1 << b);
			assert_int_equal(az_write_file_atomic(p, text, len, err, sizeof(err)), 0);
			int rc = az_rundir_state_load(dir, &back, NULL, err, sizeof(err));
			if (rc == 0 && (back.completed != 7 || back.best_iteration != 3))
				fail_msg("flip of bit %d of byte %zu reads %u/%u", b, i,
					 back.completed, back.best_iteration);
			if (rc < 0)
				assert_non_null(strstr(err, "state.json"));
			rc < 0 ? refused++ : same++;
			text[i] ^= (char)(1 << b);
		}
	assert_int_equal(refused + same, (long)len * 8);
	free(text);
	static const char old[] = "{\"completed\": 2, \"best_iteration\": 1}\n";
	assert_int_equal(az_write_file_atomic(p, old, strlen(old), err, sizeof(err)), 0);
	assert_int_equal(az_rundir_state_load(dir, &back, &legacy, err, sizeof(err)), 0);
	assert_int_equal(back.completed, 2);
	assert_int_equal(legacy, 1);
	/* beside a sealed metrics.jsonl the same file is an edit, not legacy: refused */
	char m[AZ_RUNDIR_PATH_MAX];
	az_rundir_path(m, sizeof(m), dir, AZ_RUNDIR_METRICS);
	assert_int_equal(az_rundir_metrics_commit(dir, 0, "{\"iteration\": 1}", err, sizeof(err)),
			 0);
	assert_int_equal(az_rundir_state_load(dir, &back, &legacy, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "state.json is damaged (it has no crc32"));
	assert_int_equal(back.completed, 0);
	unlink(m);
	unlink(p);
}

/* Issue 23: every single-bit flip of a sealed metrics line is refused (digits included). */
static void test_metrics_line_flips(void **state)
{
	char line[512] = "{\"iteration\": 2, \"games\": 200, \"positions\": 1234, "
			 "\"policy_loss\": 1.51151, \"promoted\": true, \"time\": 1796174226.125}";
	long it = -1;
	(void)state;
	assert_int_equal(az_rundir_metrics_line(line, strlen(line), &it), 1); /* legacy */
	assert_int_equal(it, 2);
	int n = az_rundir_seal(line, sizeof(line));
	assert_true(n > 0);
	size_t len = (size_t)n - 1; /* without its newline */
	assert_int_equal(az_rundir_metrics_line(line, len, &it), 0);
	for (size_t i = 0; i < len; i++)
		for (int b = 0; b < 8; b++) {
			line[i] ^= (char)(1 << b);
			if (az_rundir_metrics_line(line, len, &it) >= 0)
				fail_msg("flip of bit %d of byte %zu (%c) accepted", b, i, line[i]);
			line[i] ^= (char)(1 << b);
		}
}

/* A line that does not parse (a diverged run's "-nan", a torn or garbage line) is never
 * silently dropped: the commit fails naming it, and the file is unchanged. */
static void test_metrics_keeps_bad_lines(void **state)
{
	static const char *const bad[] = {
		"{\"iteration\": 1, \"loss\": -nan}\n{\"iteration\": 2}\n",
		"{\"iteration\": 1}\n{\"iteration\": 2, \"lo\n",
		"{\"iteration\": 1}\ngarbage\n",
	};
	char err[256];
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_metrics(bad[i]);
		err[0] = 0;
		assert_int_equal(az_rundir_metrics_commit(dir, 5, "{\"iteration\": 3}", err,
							  sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "line "));
		char *t = read_metrics();
		assert_string_equal(t, bad[i]);
		free(t);
	}
}

static void test_temp_names(void **state)
{
	(void)state;
	assert_true(az_rundir_is_temp("iter-0001.safetensors.tmp.1234"));
	assert_true(az_rundir_is_temp("state.json.tmp.7"));
	assert_true(az_rundir_is_temp("iter-0001-w00.rpl.tmp"));
	assert_false(az_rundir_is_temp("iter-0001.safetensors"));
	assert_false(az_rundir_is_temp("tmp"));
	assert_false(az_rundir_is_temp(""));
}

/* At most max restarts in any window: crashes spread out never exhaust it; a burst does. */
static void test_restart_budget(void **state)
{
	(void)state;
	struct az_sv_budget b = {.max = 3, .window_s = 10};
	assert_true(az_sv_budget_take(&b, 0));
	assert_true(az_sv_budget_take(&b, 1));
	assert_true(az_sv_budget_take(&b, 2));
	assert_false(az_sv_budget_take(&b, 3)); /* 4 in 10 s */
	assert_false(az_sv_budget_take(&b, 9.5));
	assert_true(az_sv_budget_take(&b, 10.5)); /* the one at 0 left the window */
	for (int day = 1; day < 1000; day++) /* one a day, for years */
		assert_true(az_sv_budget_take(&b, 86400.0 * day));
	struct az_sv_budget life = {.max = 2, .window_s = 0};
	assert_true(az_sv_budget_take(&life, 0));
	assert_true(az_sv_budget_take(&life, 1e6));
	assert_false(az_sv_budget_take(&life, 1e9)); /* no window: 2 for the life of the run */
	struct az_sv_budget none = {.max = 0, .window_s = 10};
	assert_false(az_sv_budget_take(&none, 0));
}

AZ_TEST_MAIN(cmocka_unit_test_setup_teardown(test_metrics_append, setup, teardown),
	     cmocka_unit_test_setup_teardown(test_metrics_keeps_bad_lines, setup, teardown),
	     cmocka_unit_test(test_temp_names), cmocka_unit_test(test_restart_budget),
	     cmocka_unit_test_setup_teardown(test_state_flips, setup, teardown),
	     cmocka_unit_test(test_metrics_line_flips))
