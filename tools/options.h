/* SPDX-License-Identifier: MIT */
/* The tools' option tables: each tool declares its options once (name, type, range, default,
 * help) and parses, checks, prints --help and dumps --options-table through them. */
#ifndef AZ_TOOLS_OPTIONS_H
#define AZ_TOOLS_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "games/game.h"

enum az_opt_type {
	AZ_OPT_FLAG,   /* int: 1 when given; takes no value */
	AZ_OPT_STR,    /* const char *: the argument itself (points into argv) */
	AZ_OPT_CHOICE, /* const char *: one of choices ("random|rollout") */
	AZ_OPT_INT,    /* int: a whole number in [lo, hi] */
	AZ_OPT_LONG,   /* long: a whole number in [lo, hi] */
	AZ_OPT_U32,    /* uint32_t: a whole number in [lo, hi] */
	AZ_OPT_U64,    /* uint64_t: digits only, any 64-bit value (lo, hi unused) */
	AZ_OPT_F32,    /* float in [lo, hi] */
	AZ_OPT_F64,    /* double in [lo, hi] */
	AZ_OPT_PARSE,  /* parse(v, field) decides; choices names the values for help and errors */
	/* char[]: a copy of the value, one of choices when the table gives them; the array's size
	 * is the table owner's (azrun's table, tools/config_impl.h), so az_opt_set_buf() sets it */
	AZ_OPT_BUF,
};

struct az_opt {
	const char *name; /* long option without "--" */
	enum az_opt_type type;
	size_t off;      /* the field in the tool's options struct */
	const char *arg; /* the value's name in --help ("N"); NULL for a flag */
	double lo, hi;   /* numbers: the accepted range */
	/* The default as text, set through the same parser before argv is read (so --help shows
	 * what is used); NULL: the field keeps the caller's initial value (a "not given" mark,
	 * which help explains). */
	const char *def;
	const char *help;
	const char *choices; /* CHOICE, PARSE: "auto|cpu|cpu-async|cuda" */
	/* When set, lo and hi are this game's option of the same name (games/game.h): the limit
	 * is declared once, by the game that enforces it. */
	const struct az_game_desc *game;
	int (*parse)(const char *v, void *field); /* PARSE: 0 or -EINVAL */
};

/* One tool's (or azbench mode's) options. */
struct az_opts {
	const char *tool; /* message prefix: "azeval", "azbench ring" */
	const struct az_opt *opt;
	size_t n;
	int positionals; /* bare arguments allowed (aztangled's states) */
	/* --help through az_opts_usage(): the tool's help text (tools/help/TOOL.txt, embedded as
	 * <help_text.h>'s az_help_TOOL), its line "@OPTIONS" replaced by the options and its line
	 * "@NOTES" by notes(f) (what the text cannot hold: values computed at run time). */
	const char *help;
	void (*notes)(FILE *f);
	int version; /* the tool takes --version (az_version_option()): --help names it */
};

/* What az_opts_parse() found besides options. */
enum { AZ_OPTS_HELP = 1, AZ_OPTS_DUMPED = 2 };

/* Set the table's defaults in dst, then parse argv[1..argc) into it: --name V and --name=V;
 * --help/-h (the help on stdout, az_opts_usage()); --options-table (the table on stdout,
 * az_opts_dump()). Bare arguments (and everything after "--") are moved, in order, to
 * argv[1..*npos] when t->positionals, else refused. Returns 0, AZ_OPTS_HELP, AZ_OPTS_DUMPED, or
 * -EINVAL with one line on stderr ("azeval: --sims: expected a whole number in [0, 1000000],
 * got 'x'"). */
int az_opts_parse(const struct az_opts *t, void *dst, int argc, char **argv, int *npos);

/* Set option o's field in dst from text v with o's checks: 0, or -EINVAL with the message
 * (without the tool's prefix) in err. */
int az_opt_set(const struct az_opt *o, void *dst, const char *v, char *err, size_t errlen);

/* Set an AZ_OPT_BUF option's field[size] from text v: one of o->choices when the table gives
 * them, at most size - 1 characters. 0, or -EINVAL with the message (as az_opt_set()'s) in err. */
int az_opt_set_buf(const struct az_opt *o, char *field, size_t size, const char *v, char *err,
		   size_t errlen);

/* Check the value of o's field in dst as az_opt_set() checks text: numbers in o's range, a
 * CHOICE or BUF among o's choices (a CHOICE not set, NULL, passes); other types pass. For a
 * struct filled otherwise than from text (a program's own settings). 0, or -EINVAL with the
 * message in err ("--sims: expected a whole number in [2, 1000000], got '1'"). */
int az_opt_check(const struct az_opt *o, const void *dst, char *err, size_t errlen);

/* Text v as a message quotes it, into buf[n]: control bytes as '?', cut after 40 characters
 * ("..."), so that the message stays one line. Returns buf. */
const char *az_opt_quote(const char *v, char *buf, size_t n);

/* The table's defaults into dst (those with def only). */
void az_opts_defaults(const struct az_opts *t, void *dst);

/* o's range as --help and --options-table print it ("2..1000000", "random|rollout", "" for
 * none) into buf[n]; returns buf. */
const char *az_opt_range(const struct az_opt *o, char *buf, size_t n);

/* The options section of --help: a line per option, the text wrapped at 100 columns, then
 * " [RANGE]" and " (default D)". */
void az_opts_help(FILE *f, const struct az_opts *t);

/* A tool's whole --help on f: t->help, line by line, with "@OPTIONS" as "Options:", the
 * options (az_opts_help()), --version (t->version) and --help; "@NOTES" as t->notes(f) (nothing
 * when NULL). A table without help text prints "Usage: TOOL [options]" and the options. */
void az_opts_usage(FILE *f, const struct az_opts *t);

/* One line per option, tab-separated: name, type, range, default ("-" for none): what
 * tests/tools/test_options.sh checks --help against. */
void az_opts_dump(FILE *f, const struct az_opts *t);

/* text on f in lines of at most width characters, broken at spaces (a longer word stays whole
 * up to width), each after a prefix: first before the first line, rest before the others. */
void az_usage_wrap(FILE *f, const char *first, const char *rest, size_t width, const char *text);

#endif
