/* SPDX-License-Identifier: MIT */
/* cudasim's lazy streams, events and graphs. Work queued on a stream runs only when the host
 * waits for it: cudaStreamSynchronize (that stream), cudaEventSynchronize (that stream up to the
 * event), cudaDeviceSynchronize (everything, in enqueue order), a blocking copy, or a second
 * cudaEventQuery of the same record (the first answers cudaErrorNotReady, so a poller always sees
 * a batch in flight once). A missing synchronisation therefore leaves the host reading old bytes.
 *
 * The legacy stream (NULL) and blocking streams wait for each other, as in CUDA: running an op
 * of one first runs the other's older ops. Non-blocking streams wait for nothing.
 *
 * Capture: while a stream captures, its ops become nodes of a graph; cudaGraphLaunch queues the
 * nodes again. A synchronising or allocating call from the capturing thread (modes Global and
 * ThreadLocal) invalidates the capture, as CUDA's "potentially unsafe API calls" do. */
#include "tests/cudasim/cudasim_impl.h"

#include <deque>
#include <stdlib.h>
#include <string.h>
#include <set>
#include <thread>
#include <vector>

struct op {
	uint64_t seq;
	const char *what;
	std::function<void()> run;
};

struct CUgraph_st {
	std::vector<std::function<void()>> nodes;
};

struct CUgraphExec_st {
	std::vector<std::function<void()>> nodes;
};

struct CUstream_st {
	bool blocking;
	std::deque<op> q;
	CUgraph_st *capture;   /* the graph being captured, or NULL */
	bool capture_invalid;  /* an unsafe call happened during the capture */
	bool capture_relaxed;
	std::thread::id capture_thread;
};

struct CUevent_st {
	CUstream_st *s;   /* the stream of the pending record */
	uint64_t seq;     /* the record's op */
	bool pending;     /* recorded and not yet reached */
	int queries;      /* cudaEventQuery calls on the pending record */
};

namespace {

CUstream_st legacy_stream = {true, {}, NULL, false, false, {}};
std::set<CUstream_st *> live_streams = {&legacy_stream};
std::set<CUevent_st *> live_events;
uint64_t next_seq = 1;

/* AZ_CUDASIM_TRACE=1: a note per op as it runs. */
bool trace(void)
{
	static int on = -1;

	if (on < 0) {
		const char *v = getenv("AZ_CUDASIM_TRACE");

		on = v && *v && strcmp(v, "0") != 0;
	}
	return on;
}

CUstream_st *resolve(cudaStream_t s)
{
	CUstream_st *r = s ? s : &legacy_stream;

	return live_streams.count(r) ? r : NULL;
}

void run_until(CUstream_st *s, uint64_t seq);

/* Run the front op of s, after what it waits for by the legacy stream's rules. */
void run_front(CUstream_st *s)
{
	uint64_t seq = s->q.front().seq;

	if (s == &legacy_stream) {
		for (CUstream_st *b : live_streams)
			if (b != s && b->blocking)
				run_until(b, seq - 1);
	} else if (s->blocking) {
		run_until(&legacy_stream, seq - 1);
	}
	op o = std::move(s->q.front());

	s->q.pop_front();
	if (trace())
		az_sim_note("run #%llu %s on stream %p", (unsigned long long)o.seq, o.what,
			    s == &legacy_stream ? NULL : (void *)s);
	o.run();
}

/* Run the ops of s queued up to seq. */
void run_until(CUstream_st *s, uint64_t seq)
{
	while (!s->q.empty() && s->q.front().seq <= seq)
		run_front(s);
}

/* The stream whose front op is the oldest of all, or NULL when nothing is queued. */
CUstream_st *oldest(void)
{
	CUstream_st *best = NULL;

	for (CUstream_st *s : live_streams)
		if (!s->q.empty() && (!best || s->q.front().seq < best->q.front().seq))
			best = s;
	return best;
}

} /* namespace */

/* ---- internals ---- */

cudaError_t az_sim_capture_forbids(const char *call)
{
	bool bad = false;

	for (CUstream_st *s : live_streams) {
		if (s->capture && !s->capture_relaxed &&
		    s->capture_thread == std::this_thread::get_id()) {
			s->capture_invalid = true;
			bad = true;
		}
	}
	if (!bad)
		return cudaSuccess;
	az_sim_note("%s during stream capture: the capture is invalidated", call);
	return az_sim_set_error(cudaErrorStreamCaptureUnsupported);
}

bool az_sim_stream_capturing(cudaStream_t s)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	CUstream_st *r = resolve(s);

	return r && r->capture;
}

cudaError_t az_sim_enqueue(cudaStream_t s, const char *what, std::function<void()> run)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	CUstream_st *r = resolve(s);

	if (!r) {
		az_sim_note("%s: stream %p does not exist (destroyed?)", what, (void *)s);
		return az_sim_set_error(cudaErrorInvalidResourceHandle);
	}
	if (r->capture) {
		r->capture->nodes.push_back(std::move(run));
		return cudaSuccess;
	}
	if (r == &legacy_stream) {
		cudaError_t e = az_sim_capture_forbids(what); /* the legacy stream syncs */

		if (e != cudaSuccess)
			return e;
	}
	r->q.push_back(op{next_seq++, what, std::move(run)});
	return cudaSuccess;
}

cudaError_t az_sim_stream_drain(cudaStream_t s)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	CUstream_st *r = resolve(s);

	if (!r)
		return az_sim_set_error(cudaErrorInvalidResourceHandle);
	if (r->capture) {
		r->capture_invalid = true;
		az_sim_note("synchronising a capturing stream: the capture is invalidated");
		return az_sim_set_error(cudaErrorStreamCaptureUnsupported);
	}
	run_until(r, next_seq);
	return cudaSuccess;
}

void az_sim_drain_all(void)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());

	for (CUstream_st *s = oldest(); s; s = oldest())
		run_front(s);
}

/* ---- the API ---- */

extern "C" {

cudaError_t cudaDeviceSynchronize(void)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	cudaError_t e = az_sim_capture_forbids("cudaDeviceSynchronize");

	if (e == cudaSuccess)
		az_sim_drain_all();
	return e;
}

/* cudaStreamCreateWithFlags and cudaEventCreateWithFlags: a new handle, a copy of proto, in the
 * live set; cudaErrorInvalidValue for a NULL out or a flag outside allowed. */
extern "C++" {
template <class T>
static cudaError_t create_live(T **out, unsigned flags, unsigned allowed, const T &proto,
			       std::set<T *> &live)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());

	if (!out || (flags & ~allowed))
		return az_sim_set_error(cudaErrorInvalidValue);
	*out = new T(proto);
	live.insert(*out);
	return cudaSuccess;
}
} /* extern "C++" */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
	return create_live(s, flags, cudaStreamNonBlocking,
			   CUstream_st{!(flags & cudaStreamNonBlocking), {}, NULL, false, false, {}},
			   live_streams);
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
	return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}

/* Queued work still completes, as on the device. */
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	CUstream_st *r = s ? resolve(s) : NULL;

	if (!r)
		return az_sim_set_error(cudaErrorInvalidResourceHandle);
	run_until(r, next_seq);
	live_streams.erase(r);
	delete r->capture;
	delete r;
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	CUstream_st *r = resolve(s);

	if (r && !r->capture) {
		cudaError_t e = az_sim_capture_forbids("cudaStreamSynchronize");

		if (e != cudaSuccess)
			return e;
	}
	return az_sim_stream_drain(s);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
	return create_live(e, flags, cudaEventDisableTiming, CUevent_st{NULL, 0, false, 0},
			   live_events);
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
	return cudaEventCreateWithFlags(e, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());

	if (!live_events.erase(e))
		return az_sim_set_error(cudaErrorInvalidResourceHandle);
	if (e->pending) /* the record op still refers to e: let it complete first */
		run_until(e->s, e->seq);
	delete e;
	return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	CUstream_st *r = resolve(s);

	if (!live_events.count(e) || !r)
		return az_sim_set_error(cudaErrorInvalidResourceHandle);
	if (r->capture) {
		az_sim_note("cudaEventRecord inside a capture is not emulated");
		return az_sim_set_error(cudaErrorStreamCaptureUnsupported);
	}
	uint64_t seq = next_seq;
	cudaError_t err = az_sim_enqueue(s, "cudaEventRecord", [e, seq]() {
		if (e->seq == seq)
			e->pending = false;
	});

	if (err != cudaSuccess)
		return err;
	*e = CUevent_st{r, seq, true, 0};
	return cudaSuccess;
}

/* Wait for e's record, unless query is set and this is the record's first query (then
 * cudaErrorNotReady, which, as on the device, is not recorded as the last error). */
static cudaError_t event_wait(cudaEvent_t e, bool query, const char *call)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	cudaError_t err = az_sim_capture_forbids(call);

	if (err != cudaSuccess)
		return err;
	if (!live_events.count(e))
		return az_sim_set_error(cudaErrorInvalidResourceHandle);
	if (!e->pending)
		return cudaSuccess;
	if (query && e->queries++ == 0)
		return cudaErrorNotReady;
	run_until(e->s, e->seq);
	return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	return event_wait(e, false, "cudaEventSynchronize");
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
	return event_wait(e, true, "cudaEventQuery");
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	CUstream_st *r = s ? resolve(s) : NULL; /* the legacy stream cannot capture */

	if (!r || r->capture || (unsigned)mode > cudaStreamCaptureModeRelaxed)
		return az_sim_set_error(!r ? cudaErrorStreamCaptureUnsupported
					   : cudaErrorInvalidValue);
	r->capture = new CUgraph_st;
	r->capture_invalid = false;
	r->capture_relaxed = mode == cudaStreamCaptureModeRelaxed;
	r->capture_thread = std::this_thread::get_id();
	return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());
	CUstream_st *r = resolve(s);

	if (!r || !graph)
		return az_sim_set_error(cudaErrorInvalidValue);
	if (!r->capture)
		return az_sim_set_error(cudaErrorStreamCaptureUnmatched);
	CUgraph_st *gr = r->capture;

	r->capture = NULL;
	if (r->capture_invalid) {
		delete gr;
		*graph = NULL;
		return az_sim_set_error(cudaErrorStreamCaptureInvalidated);
	}
	*graph = gr;
	return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
				 unsigned long long flags)
{
	if (!exec || !graph || flags)
		return az_sim_set_error(cudaErrorInvalidValue);
	*exec = new CUgraphExec_st{graph->nodes};
	return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	delete graph;
	return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
	delete exec;
	return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
	std::lock_guard<std::recursive_mutex> g(az_sim_lock());

	if (!exec)
		return az_sim_set_error(cudaErrorInvalidValue);
	for (const auto &n : exec->nodes) {
		cudaError_t e = az_sim_enqueue(s, "graph node", n);

		if (e != cudaSuccess)
			return e;
	}
	return cudaSuccess;
}

} /* extern "C" */
