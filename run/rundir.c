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

#include "base/util.h"

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

void az_rundir_drop_replay_after(const char *dir, uint32_t completed)
{
	char rdir[AZ_RUNDIR_PATH_MAX], p[AZ_RUNDIR_PATH_MAX + 300];
	az_rundir_path(rdir, sizeof(rdir), dir, AZ_RUNDIR_REPLAY);
	DIR *d = opendir(rdir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		unsigned a, w;
		/* Any file that names a later iteration, torn ".tmp" leftovers included. */
		if (sscanf(e->d_name, "iter-%4u-w%2u", &a, &w) == 2 && a > completed) {
			snprintf(p, sizeof(p), "%s/%s", rdir, e->d_name);
			unlink(p);
		}
	}
	if (d)
		closedir(d);
}

int az_rundir_state_save(const char *dir, const struct az_rundir_state *st, char *err,
			 size_t errlen)
{
	char path[AZ_RUNDIR_PATH_MAX], text[256];
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_STATE);
	snprintf(text, sizeof(text), "{\"completed\": %u, \"best_iteration\": %u}\n", st->completed,
		 st->best_iteration);
	return az_write_file_atomic(path, text, strlen(text), err, errlen);
}

int az_rundir_state_load(const char *dir, struct az_rundir_state *st, char *err, size_t errlen)
{
	char path[AZ_RUNDIR_PATH_MAX], *text = NULL;
	memset(st, 0, sizeof(*st));
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_STATE);
	int rc = az_read_file(path, &text, NULL);
	if (rc == -ENOENT)
		return -ENOENT;
	if (rc < 0) {
		snprintf(err, errlen, "%s: cannot read (%s)", path, strerror(-rc));
		return -EINVAL;
	}
	cJSON *j = cJSON_Parse(text);
	free(text);
	cJSON *c = j ? cJSON_GetObjectItem(j, "completed") : NULL;
	cJSON *b = j ? cJSON_GetObjectItem(j, "best_iteration") : NULL;
	int ok = cJSON_IsNumber(c) && cJSON_IsNumber(b) && c->valuedouble >= 0 &&
		 c->valuedouble < 1e6 && b->valuedouble >= 0 && b->valuedouble <= c->valuedouble;
	if (ok) {
		st->completed = (uint32_t)c->valuedouble;
		st->best_iteration = (uint32_t)b->valuedouble;
	}
	cJSON_Delete(j);
	if (!ok) {
		snprintf(err, errlen, "%s is damaged (not a RingZero state file); restore it or start "
			 "a new run", path);
		return -EINVAL;
	}
	return 0;
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
	for (char *s = old, *nl; s && *s; s = nl ? nl + 1 : s + strlen(s)) {
		nl = strchr(s, '\n');
		size_t l = nl ? (size_t)(nl - s) : strlen(s);
		cJSON *j = cJSON_ParseWithLength(s, l);
		cJSON *itv = j ? cJSON_GetObjectItem(j, "iteration") : NULL;
		if (cJSON_IsNumber(itv) && itv->valuedouble <= keep) {
			memcpy(out + n, s, l);
			n += l;
			out[n++] = '\n';
		}
		cJSON_Delete(j);
	}
	if (line)
		n += (size_t)sprintf(out + n, "%s\n", line);
	int rc = az_write_file_atomic(path, out, n, err, errlen);
	free(out);
	free(old);
	return rc;
}

void az_rundir_progress_write(const char *dir, const struct az_rundir_progress *p)
{
	char path[AZ_RUNDIR_PATH_MAX], text[512], err[256];
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_PROGRESS);
	snprintf(text, sizeof(text),
		 "{\"pid\": %ld, \"iteration\": %u, \"iterations\": %u, \"phase\": \"%s\", "
		 "\"phase_started\": %.0f, \"done\": %llu, \"total\": %llu, "
		 "\"evals_per_s\": %.1f, \"updated\": %ld}\n",
		 p->pid, p->iteration, p->iterations, p->phase, p->phase_started,
		 (unsigned long long)p->done, (unsigned long long)p->total, p->evals_per_s,
		 (long)time(NULL));
	az_write_file_atomic(path, text, strlen(text), err, sizeof(err));
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
		snprintf(err, errlen, "--out: cannot create %s: %s is not a directory", p, a);
	else if (rc == -EACCES || rc == -EPERM || rc == -EROFS)
		snprintf(err, errlen, "--out: cannot create %s: no permission to write in %s (%s)", p,
			 a, strerror(-rc));
	else if (rc == -ENOENT)
		snprintf(err, errlen, "--out: cannot create %s: %s does not take new directories "
			 "(a special file system?); choose a directory on an ordinary disk", p, a);
	else
		snprintf(err, errlen, "--out: cannot create %s: %s", p, strerror(-rc));
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
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char owner[32] = "?";
		ssize_t n = fd >= 0 ? pread(fd, owner, sizeof(owner) - 1, 0) : -1;
		if (n > 0)
			owner[strcspn(owner, "\n")] = 0;
		snprintf(err, errlen, "%s is in use by another azrun (pid %s); wait for it or stop "
			 "it first", dir, n > 0 ? owner : "?");
		if (fd >= 0)
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
