/* pg_query_jobs.c — the job queries of the PostgreSQL backend (a port of sqlite_query_jobs.c): the filtered, sorted, keyset-paged
 * job list, one job's detail (with per-host figures), and a job's per-process profile in time
 * buckets. Summaries come from the rectified `jobs` rows; the per-row extras (hosts, commands,
 * cumulative CPU time and I/O) cost a few index seeks per row of the page. */
#include "pg_query_int.h"

#include "cc_json.h"
#include "qmath.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Slurm states of a job that has not finished. */
#define RUNNING_STATES                                                                                 \
    "('RUNNING','PENDING','SUSPENDED','COMPLETING','CONFIGURING','REQUEUED','REQUEUE_HOLD',"          \
    "'REQUEUE_FED','RESIZING','SIGNALING','STAGE_OUT','STOPPED','RESV_DEL_HOLD')"

/* Running: the Slurm state when known, else "no host has a sample later than the job's last". */
#define RUNNING_EXPR                                                                                   \
    "(CASE WHEN sc.job_state IS NOT NULL THEN sc.job_state IN " RUNNING_STATES                        \
    " ELSE NOT EXISTS (SELECT 1 FROM job_hosts h JOIN samples s ON s.node_id = h.node_id"              \
    " AND s.time > j.last_seen WHERE h.rjob_id = j.id) END)"

/* The SQL of each metric, in the units of its column. */
static const char *const metric_sql[FJ_JM__COUNT] = {
    "(j.cpu_sum_m / 1000.0 / greatest(j.n_samples, 1))::float8",
    "(j.cpu_peak_m / 1000.0)::float8",
    "(j.mem_sum_kb * 1.0 / greatest(j.n_samples, 1))::float8",
    "j.mem_peak_kb",
    "(j.gpu_sum_m / 1000.0 / greatest(j.n_samples, 1))::float8",
    "(j.gpu_peak_m / 1000.0)::float8",
    "(j.gpumem_sum_kb * 1.0 / greatest(j.n_samples, 1))::float8",
    "j.gpumem_peak_kb",
};

static const char *sort_sql(int sort)
{
    switch (sort) {
    case FJ_JS_START: return "j.first_seen";
    case FJ_JS_END: return "j.last_seen";
    case FJ_JS_DURATION: return "(j.last_seen - j.first_seen)";
    case FJ_JS_JOB: return "j.job";
    default:
        if (sort >= FJ_JS_METRIC0 && sort < FJ_JS__COUNT)
            return metric_sql[sort - FJ_JS_METRIC0];
        return NULL;
    }
}

enum {
    C_ID, C_JOB, C_EPOCH, C_NODE, C_PID, C_USER, C_FIRST, C_LAST, C_NS, C_NPROC, C_CPU_SUM, C_CPU_PEAK,
    C_MEM_SUM, C_MEM_PEAK, C_GPU_SUM, C_GPU_PEAK, C_GM_SUM, C_GM_PEAK, C_PPID, C_CMD, C_RUNNING,
    C_SLURM0 /* the Slurm columns follow, in slurm_cols order, then the sort key */
};

static const char *const slurm_cols[] = {
    "job_state",          "partition",           "account",
    "job_name",           "submit_time",         "time_limit_s",
    "exit_code",          "requested_cpus",      "requested_node_count",
    "requested_memory_per_node_kb", "requested_resources", "allocated_resources",
    "array_job_id",       "array_task_id",
};
#define N_SLURM (sizeof slurm_cols / sizeof slurm_cols[0])
#define C_SORTKEY (C_SLURM0 + (int)N_SLURM)

static void select_jobs(fj_pgb *b, const char *sortkey)
{
    fj_pgb_put(b, "SELECT j.id, j.job, j.epoch, j.node_id, j.pid, u.s, j.first_seen, j.last_seen, j.n_samples,"
                  " j.nproc_peak, j.cpu_sum_m, j.cpu_peak_m, j.mem_sum_kb, j.mem_peak_kb, j.gpu_sum_m,"
                  " j.gpu_peak_m, j.gpumem_sum_kb, j.gpumem_peak_kb, j.ppid, j.cmd_id, " RUNNING_EXPR);
    for (size_t i = 0; i < N_SLURM; i++)
        fj_pgb_printf(b, ", sc.%s", slurm_cols[i]);
    fj_pgb_printf(b, ", %s FROM jobs j LEFT JOIN strings u ON u.id = j.user_id"
                     " LEFT JOIN slurm_jobs_current sc ON j.epoch = 0 AND j.job <> 0"
                     " AND sc.cluster_id = j.cluster_id AND sc.job_id = j.job AND sc.job_step = ''",
                  sortkey);
}

/* The statements run once per job row (cc: the job detail's only, prepared by rowctx_prepare_cc). */
typedef struct rowctx {
    fj_pgs *hosts, *cmds, *last, *usage, *cc;
} rowctx;

static fj_status rowctx_prepare(fj_pgq *x, rowctx *rc)
{
    fj_status rs;
    if ((rs = fj_pgq_prepare(x, "SELECT node_id FROM job_hosts WHERE rjob_id = $1", &rc->hosts)) != FJ_OK ||
        (rs = fj_pgq_prepare(x, "SELECT x.s FROM job_cmds c JOIN strings x ON x.id = c.cmd_id"
                                " WHERE c.rjob_id = $1 ORDER BY x.s COLLATE \"C\"", &rc->cmds)) != FJ_OK ||
        /* the job's latest sample on a host: walk the host's samples backwards from the job's end */
        (rs = fj_pgq_prepare(x, "SELECT js.time FROM job_samples js WHERE js.rjob_id = $1 AND js.node_id = $2"
                                " AND js.time <= $3 ORDER BY js.time DESC LIMIT 1",
                             &rc->last)) != FJ_OK ||
        (rs = fj_pgq_prepare(x, "SELECT sum(p.cpu_time), sum(p.data_read_kb), sum(p.data_written_kb)"
                                " FROM sample_procs p WHERE p.node_id = $7 AND p.time = $1 AND p.job = $2"
                                " AND p.epoch = $3"
                                " AND ($2 <> 0 OR (p.pid = $4 AND ($6 = 0 OR (p.ppid = $5 AND p.cmd_id = $6))))",
                             &rc->usage)) != FJ_OK)
        return rs;
    return FJ_OK;
}

/* The job detail's statement too: its ClusterCockpit job. */
static fj_status rowctx_prepare_cc(fj_pgq *x, rowctx *rc)
{
    /* the most recent cc job of (cluster, job id) that started by the Sonar job's last sample and
     * had not stopped before its first: the unique (cluster_id, job_id, start_time) index walked
     * backwards from $3 */
    return fj_pgq_prepare(x, "SELECT id, start_time, stop_time, state, \"user\", project, partition, subcluster,"
                          " num_nodes, num_hwthreads, num_acc, hosts FROM cc_jobs"
                          " WHERE cluster_id = $1 AND job_id = $2 AND start_time <= $3"
                          " AND (stop_time IS NULL OR stop_time >= $4)"
                          " ORDER BY start_time DESC LIMIT 1",
                          &rc->cc);
}

static void rowctx_free(rowctx *rc)
{
    fj_pgs_finalize(rc->hosts);
    fj_pgs_finalize(rc->cmds);
    fj_pgs_finalize(rc->last);
    fj_pgs_finalize(rc->usage);
    fj_pgs_finalize(rc->cc);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct usage {
    bool cpu_set, read_set, written_set;
    double cpu, read, written;
} usage;

/* Adds the cumulative counters of the job's processes in its last sample on one host. */
static fj_status add_usage(fj_pgq *x, rowctx *rc, fj_pgs *job, int64_t node_id, usage *u)
{
    int64_t rid = fj_pgs_int(job, C_ID);
    fj_pgs_bind_int(rc->last, 1, rid);
    fj_pgs_bind_int(rc->last, 2, node_id);
    fj_pgs_bind_int(rc->last, 3, fj_pgs_int(job, C_LAST));
    int r = fj_pgs_step(rc->last);
    int64_t sample_time = r == FJ_PGS_ROW ? fj_pgs_int(rc->last, 0) : 0; /* the sample is (node, time) */
    fj_pgs_reset(rc->last);
    if (r != FJ_PGS_ROW && r != FJ_PGS_DONE)
        return fj_pgq_fail(x, r, "last job sample");
    if (r != FJ_PGS_ROW)
        return FJ_OK;
    fj_pgs *st = rc->usage;
    fj_pgs_bind_int(st, 1, sample_time);
    fj_pgs_bind_int(st, 7, node_id);
    fj_pgs_bind_int(st, 2, fj_pgs_int(job, C_JOB));
    fj_pgs_bind_int(st, 3, fj_pgs_int(job, C_EPOCH));
    fj_pgs_bind_int(st, 4, fj_pgs_int(job, C_PID));
    fj_pgs_bind_int(st, 5, fj_pgs_int(job, C_PPID));
    fj_pgs_bind_int(st, 6, fj_pgs_int(job, C_CMD));
    r = fj_pgs_step(st);
    if (r == FJ_PGS_ROW) {
        if (!fj_pgs_isnull(st, 0))
            u->cpu += fj_pgs_double(st, 0), u->cpu_set = true;
        if (!fj_pgs_isnull(st, 1))
            u->read += fj_pgs_double(st, 1), u->read_set = true;
        if (!fj_pgs_isnull(st, 2))
            u->written += fj_pgs_double(st, 2), u->written_set = true;
    }
    fj_pgs_reset(st);
    return r == FJ_PGS_ROW || r == FJ_PGS_DONE ? FJ_OK : fj_pgq_fail(x, r, "job usage");
}

static int64_t count_or_neg(fj_pgs *st, int c)
{
    return fj_pgs_isnull(st, c) ? -1 : fj_pgs_int(st, c);
}

/* The ClusterCockpit job a Slurm job (epoch 0) joins into *ref, its strings borrowed from rc->cc
 * until the caller resets it; *found false when none. Only Slurm jobs join: cc-backend's job ids
 * are Slurm's. */
static fj_status cc_job(fj_pgq *x, rowctx *rc, fj_pgs *job, fj_cc_job_ref *ref, bool *found)
{
    *found = false;
    if (fj_pgs_int(job, C_EPOCH) != 0 || fj_pgs_int(job, C_JOB) == 0)
        return FJ_OK;
    fj_pgs *st = rc->cc;
    fj_pgs_bind_int(st, 1, x->cluster_id);
    fj_pgs_bind_int(st, 2, fj_pgs_int(job, C_JOB));
    fj_pgs_bind_int(st, 3, fj_pgs_int(job, C_LAST));
    fj_pgs_bind_int(st, 4, fj_pgs_int(job, C_FIRST));
    int r = fj_pgs_step(st);
    if (r == FJ_PGS_ROW) {
        *ref = (fj_cc_job_ref){
            .id = fj_pgs_int(st, 0),
            .job_id = fj_pgs_int(job, C_JOB),
            .start_time = fj_pgs_int(st, 1),
            .stopped = !fj_pgs_isnull(st, 2),
            .stop_time = fj_pgs_int(st, 2),
            .state = fj_pgs_text(st, 3),
            .user = fj_pgs_text(st, 4),
            .project = fj_pgs_text(st, 5),
            .partition = fj_pgs_text(st, 6),
            .subcluster = fj_pgs_text(st, 7),
            .num_nodes = count_or_neg(st, 8),
            .num_hwthreads = count_or_neg(st, 9),
            .num_acc = count_or_neg(st, 10),
            .hosts = fj_pgs_text(st, 11),
        };
        *found = true;
    }
    return r == FJ_PGS_ROW || r == FJ_PGS_DONE ? FJ_OK : fj_pgq_fail(x, r, "cc job");
}

static fj_value num_or_null(bool set, double v)
{
    if (!set)
        return fj_pv_null();
    if (v >= -9.2e18 && v <= 9.2e18)
        return fj_pv_int((int64_t)llround(v));
    return fj_pv_real(v);
}

/* One job row: the values of t (fj_qt_jobs, or fj_qt_job: the same and the joined ClusterCockpit
 * job) from a select_jobs row and the per-row statements. */
static fj_status emit_job(fj_pgq *x, rowctx *rc, fj_pgs *st, const fj_qtable *t)
{
    int64_t id = fj_pgs_int(st, C_ID), job = fj_pgs_int(st, C_JOB);
    int64_t epoch = fj_pgs_int(st, C_EPOCH), ns = fj_pgs_int(st, C_NS);
    int64_t first = fj_pgs_int(st, C_FIRST), last = fj_pgs_int(st, C_LAST);
    double nsd = ns > 0 ? (double)ns : 1.0;

    /* hosts, by name */
    fj_pgq_strv hosts = {0};
    fj_pgs_bind_int(rc->hosts, 1, id);
    int r;
    fj_status rs = FJ_OK;
    usage u = {0};
    int64_t *host_ids = NULL;
    size_t n_host_ids = 0, cap = 0;
    while ((r = fj_pgs_step(rc->hosts)) == FJ_PGS_ROW) {
        int64_t nid = fj_pgs_int(rc->hosts, 0);
        const char *name = fj_pgq_node_name(x, nid);
        if (name && (rs = fj_pgq_strv_push(x, &hosts, name)) != FJ_OK)
            break;
        if (n_host_ids == cap) {
            size_t nc = cap ? cap * 2 : 16;
            int64_t *v = fj_arena_alloc(x->a, nc * sizeof *v);
            if (!v) {
                rs = fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
                break;
            }
            if (n_host_ids)
                memcpy(v, host_ids, n_host_ids * sizeof *v);
            host_ids = v;
            cap = nc;
        }
        host_ids[n_host_ids++] = nid;
    }
    fj_pgs_reset(rc->hosts);
    if (rs != FJ_OK)
        return rs;
    if (r != FJ_PGS_DONE)
        return fj_pgq_fail(x, r, "job hosts");
    if (hosts.n > 1)
        qsort(hosts.v, hosts.n, sizeof *hosts.v, cmp_str);
    for (size_t i = 0; i < n_host_ids; i++)
        if ((rs = add_usage(x, rc, st, host_ids[i], &u)) != FJ_OK)
            return rs;

    const char **cmds = NULL;
    size_t n_cmds = 0;
    if ((rs = fj_pgq_text_list(x, rc->cmds, id, &cmds, &n_cmds)) != FJ_OK)
        return rs;

    double gpu_avg = (double)fj_pgs_int(st, C_GPU_SUM) / 1000.0 / nsd;
    fj_value v[64];
    size_t n = 0;
    v[n++] = fj_pv_int(id);
    v[n++] = fj_pv_text(x->q->cluster);
    v[n++] = fj_pv_int(job);
    v[n++] = fj_pv_int(epoch);
    v[n++] = fj_pv_text(fj_pgq_node_name(x, fj_pgs_int(st, C_NODE)));
    v[n++] = job == 0 ? fj_pv_int(fj_pgs_int(st, C_PID)) : fj_pv_null();
    v[n++] = fj_pv_col(st, C_USER, FJ_VT_TEXT);
    v[n++] = fj_pv_time(first);
    v[n++] = fj_pv_time(last);
    v[n++] = fj_pv_int(last - first);
    v[n++] = fj_pv_bool(fj_pgs_int(st, C_RUNNING) != 0);
    v[n++] = fj_pv_list(hosts.v, hosts.n);
    v[n++] = fj_pv_list(cmds, n_cmds);
    v[n++] = fj_pv_int(ns);
    v[n++] = fj_pv_int(fj_pgs_int(st, C_NPROC));
    v[n++] = fj_pv_real((double)fj_pgs_int(st, C_CPU_SUM) / 1000.0 / nsd);
    v[n++] = fj_pv_real((double)fj_pgs_int(st, C_CPU_PEAK) / 1000.0);
    v[n++] = fj_pv_int(ns > 0 ? fj_pgs_int(st, C_MEM_SUM) / ns : 0);
    v[n++] = fj_pv_int(fj_pgs_int(st, C_MEM_PEAK));
    v[n++] = fj_pv_real(gpu_avg);
    v[n++] = fj_pv_real((double)fj_pgs_int(st, C_GPU_PEAK) / 1000.0);
    v[n++] = fj_pv_int(ns > 0 ? fj_pgs_int(st, C_GM_SUM) / ns : 0);
    v[n++] = fj_pv_int(fj_pgs_int(st, C_GM_PEAK));
    v[n++] = num_or_null(u.cpu_set, u.cpu);
    v[n++] = fj_pv_int((int64_t)llround(gpu_avg / 100.0 * (double)(last - first) * (double)n_host_ids));
    v[n++] = num_or_null(u.read_set, u.read);
    v[n++] = num_or_null(u.written_set, u.written);
    for (size_t i = 0; i < N_SLURM; i++) {
        const char *c = slurm_cols[i];
        size_t len = strlen(c);
        fj_vtype ct = FJ_VT_INT;
        if (len > 5 && strcmp(c + len - 5, "_time") == 0)
            ct = FJ_VT_TIME;
        else if (strcmp(c, "job_state") == 0 || strcmp(c, "partition") == 0 || strcmp(c, "account") == 0 ||
                 strcmp(c, "job_name") == 0 || strstr(c, "resources"))
            ct = FJ_VT_TEXT;
        v[n++] = fj_pv_col(st, C_SLURM0 + (int)i, ct);
    }
    fj_buf cc;
    fj_buf_init(&cc, (size_t)1 << 24);
    if (t == &fj_qt_job) {
        fj_cc_job_ref ref;
        bool found;
        if ((rs = cc_job(x, rc, st, &ref, &found)) != FJ_OK)
            goto out;
        if (found && (rs = fj_cc_job_ref_json(&cc, &ref)) != FJ_OK) {
            rs = fj_err_set(x->err, rs, NULL, "the ClusterCockpit job is too large");
            goto out;
        }
        v[n++] = found ? fj_pv_json(cc.data) : fj_pv_null();
    }
    if (n != t->n_cols)
        rs = fj_err_set(x->err, FJ_EINTERNAL, NULL, "job row has %zu values for %zu columns", n, t->n_cols);
    else
        rs = x->k->row(x->k, v);
out:
    fj_pgs_reset(rc->cc);
    fj_buf_free(&cc);
    return rs;
}

/* The WHERE conditions of the job list (after "WHERE j.cluster_id = ?"). */
static void job_filters(fj_pgq *x, fj_pgb *b)
{
    const fj_query *q = x->q;
    if (q->from) {
        fj_pgb_put(b, " AND j.last_seen >= ");
        fj_pgb_int(b, q->from);
    }
    if (q->to) {
        fj_pgb_put(b, " AND j.first_seen <= ");
        fj_pgb_int(b, q->to);
    }
    if (q->users.n) {
        fj_pgb_put(b, " AND j.user_id IN (SELECT id FROM strings WHERE s IN ");
        fj_pgb_text_list(b, &q->users);
        fj_pgb_put(b, ")");
    }
    if (q->jobs.n) {
        fj_pgb_put(b, " AND j.job IN ");
        fj_pgb_int_list(b, q->jobs.v, q->jobs.n);
    }
    if (x->nodes.filtered) {
        fj_pgb_put(b, " AND EXISTS (SELECT 1 FROM job_hosts h WHERE h.rjob_id = j.id AND h.node_id IN ");
        fj_pgb_node_list(b, x);
        fj_pgb_put(b, ")");
    }
    if (q->commands.n) {
        fj_pgb_put(b, " AND EXISTS (SELECT 1 FROM job_cmds c JOIN strings x ON x.id = c.cmd_id"
                      " WHERE c.rjob_id = j.id AND (");
        for (size_t i = 0; i < q->commands.n; i++) {
            fj_pgb_put(b, i ? " OR x.s ~ " : "x.s ~ ");
            fj_pgb_glob(b, x, q->commands.v[i]);
        }
        fj_pgb_put(b, "))");
    }
    const struct {
        const fj_strlist *l;
        const char *col;
    } sl[] = {{&q->states, "sc.job_state"}, {&q->partitions, "sc.partition"}, {&q->accounts, "sc.account"}};
    for (size_t i = 0; i < sizeof sl / sizeof sl[0]; i++)
        if (sl[i].l->n) {
            fj_pgb_printf(b, " AND %s IN ", sl[i].col);
            fj_pgb_text_list(b, sl[i].l);
        }
    if (q->gpu == FJ_TRI_YES)
        fj_pgb_put(b, " AND (j.gpu_peak_m > 0 OR j.gpumem_peak_kb > 0)");
    else if (q->gpu == FJ_TRI_NO)
        fj_pgb_put(b, " AND j.gpu_peak_m = 0 AND j.gpumem_peak_kb = 0");
    if (q->running != FJ_TRI_ANY)
        fj_pgb_printf(b, " AND %s IS %s", RUNNING_EXPR, q->running == FJ_TRI_YES ? "TRUE" : "FALSE");
    if (q->min_runtime_s > 0) {
        fj_pgb_put(b, " AND j.last_seen - j.first_seen >= ");
        fj_pgb_int(b, q->min_runtime_s);
    }
    for (int m = 0; m < FJ_JM__COUNT; m++) {
        if (q->has_min[m]) {
            fj_pgb_printf(b, " AND %s >= ", metric_sql[m]);
            fj_pgb_real(b, q->min[m]);
        }
        if (q->has_max[m]) {
            fj_pgb_printf(b, " AND %s <= ", metric_sql[m]);
            fj_pgb_real(b, q->max[m]);
        }
    }
}

fj_status fj_pg_q_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    const char *key = sort_sql(q->sort);
    if (!key)
        return fj_pgq_end(&x, fj_err_set(err, FJ_EINVAL, "sort", "unknown sort key"));
    fj_pgb b;
    fj_pgb_init(&b);
    fj_pgs *st = NULL;
    rowctx rc = {0};
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = rowctx_prepare(&x, &rc)) != FJ_OK)
        goto out;
    select_jobs(&b, key);
    fj_pgb_put(&b, " WHERE j.cluster_id = ");
    fj_pgb_int(&b, x.cluster_id);
    job_filters(&x, &b);
    const char *dir = q->desc ? "DESC" : "ASC";
    if (q->after.set) {
        const char *op = q->desc ? "<" : ">";
        fj_pgb_printf(&b, " AND (%s %s ", key, op);
        fj_pgb_real(&b, q->after.v);
        fj_pgb_printf(&b, " OR (%s = ", key);
        fj_pgb_real(&b, q->after.v);
        fj_pgb_printf(&b, " AND j.id %s ", op);
        fj_pgb_int(&b, q->after.id);
        fj_pgb_put(&b, "))");
    }
    fj_pgb_printf(&b, " ORDER BY %s %s, j.id %s", key, dir, dir);
    if (q->limit) {
        fj_pgb_put(&b, " LIMIT ");
        fj_pgb_int(&b, (int64_t)q->limit + 1);
    }
    if ((rs = fj_pgb_prepare(&x, &b, &st)) != FJ_OK)
        goto out;
    if ((rs = k->table(k, &fj_qt_jobs)) != FJ_OK)
        goto out;
    size_t n = 0;
    int r;
    fj_qpos last = {0};
    while ((r = fj_pgs_step(st)) == FJ_PGS_ROW) {
        if (q->limit && n == q->limit) {
            q->next = last;
            break;
        }
        if ((rs = emit_job(&x, &rc, st, &fj_qt_jobs)) != FJ_OK)
            goto out;
        last.set = true;
        last.v = fj_pgs_double(st, C_SORTKEY);
        last.id = fj_pgs_int(st, C_ID);
        n++;
    }
    if (r != FJ_PGS_ROW && r != FJ_PGS_DONE)
        rs = fj_pgq_fail(&x, r, "list jobs");
out:
    fj_pgs_finalize(st);
    rowctx_free(&rc);
    fj_pgb_free(&b);
    return fj_pgq_end(&x, rs);
}

/* --- one job ----------------------------------------------------------------------------- */

fj_status fj_pg_q_job(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgb b;
    fj_pgb_init(&b);
    fj_pgs *st = NULL, *hs = NULL;
    rowctx rc = {0};
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = rowctx_prepare(&x, &rc)) != FJ_OK || (rs = rowctx_prepare_cc(&x, &rc)) != FJ_OK)
        goto out;
    select_jobs(&b, "j.first_seen");
    fj_pgb_put(&b, " WHERE j.cluster_id = ");
    fj_pgb_int(&b, x.cluster_id);
    fj_pgb_put(&b, " AND j.id = ");
    fj_pgb_int(&b, q->id);
    if ((rs = fj_pgb_prepare(&x, &b, &st)) != FJ_OK)
        goto out;
    int r = fj_pgs_step(st);
    if (r == FJ_PGS_DONE) {
        rs = fj_err_set(err, FJ_ENOTFOUND, "id", "no job with id %lld in cluster '%s'", (long long)q->id,
                        q->cluster);
        goto out;
    }
    if (r != FJ_PGS_ROW) {
        rs = fj_pgq_fail(&x, r, "job");
        goto out;
    }
    if ((rs = k->table(k, &fj_qt_job)) != FJ_OK || (rs = emit_job(&x, &rc, st, &fj_qt_job)) != FJ_OK)
        goto out;

    if ((rs = fj_pgq_prepare(&x,
                             "SELECT js.node_id, count(*), min(js.time), max(js.time), max(js.nproc),"
                             " sum(js.cpu_m), max(js.cpu_m), sum(js.mem_kb), max(js.mem_kb), sum(js.gpu_m),"
                             " max(js.gpu_m), sum(js.gpumem_kb), max(js.gpumem_kb)"
                             " FROM job_samples js WHERE js.rjob_id = $1 GROUP BY js.node_id",
                             &hs)) != FJ_OK)
        goto out;
    fj_pgs_bind_int(hs, 1, q->id);
    if ((rs = k->table(k, &fj_qt_job_hosts)) != FJ_OK)
        goto out;
    /* rows sorted by host name: collect, then sort */
    typedef struct hrow {
        const char *name;
        int64_t v[12];
    } hrow;
    hrow *rows = NULL;
    size_t n = 0, cap = 0;
    while ((r = fj_pgs_step(hs)) == FJ_PGS_ROW) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            hrow *nr = fj_arena_alloc(x.a, nc * sizeof *nr);
            if (!nr) {
                rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                goto out;
            }
            if (n)
                memcpy(nr, rows, n * sizeof *nr);
            rows = nr;
            cap = nc;
        }
        const char *name = fj_pgq_node_name(&x, fj_pgs_int(hs, 0));
        rows[n].name = name ? name : "";
        for (int i = 0; i < 12; i++)
            rows[n].v[i] = fj_pgs_int(hs, i + 1);
        n++;
    }
    if (r != FJ_PGS_DONE) {
        rs = fj_pgq_fail(&x, r, "job hosts");
        goto out;
    }
    if (n > 1)
        qsort(rows, n, sizeof *rows, cmp_str); /* name is the first member */
    for (size_t i = 0; i < n; i++) {
        const int64_t *h = rows[i].v;
        double ns = h[0] > 0 ? (double)h[0] : 1;
        fj_value v[13] = {
            fj_pv_text(rows[i].name),
            fj_pv_int(h[0]),
            fj_pv_time(h[1]),
            fj_pv_time(h[2]),
            fj_pv_int(h[3]),
            fj_pv_real((double)h[4] / 1000.0 / ns),
            fj_pv_real((double)h[5] / 1000.0),
            fj_pv_int(h[0] > 0 ? h[6] / h[0] : 0),
            fj_pv_int(h[7]),
            fj_pv_real((double)h[8] / 1000.0 / ns),
            fj_pv_real((double)h[9] / 1000.0),
            fj_pv_int(h[0] > 0 ? h[10] / h[0] : 0),
            fj_pv_int(h[11]),
        };
        if ((rs = k->row(k, v)) != FJ_OK)
            goto out;
    }
out:
    fj_pgs_finalize(st);
    fj_pgs_finalize(hs);
    rowctx_free(&rc);
    fj_pgb_free(&b);
    return fj_pgq_end(&x, rs);
}

/* --- profile ------------------------------------------------------------------------------- */

/* Per series and bucket. */
typedef struct pbucket {
    int64_t samples, procs_max;
    fj_qm_acc cpu, mem, gpu, gpumem;
} pbucket;

typedef struct pseries {
    int64_t node_id, pid, ppid, cmd_id;
    const char *host, *cmd;
    pbucket *b;
} pseries;

typedef struct pstate {
    fj_pgq *x;
    fj_qm_grid g;
    bool by_host;
    pseries *series;
    size_t n, cap;
    size_t *slots; /* open addressing: 1 + index, 0 empty */
    size_t n_slots;
    /* the process being read (several rows when it has several GPUs) */
    int64_t cur_proc, cur_sample, cur_node, cur_time;
    int64_t cur_pid, cur_ppid, cur_cmd, cur_nproc;
    double cur_cpu, cur_mem, cur_gpu, cur_gpumem;
    /* by_host: the host's sums in the current sample */
    int64_t hs_sample, hs_node, hs_time, hs_nproc;
    double hs_cpu, hs_mem, hs_gpu, hs_gpumem;
    bool hs_open;
} pstate;

static uint64_t skey_hash(int64_t a, int64_t b, int64_t c, int64_t d)
{
    uint64_t h = 1469598103934665603ull;
    int64_t v[4] = {a, b, c, d};
    for (int i = 0; i < 4; i++) {
        h ^= (uint64_t)v[i];
        h *= 1099511628211ull;
        h ^= h >> 31;
    }
    return h;
}

static fj_status grow_slots(pstate *p)
{
    size_t ns = p->n_slots ? p->n_slots * 2 : 256;
    size_t *slots = fj_arena_calloc(p->x->a, ns, sizeof *slots);
    if (!slots)
        return fj_err_set(p->x->err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < p->n; i++) {
        pseries *s = &p->series[i];
        size_t j = (size_t)skey_hash(s->node_id, s->pid, s->ppid, s->cmd_id) & (ns - 1);
        while (slots[j])
            j = (j + 1) & (ns - 1);
        slots[j] = i + 1;
    }
    p->slots = slots;
    p->n_slots = ns;
    return FJ_OK;
}

static fj_status series_of(pstate *p, int64_t node, int64_t pid, int64_t ppid, int64_t cmd, pseries **out)
{
    if ((p->n + 1) * 2 > p->n_slots) {
        fj_status rs = grow_slots(p);
        if (rs != FJ_OK)
            return rs;
    }
    size_t j = (size_t)skey_hash(node, pid, ppid, cmd) & (p->n_slots - 1);
    while (p->slots[j]) {
        pseries *s = &p->series[p->slots[j] - 1];
        if (s->node_id == node && s->pid == pid && s->ppid == ppid && s->cmd_id == cmd) {
            *out = s;
            return FJ_OK;
        }
        j = (j + 1) & (p->n_slots - 1);
    }
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 64;
        pseries *v = fj_arena_alloc(p->x->a, nc * sizeof *v);
        if (!v)
            return fj_err_set(p->x->err, FJ_ENOMEM, NULL, "out of memory");
        if (p->n)
            memcpy(v, p->series, p->n * sizeof *v);
        p->series = v;
        p->cap = nc;
    }
    pseries *s = &p->series[p->n];
    memset(s, 0, sizeof *s);
    s->node_id = node, s->pid = pid, s->ppid = ppid, s->cmd_id = cmd;
    s->b = fj_arena_calloc(p->x->a, p->g.n, sizeof *s->b);
    if (!s->b)
        return fj_err_set(p->x->err, FJ_ENOMEM, NULL, "out of memory");
    p->slots[j] = ++p->n;
    *out = s;
    return FJ_OK;
}

static fj_status add_point(pstate *p, int64_t node, int64_t pid, int64_t ppid, int64_t cmd, int64_t t, int64_t nproc,
                           double cpu, double mem, double gpu, double gpumem)
{
    long bi = fj_qm_bucket(&p->g, t);
    if (bi < 0)
        return FJ_OK;
    pseries *s = NULL;
    fj_status rs = series_of(p, node, pid, ppid, cmd, &s);
    if (rs != FJ_OK)
        return rs;
    pbucket *b = &s->b[bi];
    b->samples++;
    if (nproc > b->procs_max)
        b->procs_max = nproc;
    fj_qm_add(&b->cpu, cpu);
    fj_qm_add(&b->mem, mem);
    fj_qm_add(&b->gpu, gpu);
    fj_qm_add(&b->gpumem, gpumem);
    return FJ_OK;
}

static fj_status flush_host(pstate *p)
{
    if (!p->hs_open)
        return FJ_OK;
    p->hs_open = false;
    return add_point(p, p->hs_node, -1, -1, -1, p->hs_time, p->hs_nproc, p->hs_cpu, p->hs_mem, p->hs_gpu,
                     p->hs_gpumem);
}

static fj_status flush_proc(pstate *p)
{
    if (!p->cur_proc)
        return FJ_OK;
    p->cur_proc = 0;
    if (!p->by_host)
        return add_point(p, p->cur_node, p->cur_pid, p->cur_ppid, p->cur_cmd, p->cur_time, p->cur_nproc,
                         p->cur_cpu, p->cur_mem, p->cur_gpu, p->cur_gpumem);
    if (p->hs_open && p->hs_sample != p->cur_sample) {
        fj_status rs = flush_host(p);
        if (rs != FJ_OK)
            return rs;
    }
    if (!p->hs_open) {
        p->hs_open = true;
        p->hs_sample = p->cur_sample, p->hs_node = p->cur_node, p->hs_time = p->cur_time;
        p->hs_nproc = 0, p->hs_cpu = p->hs_mem = p->hs_gpu = p->hs_gpumem = 0;
    }
    p->hs_nproc += p->cur_nproc;
    p->hs_cpu += p->cur_cpu;
    p->hs_mem += p->cur_mem;
    p->hs_gpu += p->cur_gpu;
    p->hs_gpumem += p->cur_gpumem;
    return FJ_OK;
}

static int cmp_series(const void *a, const void *b)
{
    const pseries *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    if (c)
        return c;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->ppid != y->ppid)
        return x->ppid < y->ppid ? -1 : 1;
    c = strcmp(x->cmd ? x->cmd : "", y->cmd ? y->cmd : "");
    return c;
}

static fj_value avg_real(const fj_qm_acc *a)
{
    double v;
    return fj_qm_avg(a, &v) ? fj_pv_real(v) : fj_pv_null();
}

static fj_value avg_int(const fj_qm_acc *a)
{
    double v;
    return fj_qm_avg(a, &v) ? fj_pv_int((int64_t)llround(v)) : fj_pv_null();
}

fj_status fj_pg_q_profile(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *js = NULL, *st = NULL, *cs = NULL;
    pstate p;
    memset(&p, 0, sizeof p);
    p.x = &x;
    p.by_host = q->by_host;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK)
        goto out;
    if ((rs = fj_pgq_prepare(&x,
                             "SELECT job, epoch, pid, ppid, cmd_id, first_seen, last_seen,"
                             " gpu_peak_m > 0 OR gpumem_peak_kb > 0 FROM jobs WHERE id = $1 AND cluster_id = $2",
                             &js)) != FJ_OK)
        goto out;
    fj_pgs_bind_int(js, 1, q->id);
    fj_pgs_bind_int(js, 2, x.cluster_id);
    int r = fj_pgs_step(js);
    if (r == FJ_PGS_DONE) {
        rs = fj_err_set(err, FJ_ENOTFOUND, "id", "no job with id %lld in cluster '%s'", (long long)q->id,
                        q->cluster);
        goto out;
    }
    if (r != FJ_PGS_ROW) {
        rs = fj_pgq_fail(&x, r, "job");
        goto out;
    }
    int64_t job = fj_pgs_int(js, 0), epoch = fj_pgs_int(js, 1);
    int64_t pid = fj_pgs_int(js, 2), ppid = fj_pgs_int(js, 3), cmd = fj_pgs_int(js, 4);
    fj_time from = fj_pgs_int(js, 5), to = fj_pgs_int(js, 6);
    bool gpu = fj_pgs_int(js, 7) != 0;
    if (q->from > from)
        from = q->from;
    if (q->to && q->to < to)
        to = q->to;
    if ((rs = k->table(k, &fj_qt_profile)) != FJ_OK)
        goto out;
    if (from > to)
        goto out; /* the window misses the job: no rows */
    int64_t step = q->bucket_s > 0 ? q->bucket_s : fj_qm_default_bucket(from, to);
    q->from = from; /* what was used, for the answer */
    q->to = to;
    q->bucket_s = step;
    fj_status gs = fj_qm_grid_make(from, to, step, FJ_QM_MAX_BUCKETS, &p.g);
    if (gs != FJ_OK) {
        rs = fj_err_set(err, FJ_EINVAL, "bucket", "more than %d buckets: choose a larger bucket",
                        FJ_QM_MAX_BUCKETS);
        goto out;
    }

    /* One pass over the job's node-samples in the window and their process rows (and GPU rows
     * when the job used a GPU). A sample is (node, time) and a process (node, time, seq) here: the
     * dense ranks number them as SQLite's row ids would. Rows of one process are adjacent. */
    char sql[1400];
    snprintf(sql, sizeof sql,
             "SELECT p.node_id, p.time, dense_rank() OVER (ORDER BY p.node_id, p.time),"
             " dense_rank() OVER (ORDER BY p.node_id, p.time, p.seq), p.pid, p.ppid, p.cmd_id, p.resident_kb,"
             " p.cpu_util_m, p.rolledup%s"
             " FROM job_samples js"
             " JOIN sample_procs p ON p.node_id = js.node_id AND p.time = js.time AND p.job = $2 AND p.epoch = $3"
             "%s"
             " WHERE js.rjob_id = $1 AND js.time >= $7 AND js.time <= $8"
             " AND ($2 <> 0 OR (p.pid = $4 AND ($6 = 0 OR (p.ppid = $5 AND p.cmd_id = $6))))"
             " ORDER BY p.node_id, p.time, p.seq",
             gpu ? ", g.gpu_util_m, g.gpu_memory_kb" : "",
             gpu ? " LEFT JOIN sample_proc_gpus g ON g.node_id = p.node_id AND g.time = p.time AND g.job = p.job"
                   " AND g.epoch = p.epoch AND g.seq = p.seq"
                 : "");
    if ((rs = fj_pgq_prepare(&x, sql, &st)) != FJ_OK)
        goto out;
    fj_pgs_bind_int(st, 1, q->id);
    fj_pgs_bind_int(st, 2, job);
    fj_pgs_bind_int(st, 3, epoch);
    fj_pgs_bind_int(st, 4, pid);
    fj_pgs_bind_int(st, 5, ppid);
    fj_pgs_bind_int(st, 6, cmd);
    fj_pgs_bind_int(st, 7, from);
    fj_pgs_bind_int(st, 8, to);
    while ((r = fj_pgs_step(st)) == FJ_PGS_ROW) {
        int64_t node = fj_pgs_int(st, 0);
        long ni = fj_pgq_node_index(&x, node);
        if (ni < 0 || !x.nodes.want[ni])
            continue;
        int64_t proc = fj_pgs_int(st, 3);
        if (proc != p.cur_proc) {
            if ((rs = flush_proc(&p)) != FJ_OK)
                goto out;
            p.cur_proc = proc;
            p.cur_node = node;
            p.cur_time = fj_pgs_int(st, 1);
            p.cur_sample = fj_pgs_int(st, 2);
            p.cur_pid = fj_pgs_int(st, 4);
            p.cur_ppid = fj_pgs_int(st, 5);
            p.cur_cmd = fj_pgs_int(st, 6);
            p.cur_mem = fj_pgs_double(st, 7);
            p.cur_cpu = fj_pgs_double(st, 8) / 1000.0;
            p.cur_nproc = fj_pgs_int(st, 9) + 1;
            p.cur_gpu = p.cur_gpumem = 0;
        }
        if (gpu) {
            p.cur_gpu += fj_pgs_double(st, 10) / 1000.0;
            p.cur_gpumem += fj_pgs_double(st, 11);
        }
    }
    if (r != FJ_PGS_DONE) {
        rs = fj_pgq_fail(&x, r, "profile");
        goto out;
    }
    if ((rs = flush_proc(&p)) != FJ_OK || (rs = flush_host(&p)) != FJ_OK)
        goto out;

    /* names, then series in key order */
    if ((rs = fj_pgq_prepare(&x, "SELECT s FROM strings WHERE id = $1", &cs)) != FJ_OK)
        goto out;
    for (size_t i = 0; i < p.n; i++) {
        pseries *ps = &p.series[i];
        const char *h = fj_pgq_node_name(&x, ps->node_id);
        ps->host = h ? h : "";
        ps->cmd = NULL;
        if (!p.by_host) {
            fj_pgs_bind_int(cs, 1, ps->cmd_id);
            if (fj_pgs_step(cs) == FJ_PGS_ROW)
                ps->cmd = fj_arena_strdup(x.a, fj_pgs_text(cs, 0));
            fj_pgs_reset(cs);
        }
    }
    if (p.n > 1)
        qsort(p.series, p.n, sizeof *p.series, cmp_series);
    for (size_t i = 0; i < p.n; i++) {
        const pseries *ps = &p.series[i];
        for (size_t bi = 0; bi < p.g.n; bi++) {
            const pbucket *b = &ps->b[bi];
            if (!b->samples)
                continue;
            fj_value v[15] = {
                fj_pv_text(ps->host),
                p.by_host ? fj_pv_null() : fj_pv_int(ps->pid),
                p.by_host ? fj_pv_null() : fj_pv_int(ps->ppid),
                p.by_host ? fj_pv_null() : fj_pv_text(ps->cmd ? ps->cmd : ""),
                fj_pv_time(p.g.from + (int64_t)bi * p.g.step),
                fj_pv_int(b->samples),
                fj_pv_int(b->procs_max),
                avg_real(&b->cpu),
                fj_pv_real(b->cpu.max),
                avg_int(&b->mem),
                fj_pv_int((int64_t)llround(b->mem.max)),
                avg_real(&b->gpu),
                fj_pv_real(b->gpu.max),
                avg_int(&b->gpumem),
                fj_pv_int((int64_t)llround(b->gpumem.max)),
            };
            if ((rs = k->row(k, v)) != FJ_OK)
                goto out;
        }
    }
out:
    fj_pgs_finalize(js);
    fj_pgs_finalize(st);
    fj_pgs_finalize(cs);
    return fj_pgq_end(&x, rs);
}
