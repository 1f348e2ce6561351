/* SPDX-License-Identifier: MIT */
/* azrun's configuration checks (az_config_validate, tools/config.h): one message per
 * fault, naming one option, before the run directory is touched. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "games/game.h"
#include "infer/server.h"
#include "mcts/mcts.h"
#include "run/roles.h"
#include "tools/config.h"
#include "tools/config_impl.h"
#include "tools/run_bench.h"
#include "train/replay.h"

/* Upper bounds of az_config_validate(): far beyond useful settings, low enough that a typo is
 * refused before the run directory is touched rather than failing (or exhausting memory) later. */
#define MAX_SIMS 1000000u
#define MAX_LEAVES 256u
#define MAX_GAMES_PER_WORKER 4096u
#define MAX_HIDDEN 8192u
#define MAX_BLOCKS 128u
#define MAX_FILTERS 1024u
#define MAX_BATCH 65536u
#define MAX_RING (1u << 16)
#define MAX_OUT_LEN 400 /* run-directory paths must fit AZ_CTL_PATH_MAX with their suffixes */

/* The first count that is zero, as "--name must be at least 1", or NULL. */
static const char *zero_count(const struct az_config *c)
{
	const struct {
		uint32_t v;
		const char *what;
	} counts[] = {
		{c->iterations, "--iterations must be at least 1"},
		{c->workers, "--workers must be at least 1"},
		{c->games_per_worker, "--games-per-worker must be at least 1"},
		{c->games_per_iter, "--games-per-iter must be at least 1"},
		{c->leaves, "--leaves must be at least 1"},
		{c->arena_games, "--arena-games must be at least 1"},
		{c->hidden, "--hidden must be at least 1"},
		{c->train_batch, "--train-batch must be at least 1"},
		{c->train_steps_max, "--train-steps-max must be at least 1"},
		{c->window, "--window must be at least 1"},
	};
	for (size_t i = 0; i < AZ_ARRAY_LEN(counts); i++)
		if (!counts[i].v)
			return counts[i].what;
	return NULL;
}

/* The first value above its cap, as its message; NULL when none is. */
static const char *over_cap(const struct az_config *c)
{
	const struct {
		uint32_t v, max;
		const char *what;
	} caps[] = {
		{c->workers, 256, "--workers: at most 256"},
		{c->eval_cache_mb, 65536, "--eval-cache-mb: at most 65536 (64 GiB per worker)"},
		{c->sims, MAX_SIMS, "--sims: at most 1000000"},
		{c->leaves, MAX_LEAVES, "--leaves: at most 256"},
		{c->arena_leaves, MAX_LEAVES, "--arena-leaves: at most 256"},
		{c->tail_leaves, MAX_LEAVES, "--tail-leaves: at most 256"},
		{c->games_per_worker, MAX_GAMES_PER_WORKER, "--games-per-worker: at most 4096"},
		{c->hidden, MAX_HIDDEN, "--hidden: at most 8192"},
		{c->blocks, MAX_BLOCKS, "--blocks: at most 128"},
		{c->train_batch, MAX_BATCH, "--train-batch: at most 65536"},
		{c->max_batch, MAX_BATCH, "--max-batch: at most 65536"},
		{c->deadline_us, AZ_INFER_DEADLINE_MAX_US, "--batch-deadline-us: at most 1000000 "
		 "(1 s); the batch starts early anyway once every worker waits"},
	};
	for (size_t i = 0; i < AZ_ARRAY_LEN(caps); i++)
		if (caps[i].v > caps[i].max)
			return caps[i].what;
	return NULL;
}

/* Why the network cannot be built for this game, or NULL. */
static const char *net_unfit(const struct az_config *c)
{
	const struct az_game_desc *d = az_game_desc_find(c->game);

	if (c->net != AZ_NET_RESNET)
		return NULL;
	if (c->hidden > MAX_FILTERS)
		return "--net resnet: at most 1024 filters";
	/* a game known only once configured (Tangled) has no board shape either */
	if (!d || !d->game || !d->game->planes)
		return "--net resnet: this game's encoding has no board shape (planes of cells); "
		       "use --net mlp:HxR";
	return NULL;
}

const char *config_search_wrong(const struct az_config *c)
{
	int kind;

	if (az_search_parse(c->search, &kind) < 0)
		return "--search must be puct or gumbel";
	if (c->gumbel_m < 1 || c->gumbel_m > AZ_GAME_ACTIONS_MAX)
		return "--gumbel-m must be from 1 to 512";
	if (!(c->gumbel_scale >= 0 && c->gumbel_scale <= 100))
		return "--gumbel-scale must be in [0, 100]";
	if (kind == AZ_SEARCH_GUMBEL && c->forced_playouts > 0)
		return "--forced-playouts is PUCT's (Gumbel's sequential halving already visits "
		       "every considered move); drop it with --search gumbel";
	return NULL;
}

int az_config_validate(const struct az_config *c, char *err, size_t errlen)
{
	const struct az_game_desc *d = az_game_desc_find(c->game);
	const char *name = d ? d->name : NULL;
	const char *what = NULL;
	if (!name || strcmp(name, c->game) != 0)
		what = "--game: unknown game";
	else if (!c->out[0])
		what = "--out DIR is required";
	else if (strlen(c->out) > MAX_OUT_LEN)
		what = "--out: path too long (at most 400 characters)";
	else if (zero_count(c))
		what = zero_count(c);
	else if (over_cap(c))
		what = over_cap(c);
	else if (net_unfit(c))
		what = net_unfit(c);
	else if (c->sims < 2) /* 0 too: "at least 1" would invite the 1 refused here */
		what = "--sims: at least 2 (one simulation only expands the root, which leaves no "
		       "visit counts to choose a move by)";
	else if (c->ring_capacity < 2 || c->ring_capacity > MAX_RING ||
		 (c->ring_capacity & (c->ring_capacity - 1)))
		what = "--ring-capacity must be a power of two from 2 to 65536";
	else if (strcmp(c->eval_cache, "worker") != 0 && strcmp(c->eval_cache, "shared") != 0 &&
		 strcmp(c->eval_cache, "off") != 0)
		what = "--eval-cache must be worker, shared or off";
	else if (c->time_limit[0] && az_parse_duration(c->time_limit, &(double){0}) < 0) {
		static char msg[96];
		snprintf(msg, sizeof(msg), "--time-limit: '%s' is not a positive duration such as "
			 "90s, 50m, 2h or 1h30m", c->time_limit);
		what = msg;
	}
	else if (strcmp(c->eval_cache, "shared") == 0 && c->eval_cache_mb > 4095)
		what = "--eval-cache-mb: at most 4095 with --eval-cache shared (one table in the "
		       "shared segment, below 4 GiB)";
	else if (!(c->arena_threshold >= 0 && c->arena_threshold <= 1))
		what = "--arena-threshold must be in [0, 1]";
	else if (!(c->dir_eps >= 0 && c->dir_eps <= 1))
		what = "--dirichlet-eps must be in [0, 1]";
	else if (!(c->dir_alpha > 0) || !isfinite(c->dir_alpha))
		what = "--dirichlet-alpha must be > 0";
	else if (!(c->c_puct >= 0) || !isfinite(c->c_puct))
		what = "--c-puct must be >= 0";
	else if (c->mcts_solver > 1 || !(c->fpu_reduction >= -1 && c->fpu_reduction <= 10))
		what = "--mcts-solver must be 0 or 1 and --fpu-reduction in [-1, 10]";
	else if (!(c->lr > 0) || !isfinite(c->lr))
		what = "--lr must be > 0";
	else if (!(c->train_epochs > 0) || !isfinite(c->train_epochs))
		what = "--train-epochs must be > 0";
	else if (!(c->l2 >= 0) || !isfinite(c->l2))
		what = "--l2 must be >= 0";
	else if (!(c->forced_playouts >= 0 && c->forced_playouts <= 100))
		what = "--forced-playouts must be in [0, 100] (0: off; KataGo uses 2)";
	else if (!(c->playout_cap_p > 0 && c->playout_cap_p <= 1))
		what = "--playout-cap-p must be in (0, 1] (1: every move a full search)";
	else if (c->sims_fast == 1)
		what = "--sims-fast must be 0 (a quarter of the full search) or at least 2";
	else if (c->sims_fast > c->sims)
		what = "--sims-fast is above the full search's simulations: a fast search must not "
		       "be longer";
	else if (!(c->value_mix >= 0 && c->value_mix <= 1))
		what = "--value-mix must be in [0, 1] (0: the game result only)";
	else if (!(c->explore >= 0 && c->explore < 1))
		what = "--explore must be in [0, 1) (0: off)";
	else if (c->random_opening > 64)
		what = "--random-opening: at most 64 plies";
	else if (c->sims_fresh > 1)
		what = "--sims-fresh must be 0 or 1";
	else if (config_search_wrong(c))
		what = config_search_wrong(c);
	else if (c->bench_every < 1)
		what = "--bench-every must be at least 1";
	else if (c->bench_positions < 1 || c->bench_positions > 1000)
		what = "--bench-positions must be from 1 to 1000 (Pons' sets hold 1000 each)";
	else if (c->bench[0])
		return az_run_bench_check(c, err, errlen);
	if (!what) {
		const char *owner = NULL, *opt = name ? az_config_foreign_game_opt(c, &owner) : NULL;
		if (!opt)
			return 0;
		snprintf(err, errlen, "--%s is an option of %s, not of %s (this run's --game)", opt,
			 owner, name);
		return -EINVAL;
	}
	snprintf(err, errlen, "%s", what);
	return -EINVAL;
}


/* Bytes as "376 B", "6.0 GB" or "15.8 TB" (powers of 1000, as df -H). */
static const char *bytes_text(double b, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "kB", "MB", "GB", "TB", "PB" };
	int u = 0;

	while (b >= 1000 && u < 5) {
		b /= 1000;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
	return buf;
}

/* Bytes free to an unprivileged writer on the file system of path, or of its nearest existing
 * parent (a run directory not created yet), into *free_b, and that folder into dir[len].
 * Returns 0, -ENOTSUP on a file system without blocks, or -errno when none answers. */
static int free_bytes(const char *path, double *free_b, char *dir, size_t len)
{
	struct statvfs st;

	snprintf(dir, len, "%s", path);
	while (statvfs(dir, &st) != 0) {
		char *slash = strrchr(dir, '/');

		if (!dir[0] || strcmp(dir, ".") == 0 || strcmp(dir, "/") == 0)
			return -errno;
		if (!slash)
			snprintf(dir, len, ".");
		else if (slash == dir)
			dir[1] = 0;
		else
			*slash = 0;
	}
	if (st.f_blocks == 0) /* /proc and kin: no disk; creating the run directory says why */
		return -ENOTSUP;
	*free_b = (double)st.f_bavail * (double)st.f_frsize;
	char *abs = realpath(dir, NULL); /* "." says little in a message */
	if (abs)
		snprintf(dir, len, "%s", abs);
	free(abs);
	return 0;
}

int az_config_check_replay(const struct az_config *c, const struct az_game *g,
			   uint32_t iterations, char *err, size_t errlen, char *warn,
			   size_t warnlen)
{
	double rec = (double)az_replay_record_bytes(g->features, g->actions);
	double iter = (double)c->games_per_iter * g->max_plies * rec, avail = 0;
	double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
	char dir[1024], a[32], b[32], d[32];

	warn[0] = 0;
	if (free_bytes(c->out, &avail, dir, sizeof(dir)) < 0)
		return 0; /* nothing to measure against: creating the directory will say why */
	if (iter > avail) {
		snprintf(err, errlen, "--games-per-iter %u: up to %s of replay per iteration (%u "
			 "games x up to %u positions x %.0f bytes), more than the %s free in %s; "
			 "lower --games-per-iter or choose another --out", c->games_per_iter,
			 bytes_text(iter, a, sizeof(a)), c->games_per_iter, g->max_plies, rec,
			 bytes_text(avail, b, sizeof(b)), dir);
		return -ENOSPC;
	}
	if (iter * iterations > avail)
		snprintf(warn, warnlen, "warning: up to %s of replay in %u iterations (%s each, %u "
			 "games x up to %u positions), more than the %s free in %s: the run may stop "
			 "at a full disk", bytes_text(iter * iterations, a, sizeof(a)), iterations,
			 bytes_text(iter, d, sizeof(d)), c->games_per_iter, g->max_plies,
			 bytes_text(avail, b, sizeof(b)), dir);
	else if (mem > 0 && iter * c->window > mem)
		snprintf(warn, warnlen, "warning: the trainer holds --window %u iterations of replay "
			 "in memory, up to %s (%s each), more than this machine's %s", c->window,
			 bytes_text(iter * c->window, a, sizeof(a)), bytes_text(iter, d, sizeof(d)),
			 bytes_text(mem, b, sizeof(b)));
	return 0;
}
