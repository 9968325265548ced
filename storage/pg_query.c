/* pg_query.c — the PostgreSQL backend's queries: rectified jobs, nodes and a node's latest aicr
 * snapshot, written as JSON into an fj_buf, byte for byte what the SQLite backend writes. Each
 * query reads one snapshot (a REPEATABLE READ, READ ONLY transaction) with a fixed number of
 * statements: the rows, then the lists of all of them at once (never one statement per row). Names
 * are sorted byte-wise (COLLATE "C"), as SQLite sorts them. */
#include "pg_int.h"

#include "alloc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static char slurm_sql[2048];
static pthread_once_t slurm_once = PTHREAD_ONCE_INIT;

/* Built from the table above, once per process, in static storage. */
static void build_slurm_sql(void)
{
    size_t off = (size_t)snprintf(slurm_sql, sizeof slurm_sql, "SELECT s.cluster_id, s.job_id, s.time");
    for (size_t i = 0; i < N_SLURM_JSON && off < sizeof slurm_sql; i++)
        off += (size_t)snprintf(slurm_sql + off, sizeof slurm_sql - off, ", s.%s", slurm_json[i][1]);
    if (off < sizeof slurm_sql)
        off += (size_t)snprintf(slurm_sql + off, sizeof slurm_sql - off,
                                " FROM slurm_jobs_current s JOIN unnest($1::bigint[],$2::bigint[]) u(c,j) ON "
                                "s.cluster_id = u.c AND s.job_id = u.j WHERE s.job_step = ''");
    if (off >= sizeof slurm_sql)
        slurm_sql[0] = '\0'; /* does not fit: preparing fails cleanly */
}

const char *fj_pg_query_sql(fj_pg_stmt_id id)
{
    if (id != FJ_PG_Q_JOB_SLURM)
        return NULL;
    pthread_once(&slurm_once, build_slurm_sql);
    return slurm_sql[0] ? slurm_sql : NULL;
}

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
    if (q->st == FJ_OK)
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

#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_FLOAT8 701

/* A column as JSON: null, a number (integer columns as PostgreSQL prints them), or a string. */
static void put_col(qctx *q, const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col)) {
        put(q, "null");
        return;
    }
    Oid t = PQftype(r, col);
    if (t == OID_INT8 || t == OID_INT4 || t == OID_INT2)
        put(q, PQgetvalue(r, row, col));
    else if (t == OID_FLOAT8) {
        if (q->st == FJ_OK)
            q->st = fj_buf_printf(q->out, "%.17g", strtod(PQgetvalue(r, row, col), NULL));
    } else
        put_str(q, PQgetvalue(r, row, col));
}

static void put_col_time(qctx *q, const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        put(q, "null");
    else
        put_time(q, fj_pg_int(r, row, col));
}

static const char *text_or_null(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

/* The names of a (key, name) result ordered by key whose key is id, as a JSON array; keys holds
 * the result's first column, searched by bisection. */
static void put_list(qctx *q, const PGresult *r, const int64_t *keys, int n, int64_t id)
{
    int lo = 0, hi = n;
    while (lo < hi) { /* first row with key >= id */
        int mid = lo + (hi - lo) / 2;
        if (keys[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    put(q, "[");
    for (int i = lo; i < n && keys[i] == id; i++) {
        if (i > lo)
            put(q, ",");
        put_str(q, PQgetvalue(r, i, 1));
    }
    put(q, "]");
}

/* The first column of a result as integers (fj_free). */
static int64_t *int_column(const PGresult *r)
{
    int n = PQntuples(r);
    int64_t *v = fj_malloc((size_t)(n ? n : 1) * sizeof *v);
    if (v)
        for (int i = 0; i < n; i++)
            v[i] = fj_pg_int(r, i, 0);
    return v;
}

static bool is_time_col(const char *col)
{
    size_t n = strlen(col);
    return n > 5 && strcmp(col + n - 5, "_time") == 0;
}

static fj_status finish_read(fj_store *s, fj_status st, fj_err *err)
{
    if (st == FJ_OK)
        st = fj_pg_exec(s, "COMMIT", "end read", err);
    if (st != FJ_OK)
        fj_pg_rollback(s);
    return st;
}

fj_status fj_pg_query_jobs(fj_store *s, const fj_job_query *jq, fj_buf *out, fj_err *err)
{
    if (!jq || !jq->cluster)
        return fj_err_set(err, FJ_EINVAL, "cluster", "a cluster is required");
    qctx q = {s, out, err, FJ_OK};
    PGresult *jobs = NULL, *hosts = NULL, *cmds = NULL, *slurm = NULL;
    int64_t *host_keys = NULL, *cmd_keys = NULL;
    fj_buf ids, sc, sj;
    fj_buf_init(&ids, (size_t)1 << 30);
    fj_buf_init(&sc, (size_t)1 << 30);
    fj_buf_init(&sj, (size_t)1 << 30);
    fj_pg_map slurm_rows = {0};
    fj_status st = fj_pg_begin(s, true, err);
    if (st != FJ_OK)
        return st;

    char from[24], to[24], limit[24];
    snprintf(from, sizeof from, "%lld", (long long)jq->from);
    snprintf(to, sizeof to, "%lld", (long long)jq->to);
    snprintf(limit, sizeof limit, "%zu", jq->limit);
    const char *jv[] = {jq->cluster, from, to, jq->limit ? limit : NULL};
    if ((st = fj_pg_run(s, FJ_PG_Q_JOBS, 4, jv, &jobs, "query jobs", err)) != FJ_OK)
        goto out;
    int n = PQntuples(jobs);
    /* the hosts, commands and Slurm records of all of them at once */
    fj_status bst = fj_buf_puts(&ids, "{");
    if (bst == FJ_OK)
        bst = fj_buf_puts(&sc, "{");
    if (bst == FJ_OK)
        bst = fj_buf_puts(&sj, "{");
    for (int i = 0, ns = 0; bst == FJ_OK && i < n; i++) {
        bst = fj_buf_printf(&ids, "%s%s", i ? "," : "", PQgetvalue(jobs, i, 0));
        if (bst == FJ_OK && fj_pg_int(jobs, i, 3) == 0 && fj_pg_int(jobs, i, 2) != 0) {
            bst = fj_buf_printf(&sc, "%s%s", ns ? "," : "", PQgetvalue(jobs, i, 1));
            if (bst == FJ_OK)
                bst = fj_buf_printf(&sj, "%s%s", ns++ ? "," : "", PQgetvalue(jobs, i, 2));
        }
    }
    if (bst == FJ_OK)
        bst = fj_buf_puts(&ids, "}");
    if (bst == FJ_OK)
        bst = fj_buf_puts(&sc, "}");
    if (bst == FJ_OK)
        bst = fj_buf_puts(&sj, "}");
    if (bst != FJ_OK) {
        st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    const char *iv[] = {ids.data};
    const char *sv[] = {sc.data, sj.data};
    if ((st = fj_pg_run(s, FJ_PG_Q_JOB_HOSTS, 1, iv, &hosts, "query job hosts", err)) != FJ_OK ||
        (st = fj_pg_run(s, FJ_PG_Q_JOB_CMDS, 1, iv, &cmds, "query job commands", err)) != FJ_OK ||
        (st = fj_pg_run(s, FJ_PG_Q_JOB_SLURM, 2, sv, &slurm, "query Slurm jobs", err)) != FJ_OK)
        goto out;
    host_keys = int_column(hosts);
    cmd_keys = int_column(cmds);
    if (!host_keys || !cmd_keys) {
        st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    for (int i = 0; i < PQntuples(slurm); i++) {
        int64_t key[2] = {fj_pg_int(slurm, i, 0), fj_pg_int(slurm, i, 1)};
        if (fj_pg_map_put(&slurm_rows, 0, (const char *)key, sizeof key, i + 1) != FJ_OK) {
            st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            goto out;
        }
    }

    put(&q, "{\"jobs\":[");
    for (int i = 0; i < n && q.st == FJ_OK; i++) {
        int64_t id = fj_pg_int(jobs, i, 0), cluster_id = fj_pg_int(jobs, i, 1);
        int64_t job = fj_pg_int(jobs, i, 2), epoch = fj_pg_int(jobs, i, 3);
        int64_t ns = fj_pg_int(jobs, i, 8);
        put(&q, i ? ",{\"cluster\":" : "{\"cluster\":");
        put_str(&q, jq->cluster);
        put(&q, ",\"job\":");
        put_col(&q, jobs, i, 2);
        put(&q, ",\"epoch\":");
        put_col(&q, jobs, i, 3);
        put(&q, ",\"node\":");
        put_str(&q, text_or_null(jobs, i, 4));
        if (job == 0) {
            put(&q, ",\"pid\":");
            put_col(&q, jobs, i, 18);
        }
        put(&q, ",\"user\":");
        put_str(&q, text_or_null(jobs, i, 5));
        put(&q, ",\"first_seen\":");
        put_time(&q, fj_pg_int(jobs, i, 6));
        put(&q, ",\"last_seen\":");
        put_time(&q, fj_pg_int(jobs, i, 7));
        put(&q, ",\"hosts\":");
        put_list(&q, hosts, host_keys, PQntuples(hosts), id);
        put(&q, ",\"commands\":");
        put_list(&q, cmds, cmd_keys, PQntuples(cmds), id);
        put(&q, ",\"samples\":");
        put_i64(&q, ns);
        put(&q, ",\"processes\":");
        put_col(&q, jobs, i, 9);
        put(&q, ",\"cpu_avg\":");
        put_avg_m(&q, fj_pg_int(jobs, i, 10), ns);
        put(&q, ",\"cpu_peak\":");
        put_m(&q, fj_pg_int(jobs, i, 11));
        put(&q, ",\"mem_avg_kb\":");
        put_i64(&q, ns > 0 ? fj_pg_int(jobs, i, 12) / ns : 0);
        put(&q, ",\"mem_peak_kb\":");
        put_col(&q, jobs, i, 13);
        put(&q, ",\"gpu_avg\":");
        put_avg_m(&q, fj_pg_int(jobs, i, 14), ns);
        put(&q, ",\"gpu_peak\":");
        put_m(&q, fj_pg_int(jobs, i, 15));
        put(&q, ",\"gpumem_avg_kb\":");
        put_i64(&q, ns > 0 ? fj_pg_int(jobs, i, 16) / ns : 0);
        put(&q, ",\"gpumem_peak_kb\":");
        put_col(&q, jobs, i, 17);
        put(&q, ",\"slurm\":");
        int64_t key[2] = {cluster_id, job};
        int64_t row = epoch == 0 && job != 0 ? fj_pg_map_get(&slurm_rows, 0, (const char *)key, sizeof key) : 0;
        if (row) {
            int r = (int)row - 1;
            put(&q, "{\"updated\":");
            put_col_time(&q, slurm, r, 2);
            for (size_t f = 0; f < N_SLURM_JSON; f++) {
                put(&q, ",");
                put_str(&q, slurm_json[f][0]);
                put(&q, ":");
                if (is_time_col(slurm_json[f][1]))
                    put_col_time(&q, slurm, r, (int)f + 3);
                else
                    put_col(&q, slurm, r, (int)f + 3);
            }
            put(&q, "}");
        } else {
            put(&q, "null");
        }
        put(&q, "}");
    }
    put(&q, "]}");
    if (q.st != FJ_OK)
        st = fj_err_set(err, q.st, NULL, "job listing does not fit the response buffer");
out:
    PQclear(jobs);
    PQclear(hosts);
    PQclear(cmds);
    PQclear(slurm);
    fj_free(host_keys);
    fj_free(cmd_keys);
    fj_buf_free(&ids);
    fj_buf_free(&sc);
    fj_buf_free(&sj);
    fj_pg_map_clear(&slurm_rows);
    return finish_read(s, st, err);
}

fj_status fj_pg_query_nodes(fj_store *s, const char *cluster, fj_buf *out, fj_err *err)
{
    if (!cluster)
        return fj_err_set(err, FJ_EINVAL, "cluster", "a cluster is required");
    qctx q = {s, out, err, FJ_OK};
    PGresult *nodes = NULL, *sys = NULL, *states = NULL;
    int64_t *sys_keys = NULL, *state_keys = NULL;
    fj_status st = fj_pg_begin(s, true, err);
    if (st != FJ_OK)
        return st;
    const char *v[] = {cluster};
    if ((st = fj_pg_run(s, FJ_PG_Q_NODES, 1, v, &nodes, "query nodes", err)) != FJ_OK ||
        (st = fj_pg_run(s, FJ_PG_Q_NODE_SYSINFO, 1, v, &sys, "query sysinfo", err)) != FJ_OK ||
        (st = fj_pg_run(s, FJ_PG_Q_NODE_STATES, 1, v, &states, "query node states", err)) != FJ_OK)
        goto out;
    sys_keys = int_column(sys);
    state_keys = int_column(states);
    if (!sys_keys || !state_keys) {
        st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    int n_sys = PQntuples(sys);
    put(&q, "{\"nodes\":[");
    for (int i = 0; i < PQntuples(nodes) && q.st == FJ_OK; i++) {
        int64_t id = fj_pg_int(nodes, i, 0);
        put(&q, i ? ",{\"cluster\":" : "{\"cluster\":");
        put_str(&q, cluster);
        put(&q, ",\"node\":");
        put_str(&q, PQgetvalue(nodes, i, 1));
        put(&q, ",\"last_seen\":");
        put_time(&q, fj_pg_int(nodes, i, 2));
        put(&q, ",\"sysinfo\":");
        int lo = 0, hi = n_sys;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (sys_keys[mid] < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n_sys && sys_keys[lo] == id) {
            static const char *const keys[] = {"time",    "cpu_model",  "sockets",      "cores_per_socket",
                                               "threads_per_core", "memory_kb", "os_name", "os_release",
                                               "architecture",     "gpus"};
            for (int c = 0; c < 10; c++) {
                put(&q, c ? ",\"" : "{\"");
                put(&q, keys[c]);
                put(&q, "\":");
                if (c == 0)
                    put_col_time(&q, sys, lo, 1);
                else
                    put_col(&q, sys, lo, c + 1);
            }
            put(&q, "}");
        } else {
            put(&q, "null");
        }
        put(&q, ",\"states\":");
        put_list(&q, states, state_keys, PQntuples(states), id);
        put(&q, "}");
    }
    put(&q, "]}");
    if (q.st != FJ_OK)
        st = fj_err_set(err, q.st, NULL, "node listing does not fit the response buffer");
out:
    PQclear(nodes);
    PQclear(sys);
    PQclear(states);
    fj_free(sys_keys);
    fj_free(state_keys);
    return finish_read(s, st, err);
}

fj_status fj_pg_measurement_latest(fj_store *s, const char *cluster, const char *node, fj_time *time, fj_buf *out,
                                   fj_err *err)
{
    if (!cluster || !node)
        return fj_err_set(err, FJ_EINVAL, cluster ? "node" : "cluster", "a cluster and a node are required");
    fj_status st = fj_pg_begin(s, true, err);
    if (st != FJ_OK)
        return st;
    const char *v[] = {cluster, node};
    PGresult *r;
    if ((st = fj_pg_run(s, FJ_PG_Q_MEASURE_LATEST, 2, v, &r, "query measurements", err)) == FJ_OK) {
        if (PQntuples(r) == 1) {
            *time = fj_pg_int(r, 0, 0);
            st = fj_buf_append(out, PQgetvalue(r, 0, 1), (size_t)PQgetlength(r, 0, 1));
            if (st != FJ_OK)
                fj_err_set(err, st, NULL, "snapshot does not fit the response buffer");
        } else {
            st = fj_err_set(err, FJ_ENOTFOUND, "node", "no measurements of node '%s' in cluster '%s'", node, cluster);
        }
        PQclear(r);
    }
    fj_status end = finish_read(s, FJ_OK, err);
    return st != FJ_OK ? st : end;
}
