/* SPDX-License-Identifier: MIT */
/* The labels caches' core (eval/labels.h): entries, questions answered from the cache or the
 * game's solver, and the cache file read, merged and written. The openers are c4_labels.c and
 * tangled_labels.c (eval/eval_impl.h). */
#include "eval/labels.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "eval/eval_impl.h"
#include "eval/positions.h"

struct entry {
	char *moves;    /* the position's move string, as in the source */
	uint8_t *state; /* g->state_bytes */
	int8_t outcome; /* -1, 0, +1, or AZ_EVAL_LABEL_UNKNOWN */
	long line;      /* its line in the source, from 1 */
	char *keeps;    /* g->actions characters and a NUL */
};

struct az_labels {
	const struct az_game *g;
	char path[PATH_MAX];
	char header[1400]; /* the cache file's first line, without its newline ("": none) */
	int keep_tail;
	const struct az_labels_solver *solver;
	void *ctx; /* the solver's: borrowed, or made by solver->create (NULL until then) */
	struct entry *e;
	long n, cap;
	int dirty;
};

/* Append a position with its outcome (AZ_EVAL_LABEL_UNKNOWN: to be solved); its illegal
 * actions are marked. Returns 0 or -ENOMEM. */
static int add(struct az_labels *l, const char *moves, const void *state, int outcome, long line)
{
	const struct az_game *g = l->g;
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	struct entry *e;

	if (l->n == l->cap) {
		long c = l->cap ? 2 * l->cap : 256;

		e = realloc(l->e, (size_t)c * sizeof(*e));
		if (!e)
			return -ENOMEM;
		l->e = e;
		l->cap = c;
	}
	e = &l->e[l->n];
	e->moves = strdup(moves);
	e->state = malloc(g->state_bytes);
	e->keeps = malloc(g->actions + 1);
	if (!e->moves || !e->state || !e->keeps) {
		free(e->moves);
		free(e->state);
		free(e->keeps);
		return -ENOMEM;
	}
	memcpy(e->state, state, g->state_bytes);
	e->outcome = (int8_t)outcome;
	e->line = line;
	g->legal(state, mask);
	for (uint32_t a = 0; a < g->actions; a++)
		e->keeps[a] = mask[a] ? '?' : '-';
	e->keeps[g->actions] = '\0';
	l->n++;
	return 0;
}

/* Whether a cache line "<moves> <outcome> <keeps>" (az_eval_write_label) is well formed for g:
 * its outcome -1, 0, 1, or '?' (*outcome = AZ_EVAL_LABEL_UNKNOWN), and its keeps (into keeps,
 * AZ_GAME_ACTIONS_MAX + 2 bytes) one character per action. */
static int label_fields(const struct az_game *g, const char *line, int *outcome, char *keeps)
{
	char word[8], *end;

	if (sscanf(line, "%*s %7s %513s", word, keeps) != 2 || strlen(keeps) != g->actions)
		return 0;
	if (strcmp(word, "?") == 0) {
		*outcome = AZ_EVAL_LABEL_UNKNOWN;
		return 1;
	}
	long v = strtol(word, &end, 10);
	*outcome = (int)v;
	return *end == '\0' && end != word && v >= -1 && v <= 1;
}

/* Take what one cache line knows about e, if its moves match and its outcome is known and
 * agrees with e's (an outcome from the source's scores). */
static void merge_line(const struct az_game *g, struct entry *e, const char *line)
{
	char moves[AZ_POSITIONS_LINE_MAX + 2], keeps[AZ_GAME_ACTIONS_MAX + 2];
	int outcome;

	az_eval_first_field(line, moves, sizeof(moves));
	if (strcmp(moves, e->moves) != 0 || !label_fields(g, line, &outcome, keeps) ||
	    outcome == AZ_EVAL_LABEL_UNKNOWN ||
	    (e->outcome != AZ_EVAL_LABEL_UNKNOWN && e->outcome != outcome))
		return;
	for (uint32_t a = 0; a < g->actions; a++)
		if ((keeps[a] == '+' || keeps[a] == 'x') && e->keeps[a] == '?')
			e->keeps[a] = keeps[a];
	e->outcome = (int8_t)outcome;
}

/* The actions of an entry not solved yet ('?'): merge_line() only ever solves them. */
static long count_unsolved(const char *keeps)
{
	long n = 0;

	for (; *keeps; keeps++)
		n += *keeps == '?';
	return n;
}

/* Whether line (read with its newline) is l's header. */
static int is_header(const struct az_labels *l, const char *line)
{
	size_t n = strlen(l->header);

	return strncmp(line, l->header, n) == 0 && strcspn(line + n, "\n") == 0;
}

/* Merge cache file path into l's entries: line i (after the header, which must be l's) describes
 * position i when the moves match; others are ignored (the source changed). Returns the number
 * of positions that learned something. */
static long merge_file(struct az_labels *l, const char *path)
{
	char line[AZ_POSITIONS_LINE_MAX + 2];
	long learned = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	/* only labels of the same game configuration count */
	if (l->header[0] && (!fgets(line, sizeof(line), f) || !is_header(l, line))) {
		fclose(f);
		return 0;
	}
	for (long i = 0; i < l->n && fgets(line, sizeof(line), f); i++) {
		struct entry *e = &l->e[i];
		int8_t outcome = e->outcome;
		long unsolved = count_unsolved(e->keeps);

		merge_line(l->g, e, line);
		learned += outcome != e->outcome || count_unsolved(e->keeps) != unsolved;
	}
	fclose(f);
	return learned;
}

/* Whether the file at path may be replaced by l's cache: absent, empty, or a labels cache (a
 * header line of l's kind, "# tangled-labels ", of this configuration or another, or a first
 * line "<moves> <outcome> <keeps>" whose keeps has one of '+', 'x', '?', '-' per action).
 * Anything else, a positions file above all (the source src itself under any name, or one that
 * starts with a comment or its board line), or notes, is refused: az_labels_save() would
 * overwrite it. */
static int replaceable(const struct az_labels *l, const char *path, const char *src)
{
	char line[AZ_POSITIONS_LINE_MAX + 2], keeps[AZ_GAME_ACTIONS_MAX + 2];
	struct stat a, b;
	FILE *f = fopen(path, "r");
	int ok, outcome;

	if (!f)
		return 1;
	/* a cache header of l's kind, of any configuration: "# tangled-labels " */
	const char *sp = strchr(l->header + (l->header[0] ? 2 : 0), ' ');
	size_t kind = l->header[0] && sp ? (size_t)(sp - l->header) + 1 : 0;

	ok = !fgets(line, sizeof(line), f) || (kind && strncmp(line, l->header, kind) == 0) ||
	     (label_fields(l->g, line, &outcome, keeps) && strspn(keeps, "+x?-") == l->g->actions);
	if (ok && fstat(fileno(f), &a) == 0 && stat(src, &b) == 0)
		ok = a.st_dev != b.st_dev || a.st_ino != b.st_ino;
	fclose(f);
	return ok;
}

/* az_eval_read_source's add for az_labels_open: arg is a struct opening. */
struct opening {
	struct az_labels *l;
	int scores;
};

static int open_add(void *arg, const char *moves, const struct az_position *pos, long line)
{
	struct opening *o = arg;
	int outcome = o->scores && pos->has_score ? (pos->score > 0) - (pos->score < 0) :
						    AZ_EVAL_LABEL_UNKNOWN;

	return add(o->l, moves, pos->state, outcome, line);
}

int az_labels_open(const struct az_labels_spec *p, const char *src, const char *cache, long limit,
		   struct az_labels **out, char *err, size_t errlen)
{
	struct az_labels *l = calloc(1, sizeof(*l));
	struct opening o = {.l = l, .scores = p->scores};
	int rc;

	if (!l)
		return -ENOMEM;
	l->g = p->g;
	snprintf(l->path, sizeof(l->path), "%s", cache);
	snprintf(l->header, sizeof(l->header), "%s", p->header ? p->header : "");
	l->keep_tail = p->keep_tail;
	l->solver = p->solver;
	l->ctx = p->ctx;
	if (!replaceable(l, l->path, src)) {
		snprintf(err, errlen,
			 "%s is not a labels cache (its first line is not one), and "
			 "saving the labels would replace it: name a new file or an old cache",
			 l->path);
		az_labels_close(l);
		return -EINVAL;
	}
	rc = az_eval_read_source(l->g, src, limit, open_add, &o, err, errlen);
	if (rc < 0) {
		az_labels_close(l);
		return rc;
	}
	merge_file(l, l->path);
	*out = l;
	return 0;
}

long az_labels_count(const struct az_labels *l)
{
	return l->n;
}

const char *az_labels_moves(const struct az_labels *l, long i)
{
	return l->e[i].moves;
}

long az_labels_line(const struct az_labels *l, long i)
{
	return l->e[i].line;
}

const void *az_labels_state(const struct az_labels *l, long i)
{
	return l->e[i].state;
}

/* The solver, made on the first question the cache cannot answer when it is the cache's. */
static int need_solver(struct az_labels *l)
{
	return l->ctx || !l->solver->create ? 0 : l->solver->create(&l->ctx);
}

int az_labels_outcome(struct az_labels *l, long i, int *outcome)
{
	struct entry *e = &l->e[i];
	int rc, v;

	if (e->outcome == AZ_EVAL_LABEL_UNKNOWN) {
		if ((rc = need_solver(l)) < 0 ||
		    (rc = l->solver->outcome(l->ctx, e->state, &v)) < 0)
			return rc;
		e->outcome = (int8_t)v;
		l->dirty = 1;
	}
	*outcome = e->outcome;
	return 0;
}

int az_labels_keeps(struct az_labels *l, long i, int a, int *keeps)
{
	struct entry *e = &l->e[i];
	uint8_t child[AZ_GAME_STATE_MAX];
	int rc, o, worse;

	if (a < 0 || (uint32_t)a >= l->g->actions || e->keeps[a] == '-')
		return -EINVAL;
	if (e->keeps[a] == '?') {
		if ((rc = az_labels_outcome(l, i, &o)) < 0)
			return rc;
		az_game_after(l->g, e->state, a, child);
		if ((rc = need_solver(l)) < 0 ||
		    (rc = l->solver->worse(l->ctx, child, o, &worse)) < 0)
			return rc;
		e->keeps[a] = worse ? 'x' : '+';
		l->dirty = 1;
	}
	*keeps = e->keeps[a] == '+';
	return 0;
}

int az_labels_dirty(const struct az_labels *l)
{
	return l->dirty;
}

int az_labels_merge(struct az_labels *l, const char *cache)
{
	long learned = merge_file(l, cache);

	l->dirty |= learned > 0;
	return (int)(learned < INT_MAX ? learned : INT_MAX);
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

/* Copy the lines of the old cache at path beyond l's positions (opened with a smaller limit)
 * to f, so that a --limit or a smaller --bench-positions never forgets what a larger one
 * learned. Returns nonzero when a write failed. */
static int copy_tail(const struct az_labels *l, const char *path, FILE *f)
{
	char line[AZ_POSITIONS_LINE_MAX + 2];
	FILE *old = fopen(path, "r");
	int bad = 0;

	if (!old)
		return 0;
	if (!l->header[0] || (fgets(line, sizeof(line), old) && is_header(l, line)))
		for (long i = 0; fgets(line, sizeof(line), old); i++)
			if (i >= l->n)
				bad |= fputs(line, f) < 0;
	fclose(old);
	return bad;
}

/* Write l's labels to path (temporary name, then rename). */
static int save_to(const struct az_labels *l, const char *path, char *err, size_t errlen)
{
	struct az_atomic_file af;
	int bad = 0, rc;

	rc = make_parent(path);
	if (rc < 0) {
		snprintf(err, errlen,
			 "cannot write the labels cache %s: cannot create its folder (%s)", path,
			 strerror(-rc));
		return rc;
	}
	rc = az_atomic_open(&af, path, err, errlen);
	if (rc < 0) {
		snprintf(err, errlen,
			 "cannot write the labels cache %s: cannot create a file in its "
			 "folder (%s)",
			 path, strerror(-rc));
		return rc;
	}
	if (l->header[0])
		bad |= fprintf(af.f, "%s\n", l->header) < 0;
	for (long i = 0; i < l->n; i++) {
		const struct entry *e = &l->e[i];

		/* Not asked yet (unknown outcome): a line merge_line() skips. */
		bad |= az_eval_write_label(af.f, e->moves, e->outcome, e->keeps) < 0;
	}
	if (l->keep_tail)
		bad |= copy_tail(l, path, af.f);
	if (bad) {
		snprintf(err, errlen, "cannot write the labels cache %s: write failed (%s)", path,
			 strerror(errno ? errno : EIO));
		az_atomic_abort(&af);
		return -EIO;
	}
	rc = az_atomic_commit(&af, err, errlen);
	if (rc < 0)
		snprintf(err, errlen, "cannot write the labels cache %s: %s", path, strerror(-rc));
	return rc;
}

int az_labels_save(struct az_labels *l, char *err, size_t errlen)
{
	int rc;

	if (!l->dirty)
		return 0;
	rc = save_to(l, l->path, err, errlen);
	if (rc == 0)
		l->dirty = 0;
	return rc;
}

int az_labels_save_as(const struct az_labels *l, const char *path, char *err, size_t errlen)
{
	return save_to(l, path, err, errlen);
}

void az_labels_close(struct az_labels *l)
{
	if (!l)
		return;
	for (long i = 0; i < l->n; i++) {
		free(l->e[i].moves);
		free(l->e[i].state);
		free(l->e[i].keeps);
	}
	free(l->e);
	if (l->solver->create && l->ctx)
		l->solver->destroy(l->ctx);
	free(l);
}
