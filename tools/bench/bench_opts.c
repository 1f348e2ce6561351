/* SPDX-License-Identifier: MIT */
/* azbench's option tables (tools/bench/bench_opts.h): the parsers of list, --game and --net
 * values, and the parse, output check and --help every mode runs through its table. */
#include "tools/bench/bench_opts.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "games/game.h"
#include "net/model.h"
#include "tools/config.h"

char az_bench_games_choices[256];
char az_bench_game_choices[256];
char az_bench_all_games_choices[256];

int az_bench_list_parse(const char *v, struct az_bench_list *l, int max, uint32_t lo, uint32_t hi)
{
	int n = az_bench_parse_u32_list(v, l->v, max, lo, hi);

	if (n < 0)
		return n;
	l->n = n;
	return 0;
}

int az_bench_opt_games(const char *v, void *field)
{
	struct az_bench_games *g = field;
	const struct az_game_desc *d = az_game_desc_find(v);

	if (d && d->configure) { /* Tangled: configured by az_bench_games_setup() */
		g->name[0] = d->name;
		g->n = 1;
		return 0;
	}
	return az_bench_parse_games(v, g->name, &g->n);
}

/* The board az_bench_games_setup() configured Tangled on ("" before). */
static char board[80];

const char *az_bench_board(const char *game)
{
	return strcmp(game, "tangled") == 0 && board[0] ? board : NULL;
}

int az_bench_games_setup(const char *mode, const struct az_bench_games *g, int adjudicate,
			 const struct az_bench_opts *common)
{
	static struct az_config cfg;
	const struct az_game_desc *d = g->n == 1 ? az_game_desc_find(g->name[0]) : NULL;
	const struct az_game *game;
	char err[AZ_ERR_LEN];

	if (!d || !d->configure) {
		const char *given = g->graph ? "graph" : g->graph_file ? "graph-file" : "variant";

		if (!g->graph && !g->graph_file && !g->variant)
			return 0;
		fprintf(stderr, "azbench %s: --%s is Tangled's: give --game tangled with it\n",
			mode, given);
		return 2;
	}
	if (g->graph && g->graph_file) {
		fprintf(stderr, "azbench %s: --graph or --graph-file, not both\n", mode);
		return 2;
	}
	const char *key = g->graph_file ? "graph-file" : "graph";
	const char *graph = g->graph_file ? g->graph_file : g->graph ? g->graph : "5";

	AZ_ASSERT(az_config_defaults(&cfg, d->name) == 0);
	if (az_config_set(&cfg, key, graph, err, sizeof(err)) < 0 ||
	    (g->variant && az_config_set(&cfg, "variant", g->variant, err, sizeof(err)) < 0) ||
	    (!adjudicate && az_config_set(&cfg, "adjudicator", "anneal", err, sizeof(err)) < 0) ||
	    az_config_game(&cfg, &game, err, sizeof(err)) < 0) {
		fprintf(stderr, "azbench %s: %s\n", mode, err);
		return 2;
	}
	int fixed = az_tangled_current_tokens(NULL, NULL) == AZ_TANGLED_FIXED;

	snprintf(board, sizeof(board), "%s %s", az_tangled_current_graph()->name,
		 fixed ? "fixed" : "free");

	az_bench_progress(common, "%s: tangled on %s, %s tokens, adjudicator %s\n", mode,
			  az_tangled_current_graph()->name, fixed ? "fixed" : "free",
			  az_tangled_adj_name(az_tangled_current_adj()));
	return 0;
}

int az_bench_opt_game(const char *v, void *field)
{
	const struct az_game *g = az_game_find(v);

	if (!g)
		return -EINVAL;
	*(const char **)field = g->name;
	return 0;
}

int az_bench_opt_net(const char *v, void *field)
{
	struct az_bench_net *n = field;
	uint32_t kind = AZ_NET_MLP, h = 0, b = 0;

	if (v[0] >= '0' && v[0] <= '9') {
		if (az_arch_parse(v, &h, &b) < 0)
			return -EINVAL;
	} else if (az_arch_parse_net(v, &kind, &h, &b) < 0 || !h) {
		return -EINVAL; /* "resnet" alone would leave the sizes unset */
	}
	*n = (struct az_bench_net){.kind = kind, .hidden = h, .blocks = b};
	return 0;
}

/* The choices of --game from the registry, so that a new game appears in them. */
static void fill_game_choices(void)
{
	char ready[200];

	az_config_game_list(AZ_GAMES_READY, "|", ready, sizeof(ready));
	snprintf(az_bench_game_choices, sizeof(az_bench_game_choices), "%s", ready);
	az_config_game_list(AZ_GAMES_ALL, "|", az_bench_all_games_choices,
			    sizeof(az_bench_all_games_choices));
	snprintf(az_bench_games_choices, sizeof(az_bench_games_choices), "%s|all",
		 az_bench_all_games_choices);
}

int az_bench_parse(const struct az_opts *t, void *dst, const struct az_bench_opts *common, int argc,
		   char **argv)
{
	const char *mode = strchr(t->tool, ' ') ? strchr(t->tool, ' ') + 1 : t->tool;
	int rc;

	fill_game_choices();
	rc = az_opts_parse(t, dst, argc, argv, NULL);
	if (rc != 0)
		return rc > 0 ? 1 : 2;
	return az_bench_check_outputs(mode, common) < 0 ? 2 : 0;
}

void az_bench_common_opts_help(FILE *f)
{
	struct common {
		struct az_bench_opts o;
	};
#define O(field) offsetof(struct common, field)
	static const struct az_opt opt[] = {AZ_BENCH_COMMON_OPTS(O, o, NULL)};
#undef O
	static const struct az_opts t = {.tool = "azbench", .opt = opt, .n = AZ_ARRAY_LEN(opt)};

	az_opts_help(f, &t);
}
