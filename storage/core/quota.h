/* storage/core/quota.h — per-cluster limits on what one cluster can create: line-protocol series,
 * Sonar nodes and Sonar jobs. Each kind has a cap on the total (the cluster's count, read once from
 * the database through a callback and then kept) and a token bucket on new ones a minute. One
 * upload credential speaks for one cluster, so a cluster is what a leaked or misconfigured
 * credential can fill; the limits keep that from taking the server's memory, database and start-up
 * time (docs/security.md, "Quotas").
 *
 * The writers ask only when they are about to create something (a key not in memory or the
 * database), so what exists is never refused and a cluster's limits never slow another's.
 * Pure bookkeeping: no SQL, the time is passed in. Not thread-safe: one per writer handle. */
#ifndef FJ_STORAGE_QUOTA_H
#define FJ_STORAGE_QUOTA_H

#include "fj_status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum fj_quota_kind { FJ_QUOTA_SERIES, FJ_QUOTA_NODES, FJ_QUOTA_JOBS, FJ_QUOTA__KINDS } fj_quota_kind;

/* Which limit refused (what fj_write_count.limit holds); 0: none. */
typedef enum fj_limit {
    FJ_LIMIT_NONE = 0,
    FJ_LIMIT_SERIES_TOTAL, /* max-series-per-cluster */
    FJ_LIMIT_SERIES_RATE,  /* max-new-series-per-minute */
    FJ_LIMIT_NODES_TOTAL,  /* max-nodes-per-cluster */
    FJ_LIMIT_JOBS_RATE,    /* max-new-jobs-per-minute */
} fj_limit;

/* The setting's name of a limit ("max-series-per-cluster"), "" for none. */
const char *fj_limit_name(fj_limit l);

/* Whether a refusal by l passes with time (a rate: answer 429 with Retry-After) or needs the
 * operator (a cap: 4xx that clients do not retry). */
bool fj_limit_is_rate(fj_limit l);

/* The limits, each 0 for none. total[] caps what a cluster holds; per_minute[] refills its bucket,
 * which holds one minute's worth (a full bucket at start: a cluster's first start may create that
 * many at once). Series take both; nodes only a total (a site adds nodes by the rack, not by the
 * minute) and jobs only a rate (the jobs of a cluster grow for ever): the others are ignored. */
typedef struct fj_quota_limits {
    uint64_t total[FJ_QUOTA__KINDS];
    uint64_t per_minute[FJ_QUOTA__KINDS];
    /* A total read from the database is read again when it is this old (ns; 0: never), so that
     * what other writers of the same database created is seen: PostgreSQL's several servers. */
    int64_t recount_ns;
} fj_quota_limits;

typedef struct fj_quota fj_quota;

/* How many of kind the cluster holds now (the database's count); called once per cluster and
 * kind, and only when that kind has a total cap. */
typedef fj_status (*fj_quota_count_fn)(void *ud, fj_quota_kind kind, const char *cluster, uint64_t *n);

/* A new set of counters; NULL on out of memory. lim may be NULL (no limits). */
fj_quota *fj_quota_new(const fj_quota_limits *lim);
void fj_quota_free(fj_quota *q); /* NULL is a no-op */

/* Whether any limit of kind is set: without one, fj_quota_admit always admits. */
bool fj_quota_limited(const fj_quota *q, fj_quota_kind kind);

/* One new thing of kind for cluster at now (ns, any monotonic clock): FJ_LIMIT_NONE and counted,
 * or the limit that refuses it (nothing counted). On a failure of count (out of memory included)
 * *st is set and FJ_LIMIT_NONE returned: a database error is no reason to refuse data. */
fj_limit fj_quota_admit(fj_quota *q, fj_quota_kind kind, const char *cluster, int64_t now, fj_quota_count_fn count,
                        void *ud, fj_status *st);

/* The same for n things at once (a Sonar envelope's new nodes or jobs): all or none. */
fj_limit fj_quota_admit_n(fj_quota *q, fj_quota_kind kind, const char *cluster, uint64_t n, int64_t now,
                          fj_quota_count_fn count, void *ud, fj_status *st);

/* n things of kind admitted for cluster were not made after all (another limit refused the rest
 * of what came with them): the total is lowered again. Tokens are not given back. */
void fj_quota_release(fj_quota *q, fj_quota_kind kind, const char *cluster, uint64_t n);

/* What was admitted since the last call did not happen after all (its transaction rolled back):
 * the totals are read again at their next use. Tokens are not given back. */
void fj_quota_forget_totals(fj_quota *q);

/* Seconds until the bucket of kind of cluster holds a token again, at least 1 (for Retry-After). */
unsigned fj_quota_retry_s(const fj_quota *q, fj_quota_kind kind);

#endif
