/* SPDX-License-Identifier: MIT */
/* The Connect Four benchmark of azrun --bench (eval/c4_bench.h). */
#include "eval/c4_bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "eval/eval_impl.h"
#include "eval/net_eval.h"
#include "games/game.h"

#define PATH_LEN 4096

const char *const az_c4_bench_names[AZ_C4_BENCH_SETS] = {
	"L1_R1", "L1_R2", "L1_R3", "L2_R1", "L2_R2", "L3_R1", "win1", "block"};

static const struct az_game *const c4 = &az_game_connect4;

int az_c4_bench_check(const char *dir, long positions, char *err, size_t errlen)
{
	char src[PATH_LEN], e[600];
	struct stat sb;
	if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "--bench %s: %s; it must be a folder holding Pascal Pons' sets "
			 "Test_L1_R1 ... Test_L3_R1 (as ../shared/data/connect4)", dir,
			 stat(dir, &sb) < 0 ? strerror(errno) : "not a directory");
		return -ENOENT;
	}
	for (int s = 0; s < AZ_C4_BENCH_PONS; s++) {
		struct az_labels *l;
		snprintf(src, sizeof(src), "%s/Test_%s", dir, az_c4_bench_names[s]);
		/* No cache: only the positions are read (an empty path opens nothing). */
		int odd = stat(src, &sb) == 0 && !S_ISREG(sb.st_mode);
		int rc = odd ? -EINVAL : az_c4_labels_open(src, "", positions, &l, e, sizeof(e));
		if (odd)
			snprintf(e, sizeof(e), "%s: not a regular file", src);
		if (rc == 0 && az_labels_count(l) == 0) {
			snprintf(e, sizeof(e), "%s holds no positions", src);
			rc = -EINVAL;
		}
		if (rc == 0)
			az_labels_close(l);
		if (rc < 0) {
			snprintf(err, errlen, "--bench %s: %s; the folder must hold Pascal Pons' sets "
				 "Test_L1_R1 ... Test_L3_R1 (as ../shared/data/connect4)", dir, e);
			return rc == -ENOMEM ? rc : rc == -EINVAL ? -EINVAL : -ENOENT;
		}
	}
	return 0;
}

long az_c4_bench_mistakes(struct az_labels *l, long n, az_eval_fn fn, void *ctx,
			  struct az_tree *t, uint32_t sims)
{
	long mistakes = 0;
	for (long i = 0; i < n && i < az_labels_count(l); i++) {
		int keeps, a = az_eval_move(c4, fn, ctx, t, sims, az_labels_state(l, i));
		int rc = a < 0 ? a : az_labels_keeps(l, i, a, &keeps);
		if (rc < 0)
			return rc;
		mistakes += !keeps;
	}
	return mistakes;
}

int az_c4_bench_label(struct az_labels *l, long n, void (*tick)(void *arg, long i),
		      void *arg)
{
	for (long i = 0; i < n && i < az_labels_count(l); i++) {
		for (int c = 0, keeps; c < 7; c++) {
			int rc = az_labels_keeps(l, i, c, &keeps);
			if (rc < 0 && rc != -EINVAL) /* -EINVAL: a full column */
				return rc;
		}
		if (tick)
			tick(arg, i + 1);
	}
	return 0;
}

int az_c4_bench_load_tactics(const char *path, long limit, struct az_position **out, long *n,
			     char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	*out = NULL;
	*n = 0;
	if (!f) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return errno == ENOENT ? -ENOENT : -EINVAL;
	}
	int rc = az_eval_read_best(c4, f, path, limit, out, n, err, errlen);
	fclose(f);
	return rc;
}

long az_c4_bench_tactics(const struct az_position *pos, long n, az_eval_fn fn, void *ctx,
			 struct az_tree *t, uint32_t sims)
{
	return az_eval_count_best(c4, pos, n, fn, ctx, t, sims);
}

/* One benchmark in progress. */
struct bench {
	const struct az_c4_bench_params *p;
	az_eval_fn fn;
	void *ctx;
	struct az_tree *tree;
	struct az_c4_bench_result *r;
	long done, total; /* steps: each position labelled, then measured twice */
	char *err;
	size_t errlen;
};

static void step(struct bench *b, long k)
{
	b->done += k;
	if (b->p->tick)
		b->p->tick(b->p->tick_arg, b->done, b->total);
}

/* Labelling in progress: the first benchmark of a run may solve for minutes. */
struct labelling {
	struct bench *b;
	struct az_labels *l;
	double saved; /* az_now() of the last save */
	int solved;   /* something was solved and saved on the way */
};

#define LABEL_SAVE_S 10.0 /* a stop loses at most this much solving */

static void label_tick(void *arg, long i)
{
	struct labelling *lb = arg;
	(void)i;
	step(lb->b, 1);
	if (az_now() - lb->saved >= LABEL_SAVE_S) {
		lb->saved = az_now();
		lb->solved |= az_labels_dirty(lb->l);
		az_labels_save(lb->l, (char[600]){0}, 600); /* failures: the final save says */
	}
}

/* Raw policy, then agent: r's fractions of set s from their counts over n positions. */
static void store(struct bench *b, int s, long n, long policy, long agent)
{
	b->r->n[s] = n;
	b->r->policy[s] = n ? (double)policy / (double)n : 0.0;
	b->r->agent[s] = n ? (double)agent / (double)n : 0.0;
	step(b, 2 * n);
}

/* Pons set s: its labels from the run's cache and from the machine's (the one azeval
 * --mistakes keeps, az_c4_labels_path), every move of the sample solved at the first
 * benchmark of a run, then both measured. A save keeps the cache lines beyond the sample, so
 * the machine's cache keeps what azeval or a larger --bench-positions learned. */
static int pons_set(struct bench *b, int s)
{
	char src[PATH_LEN], cache[PATH_LEN], shared[PATH_LEN], e[600];
	struct az_labels *l;
	snprintf(src, sizeof(src), "%s/Test_%s", b->p->dir, az_c4_bench_names[s]);
	snprintf(cache, sizeof(cache), "%s/Test_%s.labels", b->p->work, az_c4_bench_names[s]);
	int rc = az_c4_labels_open(src, cache, b->p->positions, &l, e, sizeof(e));
	if (rc < 0) {
		snprintf(b->err, b->errlen, "%s", e);
		return rc;
	}
	int have_shared = az_c4_labels_path(src, shared, sizeof(shared)) == 0 &&
			  strcmp(shared, cache) != 0;
	if (have_shared)
		az_labels_merge(l, shared);
	long n = az_labels_count(l) < b->p->positions ? az_labels_count(l)
							   : b->p->positions;
	struct labelling lb = {.b = b, .l = l, .saved = az_now()};
	e[0] = '\0';
	rc = az_labels_save(l, e, sizeof(e)); /* what the machine's cache taught */
	if (rc == 0)
		rc = az_c4_bench_label(l, n, label_tick, &lb);
	int solved = rc == 0 && (lb.solved || az_labels_dirty(l));
	if (rc == 0)
		rc = az_labels_save(l, e, sizeof(e));
	/* Best effort: a machine cache that cannot be written only loses the sharing. */
	if (rc == 0 && solved && have_shared)
		az_labels_save_as(l, shared, (char[600]){0}, 600);
	long pm = rc < 0 ? rc : az_c4_bench_mistakes(l, n, b->fn, b->ctx, NULL, 0);
	long am = pm < 0 ? pm : az_c4_bench_mistakes(l, n, b->fn, b->ctx, b->tree, b->p->sims);
	az_labels_close(l);
	if (am < 0) {
		if (!e[0])
			snprintf(e, sizeof(e), "%s", strerror((int)-am));
		snprintf(b->err, b->errlen, "Test_%s: %s", az_c4_bench_names[s], e);
		return (int)am;
	}
	store(b, s, n, pm, am);
	return 0;
}

/* The tactical set s (win1 or block): written once, then measured. */
static int tactic_set(struct bench *b, int s)
{
	char path[PATH_LEN], e[600];
	struct az_position *pos = NULL;
	long n = 0;
	enum az_c4_tactic kind = s == AZ_C4_BENCH_WIN1 ? AZ_C4_TACTIC_WIN : AZ_C4_TACTIC_BLOCK;
	snprintf(path, sizeof(path), "%s/tactic_%s.txt", b->p->work, az_c4_bench_names[s]);
	int rc = az_c4_bench_load_tactics(path, 0, &pos, &n, e, sizeof(e));
	if (rc < 0 || n != b->p->positions) { /* missing, damaged, or of another --bench-positions */
		free(pos);
		pos = NULL;
		long w = az_c4_tactics_write(path, kind, b->p->positions, AZ_C4_BENCH_TACTIC_SEED, e,
					     sizeof(e));
		rc = w < 0 ? (int)w : az_c4_bench_load_tactics(path, 0, &pos, &n, e, sizeof(e));
	}
	if (rc < 0) {
		snprintf(b->err, b->errlen, "%s", e);
		return rc;
	}
	long po = az_c4_bench_tactics(pos, n, b->fn, b->ctx, NULL, 0);
	long ag = po < 0 ? po : az_c4_bench_tactics(pos, n, b->fn, b->ctx, b->tree, b->p->sims);
	free(pos);
	if (ag < 0) {
		snprintf(b->err, b->errlen, "tactic_%s: evaluation failed: %s",
			 az_c4_bench_names[s], strerror((int)-ag));
		return (int)ag;
	}
	store(b, s, n, po, ag);
	return 0;
}

int az_c4_bench_run(const struct az_c4_bench_params *p, az_eval_fn fn, void *ctx,
		    struct az_c4_bench_result *r, char *err, size_t errlen)
{
	double t0 = az_now();
	uint8_t st[AZ_GAME_STATE_MAX];
	struct az_mcts_params mp = p->mp;
	struct bench b = {.p = p, .fn = fn, .ctx = ctx, .r = r, .err = err, .errlen = errlen,
			  .total = (2 * AZ_C4_BENCH_SETS + AZ_C4_BENCH_PONS) * p->positions};
	memset(r, 0, sizeof(*r));
	int rc = az_mkdir_p(p->work);
	if (rc < 0) {
		snprintf(err, errlen, "cannot create %s: %s", p->work, strerror(-rc));
		return rc;
	}
	mp.dir_eps = 0; /* the agent as it plays the arena's greedy moves: no noise */
	c4->init(st);
	if ((rc = az_tree_create(c4, &mp, st, &b.tree)) < 0) {
		snprintf(err, errlen, "benchmark: out of memory");
		return rc;
	}
	for (int s = 0; s < AZ_C4_BENCH_SETS && rc == 0; s++)
		rc = s < AZ_C4_BENCH_PONS ? pons_set(&b, s) : tactic_set(&b, s);
	az_tree_destroy(b.tree);
	r->seconds = az_now() - t0;
	return rc;
}

int az_c4_bench_checkpoint(const struct az_c4_bench_params *p, const char *ckpt,
			   struct az_c4_bench_result *r, char *err, size_t errlen)
{
	struct az_opened_net net;
	int rc = az_eval_open_cpu(c4, ckpt, &net, err, errlen);

	if (rc == 0) {
		rc = az_c4_bench_run(p, az_net_eval, &net.eval, r, err, errlen);
		az_net_close(&net);
	}
	return rc;
}
