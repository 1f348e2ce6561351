/* SPDX-License-Identifier: MIT */
/* A worker's setup and teardown (run/worker.c runs its loop): the control area's counters
 * loaded and published, stale ring results drained, the games, trees, replay buffers and the
 * evaluation cache made; and how many leaves each game keeps in flight (az_tail_leaves,
 * az_arena_leaves). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "run/worker_impl.h"

/* Store this worker's counters to its own lines of the control area (load: read them back
 * into st instead, at the start: a restarted worker continues the totals). Relaxed: statistics
 * that azbench and the progress line sample while the phase runs, and azrun reads after
 * waitpid; nobody else writes these lines (a predecessor has been reaped). */
static void sync_stats(struct worker *w, int load)
{
	struct az_ctl_worker *c = &w->ctl->worker[w->id];
	struct {
		_Atomic uint64_t *shared;
		uint64_t *own;
	} f[] = {{&c->games_done, &w->st.games_done},
		 {&c->positions, &w->st.positions},
		 {&c->moves, &w->st.moves},
		 {&c->sims, &w->st.sims},
		 {&c->occupancy_sum, &w->st.occ_sum},
		 {&c->occupancy_samples, &w->st.occ_n},
		 {&c->cache_hits, &w->st.cache_hits},
		 {&c->cache_lookups, &w->st.cache_lookups},
		 {&c->arena_wins, &w->st.wins},
		 {&c->arena_draws, &w->st.draws},
		 {&c->arena_losses, &w->st.losses},
		 {&c->arena_first_wins, &w->st.first_wins},
		 {&c->arena_first_draws, &w->st.first_draws},
		 {&c->arena_first_losses, &w->st.first_losses},
		 {&c->done, &w->st.done},
		 {&c->claimed, &w->st.claimed},
		 {&c->adjudicate_ns, &w->st.adj_ns},
		 {&c->busy_ns, &w->st.busy_ns}};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (load)
			*f[i].own = atomic_load_explicit(f[i].shared, memory_order_relaxed);
		else
			atomic_store_explicit(f[i].shared, *f[i].own, memory_order_relaxed);
	}
}

void az_worker_publish_stats(struct worker *w)
{
	w->st.busy_ns = w->busy_base + (az_now_ns() - w->t_start);
	if (w->g->adjudicate_ns)
		w->st.adj_ns = w->adj_base + (w->g->adjudicate_ns() - w->adj_start);
	sync_stats(w, 0);
}

/* One heartbeat: the loop made a pass (or a wait for the inference process timed out). The
 * supervisor's watchdog restarts a worker whose beat stops (run/supervise.c). */
void az_worker_heartbeat(struct worker *w)
{
	/* Relaxed: liveness only, it orders nothing (run/control.h). */
	atomic_store_explicit(&w->ctl->worker[w->id].beat, ++w->beat, memory_order_relaxed);
}

/* A previous owner of this ring (a phase cut short, a killed worker) may have left requests in
 * flight. Their results belong to games that no longer exist: collect and drop them so the
 * sequence counters are ours before the first claim. However long the inference process takes
 * (stopped, hung, restarting): the worker beats while it waits, and the supervisor's watchdog,
 * not the worker, decides when the inference process is stalled and restarts it; its successor
 * answers these requests. Returns 0, or 1 when the phase was stopped meanwhile. */
static int drain_stale(struct worker *w)
{
	struct az_ring *ring = &w->ring;
	struct az_wait wait = {.spin = w->cfg->spin, .timeout_us = 100000};
	while (az_ring_inflight(ring) > 0) {
		if (az_ring_result(ring, NULL)) {
			az_ring_release(ring);
			continue;
		}
		int rc = az_ring_wait_result(ring, &wait);
		if (rc < 0 && rc != -ETIMEDOUT && rc != -EAGAIN)
			return rc;
		az_worker_heartbeat(w);
		/* P1': pairs with P1 in az_phase_stop (run/control.h); nothing else rides on it. */
		if (atomic_load_explicit(&w->ctl->phase_stop, memory_order_acquire))
			return 1;
	}
	return 0;
}

/* K spread over n games so that slots * K leaves stay in flight: ceil(slots * K / n), at most
 * cap (0: min(8, sims / 8)), never below K; K when n is 0. */
static uint32_t spread_leaves(const struct az_worker_params *wp, uint64_t slots, uint32_t n,
			      uint32_t cap)
{
	uint32_t k = wp->leaves;
	if (n == 0)
		return k;
	if (cap == 0)
		cap = wp->sims / 8 < 8 ? wp->sims / 8 : 8;
	uint64_t want = (slots * k + n - 1) / n;
	if (want > cap)
		want = cap;
	return want > k ? (uint32_t)want : k;
}

uint32_t az_tail_leaves(const struct az_worker_params *wp, uint32_t ngames, uint32_t nactive)
{
	if (wp->lockstep || nactive >= ngames)
		return wp->leaves;
	return spread_leaves(wp, ngames, nactive, wp->tail_leaves);
}

uint32_t az_arena_leaves(const struct az_worker_params *wp, uint32_t ngames)
{
	if (wp->arena_leaves > 0)
		return wp->arena_leaves;
	return spread_leaves(wp, wp->games_per_worker, ngames, 0);
}

int az_worker_setup(struct worker *w, const struct az_worker_params *cfg, struct az_seg *seg,
		    uint32_t id, enum az_worker_mode mode, uint32_t iteration)
{
	memset(w, 0, sizeof(*w));
	w->cfg = cfg;
	w->g = az_game_find(cfg->game);
	w->ctl = az_seg_ctl(seg);
	w->mode = mode;
	w->id = id;
	w->iteration = iteration;
	if (!w->g || id >= AZ_CTL_MAX_WORKERS)
		return -EINVAL;
	sync_stats(w, 1);
	/* Relaxed: the predecessor that wrote it has been reaped (waitpid orders its stores). */
	w->beat = atomic_load_explicit(&w->ctl->worker[id].beat, memory_order_relaxed);
	w->t_start = az_now_ns();
	w->adj_start = w->g->adjudicate_ns ? w->g->adjudicate_ns() : 0;
	w->adj_base = w->st.adj_ns;
	w->busy_base = w->st.busy_ns;
	az_slot_layout_init(&w->lay, w->g->features, w->g->actions);
	int rc = az_seg_ring(seg, id, &w->ring);
	if (rc == 0)
		rc = drain_stale(w);
	if (rc != 0)
		return rc; /* 1: the phase was stopped before this worker started playing */
	w->ngames = cfg->games_per_worker;
	if (cfg->workers > 0) {
		/* Relaxed: set by the supervisor before the fork (run/control.h). */
		uint64_t target = atomic_load_explicit(&w->ctl->games_target, memory_order_relaxed);
		uint64_t share = (target + cfg->workers - 1) / cfg->workers;
		if (share > 0 && share < w->ngames)
			w->ngames = (uint32_t)share;
	}
	w->leaves = mode == AZ_WORKER_ARENA ? az_arena_leaves(cfg, w->ngames) : cfg->leaves;
	w->games = calloc(w->ngames, sizeof(*w->games));
	w->ready = malloc(sizeof(*w->ready) * w->ngames);
	w->work = malloc(sizeof(*w->work) * w->ngames);
	if (!w->games || !w->ready || !w->work) {
		az_log("worker %u: out of memory for the state of %u concurrent games", id,
		       w->ngames);
		return -ENOMEM;
	}
	if (cfg->eval_cache_shared) {
		size_t bytes;
		void *mem = az_evalcache_seg_region(seg, &bytes);
		rc = az_evalcache_attach(mem, bytes, w->g->actions, &w->cache);
	} else if (cfg->eval_cache_bytes > 0) {
		rc = az_evalcache_create(w->g->actions, cfg->eval_cache_bytes, &w->cache);
	}
	if (rc < 0) {
		az_log("worker %u: cannot set up its evaluation cache (%zu MiB%s): %s", id,
		       (cfg->eval_cache_shared ? 0 : cfg->eval_cache_bytes) >> 20,
		       cfg->eval_cache_shared ? ", shared" : "", strerror(-rc));
		return rc;
	}
	if (w->cache) {
		w->pend_key = calloc(w->ring.capacity, sizeof(*w->pend_key));
		if (!w->pend_key)
			return -ENOMEM;
		/* C1': pairs with C1 in the supervisor (infer/control.h); the value only tags
		 * entries. */
		for (int s = 0; s < AZ_MODEL_SLOTS; s++)
			w->gen[s] = atomic_load_explicit(&w->ctl->infer.model_gen[s],
							 memory_order_acquire);
	}
	/* Two moves' worth of fresh nodes (each simulation adds at most A children). */
	uint64_t tn = 2ull * cfg->sims * w->g->actions;
	w->tree_nodes = tn > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)tn;
	struct az_mcts_params mp;
	az_mcts_params_default(&mp, w->g);
	mp.c_puct = cfg->c_puct;
	mp.dir_alpha = cfg->dir_alpha;
	mp.dir_eps = cfg->dir_eps;
	mp.solver = (int)cfg->solver;
	mp.fpu_absolute = cfg->fpu_reduction < 0.0f;
	mp.fpu_reduction = mp.fpu_absolute ? 0.0f : cfg->fpu_reduction;
	mp.forced_k = mode == AZ_WORKER_SELFPLAY ? cfg->forced_k : 0.0f;
	mp.search = cfg->search;
	mp.gumbel_m = cfg->gumbel_m ? cfg->gumbel_m : mp.gumbel_m;
	mp.c_scale = cfg->gumbel_scale;
	mp.draw_value = cfg->draw_value;
	uint8_t start[AZ_GAME_STATE_MAX];
	w->g->init(start);
	const struct az_game *g = w->g;
	for (uint32_t i = 0; i < w->ngames; i++) {
		struct wgame *gm = &w->games[i];
		/* self-play searches both sides in tree[0]; tree[1] stays NULL */
		for (int p = 0; p < (mode == AZ_WORKER_ARENA ? 2 : 1); p++) {
			mp.seed = cfg->seed * 0x9e3779b97f4a7c15ull + ((uint64_t)iteration << 40) +
				  ((uint64_t)id << 20) + i * 2u + (uint64_t)p +
				  (uint64_t)mode * 7919;
			if (az_tree_create(g, &mp, start, &gm->tree[p]) < 0) {
				az_log("worker %u: out of memory for the search tree of game %u of "
				       "%u",
				       id, i + 1, w->ngames);
				return -ENOMEM;
			}
			az_tree_set_noise(gm->tree[p], mode == AZ_WORKER_SELFPLAY);
			if (w->cache)
				az_tree_set_leaf_hook(gm->tree[p], az_worker_leaf_hook, w);
		}
		gm->hx = malloc(sizeof(float) * g->max_plies * g->features);
		gm->hpi = malloc(sizeof(float) * g->max_plies * g->actions);
		gm->hz = malloc(sizeof(float) * g->max_plies);
		gm->hq = malloc(sizeof(float) * g->max_plies);
		gm->hplayer = malloc(g->max_plies);
		if (!gm->hx || !gm->hpi || !gm->hz || !gm->hq || !gm->hplayer) {
			az_log("worker %u: out of memory for the move history of game %u of %u", id,
			       i + 1, w->ngames);
			return -ENOMEM;
		}
	}
	return 0;
}

void az_worker_teardown(struct worker *w)
{
	for (uint32_t i = 0; w->games && i < w->ngames; i++) {
		struct wgame *gm = &w->games[i];
		for (int p = 0; p < 2; p++)
			if (gm->tree[p])
				az_tree_destroy(gm->tree[p]);
		free(gm->hx);
		free(gm->hpi);
		free(gm->hz);
		free(gm->hq);
		free(gm->hplayer);
	}
	free(w->games);
	free(w->ready);
	free(w->work);
	az_evalcache_destroy(w->cache);
	free(w->pend_key);
}
