/* SPDX-License-Identifier: MIT */
/* azrun's read-only subcommands on a run directory: `azrun status` (tools/status.c) and
 * `azrun report` (tools/report.c); both read the run directory through run/runinfo.h. */
#ifndef AZ_TOOLS_SUBCOMMANDS_H
#define AZ_TOOLS_SUBCOMMANDS_H

#include <stddef.h>
#include <stdint.h>

struct az_config;
struct az_game;
struct az_run_info;

/* Entry points. argv[0] is the subcommand's name ("status", "report"), options follow:
 * azrun dispatches `azrun status ARGS...` as az_status_main(argc - 1, argv + 1). Both accept
 * --out DIR (or DIR as the one positional argument) and --help. They only read the run
 * directory (report writes DIR/report/), so they are safe while azrun is running.
 * Return the process exit code: 0 success, 1 failure (message on stderr), 2 usage error. */
int az_status_main(int argc, char **argv);
int az_report_main(int argc, char **argv);

/* Option parsing of status, report and verify: --out DIR or one positional DIR; --help calls
 * help().
 * Returns 0, 1 after --help, or -EINVAL (message printed). */
int az_subcommand_parse_dir(int argc, char **argv, const char **dir, void (*help)(void));

/* az_subcommand_parse_dir(), then az_run_info_load() of DIR into *ri. Returns -1 when the
 * subcommand goes on (*ri loaded: az_run_info_free() it), else the exit code to return: 0 after
 * --help, 2 for bad usage or a DIR that is not a run directory (message printed, naming the
 * subcommand argv[0]). */
int az_subcommand_open_run(int argc, char **argv, void (*help)(void), const char **dir,
			   struct az_run_info *ri);

/* az_subcommand_parse_dir(), then DIR's run.json into *cfg and its game into *g: the start of
 * verify and repair. Returns -1 when the subcommand goes on, else the exit code to return: 0 after
 * --help, 2 for bad usage or a run.json or game that does not load (message printed, naming the
 * subcommand argv[0]). With damaged_json_is_1, a run.json that exists but does not load is damage
 * instead: 1, and the message says to restore it from a backup (verify; repair cannot rebuild
 * it, and calls it bad input). */
int az_subcommand_open_config(int argc, char **argv, void (*help)(void), int damaged_json_is_1,
			      const char **dir, struct az_config *cfg, const struct az_game **g);

#endif
