/* SPDX-License-Identifier: MIT */
/* Backend selection and the optional-op dispatch, on any machine: auto/cpu/cuda choice and its
 * reason, -ENODEV for cuda without a device (what azrun turns into exit code 2), the zero-copy
 * ops as no-ops / -EINVAL on the cpu backend, and the GPU trainer's -ENODEV. */
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
#include "gpu/cuda_train.h"
#include "shm/slot.h"

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

static void test_cpu_has_no_slot_path(void **state)
{
	struct az_backend *b = NULL;
	struct az_model *m = NULL;
	struct az_slot_layout l;
	uint64_t off = 0;
	char why[128], seg[4096];

	(void)state;
	az_slot_layout_init(&l, arch.inputs, arch.actions);
	assert_int_equal(az_backend_create(AZ_BACKEND_CPU, &arch, 4, &b, why, sizeof(why)), 0);
	assert_int_equal(az_model_create(&arch, &m), 0);
	assert_int_equal(az_backend_load(b, 0, m), 0);
	assert_int_equal(az_backend_register_host(b, seg, sizeof(seg)), 0); /* nothing to do */
	assert_int_equal(az_backend_slot_streams(b), 0);
	assert_int_equal(az_backend_forward_slots(b, 0, 1, &off, &l, 0), -EINVAL);
	assert_int_equal(az_backend_wait_slots(b, 0, 1), -EINVAL);
	az_backend_unregister_host(b);
	assert_int_equal(az_backend_register_host(NULL, seg, sizeof(seg)), -EINVAL);
	assert_int_equal(az_backend_register_host(b, NULL, sizeof(seg)), -EINVAL);
	az_model_destroy(m);
	az_backend_destroy(b);
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
	if (argc > 1 && strcmp(argv[1], "has-cuda") == 0)
		return az_cuda_available() ? 0 : 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_selection),
		cmocka_unit_test(test_cpu_has_no_slot_path),
		cmocka_unit_test(test_gpu_trainer_needs_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
