/* SPDX-License-Identifier: MIT */
/* The watchdog rule (run/watchdog.h): learned heartbeat intervals and stall detection. */
#include "run/watchdog.h"

double az_wd_timeout(const struct az_wd_kind *k)
{
	double t = AZ_WD_MULT * k->gap_max;
	return t > k->floor_s ? t : k->floor_s;
}

void az_wd_watch_start(struct az_wd_watch *w, uint64_t beat, double now)
{
	w->beat = beat;
	w->since = now;
	w->seen = 0;
	w->fired = 0;
}

void az_wd_watch_shift(struct az_wd_watch *w, double dt)
{
	w->since += dt;
}

int az_wd_check(struct az_wd_kind *k, struct az_wd_watch *w, uint64_t beat, double now,
		double allow_s, double *idle_s)
{
	if (beat != w->beat) {
		double gap = now - w->since;
		if (w->seen && gap > k->gap_max)
			k->gap_max = gap;
		w->seen = 1;
		w->beat = beat;
		w->since = now;
	}
	double idle = now - w->since;
	if (idle_s)
		*idle_s = idle;
	if (w->fired || idle <= az_wd_timeout(k) + allow_s)
		return 0;
	w->fired = 1;
	return 1;
}
