/* SPDX-License-Identifier: MIT */
/* TensorBoard event files from metrics.jsonl (run/tbevents.h). The Event and Summary messages are
 * encoded by hand (base/tfrecord.h): the few fields a scalar needs do not justify a protobuf
 * library. */
#include "run/tbevents.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "run/rundir.h"

void az_tb_put_scalar(struct az_bytes *b, double wall_time, int64_t step, const char *tag,
		      float value)
{
	struct az_bytes val = {0}, sum = {0}, ev = {0};
	az_pb_bytes(&val, 1, tag, strlen(tag));        /* Summary.Value.tag */
	az_pb_float(&val, 2, value);                   /* Summary.Value.simple_value */
	az_pb_bytes(&sum, 1, val.data, val.len);       /* Summary.value */
	az_pb_double(&ev, 1, wall_time);               /* Event.wall_time */
	if (step)
		az_pb_int64(&ev, 2, step);             /* Event.step (0 is proto3's default) */
	az_pb_bytes(&ev, 5, sum.data, sum.len);        /* Event.summary */
	if (val.oom || sum.oom || ev.oom)
		b->oom = 1;
	else
		az_tfrecord_put(b, ev.data, ev.len);
	free(val.data);
	free(sum.data);
	free(ev.data);
}

void az_tb_put_version(struct az_bytes *b, double wall_time)
{
	static const char v[] = "brain.Event:2";
	struct az_bytes ev = {0};
	az_pb_double(&ev, 1, wall_time);
	az_pb_bytes(&ev, 3, v, sizeof(v) - 1); /* Event.file_version */
	if (ev.oom)
		b->oom = 1;
	else
		az_tfrecord_put(b, ev.data, ev.len);
	free(ev.data);
}

/* The scalars of one row: tag and field. */
static const struct {
	const char *tag;
	size_t off;
} scalars[] = {
	{"loss/policy", offsetof(struct az_metric_row, policy_loss)},
	{"loss/value", offsetof(struct az_metric_row, value_loss)},
	{"arena/score", offsetof(struct az_metric_row, arena_score)},
	{"selfplay/games", offsetof(struct az_metric_row, games)},
	{"selfplay/positions", offsetof(struct az_metric_row, positions)},
	{"selfplay/evals_per_s", offsetof(struct az_metric_row, evals_per_s)},
	{"selfplay/mean_batch", offsetof(struct az_metric_row, mean_batch)},
	{"selfplay/ring_occupancy", offsetof(struct az_metric_row, ring_occupancy)},
	{"time/selfplay_s", offsetof(struct az_metric_row, selfplay_s)},
	{"time/train_s", offsetof(struct az_metric_row, train_s)},
	{"time/arena_s", offsetof(struct az_metric_row, arena_s)},
};

static double field(const struct az_metric_row *r, size_t off)
{
	return *(const double *)((const char *)r + off);
}

/* The benchmark's fractions (azrun --bench), where the row has them: "bench/agent/L1_R1";
 * Tangled's "bench/agent/u4" per depth and "bench/vs_rollout". */
static void put_bench(struct az_bytes *b, double t, int64_t step, const struct az_metric_row *r)
{
	char tag[64];
	for (int k = 0; k < AZ_RUN_BENCH_SETS; k++)
		for (int agent = 0; agent < 2; agent++) {
			double v = agent ? r->bench_agent[k] : r->bench_policy[k];
			snprintf(tag, sizeof(tag), "bench/%s/%s", agent ? "agent" : "policy",
				 az_run_bench_sets[k].key);
			if (!isnan(v))
				az_tb_put_scalar(b, t, step, tag, (float)v);
		}
	for (int k = 0; k < r->bench_depths; k++)
		for (int agent = 0; agent < 2; agent++) {
			double v = agent ? r->bench_uagent[k] : r->bench_upolicy[k];
			snprintf(tag, sizeof(tag), "bench/%s/u%d", agent ? "agent" : "policy",
				 r->bench_depth[k]);
			if (!isnan(v))
				az_tb_put_scalar(b, t, step, tag, (float)v);
		}
	if (!isnan(r->bench_vs_rollout))
		az_tb_put_scalar(b, t, step, "bench/vs_rollout", (float)r->bench_vs_rollout);
	if (!isnan(r->bench_s))
		az_tb_put_scalar(b, t, step, "time/bench_s", (float)r->bench_s);
}

int az_tb_encode(const struct az_metric_row *rows, size_t n, struct az_bytes *b)
{
	double *best = malloc((2 * n + 1) * sizeof(double)), *cand = best + n;
	if (!best)
		return -ENOMEM;
	az_elo_estimate(rows, n, best, cand);
	double t0 = n && !isnan(rows[0].time) ? rows[0].time : 0;
	az_tb_put_version(b, t0);
	if (n)
		az_tb_put_scalar(b, t0, 0, "elo/best", 0.0f); /* the first network: 0 by definition */
	for (size_t i = 0; i < n; i++) {
		const struct az_metric_row *r = &rows[i];
		double t = isnan(r->time) ? 0 : r->time;
		int64_t step = (int64_t)r->iteration;
		for (size_t k = 0; k < sizeof(scalars) / sizeof(scalars[0]); k++) {
			double v = field(r, scalars[k].off);
			if (!isnan(v))
				az_tb_put_scalar(b, t, step, scalars[k].tag, (float)v);
		}
		if (!isnan(r->arena_score))
			az_tb_put_scalar(b, t, step, "arena/promoted", r->promoted ? 1.0f : 0.0f);
		put_bench(b, t, step, r);
		az_tb_put_scalar(b, t, step, "elo/best", (float)best[i]);
		if (!isnan(cand[i]))
			az_tb_put_scalar(b, t, step, "elo/candidate", (float)cand[i]);
	}
	free(best);
	return b->oom ? -ENOMEM : 0;
}

int az_tb_write_run(const char *dir, char *err, size_t errlen)
{
	struct az_run_info ri;
	struct az_bytes b = {0};
	char path[AZ_RUNDIR_PATH_MAX + 64];
	int rc = az_run_info_load(dir, &ri, err, errlen);
	if (rc < 0)
		return rc;
	snprintf(path, sizeof(path), "%s/%s", dir, AZ_TB_DIR);
	rc = az_mkdir_p(path);
	if (rc < 0) {
		snprintf(err, errlen, "%s: cannot create (%s)", path, strerror(-rc));
		goto out;
	}
	rc = az_tb_encode(ri.rows, ri.nrows, &b);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory encoding %s/%s events", dir, AZ_TB_DIR);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s/%s", dir, AZ_TB_DIR, AZ_TB_FILE);
	rc = az_write_file_atomic(path, b.data, b.len, err, errlen);
out:
	free(b.data);
	az_run_info_free(&ri);
	return rc;
}
