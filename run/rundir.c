/* SPDX-License-Identifier: MIT */
/* The run directory's names and small files (run/rundir.h). */
#include "run/rundir.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "run/tbevents.h"

static const char *const names[AZ_RUNDIR_NFILES] = {
	[AZ_RUNDIR_CONFIG] = "run.json",
	[AZ_RUNDIR_STATE] = "state.json",
	[AZ_RUNDIR_BEST] = "best.safetensors",
	[AZ_RUNDIR_METRICS] = "metrics.jsonl",
	[AZ_RUNDIR_PROGRESS] = "progress.json",
	[AZ_RUNDIR_LOCK] = "azrun.lock",
	[AZ_RUNDIR_LOG] = "azrun.log",
	[AZ_RUNDIR_CHECKPOINTS] = "checkpoints",
	[AZ_RUNDIR_REPLAY] = "replay",
};

const char *az_rundir_name(enum az_rundir_file f)
{
	return f < AZ_RUNDIR_NFILES ? names[f] : "?";
}

void az_rundir_path(char *buf, size_t len, const char *dir, enum az_rundir_file f)
{
	snprintf(buf, len, "%s/%s", dir, az_rundir_name(f));
}

void az_rundir_checkpoint_path(char *buf, size_t len, const char *dir, uint32_t iteration)
{
	snprintf(buf, len, "%s/checkpoints/iter-%04u.safetensors", dir, iteration);
}

void az_rundir_replay_path(char *buf, size_t len, const char *dir, uint32_t iteration,
			   uint32_t worker, uint32_t attempt)
{
	if (attempt == 0)
		snprintf(buf, len, "%s/replay/iter-%04u-w%02u.rpl", dir, iteration, worker);
	else
		snprintf(buf, len, "%s/replay/iter-%04u-w%02u-r%u.rpl", dir, iteration, worker,
			 attempt);
}

int az_rundir_replay_iteration(const char *name, uint32_t *iteration)
{
	unsigned a, w;
	size_t len = strlen(name);
	if (sscanf(name, "iter-%4u-w%2u", &a, &w) != 2 || len < 4 ||
	    strcmp(name + len - 4, ".rpl") != 0)
		return 0;
	*iteration = a;
	return 1;
}

int az_rundir_replay_window(const char *dir, uint32_t it, uint32_t window, char ***paths,
			    uint32_t *n)
{
	char rdir[AZ_RUNDIR_PATH_MAX];
	az_rundir_path(rdir, sizeof(rdir), dir, AZ_RUNDIR_REPLAY);
	DIR *d = opendir(rdir);
	if (!d)
		return -errno;
	uint32_t cap = 16, cnt = 0;
	char **v = malloc(cap * sizeof(*v));
	struct dirent *e;
	while (v && (e = readdir(d)) != NULL) {
		uint32_t a;
		if (!az_rundir_replay_iteration(e->d_name, &a) || a > it || a + window <= it)
			continue;
		if (cnt == cap) {
			cap *= 2;
			char **nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		size_t plen = strlen(rdir) + strlen(e->d_name) + 2;
		v[cnt] = malloc(plen);
		if (v[cnt])
			snprintf(v[cnt++], plen, "%s/%s", rdir, e->d_name);
	}
	closedir(d);
	if (!v)
		return -ENOMEM;
	*paths = v;
	*n = cnt;
	return 0;
}

long az_rundir_drop_replay_after(const char *dir, uint32_t completed)
{
	long n = 0;
	char rdir[AZ_RUNDIR_PATH_MAX], p[AZ_RUNDIR_PATH_MAX + 300];
	az_rundir_path(rdir, sizeof(rdir), dir, AZ_RUNDIR_REPLAY);
	DIR *d = opendir(rdir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		unsigned a, w;
		/* Any file that names a later iteration, torn ".tmp" leftovers included. */
		if (sscanf(e->d_name, "iter-%4u-w%2u", &a, &w) == 2 && a > completed) {
			snprintf(p, sizeof(p), "%s/%s", rdir, e->d_name);
			n += unlink(p) == 0;
		}
	}
	if (d)
		closedir(d);
	return n;
}

#define SEAL_KEY ", \"crc32\": \""

static uint32_t crc_text(const char *p, size_t len)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), (const unsigned char *)p, (uInt)len);
}

int az_rundir_seal(char *text, size_t cap)
{
	size_t len = strlen(text);
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\t'))
		len--;
	if (!len || text[len - 1] != '}')
		return -EINVAL;
	len--; /* the body: everything before the final "}", trailing whitespace dropped */
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\t'))
		len--;
	if (len + AZ_RUNDIR_SEAL_LEN + 1 > cap)
		return -ENOSPC;
	uint32_t crc = crc_text(text, len);
	snprintf(text + len, cap - len, "%s%08x\"}\n", SEAL_KEY, crc);
	return (int)(len + AZ_RUNDIR_SEAL_LEN);
}

int az_rundir_seal_check(const char *text, size_t len)
{
	const size_t key = sizeof(SEAL_KEY) - 1, tail = AZ_RUNDIR_SEAL_LEN - 1; /* no newline */
	if (len && text[len - 1] == '\n')
		len--;
	/* A sealed text ends in a string member; a legacy one (numbers, "true") does not. */
	if (len < 2 || text[len - 2] != '"' || text[len - 1] != '}')
		return 0;
	if (len < tail || memcmp(text + len - tail, SEAL_KEY, key) != 0)
		return -EBADMSG;
	const char *hex = text + len - tail + key;
	uint32_t want = 0;
	for (int i = 0; i < 8; i++) {
		char c = hex[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -EBADMSG;
		want = want << 4 | (uint32_t)(c <= '9' ? c - '0' : c - 'a' + 10);
	}
	return crc_text(text, len - tail) == want ? 1 : -EBADMSG;
}

/* The JSON value of text[0..len) with nothing but whitespace after it, or NULL. */
static cJSON *parse_strict(const char *text, size_t len)
{
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	for (const char *p = end; j && p < text + len; p++)
		if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') {
			cJSON_Delete(j);
			return NULL;
		}
	return j;
}

int az_rundir_seal_json_ok(const char *text, size_t len, int sealed)
{
	cJSON *j = parse_strict(text, len);
	int ok = cJSON_IsObject(j) &&
		 (sealed || !cJSON_GetObjectItemCaseSensitive(j, "crc32"));
	cJSON_Delete(j);
	return ok;
}

int az_rundir_state_save(const char *dir, const struct az_rundir_state *st, char *err,
			 size_t errlen)
{
	char path[AZ_RUNDIR_PATH_MAX], text[256];
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_STATE);
	snprintf(text, sizeof(text), "{\"completed\": %u, \"best_iteration\": %u}", st->completed,
		 st->best_iteration);
	int len = az_rundir_seal(text, sizeof(text));
	AZ_ASSERT(len > 0);
	return az_write_file_atomic(path, text, (size_t)len, err, errlen);
}

/* A state.json's members: "completed" and "best_iteration" (and "crc32" when sealed), nothing
 * else, each an integer in range. */
static int state_members(const cJSON *j, int sealed, struct az_rundir_state *st)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "completed");
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "best_iteration");
	int n = cJSON_GetArraySize(j);
	if (!cJSON_IsNumber(c) || !cJSON_IsNumber(b) || n != 2 + sealed)
		return 0;
	double cv = c->valuedouble, bv = b->valuedouble;
	if (!(cv >= 0 && cv < 1e6 && bv >= 0 && bv <= cv) || cv != (double)(uint32_t)cv ||
	    bv != (double)(uint32_t)bv)
		return 0;
	st->completed = (uint32_t)cv;
	st->best_iteration = (uint32_t)bv;
	return 1;
}

/* Whether metrics.jsonl's first line carries a crc32: written by an azrun that seals, which
 * seals state.json too. */
static int metrics_sealed(const char *dir)
{
	char path[AZ_RUNDIR_PATH_MAX], *text = NULL;
	int sealed = 0;

	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_METRICS);
	if (az_read_file(path, &text, NULL) == 0 && strchr(text, '\n'))
		sealed = az_rundir_seal_check(text, (size_t)(strchr(text, '\n') - text) + 1) > 0;
	free(text);
	return sealed;
}

int az_rundir_state_load(const char *dir, struct az_rundir_state *st, int *legacy, char *err,
			 size_t errlen)
{
	char path[AZ_RUNDIR_PATH_MAX], *text = NULL;
	size_t len = 0;
	memset(st, 0, sizeof(*st));
	if (legacy)
		*legacy = 0;
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_STATE);
	int rc = az_read_file(path, &text, &len);
	if (rc == -ENOENT)
		return -ENOENT;
	if (rc < 0) {
		snprintf(err, errlen, "%s: cannot read (%s)", path, strerror(-rc));
		return -EINVAL;
	}
	int sealed = az_rundir_seal_check(text, len);
	cJSON *j = sealed >= 0 ? parse_strict(text, len) : NULL;
	free(text);
	int ok = cJSON_IsObject(j) && state_members(j, sealed, st);
	cJSON_Delete(j);
	if (sealed < 0) {
		snprintf(err, errlen, "%s is damaged (its crc32 does not match: a flipped bit or an "
			 "edit); restore it from a backup or rebuild it from metrics.jsonl", path);
		return -EINVAL;
	}
	if (!ok) {
		memset(st, 0, sizeof(*st));
		snprintf(err, errlen, "%s is damaged (not a RingZero state file); restore it from "
			 "a backup or rebuild it from metrics.jsonl", path);
		return -EINVAL;
	}
	if (!sealed && metrics_sealed(dir)) { /* no legacy: an edit, or a file put there */
		memset(st, 0, sizeof(*st));
		snprintf(err, errlen, "%s is damaged (it has no crc32, but the metrics.jsonl beside "
			 "it was written by an azrun that seals both: an edit or a replaced file); "
			 "restore it from a backup or rebuild it from metrics.jsonl", path);
		return -EINVAL;
	}
	if (legacy)
		*legacy = !sealed;
	return 0;
}

int az_rundir_metrics_line(const char *line, size_t len, long *iteration)
{
	int sealed = az_rundir_seal_check(line, len);
	if (sealed < 0)
		return -EBADMSG;
	cJSON *j = parse_strict(line, len);
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, "iteration");
	int ok = cJSON_IsObject(j) && cJSON_IsNumber(it) && it->valuedouble >= 0 &&
		 it->valuedouble < 1e6 && (sealed || !cJSON_GetObjectItemCaseSensitive(j, "crc32"));
	if (ok)
		*iteration = (long)it->valuedouble;
	cJSON_Delete(j);
	return !ok ? -EINVAL : sealed ? 0 : 1;
}

int az_rundir_metrics_commit(const char *dir, uint32_t keep, const char *line, char *err,
			     size_t errlen)
{
	char path[AZ_RUNDIR_PATH_MAX];
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_METRICS);
	char *old = NULL;
	size_t len = 0;
	if (az_read_file(path, &old, &len) < 0)
		old = NULL;
	size_t cap = len + (line ? strlen(line) : 0) + 2;
	char *out = malloc(cap);
	if (!out) {
		free(old);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	size_t n = 0;
	long lineno = 0;
	for (char *s = old, *nl; s && *s; s = nl ? nl + 1 : s + strlen(s)) {
		nl = strchr(s, '\n');
		lineno++;
		size_t l = nl ? (size_t)(nl - s) : strlen(s);
		long it = -1;
		int rc = az_rundir_metrics_line(s, l, &it);
		if (rc < 0) {
			snprintf(err, errlen, "%s: line %ld is %s; nothing written (the damaged "
				 "lines must be set aside first)", path, lineno,
				 rc == -EBADMSG ? "damaged (its crc32 does not match)"
				 : "not a metrics object");
			free(out);
			free(old);
			return -EINVAL;
		}
		if (it <= (long)keep) {
			memcpy(out + n, s, l);
			n += l;
			out[n++] = '\n';
		}
	}
	if (line) {
		size_t l = strlen(line);
		char *nout = realloc(out, n + l + AZ_RUNDIR_SEAL_LEN + 1);
		if (!nout) {
			free(out);
			free(old);
			snprintf(err, errlen, "%s: out of memory", path);
			return -ENOMEM;
		}
		out = nout;
		memcpy(out + n, line, l + 1);
		int sl = az_rundir_seal(out + n, l + AZ_RUNDIR_SEAL_LEN + 1);
		AZ_ASSERT(sl > 0);
		n += (size_t)sl;
	}
	int rc = az_write_file_atomic(path, out, n, err, errlen);
	free(out);
	free(old);
	return rc;
}

void az_rundir_progress_write(const char *dir, const struct az_rundir_progress *p)
{
	char path[AZ_RUNDIR_PATH_MAX], text[512];
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_PROGRESS);
	snprintf(text, sizeof(text),
		 "{\"pid\": %ld, \"iteration\": %u, \"iterations\": %u, \"phase\": \"%s\", "
		 "\"phase_started\": %.0f, \"done\": %llu, \"total\": %llu, "
		 "\"evals_per_s\": %.1f, \"updated\": %ld}",
		 p->pid, p->iteration, p->iterations, p->phase, p->phase_started,
		 (unsigned long long)p->done, (unsigned long long)p->total, p->evals_per_s,
		 (long)time(NULL));
	int len = az_rundir_seal(text, sizeof(text));
	if (len > 0)
		az_write_file_replace(path, text, (size_t)len);
}

/* Why mkdir of p failed with rc, in words: names the deepest existing ancestor of p and what
 * is wrong with it (not a directory; not writable; a file system that takes no new directories,
 * such as /proc, where mkdir reports ENOENT for a parent that exists). */
static void mkdir_failure(const char *p, int rc, char *err, size_t errlen)
{
	char a[AZ_RUNDIR_PATH_MAX];
	struct stat st;
	snprintf(a, sizeof(a), "%s", p);
	while (stat(a, &st) < 0) {
		char *s = strrchr(a, '/');
		if (!s || s == a) {
			snprintf(a, sizeof(a), "%s", s ? "/" : ".");
			if (stat(a, &st) < 0)
				st.st_mode = S_IFDIR;
			break;
		}
		*s = 0;
	}
	if (!S_ISDIR(st.st_mode))
		snprintf(err, errlen, "cannot create %s: %s is not a directory", p, a);
	else if (rc == -EACCES || rc == -EPERM || rc == -EROFS)
		snprintf(err, errlen, "cannot create %s: no permission to write in %s (%s)", p, a,
			 strerror(-rc));
	else if (rc == -ENOENT)
		snprintf(err, errlen, "cannot create %s: %s does not take new directories (a "
			 "special file system?); choose a directory on an ordinary disk", p, a);
	else
		snprintf(err, errlen, "cannot create %s: %s", p, strerror(-rc));
}

int az_rundir_create_locked(const char *dir, char *err, size_t errlen)
{
	char p[AZ_RUNDIR_PATH_MAX];
	static const enum az_rundir_file subdirs[] = {AZ_RUNDIR_CHECKPOINTS, AZ_RUNDIR_REPLAY};
	snprintf(p, sizeof(p), "%s", dir);
	int rc = az_mkdir_p(p);
	for (size_t i = 0; rc == 0 && i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		az_rundir_path(p, sizeof(p), dir, subdirs[i]);
		rc = az_mkdir_p(p);
	}
	if (rc < 0) {
		mkdir_failure(p, rc, err, errlen);
		return rc;
	}
	/* An flock held for the life of this process (and its children, which share the open
	 * file) and released by the kernel however it ends. The fd is kept open on purpose. */
	az_rundir_path(p, sizeof(p), dir, AZ_RUNDIR_LOCK);
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s for writing (%s); a run needs a writable "
			 "directory", p, strerror(-rc));
		return rc;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char owner[32] = "?";
		ssize_t n = pread(fd, owner, sizeof(owner) - 1, 0);
		if (n > 0)
			owner[strcspn(owner, "\n")] = 0;
		snprintf(err, errlen, "%s is in use by another azrun (pid %s); wait for it or stop "
			 "it first", dir, n > 0 ? owner : "?");
		close(fd);
		return -EBUSY;
	}
	char pid[32];
	int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len)
		snprintf(err, errlen, "note: cannot record the pid in %s", p);
	else
		err[0] = 0;
	return 0;
}

int az_rundir_lock_holder(const char *dir, long *pid)
{
	char p[AZ_RUNDIR_PATH_MAX], text[32];

	*pid = 0;
	az_rundir_path(p, sizeof(p), dir, AZ_RUNDIR_LOCK);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		close(fd); /* drops the shared lock: nobody held it */
		return 0;
	}
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	if (n > 0) {
		text[n] = 0;
		*pid = strtol(text, NULL, 10);
	}
	close(fd);
	return 1;
}

/* Remove the temporary files in dir/sub (sub NULL: dir itself). */
static void drop_temps(const char *dir, const char *sub, void (*say)(void *, const char *),
		       void *ctx)
{
	char d[AZ_RUNDIR_PATH_MAX], p[AZ_RUNDIR_PATH_MAX + 300], msg[AZ_RUNDIR_PATH_MAX + 400];
	snprintf(d, sizeof(d), sub ? "%s/%s" : "%s", dir, sub);
	DIR *dd = opendir(d);
	for (struct dirent *e; dd && (e = readdir(dd)) != NULL;) {
		if (!az_rundir_is_temp(e->d_name))
			continue;
		snprintf(p, sizeof(p), "%s/%s", d, e->d_name);
		if (unlink(p) == 0) {
			snprintf(msg, sizeof(msg), "removed %s (a write cut short)", p);
			say(ctx, msg);
		}
	}
	if (dd)
		closedir(dd);
}

void az_rundir_drop_temps(const char *dir, void (*say)(void *ctx, const char *msg), void *ctx)
{
	drop_temps(dir, NULL, say, ctx);
	drop_temps(dir, names[AZ_RUNDIR_CHECKPOINTS], say, ctx);
	drop_temps(dir, names[AZ_RUNDIR_REPLAY], say, ctx);
	drop_temps(dir, AZ_TB_DIR, say, ctx);
}

int az_rundir_repair(const char *dir, const struct az_rundir_check *t,
		     void (*say)(void *ctx, const char *msg), void *ctx, char *err, size_t errlen)
{
	char p[AZ_RUNDIR_PATH_MAX], q[AZ_RUNDIR_PATH_MAX], msg[3 * AZ_RUNDIR_PATH_MAX];
	if (t->problems || t->completed < 0) {
		snprintf(err, errlen, "%s: damaged (its check found problems); not repaired", dir);
		return -EINVAL;
	}
	uint32_t done = (uint32_t)t->completed;
	az_rundir_drop_temps(dir, say, ctx);
	/* Checkpoints of iterations that never committed (the next one would overwrite them,
	 * but a shorter --iterations would leave them behind). */
	for (uint32_t it = done + 1;; it++) {
		az_rundir_checkpoint_path(p, sizeof(p), dir, it);
		if (unlink(p) < 0)
			break;
		snprintf(msg, sizeof(msg), "rolled back %s (iteration %u never committed)", p, it);
		say(ctx, msg);
	}
	long dropped = az_rundir_drop_replay_after(dir, done);
	if (dropped > 0) {
		snprintf(msg, sizeof(msg), "rolled back %ld replay files of iterations after %u",
			 dropped, done);
		say(ctx, msg);
	}
	if (t->metrics_lines > t->completed) {
		int rc = az_rundir_metrics_commit(dir, done, NULL, err, errlen);
		if (rc < 0)
			return rc;
		snprintf(msg, sizeof(msg), "rolled back %ld metrics lines of iterations after %u",
			 t->metrics_lines - t->completed, done);
		say(ctx, msg);
	}
	if (t->best_stale) {
		az_rundir_checkpoint_path(p, sizeof(p), dir, t->best_iteration);
		az_rundir_path(q, sizeof(q), dir, AZ_RUNDIR_BEST);
		int rc = az_copy_file_atomic(p, q, err, errlen);
		if (rc < 0)
			return rc;
		snprintf(msg, sizeof(msg), "completed the promotion: %s is now %s (iteration %u, "
			 "as state.json says)", q, p, t->best_iteration);
		say(ctx, msg);
	}
	return 0;
}
