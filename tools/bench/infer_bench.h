/* SPDX-License-Identifier: MIT */
/* What `azbench infer` measures, shared with `azbench pipeline` (which judges the pipeline
 * against it): the forward-pass throughput of one backend alone, no rings. Private to
 * tools/bench/. */
#ifndef AZ_BENCH_INFER_BENCH_H
#define AZ_BENCH_INFER_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/backend.h"
#include "net/model.h"

/* Forward passes of a random-init network of arch `a` on backend `kind` at each batch size
 * batches[0..n-1] (each >= 1), for about `seconds_each` seconds each after two warm-up passes;
 * the rate of the fastest of 5 equal slices counts (other load on the machine blurs it less).
 * Inputs are random 0/1 planes (the cost does not depend on the values).
 * evals_per_s[i] receives rows per second at batches[i]. The backend actually used ("cpu",
 * "cuda") and why go to `why`. Creates and destroys its own backend: with CUDA, call it only in
 * a process that will not fork children which use the GPU. Returns 0, -ENODEV (cuda asked for,
 * none usable), -EINVAL or -ENOMEM. */
int az_bench_infer_measure(enum az_backend_kind kind, const struct az_arch *a,
			   const uint32_t *batches, int n, double seconds_each, double *evals_per_s,
			   char *why, size_t whylen);

#endif
