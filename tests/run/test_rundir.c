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
	char *t = read_metrics();
	assert_string_equal(t, "{\"iteration\": 1, \"x\": 1}\n{\"iteration\": 2, \"x\": 2}\n"
			       "{\"iteration\": 3, \"x\": 9}\n");
	free(t);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_metrics_append, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metrics_keeps_bad_lines, setup, teardown),
		cmocka_unit_test(test_temp_names), cmocka_unit_test(test_restart_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
