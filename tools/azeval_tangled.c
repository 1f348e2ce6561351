/* SPDX-License-Identifier: MIT */
/* azeval on Tangled: labelled positions solved exactly (--write-labelled --uncoloured K) and
 * AlphaZero.jl's mistake rate on them (--mistakes), with the exact Tangled solver. */
#include "tools/azeval_impl.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "eval/tangled_labels.h"
#include "games/tangled/tangled.h"
#include "games/tangled/tangled_solve.h"

/* A solver for the configured Tangled game with the --solve-nodes budget. 0, or 1 after a
 * message. */
static int tangled_solver(const struct eval_opts *o, struct az_tangled_solver **s)
{
	struct az_tangled_solve_params p;

	az_tangled_solve_params_default(&p);
	p.max_nodes = (uint64_t)o->solve_nodes;
	if (az_tangled_solver_create(&p, s) < 0) {
		fprintf(stderr, "azeval: out of memory for the Tangled solver\n");
		return 1;
	}
	return 0;
}

/* The network's raw policy as a move chooser of the labelled-set sampler. */
static int policy_of(void *ctx, const void *state, float *policy)
{
	float v;

	return az_net_eval(&((struct eval_ctx *)ctx)->net.eval, state, policy, &v, NULL);
}

/* The stop signal that arrived while a labelled set was being written, or 0. */
static volatile sig_atomic_t labelling_stopped;

/* The first stop signal asks for a clean stop; a second one (the solver can spend minutes on
 * one position) ends the process at once, as the default action would. */
static void on_stop_signal(int sig)
{
	if (labelling_stopped) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	static const char msg[] = "\nazeval: stopping (a second signal stops at once, without "
				  "cleaning up)\n";
	int saved = errno; /* the interrupted code's */

	labelling_stopped = sig;
	ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);

	(void)w; /* stderr gone: nothing to do */
	errno = saved;
}

static const int stop_sigs[3] = {SIGINT, SIGTERM, SIGHUP};

void azeval_stop_signals_begin(struct sigaction old[3])
{
	struct sigaction sa = {.sa_handler = on_stop_signal, .sa_flags = SA_RESTART};

	sigemptyset(&sa.sa_mask);
	labelling_stopped = 0;
	for (int i = 0; i < 3; i++) { /* a signal the caller ignores (nohup) stays ignored */
		sigaction(stop_sigs[i], &sa, &old[i]);
		if (old[i].sa_handler == SIG_IGN)
			sigaction(stop_sigs[i], &old[i], NULL);
	}
}

void azeval_stop_signals_end(const struct sigaction old[3])
{
	for (int i = 0; i < 3; i++)
		sigaction(stop_sigs[i], &old[i], NULL);
}

int azeval_stop_signal(void)
{
	return labelling_stopped;
}

void azeval_stop_reraise(void)
{
	int sig = labelling_stopped;

	fflush(stderr);
	signal(sig, SIG_DFL);
	raise(sig);
	_exit(128 + sig); /* not reached unless the signal is blocked */
}

/* The sampler's tick: the progress bar, and a stop when SIGINT, SIGTERM or SIGHUP arrived. */
static int labelling_tick(void *arg, long written, long count)
{
	(void)count;
	az_progress_update(arg, (uint64_t)written, "positions");
	return labelling_stopped != 0;
}

/* tangled --write-labelled --uncoloured K: --games N distinct positions from random games, or
 * from games of the raw policy (c not NULL). Returns 0, or the exit status after a message. */
int azeval_tangled_labelled(const struct eval_opts *o, struct eval_ctx *c, const char *board)
{
	struct az_tangled_sample sp = {.uncoloured = (int)o->uncoloured, .count = o->games,
				       .seed = o->seed, .temperature = (float)o->temperature,
				       .board = board};
	struct az_tangled_sample_result r;
	struct az_tangled_solver *s;
	char err[AZ_ERR_LEN];
	int rc;

	if (c) {
		sp.policy = policy_of;
		sp.ctx = c;
	}
	if ((rc = tangled_solver(o, &s)) != 0)
		return rc;
	/* A stop signal ends the sampling between two games and leaves no temporary file; one that
	 * arrives during the last game lets it finish (the file is then complete). */
	struct sigaction old[3];
	struct az_progress bar;

	azeval_stop_signals_begin(old);
	az_progress_begin(&bar, "labelling", (uint64_t)o->games, 0);
	sp.tick = labelling_tick;
	sp.tick_arg = &bar;
	rc = az_tangled_labelled_write(o->labelled, &sp, s, &r, err, sizeof(err));
	az_progress_end(&bar);
	azeval_stop_signals_end(old);
	az_tangled_solver_destroy(s);
	if (rc < 0) {
		fprintf(stderr, "azeval: %s\n", err);
		if (rc == -EINTR)
			azeval_stop_reraise();
		return 1;
	}
	fprintf(stderr, "azeval: wrote %ld labelled tangled positions with %ld uncoloured edges "
		"to %s (%ld games, %ld unsolved within --solve-nodes, %.3f s solving)\n",
		r.written, o->uncoloured, o->labelled, r.games, r.unsolved, r.seconds);
	if (r.written < o->games)
		fprintf(stderr, "azeval: only %ld distinct position%s of the %ld asked for\n",
			r.written, r.written == 1 ? "" : "s", o->games);
	return 0;
}

const char *azeval_tangled_hint(const char *path, const char *err, char *buf, size_t n)
{
	const struct az_tangled_graph *g = az_tangled_current_graph();

	if (!g || (!strstr(err, "illegal in this position") &&
		   !strstr(err, "not a move of this game")))
		return "";
	snprintf(buf, n, "; this evaluation plays Tangled on %s with %s tokens (a checkpoint's "
		 "record, or --graph and --variant): is %s for another graph or variant?", g->name,
		 az_tangled_current_tokens(NULL, NULL) == AZ_TANGLED_FIXED ? "fixed" : "free",
		 path);
	return buf;
}

void azeval_tangled_key(const struct az_config *gc, char *buf, size_t n)
{
	char board[1100];
	const char *cfg;

	az_config_board(gc, board, sizeof(board));
	cfg = strchr(board, ' ') ? strchr(board, ' ') + 1 : "";
	snprintf(buf, n, "%s;seed=%llu", cfg, (unsigned long long)gc->seed);
}

/* --mistakes on Tangled positions: as eval_mistakes, with the exact Tangled solver; positions
 * it cannot solve within --solve-nodes are counted apart (unsolved) and not scored. */
int azeval_tangled_mistakes(struct eval_ctx *c, const struct eval_opts *o,
				 const struct az_mcts_params *mp, const char *key)
{
	char path[4096], err[600];
	struct az_labels *l;
	struct az_tangled_solver *s;
	struct az_tree *tree;
	long mistakes = 0, n, lost = 0, unsolved = 0, scored = 0, i;
	struct sigaction old[3];
	int rc;
	if (azeval_labels_path(o, path, sizeof(path)) < 0)
		return 2;
	if ((rc = tangled_solver(o, &s)) != 0)
		return rc;
	if ((rc = az_tangled_labels_open(o->positions, path, key, o->limit, s, &l, err,
					 sizeof(err))) < 0) {
		char hint[AZ_ERR_LEN];

		fprintf(stderr, "azeval: %s%s\n", err,
			azeval_tangled_hint(o->positions, err, hint, sizeof(hint)));
		az_tangled_solver_destroy(s);
		return rc == -EINVAL || rc == -ENOENT ? 2 : 1;
	}
	n = az_labels_count(l);
	rc = n == 0 ? -EINVAL : az_tree_create(c->g, mp, az_labels_state(l, 0), &tree);
	if (rc < 0) {
		if (n == 0)
			fprintf(stderr, "azeval: %s holds no positions\n", o->positions);
		az_labels_close(l);
		az_tangled_solver_destroy(s);
		return n == 0 ? 2 : 1;
	}
	azeval_stop_signals_begin(old); /* a stop ends the loop between positions, labels kept */
	for (i = 0; i < n && rc == 0 && !azeval_stop_signal(); i++) {
		int a = az_eval_move(c->g, c->fn, c->fn_ctx, tree, (uint32_t)o->sims,
				     az_labels_state(l, i));
		int keeps = 1, v = 0;
		rc = a < 0 ? a : az_labels_outcome(l, i, &v);
		if (rc == 0)
			rc = az_labels_keeps(l, i, a, &keeps);
		if (rc == -ETIMEDOUT) {
			unsolved++;
			rc = 0;
			continue;
		}
		scored += rc == 0;
		mistakes += rc == 0 && !keeps;
		if (rc == 0 && !keeps && o->list_mistakes)
			azeval_list_mistake(c, l, i, v, a);
		lost += rc == 0 && v < 0;
	}
	az_tree_destroy(tree);
	int saved = az_labels_save(l, err, sizeof(err));
	az_labels_close(l);
	az_tangled_solver_destroy(s);
	azeval_stop_signals_end(old);
	azeval_mistakes_stopped(rc, path, saved, i, n);
	double rate = scored ? (double)mistakes / (double)scored : 0.0;
	char where[4200];
	if (azeval_labels_done(o, path, saved, err, rc, where, sizeof(where)))
		return 1;
	if (o->json && scored)
		printf("{\"positions\": %ld, \"lost_positions\": %ld, \"mistakes\": %ld, "
		       "\"mistake_rate\": %.6f, \"unsolved\": %ld, \"sims\": %ld, \"agent\": "
		       "\"%s\", \"labels\": %s}\n", scored, lost, mistakes, rate, unsolved, o->sims,
		       azeval_agent(c), where);
	else if (o->json)
		printf("{\"positions\": 0, \"lost_positions\": 0, \"mistakes\": 0, "
		       "\"mistake_rate\": null, \"unsolved\": %ld, \"sims\": %ld, \"agent\": "
		       "\"%s\", \"labels\": %s}\n", unsolved, o->sims, azeval_agent(c), where);
	else if (scored)
		printf("%s: %ld positions solved (%ld lost for the side to move, %ld unsolved "
		       "within --solve-nodes), agent %s, %ld simulations per move\nmistake_rate         "
		       "%.2f%% (%ld of %ld)\n%s\n", o->positions, scored, lost, unsolved,
		       azeval_agent(c), o->sims, 100.0 * rate, mistakes, scored, where);
	else
		printf("%s: no position solved within --solve-nodes (%ld unsolved): no mistake "
		       "rate\n%s\n", o->positions, unsolved, where);
	return saved < 0 ? 1 : 0;
}

