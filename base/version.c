/* SPDX-License-Identifier: MIT */
#include "base/version.h"

#include <string.h>

#include "az_git_commit.h" /* AZ_GIT_COMMIT, written at build time by cmake/git_commit.cmake */

const char *az_version(void)
{
	return AZ_GIT_COMMIT[0] ? AZ_VERSION " (git " AZ_GIT_COMMIT ")" : AZ_VERSION;
}

int az_version_option(int argc, char **argv, const char *prog)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--version") == 0) {
			printf("%s %s\n", prog, az_version());
			return 1;
		}
	return 0;
}
