/* SPDX-License-Identifier: MIT */
/* Tic-tac-toe on a 3x3 board: cells 0..8 row-major (notation '1'..'9'), X moves first. The
 * state is 12 plain bytes whose every byte is a function of the cells, so equal positions have
 * equal bytes (the solver hashes them). */
#include "games/game.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum { N = 9 };

/* Every byte is canonical (no padding; result and plies follow from the cells), so memcmp of two
 * states compares positions. */
struct ttt_state {
	uint8_t cell[N]; /* 0 empty, 1 X (first player), 2 O */
	uint8_t to_move; /* 0 X, 1 O */
	uint8_t result;  /* 0 in progress, 1 X won, 2 O won, 3 draw */
	uint8_t plies;   /* stones on the board */
};
_Static_assert(sizeof(struct ttt_state) == 12, "tic-tac-toe state must have no padding");

/* The lines through each cell (up to 4: row, column, two diagonals), -1 terminated. */
static const int8_t lines_of[N][5][3] = {
	{ { 0, 1, 2 }, { 0, 3, 6 }, { 0, 4, 8 }, { -1 } },
	{ { 0, 1, 2 }, { 1, 4, 7 }, { -1 } },
	{ { 0, 1, 2 }, { 2, 5, 8 }, { 2, 4, 6 }, { -1 } },
	{ { 3, 4, 5 }, { 0, 3, 6 }, { -1 } },
	{ { 3, 4, 5 }, { 1, 4, 7 }, { 0, 4, 8 }, { 2, 4, 6 }, { -1 } },
	{ { 3, 4, 5 }, { 2, 5, 8 }, { -1 } },
	{ { 6, 7, 8 }, { 0, 3, 6 }, { 2, 4, 6 }, { -1 } },
	{ { 6, 7, 8 }, { 1, 4, 7 }, { -1 } },
	{ { 6, 7, 8 }, { 2, 5, 8 }, { 0, 4, 8 }, { -1 } },
};

/* The dihedral group of the square as cell permutations: cell c goes to perm[k][c].
 * 0 identity, 1-3 clockwise rotations by 90/180/270 degrees, 4 left-right mirror, 5 up-down
 * mirror, 6 transpose (main diagonal), 7 anti-transpose. */
static const uint8_t perm[8][N] = {
	{ 0, 1, 2, 3, 4, 5, 6, 7, 8 }, { 2, 5, 8, 1, 4, 7, 0, 3, 6 },
	{ 8, 7, 6, 5, 4, 3, 2, 1, 0 }, { 6, 3, 0, 7, 4, 1, 8, 5, 2 },
	{ 2, 1, 0, 5, 4, 3, 8, 7, 6 }, { 6, 7, 8, 3, 4, 5, 0, 1, 2 },
	{ 0, 3, 6, 1, 4, 7, 2, 5, 8 }, { 8, 5, 2, 7, 4, 1, 6, 3, 0 },
};

static void ttt_init(void *state)
{
	struct ttt_state *s = state;

	memset(s, 0, sizeof(*s));
}

static int ttt_to_move(const void *state)
{
	const struct ttt_state *s = state;

	return s->to_move;
}

static int ttt_legal(const void *state, uint8_t *mask)
{
	const struct ttt_state *s = state;
	int n = 0;

	if (s->result) {
		memset(mask, 0, N);
		return 0;
	}
	for (int c = 0; c < N; c++) {
		mask[c] = s->cell[c] == 0;
		n += mask[c];
	}
	return n;
}

static void ttt_apply(void *state, int action)
{
	struct ttt_state *s = state;
	uint8_t me = (uint8_t)(s->to_move + 1);

	s->cell[action] = me;
	s->plies++;
	s->to_move ^= 1;
	/* Only lines through the new stone can have been completed by it. */
	for (int i = 0; lines_of[action][i][0] >= 0; i++) {
		const int8_t *l = lines_of[action][i];

		if (s->cell[l[0]] == me && s->cell[l[1]] == me && s->cell[l[2]] == me) {
			s->result = me;
			return;
		}
	}
	if (s->plies == N)
		s->result = 3;
}

static int ttt_terminal(const void *state, float *value)
{
	const struct ttt_state *s = state;

	if (!s->result)
		return 0;
	if (value) {
		if (s->result == 3)
			*value = 0.0f;
		else /* the winner is whoever moved last, i.e. not the side to move */
			*value = s->result == s->to_move + 1 ? 1.0f : -1.0f;
	}
	return 1;
}

/* MCTS-Solver's check (games/game.h): a move ends the game when it completes a line through its
 * cell (the mover wins: -1 for the side to move after it) or fills the last cell (a draw). */
static uint64_t ttt_terminal_after(const void *state, int8_t *tvalue)
{
	const struct ttt_state *s = state;
	uint8_t me = (uint8_t)(s->to_move + 1);
	uint64_t out = 0;

	if (s->result)
		return 0;
	for (int c = 0; c < N; c++) {
		if (s->cell[c])
			continue;
		int won = 0;

		for (int i = 0; !won && lines_of[c][i][0] >= 0; i++) {
			const int8_t *l = lines_of[c][i];

			/* the line's two other cells are the mover's (c itself is empty) */
			won = (s->cell[l[0]] == me || l[0] == c) && (s->cell[l[1]] == me || l[1] == c) &&
			      (s->cell[l[2]] == me || l[2] == c);
		}
		if (won || s->plies + 1 == N) {
			out |= (uint64_t)1 << c;
			tvalue[c] = won ? -1 : 0;
		}
	}
	return out;
}

/* features[p * 9 + c]: plane 0 = stones of the side to move, plane 1 = the opponent's. */
static void ttt_encode(const void *state, float *features)
{
	const struct ttt_state *s = state;
	uint8_t me = (uint8_t)(s->to_move + 1);

	for (int c = 0; c < N; c++) {
		features[c] = s->cell[c] == me ? 1.0f : 0.0f;
		features[N + c] = s->cell[c] && s->cell[c] != me ? 1.0f : 0.0f;
	}
}

static void ttt_symmetry(int k, const float *feat_in, float *feat_out, const float *pol_in,
			 float *pol_out)
{
	const uint8_t *p = perm[k];

	for (int c = 0; c < N; c++) {
		if (feat_in && feat_out) {
			feat_out[p[c]] = feat_in[c];
			feat_out[N + p[c]] = feat_in[N + c];
		}
		if (pol_in && pol_out)
			pol_out[p[c]] = pol_in[c];
	}
}

static int ttt_format(const void *state, char *buf, size_t len)
{
	static const char mark[3] = { '.', 'X', 'O' };
	const struct ttt_state *s = state;
	char text[64];
	int n = 0;

	for (int r = 0; r < 3; r++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, "%c %c %c\n",
			      mark[s->cell[3 * r]], mark[s->cell[3 * r + 1]],
			      mark[s->cell[3 * r + 2]]);
	if (s->result == 3)
		snprintf(text + n, sizeof(text) - (size_t)n, "draw\n");
	else if (s->result)
		snprintf(text + n, sizeof(text) - (size_t)n, "%c wins\n", mark[s->result]);
	else
		snprintf(text + n, sizeof(text) - (size_t)n, "%c to move\n", mark[s->to_move + 1]);
	return snprintf(buf, len, "%s", text);
}

static int ttt_format_action(int action, char *buf, size_t len)
{
	return az_game_format_digit(action, N, buf, len);
}

/* One digit '1'..'9', surrounding blanks allowed; with a state, the cell must be free and the
 * game not over (state may be NULL to check the notation only). */
static int ttt_parse_action(const void *state, const char *text)
{
	const struct ttt_state *s = state;
	int a = az_game_parse_digit(text, N);

	if (a < 0 || (s && (s->result || s->cell[a])))
		return -EINVAL;
	return a;
}

const struct az_game az_game_tictactoe = {
	.name = "tictactoe",
	.state_bytes = sizeof(struct ttt_state),
	.actions = N,
	.features = 2 * N,
	.symmetries = 8,
	.max_plies = N,
	.planes = 2, .height = 3, .width = 3, /* ttt_encode: 2 planes of cells 0-8, row-major */
	AZ_GAME_RULES(ttt),
	.terminal_after = ttt_terminal_after,
	AZ_GAME_IO(ttt),
	.sides = { "X", "O" },
	.not_notation = "not a cell (1-9)",
	.illegal = "cell occupied",
};

const struct az_game_desc az_game_desc_tictactoe = {
	.name = "tictactoe",
	.alias = "ttt",
	.game = &az_game_tictactoe,
	/* Good tic-tac-toe networks mostly draw each other: 100 arena games with 4 random opening
	 * plies let a better candidate show it (measured: raw-policy accuracy 94-97 % over seeds
	 * 1-5, against 90-95 % with 40 games and 2 plies). */
	.defaults = { .iterations = 20, .games_per_iter = 500, .sims = 64, .temp_plies = 4,
		      .arena_games = 100, .arena_temp_plies = 4, .hidden = 64, .blocks = 2,
		      .train_steps_max = 1500, .window = 4, .dir_alpha = 1.0f,
		      .train_epochs = 4.0f, .lr = 2e-3f, .arena_threshold = 0.55f },
};
