/* SPDX-License-Identifier: MIT */
/* Orbit index: which automorphism canonicalises each colouring of a small graph, so that a
 * terminal state's table lookup costs one candidate instead of one per automorphism (Petersen:
 * 1 instead of 120; tg_canonical was about a tenth of a self-play worker's time).
 *
 * The colourings of E edges (labels 1-3) fall into orbits under the automorphisms and gauge
 * flips, one per canonical colouring c. Colouring x lies in c's orbit through automorphism k
 * when k's image of x, cand[emap[k][e]] = x[e], is a gauge flip y of c; so walking, for every c
 * and every k in order, every flip y of c and writing k at x[e] = y[emap[k][e]] where nothing
 * is written yet leaves each x with the first k whose image of x is gauge-equivalent to c:
 * the k at which tg_canonical's scan first reaches its minimum (the gauge-canonical form of
 * every flip of c is c itself, and no other automorphism's candidate is smaller). */
#include "games/tangled/tangled_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

#define UNSET 0xffu

/* Write k at every colouring x whose image under automorphism k is a gauge flip of y.
 * w[p] = 3^e for the edge e that k moves to position p; the flips of all vertices but vertex
 * 0 (flipping every vertex changes no edge) in Gray-code order, one vertex per step, each
 * step changing the code by the weights of that vertex's green/purple edges. */
static uint64_t walk_flips(const struct az_tangled_graph *g,
			   const int (*inc)[AZ_TANGLED_MAX_VERTICES], const int *deg,
			   const uint64_t *w, uint8_t *y, uint8_t k, uint8_t *idx)
{
	uint64_t code = 0, fresh = 0, steps = (uint64_t)1 << (g->n - 1);

	for (int p = 0; p < g->e; p++)
		code += (uint64_t)(y[p] - 1) * w[p];
	for (uint64_t i = 1;; i++) {
		if (idx[code] == UNSET) {
			idx[code] = k;
			fresh++;
		}
		if (i == steps)
			return fresh;
		int v = __builtin_ctzll(i) + 1;

		for (int j = 0; j < deg[v]; j++) {
			int p = inc[v][j];

			if (y[p] == 2) {
				y[p] = 3;
				code += w[p];
			} else if (y[p] == 3) {
				y[p] = 2;
				code -= w[p];
			}
		}
	}
}

int tg_orbit_build(const struct az_tangled_graph *g, const int16_t *emap, int naut,
		   const uint64_t *codes, uint64_t count, uint8_t **out)
{
	int inc[TG_ORBIT_MAX_VERTICES][AZ_TANGLED_MAX_VERTICES], deg[TG_ORBIT_MAX_VERTICES] = {0};
	uint64_t total = 1, covered = 0, *w;
	uint8_t *idx, y[AZ_TANGLED_MAX_EDGES];

	*out = NULL;
	if (g->e > TG_ORBIT_MAX_EDGES || g->n > TG_ORBIT_MAX_VERTICES || g->n < 1 || naut < 1 ||
	    naut > 255)
		return -EINVAL;
	for (int e = 0; e < g->e; e++) {
		total *= 3;
		inc[g->eu[e]][deg[g->eu[e]]++] = e;
		inc[g->ev[e]][deg[g->ev[e]]++] = e;
	}
	w = malloc(sizeof(*w) * (size_t)naut * (size_t)g->e);
	idx = malloc(total);
	if (!w || !idx) {
		free(w);
		free(idx);
		return -ENOMEM;
	}
	memset(idx, UNSET, total);
	for (int k = 0; k < naut; k++) {
		uint64_t p3 = 1;

		for (int e = 0; e < g->e; e++, p3 *= 3)
			w[(size_t)k * (size_t)g->e +
			  (size_t)emap[(size_t)k * (size_t)g->e + (size_t)e]] = p3;
	}
	for (uint64_t i = 0; i < count; i++)
		for (int k = 0; k < naut; k++) {
			tg_outcomes_decode(g->e, codes[i], y);
			covered += walk_flips(g, (const int(*)[AZ_TANGLED_MAX_VERTICES])inc, deg,
					      w + (size_t)k * (size_t)g->e, y, (uint8_t)k, idx);
		}
	free(w);
	if (covered != total) {
		free(idx);
		return -EPROTO;
	}
	*out = idx;
	return 0;
}

/* ---- the index file "<table>.orbits" ----
 *   struct orbit_header | u8 idx[total]
 * sum: FNV-1a over the header (sum 0) then idx. Native byte order. Written once by whichever
 * process first needs it (az_write_file_atomic: temp name, fsync, rename), mapped read-only by
 * every later one; a file that fails any check is rebuilt and replaced. */
#define ORBIT_MAGIC "AZTGORB1"

struct orbit_header {
	char magic[8];
	uint32_t version, naut;
	uint64_t total, sum;
};

static uint64_t orbit_sum(struct orbit_header h, const uint8_t *idx)
{
	h.sum = 0;
	return tg_fnv1a(tg_fnv1a(TG_FNV_INIT, &h, sizeof(h)), idx, h.total);
}

/* Map and verify o->path; 0 when o->idx is served from it. */
static int orbit_map(struct tg_orbit *o, int naut, uint64_t total)
{
	struct orbit_header h;
	struct stat sb;
	void *map;
	int fd = open(o->path, O_RDONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) || (uint64_t)sb.st_size != sizeof(h) + total) {
		close(fd);
		return -EPROTO;
	}
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	memcpy(&h, map, sizeof(h));
	ok = memcmp(h.magic, ORBIT_MAGIC, 8) == 0 && h.version == 1 && h.naut == (uint32_t)naut &&
	     h.total == total && h.sum == orbit_sum(h, (const uint8_t *)map + sizeof(h));
	for (uint64_t i = 0; ok && i < total; i++)
		ok = ((const uint8_t *)map)[sizeof(h) + i] < naut;
	if (!ok) {
		munmap(map, (size_t)sb.st_size);
		return -EPROTO;
	}
	o->map = map;
	o->map_len = (size_t)sb.st_size;
	o->idx = (uint8_t *)map + sizeof(h);
	return 0;
}

/* Build the index (and, when it can, its file). Failures leave o->idx NULL: the full scan. */
static void orbit_setup(struct tg_orbit *o, const struct az_tangled_graph *g, const int16_t *emap,
			int naut, const struct tg_outcomes *tab)
{
	struct orbit_header h = {.magic = ORBIT_MAGIC, .version = 1, .naut = (uint32_t)naut};
	uint8_t *idx, *buf;
	char err[256];

	h.total = 1;
	for (int e = 0; e < g->e; e++)
		h.total *= 3;
	if (o->path[0] && orbit_map(o, naut, h.total) == 0)
		return;
	if (tg_orbit_build(g, emap, naut, tg_outcomes_codes(tab), tg_outcomes_count(tab), &idx))
		return;
	o->idx = o->own = idx;
	if (!o->path[0] || !(buf = malloc(sizeof(h) + h.total)))
		return;
	h.sum = orbit_sum(h, idx);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), idx, h.total);
	/* the file is an accelerator: a read-only cache directory only costs the next process */
	(void)az_write_file_atomic(o->path, buf, sizeof(h) + h.total, err, sizeof(err));
	free(buf);
}

void tg_orbit_init(struct tg_orbit *o, const char *table_path)
{
	memset(o, 0, sizeof(*o));
	if (table_path && *table_path)
		snprintf(o->path, sizeof(o->path), "%s.orbits", table_path);
}

void tg_orbit_prepare(struct tg_orbit *o, const struct az_tangled_graph *g, const int16_t *emap,
		      int naut, const struct tg_outcomes *tab)
{
	if (o->idx || o->tried)
		return;
	o->tried = 1;
	orbit_setup(o, g, emap, naut, tab);
}

void tg_orbit_canonical(struct tg_orbit *o, const struct az_tangled_graph *g,
			const uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES], const int16_t *emap,
			int naut, const struct tg_outcomes *tab, const uint8_t *labels,
			uint8_t *canon, struct tg_transform *t)
{
	if (o->idx) {
		uint64_t code = 0;
		int full = 1;

		for (int e = g->e - 1; e >= 0; e--) {
			full &= labels[e] != 0;
			code = code * 3 + (uint64_t)(labels[e] - (labels[e] != 0));
		}
		if (full) {
			tg_canonical_at(g, perm, emap, o->idx[code], labels, canon, t);
			return;
		}
	}
	tg_canonical(g, perm, emap, naut, 1, labels, canon, t);
	if (tab && !o->idx && !o->tried && ++o->slow >= TG_ORBIT_AFTER)
		tg_orbit_prepare(o, g, emap, naut, tab);
}

void tg_orbit_fini(struct tg_orbit *o)
{
	if (o->map)
		munmap(o->map, o->map_len);
	free(o->own);
	memset(o, 0, sizeof(*o));
}
