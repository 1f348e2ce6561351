/* SPDX-License-Identifier: MIT */
/* Internals shared by run/rundir_verify.c and run/rundir_repair.c; never included from
 * outside run/. */
#ifndef AZ_RUN_RUNDIR_IMPL_H
#define AZ_RUN_RUNDIR_IMPL_H

#include "run/rundir.h"

/* Is the network at path one of this run (t's architecture, game g) and of iteration
 * `iteration` (-1: not checked)? 0, or -1 after a report to t (damage when damage != 0). */
int az_rundir_network_check(struct az_rundir_check *t, const char *path, int damage,
			    const struct az_game *g, long iteration);

/* "<dir>/quarantine/<rel>" into buf: where azrun repair moves a file (rel as in the run). */
void az_rundir_quarantine_path(char *buf, size_t len, const char *dir, const char *rel);

#endif
