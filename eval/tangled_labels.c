/* SPDX-License-Identifier: MIT */
/* Solver labels of Tangled positions (eval/tangled_labels.h): the mistake metric's cache and
 * labelled sets from sampled games. */
#include "eval/tangled_labels.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/rng.h"
#include "base/util.h"
#include "eval/eval_impl.h"
#include "eval/positions.h"
#include "games/tangled/tangled.h"

#define HEADER "# tangled-labels 1 "

struct entry {
	char *moves;
	uint8_t *state;
	int8_t outcome; /* -1, 0, +1, or AZ_EVAL_LABEL_UNKNOWN */
	char *keeps;    /* A characters and a NUL */
};

struct az_tangled_labels {
	const struct az_game *g;
	struct az_tangled_solver *s;
	char path[PATH_MAX];
	char key[512];
	struct entry *e;
	long n;
	int dirty;
};

static int entry_add(struct az_tangled_labels *l, long *cap, const char *moves,
		     const uint8_t *state)
{
	const struct az_game *g = l->g;
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	struct entry *e;

	if (l->n == *cap) {
		long c = *cap ? 2 * *cap : 256;

		e = realloc(l->e, (size_t)c * sizeof(*e));
		if (!e)
			return -ENOMEM;
		l->e = e;
		*cap = c;
	}
	e = &l->e[l->n];
	e->moves = strdup(moves);
	e->state = malloc(g->state_bytes);
	e->keeps = malloc(g->actions + 1);
	if (!e->moves || !e->state || !e->keeps) {
		free(e->moves);
		free(e->state);
		free(e->keeps);
		return -ENOMEM;
	}
	memcpy(e->state, state, g->state_bytes);
	e->outcome = AZ_EVAL_LABEL_UNKNOWN;
	g->legal(state, mask);
	for (uint32_t a = 0; a < g->actions; a++)
		e->keeps[a] = mask[a] ? '?' : '-';
	e->keeps[g->actions] = '\0';
	l->n++;
	return 0;
}

/* What a cache line knows about e, when its moves match. */
static void merge_line(const struct az_game *g, struct entry *e, const char *line)
{
	char moves[AZ_POSITIONS_LINE_MAX + 2], out[8], keeps[AZ_GAME_ACTIONS_MAX + 2];
	int outcome = AZ_EVAL_LABEL_UNKNOWN;

	az_eval_first_field(line, moves, sizeof(moves));
	if (strcmp(moves, e->moves) != 0 ||
	    sscanf(line, "%*s %7s %513s", out, keeps) != 2 || strlen(keeps) != g->actions)
		return;
	if (strcmp(out, "?") != 0) {
		if (sscanf(out, "%d", &outcome) != 1 || outcome < -1 || outcome > 1)
			return;
		e->outcome = (int8_t)outcome;
	}
	for (uint32_t a = 0; a < g->actions; a++)
		if ((keeps[a] == '+' || keeps[a] == 'x') && e->keeps[a] == '?' &&
		    outcome != AZ_EVAL_LABEL_UNKNOWN)
			e->keeps[a] = keeps[a];
}

static void read_cache(struct az_tangled_labels *l)
{
	char line[AZ_POSITIONS_LINE_MAX + 2];
	FILE *f = fopen(l->path, "r");
	size_t hl = strlen(HEADER);

	if (!f)
		return;
	/* only labels of the same game configuration count */
	if (fgets(line, sizeof(line), f) && strncmp(line, HEADER, hl) == 0 &&
	    strcspn(line + hl, "\n") == strlen(l->key) &&
	    strncmp(line + hl, l->key, strlen(l->key)) == 0)
		for (long i = 0; i < l->n && fgets(line, sizeof(line), f); i++)
			merge_line(l->g, &l->e[i], line);
	fclose(f);
}

/* az_eval_read_source's add for az_tangled_labels_open: arg is a struct opening. */
struct opening {
	struct az_tangled_labels *l;
	long cap;
};

static int open_add(void *arg, const char *moves, const struct az_position *pos)
{
	struct opening *o = arg;

	return entry_add(o->l, &o->cap, moves, pos->state);
}

int az_tangled_labels_open(const char *src, const char *cache, const char *key, long limit,
			   struct az_tangled_solver *s, struct az_tangled_labels **out, char *err,
			   size_t errlen)
{
	struct az_tangled_labels *l;
	struct opening o;
	int rc;

	if (!az_tangled_game())
		return -EINVAL;
	if (!(l = calloc(1, sizeof(*l))))
		return -ENOMEM;
	l->g = az_tangled_game();
	l->s = s;
	snprintf(l->path, sizeof(l->path), "%s", cache);
	snprintf(l->key, sizeof(l->key), "%s", key);
	o = (struct opening){.l = l};
	rc = az_eval_read_source(l->g, src, limit, open_add, &o, err, errlen);
	if (rc < 0) {
		az_tangled_labels_close(l);
		return rc;
	}
	read_cache(l);
	*out = l;
	return 0;
}

long az_tangled_labels_count(const struct az_tangled_labels *l)
{
	return l->n;
}

const void *az_tangled_labels_state(const struct az_tangled_labels *l, long i)
{
	return l->e[i].state;
}

int az_tangled_labels_outcome(struct az_tangled_labels *l, long i, int *outcome)
{
	struct entry *e = &l->e[i];
	int rc, v;

	if (e->outcome == AZ_EVAL_LABEL_UNKNOWN) {
		if ((rc = az_tangled_solve(l->s, e->state, &v)) < 0)
			return rc;
		e->outcome = (int8_t)v;
		l->dirty = 1;
	}
	*outcome = e->outcome;
	return 0;
}

int az_tangled_labels_keeps(struct az_tangled_labels *l, long i, int a, int *keeps)
{
	struct entry *e = &l->e[i];
	uint8_t child[AZ_GAME_STATE_MAX];
	int rc, o, worse;

	if (a < 0 || (uint32_t)a >= l->g->actions || e->keeps[a] == '-')
		return -EINVAL;
	if (e->keeps[a] == '?') {
		if ((rc = az_tangled_labels_outcome(l, i, &o)) < 0)
			return rc;
		az_game_after(l->g, e->state, a, child);
		/* the move changes o when the opponent then gets at least 1 - o */
		if ((rc = az_tangled_solve_at_least(l->s, child, 1 - o, &worse)) < 0)
			return rc;
		e->keeps[a] = worse ? 'x' : '+';
		l->dirty = 1;
	}
	*keeps = e->keeps[a] == '+';
	return 0;
}

int az_tangled_labels_save(struct az_tangled_labels *l, char *err, size_t errlen)
{
	char tmp[PATH_MAX + 32], dir[PATH_MAX];
	char *slash;
	FILE *f;
	int bad = 0;

	if (!l->dirty)
		return 0;
	snprintf(dir, sizeof(dir), "%s", l->path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		az_mkdir_p(dir);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", l->path, (long)getpid());
	if (!(f = fopen(tmp, "w"))) {
		snprintf(err, errlen, "cannot write the labels cache %s: %s", tmp, strerror(errno));
		return -EIO;
	}
	bad |= fprintf(f, HEADER "%s\n", l->key) < 0;
	for (long i = 0; i < l->n; i++) {
		const struct entry *e = &l->e[i];

		bad |= az_eval_write_label(f, e->moves, e->outcome, e->keeps) < 0;
	}
	if (fclose(f) != 0 || bad || rename(tmp, l->path) < 0) {
		snprintf(err, errlen, "cannot write the labels cache %s: %s", l->path,
			 strerror(errno));
		unlink(tmp);
		return -EIO;
	}
	l->dirty = 0;
	return 0;
}

void az_tangled_labels_close(struct az_tangled_labels *l)
{
	if (!l)
		return;
	for (long i = 0; i < l->n; i++) {
		free(l->e[i].moves);
		free(l->e[i].state);
		free(l->e[i].keeps);
	}
	free(l->e);
	free(l);
}

/* ---- labelled sets from sampled games ---- */

/* The states taken so far, for distinctness: open addressing over a growing array. */
struct seen {
	uint8_t *states; /* n x kb */
	size_t n, cap;   /* states */
	long *slot;      /* slots: index into states, -1 empty */
	size_t nslot;    /* a power of two, > 2 n */
	size_t kb;
};

static size_t seen_find(const struct seen *s, const uint8_t *st)
{
	size_t i = (size_t)az_fnv1a(AZ_FNV1A_INIT, st, s->kb) & (s->nslot - 1);

	while (s->slot[i] >= 0 && memcmp(s->states + (size_t)s->slot[i] * s->kb, st, s->kb))
		i = (i + 1) & (s->nslot - 1);
	return i;
}

/* Add st: 1 when new, 0 when seen before, -ENOMEM. */
static int seen_add(struct seen *s, const uint8_t *st)
{
	if (2 * (s->n + 1) > s->nslot) {
		size_t ns = s->nslot ? 2 * s->nslot : 1024;
		long *slot = malloc(ns * sizeof(*slot));

		if (!slot)
			return -ENOMEM;
		free(s->slot);
		s->slot = slot;
		s->nslot = ns;
		memset(slot, 0xff, ns * sizeof(*slot));
		for (size_t k = 0; k < s->n; k++)
			s->slot[seen_find(s, s->states + k * s->kb)] = (long)k;
	}
	size_t i = seen_find(s, st);
	if (s->slot[i] >= 0)
		return 0;
	if (s->n == s->cap) {
		size_t c = s->cap ? 2 * s->cap : 256;
		uint8_t *p = realloc(s->states, c * s->kb);

		if (!p)
			return -ENOMEM;
		s->states = p;
		s->cap = c;
	}
	memcpy(s->states + s->n * s->kb, st, s->kb);
	s->slot[i] = (long)s->n++;
	return 1;
}

static int uncoloured(const struct az_tangled_graph *tg, const uint8_t *st)
{
	int k = 0;

	for (int e = 0; e < tg->e; e++)
		k += st[tg->n + e] == 0;
	return k;
}

/* A move drawn from the policy's weights (raised to 1 / temperature) or uniformly. */
static int pick_move(const struct az_game *g, const struct az_tangled_sample *p,
		     struct az_rng *rng, const uint8_t *st, int *action)
{
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	float pol[AZ_GAME_ACTIONS_MAX];
	double w[AZ_GAME_ACTIONS_MAX], sum = 0.0, x;
	int n = g->legal(st, mask), rc, last = -1;

	if (p->policy && (rc = p->policy(p->ctx, st, pol)) < 0)
		return rc;
	for (uint32_t a = 0; a < g->actions; a++) {
		w[a] = 0.0;
		if (!mask[a])
			continue;
		w[a] = p->policy ? pow(pol[a] > 0 ? (double)pol[a] : 0.0,
				       1.0 / (double)p->temperature) : 1.0;
		sum += w[a];
		last = (int)a;
	}
	if (!(sum > 0.0)) { /* a policy with no mass on legal moves: uniform */
		for (uint32_t a = 0; a < g->actions; a++)
			w[a] = mask[a];
		sum = n;
	}
	x = sum * (double)az_rng_below(rng, 1u << 30) / (double)(1u << 30);
	for (uint32_t a = 0; a < g->actions; a++) {
		if (w[a] <= 0.0)
			continue;
		if (x < w[a]) {
			*action = (int)a;
			return 0;
		}
		x -= w[a];
	}
	*action = last;
	return 0;
}

/* Play one game until its first non-terminal position with the wanted number of uncoloured
 * edges: 1 with st and moves set, 0 when the game ended without one, or a negative errno. */
static int sample_game(const struct az_game *g, const struct az_tangled_sample *p,
		       struct az_rng *rng, uint8_t *st, char *moves, size_t mlen)
{
	const struct az_tangled_graph *tg = az_tangled_current_graph();
	size_t len = 0;
	int a, rc;

	g->init(st);
	strcpy(moves, "-");
	while (!g->terminal(st, NULL)) {
		if (uncoloured(tg, st) == p->uncoloured)
			return 1;
		if (uncoloured(tg, st) < p->uncoloured)
			return 0;
		if ((rc = pick_move(g, p, rng, st, &a)) < 0)
			return rc;
		if (len)
			moves[len++] = '.';
		rc = g->format_action(a, moves + len, mlen - len);
		if (rc <= 0 || (size_t)rc >= mlen - len)
			return -EINVAL;
		len += (size_t)rc;
		g->apply(st, a);
	}
	return 0;
}

static void write_line(FILE *f, const struct az_game *g, const char *moves, int v,
		       const uint8_t *best)
{
	char buf[32];
	int first = 1;

	fprintf(f, "%s %d ", moves, v);
	for (uint32_t a = 0; a < g->actions; a++) {
		if (!best[a])
			continue;
		g->format_action((int)a, buf, sizeof(buf));
		fprintf(f, "%s%s", first ? "" : ",", buf);
		first = 0;
	}
	fputc('\n', f);
}

int az_tangled_labelled_write(const char *path, const struct az_tangled_sample *p,
			      struct az_tangled_solver *s, struct az_tangled_sample_result *r,
			      char *err, size_t errlen)
{
	const struct az_game *g = az_tangled_game();
	uint8_t st[AZ_GAME_STATE_MAX], best[AZ_GAME_ACTIONS_MAX];
	char moves[AZ_POSITIONS_LINE_MAX + 1], tmp[PATH_MAX + 32];
	long max_games = p->max_games ? p->max_games : 100 * p->count;
	struct seen seen = {.kb = g ? g->state_bytes : 1};
	struct timespec t0, t1;
	struct az_rng rng;
	int rc = 0, v;
	FILE *f;

	memset(r, 0, sizeof(*r));
	if (!g) {
		snprintf(err, errlen, "tangled is not configured");
		return -EINVAL;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (!(f = fopen(tmp, "w"))) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		return -EIO;
	}
	az_rng_seed(&rng, p->seed);
	while (rc == 0 && r->written < p->count && r->games < max_games) {
		r->games++;
		rc = sample_game(g, p, &rng, st, moves, sizeof(moves));
		if (rc <= 0)
			continue;
		rc = seen_add(&seen, st);
		if (rc <= 0)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = az_tangled_solve_best(s, st, &v, best);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		r->seconds += (double)(t1.tv_sec - t0.tv_sec) +
			      1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
		if (rc == -ETIMEDOUT) {
			r->unsolved++;
			rc = 0;
		} else if (rc == 0) {
			write_line(f, g, moves, v, best);
			r->written++;
		}
	}
	free(seen.states);
	free(seen.slot);
	if (rc < 0) {
		snprintf(err, errlen, "labelling failed: %s", strerror(-rc));
		fclose(f);
		unlink(tmp);
		return rc;
	}
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		return -EIO;
	}
	return 0;
}
