/* storage/core/store_ts.h — line-protocol metrics and ClusterCockpit records in the storage engine
 * (storage/core/store.h; docs/metrics.md). Both are written by the store's write (kind
 * FJ_KIND_METRICS); the series' points live in the time-series engine (storage/ts/engine.h) until
 * sealed into chunks. The metrics functions are storage/core/store_ts.c over the backend's driver
 * (storage/core/driver.h: the chunk I/O is each backend's); the ClusterCockpit reads are written
 * once (storage/query/cc.c). */
#ifndef FJ_STORE_TS_H
#define FJ_STORE_TS_H

#include "buf.h"
#include "fj_status.h"
#include "storage/core/store.h"
#include "storage/core/store_query.h"

#include <stddef.h>
#include <stdint.h>

/* The time-series engine's types these functions pass, defined in storage/ts/engine.h (a caller
 * that reads their members includes it): core/ is the floor of storage/ and names no folder above. */
typedef struct fj_ts_engine fj_ts_engine; /* the writer's live engine */
typedef struct fj_ts_key fj_ts_key;       /* a series key */
typedef struct fj_ts_points fj_ts_points; /* the points of a read */

/* Which series a metric query reads (ts_series): NULL or "" matches any value. */
typedef struct fj_ts_sel {
    const char *cluster; /* required */
    const char *host;
    const char *metric;
} fj_ts_sel;

/* ClusterCockpit events, logs and controls (cc_messages), or jobs (cc_jobs). */
typedef struct fj_cc_msg_query {
    const char *cluster;    /* required; an unknown cluster has no rows */
    int64_t from_ns, to_ns; /* 0 = open */
    const char *kind;       /* cc_messages: "event", "log", "control" or NULL for all */
    const char *name;       /* cc_messages: measurement, or NULL */
    const char *host;       /* cc_messages: or NULL */
    size_t limit;           /* rows; 0: no limit */
} fj_cc_msg_query;

/* The rows of cc_messages and cc_jobs (storage/query/cols.c). */
extern const fj_qtable fj_qt_cc_events, fj_qt_cc_jobs;

/* Writer handle, before the writer thread starts: opens the time-series engine with the
 * ts_* options of opts (NULL: defaults), loads the series catalog, continues the chunk
 * sequence and replays the request log from the durable lsn. The write path calls it with
 * defaults when it was not called. */
fj_status fj_store_ts_start(fj_store *s, const fj_store_opts *opts, fj_err *err);
/* Writer handle: its engine, for readers' unsealed points (ts_read); NULL before ts_start.
 * Any thread once ts_start returned; the engine's "any thread" functions are safe against
 * the writer (storage/ts/engine.h). */
fj_ts_engine *fj_store_ts_engine(fj_store *s);
/* Writer handle, writer thread, between groups: periodic flush of open buffers, retention,
 * request-log trimming; cheap when nothing is due. */
fj_status fj_store_ts_maintain(fj_store *s, fj_err *err);
/* Reader: cb for every series matching sel (stop with a non-FJ_OK return, which is passed
 * on). The key's strings are valid during the call only. */
fj_status fj_store_ts_series(fj_store *s, const fj_ts_sel *sel,
                             fj_status (*cb)(void *ud, uint32_t id, const fj_ts_key *key), void *ud, fj_err *err);
/* Reader: the points of one series with from <= t <= to (ns), stored chunks merged with the
 * live engine's unsealed points (live may be NULL). Must not run inside another statement of
 * the same handle (it takes its snapshot after copying the engine's part). */
fj_status fj_store_ts_read(fj_store *s, fj_ts_engine *live, uint32_t series_id, int64_t from, int64_t to,
                           fj_ts_points *out, fj_err *err);
/* Reader: fj_store_ts_read of ids[0..n) with one range, each series' points put in *pts and handed
 * to cb(ud, i, pts) in order (stop with a non-FJ_OK return, which is passed on). Where a statement
 * is a round trip (PostgreSQL), many series cost a few statements, not one each; elsewhere it
 * reads series by series. */
fj_status fj_store_ts_read_many(fj_store *s, fj_ts_engine *live, const uint32_t *ids, size_t n, int64_t from,
                                int64_t to, fj_ts_points *pts,
                                fj_status (*cb)(void *ud, size_t i, const fj_ts_points *pts), void *ud, fj_err *err);

/* --- ClusterCockpit records: rows into a sink under the query API's contract
 * (storage/core/store_query.h), one read snapshot. */
/* fj_qt_cc_events, oldest first: cluster, from, to, kind, name, host, limit. */
fj_status fj_store_ts_cc_messages(fj_store *s, const fj_cc_msg_query *q, fj_sink *k, fj_err *err);
/* fj_qt_cc_jobs: the ClusterCockpit jobs of cluster running in [from, to] (ns; 0 = open),
 * oldest first, each joined with Sonar's Slurm job of the same (cluster, job id) (rectified
 * instances, first/last seen, samples; the current Slurm record's state): limit. */
fj_status fj_store_ts_cc_jobs(fj_store *s, const fj_cc_msg_query *q, fj_sink *k, fj_err *err);

#endif
