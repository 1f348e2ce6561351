/* SPDX-License-Identifier: MIT */
/* azeval's internals shared by its two files: tools/azeval.c (options, positions, matches,
 * Connect Four) and tools/azeval_tangled.c (Tangled's exact labels and mistake rate). */
#ifndef AZ_TOOLS_AZEVAL_IMPL_H
#define AZ_TOOLS_AZEVAL_IMPL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "eval/labels.h"
#include "eval/net_eval.h"
#include "eval/net_open.h"
#include "eval/rollout.h"
#include "games/game.h"
#include "gpu/backend.h"
#include "mcts/mcts.h"
#include "tools/config.h"

/* The agent's evaluator: fn(fn_ctx, ...) is the checkpoint's network, open (eval/net_open.h;
 * fn_ctx = &net.eval, eval/net_eval.h), or with --agent rollout plain MCTS's random playouts
 * (fn_ctx = &rollout, eval/rollout.h; net unused). */
struct eval_ctx {
	const struct az_game *g;
	struct az_opened_net net;
	struct az_rollout rollout;
	az_eval_fn fn;
	void *fn_ctx;
};

struct eval_opts {
	const char *game, *ckpt, *positions, *labelled, *vs;
	const char *labels, *tactic; /* connect4: --labels, --tactic (NULL: not given) */
	const char *agent;           /* --agent: network (NULL) or rollout */
	int mistakes;
	int list_mistakes; /* --list-mistakes */
	int sym_avg;       /* --symmetry-average */
	long limit;
	long uncoloured;     /* tangled --write-labelled: -1 not given */
	long vs_sims;        /* --vs-sims: -1 not given (the agent's --sims) */
	double solve_nodes;  /* tangled solver budget per position */
	double temperature;  /* tangled --write-labelled with a checkpoint */
	int solver;          /* --mcts-solver */
	float fpu_reduction; /* --fpu-reduction; < 0: constant fpu 0 */
	const char *graph_file, *variant, *adjudicator, *epsilon; /* tangled (NULL: not given) */
	long graph;                                               /* tangled, 0: not given */
	long sims, games;
	int json;
	float c_puct;
	struct az_mcts_params sp; /* --search, --gumbel-m, --gumbel-scale (those fields only) */
	double draw_band;
	float draw_value; /* --draw-value: the agent's contempt (az_mcts_params.draw_value) */
	uint64_t seed;
	enum az_backend_kind kind;
};

/* Whose moves c judges, for the reports: "network" (with --symmetry-average "network
 * (symmetry-averaged)") or "rollout" (--agent). */
static inline const char *azeval_agent(const struct eval_ctx *c)
{
	if (c->fn == az_rollout_eval)
		return "rollout";
	return c->net.eval.sym_avg ? "network (symmetry-averaged)" : "network";
}

/* --mistakes' labels cache into path (n bytes): --labels, else az_c4_labels_path() of
 * --positions. Returns 0, or -ENOENT after a message (--positions cannot be resolved). */
int azeval_labels_path(const struct eval_opts *o, char *path, size_t n);

/* --list-mistakes: one line on stdout for position i of l (outcome v for the side to move), where
 * the agent played a and changed that outcome: the position's line in the file, its moves, the
 * move played, and every move that keeps the outcome (asking l, which may solve; '?' for a move
 * its solver could not settle; "none" when no move does: the file's score was wrong). Flushed. */
void azeval_list_mistake(const struct eval_ctx *c, struct az_labels *l, long i, int v, int a);

/* After --mistakes' loop (the labels saved, result `saved`, and closed; the handlers restored):
 * when it ended early without an error (rc 0, done < n: a stop signal), says so and where the
 * labels are, then ends the process by that signal (azeval_stop_reraise); else returns. */
void azeval_mistakes_stopped(int rc, const char *path, int saved, long done, long n);

/* The end of --mistakes, once the labels cache was saved (saved: its result, err: its message)
 * and closed, rc being the evaluation's result: says a failed save and a failed evaluation on
 * stderr, and puts the report's last field into where (n bytes): the cache's path (--json: a
 * JSON string), or, when the save failed, that it is not kept (--json: null). Returns 1 when
 * the evaluation failed (the exit status: nothing to report), else 0. */
int azeval_labels_done(const struct eval_opts *o, const char *path, int saved, const char *err,
		       int rc, char *where, size_t n);

/* tools/azeval_write.c. --write-labelled F without --uncoloured: every reachable position of g
 * solved exactly (refused with a message for a game of more than 1000000), through a temporary
 * file renamed at the end, Tangled's board line (board) first; a stop signal leaves F as it was.
 * --tactic: Connect Four's win-in-one or forced-block positions. check_labelled_target: whether
 * F can be written, and, when it exists, replaced (empty, a board line, or g's positions).
 * Each returns 0, or the exit status after a message. */
int azeval_write_labelled(const struct az_game *g, const char *path, const char *board);
int azeval_write_tactics(const struct eval_opts *o, const char *path);
int azeval_check_labelled_target(const struct az_game *g, const char *path);

/* --mistakes on Connect Four positions (Pons' sets): AlphaZero.jl's mistake rate of the agent's
 * moves (mp: its search), with the solver's labels cached (eval/c4_labels.h). Returns 0, or the
 * exit status after a message. */
int azeval_c4_mistakes(struct eval_ctx *c, const struct eval_opts *o,
		       const struct az_mcts_params *mp);

/* --write-labelled F --uncoloured K on Tangled: --games N positions solved exactly, from random
 * games, or from the network's policy at --temperature when c is not NULL; the file's first
 * line names board (az_config_board). 0, or 1/2 after a message. */
int azeval_tangled_labelled(const struct eval_opts *o, struct eval_ctx *c, const char *board);

/* The hint for a Tangled positions file whose move err calls illegal or unknown (a file of
 * another graph or variant reads so): "; this evaluation plays Tangled on G with V tokens ...",
 * in buf, or "" for any other error. */
const char *azeval_tangled_hint(const char *path, const char *err, char *buf, size_t n);

/* Stop signals (SIGINT, SIGTERM, SIGHUP) while a labelled file is written or --mistakes runs:
 * _begin installs a handler (saving the old actions in old; a signal the caller ignores, as
 * under nohup, stays ignored) whose first signal only asks for a clean stop, which azeval_stop_signal() then
 * returns (0 before any), and whose second ends the process; _end restores old. */
void azeval_stop_signals_begin(struct sigaction old[3]);
void azeval_stop_signals_end(const struct sigaction old[3]);
int azeval_stop_signal(void);

/* After a stop's clean-up (the handlers restored): end the process by the stop signal itself,
 * its default action, so that a calling shell sees the interrupt (a loop over azeval stops)
 * and its status reads 128 + the signal. Does not return. */
void azeval_stop_reraise(void);

/* The labels cache's key: the configured Tangled game (graph, variant, adjudicator) into buf. */
void azeval_tangled_key(const struct az_config *gc, char *buf, size_t n);

/* --mistakes on Tangled positions with the exact solver (mp: the agent's search). 0, or 1 after
 * a message. */
int azeval_tangled_mistakes(struct eval_ctx *c, const struct eval_opts *o,
			    const struct az_mcts_params *mp, const char *key);

#endif
