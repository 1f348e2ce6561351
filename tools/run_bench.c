/* SPDX-License-Identifier: MIT */
/* azrun --bench (tools/run_bench.h): the measurement runs in the loop's benchmark child. */
#include "tools/run_bench.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/az_assert.h"
#include "eval/c4_bench.h"
#include "games/game.h"
#include "run/rundir.h"
#include "run/runinfo.h"

_Static_assert(AZ_RUN_BENCH_SETS == AZ_C4_BENCH_SETS, "the metrics keys are the sets'");

int az_run_bench_check(const struct az_config *c, char *err, size_t errlen)
{
	int rc = az_c4_bench_check(c->bench, (long)c->bench_positions, err, errlen);
	size_t n = strlen(err);

	/* a resumed run's sets may have moved since run.json saved their path */
	if (rc < 0 && c->resume && n < errlen)
		snprintf(err + n, errlen - n, "; on --resume, --bench DIR names the sets anew and "
			 "--bench \"\" turns the benchmark off");
	return rc < 0 ? -EINVAL : 0;
}

struct bench_ctx {
	struct az_c4_bench_params p;
	char work[AZ_RUNDIR_PATH_MAX];
};

static void tick(void *arg, long done, long total)
{
	struct az_run_bench_out *out = arg;
	/* Relaxed: a progress display (run/loop.h). */
	atomic_store_explicit(&out->done, (uint64_t)done, memory_order_relaxed);
	atomic_store_explicit(&out->total, (uint64_t)total, memory_order_relaxed);
}

/* The metrics keys (run/runinfo.h names them) and the log line of result r. */
static void format(const struct az_c4_bench_result *r, long positions,
		   struct az_run_bench_out *out)
{
	size_t n = 0, m = 0;
	m += (size_t)snprintf(out->summary, sizeof(out->summary), "%ld positions per set; "
			      "mistakes %% policy/agent", positions);
	for (int s = 0; s < AZ_C4_BENCH_SETS; s++) {
		AZ_ASSERT(strcmp(az_c4_bench_names[s], az_run_bench_sets[s].key) == 0);
		n += (size_t)snprintf(out->json + n, sizeof(out->json) - n, "%s\"bench_policy_%s\": "
				      "%.4f, \"bench_agent_%s\": %.4f", s ? ", " : "",
				      az_c4_bench_names[s], r->policy[s], az_c4_bench_names[s],
				      r->agent[s]);
		if (m < sizeof(out->summary))
			m += (size_t)snprintf(out->summary + m, sizeof(out->summary) - m, "%s %s "
					      "%.0f/%.0f", s == AZ_C4_BENCH_WIN1 ?
					      "; success % policy/agent" : "", az_c4_bench_names[s],
					      100 * r->policy[s], 100 * r->agent[s]);
		AZ_ASSERT(n < sizeof(out->json));
	}
}

static int measure(void *arg, const char *ckpt, struct az_run_bench_out *out)
{
	struct bench_ctx *c = arg;
	struct az_c4_bench_result r;
	c->p.tick_arg = out;
	int rc = az_c4_bench_checkpoint(&c->p, ckpt, &r, out->summary, sizeof(out->summary));
	if (rc == 0)
		format(&r, c->p.positions, out);
	return rc;
}

void az_run_bench_params(const struct az_config *c, struct az_run_bench *b)
{
	static struct bench_ctx ctx;
	const struct az_game *g = &az_game_connect4;
	*b = (struct az_run_bench){0};
	if (!c->bench[0])
		return;
	snprintf(ctx.work, sizeof(ctx.work), "%s/bench", c->out);
	ctx.p = (struct az_c4_bench_params){.dir = c->bench, .work = ctx.work,
					    .positions = (long)c->bench_positions, .sims = c->sims,
					    .tick = tick};
	az_mcts_params_default(&ctx.p.mp, g);
	ctx.p.mp.c_puct = c->c_puct;
	ctx.p.mp.solver = (int)c->mcts_solver;
	ctx.p.mp.fpu_absolute = c->fpu_reduction < 0.0f;
	ctx.p.mp.fpu_reduction = ctx.p.mp.fpu_absolute ? 0.0f : c->fpu_reduction;
	ctx.p.mp.dir_eps = 0;
	*b = (struct az_run_bench){.every = c->bench_every, .measure = measure, .ctx = &ctx};
}
