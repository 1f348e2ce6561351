/* SPDX-License-Identifier: MIT */
/* base/util.h: az_atomic_open/commit/abort, the streaming writer behind the labelled-position
 * files and the labels cache: the old file stays whole until the new one is complete, no
 * temporary file is left behind on any path, and errors name the file asked for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "tests/test_util.h"

AZ_TEST_DIR_FIXTURE("/tmp/az-atomic-XXXXXX")

/* Number of entries in dir (without . and ..). */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void put(const char *path, const char *text)
{
	az_test_write_file(path, text, strlen(text));
}

static void expect(const char *path, const char *text)
{
	size_t len;
	unsigned char *data = az_test_read_file(path, &len);

	data[len] = '\0';
	assert_string_equal((char *)data, text);
	free(data);
}

static void test_commit_replaces(void **state)
{
	struct az_atomic_file af;
	char path[128], err[256] = "";

	(void)state;
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	put(path, "old\n");
	assert_int_equal(az_atomic_open(&af, path, err, sizeof(err)), 0);
	fputs("new line 1\n", af.f);
	/* Until the commit a reader sees the old file, beside the temporary one. */
	expect(path, "old\n");
	assert_int_equal(entries(), 2);
	fputs("new line 2\n", af.f);
	assert_int_equal(az_atomic_commit(&af, err, sizeof(err)), 0);
	assert_null(af.f);
	expect(path, "new line 1\nnew line 2\n");
	assert_int_equal(entries(), 1);
	/* Twice in a row: a second commit on a closed file is an error, not a crash. */
	assert_int_equal(az_atomic_commit(&af, err, sizeof(err)), -EBADF);
}

/* The file replaced keeps its permissions; a new file gets the umask's. */
static void test_commit_keeps_mode(void **state)
{
	struct az_atomic_file af;
	char path[128], fresh[128], err[256] = "";
	struct stat st;
	mode_t old = umask(022);

	(void)state;
	snprintf(path, sizeof(path), "%s/private.txt", dir);
	put(path, "old\n");
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(az_atomic_open(&af, path, err, sizeof(err)), 0);
	fputs("new\n", af.f);
	assert_int_equal(az_atomic_commit(&af, err, sizeof(err)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(fresh, sizeof(fresh), "%s/fresh.txt", dir);
	assert_int_equal(az_atomic_open(&af, fresh, err, sizeof(err)), 0);
	assert_int_equal(az_atomic_commit(&af, err, sizeof(err)), 0);
	assert_int_equal(stat(fresh, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	umask(old);
}

static void test_abort_keeps_old(void **state)
{
	struct az_atomic_file af;
	char path[128], err[256] = "";

	(void)state;
	snprintf(path, sizeof(path), "%s/keep.txt", dir);
	put(path, "precious\n");
	assert_int_equal(az_atomic_open(&af, path, err, sizeof(err)), 0);
	fputs("half a fi", af.f);
	az_atomic_abort(&af);
	az_atomic_abort(&af); /* safe twice */
	expect(path, "precious\n");
	assert_int_equal(entries(), 1);
}

static void test_errors_name_the_path(void **state)
{
	struct az_atomic_file af;
	char path[128], err[256] = "";

	(void)state;
	/* A folder that does not exist: the message names the path asked for. */
	snprintf(path, sizeof(path), "%s/missing/out.txt", dir);
	assert_int_equal(az_atomic_open(&af, path, err, sizeof(err)), -ENOENT);
	assert_null(af.f);
	assert_non_null(strstr(err, path));
	assert_null(strstr(err, ".tmp."));
	/* The path is a folder: refused at once. */
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(az_atomic_open(&af, path, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, "a directory"));
	/* It became one while the file was written: the rename fails, the folder stays, no
	 * temporary file is left. */
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(az_atomic_open(&af, path, err, sizeof(err)), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	fputs("x\n", af.f);
	assert_true(az_atomic_commit(&af, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "rename failed"));
	assert_null(strstr(err, ".tmp."));
	assert_int_equal(entries(), 1);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(rmdir(path), 0);
}

static void test_targets(void **state)
{
	struct az_atomic_file af;
	char path[512], link[128], name[300], err[600] = "";
	struct stat st;

	(void)state;
	/* A symbolic link is followed: its file gets the new content, the link stays a link. */
	snprintf(path, sizeof(path), "%s/real.txt", dir);
	snprintf(link, sizeof(link), "%s/link.txt", dir);
	put(path, "old\n");
	assert_int_equal(symlink("real.txt", link), 0);
	assert_int_equal(az_atomic_open(&af, link, err, sizeof(err)), 0);
	fputs("through the link\n", af.f);
	assert_int_equal(az_atomic_commit(&af, err, sizeof(err)), 0);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	expect(path, "through the link\n");
	/* A FIFO (as a device) is refused, before anything is created, and stays what it was. */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(az_atomic_check(path, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
	assert_int_equal(az_atomic_open(&af, path, err, sizeof(err)), -EINVAL);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(entries(), 3);
	/* An empty name; a name longer than NAME_MAX; the longest legal name is written (its
	 * temporary file takes a short name, as "<name>.tmp.<pid>" would not fit). */
	assert_int_equal(az_atomic_check("", err, sizeof(err)), -EINVAL);
	memset(name, 'n', sizeof(name));
	name[256] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(az_atomic_check(path, err, sizeof(err)), -ENAMETOOLONG);
	name[255] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(az_atomic_open(&af, path, err, sizeof(err)), 0);
	fputs("long\n", af.f);
	assert_int_equal(az_atomic_commit(&af, err, sizeof(err)), 0);
	expect(path, "long\n");
	assert_int_equal(entries(), 4);
}

AZ_TEST_MAIN(cmocka_unit_test_setup_teardown(test_commit_replaces, make_dir, remove_dir),
	     cmocka_unit_test_setup_teardown(test_commit_keeps_mode, make_dir, remove_dir),
	     cmocka_unit_test_setup_teardown(test_abort_keeps_old, make_dir, remove_dir),
	     cmocka_unit_test_setup_teardown(test_errors_name_the_path, make_dir, remove_dir),
	     cmocka_unit_test_setup_teardown(test_targets, make_dir, remove_dir))
