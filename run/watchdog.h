/* SPDX-License-Identifier: MIT */
/* The supervisor's watchdog rule: when a process whose heartbeat (a counter in the control
 * area, infer/control.h and run/control.h) has stopped counts as stalled. Bookkeeping only, on
 * beat values and times the caller samples; run/supervise.c applies it to the inference
 * process, the workers and the trainer, and kills a stalled one, which it then restarts like a
 * dead one.
 *
 * The rule, one for every kind of process: a process is stalled when its beat has not changed
 * for
 *     timeout = max(floor, AZ_WD_MULT * gap_max) + allowance
 * where gap_max is the longest interval between two consecutive beats observed so far in any
 * process of its kind (inference process, worker, trainer), so the timeout grows with the work
 * one beat covers (model size, batch, simulations per move, training batch) as measured on this
 * machine; floor (AZ_WD_FLOOR_S unless the caller sets another) keeps it from firing on a
 * short hiccup; allowance covers an operation the supervisor knows is in progress and that has
 * no beat inside it (a model load: run/supervise.c sizes it from the model's bytes and the
 * slowest load rate observed). Two intervals are not learned: the one from a process's start
 * to its first beat (start-up is not steady state), and any time the supervisor itself was away
 * (descheduled: az_wd_watch_shift moves the watch's clock forward instead). */
#ifndef AZ_RUN_WATCHDOG_H
#define AZ_RUN_WATCHDOG_H

#include <stdint.h>

#define AZ_WD_FLOOR_S 30.0 /* the default floor of every timeout, seconds */
#define AZ_WD_MULT 8.0     /* timeout: this many times the longest interval seen */

/* What the watchdog has learned about one kind of process. */
struct az_wd_kind {
	const char *name; /* "inference process", "worker", "trainer": messages */
	double floor_s;   /* the shortest timeout */
	double gap_max;   /* longest interval between two beats seen, seconds */
};

/* One watched process. */
struct az_wd_watch {
	uint64_t beat; /* the value last seen */
	double since;  /* when it last changed (or the watch started), caller's clock */
	int seen;      /* the beat changed at least once since the start */
	int fired;     /* az_wd_check reported the stall (once per start) */
};

/* The kind's timeout now, without allowance: max(floor_s, AZ_WD_MULT * gap_max). */
double az_wd_timeout(const struct az_wd_kind *k);

/* Start watching a process (just started, or just done with an operation whose interval must
 * not be learned) whose beat reads `beat` at time now. */
void az_wd_watch_start(struct az_wd_watch *w, uint64_t beat, double now);

/* The supervisor was away dt seconds: move the watch's clock forward by dt, so that the time is
 * neither blamed on the process nor learned. */
void az_wd_watch_shift(struct az_wd_watch *w, double dt);

/* Sample: the process's beat reads `beat` at time now. A change is progress (its interval is
 * learned into k->gap_max unless it is the first since the start). Returns 1, once per start,
 * when the beat has not changed for more than az_wd_timeout(k) + allow_s seconds; 0 otherwise.
 * *idle_s (may be NULL) gets the seconds since the last change. */
int az_wd_check(struct az_wd_kind *k, struct az_wd_watch *w, uint64_t beat, double now,
		double allow_s, double *idle_s);

#endif
