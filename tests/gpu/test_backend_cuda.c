/* SPDX-License-Identifier: MIT */
/* The cuda backend against the cpu reference (ggml test-backend-ops style): same weights, same
 * random inputs; logits, values and draw probabilities (0 for a tanh value head) within 1e-5
 * relative per element in fp32 and 1e-2 normwise relative with the tf32 / bf16 tensor-core
 * GEMMs, for tanh and win/draw/loss value heads; the zero-copy slot path (registered host
 * "segment", two streams, batch buckets with padding, two models) writes exactly the CPU's
 * masked softmax, value and draw into the batch's slots and nothing else. Outputs are poisoned
 * with NaN first. Exits 77 (skipped) without a CUDA device. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu/backend.h"
#include "gpu/cpu_forward.h"
#include "net/model.h"
#include "base/rng.h"
#include "shm/slot.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/test_util.h"

#define MAX_BATCH 64

static void create_pair(const struct az_arch *a, uint64_t seed, struct az_backend **cpu,
			struct az_backend **cuda)
{
	char why[256];

	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, a, MAX_BATCH, cpu, why, sizeof(why)),
			 0);
	assert_int_equal(az_backend_create(AZ_BACKEND_CUDA, a, MAX_BATCH, cuda, why, sizeof(why)),
			 0);
	assert_string_equal(az_backend_name(*cuda), "cuda");
	for (uint32_t s = 0; s < AZ_BACKEND_MODELS; s++) {
		struct az_model *m = random_model(a, seed + s);

		assert_int_equal(az_backend_load(*cpu, s, m), 0);
		assert_int_equal(az_backend_load(*cuda, s, m), 0);
		az_model_destroy(m);
	}
}

/* Forward through both backends; fp32 compares element by element, the tensor-core modes
 * normwise (tests/gpu/gpu_test_util.h). */
static void compare_arch(const struct az_arch *a, uint64_t seed, double tol, int normwise)
{
	static const uint32_t batches[] = { 1, 7, MAX_BATCH };
	struct az_backend *cpu = NULL, *cuda = NULL;
	size_t D = a->inputs, A = a->actions;
	float *x = xmalloc(MAX_BATCH * D * sizeof(float));
	float *lc = xmalloc(MAX_BATCH * A * sizeof(float));
	float *lg = xmalloc(MAX_BATCH * A * sizeof(float));
	float vc[MAX_BATCH], vg[MAX_BATCH], dc[MAX_BATCH], dg[MAX_BATCH];
	struct az_rng rng;

	create_pair(a, seed, &cpu, &cuda);
	az_rng_seed(&rng, seed ^ 0x5eed);
	fill_uniform(x, MAX_BATCH * D, &rng, -1, 1);
	for (uint32_t s = 0; s < AZ_BACKEND_MODELS; s++) {
		for (size_t k = 0; k < sizeof(batches) / sizeof(batches[0]); k++) {
			uint32_t B = batches[k];

			poison(lg, MAX_BATCH * A * sizeof(float));
			poison(vg, sizeof(vg));
			poison(dg, sizeof(dg));
			assert_int_equal(az_backend_forward(cpu, s, B, x, lc, vc, dc), 0);
			assert_int_equal(az_backend_forward(cuda, s, B, x, lg, vg, dg), 0);
			if (normwise) {
				check_norm_rel(lg, lc, B * A, tol, "logits");
				check_norm_rel(vg, vc, B, tol, "value");
				check_norm_rel(dg, dc, B, tol, "draw");
			} else {
				check_close_tol(lg, lc, B * A, tol, "logits");
				check_close_tol(vg, vc, B, tol, "value");
				check_close_tol(dg, dc, B, tol, "draw");
			}
			for (uint32_t r = 0; r < B && a->value_head == AZ_VALUE_TANH; r++)
				assert_true(dg[r] == 0.0f);
		}
	}
	az_backend_destroy(cuda);
	az_backend_destroy(cpu);
	free(lg);
	free(lc);
	free(x);
}

/* One fp32 parity test: an architecture and a seed (cmocka initial state). */
struct fp32_case {
	struct az_arch a;
	uint64_t seed;
};
static struct fp32_case small = { { .inputs = 9, .hidden = 16, .blocks = 3, .actions = 7 }, 1 };
static struct fp32_case no_blocks = { { .inputs = 5, .hidden = 8, .blocks = 0, .actions = 3 }, 2 };
static struct fp32_case connect4_size = {
	{ .inputs = 126, .hidden = 64, .blocks = 2, .actions = 7 }, 3
};
/* ResNets: Connect Four's board, and tic-tac-toe's with no blocks */
static struct fp32_case resnet_c4 = {
	{ .inputs = 84, .hidden = 16, .blocks = 2, .actions = 7, .kind = AZ_NET_RESNET,
	  .planes = 2, .height = 6, .width = 7 }, 6
};
static struct fp32_case resnet_ttt = {
	{ .inputs = 18, .hidden = 8, .blocks = 0, .actions = 9, .kind = AZ_NET_RESNET,
	  .planes = 2, .height = 3, .width = 3 }, 7
};
/* win/draw/loss value heads: the shapes above, three value outputs */
static struct fp32_case small_wdl = {
	{ .inputs = 9, .hidden = 16, .blocks = 3, .actions = 7, .value_head = AZ_VALUE_WDL }, 10
};
static struct fp32_case resnet_c4_wdl = {
	{ .inputs = 84, .hidden = 16, .blocks = 2, .actions = 7, .kind = AZ_NET_RESNET,
	  .planes = 2, .height = 6, .width = 7, .value_head = AZ_VALUE_WDL }, 11
};

static void test_fp32(void **state)
{
	const struct fp32_case *c = *state;

	unsetenv("AZ_CUDA_MATH"); /* fp32, even after a failed test left it set */
	/* a ResNet sums 9F products per conv output over several layers in cuBLAS's order */
	compare_arch(&c->a, c->seed, c->a.kind == AZ_NET_RESNET ? 1e-4 : 1e-5, 0);
}

static void test_tensor_core_modes(void **state)
{
	const struct az_arch a = { .inputs = 126, .hidden = 64, .blocks = 2, .actions = 7 };
	struct az_backend *b = NULL;
	char why[256];

	(void)state;
	/* The ResNet's tolerance is an estimate (more layers, each rounding its GEMM inputs); the
	 * measured errors are printed under AZ_TEST_ERRORS (tools/gpu-check.sh). */
	setenv("AZ_CUDA_MATH", "tf32", 1);
	compare_arch(&a, 4, 1e-2, 1);
	compare_arch(&resnet_c4.a, 8, 3e-2, 1);
	compare_arch(&small_wdl.a, 12, 1e-2, 1);
	setenv("AZ_CUDA_MATH", "bf16", 1);
	compare_arch(&a, 5, 1e-2, 1);
	compare_arch(&resnet_c4.a, 9, 3e-2, 1);
	compare_arch(&resnet_c4_wdl.a, 13, 3e-2, 1);
	assert_int_equal(az_backend_create(AZ_BACKEND_CUDA, &a, 4, &b, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "bf16 GEMMs"));
	az_backend_destroy(b);
	setenv("AZ_CUDA_MATH", "fp16", 1);
	assert_int_equal(az_backend_create(AZ_BACKEND_CUDA, &a, 4, &b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "AZ_CUDA_MATH"));
	unsetenv("AZ_CUDA_MATH");
}

/* ---- the zero-copy slot path ---- */

#define NSLOTS 256

struct fake_seg {
	struct az_slot_layout l;
	uint8_t *base;
	size_t bytes;
};

static void *slot_at(const struct fake_seg *s, uint32_t i)
{
	return s->base + (size_t)i * s->l.bytes;
}

static void make_seg(struct fake_seg *s, const struct az_arch *a, struct az_rng *rng)
{
	void *p = NULL;

	az_slot_layout_init(&s->l, a->inputs, a->actions);
	s->bytes = (size_t)NSLOTS * s->l.bytes;
	assert_int_equal(posix_memalign(&p, 4096, s->bytes), 0);
	s->base = p;
	for (uint32_t i = 0; i < NSLOTS; i++) {
		void *slot = slot_at(s, i);
		struct az_slot_hdr *h = az_slot_hdr(slot);

		memset(slot, 0, s->l.bytes);
		h->status = 9;
		poison(&h->value, sizeof(h->value));
		poison(&h->draw, sizeof(h->draw));
		fill_uniform(az_slot_features(slot, &s->l), a->inputs, rng, -1, 1);
		for (uint32_t k = 0; k < a->actions; k++)
			az_slot_legal(slot, &s->l)[k] = (uint8_t)(az_rng_uniform(rng) < 0.5);
		poison(az_slot_policy(slot, &s->l), a->actions * sizeof(float));
	}
}

static double slot_tol; /* check_slot's tolerance: the running test's */

/* Slot i answered by model m must hold the CPU's masked softmax, value and draw. */
static void check_slot(const struct fake_seg *s, struct az_backend *cpu, uint32_t i, uint32_t m)
{
	void *slot = slot_at(s, i);
	struct az_slot_hdr *h = az_slot_hdr(slot);
	uint32_t A = s->l.actions;
	float logits[64], value, draw, want[64];

	assert_true(A <= 64);
	assert_int_equal(az_backend_forward(cpu, m, 1, az_slot_features(slot, &s->l), logits,
					    &value, &draw),
			 0);
	az_masked_softmax(logits, az_slot_legal(slot, &s->l), A, want);
	assert_int_equal(h->status, 0);
	check_close_tol(&h->value, &value, 1, slot_tol, "slot value");
	check_close_tol(&h->draw, &draw, 1, slot_tol, "slot draw");
	check_close_tol(az_slot_policy(slot, &s->l), want, A, slot_tol, "slot policy");
}

/* runs: 0 puts every batch's requests in every other slot (the untouched neighbours show stray
 * writes); 1 in runs of four contiguous slots with a gap after each (the dma feed copies a run
 * with one 2-D copy). */
static void run_slots(const struct az_arch *arch, int runs)
{
	const struct az_arch a = *arch;
	/* Batch sizes: a single row, padding inside a bucket, an exact bucket, max_batch. */
	static const uint32_t sizes[] = { 1, 5, 16, MAX_BATCH, 37 };
	struct az_backend *cpu = NULL, *cuda = NULL;
	uint8_t model_of[NSLOTS];
	uint64_t off[MAX_BATCH];
	struct fake_seg s;
	struct az_rng rng;
	uint32_t next = 0;

	unsetenv("AZ_CUDA_MATH");
	az_rng_seed(&rng, 99);
	create_pair(&a, 7, &cpu, &cuda);
	make_seg(&s, &a, &rng);
	memset(model_of, 0xff, sizeof(model_of));
	assert_int_equal(az_backend_slot_streams(cuda), 0);
	assert_int_equal(az_backend_register_host(cuda, s.base, s.bytes), 0);
	assert_int_equal(az_backend_slot_streams(cuda), 2);
	assert_int_equal(az_backend_register_host(cuda, s.base, s.bytes), -EINVAL);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint32_t n = sizes[k], m = (uint32_t)(k % 2), stream = (uint32_t)(k % 2);

		for (uint32_t i = 0; i < n; next += (runs && i % 4 != 3) ? 1 : 2, i++) {
			off[i] = (uint64_t)next * s.l.bytes;
			model_of[next] = (uint8_t)m;
		}
		assert_int_equal(az_backend_forward_slots(cuda, m, n, off, &s.l, stream), 0);
		if (k % 2 == 1) /* two batches in flight on two streams, then both waited */
			for (uint32_t st = 0; st < 2; st++)
				assert_int_equal(az_backend_wait_slots(cuda, st, 1), 1);
	}
	assert_true(next <= NSLOTS);
	for (uint32_t st = 0; st < 2; st++) { /* the non-blocking form, polled */
		int r;

		while ((r = az_backend_wait_slots(cuda, st, 0)) == 0)
			;
		assert_int_equal(r, 1);
	}
	for (uint32_t i = 0; i < NSLOTS; i++) {
		if (model_of[i] != 0xff) {
			check_slot(&s, cpu, i, model_of[i]);
		} else {
			struct az_slot_hdr *h = az_slot_hdr(slot_at(&s, i));

			assert_int_equal(h->status, 9);
			assert_true(isnan(h->value) && isnan(h->draw));
			assert_true(isnan(az_slot_policy(slot_at(&s, i), &s.l)[0]));
		}
	}

	/* Argument checks: nothing is submitted. */
	struct az_slot_layout other;

	az_slot_layout_init(&other, a.inputs + 1, a.actions);
	off[0] = s.bytes - s.l.bytes + 1; /* the slot would end past the segment */
	assert_int_equal(az_backend_forward_slots(cuda, 0, 1, off, &s.l, 0), -EINVAL);
	off[0] = 0;
	assert_int_equal(az_backend_forward_slots(cuda, 0, 1, off, &other, 0), -EINVAL);
	assert_int_equal(az_backend_forward_slots(cuda, 0, 1, off, &s.l, 2), -EINVAL);
	assert_int_equal(az_backend_forward_slots(cuda, 0, MAX_BATCH + 1, off, &s.l, 0), -EINVAL);
	assert_int_equal(az_backend_wait_slots(cuda, 2, 1), -EINVAL);
	az_backend_unregister_host(cuda);
	assert_int_equal(az_backend_slot_streams(cuda), 0);
	assert_int_equal(az_backend_forward_slots(cuda, 0, 1, off, &s.l, 0), -EINVAL);
	/* Registered again, then left to az_backend_destroy to unregister. */
	assert_int_equal(az_backend_register_host(cuda, s.base, s.bytes), 0);
	az_backend_destroy(cuda);
	az_backend_destroy(cpu);
	free(s.base);
}

static void test_slots_graphs(void **state)
{
	const struct az_arch a = { .inputs = 126, .hidden = 64, .blocks = 2, .actions = 7 };

	(void)state;
	slot_tol = 1e-5;
	run_slots(&a, 0);
}

/* The ResNet's kernels inside the captured graphs of the slot path. */
static void test_slots_resnet(void **state)
{
	(void)state;
	slot_tol = 1e-4;
	run_slots(&resnet_c4.a, 0);
}

static void test_slots_direct(void **state)
{
	const struct az_arch a = { .inputs = 126, .hidden = 64, .blocks = 2, .actions = 7 };

	(void)state;
	slot_tol = 1e-5;
	setenv("AZ_CUDA_GRAPHS", "0", 1);
	run_slots(&a, 0);
	unsetenv("AZ_CUDA_GRAPHS");
}

/* The dma feed (AZ_CUDA_FEED=dma: one copy-engine 2-D copy per run of contiguous slots, direct
 * launches), MLP and ResNet: every slot's answer against the CPU's, as above. */
static void test_slots_dma(void **state)
{
	const struct az_arch a = { .inputs = 126, .hidden = 64, .blocks = 2, .actions = 7 };

	(void)state;
	setenv("AZ_CUDA_FEED", "dma", 1);
	slot_tol = 1e-5;
	run_slots(&a, 1);
	slot_tol = 1e-4;
	run_slots(&resnet_c4.a, 1);
	unsetenv("AZ_CUDA_FEED");
}

/* Win/draw/loss value heads on the slot path: MLP and ResNet in the captured graphs, the MLP
 * launched directly and through the dma feed; each slot's draw is the CPU's p_draw. */
static void test_slots_wdl(void **state)
{
	(void)state;
	slot_tol = 1e-5;
	run_slots(&small_wdl.a, 0);
	setenv("AZ_CUDA_GRAPHS", "0", 1);
	run_slots(&small_wdl.a, 0);
	unsetenv("AZ_CUDA_GRAPHS");
	setenv("AZ_CUDA_FEED", "dma", 1);
	run_slots(&small_wdl.a, 1);
	unsetenv("AZ_CUDA_FEED");
	slot_tol = 1e-4;
	run_slots(&resnet_c4_wdl.a, 0);
}

int main(void)
{
	skip_without_cuda();
	az_test_fp32_kernels(); /* the cpu backend is the fp32 reference */
	const struct CMUnitTest tests[] = {
		{ "test_small", test_fp32, NULL, NULL, &small },
		{ "test_no_blocks", test_fp32, NULL, NULL, &no_blocks },
		{ "test_connect4_size", test_fp32, NULL, NULL, &connect4_size },
		cmocka_unit_test(test_tensor_core_modes),
		cmocka_unit_test(test_slots_graphs),
		cmocka_unit_test(test_slots_direct),
		{ "test_resnet_c4", test_fp32, NULL, NULL, &resnet_c4 },
		{ "test_resnet_ttt_no_blocks", test_fp32, NULL, NULL, &resnet_ttt },
		cmocka_unit_test(test_slots_resnet),
		cmocka_unit_test(test_slots_dma),
		{ "test_small_wdl", test_fp32, NULL, NULL, &small_wdl },
		{ "test_resnet_c4_wdl", test_fp32, NULL, NULL, &resnet_c4_wdl },
		cmocka_unit_test(test_slots_wdl),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
