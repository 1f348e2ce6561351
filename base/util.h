/* SPDX-License-Identifier: MIT */
/* Small helpers the tools share: whole-file I/O with atomic replace, directories, time, logging
 * and progress output. */
#ifndef AZ_TOOLS_UTIL_H
#define AZ_TOOLS_UTIL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Write len bytes to "<path>.tmp.<pid>", fsync, rename over path, fsync the directory.
 * Returns 0 or -errno with a message in err; path is untouched on failure. */
int az_write_file_atomic(const char *path, const void *data, size_t len, char *err,
			 size_t errlen);

/* Copy file `from` over `to` with az_write_file_atomic. 0 or -errno with a message in err. */
int az_copy_file_atomic(const char *from, const char *to, char *err, size_t errlen);

/* Temp name and rename, without fsync: for status files (progress.json) whose loss in a crash
 * is harmless; not a crash point (az_fault_init). Returns 0 or -errno. */
int az_write_file_replace(const char *path, const void *data, size_t len);

/* A file written through a stream under the temporary name "<path>.tmp.<pid>" and renamed over
 * path only when complete, so that a reader, or a kill at any instant, sees the old file or the
 * new one, never a torn one. az_atomic_open() creates the temporary file (path itself is not
 * touched); write through af->f; az_atomic_commit() flushes, fsyncs, closes, renames and fsyncs
 * the directory; az_atomic_abort() closes and removes the temporary file. Errors name path, the
 * file the caller asked for, not the temporary name. Not a crash point (az_fault_init). */
struct az_atomic_file {
	FILE *f;
	char path[PATH_MAX];
	char tmp[PATH_MAX + 32];
};

/* Whether az_atomic_open(path) can work: path not empty and not a directory, device, FIFO or
 * socket (a symbolic link is followed: the file it names is replaced, the link kept), its file
 * name at most NAME_MAX bytes, in a folder that exists and takes new files (access(2): root
 * passes). 0, or -errno with "PATH: what is wrong" in err; touches nothing. Lets a tool refuse
 * before minutes of work rather than after. */
int az_atomic_check(const char *path, char *err, size_t errlen);

/* Open af for path (az_atomic_check's rules; a link's target is what af->path names); the
 * temporary file takes the permissions of the file it will replace, when there is one. 0, or
 * -errno with "cannot write PATH: ..." in err (af->f is then NULL). */
int az_atomic_open(struct az_atomic_file *af, const char *path, char *err, size_t errlen);

/* Finish af: flush, fsync, close, rename over af->path, fsync the directory. On failure the
 * temporary file is removed and path keeps its old content; 0 or -errno with a message in
 * err. af->f is NULL afterwards either way. */
int az_atomic_commit(struct az_atomic_file *af, char *err, size_t errlen);

/* Give up on af: close and remove the temporary file; path is untouched. Safe on a closed af. */
void az_atomic_abort(struct az_atomic_file *af);

/* Crash-point testing, in the manner of SQLite's crash tests: with AZ_CRASH_AT=N in the
 * environment, the N-th write, fsync, rename or directory fsync made by az_write_file_atomic
 * (counted over this process and every child forked after this call) SIGKILLs this process and
 * the caller of az_fault_init, after one "az-fault: crash point N: before ..." line on stderr.
 * Without the variable nothing changes. Call once, first thing in main. */
void az_fault_init(void);

/* Read a whole file into a NUL-terminated malloc'd buffer (*data, caller frees). 0 or -errno. */
int az_read_file(const char *path, char **data, size_t *len);

/* mkdir -p with mode 0755. Returns 0 or -errno. */
int az_mkdir_p(const char *path);

/* Monotonic clock (CLOCK_MONOTONIC) in nanoseconds: for intervals and deadlines, any thread. */
uint64_t az_now_ns(void);

/* The same clock in seconds. */
double az_now(void);

/* Strict decimal u32: one or more digits and no sign, space or overflow. With end NULL the whole
 * string must be the number; otherwise the number stops at the first non-digit and *end points
 * there. Returns 0 with the value in *out, or -EINVAL (*out untouched). */
int az_parse_u32(const char *s, const char **end, uint32_t *out);

/* Log to stderr and (when az_log_open was called) to the run's log file, with a timestamp. */
void az_log_open(const char *path);
void az_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Informational line: like az_log, but not on stderr after az_log_set_quiet(1) (--quiet); the
 * log file gets it either way. Warnings and errors use az_log. */
void az_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void az_log_set_quiet(int quiet);

/* Progress of a phase: a bar redrawn in place on a terminal ("iter 3/10 selfplay [###---]
 * 6/12 games, 812 evals/s  4.1s, eta 4.0s"), nothing otherwise (the caller logs one line when
 * the phase ends). An az_log/az_info line clears a bar drawn before it. One thread. */
struct az_progress {
	char label[48];
	uint64_t total;
	double t0;
	double last_draw;
	int tty;
	int quiet;
};
/* label is copied; total 0 counts as 1; quiet: draw nothing. */
void az_progress_begin(struct az_progress *p, const char *label, uint64_t total, int quiet);
/* Redraw with done of total (at most five times a second); extra follows the count. */
void az_progress_update(struct az_progress *p, uint64_t done, const char *extra);
void az_progress_end(struct az_progress *p);
/* The bar's text after elapsed seconds into buf (what az_progress_update draws). */
void az_progress_format(const struct az_progress *p, uint64_t done, const char *extra,
			double elapsed, char *buf, size_t len);

/* A duration such as "90s", "50m", "2h", "1h30m" or "45" (seconds) into *seconds: units h, m,
 * s in that order, each at most once, whole numbers; a number without a unit only alone ("1h30"
 * is refused: 1h30m or 1h0m30s?); the total positive and at most 10^7 s. Returns 0 or
 * -EINVAL. */
int az_parse_duration(const char *text, double *seconds);

/* Seconds as "4.2s", "3m07s" or "2h05m"; "?" for a negative or NAN value. */
void az_format_duration(double s, char *buf, size_t len);

/* The machine's RingZero cache folder into buf[len] (not created): $RINGZERO_CACHE_DIR ("none":
 * no cache), else $XDG_CACHE_HOME/ringzero, else $HOME/.cache/ringzero; never a folder others
 * can write to such as /tmp, whose files another user could have planted. Returns 0, -ENOENT
 * when there is none (the caller caches nothing, or asks for a folder), -ENAMETOOLONG. */
int az_cache_dir(char *buf, size_t len);

/* The size of a message buffer that names a file: any path in full (PATH_MAX) and the words
 * around it, so that a long path is never cut in what the user reads. */
#define AZ_ERR_LEN (PATH_MAX + 512)

/* "s" unless n is 1, for counts in messages: printf("%u iteration%s", n, az_plural(n)). */
static inline const char *az_plural(unsigned long long n)
{
	return n == 1 ? "" : "s";
}

/* Game results as "1 win, 2 draws, 0 losses" into buf[len] (singular for 1); returns buf. */
const char *az_format_wdl(long wins, long draws, long losses, char *buf, size_t len);

/* Flush denormal floats to zero in the calling thread's vector arithmetic (x86: MXCSR's FTZ, bit
 * 15, and DAZ, bit 6; Intel SDM vol. 1, 10.2.3; SSE, AVX and AVX-512 all obey it; threads
 * created afterwards and forked children inherit it; a no-op elsewhere). A denormal operand
 * costs a microcode assist of ~100 cycles: weights that decay toward zero under weight decay
 * reach the denormal range after tens of thousands of optimizer steps, and a Connect Four
 * ResNet's training steps then took 2.5x as long. Results differ from IEEE gradual underflow
 * only below 1.2e-38. Returns 1 when set, 0 when the platform has no such mode. */
int az_fp_flush_denormals(void);

#endif
