/* SPDX-License-Identifier: MIT */
/* base/util.h: az_fp_flush_denormals. Before it, a product below FLT_MIN is a denormal (IEEE
 * gradual underflow) and a denormal operand keeps its value; after it, both are zero (FTZ and
 * DAZ), in this thread and in a child forked after it, and normal arithmetic is unchanged.
 * Skipped where the platform has no such mode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

static volatile float tiny = 1e-20f, denormal = 1e-40f, one = 1.0f, three = 3.0f;

static void test_flush(void **state)
{
	(void)state;
	/* IEEE default: gradual underflow */
	assert_true(tiny * tiny > 0.0f && tiny * tiny < FLT_MIN);
	assert_true(denormal * one > 0.0f);
	if (!az_fp_flush_denormals())
		skip();
	assert_true(tiny * tiny == 0.0f);    /* FTZ: a denormal result is zero */
	assert_true(denormal * one == 0.0f); /* DAZ: a denormal operand reads as zero */
	assert_true(one / three > 0.333333f && one / three < 0.333334f);
	assert_true(FLT_MIN * one == FLT_MIN); /* the smallest normal is untouched */
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(tiny * tiny == 0.0f && denormal * one == 0.0f ? 0 : 1);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* the child inherits it */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flush),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
