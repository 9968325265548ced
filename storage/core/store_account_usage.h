/* storage/core/store_account_usage.h — usage per user, account, partition or cluster over a window
 * (GET /api/v1/usage; docs/api.md, docs/storage.md "Usage and efficiency"): per group and time
 * bucket the jobs, wall hours, the core-, GPU- and memory-hours allocated (Slurm) and used
 * (samples), and the efficiencies they imply. Not the nodes' utilisation: that is
 * fj_qt_node_usage (storage/query/usage.c).
 *
 * A plain function over the store, written once over the SQL driver (storage/query/account_usage.c):
 * it reads the window's jobs from their stored summaries with their Slurm record, and the
 * node-samples only of the jobs that cross a bucket's or the window's edge. */
#ifndef FJ_STORE_ACCOUNT_USAGE_H
#define FJ_STORE_ACCOUNT_USAGE_H

#include "storage/core/store_query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What rows are grouped by. */
typedef enum fj_usage_by { FJ_UB_USER = 0, FJ_UB_ACCOUNT, FJ_UB_PARTITION, FJ_UB_CLUSTER } fj_usage_by;

/* Time buckets, in UTC: none (the whole window), days, ISO weeks (from Monday 00:00), months. */
typedef enum fj_usage_bucket { FJ_UBK_NONE = 0, FJ_UBK_DAY, FJ_UBK_WEEK, FJ_UBK_MONTH } fj_usage_bucket;

/* The figures of a row, in fj_qt_account_usage's order from its column "jobs" on: the sort keys.
 * FJ_UF_GROUP sorts by the group's name. */
#define FJ_USAGE_FIGURES(X)                                                                        \
    X(JOBS, "jobs") X(JOBS_ALLOC, "jobs_alloc") X(WALL_H, "wall_h") X(CORE_H_ALLOC, "core_h_alloc")  \
    X(CORE_H_USED, "core_h_used") X(CPU_EFF, "cpu_eff") X(GPU_H_ALLOC, "gpu_h_alloc")                \
    X(GPU_H_USED, "gpu_h_used") X(GPU_EFF, "gpu_eff") X(MEM_GIB_H_ALLOC, "mem_gib_h_alloc")          \
    X(MEM_GIB_H_USED, "mem_gib_h_used") X(MEM_EFF, "mem_eff") X(ENERGY_KWH, "energy_kwh") \
    X(CO2E_KG, "co2e_kg")
typedef enum fj_usage_figure {
#define FJ_UF_ENUM(id, name) FJ_UF_##id,
    FJ_USAGE_FIGURES(FJ_UF_ENUM)
#undef FJ_UF_ENUM
    FJ_UF__COUNT,
    FJ_UF_GROUP = FJ_UF__COUNT
} fj_usage_figure;
extern const char *const fj_usage_figure_names[FJ_UF__COUNT];

typedef struct fj_usage_req {
    fj_usage_by by;
    fj_usage_bucket bucket;
    fj_strlist users, accounts, partitions; /* only jobs of these (empty: all) */
    int sort;     /* fj_usage_figure, or FJ_UF_GROUP */
    bool desc;
    size_t limit; /* the first limit groups in sort order (ranked by their window totals); 0: all */
} fj_usage_req;

/* fj_qt_account_usage: one row per bucket and group (buckets in time order, groups in sort order
 * within each), for q->cluster over [q->from, q->to) (half-open; resolved and written back: to =
 * now, from = to - 7 days when unset). FJ_EINVAL naming "from" when from is not before to, or
 * "bucket" for more than 1,000 buckets; FJ_ENOTFOUND for an unknown cluster. */
fj_status fj_store_account_usage(fj_store *s, fj_query *q, const fj_usage_req *req, fj_sink *k, fj_err *err);

/* The result table (storage/query/cols.c). */
extern const fj_qtable fj_qt_account_usage;

#endif
