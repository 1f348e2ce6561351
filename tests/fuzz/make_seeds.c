/* SPDX-License-Identifier: MIT */
/* Writes the generated seed files of the fuzz corpora: tiny checkpoints (az_ckpt_save) and
 * replay segments (az_replay_writer), valid ones and a few broken variants.
 * Usage: az_fuzz_seeds CORPUS_ROOT   (e.g. tests/fuzz/corpus) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/checkpoint.h"
#include "net/model.h"
#include "train/replay.h"

static char root[512];

static unsigned char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0)
		exit(1);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(1);
	fclose(f);
	*size = (size_t)n;
	return buf;
}

/* corpus/<dir>/<name> := [prefix byte when prefix >= 0] data[size] */
static void put(const char *dir, const char *name, int prefix, const void *data, size_t size)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", root, dir, name);
	f = fopen(path, "wb");
	if (!f || (prefix >= 0 && fputc(prefix, f) == EOF) ||
	    (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
		fprintf(stderr, "az_fuzz_seeds: cannot write %s\n", path);
		exit(1);
	}
	printf("%s\n", path);
}

/* An az_model_init_random(seed) model of arch a for `game`, saved as the seed checkpoint `name`. */
static void model_seed(const char *tmp, const struct az_arch *a, uint64_t seed, const char *game,
		       const char *name)
{
	struct az_model *m;
	unsigned char *buf;
	char err[256];
	size_t n;

	if (az_model_create(a, &m) < 0)
		exit(1);
	az_model_init_random(m, seed);
	snprintf(m->game, sizeof(m->game), "%s", game);
	if (az_ckpt_save(tmp, m, err, sizeof(err)) < 0) {
		fprintf(stderr, "az_fuzz_seeds: %s\n", err);
		exit(1);
	}
	az_model_destroy(m);
	buf = slurp(tmp, &n);
	put("checkpoint", name, -1, buf, n);
	free(buf);
}

static void checkpoints(const char *tmp)
{
	struct az_arch a1 = {.inputs = 2, .hidden = 3, .blocks = 1, .actions = 2};
	struct az_arch a0 = {.inputs = 3, .hidden = 2, .blocks = 0, .actions = 1};
	struct az_model *m;
	unsigned char *buf;
	char err[256];
	size_t n;

	if (az_model_create(&a1, &m) < 0)
		exit(1);
	az_model_init_random(m, 7);
	snprintf(m->game, sizeof(m->game), "tictactoe");
	m->iteration = 3;
	if (az_ckpt_save(tmp, m, err, sizeof(err)) < 0) {
		fprintf(stderr, "az_fuzz_seeds: %s\n", err);
		exit(1);
	}
	az_model_destroy(m);
	buf = slurp(tmp, &n);
	put("checkpoint", "ok-tiny.safetensors", -1, buf, n);
	put("checkpoint", "bad-truncated.safetensors", -1, buf, n - 5);
	put("checkpoint", "bad-header-only.safetensors", -1, buf,
	    8 + ((size_t)buf[0] | (size_t)buf[1] << 8 | (size_t)buf[2] << 16));
	buf[n - 1] ^= 0x40; /* a tensor bit: content hash mismatch */
	put("checkpoint", "bad-flipped-bit.safetensors", -1, buf, n);
	buf[n - 1] ^= 0x40;
	buf[5] = 0x7f; /* header length far beyond the file */
	put("checkpoint", "bad-header-length.safetensors", -1, buf, n);
	free(buf);

	model_seed(tmp, &a0, 8, "connect4", "ok-no-blocks.safetensors");
	/* a ResNet: 4-D conv tensors and the board metadata (planes, height, width) */
	struct az_arch ar = {.inputs = 8, .hidden = 2, .blocks = 1, .actions = 3,
			     .kind = AZ_NET_RESNET, .planes = 2, .height = 2, .width = 2};

	model_seed(tmp, &ar, 9, "tictactoe", "ok-resnet.safetensors");
	unlink(tmp);
}

/* A segment of `games` games of `plies` records each with geometry f x a; returns the bytes. */
static unsigned char *segment(const char *tmp, uint32_t f, uint32_t a, uint32_t games,
			      uint32_t plies, size_t *size)
{
	struct az_replay_writer *w;
	float x[84 * 8], pi[9 * 8], z[8];
	char err[256];

	unlink(tmp);
	if (az_replay_writer_open(tmp, f, a, &w, err, sizeof(err)) < 0) {
		fprintf(stderr, "az_fuzz_seeds: %s\n", err);
		exit(1);
	}
	for (uint32_t g = 0; g < games; g++) {
		for (uint32_t i = 0; i < plies * f; i++)
			x[i] = (float)((i + g) % 3 == 0);
		for (uint32_t i = 0; i < plies * a; i++)
			pi[i] = 1.0f / (float)a;
		for (uint32_t i = 0; i < plies; i++)
			z[i] = (i + g) % 2 ? 1.0f : -1.0f;
		if (az_replay_writer_append(w, plies, x, pi, z) < 0)
			exit(1);
	}
	if (az_replay_writer_close(w) < 0)
		exit(1);
	return slurp(tmp, size);
}

static void replays(const char *tmp)
{
	unsigned char *buf;
	size_t n;

	buf = segment(tmp, 18, 9, 2, 3, &n); /* tic-tac-toe geometry: selector 0 */
	put("replay", "ok-ttt.rpl", 0x00, buf, n);
	put("replay", "ok-ttt-torn-truncate.rpl", 0x04, buf, n - 7);
	put("replay", "bad-ttt-as-connect4.rpl", 0x01, buf, n);
	put("replay", "bad-header-short.rpl", 0x00, buf, 20);
	buf[30] ^= 1; /* header checksum */
	put("replay", "bad-header-crc.rpl", 0x00, buf, n);
	free(buf);
	buf = segment(tmp, 84, 7, 1, 2, &n); /* Connect Four geometry: selector 1 */
	put("replay", "ok-c4-twice.rpl", 0x09, buf, n);
	buf[n - 10] ^= 1; /* a record checksum: the last game is dropped */
	put("replay", "ok-c4-bad-record.rpl", 0x0d, buf, n);
	free(buf);
	buf = segment(tmp, 1, 1, 3, 2, &n); /* 1 x 1: selector 2 */
	put("replay", "ok-1x1.rpl", 0x02, buf, n);
	put("replay", "ok-1x1-header-only.rpl", 0x0e, buf, 32);
	/* 20-byte records from byte 32 on, two a game: a flip costs its game, the others stay */
	buf[32 + 2 * 20 + 1] ^= 1; /* the second game's first record: rewritten without it */
	put("replay", "ok-1x1-flip-inside-cut.rpl", 0x0e, buf, n);
	buf[32 + 2 * 20 + 1] ^= 1;
	buf[32 + 1 * 20 + 1] ^= 1; /* the first game's final record: the second game starts next */
	put("replay", "ok-1x1-flip-last-record.rpl", 0x0a, buf, n);
	free(buf);
	buf = segment(tmp, 3, 2, 1, 4, &n); /* 3 x 2: selector 3 */
	put("replay", "ok-3x2.rpl", 0x03, buf, n);
	free(buf);
	unlink(tmp);
}

int main(int argc, char **argv)
{
	char tmp[600];

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_ROOT\n", argv[0]);
		return 2;
	}
	snprintf(root, sizeof(root), "%s", argv[1]);
	snprintf(tmp, sizeof(tmp), "/tmp/az-fuzz-seed-%ld", (long)getpid());
	checkpoints(tmp);
	replays(tmp);
	return 0;
}
