/* SPDX-License-Identifier: MIT */
/* Fuzz target: positions files. Byte 0 of an input chooses the game (even: tic-tac-toe, odd:
 * Connect Four); the rest, up to its first NUL, is both a move string for az_game_play_moves and
 * a whole line for az_positions_parse_line. Accepted lines must describe a reachable,
 * non-terminal position with legal best moves; rejections carry one printable line. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "games/game.h"
#include "tests/fuzz/fuzz.h"
#include "eval/positions.h"

#define TEXT_MAX 4096

int az_fuzz_verdict;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void check_message(const char *err, const char *prefix)
{
	if (!az_fuzz_one_line(err) || strncmp(err, prefix, strlen(prefix)) != 0) {
		fprintf(stderr, "bad error message (want prefix \"%s\"): \"%.200s\"\n", prefix,
			err);
		AZ_ASSERT(!"one printable line");
	}
}

static void fuzz_moves(const struct az_game *g, const char *moves)
{
	uint8_t st[AZ_GAME_STATE_MAX];
	char err[256];
	int rc;

	memset(err, 0, sizeof(err));
	rc = az_game_play_moves(g, st, moves, err, sizeof(err));
	if (rc < 0) {
		AZ_ASSERT(rc == -EINVAL);
		check_message(err, "move ");
		return;
	}
	AZ_ASSERT((size_t)rc == (strcmp(moves, "-") == 0 ? 0 : strlen(moves)));
	AZ_ASSERT((uint32_t)rc <= g->max_plies);
}

/* An accepted line: the first field replays to the same state, best moves are legal. */
static void check_position(const struct az_game *g, const char *line,
			   const struct az_position *p)
{
	uint8_t st[AZ_GAME_STATE_MAX], legal[AZ_GAME_ACTIONS_MAX];
	char moves[TEXT_MAX];
	size_t i = strspn(line, " \t"), n = strcspn(line + i, " \t\r\n");
	int nb = 0;

	memcpy(moves, line + i, n);
	moves[n] = '\0';
	AZ_ASSERT(az_game_play_moves(g, st, moves, NULL, 0) == p->plies);
	AZ_ASSERT(memcmp(st, p->state, g->state_bytes) == 0);
	AZ_ASSERT(!g->terminal(p->state, NULL));
	AZ_ASSERT(!p->has_best || p->has_score);
	AZ_ASSERT(!p->has_score || isfinite(p->score));
	if (!p->has_best)
		return;
	g->legal(p->state, legal);
	for (uint32_t a = 0; a < g->actions; a++) {
		AZ_ASSERT(!p->best[a] || legal[a]);
		nb += p->best[a];
	}
	AZ_ASSERT(nb >= 1 && nb == p->n_best);
}

/* Blanks only or a comment, before an optional "\r\n" or "\n" line end, and not too long. */
static int blank_line(const char *s)
{
	size_t len = strlen(s);

	if (len > 0 && s[len - 1] == '\n')
		len--;
	if (len > 0 && s[len - 1] == '\r')
		len--;
	size_t b = strspn(s, " \t");
	/* blanks only, or a comment: '#' first after the blanks */
	return (b >= len || s[b] == '#') && len <= AZ_POSITIONS_LINE_MAX;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct az_game *g;
	struct az_position p;
	char text[TEXT_MAX], err[256];
	size_t n;
	int rc;

	if (size < 1 || size > TEXT_MAX)
		return 0;
	g = (data[0] & 1) ? &az_game_connect4 : &az_game_tictactoe;
	n = size - 1;
	memcpy(text, data + 1, n);
	text[n] = '\0';
	fuzz_moves(g, text);

	memset(err, 0, sizeof(err));
	rc = az_positions_parse_line(g, text, &p, err, sizeof(err));
	AZ_ASSERT((rc == 0) == blank_line(text));
	if (rc == 1) {
		check_position(g, text, &p);
	} else if (rc < 0) {
		AZ_ASSERT(rc == -EINVAL);
		check_message(err, "");
	}
	az_fuzz_verdict = rc == 1;
	return 0;
}
