/* SPDX-License-Identifier: MIT */
/* Backend selection and the optional-op dispatch, on any machine: auto/cpu/cuda choice and its
 * reason, -ENODEV for cuda without a device (what azrun turns into exit code 2), the slot path's
 * staging fallback on the cpu backend (against the reference), and the GPU trainer's -ENODEV. */
#include <errno.h>
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
#include "gpu/cuda_train.h"
#include "shm/slot.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/test_util.h"

static const struct az_arch arch = { .inputs = 9, .hidden = 8, .blocks = 1, .actions = 9 };

static void test_parse(void **state)
{
	enum az_backend_kind k = AZ_BACKEND_CPU;

	(void)state;
	assert_int_equal(az_backend_parse("auto", &k), 0);
	assert_int_equal(k, AZ_BACKEND_AUTO);
	assert_int_equal(az_backend_parse("cuda", &k), 0);
	assert_int_equal(k, AZ_BACKEND_CUDA);
	assert_int_equal(az_backend_parse("gpu", &k), -EINVAL);
}

static void test_selection(void **state)
{
	struct az_backend *b = NULL;
	char why[256];
	int have = az_cuda_available();

	(void)state;
	assert_int_equal(az_cuda_available(), have); /* cached, stable */
	assert_int_equal(az_backend_create(AZ_BACKEND_AUTO, &arch, 4, &b, why, sizeof(why)), 0);
	assert_string_equal(az_backend_name(b), have ? "cuda" : "cpu");
	assert_non_null(strstr(why, have ? "cuda: device visible" : "cpu: "));
	az_backend_destroy(b);
	b = NULL;
	if (have)
		return;
	assert_int_equal(az_backend_create(AZ_BACKEND_CUDA, &arch, 4, &b, why, sizeof(why)),
			 -ENODEV);
	assert_null(b);
	assert_non_null(strstr(why, "cuda requested but unavailable"));
}

/* The cpu backend has no forward_slots of its own: the backend layer's staging fallback serves
 * the slot path (one synchronous stream, no zero copy) and matches the reference forward pass
 * followed by the masked softmax. */
static void test_cpu_slot_fallback(void **state)
{
	enum { N = 3 };
	struct az_backend *b = NULL;
	struct az_model *m = random_model(&arch, 11);
	struct az_slot_layout l;
	struct az_acts acts;
	struct az_rng rng;
	uint64_t off[N];
	float x[N * 9], want[9];
	char why[128];
	uint8_t *seg;

	(void)state;
	az_slot_layout_init(&l, arch.inputs, arch.actions);
	seg = aligned_alloc(64, (size_t)(N + 1) * l.bytes);
	assert_non_null(seg);
	az_rng_seed(&rng, 3);
	for (uint32_t i = 0; i < N; i++) {
		off[i] = (uint64_t)(N - i) * l.bytes; /* out of order, slot 0 unused */
		void *slot = seg + off[i];

		fill_uniform(az_slot_features(slot, &l), arch.inputs, &rng, -1, 1);
		memcpy(x + i * arch.inputs, az_slot_features(slot, &l),
		       arch.inputs * sizeof(float));
		for (uint32_t a = 0; a < arch.actions; a++)
			az_slot_legal(slot, &l)[a] = (uint8_t)((a + i) % 3 != 0);
		az_slot_hdr(slot)->status = 9;
		poison(az_slot_policy(slot, &l), arch.actions * sizeof(float));
	}
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &arch, 4, &b, why, sizeof(why)), 0);
	assert_int_equal(az_backend_slot_streams(b), 0); /* nothing registered yet */
	assert_int_equal(az_backend_register_host(b, seg, (size_t)(N + 1) * l.bytes), 0);
	assert_int_equal(az_backend_slot_streams(b), 1);
	assert_int_equal(az_backend_zero_copy(b), 0);
	assert_int_equal(az_backend_forward_slots(b, 0, 1, off, &l, 0), -EINVAL); /* not loaded */
	assert_int_equal(az_backend_load(b, 0, m), 0);
	assert_int_equal(az_backend_forward_slots(b, 0, N, off, &l, 1), -EINVAL); /* stream */
	assert_int_equal(az_backend_wait_slots(b, 1, 1), -EINVAL);
	assert_int_equal(az_backend_forward_slots(b, 0, N, off, &l, 0), 0);
	assert_int_equal(az_backend_wait_slots(b, 0, 0), 1); /* complete on return */
	assert_int_equal(az_acts_create(&arch, N, &acts), 0);
	az_model_forward(m, N, x, &acts);
	for (uint32_t i = 0; i < N; i++) {
		void *slot = seg + off[i];

		az_masked_softmax(acts.logits + i * arch.actions, az_slot_legal(slot, &l),
				  arch.actions, want);
		assert_int_equal(az_slot_hdr(slot)->status, 0);
		check_close_tol(az_slot_policy(slot, &l), want, arch.actions, 1e-6, "policy");
		check_close_tol(&az_slot_hdr(slot)->value, &acts.value[i], 1, 1e-6, "value");
	}
	az_acts_destroy(&acts);
	az_backend_unregister_host(b);
	assert_int_equal(az_backend_slot_streams(b), 0);
	assert_int_equal(az_backend_forward_slots(b, 0, 1, off, &l, 0), -EINVAL);
	assert_int_equal(az_backend_register_host(NULL, seg, l.bytes), -EINVAL);
	assert_int_equal(az_backend_register_host(b, NULL, l.bytes), -EINVAL);
	az_model_destroy(m);
	az_backend_destroy(b);
	free(seg);
}

static void test_gpu_trainer_needs_device(void **state)
{
	const struct az_cuda_optim o = { .adam = 1, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f,
					 .eps = 1e-8f };
	struct az_cuda_train_dev *t = NULL;
	float params[1] = { 0 };

	(void)state;
	if (az_cuda_available())
		skip();
	assert_int_equal(az_cuda_train_dev_create(&arch, params, &o, 4, &t), -ENODEV);
	assert_null(t);
}

/* `test_backend_select has-cuda`: exit 0 when a device is visible, else 1 (for scripts). */
int main(int argc, char **argv)
{
	az_test_fp32_kernels(); /* compared with the fp32 reference */
	if (argc > 1 && strcmp(argv[1], "has-cuda") == 0)
		return az_cuda_available() ? 0 : 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse), cmocka_unit_test(test_selection),
		cmocka_unit_test(test_cpu_slot_fallback),
		cmocka_unit_test(test_gpu_trainer_needs_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
