/* api/ccms_agg.h — pure helpers that turn read points into what metric queries answer, with
 * cc-metric-store's semantics: values on a grid of fixed-width time buckets (NaN where nothing was
 * measured, shown as null), series combined bucket by bucket by sum or average (hwthread → core →
 * socket → node), and avg/min/max of a result.
 *
 * NaN is "missing" everywhere: it is skipped when averaging within a bucket and when combining
 * series (cc-metric-store adds NaN through and so loses a whole node's value when one hwthread
 * misses a point; skipping keeps the value of the threads that reported). A bucket or combination
 * with no value is NaN. Times are in whatever unit the caller uses (fjord stores nanoseconds).
 * No allocation; reentrant. */
#ifndef FJ_CCMS_AGG_H
#define FJ_CCMS_AGG_H

#include "fj_status.h"

#include <stddef.h>
#include <stdint.h>

/* Bucket i covers [from + i * step, from + (i + 1) * step), for i < n. */
typedef struct fj_agg_grid {
    int64_t from, step;
    size_t n;
} fj_agg_grid;

/* The grid of step-wide buckets aligned to multiples of step that covers [from, to]. FJ_OK;
 * FJ_EINVAL when step <= 0, from > to or the aligned start is below INT64_MIN; FJ_ETOOBIG when
 * it needs more than max_buckets. */
fj_status fj_agg_grid_make(int64_t from, int64_t to, int64_t step, size_t max_buckets,
                          fj_agg_grid *g);

/* out[0..g->n): the mean of the non-NaN v[i] whose t[i] falls in each bucket, NaN for none.
 * t is ascending; points outside the grid are ignored. */
void fj_agg_resample_avg(const fj_agg_grid *g, const int64_t *t, const double *v, size_t n,
                        double *out);

typedef enum fj_agg_op { FJ_AGG_SUM, FJ_AGG_AVG } fj_agg_op;

/* Accumulates series on one grid without keeping them all: sum[] and cnt[] (n buckets, zeroed
 * by the caller) get every non-NaN x[i]; finish writes the sum or mean per bucket, NaN where
 * cnt is 0. out may be sum. */
void fj_agg_acc_add(double *sum, uint32_t *cnt, const double *x, size_t n);
void fj_agg_acc_finish(fj_agg_op op, const double *sum, const uint32_t *cnt, size_t n,
                      double *out);

/* out[i] = op over k of in[k][i], NaN skipped, NaN when all are; the same as acc_add over
 * every series then acc_finish, for callers that hold the series anyway. */
void fj_agg_combine(fj_agg_op op, const double *const *in, size_t n_series, size_t n,
                   double *out);

/* Mean, minimum and maximum of the non-NaN v (all NaN when there is none), as cc-metric-store
 * reports them next to the data. Any output pointer may be NULL. */
void fj_agg_summary(const double *v, size_t n, double *avg, double *min, double *max);

#endif
