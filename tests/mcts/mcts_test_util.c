/* SPDX-License-Identifier: MIT */
/* Shared by the mcts test executables: a forced-move game, a bandit, a network-free evaluator,
 * tree helpers that fail the test on any error, and the golden-transcript check. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/mcts/mcts_test_util.h"

const struct az_game *const ttt = &az_game_tictactoe;

/* ---- the forced-move game ---- */

void chain_init(void *state)
{
	struct chain_state *s = state;

	s->left = 4;
	s->to_move = 0;
}

static int chain_to_move(const void *state)
{
	return ((const struct chain_state *)state)->to_move;
}

static int chain_legal(const void *state, uint8_t *mask)
{
	const struct chain_state *s = state;

	mask[0] = s->left > 0;
	mask[1] = 0;
	return mask[0];
}

static void chain_apply(void *state, int action)
{
	struct chain_state *s = state;

	assert_int_equal(action, 0);
	s->left--;
	s->to_move ^= 1;
}

static int chain_terminal(const void *state, float *value)
{
	const struct chain_state *s = state;

	if (s->left)
		return 0;
	if (value)
		*value = -1.0f; /* whoever made the last move won */
	return 1;
}

const struct az_game chain_game = TEST_GAME(chain, 2, 255);

/* ---- a four-armed bandit game ---- */

void bandit_init(void *state)
{
	struct bandit_state *s = state;

	s->first = 0xff;
	s->plies = 0;
}

static int bandit_to_move(const void *state)
{
	return ((const struct bandit_state *)state)->plies & 1;
}

static int bandit_legal(const void *state, uint8_t *mask)
{
	int open = ((const struct bandit_state *)state)->plies < 30;

	memset(mask, open, 4);
	return open ? 4 : 0;
}

static void bandit_apply(void *state, int action)
{
	struct bandit_state *s = state;

	if (s->plies == 0)
		s->first = (uint8_t)action;
	s->plies++;
}

static int bandit_terminal(const void *state, float *value)
{
	if (((const struct bandit_state *)state)->plies < 30)
		return 0;
	if (value)
		*value = 0.0f;
	return 1;
}

const struct az_game bandit_game = TEST_GAME(bandit, 4, 30);

/* ---- evaluator and tree helpers ---- */

int eval_uniform(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	struct eval_ctx *e = ctx;

	(void)state;
	e->calls++;
	if (e->fail_after && e->calls == e->fail_after)
		return -EIO;
	for (uint32_t a = 0; a < e->g->actions; a++)
		policy[a] = 1.0f / (float)e->g->actions;
	*value = 0.0f;
	return 0;
}

struct az_tree *make_tree(const struct az_game *g, const void *root, uint64_t seed, float eps)
{
	struct az_mcts_params p;
	struct az_tree *t = NULL;

	az_mcts_params_default(&p, g);
	p.seed = seed;
	p.dir_eps = eps;
	assert_int_equal(az_tree_create(g, &p, root, &t), 0);
	assert_non_null(t);
	return t;
}

void ttt_position(const char *moves, void *state)
{
	char err[128];

	assert_true(az_game_play_moves(ttt, state, moves, err, sizeof(err)) >= 0);
}

struct az_tree *ttt_tree(const char *moves, void *state)
{
	ttt_position(moves, state);
	return make_tree(ttt, state, 1, 0.0f);
}

void assert_tree_ok(const struct az_tree *t)
{
	uint32_t bad = UINT32_MAX;
	int r = az_tree_check(t, &bad);

	if (r)
		fail_msg("tree invariant broken at node %u", bad);
}

int search(struct az_tree *t, const struct az_game *g, uint32_t sims)
{
	struct eval_ctx e = { .g = g };

	return az_mcts_search(t, sims, eval_uniform, &e);
}

int wins_at_once(const struct az_game *g, const void *state, int a)
{
	uint8_t s[AZ_GAME_STATE_MAX];
	float v;

	az_game_after(g, state, a, s);
	return g->terminal(s, &v) && v < 0.0f;
}

uint32_t sum_u32(const uint32_t *x, uint32_t n)
{
	uint32_t s = 0;

	for (uint32_t i = 0; i < n; i++)
		s += x[i];
	return s;
}

int ttt_sweep(struct ttt_sweep *w, uint64_t seed,
	      void (*visit)(void *w, const void *state, const char *moves))
{
	uint8_t s[AZ_GAME_STATE_MAX];
	int n;

	ttt->init(s);
	w->t = make_tree(ttt, s, seed, 0.0f);
	n = az_game_enumerate(ttt, 1, visit, w);
	az_tree_destroy(w->t);
	w->t = NULL;
	return n;
}

/* Append printf(fmt, ...) to out[0..len) at *n. */
static void append(char *out, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*n += (size_t)vsnprintf(out + *n, len - *n, fmt, ap);
	va_end(ap);
	assert_true(*n < len);
}

void ttt_transcript(struct az_tree *t, int (*move)(struct az_tree *t, int ply), int target,
		    const char *header, char *out, size_t len)
{
	uint32_t visits[9];
	float pi[9], v;
	size_t n = 0;

	append(out, len, &n, "%s", header);
	for (int ply = 0; !ttt->terminal(az_tree_root_state(t), &v); ply++) {
		int a = move(t, ply);

		assert_true(a >= 0);
		az_tree_root_children(t, visits, NULL, NULL);
		append(out, len, &n, "%d:", a + 1);
		for (int c = 0; c < 9; c++)
			append(out, len, &n, " %u", visits[c]);
		if (target) {
			az_tree_policy_target(t, pi);
			append(out, len, &n, " |");
			for (int c = 0; c < 9; c++)
				append(out, len, &n, " %.0f", 100.0 * pi[c]);
		}
		append(out, len, &n, "\n");
		assert_int_equal(az_tree_advance(t, a), 0);
		assert_tree_ok(t);
	}
	ttt->format(az_tree_root_state(t), out + n, len - n);
	az_tree_destroy(t);
}

void assert_golden(const char *path, const char *got)
{
	char want[8192];
	size_t n;
	FILE *f;

	if (getenv("AZ_GOLDEN_UPDATE")) {
		f = fopen(path, "w");
		assert_non_null(f);
		assert_true(fputs(got, f) >= 0);
		assert_int_equal(fclose(f), 0);
		print_message("rewrote %s\n", path);
		return;
	}
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s (run with AZ_GOLDEN_UPDATE=1 to create it)", path);
	n = fread(want, 1, sizeof(want) - 1, f);
	fclose(f);
	want[n] = '\0';
	if (strcmp(got, want) != 0) {
		print_message("golden transcript changed; got:\n%s", got);
		fail_msg("%s differs (AZ_GOLDEN_UPDATE=1 rewrites it if the change is intended)",
			 path);
	}
}
