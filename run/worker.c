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
#include "base/nvtx.h"
#include "base/rng.h"
#include "base/util.h"
#include "shm/slot.h"
#include "run/evalcache.h"
#include "run/roles.h"
#include "train/replay.h"
#include "run/worker_impl.h"

/* FNV-1a, 64-bit, one 64-bit value at a time: the arena's game hashes (distinct games). */
#define FNV_OFFSET 14695981039346656037ull

static uint64_t hash_step(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
	return h;
}

static struct az_tree *cur_tree(const struct worker *w, const struct wgame *gm)
{
	if (w->mode == AZ_WORKER_SELFPLAY)
		return gm->tree[0];
	return gm->tree[w->g->to_move(gm->state)];
}

/* A move's search begins at gm's current tree: full or fast (playout-cap randomisation, self-play
 * only; a fast search has no root noise, hence no forced playouts), and its visit target. An
 * arena game under Gumbel draws Gumbel noise for its --arena-temp-plies opening moves: that is
 * Gumbel's sample (the improved policy itself is nearly one-hot, so sampling it at temperature 1
 * repeated most arena games). */
static void begin_move(struct worker *w, struct wgame *gm)
{
	struct az_tree *t = cur_tree(w, gm);
	uint32_t sims = w->cfg->sims;

	if (w->mode == AZ_WORKER_ARENA && w->cfg->search == AZ_SEARCH_GUMBEL)
		az_tree_set_noise(t, gm->ply < w->cfg->arena_temp_plies);
	gm->full = 1;
	if (w->mode == AZ_WORKER_SELFPLAY && w->cfg->playout_cap_p > 0.0f &&
	    w->cfg->playout_cap_p < 1.0f) {
		gm->full = az_rng_uniform(&gm->rng) < w->cfg->playout_cap_p;
		if (!gm->full)
			sims = w->cfg->sims_fast;
		az_tree_set_noise(t, gm->full);
	}
	gm->target = az_tree_sims_target(t, sims, (int)w->cfg->sims_fresh);
	az_tree_set_target(t, gm->target); /* Gumbel lays its schedule over it */
}

static uint32_t model_for(const struct worker *w, const struct wgame *gm)
{
	if (w->mode == AZ_WORKER_SELFPLAY)
		return AZ_MODEL_BEST;
	return w->g->to_move(gm->state) == gm->cand_player ? AZ_MODEL_CANDIDATE : AZ_MODEL_BEST;
}

/* A uniformly random legal move at gm->state (not terminal), drawn from the game's stream. */
static int random_legal(struct worker *w, struct wgame *gm)
{
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	int n = w->g->legal(gm->state, mask);
	AZ_ASSERT(n > 0);
	uint32_t pick = az_rng_below(&gm->rng, (uint32_t)n);
	for (uint32_t a = 0; a < w->g->actions; a++)
		if (mask[a] && pick-- == 0)
			return (int)a;
	return -1;
}

/* --random-opening R: play r ~ U{0..R} uniformly random legal plies from the start (no search,
 * no records), so that self-play also sees positions its own play would avoid: the positions of
 * weak or random play, where tactics a strong player never allows (a win in one beside the
 * opponent's threat) are common. An opening that ends the game is drawn again (8 tries, then
 * the start position). In the spirit of KataGo's randomised openings (Wu 2019, sec. 5). */
static void random_opening(struct worker *w, struct wgame *gm)
{
	const struct az_game *g = w->g;
	uint32_t r = az_rng_below(&gm->rng, w->cfg->random_opening + 1);
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	for (int tries = 0; tries < 8; tries++) {
		uint32_t k = 0;
		float v;
		g->init(gm->state);
		while (k < r) {
			if (g->legal(gm->state, mask) <= 0)
				break;
			g->apply(gm->state, random_legal(w, gm));
			k++;
			if (g->terminal(gm->state, &v))
				break;
		}
		if (k == r && !g->terminal(gm->state, &v)) {
			gm->ply = r;
			return;
		}
	}
	g->init(gm->state);
	gm->ply = 0;
}

/* Claim the next game number of the phase for slot gm, or mark the phase exhausted. */
static void start_game(struct worker *w, struct wgame *gm)
{
	/* Claim a ticket below the target with a CAS, so next_game never passes games_target and
	 * games azrun adds back after a worker died are still claimable. Relaxed: the counters
	 * carry no other data; each number is handed out once by the successful CAS. */
	uint64_t n = atomic_load_explicit(&w->ctl->next_game, memory_order_relaxed);
	w->nactive -= (uint32_t)gm->active;
	do {
		if (n >= atomic_load_explicit(&w->ctl->games_target, memory_order_relaxed)) {
			w->exhausted = 1;
			gm->active = 0;
			if (w->mode == AZ_WORKER_SELFPLAY) /* the tail: fewer games, more leaves each */
				w->leaves = az_tail_leaves(w->cfg, w->ngames, w->nactive);
			return;
		}
	} while (!atomic_compare_exchange_weak_explicit(&w->ctl->next_game, &n, n + 1,
							memory_order_relaxed,
							memory_order_relaxed));
	/* Relaxed: own counter, read by azrun after this process is reaped. */
	atomic_store_explicit(&w->ctl->worker[w->id].claimed, ++w->st.claimed,
			      memory_order_relaxed);
	gm->active = 1;
	w->nactive++;
	gm->number = n;
	gm->ply = 0;
	gm->nrec = 0;
	gm->explore_cut = 0;
	gm->cand_player = (int)(n & 1); /* colours alternate between consecutive games */
	gm->moves_hash = hash_step(FNV_OFFSET, (uint64_t)gm->cand_player);
	az_rng_seed(&gm->rng, w->cfg->seed * 0xbf58476d1ce4e5b9ull + ((uint64_t)w->iteration << 40) +
		    n * 2u + 1u);
	w->g->init(gm->state);
	/* --explore-games: whether this game explores, drawn only below 1 so that the stream is
	 * unchanged without it. */
	gm->explore = w->mode == AZ_WORKER_SELFPLAY ? w->cfg->explore : 0.0f;
	if (gm->explore > 0.0f && w->cfg->explore_games < 1.0f &&
	    az_rng_uniform(&gm->rng) >= w->cfg->explore_games)
		gm->explore = 0.0f;
	if (w->mode == AZ_WORKER_SELFPLAY && w->cfg->random_opening > 0)
		random_opening(w, gm);
	for (int p = 0; p < (w->mode == AZ_WORKER_ARENA ? 2 : 1); p++) {
		az_tree_reset(gm->tree[p], gm->state);
		az_tree_shrink(gm->tree[p], w->tree_nodes); /* a long game's arena goes back */
	}
	begin_move(w, gm);
}

/* The trees' leaf hook with the cache on: the new leaf's key, and a prefetch of its cache entry
 * that overlaps select's creation of the leaf's children. */
void az_worker_leaf_hook(void *ctx, const void *state)
{
	struct worker *w = ctx;
	w->leaf_key = az_evalcache_key(w->g, state);
	w->leaf_keyed = 1;
	az_evalcache_prefetch(w->cache, w->leaf_key, w->leaf_model, w->gen[w->leaf_model]);
}

/* Submit leaves of gm's current tree until K are in flight, the ring is full or the move's
 * simulation budget is spoken for. Returns how many leaves were handled, or -ENOMEM when the
 * tree cannot grow (nothing published for that selection). */
static int submit_leaves(struct worker *w, struct wgame *gm)
{
	struct az_tree *t = cur_tree(w, gm);
	const struct az_slot_layout *l = &w->lay;
	int handled = 0;
	while (az_tree_inflight(t) < w->leaves && !az_tree_root_proven(t, NULL) &&
	       az_tree_root_visits(t) + az_tree_inflight(t) < gm->target) {
		uint64_t seq;
		void *slot = az_ring_claim(&w->ring, &seq);
		if (!slot)
			break; /* ring full: results will free slots */
		uint32_t model = model_for(w, gm);
		w->leaf_model = model;
		w->leaf_keyed = 0;
		AZ_NVTX_PUSH("select");
		int rc = az_tree_select(t, &w->leaf);
		AZ_NVTX_POP();
		if (rc < 0)
			return rc; /* -ENOMEM: no leaf (tree unchanged); the claimed slot stays ours */
		if (rc == AZ_SELECT_BUSY)
			break;
		handled++;
		w->st.sims++;
		if (rc == AZ_SELECT_TERMINAL)
			continue; /* claimed slot stays unpublished and is reused */
		if (w->cache) {
			uint64_t key = w->leaf_keyed ? w->leaf_key
						     : az_evalcache_key(w->g, w->leaf.state);
			float value, draw;
			const float *pol = az_evalcache_find(w->cache, key, model, w->gen[model],
							     &value, &draw);
			if (pol) { /* a hit: expand now; the claimed slot is reused */
				az_tree_expand_wdl(t, w->leaf.node, pol, value, draw, 1);
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
		memcpy(az_slot_legal(slot, l), w->leaf.legal, w->g->actions); /* select's legal() */
		h->n_legal = w->leaf.n_legal;
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
		/* Before a random move (--explore) the result says little about the records' own
		 * play: those learn the search's value. */
		az_replay_value_targets(gm->nrec, gm->hplayer, final_player, v_final, gm->hq,
					w->cfg->value_mix, gm->explore_cut, gm->hz);
		rc = az_replay_writer_append(w->rw, gm->nrec, gm->hx, gm->hpi, gm->hz);
		w->st.positions += gm->nrec;
	} else {
		float v = gm->cand_player == final_player ? v_final : -v_final;
		(*(v > 0 ? &w->st.wins : v < 0 ? &w->st.losses : &w->st.draws))++;
		if (gm->cand_player == 0)
			(*(v > 0 ? &w->st.first_wins : v < 0 ? &w->st.first_losses
						     : &w->st.first_draws))++;
		/* Relaxed: this worker alone plays game number gm->number; azrun reads the hash
		 * after reaping it (run/control.h). */
		if (gm->number < AZ_CTL_ARENA_HASHES)
			atomic_store_explicit(&w->ctl->arena_hash[gm->number],
					      gm->moves_hash ? gm->moves_hash : 1,
					      memory_order_relaxed);
	}
	w->st.games_done++;
	w->st.done++;
	az_worker_publish_stats(w);
	start_game(w, gm);
	return rc;
}

/* Mark the illegal moves of `state` in its policy target pi[A] as -0.0f, the legal mask the
 * trainer's softmax is taken over (train/replay.h). The search gives illegal moves no visits, so
 * they are all 0 before. */
static void mark_illegal(const struct az_game *g, const void *state, float *pi)
{
	uint8_t mask[AZ_GAME_ACTIONS_MAX];

	g->legal(state, mask);
	for (uint32_t a = 0; a < g->actions; a++)
		if (!mask[a]) {
			AZ_DEBUG_ASSERT(pi[a] == 0.0f);
			pi[a] = -0.0f;
		}
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
		if (gm->full) /* visit counts, or Gumbel's improved policy */
			az_tree_policy_target(t, pi);
		else /* a fast search: a value target only (train/replay.h) */
			memset(pi, 0, g->actions * sizeof(*pi));
		mark_illegal(g, gm->state, pi);
		gm->hq[gm->nrec] = az_tree_root_value(t);
		gm->hplayer[gm->nrec] = (int8_t)g->to_move(gm->state);
		gm->nrec++;
	}
	/* Ties at temperature 0 (a network with uniform priors, the arena's greedy plies) are
	 * drawn from the game's stream: deterministic per seed and game, yet not always the
	 * first move in action order. */
	int a = az_tree_pick(t, gm->ply < temp_plies ? 1.0f : 0.0f, &gm->rng);
	AZ_ASSERT(a >= 0);
	if (gm->explore > 0.0f && az_rng_uniform(&gm->rng) < gm->explore) { /* 0 outside self-play */
		a = random_legal(w, gm);
		gm->explore_cut = gm->nrec;
	}
	g->apply(gm->state, a);
	gm->moves_hash = hash_step(gm->moves_hash, (uint64_t)a);
	gm->ply++;
	w->st.moves++;
	float v;
	if (g->terminal(gm->state, &v))
		return finish_game(w, gm, v);
	for (int p = 0; p < (selfplay ? 1 : 2); p++)
		AZ_ASSERT(az_tree_advance(gm->tree[p], a) == 0);
	begin_move(w, gm);
	return 0;
}

/* Put game i on the ready list unless it is there already. */
static void mark_ready(struct worker *w, uint32_t i)
{
	if (!w->games[i].queued) {
		w->games[i].queued = 1;
		w->ready[w->nready++] = i;
	}
}

static int visit_game(struct worker *w, struct wgame *gm, uint32_t i);

/* Expand every leaf whose result is ready. visit = 0: put each answered game on the ready list;
 * 1: visit it (visit_game) as soon as its run of consecutive answers is expanded, while its tree
 * is in cache (a game's K leaves go out together, so their answers are usually adjacent).
 * Returns the number of results consumed, or a negative errno: -EPROTO at the first answer with
 * a nonzero status (the inference process has no such model), or visit_game()'s error. */
static int drain_results(struct worker *w, int visit)
{
	int n = 0;
	void *slot;
	uint64_t seq;
	uint32_t run = UINT32_MAX; /* the game whose answers are being expanded (visit = 1) */
	/* Visits submit leaves that may be answered while we drain: take at most what was in
	 * flight on entry, so that the pass ends. */
	uint64_t limit = visit ? az_ring_inflight(&w->ring) : UINT64_MAX;
	while ((uint64_t)n < limit && (slot = az_ring_result(&w->ring, &seq)) != NULL) {
		struct az_slot_hdr *h = az_slot_hdr(slot);
		uint32_t game = h->game, node = h->node;
		AZ_ASSERT(game < w->ngames); /* our own cookie: a mismatch is a protocol bug */
		if (visit && run != game && run != UINT32_MAX) {
			/* The slot stays ours until released: the visit's claims cannot reach it. */
			int rc = visit_game(w, &w->games[run], run);
			if (rc < 0)
				return rc;
		}
		run = game;
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
					 w->gen[model], policy, h->value, h->draw);
		}
		AZ_NVTX_PUSH("backup");
		az_tree_expand_wdl(cur_tree(w, gm), node, policy, h->value, h->draw, 1);
		AZ_NVTX_POP();
		az_ring_release(&w->ring);
		if (!visit)
			mark_ready(w, game);
		n++;
	}
	if (run != UINT32_MAX && visit) {
		int rc = visit_game(w, &w->games[run], run);
		if (rc < 0)
			return rc;
	}
	return n;
}

/* Lockstep: no tree moves on until the round's every result is in, so what each search sees
 * does not depend on when the inference process answered. Returns 0, 1 when the phase was
 * stopped (its results are left to drain_stale()) or a negative errno. */
static int lockstep_drain(struct worker *w, struct az_wait *wait)
{
	while (w->cfg->lockstep && az_ring_inflight(&w->ring) > 0) {
		int rc = az_ring_wait_result(&w->ring, wait);
		if (rc < 0 && rc != -ETIMEDOUT && rc != -EAGAIN)
			return rc;
		az_worker_heartbeat(w); /* waiting on the inference process is not a stall of ours */
		/* P1': pairs with P1 in az_phase_stop (run/control.h). */
		if (atomic_load_explicit(&w->ctl->phase_stop, memory_order_acquire))
			return 1;
		rc = drain_results(w, 0);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* End of a pass: the lockstep wait, then sample the ring occupancy; when the pass did nothing,
 * sleep until a result comes. Returns 0, 1 when the phase was stopped, or a negative errno. */
static int pass_end(struct worker *w, struct az_wait *wait, int progressed)
{
	az_worker_heartbeat(w);
	int stop = lockstep_drain(w, wait);
	if (stop != 0)
		return stop;
	/* Published every 256 passes (and every game), not on every pass. */
	w->st.occ_sum += az_ring_inflight(&w->ring);
	w->st.occ_n++;
	if ((++w->passes & 255u) == 0)
		az_worker_publish_stats(w);
	if (!progressed && az_ring_inflight(&w->ring) > 0) {
		AZ_NVTX_PUSH("wait");
		int rc = az_ring_wait_result(&w->ring, wait);
		AZ_NVTX_POP();
		if (rc < 0 && rc != -ETIMEDOUT && rc != -EAGAIN)
			return rc;
	}
	return 0;
}

/* One visit of game gm (index i): make its move when the search is complete, then submit its
 * next leaves. A game left with nothing in flight (a move is due, or the ring was full) goes
 * back on the ready list; one with leaves in flight returns there with their results. Returns
 * 1 when something happened, 0 when not, or a negative errno. */
static int visit_game(struct worker *w, struct wgame *gm, uint32_t i)
{
	int progressed = 0;
	struct az_tree *t = cur_tree(w, gm);
	/* A proven root (MCTS-Solver) needs no more simulations. */
	if ((az_tree_root_visits(t) >= gm->target || az_tree_root_proven(t, NULL)) &&
	    az_tree_inflight(t) == 0) {
		int rc = make_move(w, gm);
		if (rc < 0)
			return rc;
		progressed = 1;
	}
	if (!gm->active)
		return progressed;
	int n = submit_leaves(w, gm);
	if (n < 0)
		return n;
	if (az_tree_inflight(cur_tree(w, gm)) == 0)
		mark_ready(w, i);
	return progressed | (n > 0);
}

static void sort_u32(uint32_t *x, uint32_t n)
{
	for (uint32_t k = 1; k < n; k++) {
		uint32_t v = x[k], j = k;
		for (; j > 0 && x[j - 1] > v; j--)
			x[j] = x[j - 1];
		x[j] = v;
	}
}

/* The worker's loop. Each pass first drains the ring: every answered leaf is expanded and its
 * game visited right after its answers (its move made when due, its next leaves selected) while
 * its tree is in cache, into a ring that has just been emptied. Then the ready list: games that
 * need a visit without an answer (a move due with nothing in flight, a full ring). Games still
 * waiting for answers are not looked at. Under lockstep answered games go on the ready list
 * too and it is visited in index order: every answer is in before a pass ends
 * (lockstep_drain), so every pass visits every active game, in the same order whatever the
 * inference process's timing. */
static int worker_loop(struct worker *w)
{
	struct az_wait wait = {.spin = w->cfg->spin, .timeout_us = 100000};
	while (w->nactive > 0) {
		/* P1': pairs with P1 in az_phase_stop (run/control.h); nothing else rides on it. */
		if (atomic_load_explicit(&w->ctl->phase_stop, memory_order_acquire))
			break;
		int n = drain_results(w, !w->cfg->lockstep);
		if (n < 0)
			return n;
		int progressed = n > 0;
		uint32_t *list = w->ready, nlist = w->nready;
		w->ready = w->work;
		w->work = list;
		w->nready = 0;
		if (w->cfg->lockstep)
			sort_u32(list, nlist);
		for (uint32_t k = 0; k < nlist; k++) {
			struct wgame *gm = &w->games[list[k]];
			gm->queued = 0;
			if (!gm->active)
				continue;
			int rc = visit_game(w, gm, list[k]);
			if (rc < 0)
				return rc;
			progressed |= rc;
		}
		int rc = pass_end(w, &wait, progressed);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	return 0;
}

int az_worker_run(const struct az_worker_params *cfg, struct az_seg *seg, uint32_t id,
		  enum az_worker_mode mode, uint32_t iteration, const char *replay_path)
{
	struct worker w;
	char err[512];
	int rc = az_worker_setup(&w, cfg, seg, id, mode, iteration);
	if (rc != 0) {
		rc = rc < 0 ? rc : 0; /* 1: the phase was stopped while it waited */
		goto out;
	}
	if (mode == AZ_WORKER_SELFPLAY) {
		rc = az_replay_writer_open(replay_path, w.g->features, w.g->actions, &w.rw, err,
					   sizeof(err));
		if (rc < 0) {
			az_log("worker %u: %s", id, err);
			goto out;
		}
	}
	for (uint32_t i = 0; i < w.ngames && !w.exhausted; i++) {
		start_game(&w, &w.games[i]);
		if (w.games[i].active)
			mark_ready(&w, i);
	}
	rc = worker_loop(&w);
	if (w.cache) {
		struct az_evalcache_stats st;
		az_evalcache_stats(w.cache, &st);
		w.st.cache_hits += st.hits;
		w.st.cache_lookups += st.hits + st.misses;
	}
	az_worker_publish_stats(&w);
	if (w.rw) {
		int rc2 = az_replay_writer_close(w.rw);
		if (rc == 0)
			rc = rc2;
	}
out:
	if (w.ring.shm)
		az_ring_detach(&w.ring); /* nothing more from us: the server need not wait for it */
	az_worker_teardown(&w);
	return rc;
}
