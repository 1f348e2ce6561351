/* SPDX-License-Identifier: MIT */
/* `azbench pipeline`: the serial baseline, the search's own cost per evaluation and the
 * backend ceiling, each in a forked child (tools/bench/pipeline_impl.h). */
#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "eval/net_open.h"
#include "mcts/mcts.h"
#include "run/supervise.h"
#include "tools/bench/infer_bench.h"
#include "tools/bench/pipeline_impl.h"

struct ceiling_result {
	int32_t rc;
	char why[128];
	double eps[MAX_CONFIGS];
};

/* ---- the serial baseline (in a child: a CUDA context must not be inherited by forks) ---- */

struct serial_eval_ctx {
	const struct az_game *g;
	struct az_opened_net net; /* the checkpoint on a batch-1 backend (eval/net_open.h) */
	float x[4096];            /* the stand-in's encoding */
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	uint64_t evals;
};

/* One leaf, batch 1, straight through the backend: what a worker + the inference process do for
 * a leaf, without rings, batching or the evaluation cache ("serial batch-1, the seed's design").
 * On the CPU a batch of one takes az_model_forward()'s GEMV path (no packing), the best batch-1
 * path there is, so the speedup over it is not inflated by sgemm's packing at M = 1. */
static int serial_eval(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	struct serial_eval_ctx *c = ctx;
	int rc = az_net_eval(&c->net.eval, state, policy, value, draw);

	c->evals += rc == 0;
	return rc;
}

/* The no-network stand-in: uniform priors over the legal moves and value 0, so that timing the
 * same games measures the search alone (selection, expansion, backup, legal(), encode()). The
 * encode is kept: a worker does it for every leaf it publishes. */
static int standin_eval(void *ctx, const void *state, float *policy, float *value, float *draw)
{
	struct serial_eval_ctx *c = ctx;
	uint32_t n = 0;

	c->g->encode(state, c->x);
	c->g->legal(state, c->mask);
	for (uint32_t a = 0; a < c->g->actions; a++)
		n += c->mask[a] != 0;
	for (uint32_t a = 0; a < c->g->actions; a++)
		policy[a] = c->mask[a] && n ? 1.0f / (float)n : 0.0f;
	*value = 0;
	c->evals++;
	return 0;
}

/* Self-play games as a worker plays them (noise, temperature, tree reuse), one at a time, each
 * leaf evaluated by eval(ec). */
static int serial_games(const struct game_ctx *gc, az_eval_fn eval,
			struct serial_eval_ctx *ec, double seconds, struct serial_result *res)
{
	const struct az_game *g = gc->g;
	const struct az_config *cfg = &gc->cfg;
	struct az_mcts_params mp;
	struct az_tree *t;
	uint8_t state[AZ_GAME_STATE_MAX];

	az_mcts_params_default(&mp, g);
	mp.c_puct = cfg->c_puct;
	mp.dir_alpha = cfg->dir_alpha;
	mp.dir_eps = cfg->dir_eps;
	mp.seed = cfg->seed;
	g->init(state);
	int rc = az_tree_create(g, &mp, state, &t);
	if (rc < 0)
		return rc;
	az_tree_set_noise(t, 1);
	double t0 = az_now(), end = t0 + seconds;
	while (rc == 0 && az_now() < end) {
		g->init(state);
		az_tree_reset(t, state);
		for (uint32_t ply = 0; rc == 0; ply++) {
			uint32_t before = az_tree_root_visits(t);
			float v;

			rc = az_mcts_search(t, cfg->sims, eval, ec);
			if (rc < 0)
				break;
			res->sims += az_tree_root_visits(t) - before;
			int a = az_tree_pick(t, ply < cfg->temp_plies ? 1.0f : 0.0f, NULL);
			AZ_ASSERT(a >= 0);
			g->apply(state, a);
			res->moves++;
			if (g->terminal(state, &v)) {
				res->games++;
				break;
			}
			AZ_ASSERT(az_tree_advance(t, a) == 0);
			if (az_now() >= end)
				break;
		}
	}
	res->seconds = az_now() - t0;
	res->evals = ec->evals;
	az_tree_destroy(t);
	return rc;
}

static int serial_child(const struct game_ctx *gc, enum az_backend_kind kind, double seconds,
			struct serial_result *res)
{
	struct serial_eval_ctx *ec = calloc(1, sizeof(*ec));
	struct az_net_open_args a = {.ckpt = gc->ckpt, .game = gc->g, .backend = kind, .batch = 1};
	int rc = -ENOMEM;

	if (!ec)
		return rc;
	openblas_set_num_threads(1);
	AZ_ASSERT(gc->g->features <= AZ_ARRAY_LEN(ec->x));
	ec->g = gc->g;
	rc = az_net_open(&a, &ec->net, res->why, sizeof(res->why));
	if (rc < 0)
		goto out;
	/* what the table's backend column reads: the backend chosen ("cuda ...", "cpu ...") */
	snprintf(res->why, sizeof(res->why), "%s", ec->net.backend);
	rc = serial_games(gc, serial_eval, ec, seconds, res);
	if (rc == 0) {
		/* The stand-in for a quarter of the time (0.2 to 1 s): enough evaluations that
		 * the clock's resolution does not matter. */
		struct serial_result sr = { 0 };
		double s = seconds / 4 < 0.2 ? 0.2 : seconds / 4 > 1 ? 1 : seconds / 4;

		ec->evals = 0;
		rc = serial_games(gc, standin_eval, ec, s, &sr);
		res->search_evals = sr.evals;
		res->search_s_per_eval = sr.evals ? sr.seconds / (double)sr.evals : 0;
	}
	az_net_close(&ec->net);
out:
	free(ec);
	return rc;
}

struct serial_job {
	const struct game_ctx *gc;
	enum az_backend_kind kind;
	double seconds;
	struct serial_result *res;
};

static int serial_main(void *arg)
{
	struct serial_job *j = arg;
	j->res->rc = serial_child(j->gc, j->kind, j->seconds, j->res);
	return j->res->rc;
}

/* Run fn-like work in a forked child writing into an anonymous shared page. */
static void *shared_page(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int az_pipeline_run_serial(const struct game_ctx *gc, enum az_backend_kind kind, double seconds,
		      struct serial_result *out)
{
	struct serial_result *res = shared_page(sizeof(*res));

	if (!res)
		return -ENOMEM;
	memset(res, 0, sizeof(*res));
	res->rc = -ECHILD;
	struct serial_job job = {gc, kind, seconds, res};
	pid_t pid = az_sv_spawn(serial_main, &job, "az-serial");
	int rc = pid < 0 ? (int)pid : az_sv_reap(pid, seconds + 120);
	*out = *res;
	munmap(res, sizeof(*res));
	if (rc == 0 && out->rc < 0)
		rc = out->rc;
	return rc;
}

/* ---- the ceiling at the achieved batch sizes (also in a child) ---- */

struct ceiling_job {
	const struct game_ctx *gc;
	enum az_backend_kind kind;
	const uint32_t *batches;
	int n;
	struct ceiling_result *res;
};

static int ceiling_main(void *arg)
{
	struct ceiling_job *j = arg;
	openblas_set_num_threads(1);
	j->res->rc = az_bench_infer_measure(j->kind, &j->gc->arch, j->batches, j->n, CEILING_S,
					    j->res->eps, j->res->why, sizeof(j->res->why));
	return j->res->rc;
}

int az_pipeline_run_ceiling(const struct game_ctx *gc, enum az_backend_kind kind,
		       const uint32_t *batches, int n, double *eps, char *why, size_t whylen)
{
	struct ceiling_result *res = shared_page(sizeof(*res));

	if (!res)
		return -ENOMEM;
	memset(res, 0, sizeof(*res));
	res->rc = -ECHILD;
	struct ceiling_job job = {gc, kind, batches, n, res};
	pid_t pid = az_sv_spawn(ceiling_main, &job, "az-ceiling");
	int rc = pid < 0 ? (int)pid : az_sv_reap(pid, n * CEILING_S * 4 + 120);
	if (rc == 0 && res->rc < 0)
		rc = res->rc;
	memcpy(eps, res->eps, sizeof(double) * (size_t)n);
	snprintf(why, whylen, "%s", res->why);
	munmap(res, sizeof(*res));
	return rc;
}

