/* SPDX-License-Identifier: MIT */
/* `azrun verify --out DIR`: load everything a run directory holds and report what is damaged. */
#include "tools/verify.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "gpu/checkpoint.h"
#include "tools/config.h"
#include "tools/util.h"
#include "train/replay.h"

struct tally {
	long checkpoints, replay_files, records, games_bad, problems;
	size_t dropped;
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
			if (dropped) {
				printf("note: %s: %zu bytes after the last whole game are ignored\n",
				       path, dropped);
				t->dropped += dropped;
			}
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
		if (!j || !cJSON_IsNumber(cJSON_GetObjectItem(j, "iteration")))
			problem(t, "%s: line %s is not a metrics object", path, "");
		cJSON_Delete(j);
		lines++;
	}
	free(text);
	return lines;
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
	check_dir(out, ".", ".safetensors", g, &t);
	check_dir(out, "checkpoints", ".safetensors", g, &t);
	check_dir(out, "replay", ".rpl", g, &t);
	long lines = check_metrics(out, &t);
	printf("%s: %ld checkpoints, %ld replay files with %ld records, %ld metrics lines, "
	       "%ld problems\n", out, t.checkpoints, t.replay_files, t.records, lines, t.problems);
	return t.problems ? 1 : 0;
}
