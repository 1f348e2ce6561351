/* SPDX-License-Identifier: MIT */
/* Replay store: exact round trip through the io_uring writer, torn and corrupt tails, header and
 * geometry checks, O_EXCL, back-pressure when every staging buffer is in flight, and a failing
 * disk (RLIMIT_FSIZE) leaving only whole games behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/rng.h"
#include "base/util.h"
#include "tests/test_util.h"
#include "train/replay.h"

#define HDR 32

AZ_TEST_TMPDIR_FIXTURE("/tmp/az-replay-XXXXXX", "seg-000.azr")

/* Everything that was written, to compare the load against. */
struct expect {
	uint32_t D, A;
	size_t count, cap;
	float *x, *pi, *z;
	size_t ngames;
	size_t game_end[4096]; /* cumulative record count after each game */
};

static void expect_init(struct expect *e, uint32_t D, uint32_t A)
{
	memset(e, 0, sizeof(*e));
	e->D = D;
	e->A = A;
}

static void expect_free(struct expect *e)
{
	free(e->x);
	free(e->pi);
	free(e->z);
}

static size_t rec_bytes(const struct expect *e)
{
	return ((size_t)e->D + e->A + 1) * 4 + 8;
}

/* Records in the whole games among the first k written: the loader keeps only whole games. */
static size_t whole_games_upto(const struct expect *e, size_t k)
{
	size_t n = 0;

	for (size_t i = 0; i < e->ngames; i++)
		if (e->game_end[i] <= k)
			n = e->game_end[i];
	return n;
}

/* Make one game of n records with random contents, remember it, and append it. */
static int write_game(struct az_replay_writer *w, struct expect *e, struct az_rng *rng,
		      uint32_t n)
{
	size_t need = e->count + n;
	float *x, *pi, *z;
	int rc;

	if (need > e->cap) {
		e->cap = need * 2;
		e->x = realloc(e->x, e->cap * e->D * sizeof(float));
		e->pi = realloc(e->pi, e->cap * e->A * sizeof(float));
		e->z = realloc(e->z, e->cap * sizeof(float));
		assert_true(e->x && e->pi && e->z);
	}
	x = e->x + e->count * e->D;
	pi = e->pi + e->count * e->A;
	z = e->z + e->count;
	for (size_t i = 0; i < (size_t)n * e->D; i++)
		x[i] = (float)az_rng_normal(rng);
	for (size_t i = 0; i < (size_t)n * e->A; i++)
		pi[i] = (float)az_rng_uniform(rng);
	for (size_t i = 0; i < n; i++)
		z[i] = (float)az_rng_below(rng, 3) - 1.0f;
	rc = az_replay_writer_append(w, n, x, pi, z);
	if (rc == 0) {
		e->count += n;
		assert_true(e->ngames < sizeof(e->game_end) / sizeof(e->game_end[0]));
		e->game_end[e->ngames++] = e->count;
	}
	return rc;
}

/* Write `games` games of 0..max_len records each; returns the expected contents. */
static void write_segment(struct expect *e, uint32_t D, uint32_t A, int games, uint32_t max_len,
			  uint64_t seed)
{
	struct az_replay_writer *w = NULL;
	struct az_rng rng;
	char err[256] = "";

	expect_init(e, D, A);
	az_rng_seed(&rng, seed);
	assert_int_equal(az_replay_writer_open(path, D, A, &w, err, sizeof(err)), 0);
	for (int g = 0; g < games; g++)
		assert_int_equal(write_game(w, e, &rng, az_rng_below(&rng, max_len + 1)), 0);
	assert_int_equal(az_replay_writer_close(w), 0);
}

/* The first n records of b equal the first n written. */
static void check_prefix(const struct az_replay_buf *b, const struct expect *e, size_t n)
{
	assert_true(b->count >= n);
	assert_memory_equal(b->x, e->x, n * e->D * sizeof(float));
	assert_memory_equal(b->pi, e->pi, n * e->A * sizeof(float));
	assert_memory_equal(b->z, e->z, n * sizeof(float));
}

static off_t file_size(const char *p)
{
	struct stat st;

	assert_int_equal(stat(p, &st), 0);
	return st.st_size;
}

static void load_expect(struct expect *e, int truncate, long want, size_t want_dropped)
{
	struct az_replay_buf b;
	size_t dropped = 12345;
	char err[256] = "";

	az_replay_buf_init(&b, e->D, e->A);
	assert_int_equal(az_replay_load_file(path, &b, truncate, &dropped, err, sizeof(err)), want);
	assert_int_equal(b.count, (size_t)want);
	assert_int_equal(dropped, want_dropped);
	check_prefix(&b, e, (size_t)want);
	az_replay_buf_free(&b);
}

static void test_roundtrip(void **state)
{
	struct expect e;

	write_segment(&e, 10, 5, 60, 40, 1);
	assert_true(e.count > 500);
	assert_int_equal(file_size(path), HDR + (off_t)(e.count * rec_bytes(&e)));
	load_expect(&e, 0, (long)e.count, 0);
	expect_free(&e);
}

/* Loading appends to what the buffer already holds. */
static void test_load_appends(void **state)
{
	struct az_replay_buf b;
	struct expect e;

	write_segment(&e, 3, 2, 5, 10, 2);
	az_replay_buf_init(&b, 3, 2);
	assert_int_equal(az_replay_load_file(path, &b, 0, NULL, NULL, 0), (long)e.count);
	assert_int_equal(az_replay_load_file(path, &b, 0, NULL, NULL, 0), (long)e.count);
	assert_int_equal(b.count, 2 * e.count);
	assert_memory_equal(b.x + e.count * 3, e.x, e.count * 3 * sizeof(float));
	assert_memory_equal(b.z + e.count, e.z, e.count * sizeof(float));
	az_replay_buf_free(&b);
	assert_null(b.x);
	assert_int_equal(b.count, 0);
	expect_free(&e);
}

static void test_torn_tail(void **state)
{
	struct expect e;
	size_t rec;
	off_t size;

	write_segment(&e, 10, 5, 20, 30, 3);
	rec = rec_bytes(&e);
	size = file_size(path);
	assert_int_equal(truncate(path, size - (off_t)rec / 2), 0);
	size = file_size(path);
	/* The last record lost its second half, so the last game has no final record: the whole
	 * game goes, as when a worker is killed in the middle of writing it. */
	size_t keep = whole_games_upto(&e, e.count - 1);
	assert_true(keep < e.count - 1);
	size_t drop = (size_t)(size - HDR) - keep * rec;
	load_expect(&e, 0, (long)keep, drop);
	assert_int_equal(file_size(path), size); /* truncate=0 leaves the file alone */
	load_expect(&e, 1, (long)keep, drop);
	assert_int_equal(file_size(path), HDR + (off_t)(keep * rec));
	load_expect(&e, 0, (long)keep, 0);
	expect_free(&e);
}

/* Flip one bit of byte `byte` of record k of the file. */
static void flip_record(const struct expect *e, size_t k, size_t byte)
{
	off_t at = HDR + (off_t)(k * rec_bytes(e) + byte);
	unsigned char c;
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0 && byte < rec_bytes(e));
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 0x04;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

/* What a load should give after records bad[0..nbad) were damaged: every game written except
 * those holding a damaged record, in order (the damaged ones cost their own games only). */
static void expect_without(const struct expect *e, const size_t *bad, size_t nbad,
			   struct expect *out)
{
	size_t start = 0, D = e->D, A = e->A;

	expect_init(out, e->D, e->A);
	out->cap = e->count ? e->count : 1;
	out->x = malloc(out->cap * D * sizeof(float));
	out->pi = malloc(out->cap * A * sizeof(float));
	out->z = malloc(out->cap * sizeof(float));
	assert_true(out->x && out->pi && out->z);
	for (size_t g = 0; g < e->ngames; start = e->game_end[g++]) {
		size_t end = e->game_end[g], n = end - start;
		int damaged = 0;
		for (size_t i = 0; i < nbad; i++)
			damaged |= bad[i] >= start && bad[i] < end;
		if (damaged || n == 0)
			continue;
		memcpy(out->x + out->count * D, e->x + start * D, n * D * sizeof(float));
		memcpy(out->pi + out->count * A, e->pi + start * A, n * A * sizeof(float));
		memcpy(out->z + out->count, e->z + start, n * sizeof(float));
		out->count += n;
		out->game_end[out->ngames++] = out->count;
	}
}

/* Damage records bad[0..nbad) of the segment written as e, then load it (the file left alone):
 * every other game comes back and the dropped bytes are everything else. Returns the records
 * a load should keep in *kept. */
static void flip_and_load(struct expect *e, const size_t *bad, size_t nbad, struct expect *kept)
{
	off_t size = file_size(path);

	for (size_t i = 0; i < nbad; i++)
		flip_record(e, bad[i], (17 + 13 * i) % rec_bytes(e));
	expect_without(e, bad, nbad, kept);
	assert_true(kept->ngames + nbad <= e->ngames);
	load_expect(kept, 0, (long)kept->count,
		    (size_t)(size - HDR) - kept->count * rec_bytes(e));
	assert_int_equal(file_size(path), size);
}

/* The first record of game g and its length. */
static size_t game_start(const struct expect *e, size_t g)
{
	return g ? e->game_end[g - 1] : 0;
}

static size_t game_len(const struct expect *e, size_t g)
{
	return e->game_end[g] - game_start(e, g);
}

/* The first record of the first game of at least `len` records from game g on (in *index). */
static size_t game_of_len(const struct expect *e, size_t g, size_t len, size_t *index)
{
	for (; g < e->ngames; g++) {
		if (game_len(e, g) >= len) {
			*index = g;
			return game_start(e, g);
		}
	}
	*index = 0;
	fail_msg("no game of %zu records", len);
	return 0;
}

/* A flipped bit in the middle of the file costs its game only: the games after it load. */
static void test_bit_flip(void **state)
{
	struct expect e, kept;
	size_t bad;

	write_segment(&e, 10, 5, 20, 30, 4);
	bad = e.count / 2;
	flip_and_load(&e, &bad, 1, &kept);
	assert_true(kept.count > whole_games_upto(&e, bad)); /* more than the prefix */
	expect_free(&kept);
	expect_free(&e);
}

/* A flip in a game's final record: that game goes, the next one (its first record follows the
 * damaged one) stays. */
static void test_bit_flip_last_record(void **state)
{
	struct expect e, kept;
	size_t g, bad;

	write_segment(&e, 10, 5, 20, 30, 10);
	game_of_len(&e, 5, 2, &g);
	assert_true(g + 1 < e.ngames && game_len(&e, g + 1) > 0);
	bad = e.game_end[g] - 1;
	flip_and_load(&e, &bad, 1, &kept);
	assert_int_equal(kept.count, e.count - game_len(&e, g));
	expect_free(&kept);
	expect_free(&e);
}

/* A flip in the first game (its second record): every later game loads. */
static void test_bit_flip_first_game(void **state)
{
	struct expect e, kept;
	size_t g, bad;

	write_segment(&e, 10, 5, 20, 30, 11);
	assert_int_equal(game_of_len(&e, 0, 3, &g), 0); /* the first game has 3 records or more */
	bad = 1;
	flip_and_load(&e, &bad, 1, &kept);
	assert_int_equal(kept.count, e.count - game_len(&e, g));
	expect_free(&kept);
	expect_free(&e);
}

/* Two flips in two games: both games go, every other one stays. */
static void test_bit_flips_two_games(void **state)
{
	struct expect e, kept;
	size_t g1, g2, bad[2];

	write_segment(&e, 10, 5, 30, 20, 12);
	bad[0] = game_of_len(&e, 3, 4, &g1) + 2;
	bad[1] = game_of_len(&e, g1 + 3, 1, &g2);
	flip_and_load(&e, bad, 2, &kept);
	assert_int_equal(kept.count, e.count - game_len(&e, g1) - game_len(&e, g2));
	expect_free(&kept);
	expect_free(&e);
}

/* Only the files left in the test's directory (no temporary file behind a rewrite). */
static int files_in_dir(void)
{
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	for (struct dirent *ent; (ent = readdir(d)) != NULL;)
		n += ent->d_name[0] != '.';
	closedir(d);
	return n;
}

/* truncate=1 on a file damaged inside: it is rewritten (a new file renamed over it) to hold the
 * header and the kept games only, so loading it again gives the same records with nothing
 * dropped. Damage in the last game only is cut off in place, as a torn tail is. */
static void test_bit_flip_truncate(void **state)
{
	struct expect e, kept, kept2;
	struct stat before, after;
	size_t bad[2], g;

	write_segment(&e, 10, 5, 30, 20, 13);
	bad[0] = e.count / 3;
	assert_int_equal(stat(path, &before), 0);
	flip_and_load(&e, bad, 1, &kept);
	load_expect(&kept, 1, (long)kept.count,
		    (size_t)(before.st_size - HDR) - kept.count * rec_bytes(&e));
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(after.st_size, HDR + (off_t)(kept.count * rec_bytes(&e)));
	assert_true(after.st_ino != before.st_ino); /* rewritten, not cut */
	assert_int_equal(files_in_dir(), 1);
	load_expect(&kept, 0, (long)kept.count, 0);
	load_expect(&kept, 1, (long)kept.count, 0);

	/* Now damage in the last game only: a cut in place, the same file. */
	bad[1] = game_of_len(&kept, kept.ngames - 1, 1, &g);
	assert_int_equal(g, kept.ngames - 1);
	flip_and_load(&kept, &bad[1], 1, &kept2);
	assert_int_equal(kept2.count, bad[1]);
	load_expect(&kept2, 1, (long)kept2.count, (kept.count - bad[1]) * rec_bytes(&e));
	assert_int_equal(stat(path, &before), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	assert_int_equal(before.st_size, HDR + (off_t)(kept2.count * rec_bytes(&e)));
	load_expect(&kept2, 0, (long)kept2.count, 0);
	expect_free(&kept2);
	expect_free(&kept);
	expect_free(&e);
}

/* Raw records (what run/mpi.c moves between ranks): the whole-game prefix of any cut of the
 * file's bytes is what the loader would keep, and every record decodes to what was written. */
static void test_raw_records(void **state)
{
	struct expect e;
	char *data;
	size_t len;
	uint32_t games;
	float x[10], pi[5], z;

	write_segment(&e, 10, 5, 40, 12, 9);
	size_t rec = rec_bytes(&e);
	assert_int_equal(az_replay_record_bytes(10, 5), rec);
	assert_int_equal(az_read_file(path, &data, &len), 0);
	const unsigned char *recs = (const unsigned char *)data + AZ_REPLAY_HEADER_BYTES;
	size_t n = len - AZ_REPLAY_HEADER_BYTES;
	assert_int_equal(az_replay_whole_games(recs, n, 10, 5, &games), e.count * rec);
	for (size_t cut = 0; cut <= n; cut += rec / 3 + 1) {
		size_t k = cut / rec;
		assert_int_equal(az_replay_whole_games(recs, cut, 10, 5, NULL),
				 whole_games_upto(&e, k) * rec);
	}
	for (size_t i = 0; i < e.count; i++) {
		int last = az_replay_record_decode(recs + i * rec, 10, 5, x, pi, &z);
		int want = 0;
		for (size_t g = 0; g < e.ngames; g++)
			want |= e.game_end[g] == i + 1;
		assert_int_equal(last, want);
		assert_memory_equal(x, e.x + i * 10, sizeof(x));
		assert_memory_equal(pi, e.pi + i * 5, sizeof(pi));
		assert_true(z == e.z[i]);
	}
	/* A flipped bit fails the record's checksum and ends the whole-game prefix before it. */
	unsigned char *bad = (unsigned char *)data + AZ_REPLAY_HEADER_BYTES;
	size_t k = e.count / 2;
	bad[k * rec + 3] ^= 0x10;
	assert_int_equal(az_replay_record_decode(bad + k * rec, 10, 5, x, pi, &z), -EINVAL);
	assert_int_equal(az_replay_whole_games(bad, n, 10, 5, NULL), whole_games_upto(&e, k) * rec);
	free(data);
	expect_free(&e);
}

static void test_bad_header(void **state)
{
	struct az_replay_buf b;
	struct expect e;
	char err[256] = "";
	unsigned char c;
	int fd;

	write_segment(&e, 10, 5, 3, 5, 5);
	az_replay_buf_init(&b, 11, 5);
	assert_int_equal(az_replay_load_file(path, &b, 0, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "geometry"));
	assert_non_null(strstr(err, path));
	az_replay_buf_init(&b, 10, 4);
	assert_int_equal(az_replay_load_file(path, &b, 0, NULL, err, sizeof(err)), -EINVAL);
	assert_int_equal(b.count, 0);

	az_replay_buf_init(&b, 10, 5);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	c = 0x80; /* the reserved field: only the header checksum can notice */
	assert_int_equal(pwrite(fd, &c, 1, 24), 1);
	assert_int_equal(az_replay_load_file(path, &b, 0, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "checksum"));
	c = 'X';
	assert_int_equal(pwrite(fd, &c, 1, 0), 1);
	assert_int_equal(az_replay_load_file(path, &b, 0, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "magic"));
	assert_int_equal(ftruncate(fd, 20), 0);
	assert_int_equal(az_replay_load_file(path, &b, 0, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "truncated"));
	close(fd);
	unlink(path);
	assert_int_equal(az_replay_load_file(path, &b, 0, NULL, err, sizeof(err)), -ENOENT);
	assert_int_equal(b.count, 0);
	expect_free(&e);
}

static void test_excl(void **state)
{
	struct az_replay_writer *w = NULL;
	struct expect e;
	char err[256] = "";
	off_t size;

	write_segment(&e, 4, 4, 3, 5, 6);
	size = file_size(path);
	assert_int_equal(az_replay_writer_open(path, 4, 4, &w, err, sizeof(err)), -EEXIST);
	assert_null(w);
	assert_non_null(strstr(err, path));
	assert_int_equal(file_size(path), size);
	load_expect(&e, 0, (long)e.count, 0);
	expect_free(&e);
}

/* Far more data than the four 64 KiB staging buffers hold, in many small games and one game
 * larger than all buffers together: the writer must wait for completions and reuse buffers. */
static void test_backpressure(void **state)
{
	struct az_replay_writer *w = NULL;
	struct az_rng rng;
	struct expect e;

	expect_init(&e, 100, 50); /* 608-byte records, 107 per buffer */
	az_rng_seed(&rng, 7);
	assert_int_equal(az_replay_writer_open(path, 100, 50, &w, NULL, 0), 0);
	for (int g = 0; g < 150; g++)
		assert_int_equal(write_game(w, &e, &rng, 1 + az_rng_below(&rng, 64)), 0);
	assert_int_equal(write_game(w, &e, &rng, 3000), 0);
	for (int g = 0; g < 20; g++)
		assert_int_equal(write_game(w, &e, &rng, 1 + az_rng_below(&rng, 64)), 0);
	assert_int_equal(az_replay_writer_close(w), 0);
	assert_true(e.count * rec_bytes(&e) > 8 * 4 * 65536);
	load_expect(&e, 0, (long)e.count, 0);
	expect_free(&e);
}

/* A record larger than a staging buffer gets a buffer of its own size. */
static void test_huge_records(void **state)
{
	struct expect e;

	write_segment(&e, 20000, 100, 6, 5, 8);
	assert_true(rec_bytes(&e) > 65536);
	load_expect(&e, 0, (long)e.count, 0);
	expect_free(&e);
}

/* The disk "fills up" (RLIMIT_FSIZE) under the writer: the error is reported by append or close
 * and, after close, the file holds only whole games, all of them correct. */
static void test_write_error(void **state)
{
	struct az_replay_writer *w = NULL;
	struct rlimit old, lim;
	struct az_rng rng;
	struct expect e;
	int rc = 0, rc_close, g;
	size_t whole = 0;

	expect_init(&e, 100, 50);
	az_rng_seed(&rng, 9);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 300000; /* not a multiple of the record or buffer size */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(az_replay_writer_open(path, 100, 50, &w, NULL, 0), 0);
	for (g = 0; g < 200 && rc == 0; g++)
		rc = write_game(w, &e, &rng, 1 + az_rng_below(&rng, 40));
	assert_int_equal(rc, -EFBIG); /* 200 games of ~20 records are ~2.4 MB */
	assert_int_equal(write_game(w, &e, &rng, 1), -EFBIG); /* sticky */
	rc_close = az_replay_writer_close(w);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(rc_close, -EFBIG);
	assert_true(file_size(path) <= 300000);
	assert_int_equal((file_size(path) - HDR) % (off_t)rec_bytes(&e), 0);
	/* What is left is a whole number of games (a prefix of what was queued). */
	for (size_t i = 0; i < e.ngames; i++)
		if (HDR + (off_t)(e.game_end[i] * rec_bytes(&e)) == file_size(path))
			whole = e.game_end[i];
	assert_true(whole > 0);
	load_expect(&e, 0, (long)whole, 0);
	expect_free(&e);
}

/* The value targets of a game: the result for each record's side to move, mixed with the
 * search value q by `mix`. */
static void test_value_targets(void **state)
{
	const int8_t player[4] = {0, 1, 0, 1};
	const float q[4] = {0.5f, -0.25f, 1.0f, 0.0f};
	const float want0[4] = {-1.0f, 1.0f, -1.0f, 1.0f};
	const float want25[4] = {-0.625f, 0.6875f, -0.5f, 0.75f};
	float z[4];

	(void)state;
	/* The side to move at the end (player 1) won: v_final +1 for it. */
	az_replay_value_targets(4, player, 1, 1.0f, NULL, 0.0f, 0, z);
	assert_memory_equal(z, want0, sizeof(z));
	az_replay_value_targets(4, player, 1, 1.0f, q, 0.25f, 0, z);
	for (int i = 0; i < 4; i++)
		assert_float_equal(z[i], want25[i], 1e-6);
	az_replay_value_targets(4, player, 1, 1.0f, q, 1.0f, 0, z);
	assert_memory_equal(z, q, sizeof(z));
	az_replay_value_targets(4, player, 0, 0.0f, q, 0.5f, 0, z); /* a draw */
	for (int i = 0; i < 4; i++)
		assert_float_equal(z[i], 0.5f * q[i], 1e-6);
	/* --explore: the two records before the game's last random move take q alone, the rest
	 * the mix as before */
	az_replay_value_targets(4, player, 1, 1.0f, q, 0.25f, 2, z);
	assert_float_equal(z[0], q[0], 1e-6);
	assert_float_equal(z[1], q[1], 1e-6);
	assert_float_equal(z[2], want25[2], 1e-6);
	assert_float_equal(z[3], want25[3], 1e-6);
	az_replay_value_targets(4, player, 1, 1.0f, q, 0.0f, 4, z); /* even with mix 0 */
	assert_memory_equal(z, q, sizeof(z));
}

/* Value-only records (an all-zero policy) load back as such, beside ordinary ones. */
static void test_value_only_records(void **state)
{
	struct az_replay_writer *w = NULL;
	struct az_replay_buf b;
	float x[3 * 2] = {1, 2, 3, 4, 5, 6}, pi[3 * 3] = {0.5f, 0.5f, 0, 0, 0, 0, 0, 1, 0};
	float z[3] = {0.25f, -0.5f, 1.0f};
	char err[256] = "";

	(void)state;
	assert_int_equal(az_replay_writer_open(path, 2, 3, &w, err, sizeof(err)), 0);
	assert_int_equal(az_replay_writer_append(w, 3, x, pi, z), 0);
	assert_int_equal(az_replay_writer_close(w), 0);
	az_replay_buf_init(&b, 2, 3);
	assert_int_equal(az_replay_load_file(path, &b, 0, NULL, err, sizeof(err)), 3);
	assert_memory_equal(b.pi, pi, sizeof(pi));
	assert_memory_equal(b.z, z, sizeof(z));
	az_replay_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		AZ_TEST_IN_TMPDIR(test_roundtrip),
		AZ_TEST_IN_TMPDIR(test_load_appends),
		AZ_TEST_IN_TMPDIR(test_torn_tail),
		AZ_TEST_IN_TMPDIR(test_bit_flip),
		AZ_TEST_IN_TMPDIR(test_bit_flip_last_record),
		AZ_TEST_IN_TMPDIR(test_bit_flip_first_game),
		AZ_TEST_IN_TMPDIR(test_bit_flips_two_games),
		AZ_TEST_IN_TMPDIR(test_bit_flip_truncate),
		AZ_TEST_IN_TMPDIR(test_raw_records),
		AZ_TEST_IN_TMPDIR(test_bad_header),
		AZ_TEST_IN_TMPDIR(test_excl),
		AZ_TEST_IN_TMPDIR(test_backpressure),
		AZ_TEST_IN_TMPDIR(test_huge_records),
		AZ_TEST_IN_TMPDIR(test_write_error),
		cmocka_unit_test(test_value_targets),
		AZ_TEST_IN_TMPDIR(test_value_only_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
