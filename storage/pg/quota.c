/* storage/pg/quota.c — the per-cluster quotas on PostgreSQL (storage/core/quota.h): line-protocol
 * series (asked by storage/pg/ts.c for each series the database does not have) and Sonar's nodes
 * and jobs (asked by storage/pg/write.c for each envelope before its group is written,
 * storage/core/quota_env.h).
 *
 * One book per server: a PostgreSQL server has several writer handles (`writers`), each a
 * connection, and any of them may take a cluster's next envelope, so they count in one quota and
 * one set of job keys, under one mutex (the calls are short: a probe of the nodes' index for a
 * name not cached, and a count once a minute). Handles opened with other limits (a test's) get a
 * book of their own.
 *
 * Several servers on one database each keep a book: a cluster's totals are read from the database
 * when first needed and again when the reading is RECOUNT_S old, and each server adds what it
 * creates itself in between; the rates are each server's own (docs/security.md, "Quotas"). */
#include "storage/pg/query_int.h"
#include "storage/core/quota_env.h"
#include "storage/core/try.h"

#include "alloc.h"
#include "timefmt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECOUNT_S 60 /* a total counted by the database is read again after this long */

struct fj_pg_quota {
    fj_quota_limits lim;
    fj_quota *q;
    fj_intern jobs_seen;
    int refs;
    struct fj_pg_quota *next;
};

static pthread_mutex_t books_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fj_pg_quota *books; /* under books_mu, as is every book's content */

static bool any_limit(const fj_quota_limits *lim)
{
    for (int k = 0; k < FJ_QUOTA__KINDS; k++)
        if (lim->total[k] || lim->per_minute[k])
            return true;
    return false;
}

fj_status fj_pg_quota_open(fj_store *s, const fj_quota_limits *limits, fj_err *err)
{
    if (!limits || !any_limit(limits))
        return FJ_OK;
    fj_quota_limits lim = *limits;
    lim.recount_ns = (int64_t)RECOUNT_S * 1000000000;
    pthread_mutex_lock(&books_mu);
    struct fj_pg_quota *b = books;
    while (b && memcmp(&b->lim, &lim, sizeof lim) != 0)
        b = b->next;
    if (!b && (b = fj_calloc(1, sizeof *b)) != NULL) {
        b->lim = lim;
        if (!(b->q = fj_quota_new(&lim))) {
            fj_free(b);
            b = NULL;
        } else {
            b->next = books;
            books = b;
        }
    }
    if (b)
        b->refs++;
    pthread_mutex_unlock(&books_mu);
    s->quota = b;
    return b ? FJ_OK : fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
}

void fj_pg_quota_close(fj_store *s)
{
    struct fj_pg_quota *b = s->quota;
    if (!b)
        return;
    s->quota = NULL;
    pthread_mutex_lock(&books_mu);
    if (--b->refs == 0) {
        struct fj_pg_quota **p = &books;
        while (*p != b)
            p = &(*p)->next;
        *p = b->next;
        fj_quota_free(b->q);
        fj_intern_clear(&b->jobs_seen);
        fj_free(b);
    }
    pthread_mutex_unlock(&books_mu);
}

void fj_pg_quota_forget(fj_store *s)
{
    if (!s->quota)
        return;
    pthread_mutex_lock(&books_mu);
    fj_quota_forget_totals(s->quota->q);
    pthread_mutex_unlock(&books_mu);
}

bool fj_pg_quota_limited(const fj_store *s, fj_quota_kind kind)
{
    return s->quota && fj_quota_limited(s->quota->q, kind);
}

/* --- the database's side: counts and lookups, outside any transaction ------------------------- */

static void take_count(void *ctx, int ncols, const char *const *cells)
{
    if (ncols >= 1 && cells[0])
        *(int64_t *)ctx = strtoll(cells[0], NULL, 10);
}

/* One number from sql with its text parameters. */
static fj_status query_count(fj_store *s, const char *sql, int n, const char *const *params, int64_t *out,
                             const char *what, fj_err *err)
{
    *out = 0;
    return fj_pg_driver_run(s, sql, n, params, take_count, out, NULL, what, err);
}

static fj_status count_series(void *ud, fj_quota_kind kind, const char *cluster, uint64_t *n)
{
    (void)kind;
    fj_err err = {0};
    int64_t v;
    const char *p[] = {cluster};
    fj_status st = query_count(ud, "SELECT count(*) FROM ts_series WHERE cluster = ?1", 1, p, &v, "count series",
                               &err);
    *n = (uint64_t)v;
    return st;
}

typedef struct node_ctx {
    fj_store *s;
    int64_t cluster_id;
} node_ctx;

static fj_status count_nodes(void *ud, fj_quota_kind kind, const char *cluster, uint64_t *n)
{
    (void)kind;
    (void)cluster;
    node_ctx *x = ud;
    fj_err err = {0};
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)x->cluster_id);
    const char *p[] = {id};
    int64_t v;
    fj_status st = query_count(x->s, "SELECT count(*) FROM nodes WHERE cluster_id = ?1", 1, p, &v, "count nodes", &err);
    *n = (uint64_t)v;
    return st;
}

/* Whether the cluster has node name: the handle's name cache, then the nodes table (a name found
 * there is cached, as the writer would). */
static fj_status node_known(void *ud, int64_t cluster_id, const char *name, bool *known, fj_err *err)
{
    node_ctx *x = ud;
    size_t len = strlen(name);
    int64_t id = fj_intern_get(&x->s->names, cluster_id, name, len);
    if (id > 0) {
        *known = true;
        return FJ_OK;
    }
    char cid[24];
    snprintf(cid, sizeof cid, "%lld", (long long)cluster_id);
    const char *p[] = {cid, name};
    FJ_TRY(query_count(x->s, "SELECT coalesce(max(id), 0) FROM nodes WHERE cluster_id = ?1 AND name = ?2", 2, p, &id,
                       "look up a node", err));
    *known = id > 0;
    if (*known && fj_intern_put(&x->s->names, cluster_id, name, len, id) != FJ_OK)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    return FJ_OK;
}

/* The cluster's id, interned now when new (committed on its own: an unused cluster row is
 * harmless, as the metrics writer's). */
static fj_status cluster_id(fj_store *s, const char *name, int64_t *id, fj_err *err)
{
    size_t len = strlen(name);
    *id = fj_intern_get(&s->names, FJ_PG_NS_CLUSTER, name, len);
    if (*id > 0)
        return FJ_OK;
    const char *p[] = {name};
    FJ_TRY(fj_pg_driver_run(s, "INSERT INTO clusters(name) VALUES (?1) ON CONFLICT DO NOTHING", 1, p, NULL, NULL,
                                NULL, "intern a cluster", err));
    FJ_TRY(query_count(s, "SELECT id FROM clusters WHERE name = ?1", 1, p, id, "look up a cluster", err));
    if (*id <= 0)
        return fj_err_set(err, FJ_EINTERNAL, "db", "postgres: cluster '%s' not found after adding it", name);
    if (fj_intern_put(&s->names, FJ_PG_NS_CLUSTER, name, len, *id) != FJ_OK)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    return FJ_OK;
}

/* --- the checks --------------------------------------------------------------------------------- */

fj_status fj_pg_quota_admit(fj_store *s, const fj_envelope *e, fj_write_count *cnt, bool *ok, fj_err *err)
{
    *ok = true;
    if (!fj_pg_quota_limited(s, FJ_QUOTA_NODES) && !fj_pg_quota_limited(s, FJ_QUOTA_JOBS))
        return FJ_OK;
    node_ctx x = {s, 0};
    FJ_TRY(fj_pg_connect(s, err));
    FJ_TRY(cluster_id(s, e->cluster ? e->cluster : "", &x.cluster_id, err));
    struct fj_pg_quota *b = s->quota;
    fj_quota_env qe = {b->q, &b->jobs_seen, node_known, count_nodes, &x};
    fj_limit l;
    pthread_mutex_lock(&books_mu);
    fj_status st = fj_quota_admit_envelope(&qe, e, x.cluster_id, fj_mono_ns(), &l, err);
    pthread_mutex_unlock(&books_mu);
    if (st == FJ_OK && l != FJ_LIMIT_NONE) {
        *ok = false;
        cnt->limit = l;
    }
    return st;
}

fj_status fj_pg_quota_series(fj_store *s, const char *cluster, fj_limit *refused, fj_err *err)
{
    *refused = FJ_LIMIT_NONE;
    if (!fj_pg_quota_limited(s, FJ_QUOTA_SERIES))
        return FJ_OK;
    fj_status st = FJ_OK;
    pthread_mutex_lock(&books_mu);
    *refused = fj_quota_admit(s->quota->q, FJ_QUOTA_SERIES, cluster, fj_mono_ns(), count_series, s, &st);
    pthread_mutex_unlock(&books_mu);
    return st == FJ_OK ? FJ_OK : fj_err_set(err, st, "db", "counting a cluster's series failed");
}
