/* storage/query/jobs.c — the job queries every backend shares (storage/query/jobs.h): the job list's filters and
 * paging, a job row's values (hosts, commands, cumulative CPU time and I/O: a few index seeks per
 * row of the page), one job's per-host figures, and the profile's series in time buckets. */
#include "storage/query/jobs.h"

#include "storage/ts/cc_json.h"
#include "storage/core/jobcpu.h"
#include "storage/core/store_query.h"
#include "storage/query/qmath.h"
#include "storage/query/slurm.h"
#include "storage/query/value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The columns of a select_jobs row. */
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

/* --- the job list's SQL ---------------------------------------------------------------------- */

/* Whether a job has not finished (j: jobs, sc: its slurm_jobs_current row or NULLs): the Slurm
 * state when known, else "no host has a sample later than the job's last". Never NULL. */
#define RUNNING_SQL                                                                                 \
    "(CASE WHEN sc.job_state IS NOT NULL THEN sc.job_state IN " FJ_QSLURM_RUNNING_STATES           \
    " ELSE NOT EXISTS (SELECT 1 FROM job_hosts h {cross} samples s ON s.node_id = h.node_id"        \
    " AND s.time > j.last_seen WHERE h.rjob_id = j.id) END)"

/* The hosts of job j. */
#define HOSTS_SQL "(SELECT count(*) FROM job_hosts h WHERE h.rjob_id = j.id)"

/* The efficiencies: mean use x hosts over the Slurm allocation (sc: the job's current Slurm record,
 * NULL without one), memory's peak over the request per node; NULL when unknown or 0. */
#define CPU_EFF_SQL "(j.cpu_sum_m / 100000.0 / {greatest}(j.n_samples, 1) * " HOSTS_SQL " / nullif(sc.requested_cpus, 0)){real}"
#define MEM_EFF_SQL "(j.mem_peak_kb * 1.0 / nullif(sc.requested_memory_per_node_kb, 0)){real}"
#define GPU_EFF_SQL "(j.gpu_sum_m / 100000.0 / {greatest}(j.n_samples, 1) * " HOSTS_SQL " / nullif(sc.alloc_gpus, 0)){real}"

/* The SQL of each metric of j, a double in the units of its column. */
static const char *const metric_sql[FJ_JM__COUNT] = {
    "(j.cpu_sum_m / 1000.0 / {greatest}(j.n_samples, 1)){real}",
    "(j.cpu_peak_m / 1000.0){real}",
    "(j.mem_sum_kb * 1.0 / {greatest}(j.n_samples, 1)){real}",
    "j.mem_peak_kb",
    "(j.gpu_sum_m / 1000.0 / {greatest}(j.n_samples, 1)){real}",
    "(j.gpu_peak_m / 1000.0){real}",
    "(j.gpumem_sum_kb * 1.0 / {greatest}(j.n_samples, 1)){real}",
    "j.gpumem_peak_kb",
    CPU_EFF_SQL,
    MEM_EFF_SQL,
    GPU_EFF_SQL,
};
/* The efficiencies' columns follow the Slurm columns, then the sort key. */
#define C_EFF0 (C_SLURM0 + (int)N_SLURM)
#define C_SORTKEY (C_EFF0 + 3)
/* The efficiencies as sort keys: NULL sorts as -1, below every value, so the cursor has a value. */
static const char *const eff_key[3] = {"coalesce(" CPU_EFF_SQL ", -1)", "coalesce(" MEM_EFF_SQL ", -1)",
                                       "coalesce(" GPU_EFF_SQL ", -1)"};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct usage {
    bool cpu_set, read_set, written_set;
    double cpu, read, written;
} usage;

/* What retention kept of a host's last sample before its process rows went (job_hosts columns
 * usage_kept, cpu_time_s, read_kb, written_kb; storage/core/retention.h). */
typedef struct kept_usage {
    bool kept, cpu_set, read_set, written_set;
    int64_t cpu, read, written;
} kept_usage;

static kept_usage kept_of(const fj_qrows *hosts)
{
    return (kept_usage){
        .kept = fj_qr_i64(hosts, 1) != 0,
        .cpu_set = !fj_qr_null(hosts, 2), .cpu = fj_qr_i64(hosts, 2),
        .read_set = !fj_qr_null(hosts, 3), .read = fj_qr_i64(hosts, 3),
        .written_set = !fj_qr_null(hosts, 4), .written = fj_qr_i64(hosts, 4),
    };
}

/* Adds the cumulative counters of the job's processes in its last sample on one host; once that
 * sample's rows are gone, what retention kept of them. */
static fj_status add_usage(const fj_qenv *e, const fj_qjob_stmts *rc, const fj_qrows *job, int64_t node_id,
                           const kept_usage *k, usage *u)
{
    int64_t rid = fj_qr_i64(job, C_ID);
    fj_qr_bind(&rc->last, 1, rid);
    fj_qr_bind(&rc->last, 2, node_id);
    fj_qr_bind(&rc->last, 3, fj_qr_i64(job, C_LAST));
    bool row = false;
    fj_status rs = fj_qr_step(&rc->last, "last job sample", &row);
    int64_t sample = rs == FJ_OK && row ? fj_qr_i64(&rc->last, 0) : 0;
    fj_qr_reset(&rc->last);
    if (rs == FJ_OK && !row && k->kept) {
        if (k->cpu_set)
            u->cpu += (double)k->cpu, u->cpu_set = true;
        if (k->read_set)
            u->read += (double)k->read, u->read_set = true;
        if (k->written_set)
            u->written += (double)k->written, u->written_set = true;
    }
    if (rs != FJ_OK || !row)
        return rs;
    const fj_qrows *st = &rc->usage;
    fj_qr_bind(st, 1, sample);
    fj_qr_bind(st, 7, node_id);
    fj_qr_bind(st, 2, fj_qr_i64(job, C_JOB));
    fj_qr_bind(st, 3, fj_qr_i64(job, C_EPOCH));
    fj_qr_bind(st, 4, fj_qr_i64(job, C_PID));
    fj_qr_bind(st, 5, fj_qr_i64(job, C_PPID));
    fj_qr_bind(st, 6, fj_qr_i64(job, C_CMD));
    if ((rs = fj_qr_step(st, "job usage", &row)) == FJ_OK && row) {
        if (!fj_qr_null(st, 0))
            u->cpu += fj_qr_dbl(st, 0), u->cpu_set = true;
        if (!fj_qr_null(st, 1))
            u->read += fj_qr_dbl(st, 1), u->read_set = true;
        if (!fj_qr_null(st, 2))
            u->written += fj_qr_dbl(st, 2), u->written_set = true;
    }
    fj_qr_reset(st);
    return rs;
}

static int64_t count_or_neg(const fj_qrows *st, int c)
{
    return fj_qr_null(st, c) ? -1 : fj_qr_i64(st, c);
}

/* The ClusterCockpit job a Slurm job (epoch 0) joins into *ref, its strings borrowed from &rc->cc
 * until the caller resets it; *found false when none. Only Slurm jobs join: cc-backend's job ids
 * are Slurm's. */
static fj_status cc_job(const fj_qenv *e, const fj_qjob_stmts *rc, const fj_qrows *job, fj_cc_job_ref *ref, bool *found)
{
    *found = false;
    if (fj_qr_i64(job, C_EPOCH) != 0 || fj_qr_i64(job, C_JOB) == 0)
        return FJ_OK;
    const fj_qrows *st = &rc->cc;
    fj_qr_bind(st, 1, e->cluster_id);
    fj_qr_bind(st, 2, fj_qr_i64(job, C_JOB));
    fj_qr_bind(st, 3, fj_qr_i64(job, C_LAST));
    fj_qr_bind(st, 4, fj_qr_i64(job, C_FIRST));
    bool row = false;
    fj_status rs = fj_qr_step(st, "cc job", &row);
    if (rs == FJ_OK && row) {
        *ref = (fj_cc_job_ref){
            .id = fj_qr_i64(st, 0),
            .job_id = fj_qr_i64(job, C_JOB),
            .start_time = fj_qr_i64(st, 1),
            .stopped = !fj_qr_null(st, 2),
            .stop_time = fj_qr_i64(st, 2),
            .state = fj_qr_text(st, 3),
            .user = fj_qr_text(st, 4),
            .project = fj_qr_text(st, 5),
            .partition = fj_qr_text(st, 6),
            .subcluster = fj_qr_text(st, 7),
            .num_nodes = count_or_neg(st, 8),
            .num_hwthreads = count_or_neg(st, 9),
            .num_acc = count_or_neg(st, 10),
            .hosts = fj_qr_text(st, 11),
        };
        *found = true;
    }
    return rs;
}

static fj_value num_or_null(bool set, double v)
{
    if (!set)
        return fj_value_null();
    if (v >= -9.2e18 && v <= 9.2e18)
        return fj_value_int((int64_t)llround(v));
    return fj_value_real(v);
}

/* The energy columns of a job row (docs/energy.md) into v[*n...]. */
static fj_status emit_energy(const fj_qenv *e, const fj_qjob_stmts *rc, const fj_qrows *st, const int64_t *hosts,
                             size_t n_hosts, fj_value *v, size_t *n)
{
    const int c_alloc = C_SLURM0 + 11; /* allocated_resources */
    fj_qenergy_job j = {
        .job = fj_qr_i64(st, C_JOB),
        .epoch = fj_qr_i64(st, C_EPOCH),
        .first = fj_qr_i64(st, C_FIRST),
        .last = fj_qr_i64(st, C_LAST),
        .hosts = hosts,
        .n_hosts = n_hosts,
        .allocated_resources = fj_qr_null(st, c_alloc) ? NULL : fj_qr_text(st, c_alloc),
        .used_gpu = fj_qr_i64(st, C_GPU_PEAK) > 0 || fj_qr_i64(st, C_GM_PEAK) > 0,
    };
    fj_job_energy en;
    if (e->q->no_energy)
        j.job = 0; /* asked not to: read nothing, every energy column null */
    fj_status rs = fj_qenergy_job_read(e, &rc->energy, &j, INT64_MIN, INT64_MAX, &en);
    if (rs != FJ_OK)
        return rs;
    double kwh = 0;
    bool any = fj_job_energy_total(&en, &kwh);
    v[(*n)++] = any ? fj_value_real(kwh) : fj_value_null();
    for (int p = 0; p < FJ_EP__COUNT; p++)
        v[(*n)++] = en.set[p] ? fj_value_real(fj_en_kwh(en.joules[p])) : fj_value_null();
    static const char *const part_names[FJ_EP__COUNT] = {"gpu", "cpu", "mem", "node"};
    char how[512];
    size_t len = 0;
    bool told = false;
    for (int p = 0; p < FJ_EP__COUNT; p++) {
        const char *h = fj_en_how_name(en.how[p]);
        if (h) {
            len += (size_t)snprintf(how + len, sizeof how - len, "%s\"%s\":\"%s\"", told ? "," : "{", part_names[p], h);
            told = true;
        }
    }
    if (told) {
        if (en.gpu_by_counter || en.gpu_by_power)
            len += (size_t)snprintf(how + len, sizeof how - len, ",\"gpu_from\":\"%s\"",
                                    !en.gpu_by_power ? "counter" : !en.gpu_by_counter ? "power" : "counter+power");
        if (en.gpu_idle_joules > 0)
            len += (size_t)snprintf(how + len, sizeof how - len, ",\"gpu_idle_kwh\":%.9g", fj_en_kwh(en.gpu_idle_joules));
        double joules = 0;
        for (int p = 0; p < FJ_EP__COUNT; p++)
            joules += en.set[p] ? en.joules[p] : 0;
        snprintf(how + len, sizeof how - len, ",\"gaps\":%zu,\"joules\":%.17g}", en.gaps, joules);
    }
    const char *how_json = told ? fj_arena_strdup(e->a, how) : NULL;
    if (told && !how_json)
        return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
    v[(*n)++] = fj_value_json(how_json);
    v[(*n)++] = told ? fj_value_int((int64_t)llround(en.missing_s)) : fj_value_null();
    double pue = e->q->pue > 0 ? e->q->pue : 1.0;
    v[(*n)++] = any && e->q->carbon_g_per_kwh > 0 ? fj_value_real(kwh * pue * e->q->carbon_g_per_kwh / 1000.0)
                                                  : fj_value_null();
    return FJ_OK;
}

/* One job row: the values of t (fj_qt_jobs, or fj_qt_job: the same and the joined ClusterCockpit
 * job) from a select_jobs row and the per-row statements. */
static fj_status emit_job(const fj_qenv *e, const fj_qjob_stmts *rc, const fj_qrows *st, const fj_qtable *t)
{
    int64_t id = fj_qr_i64(st, C_ID), job = fj_qr_i64(st, C_JOB);
    int64_t epoch = fj_qr_i64(st, C_EPOCH), ns = fj_qr_i64(st, C_NS);
    int64_t first = fj_qr_i64(st, C_FIRST), last = fj_qr_i64(st, C_LAST);
    double nsd = ns > 0 ? (double)ns : 1.0;

    /* hosts, by name */
    fj_qstrv hosts = {0};
    fj_qr_bind(&rc->hosts, 1, id);
    bool row = false;
    fj_status rs;
    usage u = {0};
    int64_t *host_ids = NULL;
    kept_usage *host_kept = NULL;
    size_t n_host_ids = 0, cap = 0;
    while ((rs = fj_qr_step(&rc->hosts, "job hosts", &row)) == FJ_OK && row) {
        int64_t nid = fj_qr_i64(&rc->hosts, 0);
        const char *name = fj_qnodes_name(e->nodes, nid);
        if (name && (rs = fj_qstrv_push(e, &hosts, name)) != FJ_OK)
            break;
        size_t kept_cap = cap; /* host_kept grows with host_ids */
        if ((rs = fj_qgrow(e->a, e->err, &host_ids, n_host_ids, &cap, sizeof *host_ids, 16)) != FJ_OK ||
            (rs = fj_qgrow(e->a, e->err, &host_kept, n_host_ids, &kept_cap, sizeof *host_kept, 16)) != FJ_OK)
            break;
        host_kept[n_host_ids] = kept_of(&rc->hosts);
        host_ids[n_host_ids++] = nid;
    }
    fj_qr_reset(&rc->hosts);
    if (rs != FJ_OK)
        return rs;
    if (hosts.n > 1)
        qsort(hosts.v, hosts.n, sizeof *hosts.v, cmp_str);
    for (size_t i = 0; i < n_host_ids; i++)
        if ((rs = add_usage(e, rc, st, host_ids[i], &host_kept[i], &u)) != FJ_OK)
            return rs;

    const char **cmds = NULL;
    size_t n_cmds = 0;
    if ((rs = fj_qenv_text_list(e, &rc->cmds, id, &cmds, &n_cmds)) != FJ_OK)
        return rs;

    double gpu_avg = (double)fj_qr_i64(st, C_GPU_SUM) / 1000.0 / nsd;
    fj_value v[64];
    size_t n = 0;
    v[n++] = fj_value_int(id);
    v[n++] = fj_value_text(e->q->cluster);
    v[n++] = fj_value_int(job);
    v[n++] = fj_value_int(epoch);
    v[n++] = fj_value_text(fj_qnodes_name(e->nodes, fj_qr_i64(st, C_NODE)));
    v[n++] = job == 0 ? fj_value_int(fj_qr_i64(st, C_PID)) : fj_value_null();
    v[n++] = fj_qr_value(st, C_USER, FJ_VT_TEXT);
    v[n++] = fj_value_time(first);
    v[n++] = fj_value_time(last);
    v[n++] = fj_value_int(last - first);
    v[n++] = fj_value_bool(fj_qr_i64(st, C_RUNNING) != 0);
    v[n++] = fj_value_list(hosts.v, hosts.n);
    v[n++] = fj_value_list(cmds, n_cmds);
    v[n++] = fj_value_int(ns);
    v[n++] = fj_value_int(fj_qr_i64(st, C_NPROC));
    v[n++] = fj_value_real((double)fj_qr_i64(st, C_CPU_SUM) / 1000.0 / nsd);
    v[n++] = fj_value_real((double)fj_qr_i64(st, C_CPU_PEAK) / 1000.0);
    v[n++] = fj_value_int(ns > 0 ? fj_qr_i64(st, C_MEM_SUM) / ns : 0);
    v[n++] = fj_value_int(fj_qr_i64(st, C_MEM_PEAK));
    v[n++] = fj_value_real(gpu_avg);
    v[n++] = fj_value_real((double)fj_qr_i64(st, C_GPU_PEAK) / 1000.0);
    v[n++] = fj_value_int(ns > 0 ? fj_qr_i64(st, C_GM_SUM) / ns : 0);
    v[n++] = fj_value_int(fj_qr_i64(st, C_GM_PEAK));
    v[n++] = num_or_null(u.cpu_set, u.cpu);
    v[n++] = fj_value_int((int64_t)llround(gpu_avg / 100.0 * (double)(last - first) * (double)n_host_ids));
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
        v[n++] = fj_qr_value(st, C_SLURM0 + (int)i, ct);
    }
    for (int i = 0; i < 3; i++)
        v[n++] = fj_qr_value(st, C_EFF0 + i, FJ_VT_REAL);
    if ((rs = emit_energy(e, rc, st, host_ids, n_host_ids, v, &n)) != FJ_OK)
        return rs;
    fj_buf cc;
    fj_buf_init(&cc, (size_t)1 << 24);
    if (t == &fj_qt_job) {
        fj_cc_job_ref ref;
        bool found;
        if ((rs = cc_job(e, rc, st, &ref, &found)) != FJ_OK)
            goto out;
        if (found && (rs = fj_cc_job_ref_json(&cc, &ref)) != FJ_OK) {
            rs = fj_err_set(e->err, rs, NULL, "the ClusterCockpit job is too large");
            goto out;
        }
        v[n++] = found ? fj_value_json(cc.data) : fj_value_null();
    }
    if (n != t->n_cols)
        rs = fj_err_set(e->err, FJ_EINTERNAL, NULL, "job row has %zu values for %zu columns", n, t->n_cols);
    else
        rs = e->k->row(e->k, v);
out:
    if (t == &fj_qt_job)
        fj_qr_reset(&rc->cc);
    fj_buf_free(&cc);
    return rs;
}


/* --- the job list ------------------------------------------------------------------------- */

/* The job list: sort key q->sort's SQL, or NULL when unknown. */
static const char *sort_key(int sort)
{
    switch (sort) {
    case FJ_JS_START: return "j.first_seen";
    case FJ_JS_END: return "j.last_seen";
    case FJ_JS_DURATION: return "(j.last_seen - j.first_seen)";
    case FJ_JS_JOB: return "j.job";
    default:
        if (sort >= FJ_JS_METRIC0 && sort < FJ_JS__COUNT)
            return sort - FJ_JS_METRIC0 >= FJ_JM_CPU_EFF ? eff_key[sort - FJ_JS_METRIC0 - FJ_JM_CPU_EFF]
                                                         : metric_sql[sort - FJ_JS_METRIC0];
        return NULL;
    }
}

/* "SELECT ... FROM jobs j ..." with the C_* columns, then sortkey. */
static void select_jobs(fj_sqlbuf *b, const char *sortkey)
{
    fj_sqlbuf_put(b, "SELECT j.id, j.job, j.epoch, j.node_id, j.pid, u.s, j.first_seen, j.last_seen, j.n_samples,"
                     " j.nproc_peak, j.cpu_sum_m, j.cpu_peak_m, j.mem_sum_kb, j.mem_peak_kb, j.gpu_sum_m,"
                     " j.gpu_peak_m, j.gpumem_sum_kb, j.gpumem_peak_kb, j.ppid, j.cmd_id, " RUNNING_SQL);
    for (size_t i = 0; i < N_SLURM; i++)
        fj_sqlbuf_printf(b, ", sc.%s", slurm_cols[i]);
    for (int m = FJ_JM_CPU_EFF; m <= FJ_JM_GPU_EFF; m++)
        fj_sqlbuf_printf(b, ", %s", metric_sql[m]);
    fj_sqlbuf_printf(b, ", %s FROM jobs j LEFT JOIN strings u ON u.id = j.user_id"
                        " LEFT JOIN slurm_jobs_current sc ON j.epoch = 0 AND j.job <> 0"
                        " AND sc.cluster_id = j.cluster_id AND sc.job_id = j.job AND sc.job_step = ''",
                     sortkey);
}

/* The WHERE conditions of the job list (after "WHERE j.cluster_id = ?"). */
static void job_filters(fj_sqlbuf *b, const fj_qenv *e, const fj_dialect *d)
{
    const fj_query *q = e->q;
    fj_sqlbuf_bound(b, " AND j.last_seen >= ", q->from);
    fj_sqlbuf_bound(b, " AND j.last_day >= ", fj_job_last_day(q->from));
    fj_sqlbuf_bound(b, " AND j.first_seen <= ", q->to);
    if (q->users.n) {
        fj_sqlbuf_put(b, " AND j.user_id IN (SELECT id FROM strings WHERE s IN ");
        fj_sqlbuf_text_list(b, &q->users);
        fj_sqlbuf_put(b, ")");
    }
    fj_sqlbuf_and_in_ints(b, "j.job", &q->jobs);
    if (e->nodes->filtered) {
        fj_sqlbuf_put(b, " AND EXISTS (SELECT 1 FROM job_hosts h WHERE h.rjob_id = j.id AND h.node_id IN ");
        fj_sqlbuf_node_list(b, e->nodes);
        fj_sqlbuf_put(b, ")");
    }
    if (q->commands.n) {
        fj_sqlbuf_put(b, " AND EXISTS (SELECT 1 FROM job_cmds c JOIN strings x ON x.id = c.cmd_id"
                         " WHERE c.rjob_id = j.id AND (");
        for (size_t i = 0; i < q->commands.n; i++) {
            if (i)
                fj_sqlbuf_put(b, " OR ");
            fj_sqlbuf_glob(b, d, e->a, "x.s", q->commands.v[i]);
        }
        fj_sqlbuf_put(b, "))");
    }
    fj_sqlbuf_and_in_texts(b, "sc.job_state", &q->states);
    fj_sqlbuf_and_in_texts(b, "sc.partition", &q->partitions);
    fj_sqlbuf_and_in_texts(b, "sc.account", &q->accounts);
    if (q->gpu == FJ_TRI_YES)
        fj_sqlbuf_put(b, " AND (j.gpu_peak_m > 0 OR j.gpumem_peak_kb > 0)");
    else if (q->gpu == FJ_TRI_NO)
        fj_sqlbuf_put(b, " AND j.gpu_peak_m = 0 AND j.gpumem_peak_kb = 0");
    if (q->running != FJ_TRI_ANY) {
        fj_sqlbuf_put(b, " AND " RUNNING_SQL);
        fj_sqlbuf_put(b, q->running == FJ_TRI_YES ? " = TRUE" : " = FALSE");
    }
    if (q->min_runtime_s > 0) {
        fj_sqlbuf_put(b, " AND j.last_seen - j.first_seen >= ");
        fj_sqlbuf_int(b, q->min_runtime_s);
    }
    for (int m = 0; m < FJ_JM__COUNT; m++) {
        if (q->has_min[m]) {
            fj_sqlbuf_printf(b, " AND %s >= ", metric_sql[m]);
            fj_sqlbuf_real(b, q->min[m]);
        }
        if (q->has_max[m]) {
            fj_sqlbuf_printf(b, " AND %s <= ", metric_sql[m]);
            fj_sqlbuf_real(b, q->max[m]);
        }
    }
}

/* The whole statement of the job list, sorted by key (sort_key), paged. */
static void list_sql(fj_sqlbuf *b, const fj_qenv *e, const fj_dialect *d, const char *key)
{
    const fj_query *q = e->q;
    select_jobs(b, key);
    fj_sqlbuf_put(b, " WHERE j.cluster_id = ");
    fj_sqlbuf_int(b, e->cluster_id);
    job_filters(b, e, d);
    const char *dir = q->desc ? "DESC" : "ASC";
    if (q->after.set) {
        const char *op = q->desc ? "<" : ">";
        fj_sqlbuf_printf(b, " AND (%s %s ", key, op);
        fj_sqlbuf_real(b, q->after.v);
        fj_sqlbuf_printf(b, " OR (%s = ", key);
        fj_sqlbuf_real(b, q->after.v);
        fj_sqlbuf_printf(b, " AND j.id %s ", op);
        fj_sqlbuf_int(b, q->after.id);
        fj_sqlbuf_put(b, "))");
    }
    fj_sqlbuf_printf(b, " ORDER BY %s %s, j.id %s", key, dir, dir);
    fj_sqlbuf_page(b, q->limit);
}

fj_status fj_qjobs_list_rows(const fj_qenv *e, const fj_qjob_stmts *st, const fj_qrows *jobs)
{
    fj_query *q = e->q;
    fj_status rs = e->k->table(e->k, &fj_qt_jobs);
    if (rs != FJ_OK)
        return rs;
    size_t n = 0;
    bool row = false;
    fj_qpos last = {0};
    while ((rs = fj_qr_step(jobs, "list jobs", &row)) == FJ_OK && row) {
        if (q->limit && n == q->limit) {
            q->next = last;
            break;
        }
        if ((rs = emit_job(e, st, jobs, &fj_qt_jobs)) != FJ_OK)
            return rs;
        last.set = true;
        last.v = fj_qr_dbl(jobs, C_SORTKEY);
        last.id = fj_qr_i64(jobs, C_ID);
        n++;
    }
    return rs;
}

/* --- one job ----------------------------------------------------------------------------- */

/* Steps to the row of job q->id (the job detail's and the profile's first statement): FJ_ENOTFOUND
 * when there is none. */
static fj_status job_found(const fj_qenv *e, const fj_qrows *job)
{
    bool row = false;
    fj_status rs = fj_qr_step(job, "job", &row);
    if (rs == FJ_OK && !row)
        rs = fj_err_set(e->err, FJ_ENOTFOUND, "id", "no job with id %lld in cluster '%s'", (long long)e->q->id,
                        e->q->cluster);
    return rs;
}

/* The statement of one job, q->id. */
static void job_sql(fj_sqlbuf *b, const fj_qenv *e)
{
    select_jobs(b, "j.first_seen");
    fj_sqlbuf_put(b, " WHERE j.cluster_id = ");
    fj_sqlbuf_int(b, e->cluster_id);
    fj_sqlbuf_put(b, " AND j.id = ");
    fj_sqlbuf_int(b, e->q->id);
}

fj_status fj_qjob_rows(const fj_qenv *e, const fj_qjob_stmts *st, const fj_qrows *job, const fj_qrows *hs)
{
    const fj_query *q = e->q;
    fj_sink *k = e->k;
    fj_status rs = job_found(e, job);
    if (rs != FJ_OK)
        return rs;
    if ((rs = k->table(k, &fj_qt_job)) != FJ_OK || (rs = emit_job(e, st, job, &fj_qt_job)) != FJ_OK)
        return rs;

    fj_qr_bind(hs, 1, q->id);
    if ((rs = k->table(k, &fj_qt_job_hosts)) != FJ_OK)
        return rs;
    /* rows sorted by host name: collect, then sort */
    typedef struct hrow {
        const char *name;
        int64_t v[12];
    } hrow;
    hrow *rows = NULL;
    size_t n = 0, cap = 0;
    bool row = false;
    while ((rs = fj_qr_step(hs, "job hosts", &row)) == FJ_OK && row) {
        if ((rs = fj_qgrow(e->a, e->err, &rows, n, &cap, sizeof *rows, 16)) != FJ_OK)
            return rs;
        const char *name = fj_qnodes_name(e->nodes, fj_qr_i64(hs, 0));
        rows[n].name = name ? name : "";
        for (int i = 0; i < 12; i++)
            rows[n].v[i] = fj_qr_i64(hs, i + 1);
        n++;
    }
    if (rs != FJ_OK)
        return rs;
    if (n > 1)
        qsort(rows, n, sizeof *rows, cmp_str); /* name is the first member */
    for (size_t i = 0; i < n; i++) {
        const int64_t *h = rows[i].v;
        double ns = h[0] > 0 ? (double)h[0] : 1;
        fj_value v[13] = {
            fj_value_text(rows[i].name),
            fj_value_int(h[0]),
            fj_value_time(h[1]),
            fj_value_time(h[2]),
            fj_value_int(h[3]),
            fj_value_real((double)h[4] / 1000.0 / ns),
            fj_value_real((double)h[5] / 1000.0),
            fj_value_int(h[0] > 0 ? h[6] / h[0] : 0),
            fj_value_int(h[7]),
            fj_value_real((double)h[8] / 1000.0 / ns),
            fj_value_real((double)h[9] / 1000.0),
            fj_value_int(h[0] > 0 ? h[10] / h[0] : 0),
            fj_value_int(h[11]),
        };
        if ((rs = k->row(k, v)) != FJ_OK)
            return rs;
    }
    return FJ_OK;
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

/* One process of the node-sample being read. */
typedef struct ppoint {
    fj_jcpu_proc cpu; /* first: sorted as jobcpu sorts */
    int64_t nproc;
    double mem, gpu, gpumem;
} ppoint;

struct fj_qprofile {
    const fj_qenv *e;
    fj_qm_grid g;
    bool by_host;
    pseries *series;
    size_t n, cap;
    size_t *slots; /* open addressing: 1 + index, 0 empty */
    size_t n_slots;
    /* the process being read (several rows when it has several GPUs) */
    int64_t cur_proc, cur_sample, cur_node, cur_time;
    int64_t cur_pid, cur_ppid, cur_cmd, cur_nproc;
    double cur_mem, cur_gpu, cur_gpumem;
    fj_jcpu_proc cur_cpu;
    /* the node-sample being read, and the node's one before it: CPU needs both (storage/core/jobcpu.h) */
    ppoint *pts;
    size_t n_pts, cap_pts;
    int64_t ns_sample, ns_node, ns_time;
    bool ns_children;
    fj_jcpu_proc *prev;
    size_t n_prev, cap_prev;
    int64_t prev_node;
    fj_time prev_time;
    bool have_prev, prev_children;
    /* by_host: the host's sums in the current sample */
    int64_t hs_sample, hs_node, hs_time, hs_nproc;
    double hs_cpu, hs_mem, hs_gpu, hs_gpumem;
    bool hs_open;
    /* the job and the window read (fj_qprofile_begin) */
    int64_t job, epoch, pid, ppid, cmd;
    fj_time from, to, first_seen;
    bool gpu;
};
typedef struct fj_qprofile pstate;

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
    size_t *slots = fj_arena_calloc(p->e->a, ns, sizeof *slots);
    if (!slots)
        return fj_err_set(p->e->err, FJ_ENOMEM, NULL, "out of memory");
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
    fj_status rs = fj_qgrow(p->e->a, p->e->err, &p->series, p->n, &p->cap, sizeof *p->series, 64);
    if (rs != FJ_OK)
        return rs;
    pseries *s = &p->series[p->n];
    memset(s, 0, sizeof *s);
    s->node_id = node, s->pid = pid, s->ppid = ppid, s->cmd_id = cmd;
    s->b = fj_arena_calloc(p->e->a, p->g.n, sizeof *s->b);
    if (!s->b)
        return fj_err_set(p->e->err, FJ_ENOMEM, NULL, "out of memory");
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

static fj_status emit(pstate *p, const ppoint *pt, double cpu)
{
    if (!p->by_host)
        return add_point(p, p->ns_node, pt->cpu.pid, pt->cpu.ppid, pt->cpu.cmd_id, p->ns_time, pt->nproc, cpu, pt->mem,
                         pt->gpu, pt->gpumem);
    if (!p->hs_open) {
        p->hs_open = true;
        p->hs_sample = p->ns_sample, p->hs_node = p->ns_node, p->hs_time = p->ns_time;
        p->hs_nproc = 0, p->hs_cpu = p->hs_mem = p->hs_gpu = p->hs_gpumem = 0;
    }
    p->hs_nproc += pt->nproc;
    p->hs_cpu += cpu;
    p->hs_mem += pt->mem;
    p->hs_gpu += pt->gpu;
    p->hs_gpumem += pt->gpumem;
    return FJ_OK;
}

/* The node-sample read so far: each process's CPU from its cpu_time and the node's previous
 * node-sample (storage/core/jobcpu.h, as the job's summary computes it), then its points. */
static fj_status flush_sample(pstate *p)
{
    if (!p->n_pts)
        return FJ_OK;
    qsort(p->pts, p->n_pts, sizeof *p->pts, fj_jcpu_proc_cmp); /* a ppoint begins with its fj_jcpu_proc */
    fj_jcpu_proc *cur = fj_arena_alloc(p->e->a, p->n_pts * sizeof *cur);
    if (!cur)
        return fj_err_set(p->e->err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < p->n_pts; i++)
        cur[i] = p->pts[i].cpu;
    fj_jcpu_sample now = {p->ns_time, cur, p->n_pts, p->ns_children};
    fj_jcpu_sample before = {p->prev_time, p->prev, p->n_prev, p->prev_children};
    bool chained = p->have_prev && p->prev_node == p->ns_node;
    fj_status rs = FJ_OK;
    for (size_t i = 0; i < p->n_pts && rs == FJ_OK; i++)
        rs = emit(p, &p->pts[i], (double)fj_jcpu_proc_m(chained ? &before : NULL, &now, i) / 1000.0);
    if (rs == FJ_OK && p->by_host)
        rs = flush_host(p);
    p->prev = cur; /* arena memory: lives as long as the query */
    p->n_prev = p->n_pts;
    p->prev_node = p->ns_node;
    p->prev_time = p->ns_time;
    p->prev_children = p->ns_children;
    p->have_prev = true;
    p->n_pts = 0;
    return rs;
}

static fj_status flush_proc(pstate *p)
{
    if (!p->cur_proc)
        return FJ_OK;
    p->cur_proc = 0;
    fj_status rs = p->n_pts && p->ns_sample != p->cur_sample ? flush_sample(p) : FJ_OK;
    if (rs != FJ_OK || (rs = fj_qgrow(p->e->a, p->e->err, &p->pts, p->n_pts, &p->cap_pts, sizeof *p->pts, 64)) != FJ_OK)
        return rs;
    p->ns_sample = p->cur_sample, p->ns_node = p->cur_node, p->ns_time = p->cur_time;
    p->pts[p->n_pts++] = (ppoint){p->cur_cpu, p->cur_nproc, p->cur_mem, p->cur_gpu, p->cur_gpumem};
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

fj_status fj_qprofile_begin(const fj_qenv *e, const fj_qrows *js, fj_qprofile **out)
{
    fj_query *q = e->q;
    *out = NULL;
    pstate *p = fj_arena_calloc(e->a, 1, sizeof *p);
    if (!p)
        return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
    p->e = e;
    p->by_host = q->by_host;
    fj_qr_bind(js, 1, q->id);
    fj_qr_bind(js, 2, e->cluster_id);
    fj_status rs = job_found(e, js);
    if (rs != FJ_OK)
        return rs;
    p->job = fj_qr_i64(js, 0), p->epoch = fj_qr_i64(js, 1);
    p->pid = fj_qr_i64(js, 2), p->ppid = fj_qr_i64(js, 3), p->cmd = fj_qr_i64(js, 4);
    fj_time from = fj_qr_i64(js, 5), to = fj_qr_i64(js, 6);
    p->first_seen = from;
    p->gpu = fj_qr_i64(js, 7) != 0;
    if (q->from > from)
        from = q->from;
    if (q->to && q->to < to)
        to = q->to;
    if ((rs = e->k->table(e->k, &fj_qt_profile)) != FJ_OK)
        return rs;
    if (from > to)
        return FJ_OK; /* the window misses the job: no rows */
    int64_t step = q->bucket_s > 0 ? q->bucket_s : fj_qm_default_bucket(from, to);
    q->from = from; /* what was used, for the answer */
    q->to = to;
    q->bucket_s = step;
    if (fj_qm_grid_make(from, to, step, FJ_QM_MAX_BUCKETS, &p->g) != FJ_OK)
        return fj_err_set(e->err, FJ_EINVAL, "bucket", "more than %d buckets: choose a larger bucket",
                          FJ_QM_MAX_BUCKETS);
    p->from = from, p->to = to;
    *out = p;
    return FJ_OK;
}

bool fj_qprofile_gpu(const fj_qprofile *p)
{
    return p->gpu;
}

fj_status fj_qprofile_rows(fj_qprofile *p, const fj_qrows *st, const fj_qrows *cs)
{
    const fj_qenv *e = p->e;
    fj_sink *k = e->k;
    fj_qr_bind(st, 1, e->q->id);
    fj_qr_bind(st, 2, p->job);
    fj_qr_bind(st, 3, p->epoch);
    fj_qr_bind(st, 4, p->pid);
    fj_qr_bind(st, 5, p->ppid);
    fj_qr_bind(st, 6, p->cmd);
    fj_qr_bind(st, 7, p->first_seen); /* the window's first sample needs the one before */
    fj_qr_bind(st, 8, p->to);
    bool row = false;
    fj_status rs;
    while ((rs = fj_qr_step(st, "profile", &row)) == FJ_OK && row) {
        int64_t node = fj_qr_i64(st, 0);
        long ni = fj_qnodes_index(e->nodes, node);
        if (ni < 0 || !e->nodes->want[ni])
            continue;
        int64_t proc = fj_qr_i64(st, 3);
        if (proc != p->cur_proc) {
            if ((rs = flush_proc(p)) != FJ_OK)
                return rs;
            p->cur_proc = proc;
            p->cur_node = node;
            p->cur_time = fj_qr_i64(st, 1);
            p->cur_sample = fj_qr_i64(st, 2);
            p->cur_pid = fj_qr_i64(st, 4);
            p->cur_ppid = fj_qr_i64(st, 5);
            p->cur_cmd = fj_qr_i64(st, 6);
            p->cur_mem = fj_qr_dbl(st, 7);
            p->cur_cpu = (fj_jcpu_proc){p->cur_pid,          p->cur_ppid,        p->cur_cmd,
                                        fj_qr_i64(st, 10),   fj_qr_i64(st, 11),  fj_qr_i64(st, 8),
                                        fj_qr_i64(st, 12),   fj_qr_i64(st, 9)};
            /* 13: fjord-push's version, NULL for other producers */
            const char *push_version = fj_qr_text(st, 13);
            p->ns_children = !push_version || fj_jcpu_push_counts_children(push_version);
            p->cur_nproc = fj_qr_i64(st, 9) + 1;
            p->cur_gpu = p->cur_gpumem = 0;
        }
        if (p->gpu) {
            p->cur_gpu += fj_qr_dbl(st, 14) / 1000.0;
            p->cur_gpumem += fj_qr_dbl(st, 15);
        }
    }
    if (rs != FJ_OK || (rs = flush_proc(p)) != FJ_OK || (rs = flush_sample(p)) != FJ_OK)
        return rs;

    /* names, then series in key order */
    for (size_t i = 0; i < p->n; i++) {
        pseries *ps = &p->series[i];
        const char *h = fj_qnodes_name(e->nodes, ps->node_id);
        ps->host = h ? h : "";
        ps->cmd = NULL;
        if (!p->by_host) {
            fj_qr_bind(cs, 1, ps->cmd_id);
            /* a failed read leaves the command unnamed */
            if (fj_qr_step(cs, "command name", &row) == FJ_OK && row)
                ps->cmd = fj_arena_strdup(e->a, fj_qr_text(cs, 0));
            fj_qr_reset(cs);
        }
    }
    if (p->n > 1)
        qsort(p->series, p->n, sizeof *p->series, cmp_series);
    for (size_t i = 0; i < p->n; i++) {
        const pseries *ps = &p->series[i];
        for (size_t bi = 0; bi < p->g.n; bi++) {
            const pbucket *b = &ps->b[bi];
            if (!b->samples)
                continue;
            fj_value v[15] = {
                fj_value_text(ps->host),
                p->by_host ? fj_value_null() : fj_value_int(ps->pid),
                p->by_host ? fj_value_null() : fj_value_int(ps->ppid),
                p->by_host ? fj_value_null() : fj_value_text(ps->cmd ? ps->cmd : ""),
                fj_value_time(p->g.from + (int64_t)bi * p->g.step),
                fj_value_int(b->samples),
                fj_value_int(b->procs_max),
                fj_value_acc_avg(&b->cpu),
                fj_value_real(b->cpu.max),
                fj_value_acc_avg_int(&b->mem),
                fj_value_int((int64_t)llround(b->mem.max)),
                fj_value_acc_avg(&b->gpu),
                fj_value_real(b->gpu.max),
                fj_value_acc_avg_int(&b->gpumem),
                fj_value_int((int64_t)llround(b->gpumem.max)),
            };
            if ((rs = k->row(k, v)) != FJ_OK)
                return rs;
        }
    }
    return FJ_OK;
}

/* --- the ops: their SQL and rows (fj_qx_run does the rest) ------------------------------------- */

/* The texts of the statements run once per job row, in the order of fj_qjob_stmts' fields (the
 * energy's two from storage/query/energy.h); cc (the job detail's only) when with_cc, then NULL. */
static void stmts_sql(const fj_store *s, bool with_cc, const char *sql[8])
{
    const fj_layout_sql *ly = fj_driver_of(s)->layout;
    fj_qenergy_sql(ly, sql + 4);
    sql[0] = "SELECT node_id, usage_kept, cpu_time_s, read_kb, written_kb FROM job_hosts WHERE rjob_id = ?1";
    sql[1] = "SELECT x.s FROM job_cmds c JOIN strings x ON x.id = c.cmd_id WHERE c.rjob_id = ?1 ORDER BY x.s{bytes}";
    sql[2] = ly->job_last_sample;
    sql[3] = ly->job_usage;
    /* the most recent cc job of (cluster, job id) that started by the Sonar job's last sample and
     * had not stopped before its first: the unique (cluster_id, job_id, start_time) index walked
     * backwards from ?3 */
    sql[6] = !with_cc ? NULL
                      : "SELECT id, start_time, stop_time, state, \"user\", project, partition, subcluster,"
                        " num_nodes, num_hwthreads, num_acc, hosts FROM cc_jobs"
                        " WHERE cluster_id = ?1 AND job_id = ?2 AND start_time <= ?3"
                        " AND (stop_time IS NULL OR stop_time >= ?4)"
                        " ORDER BY start_time DESC LIMIT 1";
    sql[7] = NULL;
}

static fj_qjob_stmts per_row(const fj_qrows *st)
{
    return (fj_qjob_stmts){st[0], st[1], st[2], st[3], {st[4], st[5]}, st[6]};
}

static fj_status jobs(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *key)
{
    fj_sqlbuf b;
    fj_sqlbuf_init(&b, x->d->dialect.mark);
    list_sql(&b, e, &x->d->dialect, *(const char **)key);
    fj_qrows list;
    fj_status rs = fj_qx_prepare_qb(x, &b, &list);
    fj_sqlbuf_free(&b);
    fj_qjob_stmts pr = per_row(st);
    return rs == FJ_OK ? fj_qjobs_list_rows(e, &pr, &list) : rs;
}

fj_status fj_store_query_jobs(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    const char *key = sort_key(q->sort);
    if (!key)
        return fj_err_set(err, FJ_EINVAL, "sort", "unknown sort key");
    const char *sql[8];
    stmts_sql(s, false, sql);
    return fj_qx_run(s, q, k, err, FJ_QX_NODES, sql, jobs, &key);
}

static fj_status job(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)arg;
    fj_sqlbuf b;
    fj_sqlbuf_init(&b, x->d->dialect.mark);
    job_sql(&b, e);
    fj_qrows one, hosts;
    fj_status rs = fj_qx_prepare_qb(x, &b, &one);
    fj_sqlbuf_free(&b);
    if (rs != FJ_OK ||
        (rs = fj_qx_prepare(x,
                            "SELECT js.node_id, count(*), min(js.time), max(js.time), max(js.nproc),"
                            " sum(js.cpu_m), coalesce(max(js.cpu_win_m), sum(js.cpu_m) / count(*)), sum(js.mem_kb), max(js.mem_kb), sum(js.gpu_m),"
                            " max(js.gpu_m), sum(js.gpumem_kb), max(js.gpumem_kb)"
                            " FROM job_samples js WHERE js.rjob_id = ?1 GROUP BY js.node_id",
                            &hosts)) != FJ_OK)
        return rs;
    fj_qjob_stmts pr = per_row(st);
    return fj_qjob_rows(e, &pr, &one, &hosts);
}

fj_status fj_store_query_job(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    const char *sql[8];
    stmts_sql(s, true, sql);
    return fj_qx_run(s, q, k, err, FJ_QX_NODES, sql, job, NULL);
}

static fj_status profile(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)arg;
    fj_qprofile *p = NULL;
    fj_status rs = fj_qprofile_begin(e, &st[0], &p);
    if (rs != FJ_OK || !p)
        return rs;
    /* one pass over the job's process rows in the window (the layout's), with its cards' columns
     * when it used a GPU */
    const fj_layout_sql *ly = x->d->layout;
    fj_qrows procs, names;
    if ((rs = fj_qx_prepare(x, fj_qprofile_gpu(p) ? ly->job_procs_gpu : ly->job_procs, &procs)) != FJ_OK ||
        (rs = fj_qx_prepare(x, "SELECT s FROM strings WHERE id = ?1", &names)) != FJ_OK)
        return rs;
    return fj_qprofile_rows(p, &procs, &names);
}

fj_status fj_store_query_profile(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    static const char *const sql[] = {
        "SELECT job, epoch, pid, ppid, cmd_id, first_seen, last_seen,"
        " gpu_peak_m > 0 OR gpumem_peak_kb > 0 FROM jobs WHERE id = ?1 AND cluster_id = ?2",
        NULL,
    };
    return fj_qx_run(s, q, k, err, FJ_QX_NODES, sql, profile, NULL);
}
