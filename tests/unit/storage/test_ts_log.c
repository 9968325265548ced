/* Tests of storage/ts/request_log.c: point records round-trip bit for bit (extreme ids, times and values
 * included), stay small for what collectors send, and corrupt records are refused. */
#include "storage/ts/request_log.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define S INT64_C(1000000000)

static void round_trip(const uint32_t *ids, const int64_t *t, const double *v, size_t n, size_t slices)
{
    fj_ts_log *l = fj_ts_log_create();
    cr_assert_not_null(l);
    fj_ts_log_begin(l);
    size_t per = slices ? (n + slices - 1) / slices : n, off = 0;
    while (off < n) {
        size_t k = n - off < per ? n - off : per;
        cr_assert_eq(fj_ts_log_add(l, ids + off, t + off, v + off, k), FJ_OK);
        off += k;
    }
    cr_assert_eq(fj_ts_log_count(l), n);
    const void *z;
    size_t zn;
    cr_assert_eq(fj_ts_log_finish(l, &z, &zn), FJ_OK);
    unsigned char copy[1 << 16];
    cr_assert_lt(zn, sizeof copy);
    memcpy(copy, z, zn);
    const uint32_t *rid;
    const int64_t *rt;
    const double *rv;
    size_t rn;
    cr_assert_eq(fj_ts_log_decode(l, copy, zn, &rid, &rt, &rv, &rn), FJ_OK);
    cr_assert_eq(rn, n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(rid[i], ids[i], "id %zu", i);
        cr_assert_eq(rt[i], t[i], "time %zu", i);
        cr_assert_eq(memcmp(&rv[i], &v[i], sizeof v[i]), 0, "value %zu bit for bit", i);
    }
    fj_ts_log_destroy(l);
}

Test(ts_log, extremes_round_trip)
{
    uint32_t ids[] = {1, UINT32_MAX, 1, 7, 7, 123456, 2, 3, 4, 5, 6, 7, 8};
    int64_t t[] = {INT64_MIN, INT64_MAX, 0, -1, 1700000000 * S, 1700000000 * S, 5, 6, 7, 8, 9, 10, 11};
    /* decimal and raw encodings both: -0.0 must stay negative, 0.1 + 0.2 is not 0.3 */
    double v[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1e-308, 3.25,
                  13.436, -0.5, 1e300, 0.1 + 0.2, 123456789.1234, -9007199254740991.0};
    round_trip(ids, t, v, 13, 0);
    round_trip(ids, t, v, 13, 3); /* added in slices: the differences continue across calls */
}

Test(ts_log, empty_record)
{
    round_trip(NULL, NULL, NULL, 0, 0);
}

Test(ts_log, collector_data_is_small)
{
    /* 10 nodes x 500 series, one minute, values with two decimals: what one body carries */
    enum { N = 5000 };
    static uint32_t ids[N];
    static int64_t t[N];
    static double v[N];
    for (size_t i = 0; i < N; i++) {
        ids[i] = (uint32_t)(i + 1);
        t[i] = 1700000000 * S;
        v[i] = (double)((i * 7919) % 10000) / 100.0;
    }
    fj_ts_log *l = fj_ts_log_create();
    fj_ts_log_begin(l);
    cr_assert_eq(fj_ts_log_add(l, ids, t, v, N), FJ_OK);
    const void *z;
    size_t zn;
    cr_assert_eq(fj_ts_log_finish(l, &z, &zn), FJ_OK);
    cr_assert_lt(zn, (size_t)N * 6, "%zu bytes for %d points", zn, N);
    fj_ts_log_destroy(l);
    round_trip(ids, t, v, N, 4);
}

Test(ts_log, corrupt_records_refused)
{
    fj_ts_log *l = fj_ts_log_create();
    const uint32_t *ids;
    const int64_t *t;
    const double *v;
    size_t n = 99;
    /* not a point record (a raw line-protocol body, too short to hold the magic) */
    const char *lp = "cpu,hostname=a value=1 1700000000\n";
    cr_assert_eq(fj_ts_log_decode(l, lp, strlen(lp), &ids, &t, &v, &n), FJ_EIO);
    cr_assert_eq(n, 0);
    cr_assert_eq(fj_ts_log_decode(l, "FJP", 3, &ids, &t, &v, &n), FJ_EIO);
    /* cut short inside a point's value: tag 7 wants 8 bytes */
    unsigned char cut[] = {'F', 'J', 'P', '1', 2, 0, 7, 1, 2, 3};
    cr_assert_eq(fj_ts_log_decode(l, cut, sizeof cut, &ids, &t, &v, &n), FJ_EIO);
    /* cut short inside a varint */
    unsigned char open_varint[] = {'F', 'J', 'P', '1', 2, 0x80};
    cr_assert_eq(fj_ts_log_decode(l, open_varint, sizeof open_varint, &ids, &t, &v, &n), FJ_EIO);
    /* series id 0 */
    unsigned char zero[] = {'F', 'J', 'P', '1', 0, 0, 0};
    cr_assert_eq(fj_ts_log_decode(l, zero, sizeof zero, &ids, &t, &v, &n), FJ_EIO);
    /* a value tag that is neither a decimal count (0-4) nor 7 */
    unsigned char tag5[] = {'F', 'J', 'P', '1', 2, 0, 5};
    cr_assert_eq(fj_ts_log_decode(l, tag5, sizeof tag5, &ids, &t, &v, &n), FJ_EIO);
    /* a record whose end was cut off */
    uint32_t one = 5;
    int64_t t1 = 1700000000 * S;
    double v1 = 2.5;
    fj_ts_log_begin(l);
    cr_assert_eq(fj_ts_log_add(l, &one, &t1, &v1, 1), FJ_OK);
    const void *rec;
    size_t len;
    cr_assert_eq(fj_ts_log_finish(l, &rec, &len), FJ_OK);
    unsigned char copy[64];
    memcpy(copy, rec, len);
    cr_assert_eq(fj_ts_log_decode(l, copy, len - 1, &ids, &t, &v, &n), FJ_EIO);
    cr_assert_eq(fj_ts_log_decode(l, copy, len, &ids, &t, &v, &n), FJ_OK);
    cr_assert(n == 1 && ids[0] == 5 && t[0] == t1 && v[0] == 2.5);
    fj_ts_log_destroy(l);
}
