/* storage/query/loadagg.h — one node's load figures in one time bucket, shared by both backends' load queries
 * and by the hourly per-node roll-ups (table load_hourly, docs/storage.md). A bucket is a set of
 * accumulators; two buckets of the same node over adjacent spans merge into the bucket of their
 * union, which is what lets a query answer a multi-hour bucket from hourly roll-ups.
 *
 * A roll-up row stores the FJ_LOADAGG_NCOLS values of fj_loadagg_to_row, in the column order of
 * FJ_LOADAGG_COLS_SQL; fj_loadagg_from_row reads them back. Only the parts of a bucket that node and cluster
 * load answer from are kept (the maxima nobody reads are not). Pure functions: thread-safe. */
#ifndef FJ_LOADAGG_H
#define FJ_LOADAGG_H

#include "storage/query/qmath.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct fj_loadagg_bucket {
    int64_t samples, cores, gpus;
    fj_qm_acc cpu_util, cpu_cores; /* weighted by interval seconds */
    fj_qm_acc mem, load1, load5, load15;
    fj_qm_acc gpu_util, gpu_util_card_max, gpu_mem, gpu_power, gpu_temp, gpu_temp_card_max;
} fj_loadagg_bucket;

/* Adds b into `into` (the same node, a disjoint span of samples). */
void fj_loadagg_merge(fj_loadagg_bucket *into, const fj_loadagg_bucket *b);

/* The roll-up's width in seconds; roll-ups are aligned to multiples of it. */
#define FJ_LOADAGG_ROLLUP_S 3600

/* The start of the roll-up holding t. */
static inline int64_t fj_loadagg_hour(int64_t t)
{
    int64_t r = t % FJ_LOADAGG_ROLLUP_S;
    return t - (r < 0 ? r + FJ_LOADAGG_ROLLUP_S : r);
}

/* The value columns of a roll-up row, in order. */
#define FJ_LOADAGG_COLS_SQL                                                                            \
    "samples,cores,gpus,cpu_n,cpu_s,cpu_util_sum,cpu_util_max,cpu_cores_sum,mem_n,mem_sum,mem_max," \
    "load_n,load1_sum,load1_max,load5_sum,load15_sum,gpu_n,gpu_util_sum,gpu_util_max,gpu_mem_sum,"  \
    "gpu_mem_max,gpu_power_sum,gpu_power_max,gpu_temp_sum,gpu_temp_max"
#define FJ_LOADAGG_NCOLS 25

/* Day roll-ups (table load_daily): per node and UTC day (a multiple of FJ_LOADAGG_DAY_S), the merge
 * of that day's hourly roll-ups, which the writers keep with them (docs/storage.md, "Load
 * roll-ups"): a query whose buckets are whole days reads one row per node and day. */
#define FJ_LOADAGG_DAY_S 86400

/* The start of the day holding t. */
static inline int64_t fj_loadagg_day(int64_t t)
{
    int64_t r = t % FJ_LOADAGG_DAY_S;
    return t - (r < 0 ? r + FJ_LOADAGG_DAY_S : r);
}

/* The SQL of the day holding the hour column h.hour (floor division, also before 1970). */
#define FJ_LOADAGG_DAY_OF_SQL(col) "(" col " - ((" col " % 86400) + 86400) % 86400)"

/* fj_loadagg_merge of the hourly rows h of a group, in SQL, in FJ_LOADAGG_COLS_SQL's order: counts and sums
 * added, cores and cards the most, each maximum the largest of the rows whose count is not 0
 * (fj_loadagg_from_row reads a maximum of no values as 0). Sums come out added in another order than
 * fj_loadagg_merge adds them: the same figures to about 1e-15 relative. */
#define FJ_LOADAGG_MAX_SQL(n, col) "coalesce(max(CASE WHEN h." n " > 0 THEN h." col " END), 0)"
#define FJ_LOADAGG_MERGE_SQL                                                                                       \
    "sum(h.samples),max(h.cores),max(h.gpus),sum(h.cpu_n),sum(h.cpu_s),sum(h.cpu_util_sum),"                       \
    FJ_LOADAGG_MAX_SQL("cpu_n", "cpu_util_max") ",sum(h.cpu_cores_sum),sum(h.mem_n),sum(h.mem_sum),"               \
    FJ_LOADAGG_MAX_SQL("mem_n", "mem_max") ",sum(h.load_n),sum(h.load1_sum),"                                      \
    FJ_LOADAGG_MAX_SQL("load_n", "load1_max")                                                                      \
    ",sum(h.load5_sum),sum(h.load15_sum),sum(h.gpu_n),sum(h.gpu_util_sum),"                                        \
    FJ_LOADAGG_MAX_SQL("gpu_n", "gpu_util_max") ",sum(h.gpu_mem_sum)," FJ_LOADAGG_MAX_SQL("gpu_n", "gpu_mem_max")  \
    ",sum(h.gpu_power_sum)," FJ_LOADAGG_MAX_SQL("gpu_n", "gpu_power_max") ",sum(h.gpu_temp_sum),"                  \
    FJ_LOADAGG_MAX_SQL("gpu_n", "gpu_temp_max")

/* Whether value i of a row is an integer column (the others are real). */
bool fj_loadagg_col_is_int(int i);
void fj_loadagg_to_row(const fj_loadagg_bucket *b, double v[FJ_LOADAGG_NCOLS]);
void fj_loadagg_from_row(fj_loadagg_bucket *b, const double v[FJ_LOADAGG_NCOLS]);

#endif
