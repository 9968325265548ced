/* storage/ts/obuf.h — a series' open buffer, compressed as it fills: (int64 ns time, double value) points
 * in strictly increasing time, bit-packed on append, so an open buffer costs about what a sealed
 * chunk does instead of 16 bytes a point.
 *
 * Why not the chunk codec (storage/ts/codec.h): it packs a whole chunk at once (blocks, a shared
 * exponent, zstd), which an append cannot extend. This stream is written point by point and read
 * back whole (a read of the series, a seal), the engine's only two uses of an open buffer.
 *
 * The newest point is held unpacked, so a write at the newest time (the common duplicate: a body
 * sent twice) replaces it; an earlier time is the caller's to handle (the engine then falls back to
 * an unsorted buffer of plain points).
 *
 * Stream (bits, most significant first): the first point's time (64 bits); the second point's
 * time difference (64 bits); then per point the difference of differences in ns, zigzagged:
 * '0' for 0, '10' + 20 bits, '110' + 34 bits, '111' + 64 bits. Values: when a value is exactly
 * m / 10^k (k <= 4, bit for bit, as request_log.h decides it) for the buffer's current k, the
 * zigzagged difference z of m from the previous mantissa: '0' + w bits when z < 2^w, '10' + 6 bits
 * (the new w - 1) + w bits otherwise; w shrinks by one after 8 values in a row that fit w - 1
 * bits (both sides see the values, so this needs no bits). Anything else is '11' + 3 bits: k'
 * (0..4) and the 64-bit zigzagged mantissa, which sets the scale; or 7 and the 64 bits of the
 * double (NaN, infinities, -0.0, full-precision results), which leave the scale alone.
 *
 * Memory: one allocation per buffer, its header (56 bytes) and the bits, grown by an eighth
 * (a few more reallocations for less slack: memory per series is what the buffer is for).
 * Not thread-safe: the engine's lock guards it. */
#ifndef FJ_TS_OBUF_H
#define FJ_TS_OBUF_H

#include "fj_status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct fj_ts_obuf fj_ts_obuf;

/* A buffer holding the one point (t, v); NULL when out of memory. Freed with fj_ts_obuf_free. */
fj_ts_obuf *fj_ts_obuf_new(int64_t t, double v);
void fj_ts_obuf_free(fj_ts_obuf *b); /* NULL is a no-op */

/* Appends (t, v): t must be later than the newest point's time (fj_ts_obuf_last_t); at that
 * same time use fj_ts_obuf_replace_last. FJ_OK (*b may have moved), FJ_EINVAL (t not later; *b
 * unchanged), FJ_ENOMEM (*b unchanged, still valid). */
fj_status fj_ts_obuf_append(fj_ts_obuf **b, int64_t t, double v);

/* The newest point's value becomes v. */
void fj_ts_obuf_replace_last(fj_ts_obuf *b, double v);

size_t fj_ts_obuf_count(const fj_ts_obuf *b);
int64_t fj_ts_obuf_last_t(const fj_ts_obuf *b);
/* The newest point's value. */
double fj_ts_obuf_last_v(const fj_ts_obuf *b);
/* Bytes allocated for the buffer, header included (what it costs in memory). */
size_t fj_ts_obuf_bytes(const fj_ts_obuf *b);
/* Where the next point's bits go, a byte of the block once it holds two points: for a prefetch
 * before fj_ts_obuf_append (the header and this byte are apart once a buffer holds a few points). */
const void *fj_ts_obuf_tail(const fj_ts_obuf *b);

/* Writes the fj_ts_obuf_count points into t[] and v[], in time order. */
void fj_ts_obuf_decode(const fj_ts_obuf *b, int64_t *t, double *v);

#endif
