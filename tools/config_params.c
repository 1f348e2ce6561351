/* SPDX-License-Identifier: MIT */
/* The process roles' and the pipeline's parameters from azrun's configuration (tools/config.h):
 * the one place where options become a worker's, the trainer's and the segment's settings, for
 * azrun and azbench pipeline alike. */
#include "tools/config.h"

#include <stddef.h>
#include <string.h>

#include "games/game.h"
#include "mcts/mcts.h"
#include "run/roles.h"
#include "run/supervise.h"
#include "train/trainer.h"

size_t az_config_eval_cache_shared_bytes(const struct az_config *c)
{
	return strcmp(c->eval_cache, "shared") == 0 ? (size_t)c->eval_cache_mb << 20 : 0;
}

void az_config_worker_params(const struct az_config *c, struct az_worker_params *wp)
{
	*wp = (struct az_worker_params){
		.game = c->game,
		.games_per_worker = c->games_per_worker,
		.workers = c->workers,
		.sims = c->sims,
		.leaves = c->leaves,
		.arena_leaves = c->arena_leaves,
		.tail_leaves = c->tail_leaves,
		.seed = c->seed,
		.c_puct = c->c_puct,
		.dir_alpha = c->dir_alpha,
		.dir_eps = c->dir_eps,
		.temp_plies = c->temp_plies,
		.solver = c->mcts_solver,
		.fpu_reduction = c->fpu_reduction,
		.forced_k = c->forced_playouts,
		.search = strcmp(c->search, "gumbel") == 0 ? AZ_SEARCH_GUMBEL : AZ_SEARCH_PUCT,
		.gumbel_m = c->gumbel_m,
		.gumbel_scale = c->gumbel_scale,
		.playout_cap_p = c->playout_cap_p,
		.value_mix = c->value_mix,
		.random_opening = c->random_opening,
		.explore = c->explore,
		.explore_games = c->explore_games,
		.draw_value = c->draw_value,
		.sims_fast = c->sims_fast ? c->sims_fast : (c->sims / 4 > 2 ? c->sims / 4 : 2),
		.sims_fresh = c->sims_fresh,
		.arena_temp_plies = c->arena_temp_plies,
		.spin = c->spin,
		.eval_cache_bytes =
			strcmp(c->eval_cache, "worker") == 0 ? (size_t)c->eval_cache_mb << 20 : 0,
		.eval_cache_shared = az_config_eval_cache_shared_bytes(c) > 0,
		.lockstep = c->deterministic};
}

void az_config_train_params(const struct az_config *c, struct az_trainer_proc_params *tp)
{
	/* resolved here, on the machine that trains (run.json keeps what was asked for) */
	uint32_t threads =
		c->train_threads ? c->train_threads : az_train_threads_auto(c->train_batch);

	*tp = (struct az_trainer_proc_params){.game = c->game,
					      .backend = c->backend,
					      .train_batch = c->train_batch,
					      .train_threads = threads,
					      .train_epochs = c->train_epochs,
					      .train_steps_max = c->train_steps_max,
					      .lr = c->lr,
					      .lr_late = c->lr_late,
					      .lr_late_at = c->lr_late_at,
					      .l2 = c->l2,
					      .seed = c->seed};
}

void az_config_pipeline_params(const struct az_config *c, const struct az_game *g,
			       const char *seg_tag, int log_fd, struct az_pipeline_params *pp)
{
	*pp = (struct az_pipeline_params){.rings = c->workers,
					  .ring_capacity = c->ring_capacity,
					  .seg_tag = seg_tag,
					  .eval_cache_shared_bytes =
						  az_config_eval_cache_shared_bytes(c),
					  .infer = {.backend = c->backend,
						    .features = g->features,
						    .actions = g->actions,
						    .max_batch = c->max_batch,
						    .deadline_us = c->deadline_us,
						    .spin = c->spin,
						    .log_fd = log_fd,
						    .quiet = c->quiet}};
}
