/* test_noderange_compress.c — host lists compressed into ranges (fj_noderange_compress, SSS's
 * aggregation="Range"), the list form read back (fj_noderange_expand_list), round trips with
 * fj_noderange_expand, and the query API's host patterns reading the compressed form. */
#include "arena.h"
#include "api/hostpat.h"
#include "ingest/noderange.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
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

TestSuite(noderange_compress, .init = setup, .fini = teardown);

static size_t count(const char *const *v)
{
    size_t n = 0;
    while (v[n])
        n++;
    return n;
}

static const char *compress(const char *const *names, size_t n)
{
    char *out = NULL;
    fj_err err = {0};
    fj_status st = fj_noderange_compress(arena, names, n, &out, &err);
    cr_assert_eq(st, FJ_OK, "compress: %s", err.message);
    cr_assert_not_null(out);
    return out;
}

/* Compresses the NULL-terminated names and compares with want. */
static void expect_compressed(const char *const *names, const char *want)
{
    const char *got = compress(names, count(names));
    cr_expect_str_eq(got, want, "compressing %s... gave %s, want %s", names[0] ? names[0] : "nothing", got, want);
}

/* Expands the list form and returns the names (NULL-terminated, arena). */
static char **expand_list(const char *list, size_t *n)
{
    char **names = NULL;
    fj_err err = {0};
    fj_status st = fj_noderange_expand_list(arena, list, FJ_NODERANGE_MAX_NAMES, &names, n, &err);
    cr_assert_eq(st, FJ_OK, "expand_list %s: %s", list, err.message);
    return names;
}

/* Round trip: every name comes back exactly once, nothing else does, and compressing the
 * expansion gives the same string (the result is canonical). */
static void round_trip(const char *const *names, size_t n)
{
    const char *c = compress(names, n);
    size_t m = 0;
    char **back = expand_list(c, &m);
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t k = 0; k < m && !found; k++)
            found = strcmp(names[i], back[k]) == 0;
        cr_expect(found, "%s lost in %s", names[i], c);
    }
    for (size_t k = 0; k < m; k++) {
        bool found = false;
        for (size_t i = 0; i < n && !found; i++)
            found = strcmp(names[i], back[k]) == 0;
        cr_expect(found, "%s appeared from %s", back[k], c);
        for (size_t j = 0; j < k; j++)
            cr_expect_str_neq(back[j], back[k], "%s twice in the expansion of %s", back[k], c);
    }
    const char *again = compress((const char *const *)back, m);
    cr_expect_str_eq(again, c, "not canonical: %s then %s", c, again);
}

Test(noderange_compress, spec_example)
{
    /* SSS Node Object, section 4.4: a range of nodes of the form <prefix>[5-23,77]. */
    const char *names[21];
    char buf[20][8];
    for (int i = 0; i < 19; i++) {
        snprintf(buf[i], sizeof buf[i], "node%d", 5 + i);
        names[i] = buf[i];
    }
    names[19] = "node77";
    names[20] = NULL;
    expect_compressed(names, "node[5-23,77]");
    round_trip(names, 20);
}

Test(noderange_compress, order_of_input_does_not_matter)
{
    expect_compressed((const char *const[]){"node77", "node7", "node5", "node6", NULL}, "node[5-7,77]");
    expect_compressed((const char *const[]){"node6", "node77", "node5", "node7", NULL}, "node[5-7,77]");
}

Test(noderange_compress, zero_padding_kept)
{
    expect_compressed((const char *const[]){"gpu-01", "gpu-02", "gpu-03", "gpu-08", NULL}, "gpu-[01-03,08]");
    /* Slurm's rule: the low bound's width pads the whole item; 8, 9, 10 need no padding. */
    expect_compressed((const char *const[]){"n8", "n9", "n10", "n11", NULL}, "n[8-11]");
    expect_compressed((const char *const[]){"n08", "n09", "n10", NULL}, "n[08-10]");
    expect_compressed((const char *const[]){"n008", "n009", "n010", "n100", "n1000", NULL}, "n[008-010,100,1000]");
    /* 9 then 010: 010 is not how width 1 prints 10, so a new item starts. */
    expect_compressed((const char *const[]){"n9", "n010", NULL}, "n[9,010]");
    round_trip((const char *const[]){"n9", "n010"}, 2);
    round_trip((const char *const[]){"n008", "n009", "n010", "n100", "n1000"}, 5);
}

Test(noderange_compress, same_number_twice_goes_to_separate_items)
{
    /* n1 and n01 are different hosts with the same number: one bracket may not hold it twice. */
    expect_compressed((const char *const[]){"n01", "n1", "n2", "n02", "n3", NULL}, "n[1-3],n[01-02]");
    round_trip((const char *const[]){"n01", "n1", "n2", "n02", "n3"}, 5);
    expect_compressed((const char *const[]){"n1", "n01", "n001", NULL}, "n1,n01,n001");
    round_trip((const char *const[]){"n1", "n01", "n001"}, 3);
}

Test(noderange_compress, plain_names_and_singletons)
{
    expect_compressed((const char *const[]){"login", NULL}, "login");
    expect_compressed((const char *const[]){"node77", NULL}, "node77");
    expect_compressed((const char *const[]){"login", "node1", "node2", "admin", NULL}, "admin,login,node[1-2]");
    expect_compressed((const char *const[]){"node", "node1", NULL}, "node,node1");
    round_trip((const char *const[]){"node", "node1", "node2"}, 3);
}

Test(noderange_compress, duplicates_dropped)
{
    expect_compressed((const char *const[]){"c1", "c2", "c1", "c2", "c3", "c3", NULL}, "c[1-3]");
}

Test(noderange_compress, suffix_and_several_groups)
{
    /* The number is the last run of digits; the text after it is part of the group key. */
    expect_compressed((const char *const[]){"c1-2.fox", "c1-3.fox", "c1-4.fox", "c2-2.fox", "c2-3.fox", NULL},
                      "c1-[2-4].fox,c2-[2-3].fox");
    expect_compressed((const char *const[]){"b17n15", "b17n16", "b18n1", "a1", NULL}, "a1,b17n[15-16],b18n1");
    round_trip((const char *const[]){"c1-2.fox", "c1-3.fox", "c1-4.fox", "c2-2.fox", "c2-3.fox"}, 5);
    expect_compressed((const char *const[]){"ml1.hpc.uio.no", "ml2.hpc.uio.no", "ml3.hpc.uio.no", NULL},
                      "ml[1-3].hpc.uio.no");
}

Test(noderange_compress, empty_and_invalid)
{
    char *out = (char *)0x1;
    fj_err err = {0};
    cr_assert_eq(fj_noderange_compress(arena, NULL, 0, &out, &err), FJ_OK);
    cr_expect_str_eq(out, "");
    size_t n = 99;
    expand_list("", &n);
    cr_expect_eq(n, 0);
    const char *bad[] = {"ok1", "bad_name"};
    cr_expect_eq(fj_noderange_compress(arena, bad, 2, &out, &err), FJ_EINVAL);
    cr_expect(strstr(err.message, "bad_name") != NULL, "%s", err.message);
    const char *bad2[] = {"node[1-2]"};
    cr_expect_eq(fj_noderange_compress(arena, bad2, 1, &out, &err), FJ_EINVAL);
}

Test(noderange_compress, expand_list_errors)
{
    char **names;
    size_t n;
    fj_err err = {0};
    cr_expect_eq(fj_noderange_expand_list(arena, "a1,,a2", 100, &names, &n, &err), FJ_EINVAL);
    cr_expect_eq(fj_noderange_expand_list(arena, "a1,", 100, &names, &n, &err), FJ_EINVAL);
    cr_expect_eq(fj_noderange_expand_list(arena, "a[1-3", 100, &names, &n, &err), FJ_EINVAL);
    cr_expect_eq(fj_noderange_expand_list(arena, "a[1-60],b[1-60]", 100, &names, &n, &err), FJ_ETOOBIG);
    cr_expect_eq(fj_noderange_expand_list(arena, "a[1-50],b[1-50]", 100, &names, &n, &err), FJ_OK);
    cr_expect_eq(n, 100);
    cr_expect_eq(fj_noderange_expand_list(arena, "a[1-50],b[1-50],c", 100, &names, &n, &err), FJ_ETOOBIG);
}

Test(noderange_compress, round_trip_with_expand)
{
    /* Every compressed item expands with fj_noderange_expand itself. */
    static const char *const ranges[] = {"c[1-3,5]-[2-4].fox", "gpu-[01-08]", "n[8-10]", "x[0-3,7,09-11]",
                                         "node[5-23,77]", "a[000-099]"};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        char **names;
        size_t n;
        fj_err err = {0};
        cr_assert_eq(fj_noderange_expand(arena, ranges[r], &names, &n, &err), FJ_OK, "%s", err.message);
        round_trip((const char *const *)names, n);
        const char *c = compress((const char *const *)names, n);
        /* each comma-free item of the result is a range fj_noderange_expand accepts */
        size_t m;
        char **back = expand_list(c, &m);
        cr_expect_eq(m, n, "%s -> %s: %zu names back, want %zu", ranges[r], c, m, n);
        (void)back;
    }
    const char *c = compress((const char *const[]){"node5", "node6", "node7", "node77"}, 4);
    char **names;
    size_t n;
    fj_err err = {0};
    cr_assert_eq(fj_noderange_expand(arena, c, &names, &n, &err), FJ_OK, "%s", err.message);
    cr_expect_eq(n, 4);
}

Test(noderange_compress, random_round_trips)
{
    /* Random sets over a few prefixes, widths and numbers, including n1/n01 clashes. */
    static const char *const prefixes[] = {"n", "c1-", "gpu-", "x", "rack2n"};
    static const char *const suffixes[] = {"", ".fox", "-ib"};
    srand(12345);
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)(rand() % 40) + 1;
        const char **names = fj_arena_alloc(arena, sizeof *names * n);
        for (size_t i = 0; i < n; i++) {
            int width = rand() % 4; /* 0: natural */
            int v = rand() % 30;
            names[i] = fj_arena_printf(arena, "%s%0*d%s", prefixes[rand() % 5], width, v, suffixes[rand() % 3]);
        }
        round_trip(names, n);
    }
}

Test(noderange_compress, host_patterns_read_the_range_form)
{
    /* Query parameters that take node lists (host=) go through fj_hostpat: the SSS Range form
     * and a compressed list must select exactly their names. */
    const char *c = compress((const char *const[]){"node5", "node6", "node7", "node77", "gpu-01", "gpu-02"}, 6);
    cr_expect_str_eq(c, "gpu-[01-02],node[5-7,77]");
    fj_hostpat *hp;
    fj_err err = {0};
    const char *specs[] = {c};
    cr_assert_eq(fj_hostpat_compile(arena, specs, 1, &hp, &err), FJ_OK, "%s", err.message);
    cr_expect(fj_hostpat_match(hp, "node5"));
    cr_expect(fj_hostpat_match(hp, "node77"));
    cr_expect(fj_hostpat_match(hp, "gpu-02"));
    cr_expect(!fj_hostpat_match(hp, "node8"));
    cr_expect(!fj_hostpat_match(hp, "gpu-2"));
    const char *sss[] = {"node[5-23,77]"};
    cr_assert_eq(fj_hostpat_compile(arena, sss, 1, &hp, &err), FJ_OK, "%s", err.message);
    cr_expect(fj_hostpat_match(hp, "node23"));
    cr_expect(fj_hostpat_match(hp, "node77"));
    cr_expect(!fj_hostpat_match(hp, "node24"));
}
