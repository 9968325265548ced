/* Tests of storage/ts/codec.c: every chunk round-trips bit for bit, sizes stay small on the data
 * collectors send, and corrupt blobs are refused without reading out of bounds. */
#include "alloc.h"
#include "buf.h"
#include "storage/ts/codec.h"

#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S INT64_C(1000000000)

static uint64_t rng = 42;

static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unif(void)
{
    return (double)(rnd() >> 11) * 0x1p-53;
}

static double bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* what a collector sends: the value printed with dec decimals and parsed back */
static double quant(double x, int dec)
{
    char b[64];
    snprintf(b, sizeof b, "%.*f", dec, x);
    return strtod(b, NULL);
}

/* Encodes, checks the header, decodes, compares bits; returns the blob size. */
static size_t roundtrip(const int64_t *t, const double *v, size_t n)
{
    fj_ts_codec *c = fj_ts_codec_create();
    fj_buf b;
    fj_buf_init(&b, SIZE_MAX);
    cr_assert_eq(fj_ts_chunk_encode(c, t, v, n, &b), FJ_OK, "encode n=%zu", n);
    fj_ts_chunk_hdr h;
    cr_assert_eq(fj_ts_chunk_header(b.data, b.len, &h), FJ_OK);
    cr_assert_eq(h.n, n);
    if (n) {
        cr_assert_eq(h.t_first, t[0]);
        cr_assert_eq(h.t_last, t[n - 1]);
    }
    int64_t *dt = malloc((n + 1) * sizeof *dt);
    double *dv = malloc((n + 1) * sizeof *dv);
    size_t got = 12345;
    cr_assert_eq(fj_ts_chunk_decode(c, b.data, b.len, dt, dv, n + 1, &got), FJ_OK, "decode n=%zu", n);
    cr_assert_eq(got, n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(dt[i], t[i], "t[%zu]", i);
        cr_assert(memcmp(&dv[i], &v[i], 8) == 0, "v[%zu]: %.17g vs %.17g", i, dv[i], v[i]);
    }
    /* the NULL codec path gives the same result */
    fj_buf b2;
    fj_buf_init(&b2, SIZE_MAX);
    cr_assert_eq(fj_ts_chunk_encode(NULL, t, v, n, &b2), FJ_OK);
    cr_assert_eq(b2.len, b.len);
    cr_assert(memcmp(b2.data, b.data, b.len) == 0);
    cr_assert_eq(fj_ts_chunk_decode(NULL, b.data, b.len, dt, dv, n + 1, &got), FJ_OK);
    size_t len = b.len;
    fj_buf_free(&b2);
    fj_buf_free(&b);
    free(dt);
    free(dv);
    fj_ts_codec_destroy(c);
    return len;
}

Test(ts_codec, zero_points)
{
    size_t len = roundtrip(NULL, NULL, 0);
    cr_assert_leq(len, 2);
    fj_buf b;
    fj_buf_init(&b, 64);
    cr_assert_eq(fj_ts_chunk_encode(NULL, NULL, NULL, 0, &b), FJ_OK);
    fj_ts_chunk_hdr h = {99, 1, 2};
    cr_assert_eq(fj_ts_chunk_header(b.data, b.len, &h), FJ_OK);
    cr_assert_eq(h.n, 0);
    cr_assert_eq(h.t_first, 0);
    cr_assert_eq(h.t_last, 0);
    size_t n = 7;
    cr_assert_eq(fj_ts_chunk_decode(NULL, b.data, b.len, NULL, NULL, 0, &n), FJ_OK);
    cr_assert_eq(n, 0);
    fj_buf_free(&b);
}

Test(ts_codec, one_point)
{
    int64_t t = 1700000040 * S;
    double v = 13.436;
    roundtrip(&t, &v, 1);
    t = -5;
    v = NAN;
    roundtrip(&t, &v, 1);
    t = INT64_MIN;
    v = -0.0;
    roundtrip(&t, &v, 1);
    t = INT64_MAX;
    v = 1e300;
    roundtrip(&t, &v, 1);
}

Test(ts_codec, regular_interval_two_decimals_is_small)
{
    enum { N = 720 };
    int64_t t[N];
    double v[N];
    /* a noisy gauge (sigma 1.0 around 50 with 2 decimals), a random walk, a constant */
    double x = 50;
    for (int kind = 0; kind < 3; kind++) {
        for (int i = 0; i < N; i++) {
            t[i] = (1700000040 + 60 * (int64_t)i) * S;
            double g = sqrt(-2 * log(unif() + 1e-300)) * cos(6.283185307 * unif());
            if (kind == 0)
                v[i] = quant(50 + g, 2);
            else if (kind == 1)
                v[i] = quant(x += g * 0.5, 2);
            else
                v[i] = 2400.0;
        }
        size_t len = roundtrip(t, v, N);
        cr_assert_lt((double)len / N, 1.5, "kind %d: %zu bytes for %d points", kind, len, N);
        if (kind == 2)
            cr_assert_lt(len, 40, "a constant regular series costs %zu bytes", len);
    }
}

Test(ts_codec, regular_timestamps_cost_almost_nothing)
{
    enum { N = 720 };
    int64_t t[N];
    double v[N];
    for (int i = 0; i < N; i++) {
        t[i] = (1700000040 + 60 * (int64_t)i) * S;
        v[i] = 0;
    }
    cr_assert_lt(roundtrip(t, v, N), 40);
    /* a few points one second late stay cheap */
    for (int i = 50; i < N; i += 50)
        t[i] += S;
    cr_assert_lt(roundtrip(t, v, N), 80);
}

Test(ts_codec, irregular_intervals_and_units)
{
    enum { N = 1000 };
    int64_t t[N];
    double v[N];
    int64_t units[] = {1, 1000, 1000000, S};
    for (int u = 0; u < 4; u++) {
        int64_t x = 1700000000 * S;
        for (int i = 0; i < N; i++) {
            x += units[u] * (int64_t)(1 + rnd() % 120);
            t[i] = x;
            v[i] = quant(unif() * 100, 3);
        }
        roundtrip(t, v, N);
    }
}

Test(ts_codec, big_gaps_and_negative_times)
{
    int64_t t[] = {INT64_MIN, INT64_MIN + 1, -3 * S, -1, 0, 1, 1000 * S, INT64_MAX - 1, INT64_MAX};
    double v[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    roundtrip(t, v, 9);
    int64_t t2[] = {INT64_MIN, INT64_MAX};
    roundtrip(t2, v, 2);
    int64_t t3[] = {-7200 * S, -3600 * S, 0, 3600 * S};
    roundtrip(t3, v, 4);
}

Test(ts_codec, every_double_class_is_exact)
{
    double specials[] = {0.0,
                         -0.0,
                         1.0,
                         -1.0,
                         DBL_MIN,
                         -DBL_MIN,
                         DBL_MAX,
                         -DBL_MAX,
                         DBL_TRUE_MIN,
                         4.9e-320,
                         INFINITY,
                         -INFINITY,
                         NAN,
                         -NAN,
                         bitsd(0x7ff0000000000001ull), /* signalling NaN */
                         bitsd(0x7ff8dead0000beefull), /* quiet NaN with payload */
                         bitsd(0xfff4000000000123ull),
                         0.1 + 0.2,
                         1.0 / 3.0,
                         9007199254740993.0,
                         1e22,
                         1e23,
                         123456789012345678.0,
                         2400000000.0,
                         -0.001,
                         5e-324};
    size_t ns = sizeof specials / sizeof specials[0];
    enum { N = 300 };
    int64_t t[N];
    double v[N];
    for (int i = 0; i < N; i++)
        t[i] = i * 10 * S;
    /* all specials in a row, repeated */
    for (int i = 0; i < N; i++)
        v[i] = specials[(size_t)i % ns];
    roundtrip(t, v, N);
    /* a few specials inside decimal data (the exception path) */
    for (int i = 0; i < N; i++)
        v[i] = quant(unif() * 10, 2);
    for (size_t k = 0; k < ns; k++) {
        double w[N];
        memcpy(w, v, sizeof w);
        w[(k * 37) % N] = specials[k];
        w[(k * 91 + 5) % N] = specials[(k + 3) % ns];
        roundtrip(t, w, N);
    }
    /* random bit patterns */
    for (int i = 0; i < N; i++)
        v[i] = bitsd(rnd());
    roundtrip(t, v, N);
}

Test(ts_codec, nan_for_missing_keeps_decimal_compression)
{
    enum { N = 720 };
    int64_t t[N];
    double v[N];
    for (int i = 0; i < N; i++) {
        t[i] = (1700000040 + 60 * (int64_t)i) * S;
        v[i] = i % 97 == 5 ? NAN : quant(20 + unif(), 2);
    }
    size_t len = roundtrip(t, v, N);
    cr_assert_lt((double)len / N, 2.5, "%zu bytes", len);
}

Test(ts_codec, integers_and_trailing_zeros)
{
    enum { N = 200 };
    int64_t t[N];
    double v[N];
    for (int i = 0; i < N; i++) {
        t[i] = i * S;
        v[i] = (double)(2400000000LL + 100000000LL * (int64_t)(rnd() % 5));
    }
    size_t len = roundtrip(t, v, N);
    cr_assert_lt(len, 120, "%zu", len);
    for (int i = 0; i < N; i++)
        v[i] = (double)(int64_t)(rnd() >> 12) * (rnd() & 1 ? 1 : -1); /* up to 2^52 */
    roundtrip(t, v, N);
    for (int i = 0; i < N; i++)
        v[i] = ldexp((double)(rnd() >> 11), 10 + (int)(rnd() % 40)); /* past 2^53 */
    roundtrip(t, v, N);
}

Test(ts_codec, many_decimals_and_mixed_precision)
{
    enum { N = 500 };
    int64_t t[N];
    double v[N];
    for (int i = 0; i < N; i++) {
        t[i] = i * S;
        v[i] = quant(unif() * 1000 - 500, (int)(rnd() % 8));
    }
    roundtrip(t, v, N);
    for (int i = 0; i < N; i++)
        v[i] = unif() * 1e-5; /* full precision: XOR */
    roundtrip(t, v, N);
    for (int i = 0; i < N; i++)
        v[i] = quant(unif(), 15) * 1e-7;
    roundtrip(t, v, N);
}

Test(ts_codec, random_round_trips_fixed_seed)
{
    enum { MAXN = 3000 };
    int64_t *t = malloc(MAXN * sizeof *t);
    double *v = malloc(MAXN * sizeof *v);
    for (int iter = 0; iter < 400; iter++) {
        size_t n = rnd() % 5 == 0 ? rnd() % 4 : rnd() % MAXN;
        int tk = (int)(rnd() % 4), vk = (int)(rnd() % 7);
        int64_t x = (int64_t)(rnd() >> 2) - (INT64_C(1) << 61);
        int64_t step = (int64_t)(1 + rnd() % (tk == 3 ? 1000000 : 60)) * (tk == 0 ? S : 1);
        int dec = (int)(rnd() % 6);
        double lvl = unif() * 1000;
        for (size_t i = 0; i < n; i++) {
            switch (tk) {
            case 0: /* regular */
                x += step;
                break;
            case 1: /* regular with jitter */
                x += step * 1000 + (rnd() % 10 == 0 ? (int64_t)(rnd() % 3) : 0);
                break;
            default: /* random */
                x += 1 + (int64_t)(rnd() % (uint64_t)step);
                break;
            }
            t[i] = x;
            switch (vk) {
            case 0:
                v[i] = quant(lvl + unif(), dec);
                break;
            case 1:
                v[i] = quant(lvl += unif() - 0.5, dec);
                break;
            case 2:
                v[i] = bitsd(rnd());
                break;
            case 3:
                v[i] = rnd() % 20 == 0 ? NAN : quant(unif() * 5, dec);
                break;
            case 4:
                v[i] = (double)(i * 1000 + rnd() % 7); /* counter */
                break;
            case 5:
                v[i] = rnd() % 30 == 0 ? quant(unif() * 100, 3) : 0; /* mostly zero */
                break;
            default:
                v[i] = unif() * pow(10, (double)(rnd() % 40) - 20);
                break;
            }
        }
        roundtrip(t, v, n);
    }
    free(t);
    free(v);
}

Test(ts_codec, unsorted_or_duplicate_times_are_refused)
{
    int64_t t[] = {1, 2, 2, 3};
    double v[] = {1, 2, 3, 4};
    fj_buf b;
    fj_buf_init(&b, 1024);
    fj_buf_puts(&b, "keep");
    cr_assert_eq(fj_ts_chunk_encode(NULL, t, v, 4, &b), FJ_EINVAL);
    int64_t t2[] = {1, 3, 2};
    cr_assert_eq(fj_ts_chunk_encode(NULL, t2, v, 3, &b), FJ_EINVAL);
    cr_assert_eq(b.len, 4);
    cr_assert_str_eq(b.data, "keep");
    fj_buf_free(&b);
}

Test(ts_codec, encode_appends_and_respects_cap)
{
    int64_t t[100];
    double v[100];
    for (int i = 0; i < 100; i++) {
        t[i] = i;
        v[i] = bitsd(rnd());
    }
    fj_buf b;
    fj_buf_init(&b, 100);
    fj_buf_puts(&b, "xy");
    cr_assert_eq(fj_ts_chunk_encode(NULL, t, v, 100, &b), FJ_ETOOBIG);
    cr_assert_eq(b.len, 2);
    fj_buf_free(&b);
    fj_buf_init(&b, 1 << 20);
    fj_buf_puts(&b, "xy");
    cr_assert_eq(fj_ts_chunk_encode(NULL, t, v, 100, &b), FJ_OK);
    int64_t dt[100];
    double dv[100];
    size_t n;
    cr_assert_eq(fj_ts_chunk_decode(NULL, b.data + 2, b.len - 2, dt, dv, 100, &n), FJ_OK);
    cr_assert_eq(n, 100);
    cr_assert(memcmp(dv, v, sizeof v) == 0);
    fj_buf_free(&b);
}

Test(ts_codec, decode_reports_the_count_when_cap_is_small)
{
    int64_t t[10];
    double v[10];
    for (int i = 0; i < 10; i++) {
        t[i] = i;
        v[i] = i;
    }
    fj_buf b;
    fj_buf_init(&b, 1024);
    cr_assert_eq(fj_ts_chunk_encode(NULL, t, v, 10, &b), FJ_OK);
    int64_t dt[9];
    double dv[9];
    size_t n = 0;
    cr_assert_eq(fj_ts_chunk_decode(NULL, b.data, b.len, dt, dv, 9, &n), FJ_ETOOBIG);
    cr_assert_eq(n, 10);
    fj_buf_free(&b);
}

Test(ts_codec, out_of_memory_is_reported)
{
    int64_t t[50];
    double v[50];
    for (int i = 0; i < 50; i++) {
        t[i] = i * S;
        v[i] = quant(unif() * 100, 2);
    }
    for (long k = 0; k < 12; k++) {
        fj_buf b;
        fj_buf_init(&b, 1 << 20);
        fj_ts_codec *c = fj_ts_codec_create();
        cr_assert_not_null(c);
        fj_alloc_fail_after(k);
        fj_status st = fj_ts_chunk_encode(c, t, v, 50, &b);
        fj_alloc_fail_after(-1);
        cr_assert(st == FJ_OK || st == FJ_ENOMEM);
        if (st == FJ_ENOMEM)
            cr_assert_eq(b.len, 0);
        fj_ts_codec_destroy(c);
        fj_buf_free(&b);
    }
}

/* Every truncation and many random corruptions: refused or decoded, never a crash or an
 * out-of-bounds access (run under the sanitizer build to see the latter). */
Test(ts_codec, corrupt_blobs_are_refused)
{
    enum { N = 400 };
    int64_t t[N], dt[N];
    double v[N], dv[N];
    for (int kind = 0; kind < 3; kind++) {
        for (int i = 0; i < N; i++) {
            t[i] = (1700000040 + 60 * (int64_t)i + (i % 17 == 0)) * S;
            v[i] = kind == 0 ? quant(unif() * 100, 2) : kind == 1 ? bitsd(rnd()) : (i % 50 ? 0 : 1.5);
        }
        fj_buf b;
        fj_buf_init(&b, 1 << 20);
        cr_assert_eq(fj_ts_chunk_encode(NULL, t, v, N, &b), FJ_OK);
        fj_ts_codec *c = fj_ts_codec_create();
        size_t n;
        for (size_t len = 0; len < b.len; len++) {
            unsigned char *cp = malloc(len ? len : 1); /* exact size, so ASan sees overreads */
            memcpy(cp, b.data, len);
            cr_assert_neq(fj_ts_chunk_decode(c, cp, len, dt, dv, N, &n), FJ_OK, "len %zu", len);
            free(cp);
        }
        unsigned char *cp = malloc(b.len);
        for (int iter = 0; iter < 3000; iter++) {
            memcpy(cp, b.data, b.len);
            int flips = 1 + (int)(rnd() % 3);
            for (int f = 0; f < flips; f++)
                cp[rnd() % b.len] ^= (unsigned char)(1u << (rnd() % 8));
            fj_status st = fj_ts_chunk_decode(c, cp, b.len, dt, dv, N, &n);
            cr_assert(st == FJ_OK || st == FJ_EINVAL || st == FJ_ETOOBIG, "status %d", st);
            if (st == FJ_OK)
                for (size_t i = 1; i < n; i++)
                    cr_assert_gt(dt[i], dt[i - 1]);
        }
        free(cp);
        fj_ts_codec_destroy(c);
        fj_buf_free(&b);
    }
    /* garbage */
    unsigned char g[64];
    fj_ts_chunk_hdr h;
    for (int iter = 0; iter < 2000; iter++) {
        size_t len = rnd() % sizeof g;
        for (size_t i = 0; i < len; i++)
            g[i] = (unsigned char)rnd();
        size_t n;
        (void)fj_ts_chunk_header(g, len, &h);
        fj_status st = fj_ts_chunk_decode(NULL, g, len, dt, dv, N, &n);
        cr_assert(st == FJ_OK || st == FJ_EINVAL || st == FJ_ETOOBIG);
    }
}
