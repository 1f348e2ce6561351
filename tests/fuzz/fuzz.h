/* SPDX-License-Identifier: MIT */
/* What every fuzz target shares: the libFuzzer entry points (also called by the corpus driver in
 * the ordinary build), the verdict of the last input, and checks on error messages. */
#ifndef AZ_TESTS_FUZZ_H
#define AZ_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/az_assert.h"

/* libFuzzer's entry points. Initialize runs once before the first input; TestOneInput runs one
 * input, aborts (AZ_ASSERT) when an invariant of the code under test breaks, and returns 0. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Set by TestOneInput: 1 when the code under test accepted the input, 0 when it rejected it
 * with an error. The corpus driver checks it against the file name (ok-* / bad-*). */
extern int az_fuzz_verdict;

/* An error message is one non-empty line of printable text (what the tools print after their
 * name and what bad-input tests grep). */
static inline int az_fuzz_one_line(const char *msg)
{
	if (!msg || !msg[0])
		return 0;
	for (const char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

/* Weaker: non-empty and no line break. For messages that quote user input verbatim (azrun's
 * "unknown option '%s'"), where a control byte in an argument is echoed as it is. */
static inline int az_fuzz_no_newline(const char *msg)
{
	return msg && msg[0] && !strchr(msg, '\n');
}

/* Temporary directory of this process (created on first use under $AZ_FUZZ_TMPDIR or /dev/shm,
 * removed with its contents at exit). */
const char *az_fuzz_tmpdir(void);
/* Path of `name` inside the temporary directory (static storage per name slot, up to 8). */
const char *az_fuzz_tmpfile(const char *name);
/* Replace the temporary file `path` with data[size]. Aborts on I/O errors (not under test). */
void az_fuzz_write_file(const char *path, const void *data, size_t size);

#endif
