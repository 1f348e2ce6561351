/* SPDX-License-Identifier: MIT */
/* Unit tests of the cpu backend's kernel choice (gpu/cpu_gemm.h): AZ_CPU_GEMM's values against
 * what this CPU runs, the backend's message for each, and auto's table (az_cpu_gemm_auto()). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu/backend.h"
#include "gpu/cpu_packed.h"
#include "gpu/cpu_packed_impl.h"
#include "tests/gpu/gpu_test_util.h"

/* 1 on an AMD CPU (AZ_CPU_GEMM=auto takes bf16 there, not on Intel). */
static int is_amd(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	return __builtin_cpu_is("amd");
#else
	return 0;
#endif
}

/* AZ_CPU_GEMM: "blas" and "fp32" always work, "avx512" and "bf16" only where the CPU has them,
 * anything else is refused, by az_cpu_gemm_select() and by the backend with a message naming
 * the variable. */
static void test_select(void **state)
{
	const struct az_arch a = {.inputs = 9, .hidden = 16, .blocks = 1, .actions = 9};
	enum az_cpu_gemm kind = AZ_CPU_GEMM_AVX512;
	struct az_backend *be = NULL;
	int avx = have_avx512();
	char why[256];

	(void)state;
	setenv("AZ_CPU_GEMM", "blas", 1);
	assert_int_equal(az_cpu_gemm_select(&kind), 0);
	assert_int_equal(kind, AZ_CPU_GEMM_BLAS);
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &a, 4, &be, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "OpenBLAS"));
	az_backend_destroy(be);

	setenv("AZ_CPU_GEMM", "avx512", 1);
	assert_int_equal(az_cpu_gemm_select(&kind), avx ? 0 : -ENOTSUP);
	assert_int_equal(kind, AZ_CPU_GEMM_AVX512);

	setenv("AZ_CPU_GEMM", "bf16", 1);
	int bf16 = az_cpu_gemm_select(&kind) == 0;

	assert_int_equal(kind, AZ_CPU_GEMM_BF16);
	assert_true(!bf16 || avx); /* AVX512_BF16 without AVX-512F is refused */
	if (bf16) {
		assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &a, 4, &be, why, sizeof(why)),
				 0);
		assert_non_null(strstr(why, "bf16"));
		az_backend_destroy(be);
		be = NULL;
	} else {
		assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &a, 4, &be, why, sizeof(why)),
				 -ENOTSUP);
		assert_non_null(strstr(why, "AVX512_BF16"));
	}
	assert_true(az_cpu_gemm_packed(AZ_CPU_GEMM_BF16) &&
		    az_cpu_gemm_packed(AZ_CPU_GEMM_AVX512) && az_cpu_gemm_packed(AZ_CPU_GEMM_AMX) &&
		    !az_cpu_gemm_packed(AZ_CPU_GEMM_BLAS));

	/* amx: only where the tiles run (and never chosen by auto) */
	setenv("AZ_CPU_GEMM", "amx", 1);
	int amx = az_cpu_gemm_select(&kind) == 0;

	assert_int_equal(kind, AZ_CPU_GEMM_AMX);
	assert_int_equal(amx, az_amx_usable() && bf16);
	be = NULL;
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &a, 4, &be, why, sizeof(why)),
			 amx ? 0 : -ENOTSUP);
	assert_non_null(strstr(why, amx ? "AMX tiles" : "AZ_CPU_GEMM=amx"));
	az_backend_destroy(be);
	be = NULL;

	setenv("AZ_CPU_GEMM", "sse9", 1);
	assert_int_equal(az_cpu_gemm_select(&kind), -EINVAL);
	be = NULL;
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &a, 4, &be, why, sizeof(why)), -EINVAL);
	assert_null(be);
	assert_non_null(strstr(why, "AZ_CPU_GEMM"));

	/* auto: amx where the tiles run, bf16 on an AMD CPU that has it, else the fastest fp32
	 * path (az_cpu_gemm_auto(), checked case by case in test_auto); fp32: never bf16 */
	setenv("AZ_CPU_GEMM", "auto", 1);
	assert_int_equal(az_cpu_gemm_select(&kind), 0);
	assert_int_equal(kind, amx              ? AZ_CPU_GEMM_AMX :
			       bf16 && is_amd() ? AZ_CPU_GEMM_BF16 :
			       avx              ? AZ_CPU_GEMM_AVX512 :
						  AZ_CPU_GEMM_BLAS);
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &a, 4, &be, why, sizeof(why)), 0);
	assert_non_null(strstr(why, amx ? "AMX tiles" : avx ? "AVX-512" : "OpenBLAS"));
	assert_true(!strstr(why, "bf16") == (kind != AZ_CPU_GEMM_AMX && kind != AZ_CPU_GEMM_BF16));
	az_backend_destroy(be);
	setenv("AZ_CPU_GEMM", "fp32", 1);
	assert_int_equal(az_cpu_gemm_select(&kind), 0);
	assert_int_equal(kind, avx ? AZ_CPU_GEMM_AVX512 : AZ_CPU_GEMM_BLAS);
	unsetenv("AZ_CPU_GEMM");
	assert_string_equal(az_cpu_gemm_name(AZ_CPU_GEMM_AVX512), "avx512");
	assert_string_equal(az_cpu_gemm_name(AZ_CPU_GEMM_BLAS), "blas");
	assert_string_equal(az_cpu_gemm_name(AZ_CPU_GEMM_BF16), "bf16");
	assert_string_equal(az_cpu_gemm_name(AZ_CPU_GEMM_AMX), "amx");
}

/* AZ_CPU_GEMM=auto's table (az_cpu_gemm_auto(avx512, bf16, amx, amd)): the tiles first
 * wherever they run, bf16 only on AMD, fp32 AVX-512 on Intel without the tiles, OpenBLAS
 * without AVX-512. */
static void test_auto(void **state)
{
	(void)state;
	assert_int_equal(az_cpu_gemm_auto(1, 1, 1, 0), AZ_CPU_GEMM_AMX);
	assert_int_equal(az_cpu_gemm_auto(1, 1, 1, 1), AZ_CPU_GEMM_AMX);
	assert_int_equal(az_cpu_gemm_auto(1, 1, 0, 1), AZ_CPU_GEMM_BF16);
	assert_int_equal(az_cpu_gemm_auto(1, 1, 0, 0), AZ_CPU_GEMM_AVX512);
	assert_int_equal(az_cpu_gemm_auto(1, 0, 0, 1), AZ_CPU_GEMM_AVX512);
	assert_int_equal(az_cpu_gemm_auto(1, 0, 0, 0), AZ_CPU_GEMM_AVX512);
	assert_int_equal(az_cpu_gemm_auto(0, 0, 0, 1), AZ_CPU_GEMM_BLAS);
	assert_int_equal(az_cpu_gemm_auto(0, 0, 0, 0), AZ_CPU_GEMM_BLAS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select),
		cmocka_unit_test(test_auto),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
