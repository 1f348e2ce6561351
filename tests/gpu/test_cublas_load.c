/* SPDX-License-Identifier: MIT */
/* cuBLAS is opened on first use, not linked (gpu/cuda_blas.cu): a process that never asks for it
 * does not map it, and az_cublas_load() finds it. Needs the library, not a device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gpu/cuda_kernels.h"
#include "tests/test_util.h"

/* 1 when /proc/self/maps names a file whose name contains `what`. */
static int mapped(const char *what)
{
	char line[512];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

static void test_loaded_on_first_use(void **state)
{
	(void)state;
	assert_false(mapped("libcublas")); /* linked, it would be mapped before main */
	assert_int_equal(az_cublas_load(), 0);
	assert_true(mapped("libcublas.so"));
	assert_true(mapped("libcublasLt.so"));
	assert_int_equal(az_cublas_load(), 0); /* once: the second call only reports */
}

AZ_TEST_MAIN(cmocka_unit_test(test_loaded_on_first_use))
