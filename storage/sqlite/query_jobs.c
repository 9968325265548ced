/* storage/sqlite/query_jobs.c — the job queries of the SQLite backend: its SQL (the running test, the
 * metrics, command globs, the per-row and profile statements), statements and transaction; the
 * filters, rows and maths are storage/query/jobs.c's. */
#include "storage/query/jobs.h"
#include "storage/query/slurm.h"
#include "storage/sqlite/query_int.h"

#include <stdio.h>

/* The SQL of each metric, in the units of its column. */
static const char *const metric_sql[FJ_JM__COUNT] = {
    "(j.cpu_sum_m / 1000.0 / max(j.n_samples, 1))",
    "(j.cpu_peak_m / 1000.0)",
    "(j.mem_sum_kb * 1.0 / max(j.n_samples, 1))",
    "j.mem_peak_kb",
    "(j.gpu_sum_m / 1000.0 / max(j.n_samples, 1))",
    "(j.gpu_peak_m / 1000.0)",
    "(j.gpumem_sum_kb * 1.0 / max(j.n_samples, 1))",
    "j.gpumem_peak_kb",
};

static void command_glob(fj_qb *b, void *x, const char *glob)
{
    (void)x;
    fj_qb_put(b, "x.s GLOB ");
    fj_qb_text(b, glob);
}

static const fj_qjobs_sql jobs_sql = {
    /* Running: the Slurm state when known, else "no host has a sample later than the job's last". */
    .running = "(CASE WHEN sc.job_state IS NOT NULL THEN sc.job_state IN " FJ_QSLURM_RUNNING_STATES
               " ELSE NOT EXISTS (SELECT 1 FROM job_hosts h CROSS JOIN samples s ON s.node_id = h.node_id"
               " AND s.time > j.last_seen WHERE h.rjob_id = j.id) END)",
    .running_is = {" = 0", " = 1"},
    .metric = metric_sql,
    .command_match = command_glob,
};

/* The statements run once per job row; cc (the job detail's only) when with_cc. */
static fj_status stmts_prepare(fj_sqq *x, bool with_cc, sqlite3_stmt *st[5])
{
    fj_status rs;
    if ((rs = fj_sqq_prepare(x, "SELECT node_id FROM job_hosts WHERE rjob_id = ?1", &st[0])) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT x.s FROM job_cmds c JOIN strings x ON x.id = c.cmd_id"
                                " WHERE c.rjob_id = ?1 ORDER BY x.s", &st[1])) != FJ_OK ||
        /* the job's latest sample on a host: walk the host's samples backwards from the job's end */
        (rs = fj_sqq_prepare(x, "SELECT js.sample_id FROM samples s CROSS JOIN job_samples js"
                                " ON js.rjob_id = ?1 AND js.sample_id = s.id"
                                " WHERE s.node_id = ?2 AND s.time <= ?3 ORDER BY s.time DESC LIMIT 1",
                             &st[2])) != FJ_OK ||
        (rs = fj_sqq_prepare(x, "SELECT sum(p.cpu_time), sum(p.data_read_kb), sum(p.data_written_kb)"
                                " FROM sample_jobs sj CROSS JOIN sample_procs p"
                                " ON p.id >= sj.proc_first AND p.id < sj.proc_first + sj.n_procs"
                                " WHERE sj.sample_id = ?1 AND sj.job = ?2 AND sj.epoch = ?3"
                                " AND (?2 <> 0 OR (p.pid = ?4 AND (?6 = 0 OR (p.ppid = ?5 AND p.cmd_id = ?6))))",
                             &st[3])) != FJ_OK)
        return rs;
    if (!with_cc)
        return FJ_OK;
    /* the most recent cc job of (cluster, job id) that started by the Sonar job's last sample and
     * had not stopped before its first: the unique (cluster_id, job_id, start_time) index walked
     * backwards from ?3 */
    return fj_sqq_prepare(x, "SELECT id, start_time, stop_time, state, user, project, partition, subcluster,"
                          " num_nodes, num_hwthreads, num_acc, hosts FROM cc_jobs"
                          " WHERE cluster_id = ?1 AND job_id = ?2 AND start_time <= ?3"
                          " AND (stop_time IS NULL OR stop_time >= ?4)"
                          " ORDER BY start_time DESC LIMIT 1",
                          &st[4]);
}

static fj_qjob_stmts stmts_rows(fj_sqq *x, sqlite3_stmt *st[5])
{
    return (fj_qjob_stmts){fj_sqq_rows(x, st[0]), fj_sqq_rows(x, st[1]), fj_sqq_rows(x, st[2]),
                           fj_sqq_rows(x, st[3]), fj_sqq_rows(x, st[4])};
}

static void stmts_free(sqlite3_stmt *st[5])
{
    for (int i = 0; i < 5; i++)
        sqlite3_finalize(st[i]);
}

fj_status fj_sq_q_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    const char *key = fj_qjobs_sort_key(&jobs_sql, q->sort);
    if (!key)
        return fj_sqq_end(&x, fj_err_set(err, FJ_EINVAL, "sort", "unknown sort key"));
    fj_sqb b;
    fj_sqb_init(&b);
    sqlite3_stmt *st = NULL, *per_row[5] = {0};
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK ||
        (rs = stmts_prepare(&x, false, per_row)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qjobs_list_sql(&b, &e, &jobs_sql, key);
    if ((rs = fj_sqb_prepare(&x, &b, &st)) != FJ_OK)
        goto out;
    fj_qjob_stmts rows = stmts_rows(&x, per_row);
    fj_qrows jobs = fj_sqq_rows(&x, st);
    rs = fj_qjobs_list_rows(&e, &rows, &jobs);
out:
    sqlite3_finalize(st);
    stmts_free(per_row);
    fj_qb_free(&b);
    return fj_sqq_end(&x, rs);
}

/* --- one job ----------------------------------------------------------------------------- */

fj_status fj_sq_q_job(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_sqb b;
    fj_sqb_init(&b);
    sqlite3_stmt *st = NULL, *hs = NULL, *per_row[5] = {0};
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK ||
        (rs = stmts_prepare(&x, true, per_row)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qjob_sql(&b, &e, &jobs_sql);
    if ((rs = fj_sqb_prepare(&x, &b, &st)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x,
                             "SELECT js.node_id, count(*), min(js.time), max(js.time), max(js.nproc),"
                             " sum(js.cpu_m), coalesce(max(js.cpu_win_m), sum(js.cpu_m) / count(*)), sum(js.mem_kb), max(js.mem_kb), sum(js.gpu_m),"
                             " max(js.gpu_m), sum(js.gpumem_kb), max(js.gpumem_kb)"
                             " FROM job_samples js WHERE js.rjob_id = ?1 GROUP BY js.node_id",
                             &hs)) != FJ_OK)
        goto out;
    fj_qjob_stmts rows = stmts_rows(&x, per_row);
    fj_qrows job = fj_sqq_rows(&x, st), hosts = fj_sqq_rows(&x, hs);
    rs = fj_qjob_rows(&e, &rows, &job, &hosts);
out:
    sqlite3_finalize(st);
    sqlite3_finalize(hs);
    stmts_free(per_row);
    fj_qb_free(&b);
    return fj_sqq_end(&x, rs);
}

/* --- profile ------------------------------------------------------------------------------- */

fj_status fj_sq_q_profile(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_sqq x;
    fj_status rs = fj_sqq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    sqlite3_stmt *js = NULL, *st = NULL, *cs = NULL;
    if ((rs = fj_sqq_cluster(&x)) != FJ_OK || (rs = fj_sqq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x,
                             "SELECT job, epoch, pid, ppid, cmd_id, first_seen, last_seen,"
                             " gpu_peak_m > 0 OR gpumem_peak_kb > 0 FROM jobs WHERE id = ?1 AND cluster_id = ?2",
                             &js)) != FJ_OK)
        goto out;
    fj_qenv e = fj_sqq_env(&x);
    fj_qrows job = fj_sqq_rows(&x, js);
    fj_qprofile *p = NULL;
    if ((rs = fj_qprofile_begin(&e, &job, &p)) != FJ_OK || !p)
        goto out;

    /* One pass over the job's node-samples and their process rows (and GPU rows when the job used
     * a GPU), in node and time order (a process's CPU needs the node's sample before); CROSS JOIN
     * fixes the loop order: job_samples, which carries the node, time and process range
     * (migration 0007), then one range seek into sample_procs. Rows of one process are adjacent. The range is the sample's whole job; for a
     * job of one process (job 0) its pid, ppid and cmd pick it out. ?3 (the epoch) is not needed. */
    bool gpu = fj_qprofile_gpu(p);
    char sql[1600];
    snprintf(sql, sizeof sql,
             "SELECT js.node_id, js.time, js.sample_id, p.id, p.pid, p.ppid, p.cmd_id, p.resident_kb,"
             " p.cpu_util_m, p.rolledup, p.cpu_time, p.cpu_avg_m, p.num_threads,"
             " coalesce((SELECT e.producer = 'fjord-push' FROM jobs j CROSS JOIN envelopes e"
             " ON e.cluster_id = j.cluster_id AND e.node_id = js.node_id AND e.kind = 'sample'"
             " AND e.time = js.time WHERE j.id = ?1), 0)%s"
             " FROM job_samples js"
             " CROSS JOIN sample_procs p ON p.id >= js.proc_first AND p.id < js.proc_first + js.n_procs"
             "%s"
             " WHERE js.rjob_id = ?1 AND js.time >= ?7 AND js.time <= ?8"
             " AND (?2 <> 0 OR (p.pid = ?4 AND (?6 = 0 OR (p.ppid = ?5 AND p.cmd_id = ?6))))"
             " ORDER BY js.node_id, js.time, p.id",
             gpu ? ", g.gpu_util_m, g.gpu_memory_kb" : "",
             gpu ? " LEFT JOIN sample_proc_gpus g ON g.proc_id = p.id" : "");
    if ((rs = fj_sqq_prepare(&x, sql, &st)) != FJ_OK ||
        (rs = fj_sqq_prepare(&x, "SELECT s FROM strings WHERE id = ?1", &cs)) != FJ_OK)
        goto out;
    fj_qrows procs = fj_sqq_rows(&x, st), names = fj_sqq_rows(&x, cs);
    rs = fj_qprofile_rows(p, &procs, &names);
out:
    sqlite3_finalize(js);
    sqlite3_finalize(st);
    sqlite3_finalize(cs);
    return fj_sqq_end(&x, rs);
}
