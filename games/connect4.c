/* SPDX-License-Identifier: MIT */
/* Connect Four on 7 columns x 6 rows (notation '1'..'7' for the columns), as two bitboards with
 * the layout of Pons' solver: bit 7 * col + row, row 0 at the bottom, row 6 an always-empty
 * sentinel so that shifted lines never wrap from one column into the next. */
#include "games/game.h"
#include "games/connect4_impl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum { COLS = 7, ROWS = 6, CELLS = COLS * ROWS, STRIDE = ROWS + 1 };


#define BOTTOM(c) ((uint64_t)1 << (STRIDE * (c)))
#define TOP(c) ((uint64_t)1 << (STRIDE * (c) + ROWS - 1))
#define COLUMN(c) ((((uint64_t)1 << ROWS) - 1) << (STRIDE * (c)))

static inline void load(const void *state, struct c4_state *s)
{
	memcpy(s, state, sizeof(*s));
}

/* Four in a row in bitboard b: pairs at distance d, then pairs of pairs at distance 2d, for the
 * four directions (d = 1 vertical, 7 horizontal, 6 and 8 the two diagonals). */
static int has_four(uint64_t b)
{
	static const int dir[4] = { 1, STRIDE, STRIDE - 1, STRIDE + 1 };

	for (int i = 0; i < 4; i++) {
		uint64_t m = b & (b >> dir[i]);

		if (m & (m >> (2 * dir[i])))
			return 1;
	}
	return 0;
}

static void c4_init(void *state)
{
	struct c4_state s;

	memset(&s, 0, sizeof(s));
	memcpy(state, &s, sizeof(s));
}

static int c4_to_move(const void *state)
{
	struct c4_state s;

	load(state, &s);
	return s.plies & 1;
}

static int c4_legal(const void *state, uint8_t *mask)
{
	struct c4_state s;
	uint64_t all;
	int n = 0;

	load(state, &s);
	if (s.result) {
		memset(mask, 0, COLS);
		return 0;
	}
	all = s.stones[0] | s.stones[1];
	for (int c = 0; c < COLS; c++) {
		mask[c] = !(all & TOP(c));
		n += mask[c];
	}
	return n;
}

static void c4_apply(void *state, int action)
{
	struct c4_state s;
	uint64_t all;
	int p;

	load(state, &s);
	p = s.plies & 1;
	all = s.stones[0] | s.stones[1];
	/* Adding the column's bottom bit carries into the lowest empty cell of that column. */
	s.stones[p] |= (all + BOTTOM(action)) & COLUMN(action);
	s.plies++;
	if (has_four(s.stones[p]))
		s.result = (uint8_t)(p + 1);
	else if (s.plies == CELLS)
		s.result = 3;
	memcpy(state, &s, sizeof(s));
}

static int c4_terminal(const void *state, float *value)
{
	struct c4_state s;

	load(state, &s);
	if (!s.result)
		return 0;
	if (value) {
		if (s.result == 3)
			*value = 0.0f;
		else /* the winner is whoever moved last, i.e. not the side to move */
			*value = s.result == (s.plies & 1) + 1 ? 1.0f : -1.0f;
	}
	return 1;
}

/* The cells that would complete four in a row for stones b (occupied or not, sentinel row
 * included): per direction d, three of b's stones beside the cell in one of the four ways a
 * line of four can hold it (three on one side, or two and one). Shifts cannot wrap between
 * columns: the empty sentinel row breaks every line that would. */
static uint64_t winning_cells(uint64_t b)
{
	static const int dir[3] = { STRIDE, STRIDE - 1, STRIDE + 1 };
	uint64_t r = (b << 1) & (b << 2) & (b << 3); /* vertical: the three below */

	for (int i = 0; i < 3; i++) {
		int d = dir[i];
		uint64_t two = (b << d) & (b << 2 * d);

		r |= two & (b << 3 * d);
		r |= two & (b >> d);
		two = (b >> d) & (b >> 2 * d);
		r |= two & (b << d);
		r |= two & (b >> 3 * d);
	}
	return r;
}

static uint64_t c4_terminal_after(const void *state, int8_t *tvalue)
{
	struct c4_state s;
	uint64_t all, wins, out = 0;

	load(state, &s);
	if (s.result)
		return 0;
	all = s.stones[0] | s.stones[1];
	wins = winning_cells(s.stones[s.plies & 1]);
	for (int c = 0; c < COLS; c++) {
		if (all & TOP(c))
			continue; /* full */
		if (wins & (all + BOTTOM(c)) & COLUMN(c)) { /* the cell a stone would drop into */
			out |= (uint64_t)1 << c;
			tvalue[c] = -1; /* the mover won: the side to move after it lost */
		} else if (s.plies + 1 == CELLS) {
			out |= (uint64_t)1 << c;
			tvalue[c] = 0; /* the last cell, no four: a draw */
		}
	}
	return out;
}

/* features[p * 42 + row * 7 + col], row 0 at the bottom: plane 0 = stones of the side to move,
 * plane 1 = the opponent's. */
static void c4_encode(const void *state, float *features)
{
	struct c4_state s;
	uint64_t me, opp;

	load(state, &s);
	me = s.stones[s.plies & 1];
	opp = s.stones[(s.plies & 1) ^ 1];
	for (int r = 0; r < ROWS; r++) {
		for (int c = 0; c < COLS; c++) {
			uint64_t bit = (uint64_t)1 << (STRIDE * c + r);

			features[r * COLS + c] = (me & bit) ? 1.0f : 0.0f;
			features[CELLS + r * COLS + c] = (opp & bit) ? 1.0f : 0.0f;
		}
	}
}

/* k = 0 identity, k = 1 left-right mirror (column c <-> 6 - c). */
static void c4_symmetry(int k, const float *feat_in, float *feat_out, const float *pol_in,
			float *pol_out)
{
	if (feat_in && feat_out) {
		for (int i = 0; i < 2 * CELLS; i++) {
			int c = i % COLS;

			feat_out[k ? i - c + (COLS - 1 - c) : i] = feat_in[i];
		}
	}
	if (pol_in && pol_out)
		for (int c = 0; c < COLS; c++)
			pol_out[k ? COLS - 1 - c : c] = pol_in[c];
}

static int c4_format(const void *state, char *buf, size_t len)
{
	static const char mark[3] = { '.', 'X', 'O' };
	struct c4_state s;
	char text[256];
	int n = 0;

	load(state, &s);
	for (int r = ROWS - 1; r >= 0; r--) {
		for (int c = 0; c < COLS; c++) {
			uint64_t bit = (uint64_t)1 << (STRIDE * c + r);
			int who = (s.stones[0] & bit) ? 1 : (s.stones[1] & bit) ? 2 : 0;

			text[n++] = mark[who];
			text[n++] = c == COLS - 1 ? '\n' : ' ';
		}
	}
	n += snprintf(text + n, sizeof(text) - (size_t)n, "1 2 3 4 5 6 7\n");
	if (s.result == 3)
		snprintf(text + n, sizeof(text) - (size_t)n, "draw\n");
	else if (s.result)
		snprintf(text + n, sizeof(text) - (size_t)n, "%c wins\n", mark[s.result]);
	else
		snprintf(text + n, sizeof(text) - (size_t)n, "%c to move\n",
			 mark[(s.plies & 1) + 1]);
	return snprintf(buf, len, "%s", text);
}

static int c4_format_action(int action, char *buf, size_t len)
{
	return az_game_format_digit(action, COLS, buf, len);
}

/* One digit '1'..'7', surrounding blanks allowed; with a state, the column must have room and
 * the game not be over (state may be NULL to check the notation only). */
static int c4_parse_action(const void *state, const char *text)
{
	struct c4_state s;
	int a = az_game_parse_digit(text, COLS);

	if (a < 0)
		return a;
	if (state) {
		load(state, &s);
		if (s.result || ((s.stones[0] | s.stones[1]) & TOP(a)))
			return -EINVAL;
	}
	return a;
}

const struct az_game az_game_connect4 = {
	.name = "connect4",
	.state_bytes = sizeof(struct c4_state),
	.actions = COLS,
	.features = 2 * CELLS,
	.symmetries = 2,
	.max_plies = CELLS,
	.planes = 2, .height = ROWS, .width = COLS, /* c4_encode: [plane][row][col] */
	AZ_GAME_RULES(c4),
	.terminal_after = c4_terminal_after,
	AZ_GAME_IO(c4),
	.sides = { "X", "O" },
	.not_notation = "not a column (1-7)",
	.illegal = "column full",
};

const struct az_game_desc az_game_desc_connect4 = {
	.name = "connect4",
	.alias = "c4",
	.game = &az_game_connect4,
	.defaults = { .iterations = 10, .games_per_iter = 200, .sims = 100, .temp_plies = 8,
		      .arena_games = 40, .arena_temp_plies = 4, .hidden = 128, .blocks = 3,
		      .train_steps_max = 2000, .window = 5, .dir_alpha = 1.0f,
		      .train_epochs = 2.0f, .lr = 1e-3f, .explore = 0.5f, .arena_threshold = 0.55f },
};
