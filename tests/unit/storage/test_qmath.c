/* Tests of storage/query/qmath.c: bucket grids, CPU utilisation from cumulative counters (a decreasing
 * counter is never negative use, a duplicate timestamp is no interval, a reboot ends the
 * interval), accumulators and varints. */
#include "storage/query/qmath.h"

#include <criterion/criterion.h>
#include <string.h>

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

/* Packs values as the schema's varints. */
static size_t pack(const uint64_t *v, size_t n, unsigned char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v[i];
        do {
            unsigned char b = x & 0x7f;
            x >>= 7;
            out[k++] = b | (x ? 0x80 : 0);
        } while (x);
    }
    return k;
}

Test(qmath, cpu_step_agrees_with_cpu_interval)
{
    uint64_t store[16];
    fj_qm_cpustate s = {.c = store, .cap = 16};
    unsigned char p[200];
    /* a sequence of samples: normal, a counter reset, a big counter (5 bytes), a duplicate time,
     * fewer cores, a reboot, more cores */
    struct {
        fj_time t, boot;
        uint64_t c[4];
        size_t n;
        int want; /* 1 interval, 0 none */
    } seq[] = {
        {100, 7, {10, 20, 30, 40}, 4, 0},
        {160, 7, {70, 80, 90, 100}, 4, 1},
        {220, 7, {0, 140, 150, 160}, 4, 1},
        {280, 7, {1ull << 33, 200, 210, 220}, 4, 1},
        {280, 7, {9, 9, 9, 9}, 4, 0},
        {340, 7, {(1ull << 33) + 60, 260}, 2, 1},
        {400, 8, {5, 5, 5, 5}, 4, 0},
        {460, 8, {65, 65, 65, 65}, 4, 1},
    };
    uint64_t prev[4] = {0};
    size_t prev_n = 0;
    fj_time prev_t = 0, prev_boot = 0;
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        size_t len = pack(seq[i].c, seq[i].n, p);
        fj_qm_cpu a = {0}, b = {0};
        int r = fj_qm_cpu_step(&s, seq[i].t, seq[i].boot, p, len, &a);
        cr_assert_eq(r, seq[i].want, "sample %zu: %d", i, r);
        bool want = i > 0 && fj_qm_cpu_interval(prev_t, prev_boot, prev, prev_n, seq[i].t, seq[i].boot, seq[i].c,
                                                 seq[i].n, &b);
        cr_assert_eq(r == 1, want, "sample %zu agrees on being an interval", i);
        if (r == 1) {
            cr_assert_float_eq(a.busy_s, b.busy_s, 1e-9, "sample %zu busy %f vs %f", i, a.busy_s, b.busy_s);
            cr_assert_float_eq(a.seconds, b.seconds, 1e-9);
            cr_assert_eq(a.cores, b.cores);
            cr_assert(a.busy_s >= 0);
        }
        if (!(i > 0 && seq[i].t <= prev_t)) { /* a duplicate time is ignored: it does not start the next */
            memcpy(prev, seq[i].c, sizeof prev);
            prev_n = seq[i].n;
            prev_t = seq[i].t;
            prev_boot = seq[i].boot;
        }
    }
}

Test(qmath, cpu_step_refuses_bad_bytes_and_starts_over)
{
    uint64_t store[4];
    fj_qm_cpustate s = {.c = store, .cap = 4};
    const unsigned char good[] = {10, 20};
    fj_qm_cpu c;
    cr_assert_eq(fj_qm_cpu_step(&s, 10, 0, good, 2, &c), 0);
    const unsigned char trunc[] = {30, 0x80};
    cr_assert_eq(fj_qm_cpu_step(&s, 20, 0, trunc, 2, &c), -1);
    cr_assert(!s.have, "a bad blob ends the chain");
    const unsigned char more[] = {40, 50};
    cr_assert_eq(fj_qm_cpu_step(&s, 30, 0, more, 2, &c), 0, "no interval across the bad sample");
    const unsigned char again[] = {41, 52};
    cr_assert_eq(fj_qm_cpu_step(&s, 40, 0, again, 2, &c), 1);
    cr_assert_float_eq(c.busy_s, 3, 1e-12);
    const unsigned char big[] = {1, 2, 3, 4, 5};
    cr_assert_eq(fj_qm_cpu_step(&s, 50, 0, big, 5, &c), -1, "more bytes than room");
    cr_assert_eq(fj_qm_cpu_step(&s, 60, 0, NULL, 0, &c), 0, "no counters: nothing");
}

Test(qmath, cpu_step_decodes_every_length_like_varints)
{
    /* values of 1 to 10 bytes, in every position relative to the 8-byte word reads */
    uint64_t vals[200];
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < 200; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        unsigned bits = (unsigned)(x % 64) + 1;
        vals[i] = bits == 64 ? x : x & (((uint64_t)1 << bits) - 1);
    }
    unsigned char p[2100];
    for (size_t n = 1; n <= 200; n += 13) {
        size_t len = pack(vals, n, p);
        uint64_t dec[200], store[2100];
        cr_assert_eq(fj_qm_varints(p, len, dec, 200), n);
        fj_qm_cpustate s = {.c = store, .cap = sizeof store / sizeof store[0]};
        fj_qm_cpu c;
        cr_assert_eq(fj_qm_cpu_step(&s, 1, 0, p, len, &c), 0);
        cr_assert_eq(s.n, n);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(store[i], vals[i], "value %zu of %zu", i, n);
        /* the next sample: each counter one more, so exactly n busy seconds */
        uint64_t next[200];
        for (size_t i = 0; i < n; i++)
            next[i] = vals[i] == UINT64_MAX ? vals[i] : vals[i] + 1;
        size_t nonmax = 0;
        for (size_t i = 0; i < n; i++)
            nonmax += vals[i] != UINT64_MAX;
        len = pack(next, n, p);
        cr_assert_eq(fj_qm_cpu_step(&s, 2, 0, p, len, &c), 1);
        cr_assert_float_eq(c.busy_s, (double)nonmax, 1e-9);
    }
}
