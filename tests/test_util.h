/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka tests: a scratch directory per test, whole-file read/write that
 * fail the test (cmocka asserts) on any I/O error, and main(). Include after <cmocka.h>. */
#ifndef AZ_TEST_UTIL_H
#define AZ_TEST_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Create a fresh directory from template tmpl ("/tmp/az-x-XXXXXX") into dir[0..len), and, when
 * name is not NULL, put "<dir>/<name>" into path[0..plen). Returns 0, or -1 when mkdtemp fails
 * (a cmocka setup function's failure value). */
static inline int az_test_tmpdir_make(char *dir, size_t len, const char *tmpl, char *path,
				      size_t plen, const char *name)
{
	snprintf(dir, len, "%s", tmpl);
	if (!mkdtemp(dir))
		return -1;
	if (name)
		snprintf(path, plen, "%s/%s", dir, name);
	return 0;
}

/* Remove dir and the plain files in it (one level: the tests make no subdirectories). */
static inline void az_test_tmpdir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];

	if (d) {
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
				unlink(p);
			}
		}
		closedir(d);
	}
	rmdir(dir);
}

/* A test file's scratch directory: defines static char dir[64] and the cmocka fixtures
 * make_dir() (az_test_tmpdir_make from template tmpl) and remove_dir() (az_test_tmpdir_remove).
 * Use once per file, at file scope, for a directory per test or per group. */
#define AZ_TEST_DIR_FIXTURE(tmpl)                                                  \
	static char dir[64];                                                       \
	static int make_dir(void **state)                                          \
	{                                                                          \
		(void)state;                                                       \
		return az_test_tmpdir_make(dir, sizeof(dir), tmpl, NULL, 0, NULL); \
	}                                                                          \
	static int remove_dir(void **state)                                        \
	{                                                                          \
		(void)state;                                                       \
		az_test_tmpdir_remove(dir);                                        \
		return 0;                                                          \
	}

/* AZ_TEST_DIR_FIXTURE and a file in it: also defines static char path[128], "<dir>/<name>", and
 * the cmocka fixtures setup() (make_dir(), then path) and teardown() (remove_dir()). */
#define AZ_TEST_TMPDIR_FIXTURE(tmpl, name)                        \
	AZ_TEST_DIR_FIXTURE(tmpl)                                 \
	static char path[128];                                    \
	static int setup(void **state)                            \
	{                                                         \
		if (make_dir(state))                              \
			return -1;                                \
		snprintf(path, sizeof(path), "%s/%s", dir, name); \
		return 0;                                         \
	}                                                         \
	static int teardown(void **state)                         \
	{                                                         \
		return remove_dir(state);                         \
	}

/* A cmocka test entry for the file's main(): test f between the setup() and teardown() of
 * AZ_TEST_TMPDIR_FIXTURE, so in a fresh scratch directory of its own. */
#define AZ_TEST_IN_TMPDIR(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

/* Pin the cpu backend to exact fp32 products (AZ_CPU_GEMM=fp32: the AVX-512 kernels, else
 * OpenBLAS) for a test that compares its answers with a reference to 1e-4 or closer: on a CPU
 * with AMX tiles, or an AMD one with AVX512_BF16, the automatic choice is bf16 weights, about
 * 1 % from fp32, which tests/gpu/test_cpu_packed.c bounds. An AZ_CPU_GEMM already set (ctest's *_blas runs) wins. */
static inline void az_test_fp32_kernels(void)
{
	setenv("AZ_CPU_GEMM", "fp32", 0);
}

/* A test file's main(): runs the tests given (cmocka_unit_test(...) entries, in that order) as
 * one cmocka group named "tests", without group fixtures; exits with the number of tests that
 * failed. Use once per file, at its end, for a group that needs no group setup or teardown and
 * whose list fits in a few lines (a long one reads better as main() with one test a line). */
#define AZ_TEST_MAIN(...)                                         \
	int main(void)                                            \
	{                                                         \
		const struct CMUnitTest tests[] = {__VA_ARGS__};  \
		return cmocka_run_group_tests(tests, NULL, NULL); \
	}

/* The whole of file p in a malloc'ed buffer with one spare byte (the caller frees it); its
 * length in *len. Fails the test when p cannot be read. */
static inline unsigned char *az_test_read_file(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	unsigned char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* Replace file p with buf[0..len). Fails the test on any error. */
static inline void az_test_write_file(const char *p, const void *buf, size_t len)
{
	FILE *f = fopen(p, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

#endif
