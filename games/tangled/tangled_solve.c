/* SPDX-License-Identifier: MIT */
/* Exact Tangled solver (games/tangled/tangled_solve.h): fail-soft alpha-beta over {-1, 0, +1}
 * with a table of [lo, hi] bounds per packed (optionally canonical) state. Moves, turn and
 * terminal results all come from the game's vtable, so the solver follows the rules the search
 * and the trainer play by (forced vertex pick, fixed tokens) and the adjudicator's results. */
#include "games/tangled/tangled_solve.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "games/tangled/tangled_impl.h"

#define BUDGET_CHECK 1024 /* nodes between clock readings */

/* Table slot value: 0 empty, else 0x10 | (lo + 1) | (hi + 1) << 2. */
#define SLOT_USED 0x10

struct az_tangled_solver {
	const struct az_game *g;
	struct az_tangled_solve_params p;
	int len;                 /* state bytes, N + E */
	int words;               /* 64-bit words of a packed key */
	int nsym;                /* symmetries used (1: identity only) */
	uint16_t *src;           /* nsym x len: transformed[i] = state[src[k * len + i]] */
	/* the table */
	uint64_t *keys;          /* cap x words */
	uint8_t *vals;           /* cap */
	size_t cap, count;
	/* per-ply scratch: the child state then the legal mask */
	uint8_t *scratch;
	size_t level_bytes;
	uint32_t levels;
	/* the current call's budget */
	uint64_t call_nodes;
	struct timespec t0;
	int expired;
	struct az_tangled_solve_stats st;
};

void az_tangled_solve_params_default(struct az_tangled_solve_params *p)
{
	*p = (struct az_tangled_solve_params){.symmetry = 1, .max_entries = (size_t)1 << 26};
}

/* ---- keys ---- */

/* Source maps of the game's symmetries: symmetry k moves vertex v to perm[v] and edge e to its
 * image, so the transformed state at position i holds the original byte at the preimage. */
static int make_sources(struct az_tangled_solver *s, const struct az_tangled_graph *g)
{
	int n = g->n, e = g->e, nsym = s->p.symmetry ? (int)s->g->symmetries : 1;
	uint8_t (*perm)[AZ_TANGLED_MAX_VERTICES] = malloc(sizeof(*perm) * (size_t)nsym);
	int16_t *emap = malloc(sizeof(int16_t) * (size_t)nsym * (size_t)(e ? e : 1));
	int ret = -ENOMEM;

	s->src = malloc(sizeof(uint16_t) * (size_t)nsym * (size_t)s->len);
	if (!perm || !emap || !s->src)
		goto out;
	for (int k = 0; k < nsym; k++)
		memcpy(perm[k], az_tangled_symmetry_perm(k), AZ_TANGLED_MAX_VERTICES);
	tg_edge_maps(g, (const uint8_t (*)[AZ_TANGLED_MAX_VERTICES])perm, nsym, emap);
	for (int k = 0; k < nsym; k++) {
		uint16_t *src = s->src + (size_t)k * (size_t)s->len;

		for (int v = 0; v < n; v++)
			src[perm[k][v]] = (uint16_t)v;
		for (int x = 0; x < e; x++)
			src[n + emap[(size_t)k * (size_t)e + (size_t)x]] = (uint16_t)(n + x);
	}
	s->nsym = nsym;
	ret = 0;
out:
	free(perm);
	free(emap);
	return ret;
}

/* The smallest transformed state over the symmetries (byte order), into out. Most symmetries
 * lose within the first bytes, so each is compared lazily before it is copied. */
static void canonical(const struct az_tangled_solver *s, const uint8_t *st, uint8_t *out)
{
	int len = s->len;

	memcpy(out, st, (size_t)len);
	for (int k = 1; k < s->nsym; k++) {
		const uint16_t *src = s->src + (size_t)k * (size_t)len;
		int i = 0;

		while (i < len && st[src[i]] == out[i])
			i++;
		if (i < len && st[src[i]] < out[i])
			for (; i < len; i++)
				out[i] = st[src[i]];
	}
}

static void pack(const struct az_tangled_solver *s, const uint8_t *st, uint64_t *key)
{
	memset(key, 0, sizeof(uint64_t) * (size_t)s->words);
	for (int i = 0; i < s->len; i++)
		key[i >> 5] |= (uint64_t)(st[i] & 3) << (2 * (i & 31));
}

static uint64_t mix(const uint64_t *key, int words)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (int w = 0; w < words; w++) {
		h ^= key[w];
		h *= 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 29);
}

/* ---- the table ---- */

static size_t slot_of(const struct az_tangled_solver *s, const uint64_t *key)
{
	size_t i = (size_t)mix(key, s->words) & (s->cap - 1);
	size_t kb = sizeof(uint64_t) * (size_t)s->words;

	while (s->vals[i] && memcmp(s->keys + i * (size_t)s->words, key, kb) != 0)
		i = (i + 1) & (s->cap - 1);
	return i;
}

static int table_alloc(struct az_tangled_solver *s, size_t cap)
{
	s->keys = malloc(sizeof(uint64_t) * (size_t)s->words * cap);
	s->vals = calloc(cap, 1);
	if (!s->keys || !s->vals) {
		free(s->keys);
		free(s->vals);
		return -ENOMEM;
	}
	s->cap = cap;
	return 0;
}

/* Double the table; 0, or -ENOMEM (the old table is kept). */
static int table_grow(struct az_tangled_solver *s)
{
	uint64_t *okeys = s->keys;
	uint8_t *ovals = s->vals;
	size_t ocap = s->cap, w = (size_t)s->words;

	if (table_alloc(s, ocap * 2)) {
		s->keys = okeys;
		s->vals = ovals;
		s->cap = ocap;
		return -ENOMEM;
	}
	for (size_t i = 0; i < ocap; i++) {
		if (!ovals[i])
			continue;
		size_t j = slot_of(s, okeys + i * w);

		memcpy(s->keys + j * w, okeys + i * w, sizeof(uint64_t) * w);
		s->vals[j] = ovals[i];
	}
	free(okeys);
	free(ovals);
	return 0;
}

/* Narrow the stored bounds of key to [lo, hi] (intersected with what is known). A full table
 * (at max_entries, or out of memory while growing) refuses new keys. */
static void table_store(struct az_tangled_solver *s, const uint64_t *key, int lo, int hi)
{
	size_t i;

	if (2 * (s->count + 1) > s->cap &&
	    (2 * s->cap > 2 * s->p.max_entries || table_grow(s) < 0)) {
		i = slot_of(s, key);
		if (!s->vals[i]) {
			s->st.refused++;
			return;
		}
	} else {
		i = slot_of(s, key);
	}
	if (s->vals[i]) {
		int olo = (s->vals[i] & 3) - 1, ohi = ((s->vals[i] >> 2) & 3) - 1;

		lo = lo > olo ? lo : olo;
		hi = hi < ohi ? hi : ohi;
	} else {
		memcpy(s->keys + i * (size_t)s->words, key, sizeof(uint64_t) * (size_t)s->words);
		s->count++;
	}
	s->vals[i] = (uint8_t)(SLOT_USED | (lo + 1) | (hi + 1) << 2);
}

/* ---- search ---- */

static int budget_spent(struct az_tangled_solver *s)
{
	struct timespec now;

	if (s->expired)
		return 1;
	if (s->p.max_nodes && s->call_nodes > s->p.max_nodes)
		s->expired = 1;
	else if (s->p.max_seconds > 0 && (s->call_nodes % BUDGET_CHECK) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		s->expired = (double)(now.tv_sec - s->t0.tv_sec) +
			     1e-9 * (double)(now.tv_nsec - s->t0.tv_nsec) > s->p.max_seconds;
	}
	return s->expired;
}

static int int_value(float v)
{
	return v > 0.5f ? 1 : v < -0.5f ? -1 : 0;
}

/* Fail-soft alpha-beta: a value v with v <= alpha meaning "at most v", v >= beta "at least v",
 * exact in between. Returns the value (-1..1), or -ETIMEDOUT / -ENOMEM (both < -1). */
static int search(struct az_tangled_solver *s, const uint8_t *st, uint32_t depth, int alpha,
		  int beta)
{
	const struct az_game *g = s->g;
	uint8_t canon[AZ_GAME_STATE_MAX];
	uint64_t key[AZ_GAME_STATE_MAX / 32 + 1];
	uint8_t *child, *mask;
	int lo = -1, hi = 1, best = -1, a0, b0;
	float tv;

	s->st.nodes++;
	s->call_nodes++;
	if (budget_spent(s))
		return -ETIMEDOUT;
	if (g->terminal(st, &tv)) {
		s->st.terminals++;
		return int_value(tv);
	}
	if (s->nsym > 1) {
		canonical(s, st, canon);
		pack(s, canon, key);
	} else {
		pack(s, st, key);
	}
	size_t i = slot_of(s, key);
	if (s->vals[i]) {
		lo = (s->vals[i] & 3) - 1;
		hi = ((s->vals[i] >> 2) & 3) - 1;
		if (lo == hi || lo >= beta || hi <= alpha) {
			s->st.tt_hits++;
			return lo == hi ? lo : lo >= beta ? lo : hi;
		}
		alpha = alpha > lo ? alpha : lo;
		beta = beta < hi ? beta : hi;
	}
	if (depth >= s->levels)
		return -EINVAL; /* longer than max_plies: a broken game */
	a0 = alpha;
	b0 = beta;
	child = s->scratch + depth * s->level_bytes;
	mask = child + g->state_bytes;
	g->legal(st, mask);
	for (uint32_t a = 0; a < g->actions; a++) {
		int v;

		if (!mask[a])
			continue;
		az_game_after(g, st, (int)a, child);
		v = search(s, child, depth + 1, -beta, -alpha);
		if (v < -1)
			return v;
		v = -v;
		if (v > best) {
			best = v;
			if (best > alpha)
				alpha = best;
			if (alpha >= beta)
				break;
		}
	}
	if (best <= a0)
		table_store(s, key, -1, best);
	else if (best >= b0)
		table_store(s, key, best, 1);
	else
		table_store(s, key, best, best);
	return best;
}

static void call_start(struct az_tangled_solver *s)
{
	s->call_nodes = 0;
	s->expired = 0;
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
}

int az_tangled_solve(struct az_tangled_solver *s, const void *state, int *value)
{
	int v;

	call_start(s);
	v = search(s, state, 0, -1, 1);
	if (v < -1)
		return v;
	*value = v;
	return 0;
}

/* The null-window test "value >= v" without starting a new budget. */
static int at_least(struct az_tangled_solver *s, const void *state, int v, int *yes)
{
	int r;

	if (v <= -1) {
		*yes = 1;
		return 0;
	}
	if (v > 1) {
		*yes = 0;
		return 0;
	}
	r = search(s, state, 0, v - 1, v);
	if (r < -1)
		return r;
	*yes = r >= v;
	return 0;
}

int az_tangled_solve_at_least(struct az_tangled_solver *s, const void *state, int v, int *yes)
{
	call_start(s);
	return at_least(s, state, v, yes);
}

int az_tangled_solve_best(struct az_tangled_solver *s, const void *state, int *value,
			  uint8_t *best)
{
	const struct az_game *g = s->g;
	uint8_t mask[AZ_GAME_ACTIONS_MAX], child[AZ_GAME_STATE_MAX];
	int v, ret;

	if (g->terminal(state, NULL))
		return -EINVAL;
	call_start(s);
	v = search(s, state, 0, -1, 1);
	if (v < -1)
		return v;
	g->legal(state, mask);
	memset(best, 0, g->actions);
	for (uint32_t a = 0; a < g->actions; a++) {
		int worse;

		if (!mask[a])
			continue;
		az_game_after(g, state, (int)a, child);
		/* the move keeps v unless the opponent then gets at least -v + 1 */
		ret = at_least(s, child, 1 - v, &worse);
		if (ret < 0)
			return ret;
		best[a] = !worse;
	}
	*value = v;
	return 0;
}

int az_tangled_solver_create(const struct az_tangled_solve_params *p,
			     struct az_tangled_solver **out)
{
	const struct az_tangled_graph *tgr = az_tangled_current_graph();
	const struct az_game *g = az_tangled_game();
	struct az_tangled_solver *s;
	int ret = -ENOMEM;

	if (!g || !tgr)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->g = g;
	s->p = *p;
	if (!s->p.max_entries)
		s->p.max_entries = (size_t)1 << 26;
	s->len = (int)g->state_bytes;
	s->words = (2 * s->len + 63) / 64;
	s->levels = g->max_plies + 1;
	s->level_bytes = g->state_bytes + g->actions;
	s->scratch = malloc(s->levels * s->level_bytes);
	size_t cap = 1024;
	while (cap > 2 * s->p.max_entries && cap > 2)
		cap /= 2;
	if (!s->scratch || make_sources(s, tgr) < 0 || table_alloc(s, cap) < 0)
		goto err_free;
	s->st.symmetries = s->nsym;
	*out = s;
	return 0;

err_free:
	free(s->scratch);
	free(s->src);
	free(s);
	return ret;
}

void az_tangled_solver_destroy(struct az_tangled_solver *s)
{
	if (!s)
		return;
	free(s->keys);
	free(s->vals);
	free(s->src);
	free(s->scratch);
	free(s);
}

void az_tangled_solver_stats(const struct az_tangled_solver *s, struct az_tangled_solve_stats *st)
{
	*st = s->st;
	st->entries = s->count;
}
