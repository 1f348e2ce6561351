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
#include "mcts/mcts.h"
#include "run/roles.h"
#include "tools/config.h"
#include "tools/config_impl.h"
#include "tools/run_bench.h"
#include "train/replay.h"

#define MAX_FILTERS 1024u /* --net resnet: --hidden's cap (a ResNet's cost grows as its square) */
/* run-directory paths must fit AZ_CTL_PATH_MAX with their suffixes; the option layer refuses a
 * longer --out already (struct az_config's field), this also a run.json's */

/* Every option's value in its table entry's range or among its choices (tools/config.c), the
 * checks the command line makes, for a configuration set otherwise (run.json, azbench's own):
 * 0, or -EINVAL with the first fault in err. */
static int table_check(const struct az_config *c, char *err, size_t errlen)
{
	size_t n;
	const struct opt *opts = az_config_opts(&n);

	for (size_t i = 0; i < n; i++)
		if (az_opt_check(&opts[i].o, c, err, errlen) < 0)
			return -EINVAL;
	return 0;
}

/* What --game, --out and --time-limit name cannot be used, or NULL. */
static const char *names_wrong(const struct az_config *c)
{
	const struct az_game_desc *d = az_game_desc_find(c->game);
	static char msg[160];

	if (!d || strcmp(d->name, c->game) != 0)
		return "--game: unknown game";
	if (!c->out[0])
		return "--out DIR is required";
	if (strlen(c->out) > AZ_CONFIG_OUT_MAX)
		return "--out: path too long (at most " CONFIG_STR(
			AZ_CONFIG_OUT_MAX) " characters)";
	if (c->time_limit[0] && az_parse_duration(c->time_limit, &(double){0}) < 0) {
		snprintf(msg, sizeof(msg),
			 "--time-limit: '%s' is not a positive duration such as "
			 "90s, 50m, 2h or 1h30m (each number with its unit)",
			 c->time_limit);
		return msg;
	}
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

/* The first rule that joins options, or a value inside its range that is refused, as its
 * message; NULL when c keeps them all. */
static const char *rule_broken(const struct az_config *c)
{
	int kind = AZ_SEARCH_PUCT;

	if (net_unfit(c))
		return net_unfit(c);
	if (c->ring_capacity & (c->ring_capacity - 1))
		return "--ring-capacity must be a power of two";
	if (strcmp(c->eval_cache, "shared") == 0 && c->eval_cache_mb > AZ_EVALCACHE_SHARED_MB_MAX)
		return "--eval-cache-mb: at most " CONFIG_STR(
			AZ_EVALCACHE_SHARED_MB_MAX) " with "
						    "--eval-cache shared (one table in the shared segment, below 4 GiB)";
	if (c->sims_fast == 1)
		return "--sims-fast must be 0 (a quarter of the full search) or at least 2";
	if (c->sims_fast > c->sims)
		return "--sims-fast is above the full search's simulations: a fast search must not "
		       "be longer";
	az_search_parse(c->search, &kind); /* the table checked the word */
	if (kind == AZ_SEARCH_GUMBEL && c->forced_playouts > 0)
		return "--forced-playouts is PUCT's (Gumbel's sequential halving already visits "
		       "every considered move); drop it with --search gumbel";
	return NULL;
}

int az_config_validate(const struct az_config *c, char *err, size_t errlen)
{
	const char *what = names_wrong(c), *owner = NULL, *opt;

	if (!what && table_check(c, err, errlen) < 0)
		return -EINVAL;
	if (!what)
		what = rule_broken(c);
	if (what) {
		snprintf(err, errlen, "%s", what);
		return -EINVAL;
	}
	if (c->bench[0])
		return az_run_bench_check(c, err, errlen);
	opt = az_config_foreign_game_opt(c, &owner);
	if (opt) {
		snprintf(err, errlen, "--%s is an option of %s, not of %s (this run's --game)", opt,
			 owner, c->game);
		return -EINVAL;
	}
	return 0;
}

/* Bytes as "376 B", "6.0 GB" or "15.8 TB" (powers of 1000, as df -H). */
static const char *bytes_text(double b, char *buf, size_t len)
{
	static const char *const unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
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

int az_config_check_replay(const struct az_config *c, const struct az_game *g, uint32_t iterations,
			   char *err, size_t errlen, char *warn, size_t warnlen)
{
	double rec = (double)az_replay_record_bytes(g->features, g->actions);
	double iter = (double)c->games_per_iter * g->max_plies * rec, avail = 0;
	double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
	char dir[1024], a[32], b[32], d[32];

	warn[0] = 0;
	if (free_bytes(c->out, &avail, dir, sizeof(dir)) < 0)
		return 0; /* nothing to measure against: creating the directory will say why */
	if (iter > avail) {
		snprintf(err, errlen,
			 "--games-per-iter %u: up to %s of replay per iteration (%u "
			 "games x up to %u positions x %.0f bytes), more than the %s free in %s; "
			 "lower --games-per-iter or choose another --out",
			 c->games_per_iter, bytes_text(iter, a, sizeof(a)), c->games_per_iter,
			 g->max_plies, rec, bytes_text(avail, b, sizeof(b)), dir);
		return -ENOSPC;
	}
	if (iter * iterations > avail)
		snprintf(
			warn, warnlen,
			"warning: up to %s of replay in %u iterations (%s each, %u "
			"games x up to %u positions), more than the %s free in %s: the run may stop "
			"at a full disk",
			bytes_text(iter * iterations, a, sizeof(a)), iterations,
			bytes_text(iter, d, sizeof(d)), c->games_per_iter, g->max_plies,
			bytes_text(avail, b, sizeof(b)), dir);
	else if (mem > 0 && iter * c->window > mem)
		snprintf(warn, warnlen,
			 "warning: the trainer holds --window %u iterations of replay "
			 "in memory, up to %s (%s each), more than this machine's %s",
			 c->window, bytes_text(iter * c->window, a, sizeof(a)),
			 bytes_text(iter, d, sizeof(d)), bytes_text(mem, b, sizeof(b)));
	return 0;
}
