/* SPDX-License-Identifier: MIT */
/* The ResNet of net/model.h: the im2col forward pass against a naive direct convolution written
 * here from the definition (batches across the AZ_CONV_CHUNK boundary and batch 1), the tensor
 * table's PyTorch names and shapes, the checkpoint round trip with [out, in, kh, kw] shapes in the
 * header, the --net parser, and the cpu backend's answers. */
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
#include "net/checkpoint.h"
#include "gpu/cpu_forward.h"
#include "net/model.h"
#include "tests/gpu/cpu_backend_ref.h"
#include "tests/test_util.h"

/* 3 rows x 4 columns: rows and columns differ, so a transposed index shows. */
enum { C = 2, HB = 3, WB = 4, CELLS = HB * WB, F = 5, R = 2, A = 6, V = AZ_RESNET_VALUE_HIDDEN };

static const struct az_arch arch = {.inputs = C * CELLS, .hidden = F, .blocks = R, .actions = A,
				    .kind = AZ_NET_RESNET, .planes = C, .height = HB,
				    .width = WB};

AZ_TEST_TMPDIR_FIXTURE("/tmp/az-resnet-XXXXXX", "net.safetensors")

static struct az_model *random_model(uint64_t seed)
{
	struct az_model *m = NULL;
	struct az_rng rng;

	assert_int_equal(az_model_create(&arch, &m), 0);
	az_rng_seed(&rng, seed);
	for (size_t i = 0; i < m->n_params; i++)
		m->params[i] = (float)(0.4 * az_rng_normal(&rng));
	snprintf(m->game, sizeof(m->game), "test");
	return m;
}

static void random_input(float *x, uint32_t batch, uint64_t seed)
{
	struct az_rng rng;

	az_rng_seed(&rng, seed);
	for (size_t i = 0; i < (size_t)batch * C * CELLS; i++)
		x[i] = az_rng_uniform(&rng) < 0.4 ? 1.0f : 0.0f;
}

/* ---- the naive reference: NCHW tensors, loops straight from the definitions ---- */

/* out[co][y][x] = b[co] + sum_ci sum_ky sum_kx w[co][ci][ky][kx] in[ci][y+ky-1][x+kx-1],
 * zero padding; k = 3 or 1 (then no offset). */
static void naive_conv(const double *in, uint32_t cin, uint32_t cout, uint32_t k,
		       const float *w, const float *b, double *out)
{
	int pad = k == 3;

	for (uint32_t co = 0; co < cout; co++)
		for (int y = 0; y < HB; y++)
			for (int x = 0; x < WB; x++) {
				double s = b[co];

				for (uint32_t ci = 0; ci < cin; ci++)
					for (int ky = 0; ky < (int)k; ky++)
						for (int kx = 0; kx < (int)k; kx++) {
							int yy = y + ky - pad, xx = x + kx - pad;

							if (yy < 0 || xx < 0 || yy >= HB || xx >= WB)
								continue;
							s += (double)w[((co * cin + ci) * k + (uint32_t)ky) *
								       k + (uint32_t)kx] *
							     in[(ci * HB + (uint32_t)yy) * WB + (uint32_t)xx];
						}
				out[(co * HB + (uint32_t)y) * WB + (uint32_t)x] = s;
			}
}

static void relu_d(double *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = v[i] > 0.0 ? v[i] : 0.0;
}

/* y[o] = b[o] + sum_i w[o][i] x[i] */
static void naive_fc(const double *x, uint32_t in, uint32_t out, const float *w, const float *b,
		     double *y)
{
	for (uint32_t o = 0; o < out; o++) {
		double s = b[o];

		for (uint32_t i = 0; i < in; i++)
			s += (double)w[(size_t)o * in + i] * x[i];
		y[o] = s;
	}
}

/* One sample through the net, parameters found by name (not by the layout's offsets). */
static void naive_forward(const struct az_model *m, const float *x, double *logits, double *value)
{
	double h[F * CELLS], t[F * CELLS], u[F * CELLS], in[C * CELLS], p[2 * CELLS], v[CELLS];
	double vh[V], val;
	const float *w[2 + 4 * R + 10];

	for (uint32_t i = 0; i < az_model_tensor_count(&arch); i++) {
		struct az_tensor tt;

		assert_int_equal(az_model_tensor(&arch, i, &tt), 0);
		w[i] = m->params + tt.offset;
	}
	for (int i = 0; i < C * CELLS; i++)
		in[i] = x[i];
	naive_conv(in, C, F, 3, w[0], w[1], h);
	relu_d(h, F * CELLS);
	for (int r = 0; r < R; r++) {
		const float *const *bw = w + 2 + 4 * r;

		naive_conv(h, F, F, 3, bw[0], bw[1], t);
		relu_d(t, F * CELLS);
		naive_conv(t, F, F, 3, bw[2], bw[3], u);
		for (int i = 0; i < F * CELLS; i++)
			h[i] = h[i] + u[i] > 0.0 ? h[i] + u[i] : 0.0;
	}
	const float *const *hw = w + 2 + 4 * R;

	naive_conv(h, F, 2, 1, hw[0], hw[1], p);
	relu_d(p, 2 * CELLS);
	naive_fc(p, 2 * CELLS, A, hw[2], hw[3], logits);
	naive_conv(h, F, 1, 1, hw[4], hw[5], v);
	relu_d(v, CELLS);
	naive_fc(v, CELLS, V, hw[6], hw[7], vh);
	relu_d(vh, V);
	naive_fc(vh, V, 1, hw[8], hw[9], &val);
	*value = tanh(val);
}

static void check_forward(uint32_t batch)
{
	struct az_model *m = random_model(7);
	float *x = malloc((size_t)batch * C * CELLS * sizeof(float));
	struct az_acts acts;
	double lg[A], val, spread = 0.0;

	assert_non_null(x);
	random_input(x, batch, 11 + batch);
	assert_int_equal(az_acts_create(&arch, batch, &acts), 0);
	az_model_forward(m, batch, x, &acts);
	for (uint32_t b = 0; b < batch; b++) {
		naive_forward(m, x + (size_t)b * C * CELLS, lg, &val);
		for (int a = 0; a < A; a++) {
			double got = acts.logits[b * A + a];

			if (!(fabs(got - lg[a]) <= 1e-4 * (1.0 + fabs(lg[a]))))
				fail_msg("batch %u row %u logit %d: %.7g, naive %.7g", batch, b, a,
					 got, lg[a]);
			spread += fabs(lg[a]);
		}
		if (!(fabs(acts.value[b] - val) <= 1e-5))
			fail_msg("batch %u row %u value: %.7g, naive %.7g", batch, b,
				 (double)acts.value[b], val);
	}
	assert_true(spread > 0.1 * batch); /* the comparison saw non-trivial logits */
	az_acts_destroy(&acts);
	free(x);
	az_model_destroy(m);
}

static void test_forward_matches_naive(void **state)
{
	(void)state;
	check_forward(1);                  /* the GEMV path */
	check_forward(3);
	check_forward(AZ_CONV_CHUNK + 3); /* two im2col chunks, the second partial */
}

/* Names and shapes a PyTorch state_dict of nn.Conv2d / nn.Linear layers has. */
static void test_tensor_table(void **state)
{
	static const struct {
		const char *name;
		uint32_t ndim, shape[4];
	} want[] = {
		{"trunk.conv.weight", 4, {F, C, 3, 3}}, {"trunk.conv.bias", 1, {F}},
		{"block.0.conv1.weight", 4, {F, F, 3, 3}}, {"block.0.conv1.bias", 1, {F}},
		{"block.0.conv2.weight", 4, {F, F, 3, 3}}, {"block.0.conv2.bias", 1, {F}},
		{"block.1.conv1.weight", 4, {F, F, 3, 3}}, {"block.1.conv1.bias", 1, {F}},
		{"block.1.conv2.weight", 4, {F, F, 3, 3}}, {"block.1.conv2.bias", 1, {F}},
		{"policy.conv.weight", 4, {2, F, 1, 1}}, {"policy.conv.bias", 1, {2}},
		{"policy.fc.weight", 2, {A, 2 * CELLS}}, {"policy.fc.bias", 1, {A}},
		{"value.conv.weight", 4, {1, F, 1, 1}}, {"value.conv.bias", 1, {1}},
		{"value.fc1.weight", 2, {V, CELLS}}, {"value.fc1.bias", 1, {V}},
		{"value.fc2.weight", 2, {1, V}}, {"value.fc2.bias", 1, {1}},
	};
	size_t off = 0;

	(void)state;
	assert_int_equal(az_model_tensor_count(&arch), sizeof(want) / sizeof(want[0]));
	for (uint32_t i = 0; i < az_model_tensor_count(&arch); i++) {
		struct az_tensor t;
		size_t numel = 1;

		assert_int_equal(az_model_tensor(&arch, i, &t), 0);
		assert_string_equal(t.name, want[i].name);
		assert_int_equal(t.ndim, want[i].ndim);
		for (uint32_t k = 0; k < t.ndim; k++) {
			assert_int_equal(t.shape[k], want[i].shape[k]);
			numel *= t.shape[k];
		}
		assert_int_equal((size_t)t.rows * t.cols, numel);
		assert_int_equal(t.offset, off);
		off += numel;
	}
	assert_int_equal(off, az_model_param_count(&arch));
}

static void test_checkpoint_roundtrip(void **state)
{
	struct az_model *m = random_model(3), *back = NULL;
	char err[512];
	size_t len = 0;

	(void)state;
	m->iteration = 4;
	assert_int_equal(az_ckpt_save(path, m, err, sizeof(err)), 0);
	assert_int_equal(az_ckpt_load(path, &back, err, sizeof(err)), 0);
	assert_true(az_arch_equal(&back->arch, &arch));
	assert_int_equal(back->n_params, m->n_params);
	assert_memory_equal(back->params, m->params, m->n_params * sizeof(float));
	assert_int_equal(back->iteration, 4);

	/* the header carries conv weights as [out, in, kh, kw] and says what the net is */
	unsigned char *buf = az_test_read_file(path, &len);

	assert_non_null(strstr((char *)buf + 8, "\"trunk.conv.weight\":{\"dtype\":\"F32\","
					       "\"shape\":[5,2,3,3]"));
	assert_non_null(strstr((char *)buf + 8, "\"policy.conv.weight\":{\"dtype\":\"F32\","
					       "\"shape\":[2,5,1,1]"));
	assert_non_null(strstr((char *)buf + 8, "\"net\":\"resnet\""));
	assert_non_null(strstr((char *)buf + 8, "\"arch\":\"resnet:5x2\""));

	/* a file claiming another board shape no longer fits its tensors: refused with the name */
	char *w = strstr((char *)buf + 8, "\"width\":\"4\"");

	assert_non_null(w);
	w[10] = '6';
	az_model_destroy(back);
	back = NULL;
	assert_int_equal(az_ckpt_load_mem(buf, len, "edited", &back, err, sizeof(err)), -EINVAL);
	assert_null(back);
	assert_non_null(strstr(err, "edited"));
	free(buf);
	az_model_destroy(m);
}

static void test_parse_net(void **state)
{
	uint32_t kind = 9, h = 0, b = 0;

	(void)state;
	assert_int_equal(az_arch_parse_net("resnet:32x3", &kind, &h, &b), 0);
	assert_int_equal(kind, AZ_NET_RESNET);
	assert_int_equal(h, 32);
	assert_int_equal(b, 3);
	assert_int_equal(az_arch_parse_net("mlp:128x0", &kind, &h, &b), 0);
	assert_int_equal(kind, AZ_NET_MLP);
	assert_int_equal(h, 128);
	assert_int_equal(b, 0);
	assert_int_equal(az_arch_parse_net("resnet", &kind, &h, &b), 0); /* kind only */
	assert_int_equal(kind, AZ_NET_RESNET);
	assert_int_equal(h, 128);
	const char *bad[] = {"resnet:", "resnet:32", "resnet:0x3", "cnn:32x3", "resnet32x3",
			     "mlp:8x", "resnetx", ""};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(az_arch_parse_net(bad[i], &kind, &h, &b), -EINVAL);

	char text[32];
	struct az_arch a = arch;

	az_arch_format(&a, text, sizeof(text));
	assert_string_equal(text, "resnet:5x2");
	/* the board must cover the input exactly */
	a.width = 5;
	assert_false(az_arch_valid(&a));
	assert_true(az_arch_valid(&arch));
	struct az_model *m = NULL;

	assert_int_equal(az_model_create(&a, &m), -EINVAL);
}

/* The cpu backend serves a ResNet with az_model_forward's answers (the cuda backend's parity:
 * tests/gpu/test_backend_cuda.c). */
static void test_backends(void **state)
{
	struct az_model *m = random_model(5);
	struct az_backend *be = NULL;
	struct az_acts acts;
	float x[4 * C * CELLS], logits[4 * A], value[4];
	char why[256];

	(void)state;
	random_input(x, 4, 99);
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &arch, 8, &be, why, sizeof(why)), 0);
	assert_int_equal(az_backend_load(be, 0, m), 0);
	assert_int_equal(az_backend_forward(be, 0, 4, x, logits, value, NULL), 0);
	assert_int_equal(az_acts_create(&arch, 4, &acts), 0);
	cpu_backend_forward(m, 4, x, &acts);
	assert_memory_equal(logits, acts.logits, sizeof(logits));
	assert_memory_equal(value, acts.value, sizeof(value));
	/* a model of another architecture (an MLP of the same sizes) is refused */
	struct az_arch mlp = {.inputs = arch.inputs, .hidden = F, .blocks = R, .actions = A};
	struct az_model *other = NULL;

	assert_int_equal(az_model_create(&mlp, &other), 0);
	assert_int_equal(az_backend_load(be, 1, other), -EINVAL);
	az_model_destroy(other);
	az_backend_destroy(be);
	az_acts_destroy(&acts);
	az_model_destroy(m);
}

/* test_resnet --forward CKPT: the logits and value of CKPT's net for x[i] = (i * 7 % 5 == 0),
 * "l0 l1 ... | v", for tests/tools/check_resnet_numpy.py to recompute in NumPy. */
static int print_forward(const char *ckpt)
{
	struct az_model *m = NULL;
	struct az_acts acts;
	char err[512];

	if (az_ckpt_load(ckpt, &m, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	float *x = calloc(m->arch.inputs, sizeof(float));

	if (!x || az_acts_create(&m->arch, 1, &acts) < 0)
		return 2;
	for (uint32_t i = 0; i < m->arch.inputs; i++)
		x[i] = i * 7 % 5 == 0 ? 1.0f : 0.0f;
	az_model_forward(m, 1, x, &acts);
	for (uint32_t a = 0; a < m->arch.actions; a++)
		printf("%.9g ", (double)acts.logits[a]);
	printf("| %.9g\n", (double)acts.value[0]);
	az_acts_destroy(&acts);
	free(x);
	az_model_destroy(m);
	return 0;
}

int main(int argc, char **argv)
{
	az_test_fp32_kernels(); /* compared with the fp32 reference */
	if (argc == 3 && strcmp(argv[1], "--forward") == 0)
		return print_forward(argv[2]);

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward_matches_naive),
		cmocka_unit_test(test_tensor_table),
		cmocka_unit_test_setup_teardown(test_checkpoint_roundtrip, setup, teardown),
		cmocka_unit_test(test_parse_net),
		cmocka_unit_test(test_backends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
