/* SPDX-License-Identifier: MIT */
/* Inside azrun's option handling (tools/config.c parses and saves, tools/config_usage.c prints
 * --help, tools/config_game.c configures the game): the one option table they read. Not for use
 * outside tools/config*.c. */
#ifndef AZ_TOOLS_CONFIG_IMPL_H
#define AZ_TOOLS_CONFIG_IMPL_H

#include <stddef.h>

#include "games/game.h"
#include "run/evalcache.h"
#include "tools/config.h"

/* One of azrun's options: the entry the other tools' tables hold (tools/options.h: name, type,
 * the field's offset in struct az_config, its range or choices, help), plus what azrun adds. The
 * types azrun uses: U32, U64 and F32 (numbers in [lo, hi], or the game's range for a game's
 * option), BUF (strings in the struct), FLAG (also "on" / "off", as a file or run.json gives
 * it), PARSE (--backend; --net, which sets --hidden and --blocks too: config.c). The entries
 * have no def: the defaults are per game (az_config_defaults()). */
struct opt {
	struct az_opt o;
	size_t size; /* BUF: the field's size */
	int saved;   /* written to run.json */
};

#define CONFIG_STR_(x) #x
#define CONFIG_STR(x) CONFIG_STR_(x) /* a number macro's value as a string literal */

/* Every option, built on first use: azrun's own, then each registered game's, then --config.
 * *n gets their count. */
const struct opt *az_config_opts(size_t *n);

/* o's value in c as text (as --help shows it and run.json stores it) into buf[n]. */
void az_config_show_value(const struct az_config *c, const struct opt *o, char *buf, size_t n);

/* The option named name (without "--"), or NULL. */
const struct opt *config_find_opt(const char *name);

/* Parse v as o's value into c, with o's checks (a number in its range, a string among its
 * choices and within its field): 0, or -EINVAL with a message in err (the option, the value, the
 * range). */
int config_set_value(struct az_config *c, const struct opt *o, const char *v, char *err,
		     size_t errlen);

/* The game option behind o, an entry of az_config_opts() (NULL for one of azrun's own). */
const struct az_game_opt *config_game_opt(const struct opt *o);

/* Game descriptor d's option values in c->game_opt (registry order), or NULL for a descriptor
 * that is not registered. */
union az_game_opt_value *config_game_values(const struct az_config *c,
					    const struct az_game_desc *d);

#endif
