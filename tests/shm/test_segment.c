/* SPDX-License-Identifier: MIT */
/* Unit tests of the shared-memory segment (shm/segment.c): create/attach/destroy, O_EXCL and mode,
 * header validation (-EPROTO), and injected ftruncate/mmap failures through the link-time wraps. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "shm/segment.h"
#include "tests/test_util.h"

/* ---- failure injection (-Wl,--wrap=ftruncate,--wrap=mmap; see tests/shm/CMakeLists.txt) ---- */

static int fail_ftruncate; /* errno to fail the next call with, 0 = pass through */
static int fail_mmap;

int __real_ftruncate(int fd, off_t len);
int __wrap_ftruncate(int fd, off_t len);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

int __wrap_ftruncate(int fd, off_t len)
{
	if (fail_ftruncate) {
		errno = fail_ftruncate;
		fail_ftruncate = 0;
		return -1;
	}
	return __real_ftruncate(fd, len);
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fail_mmap) {
		errno = fail_mmap;
		fail_mmap = 0;
		return MAP_FAILED;
	}
	return __real_mmap(addr, len, prot, flags, fd, off);
}

/* ---- helpers ---- */

static const struct az_seg_params params = {
	.nrings = 3, .capacity = 8, .slot_bytes = 128, .ctl_bytes = 100
};

static void seg_name(char *buf, const char *tag)
{
	az_seg_name(buf, 64, tag);
	shm_unlink(buf); /* leftovers of an aborted earlier run */
}

static void test_round_trip(void **state)
{
	struct az_seg owner, peer;
	struct az_ring prod, cons;
	char name[64], want[64];
	uint64_t *slot;
	uint8_t *ctl;

	(void)state;
	seg_name(name, "rt");
	snprintf(want, sizeof(want), "/az-%u-%ld-rt", (unsigned)getuid(), (long)getpid());
	assert_string_equal(name, want);

	assert_int_equal(az_seg_create(&owner, name, &params), 0);
	assert_int_equal(owner.owner, 1);
	assert_true(atomic_load(&owner.hdr->magic) == AZ_SEG_MAGIC);
	assert_int_equal(owner.hdr->version, AZ_SEG_VERSION);
	assert_int_equal(owner.hdr->nrings, 3);
	assert_int_equal(owner.hdr->ctl_bytes, 128); /* rounded up to a cache line */
	assert_int_equal(owner.hdr->owner_pid, (uint32_t)getpid());
	assert_true(owner.hdr->total_bytes == owner.size);
	assert_true(owner.hdr->ring_off % AZ_CACHELINE == 0);
	assert_true((uintptr_t)az_seg_ctl(&owner) % AZ_CACHELINE == 0);
	ctl = az_seg_ctl(&owner);
	for (int i = 0; i < 128; i++)
		assert_int_equal(ctl[i], 0);
	memcpy(ctl, "hello", 6);

	/* The creator produces into ring 2; a second mapping (the "server") sees it. */
	assert_int_equal(az_seg_ring(&owner, 2, &prod), 0);
	assert_int_equal(prod.capacity, 8);
	assert_int_equal(prod.slot_bytes, 128);
	slot = az_ring_claim(&prod, NULL);
	assert_non_null(slot);
	slot[0] = 0x1234;
	az_ring_publish(&prod);

	assert_int_equal(az_seg_attach(&peer, name), 0);
	assert_int_equal(peer.owner, 0);
	assert_true(peer.size == owner.size);
	assert_ptr_not_equal(peer.base, owner.base);
	assert_string_equal((char *)az_seg_ctl(&peer), "hello");
	assert_int_equal(az_seg_ring(&peer, 3, &cons), -EINVAL);
	assert_int_equal(az_seg_ring(&peer, 2, &cons), 0);
	assert_int_equal(az_ring_pending(&cons), 1);
	assert_true(*(uint64_t *)az_ring_slot(&cons, 0) == 0x1234);
	assert_int_equal(az_seg_ring(&peer, 0, &cons), 0);
	assert_int_equal(az_ring_pending(&cons), 0);

	/* Destroying a non-owner handle only unmaps; the owner's destroy unlinks. */
	assert_int_equal(az_seg_destroy(&peer), 0);
	assert_null(peer.base);
	assert_int_equal(az_seg_attach(&peer, name), 0);
	az_seg_detach(&peer);
	assert_null(peer.base);
	assert_int_equal(az_seg_destroy(&owner), 0);
	assert_int_equal(az_seg_attach(&peer, name), -ENOENT);
}

static void test_exclusive_and_mode(void **state)
{
	struct az_seg a, b;
	struct az_seg_params bad = params;
	struct stat st;
	char name[64];
	mode_t old;
	int fd;

	(void)state;
	seg_name(name, "excl");
	old = umask(0); /* the mode must come from the library, not from the umask */
	assert_int_equal(az_seg_create(&a, name, &params), 0);
	umask(old);
	assert_int_equal(az_seg_create(&b, name, &params), -EEXIST);
	fd = shm_open(name, O_RDONLY, 0);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	close(fd);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_true((uint64_t)st.st_size == a.hdr->total_bytes);
	assert_int_equal(az_seg_destroy(&a), 0);

	bad.capacity = 6;
	assert_int_equal(az_seg_create(&a, name, &bad), -EINVAL);
	bad = params;
	bad.nrings = 0;
	assert_int_equal(az_seg_create(&a, name, &bad), -EINVAL);
	bad = params;
	bad.slot_bytes = 100;
	assert_int_equal(az_seg_create(&a, name, &bad), -EINVAL);
	assert_int_equal(az_seg_create(&a, "no-slash", &params), -EINVAL);
	assert_int_equal(az_seg_create(&a, "/a/b", &params), -EINVAL);
	assert_int_equal(az_seg_create(&a, "/0123456789012345678901234567890123456789"
					   "01234567890123456789012345",
				       &params),
			 -EINVAL);
	/* None of the rejected calls left an object behind. */
	assert_int_equal(az_seg_attach(&a, name), -ENOENT);
}

static void test_attach_missing(void **state)
{
	struct az_seg s;
	char name[64];

	(void)state;
	seg_name(name, "missing");
	assert_int_equal(az_seg_attach(&s, name), -ENOENT);
	assert_int_equal(az_seg_attach(&s, "bad"), -EINVAL);
}

/* Corrupt one header field through the owner's mapping, expect -EPROTO, restore. */
#define EXPECT_PROTO(field, value)                                                       \
	do {                                                                             \
		uint64_t saved_ = owner.hdr->field;                                      \
		owner.hdr->field = (value);                                              \
		assert_int_equal(az_seg_attach(&peer, name), -EPROTO);                   \
		owner.hdr->field = saved_;                                               \
		assert_int_equal(az_seg_attach(&peer, name), 0);                         \
		az_seg_detach(&peer);                                                    \
	} while (0)

static void test_attach_corrupt(void **state)
{
	struct az_seg owner, peer;
	char name[64];
	int fd;

	(void)state;
	seg_name(name, "corrupt");
	assert_int_equal(az_seg_create(&owner, name, &params), 0);
	atomic_store(&owner.hdr->magic, 0x0123456789abcdefull);
	assert_int_equal(az_seg_attach(&peer, name), -EPROTO);
	atomic_store(&owner.hdr->magic, AZ_SEG_MAGIC);
	assert_int_equal(az_seg_attach(&peer, name), 0);
	az_seg_detach(&peer);
	EXPECT_PROTO(version, AZ_SEG_VERSION + 1);
	EXPECT_PROTO(layout_hash, owner.hdr->layout_hash ^ 1);
	EXPECT_PROTO(total_bytes, owner.hdr->total_bytes + 64);
	EXPECT_PROTO(nrings, 4); /* sizes no longer match the object */
	EXPECT_PROTO(capacity, 6);
	EXPECT_PROTO(ring_stride, owner.hdr->ring_stride * 2);
	/* A ring whose own header disagrees with the segment header is refused too. */
	{
		struct az_ring r;
		struct az_ring_shm *rs =
			(struct az_ring_shm *)((uint8_t *)owner.base + owner.hdr->ring_off);

		rs->capacity = 4;
		assert_int_equal(az_seg_ring(&owner, 0, &r), -EPROTO);
		rs->capacity = 8;
		assert_int_equal(az_seg_ring(&owner, 0, &r), 0);
	}
	assert_int_equal(az_seg_destroy(&owner), 0);

	/* Objects that were never (or not yet) published: empty, and sized but without magic. */
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(az_seg_attach(&peer, name), -EPROTO);
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(az_seg_attach(&peer, name), -EPROTO);
	close(fd);
	shm_unlink(name);
}

static void test_injected_failures(void **state)
{
	struct az_seg s, peer;
	char name[64];

	(void)state;
	seg_name(name, "inject");
	fail_ftruncate = ENOSPC;
	assert_int_equal(az_seg_create(&s, name, &params), -ENOSPC);
	assert_int_equal(az_seg_attach(&s, name), -ENOENT); /* unlinked on the way out */
	fail_mmap = ENOMEM;
	assert_int_equal(az_seg_create(&s, name, &params), -ENOMEM);
	assert_int_equal(az_seg_attach(&s, name), -ENOENT);

	assert_int_equal(az_seg_create(&s, name, &params), 0);
	fail_mmap = ENOMEM;
	assert_int_equal(az_seg_attach(&peer, name), -ENOMEM);
	assert_int_equal(az_seg_attach(&peer, name), 0);
	az_seg_detach(&peer);
	assert_int_equal(az_seg_destroy(&s), 0);
}

AZ_TEST_MAIN(cmocka_unit_test(test_round_trip), cmocka_unit_test(test_exclusive_and_mode),
	     cmocka_unit_test(test_attach_missing), cmocka_unit_test(test_attach_corrupt),
	     cmocka_unit_test(test_injected_failures))
