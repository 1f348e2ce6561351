/* SPDX-License-Identifier: MIT */
/* The inference server end to end: a forked az_infer_serve() drains three real shm rings fed by
 * this process; every response (masked-softmax policy, value, status) is checked against the CPU
 * reference forward pass. Requests for an unloaded model or a bad model id must come back with
 * status 1. Run as `test_server` (label unit: the cpu backend through the backend layer's staging
 * fallback, then a stand-in backend with asynchronous completion and two streams, so the
 * pipelined path runs everywhere, and the real cpu-async backend), as `test_server async`
 * (label stress, also under TSan: the asynchronous server paths only) and as `test_server cuda` (label gpu: the zero-copy path with
 * two streams and CUDA graphs, then again with AZ_CUDA_GRAPHS=0; exits 77 without a device). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpu/backend.h"
#include "net/checkpoint.h"
#include "gpu/cpu_forward.h"
#include "net/model.h"
#include "infer/server.h"
#include "infer/control.h"
#include "base/rng.h"
#include "shm/segment.h"
#include "shm/slot.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/test_util.h"

#define NRINGS 3
#define CAPACITY 16
#define PER_RING 300
#define NREQ (NRINGS * PER_RING)
#define D 20
#define A 12

static const struct az_arch arch = { .inputs = D, .hidden = 32, .blocks = 2, .actions = A };
static enum az_backend_kind backend = AZ_BACKEND_CPU;
/* run_server()'s --max-batch (0: the backend's choice), and the largest batch the stand-in
 * below accepts (0: any) */
static uint32_t server_max_batch = 16, standin_limit;

struct expect {
	uint32_t model;
	float x[D];
	uint8_t legal[A];
	float policy[A];
	float value;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Requests: mostly model 0 (loaded), some model 1 (never loaded), some a bad id. Expected
 * answers of model 0 from the CPU reference, one batch for all. */
static struct expect *make_requests(const struct az_model *m)
{
	struct expect *e = xmalloc(NREQ * sizeof(*e));
	float *x = xmalloc((size_t)NREQ * D * sizeof(float));
	struct az_acts acts;
	struct az_rng rng;

	az_rng_seed(&rng, 77);
	for (uint32_t t = 0; t < NREQ; t++) {
		uint32_t pick = az_rng_below(&rng, 20);

		e[t].model = pick == 0 ? 1u : pick == 1 ? 7u : 0u;
		fill_uniform(e[t].x, D, &rng, -1, 1);
		for (uint32_t a = 0; a < A; a++)
			e[t].legal[a] = (uint8_t)(az_rng_uniform(&rng) < 0.5);
		memcpy(x + (size_t)t * D, e[t].x, sizeof(e[t].x));
	}
	assert_int_equal(az_acts_create(&arch, NREQ, &acts), 0);
	az_model_forward(m, NREQ, x, &acts);
	for (uint32_t t = 0; t < NREQ; t++) {
		az_masked_softmax(acts.logits + (size_t)t * A, e[t].legal, A, e[t].policy);
		e[t].value = acts.value[t];
	}
	az_acts_destroy(&acts);
	free(x);
	return e;
}

static void check_response(void *slot, const struct az_slot_layout *l, const struct expect *e)
{
	struct az_slot_hdr *h = az_slot_hdr(slot);

	if (e->model != 0) {
		assert_int_equal(h->status, 1);
		assert_true(h->value == 0.0f);
		return;
	}
	assert_int_equal(h->status, 0);
	check_close_tol(az_slot_policy(slot, l), e->policy, A, 1e-5, "policy");
	check_close_tol(&h->value, &e->value, 1, 1e-5, "value");
	assert_true(h->draw == 0.0f); /* a tanh value head's p_draw */
}

/* Act as the producer of every ring: keep them full, check each result as it arrives. */
static void produce_and_check(struct az_seg *seg, const struct expect *e)
{
	struct az_ring rings[NRINGS];
	struct az_slot_layout l;
	struct az_wait wait = { .spin = 100, .timeout_us = 100000 };
	uint32_t sent[NRINGS] = { 0 }, done = 0, idle = 0;

	az_slot_layout_init(&l, D, A);
	for (uint32_t i = 0; i < NRINGS; i++)
		assert_int_equal(az_seg_ring(seg, i, &rings[i]), 0);
	while (done < NREQ) {
		int progressed = 0;

		for (uint32_t i = 0; i < NRINGS; i++) {
			void *slot;

			while (sent[i] < PER_RING && (slot = az_ring_claim(&rings[i], NULL))) {
				uint32_t t = i * PER_RING + sent[i]++;
				struct az_slot_hdr *h = az_slot_hdr(slot);

				h->model = e[t].model;
				h->game = t;
				h->status = 9;
				h->value = NAN; /* poison: the server must overwrite them */
				h->draw = NAN;
				memcpy(az_slot_features(slot, &l), e[t].x, sizeof(e[t].x));
				memcpy(az_slot_legal(slot, &l), e[t].legal, A);
				poison(az_slot_policy(slot, &l), A * sizeof(float));
				az_ring_publish(&rings[i]);
				progressed = 1;
			}
			while ((slot = az_ring_result(&rings[i], NULL))) {
				uint32_t t = az_slot_hdr(slot)->game;

				assert_true(t / PER_RING == i && t < NREQ);
				check_response(slot, &l, &e[t]);
				az_ring_release(&rings[i]);
				done++;
				progressed = 1;
			}
		}
		if (progressed) {
			idle = 0;
			continue;
		}
		for (uint32_t i = 0; i < NRINGS; i++) {
			if (az_ring_inflight(&rings[i]) > 0) {
				int rc = az_ring_wait_result(&rings[i], &wait);

				assert_true(rc == 0 || rc == -ETIMEDOUT);
				break;
			}
		}
		if (++idle > 200)
			fail_msg("no response for 20 s (%u of %u done)", done, NREQ);
	}
}

/* Publish the checkpoint as model 0 and wait for the server's acknowledgement. */
static void serve_model(struct az_infer_ctl_shm *ctl, const char *path)
{
	double t0 = now_s();

	snprintf(ctl->model_path[0], AZ_CTL_PATH_MAX, "%s", path);
	/* C1: pairs with C1' in the server's poll_models(). */
	atomic_store_explicit(&ctl->model_gen[0], 1, memory_order_release);
	/* C2': pairs with C2 in the server. */
	while (atomic_load_explicit(&ctl->model_ack[0], memory_order_acquire) != 1) {
		if (now_s() - t0 > 60)
			fail_msg("the server did not load the model");
		usleep(1000);
	}
	assert_int_equal(atomic_load_explicit(&ctl->model_err[0], memory_order_relaxed), 0);
}

/* ---- a backend stand-in with asynchronous completion (as CUDA's) on any machine ----
 * forward_slots only queues the batch; the results are computed (by an inner cpu backend's slot
 * path) when wait_slots finds the batch "done": ASYNC_US after its submission, or at once when
 * asked to block. Two streams, so the server pipelines and takes requests after those in flight
 * (collect_more) with several rings. */
#define ASYNC_US 300
#define ASYNC_STREAMS 2

struct async_batch {
	uint32_t model, n;
	uint64_t offsets[AZ_INFER_BATCH_AUTO_MAX];
};

struct async_ctx {
	struct az_backend *inner;
	struct az_slot_layout l;
	struct async_batch q[ASYNC_STREAMS][AZ_BACKEND_MODELS]; /* one per model per batch */
	uint32_t nq[ASYNC_STREAMS];
	double submitted_at[ASYNC_STREAMS];
};

static int async_create(const struct az_arch *a, uint32_t max_batch, void **ctx)
{
	struct async_ctx *c = calloc(1, sizeof(*c));
	char why[128];

	if (!c || max_batch > AZ_INFER_BATCH_AUTO_MAX)
		return -EINVAL;
	int rc = az_backend_create(AZ_BACKEND_CPU, a, max_batch, &c->inner, why, sizeof(why));

	if (rc < 0) {
		free(c);
		return rc;
	}
	*ctx = c;
	return 0;
}

static int async_load(void *ctx, uint32_t model, const struct az_model *m)
{
	return az_backend_load(((struct async_ctx *)ctx)->inner, model, m);
}

static int async_forward(void *ctx, uint32_t model, uint32_t batch, const float *x,
			 float *logits, float *value, float *draw)
{
	return az_backend_forward(((struct async_ctx *)ctx)->inner, model, batch, x, logits, value,
				  draw);
}

static void async_destroy(void *ctx)
{
	struct async_ctx *c = ctx;

	az_backend_destroy(c->inner);
	free(c);
}

static int async_register_host(void *ctx, void *base, size_t size)
{
	return az_backend_register_host(((struct async_ctx *)ctx)->inner, base, size);
}

static void async_unregister_host(void *ctx)
{
	az_backend_unregister_host(((struct async_ctx *)ctx)->inner);
}

static int async_forward_slots(void *ctx, uint32_t model, uint32_t n,
			       const uint64_t *slot_offsets, const struct az_slot_layout *l,
			       uint32_t stream)
{
	struct async_ctx *c = ctx;

	assert_true(c->nq[stream] < AZ_BACKEND_MODELS); /* waited for before the next batch */
	assert_true(standin_limit == 0 || n <= standin_limit);
	struct async_batch *q = &c->q[stream][c->nq[stream]++];

	q->model = model;
	q->n = n;
	memcpy(q->offsets, slot_offsets, n * sizeof(*slot_offsets));
	c->l = *l;
	c->submitted_at[stream] = now_s();
	return 0;
}

static int async_wait_slots(void *ctx, uint32_t stream, int block)
{
	struct async_ctx *c = ctx;

	if (c->nq[stream] == 0)
		return 1;
	if (!block && now_s() - c->submitted_at[stream] < ASYNC_US * 1e-6)
		return 0;
	for (uint32_t k = 0; k < c->nq[stream]; k++) {
		const struct async_batch *q = &c->q[stream][k];

		assert_int_equal(az_backend_forward_slots(c->inner, q->model, q->n, q->offsets,
							  &c->l, 0), 0);
		assert_int_equal(az_backend_wait_slots(c->inner, 0, 1), 1);
	}
	c->nq[stream] = 0;
	return 1;
}

static const struct az_backend_ops async_ops = {
	.name = "cpu-async-standin",
	AZ_BACKEND_OPS(async),
	AZ_BACKEND_SLOT_OPS(async),
	.slot_streams = ASYNC_STREAMS,
};

static uint32_t prefer4(void *ctx)
{
	(void)ctx;
	return 4;
}

/* One server lifetime; returns what it logged. */
static char *run_server(const struct az_model *m, const struct expect *e, const char *ckpt,
			const struct az_backend_ops *ops)
{
	struct az_slot_layout l;
	struct az_seg seg;
	char name[64];
	int fds[2];
	static char log[4096];

	az_slot_layout_init(&l, D, A);
	struct az_seg_params sp = { .nrings = NRINGS, .capacity = CAPACITY, .slot_bytes = l.bytes,
				    .ctl_bytes = (uint32_t)sizeof(struct az_infer_ctl_shm) };

	(void)m;
	az_seg_name(name, sizeof(name), "test-server");
	assert_int_equal(az_seg_create(&seg, name, &sp), 0);
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct az_infer_config ic = { .backend = backend, .features = D, .actions = A,
					      .max_batch = server_max_batch, .deadline_us = 200,
					      .spin = 64,
					      .log_fd = fds[1], .backend_ops = ops };

		/* A failed check ends the parent without a stop request: die with it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		_exit(az_infer_serve(&seg, &ic) < 0 ? 1 : 0);
	}
	close(fds[1]);
	struct az_infer_ctl_shm *ctl = az_seg_ctl(&seg);

	serve_model(ctl, ckpt);
	produce_and_check(&seg, e);
	/* Release: pairs with the server loop's acquire load of stop. */
	atomic_store_explicit(&ctl->stop, 1, memory_order_release);
	int status = 0;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(atomic_load_explicit(&ctl->evals, memory_order_relaxed) >= NREQ);
	ssize_t n = read(fds[0], log, sizeof(log) - 1);

	log[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	assert_int_equal(az_seg_destroy(&seg), 0);
	return log;
}

/* A checkpoint of a random model in a fresh directory, with its requests and answers. */
struct fixture {
	struct az_model *m;
	struct expect *e;
	char dir[64], ckpt[128];
};

static void fx_setup(struct fixture *f)
{
	char err[256];

	f->m = random_model(&arch, 5);
	f->e = make_requests(f->m);
	assert_int_equal(az_test_tmpdir_make(f->dir, sizeof(f->dir), "/tmp/az-test-server-XXXXXX",
					     f->ckpt, sizeof(f->ckpt), "m.safetensors"), 0);
	snprintf(f->m->game, sizeof(f->m->game), "test");
	assert_int_equal(az_ckpt_save(f->ckpt, f->m, err, sizeof(err)), 0);
}

static void fx_teardown(struct fixture *f)
{
	unlink(f->ckpt);
	rmdir(f->dir);
	free(f->e);
	az_model_destroy(f->m);
}

/* Regression (layout issue, collect_more): with several rings and a backend that completes
 * later, the server takes requests after those in flight, round-robin over the rings. The
 * cursor used to move inside the loop that indexed with it, so rings were skipped or visited
 * twice, slots were taken twice and served past `published` (an assertion in az_ring_serve). */
static void test_serve_async_rings(void **state)
{
	struct fixture f;

	(void)state;
	fx_setup(&f);
	char *log = run_server(f.m, f.e, f.ckpt, &async_ops);

	assert_non_null(strstr(log, "backend cpu-async-standin"));
	assert_non_null(strstr(log, "zero-copy feed: segment registered, 2 stream(s)"));
	fx_teardown(&f);
}

/* The real cpu-async backend (a helper thread, two streams): the pipelined zero-copy path with
 * three rings, on every machine, with the answers checked against the reference. */
static void test_serve_cpu_async(void **state)
{
	struct fixture f;
	enum az_backend_kind saved = backend;

	(void)state;
	fx_setup(&f);
	backend = AZ_BACKEND_CPU_ASYNC;
	char *log = run_server(f.m, f.e, f.ckpt, NULL);

	backend = saved;
	assert_non_null(strstr(log, "backend cpu-async: requested"));
	assert_non_null(strstr(log, "zero-copy feed: segment registered, 2 stream(s)"));
	fx_teardown(&f);
}

/* A batch deadline above the documented maximum is refused before anything is served. */
static void test_serve_deadline_max(void **state)
{
	struct az_slot_layout l;
	struct az_seg seg;
	char name[64];

	(void)state;
	az_slot_layout_init(&l, D, A);
	struct az_seg_params sp = { .nrings = 1, .capacity = CAPACITY, .slot_bytes = l.bytes,
				    .ctl_bytes = (uint32_t)sizeof(struct az_infer_ctl_shm) };
	az_seg_name(name, sizeof(name), "test-server-deadline");
	assert_int_equal(az_seg_create(&seg, name, &sp), 0);
	struct az_infer_config ic = { .backend = AZ_BACKEND_CPU, .features = D, .actions = A,
				      .max_batch = 16, .deadline_us = AZ_INFER_DEADLINE_MAX_US + 1,
				      .spin = 64, .log_fd = -1 };
	assert_int_equal(az_infer_serve(&seg, &ic), -EINVAL);
	ic.deadline_us = 0; /* and a batch past the server's limit */
	ic.max_batch = AZ_INFER_BATCH_MAX + 1;
	assert_int_equal(az_infer_serve(&seg, &ic), -EINVAL);
	assert_int_equal(az_seg_destroy(&seg), 0);
}

static void test_serve(void **state)
{
	struct fixture f;

	(void)state;
	fx_setup(&f);
	struct az_model *m = f.m;
	struct expect *e = f.e;
	const char *ckpt = f.ckpt;
	char *log = run_server(m, e, ckpt, NULL);

	if (backend == AZ_BACKEND_CUDA) {
		/* The zero-copy path was taken, with graphs; then again without graphs. */
		assert_non_null(strstr(log, "zero-copy feed: segment registered"));
		assert_non_null(strstr(log, "CUDA graphs for"));
		setenv("AZ_CUDA_GRAPHS", "0", 1);
		log = run_server(m, e, ckpt, NULL);
		unsetenv("AZ_CUDA_GRAPHS");
		assert_non_null(strstr(log, "zero-copy feed: segment registered"));
		assert_non_null(strstr(log, "no CUDA graphs"));
	} else {
		assert_null(strstr(log, "zero-copy"));
	}
	fx_teardown(&f);
}

/* --max-batch 0: the server forms batches of the backend's preferred size (4 here, with 48
 * requests in flight that would fill batches of 16), says so, and serves every request; an
 * explicit --max-batch wins over the preference. */
static void test_serve_preferred_batch(void **state)
{
	struct az_backend_ops async_ops_prefer4 = async_ops; /* asking for batches of 4 */
	struct fixture f;

	(void)state;
	async_ops_prefer4.preferred_batch = prefer4;
	fx_setup(&f);
	server_max_batch = 0;
	standin_limit = 4;
	char *log = run_server(f.m, f.e, f.ckpt, &async_ops_prefer4);

	assert_non_null(strstr(log, "batches of up to 4 (the backend's choice)"));
	server_max_batch = 8;
	standin_limit = 8;
	log = run_server(f.m, f.e, f.ckpt, &async_ops_prefer4);
	assert_non_null(strstr(log, "batches of up to 8 (as configured)"));
	server_max_batch = 16;
	standin_limit = 0;
	fx_teardown(&f);
}

int main(int argc, char **argv)
{
	az_test_fp32_kernels(); /* compared with the fp32 reference */
	if (argc > 1 && strcmp(argv[1], "async") == 0) {
		/* The stress run (ctest test_server_async, also under TSan): the asynchronous
		 * paths only, several server lifetimes. */
		const struct CMUnitTest async_tests[] = {
			cmocka_unit_test(test_serve_cpu_async),
			cmocka_unit_test(test_serve_async_rings),
			cmocka_unit_test(test_serve_cpu_async),
			cmocka_unit_test(test_serve_cpu_async),
		};
		return cmocka_run_group_tests(async_tests, NULL, NULL);
	}
	if (argc > 1 && strcmp(argv[1], "cuda") == 0) {
		if (!az_cuda_available()) {
			fprintf(stderr, "no CUDA device: skipped\n");
			return 77;
		}
		backend = AZ_BACKEND_CUDA;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve), cmocka_unit_test(test_serve_async_rings),
		cmocka_unit_test(test_serve_cpu_async), cmocka_unit_test(test_serve_deadline_max),
		cmocka_unit_test(test_serve_preferred_batch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
