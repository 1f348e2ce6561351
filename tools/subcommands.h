/* SPDX-License-Identifier: MIT */
/* azrun's read-only subcommands on a run directory: `azrun status` (tools/status.c) and
 * `azrun report` (tools/report.c); both read the run directory through run/runinfo.h. */
#ifndef AZ_TOOLS_SUBCOMMANDS_H
#define AZ_TOOLS_SUBCOMMANDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/config.h"

struct az_game;
struct az_run_info;

/* Entry points. argv[0] is the subcommand's name ("status", "report"), options follow:
 * azrun dispatches `azrun status ARGS...` as az_status_main(argc - 1, argv + 1). Both accept
 * --out DIR (or DIR as the one positional argument) and --help. They only read the run
 * directory (report writes DIR/report/), so they are safe while azrun is running.
 * Return the process exit code: 0 success, 1 failure (message on stderr), 2 usage error. */
int az_status_main(int argc, char **argv);
int az_report_main(int argc, char **argv);

/* A subcommand's command line: --out DIR, or DIR as the one bare argument; report's --gnuplot
 * PATH (NULL when not given). The strings point into argv. */
struct az_subcommand_opts {
	const char *out;
	const char *gnuplot;
};

/* A run directory opened by verify or repair: the directory (argv's), its run.json, and the
 * game that names. */
struct az_subcommand_run {
	const char *dir;
	struct az_config cfg;
	const struct az_game *g;
};

/* Option parsing of status, report, verify and repair (argv[0] the subcommand's name) through
 * the option layer (tools/options.h), as "azrun NAME": --out DIR or one bare DIR, --gnuplot PATH
 * for report only, --help (help: the embedded text, tools/help/azrun-NAME.txt; notes(f) prints
 * at its "@NOTES" line, may be NULL) and --options-table. Returns 0, 1 after --help or
 * --options-table, or -EINVAL (one line on stderr). */
int az_subcommand_parse_dir(int argc, char **argv, const char *help, void (*notes)(FILE *f),
			    struct az_subcommand_opts *o);

/* az_subcommand_parse_dir(), then az_run_info_load() of o->out into *ri. Returns -1 when the
 * subcommand goes on (*ri loaded: az_run_info_free() it), else the exit code to return: 0 after
 * --help, 2 for bad usage or a DIR that is not a run directory, 1 for a damaged one (message
 * printed, naming the subcommand argv[0]). */
int az_subcommand_open_run(int argc, char **argv, const char *help, void (*notes)(FILE *f),
			   struct az_subcommand_opts *o, struct az_run_info *ri);

/* az_subcommand_parse_dir(), then DIR's run.json into r->cfg and its game into r->g: the start
 * of verify and repair. Returns -1 when the subcommand goes on, else the exit code to return: 0
 * after --help, 2 for bad usage or a run.json or game that does not load (message printed,
 * naming the subcommand argv[0]). With damaged_json_is_1, a run.json that exists but does not
 * load is damage instead: 1, and the message says to restore it from a backup (verify and
 * repair, which cannot rebuild it: "damage remains", as their --help says). */
int az_subcommand_open_config(int argc, char **argv, const char *help, int damaged_json_is_1,
			      struct az_subcommand_run *r);

#endif
