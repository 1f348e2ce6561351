/* SPDX-License-Identifier: MIT */
/* azbench: measure the parts of the system on this machine and recommend settings for it.
 * A dispatch table only: each mode lives in tools/bench/ and parses its own options through
 * its option table (tools/bench/bench_opts.h). */
#include <stdio.h>
#include <string.h>

#include "base/az_assert.h"
#include "base/version.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/bench_opts.h"

struct mode {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
};

/* One entry per mode; keep the list in the order of the usage text. */
static const struct mode modes[] = {
	{ "ring", az_bench_ring,
	  "ring round-trip latency and throughput vs pipe, Unix socket, POSIX mq" },
	{ "infer", az_bench_infer,
	  "inference backend alone: evals/s vs batch size (the pipeline's ceiling)" },
	{ "pipeline", az_bench_pipeline,
	  "self-play end to end vs workers: evals/s, speedup over serial, share of ceiling" },
	{ "train", az_bench_train,
	  "trainer samples/s vs batch size, C against PyTorch (1 thread)" },
	{ "search", az_bench_search,
	  "tree search alone with a stub evaluator: simulations/s per game" },
	{ "tangled", az_bench_tangled,
	  "Tangled annealing adjudications/s: scalar vs the AVX2 / AVX-512 paths" },
};

static void usage(FILE *out)
{
	size_t i;

	fprintf(out, "Usage: azbench MODE [options]\n       azbench MODE --help\n"
		"       azbench --version\n\nModes:\n");
	for (i = 0; i < AZ_ARRAY_LEN(modes); i++)
		fprintf(out, "  %-10s %s\n", modes[i].name, modes[i].help);
	fprintf(out, "\nOptions every mode accepts:\n");
	az_bench_common_opts_help(out);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("azbench %s\n", az_version());
		return 0;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (i = 0; i < AZ_ARRAY_LEN(modes); i++)
		if (strcmp(argv[1], modes[i].name) == 0)
			return modes[i].run(argc - 1, argv + 1);
	fprintf(stderr, "azbench: unknown mode '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
