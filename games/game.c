/* SPDX-License-Identifier: MIT */
/* The game registry (lookup by name) and the positions-file move-string player shared by the
 * tools and the tests. */
#include "games/game.h"
#include "games/tangled/tangled.h"

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
	/* configured at run time by az_tangled_setup(); NULL until then */
	if (strcmp(name, "tangled") == 0)
		return az_tangled_game();
	for (size_t i = 0; i < sizeof(registry) / sizeof(registry[0]); i++)
		if (strcmp(registry[i].name, name) == 0)
			return registry[i].game;
	return NULL;
}

const char *az_game_names(void)
{
	return "tictactoe,connect4,tangled";
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

int az_game_move_separator(const struct az_game *g)
{
	char buf[32];
	for (uint32_t a = 0; a < g->actions; a++)
		if (g->format_action((int)a, buf, sizeof(buf)) > 1)
			return 1;
	return 0;
}

/* Dotted form "v2.0-1g.v3" for games whose moves take several characters (a single move has
 * no dot: "v2"). */
static int play_dotted(const struct az_game *g, void *state, const char *moves, char *err,
		       size_t errlen)
{
	const char *notation, *illegal;
	int n = 0;

	move_words(g, &notation, &illegal);
	for (const char *p = moves; *p;) {
		char text[32];
		size_t len = strcspn(p, ".");
		int a;

		n++;
		if (len == 0 || len >= sizeof(text)) {
			if (err && errlen)
				snprintf(err, errlen, "move %d: %s", n,
					 len ? "too long" : "empty (two dots in a row?)");
			return -EINVAL;
		}
		memcpy(text, p, len);
		text[len] = '\0';
		if (g->terminal(state, NULL)) {
			if (err && errlen)
				snprintf(err, errlen, "move %d ('%s'): game already over", n, text);
			return -EINVAL;
		}
		a = g->parse_action(state, text);
		if (a < 0) {
			if (err && errlen)
				snprintf(err, errlen, "move %d ('%s'): %s", n, text,
					 in_notation(g, text) ? illegal : notation);
			return -EINVAL;
		}
		g->apply(state, a);
		p += len;
		if (*p == '.' && *++p == '\0') {
			if (err && errlen)
				snprintf(err, errlen, "move %d: trailing '.'", n);
			return -EINVAL;
		}
	}
	return n;
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
	if (az_game_move_separator(g))
		return play_dotted(g, state, moves, err, errlen);
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
