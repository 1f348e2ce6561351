/* SPDX-License-Identifier: MIT */
/* A self-play / arena worker process: keeps G games in flight, each with its own search tree,
 * submits their leaves to this worker's ring and expands them when the inference process has
 * answered. The worker never holds the network. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "games/game.h"
#include "mcts/mcts.h"
#include "base/az_assert.h"
#include "base/rng.h"
#include "infer/control.h"
#include "base/nvtx.h"
#include "shm/slot.h"
#include "run/evalcache.h"
#include "run/roles.h"
#include "train/replay.h"

struct wgame {
	int active;
	uint64_t number;
	struct az_tree *tree[2]; /* self-play: tree[0] for both sides (tree[1] NULL); arena: one
				  * per player */
	uint8_t state[AZ_GAME_STATE_MAX];
	uint32_t ply;
	int cand_player;         /* arena: which player (0 first, 1 second) is the candidate */
	uint32_t nrec;           /* self-play records so far */
	float *hx, *hpi;         /* [max_plies, D], [max_plies, A] */
	float *hz;               /* [max_plies] */
	float *hq;               /* [max_plies] root search value of each record (side to move) */
	int8_t *hplayer;         /* side to move of each record */
	uint32_t target;         /* root visits at which the current move's search is done */
	int full;                /* the current move gets a full search (playout cap) */
	struct az_rng rng;       /* playout-cap draws, seeded by the game's number */
};

struct worker {
	const struct az_worker_params *cfg;
	const struct az_game *g;
	struct az_ctl_shm *ctl;
	struct az_ring ring;
	struct az_slot_layout lay;
	enum az_worker_mode mode;
	uint32_t id;
	uint32_t iteration;
	struct az_replay_writer *rw;
	struct wgame *games;
	uint32_t ngames;
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	float pi[AZ_GAME_ACTIONS_MAX];
	struct az_leaf leaf;
	int exhausted; /* no more games to claim in this phase */
	uint64_t sims;
	uint64_t occ_sum, occ_n; /* ring occupancy samples not yet added to the control area */
	/* Evaluation cache (NULL: off). pend_key[seq & ring mask] is the key of the leaf
	 * published with sequence number seq, stored with its answer when that comes back. */
	struct az_evalcache *cache;
	uint64_t *pend_key;
	/* Generation of each model slot for this process's lifetime: azrun changes a model only
	 * between phases, and a phase's workers are forked after its models are loaded. */
	uint32_t gen[AZ_MODEL_SLOTS];
};

static struct az_tree *cur_tree(const struct worker *w, const struct wgame *gm)
{
	if (w->mode == AZ_WORKER_SELFPLAY)
		return gm->tree[0];
	return gm->tree[w->g->to_move(gm->state)];
}

static uint32_t model_for(const struct worker *w, const struct wgame *gm)
{
	if (w->mode == AZ_WORKER_SELFPLAY)
		return AZ_MODEL_BEST;
	return w->g->to_move(gm->state) == gm->cand_player ? AZ_MODEL_CANDIDATE : AZ_MODEL_BEST;
}

/* A move's search begins at gm's current tree: full or fast (playout-cap randomisation, self-play
 * only; a fast search has no root noise, hence no forced playouts), and its visit target. */
static void begin_move(struct worker *w, struct wgame *gm)
{
	struct az_tree *t = cur_tree(w, gm);
	uint32_t sims = w->cfg->sims;

	gm->full = 1;
	if (w->mode == AZ_WORKER_SELFPLAY && w->cfg->playout_cap_p > 0.0f &&
	    w->cfg->playout_cap_p < 1.0f) {
		gm->full = az_rng_uniform(&gm->rng) < w->cfg->playout_cap_p;
		if (!gm->full)
			sims = w->cfg->sims_fast;
		az_tree_set_noise(t, gm->full);
	}
	gm->target = az_tree_sims_target(t, sims, (int)w->cfg->sims_fresh);
}

/* Claim the next game number of the phase for slot gm, or mark the phase exhausted. */
static void start_game(struct worker *w, struct wgame *gm)
{
	/* Claim a ticket below the target with a CAS, so next_game never passes games_target and
	 * games azrun adds back after a worker died are still claimable. Relaxed: the counters
	 * carry no other data; each number is handed out once by the successful CAS. */
	uint64_t n = atomic_load_explicit(&w->ctl->next_game, memory_order_relaxed);
	do {
		if (n >= atomic_load_explicit(&w->ctl->games_target, memory_order_relaxed)) {
			w->exhausted = 1;
			gm->active = 0;
			return;
		}
	} while (!atomic_compare_exchange_weak_explicit(&w->ctl->next_game, &n, n + 1,
							memory_order_relaxed,
							memory_order_relaxed));
	/* Relaxed: own counter, read by azrun after this process is reaped. */
	atomic_fetch_add_explicit(&w->ctl->worker_claimed[w->id], 1, memory_order_relaxed);
	gm->active = 1;
	gm->number = n;
	gm->ply = 0;
	gm->nrec = 0;
	gm->cand_player = (int)(n & 1); /* colours alternate between consecutive games */
	w->g->init(gm->state);
	for (int p = 0; p < (w->mode == AZ_WORKER_ARENA ? 2 : 1); p++)
		az_tree_reset(gm->tree[p], gm->state);
	az_rng_seed(&gm->rng, w->cfg->seed * 0xbf58476d1ce4e5b9ull + ((uint64_t)w->iteration << 40) +
		    n * 2u + 1u);
	begin_move(w, gm);
}

/* Submit leaves of gm's current tree until K are in flight, the ring is full or the move's
 * simulation budget is spoken for. Returns how many leaves were handled, or -ENOMEM when the
 * tree cannot grow (nothing published for that selection). */
static int submit_leaves(struct worker *w, struct wgame *gm)
{
	struct az_tree *t = cur_tree(w, gm);
	const struct az_slot_layout *l = &w->lay;
	int handled = 0;
	while (az_tree_inflight(t) < w->cfg->leaves && !az_tree_root_proven(t, NULL) &&
	       az_tree_root_visits(t) + az_tree_inflight(t) < gm->target) {
		uint64_t seq;
		void *slot = az_ring_claim(&w->ring, &seq);
		if (!slot)
			break; /* ring full: results will free slots */
		AZ_NVTX_PUSH("select");
		int rc = az_tree_select(t, &w->leaf);
		AZ_NVTX_POP();
		if (rc < 0)
			return rc; /* -ENOMEM: no leaf (tree unchanged); the claimed slot stays ours */
		if (rc == AZ_SELECT_BUSY)
			break;
		handled++;
		w->sims++;
		if (rc == AZ_SELECT_TERMINAL)
			continue; /* claimed slot stays unpublished and is reused */
		uint32_t model = model_for(w, gm);
		if (w->cache) {
			uint64_t key = az_evalcache_key(w->g, w->leaf.state);
			float value;
			const float *pol = az_evalcache_find(w->cache, key, model, w->gen[model],
							     &value);
			if (pol) { /* a hit: expand now; the claimed slot is reused */
				az_tree_expand(t, w->leaf.node, pol, value);
				continue;
			}
			w->pend_key[seq & w->ring.mask] = key;
		}
		struct az_slot_hdr *h = az_slot_hdr(slot);
		h->model = model;
		h->game = (uint32_t)(gm - w->games);
		h->node = w->leaf.node;
		h->status = 0;
		AZ_NVTX_PUSH("encode");
		w->g->encode(w->leaf.state, az_slot_features(slot, l));
		h->n_legal = (uint32_t)w->g->legal(w->leaf.state, az_slot_legal(slot, l));
		AZ_NVTX_POP();
		AZ_NVTX_PUSH("publish");
		az_ring_publish(&w->ring);
		AZ_NVTX_POP();
	}
	return handled;
}

/* The game is over at gm->state: write its records (self-play) or score it (arena). */
static int finish_game(struct worker *w, struct wgame *gm, float v_final)
{
	int final_player = w->g->to_move(gm->state);
	int rc = 0;
	if (w->mode == AZ_WORKER_SELFPLAY) {
		az_replay_value_targets(gm->nrec, gm->hplayer, final_player, v_final, gm->hq,
					w->cfg->value_mix, gm->hz);
		rc = az_replay_writer_append(w->rw, gm->nrec, gm->hx, gm->hpi, gm->hz);
		/* Relaxed: statistics, read by azrun after waitpid. */
		atomic_fetch_add_explicit(&w->ctl->positions, gm->nrec, memory_order_relaxed);
	} else {
		float v = gm->cand_player == final_player ? v_final : -v_final;
		_Atomic uint64_t *c = v > 0 ? &w->ctl->arena_wins
				      : v < 0 ? &w->ctl->arena_losses : &w->ctl->arena_draws;
		atomic_fetch_add_explicit(c, 1, memory_order_relaxed); /* relaxed: as above */
	}
	atomic_fetch_add_explicit(&w->ctl->games_done, 1, memory_order_relaxed); /* as above */
	atomic_fetch_add_explicit(&w->ctl->worker_done[w->id], 1, memory_order_relaxed);
	start_game(w, gm);
	return rc;
}

/* The search of gm's current move is complete: record, choose, play, advance the trees. */
static int make_move(struct worker *w, struct wgame *gm)
{
	const struct az_game *g = w->g;
	struct az_tree *t = cur_tree(w, gm);
	int selfplay = w->mode == AZ_WORKER_SELFPLAY;
	uint32_t temp_plies = selfplay ? w->cfg->temp_plies : w->cfg->arena_temp_plies;
	if (selfplay) {
		AZ_ASSERT(gm->nrec < g->max_plies);
		g->encode(gm->state, gm->hx + (size_t)gm->nrec * g->features);
		float *pi = gm->hpi + (size_t)gm->nrec * g->actions;
		if (gm->full)
			az_tree_visit_policy(t, pi);
		else /* a fast search: a value target only (train/replay.h) */
			memset(pi, 0, g->actions * sizeof(*pi));
		gm->hq[gm->nrec] = az_tree_root_value(t);
		gm->hplayer[gm->nrec] = (int8_t)g->to_move(gm->state);
		gm->nrec++;
	}
	int a = az_tree_pick(t, gm->ply < temp_plies ? 1.0f : 0.0f);
	AZ_ASSERT(a >= 0);
	g->apply(gm->state, a);
	gm->ply++;
	atomic_fetch_add_explicit(&w->ctl->moves, 1, memory_order_relaxed); /* relaxed: stats */
	float v;
	if (g->terminal(gm->state, &v))
		return finish_game(w, gm, v);
	for (int p = 0; p < (selfplay ? 1 : 2); p++)
		AZ_ASSERT(az_tree_advance(gm->tree[p], a) == 0);
	begin_move(w, gm);
	return 0;
}

/* Expand every leaf whose result is ready. Returns the number of results consumed, or -EPROTO
 * at the first answer with a nonzero status (the inference process has no such model). */
static int drain_results(struct worker *w)
{
	int n = 0;
	void *slot;
	uint64_t seq;
	while ((slot = az_ring_result(&w->ring, &seq)) != NULL) {
		struct az_slot_hdr *h = az_slot_hdr(slot);
		uint32_t game = h->game, node = h->node;
		AZ_ASSERT(game < w->ngames); /* our own cookie: a mismatch is a protocol bug */
		struct wgame *gm = &w->games[game];
		if (h->status != 0) {
			/* Relaxed: read by azrun after waitpid. The model is not loaded: stop now
			 * rather than expand leaves with a policy nobody wrote. */
			atomic_store_explicit(&w->ctl->worker_error, -EPROTO, memory_order_relaxed);
			az_ring_release(&w->ring);
			return -EPROTO;
		}
		const float *policy = az_slot_policy(slot, &w->lay);
		if (w->cache) {
			uint32_t model = h->model; /* ours, untouched by the server */
			AZ_ASSERT(model < AZ_MODEL_SLOTS);
			az_evalcache_put(w->cache, w->pend_key[seq & w->ring.mask], model,
					 w->gen[model], policy, h->value);
		}
		AZ_NVTX_PUSH("backup");
		az_tree_expand(cur_tree(w, gm), node, policy, h->value);
		AZ_NVTX_POP();
		az_ring_release(&w->ring);
		n++;
	}
	return n;
}

/* Add the occupancy samples gathered since the last call to the control area. */
static void flush_occupancy(struct worker *w)
{
	/* Relaxed: statistics; azbench samples them while the phase runs, azrun after it. */
	atomic_fetch_add_explicit(&w->ctl->occupancy_sum, w->occ_sum, memory_order_relaxed);
	atomic_fetch_add_explicit(&w->ctl->occupancy_samples, w->occ_n, memory_order_relaxed);
	w->occ_sum = w->occ_n = 0;
}

static int worker_loop(struct worker *w)
{
	struct az_wait wait = {.spin = w->cfg->spin, .timeout_us = 100000};
	uint32_t active;
	do {
		/* Acquire: pairs with azrun's release store of phase_stop (nothing else rides on it). */
		if (atomic_load_explicit(&w->ctl->phase_stop, memory_order_acquire))
			break;
		int progressed = 0;
		active = 0;
		for (uint32_t i = 0; i < w->ngames; i++) {
			struct wgame *gm = &w->games[i];
			if (!gm->active)
				continue;
			struct az_tree *t = cur_tree(w, gm);
			/* A proven root (MCTS-Solver) needs no more simulations. */
			if ((az_tree_root_visits(t) >= gm->target || az_tree_root_proven(t, NULL)) &&
			    az_tree_inflight(t) == 0) {
				int rc = make_move(w, gm);
				if (rc < 0)
					return rc;
				progressed = 1;
			}
			if (gm->active) {
				int n = submit_leaves(w, gm);
				if (n < 0)
					return n;
				progressed |= n > 0;
				active++;
			}
		}
		int n = drain_results(w);
		if (n < 0)
			return n;
		progressed |= n > 0;
		/* Lockstep: no tree moves on until the round's every result is in, so what each
		 * search sees does not depend on when the inference process answered. */
		while (w->cfg->lockstep && az_ring_inflight(&w->ring) > 0) {
			int rc = az_ring_wait_result(&w->ring, &wait);
			if (rc < 0 && rc != -ETIMEDOUT && rc != -EAGAIN)
				return rc;
			/* Acquire: as above; a stopped phase leaves its results to drain_stale(). */
			if (atomic_load_explicit(&w->ctl->phase_stop, memory_order_acquire))
				return 0;
			rc = drain_results(w);
			if (rc < 0)
				return rc;
		}
		/* Gathered here and added every 256 passes, not on every pass: the control area's
		 * counters share one cache line that all workers write. */
		w->occ_sum += az_ring_inflight(&w->ring);
		if (++w->occ_n == 256)
			flush_occupancy(w);
		if (!progressed && az_ring_inflight(&w->ring) > 0) {
			AZ_NVTX_PUSH("wait");
			int rc = az_ring_wait_result(&w->ring, &wait);
			AZ_NVTX_POP();
			if (rc < 0 && rc != -ETIMEDOUT && rc != -EAGAIN)
				return rc;
		}
	} while (active > 0);
	return 0;
}

/* A previous owner of this ring (a phase cut short, a killed worker) may have left requests in
 * flight. Their results belong to games that no longer exist: collect and drop them so the
 * sequence counters are ours before the first claim. */
static int drain_stale(struct az_ring *ring, uint32_t spin)
{
	struct az_wait wait = {.spin = spin, .timeout_us = 100000};
	int idle = 0;
	while (az_ring_inflight(ring) > 0) {
		if (az_ring_result(ring, NULL)) {
			az_ring_release(ring);
			idle = 0;
			continue;
		}
		int rc = az_ring_wait_result(ring, &wait);
		if (rc == -ETIMEDOUT && ++idle > 100)
			return rc; /* 10 s without an answer: the inference process is gone */
	}
	return 0;
}

static int worker_init(struct worker *w, const struct az_worker_params *cfg, struct az_seg *seg,
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
	az_slot_layout_init(&w->lay, w->g->features, w->g->actions);
	int rc = az_seg_ring(seg, id, &w->ring);
	if (rc == 0)
		rc = drain_stale(&w->ring, cfg->spin);
	if (rc < 0)
		return rc;
	w->ngames = cfg->games_per_worker;
	if (cfg->workers > 0) {
		/* Relaxed: set by azrun before the fork (infer/control.h). */
		uint64_t target = atomic_load_explicit(&w->ctl->games_target, memory_order_relaxed);
		uint64_t share = (target + cfg->workers - 1) / cfg->workers;
		if (share > 0 && share < w->ngames)
			w->ngames = (uint32_t)share;
	}
	w->games = calloc(w->ngames, sizeof(*w->games));
	if (!w->games)
		return -ENOMEM;
	if (cfg->eval_cache_bytes > 0) {
		rc = az_evalcache_create(w->g->actions, cfg->eval_cache_bytes, &w->cache);
		if (rc < 0)
			return rc;
		w->pend_key = calloc(w->ring.capacity, sizeof(*w->pend_key));
		if (!w->pend_key)
			return -ENOMEM;
		/* Acquire: pairs with C1 in azrun (supervise.c); the value only tags entries. */
		for (int s = 0; s < AZ_MODEL_SLOTS; s++)
			w->gen[s] = atomic_load_explicit(&w->ctl->model_gen[s],
							 memory_order_acquire);
	}
	struct az_mcts_params mp;
	az_mcts_params_default(&mp, w->g);
	mp.c_puct = cfg->c_puct;
	mp.dir_alpha = cfg->dir_alpha;
	mp.dir_eps = cfg->dir_eps;
	mp.solver = (int)cfg->solver;
	mp.fpu_absolute = cfg->fpu_reduction < 0.0f;
	mp.fpu_reduction = mp.fpu_absolute ? 0.0f : cfg->fpu_reduction;
	mp.forced_k = mode == AZ_WORKER_SELFPLAY ? cfg->forced_k : 0.0f;
	uint8_t start[AZ_GAME_STATE_MAX];
	w->g->init(start);
	const struct az_game *g = w->g;
	for (uint32_t i = 0; i < w->ngames; i++) {
		struct wgame *gm = &w->games[i];
		/* self-play searches both sides in tree[0]; tree[1] stays NULL */
		for (int p = 0; p < (mode == AZ_WORKER_ARENA ? 2 : 1); p++) {
			mp.seed = cfg->seed * 0x9e3779b97f4a7c15ull + ((uint64_t)iteration << 40) +
				  ((uint64_t)id << 20) + i * 2u + (uint64_t)p + (uint64_t)mode * 7919;
			if (az_tree_create(g, &mp, start, &gm->tree[p]) < 0)
				return -ENOMEM;
			az_tree_set_noise(gm->tree[p], mode == AZ_WORKER_SELFPLAY);
		}
		gm->hx = malloc(sizeof(float) * g->max_plies * g->features);
		gm->hpi = malloc(sizeof(float) * g->max_plies * g->actions);
		gm->hz = malloc(sizeof(float) * g->max_plies);
		gm->hq = malloc(sizeof(float) * g->max_plies);
		gm->hplayer = malloc(g->max_plies);
		if (!gm->hx || !gm->hpi || !gm->hz || !gm->hq || !gm->hplayer)
			return -ENOMEM;
	}
	return 0;
}

static void worker_fini(struct worker *w)
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
	az_evalcache_destroy(w->cache);
	free(w->pend_key);
}

int az_worker_run(const struct az_worker_params *cfg, struct az_seg *seg, uint32_t id,
		  enum az_worker_mode mode, uint32_t iteration, const char *replay_path)
{
	struct worker w;
	char err[512];
	int rc = worker_init(&w, cfg, seg, id, mode, iteration);
	if (rc < 0)
		goto out;
	if (mode == AZ_WORKER_SELFPLAY) {
		rc = az_replay_writer_open(replay_path, w.g->features, w.g->actions, &w.rw, err,
					   sizeof(err));
		if (rc < 0) {
			fprintf(stderr, "worker %u: %s\n", id, err);
			goto out;
		}
	}
	for (uint32_t i = 0; i < w.ngames && !w.exhausted; i++)
		start_game(&w, &w.games[i]);
	rc = worker_loop(&w);
	atomic_fetch_add_explicit(&w.ctl->sims, w.sims, memory_order_relaxed); /* relaxed: stats */
	flush_occupancy(&w);
	if (w.cache) {
		struct az_evalcache_stats st;
		az_evalcache_stats(w.cache, &st);
		/* Relaxed: statistics, read by azrun after waitpid. */
		atomic_fetch_add_explicit(&w.ctl->cache_hits, st.hits, memory_order_relaxed);
		atomic_fetch_add_explicit(&w.ctl->cache_lookups, st.hits + st.misses,
					  memory_order_relaxed);
	}
	if (w.rw) {
		int rc2 = az_replay_writer_close(w.rw);
		if (rc == 0)
			rc = rc2;
	}
out:
	if (w.ring.shm)
		az_ring_detach(&w.ring); /* nothing more from us: the server need not wait for it */
	worker_fini(&w);
	return rc;
}
