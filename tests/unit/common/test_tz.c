/* Tests of common/tz.c: offsets read from the system's TZif files at known transitions, and the
 * names the reader refuses. The instants are tzdata's, checked against `zdump -v`. */
#include "timefmt.h"
#include "tz.h"

#include <criterion/criterion.h>

static int64_t utc(int y, unsigned mo, unsigned d, int h, int mi)
{
    return fj_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

Test(tz, oslo_spring_forward_at_0100_utc)
{
    const fj_tz *z = fj_tz_get("Europe/Oslo");
    cr_assert_not_null(z);
    int64_t t = utc(2026, 3, 29, 1, 0);
    cr_assert_eq(fj_tz_offset(z, t - 1), 3600, "CET until 01:00 UTC");
    cr_assert_eq(fj_tz_offset(z, t), 7200, "CEST from 01:00 UTC");
    cr_assert_eq(fj_tz_offset_ns(z, t * 1000000000LL - 1), 3600, "one nanosecond before");
    cr_assert_eq(fj_tz_offset_ns(z, t * 1000000000LL), 7200);
}

Test(tz, oslo_fall_back_at_0100_utc)
{
    const fj_tz *z = fj_tz_get("Europe/Oslo");
    cr_assert_not_null(z);
    int64_t t = utc(2026, 10, 25, 1, 0);
    cr_assert_eq(fj_tz_offset(z, t - 1), 7200);
    cr_assert_eq(fj_tz_offset(z, t), 3600);
    cr_assert_eq(fj_tz_offset(z, utc(2026, 1, 1, 0, 0)), 3600, "winter");
    cr_assert_eq(fj_tz_offset(z, utc(2026, 7, 1, 0, 0)), 7200, "summer");
}

Test(tz, half_hour_zones)
{
    const fj_tz *kolkata = fj_tz_get("Asia/Kolkata");
    cr_assert_not_null(kolkata);
    cr_assert_eq(fj_tz_offset(kolkata, utc(2026, 3, 29, 0, 0)), 5 * 3600 + 1800);
    cr_assert_eq(fj_tz_offset(kolkata, utc(2026, 10, 25, 12, 0)), 5 * 3600 + 1800, "no DST");
    const fj_tz *nl = fj_tz_get("America/St_Johns");
    cr_assert_not_null(nl);
    /* Newfoundland: NDT (-2:30) to NST (-3:30) on 2026-11-01 at 02:00 local daylight time */
    int64_t t = utc(2026, 11, 1, 4, 30);
    cr_assert_eq(fj_tz_offset(nl, t - 1), -(2 * 3600 + 1800));
    cr_assert_eq(fj_tz_offset(nl, t), -(3 * 3600 + 1800));
    const fj_tz *ad = fj_tz_get("Australia/Adelaide");
    cr_assert_not_null(ad);
    /* southern hemisphere: ACDT (+10:30) ends 2026-04-05 03:00 local, 16:30 UTC the day before */
    int64_t e = utc(2026, 4, 4, 16, 30);
    cr_assert_eq(fj_tz_offset(ad, e - 1), 10 * 3600 + 1800);
    cr_assert_eq(fj_tz_offset(ad, e), 9 * 3600 + 1800);
}

Test(tz, next_change)
{
    const fj_tz *z = fj_tz_get("Europe/Oslo");
    cr_assert_not_null(z);
    cr_assert_eq(fj_tz_next_change(z, utc(2026, 3, 1, 0, 0)), utc(2026, 3, 29, 1, 0));
    cr_assert_eq(fj_tz_next_change(z, utc(2026, 3, 29, 1, 0)), utc(2026, 10, 25, 1, 0), "strictly after");
    const fj_tz *k = fj_tz_get("Asia/Kolkata");
    cr_assert_not_null(k);
    cr_assert_eq(fj_tz_next_change(k, utc(2026, 1, 1, 0, 0)), INT64_MAX, "no change since 1945");
}

Test(tz, utc_and_the_same_zone_twice)
{
    const fj_tz *z = fj_tz_get("Etc/UTC");
    cr_assert_not_null(z);
    cr_assert_eq(fj_tz_offset(z, utc(2026, 3, 29, 1, 0)), 0);
    cr_assert_eq(fj_tz_get("Europe/Oslo"), fj_tz_get("Europe/Oslo"), "read once, then from the cache");
}

Test(tz, refuses_bad_and_unknown_names)
{
    const char *bad[] = {"",          "/etc/passwd",       "../../etc/passwd", "Europe/../../etc/passwd",
                         "Europe/Oslo\n", "Europe/Os lo",  "Europe\\Oslo",     "Nowhere/Land",
                         "europe/oslo", "Europe",          "zone.tab"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_null(fj_tz_get(bad[i]), "refused: %s", bad[i]);
}
