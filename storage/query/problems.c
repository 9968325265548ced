/* storage/query/problems.c — the problem-jobs report (storage/core/store_problems.h, docs/problems.md),
 * written once over the driver: four reads of stored summaries (the window's jobs with their Slurm
 * request, their activity per node from job_activity and per GPU card from job_gpu_activity, the
 * cluster's latest sysinfo per node), the rules judged in C, and the rows handed over per problem
 * or per user. A job with a GPU row (gpu_idle, gpu_unused) then has its GPU energy read
 * (storage/query/energy.h, the job list's rules) for the energy its idle held cards drew. */
#include "storage/query/jobs.h"

#include "storage/core/store_problems.h"
#include "storage/query/energy.h"
#include "storage/query/qx.h"
#include "storage/query/value.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const fj_problem_rule_names[FJ_PR__COUNT] = {
#define FJ_PR_NAME(id, name) name,
    FJ_PROBLEM_RULES(FJ_PR_NAME)
#undef FJ_PR_NAME
};

void fj_problem_rules_default(fj_problem_rules *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < FJ_PR__COUNT; i++)
        r->want[i] = true;
    r->gpu_idle_s = 2 * 3600;
    r->gpu_unused_s = 3600;
    r->cpu_ratio = 0.25;
    r->cpu_min_s = 2 * 3600;
    r->mem_ratio = 0.25;
    r->mem_min_s = 3600;
    r->mem_min_request_kb = 1024.0 * 1024.0;
    r->deadweight_s = 4 * 3600;
}

/* --- what the rules read ----------------------------------------------------------------------- */

typedef struct pjob {
    int64_t id, job, node_id, first, last, n_samples, cpu_sum_m, mem_peak_kb, gpu_peak_m, gpumem_peak_kb;
    int64_t req_cpus, req_mem_kb, req_nodes; /* the Slurm request; 0: none or unknown */
    bool slurm;
    const char *user;
    int64_t epoch;
    const char *tres;    /* Slurm's AllocTRES, or NULL */
    bool idle_set;       /* the job has a GPU energy figure: idle_kwh is its held idle cards' part */
    double idle_kwh;
} pjob;

typedef struct pact {
    int64_t node_id, first, last, cpu_busy, gpu_busy; /* job_activity; busy 0: never */
} pact;

typedef struct pcard {
    int64_t node_id, card, first, busy; /* job_gpu_activity; busy 0: never */
} pcard;

typedef struct pnode {
    int64_t cores, gpus; /* latest sysinfo; -1: unknown */
} pnode;

typedef struct problem {
    fj_problem_rule rule;
    const pjob *job;
    int64_t node_id; /* 0: the job as a whole */
    int64_t card;    /* gpu_idle of one card: its index; -1: none */
    int64_t nodes;
    int64_t for_s;
    fj_value used, held;
    double ratio; /* < 0: none */
} problem;

typedef struct found {
    problem *v;
    size_t n, cap;
    fj_arena *a;
} found;

static fj_status add(found *f, const problem *p)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 256;
        problem *v = fj_arena_alloc(f->a, cap * sizeof *v);
        if (!v)
            return FJ_ENOMEM;
        if (f->n)
            memcpy(v, f->v, f->n * sizeof *v);
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = *p;
    return FJ_OK;
}

static int64_t max3(int64_t a, int64_t b, int64_t c)
{
    int64_t m = a > b ? a : b;
    return m > c ? m : c;
}

static pnode node_of(const fj_qnodes *nodes, const pnode *info, int64_t id)
{
    long i = fj_qnodes_index(nodes, id);
    return i < 0 ? (pnode){-1, -1} : info[i];
}

/* gpu_idle on one node of a job that used a GPU: per card where the job had processes on cards
 * there (cards[0..n_cards), this node's), an idle stretch of each card from its last use (or the
 * job's first node-sample on it) to the job's last node-sample on the node, which still held it;
 * per node, as a whole, where it had none (its processes there touched no card). */
static fj_status gpu_idle(const fj_problem_rules *r, const pjob *j, const pact *a, const pcard *cards,
                          size_t n_cards, pnode nd, int64_t n_nodes, found *f)
{
    fj_status st = FJ_OK;
    for (size_t c = 0; c < n_cards && st == FJ_OK; c++) {
        int64_t idle = a->last - (cards[c].busy > cards[c].first ? cards[c].busy : cards[c].first);
        if (idle >= r->gpu_idle_s)
            st = add(f, &(problem){FJ_PR_GPU_IDLE, j, a->node_id, cards[c].card, n_nodes, idle, fj_value_real(0),
                                   fj_value_real(1), -1});
    }
    if (n_cards || !(nd.gpus > 0 || a->gpu_busy > 0))
        return st;
    int64_t idle = a->last - (a->gpu_busy > a->first ? a->gpu_busy : a->first);
    if (idle >= r->gpu_idle_s)
        st = add(f, &(problem){FJ_PR_GPU_IDLE, j, a->node_id, -1, n_nodes, idle, fj_value_real(0),
                               nd.gpus > 0 ? fj_value_real((double)nd.gpus) : fj_value_null(), -1});
    return st;
}

/* The rules of one job, whose activity rows are act[0..n_act) and card rows card[0..n_card), both
 * in node order. */
static fj_status judge(const fj_problem_rules *r, const pjob *j, const pact *act, size_t n_act, const pcard *card,
                       size_t n_card, const fj_qnodes *nodes, const pnode *info, found *f)
{
    fj_status st = FJ_OK;
    int64_t n_nodes = n_act ? (int64_t)n_act : 1, dur = j->last - j->first;
    bool saw_gpu = j->gpu_peak_m > 0 || j->gpumem_peak_kb > 0;
    size_t c0 = 0;
    for (size_t i = 0; i < n_act && st == FJ_OK; i++) {
        const pact *a = &act[i];
        pnode nd = node_of(nodes, info, a->node_id);
        fj_value cards = nd.gpus > 0 ? fj_value_real((double)nd.gpus) : fj_value_null();
        while (c0 < n_card && card[c0].node_id < a->node_id)
            c0++;
        size_t c1 = c0;
        while (c1 < n_card && card[c1].node_id == a->node_id)
            c1++;
        if (r->want[FJ_PR_GPU_IDLE] && saw_gpu)
            st = gpu_idle(r, j, a, card + c0, c1 - c0, nd, n_nodes, f);
        c0 = c1;
        if (st == FJ_OK && r->want[FJ_PR_GPU_UNUSED] && !saw_gpu && nd.gpus > 0 &&
            a->last - a->first >= r->gpu_unused_s)
            st = add(f, &(problem){FJ_PR_GPU_UNUSED, j, a->node_id, -1, n_nodes, a->last - a->first, fj_value_real(0),
                                   cards, -1});
        if (st == FJ_OK && r->want[FJ_PR_DEADWEIGHT]) {
            int64_t idle = a->last - max3(a->cpu_busy, a->gpu_busy, a->first);
            if (idle >= r->deadweight_s)
                st = add(f, &(problem){FJ_PR_DEADWEIGHT, j, a->node_id, -1, n_nodes, idle, fj_value_null(),
                                       fj_value_null(), -1});
        }
    }
    if (st != FJ_OK)
        return st;

    if (r->want[FJ_PR_CPU_LOW] && dur >= r->cpu_min_s && j->n_samples > 0) {
        /* Cores held per node: the Slurm allocation shared over its nodes, else the node's cores. */
        double held = 0;
        if (j->slurm && j->req_cpus > 0)
            held = (double)j->req_cpus / (double)(j->req_nodes > 0 ? j->req_nodes : n_nodes);
        else {
            pnode nd = node_of(nodes, info, j->node_id ? j->node_id : (n_act ? act[0].node_id : 0));
            held = nd.cores > 0 ? (double)nd.cores : 0;
        }
        double used = (double)j->cpu_sum_m / 100000.0 / (double)j->n_samples;
        if (held > 0 && used < r->cpu_ratio * held)
            st = add(f, &(problem){FJ_PR_CPU_LOW, j, 0, -1, n_nodes, dur, fj_value_real(used), fj_value_real(held),
                                   used / held});
    }
    if (st == FJ_OK && r->want[FJ_PR_MEM_LOW] && j->slurm && j->req_mem_kb > 0 &&
        (double)j->req_mem_kb >= r->mem_min_request_kb && dur >= r->mem_min_s &&
        (double)j->mem_peak_kb < r->mem_ratio * (double)j->req_mem_kb)
        st = add(f, &(problem){FJ_PR_MEM_LOW, j, 0, -1, n_nodes, dur, fj_value_real((double)j->mem_peak_kb),
                               fj_value_real((double)j->req_mem_kb), (double)j->mem_peak_kb / (double)j->req_mem_kb});
    return st;
}

/* --- reading ----------------------------------------------------------------------------------- */

/* The window's jobs: seen in it, found by their last day (?4: storage/query/jobs.h). With one user
 * asked for (?5 = 1), only that user's jobs (?6): over a long history the others' jobs and their
 * activity rows are most of what would be read; with several, every job is read and the others
 * are skipped as they come (wanted_user). */
#define WINDOW_SQL                                                                                   \
    " WHERE j.cluster_id = ?1 AND j.last_day >= ?4 AND j.last_seen >= ?2 AND j.first_seen <= ?3 AND j.job <> 0" \
    " AND (?5 = 0 OR j.user_id = (SELECT id FROM strings WHERE s = ?6))"

static const char jobs_sql[] =
    "SELECT j.id, j.job, j.node_id, u.s, j.first_seen, j.last_seen, j.n_samples, j.cpu_sum_m, j.mem_peak_kb,"
    " j.gpu_peak_m, j.gpumem_peak_kb, sc.cluster_id, sc.requested_cpus, sc.requested_memory_per_node_kb,"
    " sc.requested_node_count, j.epoch, sc.allocated_resources"
    " FROM jobs j LEFT JOIN strings u ON u.id = j.user_id"
    " LEFT JOIN slurm_jobs_current sc ON j.epoch = 0 AND sc.cluster_id = j.cluster_id AND sc.job_id = j.job"
    " AND sc.job_step = ''" WINDOW_SQL " ORDER BY j.id";

static const char activity_sql[] =
    "SELECT a.rjob_id, a.node_id, a.first_time, a.last_time, a.cpu_busy_last, a.gpu_busy_last"
    " FROM jobs j {cross} job_activity_now a ON a.rjob_id = j.id" WINDOW_SQL " ORDER BY a.rjob_id, a.node_id";

static const char cards_sql[] =
    "SELECT c.rjob_id, c.node_id, c.card, c.first_time, c.busy_last"
    " FROM jobs j {cross} job_gpu_activity c ON c.rjob_id = j.id" WINDOW_SQL
    " ORDER BY c.rjob_id, c.node_id, c.card";

/* A job's hosts, for its energy. */
static const char hosts_sql[] = "SELECT node_id FROM job_hosts WHERE rjob_id = ?1";

/* The latest sysinfo of each node of the cluster (rows in time order: the last one wins). */
static const char sysinfo_sql[] =
    "SELECT s.node_id, s.sockets * s.cores_per_socket * s.threads_per_core, s.n_gpus"
    " FROM nodes n {cross} sysinfo s ON s.node_id = n.id WHERE n.cluster_id = ?1 ORDER BY s.node_id, s.time";

static int64_t i64_or0(const fj_qrows *r, int col)
{
    return fj_qr_null(r, col) ? 0 : fj_qr_i64(r, col);
}

static fj_status read_nodes(fj_qx *x, const fj_qrows *r, pnode **out)
{
    pnode *info = fj_arena_alloc(x->a, (x->nodes.n + 1) * sizeof *info);
    if (!info)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < x->nodes.n; i++)
        info[i] = (pnode){-1, -1};
    fj_qr_bind(r, 1, x->cluster_id);
    bool row = false;
    fj_status st;
    while ((st = fj_qr_step(r, "sysinfo", &row)) == FJ_OK && row) {
        long i = fj_qnodes_index(&x->nodes, fj_qr_i64(r, 0));
        if (i >= 0)
            info[i] = (pnode){fj_qr_null(r, 1) ? -1 : fj_qr_i64(r, 1), fj_qr_i64(r, 2)};
    }
    *out = info;
    return st;
}

static bool wanted_user(const fj_strlist *users, const char *user)
{
    if (!users->n)
        return true;
    for (size_t u = 0; user && u < users->n; u++)
        if (strcmp(users->v[u], user) == 0)
            return true;
    return false;
}

/* Room for one more element in *v (cap elements of size each, n used), doubling when full. */
static void *grow(fj_arena *a, void *v, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return v;
    void *w = fj_arena_alloc(a, 2 * *cap * size);
    if (w && n)
        memcpy(w, v, n * size);
    *cap *= 2;
    return w;
}

/* What reads a job's GPU energy. */
typedef struct penergy {
    fj_qenv env;
    fj_qenergy_stmts st;
    fj_qrows hosts;
} penergy;

/* The GPU energy of job j, once it has a GPU row: the energy its held idle cards drew
 * (energy_how's gpu_idle_kwh) into j->idle_kwh, j->idle_set when the job has a GPU figure. */
static fj_status idle_energy(fj_qx *x, penergy *pe, pjob *j)
{
    int64_t *hosts = NULL;
    size_t n = 0, cap = 0;
    bool row = false;
    fj_status st;
    fj_qr_bind(&pe->hosts, 1, j->id);
    while ((st = fj_qr_step(&pe->hosts, "problem job hosts", &row)) == FJ_OK && row) {
        if ((st = fj_qgrow(x->a, x->err, &hosts, n, &cap, sizeof *hosts, 8)) != FJ_OK)
            break;
        hosts[n++] = fj_qr_i64(&pe->hosts, 0);
    }
    fj_qr_reset(&pe->hosts);
    if (st != FJ_OK)
        return st;
    fj_qenergy_job ej = {.job = j->job, .epoch = j->epoch, .first = j->first, .last = j->last, .hosts = hosts,
                         .n_hosts = n, .allocated_resources = j->tres,
                         .used_gpu = j->gpu_peak_m > 0 || j->gpumem_peak_kb > 0};
    fj_job_energy en;
    if ((st = fj_qenergy_job_read(&pe->env, &pe->st, &ej, INT64_MIN, INT64_MAX, &en)) != FJ_OK)
        return st;
    j->idle_set = en.set[FJ_EP_GPU];
    j->idle_kwh = fj_en_kwh(en.gpu_idle_joules);
    return FJ_OK;
}

/* Reads the window's jobs, their activity per node and per card (all three in job id order,
 * walked together) and judges each job. */
static fj_status read_and_judge(fj_qx *x, const fj_qrows *jobs, const fj_qrows *acts, const fj_qrows *cards,
                                const pnode *info, penergy *pe, found *f)
{
    const fj_query *q = x->q;
    const fj_problem_rules *r = q->problems;
    const fj_qrows *all[3] = {jobs, acts, cards};
    for (int k = 0; k < 3; k++) {
        fj_qr_bind(all[k], 1, x->cluster_id);
        fj_qr_bind(all[k], 2, q->from);
        fj_qr_bind(all[k], 3, q->to);
        fj_qr_bind(all[k], 4, fj_job_last_day(q->from));
        fj_qr_bind(all[k], 5, q->users.n == 1);
        fj_qr_bind_text(all[k], 6, q->users.n == 1 ? q->users.v[0] : "");
    }
    size_t act_cap = 64, n_act = 0, card_cap = 64, n_card = 0;
    pact *act = fj_arena_alloc(x->a, act_cap * sizeof *act);
    pcard *card = fj_arena_alloc(x->a, card_cap * sizeof *card);
    if (!act || !card)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    bool row = false, arow = false, crow = false;
    fj_status st = fj_qr_step(acts, "job activity", &arow);
    if (st == FJ_OK)
        st = fj_qr_step(cards, "job GPU activity", &crow);
    while (st == FJ_OK && (st = fj_qr_step(jobs, "problem jobs", &row)) == FJ_OK && row) {
        const char *user = fj_qr_null(jobs, 3) ? NULL : fj_qr_text(jobs, 3);
        /* a job of a user not asked for is not judged, but its activity rows are still walked */
        bool wanted = wanted_user(&q->users, user);
        pjob *j = fj_arena_calloc(x->a, 1, sizeof *j);
        if (!j)
            return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
        *j = (pjob){fj_qr_i64(jobs, 0),  fj_qr_i64(jobs, 1),  fj_qr_i64(jobs, 2),  fj_qr_i64(jobs, 4),
                    fj_qr_i64(jobs, 5),  fj_qr_i64(jobs, 6),  fj_qr_i64(jobs, 7),  fj_qr_i64(jobs, 8),
                    fj_qr_i64(jobs, 9),  fj_qr_i64(jobs, 10), i64_or0(jobs, 12), i64_or0(jobs, 13),
                    i64_or0(jobs, 14), !fj_qr_null(jobs, 11), user && wanted ? fj_arena_strdup(x->a, user) : NULL,
                    fj_qr_i64(jobs, 15), NULL, false, 0};
        if (wanted && !fj_qr_null(jobs, 16) && !(j->tres = fj_arena_strdup(x->a, fj_qr_text(jobs, 16))))
            return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
        n_act = 0;
        while (st == FJ_OK && arow && fj_qr_i64(acts, 0) <= j->id) {
            if (fj_qr_i64(acts, 0) == j->id && wanted) {
                if (!(act = grow(x->a, act, n_act, &act_cap, sizeof *act)))
                    return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
                act[n_act++] = (pact){fj_qr_i64(acts, 1), fj_qr_i64(acts, 2), fj_qr_i64(acts, 3),
                                      fj_qr_i64(acts, 4), fj_qr_i64(acts, 5)};
            }
            st = fj_qr_step(acts, "job activity", &arow);
        }
        n_card = 0;
        while (st == FJ_OK && crow && fj_qr_i64(cards, 0) <= j->id) {
            if (fj_qr_i64(cards, 0) == j->id && wanted) {
                if (!(card = grow(x->a, card, n_card, &card_cap, sizeof *card)))
                    return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
                card[n_card++] = (pcard){fj_qr_i64(cards, 1), fj_qr_i64(cards, 2), fj_qr_i64(cards, 3),
                                         fj_qr_i64(cards, 4)};
            }
            st = fj_qr_step(cards, "job GPU activity", &crow);
        }
        size_t n0 = f->n;
        if (st == FJ_OK && wanted && judge(r, j, act, n_act, card, n_card, &x->nodes, info, f) != FJ_OK)
            return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
        bool gpu_row = false;
        for (size_t i = n0; i < f->n; i++)
            gpu_row |= f->v[i].rule == FJ_PR_GPU_IDLE || f->v[i].rule == FJ_PR_GPU_UNUSED;
        if (st == FJ_OK && gpu_row && !q->problems->by_user)
            st = idle_energy(x, pe, j);
    }
    return st;
}

/* --- the answer -------------------------------------------------------------------------------- */

static void hours(char *out, size_t n, int64_t s)
{
    snprintf(out, n, "%.1f h", (double)s / 3600.0);
}

static void describe(const fj_problem_rules *r, const problem *p, char *out, size_t n)
{
    char a[32], b[32];
    switch (p->rule) {
    case FJ_PR_GPU_IDLE:
        hours(a, sizeof a, p->for_s);
        hours(b, sizeof b, r->gpu_idle_s);
        if (p->card >= 0)
            snprintf(out, n, "no use of GPU card %lld over the job's last %s on the node (rule: %s)",
                     (long long)p->card, a, b);
        else
            snprintf(out, n, "no GPU use on the node over the job's last %s (rule: %s)", a, b);
        break;
    case FJ_PR_GPU_UNUSED:
        hours(a, sizeof a, p->for_s);
        hours(b, sizeof b, r->gpu_unused_s);
        snprintf(out, n, "%s on a node with GPUs without using one (rule: %s)", a, b);
        break;
    case FJ_PR_CPU_LOW:
        hours(a, sizeof a, p->for_s);
        snprintf(out, n, "used %.2f of %.4g cores (%.1f%%) over %s (rule: below %.4g%%)", p->used.d, p->held.d,
                 100.0 * p->ratio, a, 100.0 * r->cpu_ratio);
        break;
    case FJ_PR_MEM_LOW:
        hours(a, sizeof a, p->for_s);
        snprintf(out, n, "peak %.2f GiB of %.2f GiB requested (%.1f%%) over %s (rule: below %.4g%%)",
                 p->used.d / 1048576.0, p->held.d / 1048576.0, 100.0 * p->ratio, a, 100.0 * r->mem_ratio);
        break;
    case FJ_PR_DEADWEIGHT:
    default:
        hours(a, sizeof a, p->for_s);
        hours(b, sizeof b, r->deadweight_s);
        snprintf(out, n, "no CPU or GPU use on the node over the job's last %s (rule: %s)", a, b);
        break;
    }
}

static fj_status send_problems(fj_qx *x, found *f)
{
    fj_sink *k = x->k;
    fj_status st = k->table(k, &fj_qt_problems);
    for (size_t i = 0; i < f->n && st == FJ_OK; i++) {
        const problem *p = &f->v[i];
        char detail[200], api[160], url[160];
        describe(x->q->problems, p, detail, sizeof detail);
        snprintf(api, sizeof api, "/api/v1/jobs/%lld?cluster=%s", (long long)p->job->id, x->q->cluster);
        snprintf(url, sizeof url, "/ui/job/%lld?cluster=%s", (long long)p->job->id, x->q->cluster);
        fj_value v[] = {
            fj_value_text(fj_problem_rule_names[p->rule]),
            fj_value_int(p->job->id),
            fj_value_int(p->job->job),
            fj_value_text(p->job->user),
            p->node_id ? fj_value_text(fj_qnodes_name(&x->nodes, p->node_id)) : fj_value_null(),
            p->card >= 0 ? fj_value_int(p->card) : fj_value_null(),
            fj_value_int(p->nodes),
            fj_value_time(p->job->first),
            fj_value_time(p->job->last),
            fj_value_int(p->for_s),
            p->used,
            p->held,
            p->ratio >= 0 ? fj_value_real(p->ratio) : fj_value_null(),
            fj_value_text(detail),
            fj_value_text(api),
            fj_value_text(url),
            (p->rule == FJ_PR_GPU_IDLE || p->rule == FJ_PR_GPU_UNUSED) && p->job->idle_set
                ? fj_value_real(p->job->idle_kwh)
                : fj_value_null(),
        };
        st = k->row(k, v);
    }
    return st;
}

static int by_user(const void *a, const void *b)
{
    const problem *p = a, *q = b;
    const char *u = p->job->user ? p->job->user : "", *v = q->job->user ? q->job->user : "";
    int c = strcmp(u, v);
    if (c)
        return c;
    return p->job->id < q->job->id ? -1 : p->job->id > q->job->id;
}

static fj_status send_users(fj_qx *x, found *f)
{
    fj_sink *k = x->k;
    fj_status st = k->table(k, &fj_qt_problem_users);
    if (f->n)
        qsort(f->v, f->n, sizeof *f->v, by_user);
    for (size_t i = 0; i < f->n && st == FJ_OK;) {
        const char *user = f->v[i].job->user;
        int64_t jobs = 0, rows = 0, per_rule[FJ_PR__COUNT] = {0}, last_job = -1;
        double core_h = 0, gpu_h = 0;
        for (; i < f->n && (f->v[i].job->user == user ||
                            (user && f->v[i].job->user && strcmp(f->v[i].job->user, user) == 0));
             i++) {
            const problem *p = &f->v[i];
            rows++;
            per_rule[p->rule]++;
            if (p->job->id != last_job)
                jobs++;
            last_job = p->job->id;
            if (p->rule == FJ_PR_CPU_LOW)
                core_h += (p->held.d - p->used.d) * (double)p->nodes * (double)p->for_s / 3600.0;
            else if (p->rule == FJ_PR_GPU_IDLE || p->rule == FJ_PR_GPU_UNUSED)
                gpu_h += (p->held.t == FJ_VT_REAL ? p->held.d : 1.0) * (double)p->for_s / 3600.0;
        }
        fj_value v[] = {
            fj_value_text(user),
            fj_value_int(jobs),
            fj_value_int(rows),
            fj_value_int(per_rule[FJ_PR_GPU_IDLE]),
            fj_value_int(per_rule[FJ_PR_GPU_UNUSED]),
            fj_value_int(per_rule[FJ_PR_CPU_LOW]),
            fj_value_int(per_rule[FJ_PR_MEM_LOW]),
            fj_value_int(per_rule[FJ_PR_DEADWEIGHT]),
            fj_value_real(core_h),
            fj_value_real(gpu_h),
        };
        st = k->row(k, v);
    }
    return st;
}

fj_status fj_store_query_problems(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    if (!q->problems)
        return fj_err_set(err, FJ_EINVAL, "problems", "no rules given");
    fj_time to = q->to ? q->to : q->now, from = q->from ? q->from : to - 86400;
    if (from > to)
        return fj_err_set(err, FJ_EINVAL, "from", "parameter 'from': after 'to'");
    q->from = from; /* what was used, for the answer */
    q->to = to;
    fj_qx x;
    fj_status rs = fj_qx_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_qrows js = {0}, as = {0}, cs = {0}, ss = {0};
    penergy pe = {0};
    const char *energy_sql[2];
    fj_qenergy_sql(fj_driver_of(s)->layout, energy_sql);
    pnode *info = NULL;
    found f = {NULL, 0, 0, x.a};
    if ((rs = fj_qx_cluster(&x)) != FJ_OK || (rs = fj_qx_load_nodes(&x)) != FJ_OK ||
        (rs = fj_qx_prepare(&x, jobs_sql, &js)) != FJ_OK || (rs = fj_qx_prepare(&x, activity_sql, &as)) != FJ_OK ||
        (rs = fj_qx_prepare(&x, cards_sql, &cs)) != FJ_OK ||
        (rs = fj_qx_prepare(&x, sysinfo_sql, &ss)) != FJ_OK || (rs = fj_qx_prepare(&x, hosts_sql, &pe.hosts)) != FJ_OK ||
        (rs = fj_qx_prepare(&x, energy_sql[0], &pe.st.cards)) != FJ_OK ||
        (rs = fj_qx_prepare(&x, energy_sql[1], &pe.st.use)) != FJ_OK)
        goto out;
    pe.env = fj_qx_env(&x);
    fj_qrows jobs = js, acts = as, cards = cs, sysinfo = ss;
    if ((rs = read_nodes(&x, &sysinfo, &info)) != FJ_OK ||
        (rs = read_and_judge(&x, &jobs, &acts, &cards, info, &pe, &f)) != FJ_OK)
        goto out;
    rs = q->problems->by_user ? send_users(&x, &f) : send_problems(&x, &f);
out:
    fj_qx_finalize(&x, &js);
    fj_qx_finalize(&x, &as);
    fj_qx_finalize(&x, &cs);
    fj_qx_finalize(&x, &ss);
    fj_qx_finalize(&x, &pe.hosts);
    fj_qx_finalize(&x, &pe.st.cards);
    fj_qx_finalize(&x, &pe.st.use);
    return fj_qx_end(&x, rs);
}
