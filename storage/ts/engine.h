/* storage/ts/engine.h — the in-memory side of line-protocol metric storage: a catalog of series (key →
 * uint32 id), an append buffer of (time, value) per series, sealing of buffers into compressed
 * chunks (storage/ts/codec.h), and reads that merge stored chunks with what is still in memory.
 *
 * Persistence belongs to the caller (the storage backend). It either loads the catalog at startup
 * (fj_ts_engine_load_series) or hands the engine a way to look series up on first use
 * (fj_ts_engine_set_catalog), and, inside each write transaction, takes what changed through a
 * sink: new series and sealed chunks (fj_ts_engine_emit); after the commit it calls
 * fj_ts_engine_committed, after a rollback fj_ts_engine_rolled_back (the same items are handed
 * again by the next emit). Until committed, sealed chunks stay in memory and reads see them, so a
 * reader never misses points between "left the buffer" and "visible in the database".
 *
 * Last write wins: within a buffer a later append at the same time replaces the earlier one. Every
 * sealed chunk gets the next number of a sequence that only grows (opts.seq_start continues it
 * after a restart); for one series, every point of a chunk was written after every point of the
 * chunks with smaller seq, so a read resolves equal times across chunks by the larger seq, and the
 * unsealed buffer beats every chunk. Late and out-of-order points of any age are accepted; they are
 * sealed into new chunks that may overlap older ones.
 *
 * Sealing: a buffer is sealed when it holds opts.seal_points points (the first fill of each series
 * stops at a pseudo-random point between half and all of it, so series created together do not all
 * seal in the same batch), when it has been open for opts.seal_age_ns of data time (data time is
 * the newest point time seen by the engine: a late backlog does not seal point by point), when all
 * buffers together exceed opts.max_buffered_points or opts.max_buffered_bytes (buffers are then
 * sealed round-robin), or on
 * fj_ts_engine_flush. A chunk never spans a gap longer than seal_age_ns between two points.
 * Points in the future move data time forward, so the caller should refuse timestamps far ahead
 * of the wall clock at ingest.
 *
 * Durability of unsealed points comes from the caller's request log: fj_ts_engine_set_lsn tags the
 * points that follow with a log position, and fj_ts_engine_durable_lsn tells up to where the log
 * is no longer needed.
 *
 * Thread-safety: one writer thread owns the engine: every function not marked "any thread" must be
 * called from it (or under the caller's own mutual exclusion). Functions marked "any thread" may
 * run concurrently with the writer and with each other: they take a shared lock only to look up a
 * series or copy its buffer and unsealed chunks (microseconds). The writer takes the exclusive lock
 * per append call (letting readers in every 4096 points), for flush and for commits; seals run
 * inside the append that triggers them (tens of microseconds each). The lock prefers the writer,
 * so readers cannot starve ingest. */
#ifndef FJ_TS_ENGINE_H
#define FJ_TS_ENGINE_H

#include "fj_status.h"
#include "storage/ts/codec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fj_ts_engine fj_ts_engine;

typedef struct fj_ts_str {
    const char *p; /* need not be NUL-terminated; may be NULL when n == 0 */
    size_t n;
} fj_ts_str;

/* A series' field type, as InfluxDB's; the values of ts_series.ftype (and of fj_ftype in
 * ingest/records/metrics.h). FJ_TS_UNTYPED: a series stored before fjord kept types, which takes
 * floats, integers and booleans, and answers floats. A string series has no points here: the
 * backends keep its values as rows (docs/metrics.md, "Field types"); the engine holds its key and
 * type only, so that a series has one id and one type whatever its values are. */
typedef enum fj_ts_ftype {
    FJ_TS_FLOAT = 0,
    FJ_TS_INTEGER = 1,
    FJ_TS_STRING = 2,
    FJ_TS_BOOLEAN = 3,
    FJ_TS_UNTYPED = 4
} fj_ts_ftype;

/* A series key. An absent tag is the empty string (line-protocol tag values are never empty).
 * ftype is no part of the key: a series is made with the type of its first point, and a point of
 * another type is refused (fj_ts_append, fj_ts_series_get); the engine sets it on every key it
 * hands out (sink, fj_ts_series_key). */
typedef struct fj_ts_key {
    fj_ts_str cluster, host, metric, type, type_id, stype, stype_id;
    uint8_t ftype; /* fj_ts_ftype */
} fj_ts_key;

/* Most bytes of the seven strings of one key together. */
#define FJ_TS_KEY_MAX 1024

typedef struct fj_ts_opts {
    uint32_t seal_points;       /* default 720 (12 h at 60 s); at most FJ_TS_CHUNK_MAX_POINTS */
    int64_t seal_age_ns;        /* default 12 h; negative: never by age */
    size_t max_buffered_points; /* default 0: no limit */
    size_t max_buffered_bytes;  /* default 0: no limit; the open buffers' memory (fj_ts_stats) */
    uint64_t seq_start;         /* first chunk seq: 1 + the largest stored seq (default 1) */
} fj_ts_opts;

/* One point to append. */
typedef struct fj_ts_point {
    fj_ts_key key;
    int64_t t; /* nanoseconds */
    double v;
} fj_ts_point;

/* A sealed chunk, as the sink receives it and as a chunk iterator yields it. */
typedef struct fj_ts_chunk {
    uint32_t series_id;
    uint32_t count;
    int64_t t_first, t_last;
    uint64_t seq;
    const void *blob; /* fj_ts_chunk_decode format */
    size_t len;
} fj_ts_chunk;

/* Where the caller persists what the engine reports. Each callback returns FJ_OK or an error
 * (which stops fj_ts_engine_emit). Pointers are valid during the call only. Callbacks must not
 * call engine functions other than the "any thread" ones. */
typedef struct fj_ts_sink {
    fj_status (*series)(void *ud, uint32_t id, const fj_ts_key *key);
    fj_status (*chunk)(void *ud, const fj_ts_chunk *c);
    void *ud;
    /* Deletes a chunk handed before (series_id, t_last, seq): a checkpoint (fj_ts_engine_checkpoint)
     * superseded by a newer one or by the seal of its buffer, handed right before that chunk.
     * Needed only by a caller that checkpoints. */
    fj_status (*drop)(void *ud, uint32_t series_id, int64_t t_last, uint64_t seq);
} fj_ts_sink;

/* For a caller that shares (fj_ts_engine_share): deletes every chunk of series_id with t_lo <=
 * t_last <= t_hi and seq_lo <= seq <= seq_hi, a shared buffer's checkpoint and pieces superseded as a
 * checkpoint is (only chunks of that buffer are in the range); ud is the sink's at hand. */
typedef fj_status (*fj_ts_drop_range)(void *ud, uint32_t series_id, int64_t t_lo, int64_t t_hi, uint64_t seq_lo,
                                      uint64_t seq_hi);

/* A new engine; opts may be NULL for the defaults (zero fields also mean the default).
 * FJ_EINVAL on bad options, FJ_ENOMEM. */
fj_status fj_ts_engine_open(const fj_ts_opts *opts, fj_ts_engine **out);

/* Frees everything, including points never sealed or committed (flush, emit and commit first).
 * NULL is a no-op. No other thread may be using the engine. */
void fj_ts_engine_close(fj_ts_engine *e);

/* The caller's catalog beyond the series the engine holds: with it the engine starts empty and
 * learns a series on first use (start-up no longer reads every series; docs/metrics.md, "Lazy
 * catalog"). Each function runs on the writer thread with the engine's lock released, so readers
 * are not held up by the database; the strings it hands back stay valid until its next call.
 * find: the id of a key the engine does not hold and its stored type (FJ_OK, FJ_ENOTFOUND when
 * the catalog has none, or a failure that the append returns). key: the key of an id the engine does not hold (a
 * logged point's series at replay): FJ_OK or FJ_ENOTFOUND. admit (may be NULL): whether a series
 * that exists nowhere may be created now; false drops its point (fj_ts_append's ids say which),
 * the caller keeping track of why (a quota, storage/core/quota.h). */
typedef struct fj_ts_catalog {
    fj_status (*find)(void *ud, const fj_ts_key *key, uint32_t *id, uint8_t *ftype);
    fj_status (*key)(void *ud, uint32_t id, fj_ts_key *out); /* out->ftype too */
    bool (*admit)(void *ud, const fj_ts_key *key);
    void *ud;
} fj_ts_catalog;

/* Sets the catalog (NULL: none, the default, where every series is loaded with
 * fj_ts_engine_load_series) and the first id to give a new series (1 + the largest stored id). */
void fj_ts_engine_set_catalog(fj_ts_engine *e, const fj_ts_catalog *cat, uint32_t next_id);

/* Catalog row from the database: the series keeps its id and is not reported to the sink.
 * FJ_EINVAL (id 0, key too long), FJ_ECONFLICT (id or key already present), FJ_ENOMEM. */
fj_status fj_ts_engine_load_series(fj_ts_engine *e, uint32_t id, const fj_ts_key *key);

/* The id of key, created (and queued for the sink) with key->ftype if new and create is set.
 * FJ_OK, FJ_ENOTFOUND (absent and !create), FJ_ECONFLICT (the series is of a type key->ftype does
 * not fit, fj_ts_ftype_fits; *id is set), FJ_ELIMITED (the catalog's admit refused a new series),
 * FJ_EINVAL (key too long), FJ_ENOMEM. */
fj_status fj_ts_series_get(fj_ts_engine *e, const fj_ts_key *key, bool create, uint32_t *id);

/* Whether a point of type sent may go to a series of type stored: the same type, or a number or
 * boolean to an untyped series. */
bool fj_ts_ftype_fits(uint8_t stored, uint8_t sent);

/* Any thread: the type of the series of key held in memory (fj_ts_ftype), or -1 when the engine
 * holds none (for a writer that finds a point dropped: a conflict when held, else a quota). */
int fj_ts_series_ftype(fj_ts_engine *e, const fj_ts_key *key);

/* Any thread: the id of an existing key; FJ_OK, FJ_ENOTFOUND (also for a key too long) or
 * FJ_ECONFLICT (*id set: the series' type is one key->ftype does not fit). */
fj_status fj_ts_series_find(fj_ts_engine *e, const fj_ts_key *key, uint32_t *id);

/* Any thread: the key of id, its strings copied into buf (each NUL-terminated). FJ_OK,
 * FJ_ENOTFOUND, FJ_ETOOBIG (buf smaller than the key's bytes plus 7). */
fj_status fj_ts_series_key(fj_ts_engine *e, uint32_t id, char *buf, size_t cap, fj_ts_key *out);

/* Points appended from now on come from request-log position lsn (non-decreasing). */
void fj_ts_engine_set_lsn(fj_ts_engine *e, uint64_t lsn);

/* The smallest lsn whose points are not all in committed chunks; UINT64_MAX when nothing is
 * waiting. Log records below it can be dropped. O(1), except O(number of series) after a commit
 * that freed chunks. */
uint64_t fj_ts_engine_durable_lsn(fj_ts_engine *e);

/* Appends pts[0..n) in order, creating series as needed, sealing as the policy says; ids (may be
 * NULL) receives the series id of every point appended, 0 for a point dropped because the
 * catalog's admit refused its new series or because its type does not fit its series'
 * (fj_ts_ftype_fits; fj_ts_series_ftype then finds the series). Returns FJ_OK, or the first failure:
 * FJ_EINVAL (a key too long), FJ_ENOMEM; *n_done (may be NULL) is then the number of points
 * appended before it, and err names the point. A seal that fails for lack of memory keeps its
 * points buffered and is retried by later appends. */
fj_status fj_ts_append(fj_ts_engine *e, const fj_ts_point *pts, size_t n, uint32_t *ids, size_t *n_done,
                       fj_err *err);

/* The same for points of series already known by id (e.g. resolved with fj_ts_series_get, or
 * logged): an id the engine does not hold is asked of the catalog's key. FJ_ENOTFOUND for an
 * unknown id. */
fj_status fj_ts_append_ids(fj_ts_engine *e, const uint32_t *ids, const int64_t *t,
                           const double *v, size_t n, size_t *n_done);

/* Seals every non-empty buffer (shutdown, or to make everything durable). FJ_OK or FJ_ENOMEM
 * (what could not be sealed stays buffered). */
fj_status fj_ts_engine_flush(fj_ts_engine *e);

/* Hands the sink every series created and every chunk sealed since the last commit that it has
 * not been handed yet: series first (a chunk's series is always handed before it), each in the
 * order of creation or sealing. Call inside the write transaction. On a sink error stops and
 * returns it; what was not handed is handed by the next call. */
fj_status fj_ts_engine_emit(fj_ts_engine *e, const fj_ts_sink *sink);

/* Checkpoint: every open buffer holding writes not yet in a committed chunk or checkpoint is handed
 * to the sink as a chunk of its points so far (a new seq; the buffer stays open), after a drop of
 * its previous checkpoint; a buffer spanning a gap longer than the seal age is sealed instead
 * (handed by the next emit). Call inside the write transaction after fj_ts_engine_emit, with no
 * append before its commit: fj_ts_engine_committed then counts those writes durable (the request
 * log below fj_ts_engine_durable_lsn may go), fj_ts_engine_rolled_back forgets the checkpoint.
 * Why: without it an open buffer's points stay in the request log until the buffer seals (12 h by
 * default), the log taking ~5 bytes a point beside the chunks. A checkpoint takes about what the
 * buffer's seal will, and is deleted by that seal. Reads skip a buffer's stored checkpoint (the
 * buffer holds all of it). FJ_OK, FJ_EINVAL (sink without chunk or drop), FJ_ENOMEM, or the
 * sink's error (nothing of the checkpoint counts then). */
fj_status fj_ts_engine_checkpoint(fj_ts_engine *e, const fj_ts_sink *sink);

/* Pieces a shared buffer is stored in, at most, before a share replaces them with one checkpoint. */
#define FJ_TS_SHARE_PIECES 16

/* Share: makes every open buffer's writes not yet in a committed chunk readable from the caller's
 * chunk store by other processes, at about the cost of those writes. As a checkpoint (same call
 * rules, same commit: the writes then count durable), except that a buffer stored before hands
 * only a piece: a chunk of the points written since (the replaced newest point again), with a new
 * seq, so it wins over the buffer's older pieces. At FJ_TS_SHARE_PIECES pieces, and for a buffer of
 * plain pairs (a point came out of order), the share is a checkpoint of the whole buffer after a
 * drop_range of what was stored; the buffer's seal drops them all the same way. Why: rewriting the
 * whole buffer each second made ingest on PostgreSQL 3 times slower (docs/metrics.md). Reads skip
 * the buffer's own pieces. The engine keeps drop_range for the seals of shared buffers, which
 * fj_ts_engine_emit hands with the sink's ud (so a sink and a drop_range go together). FJ_OK,
 * FJ_EINVAL (sink without chunk or drop, no drop_range), FJ_ENOMEM, or the sink's error. */
fj_status fj_ts_engine_share(fj_ts_engine *e, const fj_ts_sink *sink, fj_ts_drop_range drop_range);

/* The transaction holding everything handed so far committed: the engine forgets those chunks. */
void fj_ts_engine_committed(fj_ts_engine *e);

/* That transaction rolled back: the next emit hands the same series and chunks again. */
void fj_ts_engine_rolled_back(fj_ts_engine *e);

/* The caller's stored chunks of one series, one per call: FJ_OK with *out filled (valid until
 * the next call), FJ_ENOTFOUND when there are no more, or an error that fj_ts_read returns. It
 * must yield every stored chunk of the series overlapping the range (more is harmless). */
typedef fj_status (*fj_ts_chunk_iter)(void *ud, fj_ts_chunk *out);

/* Points of a read, time-ordered, times unique. Owned by the caller; reusable across reads. */
typedef struct fj_ts_points {
    int64_t *t;
    double *v;
    size_t n, cap;
} fj_ts_points;

void fj_ts_points_free(fj_ts_points *p);

/* Any thread: the points of series_id with from <= t <= to, merged from the chunks `next` yields
 * (may be NULL), the engine's unsealed chunks and its buffer (e may be NULL: stored chunks only);
 * equal times resolved by last write. The engine's part is copied before `next` is first called,
 * and `next` must not take its database snapshot earlier than that first call: then no point is
 * missed by a seal and commit running concurrently. c (per-thread scratch) may be NULL.
 * Returns FJ_OK, FJ_EINVAL (from > to; err says), FJ_EIO (a stored chunk is corrupt or of
 * another series), FJ_ENOMEM, or the iterator's error. out->n is 0 on failure. */
fj_status fj_ts_read(fj_ts_engine *e, fj_ts_codec *c, uint32_t series_id, int64_t from, int64_t to,
                     fj_ts_chunk_iter next, void *ud, fj_ts_points *out, fj_err *err);

/* fj_ts_read in two steps, for a caller that fetches the stored chunks of many series with one
 * database statement: fj_ts_read_begin copies the engine's part of one series (as fj_ts_read does
 * first), fj_ts_read_end merges it with the chunks `next` yields into out and frees the part. The
 * snapshot rule becomes: begin every series of the statement, then run it. c (may be NULL) must
 * outlive the part and be used by one thread. fj_ts_read_discard frees a part not ended (NULL is
 * a no-op). Same results and errors as fj_ts_read. */
typedef struct fj_ts_read_part fj_ts_read_part;
fj_status fj_ts_read_begin(fj_ts_engine *e, fj_ts_codec *c, uint32_t series_id, int64_t from, int64_t to,
                           fj_ts_read_part **out, fj_err *err);
fj_status fj_ts_read_end(fj_ts_read_part *p, fj_ts_chunk_iter next, void *ud, fj_ts_points *out, fj_err *err);
void fj_ts_read_discard(fj_ts_read_part *p);

/* The seqs [*lo, *hi] of the chunks the engine's buffer of the part's series was stored in (its
 * checkpoint and shared pieces), which fj_ts_read_end skips: a caller's statement may leave them
 * out. *lo > *hi when there are none. */
void fj_ts_read_part_skip(const fj_ts_read_part *p, uint64_t *lo, uint64_t *hi);

typedef struct fj_ts_stats {
    size_t series, buffered_points, buffer_bytes, pending_chunks, pending_bytes;
    uint64_t sealed_chunks, sealed_points, sealed_bytes; /* since open */
    size_t open_bytes;    /* the open buffers alone (buffer_bytes adds the catalog's memory) */
    size_t unckpt_writes; /* points written since the last committed checkpoint */
    size_t loaded;        /* of series: those the catalog handed (fj_ts_catalog), not created */
    uint64_t refused;     /* points dropped because admit refused their series, since open */
    uint64_t conflicts;   /* points dropped because their type was not their series', since open */
} fj_ts_stats;

/* Counters for monitoring and benchmarks (writer thread). */
void fj_ts_engine_stats(const fj_ts_engine *e, fj_ts_stats *st);

/* Any thread: the series the engine holds in memory, and of them those loaded from the catalog. */
void fj_ts_engine_series_held(fj_ts_engine *e, size_t *held, size_t *loaded);

#endif
