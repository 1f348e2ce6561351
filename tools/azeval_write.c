/* SPDX-License-Identifier: MIT */
/* azeval --write-labelled: every reachable position solved exactly (tic-tac-toe, Tangled on
 * small graphs), Connect Four tactic sets, and the check of the file to be replaced. */
#include "tools/azeval_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "eval/c4_labels.h"
#include "eval/positions.h"
#include "games/tangled/tangled.h"

struct label_ctx {
	const struct az_game *g;
	FILE *f;
	int err;
};

static void label_one(void *arg, const void *state, const char *moves)
{
	struct label_ctx *c = arg;
	uint8_t opt[AZ_GAME_ACTIONS_MAX];

	if (c->err)
		return; /* the enumeration cannot be stopped: the rest is skipped */
	if (azeval_stop_signal()) {
		c->err = -EINTR;
		return;
	}
	int v = az_solve(c->g, state, opt);
	if (v < -1) {
		c->err = v;
		return;
	}
	fprintf(c->f, "%s %d ", moves[0] ? moves : "-", v);
	int first = 1;
	for (uint32_t a = 0; a < c->g->actions; a++) {
		char buf[16];
		if (!opt[a])
			continue;
		c->g->format_action((int)a, buf, sizeof(buf));
		fprintf(c->f, "%s%s", first ? "" : ",", buf);
		first = 0;
	}
	fputc('\n', c->f);
}

/* The most reachable positions --write-labelled solves exactly (each one solved from scratch
 * by az_solve): tic-tac-toe has 5,478, Tangled's K4 82,367, Connect Four about 4.5e12. */
#define LABEL_MAX_STATES 1000000

static void count_one(void *arg, const void *state, const char *moves)
{
	long *n = arg;

	(void)state;
	(void)moves;
	if (++*n > LABEL_MAX_STATES)
		_exit(1); /* in the counting child: too many, no need to walk on */
}

/* Whether g has at most LABEL_MAX_STATES reachable positions: counted by az_game_enumerate in
 * a child, which stops at the first one over (so any game, however large, answers within
 * seconds, and the parent keeps none of the walk's memory). 1 yes, 0 no, -errno. */
static int small_enough(const struct az_game *g)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		long n = 0;
		_exit(az_game_enumerate(g, 0, count_one, &n) < 0 ? 2 : 0);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 1 :
	       WIFEXITED(st) && WEXITSTATUS(st) == 1 ? 0 :
						       -ENOMEM;
}

int azeval_write_labelled(const struct az_game *g, const char *path, const char *board)
{
	/* The exact solver walks every reachable state: a game with more is refused, whatever
	 * it is (a new game included), with the ways that work for the large games we have.
	 * Tangled boards of more than 7 edges are refused before counting (the adjudicator's
	 * terminal positions are costly to reach). */
	const struct az_tangled_graph *tg = az_tangled_current_graph();
	int tangled = strcmp(g->name, "tangled") == 0;
	int small = tangled && tg && tg->e > 7 ? 0 : small_enough(g);
	if (small <= 0) {
		fprintf(stderr, "azeval: --write-labelled: %s %s, too many to solve exactly%s%s\n",
			g->name,
			small < 0 ? "could not be counted" :
				    "has more than 1000000 "
				    "reachable positions",
			tangled ?
				"; for a board of more than 7 edges, "
				"--uncoloured K --games N labels N positions with K uncoloured edges" :
				"",
			strcmp(g->name, "connect4") == 0 ? "; connect4: --tactic win|block, or "
							   "Pons' sets with --mistakes" :
							   "");
		return 2;
	}
	/* a temporary file renamed over path at the end: a stop or a failure leaves path as it was */
	struct az_atomic_file af;
	struct sigaction old[3];
	char err[AZ_ERR_LEN];
	/* the handlers cover the temporary file's whole life: a first signal during the commit's
	 * fsync lets it finish */
	azeval_stop_signals_begin(old);
	if (az_atomic_open(&af, path, err, sizeof(err)) < 0) {
		azeval_stop_signals_end(old);
		fprintf(stderr, "azeval: %s\n", err);
		return 2;
	}
	if (tangled)
		fprintf(af.f, "%s%s\n", AZ_POSITIONS_BOARD, board);
	struct label_ctx c = {.g = g, .f = af.f};
	int n = az_game_enumerate(g, 1, label_one, &c);
	if (n < 0 || c.err) {
		az_atomic_abort(&af);
		azeval_stop_signals_end(old);
		if (c.err == -EINTR) {
			fprintf(stderr, "azeval: interrupted; %s %s\n", path,
				access(path, F_OK) == 0 ? "is unchanged" : "was not written");
			azeval_stop_reraise();
		}
		fprintf(stderr, "azeval: labelling %s failed\n", path);
		return 1;
	}
	int rc = az_atomic_commit(&af, err, sizeof(err));
	azeval_stop_signals_end(old);
	if (rc < 0) {
		fprintf(stderr, "azeval: %s\n", err);
		return 1;
	}
	fprintf(stderr, "azeval: wrote %d labelled %s positions to %s\n", n, g->name, path);
	return 0;
}

/* --tactic: positions from random Connect Four games (--games N of them, --seed S). */
int azeval_write_tactics(const struct eval_opts *o, const char *path)
{
	char err[AZ_ERR_LEN];
	long n = az_c4_tactics_write(
		path, strcmp(o->tactic, "win") == 0 ? AZ_C4_TACTIC_WIN : AZ_C4_TACTIC_BLOCK,
		o->games, o->seed, err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "azeval: %s\n", err);
		return 1;
	}
	fprintf(stderr, "azeval: wrote %ld connect4 '%s' positions to %s\n", n, o->tactic, path);
	return 0;
}

/* Whether --write-labelled's F can be written once the (possibly long) solving is done
 * (az_atomic_check: a regular file or a new one, in a directory that takes new files). 0, or 2
 * after a message. */
int azeval_check_labelled_target(const struct az_game *g, const char *path)
{
	static struct az_position pos;
	char err[AZ_ERR_LEN], line[AZ_POSITIONS_LINE_MAX + 2], perr[300];
	int k = 0, n = 0;
	FILE *f;

	if (az_atomic_check(path, err, sizeof(err)) < 0) {
		fprintf(stderr, "azeval: --write-labelled %s; nothing was solved\n", err);
		return 2;
	}
	/* an existing file is replaced only when it is empty, has a board line (a positions file
	 * azeval wrote, of any board) or reads as positions of g: a checkpoint, a labels cache,
	 * notes or any other file given by mistake is kept */
	if ((f = fopen(path, "r")) == NULL && errno != ENOENT) {
		fprintf(stderr,
			"azeval: --write-labelled %s: the file exists and cannot be read (%s) "
			"to check that it holds positions, so it is not replaced; nothing was solved\n",
			path, strerror(errno));
		return 2;
	}
	if (!f || az_positions_board(path, perr, sizeof(perr))) {
		if (f)
			fclose(f);
		return 0;
	}
	while (k == 0 && n < 64 && fgets(line, sizeof(line), f)) {
		k = az_positions_parse_line(g, line, &pos, perr, sizeof(perr));
		n++;
	}
	fclose(f);
	if (k > 0 || n == 0)
		return 0;
	if (k == 0) /* comments only */
		snprintf(perr, sizeof(perr), "no position in its first lines");
	fprintf(stderr,
		"azeval: --write-labelled %s: the file exists and does not read as %s "
		"positions (line %d: %s), so it is not replaced: name a new file, or remove it "
		"first; nothing was solved\n",
		path, g->name, n, perr);
	return 2;
}
