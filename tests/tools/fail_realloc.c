/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim for test_faults.sh: in processes named "az-worker-*", realloc of
 * AZ_TEST_FAIL_REALLOC bytes or more fails (ENOMEM), as when a search tree cannot grow. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

void *realloc(void *p, size_t n)
{
	static void *(*real)(void *, size_t);
	if (!real)
		real = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	const char *lim = getenv("AZ_TEST_FAIL_REALLOC");
	char name[16] = {0};
	if (lim && n >= strtoull(lim, NULL, 10) && prctl(PR_GET_NAME, name) == 0 &&
	    strncmp(name, "az-worker", 9) == 0) {
		errno = ENOMEM;
		return NULL;
	}
	return real(p, n);
}
