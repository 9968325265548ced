/* Tests of common/timefmt.c: Sonar's Timestamp with real-date checks, query times, formatting. */
#include "timefmt.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static fj_time parse_ok(const char *s, int strict)
{
    fj_time t = 0;
    cr_assert_eq(fj_time_parse_rfc3339(s, strict, &t), FJ_OK, "should parse: %s", s);
    return t;
}

Test(timefmt, utc_and_offsets)
{
    cr_assert_eq(parse_ok("1970-01-01T00:00:00Z", 1), 0);
    cr_assert_eq(parse_ok("2025-11-25T10:52:00+01:00", 1), 1764064320);
    cr_assert_eq(parse_ok("2025-11-25T09:52:00Z", 1), 1764064320);
    cr_assert_eq(parse_ok("2025-11-25T04:22:00-05:30", 1), 1764064320);
    cr_assert_eq(parse_ok("2024-02-29T00:00:00Z", 1), 1709164800);
}

Test(timefmt, rejects_impossible_dates_and_syntax)
{
    const char *bad[] = {
        "2025-02-29T00:00:00Z", "2025-02-30T00:00:00Z", "2025-13-01T00:00:00Z", "2025-00-10T00:00:00Z",
        "2025-04-31T00:00:00Z", "2025-01-01T24:00:00Z", "2025-01-01T23:60:00Z", "2025-01-01T23:59:60Z",
        "2025-01-01T00:00:00",  "2025-01-01 00:00:00Z", "2025-01-01T00:00:00+1:00", "2025-01-01T00:00:00+24:00",
        "2025-01-01T00:00:00.5Z", "2025-1-01T00:00:00Z", "", "yesterday", "2025-01-01T00:00:00Zjunk",
        "1900-02-29T00:00:00Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fj_time t;
        cr_expect_eq(fj_time_parse_rfc3339(bad[i], 1, &t), FJ_EINVAL, "should reject: %s", bad[i]);
    }
}

Test(timefmt, lenient_mode_for_queries)
{
    cr_assert_eq(parse_ok("2025-11-25T09:52:00.123Z", 0), 1764064320);
    fj_time t;
    cr_assert_eq(fj_time_parse_param("1764064320", &t), FJ_OK);
    cr_assert_eq(t, 1764064320);
    cr_assert_eq(fj_time_parse_param("2025-11-25T09:52:00Z", &t), FJ_OK);
    cr_assert_eq(t, 1764064320);
    cr_assert_eq(fj_time_parse_param("12abc", &t), FJ_EINVAL);
    cr_assert_eq(fj_time_parse_param("", &t), FJ_EINVAL);
}

Test(timefmt, format_round_trips)
{
    char out[21];
    fj_time samples[] = {0, 1764064320, 951782400 /* 2000-02-29 */, 4102444799, -86400};
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        fj_time_format(samples[i], out);
        fj_time back;
        cr_assert_eq(fj_time_parse_rfc3339(out, 1, &back), FJ_OK, "%s", out);
        cr_assert_eq(back, samples[i], "%s", out);
    }
    fj_time_format(1764064320, out);
    cr_assert_str_eq(out, "2025-11-25T09:52:00Z");
}

Test(timefmt, format_matches_libc_and_clamps)
{
    char out[21], want[96];
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        /* 0001-01-01 .. 9999-12-31 */
        fj_time t = -62135596800 + (fj_time)(x % (uint64_t)(253402300799 + 62135596800 + 1));
        time_t tt = (time_t)t;
        struct tm tm;
        cr_assert_not_null(gmtime_r(&tt, &tm));
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        fj_time_format(t, out);
        cr_assert_str_eq(out, want, "t=%lld", (long long)t);
    }
    fj_time_format(-62135596801 - 86400 * 400LL, out); /* before year 0 */
    cr_assert_str_eq(out, "0000-01-01T00:00:00Z");
    fj_time_format(253402300800 + 86400, out); /* after 9999 */
    cr_assert_str_eq(out, "9999-12-31T23:59:59Z");
}
