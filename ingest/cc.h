/* cc.h — line-protocol bodies (ClusterCockpit, InfluxDB, Telegraf) into fjord's typed records: metric
 * points, ClusterCockpit events, logs and controls, and ClusterCockpit job starts and stops.
 *
 * Message kinds follow the ClusterCockpit line-protocol flavour, by field key:
 *   `event` (string)   an event; measurement `job` with tag function=start_job|stop_job, or
 *                      measurement `start_job`/`stop_job`, carries a cc-backend job payload (JSON)
 *   `log` (string)     a log message (measurement: the component id, tag loglevel)
 *   `control` (string) a control message (measurement: the control class, tag method)
 *   `value` (number)   a metric: the measurement is the metric name; only when the line's `type`
 *                      tag is one of ClusterCockpit's scopes (node, socket, die, memoryDomain, llc,
 *                      core, hwthread, accelerator), or it has no `type` and no tag beyond cluster,
 *                      hostname, host, type-id, stype and stype-id
 * Any other line (Telegraf, collectd and friends) is a generic metric line: every field becomes a
 * point of metric "<measurement>.<field key>" (the measurement's dots escaped: ingest/metric_name.h)
 * with the field's type (fj_ftype: float, integer, string or boolean, as InfluxDB's; `u` integers
 * are integers). A ClusterCockpit metric's `value` is always a float, as cc-metric-store keeps it.
 *
 * Series key: cluster from the `cluster` tag, else the request's default cluster; host from
 * `hostname`, else `host`; type from `type` ("node" when absent), type-id from `type-id` (always
 * "" for type node, which ClusterCockpit does not number); stype/stype-id from `stype`/`stype-id`.
 * A generic line's `type` is kept there only when it is one of ClusterCockpit's scopes (with its
 * `type-id` unless node); any other `type` and `type-id` are ordinary tags, as is `hostname` next to
 * a `host`. On a generic line without `stype`, the tags that are none of these become the sub-type, so
 * that Telegraf's `cpu,cpu=cpu0,host=n1 usage_user=3` keeps one series per CPU: stype is their
 * keys joined with ',' in key order ("cpu"), stype-id their values ("cpu0"). ClusterCockpit
 * metric lines ignore other tags, as cc-metric-store does.
 *
 * Thread-safety: reentrant; a batch belongs to one thread at a time. */
#ifndef FJ_CC_H
#define FJ_CC_H

#include "fj_status.h"
#include "ingest/lp.h"
#include "ingest/records/batch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum fj_cc_class {
    FJ_CC_METRIC,  /* `value` numeric field */
    FJ_CC_EVENT,   /* `event` string field */
    FJ_CC_LOG,     /* `log` string field */
    FJ_CC_CONTROL, /* `control` string field */
    FJ_CC_GENERIC  /* anything else: numeric fields as metrics measurement.field */
} fj_cc_class;

/* The kind of a parsed line, and in *field the index of the field that decided it (for
 * FJ_CC_GENERIC: 0). event wins over log, log over control, control over value; a `value` line
 * whose tags are not ClusterCockpit's (above) is FJ_CC_GENERIC. */
fj_cc_class fj_cc_classify(const fj_lp_line *l, size_t *field);

/* For an event line: the job operation it carries, or -1 when it is not a job event. */
int fj_cc_job_event_op(const fj_lp_line *l);

/* Parses a cc-backend start_job payload (op START: jobId, cluster, startTime, user and a
 * non-empty resources[] with hostname are required) or stop_job payload (op STOP: jobId and
 * stopTime required; cluster, startTime, jobState optional) into *out, strings in a. A missing
 * cluster takes default_cluster (may be NULL). jobState of a stop must be one of cc-backend's
 * states (completed, failed, cancelled, stopped, timeout, preempted, out_of_memory).
 * FJ_OK; FJ_EINVAL with err->path naming the field; FJ_ENOMEM. */
fj_status fj_cc_job_parse(fj_arena *a, fj_cc_job_op op, const char *json, size_t len,
                          const char *default_cluster, fj_cc_job *out, fj_err *err);

/* Is s one of cc-backend's job states? */
bool fj_cc_job_state_valid(const char *s);

typedef struct fj_cc_opts {
    const char *default_cluster; /* may be NULL: lines then need a cluster tag */
    int64_t unit_ns;             /* ns per timestamp unit; 0 infers it per timestamp */
    int64_t arrival_ns;          /* time of lines without a timestamp (truncated to the unit) */
    int64_t max_future_ns;       /* refuse lines later than arrival_ns + this; 0: no limit */
    bool keep_raw;               /* record the body in the envelope for the request log */
    bool points_only;            /* replay: skip messages and jobs (stored with the log row) */
} fj_cc_opts;

/* Called for each bad line: 1-based line and column, and why. */
typedef void (*fj_cc_bad_line)(void *ud, size_t line, size_t column, const char *reason);

/* Decodes body[0..len) into one FJ_KIND_METRICS envelope appended to b (the body is copied into
 * b's arena first; the records point into the copy). Bad lines are reported through bad (may be
 * NULL) and skipped, as InfluxDB's partial write. *n_good (may be NULL) counts lines that gave
 * at least one record. Returns FJ_OK (also when every line was bad: then the envelope holds no
 * record) or FJ_ENOMEM. */
fj_status fj_cc_decode(const char *body, size_t len, const fj_cc_opts *o, fj_batch *b,
                       fj_cc_bad_line bad, void *ud, size_t *n_good, fj_err *err);

#endif
