/* Tests of storage/ts/strchunk.c: string chunks round-trip byte for byte (NUL bytes, empty strings,
 * long texts), compress what repeats, refuse what is corrupt, and a packing merge lets the newer
 * rows win over a chunk's points of the same time. */
#include "storage/ts/strchunk.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define S INT64_C(1000000000)

static void round_trip(const int64_t *t, const char *const *v, const size_t *len, size_t n, size_t *blob_len)
{
    fj_buf out;
    fj_buf_init(&out, (size_t)1 << 26);
    cr_assert_eq(fj_ts_strchunk_encode(NULL, t, v, len, n, &out), FJ_OK);
    fj_ts_strs got = {0};
    cr_assert_eq(fj_ts_strchunk_decode(NULL, out.data, out.len, &got), FJ_OK);
    cr_assert_eq(got.n, n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(got.t[i], t[i], "time %zu", i);
        cr_assert_eq(got.len[i], len[i], "length %zu", i);
        cr_assert(!len[i] || !memcmp(got.data + got.off[i], v[i], len[i]), "bytes of %zu", i);
    }
    if (blob_len)
        *blob_len = out.len;
    /* every truncation is refused, never read past */
    for (size_t cut = 0; cut < out.len; cut += 1 + out.len / 64)
        cr_assert_neq(fj_ts_strchunk_decode(NULL, out.data, cut, &got), FJ_OK, "cut at %zu of %zu", cut, out.len);
    fj_ts_strs_free(&got);
    fj_buf_free(&out);
}

Test(ts_strchunk, bytes_round_trip)
{
    int64_t t[] = {-5 * S, 0, 1, 17 * S + 3};
    const char *v[] = {"", "a\0b", "Tromsø \"quoted\", a=b \\", "x"};
    size_t len[] = {0, 3, strlen(v[2]), 1};
    round_trip(t, v, len, 4, NULL);
}

Test(ts_strchunk, repeated_texts_compress)
{
    enum { N = 720 };
    static int64_t t[N];
    static char buf[N][32];
    static const char *v[N];
    static size_t len[N];
    size_t raw = 0;
    for (int i = 0; i < N; i++) {
        t[i] = (1700000000 + 10 * (int64_t)i) * S;
        len[i] = (size_t)snprintf(buf[i], sizeof buf[i], "%d days, %2d:%02d", 3 + i / 8640, (i / 360) % 24, (i / 6) % 60);
        v[i] = buf[i];
        raw += len[i];
    }
    size_t blob = 0;
    round_trip(t, v, len, N, &blob);
    cr_assert_lt(blob * 8, raw, "Telegraf's uptime_format every 10 s: %zu bytes packed for %zu of text", blob, raw);
}

Test(ts_strchunk, refuses_what_is_not_a_chunk)
{
    int64_t t[] = {2, 1};
    const char *v[] = {"a", "b"};
    size_t len[] = {1, 1};
    fj_buf out;
    fj_buf_init(&out, 4096);
    cr_assert_eq(fj_ts_strchunk_encode(NULL, t, v, len, 2, &out), FJ_EINVAL, "times must increase");
    cr_assert_eq(fj_ts_strchunk_encode(NULL, t, v, len, 0, &out), FJ_EINVAL, "no empty chunk");
    cr_assert_eq(out.len, 0);
    fj_ts_strs got = {0};
    unsigned char junk[] = {2, 1, 0, 0};
    cr_assert_eq(fj_ts_strchunk_decode(NULL, junk, sizeof junk, &got), FJ_EINVAL, "another version");
    fj_ts_strs_free(&got);
    fj_buf_free(&out);
}

Test(ts_strchunk, merge_rows_win)
{
    fj_ts_strs old = {0}, rows = {0}, got = {0};
    for (int i = 0; i < 5; i++) {
        char b[8];
        snprintf(b, sizeof b, "old%d", i);
        cr_assert_eq(fj_ts_strs_add(&old, 10 * i, b, strlen(b)), FJ_OK);
    }
    cr_assert_eq(fj_ts_strs_add(&rows, 5, "new5", 4), FJ_OK);
    cr_assert_eq(fj_ts_strs_add(&rows, 20, "new20", 5), FJ_OK);
    cr_assert_eq(fj_ts_strs_add(&rows, 99, "", 0), FJ_OK);
    fj_buf out;
    fj_buf_init(&out, 4096);
    int64_t first, last;
    size_t n;
    cr_assert_eq(fj_ts_strchunk_merge(NULL, &old, &rows, &out, &first, &last, &n), FJ_OK);
    cr_assert(first == 0 && last == 99 && n == 7, "%lld %lld %zu", (long long)first, (long long)last, n);
    cr_assert_eq(fj_ts_strchunk_decode(NULL, out.data, out.len, &got), FJ_OK);
    const char *want[] = {"old0", "new5", "old1", "new20", "old3", "old4", ""};
    int64_t wt[] = {0, 5, 10, 20, 30, 40, 99};
    cr_assert_eq(got.n, 7);
    for (size_t i = 0; i < 7; i++)
        cr_assert(got.t[i] == wt[i] && got.len[i] == strlen(want[i]) && !memcmp(got.data + got.off[i], want[i], got.len[i]),
                  "point %zu", i);
    fj_ts_strs_free(&old);
    fj_ts_strs_free(&rows);
    fj_ts_strs_free(&got);
    fj_buf_free(&out);
}
