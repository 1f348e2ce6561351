/* SPDX-License-Identifier: MIT */
/* Error messages for callers: libraries never print; they format into a caller-supplied buffer
 * (the Redis anet convention), which may be NULL. */
#ifndef AZ_ERR_H
#define AZ_ERR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* printf into err[errlen] when err is non-NULL and errlen > 0 (truncating). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void az_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

#endif
