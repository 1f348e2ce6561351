/* SPDX-License-Identifier: MIT */
/* Fuzz target: azrun's option parser, --config INI files and the run.json loader. Byte 0 of an
 * input chooses the entry (its low two bits): 0 or 2: the rest, split on NUL and newline, is argv
 * (after "azrun") for az_config_parse, run in a directory holding a valid run "r" (so
 * "--resume --out r" works); 1: the rest is a run.json for az_config_load; 3: the rest is an INI
 * file for "azrun --config f/azrun.ini". Whatever is accepted must be a configuration azrun can
 * run; whatever is refused gets one printable line. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "games/game.h"
#include "tests/fuzz/fuzz.h"
#include "tools/config.h"

#define ARGS_MAX 64

int az_fuzz_verdict;

static const char *loaded; /* "f/run.json", written for each load input, then removed */
static const char *ini;	   /* "f/azrun.ini", likewise */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct az_config c;
	char err[256];

	AZ_ASSERT(chdir(az_fuzz_tmpdir()) == 0);
	AZ_ASSERT(az_config_defaults(&c, "tictactoe") == 0);
	snprintf(c.out, sizeof(c.out), "r");
	az_fuzz_tmpfile("r/run.json");
	AZ_ASSERT(az_config_save(&c, "r/run.json", err, sizeof(err)) == 0);
	loaded = az_fuzz_tmpfile("f/run.json");
	ini = az_fuzz_tmpfile("f/azrun.ini");
	return 0;
}

static int finite_in(float x, double lo, double hi)
{
	return isfinite(x) && x >= lo && x <= hi;
}

/* Fields every configuration must satisfy, loaded or parsed. */
static void check_common(const struct az_config *c)
{
	const struct az_game *g;

	AZ_ASSERT(memchr(c->game, '\0', sizeof(c->game)) && memchr(c->out, '\0', sizeof(c->out)));
	g = az_game_find(c->game);
	AZ_ASSERT(g && strcmp(g->name, c->game) == 0);
	AZ_ASSERT(c->backend == AZ_BACKEND_AUTO || c->backend == AZ_BACKEND_CPU ||
		  c->backend == AZ_BACKEND_CUDA);
}

/* What az_config_parse promises on success: azrun can start with this (config.c validate()). */
static void check_runnable(const struct az_config *c)
{
	check_common(c);
	AZ_ASSERT(c->out[0]);
	AZ_ASSERT(c->iterations && c->workers && c->games_per_worker && c->games_per_iter &&
		  c->sims && c->leaves && c->arena_games && c->hidden && c->train_batch &&
		  c->window); /* max_batch 0: the backend chooses */
	AZ_ASSERT(c->max_batch <= 65536);
	AZ_ASSERT(c->workers <= 256);
	AZ_ASSERT(c->ring_capacity >= 2 && !(c->ring_capacity & (c->ring_capacity - 1)));
	AZ_ASSERT(finite_in(c->arena_threshold, 0, 1) && finite_in(c->dir_eps, 0, 1));
	AZ_ASSERT(finite_in(c->dir_alpha, 0, INFINITY) && c->dir_alpha > 0);
	AZ_ASSERT(finite_in(c->lr, 0, INFINITY) && c->lr > 0);
	AZ_ASSERT(finite_in(c->train_epochs, 0, INFINITY) && c->train_epochs > 0);
	AZ_ASSERT(finite_in(c->l2, 0, INFINITY) && finite_in(c->c_puct, 0, INFINITY));
}

static void check_message(int rc, const char *err)
{
	AZ_ASSERT(rc == -EINVAL || rc == -ENOENT || rc == -EACCES || rc == -ENOTDIR ||
		  rc == -EISDIR || rc == -ENAMETOOLONG || rc == -ENOMEM || rc == -EIO ||
		  rc == -ELOOP);
	/* az_config_parse quotes unknown options and stray arguments verbatim, so a control byte
	 * of the input may reach the message; a line break must not. */
	if (!az_fuzz_no_newline(err)) {
		fprintf(stderr, "bad error message: \"%.200s\"\n", err);
		AZ_ASSERT(!"one line");
	}
}

static void fuzz_load(const uint8_t *data, size_t size)
{
	struct az_config c;
	char err[512];
	int rc;

	az_fuzz_write_file(loaded, data, size);
	memset(err, 0, sizeof(err));
	rc = az_config_load(&c, loaded, err, sizeof(err));
	if (rc == 0)
		check_common(&c);
	else
		check_message(rc, err);
	unlink(loaded); /* so that a later "--resume --out f" never depends on input order */
	az_fuzz_verdict = rc == 0;
}

static void parse_argv(int argc, char **argv)
{
	struct az_config c;
	char err[1024];
	int rc;

	memset(err, 0, sizeof(err));
	rc = az_config_parse(&c, argc, argv, err, sizeof(err));
	if (rc == 0)
		check_runnable(&c);
	else if (rc < 0) /* 1: --help, 2: --options-table */
		check_message(rc, err);
	az_fuzz_verdict = rc == 0;
}

static void fuzz_parse(const uint8_t *data, size_t size)
{
	char *argv[ARGS_MAX + 2];
	size_t i = 0, start = 0;
	int argc = 1;

	argv[0] = "azrun";
	while (i <= size && argc <= ARGS_MAX) {
		if (i == size || data[i] == '\0' || data[i] == '\n') {
			if (i < size || i > start) { /* each argument in its own allocation */
				char *a = malloc(i - start + 1);
				AZ_ASSERT(a);
				memcpy(a, data + start, i - start);
				a[i - start] = '\0';
				argv[argc++] = a;
			}
			start = i + 1;
		}
		i++;
	}
	argv[argc] = NULL;
	parse_argv(argc, argv);
	for (int k = 1; k < argc; k++)
		free(argv[k]);
}

static void fuzz_ini(const uint8_t *data, size_t size)
{
	char *argv[] = {"azrun", "--config", (char *)ini, NULL};

	az_fuzz_write_file(ini, data, size);
	parse_argv(3, argv);
	unlink(ini);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] & 3) {
	case 1: fuzz_load(data + 1, size - 1); break;
	case 3: fuzz_ini(data + 1, size - 1); break;
	default: fuzz_parse(data + 1, size - 1); break;
	}
	return 0;
}
