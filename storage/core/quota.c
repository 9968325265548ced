/* storage/core/quota.c — per-cluster caps and token buckets (storage/core/quota.h). A cluster's
 * state is found through an fj_intern map from its name to its index in an array. */
#include "storage/core/quota.h"

#include "storage/core/grow.h"
#include "storage/core/intern.h"

#include "alloc.h"

#include <string.h>

#define MINUTE_NS (INT64_C(60) * 1000000000)

typedef struct bank {
    bool known;      /* total read from the database */
    int64_t read_at; /* when */
    uint64_t total;  /* what the cluster holds, as far as this handle knows */
    double tokens;   /* the bucket; starts full */
    int64_t last;    /* when it was last refilled */
    bool started;
} bank;

typedef struct cluster_q {
    bank b[FJ_QUOTA__KINDS];
} cluster_q;

struct fj_quota {
    fj_quota_limits lim;
    fj_intern index; /* cluster name -> 1 + its index in c */
    cluster_q *c;
    size_t n, cap;
};

const char *fj_limit_name(fj_limit l)
{
    switch (l) {
    case FJ_LIMIT_SERIES_TOTAL: return "max-series-per-cluster";
    case FJ_LIMIT_SERIES_RATE: return "max-new-series-per-minute";
    case FJ_LIMIT_NODES_TOTAL: return "max-nodes-per-cluster";
    case FJ_LIMIT_JOBS_RATE: return "max-new-jobs-per-minute";
    default: return "";
    }
}

bool fj_limit_is_rate(fj_limit l)
{
    return l == FJ_LIMIT_SERIES_RATE || l == FJ_LIMIT_JOBS_RATE;
}

fj_quota *fj_quota_new(const fj_quota_limits *lim)
{
    fj_quota *q = fj_calloc(1, sizeof *q);
    if (q && lim) {
        q->lim = *lim;
        q->lim.per_minute[FJ_QUOTA_NODES] = 0; /* nodes have a cap only, jobs a rate only */
        q->lim.total[FJ_QUOTA_JOBS] = 0;
    }
    return q;
}

void fj_quota_free(fj_quota *q)
{
    if (!q)
        return;
    fj_intern_clear(&q->index);
    fj_free(q->c);
    fj_free(q);
}

bool fj_quota_limited(const fj_quota *q, fj_quota_kind kind)
{
    return q && (q->lim.total[kind] || q->lim.per_minute[kind]);
}

/* The state of cluster, added when new; NULL on out of memory. */
static cluster_q *cluster_of(fj_quota *q, const char *cluster)
{
    size_t len = strlen(cluster);
    int64_t i = fj_intern_get(&q->index, 0, cluster, len);
    if (i)
        return &q->c[i - 1];
    if (!fj_grow(&q->c, &q->cap, q->n + 1, sizeof *q->c, 8))
        return NULL;
    if (fj_intern_put(&q->index, 0, cluster, len, (int64_t)q->n + 1) != FJ_OK)
        return NULL;
    memset(&q->c[q->n], 0, sizeof q->c[q->n]);
    return &q->c[q->n++];
}

/* Refills the bucket for the time since its last refill: per_minute tokens a minute, at most
 * one minute's worth held. */
static void refill(bank *b, uint64_t per_minute, int64_t now)
{
    double cap = (double)per_minute;
    if (!b->started) {
        b->started = true;
        b->tokens = cap;
        b->last = now;
        return;
    }
    if (now > b->last) {
        b->tokens += (double)(now - b->last) * cap / (double)MINUTE_NS;
        if (b->tokens > cap)
            b->tokens = cap;
        b->last = now;
    }
}

fj_limit fj_quota_admit_n(fj_quota *q, fj_quota_kind kind, const char *cluster, uint64_t n, int64_t now,
                          fj_quota_count_fn count, void *ud, fj_status *st)
{
    if (!fj_quota_limited(q, kind) || n == 0)
        return FJ_LIMIT_NONE;
    cluster_q *c = cluster_of(q, cluster ? cluster : "");
    if (!c) {
        *st = FJ_ENOMEM;
        return FJ_LIMIT_NONE;
    }
    bank *b = &c->b[kind];
    uint64_t cap = q->lim.total[kind], rate = q->lim.per_minute[kind];
    if (cap && (!b->known || (q->lim.recount_ns && now - b->read_at >= q->lim.recount_ns))) {
        fj_status cs = count ? count(ud, kind, cluster ? cluster : "", &b->total) : FJ_OK;
        if (cs != FJ_OK) {
            *st = cs;
            return FJ_LIMIT_NONE;
        }
        b->known = true;
        b->read_at = now;
    }
    if (cap && (b->total >= cap || n > cap - b->total))
        return kind == FJ_QUOTA_SERIES ? FJ_LIMIT_SERIES_TOTAL : FJ_LIMIT_NODES_TOTAL;
    if (rate) {
        refill(b, rate, now);
        if (b->tokens < (double)n)
            return kind == FJ_QUOTA_SERIES ? FJ_LIMIT_SERIES_RATE : FJ_LIMIT_JOBS_RATE;
        b->tokens -= (double)n;
    }
    b->total += n;
    return FJ_LIMIT_NONE;
}

fj_limit fj_quota_admit(fj_quota *q, fj_quota_kind kind, const char *cluster, int64_t now, fj_quota_count_fn count,
                        void *ud, fj_status *st)
{
    return fj_quota_admit_n(q, kind, cluster, 1, now, count, ud, st);
}

void fj_quota_release(fj_quota *q, fj_quota_kind kind, const char *cluster, uint64_t n)
{
    if (!fj_quota_limited(q, kind))
        return;
    int64_t i = fj_intern_get(&q->index, 0, cluster ? cluster : "", strlen(cluster ? cluster : ""));
    if (!i)
        return;
    bank *b = &q->c[i - 1].b[kind];
    b->total = b->total > n ? b->total - n : 0;
}

void fj_quota_forget_totals(fj_quota *q)
{
    for (size_t i = 0; q && i < q->n; i++)
        for (int k = 0; k < FJ_QUOTA__KINDS; k++)
            q->c[i].b[k].known = false;
}

unsigned fj_quota_retry_s(const fj_quota *q, fj_quota_kind kind)
{
    uint64_t rate = q ? q->lim.per_minute[kind] : 0;
    if (!rate || rate >= 60)
        return 1;
    return (unsigned)((60 + rate - 1) / rate);
}
