/* SPDX-License-Identifier: MIT */
/* Corpus driver: runs a fuzz target's LLVMFuzzerTestOneInput over every file of its corpus
 * directory (AZ_FUZZ_CORPUS) in the ordinary build. The target aborts on a broken invariant;
 * files named ok-* must be accepted and bad-* rejected, the rest (seeds, crash-* regressions)
 * must only run clean. AZ_FUZZ_VERBOSE=1 prints each file name before running it. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/fuzz/fuzz.h"
#include "tests/test_util.h"

#ifndef AZ_FUZZ_CORPUS
#error "AZ_FUZZ_CORPUS (the corpus directory) must be defined"
#endif

static void test_corpus(void **state)
{
	int argc = 1, files = 0, ok = 0, bad = 0;
	char *args[] = {"corpus_test", NULL}, **argv = args, path[1024];
	DIR *d = opendir(AZ_FUZZ_CORPUS);
	struct dirent *e;

	assert_non_null(d);
	assert_int_equal(LLVMFuzzerInitialize(&argc, &argv), 0);
	while ((e = readdir(d))) {
		uint8_t *data;
		size_t size;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", AZ_FUZZ_CORPUS, e->d_name);
		data = az_test_read_file(path, &size);
		if (getenv("AZ_FUZZ_VERBOSE")) /* names the input before a crash */
			fprintf(stderr, "%s\n", path);
		az_fuzz_verdict = -1;
		assert_int_equal(LLVMFuzzerTestOneInput(data, size), 0);
		free(data);
		files++;
		if (!strncmp(e->d_name, "ok-", 3)) {
			if (az_fuzz_verdict != 1)
				fail_msg("%s: expected to be accepted", e->d_name);
			ok++;
		} else if (!strncmp(e->d_name, "bad-", 4)) {
			if (az_fuzz_verdict != 0)
				fail_msg("%s: expected to be rejected", e->d_name);
			bad++;
		}
	}
	closedir(d);
	print_message("%s: %d files, %d accepted as expected, %d rejected as expected\n",
		      AZ_FUZZ_CORPUS, files, ok, bad);
	assert_true(ok >= 1 && bad >= 1);
}

AZ_TEST_MAIN(cmocka_unit_test(test_corpus))
