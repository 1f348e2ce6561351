/* SPDX-License-Identifier: MIT */
/* `azbench infer`: evaluations per second of the inference backend alone (no rings, no
 * processes) at batch sizes 1 ... 1024, for the default network of each game: the ceiling that
 * `azbench pipeline` is judged against. */
#include <cblas.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "gpu/cpu_gemm.h"
#include "base/az_assert.h"
#include "base/rng.h"
#include "base/util.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/bench_opts.h"
#include "tools/bench/infer_bench.h"
#include "tools/config.h"
#include "help_text.h" /* generated from tools/help/ */

#define MAX_BATCHES 16
#define DEFAULT_SECONDS "10"
#define REPEATS 5 /* slices per batch size; the fastest counts */

/* Time forward passes at one batch size: the best of REPEATS equal slices of `seconds`, so
 * that other load on the machine (a ceiling is what the backend can do) blurs it less. Returns
 * rows per second. */
static double time_batch(struct az_backend *be, uint32_t batch, double seconds, const float *x,
			 float *logits, float *value)
{
	double best = 0;

	for (int i = 0; i < 2; i++) /* warm-up: caches, lazy allocations, GPU clocks */
		AZ_ASSERT(az_backend_forward(be, 0, batch, x, logits, value, NULL) == 0);
	for (int r = 0; r < REPEATS; r++) {
		uint64_t iters = 0;
		double t0 = az_now(), el = 0;

		while (iters < 2 || el < seconds / REPEATS) {
			AZ_ASSERT(az_backend_forward(be, 0, batch, x, logits, value, NULL) == 0);
			iters++;
			el = az_now() - t0;
		}
		double eps = (double)iters * batch / el;
		best = eps > best ? eps : best;
	}
	return best;
}

int az_bench_infer_measure(enum az_backend_kind kind, const struct az_arch *a,
			   const uint32_t *batches, int n, double seconds_each, double *evals_per_s,
			   char *why, size_t whylen)
{
	struct az_model *m = NULL;
	struct az_backend *be = NULL;
	float *x = NULL, *logits = NULL, *value = NULL;
	uint32_t maxb = 1;
	int rc;

	for (int i = 0; i < n; i++) {
		if (batches[i] == 0)
			return -EINVAL;
		maxb = batches[i] > maxb ? batches[i] : maxb;
	}
	rc = az_model_create(a, &m);
	if (rc < 0)
		return rc;
	az_model_init_random(m, 1);
	rc = az_backend_create(kind, a, maxb, &be, why, whylen);
	if (rc < 0)
		goto out_model;
	rc = az_backend_load(be, 0, m);
	if (rc < 0)
		goto out_backend;
	rc = -ENOMEM;
	x = malloc(sizeof(float) * maxb * a->inputs);
	logits = malloc(sizeof(float) * maxb * a->actions);
	value = malloc(sizeof(float) * maxb);
	if (!x || !logits || !value)
		goto out_buffers;
	struct az_rng rng;
	az_rng_seed(&rng, 7);
	for (size_t i = 0; i < (size_t)maxb * a->inputs; i++)
		x[i] = az_rng_uniform(&rng) < 0.3 ? 1.0f : 0.0f;
	for (int i = 0; i < n; i++)
		evals_per_s[i] = time_batch(be, batches[i], seconds_each, x, logits, value);
	rc = 0;
out_buffers:
	free(x);
	free(logits);
	free(value);
out_backend:
	az_backend_destroy(be);
out_model:
	az_model_destroy(m);
	return rc;
}

/* ---- the mode ---- */

/* --kernels: the cpu backend's paths to measure, each in turn (AZ_CPU_GEMM set for it). */
struct infer_kernels {
	int n;   /* 0: the one AZ_CPU_GEMM (or its absence) selects */
	int all; /* every path this CPU runs, skipping the others with a line */
	const char *name[4];
};

struct infer_opts {
	struct az_bench_opts common;
	struct az_bench_games games;
	struct az_bench_list batches;
	enum az_backend_kind backend;
	struct az_bench_net net; /* hidden 0: the game's default from az_config_defaults() */
	struct infer_kernels kernels;
};

AZ_BENCH_LIST_PARSER(parse_batches, MAX_BATCHES, 1, AZ_BENCH_BATCH_MAX)

static const char *const kernel_names[] = { "blas", "avx512", "bf16", "amx" };

/* "auto", "all", or a comma list of blas, avx512, bf16 and amx (each once). 0 or -EINVAL. */
static int parse_kernels(const char *v, void *field)
{
	struct infer_kernels *k = field;
	const char *p = v;

	memset(k, 0, sizeof(*k));
	if (strcmp(v, "auto") == 0)
		return 0;
	if (strcmp(v, "all") == 0) {
		k->all = 1;
		k->n = AZ_ARRAY_LEN(kernel_names);
		memcpy(k->name, kernel_names, sizeof(kernel_names));
		return 0;
	}
	while (*p) {
		size_t len = strcspn(p, ",");
		int found = -1;

		for (int i = 0; i < (int)AZ_ARRAY_LEN(kernel_names); i++)
			if (strlen(kernel_names[i]) == len && strncmp(p, kernel_names[i], len) == 0)
				found = i;
		for (int i = 0; found >= 0 && i < k->n; i++)
			if (k->name[i] == kernel_names[found])
				found = -1; /* named twice */
		if (found < 0)
			return -EINVAL;
		k->name[k->n++] = kernel_names[found];
		p += len + (p[len] == ',');
	}
	return k->n ? 0 : -EINVAL;
}

static void infer_notes(FILE *f)
{
	fprintf(f, "Games with a board (--net resnet): %s.\n", az_bench_boards_help());
}

/* Every option of azbench infer, in --help's order (tools/options.h). */
#define O(field) offsetof(struct infer_opts, field)
static const struct az_opt infer_opt[] = {
	AZ_BENCH_GAMES_OPT(O, games),
	{"batches", AZ_OPT_PARSE, O(batches), "LIST", 0, 0, "1,2,4,8,16,32,64,128,256,512,1024",
	 "batch sizes, comma-separated", AZ_BENCH_LIST_RANGE(MAX_BATCHES, 1, AZ_BENCH_BATCH_MAX),
	 NULL, parse_batches},
	AZ_BENCH_BACKEND_OPT(O, backend),
	{"kernels", AZ_OPT_PARSE, O(kernels), "LIST", 0, 0, "auto",
	 "the cpu backend's paths, each in turn: auto (AZ_CPU_GEMM's), all (each this CPU runs), "
	 "or a comma list", "auto|all|blas|avx512|bf16|amx", NULL, parse_kernels},
	{"net", AZ_OPT_PARSE, O(net), "HxR", 0, 0, NULL,
	 "width x residual blocks, mlp:HxR, or resnet:FxR (F filters; the games with a board) "
	 "(default: the game's)", AZ_BENCH_NET_CHOICES, NULL, az_bench_opt_net},
	AZ_BENCH_COMMON_OPTS(O, common, DEFAULT_SECONDS),
};
#undef O

/* The network a game trains by default (tools/config.c), unless --net overrides it. Returns 0,
 * or -EINVAL when net/model.c cannot build it (az_bench_net_check() refuses that first). */
static int game_arch(const struct infer_opts *o, const char *game, struct az_arch *a)
{
	const struct az_game *g = az_game_find(game);
	struct az_config cfg;

	AZ_ASSERT(g && az_config_defaults(&cfg, game) == 0);
	*a = (struct az_arch){.inputs = g->features, .actions = g->actions,
			      .hidden = o->net.hidden ? o->net.hidden : cfg.hidden,
			      .blocks = o->net.hidden ? o->net.blocks : cfg.blocks,
			      .kind = o->net.hidden ? o->net.kind : cfg.net};
	if (a->kind == AZ_NET_RESNET) {
		a->planes = g->planes;
		a->height = g->height;
		a->width = g->width;
	}
	return az_arch_valid(a) ? 0 : -EINVAL;
}

/* Smallest batch reaching 90% of the best throughput of one game's rows. */
static void knee(const struct infer_opts *o, const double *eps, uint32_t *batch, double *best)
{
	const struct az_bench_list *b = &o->batches;

	*best = 0;
	for (int i = 0; i < b->n; i++)
		*best = eps[i] > *best ? eps[i] : *best;
	*batch = b->v[b->n - 1];
	for (int i = 0; i < b->n; i++)
		if (eps[i] >= 0.9 * *best && b->v[i] < *batch)
			*batch = b->v[i];
}

/* One game's measurement: its network's name and the backend's description (why). */
struct game_result {
	const char *game;
	const char *kernel; /* --kernels' entry measured, or NULL (AZ_CPU_GEMM's choice) */
	char net[32];
	char why[256];
	double eps[MAX_BATCHES];
};

/* One row per batch size of g into t. Returns 0 or -ENOMEM. */
static int add_rows(const struct infer_opts *o, const struct game_result *g,
		    struct az_bench_table *t)
{
	const uint32_t *batch = o->batches.v;
	int cuda = strncmp(g->why, "cuda", 4) == 0;
	enum az_cpu_gemm kernel = AZ_CPU_GEMM_BLAS;

	if (!cuda)
		AZ_ASSERT(az_cpu_gemm_select(&kernel) == 0); /* the backend was made with it */

	for (int i = 0; i < o->batches.n; i++) {
		struct az_bench_row r = { 0 };

		az_bench_row_str(&r, "game", g->game);
		if (az_bench_board(g->game))
			az_bench_row_str(&r, "board", az_bench_board(g->game));
		az_bench_row_str(&r, "net", g->net);
		az_bench_row_str(&r, "backend", cuda ? "cuda" : "cpu");
		/* the cpu backend's path (docs/cpu.md): what it selected under this AZ_CPU_GEMM */
		az_bench_row_str(&r, "kernel", cuda ? "cuda" : az_cpu_gemm_name(kernel));
		az_bench_row_int(&r, "batch", batch[i]);
		az_bench_row_num(&r, "evals_per_s", g->eps[i], 0);
		az_bench_row_num(&r, "us_per_batch", 1e6 * batch[i] / g->eps[i], 1);
		if (batch[0] == 1)
			az_bench_row_num(&r, "vs_batch1", g->eps[i] / g->eps[0], 2);
		else
			az_bench_row_none(&r, "vs_batch1");
		if (az_bench_table_add(t, &r) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The recommendation's part for game number gi: its knee batch and peak, in text and rec. */
static void add_recommendation(const struct infer_opts *o, const struct game_result *g, int gi,
			       struct az_bench_row *rec, char *text, size_t len)
{
	uint32_t kb;
	double best;
	char key[AZ_BENCH_KEY_MAX];

	/* with --kernels: "connect4_bf16_batch90"; else "connect4_batch90" as always */
	char who[64];

	snprintf(who, sizeof(who), "%s%s%s", g->game, g->kernel ? "_" : "",
		 g->kernel ? g->kernel : "");
	knee(o, g->eps, &kb, &best);
	snprintf(text + strlen(text), len - strlen(text),
		 "%s%s %s%s%s: batch %u reaches 90%% of the peak %.0f evals/s", gi ? "; " : "",
		 g->game, g->net, g->kernel ? " " : "", g->kernel ? g->kernel : "", kb, best);
	snprintf(key, sizeof(key), "%s_batch90", who);
	az_bench_row_int(rec, key, kb);
	snprintf(key, sizeof(key), "%s_peak_evals_per_s", who);
	az_bench_row_num(rec, key, best, 0);
}

/* Measure game's network at every batch size for `each` seconds each into g. Returns 0, 2 when
 * azrun would refuse the network, 1 when the measurement failed (a message on stderr). */
static int measure_game(const struct infer_opts *o, const char *game, double each,
			struct game_result *g)
{
	struct az_arch a;
	int rc;

	/* azrun's caps and the board shape: the reason named, not a guess */
	if (az_bench_net_check("infer", game, o->net.kind, o->net.hidden, o->net.blocks) < 0)
		return 2;
	rc = game_arch(o, game, &a);
	AZ_ASSERT(rc == 0); /* what azrun accepts, the model can build */
	g->game = game;
	az_arch_format(&a, g->net, sizeof(g->net)); /* "mlp:128x3", "resnet:32x3" */
	az_bench_progress(&o->common, "infer: %s %s, %d batch sizes, %.2fs each\n", game, g->net,
			  o->batches.n, each);
	rc = az_bench_infer_measure(o->backend, &a, o->batches.v, o->batches.n, each, g->eps,
				    g->why, sizeof(g->why));
	if (rc < 0) {
		fprintf(stderr, "azbench infer: %s: %s (%s)\n", game, strerror(-rc), g->why);
		return 1;
	}
	az_bench_progress(&o->common, "infer: backend %s\n", g->why);
	return 0;
}

/* Point AZ_CPU_GEMM at --kernels' entry ki. Returns 0, 1 when --kernels all names a path this
 * CPU does not run (skipped, with a progress line). */
static int use_kernel(const struct infer_opts *o, int ki)
{
	enum az_cpu_gemm kind;

	setenv("AZ_CPU_GEMM", o->kernels.name[ki], 1);
	if (o->kernels.all && az_cpu_gemm_select(&kind) != 0) {
		az_bench_progress(&o->common, "infer: kernel %s: not on this CPU, skipped\n",
				  o->kernels.name[ki]);
		return 1;
	}
	return 0;
}

/* Every game through every --kernels entry into t (rows) and rec/text (the recommendation),
 * AZ_CPU_GEMM restored after. Returns 0 or azbench's exit status. */
static int measure_all(const struct infer_opts *o, struct az_bench_table *t,
		       struct az_bench_row *rec, char *text, size_t len)
{
	int nk = o->kernels.n ? o->kernels.n : 1, rc = 0, done = 0;
	double each = o->common.seconds / (o->games.n * o->batches.n * nk);
	const char *env = getenv("AZ_CPU_GEMM");
	char saved[32];
	struct game_result g;

	snprintf(saved, sizeof(saved), "%s", env ? env : "");
	for (int gi = 0; gi < o->games.n && rc == 0; gi++)
		for (int ki = 0; ki < nk && rc == 0; ki++) {
			if (o->kernels.n && use_kernel(o, ki))
				continue;
			rc = measure_game(o, o->games.name[gi], each, &g);
			g.kernel = o->kernels.n ? o->kernels.name[ki] : NULL;
			if (rc == 0)
				rc = add_rows(o, &g, t) < 0 ? 1 : 0;
			if (rc == 0)
				add_recommendation(o, &g, done++, rec, text, len);
		}
	if (env)
		setenv("AZ_CPU_GEMM", saved, 1);
	else
		unsetenv("AZ_CPU_GEMM");
	return rc;
}

int az_bench_infer(int argc, char **argv)
{
	static const struct az_opts opts_table = {
		.tool = "azbench infer", .opt = infer_opt, .n = AZ_ARRAY_LEN(infer_opt),
		.help = az_help_azbench_infer, .notes = infer_notes
	};
	struct infer_opts o = { 0 };
	struct az_bench_table t = { 0 };
	struct az_bench_row rec = { 0 };
	char text[1024] = "";
	int rc = az_bench_parse(&opts_table, &o, &o.common, argc, argv);

	if (rc)
		return rc == 1 ? 0 : 2;
	if (az_bench_games_setup("infer", &o.games, 0, &o.common) != 0)
		return 2;
	if (o.kernels.n && o.backend == AZ_BACKEND_CUDA) {
		fprintf(stderr, "azbench infer: --kernels: the cpu backend's paths; not with "
				"--backend cuda\n");
		return 2;
	}
	openblas_set_num_threads(1); /* one BLAS thread, as in the inference process */
	rc = measure_all(&o, &t, &rec, text, sizeof(text));
	if (rc == 0) {
		struct az_bench_plot_spec ps = {
			.title = "inference backend alone: evals/s vs batch",
			.xkey = "batch",
			.ykey = "evals_per_s",
			.series = { "game", "net", "kernel", NULL },
			.series_fmt = { NULL, "net %s", "%s" },
			.logx = 1,
			.logy = 1,
		};
		rc = az_bench_emit(&t, &o.common, &ps);
		az_bench_recommend(&o.common, text, &rec);
	}
	az_bench_table_free(&t);
	return rc;
}
