/* SPDX-License-Identifier: MIT */
/* The option layer (tools/options.h). Numbers: decimal notation only, whole numbers without a
 * fraction or exponent, each in its range. --help: az_opts_usage() puts the option table where the
 * help text says "@OPTIONS" and the tool's notes where it says "@NOTES", names --version only for
 * the tools that take it, and az_opts_parse() prints it for --help; every program's embedded text
 * (tools/help/, <help_text.h>) has exactly one "@OPTIONS" line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/az_assert.h"
#include "help_text.h"
#include "tests/test_util.h"
#include "tools/options.h"

struct o {
	long sims;
	int quiet;
	double lr;
};

static const struct az_opt opt[] = {
	{"sims", AZ_OPT_LONG, offsetof(struct o, sims), "N", 2, 100, "8", "simulations", NULL, NULL,
	 NULL},
	{"lr", AZ_OPT_F64, offsetof(struct o, lr), "X", 0, 1, NULL, "learning rate", NULL, NULL,
	 NULL},
	{"quiet", AZ_OPT_FLAG, offsetof(struct o, quiet), NULL, 0, 0, NULL, "no progress", NULL,
	 NULL, NULL},
};

/* The test's table with help text help (NULL: none). */
static struct az_opts table(const char *help)
{
	return (struct az_opts){.tool = "aztool", .opt = opt, .n = AZ_ARRAY_LEN(opt), .help = help};
}

static void notes(FILE *f)
{
	fprintf(f, "computed %d\n", 42);
}

/* t's --help as az_opts_usage() prints it, in a malloc'ed string. Not inlined: gcc 12 would
 * take the stream's buffer for a dangling local. */
static __attribute__((noinline)) char *usage_text(const struct az_opts *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	az_opts_usage(f, t);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void test_markers(void **state)
{
	struct az_opts t = table("Usage: aztool [options]\n\nDoes things.\n\n@OPTIONS\n\n"
				 "@NOTES\nLast line.\n");
	char *s;
	const char *opts, *ver, *help, *comp;

	(void)state;
	t.notes = notes;
	t.version = 1;
	s = usage_text(&t);
	opts = strstr(s, "Options:\n  --sims N");
	ver = strstr(s, "  --version");
	help = strstr(s, "  --help");
	comp = strstr(s, "\ncomputed 42\nLast line.\n");
	assert_true(starts_with(s, "Usage: aztool [options]\n\nDoes things.\n\nOptions:\n"));
	assert_non_null(opts);
	assert_non_null(strstr(s, "[2..100] (default 8)"));
	assert_non_null(strstr(s, "  --quiet"));
	assert_non_null(ver);
	assert_non_null(help);
	assert_non_null(comp);
	assert_true(opts < ver && ver < help && help < comp);
	assert_null(strchr(s, '@')); /* every marker replaced */
	free(s);
}

/* No notes function: "@NOTES" prints nothing; no --version unless the tool takes it; no help
 * text: the usage line and the options. */
static void test_defaults(void **state)
{
	const struct az_opts a = table("Usage: x\n@OPTIONS\n@NOTES\nend\n");
	const struct az_opts b = {.tool = "azbench mode", .opt = opt, .n = AZ_ARRAY_LEN(opt)};
	char *s = usage_text(&a), *u = usage_text(&b);

	(void)state;
	assert_null(strstr(s, "--version"));
	assert_null(strchr(s, '@'));
	assert_non_null(strstr(s, "this text\nend\n"));
	assert_true(starts_with(u, "Usage: azbench mode [options]\n\nOptions:\n  --sims"));
	free(s);
	free(u);
}

/* --help makes az_opts_parse() print the help on stdout and say so. */
static void test_parse_help(void **state)
{
	const struct az_opts t = table("Usage: aztool\n@OPTIONS\n");
	char a0[] = "aztool", a1[] = "--help";
	char *argv[] = {a0, a1, NULL};
	struct o o = {0};
	FILE *saved = stdout;
	char *buf = NULL;
	size_t len = 0;

	(void)state;
	stdout = open_memstream(&buf, &len);
	assert_non_null(stdout);
	assert_int_equal(az_opts_parse(&t, &o, 2, argv, NULL), AZ_OPTS_HELP);
	fclose(stdout);
	stdout = saved;
	assert_non_null(strstr(buf, "Usage: aztool\nOptions:\n  --sims N"));
	free(buf);
}

/* Each program's text, as embedded: one "@OPTIONS" line, a "Usage: " first line, and no
 * unknown marker (a line starting with '@' that az_opts_usage() would print as it is). */
static void test_embedded_texts(void **state)
{
	const char *texts[] = {
		az_help_azeval,         az_help_azplay,           az_help_aztangled,
		az_help_azbench_infer,  az_help_azbench_pipeline, az_help_azbench_ring,
		az_help_azbench_search, az_help_azbench_tangled,  az_help_azbench_train};

	(void)state;
	for (size_t i = 0; i < AZ_ARRAY_LEN(texts); i++) {
		const char *p = texts[i];
		int options = 0;

		assert_true(starts_with(p, "Usage: "));
		for (; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
			if (strncmp(p, "@OPTIONS\n", 9) == 0)
				options++;
			else if (*p == '@')
				assert_true(strncmp(p, "@NOTES\n", 7) == 0);
		}
		assert_int_equal(options, 1);
	}
}

/* What strtod() reads besides decimal notation is refused; decimal notation in range is taken,
 * an exponent only for a non-whole option. */
static void test_number_syntax(void **state)
{
	static const char *const bad_sims[] = {"0x10", "1e1", "10.0", " 10", "10 ", "+",
					       "",     "inf", "nan",  "1.5", "101", "1"};
	static const char *const bad_lr[] = {"0x0.1p0", "inf", "nan", ".",    "1e",
					     "1e+",     "e3",  "2",   "-0.5", "0.1 "};
	static const char *const good_lr[] = {"0.5", ".5", "5e-1", "5E-1", "+0.25", "1", "0"};
	struct o o = {0};
	char err[200];

	(void)state;
	for (size_t i = 0; i < AZ_ARRAY_LEN(bad_sims); i++) {
		assert_int_equal(az_opt_set(&opt[0], &o, bad_sims[i], err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "--sims: expected a whole number in [2, 100]"));
	}
	for (size_t i = 0; i < AZ_ARRAY_LEN(bad_lr); i++)
		assert_int_equal(az_opt_set(&opt[1], &o, bad_lr[i], err, sizeof(err)), -EINVAL);
	assert_int_equal(az_opt_set(&opt[0], &o, "+12", err, sizeof(err)), 0);
	assert_int_equal(o.sims, 12);
	for (size_t i = 0; i < AZ_ARRAY_LEN(good_lr); i++) {
		o.lr = -1;
		assert_int_equal(az_opt_set(&opt[1], &o, good_lr[i], err, sizeof(err)), 0);
		assert_true(o.lr >= 0 && o.lr <= 1);
	}
	assert_true(o.lr == 0);
}

AZ_TEST_MAIN(cmocka_unit_test(test_markers), cmocka_unit_test(test_defaults),
	     cmocka_unit_test(test_parse_help), cmocka_unit_test(test_embedded_texts),
	     cmocka_unit_test(test_number_syntax))
