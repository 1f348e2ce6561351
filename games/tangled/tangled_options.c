/* SPDX-License-Identifier: MIT */
/* Tangled's descriptor: azrun's defaults for it and its options (--graph, --graph-file,
 * --variant, --adjudicator, --epsilon, --inputs), declared and validated here for every tool. */
#include "games/tangled/tangled.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static const struct az_game_opt opts[AZ_TANGLED_OPTS] = {
	[AZ_TANGLED_OPT_GRAPH] = { "graph", AZ_GAME_OPT_U32, 0, "N",
		"tangled: numbered graph (docs/tangled.md; 3 = K4)", "3", 1, 1000, 1 },
	[AZ_TANGLED_OPT_GRAPH_FILE] = { "graph-file", AZ_GAME_OPT_STR, 256, "FILE",
		"tangled: edge-list file instead of --graph", "", 0, 0, 1 },
	[AZ_TANGLED_OPT_VARIANT] = { "variant", AZ_GAME_OPT_STR, 8, "V",
		"tangled: free | fixed (token vertices given)", "free", 0, 0, 1 },
	[AZ_TANGLED_OPT_ADJUDICATOR] = { "adjudicator", AZ_GAME_OPT_STR, 32, "A",
		"tangled: table | table:METHOD | exact | exact-krylov | anneal (default: table, that "
		"is table:exact up to 6 vertices, table:anneal above)", "", 0, 0, 0 },
	[AZ_TANGLED_OPT_EPSILON] = { "epsilon", AZ_GAME_OPT_F32, 0, "E",
		"tangled: draw band of the adjudicated score", "0.5", 0, 1e9, 1 },
	[AZ_TANGLED_OPT_INPUTS] = { "inputs", AZ_GAME_OPT_STR, 12, "I",
		"tangled: network inputs: plain (tokens, edge colours) | completions (plus the "
		"outcome and score of the position with every uncoloured edge grey, green or "
		"purple, from the complete outcome table; docs/tangled.md)", "plain", 0, 0, 1 },
};

int az_tangled_variant_parse(const char *text, enum az_tangled_variant *v)
{
	if (strcmp(text, "free") == 0)
		*v = AZ_TANGLED_FREE;
	else if (strcmp(text, "fixed") == 0)
		*v = AZ_TANGLED_FIXED;
	else
		return -EINVAL;
	return 0;
}

int az_tangled_inputs_parse(const char *text, enum az_tangled_inputs *v)
{
	if (strcmp(text, "plain") == 0)
		*v = AZ_TANGLED_INPUTS_PLAIN;
	else if (strcmp(text, "completions") == 0)
		*v = AZ_TANGLED_INPUTS_COMPLETIONS;
	else
		return -EINVAL;
	return 0;
}

/* A table build's progress, handed to the tool's drawer (games/game.h). */
static void table_progress(void *ctx, uint64_t done, uint64_t total)
{
	(void)ctx;
	az_game_progress("tangled outcome table", done, total);
}

int az_tangled_configure(const union az_game_opt_value *v, uint64_t seed, char *err,
			 size_t errlen)
{
	struct az_tangled_options o;
	const char *variant = v[AZ_TANGLED_OPT_VARIANT].str;
	char e[400], tdir[1024];
	int rc;

	az_tangled_options_default(&o);
	o.graph = (int)v[AZ_TANGLED_OPT_GRAPH].u32;
	o.graph_file = v[AZ_TANGLED_OPT_GRAPH_FILE].str[0] ? v[AZ_TANGLED_OPT_GRAPH_FILE].str : NULL;
	if (az_tangled_variant_parse(variant, &o.variant) < 0) {
		snprintf(err, errlen, "--variant: free or fixed, not '%s'", variant);
		return -EINVAL;
	}
	if (az_tangled_inputs_parse(v[AZ_TANGLED_OPT_INPUTS].str, &o.inputs) < 0) {
		snprintf(err, errlen, "--inputs: plain or completions, not '%s'",
			 v[AZ_TANGLED_OPT_INPUTS].str);
		return -EINVAL;
	}
	o.adjudicator = v[AZ_TANGLED_OPT_ADJUDICATOR].str[0] ? v[AZ_TANGLED_OPT_ADJUDICATOR].str
							     : NULL;
	o.epsilon = v[AZ_TANGLED_OPT_EPSILON].f32;
	o.seed = seed;
	/* complete outcome tables (graphs that qualify) are reused across runs: the tools share
	 * one directory; the process that configures (azrun, before it forks) builds a missing one */
	if (az_cache_dir(tdir, sizeof(tdir)) == 0)
		o.table_dir = tdir;
	o.table_progress = table_progress;
	rc = az_tangled_setup(&o, e, sizeof(e));
	if (rc < 0)
		snprintf(err, errlen, "tangled: %s", e);
	return rc;
}

/* The board a checkpoint was trained on: its graph (number or file) and variant, its draw band
 * when it is not 0.5, and its inputs when they are not plain (so that older checkpoints, which
 * have neither, read as 0.5 and plain). */
static void record(const union az_game_opt_value *v, char *buf, size_t n)
{
	const char *in = v[AZ_TANGLED_OPT_INPUTS].str;
	int plain = !in[0] || strcmp(in, "plain") == 0;
	char eps[32] = "";

	if (v[AZ_TANGLED_OPT_EPSILON].f32 != 0.5f)
		snprintf(eps, sizeof(eps), ";epsilon=%g", (double)v[AZ_TANGLED_OPT_EPSILON].f32);
	if (v[AZ_TANGLED_OPT_GRAPH_FILE].str[0])
		snprintf(buf, n, "graph-file=%s;variant=%s%s%s%s", v[AZ_TANGLED_OPT_GRAPH_FILE].str,
			 v[AZ_TANGLED_OPT_VARIANT].str, eps, plain ? "" : ";inputs=",
			 plain ? "" : in);
	else
		snprintf(buf, n, "graph=%u;variant=%s%s%s%s", v[AZ_TANGLED_OPT_GRAPH].u32,
			 v[AZ_TANGLED_OPT_VARIANT].str, eps, plain ? "" : ";inputs=",
			 plain ? "" : in);
}

const struct az_game_desc az_game_desc_tangled = {
	.name = "tangled",
	.configured = az_tangled_game,
	/* K4 by default: 8 plies, 22 actions, 82,367 reachable states. */
	.defaults = { .iterations = 20, .games_per_iter = 400, .sims = 64, .temp_plies = 3,
		      .arena_games = 100, .arena_temp_plies = 2, .hidden = 64, .blocks = 2,
		      .train_steps_max = 1500, .window = 4, .dir_alpha = 0.5f,
		      .train_epochs = 4.0f, .lr = 2e-3f,
		      /* K4 with the defaults: 20 iterations of arena scores 0.500-0.525 at 0.55
		       * (nearly all draws) never promoted, while the last candidate's raw policy
		       * kept the solved outcome in 96.3 % of the reachable positions against the
		       * first network's 79.0 % (docs/tangled.md) */
		      .arena_threshold = 0.5f },
	.opts = opts,
	.nopts = AZ_TANGLED_OPTS,
	.configure = az_tangled_configure,
	.record = record,
};
