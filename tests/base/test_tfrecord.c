/* SPDX-License-Identifier: MIT */
/* base/tfrecord.h: CRC-32C against published test vectors, the TFRecord mask and framing, and
 * the protobuf wire-format encoders against bytes that the protobuf library produced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/tfrecord.h"
#include "tests/test_util.h"

/* RFC 3720 (iSCSI) appendix B.4 CRC-32C examples, and the common "123456789" check value. */
static void test_crc32c_vectors(void **state)
{
	(void)state;
	uint8_t buf[32];
	memset(buf, 0, sizeof(buf));
	assert_int_equal(az_crc32c(0, buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(az_crc32c(0, buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(az_crc32c(0, buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	assert_int_equal(az_crc32c(0, buf, 32), 0x113FDB5Cu);
	assert_int_equal(az_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(az_crc32c(0, "", 0), 0);
	/* Chaining: the CRC of a then b is the CRC of the concatenation. */
	assert_int_equal(az_crc32c(az_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
}

/* The masked value of "123456789" as TensorBoard's own masked_crc32c computes it. */
static void test_mask(void **state)
{
	(void)state;
	assert_int_equal(az_crc32c_mask(0xE3069283u), 0xc78ab0e5u);
	assert_int_equal(az_crc32c_mask(0), 0xa282ead8u);
}

static void test_varint(void **state)
{
	(void)state;
	struct az_bytes b = {0};
	az_pb_varint(&b, 0);
	az_pb_varint(&b, 1);
	az_pb_varint(&b, 300); /* protobuf.dev's example: ac 02 */
	az_pb_varint(&b, UINT64_MAX);
	static const uint8_t want[] = {0x00, 0x01, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0x01};
	assert_false(b.oom);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.data, want, sizeof(want));
	free(b.data);
}

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;
	for (; s[0] && s[1]; s += 2) {
		char h[3] = {s[0], s[1], 0};
		out[n++] = (uint8_t)strtoul(h, NULL, 16);
	}
	return n;
}

/* Event{wall_time: 1.5, step: 3, summary {value {tag: "loss/policy" simple_value: 0.25}}}
 * framed as a TFRecord: the bytes the protobuf library and TensorBoard's record writer make. */
static const char golden_record[] =
	"2100000000000000017becf6"
	"09000000000000f83f10032a140a120a0b6c6f73732f706f6c696379150000803e"
	"2e306ab0";

static void test_record_framing(void **state)
{
	(void)state;
	uint8_t want[128], event[64];
	size_t n = unhex(golden_record, want);
	size_t ne = unhex("09000000000000f83f10032a140a120a0b6c6f73732f706f6c696379150000803e",
			  event);
	struct az_bytes b = {0};
	az_tfrecord_put(&b, event, ne);
	assert_int_equal(b.len, n);
	assert_int_equal(b.len, 8 + 4 + ne + 4);
	assert_memory_equal(b.data, want, n);
	free(b.data);
}

/* The same event built field by field with the encoders. */
static void test_event_fields(void **state)
{
	(void)state;
	struct az_bytes val = {0}, sum = {0}, ev = {0};
	uint8_t want[64];
	size_t n = unhex("09000000000000f83f10032a140a120a0b6c6f73732f706f6c696379150000803e",
			 want);
	az_pb_bytes(&val, 1, "loss/policy", 11);
	az_pb_float(&val, 2, 0.25f);
	az_pb_bytes(&sum, 1, val.data, val.len);
	az_pb_double(&ev, 1, 1.5);
	az_pb_int64(&ev, 2, 3);
	az_pb_bytes(&ev, 5, sum.data, sum.len);
	assert_int_equal(ev.len, n);
	assert_memory_equal(ev.data, want, n);
	free(val.data);
	free(sum.data);
	free(ev.data);
}

AZ_TEST_MAIN(cmocka_unit_test(test_crc32c_vectors), cmocka_unit_test(test_mask),
	     cmocka_unit_test(test_varint), cmocka_unit_test(test_record_framing),
	     cmocka_unit_test(test_event_fields))
