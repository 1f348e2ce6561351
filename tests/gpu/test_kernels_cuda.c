/* SPDX-License-Identifier: MIT */
/* Every CUDA kernel of gpu/cuda_kernels.h against a CPU reference on random inputs (ggml
 * test-backend-ops style): outputs are poisoned with NaN before each launch, so an element the
 * kernel forgot fails; every CUDA call's status is checked. Exits 77 (skipped) without a device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define AZ_GPU_TEST_DEVICE 1
#include "gpu/backend.h"
#include "gpu/cuda_kernels.h"
#include "gpu/cpu_forward.h"
#include "net/model.h"
#include "base/rng.h"
#include "shm/slot.h"
#include "tests/gpu/gpu_test_util.h"
#include "train/trainer.h"

#define TOL 1e-5

static float relu(float v)
{
	return v < 0.0f ? 0.0f : v;
}

#define FIXTURE_BUFS 8

/* The host side of a test on a rows x cols matrix (n elements): an rng seeded for the test, the
 * want and got buffers of n floats its comparisons use, and the test's other host buffers, all
 * freed by fixture_fini(). */
struct fixture {
	uint32_t rows, cols;
	size_t n;
	struct az_rng rng;
	float *want, *got;
	void *bufs[FIXTURE_BUFS];
	size_t nbufs;
};

/* bytes of host memory that fixture_fini() frees. */
static void *fixture_alloc(struct fixture *f, size_t bytes)
{
	assert_true(f->nbufs < FIXTURE_BUFS);
	f->bufs[f->nbufs] = xmalloc(bytes);
	return f->bufs[f->nbufs++];
}

/* count floats uniform in [lo, hi) from f's rng, freed by fixture_fini(). */
static float *fixture_uniform(struct fixture *f, size_t count, double lo, double hi)
{
	float *p = fixture_alloc(f, count * sizeof(float));

	fill_uniform(p, count, &f->rng, lo, hi);
	return p;
}

/* f for a rows x cols test, its rng seeded with seed; want and got allocated (not filled). */
static void fixture_init(struct fixture *f, uint32_t rows, uint32_t cols, uint64_t seed)
{
	f->rows = rows;
	f->cols = cols;
	f->n = (size_t)rows * cols;
	f->nbufs = 0;
	az_rng_seed(&f->rng, seed);
	f->want = fixture_alloc(f, f->n * sizeof(float));
	f->got = fixture_alloc(f, f->n * sizeof(float));
}

/* Free every host buffer of f. */
static void fixture_fini(struct fixture *f)
{
	free_each(f->bufs, f->nbufs);
}

static void test_bias_act(void **state)
{
	struct fixture f;

	(void)state;
	fixture_init(&f, 37, 19, 11);
	float *y = fixture_uniform(&f, f.n, -2, 2), *b = fixture_uniform(&f, f.cols, -1, 1);

	for (int act = AZ_CUDA_ACT_NONE; act <= AZ_CUDA_ACT_TANH; act++) {
		float *dy = dev_from(y, f.n * 4), *db = dev_from(b, f.cols * 4);

		for (size_t i = 0; i < f.n; i++) {
			float v = y[i] + b[i % f.cols];

			f.want[i] = act == AZ_CUDA_ACT_RELU   ? relu(v)
				    : act == AZ_CUDA_ACT_TANH ? tanhf(v)
							      : v;
		}
		az_cuda_bias_act(dy, db, f.rows, f.cols, act, NULL);
		check_dev(f.got, dy, f.want, f.n, TOL, "bias_act");
		az_cuda_dev_free(dy);
		az_cuda_dev_free(db);
	}
	fixture_fini(&f);
}

static void test_residual_relu(void **state)
{
	struct fixture f;

	(void)state;
	fixture_init(&f, 33, 70, 12);
	float *out = fixture_uniform(&f, f.n, -2, 2), *h = fixture_uniform(&f, f.n, -2, 2);
	float *b = fixture_uniform(&f, f.cols, -1, 1);

	for (size_t i = 0; i < f.n; i++)
		f.want[i] = relu(h[i] + out[i] + b[i % f.cols]);
	float *dout = dev_from(out, f.n * 4), *dh = dev_from(h, f.n * 4);
	float *db = dev_from(b, f.cols * 4);

	az_cuda_residual_relu(dout, dh, db, f.rows, f.cols, NULL);
	check_dev(f.got, dout, f.want, f.n, TOL, "residual_relu");
	DEV_FREE_ALL(dout, dh, db);
	fixture_fini(&f);
}

/* The column sums of d_c against a double reference. The kernel adds in a tree (partial sums
 * per thread, then a shuffle tree), not the CPU's row order, so the bound is fp32 rounding over a
 * summation of depth at most 64: 64 * 2^-24 * sum |x| per column. A lost or doubled row is off by
 * a whole element, far above it. */
static void check_colsum(const float *d_c, const float *m, uint32_t rows, uint32_t cols)
{
	float *got = xmalloc(cols * 4);

	dev_to(got, d_c, cols * 4);
	for (uint32_t c = 0; c < cols; c++) {
		double want = 0.0, mag = 0.0;

		for (uint32_t r = 0; r < rows; r++) {
			want += m[(size_t)r * cols + c];
			mag += fabs(m[(size_t)r * cols + c]);
		}
		if (!(fabs(got[c] - want) <= 64.0 * 0x1p-24 * mag))
			fail_msg("colsum %ux%u [%u]: gpu %.9g want %.9g (|x| sum %.3g)", rows, cols,
				 c, got[c], want, mag);
	}
	free(got);
}

/* Shapes of the ResNet's bias gradients: many rows (batch x cells) over few columns, one column
 * (value conv), fewer rows than the block, and none. */
static void test_colsum_shapes(void **state)
{
	static const uint32_t shape[][2] = { { 4100, 1 }, { 2700, 2 }, { 1000, 67 }, { 3, 300 },
					     { 256, 33 }, { 0, 5 } };
	struct az_rng rng;

	(void)state;
	az_rng_seed(&rng, 14);
	for (size_t i = 0; i < sizeof(shape) / sizeof(shape[0]); i++) {
		uint32_t rows = shape[i][0], cols = shape[i][1];
		size_t n = (size_t)rows * cols;
		float *m = xmalloc(n * 4 + 4);

		fill_uniform(m, n, &rng, -1, 1);
		float *d_m = dev_from(m, n * 4 + 4), *d_c = dev_poisoned(cols * 4);

		az_cuda_colsum(d_m, rows, cols, d_c, NULL);
		check_colsum(d_c, m, rows, cols);
		DEV_FREE_ALL(d_m, d_c);
		free(m);
	}
}

static void test_relu_grad_colsum(void **state)
{
	struct fixture f;

	(void)state;
	fixture_init(&f, 45, 300, 13);
	float *y = fixture_uniform(&f, f.n, -1, 1), *dy = fixture_uniform(&f, f.n, -1, 1);

	for (size_t i = 0; i < f.n; i++)
		f.want[i] = y[i] > 0.0f ? dy[i] : 0.0f;
	float *d_y = dev_from(y, f.n * 4), *d_dy = dev_from(dy, f.n * 4);
	float *d_g = dev_poisoned(f.n * 4);

	az_cuda_relu_grad(d_y, d_dy, d_g, f.n, NULL);
	check_dev(f.got, d_g, f.want, f.n, 0.0, "relu_grad");

	float *d_c = dev_poisoned(f.cols * 4);

	az_cuda_colsum(d_dy, f.rows, f.cols, d_c, NULL);
	check_colsum(d_c, dy, f.rows, f.cols);
	DEV_FREE_ALL(d_y, d_dy, d_g, d_c);
	fixture_fini(&f);
}

/* Rows with the edge cases first (no legal move, one, all -inf, a NaN logit that is illegal),
 * then random masks; A > the block size so every loop strides. */
static void make_softmax_rows(uint32_t rows, uint32_t A, float *logits, uint8_t *legal,
			      struct az_rng *rng)
{
	fill_uniform(logits, (size_t)rows * A, rng, -8, 8);
	for (size_t i = 0; i < (size_t)rows * A; i++)
		legal[i] = az_rng_uniform(rng) < 0.5;
	memset(legal, 0, A);              /* row 0: no legal move */
	memset(legal + A, 0, A);          /* row 1: exactly one */
	legal[A + A / 2] = 1;
	for (uint32_t i = 0; i < A; i++)  /* row 2: legal logits all -inf */
		logits[2 * A + i] = -INFINITY;
	logits[3 * A + 1] = NAN;          /* row 3: an illegal NaN must not matter */
	legal[3 * A + 1] = 0;
}

static void test_masked_softmax(void **state)
{
	struct fixture f;

	(void)state;
	fixture_init(&f, 9, 300, 14);
	const uint32_t A = f.cols;
	float *logits = fixture_alloc(&f, f.n * 4);
	uint8_t *legal = fixture_alloc(&f, f.n);

	make_softmax_rows(f.rows, A, logits, legal, &f.rng);
	for (uint32_t r = 0; r < f.rows; r++)
		az_masked_softmax(logits + (size_t)r * A, legal + (size_t)r * A, A,
				  f.want + (size_t)r * A);
	float *dl = dev_from(logits, f.n * 4), *dp = dev_poisoned(f.n * 4);
	uint8_t *dm = dev_from(legal, f.n);

	az_cuda_masked_softmax(dl, dm, f.rows, A, dp, NULL);
	check_dev(f.got, dp, f.want, f.n, TOL, "masked_softmax");
	assert_true(f.got[A + A / 2] == 1.0f); /* the single legal move */
	DEV_FREE_ALL(dl, dp, dm);
	fixture_fini(&f);
}

static void test_policy_value_loss(void **state)
{
	const uint32_t rows = 21, A = 150;
	size_t n = (size_t)rows * A;
	double inv_b = 1.0 / rows;
	float *lg = xmalloc(n * 4), *pi = xmalloc(n * 4), *dl_w = xmalloc(n * 4);
	float *dl_g = xmalloc(n * 4), v[21], z[21], dp_w[21], dp_g[21];
	double ce_w[21], ce_g[21], se_w[21], se_g[21];
	struct az_rng rng;

	(void)state;
	az_rng_seed(&rng, 15);
	fill_uniform(lg, n, &rng, -5, 5);
	fill_uniform(pi, n, &rng, 0, 1);
	/* Illegal moves (-0.0f, outside the softmax: train/replay.h) on about a third of the
	 * entries; row 1 marks every entry, which reads unmasked. */
	for (size_t i = 0; i < n; i++)
		if (i / A == 1 || az_rng_uniform(&rng) < 0.3)
			pi[i] = -0.0f;
	for (uint32_t r = 0; r < rows; r++) {
		/* the trainer's own per-row loss (train/trainer.c) is the reference */
		ce_w[r] = az_train_policy_xent(lg + (size_t)r * A, pi + (size_t)r * A, A, inv_b,
					       dl_w + (size_t)r * A);
		v[r] = (float)(2 * az_rng_uniform(&rng) - 1);
		z[r] = (float)az_rng_below(&rng, 3) - 1.0f;
		double d = (double)v[r] - z[r];

		se_w[r] = d * d;
		dp_w[r] = (float)(2.0 * d * (1.0 - (double)v[r] * v[r]) * inv_b);
	}
	float *d_lg = dev_from(lg, n * 4), *d_pi = dev_from(pi, n * 4), *d_dl = dev_poisoned(n * 4);
	float *d_v = dev_from(v, sizeof(v)), *d_z = dev_from(z, sizeof(z));
	float *d_dp = dev_poisoned(sizeof(dp_g));
	double *d_ce = dev_poisoned(sizeof(ce_g)), *d_se = dev_poisoned(sizeof(se_g));
	double *d_sum = dev_poisoned(sizeof(double)), sum_g, sum_w = 0.0;

	az_cuda_policy_xent(d_lg, d_pi, rows, A, inv_b, d_dl, d_ce, NULL);
	az_cuda_value_loss(d_v, NULL, d_z, rows, inv_b, d_dp, d_se, NULL);
	az_cuda_sum_f64(d_ce, rows, d_sum, NULL);
	dev_to(dl_g, d_dl, n * 4);
	dev_to(ce_g, d_ce, sizeof(ce_g));
	dev_to(dp_g, d_dp, sizeof(dp_g));
	dev_to(se_g, d_se, sizeof(se_g));
	dev_to(&sum_g, d_sum, sizeof(sum_g));
	check_close_tol(dl_g, dl_w, n, TOL, "dlogits");
	check_close_f64(ce_g, ce_w, rows, 1e-12, "row_ce");
	check_close_tol(dp_g, dp_w, rows, TOL, "dpre");
	check_close_f64(se_g, se_w, rows, 1e-12, "row_se");
	for (uint32_t r = 0; r < rows; r++)
		sum_w += ce_w[r];
	check_close_f64(&sum_g, &sum_w, 1, 1e-12, "sum_f64");

	/* Evaluation mode: no gradient written (the poison stays). */
	assert_int_equal(az_cuda_memset(d_dl, 0xff, n * 4), 0);
	az_cuda_policy_xent(d_lg, d_pi, rows, A, inv_b, NULL, d_ce, NULL);
	dev_to(dl_g, d_dl, n * 4);
	assert_true(isnan(dl_g[0]) && isnan(dl_g[n - 1]));
	void *bufs[] = { d_lg, d_pi, d_dl, d_v, d_z, d_dp, d_ce, d_se, d_sum };

	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		az_cuda_dev_free(bufs[i]);
	FREE_ALL(lg, pi, dl_w, dl_g);
}

/* The win/draw/loss head's softmax against the CPU's (bias added, then az_wdl_softmax()): random
 * rows after edge rows (an infinite logit each way, a NaN in each position, a saturating gap);
 * more rows than a block so the grid strides. */
static void test_wdl_softmax(void **state)
{
	static const float edge[][3] = { { INFINITY, 0, 0 }, { -INFINITY, 1, 2 },
					 { NAN, 1, 2 },      { 1, NAN, 2 },
					 { 1, 2, NAN },      { 120, -120, 3 } };
	const uint32_t rows = 300, nedge = sizeof(edge) / sizeof(edge[0]);
	struct fixture f;

	(void)state;
	fixture_init(&f, rows, 3, 17);
	float *q = fixture_uniform(&f, f.n, -6, 6), *b = fixture_uniform(&f, 3, -1, 1);
	float *v_w = fixture_alloc(&f, rows * 4), *d_w = fixture_alloc(&f, rows * 4);
	float *v_g = fixture_alloc(&f, rows * 4);

	assert_true(nedge <= rows);
	memcpy(q, edge, sizeof(edge));
	for (uint32_t r = 0; r < rows; r++) {
		float *w = f.want + (size_t)r * 3;

		for (int k = 0; k < 3; k++)
			w[k] = q[(size_t)r * 3 + k] + b[k];
		az_wdl_softmax(w);
		v_w[r] = w[0] - w[2];
		d_w[r] = w[1];
	}
	/* the reference's own edge cases: -inf is a probability of 0, inf or NaN gives 1/3 each */
	assert_true(f.want[3] == 0.0f);
	for (uint32_t r = 0; r < 5; r++)
		assert_true(r == 1 || f.want[(size_t)r * 3 + 1] == 1.0f / 3.0f);
	float *d_q = dev_from(q, f.n * 4), *d_b = dev_from(b, 12), *d_v = dev_poisoned(rows * 4);
	float *d_d = dev_poisoned(rows * 4);

	az_cuda_wdl_softmax(d_q, d_b, rows, d_v, d_d, NULL);
	check_dev(f.got, d_q, f.want, f.n, TOL, "wdl softmax");
	dev_to(v_g, d_v, rows * 4);
	check_close_tol(v_g, v_w, rows, TOL, "wdl value");
	dev_to(v_g, d_d, rows * 4);
	check_close_tol(v_g, d_w, rows, TOL, "wdl draw");
	DEV_FREE_ALL(d_q, d_b, d_v, d_d);
	fixture_fini(&f);
}

/* The win/draw/loss value loss: the cross-entropy against t = (max(z, 0), 1 - |z|, max(-z, 0))
 * (train/trainer.c value_loss()) and its gradient (p - t) inv_b w.r.t. the three logits, for
 * results (z in {-1, 0, 1}), blended targets (z fractional) and a saturated p (the 1e-30 floor). */
static void test_wdl_value_loss(void **state)
{
	const uint32_t rows = 19;
	double inv_b = 1.0 / rows, ce_w[19], ce_g[19];
	float p[19 * 3], z[19], dp_w[19 * 3], dp_g[19 * 3];
	struct az_rng rng;

	(void)state;
	az_rng_seed(&rng, 18);
	fill_uniform(p, rows * 3, &rng, -4, 4);
	for (uint32_t r = 0; r < rows; r++) {
		az_wdl_softmax(p + (size_t)r * 3);
		z[r] = r % 2 ? (float)az_rng_below(&rng, 3) - 1.0f
			     : (float)(2 * az_rng_uniform(&rng) - 1);
	}
	p[0] = 1.0f; /* row 0: certain of a win, and it was lost */
	p[1] = p[2] = 0.0f;
	z[0] = -1.0f;
	for (uint32_t r = 0; r < rows; r++) {
		double za = fabs((double)z[r]);
		double t[3] = { z[r] > 0 ? za : 0.0, 1.0 - za, z[r] < 0 ? za : 0.0 };

		ce_w[r] = 0.0;
		for (int k = 0; k < 3; k++) {
			double pk = p[r * 3 + k];

			if (t[k] > 0.0)
				ce_w[r] -= t[k] * log(pk > 1e-30 ? pk : 1e-30);
			dp_w[r * 3 + k] = (float)((pk - t[k]) * inv_b);
		}
	}
	assert_true(ce_w[0] > 69.0); /* -log(1e-30) */
	float *d_p = dev_from(p, sizeof(p)), *d_z = dev_from(z, sizeof(z));
	float *d_dp = dev_poisoned(sizeof(dp_g));
	double *d_ce = dev_poisoned(sizeof(ce_g));

	/* value is not read for a win/draw/loss head: a NULL pointer shows a stray read */
	az_cuda_value_loss(NULL, d_p, d_z, rows, inv_b, d_dp, d_ce, NULL);
	dev_to(dp_g, d_dp, sizeof(dp_g));
	dev_to(ce_g, d_ce, sizeof(ce_g));
	check_close_tol(dp_g, dp_w, rows * 3, TOL, "wdl dpre");
	check_close_f64(ce_g, ce_w, rows, 1e-12, "wdl row loss");
	/* Evaluation mode: the loss only, no gradient written (the poison stays). */
	assert_int_equal(az_cuda_memset(d_dp, 0xff, sizeof(dp_g)), 0);
	assert_int_equal(az_cuda_memset(d_ce, 0xff, sizeof(ce_g)), 0);
	az_cuda_value_loss(NULL, d_p, d_z, rows, inv_b, NULL, d_ce, NULL);
	dev_to(dp_g, d_dp, sizeof(dp_g));
	dev_to(ce_g, d_ce, sizeof(ce_g));
	assert_true(isnan(dp_g[0]) && isnan(dp_g[rows * 3 - 1]));
	check_close_f64(ce_g, ce_w, rows, 1e-12, "wdl row loss (eval)");
	DEV_FREE_ALL(d_p, d_z, d_dp, d_ce);
}

/* A slot's response fields before a scatter: status 7, value, draw and policy NaN. */
static void poison_response(uint8_t *slot, const struct az_slot_layout *l)
{
	struct az_slot_hdr *h = az_slot_hdr(slot);

	h->status = 7;
	poison(&h->value, sizeof(h->value));
	poison(&h->draw, sizeof(h->draw));
	poison(az_slot_policy(slot, l), l->actions * sizeof(float));
}

/* After a scatter of rows i < n into slots pick[i]: each of those holds the masked softmax of
 * logits[i], value[i], draw[i] (0 when draw is NULL) and status 0; every other slot of the
 * 16 is untouched. */
static void check_scattered(uint8_t *seg, const struct az_slot_layout *l, const uint32_t *pick,
			    uint32_t n, const float *logits, const float *value, const float *draw)
{
	uint32_t A = l->actions;
	float want[16];

	assert_true(A <= 16);
	for (uint32_t s = 0; s < 16; s++) {
		uint8_t *slot = seg + (size_t)s * l->bytes;
		struct az_slot_hdr *h = az_slot_hdr(slot);
		int row = -1;

		for (uint32_t i = 0; i < n; i++)
			if (pick[i] == s)
				row = (int)i;
		if (row < 0) {
			assert_int_equal(h->status, 7);
			assert_true(isnan(h->value) && isnan(h->draw));
			assert_true(isnan(az_slot_policy(slot, l)[0]));
			continue;
		}
		az_masked_softmax(logits + (size_t)row * A, az_slot_legal(slot, l), A, want);
		check_close_tol(az_slot_policy(slot, l), want, A, TOL, "slot policy");
		assert_int_equal(h->status, 0);
		assert_true(h->value == value[row]);
		assert_true(h->draw == (draw ? draw[row] : 0.0f));
	}
}

/* A fake ring segment of 16 slots in page-aligned host memory, registered and mapped: gather 5 of
 * them (scrambled) into a bucket of 8 rows, scatter results back (with a win/draw/loss head's
 * draw probabilities, then without: draw 0); the other 11 slots and the padding rows must stay
 * untouched. */
static void test_gather_scatter(void **state)
{
	const uint32_t D = 11, A = 9, NSLOTS = 16, ROWS = 8, N = 5;
	const uint32_t pick[5] = { 3, 14, 0, 7, 9 };
	struct az_slot_layout l;
	struct az_cuda_slot_geom g;
	struct az_rng rng;
	void *seg = NULL, *dev_base = NULL;
	float logits[8 * 9], value[8], draw[8], x[8 * 11];

	(void)state;
	az_slot_layout_init(&l, D, A);
	az_cuda_slot_geom_init(&g, D, A);
	assert_int_equal(g.bytes, l.bytes);
	/* Whole pages, as the server registers its segment. */
	size_t bytes = ((size_t)NSLOTS * l.bytes + 4095) / 4096 * 4096;

	assert_int_equal(posix_memalign(&seg, 4096, bytes), 0);
	az_rng_seed(&rng, 16);
	for (uint32_t s = 0; s < NSLOTS; s++) {
		uint8_t *slot = (uint8_t *)seg + (size_t)s * l.bytes;

		memset(slot, 0, l.bytes);
		fill_uniform(az_slot_features(slot, &l), D, &rng, -1, 1);
		for (uint32_t a = 0; a < A; a++)
			az_slot_legal(slot, &l)[a] = (uint8_t)(az_rng_uniform(&rng) < 0.6);
		poison_response(slot, &l);
	}
	assert_int_equal(az_cuda_host_register(seg, bytes, &dev_base), 0);
	uint64_t desc[2 + 8];

	desc[0] = N;
	desc[1] = (uint64_t)(uintptr_t)dev_base;
	for (uint32_t i = 0; i < ROWS; i++)
		/* Padding rows' offsets are never read. */
		desc[2 + i] = i < N ? (uint64_t)pick[i] * l.bytes : UINT64_MAX;
	uint64_t *d_desc = dev_from(desc, sizeof(desc));
	float *d_x = dev_poisoned(sizeof(x));

	az_cuda_gather_slots(d_desc, &g, ROWS, d_x, NULL);
	dev_to(x, d_x, sizeof(x));
	for (uint32_t i = 0; i < ROWS; i++) {
		uint8_t *slot = (uint8_t *)seg + (size_t)pick[i % N] * l.bytes;
		const float *src = az_slot_features(slot, &l);

		for (uint32_t j = 0; j < D; j++)
			assert_true(x[i * D + j] == (i < N ? src[j] : 0.0f));
	}

	fill_uniform(logits, ROWS * A, &rng, -3, 3);
	fill_uniform(value, ROWS, &rng, -1, 1);
	fill_uniform(draw, ROWS, &rng, 0, 1);
	float *d_lg = dev_from(logits, sizeof(logits)), *d_v = dev_from(value, sizeof(value));
	float *d_d = dev_from(draw, sizeof(draw)), *d_tmp = dev_poisoned(sizeof(logits));

	for (int wdl = 1; wdl >= 0; wdl--) {
		/* the batch's slots poisoned again: the second pass must write them itself */
		for (uint32_t i = 0; i < N; i++)
			poison_response((uint8_t *)seg + (size_t)pick[i] * l.bytes, &l);
		az_cuda_scatter_slots(d_desc, &g, ROWS, d_lg, d_v, wdl ? d_d : NULL, d_tmp, NULL);
		assert_int_equal(az_cuda_sync(), 0);
		check_scattered(seg, &l, pick, N, logits, value, wdl ? draw : NULL);
	}
	az_cuda_host_unregister(seg);
	DEV_FREE_ALL(d_desc, d_x, d_lg, d_v, d_d, d_tmp);
	free(seg);
}

static void test_optimisers(void **state)
{
	const size_t n = 5000;
	const float b1 = 0.9f, b2 = 0.999f, step = 1e-3f, eps = 1e-8f, mu = 0.9f, lr = 0.01f;
	float *w = xmalloc(n * 4), *g = xmalloc(n * 4), *m = xmalloc(n * 4), *v = xmalloc(n * 4);
	float *got = xmalloc(n * 4);
	uint8_t *decay = xmalloc(n);
	struct az_rng rng;

	(void)state;
	az_rng_seed(&rng, 17);
	fill_uniform(w, n, &rng, -1, 1);
	fill_uniform(g, n, &rng, -0.1, 0.1);
	fill_uniform(m, n, &rng, -0.01, 0.01);
	fill_uniform(v, n, &rng, 0, 1e-4);
	for (size_t i = 0; i < n; i++)
		decay[i] = (uint8_t)(i % 3 != 0);
	float *dw = dev_from(w, n * 4), *dg = dev_from(g, n * 4), *dm = dev_from(m, n * 4);
	float *dv = dev_from(v, n * 4);
	uint8_t *ddecay = dev_from(decay, n);

	/* L2 gradient, sum of squares (before any update) */
	double *d_part = dev_poisoned(AZ_CUDA_REDUCE_BLOCKS * 8), *d_sq = dev_poisoned(8);
	double sq_w = 0.0, sq_g;

	az_cuda_l2_grad(dw, ddecay, n, 2.0f * 1e-4f, dg, NULL);
	az_cuda_sumsq_masked(dw, ddecay, n, d_part, d_sq, NULL);
	for (size_t i = 0; i < n; i++) {
		if (decay[i]) {
			g[i] += 2.0f * 1e-4f * w[i];
			sq_w += (double)w[i] * w[i];
		}
	}
	check_dev(got, dg, g, n, 1e-7, "l2_grad");
	dev_to(&sq_g, d_sq, 8);
	check_close_f64(&sq_g, &sq_w, 1, 1e-12, "sumsq");

	/* Adam, as adam_update() in train/trainer.c */
	az_cuda_adam(dw, dg, dm, dv, n, b1, b2, step, eps, NULL);
	for (size_t i = 0; i < n; i++) {
		m[i] = b1 * m[i] + (1.0f - b1) * g[i];
		v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
		w[i] -= step * m[i] / (sqrtf(v[i]) + eps);
	}
	check_dev(got, dw, w, n, 1e-7, "adam w");
	check_dev(got, dm, m, n, 1e-7, "adam m");
	check_dev(got, dv, v, n, 1e-7, "adam v");

	/* SGD with momentum (m as the velocity) */
	az_cuda_sgd(dw, dg, dm, n, mu, lr, NULL);
	for (size_t i = 0; i < n; i++) {
		m[i] = mu * m[i] + g[i];
		w[i] -= lr * m[i];
	}
	check_dev(got, dw, w, n, 1e-7, "sgd w");
	void *bufs[] = { dw, dg, dm, dv, ddecay, d_part, d_sq };

	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		az_cuda_dev_free(bufs[i]);
	FREE_ALL(w, g, m, v, got, decay);
}

/* The ResNet's im2col, col2im (overwrite and accumulate) and plane transposes against
 * net/model.h's CPU helpers, on a 3x4 board (rows and columns differ), for both input layouts. */
static void test_conv_plumbing(void **state)
{
	enum { NB = 3, C = 5, HB = 3, WB = 4, CELLS = HB * WB, K = 9 * C };
	size_t nin = NB * CELLS * C, ncol = (size_t)NB * CELLS * K;
	float *in = xmalloc(nin * 4), *col = xmalloc(ncol * 4), *got = xmalloc(ncol * 4);
	float *out = xmalloc(nin * 4), *acc = xmalloc(nin * 4);
	struct az_rng rng;

	(void)state;
	az_rng_seed(&rng, 77);
	fill_uniform(in, nin, &rng, -1, 1);
	fill_uniform(acc, nin, &rng, -1, 1);
	float *d_in = dev_from(in, nin * 4), *d_col = dev_poisoned(ncol * 4);

	for (int layout = 0; layout < 2; layout++) { /* plane-major, then channels last */
		size_t sn = (size_t)C * CELLS, sc = layout ? 1 : CELLS, sp = layout ? C : 1;

		az_conv3_im2col(in, NB, C, HB, WB, sn, sc, sp, col);
		az_cuda_im2col(d_in, NB, C, HB, WB, sn, sc, sp, d_col, NULL);
		dev_to(got, d_col, ncol * 4);
		assert_memory_equal(got, col, ncol * 4); /* copies and zeros: exact */
	}
	/* col2im of arbitrary column values (the gradient's case) */
	fill_uniform(col, ncol, &rng, -1, 1);
	float *d_c2 = dev_from(col, ncol * 4), *d_out = dev_poisoned(nin * 4);
	float *d_acc = dev_from(acc, nin * 4);

	memset(out, 0, nin * 4);
	az_conv3_col2im(col, NB, C, HB, WB, out);
	az_cuda_col2im(d_c2, NB, C, HB, WB, d_out, 0, NULL);
	dev_to(got, d_out, nin * 4);
	check_close_tol(got, out, nin, TOL, "col2im");
	az_conv3_col2im(col, NB, C, HB, WB, acc);
	az_cuda_col2im(d_c2, NB, C, HB, WB, d_acc, 1, NULL);
	dev_to(got, d_acc, nin * 4);
	check_close_tol(got, acc, nin, TOL, "col2im accumulate");
	/* planes: channels last [n][q][c] <-> channel-major [n][c][q] */
	float *d_t = dev_poisoned(nin * 4), *d_back = dev_poisoned(nin * 4);

	az_cuda_planes(d_in, NB, CELLS, C, d_t, 1, NULL);
	az_cuda_planes(d_t, NB, CELLS, C, d_back, 0, NULL);
	dev_to(got, d_t, nin * 4);
	for (size_t n = 0; n < NB; n++)
		for (size_t c = 0; c < C; c++)
			for (size_t q = 0; q < CELLS; q++)
				assert_true(got[(n * C + c) * CELLS + q] == in[(n * CELLS + q) * C + c]);
	dev_to(got, d_back, nin * 4);
	assert_memory_equal(got, in, nin * 4);
	DEV_FREE_ALL(d_in, d_col, d_c2, d_out, d_acc, d_t, d_back);
	FREE_ALL(in, col, got, out, acc);
}

int main(void)
{
	skip_without_cuda();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bias_act),
		cmocka_unit_test(test_residual_relu),
		cmocka_unit_test(test_relu_grad_colsum),
		cmocka_unit_test(test_colsum_shapes),
		cmocka_unit_test(test_masked_softmax),
		cmocka_unit_test(test_policy_value_loss),
		cmocka_unit_test(test_wdl_softmax),
		cmocka_unit_test(test_wdl_value_loss),
		cmocka_unit_test(test_gather_scatter),
		cmocka_unit_test(test_optimisers),
		cmocka_unit_test(test_conv_plumbing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
