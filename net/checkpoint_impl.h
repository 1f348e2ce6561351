/* SPDX-License-Identifier: MIT */
/* What net/checkpoint.c (saving, the header's checksum) and net/checkpoint_load.c (loading)
 * share. Never included from outside net/. */
#ifndef AZ_NET_CHECKPOINT_IMPL_H
#define AZ_NET_CHECKPOINT_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "net/model.h"

/* Tensor bytes are copied straight between memory and file: the format is little-endian float32. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "net/ checkpoints assume a little-endian host (safetensors stores little-endian tensors)"
#endif
_Static_assert(sizeof(float) == 4, "safetensors F32 is 4 bytes");

#define HEADER_MAX (100u * 1024u * 1024u) /* the limit safetensors itself enforces */
#define PAD 8				  /* header padded to a multiple of 8 bytes */

/* Keys of "__metadata__" that a valid checkpoint must carry (arch is checked when present). */
#define CKPT_REQUIRED_META 8
extern const char *const ckpt_required_meta[CKPT_REQUIRED_META];

/* "header_crc32": the CRC-32 of the header's meaning, independent of its layout (key order,
 * spacing, padding) over root (the parsed header). 0 or -ENOMEM. */
int ckpt_header_crc(const cJSON *root, uint32_t *out);

/* Content hash: crc32 over the n tensors' bytes (t: az_model_tensor() order) of m. */
uint32_t ckpt_tensors_crc(const struct az_model *m, const struct az_tensor *t, uint32_t n);

/* 1 with the first non-finite value's tensor and index when m's tensors hold one, else 0. */
int ckpt_find_nonfinite(const struct az_model *m, const struct az_tensor *t, uint32_t n,
			uint32_t *tensor, size_t *index);

#endif
