/* SPDX-License-Identifier: MIT */
/* `azrun verify --out DIR`: load everything a run directory holds and report what is damaged. */
#include "tools/verify.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "games/game.h"
#include "net/checkpoint.h"
#include "tools/config.h"
#include "base/util.h"
#include "train/replay.h"

struct tally {
	long checkpoints, replay_files, records, games_bad, problems;
	size_t dropped;
	long completed; /* from state.json; -1 when it could not be read */
};

static void problem(struct tally *t, const char *fmt, const char *a, const char *b)
{
	printf("DAMAGED: ");
	printf(fmt, a, b);
	printf("\n");
	t->problems++;
}

static void check_dir(const char *out, const char *sub, const char *suffix,
		      const struct az_game *g, struct tally *t)
{
	char dir[1100], path[1400], err[512];
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
			unsigned it = 0;
			sscanf(e->d_name, "iter-%4u", &it);
			if (dropped && (long)it <= t->completed) {
				/* azrun cuts a dead worker's torn tail at the end of the phase, so a
				 * completed iteration's file must read to its end. */
				char what[64];
				snprintf(what, sizeof(what), "%zu bytes", dropped);
				problem(t, "%s: damaged: the %s after the last valid record are lost",
					path, what);
			} else if (dropped) {
				printf("note: %s: %zu bytes after the last whole game are ignored "
				       "(an iteration that never completed)\n", path, dropped);
			}
			t->dropped += dropped;
			az_replay_buf_free(&b);
		}
	}
	closedir(d);
}

static long check_metrics(const char *out, struct tally *t)
{
	char path[1100], *text = NULL;
	snprintf(path, sizeof(path), "%s/metrics.jsonl", out);
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
static void check_state(const char *out, struct tally *t)
{
	char path[1100], ck[1200], *text = NULL;
	t->completed = -1;
	snprintf(path, sizeof(path), "%s/state.json", out);
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
		snprintf(ck, sizeof(ck), "%s/checkpoints/iter-%04ld.safetensors", out, t->completed);
		if (t->completed > 0 && access(ck, R_OK) != 0)
			problem(t, "%s says iteration %s is complete, but its checkpoint is missing",
				path, ck);
	}
	cJSON_Delete(j);
}

int az_verify_main(int argc, char **argv)
{
	const char *out = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else if (!strncmp(argv[i], "--out=", 6))
			out = argv[i] + 6;
		else if (!strcmp(argv[i], "--help")) {
			printf("Usage: azrun verify --out DIR\n"
			       "Checks every checkpoint, replay record and metrics line of a run.\n"
			       "Exit 0: intact; 1: something is damaged; 2: bad usage.\n");
			return 0;
		} else {
			fprintf(stderr, "azrun verify: unknown argument '%s' (see --help)\n",
				argv[i]);
			return 2;
		}
	}
	if (!out) {
		fprintf(stderr, "azrun verify: --out DIR is required\n");
		return 2;
	}
	struct az_config cfg;
	char path[1100], err[512];
	snprintf(path, sizeof(path), "%s/run.json", out);
	if (az_config_load(&cfg, path, err, sizeof(err)) < 0) {
		fprintf(stderr, "azrun verify: %s\n", err);
		return 2;
	}
	const struct az_game *g;
	if (az_config_game(&cfg, &g, err, sizeof(err)) < 0) {
		fprintf(stderr, "azrun verify: %s\n", err);
		return 2;
	}
	struct tally t = {0};
	check_state(out, &t);
	check_dir(out, ".", ".safetensors", g, &t);
	check_dir(out, "checkpoints", ".safetensors", g, &t);
	check_dir(out, "replay", ".rpl", g, &t);
	long lines = check_metrics(out, &t);
	if (t.completed >= 0 && lines != t.completed) {
		char a[32], b[32];
		snprintf(a, sizeof(a), "%ld", lines);
		snprintf(b, sizeof(b), "%ld", t.completed);
		problem(&t, "metrics.jsonl has %s lines, but state.json says %s iterations completed",
			a, b);
	}
	printf("%s: %ld checkpoints, %ld replay files with %ld records, %ld metrics lines, "
	       "%ld problems\n", out, t.checkpoints, t.replay_files, t.records, lines, t.problems);
	return t.problems ? 1 : 0;
}
