/* storage/core/store.h — the storage interface: one versioned ops table per backend (SQLite now, PostgreSQL
 * later), chosen by the database URL. Ingest and the API talk only to this header.
 *
 * Handles are opaque and belong to one thread at a time. A writer handle is used by the single
 * writer thread; any number of reader handles (FJ_STORE_READ) serve queries and never block the
 * writer (SQLite WAL readers, PostgreSQL connections).
 *
 * Writes are batch-granular: fj_store_write commits all the given batches in one transaction
 * (group commit) or none of them. Every row has a natural key; re-sent data is counted as
 * duplicate and adds nothing. Rectification (jobs table, running summaries) happens inside the
 * same transaction, so a committed sample is always reflected in its job. */
#ifndef FJ_STORE_H
#define FJ_STORE_H

#include "fj_status.h"
#include "ingest/records/batch.h"

#include "buf.h"
#include "storage/core/store_chimbuko.h"
#include "storage/core/store_query.h"
#include "storage/ts/engine.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fj_store fj_store;

typedef enum { FJ_STORE_WRITE = 0, FJ_STORE_READ = 1 } fj_store_mode;

/* Options every backend honours. */
typedef struct fj_store_opts {
    fj_store_mode mode;
    bool create;              /* make a database that does not exist (SQLite: the file) and migrate an
                               * empty one (never an older schema); without it a missing one is an error */
    const char *synchronous;  /* SQLite: "OFF", "NORMAL" (default) or "FULL" */
    int64_t job_gap_s;        /* rectification gap t for non-Slurm jobs (default 6 h) */
    /* Set only by `fjord migrate` (with FJ_STORE_WRITE): open succeeds whatever the schema
     * version (older, newer or empty), so migrate_status can report it and migrate_up can bring it
     * up to date (migrate_up still refuses a schema newer than the binary). Every other caller
     * leaves it false and gets FJ_ESCHEMA from open on a schema that is not exactly current. */
    bool migrating;
    /* Line-protocol metrics (writer handles; 0 means the default). See docs/metrics.md. */
    int64_t ts_retention_s;        /* drop chunks whose newest point is older than this; 0: keep */
    int64_t ts_flush_interval_s;   /* seal every open buffer this often (default 12 h) */
    int64_t ts_log_keep_s;         /* keep request-log rows this long once durable (default 0) */
    int64_t ts_seal_age_s;         /* engine seal_age (default 12 h of data time) */
    uint32_t ts_seal_points;       /* engine seal_points (default 720) */
    size_t ts_max_buffered_points; /* engine max_buffered_points (default 16M) */
    /* This server's identity among the servers sharing a PostgreSQL database (setting `instance`):
     * its request log and durable lsn are its own. NULL or "": the host name. SQLite ignores it. */
    const char *ts_instance;
    /* Drop Sonar data older than this many seconds (writer handles; 0: keep forever). PostgreSQL
     * drops whole week partitions of the high-volume tables; SQLite ignores it. */
    int64_t retention_s;
} fj_store_opts;

/* Which series a metric query reads (ts_series): NULL or "" matches any value. */
typedef struct fj_ts_sel {
    const char *cluster; /* required */
    const char *host;
    const char *metric;
} fj_ts_sel;

/* ClusterCockpit events, logs and controls for GET /api/v1/events. */
typedef struct fj_cc_msg_query {
    const char *cluster;  /* required */
    int64_t from_ns, to_ns; /* 0 = open */
    const char *kind;     /* "event", "log", "control" or NULL for all */
    const char *name;     /* measurement, or NULL */
    const char *host;     /* or NULL */
    size_t limit;
} fj_cc_msg_query;

/* What one envelope's write did. */
typedef struct fj_write_count {
    uint64_t inserted;   /* rows added */
    uint64_t duplicates; /* rows already present (re-sent data) */
} fj_write_count;

/* Migration state, for `fjord migrate status`. */
typedef struct fj_migration_info {
    int current;  /* highest applied version, 0 for an empty database */
    int latest;   /* highest version this binary ships */
} fj_migration_info;

/* What `fjord migrate compact` did (SQLite): the file's size before and after, in bytes, and
 * whether it had to be rewritten whole (a file made before incremental vacuum). */
typedef struct fj_compact_info {
    int64_t bytes_before, bytes_after;
    bool rewritten;
} fj_compact_info;

/* Figures of the database for monitoring (GET /metrics), from a few counting queries: meant to be
 * read every few seconds at most, on a reader connection. */
typedef struct fj_store_stats {
    int64_t db_bytes;                  /* SQLite: the file's pages; PostgreSQL: the database's size */
    int64_t series, chunks;            /* line-protocol series and stored chunks */
    int64_t request_log_rows, request_log_bytes; /* the metrics request log: rows, stored bytes */
    int64_t replay_pending;            /* request-log rows past the durable lsn: what a start replays */
} fj_store_stats;

/* What `fjord backup` wrote: the copy's size in bytes. */
typedef struct fj_backup_info {
    int64_t bytes;
} fj_backup_info;

/* A stored upload/read credential. Secrets are never stored, only their hash. */
typedef struct fj_token_rec {
    char cluster[256];
    char hash[128];  /* "sha256$<salt hex>$<digest hex>" */
    bool read_only;
    fj_time created;
} fj_token_rec;

typedef struct fj_store_ops {
    int version; /* FJ_STORE_OPS_VERSION */
    const char *name;
    /* The backend's thin SQL driver (storage/core/driver.h), on which the queries written once
     * (storage/query/) run. */
    const struct fj_driver *driver;
    /* Does this backend handle the URL? ("postgres://", a file path, ...) */
    bool (*accepts)(const char *url);
    fj_status (*open)(const char *url, const fj_store_opts *opts, fj_store **out, fj_err *err);
    void (*close)(fj_store *s);
    fj_status (*migrate_status)(fj_store *s, fj_migration_info *out, fj_err *err);
    /* Applies every pending migration; fills applied with how many ran. */
    fj_status (*migrate_up)(fj_store *s, int *applied, fj_err *err);
    /* Gives the database file's free pages back to the file system and leaves it able to do so
     * by itself from then on (SQLite; NULL where the database manages its own space). Meant for
     * a stopped server: a rewrite holds the write lock, so a running one's ingest would wait. */
    fj_status (*compact)(fj_store *s, fj_compact_info *out, fj_err *err);
    /* Writes a consistent copy of the database, as of one moment, to the new file dest (refused
     * if it exists; written beside it and renamed into place, so dest is whole or absent). Safe
     * beside a running server: it reads in one read transaction and never blocks its writer.
     * SQLite; NULL where the database has its own tools (PostgreSQL: pg_dump). */
    fj_status (*backup)(fj_store *s, const char *dest, fj_backup_info *out, fj_err *err);
    /* One transaction for all batches. counts has one entry per envelope, batch by batch. */
    fj_status (*write)(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts,
                       fj_err *err);
    fj_status (*token_put)(fj_store *s, const fj_token_rec *t, fj_err *err);
    fj_status (*token_get)(fj_store *s, const char *cluster, fj_token_rec *out, fj_err *err);
    fj_status (*token_list)(fj_store *s, fj_token_rec **out, size_t *n, fj_err *err);
    fj_status (*token_revoke)(fj_store *s, const char *cluster, fj_err *err);

    /* --- The query API (storage/core/store_query.h): rows into a sink; FJ_EINVAL with err->path naming the
     * query field for a query the backend cannot answer; FJ_ENOTFOUND for an unknown cluster,
     * node or job where one is named. Each reads the fields listed. */
    /* fj_qt_clusters; cluster_match (when set) picks the clusters shown. */
    fj_status (*q_clusters)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_nodes: cluster, host_match. */
    fj_status (*q_nodes)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_sysinfo, oldest first: cluster, node, from, to. */
    fj_status (*q_sysinfo)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* The latest topology of a node (cluster, node, to, svg) decoded into out; *when its time. */
    fj_status (*q_topology)(fj_store *s, fj_query *q, fj_buf *out, fj_time *when, fj_err *err);
    /* fj_qt_jobs: cluster, from, to, host_match, users, commands, states, partitions, accounts,
     * jobs, running, gpu, min_runtime_s, min/max, sort, desc, after, limit; sets next. */
    fj_status (*q_jobs)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_job (one row: fj_qt_jobs's columns and the joined ClusterCockpit job), then
     * fj_qt_job_hosts: cluster, id. */
    fj_status (*q_job)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_profile: cluster, id, from, to, host_match, bucket_s, by_host. */
    fj_status (*q_profile)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_node_load: cluster, host_match, from, to, bucket_s. */
    fj_status (*q_node_load)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_cluster_load: cluster, host_match, from, to, bucket_s. */
    fj_status (*q_cluster_load)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_gpu_load, per node and card: cluster, host_match, from, to, bucket_s. */
    fj_status (*q_gpu_load)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_slurm_jobs: cluster, from, to, users, states, partitions, accounts, jobs, array_jobs,
     * het_jobs, running, steps, host_match, after, limit; sets next. */
    fj_status (*q_slurm_jobs)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_partitions: cluster, to (the latest cluster envelope at or before it). */
    fj_status (*q_partitions)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_node_states: cluster, host_match, to. */
    fj_status (*q_node_states)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_uptime: cluster, host_match, from, to (0: now), interval_s. */
    fj_status (*q_uptime)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_errors, oldest first: cluster, host_match, from, to, sources, after, limit; sets next. */
    fj_status (*q_errors)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);

    /* The latest aicr snapshot of a node: its normalised JSON appended to out and its time in
     * *time. FJ_ENOTFOUND when the node has none. (Written by write, kind FJ_KIND_MEASUREMENTS.) */
    fj_status (*measurement_latest)(fj_store *s, const char *cluster, const char *node, fj_time *time, fj_buf *out,
                                    fj_err *err);

    /* --- Line-protocol metrics and ClusterCockpit records (written by write, kind
     * FJ_KIND_METRICS). A backend without them leaves these NULL; callers answer 501. */
    /* Writer handle, before the writer thread starts: opens the time-series engine with the
     * ts_* options of opts (NULL: defaults), loads the series catalog, continues the chunk
     * sequence and replays the request log from the durable lsn. The write path calls it with
     * defaults when it was not called. */
    fj_status (*ts_start)(fj_store *s, const fj_store_opts *opts, fj_err *err);
    /* Writer handle: its engine, for readers' unsealed points (ts_read); NULL before ts_start.
     * Any thread once ts_start returned; the engine's "any thread" functions are safe against
     * the writer (storage/ts/engine.h). */
    fj_ts_engine *(*ts_engine)(fj_store *s);
    /* Writer handle, writer thread, between groups: periodic flush of open buffers, retention,
     * request-log trimming; cheap when nothing is due. */
    fj_status (*maintain)(fj_store *s, fj_err *err);
    /* Reader: cb for every series matching sel (stop with a non-FJ_OK return, which is passed
     * on). The key's strings are valid during the call only. */
    fj_status (*ts_series)(fj_store *s, const fj_ts_sel *sel,
                           fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err);
    /* Reader: the points of one series with from <= t <= to (ns), stored chunks merged with the
     * live engine's unsealed points (live may be NULL). Must not run inside another statement of
     * the same handle (it takes its snapshot after copying the engine's part). */
    fj_status (*ts_read)(fj_store *s, fj_ts_engine *live, uint32_t series_id, int64_t from, int64_t to,
                         fj_ts_points *out, fj_err *err);
    /* Reader, optional (NULL: fj_store_ts_read_many calls ts_read series by series): ts_read of
     * ids[0..n) with one range, each series' points put in *pts and handed to cb(ud, i, pts) in
     * order (stop with a non-FJ_OK return, which is passed on). For a backend where a statement
     * is a round trip, so that many series cost a few statements, not one each. */
    fj_status (*ts_read_many)(fj_store *s, fj_ts_engine *live, const uint32_t *ids, size_t n, int64_t from,
                              int64_t to, fj_ts_points *pts,
                              fj_status (*cb)(void *ud, size_t i, const fj_ts_points *pts), void *ud, fj_err *err);
    /* Reader: {"events":[...]} oldest first. */
    fj_status (*cc_messages)(fj_store *s, const fj_cc_msg_query *q, fj_buf *out, fj_err *err);
    /* Reader: {"jobs":[...]}: ClusterCockpit jobs of q->cluster running in [from, to] (ns; 0 = open),
     * oldest first, each joined with Sonar's Slurm job of the same (cluster, job id) ("sonar":
     * rectified instances, first/last seen, samples; "slurm": the current Slurm record's state). */
    fj_status (*cc_jobs)(fj_store *s, const fj_cc_msg_query *q, fj_buf *out, fj_err *err);

    /* --- Chimbuko (docs/chimbuko.md; storage/core/store_chimbuko.h), written by write (kind FJ_KIND_CHIMBUKO),
     * and node usage. Query ops follow the query API's contract (storage/core/store_query.h: rows into a sink,
     * one read snapshot; FJ_ENOTFOUND for an unknown cluster). A backend without them leaves these
     * NULL; callers answer 501. */
    /* fj_qt_cb_runs: cluster, run. */
    fj_status (*cb_runs)(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
    /* The table of q->series, ordered by its key then time: cluster, run, app, and per series rank,
     * step_from/to, from/to (ranks: steps overlapping the window); fid, func (functions, metrics);
     * rank (metrics); func as the counter name (counters); limit. */
    fj_status (*cb_series)(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_cb_top_ranks then fj_qt_cb_top_functions, most anomalies first: cluster, run, app,
     * rank, fid, func (functions), from/to, limit (per table). */
    fj_status (*cb_top)(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
    /* The provenance records of q->collection: fj_qt_cb_events (entry order, keyset pages: after,
     * limit, next; filters run, app, rank, fid, func, idx, step_from/to, from/to, brief),
     * fj_qt_cb_metadata (run, app, rank), fj_qt_cb_profiles (run, app, fid, func),
     * fj_qt_cb_final_counters (run, app, func as the counter name). */
    fj_status (*cb_records)(fj_store *s, fj_cb_query *q, fj_sink *k, fj_err *err);
    /* fj_qt_node_usage, by node name: cluster, host_match, node (that node only; FJ_ENOTFOUND when
     * unknown). Nodes without samples are left out. */
    fj_status (*q_node_usage)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);
    /* Monitoring figures (fj_store_stats); any mode. */
    fj_status (*stats)(fj_store *s, fj_store_stats *out, fj_err *err);
} fj_store_ops;

#define FJ_STORE_OPS_VERSION 1

/* The backends compiled in. */
extern const fj_store_ops fj_store_sqlite_ops;
#ifdef FJ_HAVE_PG
extern const fj_store_ops fj_store_pg_ops; /* postgres:// and postgresql:// URLs (libpq) */
#endif

/* Picks the backend for url and opens it. FJ_ESCHEMA when the schema is older than this binary
 * (the message names `fjord migrate up`); FJ_EINVAL for an unknown URL scheme. */
fj_status fj_store_open(const char *url, const fj_store_opts *opts, fj_store **out, fj_err *err);

/* The ops table of an open handle (every backend's struct fj_store starts with it). */
const fj_store_ops *fj_store_ops_of(const fj_store *s);

void fj_store_close(fj_store *s);

/* Convenience wrappers that dispatch through the ops table. */
fj_status fj_store_write(fj_store *s, fj_batch *const *batches, size_t n, fj_write_count *counts, fj_err *err);
/* The ts_read_many op, or ts_read series by series where the backend has none. */
fj_status fj_store_ts_read_many(fj_store *s, fj_ts_engine *live, const uint32_t *ids, size_t n, int64_t from,
                                int64_t to, fj_ts_points *pts,
                                fj_status (*cb)(void *ud, size_t i, const fj_ts_points *pts), void *ud, fj_err *err);

/* Default rectification gap: 6 hours. */
#define FJ_JOB_GAP_DEFAULT_S (6 * 3600)

#endif
