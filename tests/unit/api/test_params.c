/* Tests of api/params.c: every bad parameter is refused with its name and the reason; values
 * parse as documented; cursors round-trip and refuse other listings. */
#include "api/params.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static const fj_pspec spec[] = {
    {"cluster", FJ_PT_STRING, "", NULL, true, 0, 0},
    {"from", FJ_PT_TIME, "", NULL, false, 0, 0},
    {"bucket", FJ_PT_DURATION, "", NULL, false, 0, 0},
    {"limit", FJ_PT_INT, "", NULL, false, 1, 100},
    {"min_cpu", FJ_PT_NUMBER, "", NULL, false, 0, 0},
    {"min_mem_kb", FJ_PT_KB, "", NULL, false, 0, 0},
    {"running", FJ_PT_BOOL, "", NULL, false, 0, 0},
    {"order", FJ_PT_ENUM, "", "asc|desc", false, 0, 0},
    {"user", FJ_PT_LIST, "", NULL, false, 0, 0},
    {"job", FJ_PT_INTLIST, "", NULL, false, 0, 0},
    {"host", FJ_PT_HOSTS, "", NULL, false, 0, 0},
    {NULL, 0, NULL, NULL, false, 0, 0},
};

static fj_arena *a;
static void setup(void) { a = fj_arena_create(); }
static void teardown(void) { fj_arena_destroy(a); }
TestSuite(params, .init = setup, .fini = teardown);

#define NOW 1764000000

static fj_status parse(fj_params *p, fj_err *err, size_t n, const fj_arg *args)
{
    return fj_params_parse(a, spec, args, n, NOW, p, err);
}

Test(params, good_values_parse)
{
    fj_arg args[] = {{"cluster", "fox"},          {"from", "2025-11-25T10:00:00+01:00"}, {"bucket", "15m"},
                     {"limit", "50"},             {"min_cpu", "12.5"},                   {"min_mem_kb", "16G"},
                     {"running", "yes"},          {"order", "desc"},                     {"user", "a,b"},
                     {"user", "c"},               {"job", "1,22"},                       {"host", "c[1-3,5],gpu-*"}};
    fj_params p;
    fj_err err = {0};
    cr_assert_eq(parse(&p, &err, sizeof args / sizeof args[0], args), FJ_OK, "%s", err.message);
    cr_assert_str_eq(fj_param(&p, "cluster")->s, "fox");
    cr_assert_eq(fj_param(&p, "from")->i, 1764061200);
    cr_assert_eq(fj_param(&p, "bucket")->i, 900);
    cr_assert_eq(fj_param(&p, "limit")->i, 50);
    cr_assert_float_eq(fj_param(&p, "min_cpu")->d, 12.5, 1e-9);
    cr_assert_float_eq(fj_param(&p, "min_mem_kb")->d, 16.0 * 1024 * 1024, 1e-9);
    cr_assert_eq(fj_param(&p, "running")->i, 1);
    cr_assert_eq(fj_param(&p, "order")->i, 1);
    const fj_pval *u = fj_param(&p, "user");
    cr_assert_eq(u->n, 3);
    cr_assert_str_eq(u->list[0], "a");
    cr_assert_str_eq(u->list[2], "c");
    const fj_pval *j = fj_param(&p, "job");
    cr_assert_eq(j->n, 2);
    cr_assert_eq(j->ints[1], 22);
    /* host patterns keep their commas: the pattern parser splits outside brackets */
    cr_assert_eq(fj_param(&p, "host")->n, 1);
    cr_assert_str_eq(fj_param(&p, "host")->list[0], "c[1-3,5],gpu-*");
    cr_assert(!fj_param(&p, "nonexistent")->set);
}

static void refused(const char *name, const char *value, const char *why)
{
    fj_arg args[] = {{"cluster", "fox"}, {name, value}};
    fj_params p;
    fj_err err = {0};
    cr_assert_eq(parse(&p, &err, 2, args), FJ_EINVAL, "%s=%s accepted", name, value ? value : "(none)");
    cr_assert_str_eq(err.path, name, "path of %s=%s is %s", name, value, err.path);
    cr_assert(strstr(err.message, name), "message names the parameter: %s", err.message);
    if (why)
        cr_assert(strstr(err.message, why), "message for %s=%s says '%s': %s", name, value, why, err.message);
}

Test(params, bad_values_name_the_parameter)
{
    refused("from", "yesterday", "not a time");
    refused("from", "2025-02-30T00:00:00Z", "not a time");
    refused("from", "", "empty");
    refused("from", NULL, "empty");
    refused("bucket", "5x", "not a duration");
    refused("bucket", "-5", "not a duration");
    refused("limit", "0", "must be 1 to 100");
    refused("limit", "101", "must be 1 to 100");
    refused("limit", "ten", "not an integer");
    refused("limit", "1e3", "not an integer");
    refused("min_cpu", "NaN", "not a number");
    refused("min_cpu", "inf", "not a number");
    refused("min_mem_kb", "16Q", "not a size");
    refused("running", "maybe", "not a boolean");
    refused("order", "up", "not one of asc,desc");
    refused("job", "1,,2", "empty item");
    refused("job", "1,x", "'x' is not a nonnegative integer");
    refused("job", "-3", "nonnegative");
    refused("limt", "3", "did you mean 'limit'?");
    refused("colour", "red", "unknown");
}

Test(params, repeated_scalar_and_missing_required_are_refused)
{
    fj_arg twice[] = {{"cluster", "fox"}, {"limit", "1"}, {"limit", "2"}};
    fj_params p;
    fj_err err = {0};
    cr_assert_eq(parse(&p, &err, 3, twice), FJ_EINVAL);
    cr_assert_str_eq(err.path, "limit");
    cr_assert(strstr(err.message, "more than once"));
    fj_arg none[] = {{"limit", "1"}};
    memset(&err, 0, sizeof err);
    cr_assert_eq(parse(&p, &err, 1, none), FJ_EINVAL);
    cr_assert_str_eq(err.path, "cluster");
    cr_assert(strstr(err.message, "required"));
}

Test(params, influx_credentials_are_not_parameters)
{
    fj_arg args[] = {{"cluster", "fox"}, {"u", "fox"}, {"p", "secret"}};
    fj_params p;
    fj_err err = {0};
    cr_assert_eq(parse(&p, &err, 3, args), FJ_OK, "%s", err.message);
}

Test(params, times_and_durations)
{
    fj_time t;
    cr_assert_eq(fj_parse_time("now", NOW, &t), FJ_OK);
    cr_assert_eq(t, NOW);
    cr_assert_eq(fj_parse_time("now-2h", NOW, &t), FJ_OK);
    cr_assert_eq(t, NOW - 7200);
    cr_assert_eq(fj_parse_time("1700000000", NOW, &t), FJ_OK);
    cr_assert_eq(t, 1700000000);
    cr_assert_eq(fj_parse_time("2025-11-25T09:52:00.5z", NOW, &t), FJ_OK);
    cr_assert_eq(t, 1764064320);
    cr_assert_eq(fj_parse_time("now+2h", NOW, &t), FJ_EINVAL);
    cr_assert_eq(fj_parse_time("-5", NOW, &t), FJ_EINVAL);
    int64_t d;
    cr_assert_eq(fj_parse_duration("90", &d), FJ_OK);
    cr_assert_eq(d, 90);
    cr_assert_eq(fj_parse_duration("1.5h", &d), FJ_OK);
    cr_assert_eq(d, 5400);
    cr_assert_eq(fj_parse_duration("2w", &d), FJ_OK);
    cr_assert_eq(d, 14 * 86400);
    cr_assert_eq(fj_parse_duration("h", &d), FJ_EINVAL);
    cr_assert_eq(fj_parse_duration("5mm", &d), FJ_EINVAL);
    double kb;
    cr_assert_eq(fj_parse_kb("512", &kb), FJ_OK);
    cr_assert_float_eq(kb, 512, 1e-9);
    cr_assert_eq(fj_parse_kb("1.5MiB", &kb), FJ_OK);
    cr_assert_float_eq(kb, 1536, 1e-9);
    cr_assert_eq(fj_parse_kb("2t", &kb), FJ_OK);
    cr_assert_float_eq(kb, 2.0 * 1024 * 1024 * 1024, 1e-3);
}

Test(params, cursors_round_trip_and_belong_to_one_listing)
{
    fj_qpos p = {.set = true, .v = 1234.5678901234567, .id = 987654321};
    snprintf(p.s, sizeof p.s, "step|with|bars");
    char c[FJ_CURSOR_MAX];
    fj_cursor_encode("jobs:cpu_avg:desc", &p, c);
    cr_assert(strspn(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == strlen(c),
              "url-safe: %s", c);
    fj_qpos q = {0};
    cr_assert_eq(fj_cursor_decode("jobs:cpu_avg:desc", c, &q), FJ_OK);
    cr_assert(q.set);
    cr_assert_eq(q.v, p.v, "the sort value survives exactly");
    cr_assert_eq(q.id, p.id);
    cr_assert_str_eq(q.s, "step|with|bars");
    cr_assert_eq(fj_cursor_decode("jobs:cpu_avg:asc", c, &q), FJ_EINVAL, "another order");
    cr_assert_eq(fj_cursor_decode("jobs:start:desc", c, &q), FJ_EINVAL, "another sort");
    cr_assert_eq(fj_cursor_decode("jobs:cpu_avg:desc", "!!!", &q), FJ_EINVAL);
    cr_assert_eq(fj_cursor_decode("jobs:cpu_avg:desc", "", &q), FJ_EINVAL);
    cr_assert_eq(fj_cursor_decode("jobs:cpu_avg:desc", "AAAA", &q), FJ_EINVAL, "NUL bytes");
    char longc[400];
    memset(longc, 'A', sizeof longc - 1);
    longc[sizeof longc - 1] = '\0';
    cr_assert_eq(fj_cursor_decode("jobs:cpu_avg:desc", longc, &q), FJ_EINVAL);
}
