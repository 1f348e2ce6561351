/* SPDX-License-Identifier: MIT */
/* azplay: play a checkpoint in the terminal. Human against the agent (either colour), or the
 * agent against itself, a uniformly random player or plain Monte Carlo search with random
 * playouts. Moves are read from standard input in the game's notation, so games can be scripted. */
#include <cblas.h>
#include <errno.h>
#include <getopt.h>
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
#include "base/version.h"
#include "tools/config.h"
#include "eval/net_eval.h"
#include "eval/rollout.h"

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
	int human;      /* side the human plays: 0 first, 1 second, -1 none */
	int human_set;
	enum kind opponent;
	int opponent_set;
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
	struct az_net_eval net; /* the agent's evaluator (eval/net_eval.h) */
	struct az_backend *be;
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

static void usage(const char *prog)
{
	printf("Usage: %s --checkpoint FILE [--game G] [--human first|second|none]\n"
	       "       [--opponent agent|random|rollout] [--sims N] [--temperature T]\n"
	       "       [--games N] [--seed S]\n\n"
	       "Plays a trained network (searching with MCTS) in the terminal. Moves are read\n"
	       "one per line from standard input in the game's notation (tic-tac-toe cells 1-9,\n"
	       "Connect Four columns 1-7); 'quit' or end of input stops. Each game ends with a\n"
	       "line 'result: ...'.\n\n"
	       "Options:\n"
	       "  --checkpoint FILE   safetensors checkpoint (e.g. RUN/best.safetensors)\n"
	       "  --game NAME         %s (default: the checkpoint's game)\n"
	       "  --human SIDE        first | second | none: the side you play (default first,\n"
	       "                      or none when --opponent is given)\n"
	       "  --opponent KIND     with --human none, the agent plays: agent (itself), random\n"
	       "                      (uniform legal moves) or rollout (MCTS with random playouts\n"
	       "                      and uniform priors, same --sims) (default agent)\n"
	       "  --sims N            simulations per agent move, >= 2 (default 200)\n"
	       "  --temperature T     agent move choice: 0 = most visited (default), > 0 samples\n"
	       "                      visits^(1/T)\n"
	       "  --games N           games to play; without a human the agent alternates\n"
	       "                      colours, first in game 1 (default 1)\n"
	       "  --seed S            random seed (default 1)\n"
	       "  --c-puct C          PUCT constant (default 1.5)\n"
	       AZ_MATCH_SEARCH_HELP
	       "  --backend B         auto | cpu | cpu-async | cuda (default auto: cuda when visible)\n"
	       "  --graph N           tangled: numbered graph (docs/tangled.md; default: the\n"
	       "                      checkpoint's, else 3, K4)\n"
	       "  --variant V         tangled: free | fixed tokens (default free)\n"
	       "  --version           print the version and exit\n\n"
	       "Examples:\n"
	       "  %s --checkpoint runs/ttt/best.safetensors\n"
	       "  %s --checkpoint runs/ttt/best.safetensors --human none --opponent rollout "
	       "--games 10\n"
	       "  printf '5\\n1\\n9\\n' | %s --checkpoint runs/ttt/best.safetensors\n",
	       prog, az_game_names(), prog, prog, prog);
}

static int parse_u32(const char *opt, const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || x < lo || x > hi) {
		fprintf(stderr, "azplay: --%s: expected %u..%u, got '%s'\n", opt, lo, hi, v);
		return -EINVAL;
	}
	*out = (uint32_t)x;
	return 0;
}

static int parse_float(const char *opt, const char *v, float lo, float *out)
{
	char *end;
	float x = strtof(v, &end);
	if (end == v || *end || !(x >= lo)) {
		fprintf(stderr, "azplay: --%s: expected a number >= %g, got '%s'\n", opt,
			(double)lo, v);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

static int parse_kind(const char *v, enum kind *k)
{
	for (int i = K_AGENT; i <= K_ROLLOUT; i++) {
		if (strcmp(v, kind_names[i]) == 0) {
			*k = (enum kind)i;
			return 0;
		}
	}
	fprintf(stderr, "azplay: --opponent: agent, random or rollout, not '%s'\n", v);
	return -EINVAL;
}

/* Returns 0, 1 after --help, or -EINVAL (message printed). */
static int parse_args(struct opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		AZ_MATCH_LONGOPTS,
		{"human", required_argument, 0, 'H'},
		{"opponent", required_argument, 0, 'o'},
		{"temperature", required_argument, 0, 't'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	uint32_t graph = 0;
	*o = (struct opts){.human = 0, .opponent = K_AGENT, .sims = 200, .games = 1,
			   .c_puct = 1.5f, .seed = 1, .backend = AZ_BACKEND_AUTO};
	az_mcts_params_default(&o->sp, NULL);
	int c, rc = 0;
	while (rc == 0 && (c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'g': o->game = optarg; break;
		case 'c': o->ckpt = optarg; break;
		case 'H':
			o->human_set = 1;
			if (!strcmp(optarg, "first") || !strcmp(optarg, "second") ||
			    !strcmp(optarg, "none")) {
				o->human = !strcmp(optarg, "first") ? 0 :
					   !strcmp(optarg, "second") ? 1 : -1;
			} else {
				fprintf(stderr, "azplay: --human: first, second or none\n");
				rc = -EINVAL;
			}
			break;
		case 'o': o->opponent_set = 1; rc = parse_kind(optarg, &o->opponent); break;
		case 's': rc = parse_u32("sims", optarg, 2, 1000000, &o->sims); break;
		case 'n': rc = parse_u32("games", optarg, 1, 1000000, &o->games); break;
		case 't': rc = parse_float("temperature", optarg, 0.0f, &o->temperature); break;
		case 'u': rc = parse_float("c-puct", optarg, 0.0f, &o->c_puct); break;
		case 'S': {
			char *end;
			errno = 0;
			o->seed = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end) {
				fprintf(stderr, "azplay: --seed: expected an integer\n");
				rc = -EINVAL;
			}
			break;
		}
		case 'b':
			if (az_backend_parse(optarg, &o->backend) < 0) {
				fprintf(stderr, "azplay: --backend: auto, cpu, cpu-async or cuda\n");
				rc = -EINVAL;
			}
			break;
		case 'G': {
			const struct az_game_opt *go = &az_game_desc_tangled.opts[AZ_TANGLED_OPT_GRAPH];
			rc = parse_u32("graph", optarg, (uint32_t)go->lo, (uint32_t)go->hi, &graph);
			break;
		}
		case 'V': {
			enum az_tangled_variant var = AZ_TANGLED_FREE;
			if (az_tangled_variant_parse(optarg, &var) < 0) {
				fprintf(stderr, "azplay: --variant: free or fixed\n");
				rc = -EINVAL;
			}
			o->fixed = var == AZ_TANGLED_FIXED;
			break;
		}
		case 'Q':
		case 'Y':
		case 'Z': rc = az_match_search_arg("azplay", c, optarg, &o->sp); break;
		case 'h': usage("azplay"); return 1;
		default: fprintf(stderr, "azplay: see --help\n"); return -EINVAL;
		}
	}
	if (rc < 0)
		return rc;
	o->graph = (int)graph;
	if (optind < argc) {
		fprintf(stderr, "azplay: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -EINVAL;
	}
	if (!o->ckpt) {
		fprintf(stderr, "azplay: --checkpoint FILE is required (see --help)\n");
		return -EINVAL;
	}
	if (!o->human_set && o->opponent_set)
		o->human = -1;
	if (o->human >= 0 && o->opponent_set) {
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
	char err[512];
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
		fprintf(stderr, "azplay: tangled: %s\n", err);
	return rc;
}

/* Load the checkpoint into a backend and resolve the game. Returns 0, or 1 / 2 (exit code). */
static int load_net(struct play *p)
{
	char err[512];
	struct az_model *m;
	if (az_ckpt_load(p->o.ckpt, &m, err, sizeof(err)) < 0) {
		fprintf(stderr, "azplay: %s\n", err);
		return 2; /* a missing or damaged file is bad input */
	}
	const char *name = p->o.game ? p->o.game : m->game;
	if (strcmp(name, "tangled") == 0 && setup_tangled(&p->o, m->game_options) < 0) {
		az_model_destroy(m);
		return 2;
	}
	p->g = az_game_find(name);
	if (!p->g) {
		fprintf(stderr, "azplay: unknown game '%s' (known: %s)\n", name, az_game_names());
		az_model_destroy(m);
		return 2;
	}
	if (strcmp(m->game, p->g->name) != 0) {
		fprintf(stderr, "azplay: %s is a %s network, not %s (use --game %s)\n", p->o.ckpt,
			m->game, p->g->name, m->game);
		az_model_destroy(m);
		return 2;
	}
	if (m->arch.inputs != p->g->features || m->arch.actions != p->g->actions) {
		fprintf(stderr, "azplay: %s has %u inputs and %u actions, but this %s has %u "
			"and %u (another --graph or --variant?)\n", p->o.ckpt, m->arch.inputs,
			m->arch.actions, p->g->name, p->g->features, p->g->actions);
		az_model_destroy(m);
		return 2;
	}
	int rc = az_backend_create(p->o.backend, &m->arch, 1, &p->be, err, sizeof(err));
	if (rc == 0)
		rc = az_backend_load(p->be, 0, m);
	if (rc == 0 && (rc = az_net_eval_init(&p->net, p->g, p->be)) < 0)
		snprintf(err, sizeof(err), "out of memory");
	az_model_destroy(m);
	if (rc < 0) {
		fprintf(stderr, "azplay: backend: %s\n", err);
		return rc == -ENODEV ? 2 : 1;
	}
	return 0;
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
			pl->eval_ctx = &p->net;
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

/* Play one game. Returns 0 with *outcome +1/-1/0 for an agent win/loss/draw or 2 when the game
 * was abandoned (quit or end of input), or a negative errno (search failure). */
static int play_game(struct play *p, int *outcome)
{
	const struct az_game *g = p->g;
	uint8_t st[AZ_GAME_STATE_MAX];
	char board[4096];
	float v;
	g->init(st);
	for (int s = 0; s < 2; s++)
		if (p->pl[s].tree)
			az_tree_reset(p->pl[s].tree, st);
	printf("%s (%s) vs %s (%s)\n", who(p, 0), az_game_side_name(g, 0), who(p, 1),
	       az_game_side_name(g, 1));
	g->format(st, board, sizeof(board));
	fputs(board, stdout);
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
		g->format(st, board, sizeof(board));
		fputs(board, stdout);
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
		printf("summary: agent %u wins, %u draws, %u losses against %s in %u games "
		       "(score %.3f)\n", wins, draws, losses, kind_names[p->pl[1].kind], played,
		       ((double)wins + 0.5 * draws) / played);
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
	az_net_eval_fini(&p.net);
	if (p.be)
		az_backend_destroy(p.be);
	return rc;
}
