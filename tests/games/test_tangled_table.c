/* SPDX-License-Identifier: MIT */
/* Tangled outcome caches: the table file is written once and reloaded without recomputation;
 * a file with a damaged record, a torn tail, another version or another key is never trusted
 * (recomputed and rewritten); parameters select different files; lazily cached entries are
 * appended and reloaded; the game's terminal() is a lookup after setup. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "games/tangled/tangled_impl.h"
#include "tests/games/tangled_test.h"
#include "tests/test_util.h"

#define MAXV AZ_TANGLED_MAX_VERTICES

static struct az_tangled_graph G;

AZ_TEST_DIR_FIXTURE("/tmp/az_tangled_cacheXXXXXX")

static struct az_tangled_adj *open_adj(int graph, const char *method, double tf,
				       struct az_tangled_adj_stats *s)
{
	struct az_tangled_options o;
	struct az_tangled_adj *a;

	az_tangled_options_default(&o);
	o.adjudicator = method;
	o.cache_dir = dir;
	o.anneal_time_ns = tf;
	a = az_test_tangled_adj(graph, &G, &o);
	az_tangled_adj_stats(a, s);
	return a;
}

static long file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static void patch(const char *path, long off, int whence, const void *bytes, size_t n)
{
	FILE *f = fopen(path, "r+b");

	assert_non_null(f);
	assert_int_equal(fseek(f, off, whence), 0);
	assert_int_equal(fwrite(bytes, 1, n, f), n);
	fclose(f);
}

/* Influence of every K3 colouring, for comparing runs. */
static void all_influences(struct az_tangled_adj *a, double *f)
{
	uint8_t labels[3];

	for (int c = 0; c < 27; c++) {
		for (int e = 0, x = c; e < 3; e++, x /= 3)
			labels[e] = (uint8_t)(1 + x % 3);
		assert_int_equal(az_tangled_adj_influence(a, labels, f + 3 * c), 0);
	}
}

/* Open K3's "table:exact" table at anneal time 5 and check its statistics: file_rejected,
 * file_loaded and evaluations as given (-1: not checked); when want is not NULL, the influence of
 * every colouring equals want[81]. */
static void reopen_expect(int rejected, int loaded, int evaluations, const double *want)
{
	struct az_tangled_adj_stats s;
	struct az_tangled_adj *a = open_adj(2, "table:exact", 5.0, &s);
	double f[81];

	if (rejected >= 0)
		assert_int_equal(s.file_rejected, rejected);
	if (loaded >= 0)
		assert_int_equal((int)s.file_loaded, loaded);
	if (evaluations >= 0)
		assert_int_equal((int)s.evaluations, evaluations);
	if (want) {
		all_influences(a, f);
		assert_memory_equal(want, f, sizeof(f));
	}
	az_tangled_adj_destroy(a);
}

static void test_table_file(void **st)
{
	struct az_tangled_adj_stats s;
	struct az_tangled_adj *a;
	double f0[81], f1[81];
	char path[4096];
	long size;
	const uint32_t bad_version = 99;
	const uint8_t junk[7] = { 1, 2, 3, 4, 5, 6, 7 };
	const double wrong = 0.25;

	(void)st;
	/* first run: 5 evolutions (27 colourings up to symmetry), written to the file */
	a = open_adj(2, "table:exact", 5.0, &s);
	assert_int_equal((int)s.evaluations, 5);
	assert_int_equal((int)s.file_loaded, 0);
	snprintf(path, sizeof(path), "%s", az_tangled_adj_cache_path(a));
	assert_non_null(strstr(path, dir));
	all_influences(a, f0);
	az_tangled_adj_destroy(a);
	size = file_size(path);
	assert_true(size > 0);

	/* second run: everything from the file, identical results */
	reopen_expect(0, 5, 0, f0);

	/* a damaged value in the last record: that record is recomputed, the file rewritten */
	patch(path, -16, SEEK_END, &wrong, sizeof(wrong));
	reopen_expect(1, 4, 1, f0);
	reopen_expect(0, 5, -1, NULL);
	assert_int_equal(file_size(path), size);

	/* a torn tail: not trusted as is, rewritten without it */
	patch(path, 0, SEEK_END, junk, sizeof(junk));
	reopen_expect(1, -1, 0, NULL);
	assert_int_equal(file_size(path), size);

	/* another version: nothing trusted, all recomputed */
	patch(path, 8, SEEK_SET, &bad_version, sizeof(bad_version));
	reopen_expect(1, 0, 5, f0);

	/* a damaged key text in the header: the same */
	patch(path, 20, SEEK_SET, "X", 1);
	reopen_expect(1, -1, 5, NULL);

	/* other parameters: another file, the first untouched */
	a = open_adj(2, "table:exact", 6.0, &s);
	assert_int_equal((int)s.evaluations, 5);
	assert_string_not_equal(az_tangled_adj_cache_path(a), path);
	all_influences(a, f1);
	assert_true(fabs(f1[3 * 1 + 0] - f0[3 * 1 + 0]) > 1e-6); /* a longer anneal differs */
	az_tangled_adj_destroy(a);
	reopen_expect(-1, -1, 0, NULL);
}

/* A record with a valid checksum but a colouring that is not canonical is refused too. */
static void test_forged_record(void **st)
{
	struct az_tangled_adj_stats s;
	struct az_tangled_adj *a;
	char path[4096];
	uint8_t buf[4096], rec[64];
	double vals[3] = { 0.5, 0.5, 0.5 }, f[3];
	uint64_t hh, h;
	long size;
	FILE *fp;
	size_t hb, rb = 1 + sizeof(vals) + 8;
	static const uint8_t purple[3] = { 3, 3, 3 }, green_purple[3] = { 2, 2, 3 };

	(void)st;
	a = open_adj(2, "table:exact", 5.0, &s);
	snprintf(path, sizeof(path), "%s", az_tangled_adj_cache_path(a));
	az_tangled_adj_destroy(a);
	size = file_size(path);
	fp = fopen(path, "rb");
	assert_int_equal(fread(buf, 1, (size_t)size, fp), (size_t)size);
	fclose(fp);
	/* header = everything before the 5 records; its last 8 bytes are its checksum */
	hb = (size_t)size - 5 * rb;
	memcpy(&hh, buf + hb - 8, 8);
	rec[0] = (uint8_t)(3 | 3 << 2 | 3 << 4); /* all purple: gauge-equivalent to 2,2,3 */
	memcpy(rec + 1, vals, sizeof(vals));
	h = tg_fnv1a(hh, rec, 1 + sizeof(vals));
	memcpy(rec + 1 + sizeof(vals), &h, 8);
	patch(path, 0, SEEK_END, rec, rb);
	a = open_adj(2, "table:exact", 5.0, &s);
	assert_int_equal(s.file_rejected, 1);
	assert_int_equal((int)s.file_loaded, 5);
	assert_int_equal(az_tangled_adj_influence(a, purple, f), 0);
	assert_true(fabs(f[0] + 0.6667) < 1e-3); /* the true value, not the forged one */
	assert_int_equal(az_tangled_adj_influence(a, green_purple, f), 0);
	assert_true(fabs(f[0] - 0.6667) < 1e-3);
	az_tangled_adj_destroy(a);
}

/* Lazily cached entries (not a table) are appended as they are met and reloaded. */
static void test_lazy_append(void **st)
{
	struct az_tangled_adj_stats s;
	struct az_tangled_adj *a;
	struct az_tangled_outcome o1, o2;
	static const uint8_t st1[10] = { 0, 0, 1, 2, 1, 1, 2, 1, 2, 3 };
	static const uint8_t st2[10] = { 2, 0, 1, 0, 3, 2, 3, 2, 3, 2 };
	char path[4096];
	uint8_t rec[64];
	size_t rb;
	long size;
	FILE *fp;

	(void)st;
	a = open_adj(3, "exact", 5.0, &s);
	assert_int_equal((int)s.evaluations, 0);
	assert_int_equal(az_tangled_adj_judge(a, st1, 0.5, &o1), 0);
	assert_int_equal(az_tangled_adj_judge(a, st2, 0.5, &o2), 0);
	assert_int_equal(az_tangled_adj_judge(a, st1, 0.5, &o1), 0);
	az_tangled_adj_stats(a, &s);
	assert_int_equal((int)s.evaluations, 2);
	assert_int_equal((int)s.lookups, 3);
	snprintf(path, sizeof(path), "%s", az_tangled_adj_cache_path(a));
	az_tangled_adj_destroy(a);
	/* two workers appending the same entry: loaded once, the file compacted */
	size = file_size(path);
	rb = (size_t)(2 + 8 * 6 + 8); /* packed K4 colouring, 6 correlations, checksum */
	fp = fopen(path, "rb");
	assert_int_equal(fseek(fp, size - (long)rb, SEEK_SET), 0);
	assert_int_equal(fread(rec, 1, rb, fp), rb);
	fclose(fp);
	patch(path, 0, SEEK_END, rec, rb);
	assert_int_equal(file_size(path), size + (long)rb);
	a = open_adj(3, "exact", 5.0, &s);
	assert_int_equal(file_size(path), size);
	assert_int_equal((int)s.file_loaded, 2);
	assert_int_equal(s.file_rejected, 0);
	{
		struct az_tangled_outcome p1, p2;

		assert_int_equal(az_tangled_adj_judge(a, st1, 0.5, &p1), 0);
		assert_int_equal(az_tangled_adj_judge(a, st2, 0.5, &p2), 0);
		assert_true(p1.score == o1.score && p2.score == o2.score);
		assert_int_equal(p1.winner, AZ_TANGLED_BLUE);
	}
	az_tangled_adj_stats(a, &s);
	assert_int_equal((int)s.evaluations, 0);
	az_tangled_adj_destroy(a);
}

/* The game: K3 self-play defaults to the table (in the cache directory); terminal() values
 * are for the side to move (K3: E + 2 = 5 moves, blue). */
static void test_game_default_table(void **st)
{
	struct az_tangled_options o;
	struct az_tangled_adj_stats s;
	const struct az_game *g;
	char err[256] = "";
	uint8_t k3[6] = { 0, 1, 2, 1, 2, 1 };
	float v;

	(void)st;
	az_tangled_options_default(&o);
	o.graph = 2;
	o.cache_dir = dir;
	assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), 0);
	assert_string_equal(az_tangled_adj_name(az_tangled_current_adj()), "table:exact");
	g = az_game_find("tangled");
	assert_true(g->terminal(k3, &v));
	assert_int_equal(g->to_move(k3), 1);
	assert_true(v == 1.0f); /* blue wins, blue to move */
	k3[3] = 2, k3[4] = 3, k3[5] = 2; /* 0,1,2,2,3,2: red wins */
	assert_true(g->terminal(k3, &v));
	assert_true(v == -1.0f);
	k3[3] = 3, k3[4] = 3, k3[5] = 3;
	assert_true(g->terminal(k3, &v));
	assert_true(v == 0.0f);
	az_tangled_adj_stats(az_tangled_current_adj(), &s);
	assert_int_equal((int)s.evaluations, 0); /* the file from the tests above */
	assert_true(s.file_loaded > 0);
	/* K4 from scratch into the directory, then reused */
	o.graph = 3;
	assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), 0);
	az_tangled_adj_stats(az_tangled_current_adj(), &s);
	assert_true(s.evaluations > 0);
	assert_int_equal(az_tangled_setup(&o, err, sizeof(err)), 0);
	az_tangled_adj_stats(az_tangled_current_adj(), &s);
	assert_int_equal((int)s.evaluations, 0);
	/* an unwritable cache directory is an error with its name */
	o.cache_dir = "/proc/no/such/dir";
	assert_true(az_tangled_setup(&o, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "/proc/no/such/dir"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_file), cmocka_unit_test(test_forged_record),
		cmocka_unit_test(test_lazy_append), cmocka_unit_test(test_game_default_table),
	};

	return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
