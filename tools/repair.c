/* SPDX-License-Identifier: MIT */
/* `azrun repair --out DIR`: the command line of run/rundir.h's az_rundir_salvage. */
#include "tools/repair.h"

#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "run/rundir.h"
#include "tools/config.h"
#include "tools/subcommands.h"

static void log_action(void *ctx, const char *msg)
{
	(void)ctx;
	az_log("azrun repair: %s", msg);
}

static void print_damage(void *ctx, int damaged, const char *msg)
{
	(void)ctx;
	if (damaged)
		az_log("azrun repair: still damaged: %s", msg);
}

static void repair_usage(void)
{
	printf("Usage: azrun repair --out DIR\n"
	       "Moves what resuming does not need and cannot trust (damaged old checkpoints,\n"
	       "unreadable replay files) into DIR/quarantine/, rebuilds state.json, best and\n"
	       "torn replay tails from the run's other files, and deletes nothing.\n"
	       "Exit 0: the run verifies (--resume continues); 1: damage remains; 2: bad usage.\n");
}

int az_repair_main(int argc, char **argv)
{
	const char *out;
	struct az_config cfg;
	const struct az_game *g;
	int rc = az_subcommand_open_config(argc, argv, repair_usage, 0, &out, &cfg, &g);

	if (rc >= 0)
		return rc;
	char path[AZ_RUNDIR_PATH_MAX], err[512];
	/* No azrun may write the directory meanwhile. */
	if (az_rundir_create_locked(out, err, sizeof(err)) < 0) {
		fprintf(stderr, "azrun repair: %s\n", err);
		return 2;
	}
	az_rundir_path(path, sizeof(path), out, AZ_RUNDIR_LOG);
	az_log_open(path);
	struct az_rundir_salvage s = {.say = log_action, .net = cfg.net, .hidden = cfg.hidden,
				      .blocks = cfg.blocks};
	az_rundir_salvage(out, g, &s);
	struct az_rundir_check t = {.report = print_damage, .net = cfg.net, .hidden = cfg.hidden,
				    .blocks = cfg.blocks};
	az_rundir_verify(out, g, &t);
	az_log("azrun repair: %s: %ld file%s moved to quarantine/, %ld rebuilt; %s", out, s.moved,
	       az_plural(s.moved), s.rebuilt,
	       t.problems ? "damage remains (see above): restore those files from a backup"
			  : "the run verifies; --resume continues it");
	return t.problems ? 1 : 0;
}
