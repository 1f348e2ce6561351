/* SPDX-License-Identifier: MIT */
/* A checkpoint opened for evaluation in one call: loaded, checked against the game it must be a
 * network of, put on a backend for batches of 1 or more positions, with an evaluator over it
 * (eval/net_eval.h). How azeval, azplay, azbench's serial baseline and azrun --bench open one. */
#ifndef AZ_EVAL_NET_OPEN_H
#define AZ_EVAL_NET_OPEN_H

#include <stddef.h>
#include <stdint.h>

#include "eval/net_eval.h"
#include "games/game.h"
#include "gpu/backend.h"

/* What to open. Zero-initialised fields are defaults: the automatic backend, batch 1. */
struct az_net_open_args {
	const char *ckpt;             /* the checkpoint's path (net/checkpoint.h) */
	const struct az_game *game;   /* the game it must be a network of (not owned) */
	enum az_backend_kind backend; /* AZ_BACKEND_AUTO: cuda when a device is visible, else cpu */
	uint32_t batch;               /* the most positions one forward pass takes; 0 counts as 1 */
};

/* An open network: the caller's storage, filled by az_net_open(), emptied by az_net_close(). One
 * thread at a time (the evaluator's buffers are scratch space of each call). */
struct az_opened_net {
	struct az_backend *be;   /* owned; model slot 0 holds the network, for args.batch rows */
	struct az_net_eval eval; /* owned buffers, over be: az_net_eval(&eval, ...) */
	char backend[400];       /* the backend chosen and why (az_backend_create's why[]) */
	struct az_arch arch;     /* the network's shape, value head included */
};

/* Open a->ckpt for a->game: read and validate the checkpoint (az_ckpt_load), check that it is a
 * network of a->game (its recorded game name, then its inputs and actions), create a->backend
 * for a->batch rows, copy the weights into model slot 0 and set up the evaluator. The model read
 * from the file is freed before returning. On success *out owns the backend and the evaluator's
 * buffers until az_net_close(). On failure *out holds nothing (az_net_close() on it is a no-op)
 * and err one line, without the program's name; the library prints nothing. Returns 0, or
 *   -ENOENT, -EINVAL (malformed, truncated, corrupt), -ENOMEM or another -errno of reading the
 *     file: the loader's message (net/checkpoint.h);
 *   -EPROTO, a valid checkpoint of another network: "<ckpt> is a <its game> network, not
 *     <a->game>", or for another shape of the same game (Tangled on another graph or variant)
 *     "<ckpt> has D inputs and A actions, but <game> needs D' and A'";
 *   -EINVAL: no ckpt or no game ("open: no checkpoint or no game");
 *   -ENODEV (backend not available here), -EINVAL (its settings in the environment), -ENOTSUP
 *     or -ENOMEM: "backend: <why>". */
int az_net_open(const struct az_net_open_args *a, struct az_opened_net *out, char *err,
		size_t errlen);

/* Free what az_net_open() opened: the evaluator's buffers, then the backend. Safe on a zeroed,
 * failed or already closed n. */
void az_net_close(struct az_opened_net *n);

#endif
