/* SPDX-License-Identifier: MIT */
/* Checkpoints as safetensors files (net/checkpoint.h): a u64 little-endian header length, a JSON
 * header padded with spaces to a multiple of 8 bytes, then the float32 tensors back to back in the
 * order of az_model_tensor(). Saving is atomic (temp file, fsync, rename, fsync of the directory);
 * loading (net/checkpoint_load.c) trusts nothing in the file and says what is wrong and where. */
#include "net/checkpoint.h"
#include "net/checkpoint_impl.h"
#include "base/az_err.h"
#include "base/util.h"
#include "base/version.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <zlib.h>

/* Keys of "__metadata__" that a valid checkpoint must carry (arch is checked when present). */
const char *const ckpt_required_meta[CKPT_REQUIRED_META] = {
	"format", "game", "inputs", "hidden", "blocks", "actions", "iteration", "content_hash"};

/* crc32 (zlib) over len bytes, fed in pieces because zlib takes a uInt length. */
static uint32_t crc32_bytes(uint32_t crc, const void *p, size_t len)
{
	const unsigned char *b = p;

	while (len > 0) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, b, n);
		b += n;
		len -= n;
	}
	return crc;
}

/* ---- save ---- */

static int add_meta_u32(cJSON *meta, const char *key, uint32_t v)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", v);
	return cJSON_AddStringToObject(meta, key, buf) ? 0 : -ENOMEM;
}

static int add_metadata(cJSON *root, const struct az_model *m, uint32_t crc)
{
	const struct az_arch *a = &m->arch;
	char buf[64];
	cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
	int rc = 0;

	if (!meta || !cJSON_AddStringToObject(meta, "format", "ringzero"))
		return -ENOMEM;
	snprintf(buf, sizeof(buf), "%.*s", (int)sizeof(m->game), m->game);
	if (!cJSON_AddStringToObject(meta, "game", buf))
		return -ENOMEM;
	/* an MLP keeps the "HxR" of files written before ResNets (readable by older builds) */
	if (a->kind == AZ_NET_MLP)
		snprintf(buf, sizeof(buf), "%ux%u", a->hidden, a->blocks);
	else
		az_arch_format(a, buf, sizeof(buf));
	if (!cJSON_AddStringToObject(meta, "arch", buf))
		return -ENOMEM;
	if (a->kind != AZ_NET_MLP) {
		if (!cJSON_AddStringToObject(meta, "net", az_net_kind_name(a->kind)))
			return -ENOMEM;
		rc |= add_meta_u32(meta, "planes", a->planes);
		rc |= add_meta_u32(meta, "height", a->height);
		rc |= add_meta_u32(meta, "width", a->width);
	}
	/* absent for the tanh head: files without it read as they always did */
	if (a->value_head != AZ_VALUE_TANH &&
	    !cJSON_AddStringToObject(meta, "value_head", az_value_head_name(a->value_head)))
		return -ENOMEM;
	rc |= add_meta_u32(meta, "inputs", a->inputs);
	rc |= add_meta_u32(meta, "actions", a->actions);
	rc |= add_meta_u32(meta, "hidden", a->hidden);
	rc |= add_meta_u32(meta, "blocks", a->blocks);
	rc |= add_meta_u32(meta, "iteration", m->iteration);
	if (m->game_options[0] &&
	    !cJSON_AddStringToObject(meta, "game_options", m->game_options))
		return -ENOMEM;
	/* The writing build (base/version.h); informational, not read back. */
	if (!cJSON_AddStringToObject(meta, "version", az_version()))
		return -ENOMEM;
	snprintf(buf, sizeof(buf), "crc32:%08x", crc);
	if (rc || !cJSON_AddStringToObject(meta, "content_hash", buf))
		return -ENOMEM;
	/* filled in by az_ckpt_save once the header is complete (header_crc) */
	if (!cJSON_AddStringToObject(meta, "header_crc32", "00000000"))
		return -ENOMEM;
	return 0;
}

/* ---- the header's own checksum ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One canonical line of the header into lines[*n] (malloc'd); -ENOMEM. */
static int __attribute__((format(printf, 3, 4)))
add_line(char **lines, uint32_t *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *l = len >= 0 ? malloc((size_t)len + 1) : NULL;
	if (!l)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(l, (size_t)len + 1, fmt, ap);
	va_end(ap);
	lines[(*n)++] = l;
	return 0;
}

/* A JSON array of numbers as "a,b,c" (anything else as "?"). */
static void numbers(const cJSON *a, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (const cJSON *e = cJSON_IsArray(a) ? a->child : NULL; e && n < len; e = e->next)
		n += (size_t)snprintf(buf + n, len - n, "%s%.17g", n ? "," : "",
				      cJSON_IsNumber(e) ? e->valuedouble : NAN);
	if (!cJSON_IsArray(a))
		snprintf(buf, len, "?");
}

/* "header_crc32": the CRC-32 of the header's meaning, independent of its layout (key order,
 * spacing, padding): one line per metadata entry but header_crc32 ("m key=value") and per
 * tensor ("t name dtype shape offsets"), sorted, each ended by a newline. 0 or -ENOMEM. */
int ckpt_header_crc(const cJSON *root, uint32_t *out)
{
	uint32_t cap = 2, n = 0;
	for (const cJSON *e = root->child; e; e = e->next)
		cap += cJSON_IsObject(e) ? (uint32_t)cJSON_GetArraySize(e) + 1 : 1;
	char **lines = calloc(cap, sizeof(*lines));
	int rc = lines ? 0 : -ENOMEM;
	for (const cJSON *e = root->child; rc == 0 && e; e = e->next) {
		if (strcmp(e->string, "__metadata__") == 0) {
			for (const cJSON *m = e->child; rc == 0 && m; m = m->next)
				if (strcmp(m->string, "header_crc32") != 0)
					rc = add_line(lines, &n, "m %s=%s", m->string,
						      cJSON_IsString(m) ? m->valuestring : "?");
			continue;
		}
		const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
		char shape[256], offs[96];
		numbers(cJSON_GetObjectItemCaseSensitive(e, "shape"), shape, sizeof(shape));
		numbers(cJSON_GetObjectItemCaseSensitive(e, "data_offsets"), offs, sizeof(offs));
		rc = add_line(lines, &n, "t %s %s %s %s", e->string,
			      cJSON_IsString(dt) ? dt->valuestring : "?", shape, offs);
	}
	uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
	if (rc == 0) {
		qsort(lines, n, sizeof(*lines), cmp_str);
		for (uint32_t i = 0; i < n; i++) {
			crc = crc32_bytes(crc, lines[i], strlen(lines[i]));
			crc = crc32_bytes(crc, "\n", 1);
		}
		*out = crc;
	}
	for (uint32_t i = 0; lines && i < n; i++)
		free(lines[i]);
	free(lines);
	return rc;
}

/* Fill the header_crc32 placeholder of a header built by build_header (hdr[0..hlen)). */
static int seal_header(char *hdr, size_t hlen)
{
	static const char key[] = "\"header_crc32\":\"00000000\"";
	cJSON *root = cJSON_ParseWithLength(hdr, hlen);
	char *at = strstr(hdr, key);
	uint32_t crc = 0;
	int rc = root && at ? ckpt_header_crc(root, &crc) : -ENOMEM;
	cJSON_Delete(root);
	if (rc == 0) {
		char hex[9];
		snprintf(hex, sizeof(hex), "%08x", crc);
		memcpy(at + sizeof(key) - 10, hex, 8);
	}
	return rc;
}

static int add_tensor_entry(cJSON *root, const struct az_tensor *t, size_t begin)
{
	size_t bytes = (size_t)t->rows * t->cols * sizeof(float);
	cJSON *o = cJSON_AddObjectToObject(root, t->name);
	cJSON *shape, *offs;

	if (!o || !cJSON_AddStringToObject(o, "dtype", "F32"))
		return -ENOMEM;
	shape = cJSON_AddArrayToObject(o, "shape");
	offs = cJSON_AddArrayToObject(o, "data_offsets");
	if (!shape || !offs)
		return -ENOMEM;
	for (uint32_t k = 0; k < t->ndim; k++)
		if (!cJSON_AddItemToArray(shape, cJSON_CreateNumber(t->shape[k])))
			return -ENOMEM;
	if (!cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)begin)) ||
	    !cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(begin + bytes))))
		return -ENOMEM;
	return 0;
}

/* The tensor table of m, checked against m->n_params. Returns the count or -EINVAL/-ENOMEM. */
static int model_tensors(const struct az_model *m, struct az_tensor **out)
{
	uint32_t n = az_model_tensor_count(&m->arch);
	struct az_tensor *t = calloc(n ? n : 1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		if (az_model_tensor(&m->arch, i, &t[i]) < 0 ||
		    t[i].offset + (size_t)t[i].rows * t[i].cols > m->n_params) {
			free(t);
			return -EINVAL;
		}
	}
	*out = t;
	return (int)n;
}

/* Serialised header, padded with spaces to a multiple of PAD; *len excludes the NUL. */
static int build_header(const struct az_model *m, const struct az_tensor *t, uint32_t n,
			uint32_t crc, char **out, size_t *len)
{
	cJSON *root = cJSON_CreateObject();
	size_t begin = 0, raw, padded;
	char *text = NULL, *buf;
	int rc = -ENOMEM;

	if (!root || add_metadata(root, m, crc) < 0)
		goto err_json;
	for (uint32_t i = 0; i < n; i++) {
		if (add_tensor_entry(root, &t[i], begin) < 0)
			goto err_json;
		begin += (size_t)t[i].rows * t[i].cols * sizeof(float);
	}
	text = cJSON_PrintUnformatted(root);
	if (!text)
		goto err_json;
	raw = strlen(text);
	padded = (raw + PAD - 1) / PAD * PAD;
	buf = malloc(padded + 1);
	if (!buf)
		goto err_text;
	memcpy(buf, text, raw);
	memset(buf + raw, ' ', padded - raw);
	buf[padded] = '\0';
	*out = buf;
	*len = padded;
	rc = 0;
err_text:
	cJSON_free(text);
err_json:
	cJSON_Delete(root);
	return rc;
}

/* The whole file in a new buffer (*out, caller frees, *len bytes): the 8-byte header length, the
 * header, then the tensors in table order. Returns 0 or -ENOMEM. */
static int file_bytes(const struct az_model *m, const struct az_tensor *t, uint32_t n,
		      const char *hdr, size_t hlen, unsigned char **out, size_t *len)
{
	size_t size = 8 + hlen;
	unsigned char *b, *p;

	for (uint32_t i = 0; i < n; i++)
		size += (size_t)t[i].rows * t[i].cols * sizeof(float);
	b = malloc(size);
	if (!b)
		return -ENOMEM;
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
	memcpy(b + 8, hdr, hlen);
	p = b + 8 + hlen;
	for (uint32_t i = 0; i < n; i++) {
		size_t bytes = (size_t)t[i].rows * t[i].cols * sizeof(float);

		memcpy(p, m->params + t[i].offset, bytes);
		p += bytes;
	}
	*out = b;
	*len = size;
	return 0;
}

/* Content hash: crc32 over the tensors' bytes in az_model_tensor() order. */
uint32_t ckpt_tensors_crc(const struct az_model *m, const struct az_tensor *t, uint32_t n)
{
	uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);

	for (uint32_t i = 0; i < n; i++)
		crc = crc32_bytes(crc, m->params + t[i].offset,
				  (size_t)t[i].rows * t[i].cols * sizeof(float));
	return crc;
}

/* The first tensor of t[n] holding a NaN or an infinity, with its element index: 1 when there
 * is one, 0 when every weight is finite. */
int ckpt_find_nonfinite(const struct az_model *m, const struct az_tensor *t, uint32_t n,
			  uint32_t *tensor, size_t *index)
{
	for (uint32_t i = 0; i < n; i++) {
		const float *p = m->params + t[i].offset;
		size_t cnt = (size_t)t[i].rows * t[i].cols;
		for (size_t k = 0; k < cnt; k++)
			if (!isfinite(p[k])) {
				*tensor = i;
				*index = k;
				return 1;
			}
	}
	return 0;
}

int az_ckpt_save(const char *path, const struct az_model *m, char *err, size_t errlen)
{
	uint32_t bad_t;
	size_t bad_i;
	struct az_tensor *t = NULL;
	unsigned char *bytes = NULL;
	char *hdr = NULL;
	size_t hlen = 0, len = 0;
	int n, rc;

	if (!path || !m || !m->params) {
		az_set_err(err, errlen, "checkpoint: no path or no model");
		return -EINVAL;
	}
	n = model_tensors(m, &t);
	if (n < 0) {
		az_set_err(err, errlen, "checkpoint %s: %s", path,
			n == -ENOMEM ? "out of memory" : "model tensor table does not fit params");
		return n;
	}
	if (ckpt_find_nonfinite(m, t, (uint32_t)n, &bad_t, &bad_i)) {
		/* A diverged network is never written: nothing could load it (see load). */
		az_set_err(err, errlen, "checkpoint %s: not saved: tensor %s holds a non-finite "
			"value (NaN or infinity) at element %zu; training diverged (a lower learning rate may help)",
			path, t[bad_t].name, bad_i);
		rc = -EINVAL;
		goto err_tensors;
	}
	rc = build_header(m, t, (uint32_t)n, ckpt_tensors_crc(m, t, (uint32_t)n), &hdr, &hlen);
	if (rc == 0)
		rc = seal_header(hdr, hlen);
	if (rc < 0) {
		az_set_err(err, errlen, "checkpoint %s: out of memory building the header", path);
		goto err_tensors;
	}
	rc = file_bytes(m, t, (uint32_t)n, hdr, hlen, &bytes, &len);
	if (rc < 0) {
		az_set_err(err, errlen, "checkpoint %s: out of memory", path);
		goto err_header;
	}
	/* Temp file, fsync, rename, fsync of the directory: a reader sees the old file or the
	 * new one, never a torn one. */
	rc = az_write_file_atomic(path, bytes, len, err, errlen);
	free(bytes);
err_header:
	free(hdr);
err_tensors:
	free(t);
	return rc;
}
