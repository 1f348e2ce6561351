/* SPDX-License-Identifier: MIT */
/* Self-play records from the ranks to rank 0 (run/mpi_records.c), inside run/mpi.c only.
 *
 * A sender (every rank but 0) reads its workers' replay files while they are being written and
 * sends the whole games found since the last look, as batches: a struct az_mpi_batch header,
 * then the raw records (train/replay.h's format) with a CRC-32 over them. At most
 * AZ_MPI_INFLIGHT batches are in flight (MPI_Isend); when all are, it reads nothing more and
 * the games wait in the files: that is the backpressure, and the workers never see it. A batch
 * is larger than the eager limit of Open MPI's transports, so an Isend completes only once rank
 * 0 has matched it. After the phase a last pass sends what is left and a DONE header with the
 * totals. Rank 0 keeps one Irecv posted, checks each batch and writes its games through the
 * replay writer as iter-NNNN-w(rank*100+worker).rpl. */
#ifndef AZ_RUN_MPI_RECORDS_H
#define AZ_RUN_MPI_RECORDS_H

#include <mpi.h>
#include <stdint.h>

#include "games/game.h"
#include "train/replay.h"

#define AZ_MPI_TAG_RECORDS 17
#define AZ_MPI_INFLIGHT 4
#define AZ_MPI_BATCH_BYTES (256u * 1024u) /* payload target; at least two longest games */
#define AZ_MPI_MAX_FILES 512
#define AZ_MPI_WORKER_IDS 100 /* rank 0 names remote worker w of rank k k*100 + w */

enum az_mpi_batch_kind { AZ_MPI_BATCH_RECORDS = 1, AZ_MPI_BATCH_DONE = 2 };

struct az_mpi_batch {
	uint32_t magic;     /* AZ_MPI_BATCH_MAGIC */
	uint32_t kind;      /* enum az_mpi_batch_kind */
	uint32_t iteration;
	uint32_t worker;    /* RECORDS: the sender's worker; DONE: batches sent */
	uint32_t records;   /* RECORDS: in this batch; DONE: in all batches */
	uint32_t games;     /* likewise */
	uint32_t crc;       /* RECORDS: CRC-32 (zlib) of the payload */
	uint32_t tail_us;   /* DONE: sender's time from its phase end to this header */
};
#define AZ_MPI_BATCH_MAGIC 0x415a4d42u /* "AZMB" */

/* Bytes and seconds in MPI, by kind (docs/cluster.md). */
struct az_mpi_kind {
	uint64_t bytes, msgs;
	double s;
};

struct az_mpi_src {
	char name[80];   /* file name in the scratch replay/ */
	uint32_t worker;
	uint64_t off;    /* next byte to read */
};

struct az_mpi_sender {
	const struct az_game *g;
	char dir[600];   /* replay/ of the scratch directory */
	uint32_t iteration;
	size_t cap;      /* payload capacity of one batch */
	unsigned char *buf[AZ_MPI_INFLIGHT];
	MPI_Request req[AZ_MPI_INFLIGHT];
	struct az_mpi_src src[AZ_MPI_MAX_FILES];
	uint32_t nsrc;
	uint32_t batches, records, games;
	int blocked;     /* the last pass stopped with every buffer in flight */
	double t_end;    /* az_now() at the end of the local phase */
	struct az_mpi_kind *stat;
};

struct az_mpi_sink {
	int rank, worker;
	struct az_replay_writer *w;
};

struct az_mpi_receiver {
	const struct az_game *g;
	const char *out; /* the run directory */
	uint32_t iteration;
	int size;
	size_t cap;
	unsigned char *buf;
	MPI_Request req;
	int posted;
	uint32_t done;   /* DONE headers seen */
	uint64_t *records, *games; /* [size] received per rank (freed by finish) */
	uint64_t records_total, games_total; /* over the ranks, set by finish */
	uint32_t max_tail_us;
	struct az_mpi_sink *sink;
	uint32_t nsink, capsink;
	float *x, *pi, *z; /* one game being decoded */
	int error;       /* sticky -errno */
	struct az_mpi_kind *stat;
};

/* Payload capacity of a batch for game g, in bytes (whole records). */
size_t az_mpi_batch_cap(const struct az_game *g);

/* Sender: start iteration it's stream over dir (the scratch replay/). 0 or -ENOMEM. */
int az_mpi_sender_begin(struct az_mpi_sender *s, const struct az_game *g, const char *dir,
			uint32_t it, struct az_mpi_kind *stat);
/* Send what is whole and new, as far as free batch buffers allow. 0 or -errno. */
int az_mpi_sender_poll(struct az_mpi_sender *s);
/* After the phase: send everything left, wait for every batch, send DONE. 0 or -errno
 * (-EINTR on a signal). Frees the buffers. */
int az_mpi_sender_finish(struct az_mpi_sender *s);

/* Receiver: iteration it's stream into out's replay store. 0 or -ENOMEM. */
int az_mpi_receiver_begin(struct az_mpi_receiver *v, const struct az_game *g, const char *out,
			  int size, uint32_t it, struct az_mpi_kind *stat);
/* Take every batch that has arrived. 0 or the sticky -errno (-EIO: bad batch, logged). */
int az_mpi_receiver_poll(struct az_mpi_receiver *v);
/* Poll until every other rank's DONE has come, close the files. 0 or -errno. */
int az_mpi_receiver_finish(struct az_mpi_receiver *v);

/* Wait for req, polling (0.2 ms naps); the seconds it took are added to *s (may be NULL).
 * Returns 0 or -EINTR on SIGINT/SIGTERM. */
int az_mpi_wait(MPI_Request *req, double *s);

#endif
