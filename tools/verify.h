/* SPDX-License-Identifier: MIT */
/* `azrun verify --out DIR`: check a run directory end to end (an fsck for runs). */
#ifndef AZ_TOOLS_VERIFY_H
#define AZ_TOOLS_VERIFY_H

/* Checks: run.json and state.json parse; every checkpoint loads (header, shapes, content hash);
 * every replay segment's header and every record checksum, whole games only; metrics.jsonl has
 * one parseable object per completed iteration. Prints one line per problem and a summary.
 * Takes --out DIR or DIR (az_subcommand_parse_dir). Returns 0 when the run is intact, 1 when
 * something is damaged, 2 for bad usage. */
int az_verify_main(int argc, char **argv);

#endif
