/* SPDX-License-Identifier: MIT */
/* Temporary files for the fuzz targets whose code under test reads a path: one directory per
 * process under $AZ_FUZZ_TMPDIR, else /dev/shm (tmpfs: an input costs no disk I/O), else /tmp;
 * removed at exit (libFuzzer may end with _exit, so tools/fuzz.sh also removes its base). */
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLOTS 8

static char dir[256];
static char slot_name[SLOTS][64];
static char slot_path[SLOTS][320];

/* Remove path, and what it holds when it is a directory (two levels are all the targets use). */
static void remove_tree(const char *path, int depth)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char sub[512];

	if (lstat(path, &st) < 0)
		return;
	if (S_ISDIR(st.st_mode) && depth < 4 && (d = opendir(path))) {
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			remove_tree(sub, depth + 1);
		}
		closedir(d);
		rmdir(path);
		return;
	}
	unlink(path);
}

static void cleanup(void)
{
	if (dir[0])
		remove_tree(dir, 0);
}

const char *az_fuzz_tmpdir(void)
{
	const char *base;
	struct stat st;

	if (dir[0])
		return dir;
	base = getenv("AZ_FUZZ_TMPDIR");
	if (!base || !*base || strlen(base) > sizeof(dir) - 16)
		base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
				       access("/dev/shm", W_OK) == 0
			       ? "/dev/shm"
			       : "/tmp";
	snprintf(dir, sizeof(dir), "%s/az-fuzz-XXXXXX", base);
	AZ_ASSERT(mkdtemp(dir) != NULL);
	atexit(cleanup);
	return dir;
}

const char *az_fuzz_tmpfile(const char *name)
{
	const char *slash;
	char sub[320];
	int i;

	for (i = 0; i < SLOTS && slot_name[i][0]; i++)
		if (strcmp(slot_name[i], name) == 0)
			return slot_path[i];
	AZ_ASSERT(i < SLOTS && strlen(name) < sizeof(slot_name[i]));
	snprintf(slot_name[i], sizeof(slot_name[i]), "%s", name);
	snprintf(slot_path[i], sizeof(slot_path[i]), "%s/%s", az_fuzz_tmpdir(), name);
	slash = strchr(name, '/');
	if (slash) { /* one level of subdirectory, e.g. "r/run.json" */
		snprintf(sub, sizeof(sub), "%s/%.*s", dir, (int)(slash - name), name);
		AZ_ASSERT(mkdir(sub, 0755) == 0 || errno == EEXIST);
	}
	return slot_path[i];
}

void az_fuzz_write_file(const char *path, const void *data, size_t size)
{
	const char *p = data;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	AZ_ASSERT(fd >= 0);
	while (size > 0) {
		ssize_t k = write(fd, p, size);
		if (k < 0 && errno == EINTR)
			continue;
		AZ_ASSERT(k > 0);
		p += k;
		size -= (size_t)k;
	}
	AZ_ASSERT(close(fd) == 0);
}
