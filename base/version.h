/* SPDX-License-Identifier: MIT */
/* The version of this build: CMake's project(VERSION) plus the git commit the build was made
 * from, when it was built from a git checkout. */
#ifndef AZ_BASE_VERSION_H
#define AZ_BASE_VERSION_H

#include <stdio.h>

/* "0.1.0 (git 1a2b3c4d5e6f)", "0.1.0 (git 1a2b3c4d5e6f+)" for a work tree with uncommitted
 * changes, or "0.1.0" outside git. A static string; never NULL. */
const char *az_version(void);

/* If argv holds --version: print "PROG VERSION" to stdout and return 1; else 0. For the tools'
 * main(), before their option parsing. */
int az_version_option(int argc, char **argv, const char *prog);

#endif
