/* Tests of storage/core/energy.c against integrals worked out by hand: the trapezoid rule (steady,
 * ramps, cut by a window), counters by difference with wrap-around and resets, the gap rule and the
 * cadence, sharing by weights, and the GPU count of Slurm's AllocTRES. */
#include "storage/core/energy.h"

#include <criterion/criterion.h>
#include <math.h>

#define NEAR(a, b) near((a), (b))

static void near(double a, double b)
{
    cr_assert(fabs(a - b) < 1e-9 * (fabs(b) + 1), "%.12g != %.12g", a, b);
}

Test(energy, trapezoid_steady_and_ramp)
{
    NEAR(fj_en_trapezoid(0, 100, 10, 100, -INFINITY, INFINITY), 1000);
    NEAR(fj_en_trapezoid(0, 0, 10, 100, -INFINITY, INFINITY), 500);
    NEAR(fj_en_trapezoid(10, 5, 10, 7, -INFINITY, INFINITY), 0); /* no interval */
}

Test(energy, trapezoid_cut_by_window)
{
    /* 0 -> 100 W over 10 s, window [5, 20]: power 50 at 5 s, 100 at 10 s: 375 J */
    NEAR(fj_en_trapezoid(0, 0, 10, 100, 5, 20), 375);
    /* window [0, 5]: 0 -> 50 W: 125 J; the two halves make the whole */
    NEAR(fj_en_trapezoid(0, 0, 10, 100, 0, 5), 125);
    NEAR(fj_en_trapezoid(0, 0, 10, 100, 10, 20), 0);
    NEAR(fj_en_trapezoid(0, 0, 10, 100, 20, 30), 0);
}

Test(energy, cadence_is_lower_median_of_spacings)
{
    fj_en_reading r[] = {{0, 0}, {10, 0}, {20, 0}, {20, 0}, {100, 0}, {110, 0}};
    /* spacings 10, 10, (0 left out), 80, 10 -> sorted 10 10 10 80 -> lower median 10 */
    NEAR(fj_en_cadence(r, 6), 10);
    fj_en_reading two[] = {{0, 0}, {10, 0}, {100, 0}};
    NEAR(fj_en_cadence(two, 3), 10); /* 10 and 90: the lower one */
    NEAR(fj_en_cadence(two, 1), 0);
    cr_assert(fj_en_is_gap(20.5, 10));
    cr_assert(!fj_en_is_gap(20, 10), "exactly twice the cadence is not a gap");
    cr_assert(!fj_en_is_gap(1e9, 0));
}

Test(energy, cadence_of_a_long_series)
{
    fj_en_reading r[200];
    for (int i = 0; i < 200; i++)
        r[i] = (fj_en_reading){i * 5.0 + (i > 150 ? 1000 : 0), 1};
    NEAR(fj_en_cadence(r, 200), 5);
}

Test(energy, power_series_with_gap_is_missing_not_interpolated)
{
    /* 100 W steady at 10 s cadence from 0 to 60, then nothing until 200, then 200 W to 230 */
    fj_en_reading r[] = {{0, 100}, {10, 100}, {20, 100}, {30, 100}, {40, 100}, {50, 100}, {60, 100},
                         {200, 200}, {210, 200}, {220, 200}, {230, 200}};
    fj_en_sum s = {0};
    fj_en_power(r, 11, 0, -INFINITY, INFINITY, &s);
    NEAR(s.joules, 6000 + 6000);
    NEAR(s.covered_s, 90);
    NEAR(s.missing_s, 140);
    cr_assert_eq(s.gaps, 1);
}

Test(energy, power_series_varying)
{
    /* p(t) = 2t sampled every second for 100 s: linear, so the trapezoid is exact: t^2 = 10000 */
    fj_en_reading r[101];
    for (int i = 0; i <= 100; i++)
        r[i] = (fj_en_reading){i, 2.0 * i};
    fj_en_sum s = {0};
    fj_en_power(r, 101, 0, -INFINITY, INFINITY, &s);
    NEAR(s.joules, 10000);
    fj_en_sum w = {0};
    fj_en_power(r, 101, 0, 10.5, 20.25, &w);
    NEAR(w.joules, 20.25 * 20.25 - 10.5 * 10.5);
    NEAR(w.covered_s, 9.75);
}

Test(energy, counter_by_difference_with_wrap)
{
    double rise;
    cr_assert(fj_en_counter_rise(10, 25, 0, &rise));
    NEAR(rise, 15);
    cr_assert(fj_en_counter_rise(4294967000.0, 200, 4294967296.0, &rise));
    NEAR(rise, 296 + 200);
    cr_assert(!fj_en_counter_rise(500, 100, 0, &rise), "a fall without a width is a reset");
    /* a RAPL-like counter wrapping at 2^32 J while 150 W flows, read every 10 s */
    double wrap = 4294967296.0;
    fj_en_reading r[8];
    double v = wrap - 2000;
    for (int i = 0; i < 8; i++) {
        r[i] = (fj_en_reading){i * 10.0, v};
        v = fmod(v + 1500, wrap);
    }
    fj_en_sum s = {0};
    fj_en_counter(r, 8, 0, wrap, -INFINITY, INFINITY, &s);
    NEAR(s.joules, 7 * 1500);
    cr_assert_eq(s.gaps, 0);
}

Test(energy, counter_reset_and_gap_and_window)
{
    fj_en_reading r[] = {{0, 1000}, {10, 2000}, {20, 3000}, {30, 50}, {40, 1050}, {100, 9050}, {110, 10050}};
    fj_en_sum s = {0};
    fj_en_counter(r, 7, 0, 0, -INFINITY, INFINITY, &s);
    NEAR(s.joules, 1000 + 1000 + 1000 + 1000); /* the reset (20-30) and the gap (40-100) are missing */
    NEAR(s.missing_s, 70);
    cr_assert_eq(s.gaps, 2);
    fj_en_sum w = {0};
    fj_en_counter(r, 7, 0, 0, 5, 15, &w); /* half of each of the first two intervals */
    NEAR(w.joules, 1000);
    NEAR(w.covered_s, 10);
}

Test(energy, split_by_weight_or_equally)
{
    double out[3] = {0};
    double w[3] = {300, 100, 0};
    fj_en_split(800, w, 3, out);
    NEAR(out[0], 600);
    NEAR(out[1], 200);
    NEAR(out[2], 0);
    double z[2] = {0, -1}, o2[2] = {1, 1};
    fj_en_split(10, z, 2, o2);
    NEAR(o2[0], 6);
    NEAR(o2[1], 6);
}

Test(energy, tres_gpus)
{
    cr_assert_eq(fj_en_tres_gpus("billing=8,cpu=8,gres/gpu=2,mem=32G,node=1"), 2);
    cr_assert_eq(fj_en_tres_gpus("cpu=8,gres/gpu:a100=3,gres/gpu:v100=1,node=2"), 4);
    cr_assert_eq(fj_en_tres_gpus("cpu=8,gres/gpu=4,gres/gpu:a100=4"), 4);
    cr_assert_eq(fj_en_tres_gpus("cpu=8,mem=1G"), -1);
    cr_assert_eq(fj_en_tres_gpus("gres/gpumem=4G"), -1);
    cr_assert_eq(fj_en_tres_gpus("gres/gpu=x"), -1);
    cr_assert_eq(fj_en_tres_gpus(NULL), -1);
    cr_assert_eq(fj_en_tres_gpus(""), -1);
    cr_assert_eq(fj_en_tres_nodes("cpu=8,gres/gpu:a100=3,node=2"), 2);
    cr_assert_eq(fj_en_tres_nodes("cpu=8"), -1);
}

Test(energy, interval_prefers_the_counter)
{
    fj_en_dual a = {0, 100, 5000, true, true}, b = {10, 100, 8000, true, true};
    double j;
    bool by_counter;
    cr_assert(fj_en_interval(&a, &b, 0, -INFINITY, INFINITY, &j, &by_counter));
    NEAR(j, 3000);
    cr_assert(by_counter, "the counter's 3000 J, not the power's 1000 J");
    cr_assert(fj_en_interval(&a, &b, 0, 5, 20, &j, &by_counter));
    NEAR(j, 1500);
    /* the counter fell (the driver reloaded): the power's trapezoid for this interval */
    b.counter = 10;
    cr_assert(fj_en_interval(&a, &b, 0, -INFINITY, INFINITY, &j, &by_counter));
    NEAR(j, 1000);
    cr_assert(!by_counter);
    /* one side without a counter: power */
    b = (fj_en_dual){10, 300, 0, true, false};
    cr_assert(fj_en_interval(&a, &b, 0, -INFINITY, INFINITY, &j, &by_counter));
    NEAR(j, 2000);
    /* neither in common: no figure */
    a = (fj_en_dual){0, 0, 5000, false, true};
    cr_assert(!fj_en_interval(&a, &b, 0, -INFINITY, INFINITY, &j, &by_counter));
}

Test(energy, node_part_by_the_covering_node_sample)
{
    /* 400 W every 10 s from 0 to 100; node-samples at 30 (the job alone), 60 (a quarter of the
     * node's CPU), 90 (absent); none after 90 */
    fj_en_reading r[11];
    for (int i = 0; i <= 10; i++)
        r[i] = (fj_en_reading){i * 10.0, 400};
    fj_en_cover cover[] = {{30, 1, true}, {60, 0.25, false}, {90, 0, false}};
    fj_en_sum s = {0};
    bool shared = false;
    fj_en_node_part(r, 11, false, 0, cover, 3, -INFINITY, INFINITY, &s, &shared);
    /* intervals ending 10..30: all (12000 J); 40..60: a quarter (3000 J); 70..90: none; 100: nobody */
    NEAR(s.joules, 12000 + 3000);
    NEAR(s.covered_s, 60);
    cr_assert(shared);
    /* a counter (J) with a reset in the shared stretch, cut by a window */
    fj_en_reading c[] = {{0, 0}, {10, 4000}, {20, 8000}, {30, 12000}, {40, 16000}, {50, 5}, {60, 4005}};
    fj_en_sum w = {0};
    shared = false;
    fj_en_node_part(c, 7, true, 0, cover, 3, 15, 100, &w, &shared);
    /* 10-20 half inside (2000), 20-30 (4000), 30-40 (a quarter of 4000), 40-50 reset: missing, 50-60 (1000) */
    NEAR(w.joules, 2000 + 4000 + 1000 + 1000);
    cr_assert_eq(w.gaps, 1);
    NEAR(w.missing_s, 10);
}
