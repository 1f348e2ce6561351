/* SPDX-License-Identifier: MIT */
/* Replay store: append-only segment files of fixed-size checksummed records, written
 * asynchronously through io_uring (liburing) so a self-play worker never waits on the disk.
 *
 * File: a 32-byte header { "AZRPLAY1", u32 features, u32 actions, u32 record_bytes, u32 flags,
 * u32 reserved, u32 crc32 of the preceding 28 bytes }, then records:
 *   { float features[D]; float policy[A]; float z; u32 info; u32 crc32 of the preceding bytes }
 * where info is the record's ply index in its game (low 16 bits), with AZ_REPLAY_LAST set on the
 * game's final record. On load a torn tail (a partial record) is dropped, together with the
 * records of a game that has no final record, and a record with a bad checksum costs its own
 * game and no other: the store holds whole games only.
 *
 * A record whose policy is all zero carries a value target only (a position searched by a fast
 * search under playout-cap randomisation): the trainer's cross-entropy weights each row by its
 * policy mass (az_train_policy_xent), so such a row adds nothing to the policy loss or its
 * gradient. Older files simply have no such rows: the format is unchanged.
 *
 * The legal moves travel in the policy's sign bits: policy[a] is -0.0f when action a is illegal
 * in the record's position and +0.0f or more when it is legal (run/worker.c writes them so). The
 * trainer's softmax runs over the legal moves only (az_train_policy_xent); the values compare
 * equal to 0, so older readers see the same targets, and older files (no sign bits set) read as
 * "every move legal", the unmasked loss they were trained with. Anything that moves policies
 * around must copy them (the games' symmetry functions do) rather than add to them. */
#ifndef AZ_REPLAY_H
#define AZ_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#define AZ_REPLAY_LAST 0x80000000u

struct az_replay_writer;

/* The value targets of one game's n records into z[n]: z[i] = (1 - mix) * r_i + mix * q[i],
 * where r_i is the game's result for record i's side to move (v_final for final_player, the side
 * to move at the end, -v_final for the other) and q[i] the root's search value at record i for
 * its side to move (q may be NULL when mix is 0 and q_only is 0). mix 0 is AlphaZero's target,
 * the result only; lc0's trainer mixes the same two targets (its q_ratio). The first q_only
 * records (at most n) take q[i] alone: they precede a random move of the game (--explore), after
 * which the result no longer follows from their own play. */
void az_replay_value_targets(uint32_t n, const int8_t *player, int final_player, float v_final,
			     const float *q, float mix, uint32_t q_only, float *z);

/* Create (O_CREAT|O_EXCL) segment file `path` and an io_uring for it. Returns 0, -EEXIST or
 * -errno, message in err. */
int az_replay_writer_open(const char *path, uint32_t features, uint32_t actions,
			  struct az_replay_writer **out, char *err, size_t errlen);

/* Queue records of one finished game: features[n, D], policy[n, A], z[n]. Records are staged in
 * the writer's buffers and submitted with io_uring; the call only waits when all buffers are in
 * flight. A game is either fully queued or (on error) not at all. Returns 0 or -errno (e.g.
 * -ENOSPC reported by an earlier completion). */
int az_replay_writer_append(struct az_replay_writer *w, uint32_t n, const float *features,
			    const float *policy, const float *z);

/* Submit what is staged, wait for every completion, fsync, close, free. Returns 0 or the first
 * -errno seen. */
int az_replay_writer_close(struct az_replay_writer *w);

/* Records loaded into memory (struct-of-arrays). */
struct az_replay_buf {
	uint32_t features, actions;
	size_t count, cap;
	float *x;  /* [count, D] */
	float *pi; /* [count, A] */
	float *z;  /* [count] */
};

void az_replay_buf_init(struct az_replay_buf *b, uint32_t features, uint32_t actions);
void az_replay_buf_free(struct az_replay_buf *b);

/* Append the records of every whole game of segment file `path` to b, in file order. Every
 * whole record to the end of the file is read. A record with a bad checksum costs its own game
 * only: that game's records before it are dropped, and the good records after it up to the next
 * game's first record (index 0) or its own final record. A partial record at the end and a last
 * game without its final record are dropped too. *dropped_bytes (may be NULL) gets the bytes
 * after the header that were not loaded, damage inside the file and tail together: the file's
 * size less the header less the loaded records' bytes. With truncate != 0 and something
 * dropped, the file is left holding the header and the loaded records only: truncated when all
 * that was dropped is at its end, else rewritten through a temporary file and a rename (never
 * half-rewritten); loading it again loads the same records with nothing dropped.
 * Returns the number of records loaded, or -EINVAL (bad header or geometry: err says which),
 * -ENOENT, -ENOMEM, -errno when the file cannot be read (b unchanged), or -errno when it
 * cannot be truncated or rewritten (err says which; the records are in b all the same). */
long az_replay_load_file(const char *path, struct az_replay_buf *b, int truncate,
			 size_t *dropped_bytes, char *err, size_t errlen);

/* ---- raw records (for moving them between machines: run/mpi.c) ---- */

#define AZ_REPLAY_HEADER_BYTES 32 /* a segment file's header; records follow it */

/* Bytes of one record of a D-feature, A-action game: (D + A + 1) * 4 + 8. */
size_t az_replay_record_bytes(uint32_t features, uint32_t actions);

/* Length of the longest prefix of `len` bytes of raw records (as in a segment file after its
 * header) that holds only records with good checksums and ends on a game's final record
 * (AZ_REPLAY_LAST): the whole games at its start. *games (may be NULL) gets their count. Used
 * to read a file another process is still appending to: a record in flight fails its checksum
 * and ends the prefix. */
size_t az_replay_whole_games(const void *bytes, size_t len, uint32_t features, uint32_t actions,
			     uint32_t *games);

/* Decode one raw record into x[D], pi[A], *z. Returns 1 when it is its game's final record, 0
 * when not, -EINVAL when its checksum is bad. */
int az_replay_record_decode(const void *rec, uint32_t features, uint32_t actions, float *x,
			    float *pi, float *z);

#endif
