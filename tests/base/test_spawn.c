/* SPDX-License-Identifier: MIT */
/* base/spawn.h: exit status, captured output, log file and directory, environment, timeout. */
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

#include "base/spawn.h"
#include "base/util.h"
#include "tests/test_util.h"

static void test_exit_status_and_capture(void **state)
{
	(void)state;
	char out[64];
	char *ok[] = {"sh", "-c", "echo hello; echo err >&2; exit 3", NULL};
	struct az_spawn_opts o = {.capture = out, .capture_len = sizeof(out)};
	assert_int_equal(az_spawn_wait(ok, &o), 3);
	assert_string_equal(out, "hello\nerr\n");
	/* Truncated to capture_len - 1 bytes, still NUL-terminated. */
	char small[4];
	o = (struct az_spawn_opts){.capture = small, .capture_len = sizeof(small)};
	assert_int_equal(az_spawn_wait(ok, &o), 3);
	assert_string_equal(small, "hel");
	char *missing[] = {"/nonexistent/az-no-such-program", NULL};
	assert_int_equal(az_spawn_wait(missing, NULL), 127);
	char *killed[] = {"sh", "-c", "kill -9 $$", NULL};
	assert_int_equal(az_spawn_wait(killed, NULL), 128 + 9);
}

static void test_log_cwd_env(void **state)
{
	(void)state;
	char dir[] = "/tmp/az-spawn-XXXXXX";
	assert_non_null(mkdtemp(dir));
	static const char *const env[] = {"AZ_SPAWN_TEST=42", NULL};
	char *argv[] = {"sh", "-c", "pwd; echo $AZ_SPAWN_TEST", NULL};
	struct az_spawn_opts o = {.cwd = dir, .log_path = "log.txt", .env = env};
	assert_int_equal(az_spawn_wait(argv, &o), 0);
	char path[128], *text = NULL;
	snprintf(path, sizeof(path), "%s/log.txt", dir);
	assert_int_equal(az_read_file(path, &text, NULL), 0);
	char want[128];
	snprintf(want, sizeof(want), "%s\n42\n", dir);
	assert_string_equal(text, want);
	free(text);
	unlink(path);
	rmdir(dir);
}

static void test_timeout(void **state)
{
	(void)state;
	char out[16];
	char *argv[] = {"sleep", "30", NULL};
	double t0 = az_now();
	struct az_spawn_opts o = {.capture = out, .capture_len = sizeof(out), .timeout_s = 0.2};
	assert_int_equal(az_spawn_wait(argv, &o), -ETIMEDOUT);
	o = (struct az_spawn_opts){.timeout_s = 0.2};
	assert_int_equal(az_spawn_wait(argv, &o), -ETIMEDOUT);
	assert_true(az_now() - t0 < 20); /* killed, not waited for */
}

AZ_TEST_MAIN(cmocka_unit_test(test_exit_status_and_capture), cmocka_unit_test(test_log_cwd_env),
	     cmocka_unit_test(test_timeout))
