/* ingest/records/metrics.h — the typed records of a line-protocol body (ingest/cc.h decodes it):
 * metric points with their series keys, ClusterCockpit event, log and control messages, and
 * cc-backend's job starts and stops. */
#ifndef FJ_RECORDS_METRICS_H
#define FJ_RECORDS_METRICS_H

#include "fj_status.h"
#include "timefmt.h"

#include <stddef.h>
#include <stdint.h>

/* A string of a metric record: p[0..n), NOT NUL-terminated (it points into the batch's copy of
 * the body, or into the arena for unescaped or composed values). n == 0 means absent. */
typedef struct fj_mstr {
    const char *p;
    size_t n;
} fj_mstr;

/* A field's type, as InfluxDB's (float, integer, string, boolean). FJ_FT_UNTYPED is no type a
 * line has: it marks series stored before fjord kept types (docs/metrics.md, "Field types"). The
 * values are those of ts_series.ftype. */
typedef enum fj_ftype {
    FJ_FT_FLOAT = 0,
    FJ_FT_INTEGER = 1,
    FJ_FT_STRING = 2,
    FJ_FT_BOOLEAN = 3,
    FJ_FT_UNTYPED = 4
} fj_ftype;

/* One metric point and its series key (as the time-series engine keys series). */
typedef struct fj_metric_point {
    fj_mstr cluster, host, metric, type, type_id, stype, stype_id;
    int64_t t;     /* nanoseconds since 1970 UTC */
    double v;      /* float; integer (exact up to 2^53); boolean 1 or 0; string: its index in the
                      envelope's strings (fj_metric_string), which keeps a point of a number as
                      small as it was: numeric ingest moves no more bytes for strings it lacks */
    uint32_t line; /* 1-based line of the body (0: not from a body) */
    uint8_t ftype; /* fj_ftype, never FJ_FT_UNTYPED */
} fj_metric_point;

typedef enum fj_cc_msg_kind { FJ_CC_MSG_EVENT, FJ_CC_MSG_LOG, FJ_CC_MSG_CONTROL } fj_cc_msg_kind;

/* A ClusterCockpit event, log or control message, stored as a row. */
typedef struct fj_cc_message {
    fj_cc_msg_kind kind;
    const char *cluster;
    const char *host;    /* hostname/host tag, "" when absent */
    const char *name;    /* the measurement: event class, component id or control class */
    const char *tags;    /* every tag as a compact JSON object */
    const char *payload; /* the event/log/control string (may hold NUL bytes) */
    size_t payload_len;
    int64_t time;        /* nanoseconds */
} fj_cc_message;

typedef enum fj_cc_job_op { FJ_CC_JOB_START, FJ_CC_JOB_STOP } fj_cc_job_op;

/* What storage did with a job start/stop, for cc-backend's REST answers (FJ_OK; FJ_ECONFLICT for
 * a duplicate start or a stop of a job that is not running; FJ_ENOTFOUND for a stop of an unknown
 * job; FJ_EINVAL for a stop before the start). Written by the writer thread before `done`. */
typedef struct fj_cc_job_result {
    fj_status status;
    char message[256];
    int64_t id;        /* the stored job's row id */
    fj_time start_time;
    char state[32];
    fj_time stop_time;
} fj_cc_job_result;

/* A ClusterCockpit job start or stop (cc-backend's start_job/stop_job payloads). */
typedef struct fj_cc_job {
    fj_cc_job_op op;
    const char *cluster;
    uint64_t job_id;
    fj_time start_time;  /* start: required; stop: 0 = the job's latest start */
    fj_time stop_time;   /* stop only */
    const char *state;   /* start: "running"; stop: as sent, "completed" when absent */
    const char *user, *project, *partition, *subcluster; /* start; NULL when absent */
    uint64_t num_nodes, num_hwthreads, num_acc;
    const char *hosts;   /* start: JSON array of the resources' host names */
    const char *payload; /* the payload as received (JSON text) */
    fj_cc_job_result *result; /* out, may be NULL */
} fj_cc_job;

/* Everything one line-protocol body decoded to. raw (when not NULL) is the body as received,
 * which storage appends to its request log before the points, so that points not yet sealed
 * into chunks survive a crash: replay decodes raw again with the same default_cluster, unit_ns
 * and arrival_ns. */
typedef struct fj_metrics {
    const char *raw;
    size_t raw_len;
    const char *default_cluster; /* ?cluster=, db, bucket or the credential's cluster; may be NULL */
    int64_t unit_ns;             /* ns per timestamp unit; 0 = inferred per timestamp */
    int64_t arrival_ns;          /* wall clock at arrival: time of lines without a timestamp */
    int64_t max_future_ns;       /* lines later than arrival_ns + this were refused; 0 = no limit */
    const char **clusters;       /* the distinct clusters written (for credential checks): the lines' */
    size_t *cluster_lines;       /* and the job payloads'; with the first line (1-based) naming each */
    size_t n_clusters;
    fj_metric_point *points;
    size_t n_points;
    fj_mstr *strings; /* the values of string points, unescaped (n may be 0: the empty string) */
    size_t n_strings;
    fj_cc_message *messages;
    size_t n_messages;
    fj_cc_job *jobs;
    size_t n_jobs;
} fj_metrics;

/* The value of string point p of m. */
static inline fj_mstr fj_metric_string(const fj_metrics *m, const fj_metric_point *p)
{
    size_t i = (size_t)p->v;
    return i < m->n_strings ? m->strings[i] : (fj_mstr){NULL, 0};
}

#endif
