/* SPDX-License-Identifier: MIT */
/* The cpu backend's answer for a model, computed without a backend (header-only, included
 * after <cmocka.h>): what a test compares az_backend_forward() with, bit for bit. */
#ifndef AZ_TESTS_CPU_BACKEND_REF_H
#define AZ_TESTS_CPU_BACKEND_REF_H

#include <stdint.h>

#include "gpu/cpu_forward.h"
#include "gpu/cpu_gemm.h"
#include "net/model.h"

/* What the cpu backend computes for m on this machine: az_model_forward_packed() with the
 * kernel az_cpu_gemm_select() picks (the OpenBLAS forward pass, or the packed AVX-512 one). */
static inline void cpu_backend_forward(const struct az_model *m, uint32_t batch, const float *x,
				       struct az_acts *acts)
{
	enum az_cpu_gemm kind;
	struct az_packed pk;

	assert_int_equal(az_cpu_gemm_select(&kind), 0);
	if (kind == AZ_CPU_GEMM_BLAS) {
		az_model_forward(m, batch, x, acts);
		return;
	}
	assert_int_equal(az_packed_alloc(&m->arch, &pk), 0);
	az_packed_update(m, &pk);
	az_model_forward_packed(m, &pk, batch, x, acts);
	az_packed_destroy(&pk);
}

#endif
