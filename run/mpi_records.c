/* SPDX-License-Identifier: MIT */
/* Self-play records from the ranks to rank 0 (run/mpi_records.h). */
#include "run/mpi_records.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/util.h"
#include "run/rundir.h"
#include "run/supervise.h"

#define HDR sizeof(struct az_mpi_batch)

size_t az_mpi_batch_cap(const struct az_game *g)
{
	size_t rec = az_replay_record_bytes(g->features, g->actions);
	size_t game = (size_t)(g->max_plies + 1) * rec, cap = AZ_MPI_BATCH_BYTES;
	if (cap < 2 * game)
		cap = 2 * game;
	return cap / rec * rec;
}

int az_mpi_wait(MPI_Request *req, double *s)
{
	const struct timespec nap = {0, 200000};
	double t0 = az_now();
	int done = 0;
	for (;;) {
		MPI_Test(req, &done, MPI_STATUS_IGNORE);
		if (done)
			break;
		if (az_sv_interrupted())
			return -EINTR;
		nanosleep(&nap, NULL);
	}
	if (s)
		*s += az_now() - t0;
	return 0;
}

/* ---- sender ---- */

int az_mpi_sender_begin(struct az_mpi_sender *s, const struct az_game *g, const char *dir,
			uint32_t it, struct az_mpi_kind *stat)
{
	memset(s, 0, sizeof(*s));
	s->g = g;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->iteration = it;
	s->cap = az_mpi_batch_cap(g);
	s->stat = stat;
	for (int i = 0; i < AZ_MPI_INFLIGHT; i++) {
		s->req[i] = MPI_REQUEST_NULL;
		s->buf[i] = malloc(HDR + s->cap);
		if (!s->buf[i])
			return -ENOMEM;
	}
	return 0;
}

/* A free batch buffer (its Isend completed), or -1 when every one is in flight. */
static int free_buf(struct az_mpi_sender *s)
{
	for (int i = 0; i < AZ_MPI_INFLIGHT; i++) {
		int done = 1;
		if (s->req[i] != MPI_REQUEST_NULL) {
			double t0 = az_now();
			MPI_Test(&s->req[i], &done, MPI_STATUS_IGNORE);
			s->stat->s += az_now() - t0;
		}
		if (done)
			return i;
	}
	return -1;
}

/* Pick up replay files of this iteration that appeared since the last look. */
static void scan_dir(struct az_mpi_sender *s)
{
	char prefix[32];
	DIR *d = opendir(s->dir);
	if (!d)
		return;
	snprintf(prefix, sizeof(prefix), "iter-%04u-w", s->iteration);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		uint32_t i;
		unsigned w;
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 ||
		    sscanf(e->d_name + strlen(prefix), "%u", &w) != 1 || strlen(e->d_name) >= 80)
			continue;
		for (i = 0; i < s->nsrc && strcmp(s->src[i].name, e->d_name) != 0; i++)
			;
		if (i < s->nsrc || s->nsrc == AZ_MPI_MAX_FILES)
			continue;
		struct az_mpi_src *f = &s->src[s->nsrc++];
		snprintf(f->name, sizeof(f->name), "%s", e->d_name);
		f->worker = w;
		f->off = AZ_REPLAY_HEADER_BYTES;
	}
	closedir(d);
}

/* Send the next batch of whole games of file f through buffer b. 1 sent, 0 nothing new,
 * -errno. */
static int send_from(struct az_mpi_sender *s, struct az_mpi_src *f, int b)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/%s", s->dir, f->name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	unsigned char *p = s->buf[b] + HDR;
	ssize_t got = pread(fd, p, s->cap, (off_t)f->off);
	int err = errno;
	close(fd);
	if (got < 0)
		return -err;
	uint32_t games;
	size_t whole = az_replay_whole_games(p, (size_t)got, s->g->features, s->g->actions, &games);
	if (!whole)
		return 0;
	size_t rec = az_replay_record_bytes(s->g->features, s->g->actions);
	struct az_mpi_batch h = {.magic = AZ_MPI_BATCH_MAGIC, .kind = AZ_MPI_BATCH_RECORDS,
				 .iteration = s->iteration, .worker = f->worker,
				 .records = (uint32_t)(whole / rec), .games = games,
				 .crc = (uint32_t)crc32(0L, p, (uInt)whole)};
	memcpy(s->buf[b], &h, HDR);
	double t0 = az_now();
	int rc = MPI_Isend(s->buf[b], (int)(HDR + whole), MPI_BYTE, 0, AZ_MPI_TAG_RECORDS,
			   MPI_COMM_WORLD, &s->req[b]);
	s->stat->s += az_now() - t0;
	if (rc != MPI_SUCCESS)
		return -EIO;
	f->off += whole;
	s->batches++;
	s->records += h.records;
	s->games += games;
	s->stat->bytes += HDR + whole;
	s->stat->msgs++;
	return 1;
}

/* One pass over the files while batch buffers are free. Returns batches sent or -errno. */
static int pass(struct az_mpi_sender *s)
{
	int sent = 0;
	scan_dir(s);
	s->blocked = 0;
	for (uint32_t i = 0; i < s->nsrc; i++) {
		int b, rc = 0;
		while ((b = free_buf(s)) >= 0 && (rc = send_from(s, &s->src[i], b)) > 0)
			sent++;
		if (b < 0) {
			s->blocked = 1; /* backpressure: the rest stays in the files */
			break;
		}
		if (rc < 0)
			return rc;
	}
	return sent;
}

int az_mpi_sender_poll(struct az_mpi_sender *s)
{
	int rc = pass(s);
	return rc < 0 ? rc : 0;
}

int az_mpi_sender_finish(struct az_mpi_sender *s)
{
	const struct timespec nap = {0, 200000};
	int rc;
	s->t_end = az_now();
	/* Whatever is whole in the files now is final (the workers have been reaped): send until
	 * a pass finds nothing new although a buffer was free. */
	for (;;) {
		rc = pass(s);
		if (rc < 0)
			goto out;
		if (rc == 0 && !s->blocked)
			break;
		if (rc == 0) {
			if (az_sv_interrupted()) {
				rc = -EINTR;
				goto out;
			}
			nanosleep(&nap, NULL);
		}
	}
	for (int i = 0; i < AZ_MPI_INFLIGHT; i++)
		if ((rc = az_mpi_wait(&s->req[i], &s->stat->s)) < 0)
			goto out;
	struct az_mpi_batch h = {.magic = AZ_MPI_BATCH_MAGIC, .kind = AZ_MPI_BATCH_DONE,
				 .iteration = s->iteration, .worker = s->batches,
				 .records = s->records, .games = s->games,
				 .tail_us = (uint32_t)((az_now() - s->t_end) * 1e6)};
	MPI_Request req;
	double t0 = az_now();
	MPI_Isend(&h, (int)HDR, MPI_BYTE, 0, AZ_MPI_TAG_RECORDS, MPI_COMM_WORLD, &req);
	rc = az_mpi_wait(&req, NULL);
	s->stat->s += az_now() - t0;
	s->stat->bytes += HDR;
	s->stat->msgs++;
out:
	for (int i = 0; i < AZ_MPI_INFLIGHT; i++) {
		if (rc == 0 || s->req[i] == MPI_REQUEST_NULL) {
			free(s->buf[i]);
			s->buf[i] = NULL;
		} /* else: MPI may still read it; the job is being torn down */
	}
	return rc;
}

/* ---- receiver ---- */

int az_mpi_receiver_begin(struct az_mpi_receiver *v, const struct az_game *g, const char *out,
			  int size, uint32_t it, struct az_mpi_kind *stat)
{
	memset(v, 0, sizeof(*v));
	v->g = g;
	v->out = out;
	v->size = size;
	v->iteration = it;
	v->cap = az_mpi_batch_cap(g);
	v->stat = stat;
	v->req = MPI_REQUEST_NULL;
	v->buf = malloc(HDR + v->cap);
	v->records = calloc((size_t)size, sizeof(uint64_t));
	v->games = calloc((size_t)size, sizeof(uint64_t));
	v->x = malloc(((size_t)g->max_plies + 1) * g->features * sizeof(float));
	v->pi = malloc(((size_t)g->max_plies + 1) * g->actions * sizeof(float));
	v->z = malloc(((size_t)g->max_plies + 1) * sizeof(float));
	if (!v->buf || !v->records || !v->games || !v->x || !v->pi || !v->z)
		return -ENOMEM;
	return 0;
}

static void post(struct az_mpi_receiver *v)
{
	double t0 = az_now();
	MPI_Irecv(v->buf, (int)(HDR + v->cap), MPI_BYTE, MPI_ANY_SOURCE, AZ_MPI_TAG_RECORDS,
		  MPI_COMM_WORLD, &v->req);
	v->stat->s += az_now() - t0;
	v->posted = 1;
}

static int bad(struct az_mpi_receiver *v, int rank, const char *what)
{
	az_log("rank 0: a record batch from rank %d %s (iteration %u); stopping the job", rank,
	       what, v->iteration);
	v->error = -EIO;
	return -EIO;
}

/* The writer of rank k's worker w in this iteration, opened on first use. */
static struct az_replay_writer *sink(struct az_mpi_receiver *v, int k, uint32_t w)
{
	for (uint32_t i = 0; i < v->nsink; i++)
		if (v->sink[i].rank == k && v->sink[i].worker == (int)w)
			return v->sink[i].w;
	if (v->nsink == v->capsink) {
		uint32_t n = v->capsink ? 2 * v->capsink : 16;
		struct az_mpi_sink *ns = realloc(v->sink, n * sizeof(*ns));
		if (!ns)
			return NULL;
		v->sink = ns;
		v->capsink = n;
	}
	char path[AZ_RUNDIR_PATH_MAX], err[512];
	struct az_replay_writer *rw;
	az_rundir_replay_path(path, sizeof(path), v->out, v->iteration,
			      (uint32_t)k * AZ_MPI_WORKER_IDS + w, 0);
	if (az_replay_writer_open(path, v->g->features, v->g->actions, &rw, err, sizeof(err)) < 0) {
		az_log("rank 0: %s", err);
		return NULL;
	}
	v->sink[v->nsink++] = (struct az_mpi_sink){.rank = k, .worker = (int)w, .w = rw};
	return rw;
}

/* Check and store one received message of n bytes from rank k. */
static int take(struct az_mpi_receiver *v, int k, size_t n)
{
	struct az_mpi_batch h;
	const struct az_game *g = v->g;
	size_t rec = az_replay_record_bytes(g->features, g->actions);
	if (n < HDR)
		return bad(v, k, "is too short");
	memcpy(&h, v->buf, HDR);
	if (h.magic != AZ_MPI_BATCH_MAGIC || h.iteration != v->iteration)
		return bad(v, k, "has a bad header");
	v->stat->bytes += n;
	v->stat->msgs++;
	if (h.kind == AZ_MPI_BATCH_DONE) {
		if (h.records != v->records[k] || h.games != v->games[k])
			return bad(v, k, "announced other totals than arrived");
		if (h.tail_us > v->max_tail_us)
			v->max_tail_us = h.tail_us;
		v->done++;
		return 0;
	}
	const unsigned char *p = v->buf + HDR;
	if (h.kind != AZ_MPI_BATCH_RECORDS || n - HDR != (size_t)h.records * rec ||
	    h.worker >= AZ_MPI_WORKER_IDS)
		return bad(v, k, "has a bad header");
	if ((uint32_t)crc32(0L, p, (uInt)(n - HDR)) != h.crc)
		return bad(v, k, "failed its checksum");
	struct az_replay_writer *w = sink(v, k, h.worker);
	if (!w) {
		v->error = -EIO;
		return -EIO;
	}
	uint32_t len = 0, games = 0;
	for (uint32_t i = 0; i < h.records; i++) {
		if (len > g->max_plies)
			return bad(v, k, "holds a game longer than the game allows");
		int last = az_replay_record_decode(p + (size_t)i * rec, g->features, g->actions,
						   v->x + (size_t)len * g->features,
						   v->pi + (size_t)len * g->actions, v->z + len);
		if (last < 0)
			return bad(v, k, "holds a record with a bad checksum");
		len++;
		if (last) {
			int rc = az_replay_writer_append(w, len, v->x, v->pi, v->z);
			if (rc < 0) {
				az_log("rank 0: replay of rank %d: %s", k, strerror(-rc));
				v->error = rc;
				return rc;
			}
			len = 0;
			games++;
		}
	}
	if (len || games != h.games)
		return bad(v, k, "ends inside a game");
	v->records[k] += h.records;
	v->games[k] += games;
	return 0;
}

int az_mpi_receiver_poll(struct az_mpi_receiver *v)
{
	while (!v->error) {
		MPI_Status st;
		int done = 0, n = 0;
		if (!v->posted)
			post(v);
		double t0 = az_now();
		MPI_Test(&v->req, &done, &st);
		if (done)
			MPI_Get_count(&st, MPI_BYTE, &n);
		v->stat->s += az_now() - t0;
		if (!done)
			break;
		v->posted = 0;
		if (st.MPI_SOURCE <= 0 || st.MPI_SOURCE >= v->size)
			return bad(v, st.MPI_SOURCE, "came from no follower");
		take(v, st.MPI_SOURCE, (size_t)n);
	}
	return v->error;
}

int az_mpi_receiver_finish(struct az_mpi_receiver *v)
{
	const struct timespec nap = {0, 200000};
	int rc = 0;
	while (v->done < (uint32_t)(v->size - 1)) {
		rc = az_mpi_receiver_poll(v);
		if (rc < 0)
			break;
		if (az_sv_interrupted()) {
			rc = -EINTR;
			break;
		}
		if (v->done < (uint32_t)(v->size - 1))
			nanosleep(&nap, NULL);
	}
	for (uint32_t i = 0; i < v->nsink; i++) {
		int c = az_replay_writer_close(v->sink[i].w);
		if (c < 0 && rc == 0) {
			az_log("rank 0: replay of rank %d: %s", v->sink[i].rank, strerror(-c));
			rc = c;
		}
	}
	for (int k = 1; k < v->size; k++) {
		v->records_total += v->records[k];
		v->games_total += v->games[k];
	}
	free(v->sink);
	free(v->x);
	free(v->pi);
	free(v->z);
	free(v->records);
	free(v->games);
	v->records = v->games = NULL;
	if (rc == 0 && v->posted) {
		/* Every rank has said DONE: nothing more can match the receive still posted. */
		MPI_Cancel(&v->req);
		MPI_Wait(&v->req, MPI_STATUS_IGNORE);
		v->posted = 0;
	}
	if (!v->posted)
		free(v->buf); /* else MPI may still write it; the job is being torn down */
	v->sink = NULL;
	v->buf = NULL;
	return rc;
}
