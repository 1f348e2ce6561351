/* SPDX-License-Identifier: MIT */
/* azplay: play a checkpoint in the terminal. Human against the agent (either colour), or the
 * agent against itself, a uniformly random player or plain Monte Carlo search with random
 * playouts. Moves are read from standard input in the game's notation, so games can be scripted. */
#include <cblas.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "games/game.h"
#include "games/tangled/tangled.h"
#include "gpu/backend.h"
#include "net/checkpoint.h"
#include "mcts/mcts.h"
#include "base/rng.h"
#include "base/util.h"
#include "base/version.h"
#include "base/az_assert.h"
#include "tools/config.h"
#include "tools/options.h"
#include "eval/net_eval.h"
#include "eval/net_open.h"
#include "eval/rollout.h"
#include "help_text.h" /* generated from tools/help/ */

#define TOP_MOVES 5

enum kind { K_HUMAN, K_AGENT, K_RANDOM, K_ROLLOUT };

static const char *const kind_names[] = {"human", "agent", "random", "rollout"};

struct player {
	enum kind kind;
	struct az_tree *tree;  /* agent and rollout: a search tree kept across moves */
	az_eval_fn eval;
	void *eval_ctx;
	struct az_rollout rollout;
};

struct opts {
	const char *game, *ckpt;
	const char *human_arg, *opponent_arg, *variant; /* as given (NULL: not given) */
	int human;      /* side the human plays: 0 first, 1 second, -1 none */
	enum kind opponent;
	uint32_t sims, games;
	float temperature, c_puct;
	struct az_mcts_params sp; /* --search, --gumbel-m, --gumbel-scale (those fields only) */
	uint64_t seed;
	enum az_backend_kind backend;
	int graph;      /* Tangled: numbered graph, 0 = the default */
	int fixed;      /* Tangled: fixed-token variant */
};

struct play {
	const struct az_game *g;
	struct opts o;
	struct az_opened_net net; /* the agent's network and evaluator (eval/net_open.h) */
	struct player pl[2];  /* indexed by seat; seat 0 is the agent, seat 1 its opponent */
	int agent_side;       /* the side (0 first, 1 second) the agent's seat plays this game */
	struct az_rng rng;    /* the random player's moves */
	int tty;
};

enum { MOVE_QUIT = -1000, MOVE_EOF = -1001 };

static const char *who(const struct play *p, int side)
{
	int seat = side == p->agent_side ? 0 : 1;
	return kind_names[p->pl[seat].kind];
}

/* Every option of azplay, in --help's order (tools/options.h). */
#define O(field) offsetof(struct opts, field)
/* Not const: parse_args() names the registered games in --game's help. */
static struct az_opt play_opt[] = {
	{"checkpoint", AZ_OPT_STR, O(ckpt), "FILE", 0, 0, NULL,
	 "safetensors checkpoint (e.g. RUN/best.safetensors)", NULL, NULL, NULL},
	{"game", AZ_OPT_STR, O(game), "NAME", 0, 0, NULL,
	 NULL /* "the game: tictactoe | ...", from the registry */, NULL, NULL, NULL},
	{"human", AZ_OPT_CHOICE, O(human_arg), "SIDE", 0, 0, NULL, "the side you play (default "
	 "first, or none when --opponent is given)", "first|second|none", NULL, NULL},
	{"opponent", AZ_OPT_CHOICE, O(opponent_arg), "KIND", 0, 0, NULL, "with --human none, "
	 "the agent plays: agent (itself), random (uniform legal moves) or rollout (MCTS with "
	 "random playouts and uniform priors, same --sims) (default agent)",
	 "agent|random|rollout", NULL, NULL},
	{"sims", AZ_OPT_U32, O(sims), "N", 2, 1000000, "200", "simulations per agent move",
	 NULL, NULL, NULL},
	{"temperature", AZ_OPT_F32, O(temperature), "T", 0, 1e6, "0", "agent move choice: 0 = "
	 "most visited, > 0 samples visits^(1/T)", NULL, NULL, NULL},
	{"games", AZ_OPT_U32, O(games), "N", 1, 1000000, "1", "games to play; without a human "
	 "the agent alternates colours, first in game 1", NULL, NULL, NULL},
	{"seed", AZ_OPT_U64, O(seed), "S", 0, 0, "1", "random seed", NULL, NULL, NULL},
	{"c-puct", AZ_OPT_F32, O(c_puct), "C", 0, 1e6, "1.5", "PUCT constant", NULL, NULL, NULL},
	AZ_SEARCH_OPTS(O),
	{"backend", AZ_OPT_PARSE, O(backend), "B", 0, 0, "auto", "inference backend (auto: "
	 "cuda when visible)", AZ_OPTS_BACKENDS, NULL, az_opts_backend},
	{"graph", AZ_OPT_INT, O(graph), "N", 0, 0, NULL, "tangled: numbered graph "
	 "(docs/tangled.md; default: the checkpoint's, else 3, K4)", NULL, &az_game_desc_tangled,
	 NULL},
	{"variant", AZ_OPT_CHOICE, O(variant), "V", 0, 0, NULL, "tangled: free | fixed tokens "
	 "(default: the checkpoint's, else free)", "free|fixed", NULL, NULL},
};
#undef O

static const struct az_opts play_opts = {
	.tool = "azplay", .opt = play_opt, .n = AZ_ARRAY_LEN(play_opt), .help = az_help_azplay,
	.version = 1};

/* Returns 0, 1 after --help, or -EINVAL (message printed). */
static int parse_args(struct opts *o, int argc, char **argv)
{
	*o = (struct opts){0};
	az_config_game_opt_help(play_opt, AZ_ARRAY_LEN(play_opt), "the checkpoint's game");
	int rc = az_opts_parse(&play_opts, o, argc, argv, NULL);
	if (rc != 0)
		return rc > 0 ? 1 : rc;
	o->opponent = K_AGENT;
	for (int k = K_AGENT; o->opponent_arg && k <= K_ROLLOUT; k++)
		if (strcmp(o->opponent_arg, kind_names[k]) == 0)
			o->opponent = (enum kind)k;
	o->fixed = o->variant && strcmp(o->variant, "fixed") == 0;
	o->human = !o->human_arg ? (o->opponent_arg ? -1 : 0)
		   : strcmp(o->human_arg, "first") == 0 ? 0
		   : strcmp(o->human_arg, "second") == 0 ? 1 : -1;
	if (!o->ckpt) {
		fprintf(stderr, "azplay: --checkpoint FILE is required (see --help)\n");
		return -EINVAL;
	}
	if (o->human >= 0 && o->opponent_arg) {
		fprintf(stderr, "azplay: --opponent chooses the agent's opponent when there is no "
			"human player; add --human none\n");
		return -EINVAL;
	}
	return 0;
}

/* Tangled is configured at run time (graph, variant); az_game_find() knows it only after this. */
static int setup_tangled(const struct opts *o, const char *recorded)
{
	struct az_config c;
	const struct az_game *g;
	char err[AZ_ERR_LEN];
	az_config_defaults(&c, "tangled");
	/* The graph and variant the checkpoint was trained on, unless given here. */
	int rc = az_config_apply_game_options(&c, recorded, err, sizeof(err));
	if (rc == 0 && o->graph) {
		char v[16];
		snprintf(v, sizeof(v), "%d", o->graph);
		rc = az_config_set(&c, "graph", v, err, sizeof(err));
	}
	if (rc == 0 && o->fixed)
		rc = az_config_set(&c, "variant", "fixed", err, sizeof(err));
	c.seed = o->seed;
	if (rc == 0)
		rc = az_config_game(&c, &g, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "azplay: %s\n", err);
	return rc;
}

/* The game of the checkpoint (--game, else the one it records; Tangled configured with the graph
 * and variant it records unless given here) into p->g. Returns 0, or 2 (exit code) after a
 * message. */
static int resolve_game(struct play *p, char *ckpt_game, size_t len)
{
	char err[AZ_ERR_LEN];
	struct az_model *m;
	if (az_ckpt_load(p->o.ckpt, &m, err, sizeof(err)) < 0) {
		fprintf(stderr, "azplay: %s\n", err);
		return 2; /* a missing or damaged file is bad input */
	}
	snprintf(ckpt_game, len, "%s", m->game);
	const char *name = p->o.game ? p->o.game : ckpt_game; /* the copy: m is freed below */
	int rc = strcmp(name, "tangled") == 0 ? setup_tangled(&p->o, m->game_options) : 0;
	az_model_destroy(m);
	if (rc < 0)
		return 2;
	p->g = az_game_find(name);
	if (!p->g) {
		fprintf(stderr, "azplay: unknown game '%s' (known: %s)\n", name, az_game_names());
		return 2;
	}
	return 0;
}

/* Resolve the game, then open the checkpoint as a network of it on a batch-1 backend. Returns 0,
 * or 1 / 2 (exit code) after a message. */
static int load_net(struct play *p)
{
	char ckpt_game[32], err[512];
	int rc = resolve_game(p, ckpt_game, sizeof(ckpt_game));
	if (rc != 0)
		return rc;
	struct az_net_open_args a = {.ckpt = p->o.ckpt, .game = p->g, .backend = p->o.backend,
				     .batch = 1};
	rc = az_net_open(&a, &p->net, err, sizeof(err));
	if (rc == 0)
		return 0;
	char hint[64] = ""; /* a network of another game, or of another shape of this one */
	if (rc == -EPROTO && strcmp(ckpt_game, p->g->name) != 0)
		snprintf(hint, sizeof(hint), " (use --game %s)", ckpt_game);
	else if (rc == -EPROTO)
		snprintf(hint, sizeof(hint), " (another --graph or --variant?)");
	fprintf(stderr, "azplay: %s%s\n", err, hint);
	return rc == -ENOMEM ? 1 : 2; /* else bad input: the file, its game, the backend asked for */
}

/* Seat 0 is the agent; seat 1 the human, a second agent, random or rollout. */
static int make_players(struct play *p)
{
	uint8_t st[AZ_GAME_STATE_MAX];
	struct az_mcts_params mp;
	az_mcts_params_default(&mp, p->g);
	mp.c_puct = p->o.c_puct;
	mp.dir_eps = 0; /* no exploration noise when playing for real */
	mp.search = p->o.sp.search; /* Gumbel: noise-free too (the trees' noise stays off) */
	mp.gumbel_m = p->o.sp.gumbel_m;
	mp.c_scale = p->o.sp.c_scale;
	p->g->init(st);
	p->pl[0].kind = K_AGENT;
	p->pl[1].kind = p->o.human >= 0 ? K_HUMAN : p->o.opponent;
	for (int s = 0; s < 2; s++) {
		struct player *pl = &p->pl[s];
		if (pl->kind == K_AGENT) {
			pl->eval = az_net_eval;
			pl->eval_ctx = &p->net.eval;
		} else if (pl->kind == K_ROLLOUT) {
			az_rollout_init(&pl->rollout, p->g, p->o.seed * 2 + 1);
			pl->eval = az_rollout_eval;
			pl->eval_ctx = &pl->rollout;
		} else {
			continue;
		}
		mp.seed = p->o.seed * 4 + (uint64_t)s;
		int rc = az_tree_create(p->g, &mp, st, &pl->tree);
		if (rc < 0) {
			fprintf(stderr, "azplay: cannot create a search tree: %s\n", strerror(-rc));
			return rc;
		}
	}
	az_rng_seed(&p->rng, p->o.seed * 4 + 3);
	return 0;
}

static void list_legal(const struct play *p, const void *st, char *buf, size_t len)
{
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	size_t n = 0;
	buf[0] = 0;
	p->g->legal(st, mask);
	for (uint32_t a = 0; a < p->g->actions && n + 20 < len; a++) {
		char mv[16];
		if (!mask[a] || p->g->format_action((int)a, mv, sizeof(mv)) <= 0)
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " " : "", mv);
	}
}

static char *trim(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = 0;
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Read the human's move; MOVE_QUIT / MOVE_EOF end the game. Illegal input is refused with the
 * reason and the list of legal moves, and asked again. */
static int human_move(struct play *p, const void *st, int side)
{
	char legal[1024], line[256];
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	list_legal(p, st, legal, sizeof(legal));
	p->g->legal(st, mask);
	for (;;) {
		printf("your move as %s (legal: %s; 'quit' to stop): ", az_game_side_name(p->g, side),
		       legal);
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin)) {
			printf("\n");
			return MOVE_EOF;
		}
		if (!strchr(line, '\n') && !feof(stdin)) { /* overlong line: drop the rest */
			int ch;
			while ((ch = getchar()) != EOF && ch != '\n')
				;
			printf("\nillegal move: line too long\n");
			continue;
		}
		char *t = trim(line);
		if (!p->tty)
			printf("%s\n", t); /* echo, so a scripted transcript reads like a session */
		if (!*t)
			continue;
		if (!strcmp(t, "quit") || !strcmp(t, "q") || !strcmp(t, "exit"))
			return MOVE_QUIT;
		int a = p->g->parse_action(st, t);
		if (a >= 0 && (uint32_t)a < p->g->actions && mask[a])
			return a;
		printf("illegal move '%s': %s; legal moves: %s\n", t,
		       az_game_in_notation(p->g, t) ? "not legal in this position" :
					      "not a move in this game's notation",
		       legal);
	}
}

/* Search, print the top moves with their visit shares and the value, and pick a move. */
static int search_move(struct play *p, struct player *pl, int side)
{
	const struct az_game *g = p->g;
	float pi[AZ_GAME_ACTIONS_MAX];
	int rc = az_mcts_search(pl->tree, p->o.sims, pl->eval, pl->eval_ctx);
	if (rc < 0) {
		fprintf(stderr, "azplay: search failed: %s\n", strerror(-rc));
		return rc;
	}
	az_tree_policy_target(pl->tree, pi); /* visit shares, or Gumbel's improved policy */
	printf("%s (%s): value %+.2f, top moves:", kind_names[pl->kind], az_game_side_name(g, side),
	       (double)az_tree_root_value(pl->tree));
	uint8_t shown[AZ_GAME_ACTIONS_MAX] = {0};
	for (int k = 0; k < TOP_MOVES; k++) {
		int best = -1;
		for (uint32_t a = 0; a < g->actions; a++)
			if (!shown[a] && pi[a] > 0 && (best < 0 || pi[a] > pi[best]))
				best = (int)a;
		if (best < 0)
			break;
		char mv[16];
		shown[best] = 1;
		g->format_action(best, mv, sizeof(mv));
		printf(" %s %.0f%%", mv, 100.0 * (double)pi[best]);
	}
	printf("\n");
	float temp = pl->kind == K_AGENT ? p->o.temperature : 0.0f;
	int a = az_tree_pick(pl->tree, temp, NULL);
	if (a < 0)
		fprintf(stderr, "azplay: the search chose no move: %s\n", strerror(-a));
	return a;
}

static int random_move(struct play *p, const void *st)
{
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	int n = p->g->legal(st, mask);
	if (n <= 0)
		return -EINVAL;
	uint32_t k = az_rng_below(&p->rng, (uint32_t)n);
	for (uint32_t a = 0; a < p->g->actions; a++)
		if (mask[a] && k-- == 0)
			return (int)a;
	return -EINVAL;
}

static int choose(struct play *p, const void *st, int side)
{
	struct player *pl = &p->pl[side == p->agent_side ? 0 : 1];
	switch (pl->kind) {
	case K_HUMAN: return human_move(p, st, side);
	case K_RANDOM: return random_move(p, st);
	default: return search_move(p, pl, side);
	}
}

/* The board as the game formats it; for a game whose actions are its cells, row-major as the
 * planes of its encoding (tic-tac-toe), each of the first height rows followed by its cells'
 * notation, a key to the moves ("X . .    1 2 3"). Connect Four's board numbers its columns
 * itself. */
static void print_board(const struct az_game *g, const void *st)
{
	char board[4096], mv[16];
	int keyed = g->height && g->width && g->height * g->width == g->actions;
	const char *line = board;

	g->format(st, board, sizeof(board));
	for (uint32_t y = 0; *line; y++) {
		const char *nl = strchr(line, '\n');
		int n = nl ? (int)(nl - line) : (int)strlen(line);

		printf("%.*s", n, line);
		for (uint32_t x = 0; keyed && y < g->height && x < g->width; x++) {
			g->format_action((int)(y * g->width + x), mv, sizeof(mv));
			printf("%s%s", x ? " " : "    ", mv);
		}
		printf("\n");
		if (!nl)
			break;
		line = nl + 1;
	}
}

/* Play one game. Returns 0 with *outcome +1/-1/0 for an agent win/loss/draw or 2 when the game
 * was abandoned (quit or end of input), or a negative errno (search failure). */
static int play_game(struct play *p, int *outcome)
{
	const struct az_game *g = p->g;
	uint8_t st[AZ_GAME_STATE_MAX];
	float v;
	g->init(st);
	for (int s = 0; s < 2; s++)
		if (p->pl[s].tree)
			az_tree_reset(p->pl[s].tree, st);
	printf("%s (%s) vs %s (%s)\n", who(p, 0), az_game_side_name(g, 0), who(p, 1),
	       az_game_side_name(g, 1));
	print_board(g, st);
	while (!g->terminal(st, &v)) {
		int side = g->to_move(st);
		int a = choose(p, st, side);
		if (a == MOVE_QUIT || a == MOVE_EOF) {
			printf("result: abandoned (%s)\n",
			       a == MOVE_QUIT ? "quit" : "end of input");
			*outcome = 2;
			return 0;
		}
		if (a < 0)
			return a;
		char mv[16];
		g->format_action(a, mv, sizeof(mv));
		printf("%s (%s) plays %s\n", who(p, side), az_game_side_name(g, side), mv);
		g->apply(st, a);
		for (int s = 0; s < 2; s++) /* tree reuse; an unknown child starts afresh */
			if (p->pl[s].tree && az_tree_advance(p->pl[s].tree, a) < 0)
				az_tree_reset(p->pl[s].tree, st);
		print_board(g, st);
	}
	int mover = g->to_move(st);
	if (v == 0) {
		printf("result: draw\n");
		*outcome = 0;
		return 0;
	}
	int winner = v > 0 ? mover : 1 - mover;
	printf("result: %s wins (%s)\n", az_game_side_name(g, winner), who(p, winner));
	*outcome = winner == p->agent_side ? 1 : -1;
	return 0;
}

static int play_all(struct play *p)
{
	uint32_t wins = 0, draws = 0, losses = 0, played = 0;
	char wdl[96];
	for (uint32_t i = 0; i < p->o.games; i++) {
		if (p->o.games > 1)
			printf("\ngame %u of %u\n", i + 1, p->o.games);
		/* With a human, the human keeps the chosen side; otherwise the agent alternates. */
		p->agent_side = p->o.human >= 0 ? 1 - p->o.human : (int)(i & 1);
		int r;
		if (play_game(p, &r) < 0)
			return 1;
		if (r == 2)
			break;
		played++;
		wins += r == 1;
		draws += r == 0;
		losses += r == -1;
	}
	if (p->o.games > 1 && played)
		printf("summary: agent %s against %s in %u games (score %.3f)\n",
		       az_format_wdl(wins, draws, losses, wdl, sizeof(wdl)),
		       kind_names[p->pl[1].kind], played, ((double)wins + 0.5 * draws) / played);
	return 0;
}

int main(int argc, char **argv)
{
	static struct play p;
	if (az_version_option(argc, argv, "azplay"))
		return 0;
	int rc = parse_args(&p.o, argc, argv);
	if (rc != 0)
		return rc > 0 ? 0 : 2;
	openblas_set_num_threads(1);
	p.tty = isatty(STDIN_FILENO);
	rc = load_net(&p);
	if (rc == 0)
		rc = make_players(&p) < 0 ? 1 : 0;
	if (rc == 0)
		rc = play_all(&p);
	for (int s = 0; s < 2; s++)
		if (p.pl[s].tree)
			az_tree_destroy(p.pl[s].tree);
	az_net_close(&p.net);
	return rc;
}
