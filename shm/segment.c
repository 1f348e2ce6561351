/* SPDX-License-Identifier: MIT */
/* The run's POSIX shared-memory segment: create (size, initialise, publish the header last),
 * attach (validate the header before anything else), detach and destroy. */

/*
 * Layout (all offsets multiples of AZ_CACHELINE, no pointers in shared memory):
 *
 *   0            struct az_seg_hdr_shm (header: two lines, then the doorbell on its own line)
 *   ctl_off      control area, ctl_bytes (application defined, zeroed at create)
 *   ring_off     ring 0: struct az_ring_shm + capacity x slot_bytes
 *   + i*stride   ring i
 *   total_bytes  == the size of the shm object
 *
 * Publication: the creator writes every ring and header field with plain stores and then stores
 * magic with release (R6). An attacher load-acquires magic first (A6) and reads nothing else
 * unless it matches, so a half-built segment reads as -EPROTO (the attacher retries) and a
 * complete one is seen whole. The header is otherwise untrusted input: each field is loaded once
 * and checked against the size of the mapping before it is used to compute an address.
 */

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/az_assert.h"
#include "shm/segment.h"

_Static_assert(sizeof(struct az_seg_hdr_shm) == 3 * AZ_CACHELINE, "header (2 lines) + doorbell");
_Static_assert(offsetof(struct az_seg_hdr_shm, magic) == 0, "magic first");
_Static_assert(offsetof(struct az_seg_hdr_shm, total_bytes) == 64, "fixed header offsets");
_Static_assert(offsetof(struct az_seg_hdr_shm, bell) == 2 * AZ_CACHELINE, "doorbell own line");
_Static_assert(_Alignof(struct az_seg_hdr_shm) <= AZ_CACHELINE, "no over-aligned members");

/* FNV-1a over the sizes and offsets that define the shared layout, so that two binaries built
 * from different headers refuse to talk (-EPROTO) instead of misreading each other. */
static uint32_t layout_hash(void)
{
	const uint64_t v[] = {
		sizeof(struct az_seg_hdr_shm),
		offsetof(struct az_seg_hdr_shm, ctl_off),
		offsetof(struct az_seg_hdr_shm, ring_off),
		offsetof(struct az_seg_hdr_shm, total_bytes),
		offsetof(struct az_seg_hdr_shm, bell),
		sizeof(struct az_doorbell_shm),
		offsetof(struct az_doorbell_shm, seq),
		offsetof(struct az_doorbell_shm, sleeping),
		sizeof(struct az_ring_shm),
		offsetof(struct az_ring_shm, capacity),
		offsetof(struct az_ring_shm, published),
		offsetof(struct az_ring_shm, consumed),
		offsetof(struct az_ring_shm, wait_mark),
		offsetof(struct az_ring_shm, served),
		offsetof(struct az_ring_shm, served_futex),
		offsetof(struct az_ring_shm, producer_sleeping),
		AZ_CACHELINE,
		AZ_RING_MAGIC,
	};
	uint32_t h = 2166136261u;
	size_t i, b;

	for (i = 0; i < AZ_ARRAY_LEN(v); i++) {
		for (b = 0; b < 8; b++) {
			h ^= (uint8_t)(v[i] >> (8 * b));
			h *= 16777619u;
		}
	}
	return h;
}

static uint64_t round_line(uint64_t n)
{
	return (n + AZ_CACHELINE - 1) & ~(uint64_t)(AZ_CACHELINE - 1);
}

/* "/name": one leading slash, no other, short enough for the handle and for NAME_MAX. */
static int name_ok(const char *name)
{
	size_t len;

	if (!name || name[0] != '/')
		return 0;
	len = strlen(name);
	return len >= 2 && len < sizeof(((struct az_seg *)0)->name) && !strchr(name + 1, '/');
}

/* Geometry shared by create and attach: fills the offsets of h from its sizes. Returns 0 or
 * -EINVAL when the sizes are invalid or the total overflows. */
static int seg_layout(uint32_t nrings, uint32_t capacity, uint32_t slot_bytes, uint32_t ctl_bytes,
		      uint64_t *ctl_off, uint64_t *ring_off, uint64_t *stride, uint64_t *total)
{
	size_t ring_bytes = az_ring_memsize(capacity, slot_bytes);

	if (nrings == 0 || ring_bytes == 0)
		return -EINVAL;
	*ctl_off = sizeof(struct az_seg_hdr_shm);
	*ring_off = *ctl_off + round_line(ctl_bytes);
	*stride = round_line(ring_bytes);
	if (*stride > (UINT64_MAX - *ring_off) / nrings)
		return -EINVAL;
	*total = *ring_off + *stride * nrings;
	if (*total > (uint64_t)PTRDIFF_MAX) /* must fit both off_t and size_t */
		return -EINVAL;
	return 0;
}

static uint32_t new_generation(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint32_t)ts.tv_sec * 1000003u) ^ (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() ^ 1u;
}

int az_seg_create(struct az_seg *s, const char *name, const struct az_seg_params *p)
{
	uint64_t ctl_off, ring_off, stride, total;
	struct az_seg_hdr_shm *hdr;
	void *base;
	uint32_t i;
	int fd, err;

	if (!s || !p || !name_ok(name))
		return -EINVAL;
	err = seg_layout(p->nrings, p->capacity, p->slot_bytes, p->ctl_bytes, &ctl_off, &ring_off,
			 &stride, &total);
	if (err)
		return err;

	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)total) < 0) {
		err = -errno;
		goto err_unlink;
	}
	base = mmap(NULL, (size_t)total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto err_unlink;
	}
	close(fd); /* the mapping keeps the object alive */

	hdr = base;
	memset(hdr, 0, sizeof(*hdr));
	memset((uint8_t *)base + ctl_off, 0, (size_t)(ring_off - ctl_off));
	for (i = 0; i < p->nrings; i++) {
		err = az_ring_init((uint8_t *)base + ring_off + i * stride, p->capacity,
				   p->slot_bytes);
		AZ_ASSERT(err == 0); /* geometry was validated by seg_layout() */
	}
	hdr->version = AZ_SEG_VERSION;
	hdr->layout_hash = layout_hash();
	hdr->generation = new_generation();
	hdr->owner_pid = (uint32_t)getpid();
	hdr->nrings = p->nrings;
	hdr->capacity = p->capacity;
	hdr->slot_bytes = p->slot_bytes;
	hdr->ctl_bytes = (uint32_t)(ring_off - ctl_off);
	hdr->ctl_off = ctl_off;
	hdr->ring_off = ring_off;
	hdr->ring_stride = stride;
	hdr->total_bytes = total;
	/* R6: publish the whole segment; pairs with A6 in az_seg_attach(). */
	atomic_store_explicit(&hdr->magic, AZ_SEG_MAGIC, memory_order_release);

	s->base = base;
	s->size = (size_t)total;
	s->hdr = hdr;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->owner = 1;
	return 0;

err_unlink:
	shm_unlink(name);
	close(fd);
	return err;
}

/* Validate an attached header against the mapping size. Returns 0 or -EPROTO. */
static int seg_check(const struct az_seg_hdr_shm *hdr, size_t size)
{
	uint64_t ctl_off, ring_off, stride, total;
	/* Each field is read once into a local (the peer could change it under us). */
	uint32_t nrings = hdr->nrings, capacity = hdr->capacity, slot_bytes = hdr->slot_bytes;
	uint32_t ctl_bytes = hdr->ctl_bytes;

	if (hdr->version != AZ_SEG_VERSION || hdr->layout_hash != layout_hash())
		return -EPROTO;
	if (seg_layout(nrings, capacity, slot_bytes, ctl_bytes, &ctl_off, &ring_off, &stride,
		       &total))
		return -EPROTO;
	if (hdr->ctl_off != ctl_off || hdr->ring_off != ring_off || hdr->ring_stride != stride ||
	    hdr->total_bytes != total || total != size)
		return -EPROTO;
	return 0;
}

int az_seg_attach(struct az_seg *s, const char *name)
{
	struct az_seg_hdr_shm *hdr;
	struct stat st;
	void *base;
	int fd, err;

	if (!s || !name_ok(name))
		return -EINVAL;
	fd = shm_open(name, O_RDWR, 0);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto err_close;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
		err = -EACCES; /* another user's segment, or one others may touch: never trust it */
		goto err_close;
	}
	if (st.st_size < (off_t)sizeof(*hdr)) {
		err = -EPROTO; /* not sized yet, or not ours */
		goto err_close;
	}
	base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	hdr = base;
	/* A6: pairs with R6 in az_seg_create(): the rest of the header and rings are visible. */
	if (atomic_load_explicit(&hdr->magic, memory_order_acquire) != AZ_SEG_MAGIC) {
		err = -EPROTO;
		goto err_unmap;
	}
	err = seg_check(hdr, (size_t)st.st_size);
	if (err)
		goto err_unmap;
	close(fd);

	s->base = base;
	s->size = (size_t)st.st_size;
	s->hdr = hdr;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->owner = 0;
	return 0;

err_unmap:
	munmap(base, (size_t)st.st_size);
err_close:
	close(fd);
	return err;
}

void az_seg_detach(struct az_seg *s)
{
	if (!s || !s->base)
		return;
	munmap(s->base, s->size);
	s->base = NULL;
	s->hdr = NULL;
	s->size = 0;
}

int az_seg_destroy(struct az_seg *s)
{
	int owner;

	if (!s)
		return -EINVAL;
	owner = s->owner;
	az_seg_detach(s);
	s->owner = 0;
	if (owner && shm_unlink(s->name) < 0)
		return -errno;
	return 0;
}

void *az_seg_ctl(const struct az_seg *s)
{
	/* Validated against the mapping size at create/attach; reloaded once here. */
	uint64_t off = s->hdr->ctl_off;

	AZ_ASSERT(off < s->size);
	return (uint8_t *)s->base + off;
}

int az_seg_ring(const struct az_seg *s, uint32_t i, struct az_ring *out)
{
	const struct az_seg_hdr_shm *hdr = s->hdr;
	/* Loaded once and re-checked against our own mapping size: the header is shared. */
	uint32_t nrings = hdr->nrings, capacity = hdr->capacity, slot_bytes = hdr->slot_bytes;
	uint64_t ring_off = hdr->ring_off, stride = hdr->ring_stride;
	size_t ring_bytes = az_ring_memsize(capacity, slot_bytes);
	uint64_t off;
	int err;

	if (i >= nrings)
		return -EINVAL;
	if (ring_bytes == 0 || stride < ring_bytes || ring_off % AZ_CACHELINE ||
	    stride % AZ_CACHELINE || stride > s->size || ring_off > s->size - stride ||
	    i > (s->size - stride - ring_off) / stride)
		return -EPROTO;
	off = ring_off + (uint64_t)i * stride;
	err = az_ring_attach(out, (uint8_t *)s->base + off, &s->hdr->bell);
	if (err)
		return err;
	/* The ring's own geometry must agree with the header, or it could run past its stride. */
	if (out->capacity != capacity || out->slot_bytes != slot_bytes)
		return -EPROTO;
	return 0;
}

void az_seg_name(char *buf, size_t len, const char *tag)
{
	snprintf(buf, len, "/az-%u-%ld-%s", (unsigned)getuid(), (long)getpid(), tag ? tag : "run");
}

/* 1 when process pid no longer runs: gone, or a zombie nobody has reaped yet. */
static int pid_dead(long pid)
{
	char path[64], buf[512];
	if (kill((pid_t)pid, 0) < 0)
		return errno == ESRCH;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *rp = strrchr(buf, ')'); /* the command name may itself contain ')' */
	return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

int az_seg_reap_stale(char *names, size_t len)
{
	char prefix[32];
	int n = 0;
	size_t used = 0;
	DIR *d = opendir("/dev/shm");

	if (names && len)
		names[0] = 0;
	if (!d)
		return -errno;
	snprintf(prefix, sizeof(prefix), "az-%u-", (unsigned)getuid());
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		char *end;
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		long pid = strtol(e->d_name + strlen(prefix), &end, 10);
		if (end == e->d_name + strlen(prefix) || *end != '-' || pid <= 0)
			continue;
		if (!pid_dead(pid))
			continue; /* the owner lives (or is not ours to judge): leave it alone */
		char name[300];
		snprintf(name, sizeof(name), "/%s", e->d_name);
		if (shm_unlink(name) == 0) {
			n++;
			if (names && used + strlen(name) + 2 < len)
				used += (size_t)snprintf(names + used, len - used, "%s%s",
							 used ? " " : "", name);
		}
	}
	closedir(d);
	return n;
}
