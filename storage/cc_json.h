/* cc_json.h — ClusterCockpit records as every backend answers them: the JSON of an event row
 * (GET /api/v1/events), of a job row (GET /api/v1/cc/jobs), and cc-backend's outcomes of job
 * starts and stops (the messages of its REST answers). One place for the format, so backends
 * cannot drift. Strings are NUL-terminated; NULL is JSON null where a field may be absent.
 * Appends ignore buffer failures: the caller checks the final append of its document. */
#ifndef FJ_CC_JSON_H
#define FJ_CC_JSON_H

#include "buf.h"
#include "records.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fj_cc_event_row {
    const char *kind, *name, *host;
    int64_t time_ns;
    const char *tags;    /* a JSON object, written as is */
    const char *payload;
} fj_cc_event_row;

/* Appends one element of {"events":[...]}; first: no comma before it. */
void fj_cc_event_json(fj_buf *out, bool first, const fj_cc_event_row *r);

typedef struct fj_cc_job_row {
    int64_t id, job_id, start_time;
    bool stopped;
    int64_t stop_time;
    const char *state, *user, *project, *partition;
    int64_t num_nodes;
    const char *hosts;   /* a JSON array, written as is; NULL: [] */
    int64_t sonar_instances, sonar_first, sonar_last, sonar_samples; /* instances 0: "sonar":null */
    bool has_slurm;
    const char *slurm_state;
} fj_cc_job_row;

/* Appends one element of {"jobs":[...]}. */
void fj_cc_job_json(fj_buf *out, bool first, const char *cluster, const fj_cc_job_row *r);

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

#endif
