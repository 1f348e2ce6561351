/* SPDX-License-Identifier: MIT */
/* The run directory (`--out DIR`): the one module that names its files and reads and writes the
 * small ones. docs/run-directory.md describes the format for users.
 *
 *   DIR/run.json                          effective configuration (written by tools/config.c)
 *   DIR/state.json                        {"completed": N, "best_iteration": B}: the commit
 *                                         record (see struct az_rundir_check)
 *   DIR/best.safetensors                  the network that plays self-play games
 *   DIR/checkpoints/iter-NNNN.safetensors the network trained in iteration N (0: random init)
 *   DIR/replay/iter-NNNN-wWW.rpl          self-play records of iteration N from worker W
 *   DIR/replay/iter-NNNN-wWW-rA.rpl       ... from its A-th restart
 *   DIR/metrics.jsonl                     one JSON object per completed iteration
 *   DIR/progress.json                     the phase in progress (for `azrun status`)
 *   DIR/azrun.lock                        flock of the one azrun using DIR
 *   DIR/azrun.log                         the log
 *   DIR/tb/events.out.tfevents.ringzero   the metrics for TensorBoard (run/tbevents.h)
 *
 * Every write goes to a temporary name, is fsynced and renamed (base/util.h), but the replay
 * files, which workers append to (train/replay.h), and progress.json (no fsync). */
#ifndef AZ_RUN_RUNDIR_H
#define AZ_RUN_RUNDIR_H

#include <stddef.h>
#include <stdint.h>

#define AZ_RUNDIR_PATH_MAX 1024

/* The files of a run directory that have one fixed name. */
enum az_rundir_file {
	AZ_RUNDIR_CONFIG,   /* run.json */
	AZ_RUNDIR_STATE,    /* state.json */
	AZ_RUNDIR_BEST,     /* best.safetensors */
	AZ_RUNDIR_METRICS,  /* metrics.jsonl */
	AZ_RUNDIR_PROGRESS, /* progress.json */
	AZ_RUNDIR_LOCK,     /* azrun.lock */
	AZ_RUNDIR_LOG,      /* azrun.log */
	AZ_RUNDIR_CHECKPOINTS, /* checkpoints/ */
	AZ_RUNDIR_REPLAY,      /* replay/ */
	AZ_RUNDIR_NFILES
};

/* The name of file f inside a run directory ("state.json"). */
const char *az_rundir_name(enum az_rundir_file f);

/* "<dir>/<name of f>" into buf (AZ_RUNDIR_PATH_MAX bytes is always enough for a dir that
 * azrun accepted). */
void az_rundir_path(char *buf, size_t len, const char *dir, enum az_rundir_file f);

/* "<dir>/checkpoints/iter-NNNN.safetensors": the candidate trained in `iteration`. */
void az_rundir_checkpoint_path(char *buf, size_t len, const char *dir, uint32_t iteration);

/* "<dir>/replay/iter-NNNN-wWW.rpl" for attempt 0, "...-wWW-rA.rpl" for restart A. */
void az_rundir_replay_path(char *buf, size_t len, const char *dir, uint32_t iteration,
			   uint32_t worker, uint32_t attempt);

/* Parses a replay file name (no directory): 1 and the iteration when it is one
 * ("iter-NNNN-wWW[...].rpl"), 0 otherwise. */
int az_rundir_replay_iteration(const char *name, uint32_t *iteration);

/* The replay files of iterations (it - window, it], as malloc'd paths (*paths[*n], free each
 * and the array). Returns 0 or -errno. */
int az_rundir_replay_window(const char *dir, uint32_t it, uint32_t window, char ***paths,
			    uint32_t *n);

/* Remove the replay files of iterations after `completed` (a crash mid-iteration). Returns
 * how many were removed. */
long az_rundir_drop_replay_after(const char *dir, uint32_t completed);

/* Checksums of the small files ("seals"). A sealed text is a JSON object whose last member is
 * "crc32": the CRC-32 (zlib) of every byte before the separating ", " of that member, as 8
 * lowercase hex digits, then "}" and one newline:
 *   {"completed": 7, "best_iteration": 3, "crc32": "1a2b3c4d"}
 * A flipped bit in the covered bytes changes the CRC; one in the member itself or the closing
 * bytes breaks the framing or the JSON; so no single flip reads as another valid value. Files
 * written before seals (no "crc32" member) are accepted as legacy (docs/run-directory.md). */
#define AZ_RUNDIR_SEAL_LEN 23 /* ", \"crc32\": \"XXXXXXXX\"}\n" */

/* Seal the JSON object text[0..strlen) in place: its final "}" (and any whitespace after it)
 * becomes the "crc32" member, "}" and a newline. cap: bytes of text. Returns the new length,
 * or -ENOSPC (text unchanged) / -EINVAL (not ending in "}"). */
int az_rundir_seal(char *text, size_t cap);

/* Check the seal of text[0..len): 1 when sealed and intact, 0 when there is no seal (a legacy
 * text; its JSON must then hold no "crc32" member, see az_rundir_seal_legacy_ok), -EBADMSG
 * when the seal is malformed or does not match (the text was damaged). */
int az_rundir_seal_check(const char *text, size_t len);

/* The JSON text[0..len) parses strictly (nothing but whitespace after it) and, when it is a
 * legacy text (az_rundir_seal_check 0), holds no "crc32" member. Returns 1 or 0. */
int az_rundir_seal_json_ok(const char *text, size_t len, int sealed);

/* state.json. */
struct az_rundir_state {
	uint32_t completed;      /* last completed iteration (0: none) */
	uint32_t best_iteration; /* iteration whose candidate is best.safetensors (0: random init) */
};

/* Write state.json (atomic replace). 0 or -errno with a message in err. */
int az_rundir_state_save(const char *dir, const struct az_rundir_state *st, char *err,
			 size_t errlen);

/* Read state.json. 0, -ENOENT when it does not exist (st zeroed), -EINVAL when it is damaged
 * (a checksum mismatch, or not a state file; message in err naming the file and what to do).
 * *legacy (may be NULL) is set to 1 for a file without a checksum (written before them); one
 * without a checksum beside a sealed metrics.jsonl is damage (-EINVAL): an edit, not legacy. */
int az_rundir_state_load(const char *dir, struct az_rundir_state *st, int *legacy, char *err,
			 size_t errlen);

/* One line of metrics.jsonl (len bytes, without its newline): 0 and its iteration, 1 when it
 * is intact but legacy (no checksum), -EBADMSG when its checksum does not match, -EINVAL when
 * it is not a metrics object. */
int az_rundir_metrics_line(const char *line, size_t len, long *iteration);

/* Rewrite metrics.jsonl keeping the lines of iterations <= keep, then append `line` (a JSON
 * object without newline, sealed here; may be NULL). Atomic replace: a crash leaves the old or
 * the new file.
 * A line that does not parse is never dropped: -EINVAL, the file unchanged. 0 or -errno with a
 * message in err. */
int az_rundir_metrics_commit(const char *dir, uint32_t keep, const char *line, char *err,
			     size_t errlen);

/* What progress.json says (written by the orchestrator about once a second). */
struct az_rundir_progress {
	long pid;
	uint32_t iteration, iterations;
	const char *phase;     /* "selfplay" | "train" | "arena" | "bench" | "done" */
	double phase_started;  /* unix seconds */
	uint64_t done, total;  /* games (or steps) of the phase */
	double evals_per_s;
};

/* Write progress.json, sealed; best effort (errors ignored: it is only for `azrun status`). */
void az_rundir_progress_write(const char *dir, const struct az_rundir_progress *p);

/* Create dir, checkpoints/ and replay/ and take the run's lock (flock on azrun.lock, held
 * until the process and its children exit; the pid is written into it). Returns 0, -EBUSY
 * when another process holds it, or -errno; message in err either way. */
int az_rundir_create_locked(const char *dir, char *err, size_t errlen);

/* Whether an azrun holds dir's lock (azrun.lock): 1, with *pid the pid it wrote there (0 when
 * unreadable); 0 when none does or there is no lock file. A shared flock is tried and dropped
 * at once, so an azrun that starts in that instant is refused as busy (it says so; starting it
 * again works). The truth for "is this run live", where progress.json's pid may be stale or
 * reused by another process. */
int az_rundir_lock_holder(const char *dir, long *pid);

/* The one integrity check behind `azrun verify` and `azrun --resume` (run/rundir_verify.c).
 *
 * The commit protocol of an iteration N (run/loop.c), each write atomic (temp name, fsync,
 * rename, fsync of the directory):
 *   1. replay/iter-N-*.rpl, checkpoints/iter-N.safetensors, the line of N in metrics.jsonl:
 *      prepared, not yet part of the run;
 *   2. state.json {"completed": N, "best_iteration": B}: the commit record;
 *   3. best.safetensors := a copy of checkpoints/iter-B: derived from the record.
 * A kill at any instant therefore leaves state.json naming the last whole iteration. What
 * lies beyond it (files of iteration > completed, metrics lines after the completed ones,
 * temporary files, a best.safetensors other than iter-B's) is a leftover that resume rolls
 * back (removes) or completes (copies best); anything else wrong is damage, which resume
 * refuses. */
struct az_rundir_check {
	/* In: called once per finding, damaged = 1 for damage, 0 for a note or a leftover (may
	 * be NULL); the architecture that run.json names (hidden 0: not checked; net is an
	 * enum az_net_kind, 0 = mlp). */
	void (*report)(void *ctx, int damaged, const char *msg);
	void *ctx;
	uint32_t net, hidden, blocks;
	int live; /* an azrun holds the directory: what lies beyond the last committed iteration
	           * is its iteration in progress, worded so, not leftovers */
	/* Out. */
	long checkpoints, replay_files, records, games_bad, problems;
	long metrics_lines;
	long metrics_legacy;     /* lines without a crc32 (older azruns), accepted */
	int state_damaged;       /* state.json exists but is damaged */
	size_t dropped;  /* bytes that do not load (damaged games, torn tails), all replay files */
	long completed;  /* from state.json; -1 when missing or damaged */
	uint32_t best_iteration; /* from state.json */
	int state_missing;       /* no state.json (damage only when iterations completed) */
	long repairs;            /* leftovers that resume rolls back or completes */
	int best_stale;          /* best.safetensors is not checkpoints/iter-B's bytes */
};

/* Check a run directory of game g end to end: state.json parses (or is missing with nothing
 * completed); checkpoints iter-0..completed exist, load (header, shapes, CRC, finite values)
 * and are networks of g and t's architecture; best.safetensors likewise; every replay segment
 * of a completed iteration reads to its end with valid checksums; metrics.jsonl holds line k =
 * iteration k for k = 1..completed. One report per damaged item, naming it. Returns 0 when
 * there is no damage, 1 otherwise (counted in t->problems). t zeroed but for the inputs. */
struct az_game;
int az_rundir_verify(const char *dir, const struct az_game *g, struct az_rundir_check *t);

/* Does a file name belong to an unfinished atomic write ("*.tmp.PID", "*.tmp")? */
int az_rundir_is_temp(const char *name);

/* Remove the temporary files of writes cut short in dir, checkpoints/, replay/ and tb/ (each
 * removal passed to say). */
void az_rundir_drop_temps(const char *dir, void (*say)(void *ctx, const char *msg), void *ctx);

/* Roll back or complete what az_rundir_verify found beyond the last committed iteration
 * (t->problems must be 0 and t->completed >= 0): remove temporary files, checkpoints, replay
 * files and metrics lines of iterations after t->completed, and copy checkpoints/iter-B to
 * best.safetensors when t->best_stale. Each action is passed to say(ctx, msg). Idempotent (a
 * crash inside it is repaired by the next resume). 0 or -errno with a message in err. */
int az_rundir_repair(const char *dir, const struct az_rundir_check *t,
		     void (*say)(void *ctx, const char *msg), void *ctx, char *err, size_t errlen);

/* `azrun repair` (run/rundir_repair.c): make a damaged run resumable without deleting
 * anything. What resuming does not need and cannot trust is moved to DIR/quarantine/ under its
 * own relative name (a ".N" suffix when taken): a damaged checkpoint of an old iteration (not
 * the last, not the best), an unreadable replay file, a damaged progress.json. What can be
 * rebuilt is: state.json from the intact metrics lines, a damaged best.safetensors or
 * checkpoints/iter-B from its twin, a replay file with a damaged tail cut to its whole games
 * (its original copied to the quarantine first). What resuming needs and cannot be rebuilt is
 * counted in s->unrepaired and left in place. Each action is passed to s->say. Run it under
 * the directory's lock. Returns 0. */
struct az_rundir_salvage {
	void (*say)(void *ctx, const char *msg); /* may be NULL */
	void *ctx;
	uint32_t net, hidden, blocks; /* run.json's architecture, as in struct az_rundir_check */
	long moved, rebuilt, unrepaired; /* out */
};
int az_rundir_salvage(const char *dir, const struct az_game *g, struct az_rundir_salvage *s);

#endif
