/* SPDX-License-Identifier: MIT */
/* Reading a run directory for display (run/runinfo.h): run.json, state.json, metrics.jsonl and
 * progress.json, as `azrun status` and `azrun report` show them. */
#include "run/runinfo.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/util.h"
#include "run/rundir.h"

const struct az_run_bench_set az_run_bench_sets[AZ_RUN_BENCH_SETS] = {
	{"L1_R1", "beginning-easy"}, {"L1_R2", "beginning-medium"}, {"L1_R3", "beginning-hard"},
	{"L2_R1", "middle-easy"}, {"L2_R2", "middle-medium"}, {"L3_R1", "end-easy"},
	{"win1", "win in one"}, {"block", "forced block"},
};

/* A number that run.json may store as a string ("12") and the other files as a number. */
static double num(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (cJSON_IsNumber(it))
		return it->valuedouble;
	if (cJSON_IsString(it) && it->valuestring[0]) {
		char *end;
		double v = strtod(it->valuestring, &end);
		if (!*end)
			return v;
	}
	return NAN;
}

/* A small file's JSON, NULL when it is missing, does not parse or fails its checksum (a
 * damaged file is shown as absent; azrun verify names it). */
static cJSON *parse_file(const char *dir, const char *name)
{
	char path[AZ_RUNDIR_PATH_MAX], *text = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (az_read_file(path, &text, &len) < 0)
		return NULL;
	cJSON *j = az_rundir_seal_check(text, len) < 0 ? NULL : cJSON_Parse(text);
	free(text);
	return j;
}

/* The Tangled benchmark's depths of row j: its keys bench_agent_u<K>, the smallest
 * AZ_RUN_BENCH_DEPTHS ascending, with their rates. */
static void tangled_bench_from_json(const cJSON *j, struct az_metric_row *r)
{
	const cJSON *it;
	r->bench_depths = 0;
	cJSON_ArrayForEach(it, j) {
		int d, n = 0, k;
		if (!it->string || sscanf(it->string, "bench_agent_u%d%n", &d, &n) != 1 ||
		    it->string[n] || d < 0 || !cJSON_IsNumber(it))
			continue;
		for (k = 0; k < r->bench_depths && r->bench_depth[k] != d; k++)
			;
		if (k < r->bench_depths) /* a repeated key */
			continue;
		for (k = r->bench_depths; k > 0 && r->bench_depth[k - 1] > d; k--)
			if (k < AZ_RUN_BENCH_DEPTHS)
				r->bench_depth[k] = r->bench_depth[k - 1];
		if (k < AZ_RUN_BENCH_DEPTHS) {
			r->bench_depth[k] = d;
			r->bench_depths += r->bench_depths < AZ_RUN_BENCH_DEPTHS;
		}
	}
	for (int k = 0; k < r->bench_depths; k++) {
		char key[48];
		snprintf(key, sizeof(key), "bench_policy_u%d", r->bench_depth[k]);
		r->bench_upolicy[k] = num(j, key);
		snprintf(key, sizeof(key), "bench_agent_u%d", r->bench_depth[k]);
		r->bench_uagent[k] = num(j, key);
	}
	r->bench_vs_rollout = num(j, "bench_vs_rollout");
}

static void row_from_json(const cJSON *j, struct az_metric_row *r)
{
	r->iteration = num(j, "iteration");
	r->games = num(j, "games");
	r->positions = num(j, "positions");
	r->policy_loss = num(j, "policy_loss");
	r->value_loss = num(j, "value_loss");
	r->arena_score = num(j, "arena_score");
	r->arena_wins = num(j, "arena_wins");
	r->arena_draws = num(j, "arena_draws");
	r->arena_losses = num(j, "arena_losses");
	r->arena_first[0] = num(j, "arena_first_wins");
	r->arena_first[1] = num(j, "arena_first_draws");
	r->arena_first[2] = num(j, "arena_first_losses");
	r->arena_second[0] = num(j, "arena_second_wins");
	r->arena_second[1] = num(j, "arena_second_draws");
	r->arena_second[2] = num(j, "arena_second_losses");
	r->arena_distinct_games = num(j, "arena_distinct_games");
	r->evals_per_s = num(j, "evals_per_s");
	r->mean_batch = num(j, "mean_batch");
	r->ring_occupancy = num(j, "ring_occupancy");
	r->eval_cache_hit_rate = num(j, "eval_cache_hit_rate");
	r->adjudication_share = num(j, "adjudication_share");
	r->sims_per_s = num(j, "sims_per_s");
	r->selfplay_s = num(j, "selfplay_s");
	r->train_s = num(j, "train_s");
	r->arena_s = num(j, "arena_s");
	r->time = num(j, "time");
	r->bench_s = num(j, "bench_s");
	r->best_iteration = num(j, "best_iteration");
	for (int k = 0; k < AZ_RUN_BENCH_SETS; k++) {
		char key[48];
		snprintf(key, sizeof(key), "bench_policy_%s", az_run_bench_sets[k].key);
		r->bench_policy[k] = num(j, key);
		snprintf(key, sizeof(key), "bench_agent_%s", az_run_bench_sets[k].key);
		r->bench_agent[k] = num(j, key);
	}
	tangled_bench_from_json(j, r);
	r->promoted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "promoted"));
	r->resumed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "resumed"));
}

static int cmp_rows(const void *a, const void *b)
{
	double x = ((const struct az_metric_row *)a)->iteration;
	double y = ((const struct az_metric_row *)b)->iteration;
	return (x > y) - (x < y);
}

/* metrics.jsonl: one object per line; a line that is not one (a torn write) or fails its
 * checksum is skipped. */
static int load_metrics(const char *dir, struct az_run_info *ri)
{
	char path[AZ_RUNDIR_PATH_MAX], *text = NULL;
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_METRICS);
	if (az_read_file(path, &text, NULL) < 0)
		return 0; /* no iteration completed yet */
	size_t cap = 16;
	ri->rows = malloc(cap * sizeof(*ri->rows));
	int rc = ri->rows ? 0 : -ENOMEM;
	for (char *s = text, *nl; rc == 0 && *s; s = nl ? nl + 1 : s + strlen(s)) {
		nl = strchr(s, '\n');
		size_t l = nl ? (size_t)(nl - s) : strlen(s);
		cJSON *j = az_rundir_seal_check(s, l) < 0 ? NULL : cJSON_ParseWithLength(s, l);
		if (!cJSON_IsObject(j) || isnan(num(j, "iteration"))) {
			cJSON_Delete(j);
			continue;
		}
		if (ri->nrows == cap) {
			struct az_metric_row *nr = realloc(ri->rows, 2 * cap * sizeof(*nr));
			if (!nr) {
				rc = -ENOMEM;
				cJSON_Delete(j);
				break;
			}
			ri->rows = nr;
			cap *= 2;
		}
		row_from_json(j, &ri->rows[ri->nrows++]);
		cJSON_Delete(j);
	}
	free(text);
	if (rc == 0)
		qsort(ri->rows, ri->nrows, sizeof(*ri->rows), cmp_rows);
	return rc;
}

static void load_progress(const char *dir, struct az_run_info *ri)
{
	cJSON *j = parse_file(dir, az_rundir_name(AZ_RUNDIR_PROGRESS));
	const cJSON *ph = j ? cJSON_GetObjectItemCaseSensitive(j, "phase") : NULL;
	if (!cJSON_IsObject(j) || !cJSON_IsString(ph)) {
		cJSON_Delete(j);
		return;
	}
	double pid = num(j, "pid"), it = num(j, "iteration"), its = num(j, "iterations");
	ri->have_progress = 1;
	ri->pid = isnan(pid) ? 0 : (long)pid;
	ri->iteration = isnan(it) ? 0 : (uint32_t)it;
	if (!isnan(its) && its > 0)
		ri->iterations = (uint32_t)its;
	snprintf(ri->phase, sizeof(ri->phase), "%s", ph->valuestring);
	ri->phase_started = num(j, "phase_started");
	ri->done = num(j, "done");
	ri->total = num(j, "total");
	ri->evals_per_s = num(j, "evals_per_s");
	ri->updated = num(j, "updated");
	cJSON_Delete(j);
}

/* Running is what the lock says: progress.json's pid may be stale, or reused by another
 * process (pid 1 is always alive). */
static void load_lock(const char *dir, struct az_run_info *ri)
{
	long pid;

	ri->running = az_rundir_lock_holder(dir, &pid) == 1;
	if (ri->running && pid > 0)
		ri->pid = pid;
}

int az_run_info_load(const char *dir, struct az_run_info *ri, char *err, size_t errlen)
{
	memset(ri, 0, sizeof(*ri));
	ri->arena_threshold = 0.55;
	cJSON *run = parse_file(dir, az_rundir_name(AZ_RUNDIR_CONFIG));
	if (!cJSON_IsObject(run)) {
		char p[AZ_RUNDIR_PATH_MAX];
		struct stat sb;

		cJSON_Delete(run);
		az_rundir_path(p, sizeof(p), dir, AZ_RUNDIR_CONFIG);
		if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) { /* there, but damaged */
			snprintf(err, errlen, "%s is damaged or unreadable", p);
			return -EINVAL;
		}
		snprintf(err, errlen, "%s is not a run directory (no run.json)", dir);
		return -ENOENT;
	}
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(run, "game");
	snprintf(ri->game, sizeof(ri->game), "%s", cJSON_IsString(g) ? g->valuestring : "?");
	double its = num(run, "iterations"), thr = num(run, "arena-threshold");
	ri->iterations = isnan(its) ? 0 : (uint32_t)its;
	if (!isnan(thr))
		ri->arena_threshold = thr;
	const cJSON *tl = cJSON_GetObjectItemCaseSensitive(run, "time-limit");
	if (!cJSON_IsString(tl) || !tl->valuestring[0] ||
	    az_parse_duration(tl->valuestring, &ri->time_limit_s) < 0)
		ri->time_limit_s = 0;
	cJSON_Delete(run);
	/* state.json through its checksum: a damaged file is reported, never read as numbers */
	struct az_rundir_state st = {0};
	ri->damaged[0] = '\0';
	int state_rc = az_rundir_state_load(dir, &st, NULL, ri->damaged, sizeof(ri->damaged));
	if (state_rc == -EINVAL) {
		st.completed = 0;
		st.best_iteration = 0;
	} else {
		ri->damaged[0] = '\0';
	}
	ri->completed = st.completed;
	ri->best_iteration = st.best_iteration;
	load_progress(dir, ri);
	load_lock(dir, ri);
	if (load_metrics(dir, ri) < 0) {
		snprintf(err, errlen, "out of memory reading %s/metrics.jsonl", dir);
		az_run_info_free(ri);
		return -ENOMEM;
	}
	/* a run writes state.json (0 completed) before its first metrics line, so a missing one
	 * beside metrics lines is damage, not a run that has not started */
	if (state_rc == -ENOENT && ri->nrows > 0)
		snprintf(ri->damaged, sizeof(ri->damaged),
			 "%s/state.json: missing, but metrics.jsonl records iterations up to %.0f", dir,
			 ri->rows[ri->nrows - 1].iteration);
	return 0;
}

void az_run_info_free(struct az_run_info *ri)
{
	free(ri->rows);
	ri->rows = NULL;
	ri->nrows = 0;
}

void az_elo_estimate(const struct az_metric_row *rows, size_t n, double *best, double *cand)
{
	double elo = 0;
	for (size_t i = 0; i < n; i++) {
		double s = rows[i].arena_score;
		cand[i] = NAN;
		if (!isnan(s)) {
			s = s < 0.01 ? 0.01 : s > 0.99 ? 0.99 : s;
			cand[i] = elo + 400.0 * log10(s / (1.0 - s));
			if (rows[i].promoted)
				elo = cand[i];
		} else if (i + 1 >= n || isnan(rows[i + 1].best_iteration) ||
			   rows[i + 1].best_iteration >= rows[i].iteration) {
			/* a lost arena (a repaired line) that may have promoted: the ratings after it
			 * are unknown (NAN), not carried on as if it had not */
			elo = NAN;
		}
		best[i] = elo;
	}
}

