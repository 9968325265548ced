/* storage/query/cc.c — ClusterCockpit events and jobs as rows (storage/core/store_ts.h:
 * fj_store_ts_cc_messages, fj_store_ts_cc_jobs), written once over the thin driver; the API layer
 * writes them in cc-backend's shape (api/cc_list.c). An unknown cluster has no rows. */
#include "storage/core/store_ts.h"
#include "storage/query/qx.h"
#include "storage/query/value.h"

#include <stdint.h>

#define NS 1000000000LL

static const char events_sql[] =
    "SELECT m.kind, m.name, m.host, m.time, m.tags, m.payload FROM cc_messages m"
    " JOIN clusters c ON c.id = m.cluster_id WHERE c.name = ?1 AND m.time >= ?2 AND m.time <= ?3"
    " AND (?4 IS NULL OR m.kind = ?4) AND (?5 IS NULL OR m.name = ?5) AND (?6 IS NULL OR m.host = ?6)"
    " ORDER BY m.time LIMIT ?7";

/* Each ClusterCockpit job with what Sonar knows of the same (cluster, job id): its rectified
 * instances and the current Slurm record. A job still running counts as running to the end of
 * time (9223372036 s) for the window. */
#define SONAR_JOBS " FROM jobs j WHERE j.cluster_id = c.cluster_id AND j.job = c.job_id AND j.epoch = 0)"
#define SLURM_JOB " FROM slurm_jobs_current x WHERE x.cluster_id = c.cluster_id AND x.job_id = c.job_id AND x.job_step = '')"
static const char jobs_sql[] =
    "SELECT c.id, c.job_id, c.start_time, c.stop_time, c.state, c.\"user\", c.project, c.partition,"
    " c.num_nodes, c.hosts,"
    " (SELECT count(*)" SONAR_JOBS ", (SELECT min(first_seen)" SONAR_JOBS ","
    " (SELECT max(last_seen)" SONAR_JOBS ", (SELECT sum(n_samples)" SONAR_JOBS ","
    " CASE WHEN EXISTS (SELECT 1" SLURM_JOB " THEN 1 ELSE 0 END, (SELECT x.job_state" SLURM_JOB
    " FROM cc_jobs c JOIN clusters k ON k.id = c.cluster_id WHERE k.name = ?1"
    " AND (?2 = 0 OR coalesce(c.stop_time, 9223372036) >= ?2) AND (?3 = 0 OR c.start_time <= ?3)"
    " ORDER BY c.start_time, c.id LIMIT ?4";

typedef struct cc_op {
    const fj_qtable *t;
    const fj_cc_msg_query *q;
    void (*bind)(const fj_qrows *r, const fj_cc_msg_query *q);
} cc_op;

/* Binds the op's parameters and hands every row to the sink as its table. */
static fj_status cc_rows(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)x;
    const cc_op *op = arg;
    const fj_qtable *t = op->t;
    op->bind(&st[0], op->q);
    fj_status rs = e->k->table(e->k, t);
    bool row = false;
    fj_value v[16];
    while (rs == FJ_OK && (rs = fj_qr_step(&st[0], t->name, &row)) == FJ_OK && row) {
        for (size_t i = 0; i < t->n_cols; i++)
            v[i] = fj_qr_value(&st[0], (int)i, t->cols[i].type);
        rs = e->k->row(e->k, v);
    }
    return rs;
}

/* Runs sql with its parameters bound by bind and hands every row to k as table t. */
static fj_status run(fj_store *s, const char *sql, const fj_qtable *t, const fj_cc_msg_query *q,
                     void (*bind)(const fj_qrows *r, const fj_cc_msg_query *q), fj_sink *k, fj_err *err)
{
    fj_query none = {.cluster = q->cluster};
    const char *const stmts[] = {sql, NULL};
    cc_op op = {t, q, bind};
    return fj_qx_run(s, &none, k, err, FJ_QX_TX, stmts, cc_rows, &op);
}

static int64_t row_limit(const fj_cc_msg_query *q)
{
    return q->limit ? (int64_t)q->limit : INT64_MAX;
}

static void bind_events(const fj_qrows *r, const fj_cc_msg_query *q)
{
    fj_qr_bind_text(r, 1, q->cluster);
    fj_qr_bind(r, 2, q->from_ns ? q->from_ns : INT64_MIN);
    fj_qr_bind(r, 3, q->to_ns ? q->to_ns : INT64_MAX);
    fj_qr_bind_text(r, 4, q->kind);
    fj_qr_bind_text(r, 5, q->name);
    fj_qr_bind_text(r, 6, q->host);
    fj_qr_bind(r, 7, row_limit(q));
}

static void bind_jobs(const fj_qrows *r, const fj_cc_msg_query *q)
{
    fj_qr_bind_text(r, 1, q->cluster);
    fj_qr_bind(r, 2, q->from_ns / NS);
    fj_qr_bind(r, 3, q->to_ns / NS);
    fj_qr_bind(r, 4, row_limit(q));
}

fj_status fj_store_ts_cc_messages(fj_store *s, const fj_cc_msg_query *q, fj_sink *k, fj_err *err)
{
    return run(s, events_sql, &fj_qt_cc_events, q, bind_events, k, err);
}

fj_status fj_store_ts_cc_jobs(fj_store *s, const fj_cc_msg_query *q, fj_sink *k, fj_err *err)
{
    return run(s, jobs_sql, &fj_qt_cc_jobs, q, bind_jobs, k, err);
}
