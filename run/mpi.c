/* SPDX-License-Identifier: MIT */
/* One run over the ranks of an MPI job (run/mpi.h): the control messages from rank 0, its
 * hooks into the iteration loop, and the follower's loop. Records: run/mpi_records.c. */
#include "run/mpi.h"

#include <dirent.h>
#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "run/mpi_records.h"

/* What rank 0 tells the others, by MPI_Ibcast; a model's bytes follow when bytes > 0. */
enum ctl_cmd { CTL_MODEL = 1, CTL_SELFPLAY, CTL_ARENA, CTL_STOP };

struct ctl {
	uint32_t cmd;
	uint32_t iteration;
	uint32_t best_changed; /* SELFPLAY: the last candidate was promoted */
	int32_t status;        /* STOP: exit status */
	uint64_t bytes;
};

enum kind { K_RECORDS, K_WEIGHTS, K_ARENA, K_CONTROL, K_N };
static const char *const kind_name[K_N] = {"records", "weights", "arena", "control"};

static struct {
	int rank, size;
	int in_iteration;         /* rank 0: the others may be in a phase */
	uint32_t sent_best;       /* rank 0: best_iteration the others hold */
	struct az_mpi_kind k[K_N];
	struct az_mpi_receiver recv;
	struct az_mpi_sender send;
	int streaming;            /* a sender or receiver is active */
	double t_iter;            /* az_now() at the start of the iteration */
	double wait_s;            /* rank 0: waiting for the others' games and arena results */
	double tail_s;            /* rank 0: of that, the records' tail (see selfplay_end) */
} m;

int az_mpi_init(int *argc, char ***argv, int *rank, int *size)
{
	int provided;
	/* Every wait here naps between MPI_Tests, so Open MPI need not sched_yield() inside them
	 * (its default when oversubscribed, which makes each Test last a time slice of another
	 * process); an explicit setting wins. */
	setenv("OMPI_MCA_mpi_yield_when_idle", "0", 0);
	if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
		return -EIO;
	MPI_Comm_rank(MPI_COMM_WORLD, &m.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &m.size);
	*rank = m.rank;
	*size = m.size;
	return 0;
}

void az_mpi_finalize(void)
{
	MPI_Finalize();
}

/* Broadcast len bytes from rank 0 in pieces MPI's int counts can hold; time into kind k. */
static int bcast(void *p, size_t len, enum kind k)
{
	const size_t piece = (size_t)1 << 30;
	for (size_t off = 0; off < len; off += piece) {
		size_t n = len - off < piece ? len - off : piece;
		MPI_Request req;
		double t0 = az_now();
		MPI_Ibcast((char *)p + off, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
		int rc = az_mpi_wait(&req, NULL);
		if (rc < 0)
			return rc;
		if (m.rank == 0) { /* the others' wait is mostly for rank 0's work */
			m.k[k].s += az_now() - t0;
			m.k[k].bytes += n;
			m.k[k].msgs++;
		}
	}
	return 0;
}

int az_mpi_share_config(int *status, void *cfg, size_t len)
{
	int32_t st = *status;
	int rc = bcast(&st, sizeof(st), K_CONTROL);
	if (rc == 0 && st < 0)
		rc = bcast(cfg, len, K_CONTROL);
	*status = st;
	return rc;
}

/* ---- rank 0 ---- */

static int send_ctl(struct ctl *c, const char *model)
{
	char *data = NULL;
	size_t len = 0;
	if (model) {
		int rc = az_read_file(model, &data, &len);
		if (rc < 0) {
			az_log("rank 0: %s: %s", model, strerror(-rc));
			return rc;
		}
		c->bytes = len;
	}
	int rc = bcast(c, sizeof(*c), K_CONTROL);
	if (rc == 0 && data)
		rc = bcast(data, len, K_WEIGHTS);
	free(data);
	return rc;
}

/* Rank k's share of n items: n / size each, the first n % size one more. */
static uint64_t part(uint64_t n, int k, int size)
{
	return n / (uint64_t)size + ((uint64_t)k < n % (uint64_t)size);
}

/* Self-play games split evenly; arena games in pairs (each pair plays both colours), the odd
 * one on rank 0. */
static uint64_t share_of(int k, int size, enum az_worker_mode mode, uint64_t total)
{
	if (mode == AZ_WORKER_SELFPLAY)
		return part(total, k, size);
	return 2 * part(total / 2, k, size) + (k == 0 ? total % 2 : 0);
}

static uint64_t leader_share(struct az_run_loop *r, enum az_worker_mode mode, uint64_t total)
{
	return share_of(0, m.size, mode, total);
}

static int leader_selfplay_begin(struct az_run_loop *r, uint32_t it)
{
	memset(m.k, 0, sizeof(m.k));
	m.wait_s = m.tail_s = 0;
	m.t_iter = az_now();
	m.in_iteration = 1;
	struct ctl c = {.cmd = CTL_SELFPLAY, .iteration = it,
			.best_changed = r->best_iteration != m.sent_best};
	m.sent_best = r->best_iteration;
	int rc = send_ctl(&c, NULL);
	if (rc == 0)
		rc = az_mpi_receiver_begin(&m.recv, r->p.g, r->p.out, m.size, it, &m.k[K_RECORDS]);
	m.streaming = rc == 0;
	return rc;
}

static void leader_tick(struct az_run_loop *r)
{
	if (m.streaming)
		az_mpi_receiver_poll(&m.recv); /* errors are sticky: selfplay_end returns them */
}

static int leader_selfplay_end(struct az_run_loop *r, uint32_t it, struct az_pipeline_counters *sp)
{
	double t0 = az_now(), in_mpi = m.k[K_RECORDS].s;
	int rc = az_mpi_receiver_finish(&m.recv);
	m.streaming = 0;
	/* Rank 0 waits for the others' last games and for their tails (from the end of their
	 * phase to their DONE: the rest of their games crossing the network). Only a tail that
	 * overlaps this wait delays the iteration: count min(wait, tail) as communication, the
	 * rest of the wait as waiting for the ranks' games. */
	double w = az_now() - t0 - (m.k[K_RECORDS].s - in_mpi), tail = m.recv.max_tail_us * 1e-6;
	m.tail_s = tail < w ? tail : w;
	m.wait_s += w - m.tail_s;
	if (rc == -EINTR)
		az_log("rank 0: stopped while waiting for the other ranks' games (a rank "
		       "died or the job was signalled: mpirun names the cause)");
	if (rc < 0)
		return rc;
	sp->games += m.recv.games_total;
	sp->positions += m.recv.records_total;
	return 0;
}

static int leader_arena_begin(struct az_run_loop *r, uint32_t it, const char *cand)
{
	struct ctl c = {.cmd = CTL_ARENA, .iteration = it};
	return send_ctl(&c, cand);
}

/* The arena counters summed over the ranks: W, D, L, the W, D, L moving first, the distinct
 * and the hashed games (distinct within each rank: games are not compared across ranks). */
enum { ARENA_VALUES = 8 };

static void arena_values(const struct az_pipeline_counters *c, uint64_t v[ARENA_VALUES])
{
	const uint64_t x[ARENA_VALUES] = {c->arena_wins, c->arena_draws, c->arena_losses,
					  c->arena_first_wins, c->arena_first_draws,
					  c->arena_first_losses, c->arena_distinct, c->arena_hashed};

	memcpy(v, x, sizeof(x));
}

/* The arena results of every rank, summed at rank 0 (rank 0 adds its own afterwards). */
static int reduce_results(uint64_t v[ARENA_VALUES], uint64_t sum[ARENA_VALUES])
{
	MPI_Request req;
	double t0 = az_now(), in_mpi = 0;
	MPI_Ireduce(v, sum, ARENA_VALUES, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD, &req);
	int rc = az_mpi_wait(&req, &in_mpi);
	if (m.rank == 0) {
		/* It waits for the slowest rank's arena games: that is waiting, not the network;
		 * the reduce of 64 bytes itself is counted as one Test's time. */
		double t = az_now() - t0;
		m.k[K_ARENA].s += t < 1e-4 ? t : 1e-4;
		m.wait_s += t < 1e-4 ? 0 : t - 1e-4;
		m.k[K_ARENA].bytes += (uint64_t)(m.size - 1) * ARENA_VALUES * sizeof(uint64_t);
		m.k[K_ARENA].msgs += (uint64_t)m.size - 1;
	}
	return rc;
}

static void log_iteration(uint32_t it)
{
	double iter = az_now() - m.t_iter, comm = 0;
	char line[600];
	size_t n = 0;
	n += (size_t)snprintf(line + n, sizeof(line) - n, "iter %u mpi:", it);
	for (int k = 0; k < K_N; k++) {
		comm += m.k[k].s;
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %s %llu B in %llu msgs %.4fs,",
				      kind_name[k], (unsigned long long)m.k[k].bytes,
				      (unsigned long long)m.k[k].msgs, m.k[k].s);
	}
	comm += m.tail_s;
	snprintf(line + n, sizeof(line) - n, " records tail %.4fs; waiting for ranks %.3fs; "
		 "communication %.4fs of %.3fs (%.2f %%)", m.tail_s, m.wait_s, comm, iter,
		 iter > 0 ? 100.0 * comm / iter : 0.0);
	az_info("%s", line);
}

static int leader_arena_end(struct az_run_loop *r, uint32_t it, struct az_pipeline_counters *c)
{
	uint64_t zero[ARENA_VALUES] = {0}, sum[ARENA_VALUES] = {0};
	int rc = reduce_results(zero, sum);
	if (rc < 0)
		return rc;
	c->arena_wins += sum[0];
	c->arena_draws += sum[1];
	c->arena_losses += sum[2];
	c->arena_first_wins += sum[3];
	c->arena_first_draws += sum[4];
	c->arena_first_losses += sum[5];
	c->arena_distinct += sum[6];
	c->arena_hashed += sum[7];
	m.in_iteration = 0; /* the others wait for the next control message now */
	log_iteration(it);
	return 0;
}

static const struct az_run_hooks leader_hooks = {
	.share = leader_share, .selfplay_begin = leader_selfplay_begin,
	.selfplay_end = leader_selfplay_end, .arena_begin = leader_arena_begin,
	.arena_end = leader_arena_end, .tick = leader_tick};

void az_mpi_leader_attach(struct az_run_loop *r)
{
	r->hooks = &leader_hooks;
}

int az_mpi_leader_start(struct az_run_loop *r)
{
	struct ctl c = {.cmd = CTL_MODEL};
	m.sent_best = r->best_iteration;
	az_info("rank 0 (pid %ld): MPI job of %d ranks; learns and plays 1/%d of each phase",
		(long)getpid(), m.size, m.size);
	return send_ctl(&c, r->best);
}

int az_mpi_leader_stop(struct az_run_loop *r, int status)
{
	if (m.in_iteration) {
		az_log("rank 0: %saborting the MPI job (the other ranks may be in a phase); %u "
		       "iterations are complete in %s, and it resumes with any number of ranks, or "
		       "on one machine", status == 130 ? "stopped by a signal (mpirun stops every "
		       "rank when one dies, and names it); " : "", r->completed, r->p.out);
		MPI_Abort(MPI_COMM_WORLD, status ? status : 1);
	}
	struct ctl c = {.cmd = CTL_STOP, .status = status};
	if (send_ctl(&c, NULL) == 0)
		MPI_Finalize();
	return status;
}

/* ---- the other ranks ---- */

static void follower_tick(struct az_run_loop *r)
{
	if (m.streaming && az_mpi_sender_poll(&m.send) < 0)
		m.streaming = 0; /* az_mpi_sender_finish reports it */
}

static const struct az_run_hooks follower_hooks = {.tick = follower_tick};

/* Remove the files of dir (one level) and dir itself. */
static void rm_files(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[1200];
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static void rm_scratch(const char *dir)
{
	char p[1100];
	snprintf(p, sizeof(p), "%s/replay", dir);
	rm_files(p);
	snprintf(p, sizeof(p), "%s/checkpoints", dir);
	rm_files(p);
	rm_files(dir);
}

/* TMPDIR/azrun-mpi-UID-PID; first remove those of this user whose process is gone. */
static int make_scratch(char *dir, size_t len)
{
	const char *base = getenv("TMPDIR");
	char prefix[64], p[AZ_RUNDIR_PATH_MAX];
	if (!base || !base[0])
		base = "/tmp";
	snprintf(prefix, sizeof(prefix), "azrun-mpi-%ld-", (long)getuid());
	DIR *d = opendir(base);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			long pid;
			if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 ||
			    sscanf(e->d_name + strlen(prefix), "%ld", &pid) != 1 || pid <= 0 ||
			    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
				continue;
			snprintf(p, sizeof(p), "%s/%s", base, e->d_name);
			rm_scratch(p);
		}
		closedir(d);
	}
	snprintf(dir, len, "%s/%s%ld", base, prefix, (long)getpid());
	snprintf(p, sizeof(p), "%s/replay", dir);
	return az_mkdir_p(p);
}

/* Receive the next control message (and the model after it, written to path). */
static int recv_ctl(struct ctl *c, const char *best, const char *cand)
{
	int rc = bcast(c, sizeof(*c), K_CONTROL);
	if (rc < 0 || !c->bytes)
		return rc;
	char *data = malloc(c->bytes), err[512];
	if (!data)
		return -ENOMEM;
	rc = bcast(data, c->bytes, K_WEIGHTS);
	if (rc == 0) {
		rc = az_write_file_atomic(c->cmd == CTL_MODEL ? best : cand, data, c->bytes, err,
					  sizeof(err));
		if (rc < 0)
			az_log("rank %d: %s", m.rank, err);
	}
	free(data);
	return rc;
}

static int follower_selfplay(struct az_run_loop *r, const struct ctl *c, const char *cand)
{
	char dir[AZ_RUNDIR_PATH_MAX];
	int rc = 0;
	if (c->best_changed) { /* the candidate it holds was promoted */
		if (rename(cand, r->best) < 0)
			return -errno;
		rc = az_pipeline_serve_model(&r->pl, AZ_MODEL_BEST, r->best);
	}
	az_rundir_path(dir, sizeof(dir), r->p.out, AZ_RUNDIR_REPLAY);
	if (rc == 0)
		rc = az_mpi_sender_begin(&m.send, r->p.g, dir, c->iteration, &m.k[K_RECORDS]);
	if (rc < 0)
		return rc;
	m.streaming = 1;
	rc = az_run_play(r, AZ_WORKER_SELFPLAY, c->iteration,
			 share_of(m.rank, m.size, AZ_WORKER_SELFPLAY, r->p.games_per_iter));
	m.streaming = 0;
	int frc = az_mpi_sender_finish(&m.send);
	rm_files(dir); /* sent: rank 0 stores them */
	az_mkdir_p(dir);
	return rc < 0 ? rc : frc;
}

static int follower_arena(struct az_run_loop *r, const struct ctl *c, const char *cand)
{
	struct az_pipeline_counters pc;
	int rc = az_pipeline_serve_model(&r->pl, AZ_MODEL_CANDIDATE, cand);
	if (rc == 0)
		rc = az_run_play(r, AZ_WORKER_ARENA, c->iteration,
				 share_of(m.rank, m.size, AZ_WORKER_ARENA, r->p.arena_games));
	if (rc < 0)
		return rc;
	az_pipeline_sample(&r->pl, &pc);
	int d = az_pipeline_arena_distinct(&r->pl, &pc.arena_hashed);
	uint64_t v[ARENA_VALUES];

	pc.arena_distinct = d < 0 ? 0 : (uint64_t)d; /* -ENOMEM: not counted, still reduced */
	if (d < 0)
		pc.arena_hashed = 0;
	arena_values(&pc, v);
	return reduce_results(v, NULL);
}

int az_mpi_follower_run(struct az_run_loop *r)
{
	static char scratch[AZ_RUNDIR_PATH_MAX];
	char cand[AZ_RUNDIR_PATH_MAX];
	int rc = make_scratch(scratch, sizeof(scratch)), started = 0, status = 0;
	if (rc < 0) {
		az_log("rank %d: cannot create a scratch directory %s: %s", m.rank, scratch,
		       strerror(-rc));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	r->p.out = scratch;
	r->hooks = &follower_hooks;
	az_rundir_path(r->best, sizeof(r->best), scratch, AZ_RUNDIR_BEST);
	snprintf(cand, sizeof(cand), "%s/candidate.safetensors", scratch);
	az_info("rank %d (pid %ld): plays 1/%d of each phase in %s", m.rank, (long)getpid(),
		m.size, scratch);
	for (;;) {
		struct ctl c;
		rc = recv_ctl(&c, r->best, cand);
		if (rc < 0)
			break;
		if (c.cmd == CTL_STOP) {
			status = c.status;
			break;
		}
		if (c.cmd == CTL_MODEL && !started) {
			rc = az_run_start(r);
			started = 1;
		} else if (c.cmd == CTL_SELFPLAY) {
			rc = follower_selfplay(r, &c, cand);
		} else if (c.cmd == CTL_ARENA) {
			rc = follower_arena(r, &c, cand);
		} else {
			rc = -EPROTO;
		}
		if (rc < 0)
			break;
	}
	az_run_finish(r);
	rm_scratch(scratch);
	if (rc < 0) {
		az_log("rank %d: %s; aborting the MPI job", m.rank,
		       rc == -EINTR ? "interrupted (the job is being stopped)" :
		       rc == -ECHILD ? "a process failed (see above)" : strerror(-rc));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Finalize();
	return status;
}
