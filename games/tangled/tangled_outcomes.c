/* SPDX-License-Identifier: MIT */
/* Complete outcome tables: every canonical colouring of a small graph (tg_canonical: smallest
 * over automorphisms and gauge flips) adjudicated once, by forked workers, into a checksummed
 * file that every process maps read-only and searches by colouring code.
 *
 * Colouring code: sum over edges of (label - 1) * 3^e (labels 1-3), so E <= 40 fits a u64.
 *
 * Table file "<path>" (native byte order; another machine's file fails its checks):
 *   struct file_header | key text (padded to 8) | u64 codes[count] (sorted, strictly
 *   increasing) | double vals[count][npairs] (upper triangle of C, row-wise) |
 *   u64 sums[nchunks]
 * sums[i] is FNV-1a, seeded with the key hash, over chunk i's codes then its values (chunk i
 * holds records [i R, min((i + 1) R, count)), R = chunk_records); header_sum covers the header
 * before it and the key text. A file is served only after every check passed: magic, version,
 * key, sizes, header sum, each chunk sum, codes increasing, values finite in [-1, 1].
 *
 * Build and crash safety. The builder takes an exclusive flock on "<path>.lock" (a second
 * builder waits, then finds the table done), enumerates the canonical codes, and keeps the
 * chunks already in "<path>.parts/" whose header, codes and sum check out. Workers claim the
 * missing chunks from a shared counter and write each as "chunk-NNNNNN" with
 * az_write_file_atomic (temp name, fsync, rename, directory fsync). When every chunk is there,
 * the table is assembled the same way: the final name appears only complete and synced. Then
 * the parts are removed. A kill -9 at any instant leaves either the complete table, or a
 * parts directory whose renamed chunks are whole (temp files are ignored and swept), so the
 * next build resumes where it stopped.
 *
 * Shared memory of a build (anonymous, MAP_SHARED, inherited by the forked workers): `next`
 * (chunk claims, RMW), `done` (records finished, for progress) and `error` (first failure).
 * Chunk contents travel through files, and the parent reads them only after waitpid(), which
 * orders them; so every atomic here is relaxed and each access says why. */
#include "games/tangled/tangled_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

#define MAXV AZ_TANGLED_MAX_VERTICES
#define TABLE_MAGIC "AZTGTAB1"
#define CHUNK_MAGIC "AZTGCHK1"
#define TABLE_VERSION 1u
#define MAX_CHUNK 256u /* records per chunk: count / 64 (so that workers share), 1..256 */

struct file_header {
	char magic[8];
	uint32_t version;
	uint32_t key_len;
	uint32_t n, e, npairs, chunk_records;
	uint64_t count, nchunks;
	uint64_t codes_off, vals_off, sums_off, total_bytes;
	uint64_t key_hash;
	uint64_t header_sum; /* FNV-1a of the bytes above, then the key text */
};
_Static_assert(sizeof(struct file_header) == 96, "file header layout");

struct chunk_header {
	char magic[8];
	uint32_t version, index, records, npairs;
	uint64_t key_hash;
	uint64_t sum; /* as sums[index] of the table */
};
_Static_assert(sizeof(struct chunk_header) == 40, "chunk header layout");

struct tg_outcomes {
	void *map;
	size_t len;
	uint64_t count;
	uint32_t npairs;
	const uint64_t *codes;
	const double *vals;
};

uint64_t tg_outcomes_code(int e, const uint8_t *labels)
{
	uint64_t c = 0;

	for (int k = e - 1; k >= 0; k--)
		c = c * 3 + (uint64_t)((labels[k] ? labels[k] : 1) - 1);
	return c;
}

void tg_outcomes_decode(int e, uint64_t code, uint8_t *labels)
{
	for (int k = 0; k < e; k++, code /= 3)
		labels[k] = (uint8_t)(1 + code % 3);
}

/* ---- enumeration ---- */

struct enum_ctx {
	const struct az_tangled_graph *g;
	const uint8_t (*perm)[MAXV];
	const int16_t *emap;
	int naut;
	uint8_t labels[TG_OUTCOMES_MAX_EDGES];
	uint64_t *codes;
	uint64_t count, cap;
	int ret;
};

/* Depth-first over the gauge-canonical colourings only: an edge joining two components of the
 * earlier green/purple edges is never purple there (gauge_canon would make it green), one
 * inside a component may be anything. The leaves are then tested against the automorphisms. */
static void enum_dfs(struct enum_ctx *c, int e, const uint8_t *comp)
{
	const struct az_tangled_graph *g = c->g;
	uint8_t canon[TG_OUTCOMES_MAX_EDGES], merged[MAXV];
	int u, v;

	if (c->ret)
		return;
	if (e == g->e) {
		tg_canonical(g, c->perm, c->emap, c->naut, 1, c->labels, canon, NULL);
		if (memcmp(canon, c->labels, (size_t)g->e) != 0)
			return;
		if (c->count == c->cap) {
			uint64_t cap = c->cap ? 2 * c->cap : 1024, *p;

			p = realloc(c->codes, cap * sizeof(*p));
			if (!p) {
				c->ret = -ENOMEM;
				return;
			}
			c->codes = p;
			c->cap = cap;
		}
		c->codes[c->count++] = tg_outcomes_code(g->e, c->labels);
		return;
	}
	u = g->eu[e];
	v = g->ev[e];
	c->labels[e] = 1;
	enum_dfs(c, e + 1, comp);
	c->labels[e] = 2;
	if (comp[u] != comp[v]) {
		for (int x = 0; x < g->n; x++)
			merged[x] = comp[x] == comp[v] ? comp[u] : comp[x];
		enum_dfs(c, e + 1, merged);
		return;
	}
	enum_dfs(c, e + 1, comp);
	c->labels[e] = 3;
	enum_dfs(c, e + 1, comp);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int tg_outcomes_enumerate(const struct az_tangled_graph *g,
			  const uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES], const int16_t *emap,
			  int naut, uint64_t **codes, uint64_t *count)
{
	struct enum_ctx c = { .g = g, .perm = perm, .emap = emap, .naut = naut };
	uint8_t comp[MAXV];

	*codes = NULL;
	*count = 0;
	if (g->e < 1 || g->e > TG_OUTCOMES_MAX_EDGES)
		return -EINVAL;
	for (int v = 0; v < g->n; v++)
		comp[v] = (uint8_t)v;
	enum_dfs(&c, 0, comp);
	if (c.ret) {
		free(c.codes);
		return c.ret;
	}
	qsort(c.codes, c.count, sizeof(*c.codes), cmp_u64);
	*codes = c.codes;
	*count = c.count;
	return 0;
}

/* ---- the table file ---- */

static uint64_t nchunks_of(const struct tg_outcomes_spec *s, uint32_t r)
{
	return (s->count + r - 1) / r;
}

static void fill_header(const struct tg_outcomes_spec *s, uint32_t r, struct file_header *h)
{
	size_t klen = strlen(s->key);

	memset(h, 0, sizeof(*h));
	memcpy(h->magic, TABLE_MAGIC, 8);
	h->version = TABLE_VERSION;
	h->key_len = (uint32_t)klen;
	h->n = (uint32_t)s->g->n;
	h->e = (uint32_t)s->g->e;
	h->npairs = s->npairs;
	h->chunk_records = r;
	h->count = s->count;
	h->nchunks = nchunks_of(s, r);
	h->codes_off = (sizeof(*h) + klen + 7) / 8 * 8;
	h->vals_off = h->codes_off + 8 * s->count;
	h->sums_off = h->vals_off + 8ull * s->npairs * s->count;
	h->total_bytes = h->sums_off + 8 * h->nchunks;
	h->key_hash = s->key_hash;
	h->header_sum = tg_fnv1a(tg_fnv1a(TG_FNV_INIT, h, offsetof(struct file_header, header_sum)),
				 s->key, klen);
}

/* FNV-1a of a chunk's codes then values, seeded with the key hash. */
static uint64_t chunk_sum(uint64_t key_hash, const uint64_t *codes, const double *vals,
			  uint64_t records, uint32_t npairs)
{
	uint64_t h = tg_fnv1a(key_hash, codes, 8 * records);

	return tg_fnv1a(h, vals, 8ull * npairs * records);
}

static int values_ok(const double *v, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (!isfinite(v[i]) || fabs(v[i]) > 1.0 + 1e-9)
			return 0;
	return 1;
}

/* Every check of the file essay on a mapped file; 0 or -EPROTO. */
static int table_verify(const struct tg_outcomes_spec *s, const uint8_t *p, size_t len)
{
	struct file_header want, h;
	const uint64_t *codes, *sums;
	const double *vals;

	struct tg_outcomes_spec fs = *s;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, p, sizeof(h));
	if (h.count > len / 8)
		return -EPROTO; /* also keeps the offsets below from overflowing */
	/* the chunk size is the builder's choice and the count the enumeration's: take them from
	 * the file (the key and the sums vouch for them), check the rest */
	fs.count = h.count;
	fill_header(&fs, h.chunk_records ? h.chunk_records : 1, &want);
	if (memcmp(&h, &want, sizeof(h)) != 0 || len != h.total_bytes ||
	    memcmp(p + sizeof(h), s->key, h.key_len) != 0)
		return -EPROTO;
	codes = (const uint64_t *)(p + h.codes_off);
	vals = (const double *)(p + h.vals_off);
	sums = (const uint64_t *)(p + h.sums_off);
	for (uint64_t i = 0; i < h.nchunks; i++) {
		uint64_t lo = i * h.chunk_records, n = h.count - lo;

		n = n < h.chunk_records ? n : h.chunk_records;
		if (chunk_sum(h.key_hash, codes + lo, vals + lo * h.npairs, n, h.npairs) != sums[i])
			return -EPROTO;
	}
	for (uint64_t i = 1; i < h.count; i++)
		if (codes[i] <= codes[i - 1])
			return -EPROTO;
	return values_ok(vals, h.count * h.npairs) ? 0 : -EPROTO;
}

int tg_outcomes_open(const struct tg_outcomes_spec *s, struct tg_outcomes **out)
{
	struct tg_outcomes *t;
	struct stat sb;
	void *map;
	int fd, ret;

	*out = NULL;
	fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) != 0 || sb.st_size < (off_t)sizeof(struct file_header)) {
		close(fd);
		return -EPROTO;
	}
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	ret = map == MAP_FAILED ? -errno : 0;
	close(fd); /* the mapping keeps the file */
	if (ret)
		return ret;
	ret = table_verify(s, map, (size_t)sb.st_size);
	t = ret ? NULL : malloc(sizeof(*t));
	if (!t) {
		munmap(map, (size_t)sb.st_size);
		return ret ? ret : -ENOMEM;
	}
	const struct file_header *h = map;

	t->map = map;
	t->len = (size_t)sb.st_size;
	t->count = h->count;
	t->npairs = h->npairs;
	t->codes = (const uint64_t *)((const uint8_t *)map + h->codes_off);
	t->vals = (const double *)((const uint8_t *)map + h->vals_off);
	*out = t;
	return 0;
}

void tg_outcomes_close(struct tg_outcomes *t)
{
	if (!t)
		return;
	munmap(t->map, t->len);
	free(t);
}

const double *tg_outcomes_find(const struct tg_outcomes *t, uint64_t code)
{
	uint64_t lo = 0, hi = t->count;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (t->codes[mid] < code)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->count && t->codes[lo] == code ? t->vals + lo * t->npairs : NULL;
}

uint64_t tg_outcomes_count(const struct tg_outcomes *t)
{
	return t->count;
}

const uint64_t *tg_outcomes_codes(const struct tg_outcomes *t)
{
	return t->codes;
}

size_t tg_outcomes_bytes(const struct tg_outcomes *t)
{
	return t->len;
}

/* ---- building ---- */

/* Shared by the builder and its forked workers (anonymous MAP_SHARED memory). */
struct build_shm {
	/* any process, atomic RMW */
	_Atomic uint64_t next;  /* index into pending[] of the next chunk to claim */
	_Atomic uint64_t done;  /* records computed so far (progress only) */
	_Atomic int error;      /* first failure (-errno), 0 while none */
};

struct builder {
	const struct tg_outcomes_spec *s;
	struct tg_outcomes_build *b;
	uint32_t r;             /* records per chunk */
	uint64_t nchunks;
	uint64_t *pending;      /* chunks still to compute, ascending */
	uint64_t npending, limit; /* limit: claims allowed (stop_after) */
	struct build_shm *shm;
	char parts[4200];
};

static void chunk_path(const struct builder *bd, uint64_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s/chunk-%06llu", bd->parts, (unsigned long long)i);
}

static uint64_t chunk_records(const struct builder *bd, uint64_t i)
{
	uint64_t n = bd->s->count - i * bd->r;

	return n < bd->r ? n : bd->r;
}

/* Read chunk i into codes/vals (may be NULL: check only). 0 when its file is whole and holds
 * exactly the expected codes; -EPROTO / -errno otherwise. */
static int chunk_read(const struct builder *bd, uint64_t i, double *vals, uint64_t *sum)
{
	char path[4300];
	uint8_t *buf = NULL;
	size_t len = 0;
	uint64_t n = chunk_records(bd, i), lo = i * bd->r;
	uint32_t np = bd->s->npairs;
	struct chunk_header h;
	double *v = NULL;
	int ret;

	chunk_path(bd, i, path, sizeof(path));
	ret = az_read_file(path, (char **)&buf, &len);
	if (ret)
		return ret;
	ret = -EPROTO;
	if (len != sizeof(h) + 8 * n + 8ull * np * n)
		goto out;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, CHUNK_MAGIC, 8) != 0 || h.version != TABLE_VERSION || h.index != i ||
	    h.records != n || h.npairs != np || h.key_hash != bd->s->key_hash ||
	    memcmp(buf + sizeof(h), bd->s->codes + lo, 8 * n) != 0)
		goto out;
	/* the codes are in place (checked above); the values are copied out to stay aligned */
	v = vals ? vals + lo * np : malloc(8ull * np * n + 8);
	if (!v) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(v, buf + sizeof(h) + 8 * n, 8ull * np * n);
	if (chunk_sum(h.key_hash, bd->s->codes + lo, v, n, np) == h.sum && values_ok(v, n * np)) {
		ret = 0;
		if (sum)
			*sum = h.sum;
	}
	if (!vals)
		free(v);
out:
	free(buf);
	return ret;
}

/* Compute chunk i and write it (temp name, fsync, rename). 0 or -errno. */
static int chunk_compute(const struct builder *bd, uint64_t i)
{
	const struct tg_outcomes_spec *s = bd->s;
	uint64_t n = chunk_records(bd, i), lo = i * bd->r;
	uint32_t np = s->npairs;
	size_t bytes = sizeof(struct chunk_header) + 8 * n + 8ull * np * n;
	uint8_t *buf = calloc(1, bytes), labels[TG_OUTCOMES_MAX_EDGES];
	double corr[MAXV * MAXV], *vals;
	struct chunk_header h = { .version = TABLE_VERSION, .index = (uint32_t)i,
				  .records = (uint32_t)n, .npairs = np, .key_hash = s->key_hash };
	char path[4300], err[256];
	int ret = 0, nv = s->g->n;

	if (!buf)
		return -ENOMEM;
	vals = (double *)(buf + sizeof(h) + 8 * n); /* sizeof(h) and 8 n keep it aligned */
	for (uint64_t k = 0; k < n && !ret; k++) {
		tg_outcomes_decode(s->g->e, s->codes[lo + k], labels);
		ret = bd->b->eval(bd->b->eval_ctx, labels, corr);
		for (int u = 0, p = 0; u < nv && !ret; u++)
			for (int v = u + 1; v < nv; v++)
				vals[k * np + (uint64_t)p++] = corr[u * nv + v];
		/* relaxed: a progress count; nothing is published through it */
		atomic_fetch_add_explicit(&bd->shm->done, 1, memory_order_relaxed);
	}
	if (!ret) {
		memcpy(h.magic, CHUNK_MAGIC, 8);
		h.sum = chunk_sum(s->key_hash, s->codes + lo, vals, n, np);
		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), s->codes + lo, 8 * n);
		chunk_path(bd, i, path, sizeof(path));
		ret = az_write_file_atomic(path, buf, bytes, err, sizeof(err));
	}
	free(buf);
	return ret;
}

/* Claim and compute chunks until none is left, the claim limit is reached or a process
 * failed. Runs in each worker (or in the builder itself with one worker). */
static void work(const struct builder *bd, int report)
{
	for (;;) {
		/* relaxed: the RMW alone makes each claim unique; results travel through files */
		uint64_t k = atomic_fetch_add_explicit(&bd->shm->next, 1, memory_order_relaxed);
		int ret, zero = 0;

		/* relaxed: a stop hint; a worker that misses it just finishes one more chunk */
		if (k >= bd->npending || k >= bd->limit ||
		    atomic_load_explicit(&bd->shm->error, memory_order_relaxed))
			return;
		ret = chunk_compute(bd, bd->pending[k]);
		if (ret) {
			/* relaxed: the parent reads it after waitpid(), which orders it */
			atomic_compare_exchange_strong_explicit(&bd->shm->error, &zero, ret,
								memory_order_relaxed,
								memory_order_relaxed);
			return;
		}
		if (report && bd->b->progress)
			bd->b->progress(bd->b->progress_ctx,
					bd->b->kept +
					atomic_load_explicit(&bd->shm->done, memory_order_relaxed),
					bd->s->count);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Fork the workers and wait for them, reporting progress. 0 or the first failure. */
static int run_workers(struct builder *bd, int workers)
{
	pid_t *pids = calloc((size_t)workers, sizeof(*pids));
	int running = 0, ret = 0;

	if (!pids)
		return -ENOMEM;
	for (int w = 0; w < workers; w++) {
		pid_t pid = fork();

		if (pid < 0) {
			ret = -errno;
			break;
		}
		if (pid == 0) {
			/* a worker dies with its builder: a killed build leaves no orphans */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(1);
			work(bd, 0);
			_exit(0);
		}
		pids[w] = pid;
		running++;
	}
	if (ret) /* make the started ones stop after their current chunk */
		atomic_store_explicit(&bd->shm->error, ret, memory_order_relaxed);
	while (running) {
		for (int w = 0; w < workers; w++) {
			int st = 0;
			pid_t r;

			if (pids[w] <= 0) /* reaped already (or never started) */
				continue;
			r = waitpid(pids[w], &st, WNOHANG);
			/* ECHILD: the caller's SIGCHLD handler reaped it; assemble() checks its chunks */
			if (r != pids[w] && !(r < 0 && errno == ECHILD))
				continue;
			pids[w] = 0;
			running--;
			if (r > 0 && (!WIFEXITED(st) || WEXITSTATUS(st)) && !ret)
				ret = -ECHILD;
		}
		if (bd->b->progress)
			/* relaxed: a progress count (see the essay) */
			bd->b->progress(bd->b->progress_ctx,
					bd->b->kept + atomic_load_explicit(&bd->shm->done,
									   memory_order_relaxed),
					bd->s->count);
		if (running)
			sleep_ms(100);
	}
	free(pids);
	/* relaxed: every worker has been reaped, waitpid() ordered its stores before this load */
	int first = atomic_load_explicit(&bd->shm->error, memory_order_relaxed);

	return first ? first : ret;
}

/* Remove temp files a killed build left in the parts directory. */
static void sweep_temps(const char *parts)
{
	DIR *d = opendir(parts);
	struct dirent *de;
	char path[4400];

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		if (!strstr(de->d_name, ".tmp."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", parts, de->d_name);
		unlink(path);
	}
	closedir(d);
}

/* Every chunk is there: write the table (temp, fsync, rename), then drop the parts. */
static int assemble(struct builder *bd, char *err, size_t errlen)
{
	const struct tg_outcomes_spec *s = bd->s;
	struct file_header h;
	uint8_t *img;
	char path[4300];
	int ret = 0;

	fill_header(s, bd->r, &h);
	img = calloc(1, h.total_bytes);
	if (!img)
		return -ENOMEM;
	memcpy(img, &h, sizeof(h));
	memcpy(img + sizeof(h), s->key, h.key_len);
	memcpy(img + h.codes_off, s->codes, 8 * s->count);
	for (uint64_t i = 0; i < bd->nchunks && !ret; i++) {
		uint64_t sum = 0;

		ret = chunk_read(bd, i, (double *)(img + h.vals_off), &sum);
		memcpy(img + h.sums_off + 8 * i, &sum, 8);
	}
	if (ret) {
		snprintf(err, errlen, "outcome table %s: a chunk is missing or damaged at assembly",
			 s->path);
		goto out;
	}
	ret = az_write_file_atomic(s->path, img, h.total_bytes, err, errlen);
	if (ret)
		goto out;
	for (uint64_t i = 0; i < bd->nchunks; i++) {
		chunk_path(bd, i, path, sizeof(path));
		unlink(path);
	}
	sweep_temps(bd->parts);
	rmdir(bd->parts);
out:
	free(img);
	return ret;
}

/* Keep the chunks that check out; list the others in bd->pending. */
static int plan(struct builder *bd)
{
	bd->pending = malloc(sizeof(*bd->pending) * (bd->nchunks ? bd->nchunks : 1));
	if (!bd->pending)
		return -ENOMEM;
	bd->npending = 0;
	bd->b->kept = 0;
	for (uint64_t i = 0; i < bd->nchunks; i++) {
		int ret = chunk_read(bd, i, NULL, NULL);

		if (ret == -ENOMEM)
			return ret;
		if (ret == 0)
			bd->b->kept += chunk_records(bd, i);
		else
			bd->pending[bd->npending++] = i;
	}
	return 0;
}

static int build_locked(struct builder *bd, char *err, size_t errlen)
{
	int workers = bd->b->workers, ret;

	if (mkdir(bd->parts, 0755) != 0 && errno != EEXIST) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", bd->parts, strerror(errno));
		return ret;
	}
	sweep_temps(bd->parts);
	ret = plan(bd);
	if (ret)
		return ret;
	bd->limit = bd->b->stop_after ? bd->b->stop_after : UINT64_MAX;
	if (bd->b->progress)
		bd->b->progress(bd->b->progress_ctx, bd->b->kept, bd->s->count);
	if ((uint64_t)workers > bd->npending)
		workers = (int)bd->npending;
	if (workers <= 1) {
		work(bd, 1);
		/* relaxed: written by this process only */
		ret = atomic_load_explicit(&bd->shm->error, memory_order_relaxed);
	} else {
		ret = run_workers(bd, workers);
	}
	/* relaxed: all workers are reaped (or none ran) */
	bd->b->computed = atomic_load_explicit(&bd->shm->done, memory_order_relaxed);
	if (ret) {
		snprintf(err, errlen, "outcome table %s: a worker failed: %s", bd->s->path,
			 strerror(-ret));
		return ret;
	}
	if (bd->npending > bd->limit) {
		snprintf(err, errlen, "outcome table %s: stopped after %llu chunks", bd->s->path,
			 (unsigned long long)bd->limit);
		return -EINTR;
	}
	return assemble(bd, err, errlen);
}

int tg_outcomes_build(const struct tg_outcomes_spec *s, struct tg_outcomes_build *b,
		      char *err, size_t errlen)
{
	struct builder bd = { .s = s, .b = b };
	struct tg_outcomes *t;
	char lock[4200];
	int fd, ret;

	b->kept = b->computed = 0;
	/* independent of the worker count, so that a resumed build finds the same chunks */
	bd.r = b->chunk_records ? b->chunk_records
				: (uint32_t)(s->count / 64 < 1 ? 1 : s->count / 64 > MAX_CHUNK ? MAX_CHUNK
											: s->count / 64);
	bd.nchunks = nchunks_of(s, bd.r);
	snprintf(bd.parts, sizeof(bd.parts), "%s.parts", s->path);
	snprintf(lock, sizeof(lock), "%s.lock", s->path);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", lock, strerror(errno));
		return ret;
	}
	while ((ret = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
		;
	if (ret) {
		ret = -errno;
		snprintf(err, errlen, "%s: lock: %s", lock, strerror(errno));
		goto out_close;
	}
	/* another process may have finished it while we waited */
	if (tg_outcomes_open(s, &t) == 0) {
		b->kept = s->count;
		tg_outcomes_close(t);
		ret = 0;
		goto out_unlock;
	}
	bd.shm = mmap(NULL, sizeof(*bd.shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (bd.shm == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "outcome table: shared memory: %s", strerror(errno));
		goto out_unlock;
	}
	/* relaxed: no worker exists yet; fork() publishes these */
	atomic_store_explicit(&bd.shm->next, 0, memory_order_relaxed);
	atomic_store_explicit(&bd.shm->done, 0, memory_order_relaxed);
	atomic_store_explicit(&bd.shm->error, 0, memory_order_relaxed);
	ret = build_locked(&bd, err, errlen);
	munmap(bd.shm, sizeof(*bd.shm));
	free(bd.pending);
out_unlock:
	/* the lock file stays: unlinking it would let a waiter and a newcomer lock two inodes */
	flock(fd, LOCK_UN);
out_close:
	close(fd);
	return ret;
}
