/* SPDX-License-Identifier: MIT */
/* Solver labels for the mistake metric, cached beside the positions file, and tactical sets. */
#include "eval/c4_labels.h"

#include <errno.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/rng.h"
#include "base/util.h"
#include "eval/eval_impl.h"
#include "eval/positions.h"
#include "games/connect4_solver.h"
#include "games/game.h"

static const struct az_game *const c4 = &az_game_connect4;

/* The labels cache's file name from a flattened path: whole up to LABELS_NAME_MAX bytes, else
 * its last LABELS_NAME_TAIL bytes, '-' and 16 hex digits (with ".labels": at most 200 bytes). */
#define LABELS_NAME_MAX 190
#define LABELS_NAME_TAIL 150

int az_c4_labels_path(const char *src, char *out, size_t n)
{
	char abs[PATH_MAX], dir[PATH_MAX], cache[PATH_MAX];
	const char *slash = strrchr(src, '/');
	struct stat sb;
	size_t len;
	int k;

	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - src), src);
	else
		snprintf(dir, sizeof(dir), ".");
	/* No write bit at all counts as read-only even for root, who may write anyway: a shared
	 * data folder marked read-only is not ours to add files to. */
	if (access(dir[0] ? dir : "/", W_OK) == 0 && stat(dir[0] ? dir : "/", &sb) == 0 &&
	    (sb.st_mode & 0222)) {
		k = snprintf(out, n, "%s.labels", src);
		return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
	}
	if (!realpath(src, abs))
		return -ENOENT;
	k = az_cache_dir(cache, sizeof(cache));
	if (k < 0)
		return k == -ENOENT ? -ENOTDIR : k;
	len = strlen(abs);
	for (char *c = abs; *c; c++)
		if (*c == '/')
			*c = '%';
	/* A file name has at most NAME_MAX (255) bytes: a long path keeps its last part, made
	 * unique by a hash of the whole. */
	if (len <= LABELS_NAME_MAX)
		k = snprintf(out, n, "%s/%s.labels", cache, abs);
	else
		k = snprintf(out, n, "%s/%s-%016llx.labels", cache, abs + len - LABELS_NAME_TAIL,
			     (unsigned long long)az_fnv1a(AZ_FNV1A_INIT, abs, len));
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

/* The labels' solver (eval/eval_impl.h), made on the first question the cache cannot answer. */
static int c4_create(void **ctx)
{
	struct az_c4_solver *s;
	int rc = az_c4_solver_create(22, &s);

	if (rc == 0)
		*ctx = s;
	return rc;
}

static int c4_outcome(void *ctx, const void *state, int *v)
{
	return az_c4_solver_outcome(ctx, state, v);
}

static int c4_worse(void *ctx, const void *child, int o, int *worse)
{
	float v;

	if (o < 0) {
		*worse = 0; /* nothing can lose a lost position further */
		return 0;
	}
	if (c4->terminal(child, &v)) {
		*worse = v < 0 ? 0 : o > 0; /* the mover won; or a full board, a draw */
		return 0;
	}
	/* The move keeps a win when the opponent's score is <= -1 (not >= 0), a draw when it is
	 * <= 0 (not >= 1). */
	return az_c4_solver_at_least(ctx, child, o > 0 ? 0 : 1, worse);
}

static void c4_destroy(void *ctx)
{
	az_c4_solver_destroy(ctx);
}

static const struct az_labels_solver c4_solver = {c4_create, c4_outcome, c4_worse, c4_destroy};

int az_c4_labels_open(const char *src, const char *cache, long limit, struct az_labels **out,
		      char *err, size_t errlen)
{
	/* The scores of Pons' sets give the outcomes; lines of the cache beyond the positions read
	 * are kept (eval/c4_labels.h). */
	const struct az_labels_spec p = {.g = c4, .solver = &c4_solver, .keep_tail = 1,
					 .scores = 1};

	return az_labels_open(&p, src, cache, limit, out, err, errlen);
}

long az_c4_tactics_write(const char *path, enum az_c4_tactic kind, long count,
			 unsigned long long seed, char *err, size_t errlen)
{
	uint8_t st[AZ_GAME_STATE_MAX], mask[7];
	char moves[64];
	struct az_atomic_file af;
	struct az_rng rng;
	long got = 0;
	float v;
	FILE *f;
	int rc = az_atomic_open(&af, path, err, errlen);

	if (rc < 0)
		return rc;
	f = af.f;
	az_rng_seed(&rng, seed);
	while (got < count) {
		int plies = 0;

		c4->init(st);
		while (!c4->terminal(st, &v)) {
			unsigned mine, theirs, want = 0;
			int n = c4->legal(st, mask), k;

			az_c4_threats(st, &mine, &theirs);
			if (kind == AZ_C4_TACTIC_WIN && mine && (theirs & ~mine))
				want = mine;
			else if (kind == AZ_C4_TACTIC_BLOCK && !mine && theirs &&
				 !(theirs & (theirs - 1)))
				want = theirs;
			if (want) {
				/* A win in one is a win; a block's outcome would need a full
				 * solve of what may be an opening position: left unknown. */
				if (kind == AZ_C4_TACTIC_WIN)
					fprintf(f, "%s 1 ", plies ? moves : "-");
				else
					fprintf(f, "%s ? ", plies ? moves : "-");
				for (int c = 0, first = 1; c < 7; c++)
					if (want & (1u << c)) {
						fprintf(f, "%s%d", first ? "" : ",", c + 1);
						first = 0;
					}
				fputc('\n', f);
				got++;
				break;
			}
			k = (int)az_rng_below(&rng, (uint32_t)n);
			for (int a = 0; a < 7; a++)
				if (mask[a] && k-- == 0) {
					c4->apply(st, a);
					moves[plies++] = (char)('1' + a);
					moves[plies] = '\0';
					break;
				}
		}
	}
	rc = az_atomic_commit(&af, err, errlen);
	return rc < 0 ? rc : got;
}
