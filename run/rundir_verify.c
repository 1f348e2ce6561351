/* SPDX-License-Identifier: MIT */
/* Checking a run directory end to end (run/rundir.h: az_rundir_verify), the one check behind
 * `azrun verify` and `azrun --resume`: what it calls damage, resume refuses; what it calls a
 * leftover of an iteration that never committed, resume rolls back or completes
 * (az_rundir_repair in run/rundir.c). */
#include "run/rundir.h"
#include "run/rundir_impl.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "games/game.h"
#include "net/checkpoint.h"
#include "run/tbevents.h"
#include "train/replay.h"

#define MAX_ITER 999999u /* state.json's bound on "completed" */

static void __attribute__((format(printf, 3, 4)))
say(struct az_rundir_check *t, int damaged, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (damaged)
		t->problems++;
	if (t->report)
		t->report(t->ctx, damaged, msg);
}

int az_rundir_is_temp(const char *name)
{
	size_t len = strlen(name);
	return strstr(name, ".tmp.") != NULL || (len >= 4 && strcmp(name + len - 4, ".tmp") == 0);
}

/* "iter-NNNN.safetensors": 1 and N, or 0. */
static int ckpt_iteration(const char *name, uint32_t *it)
{
	unsigned a;
	char tail[32];
	if (sscanf(name, "iter-%6u%31s", &a, tail) != 2 || strcmp(tail, ".safetensors") != 0)
		return 0;
	*it = a;
	return 1;
}

/* run/rundir_impl.h. The iteration is its file name's (-1 for best.safetensors); a network that
 * never committed is reported as a note. */
int az_rundir_network_check(struct az_rundir_check *t, const char *path, int damage,
			    const struct az_game *g, long iteration)
{
	struct az_model *m;
	char err[512];
	if (az_ckpt_load(path, &m, err, sizeof(err)) < 0) {
		say(t, damage, "%s", err);
		return -1;
	}
	const struct az_arch *a = &m->arch;
	int rc = 0;
	if (strcmp(m->game, g->name) != 0 || a->inputs != g->features || a->actions != g->actions) {
		say(t, damage, "%s: a %s network (%u inputs, %u actions), but the run plays %s", path,
		    m->game, a->inputs, a->actions, g->name);
		rc = -1;
	} else if (t->hidden && (a->kind != t->net || a->hidden != t->hidden ||
				 a->blocks != t->blocks)) {
		/* an MLP as "HxR" (as the checkpoint's arch), a ResNet as "resnet:FxR" */
		const char *kind[2] = {a->kind ? az_net_kind_name(a->kind) : "",
				       t->net ? az_net_kind_name(t->net) : ""};
		say(t, damage, "%s: architecture %s%s%ux%u, but run.json says %s%s%ux%u", path,
		    kind[0], *kind[0] ? ":" : "", a->hidden, a->blocks, kind[1],
		    *kind[1] ? ":" : "", t->hidden, t->blocks);
		rc = -1;
	} else if (iteration >= 0 && m->iteration != (uint32_t)iteration) {
		/* a checkpoint copied over another's name, or a best of another iteration */
		say(t, damage, "%s: the network of iteration %u, but it stands for iteration %ld "
		    "(copied from another file?)", path, m->iteration, iteration);
		rc = -1;
	}
	az_model_destroy(m);
	return rc;
}

/* state.json: parses. Sets t->completed / t->best_iteration, or t->state_missing. */
static void check_state(const char *out, struct az_rundir_check *t)
{
	char path[AZ_RUNDIR_PATH_MAX], err[512];
	struct az_rundir_state st;
	az_rundir_path(path, sizeof(path), out, AZ_RUNDIR_STATE);
	int legacy = 0;
	int rc = az_rundir_state_load(out, &st, &legacy, err, sizeof(err));
	t->completed = -1;
	if (rc == -ENOENT) {
		t->state_missing = 1;
	} else if (rc < 0) {
		t->state_damaged = 1;
		say(t, 1, "%s", err);
	} else {
		t->completed = st.completed;
		t->best_iteration = st.best_iteration;
		if (legacy)
			say(t, 0, "%s: no crc32 (written by an older azrun): accepted as legacy; the "
			    "next commit adds it", path);
	}
}

/* progress.json: only azrun status reads it and the next azrun rewrites it, so damage to it is
 * a note (status then shows the completed state), not a reason to refuse a resume. */
static void check_progress(const char *out, struct az_rundir_check *t)
{
	char path[AZ_RUNDIR_PATH_MAX], *text = NULL;
	size_t len = 0;
	az_rundir_path(path, sizeof(path), out, AZ_RUNDIR_PROGRESS);
	if (az_read_file(path, &text, &len) < 0)
		return;
	int sealed = az_rundir_seal_check(text, len);
	if (sealed < 0 || !az_rundir_seal_json_ok(text, len, sealed))
		say(t, 0, "%s: damaged (its crc32 does not match); status ignores it, the run's "
		    "next start rewrites it, a repair sets it aside", path);
	free(text);
}

static void note_temp(struct az_rundir_check *t, const char *path)
{
	t->repairs++;
	if (t->live)
		say(t, 0, "%s: the temporary file of a write in progress", path);
	else
		say(t, 0, "%s: the temporary file of a write cut short; resume removes it", path);
}

/* The next file of d, the directory at dir, whose name parse reads as an iteration's: its path
 * into path[0..n) and its iteration into *it. Temporary files met on the way are noted
 * (note_temp); other names are passed over. parse NULL: only the temporary files are noted.
 * Returns 1, or 0 at the end of d. */
static int next_iteration_file(DIR *d, const char *dir, int (*parse)(const char *, uint32_t *),
			       char *path, size_t n, uint32_t *it, struct az_rundir_check *t)
{
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (az_rundir_is_temp(e->d_name)) {
			snprintf(path, n, "%s/%s", dir, e->d_name);
			note_temp(t, path);
		} else if (parse && parse(e->d_name, it)) {
			snprintf(path, n, "%s/%s", dir, e->d_name);
			return 1;
		}
	}
	return 0;
}

/* Did iteration it commit (or is there no state.json to say)? */
static int committed_iteration(const struct az_rundir_check *t, uint32_t it)
{
	return t->completed < 0 || (long)it <= t->completed;
}

/* checkpoints/: every committed iteration's network is there, loads and is of this run; later
 * ones never committed. Returns the highest iteration found (0: none). */
static uint32_t check_checkpoints(const char *out, const struct az_game *g,
				  struct az_rundir_check *t)
{
	char dir[AZ_RUNDIR_PATH_MAX], path[AZ_RUNDIR_PATH_MAX + 300];
	az_rundir_path(dir, sizeof(dir), out, AZ_RUNDIR_CHECKPOINTS);
	long want = t->completed >= 0 ? t->completed : -1;
	unsigned char *seen = calloc((size_t)(want + 1) + 1, 1);
	uint32_t top = 0;
	DIR *d = opendir(dir);
	if (!d || !seen) {
		say(t, 1, "%s: cannot open (%s)", dir, seen ? strerror(errno) : "out of memory");
		if (d)
			closedir(d);
		free(seen);
		return 0;
	}
	uint32_t it;
	while (next_iteration_file(d, dir, ckpt_iteration, path, sizeof(path), &it, t)) {
		t->checkpoints++;
		int committed = committed_iteration(t, it);
		if (!committed) {
			t->repairs++;
			if (t->live)
				say(t, 0, "%s: iteration %u, in progress (state.json says %ld)", path,
				    it, t->completed);
			else
				say(t, 0, "%s: iteration %u never committed (state.json says %ld); "
				    "resume removes it", path, it, t->completed);
		}
		if (az_rundir_network_check(t, path, committed, g, it) == 0 && committed) {
			if (want >= 0)
				seen[it] = 1;
			if (it > top)
				top = it;
		}
	}
	closedir(d);
	for (long k = 0; k <= want; k++)
		if (!seen[k]) {
			char ck[AZ_RUNDIR_PATH_MAX];
			az_rundir_checkpoint_path(ck, sizeof(ck), out, (uint32_t)k);
			char q[AZ_RUNDIR_PATH_MAX + 64], rel[64];
			snprintf(rel, sizeof(rel), "checkpoints/iter-%04ld.safetensors", k);
			az_rundir_quarantine_path(q, sizeof(q), out, rel);
			if (access(ck, F_OK) == 0)
				continue; /* present but damaged: reported above */
			char qm[sizeof(q) + 8];
			snprintf(qm, sizeof(qm), "%s.missing", q);
			/* azrun repair sets aside damaged checkpoints that resuming never reads, and
			 * notes missing ones */
			if (k != t->completed && k != (long)t->best_iteration && access(q, F_OK) == 0)
				say(t, 0, "%s: set aside in %s by a repair (damaged; resume does "
				    "not read it)", ck, q);
			else if (k != t->completed && k != (long)t->best_iteration &&
				 access(qm, F_OK) == 0)
				say(t, 0, "%s: missing, noted in %s by a repair (resume does not read "
				    "it)", ck, qm);
			else
				say(t, 1, "%s: missing, but state.json says iteration %ld is complete",
				    ck, k);
		}
	free(seen);
	return top;
}

/* best.safetensors: a network of this run, the same bytes as checkpoints/iter-B (B = state's
 * best_iteration); other bytes are a promotion cut short, which resume completes. */
static void check_best(const char *out, const struct az_game *g, struct az_rundir_check *t)
{
	char best[AZ_RUNDIR_PATH_MAX], ck[AZ_RUNDIR_PATH_MAX];
	az_rundir_path(best, sizeof(best), out, AZ_RUNDIR_BEST);
	if (access(best, F_OK) != 0) {
		if (t->completed >= 0)
			say(t, 1, "%s: missing (state.json says it is iteration %u's network)", best,
			    t->best_iteration);
		return;
	}
	t->checkpoints++;
	/* Its iteration is not checked: after a promotion cut short it is the previous best's,
	 * which resume replaces (the bytes are compared with iter-B's below). */
	if (az_rundir_network_check(t, best, 1, g, -1) < 0 || t->completed < 0)
		return;
	az_rundir_checkpoint_path(ck, sizeof(ck), out, t->best_iteration);
	char *a = NULL, *b = NULL;
	size_t la = 0, lb = 0;
	if (az_read_file(ck, &b, &lb) < 0) {
		free(b);
		return; /* reported by check_checkpoints */
	}
	if (az_read_file(best, &a, &la) == 0 && (la != lb || memcmp(a, b, la) != 0)) {
		t->best_stale = 1;
		t->repairs++;
		say(t, 0, t->live ? "%s is not %s (a promotion in progress)"
				  : "%s is not %s (a promotion cut short); resume copies it there",
		    best, ck);
	}
	free(a);
	free(b);
}

/* The other files at the top and in tb/ (a view of metrics.jsonl, may be absent): only
 * temporary files are reported. */
static void check_temps(const char *out, const char *sub, struct az_rundir_check *t)
{
	char dir[AZ_RUNDIR_PATH_MAX], path[AZ_RUNDIR_PATH_MAX + 300];
	snprintf(dir, sizeof(dir), sub ? "%s/%s" : "%s", out, sub);
	DIR *d = opendir(dir);
	if (!d) {
		if (!sub || errno != ENOENT)
			say(t, 1, "%s: cannot open (%s)", dir, strerror(errno));
		return;
	}
	next_iteration_file(d, dir, NULL, path, sizeof(path), NULL, t);
	closedir(d);
}

static void check_replay(const char *out, const struct az_game *g, struct az_rundir_check *t)
{
	char dir[AZ_RUNDIR_PATH_MAX], path[AZ_RUNDIR_PATH_MAX + 300], err[512];
	az_rundir_path(dir, sizeof(dir), out, AZ_RUNDIR_REPLAY);
	DIR *d = opendir(dir);
	if (!d) {
		say(t, 1, "%s: cannot open (%s); the replay window of the next iterations is lost",
		    dir, strerror(errno));
		return;
	}
	for (uint32_t it = 0;
	     next_iteration_file(d, dir, az_rundir_replay_iteration, path, sizeof(path), &it, t);) {
		int committed = committed_iteration(t, it);
		struct az_replay_buf b;
		size_t dropped = 0;
		az_replay_buf_init(&b, g->features, g->actions);
		long n = az_replay_load_file(path, &b, 0, &dropped, err, sizeof(err));
		az_replay_buf_free(&b);
		t->replay_files++;
		if (!committed) {
			t->repairs++;
			say(t, 0, t->live ? "%s: of iteration %u, in progress"
					  : "%s: of iteration %u, which never committed; resume removes it",
			    path, it);
			continue;
		}
		if (n < 0) {
			say(t, 1, "%s", err);
			continue;
		}
		t->records += n;
		t->dropped += dropped;
		/* azrun cuts a dead worker's torn tail at the end of the phase, so every record
		 * of a completed iteration's file must load. */
		if (dropped)
			say(t, 1, "%s: damaged: %zu bytes do not load (the games of records that fail "
				  "their checksums, or a torn tail); its other %ld records load",
			    path, dropped, n);
	}
	closedir(d);
}

/* metrics.jsonl: line k is the object of iteration k, for k = 1..completed; lines after those
 * belong to an iteration that never committed. Each damaged line is named once. Returns the
 * number of lines of consecutive iterations from 1 (the evidence of completed iterations when
 * state.json is missing). */
static long check_metrics(const char *out, struct az_rundir_check *t)
{
	char path[AZ_RUNDIR_PATH_MAX], *text = NULL;
	az_rundir_path(path, sizeof(path), out, AZ_RUNDIR_METRICS);
	int rc = az_read_file(path, &text, NULL);
	if (rc < 0) {
		if (t->completed > 0 || rc != -ENOENT)
			say(t, 1, "%s: %s, but state.json says %ld iterations are complete", path,
			    strerror(-rc), t->completed);
		return 0;
	}
	long lineno = 0, next = 1; /* the iteration the next good line should hold */
	int bad = 0;
	for (char *s = text, *nl; *s; s = nl ? nl + 1 : s + strlen(s)) {
		nl = strchr(s, '\n');
		size_t l = nl ? (size_t)(nl - s) : strlen(s);
		lineno++;
		t->metrics_lines++;
		long v = -1;
		int lrc = az_rundir_metrics_line(s, l, &v);
		if (lrc == 1)
			t->metrics_legacy++;
		if (lrc == -EBADMSG) {
			say(t, 1, "%s: line %ld is damaged (its crc32 does not match: a flipped bit or "
			    "an edit); restore the file, or let a repair put a stub in its place "
			    "(that iteration's figures are lost)", path, lineno);
			bad = 1;
			next++;
			continue;
		}
		if (lrc < 0)
			v = -1;
		if (!nl)
			say(t, 1, "%s: line %ld is cut short (no newline)", path, lineno);
		else if (v < 0)
			say(t, 1, "%s: line %ld is not a metrics object (torn or garbage)", path,
			    lineno);
		else if (v != next)
			say(t, 1, "%s: line %ld holds iteration %ld where iteration %ld belongs",
			    path, lineno, v, next);
		else if (t->completed >= 0 && next > t->completed) {
			t->repairs++;
			say(t, 0, t->live ? "%s: line %ld is of iteration %ld, in progress"
					  : "%s: line %ld is of iteration %ld, which never committed; "
					    "resume removes it", path, lineno, next);
			next++;
			continue;
		} else {
			next++;
			continue;
		}
		bad = 1;
		next++; /* the damaged line stands for the iteration it should hold */
	}
	free(text);
	if (t->metrics_legacy)
		say(t, 0, "%s: %ld line%s without a crc32 (written by an older azrun): accepted as "
		    "legacy", path, t->metrics_legacy, t->metrics_legacy == 1 ? "" : "s");
	if (t->completed >= 0 && next - 1 < t->completed && !bad) {
		char has[64];

		if (next - 1 == 0)
			snprintf(has, sizeof(has), "no iteration's line");
		else if (next - 1 == 1)
			snprintf(has, sizeof(has), "the line of iteration 1 only");
		else
			snprintf(has, sizeof(has), "the lines of iterations 1-%ld only", next - 1);
		say(t, 1, "%s: has %s, but state.json says %ld %s complete", path, has,
		    t->completed, t->completed == 1 ? "is" : "are");
	}
	return bad ? 0 : next - 1;
}

int az_rundir_verify(const char *out, const struct az_game *g, struct az_rundir_check *t)
{
	char path[AZ_RUNDIR_PATH_MAX];
	check_state(out, t);
	check_progress(out, t);
	check_temps(out, NULL, t);
	check_temps(out, AZ_TB_DIR, t);
	uint32_t top = check_checkpoints(out, g, t);
	check_best(out, g, t);
	check_replay(out, g, t);
	long lines = check_metrics(out, t);
	if (t->state_missing) {
		az_rundir_path(path, sizeof(path), out, AZ_RUNDIR_STATE);
		long done = lines > (long)top ? lines : (long)top;
		if (done > 0)
			say(t, 1, "%s: missing, but the directory holds completed iterations (up to "
			    "%ld: checkpoints, metrics lines); restore it, or resume would overwrite "
			    "them", path, done);
		else
			say(t, 0, "%s: missing; no iteration completed, so resume starts the run over",
			    path);
	}
	return t->problems ? 1 : 0;
}
