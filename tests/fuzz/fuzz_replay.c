/* SPDX-License-Identifier: MIT */
/* Fuzz target: the replay segment reader (az_replay_load_file). Byte 0 of an input chooses the
 * geometry the caller expects (bits 0-1: tic-tac-toe 18x9, Connect Four 84x7, 1x1, 3x2), whether
 * the file is cut to what was kept (bit 2) and whether it is loaded twice into the same buffer
 * (bit 3); the rest is the segment file. Accepted: exactly the records a reference model keeps
 * (whole games with good checksums, wherever they are in the file), the file left holding
 * those alone when asked. Rejected: -EINVAL with one printable line, the file untouched. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Reference model of the loader (train/replay.h) for a file whose header is valid, in two
 * passes: first each whole record gets its game (a game ends after a good record flagged
 * AZ_REPLAY_LAST; a good record of index 0 after a bad one in the same game starts the next),
 * then the records of the games that end and hold no bad record are kept. Their indices go to
 * kept[] (room for every record); returns how many. */
static size_t expected_records(const uint8_t *file, size_t size, size_t rec, size_t *kept)
{
	size_t nrec = (size - HEADER_BYTES) / rec, games = 0, n = 0;
	size_t *game = malloc((nrec + 1) * sizeof(*game));
	uint8_t *bad = calloc(nrec + 1, 1), *ended = calloc(nrec + 1, 1);

	AZ_ASSERT(game && bad && ended);
	for (size_t i = 0; i < nrec; i++) {
		const uint8_t *r = file + HEADER_BYTES + i * rec;
		uint32_t info = get_u32(r + rec - 8);
		int good = get_u32(r + rec - 4) == (uint32_t)crc32(0L, r, (uInt)(rec - 4));
		if (good && (info & 0xffffu) == 0 && bad[games])
			games++;
		game[i] = games;
		bad[games] |= !good;
		if (good && (info & AZ_REPLAY_LAST))
			ended[games++] = 1;
	}
	for (size_t i = 0; i < nrec; i++)
		if (ended[game[i]] && !bad[game[i]])
			kept[n++] = i;
	free(game);
	free(bad);
	free(ended);
	return n;
}

/* Record i of the buffer must be the bytes of record kept[i] of the file. */
static void check_records(const struct az_replay_buf *b, size_t first, const uint8_t *file,
			  const size_t *kept, size_t n, size_t rec)
{
	size_t fx = (size_t)b->features * 4, fp = (size_t)b->actions * 4;

	for (size_t i = 0; i < n; i++) {
		const uint8_t *r = file + HEADER_BYTES + kept[i] * rec;
		AZ_ASSERT(memcmp(b->x + (first + i) * b->features, r, fx) == 0);
		AZ_ASSERT(memcmp(b->pi + (first + i) * b->actions, r + fx, fp) == 0);
		AZ_ASSERT(memcmp(b->z + first + i, r + fx + fp, 4) == 0);
	}
}

/* The file as a load that cuts should leave it: the header, then the kept records. */
static uint8_t *cut_file(const uint8_t *file, const size_t *kept, size_t n, size_t rec)
{
	uint8_t *cut = malloc(HEADER_BYTES + n * rec + 1);

	AZ_ASSERT(cut);
	memcpy(cut, file, HEADER_BYTES);
	for (size_t i = 0; i < n; i++)
		memcpy(cut + HEADER_BYTES + i * rec, file + HEADER_BYTES + kept[i] * rec, rec);
	return cut;
}

/* The file at path holds exactly data[size]. */
static void check_file(const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = malloc(size + 1);

	AZ_ASSERT(f && buf);
	AZ_ASSERT(fread(buf, 1, size + 1, f) == size && memcmp(buf, data, size) == 0);
	fclose(f);
	free(buf);
}

/* Load the file (data[size] on disk) once into b. When it is accepted and cut, *cut gets what it
 * must now hold (malloc'd; the caller frees it) and its size *cut_size. */
static long load_once(struct az_replay_buf *b, int truncate, const uint8_t *file, size_t size,
		      uint8_t **cut, size_t *cut_size)
{
	size_t dropped = (size_t)-1, rec, before = b->count, *kept;
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
	kept = malloc(((size - HEADER_BYTES) / rec + 1) * sizeof(*kept));
	AZ_ASSERT(kept);
	AZ_ASSERT((size_t)n == expected_records(file, size, rec, kept));
	AZ_ASSERT(b->count == before + (size_t)n);
	AZ_ASSERT(dropped <= size - HEADER_BYTES);
	AZ_ASSERT(size - dropped == HEADER_BYTES + (size_t)n * rec);
	check_records(b, before, file, kept, (size_t)n, rec);
	AZ_ASSERT(stat(path, &st) == 0);
	AZ_ASSERT((size_t)st.st_size == (truncate ? size - dropped : size));
	if (truncate) {
		*cut = cut_file(file, kept, (size_t)n, rec);
		*cut_size = size - dropped;
		check_file(*cut, *cut_size);
	}
	free(kept);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct az_replay_buf b;
	uint8_t *cut = NULL;
	size_t cut_size = 0;
	int sel, truncate;
	long n;

	if (size < 1)
		return 0;
	sel = data[0];
	truncate = (sel >> 2) & 1;
	az_fuzz_write_file(path, data + 1, size - 1);
	az_replay_buf_init(&b, geometry[sel & 3][0], geometry[sel & 3][1]);
	n = load_once(&b, truncate, data + 1, size - 1, &cut, &cut_size);
	if (n >= 0 && (sel & 8)) {
		/* The second load sees the file as the first one left it (cut when truncating):
		 * when it was cut, the same records again with nothing more to drop. */
		size_t kept = b.count, again_size = truncate ? cut_size : size - 1;
		uint8_t *again = NULL;
		AZ_ASSERT(load_once(&b, truncate, truncate ? cut : data + 1, again_size, &again,
				    &again_size) == n);
		AZ_ASSERT(b.count == 2 * kept);
		free(again);
	}
	az_fuzz_verdict = n >= 0;
	free(cut);
	az_replay_buf_free(&b);
	return 0;
}
