/* Tests of api/hostpat.c: node ranges with Slurm padding, wildcards, both together, leading-label
 * matches, and refusals. */
#include "api/hostpat.h"

#include <criterion/criterion.h>
#include <string.h>

static fj_arena *a;
static void setup(void) { a = fj_arena_create(); }
static void teardown(void) { fj_arena_destroy(a); }
TestSuite(hostpat, .init = setup, .fini = teardown);

static fj_hostpat *compile(const char *spec)
{
    fj_hostpat *p = NULL;
    fj_err err = {0};
    fj_status st = fj_hostpat_compile(a, &spec, 1, &p, &err);
    cr_assert_eq(st, FJ_OK, "%s: %s", spec, err.message);
    return p;
}

Test(hostpat, node_ranges_expand_as_slurm)
{
    fj_hostpat *p = compile("c1-[1-3,5],gpu-[08-10]");
    const char *yes[] = {"c1-1", "c1-2", "c1-3", "c1-5", "gpu-08", "gpu-09", "gpu-10"};
    const char *no[] = {"c1-4", "c1-6", "c1-01", "gpu-8", "gpu-11", "c1", "xc1-1"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        cr_assert(fj_hostpat_match(p, yes[i]), "%s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        cr_assert(!fj_hostpat_match(p, no[i]), "%s", no[i]);
}

Test(hostpat, wildcards_and_ranges_combine)
{
    fj_hostpat *p = compile("gpu-*,c[1-2]-*.fox,*xy*");
    cr_assert(fj_hostpat_match(p, "gpu-1"));
    cr_assert(fj_hostpat_match(p, "gpu-"));
    cr_assert(fj_hostpat_match(p, "c1-10.fox"));
    cr_assert(fj_hostpat_match(p, "c2-.fox"));
    cr_assert(!fj_hostpat_match(p, "c3-1.fox"));
    cr_assert(fj_hostpat_match(p, "maxy"));
    cr_assert(!fj_hostpat_match(p, "c1-10.foo"));
    fj_hostpat *all = compile("*");
    cr_assert(fj_hostpat_match(all, "anything.at.all"));
}

Test(hostpat, leading_labels_match)
{
    fj_hostpat *p = compile("ml[1-2],c1-*");
    cr_assert(fj_hostpat_match(p, "ml1"));
    cr_assert(fj_hostpat_match(p, "ml1.hpc.uio.no"));
    cr_assert(fj_hostpat_match(p, "ml2.hpc"));
    cr_assert(!fj_hostpat_match(p, "ml3.hpc.uio.no"));
    cr_assert(!fj_hostpat_match(p, "xml1.hpc.uio.no"));
    cr_assert(fj_hostpat_match(p, "c1-5.fox"), "the wildcard also matches the whole name");
    fj_hostpat *fq = compile("ml1.hpc.uio.no");
    cr_assert(!fj_hostpat_match(fq, "ml1"), "a longer pattern does not match a shorter name");
}

Test(hostpat, several_specs)
{
    const char *specs[] = {"a[1-2]", "b"};
    fj_hostpat *p = NULL;
    fj_err err = {0};
    cr_assert_eq(fj_hostpat_compile(a, specs, 2, &p, &err), FJ_OK);
    cr_assert(fj_hostpat_match(p, "a2"));
    cr_assert(fj_hostpat_match(p, "b"));
    cr_assert(!fj_hostpat_match(p, "a3"));
}

static void refused(const char *spec, fj_status want, const char *why)
{
    fj_hostpat *p = NULL;
    fj_err err = {0};
    fj_status st = fj_hostpat_compile(a, &spec, 1, &p, &err);
    cr_assert_eq(st, want, "%s gave %d", spec, st);
    cr_assert(strstr(err.message, why), "%s: %s", spec, err.message);
}

Test(hostpat, bad_patterns_are_refused)
{
    refused("c[3-1]", FJ_EINVAL, "c[3-1]");
    refused("c[1-2", FJ_EINVAL, "c[1-2");
    refused("a,,b", FJ_EINVAL, "empty");
    refused("c 1", FJ_EINVAL, "not allowed");
    refused("c/1", FJ_EINVAL, "not allowed");
    refused("c[1-9999999]", FJ_ETOOBIG, "more than");
    refused("c[1-1000]-[1-1000]", FJ_ETOOBIG, "more than");
}

Test(hostpat, glob)
{
    cr_assert(fj_glob_match("a*b*c", "aXbYc"));
    cr_assert(fj_glob_match("a*b*c", "abc"));
    cr_assert(!fj_glob_match("a*b*c", "abcd"));
    cr_assert(fj_glob_match("**", ""));
    cr_assert(!fj_glob_match("a", ""));
    cr_assert(fj_glob_match("*aab", "aaaab"), "backtracking");
}
