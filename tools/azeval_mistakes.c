/* SPDX-License-Identifier: MIT */
/* azeval's --mistakes plumbing: where the labels cache goes (--labels, checked before any work),
 * how a run's report ends, and AlphaZero.jl's mistake rate on Connect Four (Pons' sets). */
#include "tools/azeval_impl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/c4_labels.h"

/* Whether a labels cache can be created at path: the nearest folder on its way that exists
 * (the save creates the rest) is writable. Returns 0, or -errno with that folder in dir. */
static int labels_writable(const char *path, char *dir, size_t n)
{
	snprintf(dir, n, "%s", path);
	for (;;) {
		char *slash = strrchr(dir, '/');
		if (!slash)
			snprintf(dir, n, ".");
		else if (slash == dir)
			dir[1] = '\0';
		else
			*slash = '\0';
		if (access(dir, F_OK) == 0)
			return access(dir, W_OK) == 0 ? 0 : -errno;
		if (errno != ENOENT || strcmp(dir, ".") == 0 || strcmp(dir, "/") == 0)
			return -errno;
	}
}

/* --mistakes: the labels cache is --labels, else the one az_c4_labels_path() picks. */
int azeval_labels_path(const struct eval_opts *o, char *path, size_t n)
{
	if (o->labels) {
		char dir[4096];
		int rc;
		if (!o->labels[0]) {
			fprintf(stderr, "azeval: --labels: an empty path; name the labels file\n");
			return -EINVAL;
		}
		struct stat st;
		if (stat(o->labels, &st) == 0 && !S_ISREG(st.st_mode)) {
			const char *kind = S_ISDIR(st.st_mode) ? "a directory" : "a device or FIFO";

			fprintf(stderr,
				"azeval: --labels %s: not a regular file (%s): name a labels "
				"file\n",
				o->labels, kind);
			return -EINVAL;
		}
		if ((rc = labels_writable(o->labels, dir, sizeof(dir))) < 0) {
			fprintf(stderr,
				"azeval: --labels %s: cannot write in %s (%s): name a file "
				"in a folder you can write\n",
				o->labels, dir, strerror(-rc));
			return rc;
		}
		snprintf(path, n, "%s", o->labels);
		return 0;
	}
	int rc = az_c4_labels_path(o->positions, path, n);

	if (rc == -ENOTDIR)
		fprintf(stderr,
			"azeval: %s's folder is read-only and this machine has no cache "
			"folder for its labels (RINGZERO_CACHE_DIR, XDG_CACHE_HOME and HOME unset, or "
			"RINGZERO_CACHE_DIR=none): set one, or name a labels file with --labels FILE\n",
			o->positions);
	else if (rc < 0)
		fprintf(stderr, "azeval: %s: %s\n", o->positions, strerror(-rc));
	return rc;
}

/* The end of --mistakes, after the labels were saved (saved, err) and closed. */
int azeval_labels_done(const struct eval_opts *o, const char *path, int saved, const char *err,
		       int rc, char *where, size_t n)
{
	if (saved < 0)
		fprintf(stderr, "azeval: %s\n", err);
	if (rc < 0) {
		fprintf(stderr, "azeval: evaluation failed: %s\n", strerror(-rc));
		return 1;
	}
	/* saved with nothing to save (no position solved, none cached before): no file */
	int none = saved >= 0 && access(path, F_OK) != 0;

	if (o->json)
		snprintf(where, n, saved < 0 || none ? "null" : "\"%s\"", path);
	else if (none)
		snprintf(where, n, "no labels to cache (no position solved)");
	else
		snprintf(where, n,
			 saved < 0 ? "labels not saved (%s unwritable)" : "labels cached in %s",
			 path);
	return 0;
}

void azeval_list_mistake(const struct eval_ctx *c, struct az_labels *l, long i, int v, int a)
{
	static const char *const outcome[3] = {"a loss", "a draw", "a win"};
	const struct az_game *g = c->g;
	uint8_t legal[AZ_GAME_ACTIONS_MAX];
	char text[32];
	int n = 0;

	g->format_action(a, text, sizeof(text));
	printf("mistake at line %ld: %s (%s for the side to move) played %s; keep it:",
	       az_labels_line(l, i), az_labels_moves(l, i), outcome[v + 1], text);
	g->legal(az_labels_state(l, i), legal);
	for (int b = 0; b < (int)g->actions; b++) {
		int keeps = 0, rc = legal[b] ? az_labels_keeps(l, i, b, &keeps) : 0;

		if (!legal[b] || (rc == 0 && !keeps))
			continue;
		g->format_action(b, text, sizeof(text));
		printf("%s%s%s", n++ ? ", " : " ", text, rc == 0 ? "" : "?");
	}
	/* a won or drawn position always has a move that keeps it: the file's score was wrong */
	printf("%s\n", n ? "" : " none (the file's score disagrees with the solver)");
	fflush(stdout); /* each line as it is found, also into a pipe or a file */
}

void azeval_mistakes_stopped(int rc, const char *path, int saved, long done, long n)
{
	if (rc != 0 || done >= n)
		return;
	fprintf(stderr,
		"azeval: interrupted after %ld of %ld positions (no report); the labels "
		"solved so far %s %s\n",
		done, n, saved < 0 ? "were not saved:" : "are saved in", path);
	azeval_stop_reraise();
}

int azeval_c4_mistakes(struct eval_ctx *c, const struct eval_opts *o,
		       const struct az_mcts_params *mp)
{
	char path[4096], err[600];
	struct az_labels *l;
	struct az_tree *tree;
	long mistakes = 0, n, lost = 0, i;
	struct sigaction old[3];
	int rc;
	if (azeval_labels_path(o, path, sizeof(path)) < 0)
		return 2;
	if ((rc = az_c4_labels_open(o->positions, path, o->limit, &l, err, sizeof(err))) < 0) {
		fprintf(stderr, "azeval: %s\n", err);
		return rc == -EINVAL || rc == -ENOENT ? 2 : 1;
	}
	n = az_labels_count(l);
	if (n == 0) {
		fprintf(stderr, "azeval: %s holds no positions\n", o->positions);
		az_labels_close(l);
		return 2;
	}
	if (az_tree_create(c->g, mp, az_labels_state(l, 0), &tree) < 0) {
		az_labels_close(l);
		return 1;
	}
	/* a stop signal ends the loop between positions: what was solved is saved, not lost */
	azeval_stop_signals_begin(old);
	for (i = 0; i < n && rc == 0 && !azeval_stop_signal(); i++) {
		int a = az_eval_move(c->g, c->fn, c->fn_ctx, tree, (uint32_t)o->sims,
				     az_labels_state(l, i)),
		    keeps, v;
		rc = a < 0 ? a : az_labels_outcome(l, i, &v);
		if (rc == 0)
			rc = az_labels_keeps(l, i, a, &keeps);
		mistakes += rc == 0 && !keeps;
		if (rc == 0 && !keeps && o->list_mistakes)
			azeval_list_mistake(c, l, i, v, a);
		lost += rc == 0 && v < 0;
	}
	az_tree_destroy(tree);
	/* Save what was solved even when the evaluation failed: it stays valid. */
	int saved = az_labels_save(l, err, sizeof(err));
	az_labels_close(l);
	azeval_stop_signals_end(old);
	azeval_mistakes_stopped(rc, path, saved, i, n);
	char where[4200];
	if (azeval_labels_done(o, path, saved, err, rc, where, sizeof(where)))
		return 1;
	if (o->json)
		/* unsolved: always 0 (Connect Four's solver has no budget), as Tangled's key */
		printf("{\"positions\": %ld, \"lost_positions\": %ld, \"mistakes\": %ld, "
		       "\"mistake_rate\": %.6f, \"unsolved\": 0, \"sims\": %ld, \"agent\": "
		       "\"%s\", \"labels\": %s}\n",
		       n, lost, mistakes, (double)mistakes / (double)n, o->sims, azeval_agent(c),
		       where);
	else
		printf("%s: %ld positions (%ld lost for the side to move), agent %s, %ld simulations per "
		       "move\nmistake_rate         %.2f%% (%ld of %ld)\n%s\n",
		       o->positions, n, lost, azeval_agent(c), o->sims,
		       100.0 * (double)mistakes / (double)n, mistakes, n, where);
	return saved < 0 ? 1 : 0;
}
