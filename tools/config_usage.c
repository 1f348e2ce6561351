/* SPDX-License-Identifier: MIT */
/* azrun --help and --options-table: every option of the table in tools/config.c, with its range
 * and each game's defaults, printed by tools/options.c as the other tools' are. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "games/game.h"
#include "tools/config.h"
#include "tools/config_impl.h"

#define MAX_GAMES 8 /* registered games whose defaults --help shows */

/* o's default as --help shows it into buf[n]: "128", or a value per game where they differ
 * ("20 / 10 / 20", d[nd] the games' defaults); NULL for none worth printing (flags, empty
 * strings, values derived from the machine or required). */
static const char *default_text(const struct opt *o, const struct az_config *d, int nd, char *buf,
				size_t n)
{
	char v[MAX_GAMES][64];
	int same = 1;

	for (int k = 0; k < nd; k++) {
		az_config_show_value(&d[k], o, v[k], sizeof(v[k]));
		same = same && strcmp(v[k], v[0]) == 0;
	}
	if (o->o.type == AZ_OPT_FLAG || !v[0][0] || o->o.off == offsetof(struct az_config, game) ||
	    o->o.off == offsetof(struct az_config, workers))
		return NULL;
	buf[0] = 0;
	for (int k = 0, len = 0; k < (same ? 1 : nd); k++)
		len += snprintf(buf + len, n - (size_t)len, "%s%s", k ? " / " : "", v[k]);
	return buf;
}

/* azrun's table as the other tools' (tools/options.h), each entry's def its default text, for
 * az_opts_help() and az_opts_dump() only (the defaults are per game: never parsed). Built once;
 * names[] gets the games whose defaults it shows, "tictactoe / connect4 / tangled". */
static const struct az_opts *help_table(char *names, size_t len)
{
	static struct az_config d[MAX_GAMES];
	static struct az_opt view[AZ_GAME_OPTS_MAX + 128];
	static char defs[AZ_GAME_OPTS_MAX + 128][200];
	static struct az_opts t = {.tool = "azrun", .opt = view};
	size_t nopts, n = 0;
	const struct opt *opts = az_config_opts(&nopts);
	int nd = 0;

	for (; az_game_registry[nd] && nd < MAX_GAMES; nd++) {
		az_config_defaults(&d[nd], az_game_registry[nd]->name);
		n += (size_t)snprintf(names + n, len - n, "%s%s", nd ? " / " : "",
				      az_game_registry[nd]->name);
	}
	for (size_t i = 0; i < nopts && !t.n; i++) {
		AZ_ASSERT(i < AZ_ARRAY_LEN(view));
		view[i] = opts[i].o;
		view[i].def = default_text(&opts[i], d, nd, defs[i], sizeof(defs[i]));
	}
	t.n = nopts;
	return &t;
}

void az_config_dump(FILE *f)
{
	char names[200];

	az_opts_dump(f, help_table(names, sizeof(names)));
}

void az_config_usage(const char *prog)
{
	char names[200];
	const struct az_opts *t = help_table(names, sizeof(names));

	printf("Usage: %s --game GAME --out DIR [options]\n"
	       "       %s --resume --out DIR [options]\n"
	       "       azrun status --out DIR     progress of a running or finished run\n"
	       "       azrun report --out DIR     PNG plots + summary page in DIR/report/\n"
	       "       azrun verify --out DIR     check every checkpoint, record and metrics line\n"
	       "       azrun repair --out DIR     set damage aside in DIR/quarantine/, delete nothing\n\n"
	       "Trains an AlphaZero agent: self-play workers -> shared-memory rings -> one batched\n"
	       "inference process -> trainer -> arena -> checkpoints in DIR. With --resume, the\n"
	       "saved configuration is reused; options given with it apply from the next\n"
	       "iteration on (the game and the architecture cannot change).\n\n"
	       "Options ([range], defaults for %s where they differ):\n",
	       prog, prog, names);
	az_opts_help(stdout, t);
	printf("  %-20s %s\n", "--version", "print the version and exit");
	printf("  %-20s %s\n\nEnvironment:\n"
	       "  AZ_CPU_GEMM=auto|fp32|blas|avx512|bf16|amx\n"
	       "                             the cpu backend's kernels (default auto: Intel's\n"
	       "                             AMX tiles where they run, bf16 weights on AMD CPUs\n"
	       "                             with AVX512_BF16, else AVX-512, else OpenBLAS;\n"
	       "                             fp32: no bf16; inference only, the trainer stays\n"
	       "                             fp32; docs/cpu.md)\n"
	       "  AZ_CUDA_MATH=fp32|tf32|bf16   the cuda backend's GEMM precision (docs/gpu.md)\n"
	       "  RINGZERO_CACHE_DIR=DIR|none  where Tangled's outcome tables and adjudication\n"
	       "                             caches live, and the labels caches of read-only\n"
	       "                             position sets (default $XDG_CACHE_HOME/ringzero or\n"
	       "                             ~/.cache/ringzero; none: no such files)\n"
	       "\nExamples:\n"
	       "  %s --game tictactoe --out runs/ttt\n"
	       "  %s --game connect4 --out runs/c4 --iterations 2\n"
	       "  %s --game tangled --graph 3 --out runs/k4\n"
	       "  %s --resume --out runs/ttt --iterations 30\n",
	       "--help", "this text", prog, prog, prog, prog);
}

const char *az_config_game_list(enum az_games_which which, const char *sep, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; az_game_registry[i] && n < len; i++) {
		const struct az_game *g = az_game_desc_game(az_game_registry[i]);

		if ((which == AZ_GAMES_READY && !g) ||
		    (which == AZ_GAMES_BOARD && (!g || !g->planes)))
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? sep : "",
				      az_game_registry[i]->name);
	}
	return buf;
}

void az_config_game_opt_help(struct az_opt *t, size_t n, const char *dflt)
{
	static char help[300];
	char games[200];

	snprintf(help, sizeof(help), "the game: %s (default: %s)",
		 az_config_game_list(AZ_GAMES_ALL, " | ", games, sizeof(games)), dflt);
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, "game") == 0)
			t[i].help = help;
}
