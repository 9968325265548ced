/* storage/ts/strchunk.h — the compressed chunk of one string series (docs/metrics.md, "Field
 * types"): its points (int64 ns time, bytes) in strictly increasing time, encoded into one blob
 * (a row of ts_string_chunk), so that a series' old strings cost about what their text
 * compresses to instead of a row each.
 *
 * Blob layout (version 1; integers are LEB128 varints):
 *   u8 version = 1, varint n,
 *   varint length of the times, the times as a numeric chunk (storage/ts/codec.h) of n points
 *   whose values are all 0 (so a regular interval costs almost nothing, as there),
 *   u8 flags (1: the values are zstd), varint length of the values' bytes, then those bytes, or
 *   varint length of the zstd frame and the frame. The values' bytes: per point a varint length
 *   and its bytes (any bytes, NUL included).
 *
 * Thread-safety: reentrant; a codec (scratch) belongs to one thread at a time. */
#ifndef FJ_TS_STRCHUNK_H
#define FJ_TS_STRCHUNK_H

#include "buf.h"
#include "fj_status.h"
#include "storage/ts/codec.h"

#include <stddef.h>
#include <stdint.h>

/* Points decoded from a string chunk: t[i] and the bytes data[off[i] .. off[i] + len[i]).
 * Owned by the caller, reusable across decodes; freed with fj_ts_strs_free. */
typedef struct fj_ts_strs {
    int64_t *t;
    size_t *off, *len;
    size_t n, cap;
    char *data;
    size_t data_len, data_cap;
} fj_ts_strs;

void fj_ts_strs_free(fj_ts_strs *s);

/* Appends the chunk of points (t[i], v[i][0..len[i])), i < n, t strictly increasing, to out.
 * FJ_OK, FJ_EINVAL (times not increasing, n 0 or over FJ_TS_CHUNK_MAX_POINTS), FJ_ETOOBIG (out's
 * cap), FJ_ENOMEM. */
fj_status fj_ts_strchunk_encode(fj_ts_codec *c, const int64_t *t, const char *const *v, const size_t *len, size_t n,
                                fj_buf *out);

/* Decodes blob[0..blen) into *out (replacing what it held). FJ_OK, FJ_EINVAL (corrupt), FJ_ENOMEM. */
fj_status fj_ts_strchunk_decode(fj_ts_codec *c, const void *blob, size_t blen, fj_ts_strs *out);

/* Appends the point (t, v[0..len)) to s. FJ_OK or FJ_ENOMEM. */
fj_status fj_ts_strs_add(fj_ts_strs *s, int64_t t, const char *v, size_t len);

/* The packing of a series' strings (the writers' maintenance): rows (time-ordered, the newer
 * writes) merged over old (the points of the chunks they overlap, time-ordered), a row winning
 * over a chunk's point of the same time, encoded into out; *first, *last and *n say what it
 * holds. FJ_OK, FJ_EINVAL (more than FJ_TS_CHUNK_MAX_POINTS), FJ_ENOMEM. */
fj_status fj_ts_strchunk_merge(fj_ts_codec *c, const fj_ts_strs *old, const fj_ts_strs *rows, fj_buf *out,
                               int64_t *first, int64_t *last, size_t *n);

#endif
