/* SPDX-License-Identifier: MIT */
/* Loading checkpoints (net/checkpoint.h): the whole file checked before any of it is trusted,
 * with a message that says what is wrong and where (framing, header, metadata, every tensor's
 * extent and the tiling of the data area, the checksums). */
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
	for (size_t i = 0; i < sizeof(ckpt_required_meta) / sizeof(ckpt_required_meta[0]); i++) {
		if (!meta_str(meta, ckpt_required_meta[i])) {
			az_set_err(err, errlen, "checkpoint %s: metadata \"%s\" missing or not a "
				"string", f->name, ckpt_required_meta[i]);
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
	v = meta_str(meta, "value_head"); /* absent: the tanh head */
	if (v && az_value_head_parse(v, &cm->arch.value_head) < 0) {
		az_set_err(err, errlen, "checkpoint %s: metadata value_head \"%s\" is not tanh or wdl",
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
		      (uint64_t)a->actions * a->hidden + a->actions +
		      (uint64_t)az_arch_value_outputs(a) * (a->hidden + 1)) *
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
	crc = ckpt_tensors_crc(m, t, n);
	if (crc != cm->crc) {
		az_set_err(err, errlen, "checkpoint %s: content hash mismatch: header says "
			"crc32:%08x, tensors hash to crc32:%08x (corrupt data)", f->name, cm->crc,
			crc);
		rc = -EINVAL;
		goto err_model;
	}
	uint32_t bad_t;
	size_t bad_i;
	if (ckpt_find_nonfinite(m, t, n, &bad_t, &bad_i)) {
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
	if (ckpt_header_crc(root, &crc) < 0) {
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
