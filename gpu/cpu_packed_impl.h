/* SPDX-License-Identifier: MIT */
/* What gpu/cpu_packed.c (packing) and gpu/cpu_packed_kernels.c (the kernels) share: the panel
 * geometry and the tile height. Private to gpu/. */
#ifndef AZ_GPU_CPU_PACKED_IMPL_H
#define AZ_GPU_CPU_PACKED_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/cpu_packed.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

/* Rows of a tile, fp32 and bf16 alike (12 rows for bf16, 24 accumulators, measured no faster
 * on AMD EPYC: azbench infer, resnet:32x3 and mlp 128x3, within noise). */
#define MR 8u

/* Panels of AZ_PACKED_PANEL outputs: ceil(out / AZ_PACKED_PANEL). */
static inline size_t panels(uint32_t out)
{
	return (out + AZ_PACKED_PANEL - 1) / AZ_PACKED_PANEL;
}

/* Column pairs of a bf16 panel row: ceil(in / 2). */
static inline size_t pairs(uint32_t in)
{
	return ((size_t)in + 1) / 2;
}

#endif
