/* Tests of storage/ts/obuf.c: an open buffer gives back every point bit for bit (extreme times,
 * NaN payloads, -0.0, full-precision doubles, changes of scale and width), keeps the newest point
 * replaceable, refuses earlier times, survives running out of memory unchanged, and stays small
 * for what collectors send. */
#include "storage/ts/obuf.h"

#include "alloc.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S INT64_C(1000000000)

static void same_bits(double a, double b, size_t i)
{
    cr_assert(memcmp(&a, &b, sizeof a) == 0, "value %zu: %.17g != %.17g", i, a, b);
}

/* Appends all points and checks the decoded buffer after each append (so every state of the
 * stream is read back), then the whole. */
static fj_ts_obuf *round_trip(const int64_t *t, const double *v, size_t n)
{
    fj_ts_obuf *b = fj_ts_obuf_new(t[0], v[0]);
    cr_assert_not_null(b);
    int64_t *rt = malloc(n * sizeof *rt);
    double *rv = malloc(n * sizeof *rv);
    for (size_t i = 1; i < n; i++) {
        cr_assert_eq(fj_ts_obuf_append(&b, t[i], v[i]), FJ_OK);
        if (i % 97 == 1 || i == n - 1) {
            cr_assert_eq(fj_ts_obuf_count(b), i + 1);
            fj_ts_obuf_decode(b, rt, rv);
            for (size_t j = 0; j <= i; j++) {
                cr_assert_eq(rt[j], t[j], "time %zu of %zu", j, i + 1);
                same_bits(rv[j], v[j], j);
            }
        }
    }
    cr_assert_eq(fj_ts_obuf_last_t(b), t[n - 1]);
    free(rt);
    free(rv);
    return b;
}

static double nan_with(uint64_t payload)
{
    uint64_t bits = 0x7ff0000000000000ull | payload;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

Test(ts_obuf, one_point)
{
    fj_ts_obuf *b = fj_ts_obuf_new(-5, -0.0);
    int64_t t;
    double v;
    fj_ts_obuf_decode(b, &t, &v);
    cr_assert_eq(t, -5);
    same_bits(v, -0.0, 0);
    fj_ts_obuf_free(b);
}

Test(ts_obuf, every_kind_of_value_and_time_round_trips_bit_for_bit)
{
    enum { N = 2000 };
    static int64_t t[N];
    static double v[N];
    uint64_t r = 88172645463325252ull;
    int64_t now = INT64_MIN + 7;
    for (size_t i = 0; i < N; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        /* times: regular steps, jitter of a few ns to seconds, huge jumps, up to near INT64_MAX */
        int64_t step = i < 3 ? 60 * S : (i / 200) % 4 == 0 ? 60 * S
                                      : (i / 200) % 4 == 1 ? 60 * S + (int64_t)(r % 2000000) - 1000000
                                      : (i / 200) % 4 == 2 ? 1 + (int64_t)(r % (10 * S))
                                                           : (int64_t)(r >> 20);
        if (i)
            now += step;
        t[i] = i == N - 1 ? INT64_MAX : now; /* from near INT64_MIN to INT64_MAX exactly */
        switch (i % 13) {
        case 0: v[i] = (double)(int64_t)(r % 100000) / 100; break;    /* 2 decimals */
        case 1: v[i] = (double)(int64_t)(r % 1000000) / 1000; break;  /* 3 decimals */
        case 2: v[i] = i % 2 ? NAN : nan_with((r & 0xfffffffffffffull) | 1); break;
        case 3: v[i] = i % 2 ? -0.0 : INFINITY; break;
        case 4: v[i] = 1.0 / 3 * (double)(r % 1000); break;            /* full precision */
        case 5: v[i] = 9007199254740991.0; break;                        /* 2^53 - 1 */
        case 6: v[i] = -(double)(r % 10000) / 10000; break;             /* 4 decimals, negative */
        case 7: v[i] = 1e300; break;
        case 8: v[i] = (double)(r % 7); break;                          /* small integers */
        default: v[i] = v[i - 1] + (double)((int64_t)(r % 401) - 200) / 100; break;
        }
    }
    fj_ts_obuf_free(round_trip(t, v, N));
}

Test(ts_obuf, constant_and_widening_values)
{
    enum { N = 600 };
    static int64_t t[N];
    static double v[N];
    for (size_t i = 0; i < N; i++) {
        t[i] = (int64_t)i * 10 * S;
        /* constant (the width shrinks to 0), then steps growing to 2^40, then constant again */
        v[i] = i < 200 ? 4.5 : i < 400 ? 4.5 + (double)(1ll << ((i - 200) / 5)) : 7;
    }
    fj_ts_obuf_free(round_trip(t, v, N));
}

Test(ts_obuf, newest_point_replaceable_earlier_time_refused)
{
    fj_ts_obuf *b = fj_ts_obuf_new(10 * S, 1);
    cr_assert_eq(fj_ts_obuf_append(&b, 20 * S, 2), FJ_OK);
    fj_ts_obuf_replace_last(b, 2.5);
    cr_assert_eq(fj_ts_obuf_append(&b, 20 * S, 3), FJ_EINVAL);
    cr_assert_eq(fj_ts_obuf_append(&b, 15 * S, 3), FJ_EINVAL);
    cr_assert_eq(fj_ts_obuf_append(&b, 30 * S, 3), FJ_OK);
    int64_t t[3];
    double v[3];
    cr_assert_eq(fj_ts_obuf_count(b), 3);
    fj_ts_obuf_decode(b, t, v);
    cr_assert_eq(t[1], 20 * S);
    cr_assert_eq(v[1], 2.5);
    cr_assert_eq(v[2], 3);
    fj_ts_obuf_free(b);
}

Test(ts_obuf, out_of_memory_leaves_the_buffer_as_it_was)
{
    fj_ts_obuf *b = fj_ts_obuf_new(0, 0.5);
    size_t failed = 0;
    int64_t t[400];
    double v[400];
    for (int i = 1; i < 400; i++) {
        fj_alloc_fail_after(0);
        fj_status st = fj_ts_obuf_append(&b, i * S, i + 0.5);
        fj_alloc_fail_after(-1);
        if (st == FJ_ENOMEM) { /* the growth failed: the same point again, with memory */
            failed++;
            cr_assert_eq(fj_ts_obuf_count(b), (size_t)i);
            cr_assert_eq(fj_ts_obuf_append(&b, i * S, i + 0.5), FJ_OK);
        } else {
            cr_assert_eq(st, FJ_OK);
        }
    }
    cr_assert_gt(failed, 0); /* the buffer did have to grow */
    fj_ts_obuf_decode(b, t, v);
    for (int i = 0; i < 400; i++) {
        cr_assert_eq(t[i], i * S);
        cr_assert_eq(v[i], i + 0.5);
    }
    fj_ts_obuf_free(b);
}

/* 12 h at 60 s of a random walk with 2 decimals and steps up to +-2 (tests/bench/lp_load.c's
 * data): under 1.6 bytes a point, header and allocator's share included; 16 before. */
Test(ts_obuf, small_for_what_collectors_send)
{
    enum { N = 720 };
    static int64_t t[N];
    static double v[N];
    uint64_t r = 1;
    double x = 50;
    for (size_t i = 0; i < N; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        x += ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 4;
        t[i] = 1764000000 * S + (int64_t)i * 60 * S;
        char s[32];
        snprintf(s, sizeof s, "%.2f", x); /* as the line protocol carries it */
        v[i] = strtod(s, NULL);
    }
    fj_ts_obuf *b = round_trip(t, v, N);
    cr_assert_lt(fj_ts_obuf_bytes(b), (size_t)(1.6 * N), "%zu bytes for %d points", fj_ts_obuf_bytes(b), N);
    fj_ts_obuf_free(b);
}

/* fj_ts_obuf_tail (a prefetch hint) lies inside the block once it holds two points, past every
 * byte already written, and moves on as points are added; an append changes nothing before it. */
Test(ts_obuf, tail_is_where_the_next_point_goes)
{
    fj_ts_obuf *b = fj_ts_obuf_new(0, 1.5);
    cr_assert_not_null(b);
    size_t first = 0;
    for (int64_t i = 1; i < 200; i++) {
        const unsigned char *base = (const unsigned char *)b, *tail = fj_ts_obuf_tail(b);
        size_t bytes = fj_ts_obuf_bytes(b) - 8; /* less the allocator's header */
        if (i > 1) /* with one point nothing is in the bits yet: the block is its header */
            cr_assert(tail > base && tail < base + bytes, "point %lld: tail at %td of %zu bytes", (long long)i,
                  tail - base, bytes);
        size_t before = (size_t)(tail - base);
        unsigned char *copy = malloc(before);
        memcpy(copy, base, before);
        int64_t t_last = fj_ts_obuf_last_t(b);
        cr_assert_eq(fj_ts_obuf_append(&b, i * 60 * S + (i % 3), (double)(i * 7919 % 1000) / 10), FJ_OK);
        /* the header's first fields (the newest point) change; the bits before the tail do not */
        size_t header = 56;
        if (before > header)
            cr_assert(memcmp(copy + header, (const unsigned char *)b + header, before - header) == 0,
                      "point %lld rewrote bits before the tail", (long long)i);
        cr_assert_neq(fj_ts_obuf_last_t(b), t_last);
        free(copy);
        if (i == 2)
            first = (size_t)((const unsigned char *)fj_ts_obuf_tail(b) - (const unsigned char *)b);
    }
    cr_assert_gt((size_t)((const unsigned char *)fj_ts_obuf_tail(b) - (const unsigned char *)b),
                 first + 100, "the tail moved on");
    fj_ts_obuf_free(b);
}
