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
#include "tools/options.h" /* az_usage_wrap() */

/* The longest run directory (--out), in characters: the run's paths must fit AZ_CTL_PATH_MAX.
 * azrun's subcommands refuse a longer one too: no run directory can have it. */
#define AZ_CONFIG_OUT_MAX 400

struct az_config {
	char game[32];
	char out[AZ_CONFIG_OUT_MAX + 1];
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
	float explore_games;       /* self-play: share of games that --explore applies to */
	float draw_value;          /* contempt in self-play and arena (az_mcts_params.draw_value) */
	uint32_t sims_fresh;       /* 1: each move runs --sims new simulations (reuse on top) */
	/* arena */
	uint32_t arena_games;
	uint32_t arena_temp_plies; /* opening plies sampled at tau = 1 so arena games differ */
	float arena_threshold;     /* promote at score >= this */
	/* network and training */
	uint32_t net;              /* enum az_net_kind (net/model.h): mlp or resnet */
	uint32_t hidden, blocks;   /* MLP width or ResNet filters; residual blocks */
	char value_head[8];        /* "tanh" | "wdl" (net/model.h's enum az_value_head) */
	uint32_t train_batch;
	uint32_t train_threads;    /* CPU trainer threads; 0: az_train_threads_auto() */
	float train_epochs;        /* passes over the replay window per iteration */
	uint32_t train_steps_max;
	uint32_t window;           /* replay window, in iterations */
	float lr, l2;
	float lr_late, lr_late_at; /* the learning rate from that fraction of the run on; 0: off */
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
	/* bit k: game_opt[k] was set from the command line or a --config file (not saved; not set
	 * by az_config_load()): a game's option given for another game is refused even at its
	 * default value */
	uint32_t game_opt_given;
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
 * Returns 0, 1 for --help (the caller prints az_config_usage()), 2 when --options-table was
 * printed (az_config_dump()), or -EINVAL with a message in err. */
int az_config_parse(struct az_config *c, int argc, char **argv, char *err, size_t errlen);

/* Checks c as a whole (every option in its table entry's range or choices, the rules that join
 * options, the network against the game, --bench's folder; tools/config_check.c): 0, or -EINVAL
 * with one line naming one option in err[errlen]. az_config_parse() calls it; azbench checks its
 * configurations with it too. */
int az_config_validate(const struct az_config *c, char *err, size_t errlen);

/* The replay a run of c writes for game g (configured), at most: every game g->max_plies
 * records of az_replay_record_bytes(). Against the space free where c->out is or will be
 * created (tools/config_check.c): -ENOSPC with one line in err when one iteration's replay may
 * not fit; otherwise 0, with warn[warnlen] a line ("" when none) when the `iterations` still to
 * run may not fit, or the trainer's --window of replay may not fit in this machine's memory. */
int az_config_check_replay(const struct az_config *c, const struct az_game *g,
			   uint32_t iterations, char *err, size_t errlen, char *warn,
			   size_t warnlen);

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

/* The board a labelled positions file holds positions of, as its board line names it
 * (eval/positions.h): the game's name, and for Tangled what its solved outcomes depend on (the
 * recorded options without the network's inputs, then the configured adjudicator:
 * "tangled graph=5;variant=fixed;adjudicator=table:anneal"; a graph file's path replaced by
 * its graph, "graph-edges=N:E:<FNV-1a of the edge list>"). After az_config_game(). */
void az_config_board(const struct az_config *c, char *buf, size_t n);

/* Bytes of the one shared evaluation cache azrun puts in the segment (az_pipeline_params'
 * eval_cache_shared_bytes): --eval-cache-mb with --eval-cache shared, otherwise 0. */
size_t az_config_eval_cache_shared_bytes(const struct az_config *c);

/* The process roles' parameters from c (run/roles.h). The game name points into c. */
struct az_worker_params;
struct az_trainer_proc_params;
void az_config_worker_params(const struct az_config *c, struct az_worker_params *wp);
void az_config_train_params(const struct az_config *c, struct az_trainer_proc_params *tp);

/* The segment's and the inference process's parameters (run/supervise.h) from c, for game g:
 * one ring per worker of c->ring_capacity slots, the shared evaluation cache, the backend and
 * its batching (max_batch, deadline_us, spin). seg_tag names the segment (/az-<uid>-<pid>-<tag>,
 * a static string); log_fd is where the inference process logs (-1: nowhere). Everything else
 * (restarts, stale-segment reaping, the watchdog's floor, fixed_deadline, log_line) is 0: the
 * caller adds what its role needs. azrun and azbench pipeline build theirs here, so a
 * benchmark measures the pipeline azrun runs. */
struct az_pipeline_params;
void az_config_pipeline_params(const struct az_config *c, const struct az_game *g,
			       const char *seg_tag, int log_fd, struct az_pipeline_params *pp);

/* azrun's option table on f, a line per option as az_opts_dump() writes them (tools/options.h):
 * name, type, range, and the default --help shows (per game where they differ, "20 / 10 / 20";
 * "-" for none). */
void az_config_dump(FILE *f);

/* Print azrun's --help to stdout. */
void az_config_usage(const char *prog);

/* Which registered games az_config_game_list() names. */
enum az_games_which {
	AZ_GAMES_ALL,   /* every registered game */
	AZ_GAMES_READY, /* those usable without configuration (az_game_find: not Tangled) */
	AZ_GAMES_BOARD, /* those whose encoding is a board (planes), which --net resnet reads */
};

/* The names of the registered games `which` selects, in registry order, joined by sep
 * ("tictactoe | connect4 | tangled"), into buf[len] (help texts derive their game lists from
 * the registry: a new game appears in them). Returns buf. */
const char *az_config_game_list(enum az_games_which which, const char *sep, char *buf,
				size_t len);

/* Save c as JSON to path (temp + rename). Returns 0 or -errno, message in err. */
int az_config_save(const struct az_config *c, const char *path, char *err, size_t errlen);

/* Load a run.json written by az_config_save into c. Returns 0 or -EINVAL/-ENOENT. */
int az_config_load(struct az_config *c, const char *path, char *err, size_t errlen);

/* An AZ_OPT_PARSE parser (tools/options.h) for --backend: field is an enum az_backend_kind.
 * 0 or -EINVAL. */
int az_opts_backend(const char *v, void *field);
#define AZ_OPTS_BACKENDS "auto|cpu|cpu-async|cuda"

/* Set the help of the "game" entry of table t[n] (tools/options.h) to the registered games,
 * "the game: tictactoe | connect4 | tangled (default: dflt)" (kept in a static buffer). */
void az_config_game_opt_help(struct az_opt *t, size_t n, const char *dflt);

/* An AZ_OPT_PARSE parser for --search: field is an int (enum az_search_kind, mcts/mcts.h).
 * 0 or -EINVAL. */
int az_opts_search(const char *v, void *field);

/* --gumbel-scale's cap, azrun's and the other tools' (far above mctx's 0.1 and the paper's 1). */
#define AZ_GUMBEL_SCALE_MAX 100

/* azplay's and azeval's search options, as option-table entries (tools/options.h) of a struct
 * with a member `struct az_mcts_params sp` whose search, gumbel_m and c_scale they set; O is
 * the table's offsetof macro. Ranges and defaults are azrun's (its table in config.c). */
#define AZ_SEARCH_OPTS(O)                                                                      \
	{"search", AZ_OPT_PARSE, O(sp.search), "S", 0, 0, "puct", "PUCT or Gumbel AlphaZero "   \
	 "(noise-free: the top --gumbel-m moves by prior, sequential halving, its winner)",      \
	 "puct|gumbel", NULL, az_opts_search},                                                  \
	{"gumbel-m", AZ_OPT_U32, O(sp.gumbel_m), "M", 1, AZ_GAME_ACTIONS_MAX, "16",            \
	 "Gumbel: most root moves considered", NULL, NULL, NULL},                                \
	{"gumbel-scale", AZ_OPT_F32, O(sp.c_scale), "C", 0, AZ_GUMBEL_SCALE_MAX, "0.1",        \
	 "Gumbel: c_scale of sigma(q)", NULL, NULL, NULL}

/* The first option of another game than c->game given on the command line or in a --config file
 * (c->game_opt_given; --graph 5 for tic-tac-toe, or --graph 3 for Connect Four although 3 is
 * Tangled's default), with *owner that game's name; NULL when there is none. */
const char *az_config_foreign_game_opt(const struct az_config *c, const char **owner);

#endif
