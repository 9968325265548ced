/* storage/core/rectify.c — job keys, gap matching and running job summaries (see storage/core/rectify.h). */
#include "storage/core/rectify.h"

#include <math.h>
#include <string.h>

fj_jobkey fj_jobkey_of(const char *cluster, const char *node, const fj_sample_job *j, const fj_sample_proc *p)
{
    fj_jobkey k;
    memset(&k, 0, sizeof k);
    k.cluster = cluster;
    k.job = j->job;
    if (j->job != 0 && j->epoch == 0) {
        k.kind = FJ_JOBKEY_SLURM;
        return k;
    }
    k.node = node;
    k.epoch = j->epoch;
    if (j->job != 0) {
        k.kind = FJ_JOBKEY_LOCAL;
        return k;
    }
    k.kind = FJ_JOBKEY_PROCESS;
    if (p) {
        k.pid = p->pid;
        /* A pid of 0 or a synthetic one names a rolled-up group, not a process: Sonar derives the
         * synthetic pid from (job, ppid, cmd), so those are what identify it. */
        if (p->pid == 0 || p->synthetic_pid) {
            k.ppid = p->ppid;
            k.cmd = p->cmd;
        }
    }
    return k;
}

static bool str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

bool fj_jobkey_equal(const fj_jobkey *a, const fj_jobkey *b)
{
    return a->kind == b->kind && a->job == b->job && a->epoch == b->epoch && a->pid == b->pid &&
           a->ppid == b->ppid && str_eq(a->cluster, b->cluster) && str_eq(a->node, b->node) &&
           str_eq(a->cmd, b->cmd);
}

int64_t fj_jobkey_gap(const fj_jobkey *k, int64_t job_gap_s)
{
    if (k->kind == FJ_JOBKEY_SLURM)
        return INT64_MAX;
    return job_gap_s > 0 ? job_gap_s : FJ_JOB_GAP_DEFAULT_S;
}

int64_t fj_pct_to_m(double pct)
{
    if (!(pct > 0)) /* also NaN */
        return 0;
    double m = pct * 1000.0 + 0.5;
    if (m >= 9.2e18)
        return INT64_MAX;
    return (int64_t)m;
}

int64_t fj_sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

static int64_t u64_to_i64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

void fj_jobcontrib_add_proc(fj_jobcontrib *c, const fj_sample_proc *p)
{
    c->nproc = fj_sat_add(c->nproc, fj_sat_add(u64_to_i64(p->rolledup), 1));
    c->mem_kb = fj_sat_add(c->mem_kb, u64_to_i64(p->resident_kb));
    for (size_t i = 0; i < p->n_gpus; i++) {
        c->gpu_m = fj_sat_add(c->gpu_m, fj_pct_to_m(p->gpus[i].gpu_util));
        c->gpumem_kb = fj_sat_add(c->gpumem_kb, u64_to_i64(p->gpus[i].gpu_memory_kb));
    }
}

static int64_t max_i64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* a = op(a, b), field by field: the sums (fj_sat_add) and the peaks (max_i64) of contributions. */
static void contrib_fold(fj_jobcontrib *a, const fj_jobcontrib *b, int64_t (*op)(int64_t, int64_t))
{
    a->nproc = op(a->nproc, b->nproc);
    a->cpu_m = op(a->cpu_m, b->cpu_m);
    a->mem_kb = op(a->mem_kb, b->mem_kb);
    a->gpu_m = op(a->gpu_m, b->gpu_m);
    a->gpumem_kb = op(a->gpumem_kb, b->gpumem_kb);
}

void fj_jobsum_add(fj_jobsum *s, fj_time t, const fj_jobcontrib *c)
{
    if (s->n_samples == 0) {
        s->first_seen = s->last_seen = t;
        s->sum = *c;
        s->peak = *c;
        s->n_samples = 1;
        return;
    }
    if (t < s->first_seen)
        s->first_seen = t;
    if (t > s->last_seen)
        s->last_seen = t;
    s->n_samples++;
    contrib_fold(&s->sum, c, fj_sat_add);
    contrib_fold(&s->peak, c, max_i64);
}

void fj_jobsum_merge(fj_jobsum *into, const fj_jobsum *from)
{
    if (from->n_samples == 0)
        return;
    if (into->n_samples == 0) {
        *into = *from;
        return;
    }
    if (from->first_seen < into->first_seen)
        into->first_seen = from->first_seen;
    if (from->last_seen > into->last_seen)
        into->last_seen = from->last_seen;
    into->n_samples = fj_sat_add(into->n_samples, from->n_samples);
    contrib_fold(&into->sum, &from->sum, fj_sat_add);
    contrib_fold(&into->peak, &from->peak, max_i64);
}

size_t fj_rect_match(const fj_jobsum *inst, size_t n, fj_time t, int64_t gap, size_t *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        /* first - gap <= t <= last + gap, written so that nothing overflows: a difference of
         * two int64 in the right order always fits in uint64. */
        uint64_t g = gap < 0 ? 0 : (uint64_t)gap;
        bool after_start = t >= inst[i].first_seen || (uint64_t)inst[i].first_seen - (uint64_t)t <= g;
        bool before_end = t <= inst[i].last_seen || (uint64_t)t - (uint64_t)inst[i].last_seen <= g;
        if (after_start && before_end)
            out[k++] = i;
    }
    return k;
}

size_t fj_rect_join(const fj_jobsum *inst, size_t n, fj_time t, int64_t gap, const fj_jobcontrib *c, size_t *match,
                    fj_jobsum *sum)
{
    size_t m = fj_rect_match(inst, n, t, gap, match);
    if (m == 0)
        memset(sum, 0, sizeof *sum);
    else
        *sum = inst[match[0]];
    for (size_t i = 1; i < m; i++)
        fj_jobsum_merge(sum, &inst[match[i]]);
    fj_jobsum_add(sum, t, c);
    return m;
}

fj_rjkey fj_rjkey_of(const fj_jobkey *k, const fj_sample_proc *p, int64_t cluster_id, int64_t node_id,
                     int64_t cmd_id, int64_t (*to_i64)(uint64_t))
{
    bool group = k->kind == FJ_JOBKEY_PROCESS && p && (p->pid == 0 || p->synthetic_pid);
    return (fj_rjkey){cluster_id,
                      to_i64(k->job),
                      k->kind == FJ_JOBKEY_SLURM ? 0 : node_id,
                      to_i64(k->epoch),
                      to_i64(k->pid),
                      group ? to_i64(p->ppid) : 0,
                      group ? cmd_id : 0};
}
