/* SPDX-License-Identifier: MIT */
/* Replay store (train/replay.h): a writer that stages fixed-size checksummed records in a few
 * buffers and writes them with io_uring at explicit file offsets, and a loader that validates
 * the header, keeps every whole game whose records all pass their checksums and can cut the
 * file down to those games.
 *
 * Writer protocol. Records never straddle buffers. Buffer `cur` is being filled; when the next
 * record does not fit it is submitted as one write at its file offset and the writer moves to any
 * buffer whose write has completed, reaping completions without blocking and waiting only when
 * every buffer is in flight. A short write is resubmitted for its remainder. The first failed
 * completion is remembered (sticky) and returned by every later call; close then truncates the
 * file to the start of the earliest game that touched a failed write, so that after close the
 * file holds only whole games that reached the disk.
 *
 * Loader. Records are fixed-size, so one that fails its checksum (a flipped bit on the disk)
 * does not hide the ones after it: the scan goes on to the end and drops the damaged record's
 * game only. Its records already taken are taken back; the good records after it are skipped
 * until the next game starts (a record of index 0, which is kept) or the damaged game's final
 * record has gone by. The index is 16 bits: a game of more than 65536 records (no game comes
 * near) would look as if it restarted there. */
#include "train/replay.h"
#include "base/az_assert.h"
#include "base/az_err.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <liburing.h>
#include <zlib.h>

/* Records are float32 and u32 fields copied straight from memory: little-endian only. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "replay.c assumes a little-endian host"
#endif
_Static_assert(sizeof(float) == 4, "records hold float32");

#define MAGIC "AZRPLAY1"
#define HEADER_BYTES AZ_REPLAY_HEADER_BYTES
#define NBUF 4			/* staging buffers */
#define BUF_BYTES (64u * 1024u) /* target size of one staging buffer */
#define FSYNC_TAG ((uint64_t)NBUF)

struct stage {
	unsigned char *data;
	size_t len;	    /* bytes staged */
	size_t done;	    /* bytes the kernel has written so far */
	uint64_t off;	    /* file offset of data[0] */
	uint64_t game_start; /* file offset where the game owning data[0] began */
	int busy;	    /* a write for this buffer is in flight */
};

struct az_replay_writer {
	int fd;
	struct io_uring ring;
	uint32_t features, actions;
	size_t rec_bytes;
	size_t cap;	      /* usable bytes per buffer: a whole number of records */
	struct stage st[NBUF];
	int cur;	      /* buffer being filled */
	int inflight;	      /* writes submitted and not yet reaped */
	uint64_t next_off;    /* file offset of the next record staged */
	uint64_t game_start;  /* file offset of the current game's first record */
	uint64_t cut;	      /* truncate here on close after an error (UINT64_MAX: none) */
	int error;	      /* first -errno seen; sticky */
};

static size_t record_bytes(uint32_t features, uint32_t actions)
{
	return ((size_t)features + actions + 1) * sizeof(float) + 2 * sizeof(uint32_t);
}

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void encode_header(unsigned char h[HEADER_BYTES], uint32_t features, uint32_t actions)
{
	memset(h, 0, HEADER_BYTES);
	memcpy(h, MAGIC, 8);
	put_u32(h + 8, features);
	put_u32(h + 12, actions);
	put_u32(h + 16, (uint32_t)record_bytes(features, actions));
	put_u32(h + 20, 0); /* flags */
	put_u32(h + 24, 0); /* reserved */
	put_u32(h + 28, (uint32_t)crc32(0L, h, 28));
}

static uint32_t record_crc(const unsigned char *rec, size_t payload)
{
	return (uint32_t)crc32(0L, rec, (uInt)payload);
}

void az_replay_value_targets(uint32_t n, const int8_t *player, int final_player, float v_final,
			     const float *q, float mix, uint32_t q_only, float *z)
{
	for (uint32_t i = 0; i < n; i++) {
		float r = player[i] == final_player ? v_final : -v_final;

		if (i < q_only)
			z[i] = q[i];
		else
			z[i] = mix > 0.0f ? (1.0f - mix) * r + mix * q[i] : r;
	}
}

/* ---- writer ---- */

static void fail(struct az_replay_writer *w, int err, uint64_t game_start)
{
	if (!w->error)
		w->error = err;
	if (game_start < w->cut)
		w->cut = game_start;
}

/* Queue the unwritten remainder of stage s. The ring has 2 * NBUF entries and at most NBUF
 * writes are in flight, so an SQE is always available. */
static int submit_stage(struct az_replay_writer *w, struct stage *s)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
	int rc;

	if (!sqe)
		return -EBUSY; /* cannot happen with the sizing above */
	io_uring_prep_write(sqe, w->fd, s->data + s->done, (unsigned)(s->len - s->done),
			    s->off + s->done);
	io_uring_sqe_set_data64(sqe, (uint64_t)(s - w->st));
	rc = io_uring_submit(&w->ring);
	if (rc < 0)
		return rc;
	s->busy = 1;
	w->inflight++;
	return 0;
}

static void stage_release(struct stage *s)
{
	s->busy = 0;
	s->len = 0;
	s->done = 0;
}

/* Account one completion: finished, short (resubmit the rest) or failed (remember). */
static void complete(struct az_replay_writer *w, uint64_t tag, int res)
{
	struct stage *s;
	int rc;

	if (tag >= NBUF)
		return;
	s = &w->st[tag];
	w->inflight--;
	if (res == -EINTR || res == -EAGAIN)
		res = 0; /* nothing written: retry the same remainder */
	else if (res == 0 && s->done < s->len)
		res = -EIO; /* no progress on a regular file: give up rather than spin */
	if (res < 0) {
		fail(w, res, s->game_start);
		stage_release(s);
		return;
	}
	s->done += (size_t)res;
	if (s->done >= s->len) {
		stage_release(s);
		return;
	}
	rc = submit_stage(w, s);
	if (rc < 0) {
		fail(w, rc, s->game_start);
		stage_release(s);
	}
}

/* Reap completions: all that are ready, and with wait != 0 at least one. */
static int reap(struct az_replay_writer *w, int wait)
{
	struct io_uring_cqe *cqe;
	int rc;

	for (;;) {
		rc = io_uring_peek_cqe(&w->ring, &cqe);
		if (rc == -EAGAIN && wait) {
			rc = io_uring_wait_cqe(&w->ring, &cqe);
			if (rc == -EINTR)
				continue;
		}
		if (rc == -EAGAIN)
			return 0;
		if (rc < 0)
			return rc;
		wait = 0;
		complete(w, io_uring_cqe_get_data64(cqe), cqe->res);
		io_uring_cqe_seen(&w->ring, cqe);
	}
}

/* Submit the current buffer and make a free one current, waiting only if all are busy. */
static int rotate(struct az_replay_writer *w)
{
	int rc = submit_stage(w, &w->st[w->cur]);

	if (rc < 0)
		return rc;
	for (;;) {
		rc = reap(w, 0);
		for (int k = 1; rc == 0 && k <= NBUF; k++) {
			int i = (w->cur + k) % NBUF;
			if (!w->st[i].busy) {
				w->cur = i;
				return 0;
			}
		}
		if (rc == 0)
			rc = reap(w, 1);
		if (rc < 0)
			return rc;
	}
}

int az_replay_writer_open(const char *path, uint32_t features, uint32_t actions,
			  struct az_replay_writer **out, char *err, size_t errlen)
{
	unsigned char hdr[HEADER_BYTES];
	struct az_replay_writer *w;
	size_t rec = record_bytes(features, actions);
	ssize_t k;
	int rc;

	if (!path || !out || features == 0 || actions == 0 || rec > UINT32_MAX / 2) {
		az_set_err(err, errlen, "replay %s: bad arguments (features %u, actions %u)",
			path ? path : "(null)", features, actions);
		return -EINVAL;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		az_set_err(err, errlen, "replay %s: out of memory", path);
		return -ENOMEM;
	}
	w->features = features;
	w->actions = actions;
	w->rec_bytes = rec;
	w->cap = rec >= BUF_BYTES ? rec : BUF_BYTES / rec * rec;
	w->next_off = HEADER_BYTES;
	w->cut = UINT64_MAX;
	for (int i = 0; i < NBUF; i++) {
		w->st[i].data = malloc(w->cap);
		if (!w->st[i].data) {
			rc = -ENOMEM;
			az_set_err(err, errlen, "replay %s: out of memory", path);
			goto err_bufs;
		}
	}
	w->fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		rc = -errno;
		az_set_err(err, errlen, "replay %s: cannot create: %s", path, strerror(errno));
		goto err_bufs;
	}
	encode_header(hdr, features, actions);
	do
		k = pwrite(w->fd, hdr, sizeof(hdr), 0);
	while (k < 0 && errno == EINTR);
	if (k != (ssize_t)sizeof(hdr)) {
		rc = k < 0 ? -errno : -EIO;
		az_set_err(err, errlen, "replay %s: header write failed: %s", path, strerror(-rc));
		goto err_file;
	}
	rc = io_uring_queue_init(2 * NBUF, &w->ring, 0);
	if (rc < 0) {
		az_set_err(err, errlen, "replay %s: io_uring_queue_init: %s", path, strerror(-rc));
		goto err_file;
	}
	*out = w;
	return 0;
err_file:
	close(w->fd);
	unlink(path);
err_bufs:
	for (int i = 0; i < NBUF; i++)
		free(w->st[i].data);
	free(w);
	return rc;
}

/* Copy one record into the current buffer (which has room) and checksum it. info: its ply
 * index in the game, with AZ_REPLAY_LAST set on the game's final record. */
static void stage_record(struct az_replay_writer *w, const float *x, const float *pi, float z,
			 uint32_t info)
{
	struct stage *s = &w->st[w->cur];
	unsigned char *p = s->data + s->len;
	size_t fx = (size_t)w->features * sizeof(float), fp = (size_t)w->actions * sizeof(float);

	if (s->len == 0) {
		s->off = w->next_off;
		s->game_start = w->game_start;
	}
	memcpy(p, x, fx);
	memcpy(p + fx, pi, fp);
	memcpy(p + fx + fp, &z, sizeof(z));
	put_u32(p + fx + fp + sizeof(z), info);
	put_u32(p + fx + fp + sizeof(z) + 4, record_crc(p, w->rec_bytes - sizeof(uint32_t)));
	s->len += w->rec_bytes;
	w->next_off += w->rec_bytes;
}

int az_replay_writer_append(struct az_replay_writer *w, uint32_t n, const float *features,
			    const float *policy, const float *z)
{
	int rc;

	if (!w || (n > 0 && (!features || !policy || !z)))
		return -EINVAL;
	if (w->error)
		return w->error;
	w->game_start = w->next_off;
	for (uint32_t i = 0; i < n; i++) {
		if (w->st[w->cur].len + w->rec_bytes > w->cap) {
			rc = rotate(w);
			if (rc < 0)
				fail(w, rc, w->game_start);
			if (w->error) {
				/* Cut off on close, like any game a failed write touched. */
				fail(w, w->error, w->game_start);
				return w->error;
			}
		}
		stage_record(w, features + (size_t)i * w->features,
			     policy + (size_t)i * w->actions, z[i],
			     (i + 1 == n ? AZ_REPLAY_LAST : 0u) | (i & 0xffffu));
	}
	rc = reap(w, 0);
	if (rc < 0)
		fail(w, rc, w->game_start);
	return w->error;
}

/* After an error: drop every game a failed write touched (best effort, on top of the error). */
static void cut_tail(struct az_replay_writer *w)
{
	if (w->cut == UINT64_MAX)
		return;
	if (ftruncate(w->fd, (off_t)w->cut) == 0)
		(void)fsync(w->fd);
}

int az_replay_writer_close(struct az_replay_writer *w)
{
	int rc = 0;

	if (!w)
		return -EINVAL;
	if (!w->error && w->st[w->cur].len > 0) {
		rc = submit_stage(w, &w->st[w->cur]);
		if (rc < 0)
			fail(w, rc, w->st[w->cur].game_start);
	}
	while (w->inflight > 0) {
		rc = reap(w, 1);
		if (rc < 0) {
			/* The ring itself is broken: nothing more will complete. */
			fail(w, rc, w->game_start);
			break;
		}
	}
	if (!w->error && fsync(w->fd) < 0)
		fail(w, -errno, w->game_start);
	if (w->error)
		cut_tail(w);
	if (close(w->fd) < 0 && !w->error)
		w->error = -errno;
	rc = w->error;
	io_uring_queue_exit(&w->ring);
	for (int i = 0; i < NBUF; i++)
		free(w->st[i].data);
	free(w);
	return rc;
}

/* ---- loaded records ---- */

void az_replay_buf_init(struct az_replay_buf *b, uint32_t features, uint32_t actions)
{
	memset(b, 0, sizeof(*b));
	b->features = features;
	b->actions = actions;
}

void az_replay_buf_free(struct az_replay_buf *b)
{
	free(b->x);
	free(b->pi);
	free(b->z);
	az_replay_buf_init(b, b->features, b->actions);
}

/* Room for at least `need` records; capacity doubles. */
static int buf_reserve(struct az_replay_buf *b, size_t need)
{
	size_t cap = b->cap ? b->cap : 256;
	size_t row = (size_t)(b->features > b->actions ? b->features : b->actions);
	float *p;

	if (need <= b->cap)
		return 0;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	if (cap > SIZE_MAX / sizeof(float) / (row ? row : 1))
		return -ENOMEM;
	/* A realloc that succeeds is kept even if a later one fails; cap grows only at the end. */
	p = realloc(b->x, cap * b->features * sizeof(float));
	if (!p)
		return -ENOMEM;
	b->x = p;
	p = realloc(b->pi, cap * b->actions * sizeof(float));
	if (!p)
		return -ENOMEM;
	b->pi = p;
	p = realloc(b->z, cap * sizeof(float));
	if (!p)
		return -ENOMEM;
	b->z = p;
	b->cap = cap;
	return 0;
}

static int read_at(int fd, void *buf, size_t len, off_t off, size_t *got)
{
	*got = 0;
	while (*got < len) {
		ssize_t k = pread(fd, (char *)buf + *got, len - *got, off + (off_t)*got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

static int check_header(const char *path, const unsigned char *h, size_t got,
			const struct az_replay_buf *b, char *err, size_t errlen)
{
	uint32_t f, a, rb;

	if (got < HEADER_BYTES) {
		az_set_err(err, errlen, "replay %s: truncated header (%zu of %d bytes)", path, got,
			HEADER_BYTES);
		return -EINVAL;
	}
	if (memcmp(h, MAGIC, 8) != 0) {
		az_set_err(err, errlen, "replay %s: bad magic (not an " MAGIC " file)", path);
		return -EINVAL;
	}
	if (get_u32(h + 28) != (uint32_t)crc32(0L, h, 28)) {
		az_set_err(err, errlen, "replay %s: header checksum mismatch", path);
		return -EINVAL;
	}
	f = get_u32(h + 8);
	a = get_u32(h + 12);
	rb = get_u32(h + 16);
	if (f != b->features || a != b->actions) {
		az_set_err(err, errlen, "replay %s: geometry %u features x %u actions, "
			"expected %u x %u", path, f, a, b->features, b->actions);
		return -EINVAL;
	}
	if (rb != record_bytes(f, a) || get_u32(h + 20) != 0) {
		az_set_err(err, errlen, "replay %s: record size %u or flags %u unsupported", path,
			rb, get_u32(h + 20));
		return -EINVAL;
	}
	return 0;
}

/* A run of kept records: n records from file offset off on. */
struct run {
	off_t off;
	size_t n;
};

/* The loader's state while it scans a file's records in order. */
struct scan {
	struct az_replay_buf *b;
	size_t rec;	  /* record bytes */
	size_t open;	  /* records of the game being read, already in b (no final record yet) */
	int damaged;	  /* skipping the rest of a game that holds a record with a bad checksum */
	struct run *runs; /* the records kept, in file order; the open game is in the last run */
	size_t nruns, cap;
};

/* Take back the open game's records: from b, and from the end of the last run. */
static void drop_open(struct scan *s)
{
	struct run *last = s->nruns ? &s->runs[s->nruns - 1] : NULL;

	AZ_ASSERT(s->open <= s->b->count && (!s->open || (last && s->open <= last->n)));
	s->b->count -= s->open;
	if (s->open) {
		last->n -= s->open;
		s->nruns -= last->n == 0;
	}
	s->open = 0;
}

/* Keep the record at file offset off: extend the last run or start a new one. */
static int keep_run(struct scan *s, off_t off)
{
	struct run *last = s->nruns ? &s->runs[s->nruns - 1] : NULL;

	if (last && last->off + (off_t)(last->n * s->rec) == off) {
		last->n++;
		return 0;
	}
	if (s->nruns == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		struct run *p = realloc(s->runs, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->runs = p;
		s->cap = cap;
	}
	s->runs[s->nruns++] = (struct run){off, 1};
	return 0;
}

/* Scan `nrec` whole records at chunk (file offset off) into b. A record with a bad checksum
 * costs its game only: the open game's records are taken back, and the good records after it
 * are skipped up to the next game's start (a record of index 0, kept) or the damaged game's
 * final record (skipped). Returns 0 or -ENOMEM. */
static int take_records(struct scan *s, const unsigned char *chunk, size_t nrec, off_t off)
{
	struct az_replay_buf *b = s->b;
	size_t fx = (size_t)b->features * sizeof(float), fp = (size_t)b->actions * sizeof(float);
	size_t rec = s->rec;

	if (buf_reserve(b, b->count + nrec) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < nrec; i++) {
		const unsigned char *p = chunk + i * rec;
		uint32_t info = get_u32(p + rec - 8);
		if (get_u32(p + rec - 4) != record_crc(p, rec - 4)) {
			drop_open(s);
			s->damaged = 1;
			continue;
		}
		if (s->damaged && (info & 0xffffu) != 0) {
			s->damaged = !(info & AZ_REPLAY_LAST);
			continue;
		}
		s->damaged = 0;
		if (keep_run(s, off + (off_t)(i * rec)) < 0)
			return -ENOMEM;
		memcpy(b->x + b->count * b->features, p, fx);
		memcpy(b->pi + b->count * b->actions, p + fx, fp);
		memcpy(b->z + b->count, p + fx + fp, sizeof(float));
		b->count++;
		s->open = (info & AZ_REPLAY_LAST) ? 0 : s->open + 1;
	}
	return 0;
}

/* Scan every whole record from HEADER_BYTES to the end of the file into s->b. Returns the
 * number of records kept or -errno. */
static long load_records(int fd, off_t size, struct scan *s)
{
	size_t rec = s->rec, before = s->b->count;
	size_t chunk_recs = rec >= (1u << 20) ? 1 : (1u << 20) / rec, got;
	unsigned char *chunk = malloc(chunk_recs * rec);
	off_t off = HEADER_BYTES;
	int rc = 0;

	if (!chunk)
		return -ENOMEM;
	while (rc == 0 && off + (off_t)rec <= size) {
		rc = read_at(fd, chunk, chunk_recs * rec, off, &got);
		if (rc == 0 && got < rec)
			break; /* the file shrank under us: what is left is a partial record */
		if (rc == 0)
			rc = take_records(s, chunk, got / rec, off);
		off += (off_t)(got / rec * rec);
	}
	/* Records of a game whose last record never reached the disk (a worker killed mid-game,
	 * a torn write) are dropped with the tail: a game is in the store whole or not at all. */
	drop_open(s);
	free(chunk);
	if (rc < 0)
		s->b->count = before;
	return rc < 0 ? rc : (long)(s->b->count - before);
}

/* Rewrite `path` to hold its header and the kept records only (s->runs), read back from fd,
 * through a temporary file and a rename: the file is never left half-rewritten. */
static int rewrite_kept(const char *path, int fd, const unsigned char *hdr, const struct scan *s,
			size_t kept, char *err, size_t errlen)
{
	size_t len = HEADER_BYTES + kept * s->rec, at = HEADER_BYTES, got;
	unsigned char *data = malloc(len);
	char why[1200];
	int rc = 0;

	if (!data) {
		az_set_err(err, errlen, "replay %s: out of memory", path);
		return -ENOMEM;
	}
	memcpy(data, hdr, HEADER_BYTES);
	for (size_t i = 0; rc == 0 && i < s->nruns; at += s->runs[i++].n * s->rec) {
		rc = read_at(fd, data + at, s->runs[i].n * s->rec, s->runs[i].off, &got);
		if (rc == 0 && got != s->runs[i].n * s->rec)
			rc = -EIO;
	}
	/* What is read back must still be whole good games: a file that changed since the scan
	 * is not rewritten. */
	if (rc == 0 && az_replay_whole_games(data + HEADER_BYTES, len - HEADER_BYTES,
					     s->b->features, s->b->actions,
					     NULL) != len - HEADER_BYTES)
		rc = -EIO;
	if (rc < 0) {
		az_set_err(err, errlen, "replay %s: cannot read back its records: %s", path,
			   strerror(-rc));
	} else {
		rc = az_write_file_atomic(path, data, len, why, sizeof(why));
		if (rc < 0)
			az_set_err(err, errlen,
				   "replay %s: cannot rewrite it without its damaged records: %s",
				   path, why);
	}
	free(data);
	return rc;
}

/* Leave only the kept records in the file: cut it when they are its start (what was dropped is
 * a torn tail or an unfinished last game), else rewrite it. */
static int cut_file(const char *path, int fd, const unsigned char *hdr, const struct scan *s,
		    size_t kept, char *err, size_t errlen)
{
	off_t end = HEADER_BYTES + (off_t)(kept * s->rec);

	if (s->nruns > 1 || (s->nruns == 1 && s->runs[0].off != HEADER_BYTES))
		return rewrite_kept(path, fd, hdr, s, kept, err, errlen);
	if (ftruncate(fd, end) < 0 || fsync(fd) < 0) {
		int rc = -errno;
		az_set_err(err, errlen, "replay %s: cannot truncate to %lld bytes: %s", path,
			   (long long)end, strerror(-rc));
		return rc;
	}
	return 0;
}

long az_replay_load_file(const char *path, struct az_replay_buf *b, int truncate_tail,
			 size_t *dropped_bytes, char *err, size_t errlen)
{
	unsigned char hdr[HEADER_BYTES];
	struct scan s = {.b = b};
	struct stat st;
	size_t got, dropped;
	long n;
	int fd, rc;

	if (!path || !b || b->features == 0 || b->actions == 0) {
		az_set_err(err, errlen, "replay: bad arguments");
		return -EINVAL;
	}
	s.rec = record_bytes(b->features, b->actions);
	fd = open(path, (truncate_tail ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		az_set_err(err, errlen, "replay %s: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		n = -errno;
		az_set_err(err, errlen, "replay %s: stat failed: %s", path, strerror(errno));
		goto out_close;
	}
	n = read_at(fd, hdr, sizeof(hdr), 0, &got);
	if (n == 0)
		n = check_header(path, hdr, got, b, err, errlen);
	if (n < 0) {
		if (n != -EINVAL)
			az_set_err(err, errlen, "replay %s: read failed: %s", path, strerror((int)-n));
		goto out_close;
	}
	n = load_records(fd, st.st_size, &s);
	if (n < 0) {
		az_set_err(err, errlen, "replay %s: %s", path, strerror((int)-n));
		goto out_close;
	}
	dropped = (size_t)st.st_size - HEADER_BYTES - (size_t)n * s.rec;
	if (dropped_bytes)
		*dropped_bytes = dropped;
	if (truncate_tail && dropped > 0) {
		rc = cut_file(path, fd, hdr, &s, (size_t)n, err, errlen);
		if (rc < 0)
			n = rc;
	}
out_close:
	free(s.runs);
	close(fd);
	return n;
}

/* ---- raw records ---- */

size_t az_replay_record_bytes(uint32_t features, uint32_t actions)
{
	return record_bytes(features, actions);
}

size_t az_replay_whole_games(const void *bytes, size_t len, uint32_t features, uint32_t actions,
			     uint32_t *games)
{
	const unsigned char *p = bytes;
	size_t rec = record_bytes(features, actions), whole = 0;
	uint32_t n = 0;
	for (size_t off = 0; off + rec <= len; off += rec) {
		if (get_u32(p + off + rec - 4) != record_crc(p + off, rec - 4))
			break;
		if (get_u32(p + off + rec - 8) & AZ_REPLAY_LAST) {
			whole = off + rec;
			n++;
		}
	}
	if (games)
		*games = n;
	return whole;
}

int az_replay_record_decode(const void *rec, uint32_t features, uint32_t actions, float *x,
			    float *pi, float *z)
{
	const unsigned char *p = rec;
	size_t r = record_bytes(features, actions);
	size_t fx = (size_t)features * sizeof(float), fp = (size_t)actions * sizeof(float);
	if (get_u32(p + r - 4) != record_crc(p, r - 4))
		return -EINVAL;
	memcpy(x, p, fx);
	memcpy(pi, p + fx, fp);
	memcpy(z, p + fx + fp, sizeof(float));
	return (get_u32(p + r - 8) & AZ_REPLAY_LAST) ? 1 : 0;
}
