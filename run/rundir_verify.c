/* SPDX-License-Identifier: MIT */
/* Checking a run directory end to end (run/rundir.h: az_rundir_verify). */
#include "run/rundir.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "games/game.h"
#include "net/checkpoint.h"
#include "train/replay.h"

static void say(struct az_rundir_check *t, int damaged, const char *fmt, const char *a,
		const char *b, const char *c)
{
	char msg[2048];
	snprintf(msg, sizeof(msg), fmt, a, b, c);
	if (damaged)
		t->problems++;
	if (t->report)
		t->report(t->ctx, damaged, msg);
}

static void problem(struct az_rundir_check *t, const char *fmt, const char *a, const char *b)
{
	say(t, 1, fmt, a, b, "");
}

static void check_dir(const char *out, const char *sub, const char *suffix,
		      const struct az_game *g, struct az_rundir_check *t)
{
	char dir[AZ_RUNDIR_PATH_MAX], path[AZ_RUNDIR_PATH_MAX + 300], err[512];
	snprintf(dir, sizeof(dir), "%s/%s", out, sub);
	DIR *d = opendir(dir);
	if (!d) {
		problem(t, "%s: cannot open (%s)", dir, strerror(errno));
		return;
	}
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		size_t len = strlen(e->d_name), sl = strlen(suffix);
		if (len < sl || strcmp(e->d_name + len - sl, suffix) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (strcmp(suffix, ".safetensors") == 0) {
			struct az_model *m;
			t->checkpoints++;
			if (az_ckpt_load(path, &m, err, sizeof(err)) < 0) {
				problem(t, "%s%s", err, "");
				continue;
			}
			if (strcmp(m->game, g->name) != 0)
				problem(t, "%s: a %s network in a run of this game", path, m->game);
			az_model_destroy(m);
		} else {
			struct az_replay_buf b;
			size_t dropped = 0;
			az_replay_buf_init(&b, g->features, g->actions);
			long n = az_replay_load_file(path, &b, 0, &dropped, err, sizeof(err));
			t->replay_files++;
			if (n < 0)
				problem(t, "%s%s", err, "");
			else
				t->records += n;
			uint32_t it = 0;
			az_rundir_replay_iteration(e->d_name, &it);
			if (dropped && (long)it <= t->completed) {
				/* azrun cuts a dead worker's torn tail at the end of the phase, so a
				 * completed iteration's file must read to its end. */
				char what[64];
				snprintf(what, sizeof(what), "%zu bytes", dropped);
				problem(t, "%s: damaged: the %s after the last valid record are lost",
					path, what);
			} else if (dropped) {
				char what[64];
				snprintf(what, sizeof(what), "%zu bytes", dropped);
				say(t, 0, "%s: %s after the last whole game are ignored (an iteration "
				    "that never completed)", path, what, "");
			}
			t->dropped += dropped;
			az_replay_buf_free(&b);
		}
	}
	closedir(d);
}

static long check_metrics(const char *out, struct az_rundir_check *t)
{
	char path[AZ_RUNDIR_PATH_MAX], *text = NULL;
	az_rundir_path(path, sizeof(path), out, AZ_RUNDIR_METRICS);
	if (az_read_file(path, &text, NULL) < 0)
		return 0;
	long lines = 0;
	for (char *s = text, *nl; *s; s = nl ? nl + 1 : s + strlen(s)) {
		nl = strchr(s, '\n');
		size_t l = nl ? (size_t)(nl - s) : strlen(s);
		cJSON *j = cJSON_ParseWithLength(s, l);
		lines++;
		cJSON *it = j ? cJSON_GetObjectItem(j, "iteration") : NULL;
		if (!cJSON_IsNumber(it) || it->valuedouble != (double)lines) {
			char no[32];
			snprintf(no, sizeof(no), "%ld", lines);
			problem(t, "%s: line %s is not the metrics object of that iteration", path,
				no);
		}
		cJSON_Delete(j);
	}
	free(text);
	return lines;
}

/* state.json: parses, and what it claims completed is on disk. */
static void check_state(const char *out, struct az_rundir_check *t)
{
	char path[AZ_RUNDIR_PATH_MAX], ck[AZ_RUNDIR_PATH_MAX], *text = NULL;
	t->completed = -1;
	az_rundir_path(path, sizeof(path), out, AZ_RUNDIR_STATE);
	if (az_read_file(path, &text, NULL) < 0) {
		problem(t, "%s: missing or unreadable%s", path, "");
		return;
	}
	cJSON *j = cJSON_Parse(text);
	free(text);
	cJSON *c = j ? cJSON_GetObjectItem(j, "completed") : NULL;
	cJSON *b = j ? cJSON_GetObjectItem(j, "best_iteration") : NULL;
	if (!cJSON_IsNumber(c) || !cJSON_IsNumber(b) || c->valuedouble < 0 ||
	    b->valuedouble > c->valuedouble) {
		problem(t, "%s: not a RingZero state file%s", path, "");
	} else {
		t->completed = (long)c->valuedouble;
		az_rundir_checkpoint_path(ck, sizeof(ck), out, (uint32_t)t->completed);
		if (t->completed > 0 && access(ck, R_OK) != 0)
			problem(t, "%s says iteration %s is complete, but its checkpoint is missing",
				path, ck);
	}
	cJSON_Delete(j);
}

int az_rundir_verify(const char *out, const struct az_game *g, struct az_rundir_check *t)
{
	check_state(out, t);
	check_dir(out, ".", ".safetensors", g, t);
	check_dir(out, az_rundir_name(AZ_RUNDIR_CHECKPOINTS), ".safetensors", g, t);
	check_dir(out, az_rundir_name(AZ_RUNDIR_REPLAY), ".rpl", g, t);
	t->metrics_lines = check_metrics(out, t);
	if (t->completed >= 0 && t->metrics_lines != t->completed) {
		char a[32], b[32];
		snprintf(a, sizeof(a), "%ld", t->metrics_lines);
		snprintf(b, sizeof(b), "%ld", t->completed);
		problem(t, "metrics.jsonl has %s lines, but state.json says %s iterations completed",
			a, b);
	}
	return t->problems ? 1 : 0;
}
