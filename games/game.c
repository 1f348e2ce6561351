/* SPDX-License-Identifier: MIT */
/* What every game shares: the positions-file move-string player used by the tools and the
 * tests, side names, and the game options of the descriptors (the registry is games/registry.c). */
#include "games/game.h"

#include <ctype.h>
#include <stdlib.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Words for the error messages: what a move is called and why a well-formed one is refused. */
static void move_words(const struct az_game *g, const char **notation, const char **illegal)
{
	*notation = g->not_notation ? g->not_notation : "not a move";
	*illegal = g->illegal ? g->illegal : "illegal move";
}

const char *az_game_side_name(const struct az_game *g, int side)
{
	if (g->sides[side ? 1 : 0])
		return g->sides[side ? 1 : 0];
	return side ? "second player" : "first player";
}

int az_game_format_digit(int action, int n, char *buf, size_t len)
{
	if (action < 0 || action >= n)
		return -EINVAL;
	return snprintf(buf, len, "%c", '1' + action);
}

int az_game_parse_digit(const char *text, int n)
{
	int a;

	while (*text == ' ' || *text == '\t')
		text++;
	if (text[0] < '1' || text[0] >= '1' + n)
		return -EINVAL;
	a = text[0] - '1';
	for (text++; *text; text++)
		if (*text != ' ' && *text != '\t' && *text != '\n' && *text != '\r')
			return -EINVAL;
	return a;
}

int az_game_in_notation(const struct az_game *g, const char *text)
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
					 az_game_in_notation(g, text) ? illegal : notation);
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
				   az_game_in_notation(g, text) ? illegal : notation);
			return -EINVAL;
		}
		g->apply(state, a);
	}
	return n;
}

/* ---- descriptors and their options ---- */

const struct az_game *az_game_desc_game(const struct az_game_desc *d)
{
	return d->game ? d->game : d->configured ? d->configured() : NULL;
}

void az_game_opt_default(const struct az_game_opt *o, union az_game_opt_value *v)
{
	memset(v, 0, sizeof(*v));
	if (o->type == AZ_GAME_OPT_U32)
		v->u32 = (uint32_t)strtoul(o->def, NULL, 10);
	else if (o->type == AZ_GAME_OPT_F32)
		v->f32 = strtof(o->def, NULL);
	else
		snprintf(v->str, o->size, "%s", o->def);
}

static void (*progress_fn)(void *ctx, const char *what, uint64_t done, uint64_t total);
static void *progress_ctx;

void az_game_set_progress(void (*fn)(void *ctx, const char *what, uint64_t done,
				     uint64_t total),
			  void *ctx)
{
	progress_fn = fn;
	progress_ctx = ctx;
}

void az_game_progress(const char *what, uint64_t done, uint64_t total)
{
	if (progress_fn)
		progress_fn(progress_ctx, what, done, total);
}
