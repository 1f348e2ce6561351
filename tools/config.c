/* SPDX-License-Identifier: MIT */
/* azrun's options: one table drives --help, --options-table, parsing, the range checks, and the
 * run.json round trip, so an option added here is documented, parsed, checked and saved in one
 * place (tools/config_file.c writes and reads run.json from it). */
#include "tools/config.h"
#include "tools/config_impl.h"
#include "tools/run_bench.h"

#include <ini.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "games/game.h"
#include "infer/control.h"
#include "infer/server.h"
#include "mcts/mcts.h"
#include "run/evalcache.h"
#include "run/roles.h"
#include "run/rundir.h"
#include "train/train_backend.h"
#include "base/az_assert.h"
#include "base/util.h"

/* azrun's own caps, where no library enforces a limit (the table takes the libraries' constants
 * where one does: AZ_CTL_MAX_WORKERS, AZ_INFER_DEADLINE_MAX_US, AZ_INFER_BATCH_MAX,
 * AZ_GAME_ACTIONS_MAX, AZ_NET_HIDDEN_MAX, AZ_NET_BLOCKS_MAX, AZ_TRAIN_BATCH_MAX,
 * AZ_RING_CAPACITY_MAX, AZ_EVALCACHE_MB_MAX, AZ_EVALCACHE_SHARED_MB_MAX): far beyond
 * useful settings, low enough that a typo is refused before the run directory is touched rather
 * than failing (or exhausting memory) later. ANY: a count with no cap but its type's. */
#define MAX_SIMS 1000000
#define MAX_LEAVES 256
#define ANY UINT32_MAX

/* Table entries: a number in [lo, hi]; a string in the struct (choices "a|b" or NULL); a flag. */
#define F(field) offsetof(struct az_config, field)
#define NUM(name, type, field, arg, lo, hi, help) \
	{{name, type, F(field), arg, lo, hi, NULL, help, NULL, NULL, NULL}, 0, 1}
#define U32(name, field, arg, lo, hi, help) NUM(name, AZ_OPT_U32, field, arg, lo, hi, help)
#define F32(name, field, arg, lo, hi, help) NUM(name, AZ_OPT_F32, field, arg, lo, hi, help)
#define BUF(name, field, arg, choices, help, saved)                                      \
	{{name, AZ_OPT_BUF, F(field), arg, 0, 0, NULL, help, choices, NULL, NULL},       \
	 sizeof(((struct az_config *)0)->field), saved}
#define FLAG(name, field, help, saved) \
	{{name, AZ_OPT_FLAG, F(field), NULL, 0, 0, NULL, help, NULL, NULL, NULL}, 0, saved}

static const struct opt base_opts[] = {
	BUF("game", game, "NAME", NULL,
	    NULL /* "game: tictactoe | connect4 | tangled", from the registry */, 1),
	BUF("out", out, "DIR", NULL, "run directory (created; required; at most "
	    CONFIG_STR(AZ_CONFIG_OUT_MAX) " characters: a relative path for a deep one)", 1),
	U32("iterations", iterations, "N", 1, ANY, "self-play/train/arena iterations"),
	U32("workers", workers, "W", 1, AZ_CTL_MAX_WORKERS,
	    "self-play worker processes (one per core)"),
	U32("games-per-worker", games_per_worker, "G", 1, 4096, "games each worker plays at once"),
	U32("games-per-iter", games_per_iter, "N", 1, ANY, "self-play games per iteration"),
	U32("sims", sims, "N", 2, MAX_SIMS, "MCTS simulations per move (one would only expand the "
	    "root, which leaves no visit counts to choose a move by)"),
	U32("leaves", leaves, "K", 1, MAX_LEAVES, "leaves in flight per game (virtual loss)"),
	U32("arena-leaves", arena_leaves, "K", 0, MAX_LEAVES, "arena: leaves in flight per game; "
	    "0: enough for full batches, ceil(G*K / arena games per worker), at most 8 and sims/8"),
	U32("tail-leaves", tail_leaves, "K", 0, MAX_LEAVES, "self-play: once a worker has no game "
	    "left to start, leaves in flight per game rise to ceil(G*K / games still playing), at "
	    "most this, so the phase's last games keep batches full; 0: min(8, sims/8); at most "
	    "--leaves: off"),
	NUM("seed", AZ_OPT_U64, seed, "S", 0, 0, "random seed: the first network, search noise and "
	    "training samples; games still depend on timing (batching, workers) unless "
	    "--deterministic"),
	FLAG("deterministic", deterministic, "the same --seed gives bit-identical checkpoints: one "
	     "worker, batches of one position, CPU backend, each search round awaits all its results "
	     "(slower; implies --workers 1 --max-batch 1 --backend cpu)", 1),
	{{"backend", AZ_OPT_PARSE, F(backend), "B", 0, 0, NULL, "inference backend",
	  AZ_OPTS_BACKENDS, NULL, az_opts_backend}, 0, 1},
	F32("c-puct", c_puct, "C", 0, 1e6, "PUCT exploration constant"),
	F32("dirichlet-alpha", dir_alpha, "A", 1e-3, 1e3, "root Dirichlet noise alpha"),
	F32("dirichlet-eps", dir_eps, "E", 0, 1, "root Dirichlet noise weight"),
	U32("mcts-solver", mcts_solver, "0|1", 0, 1,
	    "MCTS-Solver: play and train on proven wins and losses"),
	F32("fpu-reduction", fpu_reduction, "R", -1, 10, "unvisited children get the parent's "
	    "value - R * sqrt(visited prior); R < 0: value 0"),
	U32("temp-plies", temp_plies, "N", 0, ANY, "plies played at temperature 1"),
	BUF("search", search, "S", "puct|gumbel", "the search: puct (AlphaZero's PUCT, Dirichlet "
	    "noise, visit-count policy targets) or gumbel (Gumbel AlphaZero: Gumbel-top-m and "
	    "sequential halving at the root, the completed-Q improved policy as target; for few "
	    "--sims; docs/targets.md)", 1),
	U32("gumbel-m", gumbel_m, "M", 1, AZ_GAME_ACTIONS_MAX,
	    "--search gumbel: most root actions considered (Gumbel-top-m)"),
	F32("gumbel-scale", gumbel_scale, "C", 0, AZ_GUMBEL_SCALE_MAX, "--search gumbel: c_scale "
	    "of sigma(q) = (50 + max N) * C * q, q rescaled to [0, 1] per node (mctx's default 0.1; "
	    "the paper's 1 gave near one-hot targets and repeated arena games here)"),
	F32("forced-playouts", forced_playouts, "K", 0, 100, "KataGo's forced playouts in "
	    "self-play: a root child with N < sqrt(K * P * sum N) is searched first, and the visits "
	    "so forced are pruned from the policy target; 0 turns it off (KataGo: 2)"),
	F32("playout-cap-p", playout_cap_p, "P", 1e-3, 1, "playout-cap randomisation: a self-play "
	    "move gets the full --sims search with noise and is a policy target with probability P, "
	    "otherwise a --sims-fast search without noise that trains the value only; 1 turns it "
	    "off (KataGo: 0.25)"),
	U32("sims-fast", sims_fast, "N", 0, MAX_SIMS, "simulations of a fast search "
	    "(--playout-cap-p), at most --sims, not 1; 0: --sims / 4, at least 2"),
	U32("random-opening", random_opening, "R", 0, 64, "self-play games begin with "
	    "r ~ U{0..R} uniformly random plies (not searched, not recorded), so that training sees "
	    "the positions of weak play too; 0: none"),
	F32("explore", explore, "P", 0, 0.999, "self-play: each move is, with probability P, a "
	    "uniformly random legal move instead of the search's; its record keeps the search's "
	    "policy target, and the positions before it take the root's search value as value "
	    "target. Training then sees what a blunder leaves, such as a win in one nobody stopped; "
	    "0: off"),
	F32("explore-games", explore_games, "G", 0, 1, "self-play: the share of games in which "
	    "--explore applies, drawn per game; the others play the search's moves throughout and "
	    "every record learns the game's result (values before a random move are the search's "
	    "own estimate); 1: every game"),
	F32("draw-value", draw_value, "X", -0.99, 0.99, "contempt in self-play and arena: what a "
	    "draw is worth to the side to move at the search's root (-X to the other side): proven "
	    "draws and, with --value-head wdl, the head's draw probability; below 0 avoids draws; "
	    "0: off"),
	F32("value-mix", value_mix, "L", 0, 1, "value target (1 - L) * game result + L * the "
	    "root's search value at the move; 0: the game result only"),
	U32("sims-fresh", sims_fresh, "0|1", 0, 1, "1: every move runs --sims new simulations; "
	    "0: visits reused from the previous move's tree count toward --sims"),
	U32("arena-games", arena_games, "M", 1, ANY, "arena games, colours alternated"),
	U32("arena-temp-plies", arena_temp_plies, "N", 0, ANY,
	    "arena opening plies at temperature 1"),
	F32("arena-threshold", arena_threshold, "X", 0, 1, "promotion score"),
	{{"net", AZ_OPT_PARSE, F(net), "KIND:WxR", 0, 0, NULL,
	  NULL /* "network: ... boards only: tictactoe, connect4 ...", from the registry */, NULL,
	  NULL, NULL /* set_net() */}, 0, 1},
	U32("hidden", hidden, "H", 1, AZ_NET_HIDDEN_MAX, "network width (ResNet: filters)"),
	BUF("value-head", value_head, "H", "tanh|wdl", "the value head: tanh (AlphaZero's one "
	    "expected outcome, squared error) or wdl (win/draw/loss probabilities, cross-entropy; "
	    "their p_draw lets --draw-value price every position's draws; docs/tangled.md)", 1),
	U32("blocks", blocks, "R", 0, AZ_NET_BLOCKS_MAX, "residual blocks"),
	U32("train-batch", train_batch, "B", 1, AZ_TRAIN_BATCH_MAX, "training minibatch"),
	U32("train-threads", train_threads, "N", 0, AZ_TRAIN_THREADS_MAX, "CPU trainer threads, "
	    "each a share of every minibatch (self-play and the arena wait while it trains); 0: one "
	    "per CPU azrun may use, at most B/16"),
	F32("train-epochs", train_epochs, "E", 1e-3, 1e3, "passes over the replay window"),
	U32("train-steps-max", train_steps_max, "N", 1, ANY, "cap on steps per iteration"),
	U32("window", window, "N", 1, ANY, "replay window in iterations"),
	/* no tighter cap: test_resume_check.sh drives a diverging run with --lr 1e30 */
	F32("lr", lr, "X", 1e-9, 1e30, "Adam learning rate (a run whose training diverges stops "
	    "before that iteration is committed)"),
	F32("lr-late", lr_late, "X", 0, 1e30, "the learning rate from --lr-late-at of the run on "
	    "(a step schedule, as AlphaZero's; of --time-limit when one is set, else of "
	    "--iterations); 0: --lr throughout"),
	F32("lr-late-at", lr_late_at, "F", 0, 1, "--lr-late: the fraction of the run after which "
	    "it applies"),
	F32("l2", l2, "X", 0, 1, "L2 weight penalty"),
	U32("ring-capacity", ring_capacity, "N", 2, AZ_RING_CAPACITY_MAX,
	    "slots per worker ring (power of 2)"),
	U32("max-batch", max_batch, "N", 0, AZ_INFER_BATCH_MAX, "largest inference batch; 0: the backend's "
	    "choice (64 on the CPU's AVX-512 kernels, else 256)"),
	U32("batch-deadline-us", deadline_us, "US", 0, AZ_INFER_DEADLINE_MAX_US, "wait for a fuller "
	    "batch at most this long while some worker may still add to it (the batch starts early "
	    "anyway once every worker waits)"),
	U32("spin", spin, "N", 0, ANY, "polls before sleeping on a futex"),
	U32("eval-cache-mb", eval_cache_mb, "MB", 0, AZ_EVALCACHE_MB_MAX, "the evaluation cache (position -> "
	    "network answer), in MiB: each worker's, or with --eval-cache shared the one for all "
	    "(then at most " CONFIG_STR(AZ_EVALCACHE_SHARED_MB_MAX) "); 0 turns it off"),
	BUF("eval-cache", eval_cache, "MODE", "worker|shared|off", "evaluation cache: worker (one "
	    "per worker process), shared (one in the shared segment for all workers) or off", 1),
	BUF("time-limit", time_limit, "DURATION", NULL, "stop cleanly after the iteration during "
	    "which the run's training time reaches DURATION (90s, 50m, 2h, 1h30m; the iterations of "
	    "earlier azruns of the run count; --resume continues past it with a new --time-limit); "
	    "the ETA plans the iterations left from measured iteration times; \"\" none", 1),
	BUF("bench", bench, "DIR|auto", NULL, "after the arena, the best network's mistake rate "
	    "(moves that change the solved outcome), raw policy and search, into metrics.jsonl "
	    "(docs/benchmark.md). connect4: DIR holds Pascal Pons' sets (Test_L1_R1 ... Test_L3_R1, "
	    "as ../shared/data/connect4), plus win-in-one and forced-block rates; tangled: auto, sets "
	    "from random games labelled by the exact solver once per run into OUT/bench/, plus the "
	    "score against rollout MCTS; \"\" turns it off", 1),
	U32("bench-every", bench_every, "K", 1, ANY, "--bench: every K iterations"),
	U32("bench-positions", bench_positions, "N", 1, 1000, "--bench: the first N positions of "
	    "each set (Pons' sets hold 1000 each), and N per tactical set; tangled: N positions per "
	    "depth and N games (made even) against rollout MCTS"),
	FLAG("resume", resume, "continue the run in --out after its last completed iteration, with "
	     "its saved configuration", 0),
	FLAG("quiet", quiet, "no progress output", 0),
	FLAG("mpi", mpi, "one run across the ranks of an MPI job: mpirun -np N azrun --mpi ... "
	     "(docs/cluster.md)", 0),
};

/* After the games' options (registry order), as --help has always listed it. */
static const struct opt config_opt = BUF("config", config, "FILE", NULL, "read options from an "
	"INI file (key = value, keys as the long options; a comment is a line that starts with # "
	"or ;, or ' ;' after a value, not ' #'; no indented lines: they continue the line above; "
	"command-line options override it)", 0);
#undef FLAG
#undef BUF
#undef F32
#undef U32
#undef NUM

/* Every option: base_opts, then each registered game's options (stored in game_opt[]), then
 * config_opt. Built once, on first use (the tools parse options on one thread). */
static struct opt opts[AZ_ARRAY_LEN(base_opts) + AZ_GAME_OPTS_MAX + 1];
static const struct az_game_opt *gopts[AZ_ARRAY_LEN(opts)]; /* behind opts[i], or NULL */
static size_t nopts;

/* The entry of game option go, the k-th of all games' (its value is c->game_opt[k]), of game
 * d: its range is the game's (tools/options.h). */
static struct opt game_entry(const struct az_game_desc *d, const struct az_game_opt *go, size_t k)
{
	static const enum az_opt_type types[] = {
		[AZ_GAME_OPT_U32] = AZ_OPT_U32, [AZ_GAME_OPT_F32] = AZ_OPT_F32,
		[AZ_GAME_OPT_STR] = AZ_OPT_BUF};

	return (struct opt){{go->name, types[go->type],
			     F(game_opt) + k * sizeof(union az_game_opt_value), go->arg, 0, 0, NULL,
			     go->help, NULL, d, NULL},
			    go->size, 1};
}

/* The help texts that name the registered games, set into the table once. */
static void registry_help(void)
{
	static char game_help[200] = "game:", net_help[300], boards[100];

	for (size_t i = 0, n = strlen(game_help); az_game_registry[i]; i++)
		n += (size_t)snprintf(game_help + n, sizeof(game_help) - n, "%s %s", i ? " |" : "",
				      az_game_registry[i]->name);
	snprintf(net_help, sizeof(net_help), "network: mlp:HxR (residual MLP, H wide) or resnet:FxR "
		 "(AlphaZero's residual convnet, F filters; boards only: %s) with R residual blocks; "
		 "mlp or resnet alone keeps --hidden/--blocks",
		 az_config_game_list(AZ_GAMES_BOARD, ", ", boards, sizeof(boards)));
	for (size_t i = 0; i < nopts; i++) {
		if (opts[i].o.off == F(game))
			opts[i].o.help = game_help;
		if (opts[i].o.off == F(net))
			opts[i].o.help = net_help;
	}
}

const struct opt *az_config_opts(size_t *count)
{
	size_t k = 0;

	if (nopts) {
		*count = nopts;
		return opts;
	}
	for (size_t i = 0; i < AZ_ARRAY_LEN(base_opts); i++)
		opts[nopts++] = base_opts[i];
	registry_help();
	for (size_t d = 0; az_game_registry[d]; d++) {
		const struct az_game_desc *g = az_game_registry[d];
		for (uint32_t i = 0; i < g->nopts; i++, k++) {
			AZ_ASSERT(k < AZ_GAME_OPTS_MAX);
			gopts[nopts] = &g->opts[i];
			opts[nopts++] = game_entry(g, &g->opts[i], k);
		}
	}
	opts[nopts++] = config_opt;
	*count = nopts;
	return opts;
}
#undef F

const struct az_game_opt *config_game_opt(const struct opt *o)
{
	return gopts[o - opts];
}

/* The game's option values in c->game_opt (registry order), or NULL for an unknown game. */
union az_game_opt_value *config_game_values(const struct az_config *c,
					   const struct az_game_desc *d)
{
	size_t k = 0;
	for (size_t i = 0; az_game_registry[i]; i++) {
		if (az_game_registry[i] == d)
			return (union az_game_opt_value *)&c->game_opt[k];
		k += az_game_registry[i]->nopts;
	}
	return NULL;
}

/* Canonical game name ("ttt" -> "tictactoe"), or NULL. */
static const char *game_name(const char *name)
{
	const struct az_game_desc *d = az_game_desc_find(name);
	return d ? d->name : NULL;
}

int az_config_defaults(struct az_config *c, const char *game)
{
	const struct az_game_desc *d = az_game_desc_find(game ? game : "tictactoe");
	if (!d)
		return -EINVAL;
	const struct az_game_defaults *g = &d->defaults;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	*c = (struct az_config){
		.workers = cores > 0 ? (uint32_t)cores : 1, .games_per_worker = 128, .leaves = 2,
		.seed = 1, .backend = AZ_BACKEND_AUTO, .c_puct = 1.5f, .dir_eps = 0.25f,
		.mcts_solver = 1, .fpu_reduction = 0.25f, .playout_cap_p = 1.0f, .value_mix = 0.5f,
		.explore_games = 1.0f,
		.train_batch = 128, .l2 = 1e-4f, .lr_late_at = 0.67f, .ring_capacity = 256,
		.max_batch = 0, .deadline_us = 200, .spin = 200, .eval_cache_mb = 8,
		.eval_cache = "shared", .search = "puct", .value_head = "tanh", .gumbel_m = 16, .gumbel_scale = 0.1f,
		.bench_every = 1, .bench_positions = AZ_RUN_BENCH_POSITIONS,
		/* the game's own, from its descriptor */
		.iterations = g->iterations, .games_per_iter = g->games_per_iter, .sims = g->sims,
		.dir_alpha = g->dir_alpha, .temp_plies = g->temp_plies, .arena_games = g->arena_games,
		.arena_temp_plies = g->arena_temp_plies, .hidden = g->hidden, .blocks = g->blocks,
		.train_epochs = g->train_epochs, .train_steps_max = g->train_steps_max,
		.window = g->window, .lr = g->lr, .explore = g->explore,
		.arena_threshold = g->arena_threshold};
	snprintf(c->game, sizeof(c->game), "%s", d->name);
	az_config_opts(&nopts);
	for (size_t i = 0; i < nopts; i++)
		if (gopts[i])
			az_game_opt_default(gopts[i],
					    (union az_game_opt_value *)((char *)c + opts[i].o.off));
	return 0;
}

void az_config_show_value(const struct az_config *c, const struct opt *o, char *buf, size_t n)
{
	static const char *const backends[] = {"auto", "cpu", "cuda", "cpu-async"};
	const char *p = (const char *)c + o->o.off;

	if (o->o.off == offsetof(struct az_config, net))
		snprintf(buf, n, "%s:%ux%u", az_net_kind_name(c->net), c->hidden, c->blocks);
	else if (o->o.off == offsetof(struct az_config, backend))
		snprintf(buf, n, "%s", backends[c->backend]);
	else if (o->o.type == AZ_OPT_U32)
		snprintf(buf, n, "%u", *(const uint32_t *)p);
	else if (o->o.type == AZ_OPT_U64)
		snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)p);
	else if (o->o.type == AZ_OPT_F32)
		snprintf(buf, n, "%g", (double)*(const float *)p);
	else if (o->o.type == AZ_OPT_FLAG)
		snprintf(buf, n, "%s", *(const int *)p ? "on" : "off");
	else
		snprintf(buf, n, "%s", p);
}

/* A flag's value: "" (given alone), on, 1, yes, true: 1; off, 0, no, false: 0; else -1. */
static int flag_value(const char *v)
{
	static const char *const words[] = {"off", "0", "no", "false", "", "on", "1", "yes", "true"};
	for (size_t i = 0; i < AZ_ARRAY_LEN(words); i++)
		if (!strcmp(v, words[i]))
			return i >= 4;
	return -1;
}

/* The message of a value o does not take, with why (a word or two): -EINVAL. */
static int bad_value(const struct opt *o, const char *v, const char *why, char *err, size_t errlen)
{
	char q[48];

	snprintf(err, errlen, "--%s: invalid value '%s' (%s)", o->o.name,
		 az_opt_quote(v, q, sizeof(q)), why);
	return -EINVAL;
}

/* --game: the canonical name ("ttt" -> "tictactoe"), so that every later lookup succeeds. */
static int set_game(struct az_config *c, const char *v, char *err, size_t errlen)
{
	const char *name = game_name(v);
	char q[48];

	if (!name) {
		snprintf(err, errlen, "--game: unknown game '%s' (known: %s)",
			 az_opt_quote(v, q, sizeof(q)), az_game_names());
		return -EINVAL;
	}
	snprintf(c->game, sizeof(c->game), "%s", name);
	return 0;
}

int config_set_value(struct az_config *c, const struct opt *o, const char *v, char *err,
		     size_t errlen)
{
	char *field = (char *)c + o->o.off;
	int on;

	if (o->o.off == offsetof(struct az_config, game))
		return set_game(c, v, err, errlen);
	if (o->o.off == offsetof(struct az_config, net)) {
		/* kind, width and blocks at once; their ranges are az_config_validate()'s */
		if (az_arch_parse_net(v, &c->net, &c->hidden, &c->blocks) < 0)
			return bad_value(o, v, "expected mlp:HxR or resnet:FxR, e.g. resnet:32x3",
					 err, errlen);
		return 0;
	}
	if (gopts[o - opts]) /* as the user gave it; az_config_load() clears these */
		c->game_opt_given |= 1u << (o->o.off - offsetof(struct az_config, game_opt)) /
					   sizeof(union az_game_opt_value);
	switch (o->o.type) {
	case AZ_OPT_FLAG: /* "" (a command-line flag), or a file's / run.json's on | off */
		on = flag_value(v);
		if (on < 0)
			return bad_value(o, v, "expected on or off", err, errlen);
		*(int *)field = on;
		return 0;
	case AZ_OPT_BUF:
		return az_opt_set_buf(&o->o, field, o->size, v, err, errlen);
	default: /* numbers (in the entry's range) and --backend */
		return az_opt_set(&o->o, c, v, err, errlen);
	}
}

int az_opts_backend(const char *v, void *field)
{
	return az_backend_parse(v, field) < 0 ? -EINVAL : 0;
}

const struct opt *config_find_opt(const char *name)
{
	az_config_opts(&nopts);
	for (size_t i = 0; i < nopts; i++)
		if (strcmp(opts[i].o.name, name) == 0)
			return &opts[i];
	return NULL;
}

/* Whether a is one of azrun's options ("--sims", "--sims=8"): after an option that takes a
 * value, the value is missing rather than "--sims" (--arena-leaves --sims 8). */
static int is_option(const char *a)
{
	char name[64];

	if (strncmp(a, "--", 2) != 0)
		return 0;
	snprintf(name, sizeof(name), "%s", a + 2);
	name[strcspn(name, "=")] = '\0';
	return config_find_opt(name) != NULL;
}

/* What the first pass over the command line finds (prescan()). */
struct first_pass {
	const char *game, *out, *config;
	int resume;
};

/* The value argv[i] gives option name ("--name=V", or "--name V"), or NULL. */
static const char *value_of(int argc, char **argv, int i, const char *name)
{
	const char *a = argv[i];
	size_t n = strlen(name);

	if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, n) != 0)
		return NULL;
	if (a[2 + n] == '=')
		return a + 3 + n;
	return !a[2 + n] && i + 1 < argc ? argv[i + 1] : NULL;
}

/* First pass: --help, --game, --out, --resume and --config decide the base configuration.
 * Returns 0, 1 for --help, 2 for --options-table. */
static int prescan(int argc, char **argv, struct first_pass *fp)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return 1;
		if (!strcmp(a, "--options-table"))
			return 2;
		if (!strcmp(a, "--resume"))
			fp->resume = 1;
		else if (!strncmp(a, "--resume=", 9) && flag_value(a + 9) >= 0)
			fp->resume = flag_value(a + 9); /* as the main pass reads it; a bad word fails there */
		else if ((v = value_of(argc, argv, i, "game")))
			fp->game = v;
		else if ((v = value_of(argc, argv, i, "out")))
			fp->out = v;
		else if ((v = value_of(argc, argv, i, "config")))
			fp->config = v;
	}
	return 0;
}

/* Key/value pairs of an INI file, in file order. */
struct ini_pairs {
	size_t n;
	char key[64][48];
	char val[64][600];
	int too_many;
	char other[64]; /* a section other than [azrun] (its keys are not azrun's) */
};

static int ini_collect(void *user, const char *section, const char *name, const char *value)
{
	struct ini_pairs *p = user;
	/* [azrun], or keys before any section; another section is refused, never applied */
	if (section[0] && strcmp(section, "azrun") != 0) {
		snprintf(p->other, sizeof(p->other), "%s", section);
		return 0; /* ini_parse reports this line */
	}
	if (p->n == 64) {
		p->too_many = 1;
		return 1;
	}
	snprintf(p->key[p->n], sizeof(p->key[0]), "%s", name);
	snprintf(p->val[p->n], sizeof(p->val[0]), "%s", value);
	p->n++;
	return 1;
}

static int ini_read(const char *path, struct ini_pairs *p, char *err, size_t errlen)
{
	struct stat st;
	memset(p, 0, sizeof(*p));
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "--config %s: not a regular file", path);
		return -EINVAL;
	}
	int rc = ini_parse(path, ini_collect, p);
	if (rc == -1) {
		snprintf(err, errlen, "--config %s: cannot open (%s)", path, strerror(errno));
		return -ENOENT;
	}
	if (rc > 0 && p->other[0]) {
		snprintf(err, errlen, "--config %s: line %d: section [%s]: azrun reads the [azrun] "
			 "section (and keys before any section) only", path, rc, p->other);
		return -EINVAL;
	}
	if (rc != 0 || p->too_many) {
		snprintf(err, errlen, "--config %s: line %d: not 'key = value'", path, rc);
		return -EINVAL;
	}
	return 0;
}

static const char *ini_get(const struct ini_pairs *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->key[i], key))
			return p->val[i];
	return NULL;
}

/* --net, --hidden, --blocks, --value-head: the architecture, which a resumed run keeps. */
static int is_arch_opt(const struct opt *o)
{
	return o->o.off == offsetof(struct az_config, net) ||
	       o->o.off == offsetof(struct az_config, hidden) ||
	       o->o.off == offsetof(struct az_config, value_head) ||
	       o->o.off == offsetof(struct az_config, blocks);
}

/* Whether value v of o would change c's game or architecture, compared as parsed ("resnet"
 * alone keeps the width and blocks; the run's own value may repeat): the network, the game, or
 * the game's configuration that checkpoints record (Tangled: graph, variant, inputs); 0 for a
 * value o refuses (setting it says why). */
static int changes_run(const struct az_config *c, const struct opt *o, const char *v)
{
	struct az_config tmp = *c;
	char e[300], was[512], now[512];

	if (config_set_value(&tmp, o, v, e, sizeof(e)) < 0)
		return 0;
	az_config_game_options(c, was, sizeof(was));
	az_config_game_options(&tmp, now, sizeof(now));
	return tmp.net != c->net || tmp.hidden != c->hidden || tmp.blocks != c->blocks ||
	       strcmp(tmp.value_head, c->value_head) != 0 || strcmp(tmp.game, c->game) != 0 ||
	       strcmp(was, now) != 0;
}

/* Whether o can change what changes_run() guards: the network, the game or a game option. */
static int is_run_opt(const struct opt *o)
{
	return is_arch_opt(o) || o->o.off == offsetof(struct az_config, game) ||
	       config_game_opt(o) != NULL;
}

/* Apply the file's options over c; refuses unknown keys and, on resume, a new game or
 * architecture. */
static int ini_apply(struct az_config *c, const struct ini_pairs *p, const char *path, int resume,
		     char *err, size_t errlen)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct opt *o = config_find_opt(p->key[i]);
		char e[300], cur[64];
		if (o && (o->o.off == offsetof(struct az_config, config) ||
			  o->o.off == offsetof(struct az_config, resume))) {
			snprintf(err, errlen, "--config %s: '%s' is a command-line option only (give "
				 "--%s to azrun)", path, p->key[i], p->key[i]);
			return -EINVAL;
		}
		if (!o) {
			snprintf(err, errlen, "--config %s: unknown option '%s' (keys are azrun's long "
				 "options without '--')", path, p->key[i]);
			return -EINVAL;
		}
		if (resume && is_run_opt(o) && changes_run(c, o, p->val[i])) {
			az_config_show_value(c, o, cur, sizeof(cur));
			snprintf(err, errlen, "--config %s: %s = %s, but the run being resumed has %s; "
				 "the game and architecture of a run cannot change", path, o->o.name,
				 p->val[i], cur);
			return -EINVAL;
		}
		if (config_set_value(c, o, p->val[i], e, sizeof(e)) < 0) {
			snprintf(err, errlen, "--config %s: %s", path, e);
			return -EINVAL;
		}
	}
	return 0;
}

/* The configuration the command line starts from: with --resume the run's run.json, else the
 * game's defaults. A --config file is read into ini first: its game and out count where the
 * command line gives none. */
static int parse_base(struct az_config *c, struct first_pass *fp, struct ini_pairs *ini,
		      char *err, size_t errlen)
{
	char path[600];
	int rc;

	if (fp->config) {
		rc = ini_read(fp->config, ini, err, errlen);
		if (rc < 0)
			return rc;
		if (!fp->game)
			fp->game = ini_get(ini, "game");
		if (!fp->out)
			fp->out = ini_get(ini, "out");
	}
	if (fp->game && !game_name(fp->game)) {
		snprintf(err, errlen, "--game: unknown game '%s' (known: %s)", fp->game,
			 az_game_names());
		return -EINVAL;
	}
	if (!fp->resume)
		return az_config_defaults(c, fp->game);
	if (!fp->out) {
		snprintf(err, errlen, "--resume needs --out DIR of an existing run");
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "%s/run.json", fp->out);
	rc = az_config_load(c, path, err, errlen);
	if (rc == 0 && fp->game && strcmp(game_name(fp->game), c->game) != 0) {
		snprintf(err, errlen, "--resume: run %s plays %s, not %s; start a new run with a "
			 "different --out instead", fp->out, c->game, fp->game);
		return -EINVAL;
	}
	return rc;
}

/* The command-line option at argv[*i] into c (its value may be the next argument, which *i then
 * passes): 0, or -EINVAL with the message in err. */
static int parse_arg(struct az_config *c, int argc, char **argv, int *i, int resume, char *err,
		     size_t errlen)
{
	const char *a = argv[*i], *val = NULL;
	const struct opt *o;
	char name[64], *eq;

	if (strncmp(a, "--", 2) != 0) {
		snprintf(err, errlen, "unexpected argument '%s' (see --help)", a);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%s", a + 2);
	eq = strchr(name, '=');
	if (eq) {
		*eq = 0;
		val = a + 2 + (eq - name) + 1;
	}
	o = config_find_opt(name);
	if (!o) {
		snprintf(err, errlen, "unknown option '%s' (see --help)", a);
		return -EINVAL;
	}
	if (o->o.type != AZ_OPT_FLAG && !val) {
		if (*i + 1 >= argc || is_option(argv[*i + 1])) {
			snprintf(err, errlen, "--%s needs a value %s", o->o.name, o->o.arg);
			return -EINVAL;
		}
		val = argv[++*i];
	}
	if (resume && is_run_opt(o) && changes_run(c, o, val ? val : "")) {
		char cur[64];

		az_config_show_value(c, o, cur, sizeof(cur));
		snprintf(err, errlen, "--resume: the %s of a run cannot change (--%s %s; the run has "
			 "%s; start a new run with a different --out instead)",
			 is_arch_opt(o) ? "architecture" : "game", o->o.name, val ? val : "", cur);
		return -EINVAL;
	}
	return config_set_value(c, o, val ? val : "", err, errlen);
}

/* After the options: --deterministic's settings, the checks, --bench's folder made absolute,
 * and --game required last (so that a bad value is named first). */
static int parse_finish(struct az_config *c, const struct first_pass *fp, char *err,
			size_t errlen)
{
	char abs[PATH_MAX];
	int rc;

	c->resume = fp->resume;
	if (c->deterministic) {
		if (c->backend == AZ_BACKEND_CUDA) {
			snprintf(err, errlen, "--deterministic runs on the CPU backend; drop --backend "
				 "cuda");
			return -EINVAL;
		}
		c->backend = AZ_BACKEND_CPU;
		c->workers = c->max_batch = 1;
	}
	rc = az_config_validate(c, err, errlen);
	/* Absolute in run.json, so that --resume from another folder finds the sets. */
	if (rc == 0 && c->bench[0] && strcmp(c->bench, AZ_RUN_BENCH_AUTO) != 0 &&
	    realpath(c->bench, abs) && strlen(abs) < sizeof(c->bench))
		snprintf(c->bench, sizeof(c->bench), "%s", abs);
	if (rc == 0 && !fp->game && !fp->resume) {
		snprintf(err, errlen, "--game GAME is required (%s), or --resume --out DIR",
			 az_game_names());
		return -EINVAL;
	}
	return rc;
}

int az_config_parse(struct az_config *c, int argc, char **argv, char *err, size_t errlen)
{
	static struct ini_pairs ini;
	struct first_pass fp = {0};
	int rc = prescan(argc, argv, &fp);

	if (rc == 2)
		az_config_dump(stdout);
	if (rc)
		return rc;
	rc = parse_base(c, &fp, &ini, err, errlen);
	if (rc == 0 && fp.config)
		rc = ini_apply(c, &ini, fp.config, fp.resume, err, errlen);
	for (int i = 1; rc == 0 && i < argc; i++)
		rc = parse_arg(c, argc, argv, &i, fp.resume, err, errlen);
	return rc < 0 ? rc : parse_finish(c, &fp, err, errlen);
}

int az_config_set(struct az_config *c, const char *name, const char *value, char *err,
		  size_t errlen)
{
	const struct opt *o = config_find_opt(name);
	if (!o) {
		snprintf(err, errlen, "unknown option '--%s'", name);
		return -EINVAL;
	}
	return config_set_value(c, o, value, err, errlen);
}

int az_opts_search(const char *v, void *field)
{
	return az_search_parse(v, field) < 0 ? -EINVAL : 0;
}
