/* SPDX-License-Identifier: MIT */
/* Always-on invariant checks shared by every module (the GGML_ASSERT stance). */
#ifndef AZ_ASSERT_H
#define AZ_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

/* AZ_ASSERT: a broken invariant is a bug; abort with file and line, in every build type. */
#define AZ_ASSERT(cond)                                                                    \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                    \
			abort();                                                           \
		}                                                                          \
	} while (0)

/* AZ_DEBUG_ASSERT: expensive checks, compiled out when NDEBUG is set. */
#ifdef NDEBUG
#define AZ_DEBUG_ASSERT(cond) ((void)0)
#else
#define AZ_DEBUG_ASSERT(cond) AZ_ASSERT(cond)
#endif

#define AZ_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
