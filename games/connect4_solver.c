/* SPDX-License-Identifier: MIT */
/* Exact Connect Four solver: negamax with alpha-beta pruning on bitboards, written from the
 * algorithm of Pascal Pons' tutorial (blog.gamesolver.org, "Solving Connect Four", 2019):
 * - a position is the side to move's stones `cur` and all stones `mask` (bit 7 * col + row, as
 *   in connect4.c); playing swaps the roles: cur' = cur ^ mask, mask' = mask | move;
 * - a move that lets the opponent win at once is never searched (blocking a single threat is
 *   forced, two threats lose), so the side to move never has an immediate win in negamax;
 * - the score bounds that follow from the number of stones narrow the window at each node;
 * - moves are tried by how many winning cells they create, centre columns first on ties;
 * - a transposition table keeps upper and lower bounds by position key;
 * - the root's exact score is found by a sequence of null-window searches that bisect the score
 *   range, probing near 0 first (an outcome needs only the window (-1, 1)).
 * No code of his (AGPL) is used; the names and the layout are this project's. */
#include "games/connect4_solver.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "games/connect4_impl.h"

enum { COLS = 7, ROWS = 6, CELLS = COLS * ROWS, STRIDE = ROWS + 1 };

#define BOTTOM_ROW 0x0040810204081ull       /* bit 7 * c for c = 0..6 */
#define BOARD (BOTTOM_ROW * 0x3Full)        /* every playable cell */
#define COLUMN(c) (0x3Full << (STRIDE * (c)))

struct az_c4_solver {
	uint64_t *tt;  /* [1 << bits]: key | byte << 56; 0 = empty (no key is 0) */
	unsigned shift; /* 64 - bits */
	uint64_t nodes;
};

struct pos {
	uint64_t cur, mask;
	int moves;
};

/* Empty playable cells where one more stone of p makes four (with the stones of p). */
static uint64_t winning_cells(uint64_t p, uint64_t mask)
{
	static const int dir[3] = { STRIDE, STRIDE - 1, STRIDE + 1 };
	uint64_t r = (p << 1) & (p << 2) & (p << 3); /* vertical: three below */

	for (int i = 0; i < 3; i++) {
		int d = dir[i];
		uint64_t a = (p << d) & (p << 2 * d), b = (p >> d) & (p >> 2 * d);

		r |= a & (p << 3 * d); /* three on one side */
		r |= a & (p >> d);     /* two on one side, one on the other */
		r |= b & (p << d);
		r |= b & (p >> 3 * d);
	}
	return r & (BOARD ^ mask);
}

static uint64_t playable(uint64_t mask)
{
	return (mask + BOTTOM_ROW) & BOARD;
}

static int can_win_next(const struct pos *p)
{
	return (winning_cells(p->cur, p->mask) & playable(p->mask)) != 0;
}

/* Moves that do not hand the opponent an immediate win (0: every move loses at once). */
static uint64_t safe_moves(const struct pos *p)
{
	uint64_t moves = playable(p->mask);
	uint64_t threats = winning_cells(p->cur ^ p->mask, p->mask);
	uint64_t forced = moves & threats;

	if (forced) {
		if (forced & (forced - 1))
			return 0; /* two threats: one of them stays open */
		moves = forced;
	}
	return moves & ~(threats >> 1); /* never play right below an opponent's winning cell */
}

static void play(struct pos *p, uint64_t move)
{
	p->cur ^= p->mask;
	p->mask |= move;
	p->moves++;
}

/* The key: cur plus a marker bit on top of each column's stones; unique per position. */
static uint64_t key_of(const struct pos *p)
{
	return p->cur + p->mask + BOTTOM_ROW;
}

enum { LOWER = 0x80, OFFSET = 64 };

static uint64_t *slot_of(struct az_c4_solver *s, uint64_t key)
{
	return &s->tt[(key * 0x9E3779B97F4A7C15ull) >> s->shift];
}

static void tt_put(struct az_c4_solver *s, uint64_t key, int score, int lower)
{
	*slot_of(s, key) = key | ((uint64_t)((score + OFFSET) | (lower ? LOWER : 0)) << 56);
}

/* Returns 1 with the stored bound, 0 when the key is not in the table. */
static int tt_get(struct az_c4_solver *s, uint64_t key, int *score, int *lower)
{
	uint64_t e = *slot_of(s, key);
	unsigned byte = (unsigned)(e >> 56);

	if (e == 0 || (e & ((1ull << 56) - 1)) != key)
		return 0;
	*lower = (byte & LOWER) != 0;
	*score = (int)(byte & ~LOWER) - OFFSET;
	return 1;
}

/* Score of p within (alpha, beta): the exact score when it lies inside, otherwise a bound on
 * the side it fell out of. Requires: the side to move cannot win with its next move. */
static int negamax(struct az_c4_solver *s, const struct pos *p, int alpha, int beta)
{
	static const int order[COLS] = { 3, 2, 4, 1, 5, 0, 6 };
	uint64_t next = safe_moves(p), moves[COLS], key;
	int score[COLS], n = 0, lo, hi, v, lower;

	s->nodes++;
	if (!next)
		return -(CELLS - p->moves) / 2; /* the opponent wins with its next stone */
	if (p->moves >= CELLS - 2)
		return 0; /* nobody can win with the last two stones */
	lo = -(CELLS - 2 - p->moves) / 2; /* the opponent cannot win with its next stone */
	if (alpha < lo) {
		alpha = lo;
		if (alpha >= beta)
			return alpha;
	}
	hi = (CELLS - 1 - p->moves) / 2; /* we cannot win with our next stone */
	key = key_of(p);
	if (tt_get(s, key, &v, &lower)) {
		if (lower && v > lo)
			lo = v;
		else if (!lower && v < hi)
			hi = v;
	}
	if (alpha < lo) {
		alpha = lo;
		if (alpha >= beta)
			return alpha;
	}
	if (beta > hi) {
		beta = hi;
		if (alpha >= beta)
			return beta;
	}
	/* Insertion sort by the winning cells a move creates, stable: centre first on ties. */
	for (int i = 0; i < COLS; i++) {
		uint64_t m = next & COLUMN(order[i]);
		int sc, j;

		if (!m)
			continue;
		sc = __builtin_popcountll(winning_cells(p->cur | m, p->mask | m));
		for (j = n; j > 0 && score[j - 1] < sc; j--) {
			moves[j] = moves[j - 1];
			score[j] = score[j - 1];
		}
		moves[j] = m;
		score[j] = sc;
		n++;
	}
	for (int i = 0; i < n; i++) {
		struct pos c = *p;

		play(&c, moves[i]);
		v = -negamax(s, &c, -beta, -alpha);
		if (v >= beta) {
			tt_put(s, key, v, 1);
			return v;
		}
		if (v > alpha)
			alpha = v;
	}
	tt_put(s, key, alpha, 0);
	return alpha;
}

int az_c4_solver_create(unsigned log2_entries, struct az_c4_solver **out)
{
	struct az_c4_solver *s;

	if (log2_entries < 10 || log2_entries > 28 || !out)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->tt = calloc((size_t)1 << log2_entries, sizeof(*s->tt));
	if (!s->tt) {
		free(s);
		return -ENOMEM;
	}
	s->shift = 64 - log2_entries;
	*out = s;
	return 0;
}

void az_c4_solver_destroy(struct az_c4_solver *s)
{
	if (!s)
		return;
	free(s->tt);
	free(s);
}

uint64_t az_c4_solver_nodes(const struct az_c4_solver *s)
{
	return s->nodes;
}

/* The solver's view of a game state; -EINVAL when the game is over. */
static int load(const void *state, struct pos *p)
{
	struct c4_state st;

	memcpy(&st, state, sizeof(st));
	if (st.result || st.plies >= CELLS)
		return -EINVAL;
	p->mask = st.stones[0] | st.stones[1];
	p->cur = st.stones[st.plies & 1];
	p->moves = st.plies;
	return 0;
}

static int exact(struct az_c4_solver *s, const struct pos *p)
{
	int lo = -(CELLS - p->moves) / 2, hi = (CELLS + 1 - p->moves) / 2;

	if (can_win_next(p))
		return (CELLS + 1 - p->moves) / 2;
	while (lo < hi) {
		int med = lo + (hi - lo) / 2, r;

		/* Probe near 0 first: most of the work is telling wins, draws and losses apart. */
		if (med <= 0 && lo / 2 < med)
			med = lo / 2;
		else if (med >= 0 && hi / 2 > med)
			med = hi / 2;
		r = negamax(s, p, med, med + 1);
		if (r <= med)
			hi = r;
		else
			lo = r;
	}
	return lo;
}

static int sign_of(struct az_c4_solver *s, const struct pos *p)
{
	int r;

	if (p->moves >= CELLS)
		return 0;
	if (can_win_next(p))
		return 1;
	r = negamax(s, p, -1, 1);
	return r > 0 ? 1 : r < 0 ? -1 : 0;
}

int az_c4_solver_score(struct az_c4_solver *s, const void *state, int *score)
{
	struct pos p;

	if (load(state, &p) < 0)
		return -EINVAL;
	*score = exact(s, &p);
	return 0;
}

int az_c4_solver_outcome(struct az_c4_solver *s, const void *state, int *outcome)
{
	struct pos p;

	if (load(state, &p) < 0)
		return -EINVAL;
	*outcome = sign_of(s, &p);
	return 0;
}

int az_c4_solver_move_outcomes(struct az_c4_solver *s, const void *state, int8_t out[7],
			       int *outcome)
{
	uint64_t win;
	struct pos p;
	int best = -2;

	if (load(state, &p) < 0)
		return -EINVAL;
	win = winning_cells(p.cur, p.mask);
	for (int c = 0; c < COLS; c++) {
		uint64_t m = playable(p.mask) & COLUMN(c);
		struct pos q = p;

		if (!m) {
			out[c] = -2;
			continue;
		}
		if (m & win) {
			out[c] = 1;
		} else {
			play(&q, m);
			out[c] = (int8_t)-sign_of(s, &q);
		}
		if (out[c] > best)
			best = out[c];
	}
	*outcome = best;
	return 0;
}

int az_c4_threats(const void *state, unsigned *mine, unsigned *theirs)
{
	uint64_t w, t;
	struct pos p;

	if (load(state, &p) < 0)
		return -EINVAL;
	w = winning_cells(p.cur, p.mask) & playable(p.mask);
	t = winning_cells(p.cur ^ p.mask, p.mask) & playable(p.mask);
	*mine = *theirs = 0;
	for (int c = 0; c < COLS; c++) {
		*mine |= (w & COLUMN(c)) ? 1u << c : 0u;
		*theirs |= (t & COLUMN(c)) ? 1u << c : 0u;
	}
	return 0;
}

int az_c4_solver_at_least(struct az_c4_solver *s, const void *state, int bound, int *yes)
{
	struct pos p;

	if (load(state, &p) < 0)
		return -EINVAL;
	if (can_win_next(&p))
		*yes = (CELLS + 1 - p.moves) / 2 >= bound;
	else
		*yes = negamax(s, &p, bound - 1, bound) >= bound;
	return 0;
}
