/* SPDX-License-Identifier: MIT */
/* The record stream of run/mpi_records.c between two ranks (run with mpirun -np 2): rank 1's
 * whole games from two replay files (one ending in an unfinished game, as a killed worker leaves
 * it) arrive at rank 0 exactly, in the file of worker 100 + w; a batch with a bad checksum and a
 * DONE whose totals disagree with what arrived are refused (-EIO). */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>
#include <mpi.h>

#include "base/rng.h"
#include "base/util.h"
#include "games/game.h"
#include "run/mpi_records.h"
#include "tests/test_util.h"
#include "train/replay.h"

static int rank;
static char dir[64];
static const struct az_game *g;

/* Write `games` random games (1..max_plies records) to path; returns the records written. If
 * torn, the file ends in a game that never got its last record. */
static size_t write_file(const char *path, int games, uint64_t seed, int torn)
{
	struct az_replay_writer *w;
	struct az_rng rng;
	char err[256];
	uint32_t D = g->features, A = g->actions, n;
	size_t total = 0;
	float *x = malloc(sizeof(float) * D * g->max_plies);
	float *pi = malloc(sizeof(float) * A * g->max_plies), z[64];
	assert_non_null(x);
	assert_non_null(pi);
	az_rng_seed(&rng, seed);
	assert_int_equal(az_replay_writer_open(path, D, A, &w, err, sizeof(err)), 0);
	for (int k = 0; k < games; k++) {
		n = 1 + (uint32_t)az_rng_below(&rng, g->max_plies);
		for (size_t i = 0; i < (size_t)n * D; i++)
			x[i] = (float)az_rng_uniform(&rng);
		for (size_t i = 0; i < (size_t)n * A; i++)
			pi[i] = (float)az_rng_uniform(&rng);
		for (uint32_t i = 0; i < n; i++)
			z[i] = (float)az_rng_below(&rng, 3) - 1.0f;
		assert_int_equal(az_replay_writer_append(w, n, x, pi, z), 0);
		total += n;
	}
	assert_int_equal(az_replay_writer_close(w), 0);
	if (torn) { /* a copy of the first record without its game-end flag: an unfinished game */
		char *data;
		size_t len, rec = az_replay_record_bytes(D, A);
		assert_int_equal(az_read_file(path, &data, &len), 0);
		FILE *f = fopen(path, "ab");
		assert_non_null(f);
		unsigned char *r = (unsigned char *)data + AZ_REPLAY_HEADER_BYTES;
		assert_int_equal(fwrite(r, 1, rec, f), rec);
		fclose(f);
		free(data);
	}
	free(x);
	free(pi);
	return total;
}

static long load(const char *path)
{
	struct az_replay_buf b;
	char err[256];
	az_replay_buf_init(&b, g->features, g->actions);
	long n = az_replay_load_file(path, &b, 0, NULL, err, sizeof(err));
	az_replay_buf_free(&b);
	return n;
}

/* Iteration 1: two files of rank 1's worker 3 arrive whole at rank 0. */
static void test_stream(void **state)
{
	struct az_mpi_kind stat = {0};
	char p[256], q[256];
	uint64_t want[2] = {0, 0};
	if (rank == 1) {
		snprintf(p, sizeof(p), "%s/iter-0001-w03.rpl", dir);
		want[0] = write_file(p, 700, 1, 1); /* several batches; ends in an unfinished game */
		snprintf(q, sizeof(q), "%s/iter-0001-w03-r1.rpl", dir);
		want[0] += write_file(q, 40, 2, 0);
		want[1] = 740;
		struct az_mpi_sender s;
		assert_int_equal(az_mpi_sender_begin(&s, g, dir, 1, &stat), 0);
		assert_int_equal(az_mpi_sender_poll(&s), 0);
		assert_int_equal(az_mpi_sender_finish(&s), 0);
		assert_int_equal(s.records, want[0]);
		assert_int_equal(s.games, 740);
		assert_true(s.batches >= 2);
		MPI_Send(want, 2, MPI_UINT64_T, 0, 99, MPI_COMM_WORLD);
	} else {
		struct az_mpi_receiver v;
		snprintf(p, sizeof(p), "%s/replay", dir);
		assert_int_equal(az_mkdir_p(p), 0);
		assert_int_equal(az_mpi_receiver_begin(&v, g, dir, 2, 1, &stat), 0);
		assert_int_equal(az_mpi_receiver_finish(&v), 0);
		MPI_Recv(want, 2, MPI_UINT64_T, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		assert_int_equal(v.records_total, want[0]);
		assert_int_equal(v.games_total, want[1]);
		snprintf(p, sizeof(p), "%s/replay/iter-0001-w103.rpl", dir);
		assert_int_equal(load(p), (long)want[0]);
		assert_true(stat.bytes > want[0] * az_replay_record_bytes(g->features, g->actions));
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

/* A hand-made batch: one game of `n` records (valid), with its header's CRC off by `crc_off`,
 * or a DONE announcing `n` records. */
static void send_raw(uint32_t it, uint32_t kind, uint32_t n, uint32_t crc_off)
{
	size_t rec = az_replay_record_bytes(g->features, g->actions);
	char p[256];
	snprintf(p, sizeof(p), "%s/raw.rpl", dir);
	unlink(p);
	write_file(p, 1, 7, 0);
	char *data;
	size_t len;
	assert_int_equal(az_read_file(p, &data, &len), 0);
	size_t body = kind == AZ_MPI_BATCH_DONE ? 0 : len - AZ_REPLAY_HEADER_BYTES;
	unsigned char *msg = malloc(sizeof(struct az_mpi_batch) + body);
	assert_non_null(msg);
	memcpy(msg + sizeof(struct az_mpi_batch), data + AZ_REPLAY_HEADER_BYTES, body);
	struct az_mpi_batch h = {.magic = AZ_MPI_BATCH_MAGIC, .kind = kind, .iteration = it,
				 .records = kind == AZ_MPI_BATCH_DONE ? n : (uint32_t)(body / rec),
				 .games = 1,
				 .crc = (uint32_t)crc32(0L, msg + sizeof(h), (uInt)body) + crc_off};
	memcpy(msg, &h, sizeof(h));
	MPI_Send(msg, (int)(sizeof(h) + body), MPI_BYTE, 0, AZ_MPI_TAG_RECORDS, MPI_COMM_WORLD);
	free(msg);
	free(data);
}

static void expect_refused(uint32_t it)
{
	struct az_mpi_kind stat = {0};
	struct az_mpi_receiver v;
	assert_int_equal(az_mpi_receiver_begin(&v, g, dir, 2, it, &stat), 0);
	assert_int_equal(az_mpi_receiver_finish(&v), -EIO);
}

/* Iteration 2: a flipped checksum; iteration 3: a DONE claiming records that never came. */
static void test_refused(void **state)
{
	if (rank == 1)
		send_raw(2, AZ_MPI_BATCH_RECORDS, 0, 1);
	else
		expect_refused(2);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1)
		send_raw(3, AZ_MPI_BATCH_DONE, 5, 0);
	else
		expect_refused(3);
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	int size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		fprintf(stderr, "test_mpi_records: run with mpirun -np 2\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	g = az_game_find("tictactoe");
	if (!g || az_test_tmpdir_make(dir, sizeof(dir), "/tmp/az-mpirec-XXXXXX", NULL, 0, NULL))
		MPI_Abort(MPI_COMM_WORLD, 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream), cmocka_unit_test(test_refused),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char p[128];
	snprintf(p, sizeof(p), "%s/replay", dir);
	az_test_tmpdir_remove(p);
	az_test_tmpdir_remove(dir);
	MPI_Finalize();
	return rc;
}
