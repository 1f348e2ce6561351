/* SPDX-License-Identifier: MIT */
/* One POSIX shared-memory segment per run: a validated header, the doorbell, an application
 * control area, then one request ring per worker. azrun alone creates, sizes and unlinks it. */
#ifndef AZ_SEGMENT_H
#define AZ_SEGMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/ring.h"

#define AZ_SEG_MAGIC 0x41525a5253454731ull /* "1GESRZRA" little-endian: RingZero segment */
#define AZ_SEG_VERSION 2u

struct az_seg_params {
	uint32_t nrings;
	uint32_t capacity;   /* per ring, power of two */
	uint32_t slot_bytes; /* multiple of 64 */
	uint32_t ctl_bytes;  /* application control area (rounded up to 64) */
};

/* Segment header (offset 0). Written last by the creator, magic with a release store. */
struct az_seg_hdr_shm {
	/* immutable after init (magic published with release; attachers load-acquire it first) */
	_Atomic uint64_t magic;
	uint32_t version;
	uint32_t layout_hash; /* hash of the struct sizes this binary was built with */
	uint32_t generation;
	uint32_t owner_pid;
	uint32_t nrings;
	uint32_t capacity;
	uint32_t slot_bytes;
	uint32_t ctl_bytes;
	uint64_t ctl_off;
	uint64_t ring_off;
	uint64_t ring_stride;
	uint64_t total_bytes;
	uint8_t pad[2 * AZ_CACHELINE - 72]; /* header fields span 72 bytes: pad to two lines */
	struct az_doorbell_shm bell;
};

/* Process-local handle. */
struct az_seg {
	void *base;
	size_t size;
	struct az_seg_hdr_shm *hdr;
	char name[64];
	int owner; /* 1 when this process created it (and must unlink it) */
};

/* Create (O_CREAT|O_EXCL, mode 0600), size and map segment `name` ("/az-..."), initialise every
 * ring and zero the control area, then publish the header. Returns 0, -EINVAL (bad params or
 * name), -EEXIST (name taken), or another -errno from shm_open/ftruncate/mmap. */
int az_seg_create(struct az_seg *s, const char *name, const struct az_seg_params *p);

/* Map an existing segment and validate its header. Returns 0, -ENOENT, -EACCES (owned by another
 * user, or accessible to others), -EPROTO (magic, version or layout mismatch), or another
 * -errno. */
int az_seg_attach(struct az_seg *s, const char *name);

/* Unmap (any process). The name stays until az_seg_destroy(). */
void az_seg_detach(struct az_seg *s);

/* Unmap and, when this handle created the segment, shm_unlink it. Returns 0 or -errno. */
int az_seg_destroy(struct az_seg *s);

/* Address of the control area (ctl_bytes, 64-byte aligned). */
void *az_seg_ctl(const struct az_seg *s);

/* Attach a handle to ring i (0 <= i < nrings). Returns 0 or -EINVAL / -EPROTO. */
int az_seg_ring(const struct az_seg *s, uint32_t i, struct az_ring *out);

/* Remove segments of this user left by runs whose owner process is gone ("/az-<uid>-<pid>-*"
 * with no process <pid>); live runs are left alone. Writes the removed names, space-separated,
 * into names (may be NULL). Returns how many were removed, or -errno when /dev/shm cannot be
 * read. */
int az_seg_reap_stale(char *names, size_t len);

/* Build the default segment name for this user and run: "/az-<uid>-<pid>-<tag>". */
void az_seg_name(char *buf, size_t len, const char *tag);

#endif
