/* SPDX-License-Identifier: MIT */
/* Shared helpers for the tools: atomic file replace, directories, logging, progress bars. */
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

/* ---- the crash-point hook (tests only; see az_fault_init in base/util.h) ---- */

struct fault_page {
	_Atomic uint64_t points; /* write, fsync and rename calls so far, all processes */
	uint64_t crash_at;       /* immutable after az_fault_init */
	pid_t root;              /* immutable after az_fault_init: the process to kill */
};

static struct fault_page *fault;

void az_fault_init(void)
{
	const char *s = getenv("AZ_CRASH_AT");
	uint32_t n;
	if (fault || !s || az_parse_u32(s, NULL, &n) < 0 || n == 0)
		return;
	void *mem = mmap(NULL, sizeof(*fault), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			 -1, 0);
	if (mem == MAP_FAILED)
		return;
	fault = mem;
	fault->crash_at = n;
	fault->root = getpid();
}

/* Called before each write, fsync and rename of az_write_file_atomic: at the AZ_CRASH_AT-th
 * call, over every process forked after az_fault_init, SIGKILL the root process (its children
 * die with it, PR_SET_PDEATHSIG) and this one, as a power cut there would. */
static void fault_point(const char *what, const char *path)
{
	if (!fault)
		return;
	/* Relaxed: a counter only; the processes that write files take turns (the supervisor
	 * waits for the trainer before it writes), so no other memory is ordered by it. */
	uint64_t n = atomic_fetch_add_explicit(&fault->points, 1, memory_order_relaxed) + 1;
	if (n != fault->crash_at)
		return;
	fprintf(stderr, "az-fault: crash point %llu: before %s of %s\n", (unsigned long long)n,
		what, path);
	kill(fault->root, SIGKILL);
	raise(SIGKILL);
}

/* fsync the directory holding path so that a rename into it is durable. */
static int fsync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd, rc = 0;

	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0 && errno != EINVAL) /* some filesystems cannot fsync a directory */
		rc = -errno;
	close(fd);
	return rc;
}

int az_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	char tmp[1100];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: cannot create (%s)", tmp, strerror(e));
		return -e;
	}
	const char *p = data;
	size_t left = len;
	while (left) {
		fault_point("write", tmp);
		ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			snprintf(err, errlen, "%s: write failed (%s)", path, strerror(e));
			close(fd);
			unlink(tmp);
			return -e;
		}
		p += n;
		left -= (size_t)n;
	}
	fault_point("fsync", tmp);
	if (fsync(fd) < 0 || close(fd) < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: fsync failed (%s)", path, strerror(e));
		unlink(tmp);
		return -e;
	}
	fault_point("rename", path);
	if (rename(tmp, path) < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: rename failed (%s)", path, strerror(e));
		unlink(tmp);
		return -e;
	}
	fault_point("directory fsync", path);
	int rc = fsync_dir_of(path);
	if (rc < 0)
		snprintf(err, errlen, "%s: directory fsync failed (%s)", path, strerror(-rc));
	return rc;
}

/* The file path names (a symbolic link followed) into out[0..n), checked as az_atomic_check()
 * says; 0 or -errno with a message in err. */
static int atomic_target(const char *path, char *out, size_t n, char *err, size_t errlen)
{
	const char *base, *slash;
	char dir[PATH_MAX];
	struct stat st;

	if (!path[0]) {
		snprintf(err, errlen, "an empty file name");
		return -EINVAL;
	}
	if (strlen(path) >= n) {
		snprintf(err, errlen, "%.200s...: the path is longer than %zu bytes", path, n - 1);
		return -ENAMETOOLONG;
	}
	snprintf(out, n, "%s", path);
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && !realpath(path, out)) {
		snprintf(err, errlen, "%s: a symbolic link to nothing (%s)", path, strerror(errno));
		return -ENOENT;
	}
	if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: a directory; name the file to write", path);
		return -EISDIR;
	}
	if (stat(out, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen,
			 "%s: not a regular file (a device, FIFO or socket); name a "
			 "file to write",
			 path);
		return -EINVAL;
	}
	slash = strrchr(out, '/');
	base = slash ? slash + 1 : out;
	if (strlen(base) > NAME_MAX) {
		snprintf(err, errlen, "%s: a file name longer than %d bytes", path, NAME_MAX);
		return -ENAMETOOLONG;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - out) + 1 : 1, slash ? out : ".");
	if (access(dir, W_OK | X_OK) != 0) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot create files in %s (%s)", path, dir, strerror(e));
		return -e;
	}
	return 0;
}

int az_atomic_check(const char *path, char *err, size_t errlen)
{
	char target[PATH_MAX];

	return atomic_target(path, target, sizeof(target), err, errlen);
}

int az_atomic_open(struct az_atomic_file *af, const char *path, char *err, size_t errlen)
{
	char why[PATH_MAX + 200];
	const char *slash, *base;
	int rc = atomic_target(path, af->path, sizeof(af->path), why, sizeof(why));

	af->f = NULL;
	if (rc < 0) {
		snprintf(err, errlen, "cannot write %s", why);
		return rc;
	}
	/* "<name>.tmp.<pid>" beside the file; a name too long for that suffix gets a short one. */
	slash = strrchr(af->path, '/');
	base = slash ? slash + 1 : af->path;
	if (strlen(base) + 24 <= NAME_MAX)
		snprintf(af->tmp, sizeof(af->tmp), "%s.tmp.%ld", af->path, (long)getpid());
	else
		snprintf(af->tmp, sizeof(af->tmp), "%.*s.az.tmp.%ld",
			 slash ? (int)(slash - af->path) + 1 : 0, af->path, (long)getpid());
	af->f = fopen(af->tmp, "we");
	if (!af->f) {
		int e = errno;

		snprintf(err, errlen, "cannot write %s: cannot create a file in its directory (%s)",
			 path, strerror(e));
		return -e;
	}
	/* the file replaced keeps its permissions (the new one would get the umask's) */
	struct stat st;
	if (stat(af->path, &st) == 0)
		(void)fchmod(fileno(af->f), st.st_mode & 0777);
	return 0;
}

int az_atomic_commit(struct az_atomic_file *af, char *err, size_t errlen)
{
	const char *what = "write failed";
	int e = 0, rc;

	if (!af->f) {
		snprintf(err, errlen, "cannot write %s: not open", af->path);
		return -EBADF;
	}
	errno = 0;
	if (fflush(af->f) != 0 || ferror(af->f))
		e = errno ? errno : EIO;
	else if (fsync(fileno(af->f)) < 0 && errno != EINVAL) {
		e = errno;
		what = "fsync failed";
	}
	if (fclose(af->f) != 0 && !e)
		e = errno ? errno : EIO;
	af->f = NULL;
	if (!e && rename(af->tmp, af->path) < 0) {
		e = errno;
		what = "rename failed";
	}
	if (e) {
		snprintf(err, errlen, "cannot write %s: %s (%s)", af->path, what, strerror(e));
		unlink(af->tmp);
		return -e;
	}
	rc = fsync_dir_of(af->path);
	if (rc < 0)
		snprintf(err, errlen, "%s: directory fsync failed (%s)", af->path, strerror(-rc));
	return rc;
}

void az_atomic_abort(struct az_atomic_file *af)
{
	if (!af->f)
		return;
	fclose(af->f);
	af->f = NULL;
	unlink(af->tmp);
}

int az_copy_file_atomic(const char *from, const char *to, char *err, size_t errlen)
{
	char *data;
	size_t len;
	int rc = az_read_file(from, &data, &len);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", from, strerror(-rc));
		return rc;
	}
	rc = az_write_file_atomic(to, data, len, err, errlen);
	free(data);
	return rc;
}

int az_write_file_replace(const char *path, const void *data, size_t len)
{
	char tmp[1100];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	int bad = fwrite(data, 1, len, f) != len;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) < 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

int az_read_file(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (n + 1 < cap)
			break;
		cap *= 2;
		char *nb = realloc(buf, cap);
		if (!nb)
			free(buf);
		buf = nb;
	}
	int bad = ferror(f);
	fclose(f);
	if (!buf)
		return -ENOMEM;
	if (bad) {
		free(buf);
		return -EIO;
	}
	buf[n] = 0;
	*data = buf;
	if (len)
		*len = n;
	return 0;
}

int az_mkdir_p(const char *path)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

uint64_t az_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double az_now(void)
{
	return (double)az_now_ns() * 1e-9;
}

int az_parse_u32(const char *s, const char **end, uint32_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > UINT32_MAX)
			return -EINVAL;
	}
	if (end)
		*end = p;
	else if (*p)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static FILE *log_file;

void az_log_open(const char *path)
{
	if (log_file)
		fclose(log_file);
	log_file = fopen(path, "a");
}

static int log_quiet;
static int progress_drawn; /* a bar is on stderr's current line */

void az_log_set_quiet(int quiet)
{
	log_quiet = quiet;
}

static void log_line(int to_stderr, const char *fmt, va_list ap)
{
	char msg[2048], stamp[32];
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* The terminal gets the time of day (the date is in the log file); a progress bar drawn
	 * on that line is cleared first. */
	if (to_stderr)
		fprintf(stderr, "%s%s %s\n", progress_drawn ? "\r\033[K" : "", stamp + 11, msg);
	progress_drawn = 0;
	if (log_file) {
		fprintf(log_file, "%s %s\n", stamp, msg);
		fflush(log_file);
	}
}

void az_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_line(1, fmt, ap);
	va_end(ap);
}

void az_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_line(!log_quiet, fmt, ap);
	va_end(ap);
}

void az_progress_begin(struct az_progress *p, const char *label, uint64_t total, int quiet)
{
	snprintf(p->label, sizeof(p->label), "%s", label);
	p->total = total ? total : 1;
	p->t0 = az_now();
	p->last_draw = 0;
	p->tty = isatty(STDERR_FILENO);
	p->quiet = quiet;
}

void az_progress_format(const struct az_progress *p, uint64_t done, const char *extra,
			double elapsed, char *buf, size_t len)
{
	enum { W = 24 };
	char bar[W + 1], el[32], eta[32];
	uint64_t d = done < p->total ? done : p->total;
	uint64_t fill = d * W / p->total;
	for (int i = 0; i < W; i++)
		bar[i] = i < (int)fill ? '#' : '-';
	bar[W] = 0;
	az_format_duration(elapsed, el, sizeof(el));
	if (d)
		az_format_duration(elapsed * (double)(p->total - d) / (double)d, eta, sizeof(eta));
	else
		snprintf(eta, sizeof(eta), "?");
	snprintf(buf, len, "%s [%s] %llu/%llu%s%s  %s, eta %s", p->label, bar,
		 (unsigned long long)done, (unsigned long long)p->total, extra ? " " : "",
		 extra ? extra : "", el, eta);
}

void az_progress_update(struct az_progress *p, uint64_t done, const char *extra)
{
	double now = az_now();
	char line[256];
	if (p->quiet || !p->tty || now - p->last_draw < 0.2)
		return;
	p->last_draw = now;
	az_progress_format(p, done, extra, now - p->t0, line, sizeof(line));
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	progress_drawn = 1;
}

void az_progress_end(struct az_progress *p)
{
	if (!p->quiet && p->tty && p->last_draw > 0 && progress_drawn)
		fprintf(stderr, "\r\033[K");
	progress_drawn = 0;
}

void az_format_duration(double s, char *buf, size_t len)
{
	if (isnan(s) || s < 0)
		snprintf(buf, len, "?");
	else if (s < 60)
		snprintf(buf, len, "%.1fs", s);
	else if (s < 3600)
		snprintf(buf, len, "%ldm%02lds", (long)s / 60, (long)s % 60);
	else
		snprintf(buf, len, "%ldh%02ldm", (long)s / 3600, (long)s / 60 % 60);
}

int az_parse_duration(const char *text, double *seconds)
{
	static const struct {
		char unit;
		double s;
	} units[] = {{'h', 3600.0}, {'m', 60.0}, {'s', 1.0}};
	const char *p = text;
	double total = 0.0;
	size_t next = 0; /* units must come in order h, m, s, each once */

	if (!p || !*p)
		return -EINVAL;
	while (*p) {
		char *end;
		unsigned long v;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v > 10000000ul)
			return -EINVAL;
		if (!*end) { /* a bare number: seconds, only alone ("1h30" is ambiguous) */
			if (p != text)
				return -EINVAL;
			total += (double)v;
			p = end;
			break;
		}
		while (next < 3 && units[next].unit != *end)
			next++;
		if (next == 3)
			return -EINVAL;
		total += (double)v * units[next++].s;
		p = end + 1;
	}
	if (!(total > 0.0) || total > 1e7)
		return -EINVAL;
	*seconds = total;
	return 0;
}

const char *az_format_wdl(long wins, long draws, long losses, char *buf, size_t len)
{
	snprintf(buf, len, "%ld win%s, %ld draw%s, %ld loss%s", wins,
		 az_plural((unsigned long)wins), draws, az_plural((unsigned long)draws), losses,
		 losses == 1 ? "" : "es");
	return buf;
}

int az_cache_dir(char *buf, size_t len)
{
	const char *env = getenv("RINGZERO_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
		   *home = getenv("HOME");
	int n;

	if (env && *env)
		n = strcmp(env, "none") == 0 ? -1 : snprintf(buf, len, "%s", env);
	else if (xdg && *xdg)
		n = snprintf(buf, len, "%s/ringzero", xdg);
	else if (home && *home)
		n = snprintf(buf, len, "%s/.cache/ringzero", home);
	else
		n = -1;
	if (n < 0)
		return -ENOENT;
	return (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int az_fp_flush_denormals(void)
{
#if defined(__SSE__)
	_mm_setcsr(_mm_getcsr() | 0x8040u); /* FTZ | DAZ */
	return 1;
#else
	return 0;
#endif
}
