/* storage/ts/cc_json.h — ClusterCockpit records as every backend handles them: the JSON of the
 * ClusterCockpit job a Sonar job joins (a value of GET /api/v1/jobs/{id}), cc-backend's rules for
 * job starts and stops (run on a backend's statements) and their outcomes (the messages of its
 * REST answers), and the key an event is deduplicated by. One place for the format and the rules,
 * so backends cannot drift. The listings (GET /api/v1/events, /api/v1/cc/jobs) are rows
 * (storage/query/cc.c) that api/cc_list.c writes as JSON. Strings are NUL-terminated. */
#ifndef FJ_CC_JSON_H
#define FJ_CC_JSON_H

#include "buf.h"
#include "ingest/records/metrics.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The ClusterCockpit job a Sonar job joins, as GET /api/v1/jobs/{id} shows it ("clustercockpit"):
 * cc-backend's field names, times in epoch seconds as cc-backend. A negative count is unknown
 * (null); NULL strings are null. */
typedef struct fj_cc_job_ref {
    int64_t id, job_id, start_time;
    bool stopped;
    int64_t stop_time;
    const char *state, *user, *project, *partition, *subcluster;
    int64_t num_nodes, num_hwthreads, num_acc;
    const char *hosts;   /* a JSON array, written as is; NULL: [] */
} fj_cc_job_ref;

/* Appends the object. FJ_OK, or the buffer's failure (then out holds a partial object). */
fj_status fj_cc_job_ref_json(fj_buf *out, const fj_cc_job_ref *r);

/* The outcomes of cc-backend's job rules, written into r (NULL: nothing). The status is the
 * record's, not the transaction's: the group goes on. */
void fj_cc_job_duplicate(fj_cc_job_result *r, const fj_cc_job *j, int64_t existing_id);
void fj_cc_job_unknown(fj_cc_job_result *r, const fj_cc_job *j);
void fj_cc_job_not_running(fj_cc_job_result *r, const fj_cc_job *j, const char *state);
void fj_cc_job_stop_before_start(fj_cc_job_result *r, const fj_cc_job *j);

/* What cc-backend's job rules need of a backend, on its own statements in the group's
 * transaction (ud: the backend's, e.g. the handle and the cluster's id). Failures are the
 * transaction's (the database's), not the record's. */
typedef struct fj_cc_job_ops {
    /* *id: a start of j's job id on j's cluster less than a day before j's startTime; 0: none. */
    fj_status (*find_recent)(void *ud, const fj_cc_job *j, int64_t *id, fj_err *err);
    /* Inserts j as running: *id its row, 0 when another writer inserted that job first. */
    fj_status (*insert)(void *ud, const fj_cc_job *j, int64_t *id, fj_err *err);
    /* The job a stop names: its latest start, or the one at j's startTime when that is not 0.
     * *id 0: none; else its start and state (NUL-terminated). */
    fj_status (*find)(void *ud, const fj_cc_job *j, int64_t *id, int64_t *start, char state[32], fj_err *err);
    /* Stops row id with j's stopTime and state; *stopped false when it was no longer running. */
    fj_status (*stop)(void *ud, const fj_cc_job *j, int64_t id, bool *stopped, fj_err *err);
} fj_cc_job_ops;

/* Applies cc-backend's rules to one start or stop: a start is a duplicate when the job id already
 * started on the cluster less than a day before; a stop needs the job (its latest start, or the
 * given startTime) running and stopTime >= startTime. The outcome goes to j->result (when set)
 * and *added (true: a row inserted or stopped; false: counted as a duplicate); the transaction
 * goes on either way. FJ_OK, or an op's failure. */
fj_status fj_cc_job_apply(const fj_cc_job *j, const fj_cc_job_ops *ops, void *ud, bool *added, fj_err *err);

/* The key an event is deduplicated by with its cluster, time, kind, name and host: FNV-1a of its
 * tags, a NUL and its payload. */
uint64_t fj_cc_message_hash(const fj_cc_message *m);

#endif
