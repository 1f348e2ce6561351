/* SPDX-License-Identifier: MIT */
/* azeval: measure a checkpoint against labelled positions (move accuracy against the optimal
 * moves, value-sign accuracy against the exact score, AlphaZero.jl's mistake rate on Connect
 * Four and Tangled), play baseline opponents, and write labelled positions with the solvers. */
#include <cblas.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "games/game.h"
#include "games/tangled/tangled.h"
#include "gpu/backend.h"
#include "net/checkpoint.h"
#include "mcts/mcts.h"
#include "base/az_assert.h"
#include "base/rng.h"
#include "base/util.h"
#include "base/version.h"
#include "tools/azeval_impl.h"
#include "tools/config.h"
#include "tools/options.h"
#include "eval/match.h"
#include "eval/net_eval.h"
#include "eval/net_open.h"
#include "eval/positions.h"
#include "eval/rollout.h"
#include "help_text.h" /* generated from tools/help/ */


/* Every option of azeval, in --help's order: one declaration each (tools/options.h). */
#define O(field) offsetof(struct eval_opts, field)
/* Not const: parse_args() names the registered games in --game's help. */
static struct az_opt eval_opt[] = {
	{"game", AZ_OPT_STR, O(game), "NAME", 0, 0, NULL,
	 NULL /* "the game: tictactoe | ...", from the registry */, NULL, NULL, NULL},
	{"graph", AZ_OPT_LONG, O(graph), "N", 0, 0, NULL, "tangled: numbered graph (default: "
	 "the checkpoint's, else 3)", NULL, &az_game_desc_tangled, NULL},
	{"graph-file", AZ_OPT_STR, O(graph_file), "F", 0, 0, NULL,
	 "tangled: edge-list file instead of --graph", NULL, NULL, NULL},
	{"variant", AZ_OPT_STR, O(variant), "V", 0, 0, NULL, "tangled: free | fixed tokens", NULL,
	 NULL, NULL},
	{"adjudicator", AZ_OPT_STR, O(adjudicator), "A", 0, 0, NULL,
	 "tangled: table | exact | exact-krylov | anneal", NULL, NULL, NULL},
	{"epsilon", AZ_OPT_STR, O(epsilon), "E", 0, 0, NULL, "tangled: draw band of the "
	 "adjudicated score (default: the checkpoint's, else 0.5)", NULL, NULL, NULL},
	{"checkpoint", AZ_OPT_STR, O(ckpt), "FILE", 0, 0, NULL,
	 "safetensors checkpoint (e.g. RUN/best.safetensors)", NULL, NULL, NULL},
	{"positions", AZ_OPT_STR, O(positions), "FILE", 0, 0, NULL, "labelled positions", NULL,
	 NULL, NULL},
	{"sims", AZ_OPT_LONG, O(sims), "N", 0, 1000000, "200",
	 "MCTS simulations per move, >= 2; 0: the raw policy", NULL, NULL, NULL},
	{"c-puct", AZ_OPT_F32, O(c_puct), "C", 0, 1e6, "1.5", "PUCT constant", NULL, NULL, NULL},
	{"mcts-solver", AZ_OPT_INT, O(solver), "0|1", 0, 1, "1",
	 "search with MCTS-Solver proofs", NULL, NULL, NULL},
	{"fpu-reduction", AZ_OPT_F32, O(fpu_reduction), "R", -1, 10, "0.25", "first-play "
	 "urgency: parent's value - R * sqrt(visited prior); R < 0: value 0", NULL, NULL, NULL},
	{"backend", AZ_OPT_PARSE, O(kind), "B", 0, 0, "auto", "inference backend (auto: cuda "
	 "when visible)", AZ_OPTS_BACKENDS, NULL, az_opts_backend},
	{"json", AZ_OPT_FLAG, O(json), NULL, 0, 0, NULL, "one JSON object: positions, "
	 "move_accuracy, value_sign_accuracy (null when the file has no such labels)", NULL, NULL, NULL},
	{"vs", AZ_OPT_CHOICE, O(vs), "OPPONENT", 0, 0, NULL, "play --games N games (colours "
	 "alternated) against random (uniform legal moves) or rollout (MCTS with random "
	 "playouts) and report W/D/L", "random|rollout", NULL, NULL},
	{"games", AZ_OPT_LONG, O(games), "N", 1, 1000000, "100",
	 "games of --vs, or positions of --tactic and --uncoloured", NULL, NULL, NULL},
	{"vs-sims", AZ_OPT_LONG, O(vs_sims), "N", 2, 1000000, NULL,
	 "simulations of the rollout opponent (default: --sims)", NULL, NULL, NULL},
	{"draw-value", AZ_OPT_F32, O(draw_value), "X", -0.99, 0.99, "0", "contempt: what a draw "
	 "the search proves, or a win/draw/loss value head's draw probability, is worth to the "
	 "agent; below 0 it plays on for a win against a weaker opponent (--vs, --mistakes)",
	 NULL, NULL, NULL},
	{"symmetry-average", AZ_OPT_FLAG, O(sym_avg), NULL, 0, 0, NULL, "average each "
	 "evaluation over the game's symmetries (Connect Four: 2, Tangled: the automorphisms "
	 "that fix the tokens): that many forward passes per evaluation", NULL, NULL, NULL},
	AZ_SEARCH_OPTS(O),
	{"seed", AZ_OPT_U64, O(seed), "S", 0, 0, "1", "seed of the opponents", NULL, NULL, NULL},
	{"write-labelled", AZ_OPT_STR, O(labelled), "F", 0, 0, NULL, "write labelled positions "
	 "to F with the built-in exact solver: every reachable non-terminal position with its "
	 "score and optimal moves (a game of at most 1000000 positions: tic-tac-toe, Tangled "
	 "on K4 and smaller graphs); connect4 with --tactic; tangled on larger graphs with "
	 "--uncoloured", NULL, NULL, NULL},
	{"mistakes", AZ_OPT_FLAG, O(mistakes), NULL, 0, 0, NULL, "connect4, tangled: "
	 "AlphaZero.jl's mistake rate, the share of moves that change the game-theoretic "
	 "outcome, by the built-in solver, solving only the moves played; the labels are cached "
	 "in FILE.labels (or under ~/.cache/ringzero when FILE's folder is read-only)", NULL, NULL, NULL},
	{"list-mistakes", AZ_OPT_FLAG, O(list_mistakes), NULL, 0, 0, NULL, "--mistakes: also "
	 "print each mistake on stdout as it is found (the position's line in the file and its "
	 "moves, the move played, the moves that keep its outcome; tangled: '?' marks a move "
	 "the solver's budget left open), before the report", NULL, NULL, NULL},
	{"labels", AZ_OPT_STR, O(labels), "F", 0, 0, NULL,
	 "--mistakes: cache the labels in F instead", NULL, NULL, NULL},
	{"agent", AZ_OPT_CHOICE, O(agent), "A", 0, 0, "network", "--mistakes: whose moves are "
	 "judged: the checkpoint's network, or rollout MCTS at --sims without one, seeded by "
	 "--seed (with the search options at their defaults: the opponent of --vs rollout)",
	 "network|rollout", NULL, NULL},
	{"uncoloured", AZ_OPT_LONG, O(uncoloured), "K", 0, AZ_TANGLED_MAX_EDGES, NULL,
	 "tangled --write-labelled: --games N distinct positions with K uncoloured edges from "
	 "random games (with --checkpoint: from games of the raw policy at --temperature T), "
	 "each labelled by the exact solver", NULL, NULL, NULL},
	{"temperature", AZ_OPT_F64, O(temperature), "T", 0.01, 100, "1",
	 "--uncoloured with --checkpoint: the policy's temperature", NULL, NULL, NULL},
	{"solve-nodes", AZ_OPT_F64, O(solve_nodes), "N", 0, 1e15, "100000000", "tangled: "
	 "solver budget per position (0: none); positions it cannot solve are left out "
	 "(labels) or counted as unsolved (--mistakes)", NULL, NULL, NULL},
	{"limit", AZ_OPT_LONG, O(limit), "N", 1, 1e9, NULL,
	 "only the first N positions of the file (default: all)", NULL, NULL, NULL},
	{"tactic", AZ_OPT_CHOICE, O(tactic), "T", 0, 0, NULL, "connect4 --write-labelled: "
	 "--games N positions from random games where the side to move wins at once while the "
	 "opponent threatens too (win), or must block the opponent's only threat (block); "
	 "best = those moves", "win|block", NULL, NULL},
	{"draw-band", AZ_OPT_F64, O(draw_band), "X", 0, 0.999, "0", "value-head outputs with "
	 "|v| <= X count as a predicted draw (0: the plain sign, as the value head is a tanh)",
	 NULL, NULL, NULL},
};
#undef O

static const struct az_opts eval_opts_table = {
	.tool = "azeval", .opt = eval_opt, .n = AZ_ARRAY_LEN(eval_opt), .help = az_help_azeval,
	.version = 1};

static int sign_of(double v, double band)
{
	return v > band ? 1 : v < -band ? -1 : 0;
}

/* The outcome the value head predicts for the side to move: a win/draw/loss head's most likely
 * class (p_win = (1 - d + v) / 2, p_loss = (1 - d - v) / 2, p_draw = d), else v's sign with
 * |v| <= band a draw. */
static int predicted(double v, double d, int wdl, double band)
{
	if (!wdl)
		return sign_of(v, band);
	double w = (1.0 - d + v) / 2.0, l = (1.0 - d - v) / 2.0;

	return d >= w && d >= l ? 0 : w > l ? 1 : -1;
}

/* The agent's move for `state`: most visited after `sims` simulations, or the raw policy's
 * argmax over legal moves when sims == 0 (eval/net_eval.h). Returns the action or -errno. */
static int agent_move(struct eval_ctx *c, struct az_tree *t, const void *state, uint32_t sims)
{
	return az_eval_move(c->g, c->fn, c->fn_ctx, t, sims, state);
}

/* ---- matches against baseline opponents (--vs random|rollout; eval/match.h) ---- */

static int run_matches(struct eval_ctx *c, const struct az_mcts_params *search, const char *vs,
		       long games, uint32_t sims, uint32_t vs_sims, uint64_t seed, int json)
{
	struct az_match_params mp = {.g = c->g, .mp = search, .fn = az_net_eval, .ctx = &c->net.eval,
				     .sims = sims,
				     .vs_sims = vs_sims, .games = games, .seed = seed,
				     .opponent = strcmp(vs, "rollout") == 0 ? AZ_MATCH_ROLLOUT
									   : AZ_MATCH_RANDOM};
	struct az_match_result mr;
	int rollout_opp = mp.opponent == AZ_MATCH_ROLLOUT;
	char wdl[96];
	int rc = az_match_play(&mp, &mr);
	if (rc < 0) {
		fprintf(stderr, "azeval: evaluation failed: %s\n", strerror(-rc));
		return rc;
	}
	long w = mr.wins, d = mr.draws, l = mr.losses;
	double score = mr.score;
	if (json && rollout_opp)
		printf("{\"opponent\": \"%s\", \"games\": %ld, \"wins\": %ld, \"draws\": %ld, "
		       "\"losses\": %ld, \"score\": %.4f, \"sims\": %u, \"vs_sims\": %u}\n", vs,
		       games, w, d, l, score, sims, vs_sims);
	else if (json)
		printf("{\"opponent\": \"%s\", \"games\": %ld, \"wins\": %ld, \"draws\": %ld, "
		       "\"losses\": %ld, \"score\": %.4f, \"sims\": %u}\n", vs, games, w, d, l,
		       score, sims);
	else if (rollout_opp)
		printf("agent vs %s over %ld games (colours alternated, %u simulations for the "
		       "agent, %u for the opponent): %s, score %.1f%%\n", vs, games, sims, vs_sims,
		       az_format_wdl(w, d, l, wdl, sizeof(wdl)), 100.0 * score);
	else
		printf("agent vs %s over %ld games (colours alternated, %u simulations for the "
		       "agent; the random player does not search): %s, score %.1f%%\n", vs, games,
		       sims, az_format_wdl(w, d, l, wdl, sizeof(wdl)), 100.0 * score);
	return 0;
}

struct tally {
	long positions, moves_labelled, moves_ok, values_labelled, values_ok;
	long decisive, decisive_ok;
	long draws_unscored; /* labelled draws, not scored without --draw-band */
	double draw_band;
};

/* Another registered game (one with its game object) whose rules read the first lines (64 at
 * most) of the positions file at path without an error, or NULL: what a file that g refuses
 * holds instead. */
static const struct az_game *file_game(const struct az_game *g, const char *path)
{
	static struct az_position pos;
	char line[AZ_POSITIONS_LINE_MAX + 2], err[300];

	for (size_t i = 0; az_game_registry[i]; i++) {
		const struct az_game *o = az_game_desc_game(az_game_registry[i]);
		FILE *f = o && o != g ? fopen(path, "r") : NULL;
		int k = 0, n = 0;

		if (!f)
			continue;
		while (k >= 0 && n < 64 && fgets(line, sizeof(line), f))
			n += (k = az_positions_parse_line(o, line, &pos, err, sizeof(err))) > 0;
		fclose(f);
		if (k >= 0 && n > 0)
			return o;
	}
	return NULL;
}

/* A line of path that g refuses: the reason, and another game whose rules read the file (a
 * Connect Four file read as tic-tac-toe said "not a move of this game" alone); a hint, not a
 * verdict: a damaged file of g may read as another game's too. */
static void bad_line(const struct az_game *g, const char *path, long lineno, const char *err)
{
	const struct az_game *o = file_game(g, path);

	if (o)
		fprintf(stderr, "azeval: %s:%ld: %s; %s reads as %s positions, and this "
			"evaluation's game is %s: if it holds %s positions, give %s positions (or a "
			"%s checkpoint and --game %s)\n", path, lineno, err, path, o->name, g->name,
			o->name, g->name, o->name, o->name);
	else {
		char hint[AZ_ERR_LEN];

		fprintf(stderr, "azeval: %s:%ld: %s%s\n", path, lineno, err,
			strcmp(g->name, "tangled") == 0
				? azeval_tangled_hint(path, err, hint, sizeof(hint))
				: "");
	}
}

static int eval_file(struct eval_ctx *c, const char *path, uint32_t sims,
		     const struct az_mcts_params *search, long limit, struct tally *t)
{
	struct stat sb;
	FILE *f = stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) ? NULL : fopen(path, "r");
	if (!f) {
		int e = errno;
		fprintf(stderr, "azeval: cannot open %s: %s\n", path,
			stat(path, &sb) == 0 ? "not a regular file" : strerror(e));
		return e == ENOENT ? -ENOENT : -EINVAL;
	}
	struct az_mcts_params mp = *search;
	static struct az_position pos;
	c->g->init(pos.state);
	struct az_tree *tree;
	int rc = az_tree_create(c->g, &mp, pos.state, &tree);
	if (rc < 0) {
		fclose(f);
		return rc;
	}
	char line[AZ_POSITIONS_LINE_MAX + 2], err[300];
	long lineno = 0;
	while (rc == 0 && (limit == 0 || t->positions < limit) && fgets(line, sizeof(line), f)) {
		lineno++;
		int k = az_positions_parse_line(c->g, line, &pos, err, sizeof(err));
		if (k < 0) {
			bad_line(c->g, path, lineno, err);
			rc = -EINVAL;
			break;
		}
		if (k == 0)
			continue;
		t->positions++;
		if (pos.has_score) {
			float pol[AZ_GAME_ACTIONS_MAX], v, d = 0.0f;
			rc = az_net_eval(&c->net.eval, pos.state, pol, &v, &d);
			int wdl = c->net.arch.value_head == AZ_VALUE_WDL;
			int ok = predicted(v, d, wdl, t->draw_band) == sign_of(pos.score, 0.0);
			/* Without a draw band a tanh head cannot predict a draw (the tanh is never
			 * 0): the headline then scores decisive positions only. */
			int scored = wdl || t->draw_band > 0 || pos.score != 0.0;
			t->values_labelled += scored;
			t->draws_unscored += !scored;
			t->values_ok += ok && scored;
			if (pos.score != 0.0) {
				t->decisive++;
				t->decisive_ok += ok;
			}
		}
		if (pos.has_best && rc == 0) {
			int a = agent_move(c, tree, pos.state, sims);
			if (a < 0) {
				rc = a;
				break;
			}
			t->moves_labelled++;
			t->moves_ok += pos.best[a] != 0;
		}
	}
	az_tree_destroy(tree);
	fclose(f);
	if (rc == 0 && t->positions == 0) {
		fprintf(stderr, "azeval: %s holds no positions\n", path);
		rc = -EINVAL;
	}
	return rc;
}

/* One share, as a JSON member or a line of the table; the table's names are padded to the
 * longest, decisive_sign_accuracy, so that the numbers form a column. */
#define SHARE_NAME_WIDTH ((int)sizeof("decisive_sign_accuracy") - 1)
static void print_share_or(const char *what, long ok, long n, int json, int last,
			   const char *none)
{
	if (json) {
		if (n)
			printf("\"%s\": %.6f%s", what, (double)ok / (double)n, last ? "" : ", ");
		else
			printf("\"%s\": null%s", what, last ? "" : ", ");
	} else if (n) {
		printf("%-*s %.2f%% (%ld of %ld)\n", SHARE_NAME_WIDTH, what,
		       100.0 * (double)ok / (double)n, ok, n);
	} else {
		printf("%-*s n/a (%s)\n", SHARE_NAME_WIDTH, what, none);
	}
}

static void print_share(const char *what, long ok, long n, int json, int last)
{
	print_share_or(what, ok, n, json, last, "no labels");
}

/* Parse the command line. Returns 0, 1 after --help, or -EINVAL after a one-line message. */
static int parse_args(int argc, char **argv, struct eval_opts *o)
{
	*o = (struct eval_opts){.uncoloured = -1, .vs_sims = -1};
	az_config_game_opt_help(eval_opt, AZ_ARRAY_LEN(eval_opt), "the checkpoint's");
	int rc = az_opts_parse(&eval_opts_table, o, argc, argv, NULL);
	if (rc != 0)
		return rc > 0 ? 1 : rc;
	if (o->sims == 1) { /* as azrun: one simulation expands the root only, no visits */
		fprintf(stderr, "azeval: --sims: 0 (the raw policy) or a whole number from 2 to "
			"1000000, not '1'\n");
		return -EINVAL;
	}
	if (o->positions && o->vs) {
		fprintf(stderr, "azeval: --positions and --vs are two modes; give one of them\n");
		return -EINVAL;
	}
	int rollout = o->agent && strcmp(o->agent, "rollout") == 0; /* judged without one */
	if (!o->ckpt && (o->vs || (o->positions && !rollout))) {
		fprintf(stderr, "azeval: --checkpoint FILE is required with %s (see --help)\n",
			o->vs ? "--vs" : "--positions");
		return -EINVAL;
	}
	if (!o->game && !o->ckpt) {
		fprintf(stderr, "azeval: --game GAME is required without --checkpoint (%s)\n",
			az_game_names());
		return -EINVAL;
	}
	return 0;
}

/* The Tangled options given here, over the checkpoint's (the game validates them). */
static int set_tangled_opts(struct az_config *gc, const struct eval_opts *o, char *err,
			    size_t errlen)
{
	char graph[24];
	snprintf(graph, sizeof(graph), "%ld", o->graph);
	const char *given[AZ_TANGLED_OPTS] = {
		[AZ_TANGLED_OPT_GRAPH] = o->graph ? graph : NULL, [AZ_TANGLED_OPT_GRAPH_FILE] = o->graph_file,
		[AZ_TANGLED_OPT_VARIANT] = o->variant, [AZ_TANGLED_OPT_EPSILON] = o->epsilon,
		[AZ_TANGLED_OPT_ADJUDICATOR] = o->adjudicator ? o->adjudicator : ""};
	for (int i = 0; i < AZ_TANGLED_OPTS; i++)
		if (given[i] && az_config_set(gc, az_game_desc_tangled.opts[i].name, given[i], err,
					      errlen) < 0)
			return -EINVAL;
	return 0;
}

/* The game the checkpoint records (its name, "" without --checkpoint): --game's default, and the
 * hint when the network is not one of the game evaluated. */
static char ckpt_game[32];

/* The options a positions file's board line names (rec: "graph=3;variant=free;...;adjudicator=
 * table:exact") into gc, for an evaluation without a checkpoint; those given on the command line
 * are set after and win. A graph file's board ("graph-edges=...") names no file: it needs
 * --graph-file. 0, or 2 after a message. */
static int board_options(const struct eval_opts *o, struct az_config *gc, const char *rec)
{
	char err[AZ_ERR_LEN], adj[64];
	const char *a = strstr(rec, ";adjudicator=");

	if (strstr(rec, "graph-edges=") && !o->graph_file && !o->graph) {
		fprintf(stderr, "azeval: %s: its board line names the graph of a graph file (%s): "
			"give that file with --graph-file F\n", o->positions, rec);
		return 2;
	}
	if (az_config_apply_game_options(gc, rec, err, sizeof(err)) < 0) {
		fprintf(stderr, "azeval: %s: its board line: %s\n", o->positions, err);
		return 2;
	}
	if (a && !o->adjudicator) {
		snprintf(adj, sizeof(adj), "%.*s", (int)strcspn(a + 13, ";"), a + 13);
		if (az_config_set(gc, "adjudicator", adj, err, sizeof(err)) < 0) {
			fprintf(stderr, "azeval: %s: its board line: %s\n", o->positions, err);
			return 2;
		}
	}
	return 0;
}

/* The game as azrun configures it (Tangled: graph, variant, adjudicator) into gc and *g. The
 * checkpoint names its game (the default of --game, as in azplay) and, for Tangled, its graph
 * and variant; options given here override. Returns 0, or 2 after a message. */
static int resolve_game(struct eval_opts *o, struct az_config *gc, const struct az_game **g)
{
	char err[AZ_ERR_LEN];
	struct az_model *pm = NULL;

	if (o->ckpt && az_ckpt_load(o->ckpt, &pm, err, sizeof(err)) < 0) {
		fprintf(stderr, "azeval: %s\n", err);
		return 2;
	}
	if (pm)
		snprintf(ckpt_game, sizeof(ckpt_game), "%s", pm->game);
	if (pm && !o->game)
		o->game = ckpt_game;
	if (az_config_defaults(gc, o->game) < 0) {
		fprintf(stderr, "azeval: unknown game '%s' (known: %s)\n", o->game, az_game_names());
		az_model_destroy(pm);
		return 2;
	}
	if (pm && strcmp(gc->game, "tangled") == 0 && strcmp(pm->game, "tangled") == 0 &&
	    az_config_apply_game_options(gc, pm->game_options, err, sizeof(err)) < 0) {
		fprintf(stderr, "azeval: %s: %s\n", o->ckpt, err);
		az_model_destroy(pm);
		return 2;
	}
	int from_ckpt = pm != NULL;
	az_model_destroy(pm);
	char before[1024], after[1024], board[1100];
	/* no checkpoint: the board of --positions FILE, as its board line names it, unless the
	 * options below say otherwise (and the board check then refuses the file) */
	const char *sp = board;
	if (!from_ckpt && o->positions && az_positions_board(o->positions, board, sizeof(board)) &&
	    strncmp(board, gc->game, strlen(gc->game)) == 0 && (sp += strlen(gc->game))[0] == ' ' &&
	    board_options(o, gc, sp + 1) != 0)
		return 2;
	az_config_game_options(gc, before, sizeof(before));
	if (set_tangled_opts(gc, o, err, sizeof(err)) < 0 ||
	    az_config_game(gc, g, err, sizeof(err)) < 0) {
		fprintf(stderr, "azeval: %s\n", err);
		return 2;
	}
	az_config_game_options(gc, after, sizeof(after));
	if (from_ckpt && strcmp(before, after) != 0) /* allowed, but not in silence */
		fprintf(stderr, "azeval: note: the network was trained on %s %s; the options given "
			"here evaluate it on %s\n", gc->game, before, after);
	return 0;
}

/* Whether path names a regular file (a link followed); a missing one, a directory or device
 * is reported by the reader instead. */
static int regular_file(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Why the options given do not fit together for game g, or NULL. */
static const char *mode_misfit(const struct eval_opts *o, const struct az_game *g)
{
	int tangled = strcmp(g->name, "tangled") == 0, c4 = strcmp(g->name, "connect4") == 0;
	int rollout = o->agent && strcmp(o->agent, "rollout") == 0;
	char board[1100];

	if ((o->mistakes || o->labels) && !c4 && !tangled)
		return "--mistakes and --labels need --game connect4 or tangled (the built-in "
		       "solvers); for tictactoe use --write-labelled";
	if (o->tactic && !c4)
		return "--tactic needs --game connect4";
	if (o->uncoloured >= 0 && (!tangled || !o->labelled))
		return "--uncoloured K goes with --game tangled --write-labelled FILE";
	if (o->vs_sims >= 0 && (!o->vs || strcmp(o->vs, "rollout") != 0))
		return "--vs-sims N goes with --vs rollout";
	if (o->list_mistakes && (!o->mistakes || o->json))
		return !o->mistakes ? "--list-mistakes goes with --mistakes (the mistakes it lists)"
				    : "--list-mistakes prints lines of text: drop --json";
	if (o->labels && !o->mistakes) /* it was ignored */
		return "--labels F goes with --mistakes (where its labels are cached)";
	if (o->mistakes && !o->positions)
		return o->vs ? "--mistakes goes with --positions FILE (drop --vs, which plays games)"
			     : "--mistakes goes with --positions FILE (the positions to judge)";
	if (o->tactic && !o->labelled)
		return "--tactic goes with --write-labelled FILE";
	if (o->limit && !o->positions) /* it was ignored */
		return "--limit N goes with --positions FILE (judge its first N positions; "
		       "--write-labelled takes --games N)";
	if (rollout && !o->mistakes)
		return "--agent rollout goes with --mistakes (games against rollout MCTS: "
		       "--checkpoint FILE --vs rollout)";
	if (rollout && o->ckpt)
		return "--agent rollout judges rollout MCTS, not a network: drop --checkpoint";
	if (rollout && tangled && ((!o->graph && !o->graph_file) || !o->variant) &&
	    regular_file(o->positions) && !az_positions_board(o->positions, board, sizeof(board)))
		return "--agent rollout on Tangled: give --graph N (or --graph-file F) and --variant "
		       "free|fixed, those the positions were written for (the file has no board "
		       "line, \"# board: ...\", to take them from)";
	if (rollout && o->sims < 2)
		return "--agent rollout needs --sims N >= 2 (its priors are uniform: no raw policy)";
	if (o->sym_avg && (rollout || !o->ckpt))
		return "--symmetry-average averages a network's evaluations: give --checkpoint FILE "
		       "(and not --agent rollout)";
	if (!o->labelled && !o->ckpt && !rollout)
		return "--checkpoint FILE is required (see --help)";
	if (!o->labelled && !o->positions && !o->vs)
		return "what to measure: --positions FILE or --vs random|rollout (see --help)";
	return NULL;
}

/* Open the checkpoint as a network of g on a batch-1 backend, the evaluator c. Returns 0, or the
 * exit status after a message: 1 out of memory, else 2 (bad input: the file, its game or shape,
 * a backend not available here or its settings). */
static int open_network(const struct eval_opts *o, const struct az_game *g, struct eval_ctx *c)
{
	struct az_net_open_args a = {.ckpt = o->ckpt, .game = g, .backend = o->kind, .batch = 1};
	char err[AZ_ERR_LEN], hint[64] = "";
	int rc = az_net_open(&a, &c->net, err, sizeof(err));

	c->g = g;
	c->fn = az_net_eval;
	c->fn_ctx = &c->net.eval;
	if (rc == 0 && o->sym_avg && az_net_eval_average_symmetries(&c->net.eval, 1) < 0) {
		az_net_close(&c->net);
		fprintf(stderr, "azeval: out of memory for --symmetry-average\n");
		return 1;
	}
	if (rc == 0)
		return 0;
	if (rc == -EPROTO && strcmp(ckpt_game, g->name) != 0)
		snprintf(hint, sizeof(hint), " (use --game %s)", ckpt_game);
	fprintf(stderr, "azeval: %s%s\n", err, hint);
	return rc == -ENOMEM ? 1 : 2;
}

/* The labelled-positions report of t, as JSON or a table. */
static void print_tally(const struct eval_opts *o, const struct tally *t)
{
	if (o->json) {
		printf("{\"positions\": %ld, \"value_scored\": %ld, ", t->positions,
		       t->values_labelled);
		print_share("move_accuracy", t->moves_ok, t->moves_labelled, 1, 0);
		print_share("value_sign_accuracy", t->values_ok, t->values_labelled, 1, 0);
		print_share("decisive_sign_accuracy", t->decisive_ok, t->decisive, 1, 0);
		printf("\"sims\": %ld}\n", o->sims);
		return;
	}
	if (t->moves_labelled)
		printf("%s: %ld position%s, %ld simulation%s per move\n", o->positions,
		       t->positions, az_plural((unsigned long)t->positions), o->sims,
		       az_plural((unsigned long)o->sims));
	else
		printf("%s: %ld position%s (value labels only: no search)\n", o->positions,
		       t->positions, az_plural((unsigned long)t->positions));
	print_share("move_accuracy", t->moves_ok, t->moves_labelled, 0, 0);
	print_share_or("value_sign_accuracy", t->values_ok, t->values_labelled, 0, 0,
		       t->draws_unscored ? "only draws labelled: they are scored with --draw-band X"
					 : "no labels");
	print_share("decisive_sign_accuracy", t->decisive_ok, t->decisive, 0, 1);
}

/* What azeval measures with the network open in c. Returns the exit status. */
static int run_eval(const struct eval_opts *o, const struct az_config *gc, struct eval_ctx *c)
{
	struct tally t = {.draw_band = o->draw_band};
	struct az_mcts_params mp;
	char board[1100], err[AZ_ERR_LEN + 600];
	int rc;

	az_config_board(gc, board, sizeof(board));
	if (o->labelled)
		return azeval_tangled_labelled(o, c, board);
	struct stat st;
	if (o->positions && stat(o->positions, &st) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "azeval: --positions %s: not a regular file (%s)\n", o->positions,
			S_ISDIR(st.st_mode) ? "a directory" : "a device, FIFO or socket");
		return 2;
	}
	if (o->positions && az_positions_check_board(o->positions, board, err, sizeof(err)) < 0) {
		fprintf(stderr, "azeval: %s\n", err);
		return 2;
	}
	az_mcts_params_default(&mp, c->g);
	mp.c_puct = o->c_puct;
	mp.dir_eps = 0;
	mp.draw_value = o->draw_value;
	mp.solver = o->solver;
	mp.fpu_absolute = o->fpu_reduction < 0;
	mp.fpu_reduction = mp.fpu_absolute ? 0.0f : o->fpu_reduction;
	mp.search = o->sp.search; /* Gumbel agents search without noise, as PUCT's */
	mp.gumbel_m = o->sp.gumbel_m;
	mp.c_scale = o->sp.c_scale;
	if (o->vs) {
		uint32_t vs_sims = (uint32_t)(o->vs_sims > 0 ? o->vs_sims : o->sims);
		rc = run_matches(c, &mp, o->vs, o->games, (uint32_t)o->sims, vs_sims, o->seed,
				 o->json);
		return rc < 0 ? 1 : 0;
	}
	if (o->mistakes && strcmp(c->g->name, "tangled") == 0) {
		char key[1200];
		azeval_tangled_key(gc, key, sizeof(key));
		return azeval_tangled_mistakes(c, o, &mp, key);
	}
	if (o->mistakes)
		return azeval_c4_mistakes(c, o, &mp);
	rc = eval_file(c, o->positions, (uint32_t)o->sims, &mp, o->limit, &t);
	if (rc < 0)
		return rc == -EINVAL || rc == -ENOENT ? 2 : 1;
	print_tally(o, &t);
	return 0;
}

int main(int argc, char **argv)
{
	static struct az_config gc;
	static struct eval_ctx c;
	const struct az_game *g;
	struct eval_opts o;
	const char *why;

	if (az_version_option(argc, argv, "azeval"))
		return 0;
	int rc = parse_args(argc, argv, &o);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	/* Before the first BLAS or LAPACK call (Tangled's adjudicator diagonalises with LAPACKE):
	 * OpenBLAS's spinning threads on a machine busy with a run made labelling 30 games of K4
	 * take 57 s instead of 1.6 s. */
	openblas_set_num_threads(1);
	if ((rc = resolve_game(&o, &gc, &g)) != 0)
		return rc;
	if ((why = mode_misfit(&o, g)) != NULL) {
		fprintf(stderr, "azeval: %s\n", why);
		return 2;
	}
	if (strcmp(g->name, "tangled") == 0 && o.uncoloured > az_tangled_current_graph()->e) {
		fprintf(stderr, "azeval: --uncoloured: at most %d (the edges of %s), not %ld\n",
			az_tangled_current_graph()->e, az_tangled_current_graph()->name,
			o.uncoloured);
		return 2;
	}
	if (o.labelled && (rc = azeval_check_labelled_target(g, o.labelled)) != 0)
		return rc;
	if (o.labelled && o.tactic)
		return azeval_write_tactics(&o, o.labelled);
	char board[1100];
	az_config_board(&gc, board, sizeof(board));
	if (o.labelled && o.uncoloured < 0)
		return azeval_write_labelled(g, o.labelled, board);
	if (o.labelled && !o.ckpt)
		return azeval_tangled_labelled(&o, NULL, board);
	if (o.agent && strcmp(o.agent, "rollout") == 0) { /* mode_misfit: --mistakes, no network */
		c.g = g;
		c.fn = az_rollout_eval;
		c.fn_ctx = &c.rollout;
		az_rollout_init(&c.rollout, g, o.seed);
		return run_eval(&o, &gc, &c);
	}
	if ((rc = open_network(&o, g, &c)) != 0)
		return rc;
	rc = run_eval(&o, &gc, &c);
	/* after the results, on stderr (an error stays one line): the path that produced them,
	 * as the kernel can move results by rounding (docs/cpu.md) */
	if (rc == 0)
		fprintf(stderr, "azeval: inference: %s\n", c.net.backend);
	az_net_close(&c.net);
	return rc;
}
