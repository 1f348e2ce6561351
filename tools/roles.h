/* SPDX-License-Identifier: MIT */
/* The roles azrun forks: self-play / arena workers (tools/worker.c) and the trainer
 * (tools/trainer_role.c). Each runs in its own process and reports through the control area. */
#ifndef AZ_TOOLS_ROLES_H
#define AZ_TOOLS_ROLES_H

#include <stdint.h>

#include "shm/segment.h"
#include "tools/config.h"

enum az_worker_mode { AZ_WORKER_SELFPLAY = 0, AZ_WORKER_ARENA = 1 };

/* Play games of the current phase through ring `worker` of seg until ctl->games_target games
 * have been claimed and finished. Self-play writes every finished game to replay_path (io_uring
 * writer); the arena adds results to the control area. Returns 0 or a negative errno. */
int az_worker_run(const struct az_config *cfg, struct az_seg *seg, uint32_t worker,
		  enum az_worker_mode mode, uint32_t iteration, const char *replay_path);

struct az_train_job {
	const struct az_config *cfg;
	uint32_t iteration;
	const char *init_path;  /* checkpoint to continue from */
	const char *out_path;   /* candidate checkpoint to write */
	char **replay_paths;    /* segment files of the window */
	uint32_t n_replay;
};

struct az_train_report {
	double policy_loss;
	double value_loss;
	uint64_t samples;   /* records in the window */
	uint32_t steps;
	int32_t error;
};

/* Load the window, train, write the candidate. Returns 0 or -errno with a message in err. */
int az_train_run(const struct az_train_job *job, struct az_train_report *rep, char *err,
		 size_t errlen);

#endif
