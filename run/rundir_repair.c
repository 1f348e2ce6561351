/* SPDX-License-Identifier: MIT */
/* `azrun repair` (run/rundir.h: az_rundir_salvage): set aside what resuming does not need and
 * cannot trust, rebuild what can be rebuilt from the run's other files, delete nothing. */
#include "run/rundir.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "base/util.h"
#include "games/game.h"
#include "run/rundir_impl.h"
#include "train/replay.h"

#define QUARANTINE "quarantine"

void az_rundir_quarantine_path(char *buf, size_t len, const char *dir, const char *rel)
{
	snprintf(buf, len, "%s/%s/%s", dir, QUARANTINE, rel);
}

static void __attribute__((format(printf, 2, 3)))
say(struct az_rundir_salvage *s, const char *fmt, ...)
{
	char msg[3 * AZ_RUNDIR_PATH_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->say)
		s->say(s->ctx, msg);
}

/* A free name for rel under DIR/quarantine/ (rel, then rel.1, rel.2, ...), its folder made. */
static int quarantine_target(const char *dir, const char *rel, char *q, size_t len)
{
	char d[AZ_RUNDIR_PATH_MAX + 64];
	az_rundir_quarantine_path(q, len, dir, rel);
	snprintf(d, sizeof(d), "%s", q);
	char *slash = strrchr(d, '/');
	if (slash)
		*slash = 0;
	int rc = az_mkdir_p(d);
	if (rc < 0)
		return rc;
	size_t base = strlen(q);
	for (int k = 1; access(q, F_OK) == 0 && k < 1000; k++)
		snprintf(q + base, len - base, ".%d", k);
	return access(q, F_OK) == 0 ? -EEXIST : 0;
}

/* Move DIR/rel into the quarantine (rename: nothing is copied or lost). */
static int set_aside(struct az_rundir_salvage *s, const char *dir, const char *rel,
		     const char *why)
{
	char from[AZ_RUNDIR_PATH_MAX + 64], q[AZ_RUNDIR_PATH_MAX + 128];
	snprintf(from, sizeof(from), "%s/%s", dir, rel);
	int rc = quarantine_target(dir, rel, q, sizeof(q));
	if (rc == 0 && rename(from, q) < 0)
		rc = -errno;
	if (rc < 0) {
		say(s, "cannot move %s to %s/: %s", from, QUARANTINE, strerror(-rc));
		s->unrepaired++;
		return rc;
	}
	s->moved++;
	say(s, "moved %s to %s (%s)", from, q, why);
	return 0;
}

/* A copy of DIR/rel in the quarantine (the original stays, to be rewritten). */
static int keep_copy(struct az_rundir_salvage *s, const char *dir, const char *rel)
{
	char from[AZ_RUNDIR_PATH_MAX + 64], q[AZ_RUNDIR_PATH_MAX + 128], err[512];
	snprintf(from, sizeof(from), "%s/%s", dir, rel);
	int rc = quarantine_target(dir, rel, q, sizeof(q));
	if (rc == 0)
		rc = az_copy_file_atomic(from, q, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "%s", strerror(-rc));
	if (rc < 0) {
		say(s, "cannot copy %s to %s/: %s", from, QUARANTINE, err);
		s->unrepaired++;
		return rc;
	}
	say(s, "copied %s to %s (the damaged original, kept)", from, q);
	return 0;
}

/* Is the network at path of this run and iteration (-1: any)? Quietly. */
static int network_ok(const struct az_rundir_salvage *s, const char *path, long iteration,
		      const struct az_game *g)
{
	struct az_rundir_check t = {.net = s->net, .hidden = s->hidden, .blocks = s->blocks};
	return access(path, F_OK) == 0 &&
	       az_rundir_network_check(&t, path, 1, g, iteration) == 0;
}

/* The intact metrics lines of iterations 1, 2, ...: how many, and the best_iteration of the
 * last (-1 when it has none). */
static long metrics_prefix(const char *dir, long *best)
{
	char path[AZ_RUNDIR_PATH_MAX], *text = NULL;
	long n = 0;
	*best = -1;
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_METRICS);
	if (az_read_file(path, &text, NULL) < 0)
		return 0;
	for (char *p = text, *nl; *p && (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		long it = -1;
		if (az_rundir_metrics_line(p, (size_t)(nl - p), &it) < 0 || it != n + 1)
			break;
		cJSON *j = cJSON_ParseWithLength(p, (size_t)(nl - p));
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "best_iteration");
		*best = cJSON_IsNumber(b) && b->valuedouble >= 0 && b->valuedouble <= (double)it
			? (long)b->valuedouble : -1;
		cJSON_Delete(j);
		n = it;
	}
	free(text);
	return n;
}

/* A damaged or missing state.json, rebuilt from metrics.jsonl: the last of its intact lines of
 * consecutive iterations was written after that iteration's checkpoint and replay, so the
 * iteration is whole, and the line names the best network after it. A damaged one is set
 * aside first. */
static int rebuild_state(struct az_rundir_salvage *s, const char *dir, const struct az_game *g,
			 struct az_rundir_state *st)
{
	char ck[AZ_RUNDIR_PATH_MAX], err[512];
	long best = -1, n = metrics_prefix(dir, &best);
	az_rundir_checkpoint_path(ck, sizeof(ck), dir, (uint32_t)n);
	if (best < 0 || !network_ok(s, ck, n, g)) {
		say(s, "%s/state.json is damaged or missing and metrics.jsonl does not say where the "
		    "run stands (no intact line with best_iteration, or its checkpoint is damaged): "
		    "restore state.json from a backup", dir);
		s->unrepaired++;
		return -EINVAL;
	}
	char path[AZ_RUNDIR_PATH_MAX];
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_STATE);
	if (access(path, F_OK) == 0 &&
	    set_aside(s, dir, az_rundir_name(AZ_RUNDIR_STATE), "damaged") < 0)
		return -EIO;
	st->completed = (uint32_t)n;
	st->best_iteration = (uint32_t)best;
	int rc = az_rundir_state_save(dir, st, err, sizeof(err));
	if (rc < 0) {
		say(s, "%s", err);
		s->unrepaired++;
		return rc;
	}
	s->rebuilt++;
	say(s, "rebuilt %s/state.json from metrics.jsonl: %u iterations completed, best from "
	    "iteration %u", dir, st->completed, st->best_iteration);
	return 0;
}

/* metrics.jsonl against state.json's completed iterations 1..N: line k must be iteration k's
 * intact object. An iteration whose line is damaged, torn, misplaced or missing (a cut or deleted
 * file) gets a sealed stub {"iteration": k, "metrics_lost": ...}: its figures are gone (status
 * and report show a gap) but the run verifies and resumes, as azrun only appends to intact
 * lines. Intact lines are kept, in iteration order; lines after N (an iteration that never
 * committed) are kept when intact, dropped when not. The original goes to the quarantine. */
static void salvage_metrics(struct az_rundir_salvage *s, const char *dir,
			    const struct az_rundir_state *st)
{
	char path[AZ_RUNDIR_PATH_MAX], err[512], stub[128];
	const char *rel = az_rundir_name(AZ_RUNDIR_METRICS);
	char *text = NULL, *out = NULL;
	size_t len = 0, n = 0, cap;
	uint32_t N = st->completed, lost = 0;
	long dropped = 0, lineno = 0;
	const char **line = calloc((size_t)N + 1, sizeof(*line));
	size_t *llen = calloc((size_t)N + 1, sizeof(*llen));
	int have = 0;

	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_METRICS);
	have = az_read_file(path, &text, &len) == 0;
	cap = len + ((size_t)N + 1) * sizeof(stub) + 1;
	out = malloc(cap);
	if (!line || !llen || !out) {
		say(s, "%s: out of memory", path);
		s->unrepaired++;
		goto done;
	}
	for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : p + strlen(p)) {
		size_t l;
		long it = -1;

		nl = strchr(p, '\n');
		l = nl ? (size_t)(nl - p) : strlen(p);
		lineno++;
		if (!nl || az_rundir_metrics_line(p, l, &it) < 0 || it < 1 ||
		    (it <= (long)N && line[it])) {
			dropped++;
			continue;
		}
		if (it <= (long)N) {
			line[it] = p;
			llen[it] = l;
			dropped += it != lineno; /* in the wrong place: rewritten */
		}
	}
	for (uint32_t k = 1; k <= N; k++) {
		if (line[k]) {
			memcpy(out + n, line[k], llen[k]);
			n += llen[k];
			out[n++] = '\n';
			continue;
		}
		snprintf(stub, sizeof(stub), "{\"iteration\": %u, \"metrics_lost\": \"its line was "
			 "damaged or missing; set aside by a repair\"}", k);
		int sl = az_rundir_seal(stub, sizeof(stub));
		AZ_ASSERT(sl > 0);
		memcpy(out + n, stub, (size_t)sl);
		n += (size_t)sl;
		lost++;
	}
	/* intact lines of an iteration after N, in their order: resume removes them */
	for (char *p = text, *nl; p && *p && (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		long it = -1;

		if (az_rundir_metrics_line(p, (size_t)(nl - p), &it) >= 0 && it > (long)N) {
			memcpy(out + n, p, (size_t)(nl - p) + 1);
			n += (size_t)(nl - p) + 1;
		}
	}
	if (!lost && !dropped)
		goto done;
	if (have && keep_copy(s, dir, rel) < 0)
		goto done;
	if (az_write_file_atomic(path, out, n, err, sizeof(err)) < 0) {
		say(s, "%s", err);
		s->unrepaired++;
		goto done;
	}
	s->rebuilt++;
	say(s, "rewrote %s: %u of %u completed iterations' lines were damaged or missing and are "
	    "stubs now (their figures are lost), %ld line%s left out or moved", path, lost, N,
	    dropped, az_plural((unsigned long)dropped));
done:
	free(line);
	free(llen);
	free(out);
	free(text);
}

/* Copy DIR/from over DIR/to (a network rebuilt from its twin), the damaged one set aside. */
static void restore_network(struct az_rundir_salvage *s, const char *dir, const char *from_rel,
			    const char *to_rel)
{
	char from[AZ_RUNDIR_PATH_MAX + 64], to[AZ_RUNDIR_PATH_MAX + 64], err[512];
	snprintf(from, sizeof(from), "%s/%s", dir, from_rel);
	snprintf(to, sizeof(to), "%s/%s", dir, to_rel);
	if (access(to, F_OK) == 0 && set_aside(s, dir, to_rel, "damaged") < 0)
		return;
	if (az_copy_file_atomic(from, to, err, sizeof(err)) < 0) {
		say(s, "%s", err);
		s->unrepaired++;
		return;
	}
	s->rebuilt++;
	say(s, "rebuilt %s as a copy of %s (the same network)", to, from);
}

/* An old iteration's checkpoint that is gone (deleted; resuming never reads it): a note in the
 * quarantine, DIR/quarantine/REL.missing, so that verify accepts its absence as it accepts a
 * checkpoint set aside. Nothing when a copy or a note is already there. */
static void note_missing(struct az_rundir_salvage *s, const char *dir, const char *rel)
{
	char q[AZ_RUNDIR_PATH_MAX + 128], text[160], err[512];
	int n;

	az_rundir_quarantine_path(q, sizeof(q), dir, rel);
	n = (int)strlen(q);
	snprintf(q + n, sizeof(q) - (size_t)n, ".missing");
	if (access(q, F_OK) == 0)
		return;
	q[n] = 0;
	if (access(q, F_OK) == 0)
		return;
	snprintf(q + n, sizeof(q) - (size_t)n, ".missing");
	n = snprintf(text, sizeof(text), "%s was missing when azrun repair ran; resuming does not "
		     "read it\n", rel);
	char d[sizeof(q)];
	snprintf(d, sizeof(d), "%s", q);
	*strrchr(d, '/') = 0; /* the quarantine's checkpoints/ folder */
	if (az_mkdir_p(d) < 0 || az_write_file_atomic(q, text, (size_t)n, err, sizeof(err)) < 0) {
		say(s, "cannot note the missing %s/%s in %s", dir, rel, q);
		s->unrepaired++;
		return;
	}
	s->rebuilt++;
	say(s, "%s/%s is missing (an old iteration's; resuming does not read it): noted in %s", dir,
	    rel, q);
}
/* checkpoints/iter-0..C and best.safetensors. */
static void salvage_networks(struct az_rundir_salvage *s, const char *dir,
			     const struct az_game *g, const struct az_rundir_state *st)
{
	char ck[AZ_RUNDIR_PATH_MAX], rel[64], best[AZ_RUNDIR_PATH_MAX];
	const char *best_rel = az_rundir_name(AZ_RUNDIR_BEST);
	az_rundir_path(best, sizeof(best), dir, AZ_RUNDIR_BEST);
	for (uint32_t k = 0; k <= st->completed; k++) {
		az_rundir_checkpoint_path(ck, sizeof(ck), dir, k);
		snprintf(rel, sizeof(rel), "checkpoints/iter-%04u.safetensors", k);
		if (access(ck, F_OK) != 0) {
			if (k == st->best_iteration && network_ok(s, best, k, g))
				restore_network(s, dir, best_rel, rel); /* its twin */
			else if (k != st->completed && k != st->best_iteration)
				note_missing(s, dir, rel);
			continue;
		}
		if (network_ok(s, ck, k, g))
			continue;
		if (k == st->best_iteration && network_ok(s, best, k, g)) {
			restore_network(s, dir, best_rel, rel);
		} else if (k == st->completed || k == st->best_iteration) {
			say(s, "%s is damaged, and resuming needs it (%s): restore it from a backup",
			    ck, k == st->completed ? "training goes on from it" : "the best network");
			s->unrepaired++;
		} else {
			set_aside(s, dir, rel, "damaged; resuming does not read it");
		}
	}
	if (!network_ok(s, best, -1, g)) {
		az_rundir_checkpoint_path(ck, sizeof(ck), dir, st->best_iteration);
		snprintf(rel, sizeof(rel), "checkpoints/iter-%04u.safetensors", st->best_iteration);
		if (network_ok(s, ck, st->best_iteration, g)) {
			restore_network(s, dir, rel, best_rel);
		} else {
			say(s, "%s is damaged or missing and so is %s: restore one from a backup", best,
			    ck);
			s->unrepaired++;
		}
	}
}

/* Replay files of committed iterations: one with damaged records or a torn tail is left holding
 * its intact whole games (the original kept in the quarantine); a file that does not read at
 * all is moved there. */
static void salvage_replay(struct az_rundir_salvage *s, const char *dir, const struct az_game *g,
			   const struct az_rundir_state *st)
{
	char rdir[AZ_RUNDIR_PATH_MAX], path[AZ_RUNDIR_PATH_MAX + 300], rel[320], err[512];
	az_rundir_path(rdir, sizeof(rdir), dir, AZ_RUNDIR_REPLAY);
	DIR *d = opendir(rdir);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		uint32_t it;
		if (!az_rundir_replay_iteration(e->d_name, &it) || it > st->completed)
			continue; /* later iterations never committed: resume rolls them back */
		snprintf(path, sizeof(path), "%s/%s", rdir, e->d_name);
		snprintf(rel, sizeof(rel), "%s/%s", az_rundir_name(AZ_RUNDIR_REPLAY), e->d_name);
		struct az_replay_buf b;
		size_t dropped = 0;
		az_replay_buf_init(&b, g->features, g->actions);
		long n = az_replay_load_file(path, &b, 0, &dropped, err, sizeof(err));
		az_replay_buf_free(&b);
		if (n < 0) {
			set_aside(s, dir, rel, "unreadable; its games leave the replay window");
		} else if (dropped && keep_copy(s, dir, rel) == 0) {
			az_replay_buf_init(&b, g->features, g->actions);
			n = az_replay_load_file(path, &b, 1, &dropped, err, sizeof(err));
			az_replay_buf_free(&b);
			s->rebuilt++;
			say(s, "kept the %ld intact whole-game records of %s (%zu bytes of damaged "
			    "games or a torn tail left out: the file cut or rewritten)", n, path,
			    dropped);
		}
	}
	if (d)
		closedir(d);
}

int az_rundir_salvage(const char *dir, const struct az_game *g, struct az_rundir_salvage *s)
{
	char path[AZ_RUNDIR_PATH_MAX], err[512], *text = NULL;
	size_t len = 0;
	struct az_rundir_state st;
	s->moved = s->rebuilt = s->unrepaired = 0;
	/* progress.json: only azrun status reads it, and the next azrun rewrites it */
	az_rundir_path(path, sizeof(path), dir, AZ_RUNDIR_PROGRESS);
	if (az_read_file(path, &text, &len) == 0 &&
	    (az_rundir_seal_check(text, len) < 0 ||
	     !az_rundir_seal_json_ok(text, len, az_rundir_seal_check(text, len))))
		set_aside(s, dir, az_rundir_name(AZ_RUNDIR_PROGRESS),
			  "damaged; the next start rewrites it");
	free(text);
	long best;
	int rc = az_rundir_state_load(dir, &st, NULL, err, sizeof(err));
	/* missing beside metrics lines: a run writes state.json before its first line */
	if (rc == -EINVAL || (rc == -ENOENT && metrics_prefix(dir, &best) > 0))
		rc = rebuild_state(s, dir, g, &st);
	if (rc < 0)
		return 0; /* missing (nothing completed, or verify says what is there) or refused */
	salvage_networks(s, dir, g, &st);
	salvage_replay(s, dir, g, &st);
	salvage_metrics(s, dir, &st);
	return 0;
}
