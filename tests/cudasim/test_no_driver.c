/* SPDX-License-Identifier: MIT */
/* The CUDA build on a machine without the NVIDIA driver (the cudasim double with
 * AZ_CUDASIM_DRIVER=none, which answers cudaGetDeviceCount as the CUDA runtime does there:
 * "driver version is insufficient", error 35, and cudaDriverGetVersion as 0): az_cuda_unavailable()
 * says that no driver is loaded, --backend auto falls back to the cpu backend with that reason,
 * and --backend cuda is refused with it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpu/backend.h"

static void test_no_driver(void **state)
{
	const struct az_arch a = {.inputs = 18, .hidden = 8, .blocks = 1, .actions = 9};
	const int module = access("/proc/driver/nvidia/version", F_OK) == 0;
	const char *want =
		module ? "CUDA driver version is insufficient" : "no NVIDIA driver loaded";
	struct az_backend *b = NULL;
	char why[256];

	(void)state;
	assert_int_equal(az_cuda_available(), 0);
	assert_non_null(az_cuda_unavailable());
	assert_non_null(strstr(az_cuda_unavailable(), want));
	assert_non_null(strstr(az_cuda_unavailable(), "error 35"));
	assert_int_equal(az_backend_create(AZ_BACKEND_AUTO, &a, 8, &b, why, sizeof(why)), 0);
	assert_string_equal(az_backend_name(b), "cpu");
	assert_non_null(strstr(why, "cpu: CUDA not usable here ("));
	assert_non_null(strstr(why, want));
	az_backend_destroy(b);
	b = NULL;
	assert_int_equal(az_backend_create(AZ_BACKEND_CUDA, &a, 8, &b, why, sizeof(why)), -ENODEV);
	assert_null(b);
	assert_non_null(strstr(why, want));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_driver),
	};

	setenv("AZ_CUDASIM_DRIVER", "none", 1); /* before the first probe, which is cached */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
