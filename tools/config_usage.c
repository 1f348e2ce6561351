/* SPDX-License-Identifier: MIT */
/* azrun --help: every option of the table in tools/config.c, with each game's defaults. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "games/game.h"
#include "tools/config.h"
#include "tools/config_impl.h"

#define MAX_GAMES 8 /* registered games whose defaults --help shows */

/* One option's line of --help: the text wrapped at 100 columns, then its default(s). */
static void usage_line(const struct opt *o, const struct az_config *d, int nd)
{
	char left[64], v[MAX_GAMES][64], def[200] = "";
	snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	int same = 1;
	for (int k = 0; k < nd; k++) {
		az_config_show_value(&d[k], o, v[k], sizeof(v[k]));
		same = same && strcmp(v[k], v[0]) == 0;
	}
	if (o->type == T_FLAG || !v[0][0] || o->off == offsetof(struct az_config, game) ||
	    o->off == offsetof(struct az_config, workers))
		; /* flags, empty strings and derived values have no default worth printing */
	else if (same)
		snprintf(def, sizeof(def), " (default %s)", v[0]);
	else
		for (int k = 0, n = 0; k < nd; k++)
			n += snprintf(def + n, sizeof(def) - (size_t)n, "%s%s%s", k ? " / " : " (default ",
				      v[k], k + 1 == nd ? ")" : "");
	char text[600], first[80];
	snprintf(text, sizeof(text), "%s%s", o->help, def);
	snprintf(first, sizeof(first), "  %-26s ", left);
	az_usage_wrap(stdout, first, "                             ", 70, text);
}

void az_config_usage(const char *prog)
{
	static struct az_config d[MAX_GAMES];
	char names[200] = "";
	int nd = 0;
	size_t nopts;
	const struct opt *opts = az_config_opts(&nopts);
	for (size_t n = 0; az_game_registry[nd] && nd < MAX_GAMES; nd++) {
		az_config_defaults(&d[nd], az_game_registry[nd]->name);
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", nd ? " / " : "",
				      az_game_registry[nd]->name);
	}
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
	       "Options (defaults for %s where they differ):\n",
	       prog, prog, names);
	for (size_t i = 0; i < nopts; i++)
		usage_line(&opts[i], d, nd);
	printf("  %-26s %s\n", "--version", "print the version and exit");
	printf("  %-26s %s\n\nEnvironment:\n"
	       "  AZ_CPU_GEMM=auto|blas|avx512  the cpu backend's kernels (default auto: AVX-512\n"
	       "                             where the CPU has it, else OpenBLAS; docs/cpu.md)\n"
	       "  AZ_CUDA_MATH=fp32|tf32|bf16   the cuda backend's GEMM precision (docs/gpu.md)\n"
	       "\nExamples:\n"
	       "  %s --game tictactoe --out runs/ttt\n"
	       "  %s --game connect4 --out runs/c4 --iterations 2\n"
	       "  %s --game tangled --graph 3 --out runs/k4\n"
	       "  %s --resume --out runs/ttt --iterations 30\n",
	       "--help", "this text", prog, prog, prog, prog);
}


const char *az_config_game_list(enum az_games_which which, const char *sep, char *buf,
				size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; az_game_registry[i] && n < len; i++) {
		const struct az_game *g = az_game_desc_game(az_game_registry[i]);

		if ((which == AZ_GAMES_READY && !g) || (which == AZ_GAMES_BOARD && (!g || !g->planes)))
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
