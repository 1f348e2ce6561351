/* SPDX-License-Identifier: MIT */
/* The Tangled benchmark of azrun --bench auto (eval/tangled_bench.h). */
#include "eval/tangled_bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "eval/eval_impl.h"
#include "eval/match.h"
#include "eval/net_eval.h"
#include "eval/positions.h"
#include "eval/tangled_labels.h"
#include "games/game.h"
#include "games/tangled/tangled.h"
#include "games/tangled/tangled_solve.h"

#define PATH_LEN 4096
#define MANIFEST "tangled_sets.txt"

int az_tangled_bench_depths(int edges, int *depth)
{
	int deepest = (3 * edges + 2) / 4; /* round(3E/4), halves up */
	int want[AZ_TANGLED_BENCH_SETS], n = 0;
	if (deepest > AZ_TANGLED_BENCH_DEEPEST)
		deepest = AZ_TANGLED_BENCH_DEEPEST;
	want[0] = (deepest + 1) / 2;
	want[1] = (3 * deepest + 2) / 4;
	want[2] = deepest;
	for (int i = 0; i < AZ_TANGLED_BENCH_SETS; i++) {
		int d = want[i] < 1 ? 1 : want[i];
		if (n == 0 || d > depth[n - 1])
			depth[n++] = d;
	}
	return n;
}

/* What the manifest says for the configured game and p: graph, edges, size, depths. */
static int manifest_text(const struct az_tangled_bench_params *p, char *buf, size_t len,
			 int *depth, int *n)
{
	const struct az_tangled_graph *tg = az_tangled_current_graph();
	if (!tg || !az_tangled_game())
		return -EINVAL;
	*n = az_tangled_bench_depths(tg->e, depth);
	size_t k = (size_t)snprintf(buf, len, "tangled-bench 1 graph=%s edges=%d positions=%ld "
				    "depths=", tg->name, tg->e, p->positions);
	for (int i = 0; i < *n && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%d", i ? "," : "", depth[i]);
	if (k < len)
		snprintf(buf + k, len - k, "\n");
	return 0;
}

static void set_path(const struct az_tangled_bench_params *p, int depth, char *buf, size_t len)
{
	snprintf(buf, len, "%s/tangled_u%d.txt", p->work, depth);
}

/* Read a set written by az_tangled_labelled_write: every line needs its best moves. Returns the
 * positions in *out (malloc'd, *n >= 1), or -ENOENT / -EINVAL (message in err) / -ENOMEM. */
static int load_set(const char *path, struct az_position **out, long *n, char *err,
		    size_t errlen)
{
	FILE *f = fopen(path, "r");
	*out = NULL;
	*n = 0;
	if (!f) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -ENOENT;
	}
	int rc = az_eval_read_best(az_tangled_game(), f, path, 0, out, n, err, errlen);
	fclose(f);
	if (rc == 0 && *n == 0) {
		snprintf(err, errlen, "%s holds no positions", path);
		rc = -EINVAL;
	}
	return rc;
}

int az_tangled_bench_ready(const struct az_tangled_bench_params *p)
{
	char want[512], path[PATH_LEN], e[400], *have = NULL;
	int depth[AZ_TANGLED_BENCH_SETS], n, ok;
	if (manifest_text(p, want, sizeof(want), depth, &n) < 0)
		return 0;
	snprintf(path, sizeof(path), "%s/" MANIFEST, p->work);
	ok = az_read_file(path, &have, NULL) == 0 && strcmp(have, want) == 0;
	free(have);
	for (int i = 0; i < n && ok; i++) {
		struct az_position *pos;
		long k;
		set_path(p, depth[i], path, sizeof(path));
		ok = load_set(path, &pos, &k, e, sizeof(e)) == 0;
		if (ok)
			free(pos);
	}
	return ok;
}

/* One benchmark in progress. */
struct bench {
	const struct az_tangled_bench_params *p;
	struct az_tangled_bench_result *r;
	long done, total;
};

static void step(struct bench *b, long k)
{
	b->done += k;
	if (b->p->tick)
		b->p->tick(b->p->tick_arg, b->done, b->total);
}

/* Label every set (uniformly random games, AZ_TANGLED_BENCH_SEED + depth), then the manifest.
 * Returns 0 or -errno with a message in err. */
static int label_sets(struct bench *b, const int *depth, int n, const char *manifest,
		      char *err, size_t errlen)
{
	struct az_tangled_solve_params sp;
	struct az_tangled_solver *s;
	char path[PATH_LEN];
	double t0 = az_now();
	int rc;
	az_tangled_solve_params_default(&sp);
	sp.max_nodes = b->p->solve_nodes;
	if ((rc = az_tangled_solver_create(&sp, &s)) < 0) {
		snprintf(err, errlen, "the Tangled solver: %s", strerror(-rc));
		return rc;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		struct az_tangled_sample smp = {.uncoloured = depth[i], .count = b->p->positions,
						.seed = AZ_TANGLED_BENCH_SEED + (uint64_t)depth[i],
						.board = b->p->board};
		struct az_tangled_sample_result sr;
		set_path(b->p, depth[i], path, sizeof(path));
		rc = az_tangled_labelled_write(path, &smp, s, &sr, err, errlen);
		if (rc == 0 && sr.written == 0) {
			snprintf(err, errlen, "no position with %d uncoloured edges could be labelled "
				 "(%ld games, %ld unsolved within %llu nodes)", depth[i], sr.games,
				 sr.unsolved, (unsigned long long)b->p->solve_nodes);
			rc = -EINVAL;
		}
		step(b, b->p->positions);
	}
	az_tangled_solver_destroy(s);
	snprintf(path, sizeof(path), "%s/" MANIFEST, b->p->work);
	if (rc == 0)
		rc = az_write_file_atomic(path, manifest, strlen(manifest), err, errlen);
	b->r->labelled = rc == 0;
	b->r->label_seconds = az_now() - t0;
	return rc;
}

/* Mistakes of the agent (raw policy when sims is 0) on n positions: moves not among the
 * solver's best (every move of a lost position is). Returns the count or a negative errno. */
static long mistakes(const struct az_position *pos, long n, az_eval_fn fn, void *ctx,
		     struct az_tree *t, uint32_t sims)
{
	long ok = az_eval_count_best(az_tangled_game(), pos, n, fn, ctx, t, sims);
	return ok < 0 ? ok : n - ok;
}

/* Set i of depth d: raw policy, then agent. */
static int measure_set(struct bench *b, int i, int d, az_eval_fn fn, void *ctx,
		       struct az_tree *t, char *err, size_t errlen)
{
	char path[PATH_LEN];
	struct az_position *pos;
	long n;
	set_path(b->p, d, path, sizeof(path));
	int rc = load_set(path, &pos, &n, err, errlen);
	if (rc < 0)
		return rc;
	long pm = mistakes(pos, n, fn, ctx, NULL, 0);
	long am = pm < 0 ? pm : mistakes(pos, n, fn, ctx, t, b->p->sims);
	free(pos);
	if (am < 0) {
		snprintf(err, errlen, "tangled_u%d: evaluation failed: %s", d, strerror((int)-am));
		return (int)am;
	}
	b->r->depth[i] = d;
	b->r->n[i] = n;
	b->r->policy[i] = (double)pm / (double)n;
	b->r->agent[i] = (double)am / (double)n;
	step(b, 2 * b->p->positions);
	return 0;
}

static void game_tick(void *arg, long done)
{
	(void)done;
	step(arg, 1);
}

/* p->games against rollout MCTS at p->sims, the agent's search as in the sets. */
static int versus_rollout(struct bench *b, az_eval_fn fn, void *ctx, char *err, size_t errlen)
{
	struct az_match_params mp = {.g = az_tangled_game(), .fn = fn, .ctx = ctx, .mp = &b->p->mp,
				     .sims = b->p->sims, .opponent = AZ_MATCH_ROLLOUT,
				     .vs_sims = b->p->sims, .games = b->p->games,
				     .seed = AZ_TANGLED_BENCH_SEED, .tick = game_tick,
				     .tick_arg = b};
	struct az_match_result mr;
	int rc = az_match_play(&mp, &mr);
	if (rc < 0) {
		snprintf(err, errlen, "games against rollout MCTS: %s", strerror(-rc));
		return rc;
	}
	b->r->wins = mr.wins;
	b->r->draws = mr.draws;
	b->r->losses = mr.losses;
	b->r->vs_rollout = mr.score;
	return 0;
}

int az_tangled_bench_run(const struct az_tangled_bench_params *p, az_eval_fn fn, void *ctx,
			 struct az_tangled_bench_result *r, char *err, size_t errlen)
{
	double t0 = az_now();
	char manifest[512];
	int depth[AZ_TANGLED_BENCH_SETS], n, rc;
	uint8_t st[AZ_GAME_STATE_MAX];
	struct az_mcts_params mp = p->mp;
	struct az_tree *tree;
	struct bench b = {.p = p, .r = r};
	memset(r, 0, sizeof(*r));
	if (manifest_text(p, manifest, sizeof(manifest), depth, &n) < 0) {
		snprintf(err, errlen, "the benchmark: Tangled is not configured");
		return -EINVAL;
	}
	if ((rc = az_mkdir_p(p->work)) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", p->work, strerror(-rc));
		return rc;
	}
	int ready = az_tangled_bench_ready(p);
	b.total = (ready ? 0 : n) * p->positions + 2L * n * p->positions + p->games;
	if (!ready && (rc = label_sets(&b, depth, n, manifest, err, errlen)) < 0)
		return rc;
	mp.dir_eps = 0; /* the agent as it plays the arena's greedy moves: no noise */
	az_tangled_game()->init(st);
	if ((rc = az_tree_create(az_tangled_game(), &mp, st, &tree)) < 0) {
		snprintf(err, errlen, "benchmark: out of memory");
		return rc;
	}
	for (int i = 0; i < n && rc == 0; i++)
		rc = measure_set(&b, i, depth[i], fn, ctx, tree, err, errlen);
	az_tree_destroy(tree);
	r->sets = n;
	if (rc == 0 && p->games > 0)
		rc = versus_rollout(&b, fn, ctx, err, errlen);
	r->seconds = az_now() - t0;
	return rc;
}

int az_tangled_bench_checkpoint(const struct az_tangled_bench_params *p, const char *ckpt,
				struct az_tangled_bench_result *r, char *err, size_t errlen)
{
	const struct az_game *g = az_tangled_game();
	struct az_opened_net net;
	int rc = g ? az_eval_open_cpu(g, ckpt, &net, err, errlen) : -EINVAL;

	if (!g)
		snprintf(err, errlen, "the benchmark: Tangled is not configured");
	if (rc == 0) {
		rc = az_tangled_bench_run(p, az_net_eval, &net.eval, r, err, errlen);
		az_net_close(&net);
	}
	return rc;
}
