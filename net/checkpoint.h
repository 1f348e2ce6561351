/* SPDX-License-Identifier: MIT */
/* Checkpoints in the safetensors format: 8-byte little-endian header length, a JSON header
 * mapping tensor names to {dtype "F32", shape, data_offsets} plus a "__metadata__" map of strings
 * (format "ringzero", game, arch "HxR", inputs, actions, iteration, content hash), then the raw
 * little-endian float32 tensors. Readable by safetensors.numpy.load_file and PyTorch. */
#ifndef AZ_CHECKPOINT_H
#define AZ_CHECKPOINT_H

#include <stddef.h>

#include "net/model.h"

/* Write m to path atomically: "<path>.tmp.<pid>" written, fsynced, renamed over path, directory
 * fsynced. Returns 0 or -errno (e.g. -ENOSPC) with a message in err; the old file is untouched
 * on failure. */
int az_ckpt_save(const char *path, const struct az_model *m, char *err, size_t errlen);

/* Read and validate a checkpoint: header length within the file, JSON well-formed, every
 * expected tensor present with dtype F32, the expected shape and in-bounds non-overlapping
 * offsets, metadata complete, content hash matching. On success *out is a new model (caller
 * destroys). Returns 0, -ENOENT, -EINVAL (malformed/truncated/corrupt: err says what and where)
 * or -ENOMEM. */
int az_ckpt_load(const char *path, struct az_model **out, char *err, size_t errlen);

/* The same validation on a checkpoint already in memory: data[len] (borrowed, not modified;
 * need not be NUL-terminated), `name` (may be NULL: "<memory>") used in messages in place of a
 * path. Returns 0, -EINVAL or -ENOMEM as az_ckpt_load; *out as there. az_ckpt_load reads the
 * file and calls this, so fuzzing this entry covers every check. */
int az_ckpt_load_mem(const void *data, size_t len, const char *name, struct az_model **out,
		     char *err, size_t errlen);

#endif
