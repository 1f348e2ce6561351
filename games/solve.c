/* SPDX-License-Identifier: MIT */
/* Exact negamax solver and state enumerator for small games, generic over the game vtable. Both
 * remember states in an open-addressing hash table keyed by the raw state bytes (FNV-1a, linear
 * probing). Nothing survives a call: each call builds its table and frees it before returning. */
#include "games/game.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

/* ---- the state table ---- */

struct memo {
	uint8_t *keys; /* cap * kb bytes */
	uint8_t *vals; /* cap bytes; 0 marks an empty slot, so stored values are 1..255 */
	size_t cap;    /* a power of two */
	size_t count;
	uint32_t kb;   /* key (state) bytes */
};

static int memo_init(struct memo *m, uint32_t kb, size_t cap)
{
	m->keys = malloc(cap * kb);
	m->vals = calloc(cap, 1);
	m->cap = cap;
	m->count = 0;
	m->kb = kb;
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		return -ENOMEM;
	}
	return 0;
}

static void memo_fini(struct memo *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t memo_slot(const struct memo *m, const void *key)
{
	size_t i = (size_t)az_fnv1a(AZ_FNV1A_INIT, key, m->kb) & (m->cap - 1);

	while (m->vals[i] && memcmp(m->keys + i * m->kb, key, m->kb) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* Stored value of key, 0 when absent. */
static uint8_t memo_get(const struct memo *m, const void *key)
{
	return m->vals[memo_slot(m, key)];
}

/* Double the capacity and reinsert everything. */
static int memo_grow(struct memo *m)
{
	struct memo bigger;
	int ret = memo_init(&bigger, m->kb, m->cap * 2);

	if (ret)
		return ret;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->vals[i]) {
			size_t j = memo_slot(&bigger, m->keys + i * m->kb);

			memcpy(bigger.keys + j * m->kb, m->keys + i * m->kb, m->kb);
			bigger.vals[j] = m->vals[i];
		}
	}
	bigger.count = m->count;
	memo_fini(m);
	*m = bigger;
	return 0;
}

/* Insert key with val (1..255) unless present. Returns 1 if inserted, 0 if it was already there
 * (its value unchanged), -ENOMEM. The table is kept at most half full. */
static int memo_put(struct memo *m, const void *key, uint8_t val)
{
	size_t i;

	if (2 * (m->count + 1) > m->cap && memo_grow(m))
		return -ENOMEM;
	i = memo_slot(m, key);
	if (m->vals[i])
		return 0;
	memcpy(m->keys + i * m->kb, key, m->kb);
	m->vals[i] = val;
	m->count++;
	return 1;
}

/* ---- per-call search context ---- */

/* One scratch level per ply below the root (a game lasts at most max_plies plies), so that the
 * recursion allocates nothing: the child state, then the legal-move mask. */
struct search {
	const struct az_game *g;
	struct memo memo;
	uint8_t *scratch;
	size_t level_bytes;
	uint32_t levels;
};

static int search_init(struct search *s, const struct az_game *g)
{
	int ret;

	s->g = g;
	s->levels = g->max_plies + 1;
	s->level_bytes = g->state_bytes + g->actions;
	s->scratch = malloc(s->levels * s->level_bytes);
	if (!s->scratch)
		return -ENOMEM;
	ret = memo_init(&s->memo, g->state_bytes, 1024);
	if (ret)
		goto err_scratch;
	return 0;

err_scratch:
	free(s->scratch);
	return ret;
}

static void search_fini(struct search *s)
{
	memo_fini(&s->memo);
	free(s->scratch);
}

static uint8_t *level_state(struct search *s, uint32_t depth)
{
	return s->scratch + depth * s->level_bytes;
}

static uint8_t *level_mask(struct search *s, uint32_t depth)
{
	return s->scratch + depth * s->level_bytes + s->g->state_bytes;
}

static int to_int_value(float v)
{
	return v > 0.5f ? 1 : v < -0.5f ? -1 : 0;
}

/* ---- solver ---- */

/* Value (-1, 0, +1) of state for its side to move; depth indexes the scratch levels. Memoised
 * as value + 2. Returns -ENOMEM, or -EINVAL when a game outlasts its max_plies. */
static int negamax(struct search *s, const void *state, uint32_t depth)
{
	const struct az_game *g = s->g;
	uint8_t *child, *mask;
	uint8_t known;
	float tv;
	int best = -1, ret;

	if (g->terminal(state, &tv))
		return to_int_value(tv);
	known = memo_get(&s->memo, state);
	if (known)
		return (int)known - 2;
	if (depth >= s->levels)
		return -EINVAL;
	child = level_state(s, depth);
	mask = level_mask(s, depth);
	g->legal(state, mask);
	for (uint32_t a = 0; a < g->actions && best < 1; a++) {
		if (!mask[a])
			continue;
		az_game_after(g, state, (int)a, child);
		ret = negamax(s, child, depth + 1);
		if (ret < -1)
			return ret;
		if (-ret > best)
			best = -ret;
	}
	ret = memo_put(&s->memo, state, (uint8_t)(best + 2));
	return ret < 0 ? ret : best;
}

int az_solve(const struct az_game *g, const void *state, uint8_t *optimal)
{
	struct search s;
	int8_t vals[AZ_GAME_ACTIONS_MAX];
	uint8_t *mask, *child;
	int best = -1, ret;
	float tv;

	if (!g || !state || g->actions > AZ_GAME_ACTIONS_MAX)
		return -EINVAL;
	if (optimal)
		memset(optimal, 0, g->actions);
	if (g->terminal(state, &tv))
		return to_int_value(tv);
	ret = search_init(&s, g);
	if (ret)
		return ret;
	/* The root scores every move (no cut-off) so that all optimal ones can be marked. */
	child = level_state(&s, 0);
	mask = level_mask(&s, 0);
	g->legal(state, mask);
	for (uint32_t a = 0; a < g->actions; a++) {
		if (!mask[a])
			continue;
		az_game_after(g, state, (int)a, child);
		ret = negamax(&s, child, 1);
		if (ret < -1)
			goto out;
		vals[a] = (int8_t)-ret;
		if (-ret > best)
			best = -ret;
	}
	if (optimal)
		for (uint32_t a = 0; a < g->actions; a++)
			optimal[a] = mask[a] && vals[a] == best;
	ret = best;
out:
	search_fini(&s);
	return ret;
}

/* ---- enumerator ---- */

struct walk {
	struct search s;
	int nonterminal_only;
	void (*fn)(void *ctx, const void *state, const char *moves);
	void *ctx;
	char *moves; /* the path to the current state, NUL-terminated */
	size_t moves_cap;
	int dotted; /* moves separated by '.' (az_game_move_separator) */
	int count;
};

/* Pre-order DFS, actions in increasing order: a state is reported along the first path that
 * reaches it. Returns 0 or -ENOMEM (-EINVAL when a game outlasts its max_plies). */
static int walk_from(struct walk *w, const void *state, uint32_t depth, size_t len)
{
	const struct az_game *g = w->s.g;
	uint8_t *child, *mask;
	int terminal, ret;

	ret = memo_put(&w->s.memo, state, 1);
	if (ret <= 0)
		return ret;
	terminal = g->terminal(state, NULL);
	if (!w->nonterminal_only || !terminal) {
		if (w->fn)
			w->fn(w->ctx, state, len ? w->moves : "-");
		w->count++;
	}
	if (terminal)
		return 0;
	if (depth >= w->s.levels)
		return -EINVAL;
	child = level_state(&w->s, depth);
	mask = level_mask(&w->s, depth);
	g->legal(state, mask);
	for (uint32_t a = 0; a < g->actions; a++) {
		int n;

		if (!mask[a])
			continue;
		size_t at = len;
		if (w->dotted && len > 0) {
			if (len + 1 >= w->moves_cap)
				return -EINVAL;
			w->moves[at++] = '.';
		}
		n = g->format_action((int)a, w->moves + at, w->moves_cap - at);
		if (n <= 0 || (size_t)n >= w->moves_cap - at)
			return -EINVAL;
		n += (int)(at - len);
		az_game_after(g, state, (int)a, child);
		ret = walk_from(w, child, depth + 1, len + (size_t)n);
		if (ret)
			return ret;
		w->moves[len] = '\0';
	}
	return 0;
}

int az_game_enumerate(const struct az_game *g, int nonterminal_only,
		      void (*fn)(void *ctx, const void *state, const char *moves), void *ctx)
{
	struct walk w = { .nonterminal_only = nonterminal_only, .fn = fn, .ctx = ctx };
	uint8_t start[AZ_GAME_STATE_MAX];
	int ret;

	if (!g || g->state_bytes > AZ_GAME_STATE_MAX)
		return -EINVAL;
	ret = search_init(&w.s, g);
	if (ret)
		return ret;
	/* Room for a long notation per move plus its '.' separator. */
	w.dotted = az_game_move_separator(g);
	w.moves_cap = 24 * (size_t)g->max_plies + 1;
	w.moves = calloc(w.moves_cap, 1);
	if (!w.moves) {
		ret = -ENOMEM;
		goto err_search;
	}
	g->init(start);
	ret = walk_from(&w, start, 0, 0);
	if (!ret)
		ret = w.count;
	free(w.moves);
err_search:
	search_fini(&w.s);
	return ret;
}
