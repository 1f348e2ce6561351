/* SPDX-License-Identifier: MIT */
/* Unit tests of the cpu backend's packed-weight kernels (gpu/cpu_packed.h): one layer against a
 * naive double-precision sum over shapes that hit every tile and panel edge, whole networks (MLP
 * and ResNet) against the OpenBLAS forward pass, row independence and re-packing after a load
 * (the AZ_CPU_GEMM choice: tests/gpu/test_cpu_gemm_select.c); the same for the bf16 panels (each layer exactly the product of the
 * bf16-rounded operands summed in fp32, and within the two roundings' bound of the fp32 layer;
 * whole networks within a bound of the fp32 pass). The kernel tests skip on a CPU without
 * AVX-512 (the bf16 ones without AVX512_BF16). */
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

#include "base/rng.h"
#include "gpu/backend.h"
#include "gpu/cpu_packed.h"
#include "gpu/cpu_packed_impl.h"
#include "gpu/cpu_forward.h"
#include "net/model.h"
#include "tests/gpu/gpu_test_util.h"

/* 1 when this CPU runs the bf16 kernel (AZ_CPU_GEMM=bf16 accepted). */
static int have_bf16(void)
{
	return selects("bf16", AZ_CPU_GEMM_BF16);
}

/* Skip the test (cmocka's skip(), with a line naming what is missing) unless have() is 1. */
#define NEED(have, what)                                           \
	do {                                                       \
		if (!have()) {                                     \
			fprintf(stderr, "no %s: skipped\n", what); \
			skip();                                    \
		}                                                  \
	} while (0)
#define NEED_AVX512() NEED(have_avx512, "AVX-512F")
#define NEED_BF16() NEED(have_bf16, "AVX512_BF16")

/* AMX: on the tiles where this CPU and OS run them, else (with AVX512_BF16) the same kernel with
 * the tile instructions emulated (az_amx_emulate); 0 when neither runs here. */
static int have_amx_or_emulation(void)
{
	az_amx_emulate = !az_amx_usable();
	if (az_amx_emulate)
		fprintf(stderr, "no AMX here: the AMX kernel with emulated tile instructions\n");
	return have_bf16();
}
#define NEED_AMX() NEED(have_amx_or_emulation, "AVX512_BF16 (for the AMX kernel or its emulation)")

/* After each AMX test, even one that failed half-way: the real kernels again. */
static int amx_teardown(void **state)
{
	(void)state;
	az_amx_emulate = 0;
	return 0;
}

/* f rounded to bf16 (nearest, ties to even) and back: the test's own rounding, written from
 * the format's definition (8 significant bits), not from the kernel's. */
static double bf16_round(float f)
{
	int e;
	double m = frexp(f, &e); /* f = m 2^e, 0.5 <= |m| < 1 */

	return ldexp(nearbyint(ldexp(m, 8)), e - 8); /* nearbyint: ties to even by default */
}

/* One layer through a model whose only weight matrix is W[out, in]: an MLP with no blocks has
 * trunk.in [hidden, inputs], so W is trunk.in.weight and b trunk.in.bias. fp32 panels (kind
 * AZ_CPU_GEMM_AVX512): y within 1e-5 of the double sum. bf16 panels: y within 1e-5 of the double
 * sum of the bf16-rounded products, and within 2^-7 + 2^-16 of sum |x w| (the two roundings'
 * bound) of the fp32 answer; returns the largest |y - fp32 answer| / (sum |x w| + 1e-30) seen. */
static double check_layer_as(enum az_cpu_gemm kind, uint32_t out, uint32_t in, uint32_t batch,
			     int relu, int mode, uint64_t seed)
{
	struct az_arch a = {.inputs = in, .hidden = out, .blocks = 0, .actions = 3};
	struct az_model *m = random_model(&a, seed);
	struct az_packed pk;
	struct az_rng rng;
	float *x = xmalloc(sizeof(float) * batch * in);
	float *res = xmalloc(sizeof(float) * batch * out);
	float *y = xmalloc(sizeof(float) * batch * out);
	const float *w = m->params, *b = m->params + (size_t)out * in;

	az_rng_seed(&rng, seed + 1);
	fill_uniform(x, (size_t)batch * in, &rng, -1.0, 1.0);
	fill_uniform(res, (size_t)batch * out, &rng, -1.0, 1.0);
	assert_int_equal(az_packed_create(m, kind, &pk), 0);
	const struct az_packed_mat *pm = az_packed_find(&pk, 0);
	int bf16 = kind == AZ_CPU_GEMM_BF16 || kind == AZ_CPU_GEMM_AMX;
	double worst = 0.0;

	assert_non_null(pm);
	assert_int_equal(pm->amx, kind == AZ_CPU_GEMM_AMX);
	assert_int_equal(pm->np % (pm->amx ? AZ_AMX_PAIRS : 1), 0);
	assert_true(bf16 ? pm->wb && !pm->w : pm->w && !pm->wb);
	assert_int_equal(pm->out, out);
	assert_int_equal(pm->in, in);
	/* mode 0: no residual; 1: a residual in its own array; 2: the residual is y itself */
	if (mode == 2)
		memcpy(y, res, sizeof(float) * batch * out);
	else
		poison(y, sizeof(float) * batch * out);
	az_packed_linear(pm, batch, x, b, mode == 0 ? NULL : mode == 1 ? res : y, relu, y);
	for (uint32_t r = 0; r < batch; r++)
		for (uint32_t j = 0; j < out; j++) {
			double s = b[j], sb = b[j], mag = fabs(b[j]), xw = 0.0;

			for (uint32_t k = 0; k < in; k++) {
				float xv = x[(size_t)r * in + k], wv = w[(size_t)j * in + k];
				double t = (double)xv * wv;

				s += t;
				sb += bf16_round(xv) * bf16_round(wv);
				mag += fabs(t);
				xw += fabs(t);
			}
			if (mode) {
				s += res[(size_t)r * out + j];
				sb += res[(size_t)r * out + j];
				mag += fabs(res[(size_t)r * out + j]);
			}
			if (relu && s < 0.0)
				s = 0.0;
			if (relu && sb < 0.0)
				sb = 0.0;
			double got = y[(size_t)r * out + j], want = bf16 ? sb : s;

			if (!(fabs(got - want) <= 1e-5 * (mag + 1.0)))
				fail_msg(
					"%s out %u in %u batch %u relu %d mode %d: y[%u, %u] = %.9g, "
					"want %.9g",
					az_cpu_gemm_name(kind), out, in, batch, relu, mode, r, j,
					got, want);
			if (bf16 &&
			    !(fabs(got - s) <= (0x1p-7 + 0x1p-16) * xw + 1e-5 * (mag + 1.0)))
				fail_msg("bf16 out %u in %u: y[%u, %u] = %.9g, fp32 %.9g: past the "
					 "rounding bound",
					 out, in, r, j, got, s);
			if (fabs(got - s) / (xw + 1e-30) > worst)
				worst = fabs(got - s) / (xw + 1e-30);
		}
	az_packed_destroy(&pk);
	FREE_ALL(x, res, y);
	az_model_destroy(m);
	return worst;
}

static void check_layer(uint32_t out, uint32_t in, uint32_t batch, int relu, int mode,
			uint64_t seed)
{
	check_layer_as(AZ_CPU_GEMM_AVX512, out, in, batch, relu, mode, seed);
}

/* Every panel width (1, 16, 17, 32, 33 outputs: one vector, two, a masked second, two panels),
 * every row tail (batch 1 to 17, 63), inputs of 1 and odd sizes, with and without the residual
 * and the ReLU. */
static void test_linear_shapes(void **state)
{
	static const uint32_t outs[] = {1, 7, 16, 17, 31, 32, 33, 64, 100};
	static const uint32_t ins[] = {1, 5, 128};
	uint64_t seed = 1;

	(void)state;
	NEED_AVX512();
	for (size_t o = 0; o < sizeof(outs) / sizeof(outs[0]); o++)
		for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++)
			for (uint32_t batch = 1; batch <= 17; batch++)
				check_layer(outs[o], ins[i], batch, (int)(batch & 1),
					    (int)(batch % 3), seed++);
	for (int mode = 0; mode < 3; mode++) {
		check_layer(128, 128, 63, 1, mode, seed++);
		check_layer(40, 84, 63, 0, mode, seed++);
	}
}

/* The bf16 panels over the same shapes, plus inputs that cross the kernel's 128-pair blocks
 * (255, 256, 257, 600) and odd inputs (a zero-padded last pair): each output equals the fp32
 * sum of the bf16-rounded products, within the rounding bound of the fp32 layer, and the bf16
 * rounding shows (the path is not fp32 in disguise). */
static void test_linear_bf16(void **state)
{
	static const uint32_t outs[] = {1, 7, 16, 17, 32, 33, 100};
	static const uint32_t ins[] = {1, 2, 5, 128, 255, 256, 257, 600};
	uint64_t seed = 101;
	double worst = 0.0;

	(void)state;
	NEED_BF16();
	for (size_t o = 0; o < sizeof(outs) / sizeof(outs[0]); o++)
		for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++)
			for (uint32_t batch = 1; batch <= 17; batch += 4) {
				double e =
					check_layer_as(AZ_CPU_GEMM_BF16, outs[o], ins[i], batch,
						       (int)(batch & 1), (int)(batch % 3), seed++);

				worst = e > worst ? e : worst;
			}
	for (int mode = 0; mode < 3; mode++) {
		double e = check_layer_as(AZ_CPU_GEMM_BF16, 128, 128, 63, 1, mode, seed++);

		worst = e > worst ? e : worst;
	}
	report_error("bf16 layer", "max |y - fp32| / sum|xw|", 0, worst, 0x1p-7);
	assert_true(worst > 1e-4); /* bf16's 8 significant bits: fp32 would be below 1e-6 */
}

/* The AMX kernel (gpu/cpu_amx.c: on the tiles, or emulated where the CPU has none) over the bf16
 * test's shapes and row counts around its 16-row blocks (15, 16, 17, 33, 40): each output the
 * fp32 sum of the bf16-rounded products, within the rounding bound of the fp32 layer. */
static void test_linear_amx(void **state)
{
	static const uint32_t outs[] = {1, 7, 16, 17, 32, 33, 100};
	static const uint32_t ins[] = {1, 2, 5, 31, 32, 33, 128, 288, 600};
	static const uint32_t batches[] = {1, 5, 15, 16, 17, 33, 40};
	uint64_t seed = 701;
	double worst = 0.0;

	(void)state;
	NEED_AMX();
	for (size_t o = 0; o < sizeof(outs) / sizeof(outs[0]); o++)
		for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++)
			for (size_t bi = 0; bi < sizeof(batches) / sizeof(batches[0]); bi++) {
				uint32_t batch = batches[bi];
				double e =
					check_layer_as(AZ_CPU_GEMM_AMX, outs[o], ins[i], batch,
						       (int)(batch & 1), (int)(batch % 3), seed++);

				worst = e > worst ? e : worst;
			}
	report_error("amx layer", "max |y - fp32| / sum|xw|", 0, worst, 0x1p-7);
	assert_true(worst > 1e-4); /* bf16 rounding shows: not an fp32 path */
}

/* Where the CPU has AMX: the tiles' answers equal the emulated kernel's (the emulation is what
 * the tests check elsewhere) to fp32 rounding. Skipped elsewhere. */
static void test_amx_matches_emulation(void **state)
{
	const struct az_arch a = {.inputs = 288, .hidden = 100, .blocks = 0, .actions = 3};
	struct az_model *m;
	struct az_packed pk;
	float x[40 * 288], y[40 * 100], ye[40 * 100];
	struct az_rng rng;

	(void)state;
	if (!az_amx_usable()) {
		fprintf(stderr, "no AMX: skipped\n");
		skip();
	}
	m = random_model(&a, 77);
	az_rng_seed(&rng, 78);
	fill_uniform(x, 40 * 288, &rng, -1.0, 1.0);
	assert_int_equal(az_packed_create(m, AZ_CPU_GEMM_AMX, &pk), 0);
	const struct az_packed_mat *pm = az_packed_find(&pk, 0);

	assert_true(pm->amx);
	az_amx_linear(pm, 40, x, m->params + 100 * 288, NULL, 1, y);
	az_amx_linear_emulated(pm, 40, x, m->params + 100 * 288, NULL, 1, ye);
	check_close_tol(y, ye, 40 * 100, 1e-4, "amx vs emulated");
	az_packed_destroy(&pk);
	az_model_destroy(m);
}

/* az_packed_conv3() (the im2col rows read in place from the padded input) against
 * az_conv3_im2col_tap() + az_packed_linear() on the same panels of kind (bf16 or fp32): the same
 * bits, for channel counts from 2 to 64 (one and two 32-float blocks a tap, a partial one; an
 * im2col row of 288 pairs, past the dense bf16 kernel's 256-pair block), boards from 1 x 1 to
 * 6 x 7, panels of 16, 17, 32 and 64 filters, row tails, with and without the residual; the pad,
 * poisoned, is entirely rewritten. bf16 refuses odd channel counts, fp32 takes them. */
static void check_conv3(enum az_cpu_gemm kind, uint32_t C, uint32_t F, uint32_t H, uint32_t W,
			uint32_t samples, int mode, uint64_t seed)
{
	struct az_arch a = {.kind = AZ_NET_RESNET,
			    .inputs = C * H * W,
			    .hidden = F,
			    .blocks = 1,
			    .actions = W,
			    .planes = C,
			    .height = H,
			    .width = W};
	size_t rows = (size_t)samples * H * W;
	struct az_model *m;
	struct az_packed pk;
	struct az_rng rng;

	assert_true(az_arch_valid(&a));
	m = random_model(&a, seed);
	assert_int_equal(az_packed_create(m, kind, &pk), 0);
	const struct az_packed_mat *pm = az_packed_find(&pk, 0); /* the input convolution */
	float *in = xmalloc(sizeof(float) * rows * C), *b = xmalloc(sizeof(float) * F);
	float *res = xmalloc(sizeof(float) * rows * F),
	      *col = xmalloc(sizeof(float) * rows * 9 * C);
	float *want = xmalloc(sizeof(float) * rows * F), *got = xmalloc(sizeof(float) * rows * F);
	const struct az_conv_src cv = {
		.in = in, .sn = (size_t)H * W * C, .c = C, .height = H, .width = W};

	assert_non_null(pm);
	assert_int_equal(pm->conv_c, C);
	assert_true(az_packed_conv3_ok(pm));
	az_rng_seed(&rng, seed + 1);
	fill_uniform(in, rows * C, &rng, -1.0, 1.0);
	fill_uniform(b, F, &rng, -1.0, 1.0);
	fill_uniform(res, rows * F, &rng, -1.0, 1.0);
	az_conv3_im2col_tap(in, samples, C, H, W, cv.sn, 1, C, col);
	az_packed_linear(pm, (uint32_t)rows, col, b, mode ? res : NULL, mode & 1, want);
	poison(got, sizeof(float) * rows * F);
	size_t pad_bytes = sizeof(uint32_t) * az_packed_conv3_pad_words(pm, samples, H, W);
	uint32_t *pad = xmalloc(pad_bytes);

	assert_int_equal(pad_bytes, (size_t)samples * (H + 2) * (W + 2) *
					    (kind == AZ_CPU_GEMM_AVX512 ? C : C / 2) * 4);
	poison(pad, pad_bytes);
	az_packed_conv3(pm, &cv, samples, b, mode ? res : NULL, mode & 1, got, pad);
	if (memcmp(got, want, sizeof(float) * rows * F) != 0)
		fail_msg("conv3 C %u F %u %ux%u samples %u mode %d: differs from im2col + linear",
			 C, F, H, W, samples, mode);
	az_packed_destroy(&pk);
	FREE_ALL(in, b, res, col, want, got, pad);
	az_model_destroy(m);
}

/* check_conv3() of kind on each of the n shapes (C, F, H, W) at 1, 3 and 5 samples. */
static void check_conv3_shapes(enum az_cpu_gemm kind, const uint32_t (*shapes)[4], size_t n,
			       uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		for (uint32_t samples = 1; samples <= 5; samples += 2)
			check_conv3(kind, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3],
				    samples, (int)(samples + i) % 3, seed++);
}

static const uint32_t conv3_shapes[][4] = {
	/* C, F, H, W */
	{2, 16, 6, 7},  {4, 33, 3, 3},  {32, 32, 6, 7}, {34, 17, 1, 1}, {48, 64, 5, 5},
	{56, 32, 2, 9}, {16, 32, 8, 8}, {64, 32, 6, 7}, {58, 17, 3, 4},
};
#define N_CONV3_SHAPES (sizeof(conv3_shapes) / sizeof(conv3_shapes[0]))

static void test_conv3_fp32(void **state)
{
	static const uint32_t odd[][4] = {{3, 16, 6, 7}, {57, 17, 3, 4}, {1, 32, 2, 2}};

	(void)state;
	NEED_AVX512();
	check_conv3_shapes(AZ_CPU_GEMM_AVX512, conv3_shapes, N_CONV3_SHAPES, 501);
	check_conv3_shapes(AZ_CPU_GEMM_AVX512, odd, sizeof(odd) / sizeof(odd[0]), 601);
}

static void test_conv3_bf16(void **state)
{
	(void)state;
	NEED_BF16();
	check_conv3_shapes(AZ_CPU_GEMM_BF16, conv3_shapes, N_CONV3_SHAPES, 301);
	/* refused: odd channel counts (pairs would straddle taps) */
	static const uint32_t refused[] = {3, 57};

	for (size_t i = 0; i < 2; i++) {
		struct az_arch a = {.kind = AZ_NET_RESNET,
				    .inputs = refused[i] * 9,
				    .hidden = 8,
				    .blocks = 1,
				    .actions = 3,
				    .planes = refused[i],
				    .height = 3,
				    .width = 3};
		struct az_model *m = random_model(&a, 7);
		struct az_packed pk;

		assert_int_equal(az_packed_create(m, AZ_CPU_GEMM_BF16, &pk), 0);
		assert_false(az_packed_conv3_ok(az_packed_find(&pk, 0)));
		az_packed_destroy(&pk);
		az_model_destroy(m);
	}
}

/* The AMX convolution (rows gathered from the padded bf16 input into the tiles): the same bits
 * as im2col + the AMX linear kernel, on the tiles where they run, else emulated. */
static void test_conv3_amx(void **state)
{
	(void)state;
	NEED_AMX();
	check_conv3_shapes(AZ_CPU_GEMM_AMX, conv3_shapes, N_CONV3_SHAPES, 401);
	if (!az_amx_emulate) { /* the tiles ran: the emulated form too */
		az_amx_emulate = 1;
		check_conv3_shapes(AZ_CPU_GEMM_AMX, conv3_shapes, N_CONV3_SHAPES, 451);
	}
}

/* Whole networks: the packed forward pass against the OpenBLAS one (the reference that
 * tests/gpu/test_forward.c checks in double), and each row the same bits at any batch size and
 * place in the batch (rows never share a sum). */
static void check_net_as(enum az_cpu_gemm kind, const struct az_arch *a, uint64_t seed, double tol)
{
	static const uint32_t batches[] = {1, 3, 8, 13, 40};
	struct az_model *m = random_model(a, seed);
	struct az_packed pk;
	struct az_acts ref, got, one;
	struct az_rng rng;
	uint32_t D = a->inputs, A = a->actions, maxb = 40;
	float *x = xmalloc(sizeof(float) * maxb * D);

	az_rng_seed(&rng, seed + 7);
	fill_uniform(x, (size_t)maxb * D, &rng, 0.0, 1.0);
	assert_int_equal(az_packed_create(m, kind, &pk), 0);
	assert_int_equal(az_acts_create(a, maxb, &ref), 0);
	assert_int_equal(az_acts_create(a, maxb, &got), 0);
	assert_int_equal(az_acts_create(a, 1, &one), 0);
	for (size_t i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
		uint32_t B = batches[i];

		az_model_forward(m, B, x, &ref);
		poison(got.logits, sizeof(float) * B * A);
		poison(got.value, sizeof(float) * B);
		az_model_forward_packed(m, &pk, B, x, &got);
		check_close_tol(got.logits, ref.logits, (size_t)B * A, tol, "logits");
		check_close_tol(got.value, ref.value, B, tol, "value");
		for (uint32_t r = 0; r < B; r++) {
			az_model_forward_packed(m, &pk, 1, x + (size_t)r * D, &one);
			assert_memory_equal(one.logits, got.logits + (size_t)r * A,
					    sizeof(float) * A);
			assert_memory_equal(one.value, got.value + r, sizeof(float));
		}
	}
	az_acts_destroy(&one);
	az_acts_destroy(&got);
	az_acts_destroy(&ref);
	az_packed_destroy(&pk);
	free(x);
	az_model_destroy(m);
}

/* check_net_as() on Connect Four's default net, a small odd-sized MLP, and a ResNet of
 * `filters` filters (planes != filters). */
static void check_nets(enum az_cpu_gemm kind, uint32_t filters, double tol)
{
	const struct az_arch c4 = {.inputs = 84, .hidden = 128, .blocks = 3, .actions = 7};
	const struct az_arch odd = {.inputs = 9, .hidden = 20, .blocks = 2, .actions = 9};
	const struct az_arch res = {.kind = AZ_NET_RESNET,
				    .inputs = 3 * 6 * 7,
				    .hidden = filters,
				    .blocks = 2,
				    .actions = 7,
				    .planes = 3,
				    .height = 6,
				    .width = 7};

	assert_true(az_arch_valid(&res));
	check_net_as(kind, &c4, 11, tol);
	check_net_as(kind, &odd, 12, tol);
	check_net_as(kind, &res, 13, tol);
}

/* The networks of test_networks() on bf16 panels (the ResNet at 32 filters): logits and value
 * within 0.03 * max(1, |fp32|) of the fp32 pass (the layers' roundings compounded: measured up
 * to 0.011 on these random networks), and the same bits at any batch size. */
static void test_networks_bf16(void **state)
{
	(void)state;
	NEED_BF16();
	check_nets(AZ_CPU_GEMM_BF16, 32, 0.03);
}

/* The same networks through the AMX kernel (its convolutions as im2col + the AMX layer; on a CPU
 * without AMX the emulated tiles): within the bf16 bound of the fp32 pass, the same bits at any
 * batch size; a matrix of more than AZ_AMX_MAX_IN inputs stays on the AVX512_BF16 kernel. */
static void test_networks_amx(void **state)
{
	const struct az_arch wide = {
		.inputs = AZ_AMX_MAX_IN + 1, .hidden = 16, .blocks = 0, .actions = 3};
	struct az_model *m;
	struct az_packed pk;

	(void)state;
	NEED_AMX();
	check_nets(AZ_CPU_GEMM_AMX, 32, 0.03);
	m = random_model(&wide, 5);
	assert_int_equal(az_packed_create(m, AZ_CPU_GEMM_AMX, &pk), 0);
	assert_false(az_packed_find(&pk, 0)->amx);
	assert_int_equal(az_packed_find(&pk, 0)->np, (AZ_AMX_MAX_IN + 2) / 2);
	az_packed_destroy(&pk);
	az_model_destroy(m);
}

static void test_networks(void **state)
{
	(void)state;
	NEED_AVX512();
	check_nets(AZ_CPU_GEMM_AVX512, 16, 1e-4);
}

/* A changed model, re-packed, gives what a fresh packing of it gives, and not the old answer:
 * the cpu backend's load re-packs its slot. */
static void check_update(enum az_cpu_gemm kind)
{
	const struct az_arch a = {.inputs = 9, .hidden = 48, .blocks = 1, .actions = 9};
	struct az_model *m, *m2;
	struct az_packed pk, fresh;
	struct az_acts acts, acts2;
	float x[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, before[9];

	m = random_model(&a, 21);
	m2 = random_model(&a, 22);
	assert_int_equal(az_acts_create(&a, 1, &acts), 0);
	assert_int_equal(az_acts_create(&a, 1, &acts2), 0);
	assert_int_equal(az_packed_create(m, kind, &pk), 0);
	az_model_forward_packed(m, &pk, 1, x, &acts);
	memcpy(before, acts.logits, sizeof(before));
	memcpy(m->params, m2->params, sizeof(float) * m->n_params);
	az_packed_update(m, &pk);
	assert_int_equal(az_packed_create(m, kind, &fresh), 0);
	az_model_forward_packed(m, &pk, 1, x, &acts);
	az_model_forward_packed(m, &fresh, 1, x, &acts2);
	assert_memory_equal(acts.logits, acts2.logits, sizeof(before));
	assert_memory_not_equal(acts.logits, before, sizeof(before));
	az_packed_destroy(&fresh);
	az_packed_destroy(&pk);
	az_acts_destroy(&acts2);
	az_acts_destroy(&acts);
	az_model_destroy(m2);
	az_model_destroy(m);
}

static void test_update(void **state)
{
	(void)state;
	NEED_AVX512(); /* before any allocation: a skip returns at once (ASan: no leak) */
	check_update(AZ_CPU_GEMM_AVX512);
}

static void test_update_bf16(void **state)
{
	(void)state;
	NEED_BF16();
	check_update(AZ_CPU_GEMM_BF16);
}

/* az_packed_pack() of a matrix given transposed (rs = 1, cs = out) packs exactly what the model
 * packing does for W itself: the same floats, so the same products. */
static void test_pack_transposed(void **state)
{
	const struct az_arch a = {.inputs = 45, .hidden = 70, .blocks = 0, .actions = 3};
	struct az_model *m = random_model(&a, 41);
	struct az_packed pk;
	struct az_packed_mat pm = {.out = 70, .in = 45};
	float *wt = xmalloc(sizeof(float) * 70 * 45);

	(void)state;
	assert_int_equal(az_packed_create(m, AZ_CPU_GEMM_AVX512, &pk), 0);
	for (size_t j = 0; j < 70; j++)
		for (size_t k = 0; k < 45; k++)
			wt[k * 70 + j] = m->params[j * 45 + k]; /* W^T, row-major [45, 70] */
	pm.w = aligned_alloc(64, az_packed_floats(70, 45) * sizeof(float));
	assert_non_null(pm.w);
	az_packed_pack(&pm, wt, 1, 70);
	assert_memory_equal(pm.w, az_packed_find(&pk, 0)->w,
			    az_packed_floats(70, 45) * sizeof(float));
	free(pm.w);
	free(wt);
	az_packed_destroy(&pk);
	az_model_destroy(m);
}

/* az_packed_gemm_tn against a double-precision sum: every row tail (m 1-17), column widths
 * around the 16 and 32 boundaries, reductions of 1 to 300 rows, padded leading dimensions, and
 * accumulate on and off. */
static void test_gemm_tn(void **state)
{
	static const uint32_t ns[] = {1, 7, 16, 17, 32, 33, 70, 288};
	static const uint32_t ks[] = {1, 3, 64, 300};
	struct az_rng rng;
	uint64_t trial = 0;

	(void)state;
	NEED_AVX512();
	az_rng_seed(&rng, 51);
	for (uint32_t m = 1; m <= 17; m++)
		for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
			for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++, trial++) {
				uint32_t n = ns[ni], kd = ks[ki];
				int acc = (int)(trial & 1);
				size_t lda = m + trial % 3, ldb = n + trial % 5,
				       ldc = n + trial % 2;
				float *a = xmalloc(sizeof(float) * kd * lda);
				float *b = xmalloc(sizeof(float) * kd * ldb);
				float *c = xmalloc(sizeof(float) * m * ldc);
				float *c0 = xmalloc(sizeof(float) * m * ldc);

				fill_uniform(a, kd * lda, &rng, -1.0, 1.0);
				fill_uniform(b, kd * ldb, &rng, -1.0, 1.0);
				fill_uniform(c0, m * ldc, &rng, -1.0, 1.0);
				memcpy(c, c0, sizeof(float) * m * ldc);
				az_packed_gemm_tn(m, n, kd, a, lda, b, ldb, acc, c, ldc);
				for (uint32_t i = 0; i < m; i++)
					for (size_t j = 0; j < ldc; j++) {
						size_t at = i * ldc + j;
						double want = acc || j >= n ? c0[at] : 0.0,
						       mag = 1.0;

						for (uint32_t k = 0; j < n && k < kd; k++) {
							double t = (double)a[k * lda + i] *
								   b[k * ldb + j];

							want += t;
							mag += fabs(t);
						}
						if (!(fabs(c[at] - want) <= 1e-5 * mag))
							fail_msg(
								"m %u n %u k %u acc %d: c[%u, %zu] = "
								"%.9g, want %.9g",
								m, n, kd, acc, i, j, c[at], want);
					}
				FREE_ALL(a, b, c, c0);
			}
}

/* The vector softmax against az_masked_softmax(): every action count 1-16, random legal masks
 * (none, one, all), logits spread far enough that terms underflow; rows with an infinite or NaN
 * legal logit go to the scalar function and match it bit for bit. */
static void test_softmax(void **state)
{
	struct az_rng rng;
	float logits[16], got[16], want[16];
	uint8_t legal[16];

	(void)state;
	NEED_AVX512();
	az_rng_seed(&rng, 31);
	for (int trial = 0; trial < 20000; trial++) {
		uint32_t A = 1 + (uint32_t)(trial % 16), kind = (uint32_t)(trial / 16) % 4;
		double spread = trial % 3 == 0 ? 200.0 : trial % 3 == 1 ? 10.0 : 0.01;

		for (uint32_t a = 0; a < A; a++) {
			logits[a] = (float)(spread * (2.0 * az_rng_uniform(&rng) - 1.0));
			legal[a] = kind == 0 ? 0 :
				   kind == 1 ? a == A / 2 :
				   kind == 2 ? 1 :
					       az_rng_uniform(&rng) < 0.6;
		}
		if (trial % 97 == 0) { /* not finite: +inf, -inf or NaN on a legal entry */
			logits[trial % A] = trial % 3 == 0 ? INFINITY :
					    trial % 3 == 1 ? -INFINITY :
							     NAN;
			legal[trial % A] = 1;
		}
		poison(got, sizeof(got));
		poison(want, sizeof(want));
		az_masked_softmax(logits, legal, A, want);
		az_packed_softmax(logits, legal, A, got);
		if (trial % 97 == 0) {
			assert_memory_equal(got, want, A * sizeof(float));
			continue;
		}
		double sum = 0.0;
		int any = 0;

		for (uint32_t a = 0; a < A; a++) {
			any |= legal[a];
			if (!legal[a])
				assert_true(got[a] == 0.0f);
			if (!(fabs((double)got[a] - want[a]) <= 1e-6))
				fail_msg("A %u trial %d: prob[%u] = %.9g, want %.9g", A, trial, a,
					 got[a], want[a]);
			sum += got[a];
		}
		assert_true(any ? fabs(sum - 1.0) < 1e-5 : sum == 0.0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear_shapes),
		cmocka_unit_test(test_networks),
		cmocka_unit_test(test_linear_bf16),
		cmocka_unit_test(test_networks_bf16),
		cmocka_unit_test_teardown(test_linear_amx, amx_teardown),
		cmocka_unit_test(test_amx_matches_emulation),
		cmocka_unit_test_teardown(test_networks_amx, amx_teardown),
		cmocka_unit_test(test_conv3_fp32),
		cmocka_unit_test(test_conv3_bf16),
		cmocka_unit_test_teardown(test_conv3_amx, amx_teardown),
		cmocka_unit_test(test_update_bf16),
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_softmax),
		cmocka_unit_test(test_pack_transposed),
		cmocka_unit_test(test_gemm_tn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
