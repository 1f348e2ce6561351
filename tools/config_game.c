/* SPDX-License-Identifier: MIT */
/* azrun's configuration and the game (tools/config.h): configuring the chosen game with a bar for
 * its one-time work, the options a checkpoint records, and options of another game refused. */
#include "tools/config.h"
#include "tools/config_impl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "base/util.h"
#include "games/game.h"
#include "games/tangled/tangled.h"

const char *az_config_foreign_game_opt(const struct az_config *c, const char **owner)
{
	const struct az_game_desc *mine = az_game_desc_find(c->game);
	size_t k = 0; /* the index in c->game_opt of d's first option */

	for (size_t i = 0; az_game_registry[i]; k += az_game_registry[i++]->nopts) {
		const struct az_game_desc *d = az_game_registry[i];

		for (uint32_t j = 0; d != mine && j < d->nopts; j++) {
			if (c->game_opt_given & 1u << (k + j)) {
				*owner = d->name;
				return d->opts[j].name;
			}
		}
	}
	return NULL;
}

/* The bar of a game's one-time work in configure() (games/game.h), begun on its first report. */
struct setup_bar {
	struct az_progress bar;
	int begun, quiet;
	uint64_t total;
	double t0;
};

static void setup_progress(void *ctx, const char *what, uint64_t done, uint64_t total)
{
	struct setup_bar *b = ctx;
	if (!b->begun) {
		az_info("%s: building (%llu entries; built once, then reused)", what,
			(unsigned long long)total);
		az_progress_begin(&b->bar, what, total, b->quiet);
		b->begun = 1;
		b->t0 = az_now();
	}
	b->total = total;
	az_progress_update(&b->bar, done, "entries");
}

int az_config_game(const struct az_config *c, const struct az_game **g, char *err, size_t errlen)
{
	const struct az_game_desc *d = az_game_desc_find(c->game);
	if (d && d->configure) {
		struct setup_bar b = {.quiet = c->quiet};
		az_game_set_progress(setup_progress, &b);
		int rc = d->configure(config_game_values(c, d), c->seed, err, errlen);
		az_game_set_progress(NULL, NULL);
		if (b.begun) {
			az_progress_end(&b.bar);
			if (rc == 0)
				az_info("%s built: %llu entries in %.1fs", b.bar.label,
					(unsigned long long)b.total, az_now() - b.t0);
		}
		if (rc < 0)
			return rc;
	}
	*g = d ? az_game_desc_game(d) : NULL;
	if (!*g) {
		snprintf(err, errlen, "--game: unknown game '%s'", c->game);
		return -EINVAL;
	}
	return 0;
}

void az_config_game_options(const struct az_config *c, char *buf, size_t n)
{
	const struct az_game_desc *d = az_game_desc_find(c->game);
	buf[0] = 0;
	if (d && d->record)
		d->record(config_game_values(c, d), buf, n);
}

void az_config_board(const struct az_config *c, char *buf, size_t n)
{
	char rec[1024], *in;

	az_config_game_options(c, rec, sizeof(rec));
	if ((in = strstr(rec, ";inputs=")) != NULL) {
		const char *rest = strchr(in + 1, ';');

		rest = rest ? rest : "";
		memmove(in, rest, strlen(rest) + 1);
	}
	if ((in = strstr(rec, "graph-file=")) != NULL && az_tangled_current_graph()) {
		/* a path names no graph (the same name elsewhere, other edges): the edges do */
		const struct az_tangled_graph *tg = az_tangled_current_graph();
		const char *rest = strchr(in, ';');
		char tail[300];
		uint64_t h = az_fnv1a(AZ_FNV1A_INIT, &tg->n, sizeof(tg->n));

		h = az_fnv1a(h, tg->eu, (size_t)tg->e);
		h = az_fnv1a(h, tg->ev, (size_t)tg->e);
		snprintf(tail, sizeof(tail), "%s", rest ? rest : "");
		snprintf(in, sizeof(rec) - (size_t)(in - rec), "graph-edges=%d:%d:%016llx%s", tg->n,
			 tg->e, (unsigned long long)h, tail);
	}
	if (strcmp(c->game, "tangled") == 0 && az_tangled_current_adj())
		snprintf(rec + strlen(rec), sizeof(rec) - strlen(rec), ";adjudicator=%s",
			 az_tangled_adj_name(az_tangled_current_adj()));
	snprintf(buf, n, "%s%s%s", c->game, rec[0] ? " " : "", rec);
}

int az_config_apply_game_options(struct az_config *c, const char *text, char *err, size_t errlen)
{
	char copy[512];
	snprintf(copy, sizeof(copy), "%s", text);
	for (char *save = NULL, *kv = strtok_r(copy, ";", &save); kv;
	     kv = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq)
			continue;
		*eq = 0;
		const struct opt *o = config_find_opt(kv);
		const struct az_game_opt *go = o ? config_game_opt(o) : NULL;
		if (!go || !go->recorded)
			continue; /* written by a newer version: not ours to judge */
		char e[300];
		if (config_set_value(c, o, eq + 1, e, sizeof(e)) < 0) {
			snprintf(err, errlen, "game options \"%s\": %s", text, e);
			return -EINVAL;
		}
	}
	return 0;
}
