/* SPDX-License-Identifier: MIT */
/* Exact solver for positions of the configured Tangled game (az_tangled_setup()): alpha-beta
 * negamax over outcomes {-1, 0, +1} for the side to move, with a transposition table of packed
 * states (2 bits per state byte) kept across calls, optional reduction by the game's symmetries
 * and a node/time budget. Terminal values come from the game's terminal(), i.e. through the
 * cached adjudicator, so the solution is exact for that (deterministic) adjudicator. */
#ifndef AZ_TANGLED_SOLVE_H
#define AZ_TANGLED_SOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "games/game.h"

struct az_tangled_solve_params {
	uint64_t max_nodes;   /* per call; 0 = no limit */
	double max_seconds;   /* per call, wall clock; 0 = no limit */
	int symmetry;         /* 1: key the table by the canonical state over the game's symmetries */
	size_t max_entries;   /* table capacity limit in entries (0 = 1 << 26); when full, new
	                       * results are not stored (still exact, only slower) */
};

/* Defaults: no budget, symmetry on, 1 << 26 entries at most. */
void az_tangled_solve_params_default(struct az_tangled_solve_params *p);

struct az_tangled_solver;

/* A solver for the game configured now (az_tangled_game(); the table is only valid for that
 * configuration: create a new solver after az_tangled_setup()). Returns 0, -EINVAL (Tangled not
 * configured) or -ENOMEM. One thread at a time. */
int az_tangled_solver_create(const struct az_tangled_solve_params *p,
			     struct az_tangled_solver **out);
void az_tangled_solver_destroy(struct az_tangled_solver *s);

/* Exact value of state (game state bytes) for the side to move into *value (-1, 0, +1; a
 * terminal state gets its adjudicated result). Returns 0, -ETIMEDOUT when the call's budget ran
 * out first (the position is unsolved; what was proved stays in the table, so a later call with
 * a larger budget resumes), or -ENOMEM. */
int az_tangled_solve(struct az_tangled_solver *s, const void *state, int *value);

/* Whether state's value for the side to move is >= v (v in -1..1) into *yes: a null-window
 * search, cheaper than az_tangled_solve. Returns as az_tangled_solve. */
int az_tangled_solve_at_least(struct az_tangled_solver *s, const void *state, int v, int *yes);

/* Exact value of a non-terminal state into *value and best[A] = 1 for every legal move that
 * keeps it (every optimal move; all legal moves of a lost position), 0 elsewhere. Returns as
 * az_tangled_solve, or -EINVAL for a terminal state. */
int az_tangled_solve_best(struct az_tangled_solver *s, const void *state, int *value,
			  uint8_t *best);

struct az_tangled_solve_stats {
	uint64_t nodes;      /* positions searched, all calls */
	uint64_t terminals;  /* terminal positions scored */
	uint64_t tt_hits;    /* table lookups that ended or narrowed a search */
	uint64_t entries;    /* positions held in the table */
	uint64_t refused;    /* results not stored because the table was full */
	int symmetries;      /* symmetries used for keys (1: none) */
};
void az_tangled_solver_stats(const struct az_tangled_solver *s, struct az_tangled_solve_stats *st);

#endif
