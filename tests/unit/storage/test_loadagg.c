/* Tests of storage/query/loadagg.c: a roll-up row gives back the bucket the queries read (averages and
 * maxima), merging two hours gives what one pass over both gives, and fj_loadagg_hour floors. */
#include "storage/query/loadagg.h"

#include <criterion/criterion.h>
#include <math.h>

/* One sample into a bucket, as the load queries add it (qmath accumulators). */
static void sample(fj_loadagg_bucket *b, double util, double cores, double secs, double mem, double l1, int gpus,
                   double gutil, double gmax)
{
    b->samples++;
    b->cores = 64;
    fj_qm_addw(&b->cpu_util, util, secs);
    fj_qm_addw(&b->cpu_cores, cores, secs);
    fj_qm_add(&b->mem, mem);
    fj_qm_add(&b->load1, l1);
    fj_qm_add(&b->load5, l1 / 2);
    fj_qm_add(&b->load15, l1 / 4);
    if (gpus) {
        b->gpus = gpus;
        fj_qm_add(&b->gpu_util, gutil);
        fj_qm_add(&b->gpu_util_card_max, gmax);
        fj_qm_add(&b->gpu_mem, 1000 * gutil);
        fj_qm_add(&b->gpu_power, 2 * gutil);
        fj_qm_add(&b->gpu_temp, 40 + gutil / 10);
        fj_qm_add(&b->gpu_temp_card_max, 50 + gmax / 10);
    }
}

static double avg(const fj_qm_acc *a)
{
    double v = NAN;
    cr_assert(fj_qm_avg(a, &v));
    return v;
}

static void same(const fj_loadagg_bucket *a, const fj_loadagg_bucket *b)
{
    cr_assert_eq(a->samples, b->samples);
    cr_assert_eq(a->cores, b->cores);
    cr_assert_eq(a->gpus, b->gpus);
    const fj_qm_acc *x[] = {&a->cpu_util, &a->cpu_cores, &a->mem, &a->load1, &a->load5, &a->load15,
                            &a->gpu_util, &a->gpu_mem, &a->gpu_power, &a->gpu_temp};
    const fj_qm_acc *y[] = {&b->cpu_util, &b->cpu_cores, &b->mem, &b->load1, &b->load5, &b->load15,
                            &b->gpu_util, &b->gpu_mem, &b->gpu_power, &b->gpu_temp};
    for (size_t i = 0; i < sizeof x / sizeof *x; i++)
        cr_assert_float_eq(avg(x[i]), avg(y[i]), 1e-9 * fabs(avg(x[i])) + 1e-12, "average %zu", i);
    cr_assert_eq(a->cpu_util.max, b->cpu_util.max);
    cr_assert_eq(a->mem.max, b->mem.max);
    cr_assert_eq(a->load1.max, b->load1.max);
    cr_assert_eq(a->gpu_util_card_max.max, b->gpu_util_card_max.max);
    cr_assert_eq(a->gpu_mem.max, b->gpu_mem.max);
    cr_assert_eq(a->gpu_power.max, b->gpu_power.max);
    cr_assert_eq(a->gpu_temp_card_max.max, b->gpu_temp_card_max.max);
}

static fj_loadagg_bucket through_row(const fj_loadagg_bucket *b)
{
    double v[FJ_LOADAGG_NCOLS];
    fj_loadagg_to_row(b, v);
    fj_loadagg_bucket r;
    fj_loadagg_from_row(&r, v);
    return r;
}

Test(loadagg, row_round_trip_keeps_what_queries_read)
{
    fj_loadagg_bucket b = {0};
    sample(&b, 50, 32, 300, 1e6, 3, 4, 60, 90);
    sample(&b, 25, 16, 290, 2e6, 5, 4, 20, 30);
    fj_loadagg_bucket r = through_row(&b);
    same(&b, &r);
    fj_loadagg_bucket empty = {0}, e = through_row(&empty);
    cr_assert_eq(e.samples, 0);
    cr_assert_eq(e.cpu_util.n, 0, "an empty accumulator stays empty");
    cr_assert_eq(e.gpu_util.n, 0);
}

Test(loadagg, merged_hours_equal_one_pass)
{
    fj_loadagg_bucket h1 = {0}, h2 = {0}, all = {0};
    sample(&h1, 50, 32, 300, 1e6, 3, 4, 60, 90);
    sample(&all, 50, 32, 300, 1e6, 3, 4, 60, 90);
    sample(&h2, 75, 48, 310, 3e6, 1, 0, 0, 0); /* no GPU readings in this sample */
    sample(&all, 75, 48, 310, 3e6, 1, 0, 0, 0);
    sample(&h2, 10, 6.4, 280, 5e5, 7, 4, 10, 15);
    sample(&all, 10, 6.4, 280, 5e5, 7, 4, 10, 15);
    fj_loadagg_bucket m = {0};
    fj_loadagg_bucket r1 = through_row(&h1), r2 = through_row(&h2);
    fj_loadagg_merge(&m, &r1);
    fj_loadagg_merge(&m, &r2);
    same(&all, &m);
}

Test(loadagg, hour_floors)
{
    cr_assert_eq(fj_loadagg_hour(0), 0);
    cr_assert_eq(fj_loadagg_hour(3599), 0);
    cr_assert_eq(fj_loadagg_hour(3600), 3600);
    cr_assert_eq(fj_loadagg_hour(1736208000 + 1799), 1736208000);
    cr_assert_eq(fj_loadagg_hour(-1), -3600);
}

Test(loadagg, integer_columns)
{
    cr_assert(fj_loadagg_col_is_int(0) && fj_loadagg_col_is_int(3) && fj_loadagg_col_is_int(16));
    cr_assert(!fj_loadagg_col_is_int(4) && !fj_loadagg_col_is_int(24));
}
