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

#include "base/rng.h"
#include "base/util.h"
#include "eval/eval_impl.h"
#include "eval/positions.h"
#include "games/connect4_solver.h"
#include "games/game.h"

static const struct az_game *const c4 = &az_game_connect4;

int az_c4_labels_path(const char *src, char *out, size_t n)
{
	char abs[PATH_MAX], dir[PATH_MAX];
	const char *slash = strrchr(src, '/'), *home;
	struct stat sb;
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
	for (char *c = abs; *c; c++)
		if (*c == '/')
			*c = '%';
	home = getenv("XDG_CACHE_HOME");
	if (home && home[0])
		k = snprintf(out, n, "%s/ringzero/%s.labels", home, abs);
	else
		k = snprintf(out, n, "%s/.cache/ringzero/%s.labels", getenv("HOME") ? getenv("HOME")
										    : "/tmp", abs);
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

/* mkdir -p of the folder that holds `path`. */
static int make_parent(const char *path)
{
	char buf[PATH_MAX];
	char *slash;

	snprintf(buf, sizeof(buf), "%s", path);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = '\0';
	return az_mkdir_p(buf);
}

struct entry {
	char *moves;    /* the position's move string, as in the source */
	uint8_t state[24];
	int8_t outcome; /* -1, 0, +1; AZ_EVAL_LABEL_UNKNOWN until known */
	char keeps[8];  /* per column: '+' keeps the outcome, 'x' changes it, '?' unknown, '-' full */
};

struct az_c4_labels {
	char path[PATH_MAX];
	struct entry *e;
	long n;
	int dirty;
	struct az_c4_solver *solver; /* created on the first question the cache cannot answer */
};

static int entry_add(struct az_c4_labels *l, long *cap, const char *moves, const void *state,
		     int outcome)
{
	struct entry *e;

	if (l->n == *cap) {
		long c = *cap ? 2 * *cap : 1024;

		e = realloc(l->e, (size_t)c * sizeof(*e));
		if (!e)
			return -ENOMEM;
		l->e = e;
		*cap = c;
	}
	e = &l->e[l->n];
	if (!(e->moves = strdup(moves)))
		return -ENOMEM;
	memcpy(e->state, state, sizeof(e->state));
	e->outcome = (int8_t)outcome;
	memset(e->keeps, '?', 7);
	e->keeps[7] = '\0';
	for (int c = 0; c < 7; c++)
		if (c4->parse_action(state, (char[2]){(char)('1' + c), '\0'}) < 0)
			e->keeps[c] = '-';
	l->n++;
	return 0;
}

/* Take what the cache knows about entry i from one cache line, if its moves match. */
static void merge_line(struct entry *e, const char *line)
{
	char moves[AZ_POSITIONS_LINE_MAX + 2], keeps[16];
	int outcome;

	az_eval_first_field(line, moves, sizeof(moves));
	if (strcmp(moves, e->moves) != 0 ||
	    sscanf(line, "%*s %d %15s", &outcome, keeps) != 2 || outcome < -1 || outcome > 1 ||
	    strlen(keeps) != 7 || (e->outcome != AZ_EVAL_LABEL_UNKNOWN && e->outcome != outcome))
		return;
	for (int c = 0; c < 7; c++)
		if ((keeps[c] == '+' || keeps[c] == 'x') && e->keeps[c] == '?')
			e->keeps[c] = keeps[c];
	e->outcome = (int8_t)outcome;
}

/* az_eval_read_source's add for az_c4_labels_open: arg is a struct opening. */
struct opening {
	struct az_c4_labels *l;
	long cap;
};

static int open_add(void *arg, const char *moves, const struct az_position *pos)
{
	struct opening *o = arg;

	/* A score in the file (Pons' sets) gives the outcome; else it is solved. */
	return entry_add(o->l, &o->cap, moves, pos->state, pos->has_score ?
			 (pos->score > 0) - (pos->score < 0) : AZ_EVAL_LABEL_UNKNOWN);
}

int az_c4_labels_open(const char *src, const char *cache, long limit, struct az_c4_labels **out,
		      char *err, size_t errlen)
{
	char line[AZ_POSITIONS_LINE_MAX + 2];
	struct az_c4_labels *l = calloc(1, sizeof(*l));
	struct opening o = {.l = l};
	long i = 0;
	FILE *f;
	int rc;

	if (!l)
		return -ENOMEM;
	snprintf(l->path, sizeof(l->path), "%s", cache);
	rc = az_eval_read_source(c4, src, limit, open_add, &o, err, errlen);
	if (rc == 0 && (f = fopen(cache, "r"))) {
		/* Line i of the cache describes position i when the moves match; others are
		 * ignored (the source changed) and rewritten on save. */
		while (i < l->n && fgets(line, sizeof(line), f))
			merge_line(&l->e[i++], line);
		fclose(f);
	}
	if (rc < 0) {
		az_c4_labels_close(l);
		return rc;
	}
	*out = l;
	return 0;
}

long az_c4_labels_count(const struct az_c4_labels *l)
{
	return l->n;
}

const void *az_c4_labels_state(const struct az_c4_labels *l, long i)
{
	return l->e[i].state;
}

static int need_solver(struct az_c4_labels *l)
{
	return l->solver ? 0 : az_c4_solver_create(22, &l->solver);
}

int az_c4_labels_outcome(struct az_c4_labels *l, long i, int *outcome)
{
	struct entry *e = &l->e[i];
	int rc, v;

	if (e->outcome == AZ_EVAL_LABEL_UNKNOWN) {
		if ((rc = need_solver(l)) < 0 || (rc = az_c4_solver_outcome(l->solver, e->state,
									     &v)) < 0)
			return rc;
		e->outcome = (int8_t)v;
		l->dirty = 1;
	}
	*outcome = e->outcome;
	return 0;
}

int az_c4_labels_keeps(struct az_c4_labels *l, long i, int col, int *keeps)
{
	struct entry *e = &l->e[i];
	uint8_t child[AZ_GAME_STATE_MAX];
	int rc, o, at_least;
	float v;

	if (col < 0 || col > 6 || e->keeps[col] == '-')
		return -EINVAL;
	if (e->keeps[col] == '?') {
		if ((rc = az_c4_labels_outcome(l, i, &o)) < 0)
			return rc;
		az_game_after(c4, e->state, col, child);
		if (o < 0) {
			at_least = 0; /* nothing can lose a lost position further */
		} else if (c4->terminal(child, &v)) {
			at_least = v < 0 ? 0 : o > 0; /* the mover won; or a full board, a draw */
		} else {
			/* The move keeps a win when the opponent's score is <= -1 (not >= 0), a
			 * draw when it is <= 0 (not >= 1). */
			if ((rc = need_solver(l)) < 0 ||
			    (rc = az_c4_solver_at_least(l->solver, child, o > 0 ? 0 : 1,
							&at_least)) < 0)
				return rc;
		}
		e->keeps[col] = at_least ? 'x' : '+';
		l->dirty = 1;
	}
	*keeps = e->keeps[col] == '+';
	return 0;
}

int az_c4_labels_dirty(const struct az_c4_labels *l)
{
	return l->dirty;
}

int az_c4_labels_merge(struct az_c4_labels *l, const char *cache)
{
	char line[AZ_POSITIONS_LINE_MAX + 2];
	long learned = 0;
	FILE *f = fopen(cache, "r");

	if (!f)
		return 0;
	for (long i = 0; i < l->n && fgets(line, sizeof(line), f); i++) {
		struct entry before = l->e[i];

		merge_line(&l->e[i], line);
		learned += memcmp(before.keeps, l->e[i].keeps, sizeof(before.keeps)) != 0 ||
			   before.outcome != l->e[i].outcome;
	}
	fclose(f);
	l->dirty |= learned > 0;
	return (int)(learned < INT_MAX ? learned : INT_MAX);
}

/* Write l's labels to path (temporary name, then rename). */
static int save_to(const struct az_c4_labels *l, const char *path, char *err, size_t errlen)
{
	char tmp[PATH_MAX + 32];
	FILE *f;
	int bad = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (make_parent(path) < 0 || !(f = fopen(tmp, "w"))) {
		snprintf(err, errlen, "cannot write the labels cache %s: %s", tmp, strerror(errno));
		return -EIO;
	}
	for (long i = 0; i < l->n; i++) {
		const struct entry *e = &l->e[i];

		/* Not asked yet (unknown outcome): a line merge_line() skips. */
		bad |= az_eval_write_label(f, e->moves, e->outcome, e->keeps) < 0;
	}
	/* Lines of the old cache beyond ours (opened with a smaller limit): kept, so that a
	 * --limit or a smaller --bench-positions never forgets what a larger one learned. */
	FILE *old = fopen(path, "r");
	char line[AZ_POSITIONS_LINE_MAX + 2];
	for (long i = 0; old && fgets(line, sizeof(line), old); i++)
		if (i >= l->n)
			bad |= fputs(line, f) < 0;
	if (old)
		fclose(old);
	if (fclose(f) != 0 || bad || rename(tmp, path) < 0) {
		snprintf(err, errlen, "cannot write the labels cache %s: %s", path,
			 strerror(errno));
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

int az_c4_labels_save(struct az_c4_labels *l, char *err, size_t errlen)
{
	if (!l->dirty)
		return 0;
	int rc = save_to(l, l->path, err, errlen);
	if (rc == 0)
		l->dirty = 0;
	return rc;
}

int az_c4_labels_save_as(const struct az_c4_labels *l, const char *path, char *err,
			 size_t errlen)
{
	return save_to(l, path, err, errlen);
}

void az_c4_labels_close(struct az_c4_labels *l)
{
	if (!l)
		return;
	for (long i = 0; i < l->n; i++)
		free(l->e[i].moves);
	free(l->e);
	az_c4_solver_destroy(l->solver);
	free(l);
}

long az_c4_tactics_write(const char *path, enum az_c4_tactic kind, long count,
			 unsigned long long seed, char *err, size_t errlen)
{
	uint8_t st[AZ_GAME_STATE_MAX], mask[7];
	char moves[64], tmp[PATH_MAX + 32];
	struct az_rng rng;
	long got = 0;
	FILE *f;
	float v;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	f = fopen(tmp, "w");
	if (!f) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		return -EIO;
	}
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
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		return -EIO;
	}
	return got;
}
