/* SPDX-License-Identifier: MIT */
/* `azbench train`: training samples per second of the C trainer (the cpu training backend of
 * train/train_backend.h: forward, backprop, Adam; the GPU trainer with --backend cuda) for the
 * default network of each game at several batch sizes, next to PyTorch on the same network, loss,
 * batch and optimiser with one CPU thread when torch is importable
 * (tools/bench/torch_train_bench.py, run as a child process). */
#include <cblas.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "games/game.h"
#include "base/az_assert.h"
#include "base/rng.h"
#include "base/spawn.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/bench_opts.h"
#include "tools/config.h"
#include "train/train_backend.h"
#include "help_text.h" /* generated from tools/help/ */

#define MAX_GAMES 2
#define MAX_BATCHES 8
#define MAX_THREADS 4
#define MAX_POINTS (MAX_GAMES * MAX_BATCHES * MAX_THREADS)
#define DEFAULT_SECONDS "10"
#define SCRIPT_NAME "torch_train_bench.py"
#define PATH_LEN 1024
#define OUT_MAX 65536

static double now_s(void)
{
	return (double)az_bench_now_ns() * 1e-9;
}

/* ---- options ---- */

struct train_opts {
	struct az_bench_opts common;
	struct az_bench_games games;
	struct az_bench_list batches;
	struct az_bench_list threads; /* --threads: the C trainer's, one point each */
	struct az_bench_net net; /* hidden 0: the game's default */
	const char *python;      /* --python, or NULL */
	const char *script;      /* --torch-script, or NULL */
	int no_torch;
	enum az_backend_kind backend; /* --backend: cuda runs the GPU trainer, else the C one */
};

AZ_BENCH_LIST_PARSER(parse_batches, MAX_BATCHES, 1, AZ_BENCH_BATCH_MAX)
AZ_BENCH_LIST_PARSER(parse_threads, MAX_THREADS, 1, AZ_TRAIN_THREADS_MAX)

/* Every option of azbench train, in --help's order (tools/options.h). */
#define O(field) offsetof(struct train_opts, field)
static const struct az_opt train_opt[] = {
	AZ_BENCH_GAMES_OPT(O, games),
	{"batches", AZ_OPT_PARSE, O(batches), "LIST", 0, 0, "32,128,512",
	 "minibatch sizes, comma-separated",
	 AZ_BENCH_LIST_RANGE(MAX_BATCHES, 1, AZ_BENCH_BATCH_MAX), NULL, parse_batches},
	{"threads", AZ_OPT_PARSE, O(threads), "LIST", 0, 0, "1",
	 "the C trainer's threads (azrun's train-threads), comma-separated: a point each; "
	 "PyTorch runs the 1-thread points only",
	 AZ_BENCH_LIST_RANGE(MAX_THREADS, 1, AZ_TRAIN_THREADS_MAX), NULL, parse_threads},
	{"net", AZ_OPT_PARSE, O(net), "HxR", 0, 0, NULL,
	 "width x residual blocks, mlp:HxR, or resnet:FxR (C trainer only) (default: the game's)",
	 AZ_BENCH_NET_CHOICES, NULL, az_bench_opt_net},
	{"python", AZ_OPT_STR, O(python), "PATH", 0, 0, NULL,
	 "interpreter for the PyTorch side (default: the first of $AZ_PYTHON, python3, "
	 "/usr/bin/python3 that imports torch)", NULL, NULL, NULL},
	{"torch-script", AZ_OPT_STR, O(script), "PATH", 0, 0, NULL,
	 "the PyTorch side (default: $AZ_TORCH_SCRIPT, then bench/" SCRIPT_NAME " beside "
	 "azbench, then tools/bench/ of the source tree)", NULL, NULL, NULL},
	{"no-torch", AZ_OPT_FLAG, O(no_torch), NULL, 0, 0, NULL, "C trainer only", NULL, NULL,
	 NULL},
	{"backend", AZ_OPT_PARSE, O(backend), "B", 0, 0, "auto",
	 "cpu (auto also means cpu, as in azrun) or cuda: the GPU trainer, impl \"cuda\" in the "
	 "rows", AZ_OPTS_BACKENDS, NULL, az_opts_backend},
	AZ_BENCH_COMMON_OPTS(O, common, DEFAULT_SECONDS),
};
#undef O

/* ---- one measurement point ---- */

struct point {
	const char *game;
	struct az_arch arch;
	float lr, l2;
	uint32_t batch;
	uint32_t threads; /* the C trainer's */
	double c_sps, c_step_s; /* C: samples/s, seconds per step */
	double t_sps, t_step_s; /* torch: the same; 0 when not measured */
};

/* A fixed random minibatch (0/1 planes, target distributions, results in {-1, 0, 1}): the cost
 * of a step does not depend on the values. */
static void fill_batch(const struct az_arch *a, uint32_t B, float *x, float *pi, float *z)
{
	struct az_rng rng;

	az_rng_seed(&rng, 11);
	for (size_t i = 0; i < (size_t)B * a->inputs; i++)
		x[i] = az_rng_uniform(&rng) < 0.3 ? 1.0f : 0.0f;
	for (uint32_t b = 0; b < B; b++) {
		float *p = pi + (size_t)b * a->actions, sum = 0;

		for (uint32_t k = 0; k < a->actions; k++)
			sum += p[k] = (float)az_rng_uniform(&rng);
		for (uint32_t k = 0; k < a->actions; k++)
			p[k] /= sum;
		z[b] = (float)az_rng_below(&rng, 3) - 1.0f;
	}
}

static int measure_c(struct point *pt, enum az_backend_kind kind, double seconds)
{
	const struct az_arch *a = &pt->arch;
	uint32_t B = pt->batch;
	struct az_model *m = NULL;
	struct az_train_backend *tr = NULL;
	struct az_train_params tp;
	float *x = malloc(sizeof(float) * B * a->inputs);
	float *pi = malloc(sizeof(float) * B * a->actions);
	float *z = malloc(sizeof(float) * B);
	int rc = -ENOMEM;

	if (!x || !pi || !z)
		goto out;
	rc = az_model_create(a, &m);
	if (rc < 0)
		goto out;
	az_model_init_random(m, 1);
	az_train_params_default(&tp);
	tp.lr = pt->lr;
	tp.l2 = pt->l2;
	tp.threads = pt->threads;
	rc = az_train_backend_create(kind, m, &tp, B, &tr, NULL, 0);
	if (rc < 0)
		goto out;
	fill_batch(a, B, x, pi, z);
	for (int i = 0; i < 3 && rc == 0; i++) /* warm-up: caches, first-touch pages */
		rc = az_train_backend_step(tr, B, x, pi, z, NULL);
	uint64_t steps = 0;
	double t0 = now_s(), el = 0;
	while (rc == 0 && (steps < 2 || el < seconds)) {
		rc = az_train_backend_step(tr, B, x, pi, z, NULL);
		steps++;
		el = now_s() - t0;
	}
	if (rc == 0) {
		pt->c_sps = (double)B * steps / el;
		pt->c_step_s = el / steps;
	}
out:
	az_train_backend_destroy(tr);
	az_model_destroy(m);
	free(x);
	free(pi);
	free(z);
	return rc;
}

/* ---- the PyTorch side: a child process ---- */

/* Run argv (one BLAS/OpenMP thread) with stdout and stderr captured together into out[cap]
 * (NUL-terminated; the caller picks the JSON lines out). Returns the exit status, 128 + signal,
 * or -errno (-ETIMEDOUT after `timeout` seconds: the child is killed). */
static int run_capture(char *const argv[], char *out, size_t cap, double timeout)
{
	static const char *const env[] = {"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1",
					  "MKL_NUM_THREADS=1", NULL};
	struct az_spawn_opts o = {.capture = out, .capture_len = cap, .timeout_s = timeout,
				  .env = env};
	return az_spawn_wait(argv, &o);
}

struct torch_side {
	char python[PATH_LEN];
	char script[PATH_LEN];
	char version[AZ_BENCH_STR_MAX];
	char why[256]; /* why torch is not available, when it is not */
	double measured; /* seconds the script spent measuring (its start-up excluded) */
	int ok;
};

static int readable(const char *p)
{
	return p && *p && access(p, R_OK) == 0;
}

/* Find the script: --torch-script, $AZ_TORCH_SCRIPT, next to the executable (CMake copies it
 * into the build tree's tools/bench/), the source tree. */
static int find_script(const struct train_opts *o, struct torch_side *ts, const char **how)
{
	char exe[PATH_LEN], cand[PATH_LEN + 64];
	ssize_t n;

	if (o->script) {
		*how = "--torch-script";
		snprintf(ts->script, sizeof(ts->script), "%s", o->script);
		return readable(o->script) ? 0 : -ENOENT;
	}
	if (readable(getenv("AZ_TORCH_SCRIPT"))) {
		*how = "$AZ_TORCH_SCRIPT";
		snprintf(ts->script, sizeof(ts->script), "%s", getenv("AZ_TORCH_SCRIPT"));
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		snprintf(cand, sizeof(cand), "%s/bench/" SCRIPT_NAME, exe);
		if (readable(cand)) {
			*how = "next to the azbench executable";
			snprintf(ts->script, sizeof(ts->script), "%s", cand);
			return 0;
		}
	}
#ifdef AZ_SOURCE_DIR
	snprintf(cand, sizeof(cand), "%s/tools/bench/" SCRIPT_NAME, AZ_SOURCE_DIR);
	if (readable(cand)) {
		*how = "in the source tree azbench was built from";
		snprintf(ts->script, sizeof(ts->script), "%s", cand);
		return 0;
	}
#endif
	return -ENOENT;
}

/* Find the PyTorch script (no interpreter is started here). */
static void find_torch(const struct train_opts *o, struct torch_side *ts)
{
	const char *how = "";

	if (o->no_torch) {
		snprintf(ts->why, sizeof(ts->why), "--no-torch");
		return;
	}
	if (find_script(o, ts, &how) < 0) {
		snprintf(ts->why, sizeof(ts->why), "%s not found (pass --torch-script PATH)",
			 o->script ? o->script : SCRIPT_NAME);
		az_bench_progress(&o->common, "train: torch not available (%s)\n", ts->why);
		return;
	}
	ts->ok = 1;
	az_bench_progress(&o->common, "train: PyTorch side %s (found %s)\n", ts->script, how);
}

/* Parse the script's JSON lines into pts[]. Returns how many points got a rate. */
static int parse_torch(char *out, struct torch_side *ts, struct point *pts, int np)
{
	int got = 0;

	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		cJSON *j = cJSON_Parse(line);
		cJSON *p = j ? cJSON_GetObjectItem(j, "point") : NULL;
		cJSON *s = j ? cJSON_GetObjectItem(j, "samples_per_s") : NULL;
		cJSON *v = j ? cJSON_GetObjectItem(j, "torch") : NULL;
		cJSON *e = j ? cJSON_GetObjectItem(j, "error") : NULL;
		cJSON *t = j ? cJSON_GetObjectItem(j, "seconds") : NULL;

		if (cJSON_IsNumber(t))
			ts->measured += t->valuedouble;
		if (cJSON_IsString(p) && cJSON_IsNumber(s)) {
			int i = atoi(p->valuestring);
			if (i >= 0 && i < np && s->valuedouble > 0) {
				pts[i].t_sps = s->valuedouble;
				pts[i].t_step_s = pts[i].batch / s->valuedouble;
				got++;
			}
		}
		if (cJSON_IsString(v))
			snprintf(ts->version, sizeof(ts->version), "%s", v->valuestring);
		if (cJSON_IsString(e))
			snprintf(ts->why, sizeof(ts->why), "%s", e->valuestring);
		cJSON_Delete(j);
	}
	return got;
}

/* Measure every point in one PyTorch process, trying the interpreters in turn until one
 * imports torch: --python, $AZ_PYTHON, python3, /usr/bin/python3. Fills t_sps/t_step_s and
 * ts->python/version; on failure ts->ok = 0 with the reason in ts->why. */
static void measure_torch(const struct train_opts *o, struct torch_side *ts, struct point *pts,
			  int np, double each)
{
	static char out[OUT_MAX];
	static char specs[MAX_POINTS][160];
	const char *cands[3];
	char secs[32];
	char *argv[4 + 2 * MAX_POINTS + 1];
	int n = 0, nc = 0, want = 0;

	if (o->python)
		cands[nc++] = o->python;
	else if (getenv("AZ_PYTHON") && *getenv("AZ_PYTHON"))
		cands[nc++] = getenv("AZ_PYTHON");
	if (!o->python) {
		cands[nc++] = "python3";
		cands[nc++] = "/usr/bin/python3";
	}
	argv[n++] = NULL; /* the interpreter, per candidate */
	argv[n++] = ts->script;
	argv[n++] = "--seconds";
	snprintf(secs, sizeof(secs), "%.3f", each);
	argv[n++] = secs;
	for (int i = 0; i < np; i++) {
		const struct az_arch *a = &pts[i].arch;

		if (pts[i].threads != 1) /* PyTorch runs one thread */
			continue;
		want++;
		snprintf(specs[i], sizeof(specs[i]), "%d,%u,%u,%u,%u,%u,%g,%g", i, a->inputs,
			 a->actions, a->hidden, a->blocks, pts[i].batch, (double)pts[i].lr,
			 (double)pts[i].l2);
		argv[n++] = "--point";
		argv[n++] = specs[i];
	}
	argv[n] = NULL;
	ts->ok = 0;
	for (int c = 0; c < nc && !ts->ok; c++) {
		argv[0] = (char *)cands[c];
		ts->why[0] = '\0';
		int rc = run_capture(argv, out, sizeof(out), 2 * each * np + 300);
		if (rc != 0 && rc != 3 && rc != 127 && !o->common.quiet)
			fprintf(stderr, "azbench train: %s %s exited with %d:\n%s\n", cands[c],
				ts->script, rc, out); /* 3: no torch, 127: no interpreter */
		int got = parse_torch(out, ts, pts, np);
		if (rc == 0 && got == want) {
			snprintf(ts->python, sizeof(ts->python), "%s", cands[c]);
			ts->ok = 1;
		} else if (!ts->why[0]) {
			snprintf(ts->why, sizeof(ts->why), "%s %s: %s", cands[c], SCRIPT_NAME,
				 rc == 127 ? "cannot run the interpreter" :
				 rc < 0 ? strerror(-rc) : "failed");
		} else {
			char tmp[sizeof(ts->why)];
			snprintf(tmp, sizeof(tmp), "%s", ts->why);
			snprintf(ts->why, sizeof(ts->why), "%s: %s", cands[c], tmp);
		}
	}
	if (ts->ok) {
		az_bench_progress(&o->common, "train: PyTorch %s via %s, 1 thread\n", ts->version,
				  ts->python);
	} else {
		for (int i = 0; i < np; i++)
			pts[i].t_sps = pts[i].t_step_s = 0;
		az_bench_progress(&o->common, "train: torch not available (%s)\n", ts->why);
	}
}

/* ---- output ---- */

static void add_rows(struct az_bench_table *t, const struct point *pt, const char *net,
		     const char *c_impl, const struct torch_side *ts)
{
	for (int impl = 0; impl < 2; impl++) {
		struct az_bench_row r = { 0 };
		double sps = impl ? pt->t_sps : pt->c_sps;
		double step = impl ? pt->t_step_s : pt->c_step_s;

		if (impl && sps <= 0)
			break;
		az_bench_row_str(&r, "game", pt->game);
		if (az_bench_board(pt->game))
			az_bench_row_str(&r, "board", az_bench_board(pt->game));
		az_bench_row_str(&r, "net", net);
		az_bench_row_str(&r, "impl", impl ? "torch" : c_impl);
		az_bench_row_int(&r, "batch", pt->batch);
		az_bench_row_int(&r, "threads", impl ? 1 : pt->threads);
		az_bench_row_num(&r, "samples_per_s", sps, 0);
		az_bench_row_num(&r, "ms_per_step", step * 1e3, 3);
		if (!impl && pt->t_sps > 0)
			az_bench_row_num(&r, "c_over_torch", pt->c_sps / pt->t_sps, 2);
		else
			az_bench_row_none(&r, "c_over_torch");
		az_bench_row_str(&r, "torch", ts->ok ? ts->version : "not available");
		AZ_ASSERT(az_bench_table_add(t, &r) == 0);
	}
}

static void recommend(const struct train_opts *o, const struct point *pts, int np,
		      const struct torch_side *ts)
{
	struct az_bench_row rec = { 0 };
	char text[1024];
	size_t l;

	if (ts->ok)
		l = (size_t)snprintf(text, sizeof(text),
				     "C trainer / PyTorch (torch %s, 1 thread):", ts->version);
	else
		l = (size_t)snprintf(text, sizeof(text), "torch not available (%s); C trainer:",
				     ts->why);
	for (int i = 0; i < np && l < sizeof(text); i++) {
		char key[AZ_BENCH_KEY_MAX];

		if (ts->ok && pts[i].t_sps > 0) {
			l += (size_t)snprintf(text + l, sizeof(text) - l, "%s %s B=%u %.2fx",
					      i ? "," : "", pts[i].game, pts[i].batch,
					      pts[i].c_sps / pts[i].t_sps);
			snprintf(key, sizeof(key), "%s_b%u_c_over_torch", pts[i].game,
				 pts[i].batch);
			az_bench_row_num(&rec, key, pts[i].c_sps / pts[i].t_sps, 2);
		} else {
			l += (size_t)snprintf(text + l, sizeof(text) - l,
					      "%s %s B=%u T=%u %.0f samples/s", i ? "," : "",
					      pts[i].game, pts[i].batch, pts[i].threads,
					      pts[i].c_sps);
		}
	}
	az_bench_row_str(&rec, "torch", ts->ok ? ts->version : "not available");
	az_bench_recommend(&o->common, text, &rec);
}

/* A point per game and batch size into pts[] and their networks' names into nets[]. Returns
 * the count, or -EINVAL when azrun would refuse --net for a game (a message on stderr). */
static int plan_points(const struct train_opts *o, struct point *pts, char (*nets)[32])
{
	int np = 0;

	for (int gi = 0; gi < o->games.n; gi++) {
		const struct az_game *g = az_game_find(o->games.name[gi]);
		struct az_config cfg;

		AZ_ASSERT(g && az_config_defaults(&cfg, g->name) == 0);
		if (az_bench_net_check("train", g->name, o->net.kind, o->net.hidden,
				       o->net.blocks) < 0)
			return -EINVAL;
		for (int k = 0; k < o->batches.n * o->threads.n; k++, np++) {
			struct point *p = &pts[np];
			int bi = k / o->threads.n;

			memset(p, 0, sizeof(*p));
			p->game = g->name;
			p->arch = (struct az_arch){
				.inputs = g->features, .actions = g->actions,
				.hidden = o->net.hidden ? o->net.hidden : cfg.hidden,
				.blocks = o->net.hidden ? o->net.blocks : cfg.blocks,
				.kind = o->net.hidden ? o->net.kind : cfg.net };
			if (p->arch.kind == AZ_NET_RESNET) {
				p->arch.planes = g->planes;
				p->arch.height = g->height;
				p->arch.width = g->width;
			}
			AZ_ASSERT(az_arch_valid(&p->arch)); /* what azrun accepts, the model can build */
			p->lr = cfg.lr;
			p->l2 = cfg.l2;
			p->batch = o->batches.v[bi];
			p->threads = o->threads.v[k % o->threads.n];
			az_arch_format(&p->arch, nets[np], sizeof(nets[np]));
		}
	}
	return np;
}

/* The PyTorch side of every point, with half of --seconds for its measurements when it is
 * available. Returns the seconds its start-up and teardown took (0 without it). */
static double run_torch(const struct train_opts *o, struct torch_side *ts, struct point *pts,
			int np)
{
	double each = o->common.seconds / 2 / np, t1 = now_s(), start;

	if (!ts->ok)
		return 0;
	each = each > 0.1 ? each : 0.1;
	az_bench_progress(&o->common, "train: PyTorch, %d points, %.2fs each\n", np, each);
	measure_torch(o, ts, pts, np, each);
	start = now_s() - t1 - ts->measured;
	if (ts->ok)
		az_bench_progress(&o->common, "train: PyTorch start-up and teardown took "
				  "%.1fs (not counted in --seconds)\n", start);
	return start;
}

/* The C (or GPU) trainer at every point, `left` seconds in all. Returns 0, or 1 after a
 * message on stderr. */
static int run_c(const struct train_opts *o, struct point *pts, char (*nets)[32], int np,
		 double left)
{
	for (int i = 0; i < np; i++) {
		double each = left / np > 0.05 ? left / np : 0.05;
		int rc;

		az_bench_progress(&o->common, "train: C %s %s batch %u, %u thread%s, %.2fs\n",
				  pts[i].game, nets[i], pts[i].batch, pts[i].threads,
				  pts[i].threads == 1 ? "" : "s", each);
		rc = measure_c(&pts[i], o->backend, each);
		if (rc < 0) {
			fprintf(stderr, "azbench train: %s trainer: %s\n",
				o->backend == AZ_BACKEND_CUDA ? "GPU" : "C", strerror(-rc));
			return 1;
		}
	}
	return 0;
}

int az_bench_train(int argc, char **argv)
{
	static const struct az_opts opts_table = {
		.tool = "azbench train", .opt = train_opt, .n = AZ_ARRAY_LEN(train_opt),
		.help = az_help_azbench_train
	};
	struct train_opts o = { 0 };
	struct torch_side ts;
	struct point pts[MAX_POINTS];
	char nets[MAX_POINTS][32];
	struct az_bench_table t = { 0 };
	int np, rc = az_bench_parse(&opts_table, &o, &o.common, argc, argv);

	if (rc)
		return rc == 1 ? 0 : 2;
	if (az_bench_games_setup("train", &o.games, 0, &o.common) != 0)
		return 2;
	openblas_set_num_threads(1); /* one thread, as the trainer process and the torch side */
	az_fp_flush_denormals();     /* as the trainer process */
	double t0 = now_s();
	memset(&ts, 0, sizeof(ts));
	find_torch(&o, &ts);
	if (o.net.kind == AZ_NET_RESNET && ts.ok) { /* torch_train_bench.py builds the MLP only */
		ts.ok = 0;
		snprintf(ts.why, sizeof(ts.why), "--net resnet: the PyTorch side has the MLP only");
	}
	np = plan_points(&o, pts, nets);
	if (np < 0)
		return 2;
	/* Budget: half for PyTorch's measurements (its start-up, `import torch` and the first
	 * optimiser, comes on top: seconds on a loaded machine), then C gets what is left of the
	 * budget after them (all of it when torch turned out to be missing), at least half. */
	double torch_start = run_torch(&o, &ts, pts, np);
	double left = o.common.seconds - (now_s() - t0 - torch_start);
	left = left > o.common.seconds / 2 ? left : o.common.seconds / 2;
	if (run_c(&o, pts, nets, np, left))
		return 1;
	for (int i = 0; i < np; i++)
		add_rows(&t, &pts[i], nets[i], o.backend == AZ_BACKEND_CUDA ? "cuda" : "c", &ts);
	struct az_bench_plot_spec ps = {
		.title = "training: samples/s vs batch",
		.xkey = "batch",
		.ykey = "samples_per_s",
		.series = { "game", "impl", "threads", NULL },
		.logx = 1,
		.logy = 1,
	};
	rc = az_bench_emit(&t, &o.common, &ps);
	recommend(&o, pts, np, &ts);
	az_bench_table_free(&t);
	return rc;
}
