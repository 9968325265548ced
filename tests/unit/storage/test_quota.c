/* Tests of storage/core/quota.c: per-cluster caps read once from a count, token buckets refilled
 * by the time given, clusters kept apart. */
#include "storage/core/quota.h"

#include <criterion/criterion.h>
#include <string.h>

#define SEC INT64_C(1000000000)

typedef struct counted {
    uint64_t n;
    int calls;
} counted;

static fj_status count_fn(void *ud, fj_quota_kind kind, const char *cluster, uint64_t *n)
{
    (void)kind;
    counted *c = ud;
    c->calls++;
    *n = strcmp(cluster, "full") ? c->n : 100;
    return FJ_OK;
}

static fj_status failing_count(void *ud, fj_quota_kind kind, const char *cluster, uint64_t *n)
{
    (void)ud, (void)kind, (void)cluster, (void)n;
    return FJ_EIO;
}

Test(quota, cap_counts_once_and_refuses_past_it)
{
    fj_quota_limits lim = {.total = {[FJ_QUOTA_SERIES] = 10}};
    fj_quota *q = fj_quota_new(&lim);
    counted c = {.n = 7};
    fj_status st = FJ_OK;
    for (int i = 0; i < 3; i++)
        cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_SERIES, "a", 0, count_fn, &c, &st), FJ_LIMIT_NONE, "8th to 10th");
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_SERIES, "a", 0, count_fn, &c, &st), FJ_LIMIT_SERIES_TOTAL);
    cr_assert_eq(c.calls, 1, "the database's count is read once per cluster");
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_SERIES, "full", 0, count_fn, &c, &st), FJ_LIMIT_SERIES_TOTAL,
                 "a cluster already past the cap (the limit lowered) gets nothing new");
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_NODES, "a", 0, count_fn, &c, &st), FJ_LIMIT_NONE,
                 "another kind without limits");
    cr_assert_eq(st, FJ_OK);
    fj_quota_release(q, FJ_QUOTA_SERIES, "a", 2);
    cr_assert_eq(fj_quota_admit_n(q, FJ_QUOTA_SERIES, "a", 3, 0, count_fn, &c, &st), FJ_LIMIT_SERIES_TOTAL,
                 "all or none: 3 do not fit in 2");
    cr_assert_eq(fj_quota_admit_n(q, FJ_QUOTA_SERIES, "a", 2, 0, count_fn, &c, &st), FJ_LIMIT_NONE);
    fj_quota_forget_totals(q);
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_SERIES, "a", 0, count_fn, &c, &st), FJ_LIMIT_NONE,
                 "after a rollback the count is read again (7)");
    cr_assert_eq(c.calls, 3);
    fj_quota_free(q);
}

Test(quota, bucket_holds_a_minute_and_refills)
{
    fj_quota_limits lim = {.per_minute = {[FJ_QUOTA_SERIES] = 600}};
    fj_quota *q = fj_quota_new(&lim);
    fj_status st = FJ_OK;
    int64_t t = 5 * SEC;
    cr_assert_eq(fj_quota_admit_n(q, FJ_QUOTA_SERIES, "a", 600, t, NULL, NULL, &st), FJ_LIMIT_NONE,
                 "a full minute's worth at first: a cluster's first start");
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_SERIES, "a", t, NULL, NULL, &st), FJ_LIMIT_SERIES_RATE);
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_SERIES, "b", t, NULL, NULL, &st), FJ_LIMIT_NONE,
                 "another cluster has its own bucket");
    cr_assert_eq(fj_quota_admit_n(q, FJ_QUOTA_SERIES, "a", 10, t + SEC, NULL, NULL, &st), FJ_LIMIT_NONE,
                 "10 a second come back");
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_SERIES, "a", t + SEC, NULL, NULL, &st), FJ_LIMIT_SERIES_RATE);
    cr_assert_eq(fj_quota_admit_n(q, FJ_QUOTA_SERIES, "a", 601, t + 3600 * SEC, NULL, NULL, &st),
                 FJ_LIMIT_SERIES_RATE, "the bucket holds one minute, however long the pause");
    cr_assert_eq(fj_quota_retry_s(q, FJ_QUOTA_SERIES), 1);
    cr_assert_eq(st, FJ_OK);
    fj_quota_free(q);
}

Test(quota, kinds_names_and_failures)
{
    fj_quota_limits lim = {.total = {[FJ_QUOTA_NODES] = 2, [FJ_QUOTA_JOBS] = 1},
                           .per_minute = {[FJ_QUOTA_NODES] = 1, [FJ_QUOTA_JOBS] = 30}};
    fj_quota *q = fj_quota_new(&lim);
    fj_status st = FJ_OK;
    cr_assert_eq(fj_quota_admit_n(q, FJ_QUOTA_JOBS, "a", 30, 0, NULL, NULL, &st), FJ_LIMIT_NONE,
                 "jobs take no total (ignored)");
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_JOBS, "a", 0, NULL, NULL, &st), FJ_LIMIT_JOBS_RATE);
    cr_assert_eq(fj_quota_retry_s(q, FJ_QUOTA_JOBS), 2, "30 a minute: one every 2 s");
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_NODES, "a", 0, failing_count, NULL, &st), FJ_LIMIT_NONE,
                 "a failing count refuses nothing");
    cr_assert_eq(st, FJ_EIO, "and says so");
    st = FJ_OK;
    counted c = {.n = 0};
    cr_assert_eq(fj_quota_admit_n(q, FJ_QUOTA_NODES, "a", 2, 0, count_fn, &c, &st), FJ_LIMIT_NONE,
                 "nodes take no rate (ignored)");
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_NODES, "a", 0, count_fn, &c, &st), FJ_LIMIT_NODES_TOTAL);
    cr_assert_str_eq(fj_limit_name(FJ_LIMIT_NODES_TOTAL), "max-nodes-per-cluster");
    cr_assert_str_eq(fj_limit_name(FJ_LIMIT_SERIES_RATE), "max-new-series-per-minute");
    cr_assert(fj_limit_is_rate(FJ_LIMIT_JOBS_RATE) && !fj_limit_is_rate(FJ_LIMIT_SERIES_TOTAL));
    fj_quota_free(q);
    fj_quota *none = fj_quota_new(NULL);
    cr_assert(!fj_quota_limited(none, FJ_QUOTA_SERIES));
    cr_assert_eq(fj_quota_admit_n(none, FJ_QUOTA_SERIES, "a", 1000000, 0, NULL, NULL, &st), FJ_LIMIT_NONE);
    fj_quota_free(none);
}

Test(quota, total_read_again_once_old)
{
    /* several servers on one database: the count of the others' series is seen once a minute */
    fj_quota_limits lim = {.total = {[FJ_QUOTA_SERIES] = 10}, .recount_ns = 60 * SEC};
    fj_quota *q = fj_quota_new(&lim);
    counted c = {.n = 5};
    fj_status st = FJ_OK;
    cr_assert_eq(fj_quota_admit_n(q, FJ_QUOTA_SERIES, "a", 4, 1 * SEC, count_fn, &c, &st), FJ_LIMIT_NONE);
    c.n = 9; /* another server created 4 meanwhile, this one 4 */
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_SERIES, "a", 30 * SEC, count_fn, &c, &st), FJ_LIMIT_NONE,
                 "within the minute the own count goes on (9 of 10)");
    cr_assert_eq(c.calls, 1);
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_SERIES, "a", 61 * SEC, count_fn, &c, &st), FJ_LIMIT_NONE,
                 "read again: 9, the 10th fits");
    cr_assert_eq(c.calls, 2);
    cr_assert_eq(fj_quota_admit(q, FJ_QUOTA_SERIES, "a", 62 * SEC, count_fn, &c, &st), FJ_LIMIT_SERIES_TOTAL);
    cr_assert_eq(st, FJ_OK);
    fj_quota_free(q);
}
