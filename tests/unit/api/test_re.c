/* Tests of api/re.c: the server's one regular-expression engine (PCRE2), its RE2 syntax and every
 * bound it keeps: pattern length, nesting, match steps. */
#include "api/re.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static fj_re *ok(const char *pattern)
{
    char msg[192] = "";
    fj_re *re = fj_re_compile(pattern, msg, sizeof msg);
    cr_assert_not_null(re, "/%s/: %s", pattern, msg);
    return re;
}

static void refused(const char *pattern, const char *why)
{
    char msg[192] = "";
    fj_re *re = fj_re_compile(pattern, msg, sizeof msg);
    cr_assert_null(re, "/%.40s/ compiled", pattern);
    cr_assert(strstr(msg, why), "/%.40s/: %s", pattern, msg);
}

Test(re, re2_syntax)
{
    fj_re *re = ok("(?i)^gpu-\\d+\\s\\w$");
    cr_assert(fj_re_match(re, "GPU-12 x"));
    cr_assert_not(fj_re_match(re, "gpu-x x"));
    cr_assert_not(fj_re_match(re, "gpu-1 x\n"), "$ matches only at the end, as in Go");
    fj_re_free(re);
    re = ok("[[:alpha:]]+?z"); /* lazy repetition and POSIX classes: RE2 has both */
    cr_assert(fj_re_match(re, "1abz"));
    fj_re_free(re);
    re = ok("^n\xc3\xb8" "de.$"); /* UTF-8: one character, not one byte */
    cr_assert(fj_re_match(re, "n\xc3\xb8" "de\xc3\xa5"));
    cr_assert_not(fj_re_match(re, "node\xff"), "invalid UTF-8 is matched as far as it is, not a crash");
    fj_re_free(re);
    re = ok("a{2}{"); /* a brace that starts no count is a literal */
    cr_assert(fj_re_match(re, "aa{"));
    fj_re_free(re);
}

Test(re, what_re2_refuses)
{
    refused("a**", "invalid nested repetition operator");
    refused("a++", "invalid nested repetition operator"); /* PCRE2's possessive: not RE2 */
    refused("a*??", "invalid nested repetition operator");
    refused("x{1001}", "invalid repeat count");
    refused("x{2,99999999999999999999}", "invalid repeat count");
    refused("(a", "missing closing parenthesis");
    refused("\xff", "UTF-8 error");
}

Test(re, pattern_bounds)
{
    char *p = malloc(FJ_RE_MAX_PATTERN + 2);
    memset(p, 'a', FJ_RE_MAX_PATTERN + 1);
    p[FJ_RE_MAX_PATTERN + 1] = '\0';
    refused(p, "pattern longer than 32768 bytes");
    /* PCRE2's compiled form holds 64 KiB (link size 2): about 30,000 bytes of pattern, or an
     * alternation of 3,000 host names; past that it says so */
    p[FJ_RE_MAX_PATTERN] = '\0';
    refused(p, "regular expression is too large");
    p[30000] = '\0';
    fj_re_free(ok(p));
    free(p);
    char deep[2 * 300 + 2];
    memset(deep, '(', 300);
    deep[300] = 'a';
    memset(deep + 301, ')', 300);
    deep[601] = '\0';
    refused(deep, "too deeply nested");
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

Test(re, catastrophic_backtracking_stops)
{
    fj_re *re = ok("^(a+)+$");
    char s[10001];
    memset(s, 'a', 9999);
    s[9999] = '!';
    s[10000] = '\0';
    double t0 = now_s();
    cr_assert_not(fj_re_match(re, s));
    cr_assert(now_s() - t0 < 2, "stopped by the match limit, not after 2^9999 steps");
    cr_assert_not_null(fj_re_failure(re));
    cr_assert(strstr(fj_re_failure(re), "limit"), "%s", fj_re_failure(re));
    /* failed once, it answers at once: a query over many series pays the limit once */
    t0 = now_s();
    for (int i = 0; i < 1000; i++)
        cr_assert_not(fj_re_match(re, s));
    cr_assert(now_s() - t0 < 0.5);
    fj_re_free(re);
    re = ok("^(a|aa)*$"); /* a group repeated once per character: frames, not steps */
    memset(s, 'a', 10000);
    cr_assert_not(fj_re_match(re, s));
    cr_assert_not_null(fj_re_failure(re));
    fj_re_free(re);
    re = ok("^(a+)+$"); /* the same pattern on a short value matches as it should */
    cr_assert(fj_re_match(re, "aaaa"));
    cr_assert_null(fj_re_failure(re));
    fj_re_free(re);
}
