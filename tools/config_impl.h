/* SPDX-License-Identifier: MIT */
/* Inside azrun's option handling (tools/config.c parses and saves, tools/config_usage.c prints
 * --help, tools/config_game.c configures the game): the one option table they read. Not for use
 * outside tools/config*.c. */
#ifndef AZ_TOOLS_CONFIG_IMPL_H
#define AZ_TOOLS_CONFIG_IMPL_H

#include <stddef.h>

#include "games/game.h"
#include "tools/config.h"

/* T_NET: the network kind (az_config.net) shown with its width and blocks, "resnet:32x3" */
enum opt_type { T_U32, T_U64, T_F32, T_STR, T_BACKEND, T_FLAG, T_NET };

struct opt {
	const char *name;
	enum opt_type type;
	size_t off;
	size_t size; /* for strings */
	const char *arg;
	const char *help;
	int saved; /* written to run.json */
};

/* Every option, built on first use: azrun's own, then each registered game's, then --config.
 * *n gets their count. */
const struct opt *az_config_opts(size_t *n);

/* o's value in c as text (as --help shows it and run.json stores it) into buf[n]. */
void az_config_show_value(const struct az_config *c, const struct opt *o, char *buf, size_t n);

/* The option named name (without "--"), or NULL. */
const struct opt *config_find_opt(const char *name);

/* config_check.c: what is wrong with c's search options (--search, --gumbel-m, --gumbel-scale,
 * and --forced-playouts with Gumbel), or NULL. */
const char *config_search_wrong(const struct az_config *c);

/* Parse v as o's value into c: 0, or -EINVAL with a message in err (what, the value, the range). */
int config_set_value(struct az_config *c, const struct opt *o, const char *v, char *err,
		     size_t errlen);

/* The game option behind o, an entry of az_config_opts() (NULL for one of azrun's own). */
const struct az_game_opt *config_game_opt(const struct opt *o);

/* Game descriptor d's option values in c->game_opt (registry order), or NULL for a descriptor
 * that is not registered. */
union az_game_opt_value *config_game_values(const struct az_config *c,
					   const struct az_game_desc *d);

#endif
