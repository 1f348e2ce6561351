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
#include "infer/control.h"
#include "base/nvtx.h"
#include "base/rng.h"
#include "base/util.h"
#include "shm/slot.h"
#include "run/evalcache.h"
#include "run/roles.h"
#include "train/replay.h"

struct wgame {
	int active;
	int queued;              /* on the worker's ready list */
	uint64_t number;
	struct az_tree *tree[2]; /* self-play: tree[0] for both sides (tree[1] NULL); arena: one
				  * per player */
	uint8_t state[AZ_GAME_STATE_MAX];
	uint32_t ply;
	int cand_player;         /* arena: which player (0 first, 1 second) is the candidate */
	uint64_t moves_hash;     /* arena: FNV-1a of cand_player and the moves so far */
	uint32_t nrec;           /* self-play records so far */
	uint32_t explore_cut;    /* records before the last exploratory move (--explore) */
	float *hx, *hpi;         /* [max_plies, D], [max_plies, A] */
	float *hz;               /* [max_plies] */
	float *hq;               /* [max_plies] root search value of each record (side to move) */
	int8_t *hplayer;         /* side to move of each record */
	uint32_t target;         /* root visits at which the current move's search is done */
	int full;                /* the current move gets a full search (playout cap) */
	struct az_rng rng;       /* playout-cap draws, tie-breaks, seeded by the game's number */
};

struct worker {
	const struct az_worker_params *cfg;
	const struct az_game *g;
	struct az_ctl_shm *ctl;
	struct az_ring ring;
	struct az_slot_layout lay;
	enum az_worker_mode mode;
	uint32_t id;
	uint32_t leaves; /* K now: the arena's (az_arena_leaves), or self-play's (az_tail_leaves) */
	uint32_t iteration;
	struct az_replay_writer *rw;
	struct wgame *games;
	uint32_t ngames;
	uint8_t mask[AZ_GAME_ACTIONS_MAX];
	float pi[AZ_GAME_ACTIONS_MAX];
	struct az_leaf leaf;
	int exhausted; /* no more games to claim in this phase */
	uint32_t nactive; /* games with active set */
	uint32_t tree_nodes; /* arena size each tree is cut back to between games */
	/* The ready list: games to visit in the next pass (a result arrived, a move is due, or the
	 * ring was full), each once (wgame.queued); work[] holds the pass being visited. */
	uint32_t *ready, *work;
	uint32_t nready;
	/* This worker's counters (infer/control.h's struct az_ctl_worker, which st mirrors, with
	 * the totals of a predecessor this process replaced): counted here, stored to the
	 * worker's own lines of the control area by publish_stats(). */
	struct {
		uint64_t games_done, positions, moves, sims, occ_sum, occ_n, cache_hits;
		uint64_t cache_lookups, wins, draws, losses, claimed, done, adj_ns, busy_ns;
		uint64_t first_wins, first_draws, first_losses;
	} st;
	/* This process's start (az_now_ns) and the game's adjudication total then, with the
	 * totals loaded from a predecessor: publish_stats() adds what this process spent. */
	uint64_t t_start, adj_start, adj_base, busy_base;
	uint32_t passes;
	/* Evaluation cache (NULL: off). pend_key[seq & ring mask] is the key of the leaf
	 * published with sequence number seq, stored with its answer when that comes back. */
	struct az_evalcache *cache;
	uint64_t *pend_key;
	/* The leaf hook's (leaf_hook) key of the leaf being selected, for model leaf_model;
	 * leaf_keyed 1 once it is set in this selection. */
	uint64_t leaf_key;
	uint32_t leaf_model;
	int leaf_keyed;
	/* Generation of each model slot for this process's lifetime: azrun changes a model only
	 * between phases, and a phase's workers are forked after its models are loaded. */
	uint32_t gen[AZ_MODEL_SLOTS];
	uint64_t beat; /* this worker's heartbeat (infer/control.h), continued from a predecessor */
};

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
	} f[] = {{&c->games_done, &w->st.games_done}, {&c->positions, &w->st.positions},
		 {&c->moves, &w->st.moves}, {&c->sims, &w->st.sims},
		 {&c->occupancy_sum, &w->st.occ_sum}, {&c->occupancy_samples, &w->st.occ_n},
		 {&c->cache_hits, &w->st.cache_hits}, {&c->cache_lookups, &w->st.cache_lookups},
		 {&c->arena_wins, &w->st.wins}, {&c->arena_draws, &w->st.draws},
		 {&c->arena_losses, &w->st.losses}, {&c->arena_first_wins, &w->st.first_wins},
		 {&c->arena_first_draws, &w->st.first_draws},
		 {&c->arena_first_losses, &w->st.first_losses}, {&c->done, &w->st.done},
		 {&c->claimed, &w->st.claimed}, {&c->adjudicate_ns, &w->st.adj_ns},
		 {&c->busy_ns, &w->st.busy_ns}};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (load)
			*f[i].own = atomic_load_explicit(f[i].shared, memory_order_relaxed);
		else
			atomic_store_explicit(f[i].shared, *f[i].own, memory_order_relaxed);
	}
}

static void publish_stats(struct worker *w)
{
	w->st.busy_ns = w->busy_base + (az_now_ns() - w->t_start);
	if (w->g->adjudicate_ns)
		w->st.adj_ns = w->adj_base + (w->g->adjudicate_ns() - w->adj_start);
	sync_stats(w, 0);
}

/* One heartbeat: the loop made a pass (or a wait for the inference process timed out). The
 * supervisor's watchdog restarts a worker whose beat stops (run/supervise.c). */
static void heartbeat(struct worker *w)
{
	/* Relaxed: liveness only, it orders nothing (infer/control.h). */
	atomic_store_explicit(&w->ctl->worker[w->id].beat, ++w->beat, memory_order_relaxed);
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
static void leaf_hook(void *ctx, const void *state)
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
			float value;
			const float *pol = az_evalcache_find(w->cache, key, model, w->gen[model],
							     &value);
			if (pol) { /* a hit: expand now; the claimed slot is reused */
				az_tree_expand_normalised(t, w->leaf.node, pol, value);
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
		 * after reaping it (infer/control.h). */
		if (gm->number < AZ_CTL_ARENA_HASHES)
			atomic_store_explicit(&w->ctl->arena_hash[gm->number],
					      gm->moves_hash ? gm->moves_hash : 1,
					      memory_order_relaxed);
	}
	w->st.games_done++;
	w->st.done++;
	publish_stats(w);
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
	if (selfplay && w->cfg->explore > 0.0f && az_rng_uniform(&gm->rng) < w->cfg->explore) {
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
					 w->gen[model], policy, h->value);
		}
		AZ_NVTX_PUSH("backup");
		az_tree_expand_normalised(cur_tree(w, gm), node, policy, h->value);
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
		heartbeat(w); /* waiting on the inference process is not a stall of ours */
		/* Acquire: pairs with azrun's release store of phase_stop. */
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
	heartbeat(w);
	int stop = lockstep_drain(w, wait);
	if (stop != 0)
		return stop;
	/* Published every 256 passes (and every game), not on every pass. */
	w->st.occ_sum += az_ring_inflight(&w->ring);
	w->st.occ_n++;
	if ((++w->passes & 255u) == 0)
		publish_stats(w);
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
 * too and it is visited in index order, which makes the passes those of worker_loop_scan()
 * exactly. */
static int worker_loop(struct worker *w)
{
	struct az_wait wait = {.spin = w->cfg->spin, .timeout_us = 100000};
	while (w->nactive > 0) {
		/* Acquire: pairs with azrun's release store of phase_stop (nothing else rides on it). */
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

/* The reference loop the ready list replaced, kept for the test that both play the same games
 * under lockstep (tests/tools/test_deterministic.sh; AZ_WORKER_SCHEDULE=scan selects it): every
 * pass visits every game, submits, then drains. */
static int worker_loop_scan(struct worker *w)
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
			int rc = visit_game(w, gm, i);
			if (rc < 0)
				return rc;
			progressed |= rc;
			active += (uint32_t)gm->active;
		}
		int n = drain_results(w, 0);
		if (n < 0)
			return n;
		progressed |= n > 0;
		int rc = pass_end(w, &wait, progressed);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	} while (active > 0);
	return 0;
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
		heartbeat(w);
		/* Acquire: pairs with azrun's release store of phase_stop (nothing else rides on it). */
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
		/* Relaxed: set by azrun before the fork (infer/control.h). */
		uint64_t target = atomic_load_explicit(&w->ctl->games_target, memory_order_relaxed);
		uint64_t share = (target + cfg->workers - 1) / cfg->workers;
		if (share > 0 && share < w->ngames)
			w->ngames = (uint32_t)share;
	}
	w->leaves = mode == AZ_WORKER_ARENA ? az_arena_leaves(cfg, w->ngames) : cfg->leaves;
	w->games = calloc(w->ngames, sizeof(*w->games));
	w->ready = malloc(sizeof(*w->ready) * w->ngames);
	w->work = malloc(sizeof(*w->work) * w->ngames);
	if (!w->games || !w->ready || !w->work)
		return -ENOMEM;
	if (cfg->eval_cache_shared) {
		size_t bytes;
		void *mem = az_evalcache_seg_region(seg, &bytes);
		rc = az_evalcache_attach(mem, bytes, w->g->actions, &w->cache);
	} else if (cfg->eval_cache_bytes > 0) {
		rc = az_evalcache_create(w->g->actions, cfg->eval_cache_bytes, &w->cache);
	}
	if (rc < 0)
		return rc;
	if (w->cache) {
		w->pend_key = calloc(w->ring.capacity, sizeof(*w->pend_key));
		if (!w->pend_key)
			return -ENOMEM;
		/* Acquire: pairs with C1 in azrun (supervise.c); the value only tags entries. */
		for (int s = 0; s < AZ_MODEL_SLOTS; s++)
			w->gen[s] = atomic_load_explicit(&w->ctl->model_gen[s],
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
			if (w->cache)
				az_tree_set_leaf_hook(gm->tree[p], leaf_hook, w);
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
	free(w->ready);
	free(w->work);
	az_evalcache_destroy(w->cache);
	free(w->pend_key);
}

int az_worker_run(const struct az_worker_params *cfg, struct az_seg *seg, uint32_t id,
		  enum az_worker_mode mode, uint32_t iteration, const char *replay_path)
{
	struct worker w;
	char err[512];
	int rc = worker_init(&w, cfg, seg, id, mode, iteration);
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
	const char *sched = getenv("AZ_WORKER_SCHEDULE");
	rc = sched && strcmp(sched, "scan") == 0 ? worker_loop_scan(&w) : worker_loop(&w);
	if (w.cache) {
		struct az_evalcache_stats st;
		az_evalcache_stats(w.cache, &st);
		w.st.cache_hits += st.hits;
		w.st.cache_lookups += st.hits + st.misses;
	}
	publish_stats(&w);
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
