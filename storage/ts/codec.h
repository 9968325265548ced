/* storage/ts/codec.h — the compressed chunk of one time series: (int64 ns time, double value) points in
 * strictly increasing time, encoded losslessly into one blob (a storage row).
 *
 * Times: delta-of-delta in units of the greatest common divisor of the intervals, so a regular
 * interval costs almost nothing. Values: when they are decimals with few digits (what collectors
 * send) they become integer mantissas with one exponent per chunk, then differences bit-packed per
 * block; other doubles (NaN, -0.0, inf, full-precision results) ride along as exact exceptions, and
 * a chunk with many of them uses Gorilla XOR instead. zstd is applied over the body only where it
 * makes the blob smaller. decode(encode(x)) is bit-exact for every double, NaN payloads included.
 *
 * Blob layout (version 1; integers are LEB128 varints, times "decimal varints" that spend few
 * bytes on round nanosecond values):
 *   u8 flags (low nibble version = 1, 0x10 = body is zstd), varint n,
 *   if n > 0: t_first, (t_last - t_first) as uint64,
 *   body (or varint raw length + zstd frame of the body). The header can be read without the body
 *   (fj_ts_chunk_header), so a backend can store or check n, t_first, t_last cheaply.
 *   Body: times as offsets from the grid t_first + i * step in units of the gcd of the intervals,
 *   then values (decimal mantissas with exceptions, or XOR); integer sequences are stored as
 *   frame-of-reference bit-packed blocks or as a sparse list, whichever is smaller. storage/ts/codec.c
 *   has the details; a new layout gets a new version number, and decoders keep reading old ones.
 *
 * Thread-safety: the functions are reentrant; an fj_ts_codec (scratch memory and zstd contexts)
 * belongs to one thread at a time. */
#ifndef FJ_TS_CODEC_H
#define FJ_TS_CODEC_H

#include "buf.h"
#include "fj_status.h"

#include <stddef.h>
#include <stdint.h>

/* Most points one chunk may hold; bounds what a corrupt blob can make the decoder allocate. */
#define FJ_TS_CHUNK_MAX_POINTS (1u << 20)

typedef struct fj_ts_codec fj_ts_codec;

/* Scratch for encode and decode (reused buffers, one zstd compression and decompression context).
 * NULL on out-of-memory. Every function taking a codec also accepts NULL and then uses a
 * temporary one, which is slower. */
fj_ts_codec *fj_ts_codec_create(void);
void fj_ts_codec_destroy(fj_ts_codec *c); /* NULL is a no-op */

/* Appends the chunk of n points (n may be 0) to out. t must be strictly increasing: duplicates
 * are resolved by the caller (the engine keeps the last written). Returns FJ_OK; FJ_EINVAL if t
 * is not strictly increasing or n > FJ_TS_CHUNK_MAX_POINTS; FJ_ETOOBIG if out's cap is exceeded;
 * FJ_ENOMEM. On failure out is as it was. */
fj_status fj_ts_chunk_encode(fj_ts_codec *c, const int64_t *t, const double *v, size_t n,
                             fj_buf *out);

/* What the header says, without decoding the body. For n == 0, t_first and t_last are 0. */
typedef struct fj_ts_chunk_hdr {
    size_t n;
    int64_t t_first, t_last;
} fj_ts_chunk_hdr;

/* FJ_OK, or FJ_EINVAL when blob[0..len) does not start with a valid header. */
fj_status fj_ts_chunk_header(const void *blob, size_t len, fj_ts_chunk_hdr *h);

/* Decodes the whole chunk into t[0..*n) and v[0..*n). Returns FJ_OK; FJ_ETOOBIG when the chunk
 * holds more than cap points (*n is then set to the count needed and nothing is written);
 * FJ_EINVAL when the blob is corrupt (anything may have been written to t and v, nothing past
 * cap); FJ_ENOMEM. */
fj_status fj_ts_chunk_decode(fj_ts_codec *c, const void *blob, size_t len, int64_t *t, double *v,
                             size_t cap, size_t *n);

#endif
