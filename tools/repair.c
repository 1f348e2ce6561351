/* SPDX-License-Identifier: MIT */
/* `azrun repair --out DIR`: the command line of run/rundir.h's az_rundir_salvage. */
#include "tools/repair.h"

#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "run/rundir.h"
#include "tools/config.h"
#include "tools/subcommands.h"
#include "help_text.h" /* generated from tools/help/ */

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

int az_repair_main(int argc, char **argv)
{
	struct az_subcommand_run r;
	int rc = az_subcommand_open_config(argc, argv, az_help_azrun_repair, 1, &r);

	if (rc >= 0)
		return rc;
	char path[AZ_RUNDIR_PATH_MAX], err[512];
	/* No azrun may write the directory meanwhile. */
	if (az_rundir_create_locked(r.dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "azrun repair: %s\n", err);
		return 2;
	}
	az_rundir_path(path, sizeof(path), r.dir, AZ_RUNDIR_LOG);
	az_log_open(path);
	struct az_rundir_salvage s = {.say = log_action, .net = r.cfg.net, .hidden = r.cfg.hidden,
				      .blocks = r.cfg.blocks};
	az_rundir_salvage(r.dir, r.g, &s);
	struct az_rundir_check t = {.report = print_damage, .net = r.cfg.net, .hidden = r.cfg.hidden,
				    .blocks = r.cfg.blocks};
	az_rundir_verify(r.dir, r.g, &t);
	az_log("azrun repair: %s: %ld file%s moved to quarantine/, %ld rebuilt; %s", r.dir, s.moved,
	       az_plural(s.moved), s.rebuilt,
	       t.problems ? "damage remains (see above): restore those files from a backup"
			  : "the run verifies; --resume continues it");
	return t.problems ? 1 : 0;
}
