/* SPDX-License-Identifier: MIT */
/* azeval: measure a checkpoint against labelled positions (move accuracy against the optimal
 * moves, value-sign accuracy against the exact score, AlphaZero.jl's mistake rate on Connect
 * Four and Tangled), play baseline opponents, and write labelled positions with the solvers. */
#include <cblas.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "games/game.h"
#include "games/tangled/tangled.h"
#include "gpu/backend.h"
#include "net/checkpoint.h"
#include "mcts/mcts.h"
#include "base/rng.h"
#include "base/version.h"
#include "tools/azeval_impl.h"
#include "tools/config.h"
#include "eval/c4_labels.h"
#include "eval/match.h"
#include "eval/net_eval.h"
#include "eval/positions.h"
#include "eval/rollout.h"


static void usage(const char *prog)
{
	printf("Usage: %s --checkpoint FILE --positions FILE [--sims N] [--json]\n"
	       "       %s --checkpoint FILE --positions FILE --mistakes (connect4, tangled)\n"
	       "       %s --checkpoint FILE --vs random|rollout [--games N] [--vs-sims N]\n"
	       "       %s --game tictactoe --write-labelled FILE\n"
	       "       %s --game connect4 --write-labelled FILE --tactic win|block\n"
	       "       %s --game tangled --write-labelled FILE --uncoloured K [--games N]\n\n"
	       "Measures a network against labelled positions. A positions line is\n"
	       "  <moves> [<score> [<best>]]\n"
	       "moves from the start in the game's notation (tic-tac-toe cells 1-9, Connect Four\n"
	       "columns 1-7, '-' for none; tangled: moves separated by '.', e.g. v2.0-1g);\n"
	       "score: exact value for the side to move (its sign:\n"
	       "win/draw/loss); best: comma-separated optimal moves.\n\n"
	       "Options:\n"
	       "  --game NAME          tictactoe | connect4 | tangled (default: the checkpoint's)\n"
	       "  --graph N            tangled: numbered graph (default: the checkpoint's, else 3);\n"
	       "                       also --graph-file F, --variant free|fixed,\n"
	       "                       --adjudicator table|exact|exact-krylov|anneal\n"
	       "  --checkpoint FILE    safetensors checkpoint (e.g. RUN/best.safetensors)\n"
	       "  --positions FILE     labelled positions\n"
	       "  --sims N             MCTS simulations per move, >= 2; 0: the raw policy (default 200)\n"
	       "  --c-puct C           PUCT constant (default 1.5)\n"
	       AZ_MATCH_SEARCH_HELP
	       "  --mcts-solver 0|1    search with MCTS-Solver proofs (default 1)\n"
	       "  --fpu-reduction R    first-play urgency: parent's value - R * sqrt(visited\n"
	       "                       prior) (default 0.25); R < 0: value 0\n"
	       "  --backend B          auto | cpu | cpu-async | cuda (default auto: cuda when visible)\n"
	       "  --json               one JSON object: positions, move_accuracy,\n"
	       "                       value_sign_accuracy (null when the file has no such labels)\n"
	       "  --vs OPPONENT        play --games N games (default 100, colours alternated)\n"
	       "                       against random (uniform legal moves) or rollout (MCTS\n"
	       "                       with random playouts) and report W/D/L\n"
	       "  --vs-sims N          simulations of the rollout opponent (default: --sims)\n"
	       "  --seed S             seed of the opponents (default 1)\n"
	       "  --version            print the version and exit\n"
	       "  --write-labelled F   write every reachable non-terminal position with its exact\n"
	       "                       score and optimal moves (built-in solver; tic-tac-toe)\n"
	       "  --mistakes           connect4, tangled: AlphaZero.jl's mistake rate, the share\n"
	       "                       of moves that change the game-theoretic outcome, by the built-in\n"
	       "                       solver, solving only the moves played; the labels are\n"
	       "                       cached in FILE.labels (or under ~/.cache/ringzero when\n"
	       "                       FILE's folder is read-only)\n"
	       "  --labels F           --mistakes: cache the labels in F instead\n"
	       "  --uncoloured K       tangled --write-labelled: --games N distinct positions with K\n"
	       "                       uncoloured edges from random games (with --checkpoint: from\n"
	       "                       games of the raw policy at --temperature T, default 1),\n"
	       "                       each labelled by the exact solver\n"
	       "  --solve-nodes N      tangled: solver budget per position (default 100000000;\n"
	       "                       0: none); positions it cannot solve are left out (labels)\n"
	       "                       or counted as unsolved (--mistakes)\n"
	       "  --limit N            only the first N positions of the file (default: all)\n"
	       "  --tactic win|block   connect4 --write-labelled: --games N positions from random\n"
	       "                       games where the side to move wins at once while the\n"
	       "                       opponent threatens too (win), or must block the\n"
	       "                       opponent's only threat (block); best = those moves\n"
	       "  --draw-band X        value-head outputs with |v| <= X count as a predicted draw\n"
	       "                       (default 0: the plain sign, as the value head is a tanh)\n"
	       "value_sign_accuracy scores drawn positions only with a --draw-band > 0 (without\n"
	       "one a draw cannot be predicted); decisive_sign_accuracy never does. A positions\n"
	       "line whose first non-blank character is '#' is a comment.\n",
	       prog, prog, prog, prog, prog, prog);
}

struct label_ctx {
	const struct az_game *g;
	FILE *f;
	int err;
};

static void label_one(void *arg, const void *state, const char *moves)
{
	struct label_ctx *c = arg;
	uint8_t opt[AZ_GAME_ACTIONS_MAX];
	int v = az_solve(c->g, state, opt);
	if (v < -1) {
		c->err = v;
		return;
	}
	fprintf(c->f, "%s %d ", moves[0] ? moves : "-", v);
	int first = 1;
	for (uint32_t a = 0; a < c->g->actions; a++) {
		char buf[16];
		if (!opt[a])
			continue;
		c->g->format_action((int)a, buf, sizeof(buf));
		fprintf(c->f, "%s%s", first ? "" : ",", buf);
		first = 0;
	}
	fputc('\n', c->f);
}

static int write_labelled(const struct az_game *g, const char *path)
{
	/* The exact solver walks every reachable state: fine for tic-tac-toe (5,478) and small
	 * Tangled boards (K4: 82,367), hopeless for Connect Four (about 4.5e12). */
	const struct az_tangled_graph *tg = az_tangled_current_graph();
	if (strcmp(g->name, "connect4") == 0 ||
	    (strcmp(g->name, "tangled") == 0 && tg && tg->e > 7)) {
		fprintf(stderr, "azeval: --write-labelled: %s is too large to solve exactly (this "
			"works for tictactoe and Tangled boards of at most 7 edges; %s)\n", g->name,
			strcmp(g->name, "tangled") == 0
				? "for larger boards, --uncoloured K --games N labels N positions "
				  "with K uncoloured edges"
				: "connect4: --tactic win|block, or Pons' sets with --mistakes");
		return 2;
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "azeval: cannot write %s: %s\n", path, strerror(errno));
		return 2;
	}
	struct label_ctx c = {.g = g, .f = f};
	int n = az_game_enumerate(g, 1, label_one, &c);
	if (fclose(f) != 0 || n < 0 || c.err) {
		fprintf(stderr, "azeval: writing %s failed\n", path);
		return 1;
	}
	fprintf(stderr, "azeval: wrote %d labelled %s positions to %s\n", n, g->name, path);
	return 0;
}

static int sign_of(double v, double band)
{
	return v > band ? 1 : v < -band ? -1 : 0;
}

/* The agent's move for `state`: most visited after `sims` simulations, or the raw policy's
 * argmax over legal moves when sims == 0 (eval/net_eval.h). Returns the action or -errno. */
static int agent_move(struct eval_ctx *c, struct az_tree *t, const void *state, uint32_t sims)
{
	return az_eval_move(c->g, az_net_eval, &c->net, t, sims, state);
}

/* ---- matches against baseline opponents (--vs random|rollout; eval/match.h) ---- */

static int run_matches(struct eval_ctx *c, const struct az_mcts_params *search, const char *vs,
		       long games, uint32_t sims, uint32_t vs_sims, uint64_t seed, int json)
{
	struct az_match_params mp = {.g = c->g, .mp = search, .fn = az_net_eval, .ctx = &c->net,
				     .sims = sims,
				     .vs_sims = vs_sims, .games = games, .seed = seed,
				     .opponent = strcmp(vs, "rollout") == 0 ? AZ_MATCH_ROLLOUT
									   : AZ_MATCH_RANDOM};
	struct az_match_result mr;
	int rollout_opp = mp.opponent == AZ_MATCH_ROLLOUT;
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
		       "agent, %u for the opponent): %ld wins, %ld draws, %ld losses, score "
		       "%.1f%%\n", vs, games, sims, vs_sims, w, d, l, 100.0 * score);
	else
		printf("agent vs %s over %ld games (colours alternated, %u simulations each): "
		       "%ld wins, %ld draws, %ld losses, score %.1f%%\n", vs, games, sims, w, d, l,
		       100.0 * score);
	return 0;
}

struct tally {
	long positions, moves_labelled, moves_ok, values_labelled, values_ok;
	long decisive, decisive_ok;
	double draw_band;
};

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
			fprintf(stderr, "azeval: %s:%ld: %s\n", path, lineno, err);
			rc = -EINVAL;
			break;
		}
		if (k == 0)
			continue;
		t->positions++;
		if (pos.has_score) {
			float pol[AZ_GAME_ACTIONS_MAX], v;
			rc = az_net_eval(&c->net, pos.state, pol, &v);
			int ok = sign_of(v, t->draw_band) == sign_of(pos.score, 0.0);
			/* Without a draw band a draw cannot be predicted (the tanh is never 0):
			 * the headline then scores decisive positions only. */
			int scored = t->draw_band > 0 || pos.score != 0.0;
			t->values_labelled += scored;
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

static void print_share(const char *what, long ok, long n, int json, int last)
{
	if (json) {
		if (n)
			printf("\"%s\": %.6f%s", what, (double)ok / (double)n, last ? "" : ", ");
		else
			printf("\"%s\": null%s", what, last ? "" : ", ");
	} else if (n) {
		printf("%-20s %.2f%% (%ld of %ld)\n", what, 100.0 * (double)ok / (double)n, ok, n);
	} else {
		printf("%-20s n/a (no labels)\n", what);
	}
}


/* A number option: the whole text must parse and lie in [lo, hi]. */
static int num_arg(const char *name, const char *text, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || end == text || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "azeval: --%s: expected a number in [%g, %g], got '%s'\n", name, lo,
			hi, text);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* num_arg for a long field: *out = the value, cut to a whole number. */
static int long_arg(const char *name, const char *text, double lo, double hi, long *out)
{
	double v;
	int rc = num_arg(name, text, lo, hi, &v);

	if (rc == 0)
		*out = (long)v;
	return rc;
}

/* Parse the command line. Returns 0, 1 after --help, or -EINVAL after a one-line message. */
/* --NAME takes a or b: 0, or -EINVAL after a one-line message. */
static int one_of(const char *name, const char *v, const char *a, const char *b)
{
	if (strcmp(v, a) == 0 || strcmp(v, b) == 0)
		return 0;
	fprintf(stderr, "azeval: --%s: %s or %s, not '%s'\n", name, a, b, v);
	return -EINVAL;
}

static int parse_args(int argc, char **argv, struct eval_opts *o)
{
	static const struct option lo[] = {
		AZ_MATCH_LONGOPTS,
		{"positions", required_argument, 0, 'p'}, {"json", no_argument, 0, 'j'},
		{"write-labelled", required_argument, 0, 'w'},
		{"draw-band", required_argument, 0, 'd'}, {"help", no_argument, 0, 'h'},
		{"vs", required_argument, 0, 'v'}, {"graph-file", required_argument, 0, 'F'},
		{"adjudicator", required_argument, 0, 'A'}, {"mistakes", no_argument, 0, 'M'},
		{"labels", required_argument, 0, 'L'}, {"limit", required_argument, 0, 'l'},
		{"tactic", required_argument, 0, 'T'}, {"mcts-solver", required_argument, 0, 'O'},
		{"fpu-reduction", required_argument, 0, 'R'},
		{"uncoloured", required_argument, 0, 'K'}, {"vs-sims", required_argument, 0, 'W'},
		{"solve-nodes", required_argument, 0, 'N'},
		{"temperature", required_argument, 0, 't'}, {0, 0, 0, 0},
	};
	*o = (struct eval_opts){.sims = 200, .games = 100, .c_puct = 1.5f, .seed = 1,
				.kind = AZ_BACKEND_AUTO, .solver = 1, .fpu_reduction = 0.25f,
				.uncoloured = -1, .vs_sims = -1, .solve_nodes = 1e8, .temperature = 1.0};
	az_mcts_params_default(&o->sp, NULL);
	double v;
	int c, rc = 0;
	opterr = 0; /* our own one-line messages */
	while (rc == 0 && (c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case 'g': o->game = optarg; break;
		case 'c': o->ckpt = optarg; break;
		case 'p': o->positions = optarg; break;
		case 'j': o->json = 1; break;
		case 'w': o->labelled = optarg; break;
		case 'u':
			rc = num_arg("c-puct", optarg, 0, 1e6, &v);
			o->c_puct = (float)v;
			break;
		case 'd':
			rc = num_arg("draw-band", optarg, 0, 0.999, &v);
			o->draw_band = v;
			break;
		case 's':
			rc = num_arg("sims", optarg, 0, 1000000, &v);
			o->sims = (long)v;
			/* as azrun: one simulation expands the root only, no visits to pick by */
			if (rc == 0 && (v != (double)o->sims || o->sims == 1)) {
				fprintf(stderr, "azeval: --sims: 0 (the raw policy) or a whole number "
					"from 2 to 1000000, not '%s'\n", optarg);
				rc = -EINVAL;
			}
			break;
		case 'n':
			rc = long_arg("games", optarg, 1, 1000000, &o->games);
			break;
		case 'S':
			rc = num_arg("seed", optarg, 0, 1.8e19, &v);
			o->seed = strtoull(optarg, NULL, 10);
			break;
		case 'b':
			if (az_backend_parse(optarg, &o->kind) < 0) {
				fprintf(stderr, "azeval: --backend: auto, cpu, cpu-async or cuda, not '%s'\n",
					optarg);
				rc = -EINVAL;
			}
			break;
		case 'v':
			o->vs = optarg;
			rc = one_of("vs", optarg, "random", "rollout");
			break;
		case 'G': {
			const struct az_game_opt *go = &az_game_desc_tangled.opts[AZ_TANGLED_OPT_GRAPH];
			rc = long_arg("graph", optarg, go->lo, go->hi, &o->graph);
			break;
		}
		case 'F': o->graph_file = optarg; break;
		case 'V': o->variant = optarg; break;
		case 'A': o->adjudicator = optarg; break;
		case 'M': o->mistakes = 1; break;
		case 'O':
			rc = num_arg("mcts-solver", optarg, 0, 1, &v);
			o->solver = (int)v;
			break;
		case 'R':
			rc = num_arg("fpu-reduction", optarg, -1, 10, &v);
			o->fpu_reduction = (float)v;
			break;
		case 'L': o->labels = optarg; break;
		case 'K':
			rc = long_arg("uncoloured", optarg, 0, AZ_TANGLED_MAX_EDGES, &o->uncoloured);
			break;
		case 'W':
			rc = num_arg("vs-sims", optarg, 2, 1000000, &v);
			o->vs_sims = (long)v;
			break;
		case 'N':
			rc = num_arg("solve-nodes", optarg, 0, 1e15, &o->solve_nodes);
			break;
		case 't':
			rc = num_arg("temperature", optarg, 0.01, 100, &o->temperature);
			break;
		case 'Q':
		case 'Y':
		case 'Z':
			rc = az_match_search_arg("azeval", c, optarg, &o->sp);
			break;
		case 'l':
			rc = num_arg("limit", optarg, 1, 1e9, &v);
			o->limit = (long)v;
			break;
		case 'T':
			o->tactic = optarg;
			rc = one_of("tactic", optarg, "win", "block");
			break;
		case 'h': usage("azeval"); return 1;
		case ':':
			fprintf(stderr, "azeval: %s needs a value (see --help)\n", argv[optind - 1]);
			return -EINVAL;
		default:
			fprintf(stderr, "azeval: unknown option '%s' (see --help)\n", argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (rc == 0 && optind < argc) {
		fprintf(stderr, "azeval: unexpected argument '%s' (see --help)\n", argv[optind]);
		rc = -EINVAL;
	}
	if (rc == 0 && o->positions && o->vs) {
		fprintf(stderr, "azeval: --positions and --vs are two modes; give one of them\n");
		rc = -EINVAL;
	}
	if (rc == 0 && !o->ckpt && (o->positions || o->vs)) {
		fprintf(stderr, "azeval: --checkpoint FILE is required with %s (see --help)\n",
			o->vs ? "--vs" : "--positions");
		rc = -EINVAL;
	} else if (rc == 0 && !o->game && !o->ckpt) {
		fprintf(stderr, "azeval: --game GAME is required without --checkpoint (%s)\n",
			az_game_names());
		rc = -EINVAL;
	}
	return rc;
}

/* The Tangled options given here, over the checkpoint's (the game validates them). */
static int set_tangled_opts(struct az_config *gc, const struct eval_opts *o, char *err,
			    size_t errlen)
{
	char graph[24];
	snprintf(graph, sizeof(graph), "%ld", o->graph);
	const char *given[AZ_TANGLED_OPTS] = {
		[AZ_TANGLED_OPT_GRAPH] = o->graph ? graph : NULL, [AZ_TANGLED_OPT_GRAPH_FILE] = o->graph_file,
		[AZ_TANGLED_OPT_VARIANT] = o->variant,
		[AZ_TANGLED_OPT_ADJUDICATOR] = o->adjudicator ? o->adjudicator : ""};
	for (int i = 0; i < AZ_TANGLED_OPTS; i++)
		if (given[i] && az_config_set(gc, az_game_desc_tangled.opts[i].name, given[i], err,
					      errlen) < 0)
			return -EINVAL;
	return 0;
}

/* Load the checkpoint and check it is a network for g. Returns 0, or 2 after a message. */
static int load_network(const struct eval_opts *o, const struct az_game *g, struct az_model **m)
{
	char err[512];
	if (az_ckpt_load(o->ckpt, m, err, sizeof(err)) < 0) {
		fprintf(stderr, "azeval: %s\n", err);
		return 2;
	}
	const char *why = NULL;
	char buf[300];
	if (strcmp((*m)->game, g->name) != 0) {
		snprintf(buf, sizeof(buf), "is a %s network, not %s (use --game %s)", (*m)->game,
			 g->name, (*m)->game);
		why = buf;
	} else if ((*m)->arch.inputs != g->features || (*m)->arch.actions != g->actions) {
		snprintf(buf, sizeof(buf), "has %u inputs and %u actions, but %s needs %u and %u",
			 (*m)->arch.inputs, (*m)->arch.actions, g->name, g->features, g->actions);
		why = buf;
	}
	if (!why)
		return 0;
	fprintf(stderr, "azeval: %s %s\n", o->ckpt, why);
	az_model_destroy(*m);
	return 2;
}

/* --tactic: positions from random Connect Four games (--games N of them, --seed S). */
static int write_tactics(const struct eval_opts *o, const char *path)
{
	char err[600];
	long n = az_c4_tactics_write(path, strcmp(o->tactic, "win") == 0 ? AZ_C4_TACTIC_WIN
					   : AZ_C4_TACTIC_BLOCK, o->games, o->seed, err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "azeval: %s\n", err);
		return 1;
	}
	fprintf(stderr, "azeval: wrote %ld connect4 '%s' positions to %s\n", n, o->tactic, path);
	return 0;
}

/* --mistakes: AlphaZero.jl's mistake rate of the agent's moves on o->positions, with the
 * solver's labels cached (eval/c4_labels.h). Returns 0, or the exit status after a message. */
static int eval_mistakes(struct eval_ctx *c, const struct eval_opts *o,
			 const struct az_mcts_params *mp)
{
	char path[4096], err[600];
	struct az_c4_labels *l;
	struct az_tree *tree;
	long mistakes = 0, n, lost = 0;
	int rc;
	if (o->labels)
		snprintf(path, sizeof(path), "%s", o->labels);
	else if (az_c4_labels_path(o->positions, path, sizeof(path)) < 0) {
		fprintf(stderr, "azeval: cannot open %s: %s\n", o->positions, strerror(ENOENT));
		return 2;
	}
	if ((rc = az_c4_labels_open(o->positions, path, o->limit, &l, err, sizeof(err))) < 0) {
		fprintf(stderr, "azeval: %s\n", err);
		return rc == -EINVAL || rc == -ENOENT ? 2 : 1;
	}
	n = az_c4_labels_count(l);
	if (n == 0) {
		fprintf(stderr, "azeval: %s holds no positions\n", o->positions);
		az_c4_labels_close(l);
		return 2;
	}
	if (az_tree_create(c->g, mp, az_c4_labels_state(l, 0), &tree) < 0) {
		az_c4_labels_close(l);
		return 1;
	}
	for (long i = 0; i < n && rc == 0; i++) {
		int a = agent_move(c, tree, az_c4_labels_state(l, i), (uint32_t)o->sims), keeps, v;
		rc = a < 0 ? a : az_c4_labels_outcome(l, i, &v);
		if (rc == 0)
			rc = az_c4_labels_keeps(l, i, a, &keeps);
		mistakes += rc == 0 && !keeps;
		lost += rc == 0 && v < 0;
	}
	az_tree_destroy(tree);
	/* Save what was solved even when the evaluation failed: it stays valid. */
	int saved = az_c4_labels_save(l, err, sizeof(err));
	az_c4_labels_close(l);
	if (saved < 0)
		fprintf(stderr, "azeval: %s\n", err);
	if (rc < 0) {
		fprintf(stderr, "azeval: evaluation failed: %s\n", strerror(-rc));
		return 1;
	}
	/* where the labels are kept, or (the save failed, said above) that they are not */
	char where[4200];
	if (o->json)
		snprintf(where, sizeof(where), saved < 0 ? "null" : "\"%s\"", path);
	else
		snprintf(where, sizeof(where), saved < 0 ? "labels not saved (%s unwritable)" :
			 "labels cached in %s", path);
	if (o->json)
		printf("{\"positions\": %ld, \"lost_positions\": %ld, \"mistakes\": %ld, "
		       "\"mistake_rate\": %.6f, \"sims\": %ld, \"labels\": %s}\n", n, lost,
		       mistakes, (double)mistakes / (double)n, o->sims, where);
	else
		printf("%s: %ld positions (%ld lost for the side to move), %ld simulations per "
		       "move\nmistake_rate         %.2f%% (%ld of %ld)\n%s\n", o->positions, n, lost,
		       o->sims, 100.0 * (double)mistakes / (double)n, mistakes, n, where);
	return saved < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct eval_opts o;
	if (az_version_option(argc, argv, "azeval"))
		return 0;
	int rc = parse_args(argc, argv, &o);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	/* The game as azrun configures it (Tangled: graph, variant, adjudicator). */
	static struct az_config gc;
	const struct az_game *g;
	char gerr[512], ckgame[32];
	/* The checkpoint names its game (the default of --game, as in azplay) and, for Tangled,
	 * its graph and variant; options given here override. */
	struct az_model *pm = NULL;
	if (o.ckpt && az_ckpt_load(o.ckpt, &pm, gerr, sizeof(gerr)) < 0) {
		fprintf(stderr, "azeval: %s\n", gerr);
		return 2;
	}
	if (pm && !o.game) {
		snprintf(ckgame, sizeof(ckgame), "%s", pm->game);
		o.game = ckgame;
	}
	if (az_config_defaults(&gc, o.game) < 0) {
		fprintf(stderr, "azeval: unknown game '%s' (known: %s)\n", o.game, az_game_names());
		az_model_destroy(pm);
		return 2;
	}
	if (pm && strcmp(gc.game, "tangled") == 0 && strcmp(pm->game, "tangled") == 0 &&
	    az_config_apply_game_options(&gc, pm->game_options, gerr, sizeof(gerr)) < 0) {
		fprintf(stderr, "azeval: %s: %s\n", o.ckpt, gerr);
		az_model_destroy(pm);
		return 2;
	}
	az_model_destroy(pm);
	if (set_tangled_opts(&gc, &o, gerr, sizeof(gerr)) < 0 ||
	    az_config_game(&gc, &g, gerr, sizeof(gerr)) < 0) {
		fprintf(stderr, "azeval: %s\n", gerr);
		return 2;
	}
	int tangled = strcmp(g->name, "tangled") == 0;
	if ((o.mistakes || o.labels) && strcmp(g->name, "connect4") != 0 && !tangled) {
		fprintf(stderr, "azeval: --mistakes and --labels need --game connect4 or tangled (the "
			"built-in solvers); for tictactoe use --write-labelled\n");
		return 2;
	}
	if (o.tactic && strcmp(g->name, "connect4") != 0) {
		fprintf(stderr, "azeval: --tactic needs --game connect4\n");
		return 2;
	}
	if (o.uncoloured >= 0 && (!tangled || !o.labelled)) {
		fprintf(stderr, "azeval: --uncoloured K goes with --game tangled --write-labelled "
			"FILE\n");
		return 2;
	}
	if (tangled && o.uncoloured > az_tangled_current_graph()->e) {
		fprintf(stderr, "azeval: --uncoloured: at most %d (the edges of %s), not %ld\n",
			az_tangled_current_graph()->e, az_tangled_current_graph()->name,
			o.uncoloured);
		return 2;
	}
	if (o.vs_sims >= 0 && (!o.vs || strcmp(o.vs, "rollout") != 0)) {
		fprintf(stderr, "azeval: --vs-sims N goes with --vs rollout\n");
		return 2;
	}
	if (o.labels && !o.mistakes) { /* it was ignored */
		fprintf(stderr, "azeval: --labels F goes with --mistakes (where its labels are "
			"cached)\n");
		return 2;
	}
	if (o.mistakes && !o.positions) {
		fprintf(stderr, "azeval: --mistakes goes with --positions FILE (%s)\n",
			o.vs ? "drop --vs, which plays games" : "the positions to judge");
		return 2;
	}
	if (o.tactic && !o.labelled) {
		fprintf(stderr, "azeval: --tactic goes with --write-labelled FILE\n");
		return 2;
	}
	if (o.labelled && o.tactic)
		return write_tactics(&o, o.labelled);
	if (o.labelled && o.uncoloured < 0)
		return write_labelled(g, o.labelled);
	if (o.labelled && !o.ckpt)
		return azeval_tangled_labelled(&o, NULL);
	if (!o.labelled && (!o.ckpt || (!o.positions && !o.vs))) {
		fprintf(stderr, "azeval: %s (see --help)\n", o.ckpt ?
			"what to measure: --positions FILE or --vs random|rollout" :
			"--checkpoint FILE is required");
		return 2;
	}
	openblas_set_num_threads(1);
	struct az_model *m;
	if ((rc = load_network(&o, g, &m)) != 0)
		return rc;
	static struct eval_ctx c;
	struct az_backend *be = NULL;
	char err[512];
	c.g = g;
	rc = az_backend_create(o.kind, &m->arch, 1, &be, err, sizeof(err));
	if (rc == 0)
		rc = az_backend_load(be, 0, m);
	if (rc == 0 && (rc = az_net_eval_init(&c.net, g, be)) < 0)
		snprintf(err, sizeof(err), "out of memory");
	az_model_destroy(m);
	if (rc < 0) {
		fprintf(stderr, "azeval: backend: %s\n", err);
		if (be)
			az_backend_destroy(be);
		return rc == -ENODEV ? 2 : 1;
	}
	if (o.labelled) {
		rc = azeval_tangled_labelled(&o, &c);
		az_net_eval_fini(&c.net);
		az_backend_destroy(be);
		return rc;
	}
	struct tally t = {.draw_band = o.draw_band};
	struct az_mcts_params mp;
	az_mcts_params_default(&mp, g);
	mp.c_puct = o.c_puct;
	mp.dir_eps = 0;
	mp.solver = o.solver;
	mp.fpu_absolute = o.fpu_reduction < 0;
	mp.fpu_reduction = mp.fpu_absolute ? 0.0f : o.fpu_reduction;
	mp.search = o.sp.search; /* Gumbel agents search without noise, as PUCT's */
	mp.gumbel_m = o.sp.gumbel_m;
	mp.c_scale = o.sp.c_scale;
	if (o.vs) {
		uint32_t vs_sims = (uint32_t)(o.vs_sims > 0 ? o.vs_sims : o.sims);
		rc = run_matches(&c, &mp, o.vs, o.games, (uint32_t)o.sims, vs_sims, o.seed, o.json);
		az_net_eval_fini(&c.net);
		az_backend_destroy(be);
		return rc < 0 ? 1 : 0;
	}
	if (o.mistakes && tangled) {
		char key[600];
		azeval_tangled_key(&gc, key, sizeof(key));
		rc = azeval_tangled_mistakes(&c, &o, &mp, key);
		az_net_eval_fini(&c.net);
		az_backend_destroy(be);
		return rc;
	}
	if (o.mistakes) {
		rc = eval_mistakes(&c, &o, &mp);
		az_net_eval_fini(&c.net);
		az_backend_destroy(be);
		return rc;
	}
	rc = eval_file(&c, o.positions, (uint32_t)o.sims, &mp, o.limit, &t);
	az_net_eval_fini(&c.net);
	az_backend_destroy(be);
	if (rc < 0)
		return rc == -EINVAL || rc == -ENOENT ? 2 : 1;
	if (o.json) {
		printf("{\"positions\": %ld, \"value_scored\": %ld, ", t.positions,
		       t.values_labelled);
		print_share("move_accuracy", t.moves_ok, t.moves_labelled, 1, 0);
		print_share("value_sign_accuracy", t.values_ok, t.values_labelled, 1, 0);
		print_share("decisive_sign_accuracy", t.decisive_ok, t.decisive, 1, 0);
		printf("\"sims\": %ld}\n", o.sims);
	} else {
		if (t.moves_labelled)
			printf("%s: %ld positions, %ld simulations per move\n", o.positions,
			       t.positions, o.sims);
		else
			printf("%s: %ld positions (value labels only: no search)\n", o.positions,
			       t.positions);
		print_share("move_accuracy", t.moves_ok, t.moves_labelled, 0, 0);
		print_share("value_sign_accuracy", t.values_ok, t.values_labelled, 0, 0);
		print_share("decisive_sign_accuracy", t.decisive_ok, t.decisive, 0, 1);
	}
	return 0;
}
