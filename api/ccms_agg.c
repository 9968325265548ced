/* api/ccms_agg.c — bucket resampling and cross-series aggregation for cc-metric-store's query (see api/ccms_agg.h). */
#include "api/ccms_agg.h"

#include <math.h>

/* floor(a / b) for b > 0 */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

fj_status fj_agg_grid_make(int64_t from, int64_t to, int64_t step, size_t max_buckets,
                          fj_agg_grid *g)
{
    if (step <= 0 || from > to)
        return FJ_EINVAL;
    int64_t first = floor_div(from, step), last = floor_div(to, step), start;
    /* last - first + 1 buckets; in uint64 so that no range overflows */
    uint64_t span = (uint64_t)last - (uint64_t)first;
    if (span >= max_buckets)
        return FJ_ETOOBIG;
    if (__builtin_mul_overflow(first, step, &start))
        return FJ_EINVAL; /* the aligned start is before INT64_MIN */
    g->from = start;
    g->n = (size_t)span + 1;
    g->step = step;
    return FJ_OK;
}

void fj_agg_resample_avg(const fj_agg_grid *g, const int64_t *t, const double *v, size_t n,
                        double *out)
{
    size_t i = 0;
    /* skip points before the grid; (t - from) in uint64 avoids overflow for any t >= from */
    while (i < n && t[i] < g->from)
        i++;
    for (size_t b = 0; b < g->n; b++) {
        double sum = 0;
        size_t cnt = 0;
        uint64_t end = (uint64_t)g->step * (b + 1); /* offset of the bucket's end from g->from */
        while (i < n && (uint64_t)t[i] - (uint64_t)g->from < end) {
            if (!isnan(v[i])) {
                sum += v[i];
                cnt++;
            }
            i++;
        }
        out[b] = cnt ? sum / (double)cnt : NAN;
    }
}

void fj_agg_acc_add(double *sum, uint32_t *cnt, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!isnan(x[i])) {
            sum[i] += x[i];
            cnt[i]++;
        }
    }
}

void fj_agg_acc_finish(fj_agg_op op, const double *sum, const uint32_t *cnt, size_t n,
                      double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = cnt[i] == 0 ? NAN : op == FJ_AGG_AVG ? sum[i] / cnt[i] : sum[i];
}

void fj_agg_combine(fj_agg_op op, const double *const *in, size_t n_series, size_t n,
                   double *out)
{
    for (size_t i = 0; i < n; i++) {
        double sum = 0;
        size_t cnt = 0;
        for (size_t k = 0; k < n_series; k++) {
            double x = in[k][i];
            if (!isnan(x)) {
                sum += x;
                cnt++;
            }
        }
        out[i] = cnt == 0 ? NAN : op == FJ_AGG_AVG ? sum / (double)cnt : sum;
    }
}

void fj_agg_summary(const double *v, size_t n, double *avg, double *min, double *max)
{
    double sum = 0, mn = NAN, mx = NAN;
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(v[i]))
            continue;
        if (cnt == 0 || v[i] < mn)
            mn = v[i];
        if (cnt == 0 || v[i] > mx)
            mx = v[i];
        sum += v[i];
        cnt++;
    }
    if (avg)
        *avg = cnt ? sum / (double)cnt : NAN;
    if (min)
        *min = mn;
    if (max)
        *max = mx;
}
