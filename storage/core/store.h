/* storage/core/store.h — the storage engine's door: opening a database by its URL (SQLite or
 * PostgreSQL), closing it, schema migrations, upkeep of the file (compact, backup), and the write
 * of a batch. The engine's other rooms each have a header of their own, whose functions callers
 * call directly:
 *   storage/core/store_query.h     the analysts' queries (rows into a sink)
 *   storage/core/store_ts.h        line-protocol metrics and ClusterCockpit records
 *   storage/core/store_chimbuko.h  Chimbuko's queries
 *   storage/core/store_measure.h   measurements (aicr snapshots)
 *   storage/core/tokens.h          upload/read credentials
 *   storage/core/stats.h           the monitoring figures
 * What differs per backend is one table, its driver (storage/core/driver.h), under these.
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
#include "storage/core/quota.h"
#include "storage/core/retention.h"

#include "timefmt.h"
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
    /* PostgreSQL: a write group's COMMIT still waiting after this long (for a synchronous standby
     * that is gone) is answered 503 instead of holding its requests (default 10 s; negative: wait). */
    int64_t commit_timeout_s;
    /* PostgreSQL: store the open buffers holding new writes as checkpoints at most this often, so
     * that every server sharing the database reads them (default 1 s; negative: never). */
    int64_t ts_share_interval_s;
    int64_t ts_log_keep_s;         /* keep request-log rows this long once durable (default 0) */
    int64_t ts_seal_age_s;         /* engine seal_age (default 12 h of data time) */
    uint32_t ts_seal_points;       /* engine seal_points (default 720) */
    size_t ts_max_buffered_points; /* the open buffers' memory in points of 16 bytes (default 16M: 256 MB) */
    /* This server's identity among the servers sharing a PostgreSQL database (setting `instance`):
     * its request log and durable lsn are its own. NULL or "": the host name. SQLite ignores it. */
    const char *ts_instance;
    /* How long each kind of Sonar's raw data is kept (writer handles; storage/core/retention.h):
     * SQLite deletes rows, PostgreSQL drops whole week partitions of the sample tables. */
    fj_retention retention;
    /* Per-cluster quotas on what a cluster can create (writer handles; storage/core/quota.h,
     * docs/security.md "Quotas"): line-protocol series, Sonar nodes and jobs. Zero: no limit. */
    fj_quota_limits quota;
} fj_store_opts;

/* What one envelope's write did. */
typedef struct fj_write_count {
    uint64_t inserted;   /* rows added */
    uint64_t duplicates; /* rows already present (re-sent data) */
    /* A quota refused part or all of the envelope (storage/core/quota.h): which limit, and how
     * many points (line protocol) were dropped; a refused Sonar envelope stores nothing. */
    fj_limit limit;
    uint64_t dropped;
    /* Line protocol: points refused because a series' type is fixed by its first point and theirs
     * differs (InfluxDB's "field type conflict"; docs/metrics.md, "Field types"): how many, and the
     * first one's line (1-based), metric and types (fj_ftype: sent, stored). */
    uint64_t conflicts;
    uint32_t conflict_line;
    uint8_t conflict_sent, conflict_stored;
    char conflict_metric[128];
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

/* Picks the backend for url and opens it (storage/backends.c, the one file that names the
 * backends). FJ_ESCHEMA when the schema is older than this binary (the message names `fjord
 * migrate up`); FJ_EINVAL for an unknown URL scheme. */
fj_status fj_store_open(const char *url, const fj_store_opts *opts, fj_store **out, fj_err *err);

void fj_store_close(fj_store *s);

/* --- schema migrations (the embedded migrations/<backend>/NNNN_name.sql) --- */
fj_status fj_store_migrate_status(fj_store *s, fj_migration_info *out, fj_err *err);
/* Applies every pending migration; fills applied with how many ran. A writer handle only. */
fj_status fj_store_migrate_up(fj_store *s, int *applied, fj_err *err);

/* --- the database file ---
 * Where the database manages these itself (PostgreSQL), both answer FJ_EINVAL (path "db"):
 * "the <backend> backend does not <what>: <its own tools>". */
/* Gives the database file's free pages back to the file system and leaves it able to do so by
 * itself from then on (SQLite). Meant for a stopped server: a rewrite holds the write lock, so a
 * running one's ingest would wait. */
fj_status fj_store_compact(fj_store *s, fj_compact_info *out, fj_err *err);
/* Writes a consistent copy of the database, as of one moment, to the new file dest (refused if it
 * exists; written beside it and renamed into place, so dest is whole or absent). Safe beside a
 * running server: it reads in one read transaction and never blocks its writer (SQLite). */
fj_status fj_store_backup(fj_store *s, const char *dest, fj_backup_info *out, fj_err *err);

/* --- writing --- */
/* One transaction for all batches. counts has one entry per envelope, batch by batch. */
fj_status fj_store_write(fj_store *s, fj_batch *const *batches, size_t n, fj_write_count *counts, fj_err *err);

/* Default rectification gap: 6 hours. */
#define FJ_JOB_GAP_DEFAULT_S (6 * 3600)

#endif
