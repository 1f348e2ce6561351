/* SPDX-License-Identifier: MIT */
/* Fuzz target: the replay segment reader (az_replay_load_file). Byte 0 of an input chooses the
 * geometry the caller expects (bits 0-1: tic-tac-toe 18x9, Connect Four 84x7, 1x1, 3x2), whether
 * the torn tail is truncated (bit 2) and whether the file is loaded twice into the same buffer
 * (bit 3); the rest is the segment file. Accepted: exactly the records a reference model keeps
 * (checksummed prefix, whole games), the file cut to them when asked. Rejected: -EINVAL with
 * one printable line, the file untouched. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "tests/fuzz/fuzz.h"
#include "train/replay.h"

#define HEADER_BYTES 32

int az_fuzz_verdict;

static const uint32_t geometry[4][2] = {{18, 9}, {84, 7}, {1, 1}, {3, 2}};
static const char *path;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	path = az_fuzz_tmpfile("seg.rpl");
	return 0;
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Reference model of the loader (train/replay.h) for a file whose header is valid: records
 * with a good checksum from the start, cut after the last one flagged AZ_REPLAY_LAST (whole
 * games only). Returns how many records that keeps. */
static size_t expected_records(const uint8_t *file, size_t size, size_t rec)
{
	size_t n = 0, whole = 0;

	for (size_t off = HEADER_BYTES; off + rec <= size; off += rec, n++) {
		const uint8_t *r = file + off;
		if (get_u32(r + rec - 4) != (uint32_t)crc32(0L, r, (uInt)(rec - 4)))
			break;
		if (get_u32(r + rec - 8) & AZ_REPLAY_LAST)
			whole = n + 1;
	}
	return whole;
}

/* Record i of the buffer must be the bytes of record i of the file. */
static void check_records(const struct az_replay_buf *b, size_t first, const uint8_t *file,
			  size_t n, size_t rec)
{
	size_t fx = (size_t)b->features * 4, fp = (size_t)b->actions * 4;

	for (size_t i = 0; i < n; i++) {
		const uint8_t *r = file + HEADER_BYTES + i * rec;
		AZ_ASSERT(memcmp(b->x + (first + i) * b->features, r, fx) == 0);
		AZ_ASSERT(memcmp(b->pi + (first + i) * b->actions, r + fx, fp) == 0);
		AZ_ASSERT(memcmp(b->z + first + i, r + fx + fp, 4) == 0);
	}
}

static long load_once(struct az_replay_buf *b, int truncate, const uint8_t *file, size_t size)
{
	size_t dropped = (size_t)-1, rec, before = b->count;
	struct stat st;
	char err[512];
	long n;

	memset(err, 'x', sizeof(err));
	err[sizeof(err) - 1] = '\0';
	n = az_replay_load_file(path, b, truncate, &dropped, err, sizeof(err));
	if (n < 0) {
		AZ_ASSERT(n == -EINVAL);
		AZ_ASSERT(b->count == before);
		AZ_ASSERT(stat(path, &st) == 0 && (size_t)st.st_size == size); /* untouched */
		if (!az_fuzz_one_line(err) || strncmp(err, "replay ", 7) != 0) {
			fprintf(stderr, "bad error message: \"%.200s\"\n", err);
			AZ_ASSERT(!"one printable line naming the replay file");
		}
		return n;
	}
	/* Accepted: the header is valid, so its record size is the geometry's. */
	AZ_ASSERT(size >= HEADER_BYTES);
	rec = get_u32(file + 16);
	AZ_ASSERT(rec >= ((size_t)b->features + b->actions + 1) * 4 + 4);
	AZ_ASSERT((size_t)n == expected_records(file, size, rec));
	AZ_ASSERT(b->count == before + (size_t)n);
	AZ_ASSERT(dropped <= size - HEADER_BYTES);
	AZ_ASSERT(size - dropped == HEADER_BYTES + (size_t)n * rec);
	check_records(b, before, file, (size_t)n, rec);
	AZ_ASSERT(stat(path, &st) == 0);
	AZ_ASSERT((size_t)st.st_size == (truncate ? size - dropped : size));
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct az_replay_buf b;
	const uint8_t *file;
	size_t fsize;
	int sel, truncate;
	long n;

	if (size < 1)
		return 0;
	file = data + 1;
	fsize = size - 1;
	sel = data[0];
	truncate = (sel >> 2) & 1;
	az_fuzz_write_file(path, file, fsize);
	az_replay_buf_init(&b, geometry[sel & 3][0], geometry[sel & 3][1]);
	n = load_once(&b, truncate, file, fsize);
	if (n >= 0 && (sel & 8)) {
		/* The second load sees the file as the first one left it (cut when truncating). */
		size_t kept = b.count;
		if (truncate)
			fsize = HEADER_BYTES + kept * get_u32(file + 16);
		AZ_ASSERT(load_once(&b, truncate, file, fsize) == n);
		AZ_ASSERT(b.count == 2 * kept);
	}
	az_fuzz_verdict = n >= 0;
	az_replay_buf_free(&b);
	return 0;
}
