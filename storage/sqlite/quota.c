/* storage/sqlite/quota.c — the Sonar writer's per-cluster quotas (storage/core/quota.h), checked
 * once per envelope before it is written: the nodes it would add (max-nodes-per-cluster) and the
 * jobs it would start (max-new-jobs-per-minute). An envelope over either is refused whole, so
 * nothing is half-written and the writer's own loops (write.c) stay as they are.
 *
 * Nodes: a name is new when neither the name cache nor the nodes table has it. Jobs: a job key
 * (node, job, epoch; a Slurm job's is its id) is new when this handle has not seen it recently,
 * a set of keys per handle, emptied when it reaches JOBS_SEEN_MAX. That counts every job that
 * can make a row (a new job row needs a key) and, after a restart or when the set empties, jobs
 * already stored too: an upper bound, which the default leaves room for. */
#include "storage/sqlite/int.h"
#include "storage/core/try.h"

#include <stdio.h>
#include <string.h>

/* 256 k keys, all clusters together (some 40 MB at most: a map slot and a copied key each): more
 * than the jobs a large site runs at once, so a running job is counted again only after a start */
#define JOBS_SEEN_MAX (1u << 18)
#define NS_NEW_NODES 1          /* namespaces of the per-envelope map of names already counted */

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
static fj_status node_known(fj_store *s, int64_t cluster_id, const char *name, bool *known, fj_err *err)
{
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

/* Counts name in *n_new when it is a node the cluster does not have and not counted yet. */
static fj_status count_new_node(fj_store *s, fj_intern *seen, int64_t cluster_id, const char *name, uint64_t *n_new,
                                fj_err *err)
{
    if (!name)
        return FJ_OK;
    size_t len = strlen(name);
    if (fj_intern_get(seen, NS_NEW_NODES, name, len))
        return FJ_OK;
    bool known;
    FJ_TRY(node_known(s, cluster_id, name, &known, err));
    if (fj_intern_put(seen, NS_NEW_NODES, name, len, 1) != FJ_OK)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    *n_new += !known;
    return FJ_OK;
}

/* Every node name the envelope would intern (write.c: the sender, Slurm jobs' nodes, partitions'
 * nodes and node states). */
static fj_status new_nodes(fj_store *s, const fj_envelope *e, int64_t cid, uint64_t *n_new, fj_err *err)
{
    if (e->kind != FJ_KIND_JOB && e->kind != FJ_KIND_CLUSTER) { /* the sender alone: no set needed */
        bool known = true;
        if (e->node)
            FJ_TRY(node_known(s, cid, e->node, &known, err));
        *n_new += !known;
        return FJ_OK;
    }
    fj_intern seen = {0};
    fj_status st = count_new_node(s, &seen, cid, e->node, n_new, err);
    if (e->kind == FJ_KIND_JOB)
        for (size_t k = 0; st == FJ_OK && k < e->u.jobs.n_jobs; k++)
            for (size_t n = 0; st == FJ_OK && n < e->u.jobs.jobs[k].n_nodes; n++)
                st = count_new_node(s, &seen, cid, e->u.jobs.jobs[k].nodes[n], n_new, err);
    if (e->kind == FJ_KIND_CLUSTER) {
        const fj_cluster_info *ci = &e->u.cluster_info;
        for (size_t k = 0; st == FJ_OK && k < ci->n_partitions; k++)
            for (size_t n = 0; st == FJ_OK && n < ci->partitions[k].n_nodes; n++)
                st = count_new_node(s, &seen, cid, ci->partitions[k].nodes[n], n_new, err);
        for (size_t k = 0; st == FJ_OK && k < ci->n_nodes; k++)
            st = count_new_node(s, &seen, cid, ci->nodes[k].node, n_new, err);
    }
    fj_intern_clear(&seen);
    return st;
}

/* A job key's bytes: its node (non-Slurm jobs are numbered per node and boot), job and epoch. */
static size_t job_key(char *out, const char *node, uint64_t job, uint64_t epoch)
{
    size_t n = epoch && node ? strlen(node) : 0;
    if (n > 256)
        n = 256;
    memcpy(out, &job, 8);
    memcpy(out + 8, &epoch, 8);
    if (n)
        memcpy(out + 16, node, n);
    return 16 + n;
}

/* The envelope's job keys this handle has not seen: counted, and remembered when add. */
static fj_status new_jobs(fj_store *s, const fj_envelope *e, int64_t cid, bool add, uint64_t *n_new, fj_err *err)
{
    char key[16 + 256];
    size_t n = e->kind == FJ_KIND_SAMPLE ? e->u.sample.n_jobs : e->kind == FJ_KIND_JOB ? e->u.jobs.n_jobs : 0;
    if (add && s->jobs_seen.n + n >= JOBS_SEEN_MAX)
        fj_intern_clear(&s->jobs_seen);
    for (size_t k = 0; k < n; k++) {
        size_t len = e->kind == FJ_KIND_SAMPLE
                         ? job_key(key, e->node, e->u.sample.jobs[k].job, e->u.sample.jobs[k].epoch)
                         : job_key(key, NULL, e->u.jobs.jobs[k].job_id, 0);
        if (fj_intern_get(&s->jobs_seen, cid, key, len))
            continue;
        if (!add) {
            ++*n_new; /* a key twice in one envelope counts twice: an upper bound, and rare */
            continue;
        }
        if (fj_intern_put(&s->jobs_seen, cid, key, len, 1) != FJ_OK)
            return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }
    return FJ_OK;
}

fj_status fj_sq_quota_admit(fj_store *s, const fj_envelope *e, int64_t cluster_id, fj_write_count *cnt, bool *ok,
                            fj_err *err)
{
    *ok = true;
    bool nodes = fj_quota_limited(s->quota, FJ_QUOTA_NODES), jobs = fj_quota_limited(s->quota, FJ_QUOTA_JOBS);
    if (!nodes && !jobs)
        return FJ_OK;
    uint64_t n_nodes = 0, n_jobs = 0;
    if (nodes)
        FJ_TRY(new_nodes(s, e, cluster_id, &n_nodes, err));
    if (jobs)
        FJ_TRY(new_jobs(s, e, cluster_id, false, &n_jobs, err));
    fj_status st = FJ_OK;
    int64_t now = fj_mono_ns();
    s->quota_cluster = cluster_id;
    /* nodes first: a refused envelope must not spend the jobs' tokens */
    fj_limit l = fj_quota_admit_n(s->quota, FJ_QUOTA_NODES, e->cluster, n_nodes, now, count_nodes, s, &st);
    if (l == FJ_LIMIT_NONE && st == FJ_OK) {
        l = fj_quota_admit_n(s->quota, FJ_QUOTA_JOBS, e->cluster, n_jobs, now, NULL, s, &st);
        if (l != FJ_LIMIT_NONE)
            fj_quota_release(s->quota, FJ_QUOTA_NODES, e->cluster, n_nodes);
    }
    if (st != FJ_OK)
        return fj_err_set(err, st, "db", "counting a cluster's nodes failed");
    if (l != FJ_LIMIT_NONE) {
        *ok = false;
        cnt->limit = l;
        return FJ_OK;
    }
    /* a running job's envelope has no new key: nothing to remember (the common case, one pass) */
    return jobs && n_jobs ? new_jobs(s, e, cluster_id, true, &n_jobs, err) : FJ_OK;
}
