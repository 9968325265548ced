/* storage/query/energy.c — a job's GPU energy from Sonar's per-card power (storage/query/energy.h;
 * the rules: docs/energy.md). Per host of the job: the node's card readings from a little before
 * the job's first sample to its last, and which jobs had processes on which card in each
 * node-sample; each card's intervals ending at the job's node-samples are integrated by the core
 * (storage/core/energy.h) and shared. */
#include "storage/query/energy.h"

#include "alloc.h"
#include "storage/query/jobs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How far before a job's first sample the readings are read: the interval that ends at the first
 * sample starts at the reading before it. An interval longer than this is not seen (at any usual
 * cadence it would be a gap anyway). */
enum { LOOKBACK_S = 1800 };

const char *fj_en_how_name(fj_en_how h)
{
    switch (h) {
    case FJ_EH_MEASURED: return "measured";
    case FJ_EH_APPORTIONED: return "apportioned";
    case FJ_EH_CC: return "cc-backend";
    case FJ_EH_MISSING: return "missing";
    default: return NULL;
    }
}

bool fj_job_energy_total(const fj_job_energy *en, double *kwh)
{
    bool any = false;
    double j = 0;
    for (int p = 0; p < FJ_EP__COUNT; p++)
        if (en->set[p])
            any = true, j += en->joules[p];
    *kwh = fj_en_kwh(j);
    return any;
}

void fj_qenergy_sql(const fj_layout_sql *ly, const char *sql[2])
{
    sql[0] = ly->energy_cards;
    sql[1] = ly->energy_card_use;
}

/* One job's use of one card in one node-sample. */
typedef struct use {
    int64_t t, idx, job, epoch;
    double util;
} use;

/* One card's interval ending at a node-sample of the job. */
typedef struct card_iv {
    int64_t t;
    double e;      /* joules inside the window (gaps: 0) */
    double in_s;   /* seconds inside the window */
    double share;  /* the job's fraction of e */
    bool gap, used, ours, shared, by_counter;
} card_iv;

/* NVML's counter is 64 bits of millijoules: it does not wrap in a card's life, so a fall is a
 * driver reload (a reset), whose interval is taken from the power. */
#define NVML_WRAP_J 0.0

/* The cadence of a card's readings (storage/core/energy.h's rule on their times). */
static double dual_cadence(const fj_qenv *e, const fj_en_dual *r, size_t n)
{
    fj_en_reading small[64], *t = n <= 64 ? small : fj_arena_alloc(e->a, n * sizeof *t);
    if (!t)
        return 0; /* no memory: no gap called */
    for (size_t i = 0; i < n; i++)
        t[i] = (fj_en_reading){r[i].t, 0};
    return fj_en_cadence(t, n);
}

/* A card series' readings: one (idx, uuid). */
typedef struct series {
    size_t first, n; /* in the readings array */
} series;

static int cmp_iv(const void *a, const void *b)
{
    const card_iv *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* The first use at or after (t, idx) in u[0..n), sorted by (t, idx). */
static size_t use_lower(const use *u, size_t n, int64_t t, int64_t idx)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u[mid].t < t || (u[mid].t == t && u[mid].idx < idx))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* What one host adds to the GPU part. */
typedef struct gpu_acc {
    double joules, idle, missing_s;
    size_t gaps, by_counter, by_power; /* the job's card intervals integrated each way */
    bool counted, shared, had_device;
} gpu_acc;

static fj_status read_cards(const fj_qenv *e, const fj_qrows *st, int64_t node, int64_t from, int64_t to,
                            fj_en_dual **rd, size_t *n_rd, series **sr, size_t *n_sr, int64_t **idx_of)
{
    size_t cap_rd = 0, cap_sr = 0, cap_idx = 0;
    int64_t cur_idx = INT64_MIN;
    const char *cur_uuid = NULL;
    char *uuid_copy = NULL;
    bool row = false;
    fj_status rs;
    fj_qr_bind(st, 1, node);
    fj_qr_bind(st, 2, from);
    fj_qr_bind(st, 3, to);
    while ((rs = fj_qr_step(st, "card power", &row)) == FJ_OK && row) {
        int64_t idx = fj_qr_i64(st, 0);
        const char *uuid = fj_qr_null(st, 1) ? NULL : fj_qr_text(st, 1);
        bool same_uuid = (!uuid && !cur_uuid) || (uuid && cur_uuid && strcmp(uuid, cur_uuid) == 0);
        if (idx != cur_idx || !same_uuid || !*n_sr) {
            if ((rs = fj_qgrow(e->a, e->err, sr, *n_sr, &cap_sr, sizeof **sr, 8)) != FJ_OK ||
                (rs = fj_qgrow(e->a, e->err, idx_of, *n_sr, &cap_idx, sizeof **idx_of, 8)) != FJ_OK)
                break;
            (*sr)[*n_sr] = (series){*n_rd, 0};
            (*idx_of)[*n_sr] = idx;
            (*n_sr)++;
            cur_idx = idx;
            uuid_copy = uuid ? fj_arena_strdup(e->a, uuid) : NULL;
            if (uuid && !uuid_copy) {
                rs = fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
                break;
            }
            cur_uuid = uuid_copy;
        }
        fj_en_dual d = {.t = (double)fj_qr_i64(st, 2)};
        if (!fj_qr_null(st, 3))
            d.has_power = true, d.power = fj_qr_dbl(st, 3);
        if (!fj_qr_null(st, 4))
            d.has_counter = true, d.counter = fj_qr_dbl(st, 4) / 1000.0; /* mJ */
        if (!d.has_power && !d.has_counter)
            continue; /* nothing to integrate in this reading */
        if ((rs = fj_qgrow(e->a, e->err, rd, *n_rd, &cap_rd, sizeof **rd, 64)) != FJ_OK)
            break;
        (*rd)[(*n_rd)++] = d;
        (*sr)[*n_sr - 1].n++;
    }
    fj_qr_reset(st);
    return rs;
}

static fj_status read_use(const fj_qenv *e, const fj_qrows *st, int64_t node, int64_t from, int64_t to, use **u,
                          size_t *n)
{
    size_t cap = 0;
    bool row = false;
    fj_status rs;
    fj_qr_bind(st, 1, node);
    fj_qr_bind(st, 2, from);
    fj_qr_bind(st, 3, to);
    while ((rs = fj_qr_step(st, "card use", &row)) == FJ_OK && row) {
        if ((rs = fj_qgrow(e->a, e->err, u, *n, &cap, sizeof **u, 64)) != FJ_OK)
            break;
        (*u)[(*n)++] = (use){fj_qr_i64(st, 0), fj_qr_i64(st, 1), fj_qr_i64(st, 2), fj_qr_i64(st, 3),
                             fj_qr_null(st, 4) ? 0 : fj_qr_dbl(st, 4)};
    }
    fj_qr_reset(st);
    return rs;
}

/* The GPU part on one host: the card intervals ending at times in [j->first, j->last], cut to
 * [from, to]; alloc: the cards the job holds on the node (< 0: unknown). */
static fj_status host_gpu(const fj_qenv *e, const fj_qenergy_stmts *st, const fj_qenergy_job *j, int64_t node,
                          double from, double to, double alloc, gpu_acc *acc)
{
    fj_en_dual *rd = NULL;
    series *sr = NULL;
    int64_t *idx_of = NULL;
    size_t n_rd = 0, n_sr = 0, n_use = 0;
    use *u = NULL;
    fj_status rs = read_cards(e, &st->cards, node, j->first - LOOKBACK_S, j->last, &rd, &n_rd, &sr, &n_sr, &idx_of);
    if (rs != FJ_OK || (rs = read_use(e, &st->use, node, j->first, j->last, &u, &n_use)) != FJ_OK)
        return rs;
    for (size_t i = 0; i < n_use; i++)
        if (u[i].job == j->job && u[i].epoch == j->epoch)
            acc->had_device = true;
    if (alloc > 0 && n_sr > 0)
        acc->had_device = true;

    card_iv *iv = NULL;
    size_t n_iv = 0, cap_iv = 0;
    for (size_t s = 0; s < n_sr; s++) {
        const fj_en_dual *r = rd + sr[s].first;
        size_t n = sr[s].n;
        double cadence = dual_cadence(e, r, n);
        for (size_t i = 1; i < n; i++) {
            int64_t t1 = (int64_t)r[i].t;
            if (t1 < j->first || t1 > j->last)
                continue;
            double in = fj_en_inside(r[i - 1].t, r[i].t, from, to) * (r[i].t - r[i - 1].t);
            if (in <= 0)
                continue;
            card_iv c = {.t = t1, .in_s = in};
            bool by_counter;
            c.gap = fj_en_is_gap(r[i].t - r[i - 1].t, cadence) ||
                    !fj_en_interval(&r[i - 1], &r[i], NVML_WRAP_J, from, to, &c.e, &by_counter);
            c.by_counter = by_counter;
            double sum = 0, ours = 0;
            size_t users = 0;
            for (size_t k = use_lower(u, n_use, t1, idx_of[s]); k < n_use && u[k].t == t1 && u[k].idx == idx_of[s];
                 k++) {
                users++;
                sum += u[k].util > 0 ? u[k].util : 0;
                if (u[k].job == j->job && u[k].epoch == j->epoch)
                    c.ours = true, ours = u[k].util > 0 ? u[k].util : 0;
            }
            c.used = users > 0;
            c.shared = c.ours && users > 1;
            if (c.ours) /* by use against the card's total; equal shares when nobody used it */
                c.share = sum > 0 ? ours / sum : 1.0 / (double)users;
            if ((rs = fj_qgrow(e->a, e->err, &iv, n_iv, &cap_iv, sizeof *iv, 64)) != FJ_OK)
                return rs;
            iv[n_iv++] = c;
        }
    }
    if (n_iv > 1)
        qsort(iv, n_iv, sizeof *iv, cmp_iv);
    for (size_t a = 0; a < n_iv;) {
        size_t b = a;
        double n_ours = 0, unused_e = 0, n_unused = 0, gap_s = 0;
        while (b < n_iv && iv[b].t == iv[a].t) {
            const card_iv *c = &iv[b++];
            if (c->ours) {
                n_ours++;
                if (c->gap) {
                    gap_s = c->in_s;
                    continue;
                }
                acc->joules += c->e * c->share;
                acc->counted = true;
                if (c->by_counter)
                    acc->by_counter++;
                else
                    acc->by_power++;
                acc->shared |= c->shared;
            } else if (!c->used && !c->gap) {
                unused_e += c->e;
                n_unused++;
            }
        }
        if (gap_s > 0)
            acc->missing_s += gap_s, acc->gaps++;
        double need = alloc - n_ours;
        if (alloc > 0 && need > 0 && n_unused > 0) {
            double charge = (need < n_unused ? need : n_unused) * unused_e / n_unused;
            acc->joules += charge;
            acc->idle += charge;
            acc->counted = true;
        }
        a = b;
    }
    return FJ_OK;
}

/* fj_store_job_energy: the job's row, its hosts, then the energy's two statements. */
typedef struct one_job {
    int64_t job_id;
    fj_time from, to;
    fj_job_energy *out;
} one_job;

static fj_status one_job_rows(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)x;
    one_job *o = arg;
    fj_qr_bind(&st[0], 1, o->job_id);
    fj_qr_bind(&st[0], 2, e->cluster_id);
    bool row = false;
    fj_status rs = fj_qr_step(&st[0], "job", &row);
    if (rs != FJ_OK)
        return rs;
    if (!row)
        return fj_err_set(e->err, FJ_ENOTFOUND, "id", "no job with id %lld in cluster '%s'", (long long)o->job_id,
                          e->q->cluster);
    fj_qenergy_job j = {
        .job = fj_qr_i64(&st[0], 0),
        .epoch = fj_qr_i64(&st[0], 1),
        .first = fj_qr_i64(&st[0], 2),
        .last = fj_qr_i64(&st[0], 3),
        .used_gpu = fj_qr_i64(&st[0], 5) != 0,
    };
    if (!fj_qr_null(&st[0], 4) && !(j.allocated_resources = fj_arena_strdup(e->a, fj_qr_text(&st[0], 4))))
        return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
    int64_t *hosts = NULL;
    size_t n = 0, cap = 0;
    fj_qr_bind(&st[1], 1, o->job_id);
    while ((rs = fj_qr_step(&st[1], "job hosts", &row)) == FJ_OK && row) {
        if ((rs = fj_qgrow(e->a, e->err, &hosts, n, &cap, sizeof *hosts, 8)) != FJ_OK)
            return rs;
        hosts[n++] = fj_qr_i64(&st[1], 0);
    }
    if (rs != FJ_OK)
        return rs;
    j.hosts = hosts;
    j.n_hosts = n;
    fj_qenergy_stmts es = {st[2], st[3]};
    return fj_qenergy_job_read(e, &es, &j, o->from ? o->from : INT64_MIN, o->to ? o->to : INT64_MAX, o->out);
}

fj_status fj_store_job_energy(fj_store *s, const char *cluster, int64_t job_id, fj_time from, fj_time to,
                              fj_job_energy *out, fj_err *err)
{
    memset(out, 0, sizeof *out);
    const char *sql[5] = {
        "SELECT j.job, j.epoch, j.first_seen, j.last_seen, sc.allocated_resources,"
        " j.gpu_peak_m > 0 OR j.gpumem_peak_kb > 0 FROM jobs j"
        " LEFT JOIN slurm_jobs_current sc ON j.epoch = 0 AND j.job <> 0 AND sc.cluster_id = j.cluster_id"
        " AND sc.job_id = j.job AND sc.job_step = '' WHERE j.id = ?1 AND j.cluster_id = ?2",
        "SELECT node_id FROM job_hosts WHERE rjob_id = ?1",
        NULL, NULL, NULL,
    };
    fj_qenergy_sql(fj_driver_of(s)->layout, sql + 2);
    fj_query q = {.cluster = cluster, .id = job_id};
    one_job o = {job_id, from, to, out};
    return fj_qx_run(s, &q, NULL, err, FJ_QX_NODES, sql, one_job_rows, &o);
}

/* fj_store_job_node_cover: the node's sample times, then its jobs' CPU there. */
typedef struct cover_q {
    int64_t job_id;
    const char *node;
    fj_time from, to;
    fj_en_cover *out;
    size_t n;
} cover_q;

static fj_status cover_rows(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)x;
    cover_q *c = arg;
    int64_t node = 0;
    for (size_t i = 0; i < e->nodes->n && !node; i++)
        if (strcmp(e->nodes->names[i], c->node) == 0)
            node = e->nodes->ids[i];
    if (!node)
        return fj_err_set(e->err, FJ_ENOTFOUND, "node", "no node '%s' in cluster '%s'", c->node, e->q->cluster);
    fj_qr_bind(&st[0], 1, node);
    fj_qr_bind(&st[0], 2, c->from);
    fj_qr_bind(&st[0], 3, c->to);
    bool row = false;
    fj_status rs;
    size_t cap = 0;
    while ((rs = fj_qr_step(&st[0], "node samples", &row)) == FJ_OK && row) {
        if (c->n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            fj_en_cover *g = fj_realloc(c->out, nc * sizeof *g);
            if (!g)
                return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
            c->out = g, cap = nc;
        }
        c->out[c->n++] = (fj_en_cover){(double)fj_qr_i64(&st[0], 0), 0, false};
    }
    if (rs != FJ_OK)
        return rs;
    /* the jobs' CPU at each time: summed, the job's own, how many jobs */
    double *sum = fj_arena_calloc(e->a, c->n ? c->n : 1, sizeof *sum), *own = fj_arena_calloc(e->a, c->n ? c->n : 1, sizeof *own);
    int *jobs = fj_arena_calloc(e->a, c->n ? c->n : 1, sizeof *jobs);
    bool *here = fj_arena_calloc(e->a, c->n ? c->n : 1, sizeof *here);
    if (!sum || !own || !jobs || !here)
        return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
    fj_qr_bind(&st[1], 1, node);
    fj_qr_bind(&st[1], 2, c->from);
    fj_qr_bind(&st[1], 3, c->to);
    fj_qr_bind(&st[1], 4, e->cluster_id);
    fj_qr_bind(&st[1], 5, fj_job_last_day(c->from));
    while ((rs = fj_qr_step(&st[1], "node jobs", &row)) == FJ_OK && row) {
        double t = (double)fj_qr_i64(&st[1], 0), cpu = fj_qr_dbl(&st[1], 2);
        size_t lo = 0, hi = c->n; /* the node-sample of that time */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (c->out[mid].t < t)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == c->n || c->out[lo].t != t)
            continue;
        sum[lo] += cpu > 0 ? cpu : 0;
        jobs[lo]++;
        if (fj_qr_i64(&st[1], 1) == c->job_id)
            own[lo] = cpu > 0 ? cpu : 0, here[lo] = true;
    }
    if (rs != FJ_OK)
        return rs;
    for (size_t i = 0; i < c->n; i++) {
        fj_en_cover *v = &c->out[i];
        v->alone = here[i] && jobs[i] == 1;
        v->share = !here[i] ? 0 : v->alone ? 1 : sum[i] > 0 ? own[i] / sum[i] : 1.0 / jobs[i];
    }
    return FJ_OK;
}

fj_status fj_store_job_node_cover(fj_store *s, const char *cluster, int64_t job_id, const char *node, fj_time from,
                                  fj_time to, fj_en_cover **out, size_t *n, fj_err *err)
{
    static const char *const sql[] = {
        "SELECT time FROM samples WHERE node_id = ?1 AND time >= ?2 AND time <= ?3 ORDER BY time",
        /* the window's jobs (the last_day index), each one's node-samples on the node (its key) */
        "SELECT js.time, js.rjob_id, js.cpu_m FROM jobs j {cross} job_samples js ON js.rjob_id = j.id"
        " AND js.node_id = ?1 AND js.time >= ?2 AND js.time <= ?3"
        " WHERE j.cluster_id = ?4 AND j.last_day >= ?5 AND j.last_seen >= ?2 AND j.first_seen <= ?3",
        NULL,
    };
    fj_query q = {.cluster = cluster};
    cover_q c = {job_id, node, from, to, NULL, 0};
    fj_status rs = fj_qx_run(s, &q, NULL, err, FJ_QX_NODES, sql, cover_rows, &c);
    if (rs != FJ_OK) {
        fj_free(c.out);
        c.out = NULL, c.n = 0;
    }
    *out = c.out;
    *n = c.n;
    return rs;
}

fj_status fj_qenergy_job_read(const fj_qenv *e, const fj_qenergy_stmts *st, const fj_qenergy_job *j, int64_t from,
                              int64_t to, fj_job_energy *en)
{
    memset(en, 0, sizeof *en);
    if (j->job == 0 || !j->n_hosts)
        return FJ_OK;
    double wf = from == INT64_MIN ? -INFINITY : (double)from, wt = to == INT64_MAX ? INFINITY : (double)to;
    double alloc = -1;
    long gpus = fj_en_tres_gpus(j->allocated_resources);
    if (gpus >= 0) {
        long nodes = fj_en_tres_nodes(j->allocated_resources);
        alloc = (double)gpus / (double)(nodes > 0 ? nodes : (long)j->n_hosts);
    }
    if (!j->used_gpu && !(alloc > 0))
        return FJ_OK; /* no card of its own, none held: nothing to read (the list's CPU jobs) */
    gpu_acc acc = {0};
    for (size_t h = 0; h < j->n_hosts; h++) {
        fj_status rs = host_gpu(e, st, j, j->hosts[h], wf, wt, alloc, &acc);
        if (rs != FJ_OK)
            return rs;
    }
    en->missing_s = acc.missing_s;
    en->gaps = acc.gaps;
    en->gpu_idle_joules = acc.idle;
    en->gpu_by_counter = acc.by_counter;
    en->gpu_by_power = acc.by_power;
    if (acc.counted) {
        en->set[FJ_EP_GPU] = true;
        en->joules[FJ_EP_GPU] = acc.joules;
        en->how[FJ_EP_GPU] = acc.shared || acc.idle > 0 ? FJ_EH_APPORTIONED : FJ_EH_MEASURED;
    } else if (acc.had_device) {
        en->how[FJ_EP_GPU] = FJ_EH_MISSING;
    }
    return FJ_OK;
}
