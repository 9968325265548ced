/* Tests of storage/qmath.c: bucket grids, CPU utilisation from cumulative counters (a decreasing
 * counter is never negative use, a duplicate timestamp is no interval, a reboot ends the
 * interval), accumulators and varints. */
#include "qmath.h"

#include <criterion/criterion.h>

Test(qmath, default_bucket_is_max_60s_span_over_120)
{
    cr_assert_eq(fj_qm_default_bucket(0, 3600), 60);
    cr_assert_eq(fj_qm_default_bucket(0, 86400), 720);
    cr_assert_eq(fj_qm_default_bucket(0, 7 * 86400), 5040);
    cr_assert_eq(fj_qm_default_bucket(0, 7201), 61, "rounded up");
    cr_assert_eq(fj_qm_default_bucket(10, 5), 60);
}

Test(qmath, grid_is_aligned_and_bounded)
{
    fj_qm_grid g;
    cr_assert_eq(fj_qm_grid_make(1000, 4000, 3600, 100, &g), FJ_OK);
    cr_assert_eq(g.from, 0);
    cr_assert_eq(g.n, 2);
    cr_assert_eq(fj_qm_bucket(&g, 0), 0);
    cr_assert_eq(fj_qm_bucket(&g, 3599), 0);
    cr_assert_eq(fj_qm_bucket(&g, 3600), 1);
    cr_assert_eq(fj_qm_bucket(&g, 7199), 1);
    cr_assert_eq(fj_qm_bucket(&g, 7200), -1);
    cr_assert_eq(fj_qm_bucket(&g, -1), -1);
    cr_assert_eq(fj_qm_grid_make(-90, -10, 60, 100, &g), FJ_OK);
    cr_assert_eq(g.from, -120, "floor for negative times");
    cr_assert_eq(g.n, 2);
    cr_assert_eq(fj_qm_grid_make(0, 86400 * 365, 1, 1000, &g), FJ_ETOOBIG);
    cr_assert_eq(fj_qm_grid_make(0, 10, 0, 1000, &g), FJ_EINVAL);
    cr_assert_eq(fj_qm_grid_make(10, 0, 60, 1000, &g), FJ_EINVAL);
}

Test(qmath, cpu_from_two_readings)
{
    /* the two Sonar 0.19 samples of shared/data: [426,445] at 00:09:01, [428,446] at 00:09:04 */
    uint64_t a[] = {426, 445}, b[] = {428, 446};
    fj_qm_cpu c;
    cr_assert(fj_qm_cpu_interval(100, 5, a, 2, 103, 5, b, 2, &c));
    cr_assert_float_eq(c.busy_s, 3, 1e-12);
    cr_assert_float_eq(fj_qm_cpu_cores(&c), 1, 1e-12);
    cr_assert_float_eq(fj_qm_cpu_util(&c), 50, 1e-12);
}

Test(qmath, decreasing_counter_is_not_negative)
{
    uint64_t a[] = {1000, 500, 70}, b[] = {400, 560, 70};
    fj_qm_cpu c;
    cr_assert(fj_qm_cpu_interval(0, 0, a, 3, 60, 0, b, 3, &c));
    cr_assert_float_eq(c.busy_s, 60, 1e-12, "the reset core counts 0, the others their increase");
    cr_assert(fj_qm_cpu_util(&c) >= 0);
    uint64_t z[] = {0, 0, 0};
    cr_assert(fj_qm_cpu_interval(0, 0, a, 3, 60, 0, z, 3, &c));
    cr_assert_float_eq(c.busy_s, 0, 1e-12);
}

Test(qmath, duplicate_or_backward_time_is_no_interval)
{
    uint64_t a[] = {1}, b[] = {100};
    fj_qm_cpu c;
    cr_assert(!fj_qm_cpu_interval(60, 0, a, 1, 60, 0, b, 1, &c), "duplicate timestamp");
    cr_assert(!fj_qm_cpu_interval(60, 0, a, 1, 30, 0, b, 1, &c), "backwards");
    cr_assert(!fj_qm_cpu_interval(0, 5, a, 1, 60, 6, b, 1, &c), "reboot between");
    cr_assert(fj_qm_cpu_interval(0, 0, a, 1, 60, 6, b, 1, &c), "boot unknown on one side");
    cr_assert(!fj_qm_cpu_interval(0, 0, a, 0, 60, 0, b, 1, &c), "no cores");
}

Test(qmath, core_count_change_uses_common_cores)
{
    uint64_t a[] = {10, 10}, b[] = {20, 20, 20, 20};
    fj_qm_cpu c;
    cr_assert(fj_qm_cpu_interval(0, 0, a, 2, 10, 0, b, 4, &c));
    cr_assert_eq(c.cores, 2);
    cr_assert_float_eq(fj_qm_cpu_util(&c), 100, 1e-12);
}

Test(qmath, accumulators)
{
    fj_qm_acc x = {0};
    double v = -1;
    cr_assert(!fj_qm_avg(&x, &v));
    cr_assert_float_eq(v, -1, 0);
    fj_qm_addw(&x, 10, 1);
    fj_qm_addw(&x, 40, 3);
    cr_assert(fj_qm_avg(&x, &v));
    cr_assert_float_eq(v, 32.5, 1e-12, "weighted");
    cr_assert_float_eq(x.max, 40, 0);
    fj_qm_acc y = {0};
    fj_qm_add(&y, -5);
    cr_assert_float_eq(y.max, -5, 0, "the first value is the max, even when negative");
}

Test(qmath, varints)
{
    const unsigned char p[] = {0x00, 0x7f, 0x80, 0x01, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                               0xff, 0xff, 0xff, 0x01};
    uint64_t v[8];
    cr_assert_eq(fj_qm_varints(p, sizeof p, v, 8), 5);
    cr_assert_eq(v[0], 0);
    cr_assert_eq(v[1], 127);
    cr_assert_eq(v[2], 128);
    cr_assert_eq(v[3], 300);
    cr_assert_eq(v[4], UINT64_MAX);
    const unsigned char trunc[] = {0x80};
    cr_assert_eq(fj_qm_varints(trunc, 1, v, 8), (size_t)-1);
    const unsigned char big[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    cr_assert_eq(fj_qm_varints(big, sizeof big, v, 8), (size_t)-1, "over 64 bits");
    cr_assert_eq(fj_qm_varints(p, sizeof p, v, 2), (size_t)-1, "more than max");
}
