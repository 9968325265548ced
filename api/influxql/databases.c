/* api/influxql/databases.c — InfluxDB's databases as fjord has them: one per cluster with
 * line-protocol series or Sonar data (SHOW DATABASES, and the check of `db` every statement makes).
 * Below route.c, select.c and show.c, which all ask it. */
#include "api/influxql/iq_int.h"

#include "storage/core/store_query.h"
#include "storage/query/influx_catalog.h"

#include <stdlib.h>
#include <string.h>

typedef struct cluster_sink {
    fj_sink k;
    fj_arena *a;
    const char **v;
    size_t n, cap;
} cluster_sink;

static fj_status cluster_table(fj_sink *k, const fj_qtable *t)
{
    (void)k;
    (void)t;
    return FJ_OK;
}

static fj_status cluster_row(fj_sink *k, const fj_value *v)
{
    cluster_sink *cs = (cluster_sink *)k;
    if (cs->n == cs->cap) {
        size_t cap = cs->cap * 2 + 16;
        const char **nv = fj_arena_calloc(cs->a, cap, sizeof *nv);
        if (!nv)
            return FJ_ENOMEM;
        if (cs->n)
            memcpy(nv, cs->v, cs->n * sizeof *nv);
        cs->v = nv;
        cs->cap = cap;
    }
    if (!(cs->v[cs->n] = fj_arena_strdup(cs->a, v[0].s ? v[0].s : "")))
        return FJ_ENOMEM;
    cs->n++;
    return FJ_OK;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The clusters with line-protocol series and those with Sonar data, sorted, once each. */
fj_status iq_databases(iq_ctx *c, const char ***out, size_t *n, fj_err *err)
{
    const char **ts = NULL;
    size_t nts = 0;
    fj_status rs = fj_q_ts_clusters(c->s, c->a, &ts, &nts, err);
    if (rs != FJ_OK)
        return rs;
    cluster_sink cs = {{cluster_table, cluster_row}, c->a, NULL, 0, 0};
    fj_query q = {0};
    if ((rs = fj_store_query_clusters(c->s, &q, &cs.k, err)) != FJ_OK)
        return rs;
    const char **all = fj_arena_calloc(c->a, nts + cs.n + 1, sizeof *all);
    if (!all)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    if (nts)
        memcpy(all, ts, nts * sizeof *all);
    if (cs.n)
        memcpy(all + nts, cs.v, cs.n * sizeof *all);
    size_t k = nts + cs.n;
    if (k)
        qsort(all, k, sizeof *all, cmp_str);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (!u || strcmp(all[i], all[u - 1]))
            all[u++] = all[i];
    *out = all;
    *n = u;
    return FJ_OK;
}

fj_status iq_db_known(iq_ctx *c, const char *db, bool *known, fj_err *err)
{
    const char **dbs = NULL;
    size_t n = 0;
    *known = false;
    fj_status rs = iq_databases(c, &dbs, &n, err);
    for (size_t i = 0; rs == FJ_OK && i < n && !*known; i++)
        *known = !strcmp(dbs[i], db);
    return rs;
}
