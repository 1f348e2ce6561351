/* SPDX-License-Identifier: MIT */
/* TFRecord framing, CRC-32C and protobuf wire-format encoding (base/tfrecord.h). */
#include "base/tfrecord.h"

#include <stdlib.h>
#include <string.h>

/* Bit at a time: event files are a few kilobytes, so a table buys nothing. */
uint32_t az_crc32c(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
	}
	return ~crc;
}

uint32_t az_crc32c_mask(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

void az_bytes_put(struct az_bytes *b, const void *p, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *d = realloc(b->data, cap);
		if (!d) {
			b->oom = 1;
			return;
		}
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put_le(struct az_bytes *b, uint64_t v, int n)
{
	uint8_t buf[8];
	for (int i = 0; i < n; i++)
		buf[i] = (uint8_t)(v >> (8 * i));
	az_bytes_put(b, buf, (size_t)n);
}

void az_pb_varint(struct az_bytes *b, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;
	do {
		buf[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		buf[n++] |= v ? 0x80 : 0;
	} while (v);
	az_bytes_put(b, buf, n);
}

void az_pb_key(struct az_bytes *b, uint32_t field, uint32_t wire_type)
{
	az_pb_varint(b, (uint64_t)field << 3 | wire_type);
}

void az_pb_double(struct az_bytes *b, uint32_t field, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof(bits));
	az_pb_key(b, field, 1);
	put_le(b, bits, 8);
}

void az_pb_float(struct az_bytes *b, uint32_t field, float v)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof(bits));
	az_pb_key(b, field, 5);
	put_le(b, bits, 4);
}

void az_pb_int64(struct az_bytes *b, uint32_t field, int64_t v)
{
	az_pb_key(b, field, 0);
	az_pb_varint(b, (uint64_t)v); /* negative int64: ten bytes, two's complement */
}

void az_pb_bytes(struct az_bytes *b, uint32_t field, const void *p, size_t n)
{
	az_pb_key(b, field, 2);
	az_pb_varint(b, n);
	az_bytes_put(b, p, n);
}

void az_tfrecord_put(struct az_bytes *b, const void *data, size_t len)
{
	uint8_t hdr[8];
	for (int i = 0; i < 8; i++)
		hdr[i] = (uint8_t)((uint64_t)len >> (8 * i));
	az_bytes_put(b, hdr, 8);
	put_le(b, az_crc32c_mask(az_crc32c(0, hdr, 8)), 4);
	az_bytes_put(b, data, len);
	put_le(b, az_crc32c_mask(az_crc32c(0, data, len)), 4);
}
