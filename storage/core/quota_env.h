/* storage/core/quota_env.h — a Sonar envelope against its cluster's node and job quotas
 * (max-nodes-per-cluster, max-new-jobs-per-minute; storage/core/quota.h), checked once per
 * envelope before it is written. An envelope over either is refused whole, so nothing is
 * half-written and the writers' own loops stay as they are. Written once for both backends: what
 * differs is how a node name is looked up and the cluster's nodes counted (callbacks).
 *
 * Nodes: a name is new when the backend has no such node of the cluster. Jobs: a job key (node,
 * job, epoch; a Slurm job's is its id) is new when the set of recently seen keys lacks it; the
 * set is emptied when it reaches FJ_QUOTA_JOBS_SEEN_MAX. That counts every job that can make a row
 * (a new job row needs a key) and, after a restart or when the set empties, jobs already stored
 * too: an upper bound, which the default leaves room for. Not thread-safe: the caller serialises
 * the calls that share a quota and a set. */
#ifndef FJ_STORAGE_QUOTA_ENV_H
#define FJ_STORAGE_QUOTA_ENV_H

#include "storage/core/intern.h"
#include "storage/core/quota.h"
#include "ingest/records/batch.h"

/* 256 k keys, all clusters together (some 40 MB at most: a map slot and a copied key each): more
 * than the jobs a large site runs at once, so a running job is counted again only after a start */
#define FJ_QUOTA_JOBS_SEEN_MAX (1u << 18)

typedef struct fj_quota_env {
    fj_quota *q;
    fj_intern *jobs_seen; /* job keys seen recently, per cluster (namespace: the cluster's id) */
    /* Whether the cluster (id cluster_ns) has node name stored. */
    fj_status (*node_known)(void *ud, int64_t cluster_ns, const char *name, bool *known, fj_err *err);
    fj_quota_count_fn count_nodes; /* the cluster's nodes, for the cap */
    void *ud;
} fj_quota_env;

/* Whether envelope e of the cluster with id cluster_ns stays within its quotas: *refused is
 * FJ_LIMIT_NONE (its new nodes and jobs counted, its job keys remembered) or the limit that refuses
 * it (nothing counted). now: fj_mono_ns. */
fj_status fj_quota_admit_envelope(const fj_quota_env *qe, const fj_envelope *e, int64_t cluster_ns, int64_t now,
                                  fj_limit *refused, fj_err *err);

#endif
