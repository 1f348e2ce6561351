/* SPDX-License-Identifier: MIT */
/* Checkpoint save/load: bit-exact round trip, the safetensors layout, and rejection (with a
 * useful message) of truncated, corrupt and inconsistent files; atomic replacement on save. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <zlib.h>

#include "net/checkpoint.h"
#include "net/model.h"
#include "base/rng.h"
#include "tests/test_util.h"

static const struct az_arch arch = {.inputs = 42, .hidden = 16, .blocks = 2, .actions = 7};

/* ---- helpers ---- */

AZ_TEST_TMPDIR_FIXTURE("/tmp/az-ckpt-XXXXXX", "best.safetensors")

/* A model with arbitrary finite bit patterns in every parameter (subnormals, -0, huge). */
static struct az_model *make_model(const struct az_arch *a, uint64_t seed)
{
	struct az_model *m = NULL;
	struct az_rng rng;

	assert_int_equal(az_model_create(a, &m), 0);
	az_rng_seed(&rng, seed);
	for (size_t i = 0; i < m->n_params; i++) {
		uint32_t bits = (uint32_t)az_rng_next(&rng);
		if (((bits >> 23) & 0xff) == 0xff)
			bits ^= 1u << 23; /* NaN/Inf -> a finite value: those are refused */
		memcpy(&m->params[i], &bits, sizeof(bits));
	}
	snprintf(m->game, sizeof(m->game), "connect4");
	m->iteration = 17;
	return m;
}

/* Save make_model(&arch, seed) to path and return the file's bytes (the caller frees them). */
static unsigned char *saved_bytes(uint64_t seed, size_t *len)
{
	struct az_model *m = make_model(&arch, seed);

	assert_int_equal(az_ckpt_save(path, m, NULL, 0), 0);
	az_model_destroy(m);
	return az_test_read_file(path, len);
}

static uint64_t header_len(const unsigned char *buf)
{
	uint64_t h = 0;

	for (int i = 0; i < 8; i++)
		h |= (uint64_t)buf[i] << (8 * i);
	return h;
}

static int count_files(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Load path expecting failure rc with err containing `what`. */
static void expect_load_error(const char *p, int rc, const char *what)
{
	struct az_model *m = NULL;
	char err[512] = "";

	assert_int_equal(az_ckpt_load(p, &m, err, sizeof(err)), rc);
	assert_null(m);
	if (!strstr(err, what))
		fail_msg("error \"%s\" does not mention \"%s\"", err, what);
	assert_non_null(strstr(err, p));
}

/* Save a model, then rewrite the header through mutate() keeping the data area as it is.
 * keep_crc 0: without its header_crc32 (as an older build wrote it), so that the checks after
 * it are reached; 1: with it, which the mutation then contradicts. */
static void save_mutated_crc(void (*mutate)(cJSON *root), int keep_crc)
{
	unsigned char *buf, len8[8];
	size_t len, padded, raw;
	uint64_t h;
	cJSON *root;
	char *text;
	FILE *f;

	buf = saved_bytes(3, &len);
	h = header_len(buf);
	root = cJSON_ParseWithLength((const char *)buf + 8, (size_t)h);
	assert_non_null(root);
	if (!keep_crc)
		cJSON_DeleteItemFromObjectCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(root, "__metadata__"), "header_crc32");
	mutate(root);
	text = cJSON_PrintUnformatted(root);
	raw = strlen(text);
	padded = (raw + 7) / 8 * 8;
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
	f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(len8, 1, 8, f);
	fwrite(text, 1, raw, f);
	for (size_t i = raw; i < padded; i++)
		fputc(' ', f);
	fwrite(buf + 8 + h, 1, len - 8 - (size_t)h, f);
	assert_int_equal(fclose(f), 0);
	cJSON_free(text);
	cJSON_Delete(root);
	free(buf);
}

static void save_mutated(void (*mutate)(cJSON *root))
{
	save_mutated_crc(mutate, 0);
}

static void set_array(cJSON *root, const char *tensor, const char *field, double a, double b,
		      int n)
{
	cJSON *arr = cJSON_CreateArray();

	cJSON_AddItemToArray(arr, cJSON_CreateNumber(a));
	if (n == 2)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(b));
	assert_true(cJSON_ReplaceItemInObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(root, tensor), field, arr));
}

/* ---- tests ---- */

static void test_roundtrip(void **state)
{
	static const struct az_arch archs[] = {
		{.inputs = 42, .hidden = 16, .blocks = 2, .actions = 7},
		{.inputs = 9, .hidden = 5, .blocks = 0, .actions = 9},
		/* a win/draw/loss value head: value.weight [3, 16], metadata value_head "wdl" */
		{.inputs = 42, .hidden = 16, .blocks = 1, .actions = 7, .value_head = AZ_VALUE_WDL},
	};

	for (size_t k = 0; k < sizeof(archs) / sizeof(archs[0]); k++) {
		struct az_model *m = make_model(&archs[k], 100 + k), *back = NULL;
		char err[256] = "";

		m->iteration = 123456 + (uint32_t)k;
		if (k == 1) /* optional metadata: present in one model, absent in the others */
			snprintf(m->game_options, sizeof(m->game_options), "graph=3;variant=free");
		assert_int_equal(az_ckpt_save(path, m, err, sizeof(err)), 0);
		assert_int_equal(az_ckpt_load(path, &back, err, sizeof(err)), 0);
		assert_non_null(back);
		assert_memory_equal(&back->arch, &m->arch, sizeof(m->arch));
		assert_int_equal(back->n_params, m->n_params);
		assert_memory_equal(back->params, m->params, m->n_params * sizeof(float));
		assert_string_equal(back->game, "connect4");
		assert_int_equal(back->iteration, 123456 + k);
		assert_string_equal(back->game_options, m->game_options);
		assert_int_equal(count_files(), 1); /* no .tmp left behind */
		if (archs[k].value_head == AZ_VALUE_WDL) {
			struct az_tensor t;

			assert_int_equal(az_model_tensor(&back->arch,
							 az_model_tensor_count(&back->arch) - 2, &t), 0);
			assert_string_equal(t.name, "value.weight");
			assert_int_equal(t.rows, 3);
			assert_int_equal(t.offset + 3 * t.cols + 3, back->n_params);
		}
		az_model_destroy(back);
		az_model_destroy(m);
	}
}

static void check_tensor_json(cJSON *root, const char *name, uint32_t rows, uint32_t cols,
			      int ndim, double begin)
{
	cJSON *o = cJSON_GetObjectItemCaseSensitive(root, name);
	cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "shape");
	cJSON *offs = cJSON_GetObjectItemCaseSensitive(o, "data_offsets");

	assert_non_null(o);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(o, "dtype")->valuestring, "F32");
	assert_int_equal(cJSON_GetArraySize(shape), ndim);
	assert_true(cJSON_GetArrayItem(shape, 0)->valuedouble == rows);
	if (ndim == 2)
		assert_true(cJSON_GetArrayItem(shape, 1)->valuedouble == cols);
	assert_true(cJSON_GetArrayItem(offs, 0)->valuedouble == begin);
	assert_true(cJSON_GetArrayItem(offs, 1)->valuedouble == begin + 4.0 * rows * cols);
}

static void test_layout(void **state)
{
	struct az_model *m = make_model(&arch, 5);
	unsigned char *buf;
	size_t len;
	uint64_t h;
	cJSON *root, *meta;

	assert_int_equal(az_ckpt_save(path, m, NULL, 0), 0);
	buf = az_test_read_file(path, &len);
	h = header_len(buf);
	assert_int_equal(h % 8, 0);
	assert_int_equal(8 + h + m->n_params * sizeof(float), len);
	assert_int_equal(buf[8], '{');
	root = cJSON_ParseWithLength((const char *)buf + 8, (size_t)h);
	assert_non_null(root);
	meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(meta, "format")->valuestring,
			    "ringzero");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(meta, "game")->valuestring,
			    "connect4");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(meta, "arch")->valuestring, "16x2");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(meta, "inputs")->valuestring, "42");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(meta, "actions")->valuestring, "7");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(meta, "iteration")->valuestring,
			    "17");
	assert_memory_equal(cJSON_GetObjectItemCaseSensitive(meta, "content_hash")->valuestring,
			    "crc32:", 6);
	assert_int_equal(cJSON_GetArraySize(root), 1 + (int)az_model_tensor_count(&arch));
	check_tensor_json(root, "trunk.in.weight", 16, 42, 2, 0);
	check_tensor_json(root, "trunk.in.bias", 16, 1, 1, 4.0 * 16 * 42);
	check_tensor_json(root, "value.bias", 1, 1, 1, 4.0 * (double)(m->n_params - 1));
	/* Tensor data is the params vector verbatim (little-endian host). */
	assert_memory_equal(buf + 8 + h, m->params, m->n_params * sizeof(float));
	cJSON_Delete(root);
	free(buf);
	az_model_destroy(m);
}

static void test_truncated(void **state)
{
	char cut_path[192];
	unsigned char *buf;
	size_t len, h, cuts[9];

	buf = saved_bytes(7, &len);
	h = (size_t)header_len(buf);
	cuts[0] = 0;
	cuts[1] = 3;
	cuts[2] = 7;
	cuts[3] = 8;
	cuts[4] = 8 + h / 2;
	cuts[5] = 8 + h - 1;
	cuts[6] = 8 + h;
	cuts[7] = 8 + h + (len - 8 - h) / 2;
	cuts[8] = len - 1;
	snprintf(cut_path, sizeof(cut_path), "%s/cut.safetensors", dir);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		az_test_write_file(cut_path, buf, cuts[i]);
		expect_load_error(cut_path, -EINVAL, "truncated");
	}
	free(buf);
}

static void test_corrupt_data(void **state)
{
	unsigned char *buf;
	size_t len;

	buf = saved_bytes(9, &len);
	buf[8 + header_len(buf) + (len - 8 - header_len(buf)) / 2] ^= 0x10;
	az_test_write_file(path, buf, len);
	expect_load_error(path, -EINVAL, "hash");
	free(buf);
}

/* Rewrite path with 8 more header bytes: a '#' in what should be space padding. */
static void write_junk_padded(const unsigned char *buf, size_t len)
{
	uint64_t h = header_len(buf);
	unsigned char *out = malloc(len + 8);

	assert_non_null(out);
	for (int i = 0; i < 8; i++)
		out[i] = (unsigned char)((h + 8) >> (8 * i));
	memcpy(out + 8, buf + 8, (size_t)h);
	memcpy(out + 8 + h, "   #    ", 8);
	memcpy(out + 16 + h, buf + 8 + h, len - 8 - (size_t)h);
	az_test_write_file(path, out, len + 8);
	free(out);
}

static void test_corrupt_header(void **state)
{
	unsigned char *buf;
	size_t len;

	buf = saved_bytes(11, &len);

	buf[8] = 'x'; /* not JSON */
	az_test_write_file(path, buf, len);
	expect_load_error(path, -EINVAL, "JSON");

	buf[8] = '['; /* JSON, but not an object */
	az_test_write_file(path, buf, len);
	expect_load_error(path, -EINVAL, "JSON");

	buf[8] = '{';
	write_junk_padded(buf, len);
	expect_load_error(path, -EINVAL, "garbage");

	buf[7] = 0x01; /* header length of 2^56 bytes */
	az_test_write_file(path, buf, len);
	expect_load_error(path, -EINVAL, "limit");
	free(buf);
}

static void mut_shape(cJSON *root)
{
	set_array(root, "block.1.fc2.weight", "shape", 16, 15, 2);
}

static void mut_ndim(cJSON *root)
{
	set_array(root, "policy.bias", "shape", 7, 1, 2);
}

static void mut_dtype(cJSON *root)
{
	cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "policy.weight");

	cJSON_ReplaceItemInObjectCaseSensitive(o, "dtype", cJSON_CreateString("F16"));
}

static void mut_overlap(cJSON *root)
{
	/* fc2 of block 0 claims the same bytes as fc1 (same size): tiling must fail. */
	cJSON *fc1 = cJSON_GetObjectItemCaseSensitive(root, "block.0.fc1.weight");
	cJSON *offs = cJSON_GetObjectItemCaseSensitive(fc1, "data_offsets");

	set_array(root, "block.0.fc2.weight", "data_offsets",
		  cJSON_GetArrayItem(offs, 0)->valuedouble,
		  cJSON_GetArrayItem(offs, 1)->valuedouble, 2);
}

static void mut_swap(cJSON *root)
{
	/* Two same-sized tensors swap places: the file still tiles, but the content hash is over
	 * the tensors in model order, so the swap is caught. */
	cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "block.0.fc1.weight");
	cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "block.1.fc1.weight");
	cJSON *oa = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(a, "data_offsets"), 1);
	cJSON *ob = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(b, "data_offsets"), 1);

	cJSON_ReplaceItemInObjectCaseSensitive(a, "data_offsets", ob);
	cJSON_ReplaceItemInObjectCaseSensitive(b, "data_offsets", oa);
}

static void mut_out_of_bounds(cJSON *root)
{
	set_array(root, "value.bias", "data_offsets", 1e9, 1e9 + 4, 2);
}

static void mut_missing_tensor(cJSON *root)
{
	cJSON *o = cJSON_DetachItemFromObjectCaseSensitive(root, "policy.bias");

	cJSON_AddItemToObject(root, "policy.biases", o);
}

static void mut_extra_tensor(cJSON *root)
{
	cJSON_AddItemToObject(root, "extra", cJSON_Duplicate(
		cJSON_GetObjectItemCaseSensitive(root, "value.bias"), 1));
}

static void mut_no_iteration(cJSON *root)
{
	cJSON_DeleteItemFromObjectCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(root, "__metadata__"), "iteration");
}

static void mut_format(cJSON *root)
{
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(root,
		"__metadata__"), "format", cJSON_CreateString("pytorch"));
}

static void mut_arch_disagrees(cJSON *root)
{
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(root,
		"__metadata__"), "hidden", cJSON_CreateString("17"));
}

static void set_meta(cJSON *root, const char *key, const char *value)
{
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");

	assert_true(cJSON_ReplaceItemInObjectCaseSensitive(meta, key, cJSON_CreateString(value)));
}

static void mut_no_metadata(cJSON *root)
{
	cJSON_DeleteItemFromObjectCaseSensitive(root, "__metadata__");
}

static void mut_signed_inputs(cJSON *root)
{
	set_meta(root, "inputs", "-42");
}

static void mut_zero_actions(cJSON *root)
{
	set_meta(root, "actions", "0");
}

static void mut_long_game(cJSON *root)
{
	set_meta(root, "game", "a-game-name-longer-than-31-characters");
}

static void mut_hash_format(cJSON *root)
{
	set_meta(root, "content_hash", "sha256:0123");
}

static void mut_absurd_arch(cJSON *root)
{
	set_meta(root, "inputs", "4294967295");
	set_meta(root, "hidden", "4294967295");
	set_meta(root, "arch", "4294967295x2");
}

static void mut_nothing(cJSON *root)
{
}

static void test_bad_tables(void **state)
{
	struct {
		void (*mutate)(cJSON *root);
		const char *what;
	} cases[] = {
		{mut_shape, "shape"},	     {mut_ndim, "shape"},
		{mut_dtype, "dtype"},
		{mut_overlap, "tensors block.0.fc1.weight and block.0.fc2.weight overlap"},
		{mut_swap, "hash"},	     {mut_out_of_bounds, "data_offsets"},
		{mut_missing_tensor, "missing"}, {mut_extra_tensor, "tensors"},
		{mut_no_iteration, "iteration"}, {mut_format, "format"},
		{mut_arch_disagrees, "arch"},	 {mut_no_metadata, "__metadata__"},
		{mut_signed_inputs, "decimal"},	 {mut_zero_actions, "zero"},
		{mut_long_game, "game"},	 {mut_hash_format, "content_hash"},
		{mut_absurd_arch, "absurd"},
	};
	struct az_model *m = NULL;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		save_mutated(cases[i].mutate);
		expect_load_error(path, -EINVAL, cases[i].what);
	}
	/* The rewrite itself is faithful: an unmutated rewrite loads. */
	save_mutated(mut_nothing);
	assert_int_equal(az_ckpt_load(path, &m, NULL, 0), 0);
	az_model_destroy(m);
}

static void mut_version(cJSON *root)
{
	set_meta(root, "version", "0.1.1");
}

static void mut_nul_name(cJSON *root)
{
	cJSON *t = cJSON_DetachItemFromObjectCaseSensitive(root, "trunk.in.bias");

	assert_non_null(t);
	cJSON_AddItemToObject(root, "trunk.in.bias\x01", t);
}

/* Issue 23: the header's own checksum (header_crc32) refuses a changed metadata string or
 * tensor entry that no other check catches; a file without one (older builds) still loads. */
static void test_header_crc(void **state)
{
	struct az_model *m = NULL;
	char err[512];

	save_mutated_crc(mut_version, 1);
	expect_load_error(path, -EINVAL, "header checksum mismatch");
	save_mutated_crc(mut_nothing, 1); /* reordered/re-spaced but the same meaning: loads */
	assert_int_equal(az_ckpt_load(path, &m, err, sizeof(err)), 0);
	az_model_destroy(m);
	save_mutated(mut_version); /* legacy: no checksum, accepted */
	assert_int_equal(az_ckpt_load(path, &m, err, sizeof(err)), 0);
	az_model_destroy(m);
	save_mutated(mut_nul_name);
	expect_load_error(path, -EINVAL, "control character");
}

/* Issue 23: every single-bit flip of the header length and header is refused, or loads the
 * very same network (a flip in the space padding). */
static void test_header_flips(void **state)
{
	size_t len;
	unsigned char *buf = saved_bytes(5, &len);
	uint64_t h = header_len(buf);
	struct az_model *ref = NULL, *m = NULL;
	long refused = 0, same = 0;

	assert_int_equal(az_ckpt_load_mem(buf, len, "ref", &ref, NULL, 0), 0);
	for (size_t i = 0; i < 8 + h; i++) {
		for (int b = 0; b < 8; b++) {
			buf[i] ^= (unsigned char)(1u << b);
			if (az_ckpt_load_mem(buf, len, "flip", &m, NULL, 0) < 0) {
				refused++;
			} else {
				if (m->n_params != ref->n_params || m->iteration != ref->iteration ||
				    strcmp(m->game, ref->game) != 0 ||
				    memcmp(&m->arch, &ref->arch, sizeof(m->arch)) != 0 ||
				    memcmp(m->params, ref->params, m->n_params * sizeof(float)))
					fail_msg("flip of bit %d of header byte %zu loads another "
						 "network", b, i);
				same++;
				az_model_destroy(m);
			}
			m = NULL;
			buf[i] ^= (unsigned char)(1u << b);
		}
	}
	print_message("header flips: %ld refused, %ld harmless (padding)\n", refused, same);
	assert_true(refused > 0);
	az_model_destroy(ref);
	free(buf);
}

/* Issue 23: a text file where a checkpoint should be (a Git LFS pointer left by a clone without
 * git lfs pull) is called what it is, not read as an absurd header length. */
static void test_not_safetensors(void **state)
{
	static const char lfs[] = "version https://git-lfs.github.com/spec/v1\n"
				  "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
				  "size 12345\n";
	static const char text[] = "this is not a checkpoint\n";

	(void)state;
	az_test_write_file(path, lfs, sizeof(lfs) - 1);
	expect_load_error(path, -EINVAL, "not a safetensors file (a Git LFS pointer?");
	az_test_write_file(path, text, sizeof(text) - 1);
	expect_load_error(path, -EINVAL, "not a safetensors file (it starts with text)");
}

static void test_trailing_bytes(void **state)
{
	unsigned char *buf;
	size_t len;

	buf = saved_bytes(15, &len);
	buf = realloc(buf, len + 4);
	assert_non_null(buf);
	memset(buf + len, 0, 4);
	az_test_write_file(path, buf, len + 4);
	expect_load_error(path, -EINVAL, "trailing");
	free(buf);
}

/* A diverged network: never saved; a file holding a NaN with a correct content hash (written
 * by something else) is refused at load, naming the tensor. */
static void test_nonfinite(void **state)
{
	struct az_model *m = make_model(&arch, 21);
	char err[512];
	(void)state;
	m->params[3] = NAN;
	assert_int_equal(az_ckpt_save(path, m, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "non-finite"));
	assert_int_not_equal(access(path, F_OK), 0);
	m->params[3] = 0.5f;
	assert_int_equal(az_ckpt_save(path, m, NULL, 0), 0);
	az_model_destroy(m);

	size_t len;
	unsigned char *buf = az_test_read_file(path, &len);
	uint64_t h = header_len(buf);
	float inf = INFINITY;
	memcpy(buf + 8 + h + 5 * sizeof(float), &inf, sizeof(inf));
	uint32_t crc = (uint32_t)crc32(0L, buf + 8 + h, (uInt)(len - 8 - h));
	unsigned char *at = NULL;
	char hex[9];
	for (size_t i = 8; !at && i + 14 < 8 + h; i++)
		if (memcmp(buf + i, "crc32:", 6) == 0)
			at = buf + i;
	assert_non_null(at);
	snprintf(hex, sizeof(hex), "%08x", crc);
	memcpy(at + 6, hex, 8);
	/* the header's own checksum covers content_hash: make it an older build's file (a key
	 * of the same length that nothing reads) so that the check of the weights is reached */
	at = NULL;
	for (size_t i = 8; !at && i + 14 < 8 + h; i++)
		if (memcmp(buf + i, "\"header_crc32\"", 14) == 0)
			at = buf + i;
	assert_non_null(at);
	memcpy(at + 1, "older_build_", 12);
	az_test_write_file(path, buf, len);
	free(buf);
	expect_load_error(path, -EINVAL, "non-finite");
}

static void test_missing_file(void **state)
{
	char p[192];

	snprintf(p, sizeof(p), "%s/nope.safetensors", dir);
	expect_load_error(p, -ENOENT, "No such file");
	expect_load_error(dir, -EINVAL, "not a regular file");
}

static void test_save_bad_dir(void **state)
{
	struct az_model *m = make_model(&arch, 13);
	char p[192], err[512] = "";
	struct stat st;

	snprintf(p, sizeof(p), "%s/no/such/dir/x.safetensors", dir);
	assert_int_equal(az_ckpt_save(p, m, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, p));
	assert_int_equal(count_files(), 0);

	/* A regular file where a directory should be (root ignores permission bits, so this is
	 * the portable "unwritable directory"). */
	snprintf(p, sizeof(p), "%s/file", dir);
	az_test_write_file(p, "x", 1);
	snprintf(p, sizeof(p), "%s/file/x.safetensors", dir);
	assert_int_equal(az_ckpt_save(p, m, err, sizeof(err)), -ENOTDIR);
	assert_int_equal(stat(p, &st), -1);
	assert_int_equal(count_files(), 1);
	az_model_destroy(m);
}

static void test_replace_atomic(void **state)
{
	struct az_model *a = make_model(&arch, 21), *b = make_model(&arch, 22), *back = NULL;

	b->iteration = 18;
	assert_int_equal(az_ckpt_save(path, a, NULL, 0), 0);
	assert_int_equal(az_ckpt_save(path, b, NULL, 0), 0);
	assert_int_equal(count_files(), 1);
	assert_int_equal(az_ckpt_load(path, &back, NULL, 0), 0);
	assert_int_equal(back->iteration, 18);
	assert_true(az_arch_equal(&back->arch, &b->arch));
	back->arch.blocks++;
	assert_false(az_arch_equal(&back->arch, &b->arch));
	back->arch.blocks--;
	assert_memory_equal(back->params, b->params, b->n_params * sizeof(float));
	az_model_destroy(back);
	az_model_destroy(a);
	az_model_destroy(b);
}

/* A write that fails half way (RLIMIT_FSIZE stands in for a full disk) leaves the old file
 * untouched and no temp file behind. */
static void test_write_failure(void **state)
{
	struct az_model *a = make_model(&arch, 31), *b = make_model(&arch, 32), *back = NULL;
	struct rlimit old, lim;
	char err[512] = "";
	int rc;

	assert_int_equal(az_ckpt_save(path, a, NULL, 0), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 4096; /* the model is ~8 KiB */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	rc = az_ckpt_save(path, b, err, sizeof(err));
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(rc, -EFBIG);
	assert_non_null(strstr(err, "write failed"));
	assert_non_null(strstr(err, path));
	assert_int_equal(count_files(), 1);
	assert_int_equal(az_ckpt_load(path, &back, NULL, 0), 0);
	assert_memory_equal(back->params, a->params, a->n_params * sizeof(float));
	az_model_destroy(back);
	az_model_destroy(a);
	az_model_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		AZ_TEST_IN_TMPDIR(test_roundtrip),
		AZ_TEST_IN_TMPDIR(test_layout),
		AZ_TEST_IN_TMPDIR(test_truncated),
		AZ_TEST_IN_TMPDIR(test_corrupt_data),
		AZ_TEST_IN_TMPDIR(test_corrupt_header),
		AZ_TEST_IN_TMPDIR(test_bad_tables),
		AZ_TEST_IN_TMPDIR(test_not_safetensors),
		AZ_TEST_IN_TMPDIR(test_trailing_bytes),
		AZ_TEST_IN_TMPDIR(test_nonfinite),
		AZ_TEST_IN_TMPDIR(test_missing_file),
		AZ_TEST_IN_TMPDIR(test_save_bad_dir),
		AZ_TEST_IN_TMPDIR(test_replace_atomic),
		AZ_TEST_IN_TMPDIR(test_write_failure),
		AZ_TEST_IN_TMPDIR(test_header_crc),
		AZ_TEST_IN_TMPDIR(test_header_flips),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
