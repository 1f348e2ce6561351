/* SPDX-License-Identifier: MIT */
/* One run over the ranks of an MPI job (docs/cluster.md): rank 0 is the learner (run directory,
 * trainer, checkpoints, replay store) and plays its share of every phase; every other rank runs
 * its own pipeline (segment, inference process, workers) on a scratch directory of its node,
 * streams its finished self-play games to rank 0 and plays its share of the arena.
 *
 * Compiled only when Open MPI is found (CMake AZ_MPI), into the az_run_mpi library that only
 * azrun-mpi links: the plain azrun never loads libmpi. This header names no MPI type.
 *
 * Every wait on the network polls (MPI_Test, 0.2 ms naps) and gives up on SIGINT/SIGTERM, so a
 * job that mpirun stops (a rank died) ends with a message instead of hanging in a collective.
 * Single-threaded like the supervisor: MPI_THREAD_FUNNELED. */
#ifndef AZ_RUN_MPI_H
#define AZ_RUN_MPI_H

#include <stddef.h>

#include "run/loop.h"

/* Worker processes per rank: rank 0 stores rank k's worker w as worker k*100 + w. */
#define AZ_MPI_MAX_WORKERS 100

/* MPI_Init_thread; *rank and *size of MPI_COMM_WORLD. Returns 0 or -EIO (nothing printed: the
 * caller says why, e.g. that the job must be started by mpirun or srun). */
int az_mpi_init(int *argc, char ***argv, int *rank, int *size);

/* Rank 0 sends, every other rank receives: *status (the exit status when non-negative means
 * "stop now with it"; -1: go on) and then, when going on, the `len` bytes at cfg (azrun's
 * parsed configuration: the ranks run the same binary). Returns 0 or -EINTR / -EIO. */
int az_mpi_share_config(int *status, void *cfg, size_t len);

/* Rank 0: install the hooks (r->hooks) that split the phases across the ranks. Call before
 * az_run_iterate. */
void az_mpi_leader_attach(struct az_run_loop *r);

/* Rank 0, after az_run_prepare_models: send r->best to every rank (they start their pipeline
 * on it). Returns 0 or -errno (logged). */
int az_mpi_leader_start(struct az_run_loop *r);

/* Rank 0 at the end: status 0 (or any stop between iterations) tells the other ranks to stop
 * and finalizes MPI; a failure in the middle of an iteration aborts the job (MPI_Abort) after
 * logging, since the other ranks may be mid-phase. Returns status. */
int az_mpi_leader_stop(struct az_run_loop *r, int status);

/* Every rank but 0: run the follower until rank 0 says stop; r->p is filled from the shared
 * configuration (p.out is replaced by a scratch directory of this node, removed at the end;
 * scratch directories of dead followers of this user are removed first). Returns the exit
 * status (0); on any failure it logs and aborts the job (MPI_Abort), since rank 0 would
 * otherwise wait for this rank's games. */
int az_mpi_follower_run(struct az_run_loop *r);

/* MPI_Finalize (after az_mpi_share_config said stop). */
void az_mpi_finalize(void);

#endif
