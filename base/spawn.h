/* SPDX-License-Identifier: MIT */
/* Running an external program (gnuplot, python3) and waiting for it: the one place outside the
 * run library that forks, for the tools' helpers. */
#ifndef AZ_BASE_SPAWN_H
#define AZ_BASE_SPAWN_H

#include <stddef.h>

struct az_spawn_opts {
	const char *cwd;       /* directory to run in; NULL: the current one */
	const char *log_path;  /* stdout and stderr go to this file (truncated); NULL: inherited */
	char *capture;         /* or: stdout and stderr captured here, NUL-terminated ... */
	size_t capture_len;    /* ... at most capture_len - 1 bytes (the rest is discarded) */
	double timeout_s;      /* kill (SIGKILL) after this many seconds; <= 0: wait forever */
	const char *const *env; /* "NAME=VALUE" strings set in the child, NULL-terminated; or NULL */
};

/* Run argv (argv[0] searched in PATH unless it contains a '/') and wait for it. Returns its
 * exit status (0-255; 127: it could not be executed), 128 + the signal that killed it, or
 * -errno (-ETIMEDOUT when it was killed after timeout_s). */
int az_spawn_wait(char *const argv[], const struct az_spawn_opts *o);

/* The first executable regular file "DIR/name" over the directories of $PATH (/usr/bin:/bin
 * when unset) into out[0..len). Returns 0, or -ENOENT when there is none. */
int az_spawn_find(const char *name, char *out, size_t len);

#endif
