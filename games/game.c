/* SPDX-License-Identifier: MIT */
/* The game registry (lookup by name) and the positions-file move-string player shared by the
 * tools and the tests. */
#include "games/game.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	const struct az_game *game;
} registry[] = {
	{ "tictactoe", &az_game_tictactoe },
	{ "ttt", &az_game_tictactoe },
	{ "connect4", &az_game_connect4 },
	{ "c4", &az_game_connect4 },
};

const struct az_game *az_game_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++)
		if (strcmp(registry[i].name, name) == 0)
			return registry[i].game;
	return NULL;
}

const char *az_game_names(void)
{
	return "tictactoe,connect4";
}

/* Words for the error messages: what a move is called and why a well-formed one is refused. */
static void move_words(const struct az_game *g, const char **notation, const char **illegal)
{
	if (g == &az_game_tictactoe) {
		*notation = "not a cell (1-9)";
		*illegal = "cell occupied";
	} else if (g == &az_game_connect4) {
		*notation = "not a column (1-7)";
		*illegal = "column full";
	} else {
		*notation = "not a move";
		*illegal = "illegal move";
	}
}

/* Whether the one-character move text is in the game's notation at all (whatever the position):
 * some action formats to exactly that text. */
static int in_notation(const struct az_game *g, const char *text)
{
	char buf[16];

	for (uint32_t a = 0; a < g->actions; a++)
		if (g->format_action((int)a, buf, sizeof(buf)) > 0 && strcmp(buf, text) == 0)
			return 1;
	return 0;
}

static void move_error(char *err, size_t errlen, int index, char ch, const char *why)
{
	if (!err || !errlen)
		return;
	if (isprint((unsigned char)ch))
		snprintf(err, errlen, "move %d ('%c'): %s", index, ch, why);
	else
		snprintf(err, errlen, "move %d (byte 0x%02x): %s", index, (unsigned char)ch, why);
}

/* On error, state holds the position reached by the moves before the bad one. */
int az_game_play_moves(const struct az_game *g, void *state, const char *moves, char *err,
		       size_t errlen)
{
	const char *notation, *illegal;
	int n = 0;

	if (!g || !state || !moves) {
		if (err && errlen)
			snprintf(err, errlen, "missing game, state or move string");
		return -EINVAL;
	}
	g->init(state);
	if (strcmp(moves, "-") == 0)
		return 0;
	move_words(g, &notation, &illegal);
	for (; moves[n]; n++) {
		char text[2] = { moves[n], '\0' };
		int a;

		if (g->terminal(state, NULL)) {
			move_error(err, errlen, n + 1, moves[n], "game already over");
			return -EINVAL;
		}
		/* Blanks are not moves, although parse_action would skip them. */
		a = isspace((unsigned char)moves[n]) ? -EINVAL : g->parse_action(state, text);
		if (a < 0) {
			move_error(err, errlen, n + 1, moves[n],
				   in_notation(g, text) ? illegal : notation);
			return -EINVAL;
		}
		g->apply(state, a);
	}
	return n;
}
