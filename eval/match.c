/* SPDX-License-Identifier: MIT */
/* Matches against the baseline opponents (eval/match.h). */
#include "eval/match.h"

#include <errno.h>
#include <string.h>

#include "base/rng.h"
#include "eval/net_eval.h"
#include "eval/rollout.h"

/* One match in progress. */
struct match {
	const struct az_match_params *p;
	struct az_tree *agent, *opp; /* opp: the rollout opponent's tree (NULL for random) */
	struct az_rollout rollout;
	struct az_rng rng;
};

/* The opponent's move: uniformly random, or plain MCTS with random playouts (vs_sims). */
static int opponent_move(struct match *m, const void *state)
{
	const struct az_game *g = m->p->g;
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	if (m->opp) {
		az_tree_reset(m->opp, state);
		int rc = az_mcts_search(m->opp, m->p->vs_sims < 2 ? 2 : m->p->vs_sims,
					az_rollout_eval, &m->rollout);
		return rc < 0 ? rc : az_tree_pick(m->opp, 0.0f, NULL);
	}
	int n = g->legal(state, mask), k = (int)az_rng_below(&m->rng, (uint32_t)n);
	for (uint32_t a = 0; a < g->actions; a++)
		if (mask[a] && k-- == 0)
			return (int)a;
	return -EINVAL;
}

/* One game; agent_first says who opens. Stores the agent's result (+1, 0, -1) in *res.
 * Returns 0 or a move's negative errno. */
static int play_game(struct match *m, int agent_first, int *res)
{
	const struct az_game *g = m->p->g;
	uint8_t st[AZ_GAME_STATE_MAX];
	float v;
	int agent_player = agent_first ? 0 : 1;
	g->init(st);
	while (!g->terminal(st, &v)) {
		int a = g->to_move(st) == agent_player
				? az_eval_move(g, m->p->fn, m->p->ctx, m->agent, m->p->sims, st)
				: opponent_move(m, st);
		if (a < 0)
			return a;
		g->apply(st, a);
	}
	float r = g->to_move(st) == agent_player ? v : -v;
	*res = r > 0 ? 1 : r < 0 ? -1 : 0;
	return 0;
}

int az_match_play(const struct az_match_params *p, struct az_match_result *r)
{
	struct match m = {.p = p};
	struct az_mcts_params amp, omp;
	uint8_t st[AZ_GAME_STATE_MAX];
	int rc = 0;
	memset(r, 0, sizeof(*r));
	az_mcts_params_default(&omp, p->g);
	omp.dir_eps = 0;
	amp = p->mp ? *p->mp : omp;
	amp.dir_eps = 0; /* the agent plays its greedy moves, as in the arena */
	p->g->init(st);
	if (az_tree_create(p->g, &amp, st, &m.agent) < 0)
		return -ENOMEM;
	if (p->opponent == AZ_MATCH_ROLLOUT && az_tree_create(p->g, &omp, st, &m.opp) < 0) {
		rc = -ENOMEM;
		goto err_agent;
	}
	az_rollout_init(&m.rollout, p->g, p->seed);
	az_rng_seed(&m.rng, p->seed);
	for (long i = 0; i < p->games && rc == 0; i++) {
		int res = 0;
		rc = play_game(&m, (i & 1) == 0, &res);
		if (rc < 0)
			break;
		r->wins += res > 0;
		r->draws += res == 0;
		r->losses += res < 0;
		if (p->tick)
			p->tick(p->tick_arg, i + 1);
	}
	long n = r->wins + r->draws + r->losses;
	r->score = n ? ((double)r->wins + 0.5 * (double)r->draws) / (double)n : 0.0;
	if (m.opp)
		az_tree_destroy(m.opp);
err_agent:
	az_tree_destroy(m.agent);
	return rc;
}
