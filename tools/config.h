/* SPDX-License-Identifier: MIT */
/* The effective configuration of one azrun run: defaults per game, command-line parsing, and the
 * run.json copy kept in the run directory (what --resume reuses). */
#ifndef AZ_TOOLS_CONFIG_H
#define AZ_TOOLS_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "games/game.h"
#include "gpu/backend.h"

struct az_config {
	char game[32];
	char out[512];
	uint32_t iterations;
	uint32_t workers;          /* self-play worker processes */
	uint32_t games_per_worker; /* G: games each worker keeps in flight */
	uint32_t games_per_iter;
	uint32_t sims;             /* simulations per move */
	uint32_t leaves;           /* K: leaves in flight per game (virtual loss) */
	uint32_t arena_leaves;     /* arena K; 0: automatic (az_arena_leaves) */
	uint32_t tail_leaves;      /* self-play tail's cap on K; 0: automatic (az_tail_leaves) */
	uint64_t seed;
	enum az_backend_kind backend;
	/* search */
	float c_puct;
	float dir_alpha;
	float dir_eps;
	uint32_t mcts_solver;      /* 1: MCTS-Solver proofs (mcts/mcts.h), 0: off */
	float fpu_reduction;       /* first-play urgency below the parent's value; < 0: Q = 0 */
	uint32_t temp_plies;       /* tau = 1 for the first N plies, then greedy */
	char search[8];            /* "puct" | "gumbel" (mcts/mcts.h's enum az_search_kind) */
	uint32_t gumbel_m;         /* Gumbel: most root actions considered */
	float gumbel_scale;        /* Gumbel: c_scale of sigma(q) */
	/* training targets (Wu 2019, "Accelerating Self-Play Learning in Go"; all off by default) */
	float forced_playouts;     /* forced-playout k at self-play roots, target pruned; 0: off */
	float playout_cap_p;       /* share of moves with a full search, recorded; 1: all */
	uint32_t sims_fast;        /* sims of the other moves' fast searches; 0: sims / 4 */
	uint32_t random_opening;   /* self-play: up to R random plies before the search */
	float value_mix;           /* value target (1 - m) z + m q (q: root search value) */
	float explore;             /* self-play: probability of a random move instead of the search's */
	uint32_t sims_fresh;       /* 1: each move runs --sims new simulations (reuse on top) */
	/* arena */
	uint32_t arena_games;
	uint32_t arena_temp_plies; /* opening plies sampled at tau = 1 so arena games differ */
	float arena_threshold;     /* promote at score >= this */
	/* network and training */
	uint32_t net;              /* enum az_net_kind (net/model.h): mlp or resnet */
	uint32_t hidden, blocks;   /* MLP width or ResNet filters; residual blocks */
	uint32_t train_batch;
	float train_epochs;        /* passes over the replay window per iteration */
	uint32_t train_steps_max;
	uint32_t window;           /* replay window, in iterations */
	float lr, l2;
	/* rings and batching */
	uint32_t ring_capacity;
	uint32_t max_batch;
	uint32_t deadline_us;
	uint32_t spin;
	uint32_t eval_cache_mb;    /* the evaluation cache's size, MiB; 0: off */
	char eval_cache[8];        /* "worker": one per worker; "shared": one for all; "off" */
	char time_limit[16];       /* --time-limit DURATION ("" none): see az_parse_duration() */
	/* benchmark: Connect Four's Pons' sets in bench, or "auto" (Tangled's generated sets);
	 * "" off; every bench_every iterations, bench_positions positions per set
	 * (tools/run_bench.h) */
	char bench[512];
	uint32_t bench_every;
	uint32_t bench_positions;
	/* the options the registered games declare (Tangled: graph, graph-file, variant,
	 * adjudicator, epsilon), in registry order; see az_config_game_opt() */
	union az_game_opt_value game_opt[AZ_GAME_OPTS_MAX];
	int deterministic; /* --deterministic: lockstep workers, batches of 1 (see --help) */
	int resume;
	int quiet;
	int mpi;          /* --mpi: one run across the ranks of an MPI job (not saved) */
	char config[512]; /* --config FILE (not saved: run.json holds its effect) */
};

/* Fill defaults for `game` (NULL: tic-tac-toe). Returns 0 or -EINVAL for an unknown game. */
int az_config_defaults(struct az_config *c, const char *game);

/* Set option `name` (azrun's long option without "--", a game's option included) from text,
 * with the checks of the command line. Returns 0, or -EINVAL with a message in err. */
int az_config_set(struct az_config *c, const char *name, const char *value, char *err,
		  size_t errlen);

/* Parse azrun's command line into c (defaults for the chosen game first, then options).
 * Returns 0, 1 when --help was printed, or -EINVAL with a message in err. */
int az_config_parse(struct az_config *c, int argc, char **argv, char *err, size_t errlen);

/* Checks c as a whole (counts >= 1, caps, combinations, the network against the game,
 * --bench's folder; tools/config_check.c): 0, or -EINVAL with one line naming one option in
 * err[errlen]. az_config_parse() calls it; azbench checks its configurations with it too. */
int az_config_validate(const struct az_config *c, char *err, size_t errlen);

/* Resolve c->game to its game object, configuring Tangled (graph, variant, adjudicator) first.
 * Call once per process before az_game_find(c->game) is used, and before forking. Returns 0 or
 * -EINVAL / -ENOENT with a message in err. */
int az_config_game(const struct az_config *c, const struct az_game **g, char *err,
		   size_t errlen);

/* The game configuration a checkpoint records ("graph=3;variant=free" for Tangled, "" for the
 * other games), and its inverse: apply such a string to c (unknown keys ignored). */
void az_config_game_options(const struct az_config *c, char *buf, size_t n);
int az_config_apply_game_options(struct az_config *c, const char *text, char *err,
				 size_t errlen);

/* Bytes of the one shared evaluation cache azrun puts in the segment (az_pipeline_params'
 * eval_cache_shared_bytes): --eval-cache-mb with --eval-cache shared, otherwise 0. */
size_t az_config_eval_cache_shared_bytes(const struct az_config *c);

/* The process roles' parameters from c (run/roles.h). The game name points into c. */
struct az_worker_params;
struct az_trainer_proc_params;
void az_config_worker_params(const struct az_config *c, struct az_worker_params *wp);
void az_config_train_params(const struct az_config *c, struct az_trainer_proc_params *tp);

/* Print azrun's --help to stdout. */
void az_config_usage(const char *prog);

/* text on f in lines of at most width characters, broken at spaces (a longer word stays whole
 * up to width), each after a prefix: first before the first line, rest before the others. */
void az_usage_wrap(FILE *f, const char *first, const char *rest, size_t width, const char *text);

/* Save c as JSON to path (temp + rename). Returns 0 or -errno, message in err. */
int az_config_save(const struct az_config *c, const char *path, char *err, size_t errlen);

/* Load a run.json written by az_config_save into c. Returns 0 or -EINVAL/-ENOENT. */
int az_config_load(struct az_config *c, const char *path, char *err, size_t errlen);

/* The long options azplay and azeval share, for their getopt_long tables (<getopt.h>): each
 * returns the letter both tools' switches handle. */
#define AZ_MATCH_LONGOPTS                                                                \
	{"game", required_argument, 0, 'g'}, {"checkpoint", required_argument, 0, 'c'},     \
	{"sims", required_argument, 0, 's'}, {"seed", required_argument, 0, 'S'},           \
	{"games", required_argument, 0, 'n'}, {"c-puct", required_argument, 0, 'u'},        \
	{"backend", required_argument, 0, 'b'}, {"graph", required_argument, 0, 'G'},       \
	{"variant", required_argument, 0, 'V'}, {"search", required_argument, 0, 'Q'},      \
	{"gumbel-m", required_argument, 0, 'Y'}, {"gumbel-scale", required_argument, 0, 'Z'}

/* azplay's and azeval's search options (AZ_MATCH_LONGOPTS' 'Q' --search, 'Y' --gumbel-m, 'Z'
 * --gumbel-scale), with azrun's ranges, into the agent's search parameters mp (mcts/mcts.h).
 * Returns 0, 1 when letter is none of them, or -EINVAL after a message on stderr that names
 * tool. */
struct az_mcts_params;
int az_match_search_arg(const char *tool, int letter, const char *arg,
			struct az_mcts_params *mp);

/* The lines of azplay's and azeval's --help for those options. */
#define AZ_MATCH_SEARCH_HELP                                                                  \
	"  --search puct|gumbel PUCT (default) or Gumbel AlphaZero (noise-free: the top\n"      \
	"                       --gumbel-m moves by prior, sequential halving, its winner)\n"  \
	"  --gumbel-m M         Gumbel: most root moves considered (default 16)\n"             \
	"  --gumbel-scale C     Gumbel: c_scale of sigma(q) (default 0.1)\n"

/* The first option of another game than c->game that holds a value other than its default
 * (--graph 5 given for tic-tac-toe), with *owner that game's name; NULL when there is none. */
const char *az_config_foreign_game_opt(const struct az_config *c, const char **owner);

#endif
