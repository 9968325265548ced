/* test_noderange.c — Slurm-style host range expansion (Sonar HostnameRange) and the host-name check.
 * Expected expansions follow Slurm's hostlist: first bracket varies slowest, items in the order
 * written, the low bound's width sets the zero padding. */
#include "arena.h"
#include "ingest/noderange.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

static fj_arena *arena;

static void setup(void)
{
    arena = fj_arena_create();
    cr_assert_not_null(arena);
}

static void teardown(void)
{
    fj_arena_destroy(arena);
}

TestSuite(noderange, .init = setup, .fini = teardown);

/* Expands range and compares with the NULL-terminated list want. */
static void expect_names(const char *range, const char *const *want)
{
    char **names = NULL;
    size_t n = 0;
    fj_err err = {0};
    fj_status st = fj_noderange_expand(arena, range, &names, &n, &err);
    cr_assert_eq(st, FJ_OK, "%s: %s", range, err.message);
    size_t nw = 0;
    while (want[nw])
        nw++;
    cr_assert_eq(n, nw, "%s: %zu names, want %zu", range, n, nw);
    for (size_t i = 0; i < n; i++)
        cr_expect_str_eq(names[i], want[i], "%s: name %zu", range, i);
}

/* Expects refusal with status st and a message containing needle. */
static void expect_refused(const char *range, fj_status want, const char *needle)
{
    char **names = (char **)0x1;
    size_t n = 12345;
    fj_err err = {0};
    fj_status st = fj_noderange_expand(arena, range, &names, &n, &err);
    cr_assert_eq(st, want, "%s: status %d, want %d (%s)", range, st, want, err.message);
    cr_expect(strstr(err.message, needle) != NULL, "%s: message \"%s\" lacks \"%s\"", range, err.message, needle);
    cr_expect_eq(names, (char **)0x1, "%s: *out touched on error", range);
    cr_expect_eq(n, 12345, "%s: *n touched on error", range);
}

Test(noderange, spec_example)
{
    expect_names("c[1-3,5]-[2-4].fox",
                 (const char *const[]){"c1-2.fox", "c1-3.fox", "c1-4.fox", "c2-2.fox", "c2-3.fox", "c2-4.fox",
                                       "c3-2.fox", "c3-3.fox", "c3-4.fox", "c5-2.fox", "c5-3.fox", "c5-4.fox",
                                       NULL});
}

Test(noderange, zero_padding_kept)
{
    expect_names("gpu-[01-08]", (const char *const[]){"gpu-01", "gpu-02", "gpu-03", "gpu-04", "gpu-05", "gpu-06",
                                                      "gpu-07", "gpu-08", NULL});
    expect_names("g[001-002]", (const char *const[]){"g001", "g002", NULL});
    expect_names("n[001,003,013-014]", (const char *const[]){"n001", "n003", "n013", "n014", NULL});
}

Test(noderange, low_bound_width_governs)
{
    expect_names("c[8-10]", (const char *const[]){"c8", "c9", "c10", NULL});
    expect_names("c[08-10]", (const char *const[]){"c08", "c09", "c10", NULL});
    expect_names("c[098-101]", (const char *const[]){"c098", "c099", "c100", "c101", NULL});
    expect_names("c[1,05]", (const char *const[]){"c1", "c05", NULL});
}

Test(noderange, order_as_written)
{
    expect_names("c[5,1-2]", (const char *const[]){"c5", "c1", "c2", NULL});
}

Test(noderange, plain_names_and_bare_brackets)
{
    expect_names("g001", (const char *const[]){"g001", NULL});
    expect_names("c1-29", (const char *const[]){"c1-29", NULL});
    expect_names("[1-2]", (const char *const[]){"1", "2", NULL});
    expect_names("[7].fox", (const char *const[]){"7.fox", NULL});
    expect_names("a[1]b[2]c", (const char *const[]){"a1b2c", NULL});
}

Test(noderange, real_cluster_config_range)
{
    /* betzy.sigma2.no-config.json */
    char **names;
    size_t n;
    fj_err err = {0};
    cr_assert_eq(fj_noderange_expand(arena,
                                     "b[1101-1196,1201-1296,1301-1396,2101-2196,2201-2296,2301-2396,3101-3196,"
                                     "3201-3296,3301-3396,4101-4196,4201-4296,4301-4396,5101-5196,5207-5296]"
                                     ".betzy.sigma2.no",
                                     &names, &n, &err),
                 FJ_OK, "%s", err.message);
    cr_expect_eq(n, 13 * 96 + 90);
    cr_expect_str_eq(names[0], "b1101.betzy.sigma2.no");
    cr_expect_str_eq(names[96], "b1201.betzy.sigma2.no");
    cr_expect_str_eq(names[n - 1], "b5296.betzy.sigma2.no");
}

Test(noderange, grammar_errors)
{
    expect_refused("", FJ_EINVAL, "empty");
    expect_refused("c[3-1]", FJ_EINVAL, "low bound above its high bound");
    expect_refused("c[1-3,2]", FJ_EINVAL, "repeated");
    expect_refused("c[1,1]", FJ_EINVAL, "repeated");
    expect_refused("c[1-5,3-7]", FJ_EINVAL, "repeated");
    expect_refused("c[01,1]", FJ_EINVAL, "repeated");
    expect_refused("c[1-3", FJ_EINVAL, "unclosed");
    expect_refused("c[1-3,", FJ_EINVAL, "unclosed");
    expect_refused("c1-3]", FJ_EINVAL, "unmatched ']'");
    expect_refused("c[[1]]", FJ_EINVAL, "nested");
    expect_refused("c[1[2]]", FJ_EINVAL, "nested");
    expect_refused("c[]", FJ_EINVAL, "empty brackets");
    expect_refused("c[1,]", FJ_EINVAL, "empty item");
    expect_refused("c[,1]", FJ_EINVAL, "empty item");
    expect_refused("c[1,,2]", FJ_EINVAL, "empty item");
    expect_refused("c[1-]", FJ_EINVAL, "missing high bound");
    expect_refused("c[-3]", FJ_EINVAL, "where a number was expected");
    expect_refused("c[a]", FJ_EINVAL, "where a number was expected");
    expect_refused("c[1-2x]", FJ_EINVAL, "inside brackets");
    expect_refused("c[1;2]", FJ_EINVAL, "inside brackets");
    expect_refused("c[1 ,2]", FJ_EINVAL, "inside brackets");
    expect_refused("c[12345678901234567890]", FJ_EINVAL, "too long");
}

Test(noderange, bad_host_characters)
{
    expect_refused("node_1", FJ_EINVAL, "not allowed in a host name");
    expect_refused("c[1-2] x", FJ_EINVAL, "not allowed in a host name");
    expect_refused("c[1-2],d1", FJ_EINVAL, "not allowed");
    expect_refused("c\xc3\xa4[1]", FJ_EINVAL, "0xc3");
    expect_refused("c[1-2].", FJ_EINVAL, "not a valid host name");
    expect_refused(".c[1-2]", FJ_EINVAL, "not a valid host name");
    expect_refused("a..b[1]", FJ_EINVAL, "not a valid host name");
}

Test(noderange, name_too_long)
{
    /* Four labels of 62 and three dots: 251 bytes; ".[1-100]" gives ".1" .. ".9" (253 bytes, fine)
     * and then ".10" (254 bytes), refused. */
    char range[300], want[300];
    size_t o = 0;
    for (int l = 0; l < 4; l++) {
        if (l)
            range[o++] = '.';
        memset(range + o, 'a' + l, 62);
        o += 62;
    }
    range[o] = '\0';
    cr_assert_eq(strlen(range), 251);
    snprintf(want, sizeof want, "%s.9", range);
    strcat(range, ".[9]");
    expect_names(range, (const char *const[]){want, NULL});
    range[o] = '\0';
    strcat(range, ".[1-100]");
    expect_refused(range, FJ_EINVAL, "not a valid host name");
}

Test(noderange, expansion_cap)
{
    expect_refused("n[1-1000001]", FJ_ETOOBIG, "more than 1000000 names");
    expect_refused("n[1-18446744073709551615]", FJ_EINVAL, "too long"); /* 20 digits */
    expect_refused("n[0-9999999999999999999]", FJ_ETOOBIG, "more than");
    expect_refused("n[1-1000]-[1-1001]", FJ_ETOOBIG, "more than");
    expect_refused("a[1-100][1-100][1-100][1-100]", FJ_ETOOBIG, "more than");

    char **names;
    size_t n;
    fj_err err = {0};
    cr_assert_eq(fj_noderange_expand(arena, "n[1-1000]-[1-1000]", &names, &n, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(n, 1000000);
    cr_expect_str_eq(names[999999], "n1000-1000");

    cr_expect_eq(fj_noderange_expand_max(arena, "c[1-4]", 3, &names, &n, &err), FJ_ETOOBIG);
    cr_expect_eq(fj_noderange_expand_max(arena, "c[1-3]", 3, &names, &n, &err), FJ_OK);
    cr_expect_eq(n, 3);
}

Test(noderange, hostname_valid)
{
    cr_expect(fj_hostname_valid("c1-10.fox"));
    cr_expect(fj_hostname_valid("node-X"));
    cr_expect(fj_hostname_valid("a"));
    cr_expect(fj_hostname_valid("ml1.hpc.uio.no"));
    cr_expect(fj_hostname_valid("10.0.0.1"));

    cr_expect_not(fj_hostname_valid(NULL));
    cr_expect_not(fj_hostname_valid(""));
    cr_expect_not(fj_hostname_valid("a_b"));
    cr_expect_not(fj_hostname_valid("a b"));
    cr_expect_not(fj_hostname_valid("a..b"));
    cr_expect_not(fj_hostname_valid(".a"));
    cr_expect_not(fj_hostname_valid("a."));
    cr_expect_not(fj_hostname_valid("n[1-2]"));
    cr_expect_not(fj_hostname_valid("h\xc3\xa4st"));

    char name[300];
    /* 4 labels of 63 + 3 dots = 255 > 253; 3 labels of 63 + '.' + 61 = 253 */
    memset(name, 'a', sizeof name);
    name[63] = name[127] = name[191] = '.';
    name[253] = '\0';
    cr_expect(fj_hostname_valid(name));
    name[253] = 'a';
    name[254] = '\0';
    cr_expect_not(fj_hostname_valid(name), "254 bytes");
    memset(name, 'a', 64);
    name[64] = '\0';
    cr_expect_not(fj_hostname_valid(name), "label of 64");
    name[63] = '\0';
    cr_expect(fj_hostname_valid(name), "label of 63");
}
