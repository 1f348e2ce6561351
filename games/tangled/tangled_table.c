/* SPDX-License-Identifier: MIT */
/* The adjudicator front: method selection, the per-colouring caches and the cache file.
 *
 * Every result depends on the colouring only (the tokens just pick two influence entries), so
 * two maps hold everything: `canon` maps a canonical colouring (smallest over the graph's
 * automorphisms and gauge flips, see tg_canonical) to its correlation matrix (upper triangle),
 * `raw` maps a colouring as played to its influence vector, so that a repeated terminal state
 * costs one hash lookup. Only canonical entries are stored in the file.
 *
 * Cache file "<cache_dir>/tangled-<graph>-<method>-<key hash>.cache":
 *   header:  "AZTANGLC" | u32 version | u32 key_len | key text | u32 kb | u32 vn | u64 fnv
 *   records: kb bytes packed colouring | vn doubles | u64 fnv (seeded with the header's fnv)
 * The key text names the graph (every edge), the method and all its parameters (schedule
 * hash, anneal time; reads, sweeps, betas, seed) and the automorphism count. Native byte
 * order: a file from another machine fails its checksums and is recomputed. A file whose
 * header does not match, or with a bad record (checksum, non-canonical key, value out of
 * range), is never trusted: good records are kept, bad ones recomputed, the file rewritten by
 * rename. New entries are appended as single O_APPEND writes of fixed-size records, so forked
 * workers can share a file; a torn record fails its checksum at the next load. The token
 * variant is not part of the key: entries are per colouring and serve every placement. */
#include "games/tangled/tangled_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

#define MAXV AZ_TANGLED_MAX_VERTICES
#define CACHE_MAGIC "AZTANGLC"
#define CACHE_VERSION 1u
#define TABLE_MAX_EDGES 6  /* "table" computes every colouring up front up to 3^6 = 729 */
#define TABLE_EXACT_MAX_N 6 /* default inner method of "table": exact up to here */

enum method { M_EXACT, M_KRYLOV, M_ANNEAL };
static const char *const method_names[] = { "exact", "exact-krylov", "anneal" };

/* ---- the adjudicator ---- */

struct az_tangled_adj {
	struct az_tangled_graph g;
	enum method method;
	int table;
	char name[32];
	struct tg_schedule sched;
	double tf;
	struct tg_anneal_params ap;
	int naut;
	uint8_t (*perm)[MAXV];
	int16_t *emap;
	struct tg_map canon; /* packed canonical colouring -> correlations, upper triangle */
	struct tg_map raw;   /* packed colouring -> influence */
	uint32_t kb, npairs;
	char *key;
	uint64_t header_hash;
	char path[4096];
	int fd;           /* O_APPEND cache file, -1 when none */
	struct tg_outcomes *tab; /* complete outcome table (mapped), NULL when none */
	struct tg_orbit orbit;   /* which automorphism canonicalises a colouring (with tab) */
	char tab_path[4096];
	struct az_tangled_adj_stats st;
	double *scratch;  /* N*N */
};

static void pack(const struct az_tangled_adj *a, const uint8_t *labels, uint8_t *key)
{
	memset(key, 0, a->kb);
	for (int e = 0; e < a->g.e; e++)
		key[e / 4] |= (uint8_t)((labels[e] ? labels[e] : 1) << (2 * (e % 4)));
}

static void unpack(const struct az_tangled_adj *a, const uint8_t *key, uint8_t *labels)
{
	for (int e = 0; e < a->g.e; e++)
		labels[e] = (uint8_t)((key[e / 4] >> (2 * (e % 4))) & 3);
}

/* Run the method on a (canonical) colouring: corr[N*N]. */
static int evaluate(struct az_tangled_adj *a, const uint8_t *labels, double *corr)
{
	struct tg_anneal_params p;

	a->st.evaluations++;
	switch (a->method) {
	case M_EXACT:
		return tg_exact_correlations(&a->g, labels, &a->sched, a->tf, corr);
	case M_KRYLOV:
		return tg_krylov_correlations(&a->g, labels, &a->sched, a->tf, corr);
	case M_ANNEAL:
		/* one stream per colouring: results do not depend on the order of requests */
		p = a->ap;
		p.seed = tg_fnv1a(tg_fnv1a(TG_FNV_INIT, &a->ap.seed, sizeof(a->ap.seed)), labels,
				  (size_t)a->g.e);
		return tg_anneal_correlations(&a->g, labels, &p, corr);
	}
	return -EINVAL;
}

/* ---- cache file ---- */

static size_t record_bytes(const struct az_tangled_adj *a)
{
	return a->kb + sizeof(double) * a->npairs + sizeof(uint64_t);
}

static void make_record(const struct az_tangled_adj *a, const uint8_t *key, const double *vals,
			uint8_t *rec)
{
	uint64_t h;

	memcpy(rec, key, a->kb);
	memcpy(rec + a->kb, vals, sizeof(double) * a->npairs);
	h = tg_fnv1a(a->header_hash, rec, a->kb + sizeof(double) * a->npairs);
	memcpy(rec + a->kb + sizeof(double) * a->npairs, &h, sizeof(h));
}

/* The header bytes into buf (NULL: size only). */
static size_t make_header(const struct az_tangled_adj *a, uint8_t *buf)
{
	uint32_t ver = CACHE_VERSION, klen = (uint32_t)strlen(a->key), kb = a->kb, vn = a->npairs;
	size_t n = 8 + 4 + 4 + klen + 4 + 4;
	uint64_t h;

	if (!buf)
		return n + 8;
	memcpy(buf, CACHE_MAGIC, 8);
	memcpy(buf + 8, &ver, 4);
	memcpy(buf + 12, &klen, 4);
	memcpy(buf + 16, a->key, klen);
	memcpy(buf + 16 + klen, &kb, 4);
	memcpy(buf + 20 + klen, &vn, 4);
	h = tg_fnv1a(TG_FNV_INIT, buf, n);
	memcpy(buf + n, &h, 8);
	return n + 8;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write header + every canonical entry to a temporary file and rename it over the cache. */
static int rewrite_file(struct az_tangled_adj *a)
{
	char tmp[4200];
	size_t hb = make_header(a, NULL), rb = record_bytes(a);
	uint8_t *buf = malloc(hb > rb ? hb : rb);
	int fd, ret = 0;

	if (!buf)
		return -ENOMEM;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", a->path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	make_header(a, buf);
	ret = write_all(fd, buf, hb);
	for (size_t i = 0; !ret && i < a->canon.cap; i++) {
		if (!a->canon.used[i])
			continue;
		make_record(a, a->canon.keys + i * a->kb, a->canon.vals + i * a->npairs, buf);
		ret = write_all(fd, buf, rb);
	}
	if (!ret && fsync(fd) != 0)
		ret = -errno;
	close(fd);
	if (!ret && rename(tmp, a->path) != 0)
		ret = -errno;
	if (ret)
		unlink(tmp);
	free(buf);
	return ret;
}

/* A record is trusted only if its checksum holds, its colouring is canonical and every
 * correlation is a finite number in [-1, 1]. */
static int record_ok(struct az_tangled_adj *a, const uint8_t *rec)
{
	uint8_t labels[AZ_TANGLED_MAX_EDGES], canon[AZ_TANGLED_MAX_EDGES], key[256];
	uint64_t h, want;
	double x;

	h = tg_fnv1a(a->header_hash, rec, a->kb + sizeof(double) * a->npairs);
	memcpy(&want, rec + a->kb + sizeof(double) * a->npairs, sizeof(want));
	if (h != want)
		return 0;
	unpack(a, rec, labels);
	for (int e = 0; e < a->g.e; e++)
		if (labels[e] < 1)
			return 0;
	pack(a, labels, key);
	if (memcmp(key, rec, a->kb) != 0)
		return 0; /* stray bits */
	tg_canonical(&a->g, (const uint8_t (*)[MAXV])a->perm, a->emap, a->naut, 1, labels, canon,
		     NULL);
	if (memcmp(canon, labels, (size_t)a->g.e) != 0)
		return 0;
	for (uint32_t i = 0; i < a->npairs; i++) {
		memcpy(&x, rec + a->kb + sizeof(double) * i, sizeof(x));
		if (!isfinite(x) || fabs(x) > 1.0 + 1e-9)
			return 0;
	}
	return 1;
}

/* Load the cache file if it exists. Returns 1 when it must be rewritten (absent, or not
 * trusted in whole or in part), 0 when it is fine as it is, -ENOMEM. */
static int load_file(struct az_tangled_adj *a)
{
	size_t hb = make_header(a, NULL), rb = record_bytes(a), len, off;
	uint8_t *want = malloc(hb), *buf = NULL;
	struct stat sb;
	int fd, ret = 1, dup = 0;

	if (!want)
		return -ENOMEM;
	make_header(a, want);
	fd = open(a->path, O_RDONLY);
	if (fd < 0)
		goto out; /* absent: create */
	if (fstat(fd, &sb) != 0 || sb.st_size < (off_t)hb)
		goto rejected;
	len = (size_t)sb.st_size;
	buf = malloc(len);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	for (off = 0; off < len;) {
		ssize_t r = read(fd, buf + off, len - off);

		if (r <= 0)
			goto rejected;
		off += (size_t)r;
	}
	if (memcmp(buf, want, hb) != 0)
		goto rejected; /* other key, version or damaged header */
	ret = (len - hb) % rb != 0; /* a torn tail: rewrite */
	for (off = hb; off + rb <= len; off += rb) {
		double full[MAXV * MAXV];

		if (!record_ok(a, buf + off)) {
			ret = 1;
			a->st.file_rejected = 1;
			continue;
		}
		if (tg_map_get(&a->canon, buf + off)) {
			dup = 1; /* two processes computed it: compact the file */
			continue;
		}
		memcpy(full, buf + off + a->kb, sizeof(double) * a->npairs);
		if (tg_map_put(&a->canon, buf + off, full)) {
			ret = -ENOMEM;
			goto out;
		}
		a->st.file_loaded++;
	}
	if (ret)
		a->st.file_rejected = 1;
	ret |= dup;
	goto out;
rejected:
	a->st.file_rejected = 1;
	ret = 1;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(want);
	return ret;
}

static void append_record(struct az_tangled_adj *a, const uint8_t *key, const double *vals)
{
	uint8_t rec[256 + sizeof(double) * MAXV * MAXV / 2 + 8];

	if (a->fd < 0 || record_bytes(a) > sizeof(rec))
		return;
	make_record(a, key, vals, rec);
	/* one write of a whole record; the cache is an accelerator, failures only cost time */
	if (write(a->fd, rec, record_bytes(a)) != (ssize_t)record_bytes(a))
		return;
}

/* ---- lookups ---- */

int az_tangled_adj_correlations(struct az_tangled_adj *a, const uint8_t *labels, double *corr)
{
	uint8_t canon[AZ_TANGLED_MAX_EDGES], key[256];
	struct tg_transform t;
	const double *cv;
	double *full = a->scratch, up[MAXV * (MAXV - 1) / 2];
	int n = a->g.n, ret;

	tg_orbit_canonical(&a->orbit, &a->g, (const uint8_t (*)[MAXV])a->perm, a->emap, a->naut,
			   a->tab, labels, canon, &t);
	pack(a, canon, key);
	cv = a->tab ? tg_outcomes_find(a->tab, tg_outcomes_code(a->g.e, canon)) : NULL;
	if (!cv)
		cv = tg_map_get(&a->canon, key);
	if (!cv) {
		ret = evaluate(a, canon, full);
		if (ret)
			return ret;
		for (int i = 0, p = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				up[p++] = full[i * n + j];
		ret = tg_map_put(&a->canon, key, up);
		if (ret)
			return ret;
		append_record(a, key, up);
		cv = tg_map_get(&a->canon, key);
	}
	/* C[u][v] = g[p u] g[p v] C_canon[p u][p v] */
	for (int u = 0; u < n; u++) {
		corr[u * n + u] = 0.0;
		for (int v = u + 1; v < n; v++) {
			int pu = t.perm[u], pv = t.perm[v], i = pu < pv ? pu : pv,
			    j = pu < pv ? pv : pu;
			/* index of (i, j), i < j, in the row-wise upper triangle */
			size_t idx = (size_t)i * (size_t)(2 * n - i - 1) / 2 + (size_t)(j - i - 1);
			double c = t.gauge[pu] * t.gauge[pv] * cv[idx];

			corr[u * n + v] = c;
			corr[v * n + u] = c;
		}
	}
	return 0;
}

int az_tangled_adj_influence(struct az_tangled_adj *a, const uint8_t *labels, double *f)
{
	uint8_t key[256];
	const double *v;
	int n = a->g.n, ret;

	a->st.lookups++;
	pack(a, labels, key);
	v = tg_map_get(&a->raw, key);
	if (v) {
		memcpy(f, v, sizeof(double) * (size_t)n);
		return 0;
	}
	ret = az_tangled_adj_correlations(a, labels, a->scratch);
	if (ret)
		return ret;
	for (int k = 0; k < n; k++) {
		f[k] = 0.0;
		for (int j = 0; j < n; j++)
			f[k] += a->scratch[j * n + k];
	}
	return tg_map_put(&a->raw, key, f);
}

int az_tangled_adj_judge(struct az_tangled_adj *a, const uint8_t *state, double epsilon,
			 struct az_tangled_outcome *out)
{
	int red = -1, blue = -1, ret;

	for (int v = 0; v < a->g.n; v++) {
		if (state[v] == 1)
			red = v;
		else if (state[v] == 2)
			blue = v;
	}
	if (red < 0 || blue < 0)
		return -EINVAL;
	ret = az_tangled_adj_influence(a, state + a->g.n, out->influence);
	if (ret)
		return ret;
	out->score = out->influence[red] - out->influence[blue];
	out->winner = out->score > epsilon ? AZ_TANGLED_RED :
		      out->score < -epsilon ? AZ_TANGLED_BLUE : AZ_TANGLED_DRAW;
	return 0;
}

/* ---- creation ---- */

static int parse_method(const char *s, enum method *m)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(s, method_names[i]) == 0) {
			*m = (enum method)i;
			return 0;
		}
	return -EINVAL;
}

static int choose_method(struct az_tangled_adj *a, const char *name, char *err, size_t errlen)
{
	const char *inner = NULL;
	int n = a->g.n;

	if (!name || strcmp(name, "table") == 0) {
		a->table = 1;
		a->method = n <= TABLE_EXACT_MAX_N ? M_EXACT : M_ANNEAL;
	} else if (strncmp(name, "table:", 6) == 0) {
		a->table = 1;
		inner = name + 6;
	} else {
		inner = name;
	}
	if (inner && parse_method(inner, &a->method)) {
		if (err && errlen)
			snprintf(err, errlen,
				 "unknown adjudicator '%s' (exact, exact-krylov, anneal, table, "
				 "table:METHOD)", name);
		return -EINVAL;
	}
	if ((a->method == M_EXACT && n > TG_EXACT_MAX_N) ||
	    (a->method == M_KRYLOV && n > TG_KRYLOV_MAX_N)) {
		if (err && errlen)
			snprintf(err, errlen,
				 "adjudicator %s handles at most %d vertices; graph %s has %d "
				 "(use %s)", method_names[a->method],
				 a->method == M_EXACT ? TG_EXACT_MAX_N : TG_KRYLOV_MAX_N, a->g.name,
				 n, n <= TG_KRYLOV_MAX_N ? "exact-krylov or anneal" : "anneal");
		return -EINVAL;
	}
	snprintf(a->name, sizeof(a->name), "%s%s", a->table ? "table:" : "",
		 method_names[a->method]);
	return 0;
}

/* The annealing path that runs (named in the cache key: the numbers differ per path). */
static int anneal_path(struct az_tangled_adj *a, const char *name, char *err, size_t errlen)
{
	enum tg_anneal_path want = TG_ANNEAL_AUTO;
	int path;

	if (name && tg_anneal_path_parse(name, &want)) {
		if (err && errlen)
			snprintf(err, errlen, "anneal path '%s': auto, scalar, avx2 or avx512", name);
		return -EINVAL;
	}
	path = tg_anneal_path_effective(want, a->g.n);
	if (path < 0) {
		if (err && errlen)
			snprintf(err, errlen, "AZ_TANGLED_ANNEAL='%s': auto, scalar, avx2 or avx512",
				 getenv("AZ_TANGLED_ANNEAL"));
		return -EINVAL;
	}
	if (!tg_anneal_path_supported((enum tg_anneal_path)path)) {
		if (err && errlen)
			snprintf(err, errlen, "anneal path %s: this CPU lacks its instructions",
				 tg_anneal_path_name((enum tg_anneal_path)path));
		return -ENODEV;
	}
	a->ap.path = (enum tg_anneal_path)path;
	return 0;
}

/* The cache key: graph, method, parameters, symmetry reduction. */
static int make_key(struct az_tangled_adj *a)
{
	size_t cap = 256 + 8 * (size_t)a->g.e, n;
	char *k = malloc(cap);

	if (!k)
		return -ENOMEM;
	n = (size_t)snprintf(k, cap, "tangled outcome cache; graph n=%d e=%d edges=", a->g.n,
			     a->g.e);
	for (int e = 0; e < a->g.e; e++)
		n += (size_t)snprintf(k + n, cap - n, "%s%d-%d", e ? "," : "", a->g.eu[e],
				      a->g.ev[e]);
	if (a->method == M_ANNEAL)
		n += (size_t)snprintf(k + n, cap - n,
				      "; method=anneal reads=%u sweeps=%u beta_min=%.17g "
				      "beta_max=%.17g seed=%llu path=%s", a->ap.reads,
				      a->ap.sweeps, a->ap.beta_min, a->ap.beta_max,
				      (unsigned long long)a->ap.seed, tg_anneal_path_name(a->ap.path));
	else
		n += (size_t)snprintf(k + n, cap - n, "; method=%s tf=%.17g schedule=%016llx",
				      method_names[a->method], a->tf,
				      (unsigned long long)a->sched.hash);
	snprintf(k + n, cap - n, "; automorphisms=%d gauge=1", a->naut);
	a->key = k;
	return 0;
}

/* Name the cache file and load it; *stale = 1 when it must be (re)written. */
static int cache_load(struct az_tangled_adj *a, const char *dir, int *stale, char *err,
		      size_t errlen)
{
	size_t hb;
	uint8_t *hdr;
	int ret;

	snprintf(a->path, sizeof(a->path), "%s/tangled-%s%d-%s-%016llx.cache", dir,
		 a->g.number ? "g" : "file", a->g.number, method_names[a->method],
		 (unsigned long long)tg_fnv1a(TG_FNV_INIT, a->key, strlen(a->key)));
	hb = make_header(a, NULL);
	hdr = malloc(hb);
	if (!hdr)
		return -ENOMEM;
	make_header(a, hdr);
	memcpy(&a->header_hash, hdr + hb - 8, 8);
	free(hdr);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		ret = -errno;
		if (err && errlen)
			snprintf(err, errlen, "cache directory %s: %s", dir, strerror(errno));
		return ret;
	}
	ret = load_file(a);
	if (ret < 0)
		return ret;
	*stale = ret;
	return 0;
}

/* Rewrite the file when stale, then open it for appending new entries. */
static int cache_open(struct az_tangled_adj *a, int stale, char *err, size_t errlen)
{
	int ret;

	if (stale) {
		ret = rewrite_file(a);
		if (ret) {
			if (err && errlen)
				snprintf(err, errlen, "cache file %s: %s", a->path, strerror(-ret));
			return ret;
		}
	}
	a->fd = open(a->path, O_WRONLY | O_APPEND);
	if (a->fd < 0) {
		ret = -errno;
		if (err && errlen)
			snprintf(err, errlen, "cache file %s: %s", a->path, strerror(errno));
		return ret;
	}
	return 0;
}

/* Every colouring of a small graph, computed now ("table"). */
static int fill_table(struct az_tangled_adj *a)
{
	uint8_t labels[TABLE_MAX_EDGES];
	double f[MAXV];
	int total = 1, ret;

	for (int e = 0; e < a->g.e; e++)
		total *= 3;
	for (int c = 0; c < total; c++) {
		for (int e = 0, x = c; e < a->g.e; e++, x /= 3)
			labels[e] = (uint8_t)(1 + x % 3);
		ret = az_tangled_adj_influence(a, labels, f);
		if (ret)
			return ret;
	}
	a->st.lookups = 0;
	return 0;
}

/* ---- complete outcome table (games/tangled/tangled_outcomes.c) ---- */

static int table_eval(void *ctx, const uint8_t *labels, double *corr)
{
	return evaluate(ctx, labels, corr);
}

/* Build the table of a qualifying graph in dir (workers, progress from o). 0 or -errno. */
static int table_build(struct az_tangled_adj *a, const struct az_tangled_options *o,
		       struct tg_outcomes_spec *s, char *err, size_t errlen)
{
	struct tg_outcomes_build b = {
		.workers = o->table_workers > 0 ? o->table_workers
						: (int)sysconf(_SC_NPROCESSORS_ONLN),
		.eval = table_eval, .eval_ctx = a,
		.progress = o->table_progress, .progress_ctx = o->table_progress_ctx,
	};
	uint64_t *codes, before = a->st.evaluations;
	int ret;

	ret = tg_outcomes_enumerate(&a->g, (const uint8_t (*)[MAXV])a->perm, a->emap, a->naut,
				    &codes, &s->count);
	if (ret) {
		snprintf(err, errlen, "enumerating the colourings of %s: %s", a->g.name,
			 strerror(-ret));
		return ret;
	}
	s->codes = codes;
	ret = tg_outcomes_build(s, &b, err, errlen);
	free(codes);
	s->codes = NULL;
	a->st.evaluations = before + b.computed; /* in-process or forked, counted once */
	a->st.table_built = 1;
	return ret;
}

/* Map the table of graph + method + parameters from dir, building it first when it is
 * absent or fails its checks (a damaged file is never served). 0 or -errno with err. */
static int table_setup(struct az_tangled_adj *a, const struct az_tangled_options *o,
		       const char *dir, char *err, size_t errlen)
{
	uint64_t kh = tg_fnv1a(TG_FNV_INIT, a->key, strlen(a->key));
	struct tg_outcomes_spec s = { .path = a->tab_path, .key = a->key, .key_hash = kh,
				      .g = &a->g, .npairs = a->npairs };
	int ret;

	snprintf(a->tab_path, sizeof(a->tab_path), "%s/tangled-%s%d-%s-%016llx.table", dir,
		 a->g.number ? "g" : "file", a->g.number, method_names[a->method],
		 (unsigned long long)kh);
	ret = az_mkdir_p(dir);
	if (ret) {
		snprintf(err, errlen, "cache directory %s: %s", dir, strerror(-ret));
		return ret;
	}
	ret = tg_outcomes_open(&s, &a->tab);
	if (ret == -EPROTO) {
		a->st.file_rejected = 1;
		unlink(a->tab_path); /* the builder's lock-holder check must not find it */
	}
	if (ret) {
		ret = table_build(a, o, &s, err, errlen);
		if (!ret)
			ret = tg_outcomes_open(&s, &a->tab);
		if (ret) {
			if (!*err)
				snprintf(err, errlen, "outcome table %s: %s", a->tab_path,
					 strerror(-ret));
			return ret;
		}
	} else {
		a->st.file_loaded = tg_outcomes_count(a->tab);
	}
	tg_orbit_init(&a->orbit, a->tab_path);
	/* here, in the process that configures the game: forked workers inherit the mapping */
	tg_orbit_prepare(&a->orbit, &a->g, a->emap, a->naut, a->tab);
	return 0;
}

int az_tangled_adj_create(const struct az_tangled_graph *g, const struct az_tangled_options *o,
			  struct az_tangled_adj **out, char *err, size_t errlen)
{
	struct az_tangled_adj *a;
	const char *tdir;
	int ret = -ENOMEM, stale = 0;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	if (g->n < 2 || g->n > MAXV || g->e < 1 || g->e > AZ_TANGLED_MAX_EDGES) {
		if (err && errlen)
			snprintf(err, errlen, "graph %s: unsupported size", g->name);
		return -EINVAL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->fd = -1;
	a->g = *g;
	a->kb = (uint32_t)(g->e + 3) / 4;
	a->npairs = (uint32_t)(g->n * (g->n - 1) / 2);
	ret = choose_method(a, o->adjudicator, err, errlen);
	if (ret)
		goto err;
	a->tf = o->anneal_time_ns > 0.0 ? o->anneal_time_ns : 5.0;
	a->ap.reads = o->anneal_reads;
	a->ap.sweeps = o->anneal_sweeps;
	a->ap.beta_min = o->beta_min;
	a->ap.beta_max = o->beta_max > 0.0 ? o->beta_max : 3.0;
	a->ap.seed = o->seed;
	if (a->method == M_ANNEAL && (!a->ap.reads || !a->ap.sweeps)) {
		if (err && errlen)
			snprintf(err, errlen, "anneal needs reads >= 1 and sweeps >= 1");
		ret = -EINVAL;
		goto err;
	}
	if (a->method == M_ANNEAL && o->schedule && *o->schedule) {
		/* a schedule drives the Schrodinger evolution only: refused, not silently unused */
		if (err && errlen)
			snprintf(err, errlen, "a schedule file (%s) applies to the exact "
				 "adjudicators (exact, exact-krylov); adjudicator %s anneals with "
				 "reads, sweeps and betas instead", o->schedule, a->name);
		ret = -EINVAL;
		goto err;
	}
	if (a->method == M_ANNEAL) {
		ret = anneal_path(a, o->anneal_path, err, errlen);
		if (ret)
			goto err;
	} else {
		ret = tg_schedule_load(o->schedule, &a->sched, err, errlen);
		if (ret)
			goto err;
	}
	ret = -ENOMEM;
	a->scratch = malloc(sizeof(double) * MAXV * MAXV);
	a->perm = malloc(sizeof(*a->perm) * AZ_TANGLED_MAX_SYMMETRIES);
	if (!a->scratch || !a->perm)
		goto err;
	a->naut = az_tangled_graph_automorphisms(g, a->perm, AZ_TANGLED_MAX_SYMMETRIES, NULL);
	a->st.automorphisms = a->naut;
	a->emap = malloc(sizeof(int16_t) * (size_t)a->naut * (size_t)g->e);
	if (!a->emap)
		goto err;
	tg_edge_maps(g, (const uint8_t (*)[MAXV])a->perm, a->naut, a->emap);
	if (tg_map_init(&a->canon, a->kb, a->npairs ? a->npairs : 1, 64) ||
	    tg_map_init(&a->raw, a->kb, (uint32_t)g->n, 64))
		goto err;
	ret = make_key(a);
	if (ret)
		goto err;
	tdir = o->table_dir && *o->table_dir ? o->table_dir : o->cache_dir;
	if (a->table && g->e > TABLE_MAX_EDGES && g->e <= TG_OUTCOMES_MAX_EDGES && tdir && *tdir) {
		ret = table_setup(a, o, tdir, err, errlen);
		if (ret)
			goto err;
		*out = a; /* every colouring is in the table: no cache file */
		return 0;
	}
	if (o->cache_dir && *o->cache_dir) {
		ret = cache_load(a, o->cache_dir, &stale, err, errlen);
		if (ret)
			goto err;
	}
	if (a->table && g->e <= TABLE_MAX_EDGES) {
		uint64_t before = a->st.evaluations;

		ret = fill_table(a);
		if (ret) {
			if (err && errlen)
				snprintf(err, errlen, "computing the %s table of %s: %s", a->name,
					 g->name, strerror(-ret));
			goto err;
		}
		stale |= a->st.evaluations != before;
	}
	if (o->cache_dir && *o->cache_dir) {
		ret = cache_open(a, stale, err, errlen);
		if (ret)
			goto err;
	}
	*out = a;
	return 0;
err:
	if (ret == -ENOMEM && err && errlen && !*err)
		snprintf(err, errlen, "out of memory");
	az_tangled_adj_destroy(a);
	return ret;
}

void az_tangled_adj_destroy(struct az_tangled_adj *a)
{
	if (!a)
		return;
	if (a->fd >= 0)
		close(a->fd);
	tg_outcomes_close(a->tab);
	tg_orbit_fini(&a->orbit);
	tg_map_fini(&a->canon);
	tg_map_fini(&a->raw);
	free(a->key);
	free(a->emap);
	free(a->perm);
	free(a->scratch);
	free(a);
}

const char *az_tangled_adj_name(const struct az_tangled_adj *a)
{
	return a->name;
}

void az_tangled_adj_stats(const struct az_tangled_adj *a, struct az_tangled_adj_stats *st)
{
	*st = a->st;
	st->cached = a->canon.count + (a->tab ? tg_outcomes_count(a->tab) : 0);
	st->table_entries = a->tab ? tg_outcomes_count(a->tab) : 0;
	st->table_bytes = a->tab ? tg_outcomes_bytes(a->tab) : 0;
}

const char *az_tangled_adj_table_path(const struct az_tangled_adj *a)
{
	return a->tab ? a->tab_path : "";
}

const char *az_tangled_adj_cache_path(const struct az_tangled_adj *a)
{
	return a->fd >= 0 ? a->path : "";
}
