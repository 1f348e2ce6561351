/* SPDX-License-Identifier: MIT */
/* The benchmark's part of `azrun report` (tools/report.c): its data file, gnuplot plots and
 * table, present when metrics.jsonl has benchmark keys (azrun --bench). */
#ifndef AZ_TOOLS_REPORT_BENCH_H
#define AZ_TOOLS_REPORT_BENCH_H

#include <stddef.h>
#include <stdio.h>

#include "run/runinfo.h"

/* Every PNG a benchmark draws: Connect Four's three, then Tangled's two, in page order. */
#define AZ_REPORT_BENCH_FILES 5
extern const char *const az_report_bench_files[AZ_REPORT_BENCH_FILES];

/* Rows of ri that hold a benchmark (Connect Four's keys, or Tangled's when the run has no
 * Connect Four benchmark). */
size_t az_report_bench_rows(const struct az_run_info *ri);

/* The PNGs of ri's benchmark: how many (0 without one), from az_report_bench_files[*first]. */
size_t az_report_bench_plots(const struct az_run_info *ri, size_t *first);

/* Write bench.tsv (path) with the rows that hold a benchmark, in percent. Returns 0 or
 * -errno. */
int az_report_bench_data(const char *path, const struct az_run_info *ri);

/* Append the plots of bench.tsv to the gnuplot script f (after the run's own plots). */
void az_report_bench_script(FILE *f, const struct az_run_info *ri);

/* The benchmark's section of the summary page: plots (with_plots) and a table, as HTML
 * (md 0) or Markdown (md 1). */
void az_report_bench_page(FILE *f, const struct az_run_info *ri, int md, int with_plots);

#endif
