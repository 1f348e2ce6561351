/* SPDX-License-Identifier: MIT */
/* docs/new-game.md's example game, Take-away, extracted from the page at configure time
 * (tests/games/CMakeLists.txt) and played here: moves and their notation, the end of the game,
 * terminal_after against apply() + terminal() at every reachable position, the exact solver's
 * verdict (the first player wins by leaving a multiple of 4), and the descriptor's defaults. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "games/game.h"
#include "tests/games/perft.h"
#include "tests/test_util.h"

extern const struct az_game az_game_pile;
extern const struct az_game_desc az_game_desc_pile;

static const struct az_game *G = &az_game_pile;

/* A couple of moves in the game's notation, then the last stone taken. */
static void test_moves(void **unused)
{
	uint8_t st[AZ_GAME_STATE_MAX], mask[AZ_GAME_ACTIONS_MAX];
	char board[128], err[128];
	float v = 0;

	(void)unused;
	G->init(st);
	assert_int_equal(G->legal(st, mask), 3);
	assert_int_equal(az_game_play_moves(G, st, "332", err, sizeof(err)), 3);
	assert_int_equal(G->to_move(st), 1);
	assert_int_equal(G->legal(st, mask), 2); /* 2 stones left: take 1 or 2 */
	assert_false(mask[2]);
	assert_int_equal(G->parse_action(st, "3"), -EINVAL);
	assert_int_equal(G->parse_action(NULL, "3"), 2);
	assert_int_equal(G->parse_action(st, "4"), -EINVAL);
	assert_true(G->format(st, board, sizeof(board)) > 0);
	assert_string_equal(board, "2 stones left\nsecond to move\n");
	G->apply(st, G->parse_action(st, "2"));
	assert_true(G->terminal(st, &v));
	assert_true(v == -1.0f); /* the first player, to move, lost */
	assert_int_equal(G->legal(st, mask), 0);
	/* the move-string player refuses what the rules refuse, with the game's words */
	assert_true(az_game_play_moves(G, st, "3333", err, sizeof(err)) < 0);
	assert_true(az_game_play_moves(G, st, "9", err, sizeof(err)) < 0);
}

struct walk {
	long states;
	struct after_counts checked;
};

/* terminal_after names exactly the moves that end the game, with the result after them. */
static void check_after(void *arg, const void *state, const char *moves)
{
	struct walk *w = arg;

	(void)moves;
	w->states++;
	if (!G->terminal(state, NULL))
		check_terminal_after(G, state, &w->checked);
}

static void test_terminal_after(void **unused)
{
	struct walk w = {0};

	(void)unused;
	/* (stones left, side to move): 10 and 9 with one side each, 8 .. 0 with either: 20 */
	assert_int_equal(az_game_enumerate(G, 0, check_after, &w), 20);
	assert_int_equal(w.states, 20);
	assert_true(w.checked.moves > 0);
}

static void test_solve(void **unused)
{
	uint8_t st[AZ_GAME_STATE_MAX], best[AZ_GAME_ACTIONS_MAX] = {0};

	(void)unused;
	G->init(st);
	assert_int_equal(az_solve(G, st, best), 1); /* 10 = 4k + 2: take 2 and win */
	assert_int_equal(best[0] + best[1] + best[2], 1);
	assert_true(best[1]);
	assert_int_equal(perft(G, st, 1), 3);
	assert_int_equal(perft(G, st, 2), 9);
}

static void test_descriptor(void **unused)
{
	const struct az_game_desc *d = &az_game_desc_pile;

	(void)unused;
	assert_ptr_equal(d->game, G);
	assert_string_equal(d->name, G->name);
	assert_true(d->defaults.iterations && d->defaults.games_per_iter && d->defaults.sims);
	assert_true(d->defaults.hidden && d->defaults.blocks && d->defaults.window);
	assert_true(d->defaults.lr > 0 && d->defaults.dir_alpha > 0 &&
		    d->defaults.train_epochs > 0);
	assert_true(d->defaults.arena_games && d->defaults.arena_threshold > 0);
	assert_true(G->state_bytes <= AZ_GAME_STATE_MAX && G->actions <= 64);
	assert_int_equal(G->planes, 0); /* no board: --net resnet is refused for it */
}

AZ_TEST_MAIN(cmocka_unit_test(test_moves), cmocka_unit_test(test_terminal_after),
	     cmocka_unit_test(test_solve), cmocka_unit_test(test_descriptor))
