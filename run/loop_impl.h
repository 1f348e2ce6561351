/* SPDX-License-Identifier: MIT */
/* What run/loop.c and run/loop_setup.c share. Never included from outside run/. */
#ifndef AZ_RUN_LOOP_IMPL_H
#define AZ_RUN_LOOP_IMPL_H

#include <stdint.h>

#include "run/loop.h"
#include "run/supervise.h"

/* progress.json for azrun status: phase ph (NULL: none running, "done") at done of total. */
void loop_write_progress(struct az_run_loop *r, const struct az_phase *ph, uint64_t done,
			 uint64_t total, double evals_per_s);

/* state.json from r->completed and r->best_iteration (temp, fsync, rename); 0 or -errno,
 * logged. */
int loop_save_state(struct az_run_loop *r);

#endif
