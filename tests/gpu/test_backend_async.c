/* SPDX-License-Identifier: MIT */
/* The cpu-async backend (gpu/cpu_async.c) in one process, as the server drives it: batches of
 * ring-slot offsets on two streams, two batches in flight, each checked against the cpu backend
 * once its stream reports complete; a model change between batches; a submission while the
 * queue is full. Label stress: CI runs it under ThreadSanitizer (the helper thread writes the
 * slots, this thread reads them after wait_slots). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "gpu/backend.h"
#include "shm/slot.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/test_util.h"

#define NSLOTS 96
#define MAXB 24
#define ROUNDS 400

static const struct az_arch arch = { .inputs = 14, .hidden = 16, .blocks = 1, .actions = 7 };

struct bench {
	struct az_slot_layout l;
	uint8_t *seg; /* NSLOTS slots */
	struct az_backend *async, *ref;
	struct az_model *m[2];
	struct az_rng rng;
};

/* Fill slot i with random features and a random non-empty legal mask; poison the answers. */
static void fill_slot(struct bench *b, uint32_t i)
{
	void *slot = b->seg + (size_t)i * b->l.bytes;
	uint8_t *legal = az_slot_legal(slot, &b->l);
	struct az_slot_hdr *h = az_slot_hdr(slot);

	fill_uniform(az_slot_features(slot, &b->l), arch.inputs, &b->rng, -1, 1);
	for (uint32_t a = 0; a < arch.actions; a++)
		legal[a] = (uint8_t)(az_rng_uniform(&b->rng) < 0.6);
	legal[0] = 1;
	poison(az_slot_policy(slot, &b->l), arch.actions * sizeof(float));
	h->status = 9;
	h->value = 1e9f;
}

/* The expected answers of n slots: the same slots copied, run through the cpu backend. */
static void expect(struct bench *b, uint32_t model, uint32_t n, const uint64_t *off,
		   float *policy, float *value)
{
	uint8_t *copy = xmalloc((size_t)n * b->l.bytes);
	uint64_t *coff = xmalloc(n * sizeof(*coff));

	for (uint32_t i = 0; i < n; i++) {
		memcpy(copy + (size_t)i * b->l.bytes, b->seg + off[i], b->l.bytes);
		coff[i] = (uint64_t)i * b->l.bytes;
	}
	assert_int_equal(az_backend_register_host(b->ref, copy, (size_t)n * b->l.bytes), 0);
	assert_int_equal(az_backend_forward_slots(b->ref, model, n, coff, &b->l, 0), 0);
	assert_int_equal(az_backend_wait_slots(b->ref, 0, 1), 1);
	for (uint32_t i = 0; i < n; i++) {
		void *slot = copy + (size_t)i * b->l.bytes;

		memcpy(policy + (size_t)i * arch.actions, az_slot_policy(slot, &b->l),
		       arch.actions * sizeof(float));
		value[i] = az_slot_hdr(slot)->value;
	}
	az_backend_unregister_host(b->ref);
	free(coff);
	free(copy);
}

struct inflight {
	int busy;
	uint32_t model, n, stream;
	uint64_t off[MAXB];
	float policy[MAXB * 7], value[MAXB];
};

static void check_done(struct bench *b, const struct inflight *f)
{
	for (uint32_t i = 0; i < f->n; i++) {
		void *slot = b->seg + f->off[i];

		assert_int_equal(az_slot_hdr(slot)->status, 0);
		check_close_tol(az_slot_policy(slot, &b->l), f->policy + (size_t)i * arch.actions,
				arch.actions, 1e-5, "policy");
		check_close_tol(&az_slot_hdr(slot)->value, &f->value[i], 1, 1e-5, "value");
	}
}

static void test_async_pipeline(void **state)
{
	struct bench b;
	struct inflight fl[2];
	char why[160];
	uint32_t next = 0;

	(void)state;
	memset(&b, 0, sizeof(b));
	memset(fl, 0, sizeof(fl));
	az_rng_seed(&b.rng, 11);
	az_slot_layout_init(&b.l, arch.inputs, arch.actions);
	b.seg = aligned_alloc(64, (size_t)NSLOTS * b.l.bytes);
	assert_non_null(b.seg);
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU_ASYNC, &arch, MAXB, &b.async, why,
					   sizeof(why)), 0);
	assert_non_null(strstr(why, "cpu-async"));
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &arch, MAXB, &b.ref, why, sizeof(why)),
			 0);
	for (int k = 0; k < 2; k++) {
		b.m[k] = random_model(&arch, 21 + (uint64_t)k);
		assert_int_equal(az_backend_load(b.async, (uint32_t)k, b.m[k]), 0);
		assert_int_equal(az_backend_load(b.ref, (uint32_t)k, b.m[k]), 0);
	}
	assert_int_equal(az_backend_register_host(b.async, b.seg, (size_t)NSLOTS * b.l.bytes), 0);
	assert_int_equal(az_backend_zero_copy(b.async), 1);
	assert_int_equal(az_backend_slot_streams(b.async), 2);
	for (uint32_t r = 0; r < ROUNDS; r++) {
		struct inflight *f = &fl[r % 2];

		/* The stream is reused: wait for its previous batch (as the server does), check it,
		 * then refill. The other stream's batch stays in flight meanwhile. */
		if (f->busy) {
			assert_int_equal(az_backend_wait_slots(b.async, f->stream, 1), 1);
			check_done(&b, f);
		}
		f->busy = 1;
		f->stream = r % 2;
		f->model = az_rng_below(&b.rng, 2);
		f->n = 1 + az_rng_below(&b.rng, MAXB);
		/* Disjoint from the other batch in flight: consecutive slot numbers. */
		for (uint32_t i = 0; i < f->n; i++) {
			uint32_t s = next++ % NSLOTS;

			fill_slot(&b, s);
			f->off[i] = (uint64_t)s * b.l.bytes;
		}
		expect(&b, f->model, f->n, f->off, f->policy, f->value);
		assert_int_equal(az_backend_forward_slots(b.async, f->model, f->n, f->off, &b.l,
							  f->stream), 0);
		int rc = az_backend_wait_slots(b.async, f->stream, 0);

		assert_true(rc == 0 || rc == 1);
		if (r == ROUNDS / 2) {
			/* A model change: load drains the queue first, then both streams are idle. */
			assert_int_equal(az_backend_load(b.async, 1, b.m[0]), 0);
			assert_int_equal(az_backend_wait_slots(b.async, 0, 0), 1);
			assert_int_equal(az_backend_wait_slots(b.async, 1, 0), 1);
			assert_int_equal(az_backend_load(b.ref, 1, b.m[0]), 0);
		}
	}
	for (int k = 0; k < 2; k++) {
		assert_int_equal(az_backend_wait_slots(b.async, fl[k].stream, 1), 1);
		check_done(&b, &fl[k]);
	}
	/* Bad arguments are refused before anything is queued. */
	assert_int_equal(az_backend_forward_slots(b.async, 0, 1, fl[0].off, &b.l, 2), -EINVAL);
	assert_int_equal(az_backend_wait_slots(b.async, 2, 1), -EINVAL);
	az_backend_destroy(b.async);
	az_backend_destroy(b.ref);
	for (int k = 0; k < 2; k++)
		az_model_destroy(b.m[k]);
	free(b.seg);
}

/* More submissions than the queue holds, without waiting: forward_slots waits for room, and
 * every batch completes, in order, per stream. */
static void test_async_queue_full(void **state)
{
	struct az_backend *be;
	struct az_slot_layout l;
	struct az_model *m = random_model(&arch, 3);
	uint64_t off[4];

	(void)state;
	az_slot_layout_init(&l, arch.inputs, arch.actions);
	uint8_t *seg = aligned_alloc(64, 16 * (size_t)l.bytes);

	assert_non_null(seg);
	memset(seg, 0, 16 * (size_t)l.bytes);
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU_ASYNC, &arch, 4, &be, NULL, 0), 0);
	assert_int_equal(az_backend_load(be, 0, m), 0);
	assert_int_equal(az_backend_register_host(be, seg, 16 * (size_t)l.bytes), 0);
	for (uint32_t k = 0; k < 16; k++) {
		az_slot_legal(seg + (size_t)k * l.bytes, &l)[0] = 1;
		az_slot_hdr(seg + (size_t)k * l.bytes)->status = 9;
	}
	for (uint32_t r = 0; r < 16; r++) {
		off[0] = (uint64_t)r * l.bytes;
		assert_int_equal(az_backend_forward_slots(be, 0, 1, off, &l, r % 2), 0);
	}
	assert_int_equal(az_backend_wait_slots(be, 0, 1), 1);
	assert_int_equal(az_backend_wait_slots(be, 1, 1), 1);
	for (uint32_t k = 0; k < 16; k++) {
		void *slot = seg + (size_t)k * l.bytes;

		assert_int_equal(az_slot_hdr(slot)->status, 0);
		/* One legal move: the masked softmax puts all the mass there. */
		assert_true(az_slot_policy(slot, &l)[0] == 1.0f);
	}
	az_backend_destroy(be);
	az_model_destroy(m);
	free(seg);
}

AZ_TEST_MAIN(cmocka_unit_test(test_async_pipeline), cmocka_unit_test(test_async_queue_full))
