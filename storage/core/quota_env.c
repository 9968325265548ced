/* storage/core/quota_env.c — a Sonar envelope's new nodes and jobs against its cluster's quotas
 * (storage/core/quota_env.h). */
#include "storage/core/quota_env.h"

#include "storage/core/try.h"

#include <string.h>

#define NS_NEW_NODES 1 /* namespace of the per-envelope map of names already counted */

/* Counts name in *n_new when it is a node the cluster does not have and not counted yet. */
static fj_status count_new_node(const fj_quota_env *qe, fj_intern *seen, int64_t cid, const char *name,
                                uint64_t *n_new, fj_err *err)
{
    if (!name)
        return FJ_OK;
    size_t len = strlen(name);
    if (fj_intern_get(seen, NS_NEW_NODES, name, len))
        return FJ_OK;
    bool known;
    FJ_TRY(qe->node_known(qe->ud, cid, name, &known, err));
    if (fj_intern_put(seen, NS_NEW_NODES, name, len, 1) != FJ_OK)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    *n_new += !known;
    return FJ_OK;
}

/* Every node name the envelope would intern (the writers: the sender, Slurm jobs' nodes,
 * partitions' nodes and node states). */
static fj_status new_nodes(const fj_quota_env *qe, const fj_envelope *e, int64_t cid, uint64_t *n_new, fj_err *err)
{
    if (e->kind != FJ_KIND_JOB && e->kind != FJ_KIND_CLUSTER) { /* the sender alone: no set needed */
        bool known = true;
        if (e->node)
            FJ_TRY(qe->node_known(qe->ud, cid, e->node, &known, err));
        *n_new += !known;
        return FJ_OK;
    }
    fj_intern seen = {0};
    fj_status st = count_new_node(qe, &seen, cid, e->node, n_new, err);
    if (e->kind == FJ_KIND_JOB)
        for (size_t k = 0; st == FJ_OK && k < e->u.jobs.n_jobs; k++)
            for (size_t n = 0; st == FJ_OK && n < e->u.jobs.jobs[k].n_nodes; n++)
                st = count_new_node(qe, &seen, cid, e->u.jobs.jobs[k].nodes[n], n_new, err);
    if (e->kind == FJ_KIND_CLUSTER) {
        const fj_cluster_info *ci = &e->u.cluster_info;
        for (size_t k = 0; st == FJ_OK && k < ci->n_partitions; k++)
            for (size_t n = 0; st == FJ_OK && n < ci->partitions[k].n_nodes; n++)
                st = count_new_node(qe, &seen, cid, ci->partitions[k].nodes[n], n_new, err);
        for (size_t k = 0; st == FJ_OK && k < ci->n_nodes; k++)
            st = count_new_node(qe, &seen, cid, ci->nodes[k].node, n_new, err);
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

/* The envelope's job keys the set lacks: counted, and remembered when add. */
static fj_status new_jobs(const fj_quota_env *qe, const fj_envelope *e, int64_t cid, bool add, uint64_t *n_new,
                          fj_err *err)
{
    char key[16 + 256];
    fj_intern *seen = qe->jobs_seen;
    size_t n = e->kind == FJ_KIND_SAMPLE ? e->u.sample.n_jobs : e->kind == FJ_KIND_JOB ? e->u.jobs.n_jobs : 0;
    if (add && seen->n + n >= FJ_QUOTA_JOBS_SEEN_MAX)
        fj_intern_clear(seen);
    for (size_t k = 0; k < n; k++) {
        size_t len = e->kind == FJ_KIND_SAMPLE
                         ? job_key(key, e->node, e->u.sample.jobs[k].job, e->u.sample.jobs[k].epoch)
                         : job_key(key, NULL, e->u.jobs.jobs[k].job_id, 0);
        if (fj_intern_get(seen, cid, key, len))
            continue;
        if (!add) {
            ++*n_new; /* a key twice in one envelope counts twice: an upper bound, and rare */
            continue;
        }
        if (fj_intern_put(seen, cid, key, len, 1) != FJ_OK)
            return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }
    return FJ_OK;
}

fj_status fj_quota_admit_envelope(const fj_quota_env *qe, const fj_envelope *e, int64_t cluster_ns, int64_t now,
                                  fj_limit *refused, fj_err *err)
{
    *refused = FJ_LIMIT_NONE;
    bool nodes = fj_quota_limited(qe->q, FJ_QUOTA_NODES), jobs = fj_quota_limited(qe->q, FJ_QUOTA_JOBS);
    if (!nodes && !jobs)
        return FJ_OK;
    uint64_t n_nodes = 0, n_jobs = 0;
    if (nodes)
        FJ_TRY(new_nodes(qe, e, cluster_ns, &n_nodes, err));
    if (jobs)
        FJ_TRY(new_jobs(qe, e, cluster_ns, false, &n_jobs, err));
    fj_status st = FJ_OK;
    /* nodes first: a refused envelope must not spend the jobs' tokens */
    fj_limit l = fj_quota_admit_n(qe->q, FJ_QUOTA_NODES, e->cluster, n_nodes, now, qe->count_nodes, qe->ud, &st);
    if (l == FJ_LIMIT_NONE && st == FJ_OK) {
        l = fj_quota_admit_n(qe->q, FJ_QUOTA_JOBS, e->cluster, n_jobs, now, NULL, qe->ud, &st);
        if (l != FJ_LIMIT_NONE)
            fj_quota_release(qe->q, FJ_QUOTA_NODES, e->cluster, n_nodes);
    }
    if (st != FJ_OK)
        return fj_err_set(err, st, "db", "counting a cluster's nodes failed");
    if (l != FJ_LIMIT_NONE) {
        *refused = l;
        return FJ_OK;
    }
    /* a running job's envelope has no new key: nothing to remember (the common case, one pass) */
    return jobs && n_jobs ? new_jobs(qe, e, cluster_ns, true, &n_jobs, err) : FJ_OK;
}
