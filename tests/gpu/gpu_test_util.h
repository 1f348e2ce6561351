/* SPDX-License-Identifier: MIT */
/* Helpers shared by the gpu-labelled tests (header-only, included after <cmocka.h>): random
 * arrays, NaN poison, device buffers whose every call is checked, and tolerance comparisons that
 * fail on NaN (the poison left in an element nobody wrote). */
#ifndef AZ_GPU_TEST_UTIL_H
#define AZ_GPU_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/backend.h"
#include "gpu/cpu_gemm.h"
#include "net/model.h"
#include "tests/gpu/cpu_backend_ref.h"
#include "base/rng.h"

/* First step of a gpu-labelled test's main(): exit 77 (ctest: Skipped) when no CUDA device is
 * visible, so that CPU-only machines stay green. */
static inline void skip_without_cuda(void)
{
	if (!az_cuda_available()) {
		fprintf(stderr, "no CUDA device: skipped\n");
		exit(77);
	}
}

/* 1 when AZ_CPU_GEMM=value selects kind on this CPU (the environment restored to unset). */
static inline int selects(const char *value, enum az_cpu_gemm kind)
{
	enum az_cpu_gemm got;
	int ok;

	setenv("AZ_CPU_GEMM", value, 1);
	ok = az_cpu_gemm_select(&got) == 0 && got == kind;
	unsetenv("AZ_CPU_GEMM");
	return ok;
}

/* 1 when this CPU runs the AVX-512 kernel (AZ_CPU_GEMM=fp32 picks it). */
static inline int have_avx512(void)
{
	return selects("fp32", AZ_CPU_GEMM_AVX512);
}

/* Uniform in [lo, hi). */
static inline void fill_uniform(float *p, size_t n, struct az_rng *rng, double lo, double hi)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (float)(lo + (hi - lo) * az_rng_uniform(rng));
}

/* All bytes 0xff: a quiet NaN in every float and double. */
static inline void poison(void *p, size_t bytes)
{
	memset(p, 0xff, bytes);
}

static inline void *xmalloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);

	assert_non_null(p);
	return p;
}

/* free() each of n host buffers. FREE_ALL(a, b, ...) frees its arguments. */
static inline void free_each(void *const *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i]);
}
#define FREE_ALL(...) \
	free_each((void *[]){ __VA_ARGS__ }, sizeof((void *[]){ __VA_ARGS__ }) / sizeof(void *))

/* With AZ_TEST_ERRORS set (tools/gpu-check.sh sets it), one line per comparison on stdout (after
 * cmocka's "[ RUN ]" line of the test, in the same stream): the error measured against its
 * tolerance, so a run on a device reports the parity's magnitudes and not only pass or fail. */
static inline void report_error(const char *what, const char *measure, size_t n, double err,
				double tol)
{
	if (getenv("AZ_TEST_ERRORS"))
		printf("parity-error %s: %s %.3g (tol %.3g, n %zu)\n", what, measure, err, tol, n);
}

/* got within tol * max(1, |want|) of want, element by element; NaN fails. */
static inline void check_close_tol(const float *got, const float *want, size_t n, double tol,
				   const char *what)
{
	double worst = 0.0;

	for (size_t i = 0; i < n; i++) {
		double s = fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0;
		double d = fabs((double)got[i] - want[i]);

		if (!(d <= tol * s))
			fail_msg("%s[%zu]: gpu %.9g cpu %.9g (tol %.3g)", what, i, got[i], want[i],
				 tol * s);
		worst = fmax(worst, d / s);
	}
	report_error(what, "max rel", n, worst, tol);
}

/* Normwise relative error ||got - want|| / max(||want||, sqrt(n)) (2-norms; the floor makes it an
 * absolute error for entries below 1) at most tol; NaN fails. The measure for the tensor-core
 * GEMM modes, whose per-element errors scatter (an emulation of bf16 inputs on the test nets
 * gives ~4e-3 normwise where single elements reach 1e-2). */
static inline void check_norm_rel(const float *got, const float *want, size_t n, double tol,
				  const char *what)
{
	double num = 0.0, den = 0.0;

	for (size_t i = 0; i < n; i++) {
		double d = (double)got[i] - want[i];

		num += d * d;
		den += (double)want[i] * want[i];
	}
	double rel = sqrt(num) / fmax(sqrt(den), sqrt((double)n));

	if (!(rel <= tol))
		fail_msg("%s: normwise relative error %.3g > %.3g", what, rel, tol);
	report_error(what, "normwise", n, rel, tol);
}

static inline void check_close_f64(const double *got, const double *want, size_t n, double tol,
				   const char *what)
{
	for (size_t i = 0; i < n; i++) {
		double t = tol * (fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0);

		if (!(fabs(got[i] - want[i]) <= t))
			fail_msg("%s[%zu]: gpu %.17g cpu %.17g", what, i, got[i], want[i]);
	}
}

/* Random weights and biases (biases nonzero so a dropped bias shows). */
static inline struct az_model *random_model(const struct az_arch *a, uint64_t seed)
{
	struct az_model *m = NULL;
	struct az_rng rng;

	assert_int_equal(az_model_create(a, &m), 0);
	az_rng_seed(&rng, seed);
	for (uint32_t i = 0; i < az_model_tensor_count(a); i++) {
		struct az_tensor t;

		assert_int_equal(az_model_tensor(a, i, &t), 0);
		double std = t.ndim >= 2 ? 1.0 / sqrt((double)t.cols) : 0.3;

		for (size_t k = 0; k < (size_t)t.rows * t.cols; k++)
			m->params[t.offset + k] = (float)(std * az_rng_normal(&rng));
	}
	return m;
}

#ifdef AZ_GPU_TEST_DEVICE
#include "gpu/cuda_kernels.h"

/* Device copy of host memory. */
static inline void *dev_from(const void *host, size_t bytes)
{
	void *d = NULL;

	assert_int_equal(az_cuda_dev_alloc(&d, bytes), 0);
	assert_int_equal(az_cuda_copy(d, host, bytes), 0);
	return d;
}

/* Device buffer filled with NaN. */
static inline void *dev_poisoned(size_t bytes)
{
	void *d = NULL;

	assert_int_equal(az_cuda_dev_alloc(&d, bytes), 0);
	assert_int_equal(az_cuda_memset(d, 0xff, bytes), 0);
	return d;
}

/* Wait for the device (and surface any kernel fault), then copy to the host. */
static inline void dev_to(void *host, const void *d, size_t bytes)
{
	assert_int_equal(az_cuda_sync(), 0);
	assert_int_equal(az_cuda_copy(host, d, bytes), 0);
}

/* az_cuda_dev_free() each of n device buffers; DEV_FREE_ALL(a, b, ...) frees its arguments. */
static inline void dev_free_each(void *const *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		az_cuda_dev_free(d[i]);
}
#define DEV_FREE_ALL(...) \
	dev_free_each((void *[]){ __VA_ARGS__ }, sizeof((void *[]){ __VA_ARGS__ }) / sizeof(void *))

/* dev_to() n floats of d into got (scratch of n floats), then check_close_tol() against want. */
static inline void check_dev(float *got, const float *d, const float *want, size_t n, double tol,
			     const char *what)
{
	dev_to(got, d, n * sizeof(float));
	check_close_tol(got, want, n, tol, what);
}
#endif

#endif
