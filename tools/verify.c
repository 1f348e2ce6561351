/* SPDX-License-Identifier: MIT */
/* `azrun verify --out DIR`: the command line of run/rundir.h's az_rundir_verify. */
#include "tools/verify.h"
#include "base/util.h"

#include <stdio.h>
#include <string.h>

#include "run/rundir.h"
#include "tools/config.h"
#include "tools/subcommands.h"
#include "help_text.h" /* generated from tools/help/ */

static void print_line(void *ctx, int damaged, const char *msg)
{
	(void)ctx;
	printf("%s%s\n", damaged ? "DAMAGED: " : "note: ", msg);
}

int az_verify_main(int argc, char **argv)
{
	struct az_subcommand_run r;
	/* the same command line as status and report: --out DIR or DIR, --help */
	int rc = az_subcommand_open_config(argc, argv, az_help_azrun_verify, 1, &r);

	if (rc >= 0)
		return rc;
	long pid;
	struct az_rundir_check t = {.report = print_line, .net = r.cfg.net, .hidden = r.cfg.hidden,
				    .blocks = r.cfg.blocks,
				    .live = az_rundir_lock_holder(r.dir, &pid) == 1};
	if (t.live) /* its files beyond the last commit are being written, not left over */
		printf("note: %s is in use by azrun (pid %ld): what lies beyond the last committed "
		       "iteration is the iteration in progress; verify again after it stops for a "
		       "settled answer\n", r.dir, pid);
	az_rundir_verify(r.dir, r.g, &t);
	long lines = t.metrics_lines;
	printf("%s: %ld checkpoint%s, %ld replay file%s with %ld record%s, %ld metrics line%s, "
	       "%ld problem%s", r.dir, t.checkpoints, az_plural(t.checkpoints), t.replay_files,
	       az_plural(t.replay_files), t.records, az_plural(t.records), lines, az_plural(lines),
	       t.problems, az_plural(t.problems));
	if (t.repairs && t.live)
		printf(", %ld file%s of the iteration in progress", t.repairs, az_plural(t.repairs));
	else if (t.repairs) /* the notes above that --resume acts on */
		printf(", %ld leftover%s of work that never committed (an iteration or a write cut "
		       "short: the notes above; --resume rolls %s back or completes %s)", t.repairs,
		       az_plural(t.repairs), t.repairs == 1 ? "it" : "them",
		       t.repairs == 1 ? "it" : "them");
	if (t.problems) /* the way out the messages above leave to the tool */
		printf("; azrun repair --out %s sets aside or rebuilds what it can", r.dir);
	printf("\n");
	return t.problems ? 1 : 0;
}
