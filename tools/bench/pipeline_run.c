/* SPDX-License-Identifier: MIT */
/* One open-ended self-play measurement of the real pipeline (W workers, one inference process,
 * the rings) under a given azrun configuration, and what `azbench pipeline` and `azbench ring`
 * need around it: a game's network and checkpoint, the scratch directory, and the run-to-run
 * statistics that decide whether a configuration beats azrun's defaults
 * (tools/bench/pipeline_impl.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "infer/control.h"
#include "net/checkpoint.h"
#include "run/roles.h"
#include "run/supervise.h"
#include "tools/bench/pipeline_impl.h"

struct counters {
	double t;
	uint64_t evals, batches, forward_ns, games, occ_sum, occ_n;
};

static void sample(const struct az_pipeline *pl, struct counters *s)
{
	struct az_pipeline_counters c;
	az_pipeline_sample(pl, &c);
	*s = (struct counters){.t = az_now(), .evals = c.evals, .batches = c.batches,
			       .forward_ns = c.forward_ns, .games = c.games, .occ_sum = c.occ_sum,
			       .occ_n = c.occ_n};
}

/* One configuration's processes: the pipeline (segment + inference process) and one open-ended
 * self-play phase, started and stopped by run/supervise.h as azrun's are. */
struct pipe_run {
	const struct game_ctx *gc;
	struct az_config cfg;
	struct az_worker_params wp;
	struct az_pipeline pl;
	struct az_phase ph;
	char dir[PATH_LEN];
	uint32_t run; /* a fresh replay file name per run */
};

static int bench_worker(struct az_phase *ph, uint32_t i)
{
	struct pipe_run *pr = ph->arg;
	char path[PATH_LEN + 64];

	snprintf(path, sizeof(path), "%s/%s-run%u-%02u.rpl", pr->dir, pr->gc->g->name, pr->run, i);
	int rc = az_worker_run(&pr->wp, &pr->pl.seg, i, AZ_WORKER_SELFPLAY, 1, path);
	if (rc < 0)
		fprintf(stderr, "azbench: worker %u: %s\n", i, strerror(-rc));
	return rc;
}

static int start_pipeline(struct pipe_run *pr, int verbose)
{
	const struct az_config *cfg = &pr->cfg;
	struct az_pipeline_params pp;

	az_config_pipeline_params(cfg, pr->gc->g, "bench", verbose ? STDERR_FILENO : -1, &pp);
	pp.infer.quiet = 0;
	int rc = az_pipeline_start(&pr->pl, &pp, pr->gc->ckpt);
	if (rc < 0)
		return rc;
	pr->ph = (struct az_phase){.name = "selfplay", .child_name = "worker", .iteration = 1,
				   .n = cfg->workers, .workers = 1, .child = bench_worker,
				   .arg = pr};
	az_pipeline_reset_phase(&pr->pl, UINT64_MAX / 2); /* open-ended: stopped by phase_stop */
	return az_phase_start(&pr->pl, &pr->ph);
}

static void measure_window(const struct counters *a, const struct counters *b,
			   struct pipe_result *res)
{
	double dt = b->t - a->t;
	uint64_t de = b->evals - a->evals, db = b->batches - a->batches;
	uint64_t dn = b->occ_n - a->occ_n;

	res->seconds = dt;
	res->evals_per_s = (double)de / dt;
	res->games_per_min = (double)(b->games - a->games) / dt * 60.0;
	res->mean_batch = db ? (double)de / (double)db : 0.0;
	res->occupancy = dn ? (double)(b->occ_sum - a->occ_sum) / (double)dn : 0.0;
	res->busy = (double)(b->forward_ns - a->forward_ns) * 1e-9 / dt;
}

int az_pipeline_run_config(const struct game_ctx *gc, const struct az_config *cfg, int verbose,
			   const char *dir, double measure, struct pipe_result *res)
{
	static struct pipe_run pr;
	static uint32_t runs;
	struct counters a, b;

	memset(&pr, 0, sizeof(pr));
	pr.run = runs++;
	pr.gc = gc;
	pr.cfg = *cfg;
	az_config_worker_params(&pr.cfg, &pr.wp);
	snprintf(pr.dir, sizeof(pr.dir), "%s", dir);
	int rc = start_pipeline(&pr, verbose);
	if (rc < 0 && !pr.ph.n) {
		fprintf(stderr, "azbench: the inference process did not start: %s\n",
			strerror(-rc));
		goto out;
	}
	/* Warm-up: the first evaluation (trees, rings and caches alive), then WARM_S more. */
	double t0 = az_now();
	while (rc == 0 && atomic_load_explicit(&pr.pl.ctl->evals, memory_order_relaxed) == 0) {
		rc = az_phase_watch(&pr.pl, &pr.ph, 0.01); /* relaxed load above: a counter, polled */
		if (rc == 0 && az_now() - t0 > 60)
			rc = -ETIMEDOUT;
	}
	if (rc == 0)
		rc = az_phase_watch(&pr.pl, &pr.ph, WARM_S);
	sample(&pr.pl, &a);
	if (rc == 0)
		rc = az_phase_watch(&pr.pl, &pr.ph, measure);
	sample(&pr.pl, &b);
	int rc2 = az_phase_stop(&pr.pl, &pr.ph, 30);
	rc = rc ? rc : rc2;
	if (rc == 0) {
		/* Every worker has been reaped (waitpid orders their writes). Workers add their
		 * simulations once, at exit; their share per evaluation scales the window. */
		struct az_pipeline_counters c;
		az_pipeline_sample(&pr.pl, &c);
		measure_window(&a, &b, res);
		res->sims_per_s = c.evals ? res->evals_per_s * (double)c.sims / (double)c.evals : 0.0;
		rc = c.worker_error;
	}
	if (rc == -ECHILD)
		fprintf(stderr, "azbench: a worker or the inference process failed\n");
out:
	az_phase_stop(&pr.pl, &pr.ph, 30);
	az_pipeline_stop(&pr.pl);
	return rc;
}

void az_pipeline_game_config(const struct az_pipeline_game *p, struct az_config *cfg)
{
	AZ_ASSERT(az_game_find(p->game) && az_config_defaults(cfg, p->game) == 0);
	cfg->backend = p->backend;
	cfg->quiet = 1;
	if (p->sims)
		cfg->sims = p->sims;
	if (p->leaves)
		cfg->leaves = p->leaves;
	if (p->cache_mb >= 0)
		cfg->eval_cache_mb = (uint32_t)p->cache_mb;
	if (p->cache)
		snprintf(cfg->eval_cache, sizeof(cfg->eval_cache), "%s", p->cache);
	if (p->hidden) {
		cfg->net = p->net;
		cfg->hidden = p->hidden;
		cfg->blocks = p->blocks;
	}
}

int az_pipeline_game_setup(const struct az_pipeline_game *p, const char *dir, struct game_ctx *gc)
{
	char err[512];
	struct az_model *m;

	memset(gc, 0, sizeof(*gc));
	gc->g = az_game_find(p->game);
	az_pipeline_game_config(p, &gc->cfg);
	gc->arch = (struct az_arch){ .inputs = gc->g->features, .hidden = gc->cfg.hidden,
				     .blocks = gc->cfg.blocks, .actions = gc->g->actions,
				     .kind = gc->cfg.net };
	if (gc->arch.kind == AZ_NET_RESNET) {
		gc->arch.planes = gc->g->planes;
		gc->arch.height = gc->g->height;
		gc->arch.width = gc->g->width;
	}
	az_arch_format(&gc->arch, gc->net, sizeof(gc->net)); /* "mlp:128x3", "resnet:32x3" */
	snprintf(gc->ckpt, sizeof(gc->ckpt), "%s/%s.safetensors", dir, gc->g->name);
	int rc = az_model_create(&gc->arch, &m);
	if (rc < 0)
		return rc;
	az_model_init_random(m, gc->cfg.seed);
	snprintf(m->game, sizeof(m->game), "%s", gc->g->name);
	rc = az_ckpt_save(gc->ckpt, m, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "azbench: %s\n", err);
	az_model_destroy(m);
	return rc;
}

int az_pipeline_tmpdir(const char *mode, char *dir, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, len, "%s/azbench-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", mode);
	if (mkdtemp(dir))
		return 0;
	int rc = -errno;
	fprintf(stderr, "azbench %s: cannot create %s: %s (set TMPDIR to a writable directory)\n",
		mode, dir, strerror(errno));
	return rc;
}

void az_pipeline_rmdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_LEN + 300];

	while (d && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* ---- run-to-run noise ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void az_bench_spread_of(const double *v, int n, struct az_bench_spread *s)
{
	double w[MAX_RUNS];

	AZ_ASSERT(n >= 0 && n <= MAX_RUNS);
	memset(s, 0, sizeof(*s));
	s->n = n;
	if (n == 0)
		return;
	memcpy(w, v, sizeof(double) * (size_t)n);
	qsort(w, (size_t)n, sizeof(double), cmp_double);
	s->min = w[0];
	s->max = w[n - 1];
	s->median = n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
	s->noise = s->median > 0 ? (s->max - s->min) / s->median : 0;
}

int az_bench_beats(double cand, const struct az_bench_spread *def)
{
	return def->n >= 2 && def->median > 0 && cand > def->median * (1.0 + def->noise);
}

/* ---- a candidate against azrun's defaults ---- */

int az_bench_versus_defaults(const struct az_pipeline_game *p, const struct az_config *cand,
			     int runs, double measure, int quiet, struct az_bench_versus *out)
{
	static struct game_ctx gc;
	double v[4][MAX_RUNS];
	char dir[PATH_LEN];
	int rc;

	AZ_ASSERT(runs >= 1 && runs <= MAX_RUNS);
	memset(out, 0, sizeof(*out));
	rc = az_pipeline_tmpdir("versus", dir, sizeof(dir));
	if (rc < 0)
		return rc;
	rc = az_pipeline_game_setup(p, dir, &gc);
	for (int r = 0; r < runs && rc == 0; r++) {
		for (int k = 0; k < 2 && rc == 0; k++) {
			int c = (r + k) % 2; /* alternate which goes first */
			struct az_config cfg = gc.cfg;
			struct pipe_result res;

			if (c) {
				cfg.ring_capacity = cand->ring_capacity;
				cfg.max_batch = cand->max_batch;
				cfg.deadline_us = cand->deadline_us;
				cfg.workers = cand->workers;
				cfg.games_per_worker = cand->games_per_worker;
			}
			if (!quiet)
				fprintf(stderr, "azbench: %s, %s, run %d of %d\n", gc.g->name,
					c ? "candidate" : "azrun's defaults", r + 1, runs);
			rc = az_pipeline_run_config(&gc, &cfg, 0, dir, measure, &res);
			v[2 * c][r] = res.sims_per_s;
			v[2 * c + 1][r] = res.evals_per_s;
			if (az_sv_interrupted())
				rc = -EINTR;
		}
	}
	if (rc == 0) {
		az_bench_spread_of(v[0], runs, &out->def_sims);
		az_bench_spread_of(v[1], runs, &out->def_evals);
		az_bench_spread_of(v[2], runs, &out->cand_sims);
		az_bench_spread_of(v[3], runs, &out->cand_evals);
		out->defaults = gc.cfg;
	}
	az_pipeline_rmdir(dir);
	return rc;
}
