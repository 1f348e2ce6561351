/* SPDX-License-Identifier: MIT */
/* The game registry: every game's descriptor, looked up by name. Its own library
 * (az_game_registry), so that programs using only tic-tac-toe or Connect Four link az_games
 * alone and not Tangled's LAPACKE. Adding a game adds one line to registry[]. */
#include "games/game.h"
#include "games/tangled/tangled.h"

#include <stdio.h>
#include <string.h>

const struct az_game_desc *const az_game_registry[] = {
	&az_game_desc_tictactoe,
	&az_game_desc_connect4,
	&az_game_desc_tangled,
	NULL,
};

const struct az_game_desc *az_game_desc_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; az_game_registry[i]; i++) {
		const struct az_game_desc *d = az_game_registry[i];
		if (strcmp(d->name, name) == 0 || (d->alias && strcmp(d->alias, name) == 0))
			return d;
	}
	return NULL;
}

const struct az_game *az_game_find(const char *name)
{
	const struct az_game_desc *d = az_game_desc_find(name);
	return d ? az_game_desc_game(d) : NULL;
}

const char *az_game_names(void)
{
	/* Built once; the registry is constant. Not thread-safe on the first call, like the
	 * rest of the one-time setup. */
	static char names[256];
	if (!names[0]) {
		size_t n = 0;
		for (size_t i = 0; az_game_registry[i] && n < sizeof(names); i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? "," : "",
					      az_game_registry[i]->name);
	}
	return names;
}
