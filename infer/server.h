/* SPDX-License-Identifier: MIT */
/* The inference process: drains every worker's ring in batches, evaluates the requested model on
 * the backend, writes policy and value back into the request slots and marks them served.
 * Model changes are announced through the control area (infer/control.h). */
#ifndef AZ_SERVER_H
#define AZ_SERVER_H

#include <stdint.h>

#include "gpu/backend.h"
#include "shm/segment.h"

/* Largest batch deadline: 1 s. The deadline only bounds the wait for producers still computing;
 * a longer one hides a stalled worker behind minutes-long batches. */
#define AZ_INFER_DEADLINE_MAX_US 1000000u

/* The largest max_batch az_infer_serve() takes (its per-row arrays and the backend's buffers
 * are sized by it); azrun's --max-batch takes its range from here. */
#define AZ_INFER_BATCH_MAX 65536u

/* max_batch 0 ("auto"): the backend is made for this many rows and chooses at most this. */
#define AZ_INFER_BATCH_AUTO_MAX 256u

/* The rows a server is made for: max_batch, or AZ_INFER_BATCH_AUTO_MAX for "auto". */
static inline uint32_t az_infer_batch_cap(uint32_t max_batch)
{
	return max_batch ? max_batch : AZ_INFER_BATCH_AUTO_MAX;
}

struct az_infer_config {
	enum az_backend_kind backend;
	uint32_t features;    /* D of the game (slot layout) */
	uint32_t actions;     /* A of the game */
	/* Largest batch handed to the backend; 0: the backend's choice,
	 * az_backend_preferred_batch() of a backend made for AZ_INFER_BATCH_AUTO_MAX rows. */
	uint32_t max_batch;
	/* Wait at most this long after the first request for a fuller batch, when some producer
	 * may still add to it (the batch starts at once when none can: az_batch_collect()); at
	 * most AZ_INFER_DEADLINE_MAX_US. */
	uint32_t deadline_us;
	/* 1: the old batching (wait for max_batch or the deadline), the baseline that `azbench
	 * pipeline --phases` measures the adaptive batching against (docs/azbench.md); azrun
	 * never sets it. */
	uint32_t fixed_deadline;
	uint32_t spin;        /* polls before sleeping on the doorbell */
	int log_fd;           /* where to write one line about the backend choice; -1 for none */
	int quiet;            /* only errors go to log_fd */
	/* Optional: takes each line instead of log_fd (no trailing newline; error 1 for an error,
	 * 0 for information, which it gets even when quiet is set: azrun's run log). Called on
	 * the server's thread. */
	void (*log_line)(int error, const char *line);
	/* Optional: serve on this ops table instead of `backend` (a stand-in in tests); it must
	 * outlive the call. NULL: az_backend_create(backend). */
	const struct az_backend_ops *backend_ops;
};

/* Serve until the control area's `stop` is set. Runs in its own process (forked by azrun).
 * Returns 0 on a requested stop, -EINVAL for a deadline above AZ_INFER_DEADLINE_MAX_US, or a
 * negative errno when the backend cannot be created or a
 * model cannot be loaded in a way that makes serving impossible (the message goes to log_fd). */
int az_infer_serve(struct az_seg *seg, const struct az_infer_config *cfg);

#endif
