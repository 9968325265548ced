/* Tests of api/ccms_agg.c: grids, bucket averages with NaN as missing, series combined by sum
 * and average, summaries. */
#include "api/ccms_agg.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#define S INT64_C(1000000000)

Test(ccms_agg, grid_is_aligned_to_the_step)
{
    fj_agg_grid g;
    cr_assert_eq(fj_agg_grid_make(125 * S, 301 * S, 60 * S, 100, &g), FJ_OK);
    cr_assert_eq(g.from, 120 * S);
    cr_assert_eq(g.step, 60 * S);
    cr_assert_eq(g.n, 4); /* 120, 180, 240, 300 */
    cr_assert_eq(fj_agg_grid_make(-61, -1, 60, 100, &g), FJ_OK);
    cr_assert_eq(g.from, -120);
    cr_assert_eq(g.n, 2);
    cr_assert_eq(fj_agg_grid_make(0, 0, 60, 100, &g), FJ_OK);
    cr_assert_eq(g.n, 1);
    cr_assert_eq(fj_agg_grid_make(0, 10, 0, 100, &g), FJ_EINVAL);
    cr_assert_eq(fj_agg_grid_make(10, 0, 1, 100, &g), FJ_EINVAL);
    cr_assert_eq(fj_agg_grid_make(0, 1000, 1, 100, &g), FJ_ETOOBIG);
    cr_assert_eq(fj_agg_grid_make(INT64_MIN, INT64_MAX, 1, 100, &g), FJ_ETOOBIG);
    cr_assert_eq(fj_agg_grid_make(INT64_MIN, INT64_MIN + 10, 60, 100, &g), FJ_EINVAL);
    cr_assert_eq(fj_agg_grid_make(INT64_MIN, INT64_MIN + 10, 1, 100, &g), FJ_OK);
    cr_assert_eq(g.n, 11);
}

Test(ccms_agg, resample_averages_buckets_skipping_nan)
{
    /* 10 s data resampled to 30 s */
    int64_t t[] = {0, 10, 20, 30, 40, 50, 90, 100, 130};
    double v[] = {1, 2, 3, 4, NAN, 6, NAN, NAN, 9};
    for (int i = 0; i < 9; i++)
        t[i] *= S;
    fj_agg_grid g;
    cr_assert_eq(fj_agg_grid_make(0, 149 * S, 30 * S, 100, &g), FJ_OK);
    cr_assert_eq(g.n, 5);
    double out[5];
    fj_agg_resample_avg(&g, t, v, 9, out);
    cr_assert_float_eq(out[0], 2.0, 1e-12);
    cr_assert_float_eq(out[1], 5.0, 1e-12); /* NaN skipped */
    cr_assert(isnan(out[2]));               /* no point */
    cr_assert(isnan(out[3]));               /* only NaN */
    cr_assert_float_eq(out[4], 9.0, 1e-12);
}

Test(ccms_agg, resample_ignores_points_outside_the_grid)
{
    int64_t t[] = {-100, 5, 15, 25, 1000};
    double v[] = {100, 1, 2, 3, 100};
    fj_agg_grid g = {.from = 0, .step = 10, .n = 3};
    double out[3];
    fj_agg_resample_avg(&g, t, v, 5, out);
    cr_assert_eq(out[0], 1);
    cr_assert_eq(out[1], 2);
    cr_assert_eq(out[2], 3);
    fj_agg_resample_avg(&g, t, v, 0, out);
    cr_assert(isnan(out[0]) && isnan(out[1]) && isnan(out[2]));
}

Test(ccms_agg, combine_sums_and_averages_across_series)
{
    /* hwthreads of one core: sum for flops, average for clock */
    double a[] = {1, 2, NAN, NAN}, b[] = {3, NAN, 5, NAN}, c[] = {5, 4, 7, NAN};
    const double *in[] = {a, b, c};
    double out[4];
    fj_agg_combine(FJ_AGG_SUM, in, 3, 4, out);
    cr_assert_eq(out[0], 9);
    cr_assert_eq(out[1], 6);
    cr_assert_eq(out[2], 12);
    cr_assert(isnan(out[3]));
    fj_agg_combine(FJ_AGG_AVG, in, 3, 4, out);
    cr_assert_eq(out[0], 3);
    cr_assert_eq(out[1], 3);
    cr_assert_eq(out[2], 6);
    cr_assert(isnan(out[3]));
    fj_agg_combine(FJ_AGG_SUM, in, 0, 4, out);
    cr_assert(isnan(out[0]));
}

Test(ccms_agg, accumulate_equals_combine_and_nests)
{
    /* 4 hwthreads → 2 cores → 1 socket, by sum: the same as summing all 4 */
    double h[4][3] = {{1, 2, NAN}, {3, 4, NAN}, {5, NAN, NAN}, {7, 8, 1}};
    double core[2][3], sum[3] = {0};
    uint32_t cnt[3] = {0};
    for (int c = 0; c < 2; c++) {
        const double *in[] = {h[2 * c], h[2 * c + 1]};
        fj_agg_combine(FJ_AGG_SUM, in, 2, 3, core[c]);
    }
    for (int c = 0; c < 2; c++)
        fj_agg_acc_add(sum, cnt, core[c], 3);
    double sock[3], all[3];
    fj_agg_acc_finish(FJ_AGG_SUM, sum, cnt, 3, sock);
    const double *in4[] = {h[0], h[1], h[2], h[3]};
    fj_agg_combine(FJ_AGG_SUM, in4, 4, 3, all);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(sock[i], all[i]);
    cr_assert_eq(sock[0], 16);
    cr_assert_eq(sock[1], 14);
    cr_assert_eq(sock[2], 1);
    /* finish in place, average */
    fj_agg_acc_finish(FJ_AGG_AVG, sum, cnt, 3, sum);
    cr_assert_eq(sum[0], 8);
    uint32_t zero[1] = {0};
    double s0[1] = {0};
    fj_agg_acc_finish(FJ_AGG_AVG, s0, zero, 1, s0);
    cr_assert(isnan(s0[0]));
}

Test(ccms_agg, summary_skips_nan)
{
    double v[] = {NAN, 3, -1, NAN, 4};
    double avg, mn, mx;
    fj_agg_summary(v, 5, &avg, &mn, &mx);
    cr_assert_float_eq(avg, 2.0, 1e-12);
    cr_assert_eq(mn, -1);
    cr_assert_eq(mx, 4);
    fj_agg_summary(v, 1, &avg, &mn, &mx);
    cr_assert(isnan(avg) && isnan(mn) && isnan(mx));
    fj_agg_summary(v, 5, NULL, NULL, &mx);
    cr_assert_eq(mx, 4);
}
