/* SPDX-License-Identifier: MIT */
/* azbench ring: sweep ring round trips (producers x capacity x slot size x batch x spin|futex)
 * against pipes, Unix sockets and POSIX message queues, stream 512-byte requests through one ring
 * against a plain cross-core memcpy; derive a ring capacity, batch and deadline from them, and
 * recommend those only when the real pipeline runs faster with them than with azrun's defaults
 * by more than the run-to-run noise (tools/bench/pipeline_run.c). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "tools/bench/bench.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/bench_opts.h"
#include "tools/bench/pipeline_impl.h"
#include "tools/bench/ring_bench_impl.h"
#include "help_text.h" /* generated from tools/help/ */

#define LIST_MAX AZ_BENCH_LIST_MAX
#define RING_SECONDS "10" /* --seconds, as its option table shows it */
#define CAPACITY_MAX 1048576 /* ring slots: 2^20, a bound on the memory a configuration maps */
#define SLOT_MAX 65536     /* bytes per request */
#define MIN_SLICE_S 0.01    /* shortest measurement of one configuration */
#define RING_OVERHEAD_S 0.003    /* first guess of the fork/setup/drain time of one configuration */
#define STREAM_BYTES 512u   /* the request size of the sustained-throughput measurement */
#define VS_MIN_MEASURE_S 0.25 /* shortest measurement of a pipeline run against the defaults */

static const char *const transport_name[RB_NTRANSPORTS] = {
	[RB_RING] = "ring",     [RB_PIPE] = "pipe",     [RB_SOCKET] = "socket",
	[RB_MQ] = "mq",         [RB_STREAM] = "stream", [RB_MEMCPY] = "memcpy",
};
static const char *const wait_name[] = { [RB_SPIN] = "spin", [RB_FUTEX] = "futex",
					 [RB_BLOCK] = "block" };
static const char *const place_name[] = { [RB_SAME] = "same", [RB_CROSS] = "cross",
					  [RB_ANY] = "any" };

/* Words of a list option ("spin,futex"), each as its index in the option's names. */
struct word_list {
	int v[RB_NTRANSPORTS];
	int n;
};

struct sweep {
	struct az_bench_opts o;
	struct az_bench_list producers, capacities, slots, batches;
	struct word_list waits;  /* RB_SPIN / RB_FUTEX */
	struct word_list places; /* enum rb_place */
	int transport_on[RB_NTRANSPORTS];
	int cpus[RB_MAX_CPUS], ncpus;
	struct rb_cfg *cfgs;
	uint32_t ncfgs;
	int tty; /* stderr is a terminal: progress redrawn on one line */
	uint32_t default_runs; /* pipeline runs each of the candidate and azrun's defaults */
	uint64_t start_ns;     /* the sweep's start: --seconds counts from here */
	double sweep_seconds;  /* --seconds less what is kept for the pipeline runs */
	const char *game;      /* the game those runs play */
};

/* ---- options ---- */

/* Parse comma-separated words, each one of names[0..nnames), into l as their indices.
 * Returns 0 or -EINVAL (an unknown word, more than max of them, none). */
static int parse_words(const char *v, const char *const *names, int nnames, int max,
		       struct word_list *l)
{
	char copy[256], *save = NULL, *w;

	if (strlen(v) >= sizeof(copy))
		return -EINVAL;
	snprintf(copy, sizeof(copy), "%s", v);
	l->n = 0;
	for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < nnames && (!names[k] || strcmp(names[k], w) != 0); k++)
			;
		if (k == nnames || l->n >= max)
			return -EINVAL;
		l->v[l->n++] = k;
	}
	return l->n ? 0 : -EINVAL;
}

/* AZ_OPT_PARSE parsers of the sweep's lists (tools/options.h). */
AZ_BENCH_LIST_PARSER(parse_producers, LIST_MAX, 1, RB_MAX_PRODUCERS)
AZ_BENCH_LIST_PARSER(parse_batches, LIST_MAX, 1, AZ_BENCH_BATCH_MAX)

static int parse_capacities(const char *v, void *field)
{
	struct az_bench_list *l = field;
	int rc = az_bench_list_parse(v, l, LIST_MAX, 2, CAPACITY_MAX);

	for (int i = 0; rc == 0 && i < l->n; i++)
		if (l->v[i] & (l->v[i] - 1))
			rc = -EINVAL; /* the ring indexes slots with capacity - 1 */
	return rc;
}

static int parse_slots(const char *v, void *field)
{
	struct az_bench_list *l = field;
	int rc = az_bench_list_parse(v, l, LIST_MAX, AZ_CACHELINE, SLOT_MAX);

	for (int i = 0; rc == 0 && i < l->n; i++)
		if (l->v[i] % AZ_CACHELINE)
			rc = -EINVAL; /* slots are whole cache lines (shm/ring.h) */
	return rc;
}

static int parse_waits(const char *v, void *field)
{
	return parse_words(v, wait_name, 2, 2, field);
}

static int parse_placement(const char *v, void *field)
{
	return parse_words(v, place_name, 3, 3, field);
}

/* --transports into the sweep's transport_on[]: stream brings its memcpy baseline. */
static int parse_transports(const char *v, void *field)
{
	int *on = field;
	struct word_list l;

	if (parse_words(v, transport_name, RB_MEMCPY, RB_NTRANSPORTS, &l) < 0)
		return -EINVAL;
	memset(on, 0, sizeof(int) * RB_NTRANSPORTS);
	for (int k = 0; k < l.n; k++)
		on[l.v[k]] = 1;
	on[RB_MEMCPY] = on[RB_STREAM];
	return 0;
}

static void ring_notes(FILE *f)
{
	fprintf(f, "Stream rows send %u-byte requests; each pipeline run measures up to %.0f s.\n",
		STREAM_BYTES, MIN_MEASURE_S + WARM_S);
}

/* Every option of azbench ring, in --help's order (tools/options.h). */
#define O(field) offsetof(struct sweep, field)
static const struct az_opt ring_opt[] = {
	{"producers", AZ_OPT_PARSE, O(producers), "LIST", 0, 0, "1,2", "producer processes",
	 AZ_BENCH_LIST_RANGE(LIST_MAX, 1, RB_MAX_PRODUCERS), NULL, parse_producers},
	{"capacities", AZ_OPT_PARSE, O(capacities), "LIST", 0, 0, "16,256,4096",
	 "ring slots",
	 "up to " AZ_BENCH_STR(LIST_MAX) " powers of two in 2.." AZ_BENCH_STR(CAPACITY_MAX), NULL,
	 parse_capacities},
	{"slots", AZ_OPT_PARSE, O(slots), "LIST", 0, 0, "64,512,4096",
	 "bytes per request",
	 "up to " AZ_BENCH_STR(LIST_MAX) " multiples of " AZ_BENCH_STR(AZ_CACHELINE) " in "
	 AZ_BENCH_STR(AZ_CACHELINE) ".." AZ_BENCH_STR(SLOT_MAX), NULL, parse_slots},
	{"batches", AZ_OPT_PARSE, O(batches), "LIST", 0, 0, "1,16",
	 "requests a producer sends before it waits",
	 AZ_BENCH_LIST_RANGE(LIST_MAX, 1, AZ_BENCH_BATCH_MAX), NULL, parse_batches},
	{"waits", AZ_OPT_PARSE, O(waits), "LIST", 0, 0, "spin,futex",
	 "ring waiting, comma-separated; spin is bounded (the ring library yields every 32 "
	 "polls, then sleeps)", "spin|futex", NULL, parse_waits},
	{"transports", AZ_OPT_PARSE, O(transport_on), "LIST", 0, 0, "ring,pipe,socket,mq,stream",
	 "comma-separated; stream includes its memcpy baseline", "ring|pipe|socket|mq|stream",
	 NULL, parse_transports},
	{"placement", AZ_OPT_PARSE, O(places), "LIST", 0, 0, NULL,
	 "comma-separated: producers and consumer pinned to one CPU, to different CPUs, or left "
	 "free (default cross, or same on a one-CPU machine)", "same|cross|any", NULL,
	 parse_placement},
	{"default-runs", AZ_OPT_U32, O(default_runs), "N", 0, MAX_RUNS, AZ_BENCH_STR(DEFAULT_RUNS),
	 "pipeline runs of the candidate settings and of azrun's defaults, alternated, after "
	 "the sweep; they get up to half of --seconds, fewer and shorter runs when they do not "
	 "fit (0: none and no recommendation)", NULL, NULL, NULL},
	{"game", AZ_OPT_PARSE, O(game), "NAME", 0, 0, "tictactoe", "the game those runs play",
	 az_bench_game_choices, NULL, az_bench_opt_game},
	AZ_BENCH_COMMON_OPTS(O, o, RING_SECONDS),
};
#undef O

/* What the options do not set: the CPUs, the placement's default, the terminal, the table's
 * columns. */
static void defaults(struct sweep *s)
{
	s->ncpus = rb_cpus(s->cpus, RB_MAX_CPUS);
	s->places.v[0] = s->ncpus > 1 ? RB_CROSS : RB_SAME;
	s->places.n = 1;
	s->tty = isatty(STDERR_FILENO);
	/* The terminal table stays within 100 columns; --csv and --json keep every column. */
	static const char *const table_cols[] = {
		"transport", "placement:place", "producers:P", "capacity:cap", "slot_bytes:slot",
		"batch", "wait", "rtt_median_ns:median_ns", "rtt_p99_ns:p99_ns",
		"throughput_rps:req_per_s", "memcpy_share:memcpy", "status", NULL,
	};
	s->o.table_cols = table_cols;
}

/* ---- the sweep ---- */

static int add_cfg(struct sweep *s, struct rb_cfg c)
{
	struct rb_cfg *p = realloc(s->cfgs, (s->ncfgs + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	s->cfgs = p;
	s->cfgs[s->ncfgs++] = c;
	return 0;
}

/* Ring round trips of one placement: producers x capacities x slots x batches x waits. */
static int plan_rings(struct sweep *s, enum rb_place place)
{
	int rc = 0;

	for (int pi = 0; pi < s->producers.n; pi++)
		for (int ci = 0; ci < s->capacities.n; ci++)
			for (int si = 0; si < s->slots.n; si++)
				for (int k = 0; k < s->batches.n * s->waits.n; k++) {
					struct rb_cfg c = {
						.transport = RB_RING,
						.wait = (enum rb_wait)s->waits.v[k % s->waits.n],
						.place = place,
						.producers = s->producers.v[pi],
						.capacity = s->capacities.v[ci],
						.slot_bytes = s->slots.v[si],
						.batch = s->batches.v[k / s->waits.n],
					};

					if (c.batch <= c.capacity)
						rc |= add_cfg(s, c);
				}
	return rc;
}

/* Every configuration, in run order: per placement the stream (memcpy baseline first, so its
 * share can be reported on the stream row), then ring round trips, then the kernel transports. */
static int plan(struct sweep *s)
{
	int rc = 0;

	for (int pl = 0; pl < s->places.n; pl++) {
		enum rb_place place = (enum rb_place)s->places.v[pl];
		struct rb_cfg c = { .place = place };

		for (int ci = 0; ci < s->capacities.n && s->transport_on[RB_STREAM]; ci++) {
			c.producers = 1;
			c.capacity = s->capacities.v[ci];
			c.slot_bytes = STREAM_BYTES;
			c.batch = c.capacity;
			c.wait = RB_SPIN;
			c.transport = RB_MEMCPY;
			rc |= add_cfg(s, c);
			c.transport = RB_STREAM;
			rc |= add_cfg(s, c);
		}
		if (s->transport_on[RB_RING])
			rc |= plan_rings(s, place);
		for (int t = RB_PIPE; t <= RB_MQ; t++)
			for (int pi = 0; pi < s->producers.n && s->transport_on[t]; pi++)
				for (int k = 0; k < s->slots.n * s->batches.n; k++) {
					c = (struct rb_cfg){
						.transport = (enum rb_transport)t,
						.wait = RB_BLOCK,
						.place = place,
						.producers = s->producers.v[pi],
						.slot_bytes = s->slots.v[k / s->batches.n],
						.batch = s->batches.v[k % s->batches.n],
					};
					rc |= add_cfg(s, c);
				}
	}
	return rc ? -ENOMEM : 0;
}

/* Requests/s of the memcpy row measured for this placement and capacity, or 0. */
static double memcpy_rps(const struct az_bench_table *t, const struct rb_cfg *c)
{
	for (uint32_t i = t->n; i-- > 0;) {
		const struct az_bench_row *r = &t->rows[i];

		if (strcmp(az_bench_row_sval(r, "transport"), "memcpy") == 0 &&
		    strcmp(az_bench_row_sval(r, "placement"), place_name[c->place]) == 0 &&
		    az_bench_row_val(r, "capacity", 0) == c->capacity)
			return az_bench_row_val(r, "throughput_rps", 0);
	}
	return 0;
}

static void make_row(struct az_bench_row *r, const struct rb_cfg *c, const struct rb_result *res,
		     const struct az_bench_table *t)
{
	int rtt = res->samples > 0;
	double base;

	memset(r, 0, sizeof(*r));
	az_bench_row_str(r, "transport", transport_name[c->transport]);
	az_bench_row_str(r, "placement", place_name[c->place]);
	az_bench_row_int(r, "producers", c->producers);
	if (c->transport == RB_RING || c->transport == RB_STREAM || c->transport == RB_MEMCPY)
		az_bench_row_int(r, "capacity", c->capacity);
	else
		az_bench_row_none(r, "capacity");
	az_bench_row_int(r, "slot_bytes", c->slot_bytes);
	az_bench_row_int(r, "batch", res->batch);
	az_bench_row_str(r, "wait", wait_name[c->wait]);
	if (rtt) {
		az_bench_row_int(r, "rtt_median_ns", res->rtt_median_ns);
		az_bench_row_int(r, "rtt_p99_ns", res->rtt_p99_ns);
		az_bench_row_int(r, "rtt_p999_ns", res->rtt_p999_ns);
	} else {
		az_bench_row_none(r, "rtt_median_ns");
		az_bench_row_none(r, "rtt_p99_ns");
		az_bench_row_none(r, "rtt_p999_ns");
	}
	if (res->rc == 0)
		az_bench_row_num(r, "throughput_rps", res->rps, 0);
	else
		az_bench_row_none(r, "throughput_rps");
	base = c->transport == RB_STREAM ? memcpy_rps(t, c) : 0;
	if (base > 0 && res->rc == 0)
		az_bench_row_num(r, "memcpy_share", res->rps / base, 3);
	else
		az_bench_row_none(r, "memcpy_share");
	az_bench_row_int(r, "samples", (int64_t)res->samples);
	az_bench_row_int(r, "errors", res->errors);
	if (res->rc) {
		char why[AZ_BENCH_STR_MAX];

		snprintf(why, sizeof(why), "skip: %s", strerror(-res->rc));
		az_bench_row_str(r, "status", why);
	} else {
		az_bench_row_str(r, "status", res->stalled ? "stall" : res->errors ? "errors"
					      : res->requests == 0 ? "no-data" : "ok");
	}
}

/* One configuration done. On a terminal one line is redrawn in place (a failure stays on its
 * own line); otherwise about ten lines for the whole sweep, plus every failure. */
static void progress(const struct sweep *s, uint32_t i, const struct rb_cfg *c,
		     const struct rb_result *res)
{
	char note[96] = "";
	int bad = res->rc || res->stalled || res->errors, last = i + 1 == s->ncfgs;
	uint32_t every = s->ncfgs > 10 ? (s->ncfgs + 9) / 10 : 1;

	if (s->o.quiet || (!s->tty && !bad && !last && (i + 1) % every != 0))
		return;
	if (res->rc)
		snprintf(note, sizeof(note), " (skipped: %s)", strerror(-res->rc));
	else if (res->stalled || res->errors)
		snprintf(note, sizeof(note), " %s", res->stalled ? "STALL" : "ERRORS");
	fprintf(stderr,
		"%s[%3u/%u] %-6s %-5s P=%-2u cap=%-5u slot=%-5u batch=%-4u %-5s %4.0f ms: "
		"median %u ns, %.3g req/s%s%s",
		s->tty ? "\r" : "", i + 1, s->ncfgs, transport_name[c->transport],
		place_name[c->place], c->producers, c->capacity, c->slot_bytes, res->batch,
		wait_name[c->wait], c->seconds * 1e3, res->rtt_median_ns, res->rps, note,
		s->tty ? "\033[K" : "");
	if (!s->tty || bad || last)
		fputc('\n', stderr);
	fflush(stderr);
}

/* Run every configuration, splitting what is left of the budget evenly over what is left to
 * run (process start-up and drain count against it). Returns 1 when any run failed. */
static int sweep(struct sweep *s, struct az_bench_table *t)
{
	uint64_t start = s->start_ns, budget = (uint64_t)(s->sweep_seconds * 1e9), now;
	double overhead = RING_OVERHEAD_S; /* per configuration, refined as we go */
	int failed = 0;

	if (s->ncfgs * (1.1 * MIN_SLICE_S + RING_OVERHEAD_S) > s->sweep_seconds)
		az_bench_progress(&s->o, "azbench ring: %u configurations need about %.1f s "
					 "at %.0f ms each, more than the %.1f s of --seconds %.1f "
					 "for the sweep: shorten the lists\n",
				  s->ncfgs, s->ncfgs * (1.1 * MIN_SLICE_S + RING_OVERHEAD_S),
				  1e3 * MIN_SLICE_S, s->sweep_seconds, s->o.seconds);

	for (uint32_t i = 0; i < s->ncfgs; i++) {
		struct rb_cfg *c = &s->cfgs[i];
		struct az_bench_row row;
		struct rb_result res;
		uint64_t t0;
		double left;

		now = az_bench_now_ns();
		left = (double)(start + budget > now ? start + budget - now : 0) / 1e9;
		c->seconds = left / (s->ncfgs - i) - overhead;
		c->seconds /= 1.1; /* the warm-up adds up to a tenth */
		if (c->seconds < MIN_SLICE_S)
			c->seconds = MIN_SLICE_S;
		t0 = az_bench_now_ns();
		rb_measure(c, s->cpus, s->ncpus, &res);
		if (res.rc == 0) {
			double wall = (double)(az_bench_now_ns() - t0) / 1e9;

			overhead = 0.5 * overhead + 0.5 * fmax(0, wall - 1.1 * c->seconds);
		}
		failed |= res.stalled || res.errors;
		progress(s, i, c, &res);
		make_row(&row, c, &res, t);
		if (az_bench_table_add(t, &row) != 0)
			return 1;
	}
	return failed;
}

/* ---- recommendation ---- */

struct match {
	const char *transport, *placement, *wait;
	double producers, capacity, slot, batch; /* < 0: any */
};

static int row_matches(const struct az_bench_row *r, const struct match *m)
{
	if (strcmp(az_bench_row_sval(r, "status"), "ok") != 0)
		return 0;
	if (strcmp(az_bench_row_sval(r, "transport"), m->transport) != 0 ||
	    strcmp(az_bench_row_sval(r, "placement"), m->placement) != 0)
		return 0;
	if (m->wait && strcmp(az_bench_row_sval(r, "wait"), m->wait) != 0)
		return 0;
	return (m->producers < 0 || az_bench_row_val(r, "producers", -1) == m->producers) &&
	       (m->capacity < 0 || az_bench_row_val(r, "capacity", -1) == m->capacity) &&
	       (m->slot < 0 || az_bench_row_val(r, "slot_bytes", -1) == m->slot) &&
	       (m->batch < 0 || az_bench_row_val(r, "batch", -1) == m->batch);
}

/* The matching row with the lowest (dir < 0) or highest (dir > 0) value of key, or NULL. */
static const struct az_bench_row *best(const struct az_bench_table *t, const struct match *m,
				       const char *key, int dir)
{
	const struct az_bench_row *pick = NULL;

	for (uint32_t i = 0; i < t->n; i++) {
		const struct az_bench_row *r = &t->rows[i];
		double v = az_bench_row_val(r, key, NAN);

		if (!row_matches(r, m) || !isfinite(v) || v <= 0)
			continue;
		if (!pick || (dir < 0 ? v < az_bench_row_val(pick, key, 0)
				      : v > az_bench_row_val(pick, key, 0)))
			pick = r;
	}
	return pick;
}

static double val(const struct az_bench_row *r, const char *key)
{
	return r ? az_bench_row_val(r, key, 0) : 0;
}

static uint32_t min_of(const struct az_bench_list *l)
{
	uint32_t m = l->v[0];

	for (int i = 1; i < l->n; i++)
		m = l->v[i] < m ? l->v[i] : m;
	return m;
}

static uint32_t max_of(const struct az_bench_list *l)
{
	uint32_t m = l->v[0];

	for (int i = 1; i < l->n; i++)
		m = l->v[i] > m ? l->v[i] : m;
	return m;
}

struct rec {
	const char *place, *wait;
	uint32_t capacity, batch, deadline_us, slot;
	double ring_ns, futex_ns, pipe_ns, socket_ns, mq_ns, ratio;
	double stream_rps, memcpy_rps, share;
};

/* Batch: the smallest whose best ring throughput (P max, reference slot) is >= 80 % of the best
 * batch's. Capacity: the smallest whose 512-byte stream reaches 90 % of the best stream, and at
 * least twice the batch (one batch in flight while the next is written). Deadline: twice the
 * median round trip at that batch: the rest of a batch normally arrives within one round trip of
 * its first request, and waiting for the tail (preemptions on a shared machine) would make every
 * batch pay for the rare slow one. */
static void choose(const struct sweep *s, const struct az_bench_table *t, struct rec *rc)
{
	struct match m = { "ring", rc->place, "spin", min_of(&s->producers), -1, rc->slot,
			   min_of(&s->batches) };
	const struct az_bench_row *r;
	double top = 0;

	rc->ring_ns = val(best(t, &m, "rtt_median_ns", -1), "rtt_median_ns");
	m.wait = "futex";
	rc->futex_ns = val(best(t, &m, "rtt_median_ns", -1), "rtt_median_ns");
	m.wait = NULL;
	m.capacity = -1;
	m.transport = "pipe";
	rc->pipe_ns = val(best(t, &m, "rtt_median_ns", -1), "rtt_median_ns");
	m.transport = "socket";
	rc->socket_ns = val(best(t, &m, "rtt_median_ns", -1), "rtt_median_ns");
	m.transport = "mq";
	rc->mq_ns = val(best(t, &m, "rtt_median_ns", -1), "rtt_median_ns");
	rc->ratio = rc->ring_ns > 0 && rc->pipe_ns > 0 ? rc->pipe_ns / rc->ring_ns : 0;
	/* Spinning pays only when the peer runs on another CPU and it did beat the futex. */
	rc->wait = strcmp(rc->place, "same") != 0 && rc->ring_ns > 0 &&
			   (rc->futex_ns == 0 || rc->ring_ns < rc->futex_ns) ? "spin" : "futex";

	m = (struct match){ "ring", rc->place, rc->wait, max_of(&s->producers), -1, rc->slot, -1 };
	for (int i = 0; i < s->batches.n; i++) {
		m.batch = s->batches.v[i];
		top = fmax(top, val(best(t, &m, "throughput_rps", 1), "throughput_rps"));
	}
	rc->batch = min_of(&s->batches);
	for (int i = 0; i < s->batches.n && top > 0; i++) {
		m.batch = s->batches.v[i];
		if (val(best(t, &m, "throughput_rps", 1), "throughput_rps") >= 0.8 * top) {
			rc->batch = s->batches.v[i];
			break;
		}
	}
	m.batch = rc->batch;
	m.slot = rc->slot;
	r = best(t, &m, "throughput_rps", 1);
	rc->deadline_us = (uint32_t)fmax(1, ceil(2 * val(r, "rtt_median_ns") / 1000));

	m = (struct match){ "stream", rc->place, NULL, 1, -1, STREAM_BYTES, -1 };
	r = best(t, &m, "throughput_rps", 1);
	rc->stream_rps = val(r, "throughput_rps");
	rc->share = val(r, "memcpy_share");
	rc->memcpy_rps = rc->share > 0 ? rc->stream_rps / rc->share : 0;
	rc->capacity = 0;
	for (int i = 0; i < s->capacities.n; i++) {
		uint32_t cap = s->capacities.v[i];

		m.capacity = cap;
		if (cap >= 2 * rc->batch && (rc->capacity == 0 || cap < rc->capacity) &&
		    val(best(t, &m, "throughput_rps", 1), "throughput_rps") >= 0.9 * rc->stream_rps)
			rc->capacity = cap;
	}
	if (rc->capacity == 0) /* no stream measured: twice the batch, as a power of two */
		for (rc->capacity = 16; rc->capacity < 2 * rc->batch; rc->capacity *= 2)
			;
}

/* "412 ns", "12.3 us", or "n/a" when not measured. */
static const char *ns_text(double ns, char *buf)
{
	if (ns <= 0)
		snprintf(buf, 32, "n/a");
	else if (ns < 10000)
		snprintf(buf, 32, "%.0f ns", ns);
	else
		snprintf(buf, 32, "%.1f us", ns / 1000);
	return buf;
}

/* What --seconds keeps for the pipeline runs after the sweep: what --default-runs runs of
 * MIN_MEASURE_S take, half of --seconds at most. */
static double versus_reserve(const struct sweep *s)
{
	return fmin(s->default_runs * 2 * (OVERHEAD_S + WARM_S + MIN_MEASURE_S), s->o.seconds / 2);
}

/* The pipeline runs that fit in what the sweep left of --seconds: as many of --default-runs as
 * measure VS_MIN_MEASURE_S or more each (MIN_MEASURE_S at most); none, with v->short_of the
 * --seconds that fits one, when not even one does. */
static void versus_plan(const struct sweep *s, struct rb_versus *v)
{
	double used = (double)(az_bench_now_ns() - s->start_ns) / 1e9;
	double left = s->o.seconds - used, one = 2 * (OVERHEAD_S + WARM_S + VS_MIN_MEASURE_S);
	uint32_t fit = left > one ? (uint32_t)(left / one) : 0;

	v->runs = s->default_runs < fit ? s->default_runs : fit;
	v->measure = v->runs ? fmin(MIN_MEASURE_S, left / (2 * v->runs) - OVERHEAD_S - WARM_S) : 0;
	v->short_of = s->default_runs && !v->runs ? ceil(2 * one) : 0;
}

static int recommend(const struct sweep *s, const struct az_bench_table *t)
{
	struct rec rc = { .place = place_name[s->places.v[0]], .slot = min_of(&s->slots) };
	struct az_bench_row row;
	struct az_config pick;
	char text[2048], first[1024], b[5][32];

	choose(s, t, &rc);
	memset(&row, 0, sizeof(row));
	struct rb_versus v = { s->game, s->default_runs, s->o.quiet, rc.capacity, rc.batch,
			       rc.deadline_us, 0, 0 };
	versus_plan(s, &v);
	int err = rb_versus_defaults(&v, &pick, &row, first, sizeof(first));
	if (err < 0) {
		fprintf(stderr, "azbench ring: the pipeline runs against azrun's defaults failed: "
			"%s\n", strerror(-err));
		return err;
	}
	az_bench_row_int(&row, "capacity", pick.ring_capacity);
	az_bench_row_int(&row, "batch", pick.max_batch);
	az_bench_row_int(&row, "deadline_us", pick.deadline_us);
	az_bench_row_int(&row, "micro_capacity", rc.capacity);
	az_bench_row_int(&row, "micro_batch", rc.batch);
	az_bench_row_int(&row, "micro_deadline_us", rc.deadline_us);
	az_bench_row_str(&row, "wait", rc.wait);
	az_bench_row_str(&row, "placement", rc.place);
	az_bench_row_int(&row, "slot_bytes", rc.slot);
	az_bench_row_num(&row, "ring_rtt_median_ns", rc.ring_ns, 0);
	az_bench_row_num(&row, "ring_futex_rtt_median_ns", rc.futex_ns, 0);
	az_bench_row_num(&row, "pipe_rtt_median_ns", rc.pipe_ns, 0);
	az_bench_row_num(&row, "socket_rtt_median_ns", rc.socket_ns, 0);
	az_bench_row_num(&row, "mq_rtt_median_ns", rc.mq_ns, 0);
	az_bench_row_num(&row, "pipe_over_ring", rc.ratio, 1);
	az_bench_row_num(&row, "stream_rps", rc.stream_rps, 0);
	az_bench_row_num(&row, "memcpy_rps", rc.memcpy_rps, 0);
	az_bench_row_num(&row, "memcpy_share", rc.share, 3);
	az_bench_row_int(&row, "target_rtt_under_1us", rc.ring_ns > 0 && rc.ring_ns < 1000);
	az_bench_row_int(&row, "target_20x_pipe", rc.ratio >= 20);
	az_bench_row_int(&row, "target_5M_rps", rc.stream_rps >= 5e6);
	snprintf(text, sizeof(text),
		 "%s Ring wait: %s; placement %s. "
		 "Round trip at %u B, median: ring %s spin / %s futex, pipe %s (%.1fx the ring), "
		 "socket %s, mq %s. %u-byte stream: %.2f M req/s = %.0f%% of memcpy (%.2f M/s). "
		 "Targets: ring median < 1 us %s, >= 20x below pipe %s, >= 5 M req/s %s.",
		 first, rc.wait, rc.place, rc.slot,
		 ns_text(rc.ring_ns, b[0]), ns_text(rc.futex_ns, b[1]), ns_text(rc.pipe_ns, b[2]),
		 rc.ratio, ns_text(rc.socket_ns, b[3]), ns_text(rc.mq_ns, b[4]), STREAM_BYTES,
		 rc.stream_rps / 1e6, 100 * rc.share, rc.memcpy_rps / 1e6,
		 rc.ring_ns > 0 && rc.ring_ns < 1000 ? "met" : "NOT met",
		 rc.ratio >= 20 ? "met" : "NOT met", rc.stream_rps >= 5e6 ? "met" : "NOT met");
	az_bench_recommend(&s->o, text, &row);
	return 0;
}

/* ---- plot: median round trip against message size, per transport and wait ---- */

struct plot_sel {
	const char *place;
	uint32_t producers, batch, capacity;
};

static int plot_keep(const struct az_bench_row *r, void *arg)
{
	const struct plot_sel *p = arg;
	double cap = az_bench_row_val(r, "capacity", -1);

	return strcmp(az_bench_row_sval(r, "placement"), p->place) == 0 &&
	       az_bench_row_val(r, "producers", 0) == p->producers &&
	       az_bench_row_val(r, "batch", 0) == p->batch && (cap < 0 || cap == p->capacity);
}

int az_bench_ring(int argc, char **argv)
{
	static const struct az_opts opts_table = {
		.tool = "azbench ring", .opt = ring_opt, .n = AZ_ARRAY_LEN(ring_opt),
		.help = az_help_azbench_ring, .notes = ring_notes
	};
	struct az_bench_table table = { 0 };
	struct sweep *s = calloc(1, sizeof(*s));
	struct plot_sel sel;
	struct az_bench_plot_spec ps = {
		.title = "azbench ring: median round trip (first placement, fewest producers, "
			 "smallest batch, largest capacity)",
		.xkey = "slot_bytes", .ykey = "rtt_median_ns",
		.series = { "transport", "wait", NULL }, .logx = 1, .logy = 1,
		.keep = plot_keep, .keep_arg = &sel,
	};
	int rc;

	if (!s)
		return 1;
	defaults(s);
	rc = az_bench_parse(&opts_table, s, &s->o, argc, argv);
	if (rc) {
		free(s);
		return rc == 1 ? 0 : 2;
	}
	if (plan(s) != 0) {
		free(s->cfgs);
		free(s);
		return 1;
	}
	for (int i = 0; i < s->places.n; i++)
		if (s->places.v[i] == RB_CROSS && s->ncpus < 2)
			az_bench_progress(&s->o, "azbench ring: one CPU only: 'cross' runs as "
						 "'same'\n");
	sel = (struct plot_sel){ place_name[s->places.v[0]], min_of(&s->producers),
				 min_of(&s->batches), max_of(&s->capacities) };
	s->start_ns = az_bench_now_ns();
	s->sweep_seconds = s->o.seconds - versus_reserve(s);
	az_bench_progress(&s->o, "azbench ring: %u configurations in %.1f s on %d CPUs%s\n",
			  s->ncfgs, s->sweep_seconds, s->ncpus,
			  s->default_runs ? ", then the pipeline runs in the rest of --seconds" : "");
	rc = sweep(s, &table);
	rc |= az_bench_emit(&table, &s->o, &ps);
	rc |= recommend(s, &table) < 0;
	az_bench_table_free(&table);
	free(s->cfgs);
	free(s);
	return rc ? 1 : 0;
}
