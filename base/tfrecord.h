/* SPDX-License-Identifier: MIT */
/* The TFRecord container (TensorFlow's record framing, which TensorBoard event files use) and the
 * CRC-32C it checksums with, plus the few protobuf wire-format encoders an event needs. */
#ifndef AZ_BASE_TFRECORD_H
#define AZ_BASE_TFRECORD_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and final xor ~0), the
 * checksum of iSCSI (RFC 3720 appendix B.4 gives test vectors) and of TFRecord. crc is the value
 * returned for the data before (0 to start): az_crc32c(az_crc32c(0, a), b) = crc of a then b.
 * Any thread. */
uint32_t az_crc32c(uint32_t crc, const void *data, size_t len);

/* TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8 (TensorFlow's
 * lib/hash/crc32c.h: a CRC of data that holds CRCs is then not itself a plain CRC). */
uint32_t az_crc32c_mask(uint32_t crc);

/* A growing byte buffer. Zero-initialise; free(b->data) when done. On allocation failure the
 * buffer keeps what it had and b->oom is set: later appends do nothing, the caller checks once. */
struct az_bytes {
	uint8_t *data;
	size_t len, cap;
	int oom;
};

void az_bytes_put(struct az_bytes *b, const void *p, size_t n);

/* Protobuf wire format (protobuf.dev "Encoding"): a field key is (number << 3) | wire type;
 * varint fields are wire type 0, 64-bit type 1, length-delimited type 2, 32-bit type 5; numbers
 * are little-endian. */
void az_pb_varint(struct az_bytes *b, uint64_t v);
void az_pb_key(struct az_bytes *b, uint32_t field, uint32_t wire_type);
void az_pb_double(struct az_bytes *b, uint32_t field, double v);
void az_pb_float(struct az_bytes *b, uint32_t field, float v);
void az_pb_int64(struct az_bytes *b, uint32_t field, int64_t v);
/* A string, bytes or embedded message field: key, length, then the n bytes at p. */
void az_pb_bytes(struct az_bytes *b, uint32_t field, const void *p, size_t n);

/* Append one TFRecord: uint64 length (LE), uint32 masked CRC-32C of those 8 bytes, the data,
 * uint32 masked CRC-32C of the data (TensorFlow's core/lib/io/record_writer.cc layout). */
void az_tfrecord_put(struct az_bytes *b, const void *data, size_t len);

#endif
