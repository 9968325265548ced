/* sqlite_query.c — the SQLite backend's queries: rectified jobs and nodes, written as JSON into an
 * fj_buf. Each query reads one snapshot (a read transaction), so a concurrent commit never shows
 * half. Times are RFC 3339 strings. */
#include "sqlite_int.h"

#include <stdio.h>
#include <string.h>

typedef struct qctx {
    fj_store *s;
    fj_buf *out;
    fj_err *err;
    fj_status st; /* first buffer failure; appends after it are skipped */
} qctx;

static void put(qctx *q, const char *s)
{
    if (q->st == FJ_OK)
        q->st = fj_buf_puts(q->out, s);
}

static void put_str(qctx *q, const char *s)
{
    if (q->st != FJ_OK)
        return;
    q->st = s ? fj_buf_json_str(q->out, s) : fj_buf_puts(q->out, "null");
}

static void put_i64(qctx *q, int64_t v)
{
    if (q->st == FJ_OK)
        q->st = fj_buf_printf(q->out, "%lld", (long long)v);
}

static void put_time(qctx *q, int64_t t)
{
    if (t == 0) {
        put(q, "null");
        return;
    }
    char tb[21];
    fj_time_format(t, tb);
    put_str(q, tb);
}

/* A milli-percent sum as an average percentage with three decimals. */
static void put_avg_m(qctx *q, int64_t sum_m, int64_t n)
{
    if (q->st == FJ_OK)
        q->st = fj_buf_printf(q->out, "%.3f", n > 0 ? (double)sum_m / 1000.0 / (double)n : 0.0);
}

static void put_m(qctx *q, int64_t m)
{
    if (q->st == FJ_OK)
        q->st = fj_buf_printf(q->out, "%.3f", (double)m / 1000.0);
}

/* A column as JSON: null, integer, real or string. */
static void put_col(qctx *q, sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL: put(q, "null"); break;
    case SQLITE_INTEGER: put_i64(q, sqlite3_column_int64(st, i)); break;
    case SQLITE_FLOAT:
        if (q->st == FJ_OK)
            q->st = fj_buf_printf(q->out, "%.17g", sqlite3_column_double(st, i));
        break;
    default: put_str(q, (const char *)sqlite3_column_text(st, i)); break;
    }
}

static void put_col_time(qctx *q, sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        put(q, "null");
    else
        put_time(q, sqlite3_column_int64(st, i));
}

static fj_status prep(qctx *q, const char *sql, sqlite3_stmt **st)
{
    int rc = sqlite3_prepare_v2(q->s->db, sql, -1, st, NULL);
    return rc == SQLITE_OK ? FJ_OK : fj_sq_fail(q->s, rc, "prepare query", q->err);
}

/* Runs a one-column text query bound to one id and writes the values as a JSON array. */
static fj_status put_name_list(qctx *q, sqlite3_stmt *st, int64_t id)
{
    sqlite3_bind_int64(st, 1, id);
    put(q, "[");
    int rc = SQLITE_DONE, n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (n++)
            put(q, ",");
        put_str(q, (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_reset(st);
    put(q, "]");
    return rc == SQLITE_DONE ? FJ_OK : fj_sq_fail(q->s, rc, "query", q->err);
}

static fj_status begin_read(fj_store *s, fj_err *err)
{
    int rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
    return rc == SQLITE_OK ? FJ_OK : fj_sq_fail(s, rc, "begin read", err);
}

static void end_read(fj_store *s)
{
    if (!sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
}

/* --- jobs ----------------------------------------------------------------------------------- */

/* The Slurm fields shown with a rectified Slurm job, from slurm_jobs_current (job step ''). */
static const char *const slurm_json[][2] = {
    {"state", "job_state"},           {"state_raw", "job_state_raw"},   {"partition", "partition"},
    {"account", "account"},           {"job_name", "job_name"},         {"user_name", "user_name"},
    {"time_limit_s", "time_limit_s"}, {"submit_time", "submit_time"},   {"start_time", "start_time"},
    {"end_time", "end_time"},         {"nodes", "nodes"},               {"exit_code", "exit_code"},
    {"array_job_id", "array_job_id"}, {"array_task_id", "array_task_id"},
    {"het_job_id", "het_job_id"},     {"het_job_offset", "het_job_offset"},
    {"reservation", "reservation"},   {"priority", "priority"},         {"requested_cpus", "requested_cpus"},
    {"requested_node_count", "requested_node_count"},
    {"requested_memory_per_node_kb", "requested_memory_per_node_kb"},
};
#define N_SLURM_JSON (sizeof slurm_json / sizeof slurm_json[0])

static bool is_time_col(const char *col)
{
    size_t n = strlen(col);
    return n > 5 && strcmp(col + n - 5, "_time") == 0;
}

static fj_status put_slurm(qctx *q, sqlite3_stmt *st, int64_t cluster_id, int64_t job)
{
    sqlite3_bind_int64(st, 1, cluster_id);
    sqlite3_bind_int64(st, 2, job);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        put(q, "{\"updated\":");
        put_col_time(q, st, 0);
        for (size_t i = 0; i < N_SLURM_JSON; i++) {
            put(q, ",");
            put_str(q, slurm_json[i][0]);
            put(q, ":");
            if (is_time_col(slurm_json[i][1]))
                put_col_time(q, st, (int)i + 1);
            else
                put_col(q, st, (int)i + 1);
        }
        put(q, "}");
    } else {
        put(q, "null");
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? FJ_OK : fj_sq_fail(q->s, rc, "query slurm job", q->err);
}

fj_status fj_sq_query_jobs(fj_store *s, const fj_job_query *jq, fj_buf *out, fj_err *err)
{
    if (!jq || !jq->cluster)
        return fj_err_set(err, FJ_EINVAL, "cluster", "a cluster is required");
    qctx q = {s, out, err, FJ_OK};
    sqlite3_stmt *jobs = NULL, *hosts = NULL, *cmds = NULL, *slurm = NULL;
    fj_status st = begin_read(s, err);
    if (st != FJ_OK)
        return st;

    char slurm_sql[1536];
    size_t off = (size_t)snprintf(slurm_sql, sizeof slurm_sql, "SELECT time");
    for (size_t i = 0; i < N_SLURM_JSON && off < sizeof slurm_sql; i++)
        off += (size_t)snprintf(slurm_sql + off, sizeof slurm_sql - off, ",%s", slurm_json[i][1]);
    if (off < sizeof slurm_sql)
        snprintf(slurm_sql + off, sizeof slurm_sql - off,
                 " FROM slurm_jobs_current WHERE cluster_id=?1 AND job_id=?2 AND job_step=''");

    if ((st = prep(&q,
                   "SELECT j.id, c.id, j.job, j.epoch, n.name, u.s, j.first_seen, j.last_seen, j.n_samples,"
                   " j.nproc_peak, j.cpu_sum_m, j.cpu_peak_m, j.mem_sum_kb, j.mem_peak_kb, j.gpu_sum_m,"
                   " j.gpu_peak_m, j.gpumem_sum_kb, j.gpumem_peak_kb, j.pid"
                   " FROM jobs j JOIN clusters c ON c.id = j.cluster_id"
                   " LEFT JOIN nodes n ON n.id = j.node_id"
                   " LEFT JOIN strings u ON u.id = j.user_id"
                   " WHERE c.name = ?1 AND (?2 = 0 OR j.last_seen >= ?2) AND (?3 = 0 OR j.first_seen <= ?3)"
                   " ORDER BY j.first_seen, j.id LIMIT ?4",
                   &jobs)) != FJ_OK ||
        (st = prep(&q,
                   "SELECT n.name FROM job_hosts h JOIN nodes n ON n.id = h.node_id WHERE h.rjob_id = ?1"
                   " ORDER BY n.name",
                   &hosts)) != FJ_OK ||
        (st = prep(&q,
                   "SELECT x.s FROM job_cmds c JOIN strings x ON x.id = c.cmd_id WHERE c.rjob_id = ?1"
                   " ORDER BY x.s",
                   &cmds)) != FJ_OK ||
        (st = prep(&q, slurm_sql, &slurm)) != FJ_OK)
        goto out;

    sqlite3_bind_text(jobs, 1, jq->cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(jobs, 2, jq->from);
    sqlite3_bind_int64(jobs, 3, jq->to);
    sqlite3_bind_int64(jobs, 4, jq->limit ? (int64_t)jq->limit : -1);
    put(&q, "{\"jobs\":[");
    int rc = SQLITE_DONE, n = 0;
    while (st == FJ_OK && (rc = sqlite3_step(jobs)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(jobs, 0), cluster_id = sqlite3_column_int64(jobs, 1);
        int64_t job = sqlite3_column_int64(jobs, 2), epoch = sqlite3_column_int64(jobs, 3);
        int64_t ns = sqlite3_column_int64(jobs, 8);
        put(&q, n++ ? ",{\"cluster\":" : "{\"cluster\":");
        put_str(&q, jq->cluster);
        put(&q, ",\"job\":");
        put_col(&q, jobs, 2);
        put(&q, ",\"epoch\":");
        put_col(&q, jobs, 3);
        put(&q, ",\"node\":");
        put_str(&q, (const char *)sqlite3_column_text(jobs, 4));
        if (job == 0) {
            put(&q, ",\"pid\":");
            put_col(&q, jobs, 18);
        }
        put(&q, ",\"user\":");
        put_str(&q, (const char *)sqlite3_column_text(jobs, 5));
        put(&q, ",\"first_seen\":");
        put_time(&q, sqlite3_column_int64(jobs, 6));
        put(&q, ",\"last_seen\":");
        put_time(&q, sqlite3_column_int64(jobs, 7));
        put(&q, ",\"hosts\":");
        if ((st = put_name_list(&q, hosts, id)) != FJ_OK)
            break;
        put(&q, ",\"commands\":");
        if ((st = put_name_list(&q, cmds, id)) != FJ_OK)
            break;
        put(&q, ",\"samples\":");
        put_i64(&q, ns);
        put(&q, ",\"processes\":");
        put_col(&q, jobs, 9);
        put(&q, ",\"cpu_avg\":");
        put_avg_m(&q, sqlite3_column_int64(jobs, 10), ns);
        put(&q, ",\"cpu_peak\":");
        put_m(&q, sqlite3_column_int64(jobs, 11));
        put(&q, ",\"mem_avg_kb\":");
        put_i64(&q, ns > 0 ? sqlite3_column_int64(jobs, 12) / ns : 0);
        put(&q, ",\"mem_peak_kb\":");
        put_col(&q, jobs, 13);
        put(&q, ",\"gpu_avg\":");
        put_avg_m(&q, sqlite3_column_int64(jobs, 14), ns);
        put(&q, ",\"gpu_peak\":");
        put_m(&q, sqlite3_column_int64(jobs, 15));
        put(&q, ",\"gpumem_avg_kb\":");
        put_i64(&q, ns > 0 ? sqlite3_column_int64(jobs, 16) / ns : 0);
        put(&q, ",\"gpumem_peak_kb\":");
        put_col(&q, jobs, 17);
        put(&q, ",\"slurm\":");
        if (epoch == 0 && job != 0) {
            if ((st = put_slurm(&q, slurm, cluster_id, job)) != FJ_OK)
                break;
        } else {
            put(&q, "null");
        }
        put(&q, "}");
        st = q.st;
    }
    if (st == FJ_OK && rc != SQLITE_DONE)
        st = fj_sq_fail(s, rc, "query jobs", err);
    put(&q, "]}");
    if (q.st != FJ_OK && (st == FJ_OK || st == q.st))
        st = fj_err_set(err, q.st, NULL, "job listing does not fit the response buffer");
out:
    sqlite3_finalize(jobs);
    sqlite3_finalize(hosts);
    sqlite3_finalize(cmds);
    sqlite3_finalize(slurm);
    end_read(s);
    return st;
}

/* --- nodes ---------------------------------------------------------------------------------- */

fj_status fj_sq_query_nodes(fj_store *s, const char *cluster, fj_buf *out, fj_err *err)
{
    if (!cluster)
        return fj_err_set(err, FJ_EINVAL, "cluster", "a cluster is required");
    qctx q = {s, out, err, FJ_OK};
    sqlite3_stmt *nodes = NULL, *sys = NULL, *states = NULL;
    fj_status st = begin_read(s, err);
    if (st != FJ_OK)
        return st;
    if ((st = prep(&q,
                   "SELECT n.id, n.name, max(coalesce((SELECT max(time) FROM samples WHERE node_id = n.id), 0),"
                   " coalesce((SELECT max(time) FROM sysinfo WHERE node_id = n.id), 0))"
                   " FROM nodes n JOIN clusters c ON c.id = n.cluster_id WHERE c.name = ?1 ORDER BY n.name",
                   &nodes)) != FJ_OK ||
        (st = prep(&q,
                   "SELECT time, cpu_model, sockets, cores_per_socket, threads_per_core, memory_kb, os_name,"
                   " os_release, architecture, n_gpus FROM sysinfo WHERE node_id = ?1 ORDER BY time DESC LIMIT 1",
                   &sys)) != FJ_OK ||
        (st = prep(&q,
                   "SELECT x.s FROM node_states ns JOIN strings x ON x.id = ns.state_id WHERE ns.node_id = ?1"
                   " AND ns.time = (SELECT max(time) FROM node_states WHERE node_id = ?1) ORDER BY x.s",
                   &states)) != FJ_OK)
        goto out;

    sqlite3_bind_text(nodes, 1, cluster, -1, SQLITE_STATIC);
    put(&q, "{\"nodes\":[");
    int rc = SQLITE_DONE, n = 0;
    while (st == FJ_OK && (rc = sqlite3_step(nodes)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(nodes, 0);
        put(&q, n++ ? ",{\"cluster\":" : "{\"cluster\":");
        put_str(&q, cluster);
        put(&q, ",\"node\":");
        put_str(&q, (const char *)sqlite3_column_text(nodes, 1));
        put(&q, ",\"last_seen\":");
        put_time(&q, sqlite3_column_int64(nodes, 2));
        put(&q, ",\"sysinfo\":");
        sqlite3_bind_int64(sys, 1, id);
        int src = sqlite3_step(sys);
        if (src == SQLITE_ROW) {
            static const char *const keys[] = {"time",    "cpu_model",  "sockets",      "cores_per_socket",
                                               "threads_per_core", "memory_kb", "os_name", "os_release",
                                               "architecture",     "gpus"};
            for (int i = 0; i < 10; i++) {
                put(&q, i ? ",\"" : "{\"");
                put(&q, keys[i]);
                put(&q, "\":");
                if (i == 0)
                    put_col_time(&q, sys, 0);
                else
                    put_col(&q, sys, i);
            }
            put(&q, "}");
        } else {
            put(&q, "null");
        }
        sqlite3_reset(sys);
        if (src != SQLITE_ROW && src != SQLITE_DONE) {
            st = fj_sq_fail(s, src, "query sysinfo", err);
            break;
        }
        put(&q, ",\"states\":");
        if ((st = put_name_list(&q, states, id)) != FJ_OK)
            break;
        put(&q, "}");
        st = q.st;
    }
    if (st == FJ_OK && rc != SQLITE_DONE)
        st = fj_sq_fail(s, rc, "query nodes", err);
    put(&q, "]}");
    if (q.st != FJ_OK && (st == FJ_OK || st == q.st))
        st = fj_err_set(err, q.st, NULL, "node listing does not fit the response buffer");
out:
    sqlite3_finalize(nodes);
    sqlite3_finalize(sys);
    sqlite3_finalize(states);
    end_read(s);
    return st;
}
