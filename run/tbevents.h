/* SPDX-License-Identifier: MIT */
/* The run's metrics as a TensorBoard event file, DIR/tb/events.out.tfevents.ringzero: one scalar
 * per metric and completed iteration (step = iteration), readable by `tensorboard --logdir
 * DIR/tb`. Written from metrics.jsonl, which stays the record of the run. */
#ifndef AZ_RUN_TBEVENTS_H
#define AZ_RUN_TBEVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/tfrecord.h"
#include "run/runinfo.h"

#define AZ_TB_DIR "tb"
#define AZ_TB_FILE "events.out.tfevents.ringzero" /* TensorBoard wants "tfevents" in the name */

/* Append to b one TFRecord holding an Event (tensorflow/core/util/event.proto: wall_time = 1
 * double, step = 2 int64, summary = 5) whose Summary (summary.proto: value = 1) has one
 * Value (tag = 1, simple_value = 2 float). wall_time is unix seconds. */
void az_tb_put_scalar(struct az_bytes *b, double wall_time, int64_t step, const char *tag,
		      float value);

/* Append the record every event file opens with: an Event with file_version = 3
 * "brain.Event:2". */
void az_tb_put_version(struct az_bytes *b, double wall_time);

/* Encode the rows (sorted by iteration, as az_run_info_load() returns them) as a whole event
 * file into b: the version record, then for each row its scalars (the tags are listed in
 * run/tbevents.c), plus the Elo estimate of iteration 0 (0 by definition). A row's wall time
 * is its "time" field (0 when absent). Returns 0 or -ENOMEM. */
int az_tb_encode(const struct az_metric_row *rows, size_t n, struct az_bytes *b);

/* Rewrite dir/tb/events.out.tfevents.ringzero from dir/metrics.jsonl (temporary name, then
 * rename). The content depends only on metrics.jsonl, so after each iteration the new file
 * extends the old one and TensorBoard's incremental reader picks up just the new records.
 * Returns 0 or -errno with a one-line message in err. */
int az_tb_write_run(const char *dir, char *err, size_t errlen);

#endif
