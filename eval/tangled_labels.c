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

static int tangled_outcome(void *ctx, const void *state, int *v)
{
	return az_tangled_solve(ctx, state, v);
}

static int tangled_worse(void *ctx, const void *child, int o, int *worse)
{
	/* the move changes o when the opponent then gets at least 1 - o */
	return az_tangled_solve_at_least(ctx, child, 1 - o, worse);
}

/* The solver is the caller's (borrowed): no create or destroy. */
static const struct az_labels_solver tangled_solver = {NULL, tangled_outcome, tangled_worse,
						       NULL};

int az_tangled_labels_open(const char *src, const char *cache, const char *key, long limit,
			   struct az_tangled_solver *s, struct az_labels **out, char *err,
			   size_t errlen)
{
	const struct az_game *g = az_tangled_game();
	char header[1400];

	if (!g)
		return -EINVAL;
	snprintf(header, sizeof(header), "%s%s", HEADER, key);
	const struct az_labels_spec p = {.g = g, .solver = &tangled_solver, .ctx = s,
					 .header = header};

	return az_labels_open(&p, src, cache, limit, out, err, errlen);
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
	char moves[AZ_POSITIONS_LINE_MAX + 1];
	struct az_atomic_file af;
	long max_games = p->max_games ? p->max_games : 100 * p->count;
	struct seen seen = {.kb = g ? g->state_bytes : 1};
	struct timespec t0, t1;
	struct az_rng rng;
	int rc = 0, v;

	memset(r, 0, sizeof(*r));
	if (!g) {
		snprintf(err, errlen, "tangled is not configured");
		return -EINVAL;
	}
	rc = az_atomic_open(&af, path, err, errlen);
	if (rc < 0)
		return rc;
	if (p->board)
		fprintf(af.f, "%s%s\n", AZ_POSITIONS_BOARD, p->board);
	az_rng_seed(&rng, p->seed);
	while (rc == 0 && r->written < p->count && r->games < max_games) {
		if (p->tick && p->tick(p->tick_arg, r->written, p->count)) {
			rc = -EINTR;
			break;
		}
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
			write_line(af.f, g, moves, v, best);
			r->written++;
		}
	}
	free(seen.states);
	free(seen.slot);
	if (rc < 0) {
		if (rc == -EINTR)
			snprintf(err, errlen, "interrupted after %ld of %ld positions; %s %s",
				 r->written, p->count, path,
				 access(path, F_OK) == 0 ? "is unchanged" : "was not written");
		else
			snprintf(err, errlen, "labelling failed: %s", strerror(-rc));
		az_atomic_abort(&af);
		return rc;
	}
	return az_atomic_commit(&af, err, errlen);
}
