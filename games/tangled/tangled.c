/* SPDX-License-Identifier: MIT */
/* Tangled as an az_game (rules of TANGLED.md section 1): the process-wide configuration made by
 * az_tangled_setup(), the vtable (state vector, turn rule, legal moves with the forced vertex
 * pick, terminal adjudication through the cached adjudicator, features, symmetries, notation).
 * Notation: "v3" takes vertex 3; "0-1g" colours edge 0-1 green (x grey, g green, p purple). */
#include "games/tangled/tangled_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "base/util.h"

#define MAXV AZ_TANGLED_MAX_VERTICES

static struct {
	int ready;
	struct az_tangled_graph g;
	enum az_tangled_variant variant;
	int red, blue;          /* fixed variant tokens, -1 otherwise */
	double epsilon;
	enum az_tangled_inputs inputs;
	struct az_tangled_adj *adj;
	int nsym;
	uint8_t (*sym)[MAXV];   /* vertex permutations of the symmetries */
	int16_t *esym;          /* their edge maps, nsym x E */
	struct az_game game;
} tg;

static const char colour_letter[4] = { '.', 'x', 'g', 'p' };

void az_tangled_options_default(struct az_tangled_options *o)
{
	*o = (struct az_tangled_options){
		.graph = 3, .variant = AZ_TANGLED_FREE, .red_vertex = -1, .blue_vertex = -1,
		.adjudicator = NULL, .epsilon = 0.5, .inputs = AZ_TANGLED_INPUTS_PLAIN, .anneal_reads = 10000, .anneal_sweeps = 16,
		.seed = 0, .anneal_time_ns = 5.0, .beta_min = 0.0, .beta_max = 3.0};
}

/* ---- state helpers ---- */

struct scan {
	int nonzero;    /* non-zero entries */
	int uncoloured; /* edges with label 0 */
	int last_edge;  /* an uncoloured edge (the last one when uncoloured == 1) */
	int red, blue;  /* token vertices or -1 */
};

static void scan(const uint8_t *s, struct scan *c)
{
	int n = tg.g.n;

	c->nonzero = 0;
	c->uncoloured = 0;
	c->last_edge = -1;
	c->red = c->blue = -1;
	for (int v = 0; v < n; v++) {
		if (s[v] == 1)
			c->red = v;
		else if (s[v] == 2)
			c->blue = v;
	}
	c->nonzero = (c->red >= 0) + (c->blue >= 0);
	for (int k = 0; k < tg.g.e; k++) {
		if (s[n + k]) {
			c->nonzero++;
		} else {
			c->uncoloured++;
			c->last_edge = k;
		}
	}
}

static int is_terminal(const struct scan *c)
{
	return c->uncoloured == 0 && c->red >= 0 && c->blue >= 0;
}

/* ---- vtable ---- */

static void tangled_init(void *state)
{
	uint8_t *s = state;

	memset(s, 0, tg.game.state_bytes);
	if (tg.variant == AZ_TANGLED_FIXED) {
		s[tg.red] = 1;
		s[tg.blue] = 2;
	}
}

static int tangled_to_move(const void *state)
{
	struct scan c;

	scan(state, &c);
	return c.nonzero & 1;
}

static int tangled_legal(const void *state, uint8_t *mask)
{
	const uint8_t *s = state;
	int n = tg.g.n, count = 0, mover, has, vertices, edges;
	struct scan c;

	memset(mask, 0, tg.game.actions);
	scan(s, &c);
	if (is_terminal(&c))
		return 0;
	mover = (c.nonzero & 1) ? 2 : 1;
	has = (mover == 1 ? c.red : c.blue) >= 0;
	/* TANGLED.md 1.4: with more than one uncoloured edge, free vertices (if the mover has
	 * none) and every colouring; otherwise the vertex pick is forced, or the last edge. */
	if (tg.variant == AZ_TANGLED_FIXED) {
		vertices = 0;
		edges = 1;
	} else if (c.uncoloured > 1) {
		vertices = !has;
		edges = 1;
	} else {
		vertices = !has;
		edges = has;
	}
	if (vertices)
		for (int v = 0; v < n; v++)
			if (!s[v]) {
				mask[v] = 1;
				count++;
			}
	if (edges)
		for (int k = 0; k < tg.g.e; k++)
			if (!s[n + k]) {
				memset(mask + n + 3 * k, 1, 3);
				count += 3;
			}
	return count;
}

static void tangled_apply(void *state, int action)
{
	uint8_t *s = state;
	int n = tg.g.n;

	if (action < n) {
		struct scan c;

		scan(s, &c);
		s[action] = (c.nonzero & 1) ? 2 : 1;
	} else {
		int k = (action - n) / 3;

		s[n + k] = (uint8_t)((action - n) % 3 + 1);
	}
}

/* Every uncoloured edge and every unplaced token takes a move of its own (TANGLED.md 1.4). */
static int tangled_min_moves_left(const void *state)
{
	struct scan c;

	scan(state, &c);
	return c.uncoloured + (c.red < 0) + (c.blue < 0);
}

/* Adjudication time of this process (a running total; each forked worker has its own). */
static uint64_t adjudicate_ns_total;

static uint64_t tangled_adjudicate_ns(void)
{
	return adjudicate_ns_total;
}

static int tangled_terminal(const void *state, float *value)
{
	struct az_tangled_outcome out;
	struct scan c;
	int ret;

	scan(state, &c);
	if (!is_terminal(&c))
		return 0;
	if (value) {
		/* a numerical failure here is fatal (the search cannot score the game) */
		uint64_t t0 = az_now_ns();

		ret = az_tangled_adj_judge(tg.adj, state, tg.epsilon, &out);
		AZ_ASSERT(ret == 0);
		adjudicate_ns_total += az_now_ns() - t0;
		/* E + 2 non-zero entries: red is to move when E is even, blue when odd */
		if (out.winner == AZ_TANGLED_DRAW)
			*value = 0.0f;
		else
			*value = (out.winner == AZ_TANGLED_RED) == !(c.nonzero & 1) ? 1.0f : -1.0f;
	}
	return 1;
}

/* Inputs "completions": f[0..5] from the three uniform completions of s (tangled.h). Each is
 * a table lookup (the setup insists on a complete table), timed as adjudication. */
static void encode_completions(const uint8_t *s, const struct scan *c, float p, float *f)
{
	uint8_t t[AZ_GAME_STATE_MAX];
	struct az_tangled_outcome out;
	int n = tg.g.n, ret;
	uint64_t t0;

	memset(f, 0, AZ_TANGLED_COMPLETION_FEATURES * sizeof(float));
	if (c->red < 0 || c->blue < 0)
		return;
	t0 = az_now_ns();
	memcpy(t, s, (size_t)(n + tg.g.e));
	for (int label = 1; label <= 3; label++) {
		for (int k = 0; k < tg.g.e; k++)
			t[n + k] = s[n + k] ? s[n + k] : (uint8_t)label;
		ret = az_tangled_adj_judge(tg.adj, t, tg.epsilon, &out);
		AZ_ASSERT(ret == 0); /* a table lookup: nothing to fail on a valid state */
		f[label - 1] = out.winner == AZ_TANGLED_DRAW ? 0.0f :
			       (out.winner == AZ_TANGLED_RED) == (p > 0) ? 1.0f : -1.0f;
		f[label + 2] = (float)tanh((double)p * out.score);
	}
	adjudicate_ns_total += az_now_ns() - t0;
}

static void tangled_encode(const void *state, float *f)
{
	const uint8_t *s = state;
	int n = tg.g.n;
	struct scan c;
	float p;

	scan(s, &c);
	p = (c.nonzero & 1) ? -1.0f : 1.0f;
	for (int v = 0; v < n; v++)
		f[v] = s[v] == 1 ? p : s[v] == 2 ? -p : 0.0f;
	for (int k = 0; k < tg.g.e; k++)
		for (int b = 0; b < 3; b++)
			f[n + 3 * k + b] = s[n + k] == b + 1 ? 1.0f : 0.0f;
	if (tg.inputs == AZ_TANGLED_INPUTS_COMPLETIONS)
		encode_completions(s, &c, p, f + n + 3 * tg.g.e);
}

/* Features and policies share the layout: N vertex entries, then 3 per edge. */
static void permute(int k, const float *in, float *out)
{
	const uint8_t *p = tg.sym[k];
	const int16_t *em = tg.esym + (size_t)k * (size_t)tg.g.e;
	int n = tg.g.n;

	for (int v = 0; v < n; v++)
		out[p[v]] = in[v];
	for (int e = 0; e < tg.g.e; e++)
		memcpy(out + n + 3 * em[e], in + n + 3 * e, 3 * sizeof(float));
}

static void tangled_symmetry(int k, const float *feat_in, float *feat_out, const float *pol_in,
			     float *pol_out)
{
	AZ_ASSERT(k >= 0 && k < tg.nsym);
	if (feat_in && feat_out) {
		permute(k, feat_in, feat_out);
		/* the completions' values are the same for every image of the position */
		memcpy(feat_out + tg.game.actions, feat_in + tg.game.actions,
		       (tg.game.features - tg.game.actions) * sizeof(float));
	}
	if (pol_in && pol_out)
		permute(k, pol_in, pol_out);
}

static int tangled_format(const void *state, char *buf, size_t len)
{
	const uint8_t *s = state;
	int n = tg.g.n, e = tg.g.e;
	size_t cap = 160 + 16 * (size_t)(n + e), o = 0;
	char *t = malloc(cap);
	struct scan c;
	int ret;

	if (!t)
		return -ENOMEM;
	scan(s, &c);
	o += (size_t)snprintf(t + o, cap - o, "tangled %s (N=%d, E=%d)\nvertices:", tg.g.name, n,
			      e);
	for (int v = 0; v < n; v++)
		o += (size_t)snprintf(t + o, cap - o, " %d%s", v,
				      s[v] == 1 ? "R" : s[v] == 2 ? "B" : "");
	o += (size_t)snprintf(t + o, cap - o, "\nedges:");
	for (int k = 0; k < e; k++)
		o += (size_t)snprintf(t + o, cap - o, " %d-%d%c", tg.g.eu[k], tg.g.ev[k],
				      colour_letter[s[n + k] & 3]);
	o += (size_t)snprintf(t + o, cap - o, "\nstate:");
	for (int i = 0; i < n + e; i++)
		o += (size_t)snprintf(t + o, cap - o, "%s%d", i ? "," : " ", s[i]);
	if (is_terminal(&c)) {
		struct az_tangled_outcome out;

		if (az_tangled_adj_judge(tg.adj, s, tg.epsilon, &out) == 0)
			snprintf(t + o, cap - o, "\n%s (score %+.4f)\n",
				 out.winner == AZ_TANGLED_RED ? "red wins" :
				 out.winner == AZ_TANGLED_BLUE ? "blue wins" : "draw", out.score);
		else
			snprintf(t + o, cap - o, "\nover (adjudication failed)\n");
	} else {
		snprintf(t + o, cap - o, "\n%s to move\n", (c.nonzero & 1) ? "blue" : "red");
	}
	ret = snprintf(buf, len, "%s", t);
	free(t);
	return ret;
}

static int tangled_format_action(int action, char *buf, size_t len)
{
	int n = tg.g.n;

	if (action < 0 || (uint32_t)action >= tg.game.actions)
		return -EINVAL;
	if (action < n)
		return snprintf(buf, len, "v%d", action);
	action -= n;
	return snprintf(buf, len, "%d-%d%c", tg.g.eu[action / 3], tg.g.ev[action / 3],
			colour_letter[action % 3 + 1]);
}

/* "v3", "0-1g" (x grey, g green, p purple; also "grey", "green", "purple"), or "#17", the
 * action index. Blanks around are allowed. With a state, the move must be legal there. */
static int tangled_parse_action(const void *state, const char *text)
{
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	char buf[64], *p, *end;
	int a = -1;
	size_t l;

	while (isspace((unsigned char)*text))
		text++;
	snprintf(buf, sizeof(buf), "%s", text);
	for (l = strlen(buf); l && isspace((unsigned char)buf[l - 1]); l--)
		buf[l - 1] = '\0';
	p = buf;
	if (*p == '#' || *p == 'v' || *p == 'V') {
		long x = strtol(p + 1, &end, 10);

		if (end == p + 1 || *end || x < 0 || x >= (*p == '#' ? (long)tg.game.actions :
							   tg.g.n))
			return -EINVAL;
		a = (int)x;
	} else if (isdigit((unsigned char)*p)) {
		long u = strtol(p, &end, 10), v;
		int c = -1;

		if (*end != '-')
			return -EINVAL;
		p = end + 1;
		v = strtol(p, &end, 10);
		if (end == p || u < 0 || v < 0 || u >= tg.g.n || v >= tg.g.n)
			return -EINVAL;
		while (*end == ' ' || *end == '\t')
			end++;
		for (int i = 1; i <= 3; i++) {
			static const char *const words[4] = { "", "grey", "green", "purple" };

			if ((end[0] == colour_letter[i] && !end[1]) || !strcmp(end, words[i]))
				c = i - 1;
		}
		if (c < 0 || tg.g.edge_of[u][v] < 0)
			return -EINVAL;
		a = tg.g.n + 3 * tg.g.edge_of[u][v] + c;
	} else {
		return -EINVAL;
	}
	if (state) {
		tangled_legal(state, mask);
		if (!mask[a])
			return -EINVAL;
	}
	return a;
}

/* ---- setup ---- */

static void release(void)
{
	az_tangled_adj_destroy(tg.adj);
	free(tg.sym);
	free(tg.esym);
	memset(&tg, 0, sizeof(tg));
}

static int setfail(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int setfail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* The training symmetries: all automorphisms (free tokens) or those fixing both tokens. */
static int make_symmetries(void)
{
	uint8_t (*all)[MAXV] = malloc(sizeof(*all) * AZ_TANGLED_MAX_SYMMETRIES);
	int count, kept = 0;

	if (!all)
		return -ENOMEM;
	count = az_tangled_graph_automorphisms(&tg.g, all, AZ_TANGLED_MAX_SYMMETRIES, NULL);
	for (int k = 0; k < count; k++) {
		if (tg.variant == AZ_TANGLED_FIXED &&
		    (all[k][tg.red] != tg.red || all[k][tg.blue] != tg.blue))
			continue;
		memcpy(all[kept++], all[k], MAXV);
	}
	tg.sym = all;
	tg.nsym = kept;
	tg.esym = malloc(sizeof(int16_t) * (size_t)kept * (size_t)tg.g.e);
	if (!tg.esym)
		return -ENOMEM;
	tg_edge_maps(&tg.g, (const uint8_t (*)[MAXV])tg.sym, kept, tg.esym);
	return 0;
}

/* Whether every colouring of g is in tg.adj's complete table: a file (6 < E <= 16) or the
 * in-memory one of E <= 6, so a lookup never runs an adjudication. */
static int complete_table(const struct az_tangled_graph *g)
{
	struct az_tangled_adj_stats st;

	if (strncmp(az_tangled_adj_name(tg.adj), "table", 5) != 0)
		return 0;
	az_tangled_adj_stats(tg.adj, &st);
	return g->e <= 6 || st.table_entries > 0;
}

int az_tangled_setup(const struct az_tangled_options *o, char *err, size_t errlen)
{
	struct az_tangled_graph *g = &tg.g;
	uint32_t actions;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	release();
	if (o->graph_file)
		ret = az_tangled_graph_load(o->graph_file, g, err, errlen);
	else
		ret = az_tangled_graph_numbered(o->graph, g, err, errlen);
	if (ret)
		goto fail;
	actions = (uint32_t)(g->n + 3 * g->e);
	if (actions > AZ_GAME_ACTIONS_MAX || (uint32_t)(g->n + g->e) > AZ_GAME_STATE_MAX) {
		ret = setfail(err, errlen, -EINVAL,
			      "graph %s: N + 3E = %d + 3 x %d = %u actions exceed "
			      "AZ_GAME_ACTIONS_MAX (%d); it can be adjudicated (aztangled) but not "
			      "played", g->name, g->n, g->e, actions, AZ_GAME_ACTIONS_MAX);
		goto fail;
	}
	tg.variant = o->variant;
	tg.red = tg.blue = -1;
	if (o->variant == AZ_TANGLED_FIXED) {
		tg.red = o->red_vertex >= 0 ? o->red_vertex : g->red_default;
		tg.blue = o->blue_vertex >= 0 ? o->blue_vertex : g->blue_default;
		if (tg.red >= g->n || tg.blue >= g->n || tg.red == tg.blue) {
			ret = setfail(err, errlen, -EINVAL,
				      "fixed tokens red %d / blue %d: need two distinct vertices "
				      "0-%d", tg.red, tg.blue, g->n - 1);
			goto fail;
		}
	} else if (o->variant != AZ_TANGLED_FREE) {
		ret = setfail(err, errlen, -EINVAL, "unknown variant %d", (int)o->variant);
		goto fail;
	}
	if (o->inputs != AZ_TANGLED_INPUTS_PLAIN && o->inputs != AZ_TANGLED_INPUTS_COMPLETIONS) {
		ret = setfail(err, errlen, -EINVAL, "unknown inputs %d", (int)o->inputs);
		goto fail;
	}
	if (!(o->epsilon >= 0.0)) {
		ret = setfail(err, errlen, -EINVAL, "epsilon must be >= 0 (got %g)", o->epsilon);
		goto fail;
	}
	tg.epsilon = o->epsilon;
	tg.inputs = o->inputs;
	ret = az_tangled_adj_create(g, o, &tg.adj, err, errlen);
	if (ret)
		goto fail;
	if (o->inputs == AZ_TANGLED_INPUTS_COMPLETIONS && !complete_table(g)) {
		char why[160];

		if (strncmp(az_tangled_adj_name(tg.adj), "table", 5) != 0)
			snprintf(why, sizeof(why), "graph %s is adjudicated by %s, not a table",
				 g->name, az_tangled_adj_name(tg.adj));
		else if (g->e > 16)
			snprintf(why, sizeof(why), "graph %s has %d edges, more than a complete "
				 "table holds", g->name, g->e);
		else
			snprintf(why, sizeof(why), "no cache directory holds graph %s's table (is "
				 "RINGZERO_CACHE_DIR none?)", g->name);
		ret = setfail(err, errlen, -EINVAL,
			      "inputs 'completions' look up three colourings per evaluated "
			      "position: they need a complete outcome table (adjudicator table on a "
			      "graph with at most 16 edges and a cache directory), but %s; use "
			      "inputs 'plain'", why);
		goto fail;
	}
	ret = make_symmetries();
	if (ret) {
		setfail(err, errlen, ret, "out of memory");
		goto fail;
	}
	tg.game = (struct az_game){
		.name = "tangled",
		.state_bytes = (uint32_t)(g->n + g->e),
		.actions = actions,
		.features = actions + (o->inputs == AZ_TANGLED_INPUTS_COMPLETIONS ?
				       AZ_TANGLED_COMPLETION_FEATURES : 0),
		.symmetries = (uint32_t)tg.nsym,
		.max_plies = (uint32_t)(o->variant == AZ_TANGLED_FIXED ? g->e : g->e + 2),
		AZ_GAME_RULES(tangled),
		AZ_GAME_IO(tangled),
		.sides = { "Red", "Blue" },
		.min_moves_left = tangled_min_moves_left,
		.adjudicate_ns = tangled_adjudicate_ns,
	};
	tg.ready = 1;
	return 0;
fail:
	release();
	return ret;
}

const struct az_game *az_tangled_game(void)
{
	return tg.ready ? &tg.game : NULL;
}

const struct az_tangled_graph *az_tangled_current_graph(void)
{
	return tg.ready ? &tg.g : NULL;
}

int az_tangled_current_tokens(int *red, int *blue)
{
	if (red)
		*red = tg.ready ? tg.red : -1;
	if (blue)
		*blue = tg.ready ? tg.blue : -1;
	return tg.ready ? (int)tg.variant : -EINVAL;
}

struct az_tangled_adj *az_tangled_current_adj(void)
{
	return tg.ready ? tg.adj : NULL;
}

const uint8_t *az_tangled_symmetry_perm(int k)
{
	return tg.ready && k >= 0 && k < tg.nsym ? tg.sym[k] : NULL;
}
