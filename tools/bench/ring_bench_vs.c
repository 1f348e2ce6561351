/* SPDX-License-Identifier: MIT */
/* `azbench ring`'s candidate settings against azrun's defaults in the real pipeline
 * (tools/bench/ring_bench_impl.h, tools/bench/pipeline_run.c). */
#include <stdio.h>

#include "base/az_assert.h"
#include "tools/bench/pipeline_impl.h"
#include "tools/bench/ring_bench_impl.h"

int rb_versus_defaults(const struct rb_versus *s, struct az_config *pick, struct az_bench_row *row,
		       char *text, size_t len)
{
	struct az_pipeline_game pg = { .game = s->game, .backend = AZ_BACKEND_AUTO, .cache_mb = -1 };
	struct az_config d, cand;
	struct az_bench_versus v;
	char cs[128], ds[128];

	AZ_ASSERT(az_config_defaults(&d, s->game) == 0);
	cand = d;
	cand.ring_capacity = s->capacity;
	cand.max_batch = s->batch;
	cand.deadline_us = s->deadline_us;
	*pick = d;
	snprintf(cs, sizeof(cs), "--ring-capacity %u --max-batch %u --batch-deadline-us %u",
		 cand.ring_capacity, cand.max_batch, cand.deadline_us);
	snprintf(ds, sizeof(ds), "--ring-capacity %u --max-batch %u --batch-deadline-us %u",
		 d.ring_capacity, d.max_batch, d.deadline_us);
	az_bench_row_int(row, "beats_defaults", 0);
	if (s->runs == 0 && !(s->short_of > 0)) {
		snprintf(text, len, "No recommendation: the round trips suggest %s, not measured "
			 "against azrun's defaults (%s) with --default-runs 0.", cs, ds);
		return 0;
	}
	if (cand.ring_capacity == d.ring_capacity && cand.max_batch == d.max_batch &&
	    cand.deadline_us == d.deadline_us) {
		snprintf(text, len, "The round trips suggest azrun's defaults (%s).", ds);
		return 0;
	}
	if (s->runs == 0) {
		snprintf(text, len, "No recommendation: the round trips suggest %s; the time left "
			 "in --seconds was too short to measure it against azrun's defaults (%s) in "
			 "the pipeline (--seconds %.0f or more is enough).", cs, ds, s->short_of);
		return 0;
	}
	int err = az_bench_versus_defaults(&pg, &cand, (int)s->runs, s->measure, s->quiet,
					   &v);
	if (err < 0)
		return err;
	int beats = az_bench_beats(v.cand_sims.median, &v.def_sims);
	if (beats)
		*pick = cand;
	az_bench_row_int(row, "beats_defaults", beats);
	az_bench_row_num(row, "defaults_sims_per_s", v.def_sims.median, 0);
	az_bench_row_num(row, "candidate_sims_per_s", v.cand_sims.median, 0);
	az_bench_row_num(row, "defaults_evals_per_s", v.def_evals.median, 0);
	az_bench_row_num(row, "candidate_evals_per_s", v.cand_evals.median, 0);
	if (v.def_sims.n >= 2)
		az_bench_row_num(row, "noise", v.def_sims.noise, 4);
	else
		az_bench_row_none(row, "noise");
	snprintf(text, len, "%s %s: on %s self-play (azrun's defaults otherwise) it gave %.0f "
		 "sims/s, %.0f evals/s against %.0f sims/s, %.0f evals/s with azrun's defaults "
		 "(%s); medians of %u alternated runs each, the defaults' noise (max - min) / "
		 "median %.1f%%%s.", beats ? "Recommended: azrun" : "Keep azrun's defaults; the "
		 "round trips suggest", cs, s->game, v.cand_sims.median, v.cand_evals.median,
		 v.def_sims.median, v.def_evals.median, ds, s->runs,
		 100 * v.def_sims.noise,
		 beats ? ", beaten" : v.def_sims.n < 2 ? ": one run measures no noise"
		 : v.cand_sims.median > v.def_sims.median ? ": within the noise" : ": slower");
	return 0;
}
