/* SPDX-License-Identifier: MIT */
/* Tangled boards: the numbered graphs of TANGLED.md section 2, the edge-list parser, graph
 * automorphisms (backtracking over vertex permutations with colour refinement) and canonical
 * forms of colourings up to automorphism and gauge flips. */
#include "games/tangled/tangled_impl.h"

#include "base/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXV AZ_TANGLED_MAX_VERTICES

uint64_t tg_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* ---- numbered graphs ---- */

struct numbered {
	int number;
	const char *name;
	int red, blue; /* fixed-token defaults; -1: vertex 0 and N-1 */
	const char *text; /* edge-list text, "vertices N" first */
};

static const struct numbered numbered[] = {
	{ 1, "K2", 0, 1, "vertices 2\n0-1" },
	{ 2, "K3", 1, 2, "vertices 3\n0-1 0-2 1-2" },
	{ 3, "K4", 2, 3, "vertices 4\n0-1 0-2 0-3 1-2 1-3 2-3" },
	{ 4, "hexagon", -1, -1, "vertices 6\n0-1 0-5 1-2 2-3 3-4 4-5" },
	{ 5, "Petersen", 5, 7,
	  "vertices 10\n0-2 0-3 0-6 1-3 1-4 1-7 2-4 2-8 3-9 4-5 5-6 5-9 6-7 7-8 8-9" },
	{ 6, "tesseract", -1, -1,
	  "vertices 16\n"
	  "0-3 0-5 0-9 0-15 1-4 1-6 1-8 1-10 2-5 2-7 2-9 2-11 3-6 3-10 3-12 4-7 4-11 4-13\n"
	  "5-12 5-14 6-13 6-15 7-8 7-14 8-9 8-15 9-10 10-11 11-12 12-13 13-14 14-15" },
	{ 7, "Zephyr Z(1,1)", -1, -1,
	  "vertices 12\n"
	  "0-1 0-6 0-8 1-8 1-10 2-3 2-6 2-7 2-8 2-9 3-8 3-9 3-10 3-11 4-5 4-7 4-9 5-9 5-11 6-7\n"
	  "8-9 10-11" },
	{ 8, "Zephyr Z(1,2)", -1, -1,
	  "vertices 24\n"
	  "0-1 0-12 0-14 0-16 0-18 1-16 1-18 1-20 1-22 2-3 2-12 2-14 2-16 2-18 3-16 3-18 3-20\n"
	  "3-22 4-5 4-12 4-13 4-14 4-15 4-16 4-17 4-18 4-19 5-16 5-17 5-18 5-19 5-20 5-21 5-22\n"
	  "5-23 6-7 6-12 6-13 6-14 6-15 6-16 6-17 6-18 6-19 7-16 7-17 7-18 7-19 7-20 7-21 7-22\n"
	  "7-23 8-9 8-13 8-15 8-17 8-19 9-17 9-19 9-21 9-23 10-11 10-13 10-15 10-17 10-19 11-17\n"
	  "11-19 11-21 11-23 12-13 14-15 16-17 18-19 20-21 22-23" },
	{ 9, "Zephyr Z(1,3)", -1, -1,
	  "vertices 36\n"
	  "0-1 0-18 0-20 0-22 0-24 0-26 0-28 1-24 1-26 1-28 1-30 1-32 1-34 2-3 2-18 2-20 2-22\n"
	  "2-24 2-26 2-28 3-24 3-26 3-28 3-30 3-32 3-34 4-5 4-18 4-20 4-22 4-24 4-26 4-28 5-24\n"
	  "5-26 5-28 5-30 5-32 5-34 6-7 6-18 6-19 6-20 6-21 6-22 6-23 6-24 6-25 6-26 6-27 6-28\n"
	  "6-29 7-24 7-25 7-26 7-27 7-28 7-29 7-30 7-31 7-32 7-33 7-34 7-35 8-9 8-18 8-19 8-20\n"
	  "8-21 8-22 8-23 8-24 8-25 8-26 8-27 8-28 8-29 9-24 9-25 9-26 9-27 9-28 9-29 9-30 9-31\n"
	  "9-32 9-33 9-34 9-35 10-11 10-18 10-19 10-20 10-21 10-22 10-23 10-24 10-25 10-26\n"
	  "10-27 10-28 10-29 11-24 11-25 11-26 11-27 11-28 11-29 11-30 11-31 11-32 11-33 11-34\n"
	  "11-35 12-13 12-19 12-21 12-23 12-25 12-27 12-29 13-25 13-27 13-29 13-31 13-33 13-35\n"
	  "14-15 14-19 14-21 14-23 14-25 14-27 14-29 15-25 15-27 15-29 15-31 15-33 15-35 16-17\n"
	  "16-19 16-21 16-23 16-25 16-27 16-29 17-25 17-27 17-29 17-31 17-33 17-35 18-19 20-21\n"
	  "22-23 24-25 26-27 28-29 30-31 32-33 34-35" },
	{ 10, "Zephyr Z(1,4)", -1, -1,
	  "vertices 48\n"
	  "0-1 0-24 0-26 0-28 0-30 0-32 0-34 0-36 0-38 1-32 1-34 1-36 1-38 1-40 1-42 1-44 1-46\n"
	  "2-3 2-24 2-26 2-28 2-30 2-32 2-34 2-36 2-38 3-32 3-34 3-36 3-38 3-40 3-42 3-44 3-46\n"
	  "4-5 4-24 4-26 4-28 4-30 4-32 4-34 4-36 4-38 5-32 5-34 5-36 5-38 5-40 5-42 5-44 5-46\n"
	  "6-7 6-24 6-26 6-28 6-30 6-32 6-34 6-36 6-38 7-32 7-34 7-36 7-38 7-40 7-42 7-44 7-46\n"
	  "8-9 8-24 8-25 8-26 8-27 8-28 8-29 8-30 8-31 8-32 8-33 8-34 8-35 8-36 8-37 8-38 8-39\n"
	  "9-32 9-33 9-34 9-35 9-36 9-37 9-38 9-39 9-40 9-41 9-42 9-43 9-44 9-45 9-46 9-47\n"
	  "10-11 10-24 10-25 10-26 10-27 10-28 10-29 10-30 10-31 10-32 10-33 10-34 10-35 10-36\n"
	  "10-37 10-38 10-39 11-32 11-33 11-34 11-35 11-36 11-37 11-38 11-39 11-40 11-41 11-42\n"
	  "11-43 11-44 11-45 11-46 11-47 12-13 12-24 12-25 12-26 12-27 12-28 12-29 12-30 12-31\n"
	  "12-32 12-33 12-34 12-35 12-36 12-37 12-38 12-39 13-32 13-33 13-34 13-35 13-36 13-37\n"
	  "13-38 13-39 13-40 13-41 13-42 13-43 13-44 13-45 13-46 13-47 14-15 14-24 14-25 14-26\n"
	  "14-27 14-28 14-29 14-30 14-31 14-32 14-33 14-34 14-35 14-36 14-37 14-38 14-39 15-32\n"
	  "15-33 15-34 15-35 15-36 15-37 15-38 15-39 15-40 15-41 15-42 15-43 15-44 15-45 15-46\n"
	  "15-47 16-17 16-25 16-27 16-29 16-31 16-33 16-35 16-37 16-39 17-33 17-35 17-37 17-39\n"
	  "17-41 17-43 17-45 17-47 18-19 18-25 18-27 18-29 18-31 18-33 18-35 18-37 18-39 19-33\n"
	  "19-35 19-37 19-39 19-41 19-43 19-45 19-47 20-21 20-25 20-27 20-29 20-31 20-33 20-35\n"
	  "20-37 20-39 21-33 21-35 21-37 21-39 21-41 21-43 21-45 21-47 22-23 22-25 22-27 22-29\n"
	  "22-31 22-33 22-35 22-37 22-39 23-33 23-35 23-37 23-39 23-41 23-43 23-45 23-47 24-25\n"
	  "26-27 28-29 30-31 32-33 34-35 36-37 38-39 40-41 42-43 44-45 46-47" },
	{ 11, "P3", 0, 2, "vertices 3\n0-1 1-2" },
	{ 12, "Moser spindle", -1, -1, "vertices 7\n0-1 0-4 0-6 1-2 1-5 2-3 2-5 3-4 3-5 3-6 4-6" },
	{ 18, "3-prism", -1, -1, "vertices 6\n0-1 0-2 0-3 1-2 1-4 2-5 3-4 3-5 4-5" },
	{ 19, "barbell", -1, -1, "vertices 6\n0-1 0-2 1-2 2-5 3-4 3-5 4-5" },
	{ 20, "diamond", 0, 2, "vertices 4\n0-1 0-3 1-2 1-3 2-3" },
};

int az_tangled_graph_numbered(int number, struct az_tangled_graph *g, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(numbered) / sizeof(numbered[0]); i++) {
		const struct numbered *d = &numbered[i];
		int ret;

		if (d->number != number)
			continue;
		ret = az_tangled_graph_parse(d->text, d->name, g, err, errlen);
		if (ret)
			return ret;
		g->number = number;
		g->red_default = d->red >= 0 ? d->red : 0;
		g->blue_default = d->blue >= 0 ? d->blue : g->n - 1;
		return 0;
	}
	if (err && errlen)
		snprintf(err, errlen,
			 "unknown Tangled graph %d (known: 1-12, 18, 19, 20; or give an edge-list "
			 "file)", number);
	return -EINVAL;
}

/* ---- edge-list parser ---- */

struct parse {
	const char *source;
	char *err;
	size_t errlen;
	int line;
	int n_given;      /* from "vertices N", 0 when absent */
	int n_line;
	int ne;
	int eline[AZ_TANGLED_MAX_EDGES];
	uint8_t u[AZ_TANGLED_MAX_EDGES], v[AZ_TANGLED_MAX_EDGES];
	int16_t first_line[MAXV][MAXV];
};

static int perr(struct parse *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int perr(struct parse *p, int line, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (p->err && p->errlen) {
		if (line > 0)
			snprintf(p->err, p->errlen, "%s:%d: %s", p->source, line, what);
		else
			snprintf(p->err, p->errlen, "%s: %s", p->source, what);
	}
	return -EINVAL;
}

/* A decimal number (digits only) of at most max: what names it in messages. */
static int parse_number(struct parse *p, const char *tok, size_t len, int max, const char *what,
			int *out)
{
	char buf[32];
	long v = 0;

	snprintf(buf, sizeof(buf), "%.*s", (int)(len < 31 ? len : 31), tok);
	if (len == 0)
		return perr(p, p->line, "empty %s", what);
	for (size_t i = 0; i < len; i++) {
		if (tok[i] < '0' || tok[i] > '9')
			return perr(p, p->line, "'%s' is not a %s", buf, what);
		if (v < 1000000)
			v = v * 10 + (tok[i] - '0');
	}
	if (v > max)
		return perr(p, p->line, "%s %s out of range (at most %d)", what, buf, max);
	*out = (int)v;
	return 0;
}

static int parse_vertex(struct parse *p, const char *tok, size_t len, int *out)
{
	return parse_number(p, tok, len, MAXV - 1, "vertex number", out);
}

static int add_edge(struct parse *p, int a, int b)
{
	int u = a < b ? a : b, v = a < b ? b : a;

	if (a == b)
		return perr(p, p->line, "self-loop %d-%d", a, b);
	if (p->first_line[u][v])
		return perr(p, p->line, "duplicate edge %d-%d (already on line %d)", u, v,
			    p->first_line[u][v]);
	if (p->ne >= AZ_TANGLED_MAX_EDGES)
		return perr(p, p->line, "too many edges (at most %d)", AZ_TANGLED_MAX_EDGES);
	p->first_line[u][v] = (int16_t)p->line;
	p->u[p->ne] = (uint8_t)u;
	p->v[p->ne] = (uint8_t)v;
	p->eline[p->ne] = p->line;
	p->ne++;
	return 0;
}

/* One line, comments already removed. */
static int parse_line(struct parse *p, char *s)
{
	int pending = -1, ret, first = 1;

	for (;;) {
		size_t len;
		char *dash;
		int a, b;

		s += strspn(s, " \t\r,;");
		if (!*s)
			break;
		len = strcspn(s, " \t\r,;");
		if (first && len == 8 && strncmp(s, "vertices", 8) == 0) {
			char *t = s + len;
			size_t tl;

			t += strspn(t, " \t\r");
			tl = strcspn(t, " \t\r");
			if (p->n_given)
				return perr(p, p->line, "'vertices' given twice (first on line %d)",
					    p->n_line);
			if (!tl)
				return perr(p, p->line, "'vertices' needs a count");
			ret = parse_number(p, t, tl, MAXV, "vertex count", &a);
			if (ret)
				return ret;
			if (a < 2)
				return perr(p, p->line, "a graph needs at least 2 vertices");
			p->n_given = a;
			p->n_line = p->line;
			s = t + tl;
			s += strspn(s, " \t\r");
			if (*s)
				return perr(p, p->line, "unexpected '%s' after the vertex count",
					    s);
			return 0;
		}
		first = 0;
		dash = memchr(s, '-', len);
		if (dash) {
			if (pending >= 0)
				return perr(p, p->line, "vertex %d has no partner", pending);
			ret = parse_vertex(p, s, (size_t)(dash - s), &a);
			if (!ret)
				ret = parse_vertex(p, dash + 1, len - (size_t)(dash - s) - 1, &b);
			if (!ret)
				ret = add_edge(p, a, b);
			if (ret)
				return ret;
		} else {
			ret = parse_vertex(p, s, len, &a);
			if (ret)
				return ret;
			if (pending < 0) {
				pending = a;
			} else {
				ret = add_edge(p, pending, a);
				if (ret)
					return ret;
				pending = -1;
			}
		}
		s += len;
	}
	if (pending >= 0)
		return perr(p, p->line, "vertex %d has no partner (write edges as u-v or u v)",
			    pending);
	return 0;
}

static int cmp_edge(const void *x, const void *y)
{
	const uint16_t *a = x, *b = y;

	return (int)*a - (int)*b;
}

static int finish(struct parse *p, struct az_tangled_graph *g)
{
	uint16_t key[AZ_TANGLED_MAX_EDGES];
	int maxv = 0;

	if (p->ne == 0)
		return perr(p, 0, "no edges");
	for (int k = 0; k < p->ne; k++) {
		if (p->v[k] > maxv)
			maxv = p->v[k];
		if (p->n_given && p->v[k] >= p->n_given)
			return perr(p, p->eline[k],
				    "edge %d-%d: vertex %d out of range ('vertices %d' on line %d)",
				    p->u[k], p->v[k], p->v[k], p->n_given, p->n_line);
	}
	memset(g, 0, sizeof(*g));
	g->n = p->n_given ? p->n_given : maxv + 1;
	g->e = p->ne;
	snprintf(g->name, sizeof(g->name), "%s", p->source);
	for (int k = 0; k < p->ne; k++)
		key[k] = (uint16_t)(p->u[k] * MAXV + p->v[k]);
	qsort(key, (size_t)p->ne, sizeof(key[0]), cmp_edge);
	for (int i = 0; i < MAXV; i++)
		for (int j = 0; j < MAXV; j++)
			g->edge_of[i][j] = -1;
	for (int k = 0; k < p->ne; k++) {
		g->eu[k] = (uint8_t)(key[k] / MAXV);
		g->ev[k] = (uint8_t)(key[k] % MAXV);
		g->edge_of[g->eu[k]][g->ev[k]] = (int16_t)k;
		g->edge_of[g->ev[k]][g->eu[k]] = (int16_t)k;
	}
	g->red_default = 0;
	g->blue_default = g->n - 1;
	return 0;
}

int az_tangled_graph_parse(const char *text, const char *source, struct az_tangled_graph *g,
			   char *err, size_t errlen)
{
	struct parse *p;
	char *copy, *line, *next;
	int ret = 0;

	if (!text || !g)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	copy = strdup(text);
	if (!p || !copy) {
		free(p);
		free(copy);
		return -ENOMEM;
	}
	p->source = source ? source : "graph";
	p->err = err;
	p->errlen = errlen;
	for (line = copy; line && !ret; line = next) {
		char *hash;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		p->line++;
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		ret = parse_line(p, line);
	}
	if (!ret)
		ret = finish(p, g);
	free(copy);
	free(p);
	return ret;
}

int az_tangled_graph_load(const char *path, struct az_tangled_graph *g, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	int ret = az_read_file(path, &buf, &len);

	if (ret) {
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot read graph file: %s", path, strerror(-ret));
		return ret;
	}
	if (strlen(buf) != len) {
		ret = -EINVAL;
		if (err && errlen)
			snprintf(err, errlen, "%s: not a text file (NUL byte)", path);
	} else {
		ret = az_tangled_graph_parse(buf, path, g, err, errlen);
	}
	free(buf);
	return ret;
}

/* ---- automorphisms ---- */

struct autsearch {
	const struct az_tangled_graph *g;
	int col[MAXV];
	int order[MAXV];
	int img[MAXV];
	uint8_t used[MAXV];
	uint8_t (*perm)[MAXV];
	int cap, count;
	long budget;
};

static int adjacent(const struct az_tangled_graph *g, int a, int b)
{
	return g->edge_of[a][b] >= 0;
}

/* Colour refinement (1-WL): equal colours for vertices no automorphism can tell apart. */
static void refine(const struct az_tangled_graph *g, int *col)
{
	int n = g->n, classes = 0;

	for (int v = 0; v < n; v++)
		col[v] = 0;
	for (int round = 0; round <= n; round++) {
		int sig[MAXV][MAXV + 1], newcol[MAXV], nclass = 0;

		for (int v = 0; v < n; v++) {
			int cnt[MAXV] = { 0 };

			/* signature: own colour, then how many neighbours of each colour */
			for (int w = 0; w < n; w++)
				if (adjacent(g, v, w))
					cnt[col[w]]++;
			sig[v][0] = col[v];
			memcpy(&sig[v][1], cnt, sizeof(int) * (size_t)n);
		}
		/* new colour = rank of the signature among the distinct ones (insertion sort) */
		size_t sz = sizeof(int) * (size_t)(n + 1);
		int idx[MAXV];

		for (int v = 0; v < n; v++) {
			int i = v;

			while (i > 0 && memcmp(sig[idx[i - 1]], sig[v], sz) > 0) {
				idx[i] = idx[i - 1];
				i--;
			}
			idx[i] = v;
		}
		for (int i = 0; i < n; i++) {
			if (i > 0 && memcmp(sig[idx[i - 1]], sig[idx[i]], sz) != 0)
				nclass++;
			newcol[idx[i]] = nclass;
		}
		nclass++;
		memcpy(col, newcol, sizeof(int) * (size_t)n);
		if (nclass == classes)
			break;
		classes = nclass;
	}
}

static void aut_dfs(struct autsearch *a, int d)
{
	const struct az_tangled_graph *g = a->g;
	int v;

	if (a->count >= a->cap || a->budget <= 0)
		return;
	a->budget--;
	if (d == g->n) {
		int ident = 1;

		for (int x = 0; x < g->n; x++)
			ident &= a->img[x] == x;
		if (!ident) {
			for (int x = 0; x < g->n; x++)
				a->perm[a->count][x] = (uint8_t)a->img[x];
			a->count++;
		}
		return;
	}
	v = a->order[d];
	for (int c = 0; c < g->n; c++) {
		int ok = !a->used[c] && a->col[c] == a->col[v];

		for (int k = 0; ok && k < d; k++) {
			int w = a->order[k];

			ok = adjacent(g, v, w) == adjacent(g, c, a->img[w]);
		}
		if (!ok)
			continue;
		a->img[v] = c;
		a->used[c] = 1;
		aut_dfs(a, d + 1);
		a->used[c] = 0;
		if (a->count >= a->cap || a->budget <= 0)
			return;
	}
}

int az_tangled_graph_automorphisms(const struct az_tangled_graph *g,
				   uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES], int cap,
				   int *complete)
{
	struct autsearch *a = calloc(1, sizeof(*a));
	uint8_t seen[MAXV] = { 0 };
	int head = 0, tail = 0, count;

	if (cap < 1)
		return -EINVAL;
	for (int v = 0; v < g->n; v++)
		perm[0][v] = (uint8_t)v;
	if (!a) {
		if (complete)
			*complete = 0;
		return 1;
	}
	a->g = g;
	a->perm = perm;
	a->cap = cap;
	a->count = 1;
	a->budget = 20000000L;
	refine(g, a->col);
	/* BFS order, so that every vertex after the first of its component has an earlier
	 * neighbour: its image is then confined to the neighbours of that neighbour's image. */
	for (int root = 0; root < g->n; root++) {
		if (seen[root])
			continue;
		seen[root] = 1;
		a->order[tail++] = root;
		while (head < tail) {
			int v = a->order[head++];

			for (int w = 0; w < g->n; w++)
				if (adjacent(g, v, w) && !seen[w]) {
					seen[w] = 1;
					a->order[tail++] = w;
				}
		}
	}
	aut_dfs(a, 0);
	if (complete)
		*complete = a->count < cap && a->budget > 0;
	count = a->count;
	free(a);
	return count;
}

void tg_edge_maps(const struct az_tangled_graph *g, const uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES],
		  int count, int16_t *emap)
{
	for (int k = 0; k < count; k++)
		for (int e = 0; e < g->e; e++)
			emap[(size_t)k * (size_t)g->e + (size_t)e] =
				g->edge_of[perm[k][g->eu[e]]][perm[k][g->ev[e]]];
}

/* ---- canonical colourings ---- */

/* Union-find with the parity of each vertex relative to its parent. */
static int uf_find(int *parent, int8_t *par, int v, int *parity)
{
	int p = 1;

	while (parent[v] != v) {
		p *= par[v];
		v = parent[v];
	}
	*parity = p;
	return v;
}

/* Lexicographically smallest gauge-equivalent labelling of lab (in place), greedy in edge
 * order: an edge joining two components of the green/purple edges seen so far can always be
 * made green by flipping one whole component, which changes no earlier edge; an edge inside a
 * component has its label fixed already. gauge[v] receives the flips. */
static void gauge_canon(const struct az_tangled_graph *g, uint8_t *lab, int8_t *gauge)
{
	int parent[MAXV];
	int8_t par[MAXV];

	for (int v = 0; v < g->n; v++) {
		parent[v] = v;
		par[v] = 1;
	}
	for (int e = 0; e < g->e; e++) {
		int pu, pv, ru, rv;

		if (lab[e] <= 1)
			continue;
		ru = uf_find(parent, par, g->eu[e], &pu);
		rv = uf_find(parent, par, g->ev[e], &pv);
		if (ru != rv) {
			int want = lab[e] == 2 ? 1 : -1;

			parent[rv] = ru;
			par[rv] = (int8_t)(want * pu * pv);
			lab[e] = 2;
		} else if (pu * pv < 0) {
			lab[e] = (uint8_t)(5 - lab[e]);
		}
	}
	for (int v = 0; v < g->n; v++) {
		int p;

		uf_find(parent, par, v, &p);
		gauge[v] = (int8_t)p;
	}
}

/* Candidate of automorphism k: labels moved by emap[k], then (use_gauge) gauge-canonical. */
static void candidate(const struct az_tangled_graph *g, const int16_t *emap, int k, int use_gauge,
		      const uint8_t *labels, uint8_t *cand, int8_t *gauge)
{
	const int16_t *em = emap + (size_t)k * (size_t)g->e;

	for (int e = 0; e < g->e; e++)
		cand[em[e]] = labels[e] ? labels[e] : 1;
	if (use_gauge) {
		gauge_canon(g, cand, gauge);
	} else {
		for (int v = 0; v < g->n; v++)
			gauge[v] = 1;
	}
}

void tg_canonical(const struct az_tangled_graph *g, const uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES],
		  const int16_t *emap, int count, int use_gauge, const uint8_t *labels,
		  uint8_t *canon, struct tg_transform *t)
{
	uint8_t cand[AZ_TANGLED_MAX_EDGES];
	int8_t gauge[MAXV];
	int have = 0;

	for (int k = 0; k < count; k++) {
		candidate(g, emap, k, use_gauge, labels, cand, gauge);
		if (have && memcmp(cand, canon, (size_t)g->e) >= 0)
			continue;
		have = 1;
		memcpy(canon, cand, (size_t)g->e);
		if (t) {
			memcpy(t->perm, perm[k], (size_t)g->n);
			memcpy(t->gauge, gauge, (size_t)g->n);
		}
	}
}

void tg_canonical_at(const struct az_tangled_graph *g,
		     const uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES], const int16_t *emap, int k,
		     const uint8_t *labels, uint8_t *canon, struct tg_transform *t)
{
	int8_t gauge[MAXV];

	candidate(g, emap, k, 1, labels, canon, gauge);
	if (t) {
		memcpy(t->perm, perm[k], (size_t)g->n);
		memcpy(t->gauge, gauge, (size_t)g->n);
	}
}

/* ---- state vectors ---- */

int az_tangled_state_check(const struct az_tangled_graph *g, const int *state, int len,
			   int need_terminal, char *err, size_t errlen)
{
	int red = -1, blue = -1;

#define FAIL(...)                                            \
	do {                                                 \
		if (err && errlen)                           \
			snprintf(err, errlen, __VA_ARGS__);  \
		return -EINVAL;                              \
	} while (0)
	if (len != g->n + g->e)
		FAIL("expected %d entries (N + E = %d + %d), got %d", g->n + g->e, g->n, g->e, len);
	for (int v = 0; v < g->n; v++) {
		if (state[v] < 0 || state[v] > 2)
			FAIL("entry %d (vertex %d) is %d; vertex entries must be 0, 1 or 2", v, v,
			     state[v]);
		if (state[v] == 1) {
			if (red >= 0)
				FAIL("red (1) owns two vertices, %d and %d", red, v);
			red = v;
		} else if (state[v] == 2) {
			if (blue >= 0)
				FAIL("blue (2) owns two vertices, %d and %d", blue, v);
			blue = v;
		}
	}
	for (int k = 0; k < g->e; k++)
		if (state[g->n + k] < 0 || state[g->n + k] > 3)
			FAIL("entry %d (edge %d-%d) is %d; edge labels must be 0-3", g->n + k,
			     g->eu[k], g->ev[k], state[g->n + k]);
	if (!need_terminal)
		return 0;
	for (int k = 0; k < g->e; k++)
		if (state[g->n + k] == 0)
			FAIL("not terminal: edge %d-%d (entry %d) is uncoloured", g->eu[k],
			     g->ev[k], g->n + k);
	if (red < 0)
		FAIL("not terminal: no vertex is red (1)");
	if (blue < 0)
		FAIL("not terminal: no vertex is blue (2)");
#undef FAIL
	return 0;
}
