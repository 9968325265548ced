/* storage/pg/ts.h — line-protocol metrics in the PostgreSQL backend (storage/pg/ts.c: engine, write path,
 * startup replay, maintenance; storage/pg/ts_read.c: the reads). Not a public header: only storage/pg*.c
 * include it. Semantics are SQLite's (docs/metrics.md); what several servers sharing one database
 * change is in docs/postgres.md.
 *
 * How the write path calls it, per group commit (storage/pg/write.c):
 *   fj_pg_ts_prepare   before BEGIN: series ids (and cluster ids) come from the database, committed
 *                      on their own, so the engine never creates an id itself;
 *   BEGIN ... Sonar tables ...
 *   fj_pg_ts_write     request log, points, messages and jobs of every FJ_KIND_METRICS envelope,
 *                      then the engine's sealed chunks and this server's durable lsn;
 *   COMMIT or ROLLBACK, then fj_pg_ts_end.
 * All on the writer thread, with the writer handle. */
#ifndef FJ_PG_TS_H
#define FJ_PG_TS_H

#include "storage/pg/int.h"
#include "storage/ts/writer.h"

#include <stdbool.h>

/* The handle's metrics state (fj_store.ts), created on first use. */
struct fj_pg_ts {
    /* writer: the bookkeeping (storage/ts/writer.h; w.own: in one of our own transactions, always save
     * the state) */
    fj_ts_writer w;
    char *instance;           /* this server's identity (setting `instance`) */
    int64_t instance_id;
    int lock_pid;             /* backend pid of the session holding the instance lock; 0: none */
    int64_t peers_at;         /* monotonic ns of the last look for other servers (look_for_peers) */
    uint64_t seq_max, seq_saved; /* the largest chunk seq handed to the database, and stored */
    uint32_t *ids;            /* the group's points' series ids, in order (fj_pg_ts_prepare) */
    size_t n_ids, cap_ids;
    fj_intern keys;           /* the group's distinct unknown keys (serialised) */
    fj_write_count *refused;  /* per envelope of the group: points dropped by a series quota, and why */
    size_t cap_refused;
    fj_pg_cols cols;          /* batched statements' rows */
    fj_pg_cols drops;         /* checkpoints to delete (series, t_last, seq), sent with the chunks */
    fj_pg_cols strs;          /* the group's string points (series, time, value) */
    int64_t last_pack;        /* when (monotonic ns) string points were last packed; 0: not yet */
    fj_buf kbuf;              /* a serialised key */
    PGresult *key_res;        /* the lazy catalog's last key, held while the engine reads it */
    /* reader */
    fj_ts_codec *codec;
    unsigned char *blob;      /* a chunk's bytes, decoded from bytea's hex */
    size_t blob_cap;
};

/* FJ_OK at once when the batches hold no FJ_KIND_METRICS envelope. Starts the engine with the
 * defaults when ts_start was not called. FJ_EBUSY when the database is unreachable. */
fj_status fj_pg_ts_prepare(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_err *err);

/* Inside the group's transaction, after fj_pg_ts_prepare succeeded for the same batches. counts:
 * one per envelope of the batches in order (as fj_store_write's). */
fj_status fj_pg_ts_write(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts,
                         fj_err *err);

/* After the group's COMMIT (committed) or ROLLBACK. */
void fj_pg_ts_end(fj_store *s, bool committed);

/* From close, while the connection is open: seals and commits what is buffered (so a restart
 * replays nothing), then frees. NULL state is a no-op. */
void fj_pg_ts_close(fj_store *s);

/* The ops of storage/core/store.h. */
fj_status fj_pg_ts_start(fj_store *s, const fj_store_opts *opts, fj_err *err);
fj_ts_engine *fj_pg_ts_engine(fj_store *s);
fj_status fj_pg_ts_maintain(fj_store *s, fj_err *err);
fj_status fj_pg_ts_series(fj_store *s, const fj_ts_sel *sel,
                          fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err);
fj_status fj_pg_ts_read(fj_store *s, fj_ts_engine *live, uint32_t series_id, int64_t from, int64_t to,
                        fj_ts_points *out, fj_err *err);
fj_status fj_pg_ts_read_many(fj_store *s, fj_ts_engine *live, const uint32_t *ids, size_t n, int64_t from,
                             int64_t to, fj_ts_points *pts,
                             fj_status (*cb)(void *ud, size_t i, const fj_ts_points *pts), void *ud, fj_err *err);

/* A statement outside any transaction, reconnecting once first when the connection turns out to
 * have been lost (storage/pg/ts_read.c; the reads and the write path's own short statements). */
fj_status fj_pg_ts_run1(fj_store *s, fj_pg_stmt_id id, int n, const char *const *vals, PGresult **res, const char *what,
                        fj_err *err);

#endif
