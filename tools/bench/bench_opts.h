/* SPDX-License-Identifier: MIT */
/* azbench's option tables (tools/options.h): the options every mode takes, the parsers of the
 * values a plain type does not hold (lists, --game, --net), and the parse every mode runs. */
#ifndef AZ_BENCH_OPTS_H
#define AZ_BENCH_OPTS_H

#include <stdint.h>
#include <stdio.h>

#include "games/tangled/tangled.h" /* az_game_desc_tangled: --graph and --variant */
#include "tools/bench/bench_common.h"
#include "tools/config.h" /* az_opts_backend */
#include "tools/options.h"

/* The time budget a mode takes with --seconds, in seconds. */
#define AZ_BENCH_SECONDS_MIN 0.001
#define AZ_BENCH_SECONDS_MAX 86400

/* The largest batch a mode measures: azrun's --max-batch and --train-batch cap. */
#define AZ_BENCH_BATCH_MAX 65536

/* The most values of one list option. */
#define AZ_BENCH_LIST_MAX 16

#define AZ_BENCH_STR_(x) #x
/* x, macro-expanded, as a string literal: a limit's number in a range text. */
#define AZ_BENCH_STR(x) AZ_BENCH_STR_(x)

/* The range text of a list option of at most max whole numbers in [lo, hi] (each a plain
 * integer literal once expanded): "up to 16 of 1..65536". */
#define AZ_BENCH_LIST_RANGE(max, lo, hi) \
	"up to " AZ_BENCH_STR(max) " of " AZ_BENCH_STR(lo) ".." AZ_BENCH_STR(hi)

/* A list option's values ("1,16,256"). */
struct az_bench_list {
	uint32_t v[AZ_BENCH_LIST_MAX];
	int n;
};

/* --game of infer, pipeline and train: "all" (tic-tac-toe and Connect Four) or one registered
 * game; Tangled's board by --graph or --graph-file, and --variant (NULL: not given). */
struct az_bench_games {
	const char *name[2]; /* canonical names */
	int n;
	const char *graph, *graph_file, *variant;
};

/* --net: the network instead of the game's (hidden 0: not given). */
struct az_bench_net {
	uint32_t kind; /* enum az_net_kind */
	uint32_t hidden, blocks;
};

/* The table entries below are laid out by hand: clang-format would put each field of an entry
 * on a line of its own. */
/* clang-format off */

/* Entries for the options every mode takes, at the end of its table; m names the struct
 * az_bench_opts member of the mode's options struct, O is the table's offsetof macro and
 * dflt the default of --seconds as text (NULL: none shown). */
#define AZ_BENCH_COMMON_OPTS(O, m, dflt)                                                           \
	{"seconds", AZ_OPT_F64, O(m.seconds), "S", AZ_BENCH_SECONDS_MIN, AZ_BENCH_SECONDS_MAX,     \
	 dflt, "time budget of the whole run (split across the sweep)", NULL, NULL, NULL},         \
	{"csv", AZ_OPT_STR, O(m.csv), "FILE", 0, 0, NULL, "also write the rows as CSV", NULL,      \
	 NULL, NULL},                                                                              \
	{"json", AZ_OPT_FLAG, O(m.json), NULL, 0, 0, NULL,                                         \
	 "print one JSON object per row (JSON lines) instead of the table", NULL, NULL, NULL},     \
	{"plot", AZ_OPT_STR, O(m.plot), "FILE.png", 0, 0, NULL, "also draw a PNG with gnuplot",    \
	 NULL, NULL, NULL},                                                                        \
	{"quiet", AZ_OPT_FLAG, O(m.quiet), NULL, 0, 0, NULL, "no progress messages on stderr",     \
	 NULL, NULL, NULL}

/* The --game entries of infer, pipeline and train: "all" (the default) or one game, and
 * Tangled's --graph, --graph-file and --variant, into the struct az_bench_games member field. */
#define AZ_BENCH_GAMES_OPT(O, field)                                                               \
	{"game", AZ_OPT_PARSE, O(field), "NAME", 0, 0, "all",                                      \
	 "the game, or all of them (tic-tac-toe and Connect Four)", az_bench_games_choices, NULL,  \
	 az_bench_opt_games},                                                                      \
	{"graph", AZ_OPT_STR, O(field.graph), "N", 0, 0, NULL,                                     \
	 "Tangled's numbered graph (docs/tangled.md) (default 5, Petersen)", NULL,                 \
	 &az_game_desc_tangled, NULL},                                                             \
	{"graph-file", AZ_OPT_STR, O(field.graph_file), "F", 0, 0, NULL,                           \
	 "Tangled's graph from an edge-list file instead of --graph", NULL, &az_game_desc_tangled, \
	 NULL},                                                                                    \
	{"variant", AZ_OPT_STR, O(field.variant), "V", 0, 0, NULL,                                 \
	 "Tangled's tokens: free | fixed (default free)", NULL, &az_game_desc_tangled, NULL}

/* The --backend entry of infer and pipeline: the inference backend (default auto), into the
 * enum az_backend_kind member field. */
#define AZ_BENCH_BACKEND_OPT(O, field)                                                             \
	{"backend", AZ_OPT_PARSE, O(field), "B", 0, 0, "auto",                                     \
	 "inference backend (auto: cuda when visible)", AZ_OPTS_BACKENDS, NULL, az_opts_backend}

/* clang-format on */

/* Parse "a,b,c", at most max whole numbers each in [lo, hi], into *l. Returns 0 or -EINVAL
 * (empty, malformed, out of range, too many). */
int az_bench_list_parse(const char *v, struct az_bench_list *l, int max, uint32_t lo, uint32_t hi);

/* Define static int name(const char *v, void *field), an AZ_OPT_PARSE parser of a list option
 * into a struct az_bench_list: az_bench_list_parse(v, field, max, lo, hi). Give the table entry
 * AZ_BENCH_LIST_RANGE(max, lo, hi) as its choices. */
#define AZ_BENCH_LIST_PARSER(name, max, lo, hi)                                                 \
	_Static_assert((max) <= AZ_BENCH_LIST_MAX, #name ": at most AZ_BENCH_LIST_MAX values"); \
	static int name(const char *v, void *field)                                             \
	{                                                                                       \
		return az_bench_list_parse(v, field, max, lo, hi);                              \
	}

/* AZ_OPT_PARSE parsers (0 or -EINVAL). games: --game of infer, pipeline and train into a struct
 * az_bench_games; choices az_bench_games_choices. game: one game az_game_find() knows, its
 * canonical name into a const char *; choices az_bench_game_choices. net: "HxR", "mlp:HxR" or
 * "resnet:FxR" into a struct az_bench_net; choices AZ_BENCH_NET_CHOICES. */
int az_bench_opt_games(const char *v, void *field);

/* Make the games of g usable (az_game_find() finds them): Tangled is configured with azrun's
 * defaults and g's --graph (default 5, Petersen) and --variant; with adjudicate 0 by a cheap
 * simulated annealer (the network, not the adjudicator, is measured), else by azrun's default
 * adjudicator (the outcome table, built into the cache folder once, with a progress bar, when
 * missing); the board goes to common's progress messages. Once per process, before forking.
 * Returns 0, or 2 after a one-line message on stderr naming mode (a bad --graph or --variant, or one given without --game tangled). */
int az_bench_games_setup(const char *mode, const struct az_bench_games *g, int adjudicate,
			 const struct az_bench_opts *common);

/* The board of game's rows ("Petersen fixed": graph and tokens) after az_bench_games_setup()
 * configured Tangled, else NULL: the modes add it to their rows as the column "board". */
const char *az_bench_board(const char *game);
int az_bench_opt_game(const char *v, void *field);
int az_bench_opt_net(const char *v, void *field);
#define AZ_BENCH_NET_CHOICES "HxR|mlp:HxR|resnet:FxR"

/* The registry's games as choices: "tictactoe|connect4|tangled|all" (--game of infer, pipeline
 * and train), "tictactoe|connect4" (a game az_game_find() knows) and every registered game
 * ("tictactoe|connect4|tangled"). Filled in by az_bench_parse(). */
extern char az_bench_games_choices[256];
extern char az_bench_game_choices[256];
extern char az_bench_all_games_choices[256];

/* Parse a mode's command line (argv[0] is the mode's name) through its table t, whose tool is
 * "azbench MODE", into dst, then check common's --csv and --plot (az_bench_check_outputs()).
 * --help prints the mode's help on stdout from its table (az_opts_usage()). Returns 0 to run,
 * 1 after --help or --options-table, 2 on bad usage (one line on stderr). */
int az_bench_parse(const struct az_opts *t, void *dst, const struct az_bench_opts *common, int argc,
		   char **argv);

/* Options every mode takes, for azbench --help. */
void az_bench_common_opts_help(FILE *f);

#endif
