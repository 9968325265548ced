/* storage/sqlite/quota.c — the Sonar writer's per-cluster quotas, checked once per envelope before it
 * is written (storage/core/quota_env.h): SQLite's node lookup (the name cache, then the nodes
 * table) and count. The one writer handle holds the quota and the set of job keys seen. */
#include "storage/sqlite/int.h"
#include "storage/core/quota_env.h"
#include "storage/core/try.h"

#include <stdio.h>
#include <string.h>

/* How many nodes the cluster has, once per cluster for max-nodes-per-cluster. */
static fj_status count_nodes(void *ud, fj_quota_kind kind, const char *cluster, uint64_t *n)
{
    (void)kind;
    (void)cluster;
    fj_store *s = ud;
    fj_err err = {0};
    int64_t v = 0;
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM nodes WHERE cluster_id=%lld", (long long)s->quota_cluster);
    fj_status st = fj_sq_query_i64(s, sql, &v, &err);
    *n = (uint64_t)v;
    return st;
}

/* Whether node name of the cluster is stored (cached or in the table). */
static fj_status node_known(void *ud, int64_t cluster_id, const char *name, bool *known, fj_err *err)
{
    fj_store *s = ud;
    size_t len = strlen(name);
    *known = fj_intern_get(&s->names, cluster_id, name, len) != 0;
    if (*known)
        return FJ_OK;
    sqlite3_stmt *st = fj_sq_stmt(s, FJ_SQ_NODE_GET, err);
    if (!st)
        return FJ_EIO;
    sqlite3_bind_int64(st, 1, cluster_id);
    sqlite3_bind_text(st, 2, name, (int)len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fj_sq_fail(s, rc, "node lookup", err);
    *known = id != 0;
    if (*known && fj_sq_map_put(&s->names, cluster_id, name, len, id) != FJ_OK)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    return FJ_OK;
}

fj_status fj_sq_quota_admit(fj_store *s, const fj_envelope *e, int64_t cluster_id, fj_write_count *cnt, bool *ok,
                            fj_err *err)
{
    s->quota_cluster = cluster_id;
    fj_quota_env qe = {s->quota, &s->jobs_seen, node_known, count_nodes, s};
    fj_limit l;
    FJ_TRY(fj_quota_admit_envelope(&qe, e, cluster_id, fj_mono_ns(), &l, err));
    *ok = l == FJ_LIMIT_NONE;
    if (!*ok)
        cnt->limit = l;
    return FJ_OK;
}
