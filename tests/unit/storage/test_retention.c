/* Tests of storage/core/retention.c: which envelopes are too old to store, and why. */
#include "storage/core/retention.h"

#include <criterion/criterion.h>
#include <string.h>

#define DAY 86400

static fj_envelope env(fj_kind kind, fj_time t, bool is_error)
{
    return (fj_envelope){.kind = kind, .time = t, .is_error = is_error, .cluster = "c", .node = "n"};
}

Test(retention, samples_against_the_shorter_sample_retention)
{
    const fj_retention r = {.process_samples_s = 2 * DAY, .node_samples_s = 30 * DAY};
    const fj_time now = 1700000000;
    fj_err err = {0};
    fj_envelope e = env(FJ_KIND_SAMPLE, now - 2 * DAY, false);
    cr_assert_eq(fj_retention_admit(&r, &e, now, &err), FJ_OK, "exactly at the horizon: kept");
    e.time = now - 2 * DAY - 1;
    cr_assert_eq(fj_retention_admit(&r, &e, now, &err), FJ_EINVAL);
    cr_assert_str_eq(err.code, "expired");
    cr_assert_str_eq(err.path, "data.attributes.time");
    cr_assert(strstr(err.message, "retention-process-samples"), "%s", err.message);
    /* a cluster envelope (node states, partition memberships) goes with node samples */
    fj_envelope c = env(FJ_KIND_CLUSTER, now - 10 * DAY, false);
    cr_assert_eq(fj_retention_admit(&r, &c, now, &err), FJ_OK);
    c.time = now - 31 * DAY;
    cr_assert_eq(fj_retention_admit(&r, &c, now, &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "retention-node-samples"), "%s", err.message);
}

Test(retention, each_kind_its_own_setting)
{
    const fj_retention r = {.errors_s = DAY, .slurm_s = 7 * DAY};
    const fj_time now = 1700000000;
    fj_err err = {0};
    fj_envelope s = env(FJ_KIND_SAMPLE, now - 1000 * DAY, false);
    cr_assert_eq(fj_retention_admit(&r, &s, now, &err), FJ_OK, "samples kept forever");
    fj_envelope e = env(FJ_KIND_SAMPLE, now - 2 * DAY, true);
    cr_assert_eq(fj_retention_admit(&r, &e, now, &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "retention-errors"), "%s", err.message);
    cr_assert_str_eq(err.path, "errors");
    fj_envelope j = env(FJ_KIND_JOB, now - 6 * DAY, false);
    cr_assert_eq(fj_retention_admit(&r, &j, now, &err), FJ_OK);
    j.time = now - 8 * DAY;
    cr_assert_eq(fj_retention_admit(&r, &j, now, &err), FJ_EINVAL);
    cr_assert(strstr(err.message, "retention-slurm"), "%s", err.message);
    fj_envelope m = env(FJ_KIND_SYSINFO, now - 1000 * DAY, false);
    cr_assert_eq(fj_retention_admit(&r, &m, now, &err), FJ_OK, "sysinfo has no retention");
}

Test(retention, process_samples_never_outlive_node_samples)
{
    fj_err err = {0};
    cr_assert_eq(fj_retention_check(&(fj_retention){.process_samples_s = 2 * DAY, .node_samples_s = DAY}, &err),
                 FJ_EINVAL);
    cr_assert_eq(fj_retention_check(&(fj_retention){.node_samples_s = DAY}, &err), FJ_EINVAL, "0 is forever");
    cr_assert_eq(fj_retention_check(&(fj_retention){.process_samples_s = DAY}, &err), FJ_OK);
    cr_assert_eq(fj_retention_check(&(fj_retention){.process_samples_s = DAY, .node_samples_s = DAY}, &err), FJ_OK);
}
