/* SPDX-License-Identifier: MIT */
/* Tangled's inputs "completions" (games/tangled/tangled.h): six values after the board, the
 * outcome for the side to move and tanh(side * score) of the position completed with every
 * uncoloured edge grey, green and purple, checked against the adjudicator on hand-built
 * completions; zero before both tokens are placed; unchanged by the symmetries while the board
 * part permutes; refused without a complete table; recorded in a checkpoint's game options. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "games/tangled/tangled.h"
#include "tests/games/tangled_test.h"

#define NC AZ_TANGLED_COMPLETION_FEATURES

static const struct az_game *setup_inputs(int graph, enum az_tangled_variant variant,
					  const char *adj)
{
	struct az_tangled_options o;

	az_tangled_options_default(&o);
	o.adjudicator = adj;
	o.inputs = AZ_TANGLED_INPUTS_COMPLETIONS;
	return az_test_tangled_setup(&o, graph, variant);
}

/* The six values for state s, computed here from the adjudicator: completion c of s sets every
 * uncoloured edge to label c. */
static void expected(const struct az_game *g, const uint8_t *s, float *want)
{
	const struct az_tangled_graph *gr = az_tangled_current_graph();
	int n = gr->n, nz = 0;
	uint8_t t[64];
	struct az_tangled_outcome out;

	for (int i = 0; i < n + gr->e; i++)
		nz += s[i] != 0;
	int red_moves = !(nz & 1);
	for (int c = 1; c <= 3; c++) {
		memcpy(t, s, g->state_bytes);
		for (int k = 0; k < gr->e; k++)
			if (!t[n + k])
				t[n + k] = (uint8_t)c;
		assert_int_equal(az_tangled_adj_judge(az_tangled_current_adj(), t, 0.5, &out), 0);
		int mover_wins = out.winner == (red_moves ? AZ_TANGLED_RED : AZ_TANGLED_BLUE);
		want[c - 1] = out.winner == AZ_TANGLED_DRAW ? 0.0f : mover_wins ? 1.0f : -1.0f;
		want[c + 2] = (float)tanh(red_moves ? out.score : -out.score);
	}
}

/* K4 with fixed tokens (its in-memory table): every prefix of one game, both sides to move. */
static void test_values(void **st)
{
	const struct az_game *g;
	uint8_t s[16];
	float f[64], want[NC];
	int seen_nonzero = 0, seen_win = 0, seen_loss = 0;

	(void)st;
	g = setup_inputs(3, AZ_TANGLED_FIXED, NULL);
	assert_int_equal(g->features, g->actions + NC);
	/* K4: 4 vertices, 6 edges; colour edge k with label (k % 3) + 1, one move at a time */
	for (int seq = 0; seq < 9; seq++) {
		g->init(s);
		for (int k = 0; k < 5; k++) {
			g->encode(s, f);
			expected(g, s, want);
			for (int i = 0; i < NC; i++)
				assert_float_equal(f[g->actions + i], want[i], 1e-6);
			for (int i = 0; i < 3; i++) {
				seen_nonzero += want[i] != 0.0f;
				seen_win += want[i] == 1.0f;
				seen_loss += want[i] == -1.0f;
			}
			g->apply(s, (int)(4 + 3 * ((k + seq) % 6) + (k * seq + seq) % 3));
		}
	}
	/* the walk meets decisive completions of both signs, so a sign error would show */
	assert_true(seen_nonzero > 0 && seen_win > 0 && seen_loss > 0);
}

/* Free tokens: zero until both are placed; then the symmetries (all 24 automorphisms) move the
 * board part and keep the six values, as the encoding of the image says. */
static void test_free_and_symmetries(void **st)
{
	const struct az_game *g;
	const struct az_tangled_graph *gr;
	uint8_t s[16], t[16];
	float fs[64], ft[64], out[64], zero[NC] = {0};

	(void)st;
	g = setup_inputs(3, AZ_TANGLED_FREE, NULL);
	gr = az_tangled_current_graph();
	memset(s, 0, sizeof(s));
	s[0] = 1;         /* red on 0, blue not yet */
	s[gr->n + 0] = 2; /* edge 0-1 green */
	g->encode(s, fs);
	assert_memory_equal(fs + g->actions, zero, sizeof(zero));
	s[3] = 2;         /* blue on 3 */
	s[gr->n + 4] = 3; /* edge 1-3 purple: red to move (four non-zero entries) */
	g->encode(s, fs);
	float want[NC];
	expected(g, s, want);
	assert_memory_equal(fs + g->actions, want, sizeof(want));
	assert_int_equal(g->symmetries, 24);
	for (uint32_t k = 0; k < g->symmetries; k++) {
		az_test_tangled_image((int)k, s, t);
		g->encode(t, ft);
		g->symmetry((int)k, fs, out, NULL, NULL);
		assert_memory_equal(out, ft, sizeof(float) * g->features);
	}
}

/* Without a complete table every lookup would be an adjudication: setup refuses, and says so. */
static void test_refused_without_table(void **st)
{
	struct az_tangled_options o;
	char err[400] = "";

	(void)st;
	az_tangled_options_default(&o);
	o.graph = 3;
	o.adjudicator = "anneal";
	o.anneal_reads = 200;
	o.inputs = AZ_TANGLED_INPUTS_COMPLETIONS;
	assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "complete outcome table"));
	assert_non_null(strstr(err, "anneal"));
	assert_null(az_tangled_game());
	o.inputs = AZ_TANGLED_INPUTS_PLAIN;
	assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), 0);
	assert_int_equal(az_tangled_game()->features, az_tangled_game()->actions);
}

/* The descriptor: --inputs parsed and validated; a checkpoint records it unless plain (so that
 * checkpoints from before it, which record nothing, read as plain). */
static void test_descriptor(void **st)
{
	const struct az_game_desc *d = &az_game_desc_tangled;
	union az_game_opt_value v[AZ_TANGLED_OPTS];
	char buf[256], err[400];
	enum az_tangled_inputs in;

	(void)st;
	assert_string_equal(d->opts[AZ_TANGLED_OPT_INPUTS].name, "inputs");
	assert_true(d->opts[AZ_TANGLED_OPT_INPUTS].recorded);
	for (int k = 0; k < AZ_TANGLED_OPTS; k++)
		az_game_opt_default(&d->opts[k], &v[k]);
	assert_string_equal(v[AZ_TANGLED_OPT_INPUTS].str, "plain");
	d->record(v, buf, sizeof(buf));
	assert_string_equal(buf, "graph=3;variant=free");
	snprintf(v[AZ_TANGLED_OPT_INPUTS].str, sizeof(v[0].str), "completions");
	d->record(v, buf, sizeof(buf));
	assert_string_equal(buf, "graph=3;variant=free;inputs=completions");
	assert_int_equal(d->configure(v, 1, err, sizeof(err)), 0);
	assert_int_equal(az_tangled_game()->features, az_tangled_game()->actions + NC);
	snprintf(v[AZ_TANGLED_OPT_INPUTS].str, sizeof(v[0].str), "graph");
	assert_int_equal(d->configure(v, 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--inputs: plain or completions, not 'graph'"));
	assert_int_equal(az_tangled_inputs_parse("plain", &in), 0);
	assert_int_equal(in, AZ_TANGLED_INPUTS_PLAIN);
	assert_int_equal(az_tangled_inputs_parse("Completions", &in), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_free_and_symmetries),
		cmocka_unit_test(test_refused_without_table),
		cmocka_unit_test(test_descriptor),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
