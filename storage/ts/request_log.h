/* storage/ts/request_log.h — point records for the metrics request log: the points of one request as the engine
 * took them (series id, time, value), compact enough to need no compression.
 *
 * Why: the request log exists so that points still buffered in the engine survive a crash. Logging
 * the raw line-protocol body made the writer thread zstd-compress ~90 bytes of text per point (a
 * fifth of ingest CPU); a point record takes ~5 bytes per point as collectors send them, costs a
 * few arithmetic operations per point to write, and replays without the line-protocol decoder.
 * Series ids are only meaningful with the catalog rows written in the same transaction as the
 * record (or before it), which the backends guarantee.
 *
 * Format: the magic "FJP1", then per point three varints: the id's difference from the previous
 * point's id and the time's difference from the previous point's time in ns (both zigzagged,
 * modulo 2^64; the first point's against 0), and the value: zigzag(m) << 3 | k when the value is
 * exactly m / 10^k for some k <= 4 (bit for bit, as the decoder computes it: values with the few
 * decimals collectors send), else the tag 7 followed by the 8 bytes of IEEE 754, little-endian.
 *
 * One fj_ts_log per thread (it owns its buffers); reusable across records. */
#ifndef FJ_TS_LOG_H
#define FJ_TS_LOG_H

#include "fj_status.h"

#include <stddef.h>
#include <stdint.h>

typedef struct fj_ts_log fj_ts_log;

/* NULL when out of memory. */
fj_ts_log *fj_ts_log_create(void);
void fj_ts_log_destroy(fj_ts_log *l); /* NULL is a no-op */

/* Starts a new record (forgets the points of the previous one). */
void fj_ts_log_begin(fj_ts_log *l);

/* Adds n points to the record. FJ_OK or FJ_ENOMEM (the record is then unusable until begin). */
fj_status fj_ts_log_add(fj_ts_log *l, const uint32_t *ids, const int64_t *t, const double *v, size_t n);

/* Points added since begin. */
size_t fj_ts_log_count(const fj_ts_log *l);

/* The finished record: *out (valid until the next call on l) and *len. FJ_OK or FJ_ENOMEM. */
fj_status fj_ts_log_finish(fj_ts_log *l, const void **out, size_t *len);

/* Decodes a finished record into arrays owned by l, valid until the next call on l: *n points
 * (the arrays may be NULL when *n is 0).
 * FJ_OK; FJ_EIO when it is not a well-formed record (corrupt or not a point record); FJ_ENOMEM. */
fj_status fj_ts_log_decode(fj_ts_log *l, const void *rec, size_t len, const uint32_t **ids, const int64_t **t,
                           const double **v, size_t *n);

#endif
