/* SPDX-License-Identifier: MIT */
/* `azrun repair --out DIR`: make a damaged run resumable, deleting nothing. */
#ifndef AZ_TOOLS_REPAIR_H
#define AZ_TOOLS_REPAIR_H

/* Takes the directory's lock, moves what resuming does not need and cannot trust into
 * DIR/quarantine/ and rebuilds what can be rebuilt (run/rundir.h: az_rundir_salvage), logging
 * each action on stderr and in DIR/azrun.log, then verifies the run. Takes --out DIR or DIR.
 * Returns 0 when the run now verifies (resume can continue), 1 when damage remains, 2 for bad
 * usage or an unreadable run.json. */
int az_repair_main(int argc, char **argv);

#endif
