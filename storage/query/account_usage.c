/* storage/query/account_usage.c — usage per user, account, partition or cluster
 * (storage/core/store_account_usage.h; the rules: docs/storage.md, "Usage and efficiency"), written
 * once over the driver. Two reads: the window's jobs, each with its summary (jobs), its host count
 * and its Slurm record; and, only for a job whose samples do not all fall in one bucket of the
 * window, its node-samples inside the window (job_samples, one seek of its key). The figures are
 * summed in C per (group, bucket) and the groups ranked by their window totals.
 *
 * Per job and bucket B (a half-open span of the window):
 * - allocation: the job's span is Slurm's start and end (the samples' first and last where Slurm
 *   does not say); its wall seconds in B are that span's overlap with B, times the cores
 *   (requested_cpus), cards (alloc_gpus: its TRES) and memory (requested_memory_per_node_kb x
 *   nodes) Slurm gave it. Unknown (no Slurm record, or the field absent): null, not 0;
 * - use: the mean over the job's node-samples in B of its cores, cards and memory in use, times its
 *   hosts there (the job's total at a mean moment), times the overlap of its sampled span (first to
 *   last sample) with B. A job wholly in B takes its sums from its summary; a job inside the window
 *   across bucket edges reads the node-samples of all its buckets but the one holding most of its
 *   sampled span, whose sums are the summary's less the others' (integer sums: exact), and whose
 *   hosts are counted with one seek each; a job across the window's edge reads its node-samples
 *   inside the window. Every read is a range seek per host of job_samples' key, summed per host by
 *   the database, one read per bucket;
 * - energy: the GPU part of the job's energy (storage/query/energy.h, the job list's rules) cut to
 *   the bucket, read only for a job that had a process on a card or cards in its allocation (its
 *   hosts, then its hosts' card readings over its span, once per bucket it touches). A job's first
 *   and last bucket are not cut where the window does not cut them, so a job inside the window adds
 *   up to its job-list figure. Null where no job of the cell had a figure; the CPU, memory and node
 *   parts (ClusterCockpit series, read outside the store's snapshot) are not counted. */
#include "storage/core/store_account_usage.h"

#include "storage/query/energy.h"
#include "storage/query/qx.h"
#include "storage/query/jobs.h"
#include "storage/query/value.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const fj_usage_figure_names[FJ_UF__COUNT] = {
#define FJ_UF_NAME(id, name) name,
    FJ_USAGE_FIGURES(FJ_UF_NAME)
#undef FJ_UF_NAME
};

enum { MAX_BUCKETS = 1000 };

/* A Slurm span may reach past the job's samples; jobs whose samples end up to this long before the
 * window (or begin this long after it) are read, and their spans judged exactly. */
#define SLURM_MARGIN_S 86400

/* The window's jobs (?2, ?3: the window widened by the margin; ?4: last_day of ?2). */
static const char jobs_sql[] =
    "SELECT j.id, u.s, j.first_seen, j.last_seen, j.n_samples, j.cpu_sum_m, j.mem_sum_kb, j.gpu_sum_m, j.job, j.epoch,"
    " (SELECT count(*) FROM job_hosts h WHERE h.rjob_id = j.id),"
    " sc.cluster_id, sc.account, sc.partition, sc.start_time, sc.end_time, sc.requested_cpus,"
    " sc.requested_memory_per_node_kb, sc.requested_node_count, sc.alloc_gpus, j.gpu_peak_m, j.gpumem_peak_kb,"
    " sc.allocated_resources"
    " FROM jobs j LEFT JOIN strings u ON u.id = j.user_id"
    " LEFT JOIN slurm_jobs_current sc ON j.epoch = 0 AND sc.cluster_id = j.cluster_id AND sc.job_id = j.job"
    " AND sc.job_step = ''"
    " WHERE j.cluster_id = ?1 AND j.last_day >= ?4 AND j.last_seen >= ?2 AND j.first_seen < ?3 AND j.job <> 0"
    " ORDER BY j.id";
enum {
    J_ID, J_USER, J_FIRST, J_LAST, J_NS, J_CPU, J_MEM, J_GPU, J_JOB, J_EPOCH, J_HOSTS, J_SLURM, J_ACCOUNT, J_PARTITION, J_START,
    J_END, J_CPUS, J_MEM_REQ, J_NODES, J_GPUS, J_GPU_PEAK, J_GM_PEAK, J_TRES
};

/* The hosts of a job, for its energy. */
static const char hosts_sql[] = "SELECT node_id FROM job_hosts WHERE rjob_id = ?1";

/* A Slurm job without Sonar's Slurm record: the ClusterCockpit job (cc-backend's job API) of the same
 * cluster and job id whose run overlaps the job's samples (?3: its last, ?4: its first), the most
 * recent if several: the job page's rule (storage/query/jobs.c). */
static const char cc_sql[] = "SELECT start_time, stop_time, project, partition, num_hwthreads, num_acc FROM cc_jobs"
                             " WHERE cluster_id = ?1 AND job_id = ?2 AND start_time <= ?3"
                             " AND (stop_time IS NULL OR stop_time >= ?4) ORDER BY start_time DESC LIMIT 1";

/* One job's node-samples in [?2, ?3), summed per host: a range seek of job_samples' key (rjob_id,
 * node_id, time) per host of the job, in the hosts' order (no sort), so only the rows of the range
 * are read, and the database sums them (not a row each through the driver). */
static const char samples_sql[] =
    "SELECT count(*), sum(js.cpu_m), sum(js.mem_kb), sum(js.gpu_m) FROM job_hosts h {cross} job_samples js"
    " ON js.rjob_id = h.rjob_id AND js.node_id = h.node_id AND js.time >= ?2 AND js.time < ?3"
    " WHERE h.rjob_id = ?1 GROUP BY h.node_id";
/* How many of the job's hosts have a node-sample in [?2, ?3): one seek each. */
static const char nodes_sql[] =
    "SELECT count(*) FROM job_hosts h WHERE h.rjob_id = ?1 AND EXISTS (SELECT 1 FROM job_samples js"
    " WHERE js.rjob_id = h.rjob_id AND js.node_id = h.node_id AND js.time >= ?2 AND js.time < ?3)";

/* --- buckets ------------------------------------------------------------------------------------ */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The first bucket edge after t. */
static int64_t next_edge(fj_usage_bucket k, int64_t t)
{
    switch (k) {
    case FJ_UBK_DAY: return (floor_div(t, 86400) + 1) * 86400;
    case FJ_UBK_WEEK: {
        const int64_t monday = 4 * 86400; /* 1970-01-05, a Monday */
        return monday + (floor_div(t - monday, 7 * 86400) + 1) * 7 * 86400;
    }
    case FJ_UBK_MONTH: {
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        int64_t y = tm.tm_year + 1900, m = tm.tm_mon + 2; /* the next month, 1-based */
        if (m > 12)
            m = 1, y++;
        return fj_days_from_civil(y, (unsigned)m, 1) * 86400;
    }
    case FJ_UBK_NONE:
    default: return INT64_MAX;
    }
}

/* --- accumulators ------------------------------------------------------------------------------- */

/* A figure allocated and used: alloc sums the jobs whose allocation is known (known: at least one),
 * used every job's use, used_alloc the use of the jobs in alloc (the efficiency's numerator). */
typedef struct fig {
    double alloc, used, used_alloc;
    bool known;
} fig;

typedef struct cell {
    int64_t jobs, jobs_alloc;
    double wall_s;
    fig core, gpu, mem; /* core-seconds, card-seconds, kB-seconds */
    double energy_j;
    bool energy_known; /* some job of the cell has an energy figure */
} cell;

typedef struct group {
    const char *name; /* NULL: jobs without one (no account or partition: no Slurm) */
    cell total;
    cell *b; /* per bucket; NULL until the first */
    bool ranked;
} group;

typedef struct usage_run {
    fj_qx *x;
    fj_qenv env;
    fj_qenergy_stmts energy;
    fj_qrows hosts;
    const fj_usage_req *req;
    int64_t from, to;
    int64_t *edges; /* n_buckets + 1 */
    size_t n_buckets;
    group *groups;
    size_t n_groups, cap_groups;
    size_t *slots; /* open addressing over groups: index + 1, 0 empty */
    size_t n_slots;
} usage_run;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    if (!s)
        return 7;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static bool same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static fj_status rehash(usage_run *u, size_t n)
{
    size_t *slots = fj_arena_calloc(u->x->a, n, sizeof *slots);
    if (!slots)
        return fj_err_set(u->x->err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t g = 0; g < u->n_groups; g++) {
        size_t i = hash_str(u->groups[g].name) & (n - 1);
        while (slots[i])
            i = (i + 1) & (n - 1);
        slots[i] = g + 1;
    }
    u->slots = slots;
    u->n_slots = n;
    return FJ_OK;
}

/* The group named name (borrowed until the next row: copied when new). */
static fj_status group_of(usage_run *u, const char *name, group **out)
{
    if (u->n_groups * 2 >= u->n_slots) {
        fj_status st = rehash(u, u->n_slots ? u->n_slots * 2 : 64);
        if (st != FJ_OK)
            return st;
    }
    size_t i = hash_str(name) & (u->n_slots - 1);
    for (; u->slots[i]; i = (i + 1) & (u->n_slots - 1))
        if (same(u->groups[u->slots[i] - 1].name, name)) {
            *out = &u->groups[u->slots[i] - 1];
            return FJ_OK;
        }
    fj_status st = fj_qgrow(u->x->a, u->x->err, &u->groups, u->n_groups, &u->cap_groups, sizeof *u->groups, 32);
    if (st != FJ_OK)
        return st;
    group *g = &u->groups[u->n_groups];
    memset(g, 0, sizeof *g);
    if (name && !(g->name = fj_arena_strdup(u->x->a, name)))
        return fj_err_set(u->x->err, FJ_ENOMEM, NULL, "out of memory");
    u->slots[i] = ++u->n_groups;
    *out = g;
    return FJ_OK;
}

/* --- one job ------------------------------------------------------------------------------------ */

typedef struct ujob {
    int64_t first, last;    /* samples */
    int64_t a0, a1;         /* the allocation's span */
    int64_t hosts;
    bool slurm; /* an allocation is known: Sonar's Slurm record, else a ClusterCockpit job */
    bool cores_known, gpus_known, mem_known;
    double cores, gpus, mem_kb; /* allocated, over all its nodes */
} ujob;

/* What the job's node-samples in one bucket add up to. */
typedef struct used {
    double cpu_m, mem_kb, gpu_m;
    int64_t n, nodes; /* node-samples, and the hosts they are on */
} used;

static double overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? (double)(hi - lo) : 0.0;
}

static void add_fig(fig *f, bool known, double alloc, double use)
{
    f->used += use;
    if (known) {
        f->alloc += alloc;
        f->used_alloc += use;
        f->known = true;
    }
}

static void add_cell(cell *c, const cell *d)
{
    c->jobs += d->jobs;
    c->jobs_alloc += d->jobs_alloc;
    c->wall_s += d->wall_s;
    c->energy_j += d->energy_j;
    c->energy_known |= d->energy_known;
    fig *cf[3] = {&c->core, &c->gpu, &c->mem};
    const fig *df[3] = {&d->core, &d->gpu, &d->mem};
    for (int i = 0; i < 3; i++) {
        cf[i]->alloc += df[i]->alloc;
        cf[i]->used += df[i]->used;
        cf[i]->used_alloc += df[i]->used_alloc;
        cf[i]->known |= df[i]->known;
    }
}

/* The job's figures in bucket i from what its node-samples there add up to. */
static fj_status add_job_bucket(usage_run *u, group *g, const ujob *j, size_t i, const used *s,
                                const fj_job_energy *en)
{
    int64_t b0 = u->edges[i], b1 = u->edges[i + 1];
    int64_t e0 = j->a0 < j->first ? j->a0 : j->first, e1 = j->a1 > j->last ? j->a1 : j->last;
    bool present = overlap(e0, e1, b0, b1) > 0 || (e0 >= b0 && e0 < b1) || s->n > 0;
    if (!present)
        return FJ_OK;
    cell d = {0};
    d.jobs = 1;
    d.jobs_alloc = j->slurm ? 1 : 0;
    d.wall_s = overlap(j->a0, j->a1, b0, b1);
    double t_used = overlap(j->first, j->last, b0, b1), nodes = (double)s->nodes;
    double n = s->n > 0 ? (double)s->n : 1.0;
    double cores = s->cpu_m / 100000.0 / n * nodes, cards = s->gpu_m / 100000.0 / n * nodes;
    double mem = s->mem_kb / n * nodes;
    add_fig(&d.core, j->cores_known, j->cores * d.wall_s, cores * t_used);
    add_fig(&d.gpu, j->gpus_known, j->gpus * d.wall_s, cards * t_used);
    add_fig(&d.mem, j->mem_known, j->mem_kb * d.wall_s, mem * t_used);
    if (en && en->set[FJ_EP_GPU]) { /* the GPU part only: the one the store reads */
        d.energy_known = true;
        d.energy_j = en->joules[FJ_EP_GPU];
    }
    if (!g->b && !(g->b = fj_arena_calloc(u->x->a, u->n_buckets, sizeof *g->b)))
        return fj_err_set(u->x->err, FJ_ENOMEM, NULL, "out of memory");
    add_cell(&g->b[i], &d);
    add_cell(&g->total, &d);
    return FJ_OK;
}

/* The bucket of time t (edges[0] <= t < edges[n]). */
static size_t bucket_of(const usage_run *u, int64_t t)
{
    size_t lo = 0, hi = u->n_buckets; /* edges[lo] <= t < edges[hi] */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (u->edges[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static bool listed(const fj_strlist *l, const char *s)
{
    if (!l->n)
        return true;
    for (size_t i = 0; s && i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return true;
    return false;
}

/* Adds the job's (r) node-samples in [lo, hi) (and the window) to the buckets b_lo..b_hi they fall
 * in: one summing read per bucket. */
static fj_status read_samples(usage_run *u, const fj_qrows *samples, const fj_qrows *r, size_t b_lo, size_t b_hi,
                              int64_t lo, int64_t hi, used *per)
{
    lo = lo > u->from ? lo : u->from;
    hi = hi < u->to ? hi : u->to;
    fj_status st = FJ_OK;
    for (size_t i = b_lo; i <= b_hi && st == FJ_OK; i++) {
        int64_t a = lo > u->edges[i] ? lo : u->edges[i], b = hi < u->edges[i + 1] ? hi : u->edges[i + 1];
        if (a >= b)
            continue;
        fj_qr_bind(samples, 1, fj_qr_i64(r, J_ID));
        fj_qr_bind(samples, 2, a);
        fj_qr_bind(samples, 3, b);
        bool row = false;
        used *p = &per[i];
        while ((st = fj_qr_step(samples, "usage samples", &row)) == FJ_OK && row) {
            int64_t n = fj_qr_i64(samples, 0);
            if (n <= 0)
                continue;
            p->n += n;
            p->cpu_m += fj_qr_dbl(samples, 1);
            p->mem_kb += fj_qr_dbl(samples, 2);
            p->gpu_m += fj_qr_dbl(samples, 3);
            p->nodes++; /* a row per host with node-samples here */
        }
        fj_qr_reset(samples);
    }
    return st;
}

/* The allocation of a job without Sonar's Slurm record from its ClusterCockpit job, if one joins:
 * its span, hardware threads (as cores), accelerators (as GPU cards), project (as account) and
 * partition; memory unknown. The texts are copied (the statement is reset). */
static fj_status cc_alloc(usage_run *u, const fj_qrows *cc, const fj_qrows *r, ujob *j, const char **account,
                          const char **partition)
{
    fj_qr_bind(cc, 1, u->x->cluster_id);
    fj_qr_bind(cc, 2, fj_qr_i64(r, J_JOB));
    fj_qr_bind(cc, 3, j->last);
    fj_qr_bind(cc, 4, j->first);
    bool row = false;
    fj_status st = fj_qr_step(cc, "usage cc job", &row);
    if (st == FJ_OK && row) {
        j->slurm = true;
        j->a0 = fj_qr_i64(cc, 0);
        j->a1 = fj_qr_null(cc, 1) ? j->last : fj_qr_i64(cc, 1);
        j->cores_known = !fj_qr_null(cc, 4);
        j->cores = (double)fj_qr_i64(cc, 4);
        j->gpus_known = !fj_qr_null(cc, 5);
        j->gpus = (double)fj_qr_i64(cc, 5);
        const char *a = fj_qr_text(cc, 2), *p = fj_qr_text(cc, 3);
        if ((a && !(*account = fj_arena_strdup(u->x->a, a))) || (p && !(*partition = fj_arena_strdup(u->x->a, p))))
            st = fj_err_set(u->x->err, FJ_ENOMEM, NULL, "out of memory");
    }
    fj_qr_reset(cc);
    return st;
}

/* The job's hosts (node ids) into j, in the query's arena. */
static fj_status job_hosts(usage_run *u, int64_t id, fj_qenergy_job *j)
{
    int64_t *hosts = NULL;
    size_t n = 0, cap = 0;
    bool row = false;
    fj_status st;
    fj_qr_bind(&u->hosts, 1, id);
    while ((st = fj_qr_step(&u->hosts, "usage job hosts", &row)) == FJ_OK && row) {
        if ((st = fj_qgrow(u->x->a, u->x->err, &hosts, n, &cap, sizeof *hosts, 8)) != FJ_OK)
            break;
        hosts[n++] = fj_qr_i64(&u->hosts, 0);
    }
    fj_qr_reset(&u->hosts);
    j->hosts = hosts;
    j->n_hosts = n;
    return st;
}

static fj_status one_job(usage_run *u, const fj_qrows *r, const fj_qrows *samples, const fj_qrows *nodes,
                         const fj_qrows *cc, used *per)
{
    const fj_usage_req *req = u->req;
    const char *user = fj_qr_text(r, J_USER);
    const char *account = fj_qr_text(r, J_ACCOUNT), *partition = fj_qr_text(r, J_PARTITION);
    ujob j = {0};
    j.first = fj_qr_i64(r, J_FIRST);
    j.last = fj_qr_i64(r, J_LAST);
    j.hosts = fj_qr_i64(r, J_HOSTS);
    j.slurm = !fj_qr_null(r, J_SLURM);
    j.a0 = j.slurm && !fj_qr_null(r, J_START) ? fj_qr_i64(r, J_START) : j.first;
    j.a1 = j.slurm && !fj_qr_null(r, J_END) ? fj_qr_i64(r, J_END) : j.last;
    fj_status st;
    if (!j.slurm && fj_qr_i64(r, J_EPOCH) == 0 && (st = cc_alloc(u, cc, r, &j, &account, &partition)) != FJ_OK)
        return st;
    if (!listed(&req->users, user) || !listed(&req->accounts, account) || !listed(&req->partitions, partition))
        return FJ_OK;
    if (j.a1 < j.a0)
        j.a1 = j.a0;
    int64_t e0 = j.a0 < j.first ? j.a0 : j.first, e1 = j.a1 > j.last ? j.a1 : j.last;
    if (e1 < u->from || e0 >= u->to || (e1 == u->from && e0 < e1))
        return FJ_OK; /* read for the margin, outside the window */
    if (j.slurm && !fj_qr_null(r, J_SLURM)) {
        j.cores_known = !fj_qr_null(r, J_CPUS);
        j.cores = (double)fj_qr_i64(r, J_CPUS);
        j.gpus_known = !fj_qr_null(r, J_GPUS);
        j.gpus = (double)fj_qr_i64(r, J_GPUS);
        int64_t n_nodes = fj_qr_null(r, J_NODES) ? j.hosts : fj_qr_i64(r, J_NODES);
        j.mem_known = !fj_qr_null(r, J_MEM_REQ);
        j.mem_kb = (double)fj_qr_i64(r, J_MEM_REQ) * (double)n_nodes;
    }
    const char *name = req->by == FJ_UB_USER        ? user
                       : req->by == FJ_UB_ACCOUNT   ? account
                       : req->by == FJ_UB_PARTITION ? partition
                                                    : u->x->q->cluster;
    group *g = NULL;
    st = group_of(u, name, &g);
    if (st != FJ_OK)
        return st;

    /* the buckets the job's extent touches */
    size_t b_lo = bucket_of(u, e0 > u->from ? e0 : u->from), b_hi = bucket_of(u, e1 < u->to ? e1 : u->to - 1);
    bool whole = j.first >= u->from && j.last < u->to && bucket_of(u, j.first) == bucket_of(u, j.last);
    for (size_t i = b_lo; i <= b_hi; i++)
        per[i] = (used){0, 0, 0, 0, 0};
    if (whole) {
        /* every sample in one bucket: the summary's sums */
        size_t i = bucket_of(u, j.first);
        per[i] = (used){(double)fj_qr_i64(r, J_CPU), (double)fj_qr_i64(r, J_MEM), (double)fj_qr_i64(r, J_GPU),
                        fj_qr_i64(r, J_NS), j.hosts};
    } else if (j.first >= u->from && j.last < u->to) {
        /* in the window, across bucket edges: the samples of every bucket but the one holding most
         * of the sampled span are read, and that one is the summary less them (exact: integer sums) */
        size_t big = b_lo;
        double most = -1;
        for (size_t i = b_lo; i <= b_hi; i++) {
            double ov = overlap(j.first, j.last, u->edges[i], u->edges[i + 1]);
            if (ov > most)
                most = ov, big = i;
        }
        if ((st = read_samples(u, samples, r, b_lo, b_hi, j.first, u->edges[big], per)) != FJ_OK ||
            (st = read_samples(u, samples, r, b_lo, b_hi, u->edges[big + 1], j.last + 1, per)) != FJ_OK)
            return st;
        used rest = {(double)fj_qr_i64(r, J_CPU), (double)fj_qr_i64(r, J_MEM), (double)fj_qr_i64(r, J_GPU),
                     fj_qr_i64(r, J_NS), 0};
        for (size_t i = b_lo; i <= b_hi; i++)
            if (i != big) {
                rest.cpu_m -= per[i].cpu_m;
                rest.mem_kb -= per[i].mem_kb;
                rest.gpu_m -= per[i].gpu_m;
                rest.n -= per[i].n;
            }
        fj_qr_bind(nodes, 1, fj_qr_i64(r, J_ID));
        fj_qr_bind(nodes, 2, u->edges[big]);
        fj_qr_bind(nodes, 3, u->edges[big + 1]);
        bool row = false;
        if ((st = fj_qr_step(nodes, "usage hosts", &row)) == FJ_OK && row)
            rest.nodes = fj_qr_i64(nodes, 0);
        fj_qr_reset(nodes);
        if (st != FJ_OK)
            return st;
        per[big] = rest;
    } else if ((st = read_samples(u, samples, r, b_lo, b_hi, u->from, u->to, per)) != FJ_OK) {
        return st; /* across the window's edge: its samples inside the window */
    }
    /* the GPU part, for a job that had a card or holds some */
    fj_qenergy_job ej = {
        .job = fj_qr_i64(r, J_JOB),
        .epoch = fj_qr_i64(r, J_EPOCH),
        .first = j.first,
        .last = j.last,
        .allocated_resources = fj_qr_null(r, J_TRES) ? NULL : fj_qr_text(r, J_TRES),
        .used_gpu = fj_qr_i64(r, J_GPU_PEAK) > 0 || fj_qr_i64(r, J_GM_PEAK) > 0,
    };
    bool energy = !u->x->q->no_energy && ej.job != 0 && (ej.used_gpu || fj_en_tres_gpus(ej.allocated_resources) > 0);
    if (energy && ej.allocated_resources &&
        !(ej.allocated_resources = fj_arena_strdup(u->x->a, ej.allocated_resources)))
        return fj_err_set(u->x->err, FJ_ENOMEM, NULL, "out of memory");
    if (energy && (st = job_hosts(u, fj_qr_i64(r, J_ID), &ej)) != FJ_OK)
        return st;
    for (size_t i = b_lo; i <= b_hi && st == FJ_OK; i++) {
        fj_job_energy en;
        if (energy) {
            /* cut at the bucket's edges, but not at the job's own ends where the window does not
             * cut it: its first interval may begin before its first sample's bucket */
            int64_t lo = i == b_lo && u->edges[i] > u->from ? INT64_MIN : u->edges[i];
            int64_t hi = i == b_hi && u->edges[i + 1] < u->to ? INT64_MAX : u->edges[i + 1];
            if ((st = fj_qenergy_job_read(&u->env, &u->energy, &ej, lo, hi, &en)) != FJ_OK)
                return st;
        }
        st = add_job_bucket(u, g, &j, i, &per[i], energy ? &en : NULL);
    }
    return st;
}

/* --- the answer --------------------------------------------------------------------------------- */

static fj_value ratio(const fig *f)
{
    return f->known && f->alloc > 0 ? fj_value_real(f->used_alloc / f->alloc) : fj_value_null();
}

/* The row's figures, in fj_usage_figure order; unit: what a second of the sums is in hours and
 * GiB. */
static void figures(const fj_query *q, const cell *c, fj_value *v)
{
    const double h = 3600.0, gib_h = 3600.0 * 1048576.0;
    v[FJ_UF_JOBS] = fj_value_int(c->jobs);
    v[FJ_UF_JOBS_ALLOC] = fj_value_int(c->jobs_alloc);
    v[FJ_UF_WALL_H] = fj_value_real(c->wall_s / h);
    v[FJ_UF_CORE_H_ALLOC] = c->core.known ? fj_value_real(c->core.alloc / h) : fj_value_null();
    v[FJ_UF_CORE_H_USED] = fj_value_real(c->core.used / h);
    v[FJ_UF_CPU_EFF] = ratio(&c->core);
    v[FJ_UF_GPU_H_ALLOC] = c->gpu.known ? fj_value_real(c->gpu.alloc / h) : fj_value_null();
    v[FJ_UF_GPU_H_USED] = fj_value_real(c->gpu.used / h);
    v[FJ_UF_GPU_EFF] = ratio(&c->gpu);
    v[FJ_UF_MEM_GIB_H_ALLOC] = c->mem.known ? fj_value_real(c->mem.alloc / gib_h) : fj_value_null();
    v[FJ_UF_MEM_GIB_H_USED] = fj_value_real(c->mem.used / gib_h);
    v[FJ_UF_MEM_EFF] = ratio(&c->mem);
    double kwh = fj_en_kwh(c->energy_j), pue = q->pue > 0 ? q->pue : 1.0;
    v[FJ_UF_ENERGY_KWH] = c->energy_known ? fj_value_real(kwh) : fj_value_null();
    v[FJ_UF_CO2E_KG] = c->energy_known && q->carbon_g_per_kwh > 0
                           ? fj_value_real(kwh * pue * q->carbon_g_per_kwh / 1000.0)
                           : fj_value_null();
}

static double num(const fj_value *v)
{
    return v->t == FJ_VT_INT ? (double)v->i : v->d;
}

typedef struct ranked {
    group *g;
    fj_value key;
} ranked;

/* The order of cmp_ranked, set before qsort on the query's thread. */
static _Thread_local int tl_sort, tl_desc;

static int cmp_name(const char *a, const char *b)
{
    if (!a || !b)
        return a ? -1 : b ? 1 : 0; /* no name last */
    return strcmp(a, b);
}

static int cmp_ranked(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    int c = 0;
    if (tl_sort != FJ_UF_GROUP) {
        bool an = a->key.t == FJ_VT_NULL, bn = b->key.t == FJ_VT_NULL;
        if (an || bn)
            c = an && bn ? 0 : an ? 1 : -1; /* nulls last either way */
        else {
            double x = num(&a->key), y = num(&b->key);
            c = x < y ? -1 : x > y ? 1 : 0;
            if (tl_desc)
                c = -c;
        }
        if (c)
            return c;
        return cmp_name(a->g->name, b->g->name);
    }
    c = cmp_name(a->g->name, b->g->name);
    return tl_desc ? -c : c;
}

static fj_status send(usage_run *u)
{
    fj_sink *k = u->x->k;
    fj_status st = k->table(k, &fj_qt_account_usage);
    if (st != FJ_OK || !u->n_groups)
        return st;
    ranked *r = fj_arena_alloc(u->x->a, u->n_groups * sizeof *r);
    if (!r)
        return fj_err_set(u->x->err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < u->n_groups; i++) {
        fj_value f[FJ_UF__COUNT];
        figures(u->x->q, &u->groups[i].total, f);
        r[i] = (ranked){&u->groups[i], u->req->sort < FJ_UF__COUNT ? f[u->req->sort] : fj_value_null()};
    }
    tl_sort = u->req->sort;
    tl_desc = u->req->desc;
    qsort(r, u->n_groups, sizeof *r, cmp_ranked);
    size_t n = u->req->limit && u->req->limit < u->n_groups ? u->req->limit : u->n_groups;
    bool bucketed = u->req->bucket != FJ_UBK_NONE;
    for (size_t b = 0; b < u->n_buckets && st == FJ_OK; b++)
        for (size_t i = 0; i < n && st == FJ_OK; i++) {
            const group *g = r[i].g;
            if (!g->b || !g->b[b].jobs)
                continue;
            fj_value v[2 + FJ_UF__COUNT];
            v[0] = bucketed ? fj_value_time(u->edges[b]) : fj_value_null();
            v[1] = fj_value_text(g->name);
            figures(u->x->q, &g->b[b], v + 2);
            st = k->row(k, v);
        }
    return st;
}

static fj_status run(usage_run *u, const fj_qrows *jobs, const fj_qrows *samples, const fj_qrows *nodes,
                     const fj_qrows *cc)
{
    fj_qx *x = u->x;
    fj_qr_bind(jobs, 1, x->cluster_id);
    fj_qr_bind(jobs, 2, u->from - SLURM_MARGIN_S);
    fj_qr_bind(jobs, 3, u->to + SLURM_MARGIN_S);
    fj_qr_bind(jobs, 4, fj_job_last_day(u->from - SLURM_MARGIN_S));
    used *per = fj_arena_alloc(x->a, u->n_buckets * sizeof *per);
    if (!per)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    bool row = false;
    fj_status st;
    while ((st = fj_qr_step(jobs, "usage jobs", &row)) == FJ_OK && row)
        if ((st = one_job(u, jobs, samples, nodes, cc, per)) != FJ_OK)
            return st;
    if (st != FJ_OK)
        return st;
    return send(u);
}

fj_status fj_store_account_usage(fj_store *s, fj_query *q, const fj_usage_req *req, fj_sink *k, fj_err *err)
{
    fj_time to = q->to ? q->to : q->now, from = q->from ? q->from : to - 7 * 86400;
    if (from >= to)
        return fj_err_set(err, FJ_EINVAL, "from", "parameter 'from': not before 'to'");
    q->from = from; /* what was used, for the answer */
    q->to = to;
    size_t n = 1;
    for (int64_t t = next_edge(req->bucket, from); t < to; t = next_edge(req->bucket, t))
        if (++n > MAX_BUCKETS)
            return fj_err_set(err, FJ_EINVAL, "bucket", "parameter 'bucket': more than %d buckets in the window",
                              MAX_BUCKETS);
    fj_qx x;
    fj_status rs = fj_qx_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    usage_run u = {.x = &x, .req = req, .from = from, .to = to, .n_buckets = n};
    fj_qrows js = {0}, ss = {0}, ns = {0}, cs = {0};
    const char *energy_sql[2];
    fj_qenergy_sql(fj_driver_of(s)->layout, energy_sql);
    if (!(u.edges = fj_arena_alloc(x.a, (n + 1) * sizeof *u.edges))) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    u.edges[0] = from;
    for (size_t i = 1; i < n; i++)
        u.edges[i] = next_edge(req->bucket, u.edges[i - 1]);
    u.edges[n] = to;
    if ((rs = fj_qx_cluster(&x)) != FJ_OK || (rs = fj_qx_prepare(&x, jobs_sql, &js)) != FJ_OK ||
        (rs = fj_qx_prepare(&x, samples_sql, &ss)) != FJ_OK || (rs = fj_qx_prepare(&x, nodes_sql, &ns)) != FJ_OK ||
        (rs = fj_qx_prepare(&x, cc_sql, &cs)) != FJ_OK || (rs = fj_qx_prepare(&x, hosts_sql, &u.hosts)) != FJ_OK ||
        (rs = fj_qx_prepare(&x, energy_sql[0], &u.energy.cards)) != FJ_OK ||
        (rs = fj_qx_prepare(&x, energy_sql[1], &u.energy.use)) != FJ_OK)
        goto out;
    u.env = fj_qx_env(&x);
    rs = run(&u, &js, &ss, &ns, &cs);
out:
    fj_qx_finalize(&x, &js);
    fj_qx_finalize(&x, &ss);
    fj_qx_finalize(&x, &ns);
    fj_qx_finalize(&x, &cs);
    fj_qx_finalize(&x, &u.hosts);
    fj_qx_finalize(&x, &u.energy.cards);
    fj_qx_finalize(&x, &u.energy.use);
    return fj_qx_end(&x, rs);
}
