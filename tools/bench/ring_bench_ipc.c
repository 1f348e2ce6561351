/* SPDX-License-Identifier: MIT */
/* azbench ring's kernel transports, the baselines az_ring is judged against: round trips over
 * pipes, Unix sockets and POSIX message queues, with tools/bench/ring_bench_xport.c's message
 * format and round-trip producer. */

#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tools/bench/ring_bench_impl.h"

/* rb_ctx.fd[i][]: the producer's and the consumer's ends of producer i's channels. */
enum { P_WR, P_RD, C_RD, C_WR }; /* per-producer descriptors: producer / consumer ends */

static void fd_producer(struct rb_ctx *c, uint32_t id);
static void mq_producer(struct rb_ctx *c, uint32_t id);

/* ---- byte streams ---- */

static int read_full(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (uint8_t *)p + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return got ? -EPROTO : 0; /* EOF: clean only at a message boundary */
		got += (size_t)r;
	}
	return 1;
}

static int write_full(int fd, const void *p, size_t n)
{
	size_t put = 0;

	while (put < n) {
		ssize_t r = write(fd, (const uint8_t *)p + put, n - put);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		put += (size_t)r;
	}
	return 0;
}

/* ---- pipes and Unix sockets ---- */

/* Close every descriptor this process does not use: all but producer keep_producer's own ends
 * (-1: none) and, when keep_consumer, the consumer's ends. */
static void close_fds(struct rb_ctx *c, int keep_producer, int keep_consumer)
{
	for (uint32_t i = 0; i < c->cfg.producers; i++)
		for (int k = 0; k < 4; k++) {
			int fd = c->fd[i][k];
			int producer_end = k == P_WR || k == P_RD;
			int keep = producer_end ? (int)i == keep_producer : keep_consumer;

			if (fd < 0 || keep)
				continue;
			close(fd);
			/* A socket's two ends on one side are one descriptor: forget both. */
			for (int m = 0; m < 4; m++)
				if (c->fd[i][m] == fd)
					c->fd[i][m] = -1;
		}
}

static int fd_setup(struct rb_ctx *c)
{
	uint32_t i;

	/* A producer writes a whole batch before it reads a reply, and the consumer blocks when
	 * the reply buffer is full: more than the default 64 KiB pipe buffer in flight
	 * deadlocks. */
	if ((uint64_t)c->batch * c->cfg.slot_bytes > 65536)
		return -ENOBUFS;

	for (i = 0; i < c->cfg.producers; i++) {
		int a[2], b[2];

		if (c->cfg.transport == RB_PIPE) {
			if (pipe(a) < 0)
				return -errno;
			if (pipe(b) < 0) {
				int e = errno;

				close(a[0]);
				close(a[1]);
				return -e;
			}
			c->fd[i][C_RD] = a[0];
			c->fd[i][P_WR] = a[1];
			c->fd[i][P_RD] = b[0];
			c->fd[i][C_WR] = b[1];
		} else {
			if (socketpair(AF_UNIX, SOCK_STREAM, 0, a) < 0)
				return -errno;
			c->fd[i][P_WR] = c->fd[i][P_RD] = a[0];
			c->fd[i][C_RD] = c->fd[i][C_WR] = a[1];
		}
	}
	return 0;
}

static void fd_after_fork(struct rb_ctx *c)
{
	/* The consumer sees EOF only once every copy of a producer's write end is closed. */
	close_fds(c, -1, 0);
}

static int fd_child_init(struct rb_ctx *c, uint32_t role)
{
	/* A dead peer must show up as EPIPE (an error), not kill us silently. */
	signal(SIGPIPE, SIG_IGN);
	if (role < c->cfg.producers)
		close_fds(c, (int)role, 0);
	else
		close_fds(c, -1, 1);
	return 0;
}

static int fd_send(struct rb_ctx *c, uint32_t id, uint64_t seq, uint64_t stamp)
{
	rb_msg_fill(c, id, seq, stamp, RB_MSG_REQ);
	return write_full(c->fd[id][P_WR], c->tx, c->cfg.slot_bytes);
}

static int fd_recv(struct rb_ctx *c, uint32_t id, uint64_t expect, uint64_t stamp, uint32_t max,
		   uint32_t *bad)
{
	int rc = read_full(c->fd[id][P_RD], c->buf, c->cfg.slot_bytes);

	if (rc <= 0)
		return rc ? rc : -EPIPE;
	*bad += !rb_msg_ok(c->buf, c->cfg.slot_bytes, id, expect, stamp);
	return 1;
}

/* One message per readable producer per round; a blocking read when there is one producer. */
static void fd_consumer(struct rb_ctx *c)
{
	uint32_t P = c->cfg.producers, bytes = c->cfg.slot_bytes, open = P, i;
	struct pollfd pf[RB_MAX_PRODUCERS];

	for (i = 0; i < P; i++)
		pf[i] = (struct pollfd){ .fd = c->fd[i][C_RD], .events = POLLIN };
	while (open) {
		if (P > 1 && poll(pf, P, -1) < 0) {
			if (errno == EINTR)
				continue;
			rb_add_error(c);
			return;
		}
		for (i = 0; i < P; i++) {
			int rc;

			if (pf[i].fd < 0 || (P > 1 && !pf[i].revents))
				continue;
			rc = read_full(pf[i].fd, c->buf, bytes);
			if (rc <= 0) {
				if (rc < 0)
					rb_add_error(c);
				pf[i].fd = -1;
				open--;
				continue;
			}
			rb_msg_serve(c->buf, bytes);
			if (write_full(c->fd[i][C_WR], c->buf, bytes) < 0)
				rb_add_error(c);
		}
	}
}

static void fd_teardown(struct rb_ctx *c)
{
	close_fds(c, -1, 0);
}

/* ---- POSIX message queues ---- */

static mqd_t mq_make(const char *tag, uint32_t i, long maxmsg, long msgsize)
{
	struct mq_attr a = { .mq_maxmsg = maxmsg, .mq_msgsize = msgsize };
	char name[64];
	mqd_t q;

	snprintf(name, sizeof(name), "/azbench-%ld-%s%u", (long)getpid(), tag, i);
	mq_unlink(name);
	q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &a);
	/* Unlinked at once: the descriptors (inherited across fork) keep the queue alive, and
	 * nothing is left behind whatever happens to this run. */
	if (q != (mqd_t)-1)
		mq_unlink(name);
	return q;
}

static void mq_teardown(struct rb_ctx *c)
{
	if (c->mq_req != (mqd_t)-1)
		mq_close(c->mq_req);
	c->mq_req = (mqd_t)-1;
	for (uint32_t i = 0; i < c->cfg.producers; i++) {
		if (c->mq_resp[i] != (mqd_t)-1)
			mq_close(c->mq_resp[i]);
		c->mq_resp[i] = (mqd_t)-1;
	}
}

/* One request queue (every producer sends there), one reply queue per producer holding a whole
 * batch, so the consumer never blocks on a reply (no deadlock). When the system refuses that many
 * messages per queue (fs.mqueue.msg_max, 10 by default without CAP_SYS_RESOURCE), the batch is
 * lowered to what it allows and reported as such. */
static int mq_setup(struct rb_ctx *c)
{
	uint32_t P = c->cfg.producers, i;
	long want = c->batch;

	for (i = 0; i < P; i++)
		c->mq_resp[i] = (mqd_t)-1;
	c->mq_req = mq_make("q", 0, want * P, c->cfg.slot_bytes);
	if (c->mq_req == (mqd_t)-1 && (errno == EINVAL || errno == ENOMEM) && want * P > 10)
		c->mq_req = mq_make("q", 0, 10, c->cfg.slot_bytes);
	if (c->mq_req == (mqd_t)-1)
		return -errno;
	for (i = 0; i < P; i++) {
		c->mq_resp[i] = mq_make("r", i, want, c->cfg.slot_bytes);
		if (c->mq_resp[i] == (mqd_t)-1 && i == 0 && want > 10 &&
		    (errno == EINVAL || errno == ENOMEM)) {
			want = 10;
			c->mq_resp[i] = mq_make("r", i, want, c->cfg.slot_bytes);
		}
		if (c->mq_resp[i] == (mqd_t)-1) {
			int e = -errno;

			mq_teardown(c);
			return e;
		}
	}
	c->batch = (uint32_t)want;
	return 0;
}

static void mq_after_fork(struct rb_ctx *c)
{
	mq_teardown(c);
}

static int mq_child_init(struct rb_ctx *c, uint32_t role)
{
	return 0;
}

static int mq_send_req(struct rb_ctx *c, uint32_t id, uint64_t seq, uint64_t stamp)
{
	rb_msg_fill(c, id, seq, stamp, RB_MSG_REQ);
	return mq_send(c->mq_req, (const char *)c->tx, c->cfg.slot_bytes, 0) < 0 ? -errno : 0;
}

static int mq_recv_resp(struct rb_ctx *c, uint32_t id, uint64_t expect, uint64_t stamp,
			uint32_t max, uint32_t *bad)
{
	ssize_t n = mq_receive(c->mq_resp[id], (char *)c->buf, c->cfg.slot_bytes, NULL);

	if (n < 0)
		return -errno;
	*bad += n != (ssize_t)c->cfg.slot_bytes ||
		!rb_msg_ok(c->buf, c->cfg.slot_bytes, id, expect, stamp);
	return 1;
}

static void mq_consumer(struct rb_ctx *c)
{
	uint32_t P = c->cfg.producers, bytes = c->cfg.slot_bytes, byes = 0;

	while (byes < P) {
		ssize_t n = mq_receive(c->mq_req, (char *)c->buf, bytes, NULL);
		struct rb_msg *m = (struct rb_msg *)c->buf;

		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)bytes || m->producer >= P) {
			rb_add_error(c);
			return;
		}
		if (m->kind == RB_MSG_BYE) {
			byes++;
			continue;
		}
		rb_msg_serve(c->buf, bytes);
		if (mq_send(c->mq_resp[m->producer], (const char *)c->buf, bytes, 0) < 0)
			rb_add_error(c);
	}
}

/* Pipes and Unix sockets share one implementation (rb_ctx.fd, opened by fd_setup()). */
const struct rb_ops rb_ops_fd = {
	fd_setup, fd_after_fork, fd_teardown, fd_child_init, fd_producer, fd_consumer, fd_send,
	fd_recv,
};

const struct rb_ops rb_ops_mq = {
	mq_setup, mq_after_fork, mq_teardown, mq_child_init, mq_producer, mq_consumer,
	mq_send_req, mq_recv_resp,
};

/* ---- the transports ---- */

static void fd_producer(struct rb_ctx *c, uint32_t id)
{
	rb_producer_rtt(c, &rb_ops_fd, id);
}

static void mq_producer(struct rb_ctx *c, uint32_t id)
{
	rb_producer_rtt(c, &rb_ops_mq, id);
	/* Tell the consumer we are finished (its only way to know). */
	rb_msg_fill(c, id, 0, 0, RB_MSG_BYE);
	if (mq_send(c->mq_req, (const char *)c->tx, c->cfg.slot_bytes, 0) < 0)
		rb_add_error(c);
}
