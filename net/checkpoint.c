/* SPDX-License-Identifier: MIT */
/* Checkpoints as safetensors files (net/checkpoint.h): a u64 little-endian header length, a JSON
 * header padded with spaces to a multiple of 8 bytes, then the float32 tensors back to back in the
 * order of az_model_tensor(). Saving is atomic (temp file, fsync, rename, fsync of the directory);
 * loading trusts nothing in the file and says what is wrong and where. */
#include "net/checkpoint.h"
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

/* Tensor bytes are copied straight between memory and file: the format is little-endian float32. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint.c assumes a little-endian host (safetensors stores little-endian tensors)"
#endif
_Static_assert(sizeof(float) == 4, "safetensors F32 is 4 bytes");

#define HEADER_MAX (100u * 1024u * 1024u) /* the limit safetensors itself enforces */
#define PAD 8				  /* header padded to a multiple of 8 bytes */

/* Keys of "__metadata__" that a valid checkpoint must carry (arch is checked when present). */
static const char *const required_meta[] = {"format",  "game",	    "inputs",	   "hidden",
					    "blocks",  "actions",   "iteration",   "content_hash"};

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
static int header_crc(const cJSON *root, uint32_t *out)
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
	int rc = root && at ? header_crc(root, &crc) : -ENOMEM;
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
static uint32_t tensors_crc(const struct az_model *m, const struct az_tensor *t, uint32_t n)
{
	uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);

	for (uint32_t i = 0; i < n; i++)
		crc = crc32_bytes(crc, m->params + t[i].offset,
				  (size_t)t[i].rows * t[i].cols * sizeof(float));
	return crc;
}

/* The first tensor of t[n] holding a NaN or an infinity, with its element index: 1 when there
 * is one, 0 when every weight is finite. */
static int find_nonfinite(const struct az_model *m, const struct az_tensor *t, uint32_t n,
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
	if (find_nonfinite(m, t, (uint32_t)n, &bad_t, &bad_i)) {
		/* A diverged network is never written: nothing could load it (see load). */
		az_set_err(err, errlen, "checkpoint %s: not saved: tensor %s holds a non-finite "
			"value (NaN or infinity) at element %zu; training diverged (lower --lr)",
			path, t[bad_t].name, bad_i);
		rc = -EINVAL;
		goto err_tensors;
	}
	rc = build_header(m, t, (uint32_t)n, tensors_crc(m, t, (uint32_t)n), &hdr, &hlen);
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

/* ---- load ---- */

/* The checkpoint bytes (a file read into memory, or a caller's buffer); `name` is the path
 * used in messages. */
struct ckpt_file {
	const char *name;
	const unsigned char *buf;
	size_t size;
	uint64_t hlen;		   /* header bytes after the 8-byte length */
	const unsigned char *data; /* data area: buf + 8 + hlen */
	size_t data_len;
};

/* Read the whole of `path` into a new buffer (*buf, caller frees, *size bytes). */
static int read_whole(const char *path, unsigned char **buf, size_t *size, char *err,
		      size_t errlen)
{
	struct stat st;
	char *data;
	int rc;

	if (stat(path, &st) < 0) {
		rc = -errno;
		az_set_err(err, errlen, "checkpoint %s: %s", path, strerror(errno));
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		az_set_err(err, errlen, "checkpoint %s: not a regular file", path);
		return -EINVAL;
	}
	rc = az_read_file(path, &data, size);
	if (rc < 0) {
		az_set_err(err, errlen, "checkpoint %s: read failed: %s", path, strerror(-rc));
		return rc;
	}
	*buf = (unsigned char *)data;
	return 0;
}

/* Whether the first n bytes are printable ASCII or whitespace (a text file, not a checkpoint,
 * whose first 8 bytes are a small little-endian length with zero high bytes). */
static int looks_like_text(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(b[i] == '\n' || b[i] == '\r' || b[i] == '\t' || (b[i] >= 0x20 && b[i] < 0x7f)))
			return 0;
	return 1;
}

/* The 8-byte length and the header's bounds. */
static int check_framing(struct ckpt_file *f, char *err, size_t errlen)
{
	uint64_t h = 0;

	if (f->size < 8) {
		az_set_err(err, errlen, "checkpoint %s: truncated: %zu bytes, shorter than the 8-byte "
			"header length", f->name, f->size);
		return -EINVAL;
	}
	for (int i = 0; i < 8; i++)
		h |= (uint64_t)f->buf[i] << (8 * i);
	/* A text file read as a length is a huge number: say what the file looks like instead. */
	if (h > HEADER_MAX && f->size >= 24 &&
	    memcmp(f->buf, "version https://git-lfs", 23) == 0) {
		az_set_err(err, errlen, "checkpoint %s: not a safetensors file (a Git LFS pointer? "
			"run git lfs pull)", f->name);
		return -EINVAL;
	}
	if (h > HEADER_MAX && looks_like_text(f->buf, f->size < 64 ? f->size : 64)) {
		az_set_err(err, errlen, "checkpoint %s: not a safetensors file (it starts with "
			"text)", f->name);
		return -EINVAL;
	}
	if (h > HEADER_MAX) {
		az_set_err(err, errlen, "checkpoint %s: header length %llu exceeds the %u-byte limit",
			f->name, (unsigned long long)h, HEADER_MAX);
		return -EINVAL;
	}
	if (h > f->size - 8) {
		az_set_err(err, errlen, "checkpoint %s: truncated: header says %llu bytes, "
			"file has %zu", f->name, (unsigned long long)h, f->size - 8);
		return -EINVAL;
	}
	f->hlen = h;
	f->data = f->buf + 8 + h;
	f->data_len = f->size - 8 - (size_t)h;
	return 0;
}

/* Control bytes inside the header's strings, raw or escaped (\u0000-\u001f, \u007f): names
 * and metadata are printable text, and a NUL would cut a name short where C reads it. Returns
 * the header offset of the first, or -1. */
static long header_control(const struct ckpt_file *f)
{
	const char *text = (const char *)f->buf + 8;
	int in_string = 0;

	for (size_t i = 0; i < f->hlen; i++) {
		unsigned char c = (unsigned char)text[i];

		if (!in_string) {
			in_string = c == '"';
			continue;
		}
		if (c < 0x20 || c == 0x7f)
			return (long)i;
		if (c == '"') {
			in_string = 0;
		} else if (c == '\\') {
			const char *e = text + i + 1; /* the escape: \uXXXX or one character */

			if (i + 5 < f->hlen && e[0] == 'u' && e[1] == '0' && e[2] == '0' &&
			    (e[3] == '0' || e[3] == '1' || (e[3] == '7' && (e[4] | 0x20) == 'f')))
				return (long)i;
			i++;
		}
	}
	return -1;
}

/* Parse the header; anything after the JSON value must be padding whitespace. */
static cJSON *parse_header(const struct ckpt_file *f, char *err, size_t errlen)
{
	const char *text = (const char *)f->buf + 8, *end = NULL;
	long ctl = header_control(f);

	if (ctl >= 0) {
		az_set_err(err, errlen, "checkpoint %s: header byte %ld is a control character "
			"(a damaged name or value)", f->name, ctl);
		return NULL;
	}
	cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)f->hlen, &end, 0);
	size_t at;

	if (!root || !cJSON_IsObject(root)) {
		at = end ? (size_t)(end - text) : 0;
		if (!root)
			at = cJSON_GetErrorPtr() ? (size_t)(cJSON_GetErrorPtr() - text) : 0;
		az_set_err(err, errlen, "checkpoint %s: header is not a JSON object (error near "
			"header byte %zu)", f->name, at);
		cJSON_Delete(root);
		return NULL;
	}
	for (const char *p = end; p < text + f->hlen; p++) {
		if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0') {
			az_set_err(err, errlen, "checkpoint %s: garbage after the JSON header at "
				"byte %zu", f->name, (size_t)(p - text));
			cJSON_Delete(root);
			return NULL;
		}
	}
	return root;
}

/* A metadata string as quoted in a message: at most 40 bytes, control bytes as '?', so that a
 * hostile file cannot break the one-line message (buf holds at least 48 bytes). */
static const char *shown(const char *v, char *buf)
{
	size_t i = 0;

	for (; v[i] && i < 40; i++)
		buf[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
	strcpy(buf + i, v[i] ? "..." : "");
	return buf;
}

static const char *meta_str(const cJSON *meta, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

struct ckpt_meta {
	struct az_arch arch;
	uint32_t iteration;
	uint32_t crc;
	char game[32];
	char game_options[160];
};

static int parse_metadata(const struct ckpt_file *f, const cJSON *root, struct ckpt_meta *cm,
			  char *err, size_t errlen)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
	const char *v, *arch;
	char want[32], q[48];

	if (!cJSON_IsObject(meta)) {
		az_set_err(err, errlen, "checkpoint %s: no __metadata__ object", f->name);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(required_meta) / sizeof(required_meta[0]); i++) {
		if (!meta_str(meta, required_meta[i])) {
			az_set_err(err, errlen, "checkpoint %s: metadata \"%s\" missing or not a "
				"string", f->name, required_meta[i]);
			return -EINVAL;
		}
	}
	if (strcmp(meta_str(meta, "format"), "ringzero") != 0) {
		az_set_err(err, errlen, "checkpoint %s: metadata format is \"%s\", not \"ringzero\"",
			f->name, shown(meta_str(meta, "format"), q));
		return -EINVAL;
	}
	if (az_parse_u32(meta_str(meta, "inputs"), NULL, &cm->arch.inputs) < 0 ||
	    az_parse_u32(meta_str(meta, "hidden"), NULL, &cm->arch.hidden) < 0 ||
	    az_parse_u32(meta_str(meta, "blocks"), NULL, &cm->arch.blocks) < 0 ||
	    az_parse_u32(meta_str(meta, "actions"), NULL, &cm->arch.actions) < 0 ||
	    az_parse_u32(meta_str(meta, "iteration"), NULL, &cm->iteration) < 0) {
		az_set_err(err, errlen, "checkpoint %s: metadata inputs/hidden/blocks/actions/"
			"iteration must be decimal integers", f->name);
		return -EINVAL;
	}
	v = meta_str(meta, "game");
	if (strlen(v) >= sizeof(cm->game)) {
		az_set_err(err, errlen, "checkpoint %s: metadata game name too long", f->name);
		return -EINVAL;
	}
	for (const char *p = v; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f) { /* the tools print the name */
			az_set_err(err, errlen, "checkpoint %s: metadata game \"%s\" has control "
				"characters", f->name, shown(v, q));
			return -EINVAL;
		}
	}
	strcpy(cm->game, v);
	v = meta_str(meta, "game_options"); /* optional */
	if (v) {
		int bad = strlen(v) >= sizeof(cm->game_options);
		for (const char *p = v; *p && !bad; p++)
			bad = (unsigned char)*p < 0x20 || *p == 0x7f;
		if (bad) {
			az_set_err(err, errlen, "checkpoint %s: metadata game_options is too long or "
				"has control characters", f->name);
			return -EINVAL;
		}
		strcpy(cm->game_options, v);
	}
	v = meta_str(meta, "net"); /* absent in MLP files */
	if (v && az_arch_parse_net(v, &cm->arch.kind, &cm->arch.hidden, &cm->arch.blocks) < 0) {
		az_set_err(err, errlen, "checkpoint %s: metadata net \"%s\" is not mlp or resnet",
			f->name, shown(v, q));
		return -EINVAL;
	}
	if (cm->arch.kind == AZ_NET_RESNET &&
	    (!meta_str(meta, "planes") || !meta_str(meta, "height") || !meta_str(meta, "width") ||
	     az_parse_u32(meta_str(meta, "planes"), NULL, &cm->arch.planes) < 0 ||
	     az_parse_u32(meta_str(meta, "height"), NULL, &cm->arch.height) < 0 ||
	     az_parse_u32(meta_str(meta, "width"), NULL, &cm->arch.width) < 0)) {
		az_set_err(err, errlen, "checkpoint %s: a resnet needs metadata planes/height/width "
			"as decimal integers", f->name);
		return -EINVAL;
	}
	arch = meta_str(meta, "arch");
	if (cm->arch.kind == AZ_NET_MLP)
		snprintf(want, sizeof(want), "%ux%u", cm->arch.hidden, cm->arch.blocks);
	else
		az_arch_format(&cm->arch, want, sizeof(want));
	if (arch && strcmp(arch, want) != 0) {
		az_set_err(err, errlen, "checkpoint %s: metadata arch \"%s\" disagrees with "
			"hidden/blocks (%s)", f->name, shown(arch, q), want);
		return -EINVAL;
	}
	v = meta_str(meta, "content_hash");
	if (strncmp(v, "crc32:", 6) != 0 || strlen(v) != 14 ||
	    strspn(v + 6, "0123456789abcdef") != 8) {
		az_set_err(err, errlen, "checkpoint %s: content_hash \"%s\" is not crc32:<8 hex "
			"digits>", f->name, shown(v, q));
		return -EINVAL;
	}
	cm->crc = (uint32_t)strtoul(v + 6, NULL, 16);
	return 0;
}

/* An exact non-negative integer JSON number (safetensors writes integers). */
static int json_u64(const cJSON *item, uint64_t *out)
{
	double d;

	if (!cJSON_IsNumber(item))
		return -EINVAL;
	d = item->valuedouble;
	if (!(d >= 0.0) || d > 9007199254740992.0 || d != (double)(uint64_t)d)
		return -EINVAL;
	*out = (uint64_t)d;
	return 0;
}

/* Where one tensor lies in the data area, in bytes. */
struct span {
	uint64_t begin, end;
	uint32_t index;
};

/* Check one tensor's entry (dtype, shape, offsets within the data area) and record its span. */
static int check_tensor(const struct ckpt_file *f, const cJSON *root, const struct az_tensor *t,
			struct span *sp, char *err, size_t errlen)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, t->name);
	const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(o, "dtype");
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "shape");
	const cJSON *offs = cJSON_GetObjectItemCaseSensitive(o, "data_offsets");
	uint64_t want = (uint64_t)t->rows * t->cols * sizeof(float);
	int shape_ok = cJSON_IsArray(shape) && cJSON_GetArraySize(shape) == (int)t->ndim;

	if (!cJSON_IsObject(o)) {
		az_set_err(err, errlen, "checkpoint %s: tensor %s missing", f->name, t->name);
		return -EINVAL;
	}
	if (!cJSON_IsString(dtype) || strcmp(dtype->valuestring, "F32") != 0) {
		az_set_err(err, errlen, "checkpoint %s: tensor %s: dtype is not F32", f->name,
			t->name);
		return -EINVAL;
	}
	for (uint32_t k = 0; shape_ok && k < t->ndim; k++) {
		uint64_t d = 0;

		shape_ok = json_u64(cJSON_GetArrayItem(shape, (int)k), &d) == 0 && d == t->shape[k];
	}
	if (!shape_ok) {
		char dims[64];
		size_t n = 0;

		for (uint32_t k = 0; k < t->ndim; k++)
			n += (size_t)snprintf(dims + n, sizeof(dims) - n, "%s%u", k ? ", " : "",
					      t->shape[k]);
		az_set_err(err, errlen, "checkpoint %s: tensor %s: shape is not [%s]", f->name,
			t->name, dims);
		return -EINVAL;
	}
	if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
	    json_u64(cJSON_GetArrayItem(offs, 0), &sp->begin) < 0 ||
	    json_u64(cJSON_GetArrayItem(offs, 1), &sp->end) < 0 || sp->begin > sp->end ||
	    sp->end > f->data_len || sp->end - sp->begin != want) {
		az_set_err(err, errlen, "checkpoint %s: tensor %s: data_offsets missing, out of the "
			"%zu-byte data area or not %llu bytes long", f->name, t->name, f->data_len,
			(unsigned long long)want);
		return -EINVAL;
	}
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->begin != y->begin)
		return (x->begin > y->begin) - (x->begin < y->begin);
	return (x->index > y->index) - (x->index < y->index); /* a fixed order for the message */
}

/* Tensors must tile the data area exactly: sorted by offset, each starts where the last ended.
 * Any order is accepted (a file re-saved by Python orders tensors by name). A failure names the
 * two tensors on either side of the overlap or gap (t: the tensors, by span index). */
static int check_tiling(const struct ckpt_file *f, const struct az_tensor *t, struct span *sp,
			uint32_t n, char *err, size_t errlen)
{
	uint64_t pos = 0;

	qsort(sp, n, sizeof(*sp), span_cmp);
	for (uint32_t i = 0; i < n; i++) {
		if (sp[i].begin != pos && i == 0) {
			az_set_err(err, errlen, "checkpoint %s: a gap before the first tensor: %s "
				"starts at data byte %llu, not 0", f->name, t[sp[i].index].name,
				(unsigned long long)sp[i].begin);
			return -EINVAL;
		}
		if (sp[i].begin != pos) {
			az_set_err(err, errlen, "checkpoint %s: tensors %s and %s %s: %s ends at data "
				"byte %llu, %s starts at %llu", f->name, t[sp[i - 1].index].name,
				t[sp[i].index].name, sp[i].begin < pos ? "overlap" : "leave a gap",
				t[sp[i - 1].index].name, (unsigned long long)pos,
				t[sp[i].index].name, (unsigned long long)sp[i].begin);
			return -EINVAL;
		}
		pos = sp[i].end;
	}
	if (pos != f->data_len) {
		az_set_err(err, errlen, "checkpoint %s: data area has %zu bytes, tensors cover %llu",
			f->name, f->data_len, (unsigned long long)pos);
		return -EINVAL;
	}
	return 0;
}

/* Number of tensors the arch needs must match the header's entries before anything is sized
 * from the (untrusted) arch; then the data area must hold exactly the parameters. */
static int check_sizes(const struct ckpt_file *f, const cJSON *root, const struct az_arch *a,
		       char *err, size_t errlen)
{
	int resnet = a->kind == AZ_NET_RESNET;
	uint64_t want_tensors = (resnet ? 12 : 6) + 4 * (uint64_t)a->blocks;
	uint64_t entries = (uint64_t)cJSON_GetArraySize(root) - 1;
	uint64_t want_bytes;
	double est;

	if (a->inputs == 0 || a->hidden == 0 || a->actions == 0) {
		az_set_err(err, errlen, "checkpoint %s: zero inputs, hidden or actions", f->name);
		return -EINVAL;
	}
	if (resnet && !az_arch_valid(a)) {
		/* bounds every size below, before anything is computed from them */
		az_set_err(err, errlen, "checkpoint %s: resnet %ux%u over %ux%ux%u planes for %u "
			"inputs and %u actions is not a valid network", f->name, a->hidden,
			a->blocks, a->planes, a->height, a->width, a->inputs, a->actions);
		return -EINVAL;
	}
	if (entries != want_tensors) {
		az_set_err(err, errlen, "checkpoint %s: header has %llu tensors, arch %ux%u "
			"needs %llu",
			f->name, (unsigned long long)entries, a->hidden, a->blocks,
			(unsigned long long)want_tensors);
		return -EINVAL;
	}
	/* An absurd arch could overflow u64: estimate in double first, then compute exactly. */
	est = ((double)a->hidden * a->inputs + (double)a->blocks * 2.0 * a->hidden * a->hidden +
	       (double)a->actions * a->hidden) * sizeof(float);
	if (!resnet && est > 4e18) {
		az_set_err(err, errlen, "checkpoint %s: arch %u inputs, %ux%u, %u actions is absurdly "
			"large", f->name, a->inputs, a->hidden, a->blocks, a->actions);
		return -EINVAL;
	}
	want_bytes = ((uint64_t)a->hidden * a->inputs + a->hidden +
		      (uint64_t)a->blocks * 2 * ((uint64_t)a->hidden * a->hidden + a->hidden) +
		      (uint64_t)a->actions * a->hidden + a->actions + a->hidden + 1) *
		     sizeof(float);
	if (resnet)
		want_bytes = az_model_param_count(a) * sizeof(float);
	if (want_bytes != f->data_len) {
		az_set_err(err, errlen, "checkpoint %s: %s: data area has %zu bytes, the %llu "
			"parameters need %llu", f->name,
			f->data_len < want_bytes ? "truncated" : "trailing bytes", f->data_len,
			(unsigned long long)(want_bytes / sizeof(float)),
			(unsigned long long)want_bytes);
		return -EINVAL;
	}
	return 0;
}

/* Validate every tensor entry and copy the data into a new model. */
static int load_tensors(const struct ckpt_file *f, const cJSON *root,
			const struct ckpt_meta *cm, struct az_model **out, char *err,
			size_t errlen)
{
	uint32_t n = az_model_tensor_count(&cm->arch), crc;
	struct az_tensor *t = calloc(n, sizeof(*t));
	struct span *sp = calloc(n, sizeof(*sp));
	struct az_model *m = NULL;
	int rc = -ENOMEM;

	if (!t || !sp)
		goto err_free;
	rc = -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		if (az_model_tensor(&cm->arch, i, &t[i]) < 0)
			goto err_free;
		if (check_tensor(f, root, &t[i], &sp[i], err, errlen) < 0)
			goto err_free;
		sp[i].index = i;
	}
	rc = check_tiling(f, t, sp, n, err, errlen);
	if (rc < 0)
		goto err_free;
	rc = az_model_create(&cm->arch, &m);
	if (rc == -EINVAL)
		az_set_err(err, errlen, "checkpoint %s: arch %u inputs, %ux%u, %u actions is outside "
			"the supported range", f->name, cm->arch.inputs, cm->arch.hidden,
			cm->arch.blocks, cm->arch.actions);
	if (rc < 0)
		goto err_free;
	for (uint32_t k = 0; k < n; k++)
		memcpy(m->params + t[sp[k].index].offset, f->data + sp[k].begin,
		       sp[k].end - sp[k].begin);
	crc = tensors_crc(m, t, n);
	if (crc != cm->crc) {
		az_set_err(err, errlen, "checkpoint %s: content hash mismatch: header says "
			"crc32:%08x, tensors hash to crc32:%08x (corrupt data)", f->name, cm->crc,
			crc);
		rc = -EINVAL;
		goto err_model;
	}
	uint32_t bad_t;
	size_t bad_i;
	if (find_nonfinite(m, t, n, &bad_t, &bad_i)) {
		az_set_err(err, errlen, "checkpoint %s: tensor %s holds a non-finite value (NaN or "
			"infinity) at element %zu: a diverged network, refused", f->name,
			t[bad_t].name, bad_i);
		rc = -EINVAL;
		goto err_model;
	}
	memcpy(m->game, cm->game, sizeof(m->game));
	memcpy(m->game_options, cm->game_options, sizeof(m->game_options));
	m->iteration = cm->iteration;
	*out = m;
	m = NULL;
	rc = 0;
err_model:
	az_model_destroy(m);
err_free:
	if (rc == -ENOMEM)
		az_set_err(err, errlen, "checkpoint %s: out of memory", f->name);
	else if (rc < 0 && err && errlen && !*err)
		az_set_err(err, errlen, "checkpoint %s: invalid tensor table", f->name);
	free(sp);
	free(t);
	return rc;
}

/* The header's own checksum, when it has one (files of older builds have none: legacy,
 * accepted; their metadata is checked as before). */
static int check_header_crc(const struct ckpt_file *f, const cJSON *root, char *err,
			    size_t errlen)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
	const char *v = meta_str(meta, "header_crc32");
	uint32_t crc;
	char q[48];

	if (!cJSON_GetObjectItemCaseSensitive(meta, "header_crc32"))
		return 0;
	if (!v || strlen(v) != 8 || strspn(v, "0123456789abcdef") != 8) {
		az_set_err(err, errlen, "checkpoint %s: header_crc32 \"%s\" is not 8 hex digits",
			f->name, v ? shown(v, q) : "?");
		return -EINVAL;
	}
	if (header_crc(root, &crc) < 0) {
		az_set_err(err, errlen, "checkpoint %s: out of memory", f->name);
		return -ENOMEM;
	}
	if (crc != (uint32_t)strtoul(v, NULL, 16)) {
		az_set_err(err, errlen, "checkpoint %s: header checksum mismatch: header_crc32 says "
			"%s, the header hashes to %08x (damaged metadata or tensor table)", f->name, v,
			crc);
		return -EINVAL;
	}
	return 0;
}

int az_ckpt_load_mem(const void *data, size_t len, const char *name, struct az_model **out,
		     char *err, size_t errlen)
{
	struct ckpt_file f = {.name = name ? name : "<memory>", .buf = data, .size = len};
	struct ckpt_meta cm = {0};
	cJSON *root;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if ((!data && len) || !out) {
		az_set_err(err, errlen, "checkpoint %s: no data or no output", f.name);
		return -EINVAL;
	}
	memset(&cm, 0, sizeof(cm));
	rc = check_framing(&f, err, errlen);
	if (rc < 0)
		return rc;
	root = parse_header(&f, err, errlen);
	if (!root)
		return -EINVAL;
	rc = parse_metadata(&f, root, &cm, err, errlen);
	if (rc == 0)
		rc = check_header_crc(&f, root, err, errlen);
	if (rc == 0)
		rc = check_sizes(&f, root, &cm.arch, err, errlen);
	if (rc == 0)
		rc = load_tensors(&f, root, &cm, out, err, errlen);
	cJSON_Delete(root);
	return rc;
}

int az_ckpt_load(const char *path, struct az_model **out, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t size = 0;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!path || !out) {
		az_set_err(err, errlen, "checkpoint: no path or no output");
		return -EINVAL;
	}
	rc = read_whole(path, &buf, &size, err, errlen);
	if (rc < 0)
		return rc;
	rc = az_ckpt_load_mem(buf, size, path, out, err, errlen);
	free(buf);
	return rc;
}
