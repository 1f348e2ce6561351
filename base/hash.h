/* SPDX-License-Identifier: MIT */
/* FNV-1a, the byte hash of the state tables (games/solve.c, eval/tangled_labels.c): small,
 * header-only, no state. */
#ifndef AZ_BASE_HASH_H
#define AZ_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's 64-bit offset basis: the h to start a hash with. */
#define AZ_FNV1A_INIT 14695981039346656037ull

/* 64-bit FNV-1a of n bytes at p, continuing from h (AZ_FNV1A_INIT for a fresh hash), so that a
 * hash may be fed in pieces. Pure; any thread. */
static inline uint64_t az_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

#endif
