/* test_lp.c — the line-protocol parser's contract: escapes, each value type, timestamps, comments
 * and line endings, error positions and recovery, limits, out-of-memory, helpers, and every line of
 * the ClusterCockpit sample. The InfluxData corpus is checked separately (test_lp_corpus.c). */
#include "alloc.h"
#include "arena.h"
#include "ingest/lp.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static fj_lp_parser *P;
static fj_arena *A;

static void setup(void)
{
    P = fj_lp_parser_create(NULL, 0);
    A = fj_arena_create();
    cr_assert(P && A);
}

static void teardown(void)
{
    fj_alloc_fail_after(-1);
    fj_lp_parser_destroy(P);
    fj_arena_destroy(A);
}

TestSuite(lp, .init = setup, .fini = teardown);

/* The unescaped value of s, NUL-terminated, in the arena. */
static const char *U(fj_lp_str s)
{
    return fj_lp_str_dup(A, &s, NULL);
}

/* Parses body, which must hold exactly one valid line. */
static fj_lp_line one_n(const char *body, size_t len)
{
    fj_lp_line ln;
    fj_err err = {0};
    fj_lp_reset(P, body, len);
    fj_status st = fj_lp_next(P, &ln, &err);
    cr_assert_eq(st, FJ_OK, "'%s' failed: %s: %s", body, err.path, err.message);
    cr_assert(fj_lp_done(P), "'%s': more than one line", body);
    cr_assert_eq(fj_lp_next(P, &(fj_lp_line){0}, NULL), FJ_ENOTFOUND);
    return ln;
}

static fj_lp_line one(const char *body)
{
    return one_n(body, strlen(body));
}

/* Parses body, whose first line must be bad at line:col. */
static void bad_at(const char *body, size_t line, size_t col)
{
    fj_lp_line ln;
    fj_err err = {0};
    fj_lp_reset(P, body, strlen(body));
    fj_status st = fj_lp_next(P, &ln, &err);
    cr_assert_eq(st, FJ_EINVAL, "'%s' parsed but should not", body);
    size_t l, c;
    fj_lp_error_pos(P, &l, &c);
    char want[64];
    snprintf(want, sizeof want, "line %zu, column %zu", line, col);
    cr_expect_str_eq(err.path, want, "'%s': %s", body, err.message);
    cr_expect_eq(l, line);
    cr_expect_eq(c, col);
    cr_expect_str_eq(err.code, "invalid");
    cr_expect_neq(err.message[0], '\0');
}

static void bad(const char *body)
{
    fj_lp_reset(P, body, strlen(body));
    fj_lp_line ln;
    cr_assert_eq(fj_lp_next(P, &ln, NULL), FJ_EINVAL, "'%s' parsed but should not", body);
}

static double fval(const char *body)
{
    fj_lp_line ln = one(body);
    cr_assert_eq(ln.n_fields, 1);
    cr_assert_eq(ln.fields[0].type, FJ_LP_FLOAT, "'%s' is not a float", body);
    return ln.fields[0].v.f;
}

/* --- structure ------------------------------------------------------------------------------ */

Test(lp, clustercockpit_metric)
{
    fj_lp_line ln = one("flops_any,hostname=e1208,type=core,type-id=23 value=1203.3 1740027951");
    cr_assert_str_eq(U(ln.measurement), "flops_any");
    cr_assert_eq(ln.measurement.esc, FJ_LP_RAW);
    cr_assert_eq(ln.n_tags, 3);
    cr_assert_str_eq(U(ln.tags[0].key), "hostname");
    cr_assert_str_eq(U(ln.tags[0].value), "e1208");
    cr_assert_str_eq(U(ln.tags[2].key), "type-id");
    cr_assert_str_eq(U(ln.tags[2].value), "23");
    cr_assert_eq(ln.n_fields, 1);
    cr_assert(fj_lp_str_eq(&ln.fields[0].key, "value"));
    cr_assert_eq(ln.fields[0].type, FJ_LP_FLOAT);
    cr_assert_eq(ln.fields[0].v.f, 1203.3);
    cr_assert(ln.has_time);
    cr_assert_eq(ln.time, 1740027951);
    cr_assert_eq(ln.lineno, 1);
}

Test(lp, zero_copy)
{
    const char *body = "m,k=v f=\"s\" 1";
    fj_lp_line ln = one(body);
    cr_assert_eq(ln.measurement.p, body);
    cr_assert_eq(ln.tags[0].key.p, body + 2);
    cr_assert_eq(ln.tags[0].value.p, body + 4);
    cr_assert_eq(ln.fields[0].key.p, body + 6);
    cr_assert_eq(ln.fields[0].v.s.p, body + 9);
    cr_assert_eq(ln.fields[0].v.s.n, 1);
}

Test(lp, no_tags_many_fields_no_time)
{
    fj_lp_line ln = one("m a=1,b=2i,c=3u,d=t,e=\"x\"");
    cr_assert_eq(ln.n_tags, 0);
    cr_assert_eq(ln.n_fields, 5);
    cr_assert_eq(ln.fields[0].type, FJ_LP_FLOAT);
    cr_assert_eq(ln.fields[1].type, FJ_LP_INT);
    cr_assert_eq(ln.fields[2].type, FJ_LP_UINT);
    cr_assert_eq(ln.fields[3].type, FJ_LP_BOOL);
    cr_assert_eq(ln.fields[4].type, FJ_LP_STRING);
    cr_assert_not(ln.has_time);
}

Test(lp, spaces)
{
    fj_lp_line ln = one("   m,t=1    v=1    123   ");
    cr_assert_str_eq(U(ln.measurement), "m");
    cr_assert_eq(ln.time, 123);
    ln = one("m v=1 ");
    cr_assert_not(ln.has_time);
    bad("m v=1\t123"); /* only spaces separate sections */
    bad("\tm v=1");
    bad("m,t=1 , v=1");
    bad("m, t=1 v=1");
}

Test(lp, missing_parts)
{
    bad("m");
    bad("m ");
    bad("m,t=1");
    bad("m,t=1 ");
    bad("m v");
    bad("m v=");
    bad("m v=1,");
    bad("m v=1,,w=2");
    bad("m =1");
    bad("m,=x v=1");
    bad("m,t= v=1");
    bad("m,t v=1");
    bad(",t=1 v=1");
    bad(" ,t=1 v=1");
    bad("m,t=1,v=1");
    bad("m,t=a=b v=1");
}

Test(lp, duplicate_tags_rejected_duplicate_fields_kept)
{
    bad_at("m,a=1,b=2,a=3 v=1", 1, 11);
    fj_lp_line ln = one("m,a\\ b=1,a\\=b=2 v=1"); /* "a b" and "a=b" differ */
    cr_assert_eq(ln.n_tags, 2);
    bad("m,a\\ b=1,a\\ b=2 v=1");
    ln = one("m v=1,v=2i");
    cr_assert_eq(ln.n_fields, 2);
    cr_assert_eq(ln.fields[0].v.f, 1.0);
    cr_assert_eq(ln.fields[1].v.i, 2);
}

Test(lp, many_tags_use_the_hash_path)
{
    char body[8192];
    size_t n = (size_t)snprintf(body, sizeof body, "m");
    for (int i = 0; i < FJ_LP_MAX_TAGS; i++)
        n += (size_t)snprintf(body + n, sizeof body - n, ",k%d=v", i);
    snprintf(body + n, sizeof body - n, " v=1");
    fj_lp_line ln = one(body);
    cr_assert_eq(ln.n_tags, FJ_LP_MAX_TAGS);
    cr_assert_str_eq(U(ln.tags[FJ_LP_MAX_TAGS - 1].key), "k255");

    /* one more is over the limit */
    n = (size_t)snprintf(body, sizeof body, "m");
    for (int i = 0; i <= FJ_LP_MAX_TAGS; i++)
        n += (size_t)snprintf(body + n, sizeof body - n, ",k%d=v", i);
    snprintf(body + n, sizeof body - n, " v=1");
    bad(body);

    /* a duplicate among 40 tags, one of them escaped so the hash must unescape */
    n = (size_t)snprintf(body, sizeof body, "m,k\\ x=1");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(body + n, sizeof body - n, ",k%d=v", i);
    snprintf(body + n, sizeof body - n, ",k x=2 v=1");
    bad(body);
}

Test(lp, many_fields_grow_the_scratch)
{
    char body[16384];
    size_t n = (size_t)snprintf(body, sizeof body, "m ");
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(body + n, sizeof body - n, "%sf%d=%di", i ? "," : "", i, i);
    fj_lp_line ln = one(body);
    cr_assert_eq(ln.n_fields, 300);
    cr_assert_eq(ln.fields[299].v.i, 299);
    cr_assert_str_eq(U(ln.fields[299].key), "f299");
}

Test(lp, field_limit)
{
    size_t cap = (FJ_LP_MAX_FIELDS + 1) * 12 + 16;
    char *body = malloc(cap);
    size_t n = (size_t)snprintf(body, cap, "m ");
    for (int i = 0; i <= FJ_LP_MAX_FIELDS; i++)
        n += (size_t)snprintf(body + n, cap - n, "%sf%d=1", i ? "," : "", i);
    bad(body);
    free(body);
}

/* --- escapes -------------------------------------------------------------------------------- */

Test(lp, measurement_escapes)
{
    fj_lp_line ln = one("c\\,pu\\ x v=1");
    cr_assert_eq(ln.measurement.esc, FJ_LP_ESC_NAME);
    cr_assert_str_eq(U(ln.measurement), "c,pu x");
    /* `=` and `"` need no escape in a measurement, and `\=` keeps its backslash there */
    cr_assert_str_eq(U(one("a=b\\=c\"d v=1").measurement), "a=b\\=c\"d");
    cr_assert_str_eq(U(one("\\ m v=1").measurement), " m");
    cr_assert_str_eq(U(one("m\\\\,t=1 v=1").measurement), "m\\,t=1"); /* `\\` then `\,` */
}

Test(lp, backslash_runs)
{
    /* Only the last backslash before an escapable byte escapes; the others stay literal. */
    fj_lp_line ln = one("m,host=two\\\\ words v=1");
    cr_assert_str_eq(U(ln.tags[0].value), "two\\ words");
    ln = one("m,host=two\\\\\\ words v=1");
    cr_assert_str_eq(U(ln.tags[0].value), "two\\\\ words");
    ln = one("m,ho\\st=x v=1");
    cr_assert_str_eq(U(ln.tags[0].key), "ho\\st");
    cr_assert_eq(ln.tags[0].key.esc, FJ_LP_RAW); /* nothing escaped: raw is the value */
    /* so a value cannot end in a backslash before the space: this escapes the space */
    bad("m,t=a\\\\ v=1");
    cr_assert_str_eq(U(one("m,t=a\\\\ x v=2").tags[0].value), "a\\ x");
}

Test(lp, key_escapes)
{
    fj_lp_line ln = one("m,\\ e\\ \\=o=w\\,est,re\\=gion=a\\ b va\\,l\\=u\\ e=1");
    cr_assert_str_eq(U(ln.tags[0].key), " e =o");
    cr_assert_str_eq(U(ln.tags[0].value), "w,est");
    cr_assert_str_eq(U(ln.tags[1].key), "re=gion");
    cr_assert_str_eq(U(ln.tags[1].value), "a b");
    cr_assert_str_eq(U(ln.fields[0].key), "va,l=u e");
    cr_assert_eq(ln.fields[0].key.esc, FJ_LP_ESC_KEY);
    cr_assert(fj_lp_str_eq(&ln.fields[0].key, "va,l=u e"));
    cr_assert_not(fj_lp_str_eq(&ln.fields[0].key, "va,l=u"));
    cr_assert_not(fj_lp_str_eq(&ln.fields[0].key, "va\\,l=u e"));
    char buf[32];
    size_t n = fj_lp_unescape(&ln.fields[0].key, buf);
    cr_assert_eq(n, 8);
    cr_assert(memcmp(buf, "va,l=u e", 8) == 0);
}

Test(lp, string_values)
{
    fj_lp_line ln = one("m v=\"how\\\"dy\"");
    cr_assert_eq(ln.fields[0].v.s.esc, FJ_LP_ESC_STRING);
    cr_assert_str_eq(U(ln.fields[0].v.s), "how\"dy");
    cr_assert_str_eq(U(one("m v=\"a\\\\b\"").fields[0].v.s), "a\\b");
    cr_assert_str_eq(U(one("m v=\"\\n\\r\\t\"").fields[0].v.s), "\n\r\t");
}

Test(lp, string_edge_cases)
{
    cr_assert_str_eq(U(one("m v=\"a\\qb\"").fields[0].v.s), "a\\qb"); /* unknown escape stays */
    cr_assert_str_eq(U(one("m v=\"\"").fields[0].v.s), "");
    cr_assert_str_eq(U(one("m v=\"a,b c=d\",w=1").fields[0].v.s), "a,b c=d");
    cr_assert_str_eq(U(one("m v=\"x\x01y\"").fields[0].v.s), "x\x01y"); /* control bytes allowed */
    cr_assert_str_eq(U(one("m v=\"M\xc3\xbcnchen\"").fields[0].v.s), "M\xc3\xbcnchen");
    bad("m v=\"abc");
    bad("m v=\"abc\\\"");
    bad("m v=\"a\"b");
    bad("m v=\"\xff\"");
    /* a NUL byte inside a string is kept, with its length */
    size_t len;
    fj_lp_line ln = one_n("m v=\"a\0b\"", 9);
    const char *s = fj_lp_str_dup(A, &ln.fields[0].v.s, &len);
    cr_assert_eq(len, 3);
    cr_assert(memcmp(s, "a\0b", 4) == 0);
}

Test(lp, multiline_string_counts_lines)
{
    const char *body = "m v=\"a\nb\" 1\nm v=1\nm v=x\n";
    fj_lp_reset(P, body, strlen(body));
    fj_lp_line ln;
    fj_err err = {0};
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_OK);
    cr_assert_str_eq(U(ln.fields[0].v.s), "a\nb");
    cr_assert_eq(ln.lineno, 1);
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_OK);
    cr_assert_eq(ln.lineno, 3);
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_EINVAL);
    cr_assert_str_eq(err.path, "line 4, column 5");
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_ENOTFOUND);
}

/* --- types ---------------------------------------------------------------------------------- */

Test(lp, floats)
{
    cr_assert_eq(fval("m v=1"), 1.0);
    cr_assert_eq(fval("m v=-1"), -1.0);
    cr_assert_eq(fval("m v=1."), 1.0);
    cr_assert_eq(fval("m v=.5"), 0.5);
    cr_assert_eq(fval("m v=-.5"), -0.5);
    cr_assert_eq(fval("m v=1e3"), 1000.0);
    cr_assert_eq(fval("m v=1E-3"), 0.001);
    cr_assert_eq(fval("m v=1.5e+3"), 1500.0);
    cr_assert_eq(fval("m v=1.e2"), 100.0);
    cr_assert_eq(fval("m v=007.50"), 7.5);
    cr_assert_eq(fval("m v=0.1"), 0.1);
    cr_assert_eq(fval("m v=13.436"), 13.436);
    cr_assert_eq(fval("m v=1.7976931348623157e308"), 1.7976931348623157e308);
    cr_assert_eq(fval("m v=4.9406564584124654e-324"), 4.9406564584124654e-324);
    cr_assert_eq(fval("m v=1e-400"), 0.0); /* underflow is zero, as in Go */
    cr_assert_eq(fval("m v=123456789012345678901234567890"), 123456789012345678901234567890.0);
    cr_assert_eq(fval("m v=0.000000000000000000000000000001"), 1e-30);
    cr_assert_eq(fval("m v=9007199254740993"), 9007199254740992.0); /* rounds to even */
    double z = fval("m v=-0");
    cr_assert(z == 0.0 && signbit(z));
    cr_assert_eq(fval("m v=0e999999999999"), 0.0);
}

Test(lp, bad_floats)
{
    const char *b[] = {"m v=-",     "m v=.",     "m v=-.",    "m v=1e",   "m v=1e+",  "m v=.e5",
                       "m v=1.5x",  "m v=1..2",  "m v=1e5.5", "m v=--1",  "m v=+1",   "m v=1_000",
                       "m v=0x1p3", "m v=NaN",   "m v=nan",   "m v=Inf",  "m v=-Inf", "m v=inf",
                       "m v=1e309", "m v=-1e309", "m v=1.5.", "m v=1-2",  "m v=1e5e5"};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        bad(b[i]);
}

Test(lp, integers)
{
    fj_lp_line ln = one("m a=0i,b=-0i,c=9223372036854775807i,d=-9223372036854775808i,e=007i");
    cr_assert_eq(ln.fields[0].v.i, 0);
    cr_assert_eq(ln.fields[1].v.i, 0);
    cr_assert_eq(ln.fields[2].v.i, INT64_MAX);
    cr_assert_eq(ln.fields[3].v.i, INT64_MIN);
    cr_assert_eq(ln.fields[4].v.i, 7);
    bad("m v=9223372036854775808i");
    bad("m v=-9223372036854775809i");
    bad("m v=99999999999999999999999i");
    bad("m v=1.0i");
    bad("m v=1e3i");
    bad("m v=-i");
    bad("m v=1ii");
    bad("m v=1i1");
}

Test(lp, unsigned_integers)
{
    fj_lp_line ln = one("m a=0u,b=18446744073709551615u");
    cr_assert_eq(ln.fields[0].type, FJ_LP_UINT);
    cr_assert_eq(ln.fields[0].v.u, 0);
    cr_assert_eq(ln.fields[1].v.u, UINT64_MAX);
    bad("m v=18446744073709551616u");
    bad("m v=-1u");
    bad("m v=-0u");
    bad("m v=1.5u");
    bad("m v=1iu");
}

Test(lp, booleans)
{
    const char *t[] = {"t", "T", "true", "True", "TRUE"}, *f[] = {"f", "F", "false", "False", "FALSE"};
    char body[32];
    for (int i = 0; i < 5; i++) {
        snprintf(body, sizeof body, "m v=%s", t[i]);
        fj_lp_line ln = one(body);
        cr_assert_eq(ln.fields[0].type, FJ_LP_BOOL);
        cr_assert(ln.fields[0].v.b, "%s", body);
        snprintf(body, sizeof body, "m v=%s 5", f[i]);
        ln = one(body);
        cr_assert_eq(ln.fields[0].type, FJ_LP_BOOL);
        cr_assert_not(ln.fields[0].v.b, "%s", body);
        cr_assert_eq(ln.time, 5);
    }
    const char *b[] = {"m v=tRUE", "m v=tru", "m v=truee", "m v=yes", "m v=FaLsE", "m v=t1", "m v=fals"};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        bad(b[i]);
}

Test(lp, unrecognized_value)
{
    bad_at("m v=x", 1, 5);
    bad("m v='a'");
    bad("m v={\"jobId\": 69}"); /* ClusterCockpit's event example: unquoted JSON */
    bad("rapl,hostname=e1208,type=socket,type-id=2,method=GET control=intel.pkg.energy_status 1740027951");
}

Test(lp, clustercockpit_log_example)
{
    fj_lp_line ln = one("ccb,hostname=server01,type=node,type-id=1,loglevel=info log=\"component: archiver "
                        "cluster: alex jobId: 232383 - archiving finished\" 1740027951");
    cr_assert_eq(ln.fields[0].type, FJ_LP_STRING);
    cr_assert(fj_lp_str_eq(&ln.fields[0].key, "log"));
    cr_assert_eq(ln.time, 1740027951);
}

/* --- timestamps ----------------------------------------------------------------------------- */

Test(lp, timestamps)
{
    cr_assert_eq(one("m v=1 0").time, 0);
    cr_assert_eq(one("m v=1 -1").time, -1);
    cr_assert_eq(one("m v=1 9223372036854775807").time, INT64_MAX);
    cr_assert_eq(one("m v=1 -9223372036854775808").time, INT64_MIN);
    cr_assert_eq(one("m v=1 0001").time, 1);
    bad("m v=1 9223372036854775808");
    bad("m v=1 -9223372036854775809");
    bad("m v=1 -");
    bad("m v=1 1-2");
    bad("m v=1 --1");
    bad("m v=1 +1");
    bad("m v=1 1.5");
    bad("m v=1 1e9");
    bad("m v=1 12a");
    bad_at("m v=1 123 456", 1, 11);
    bad("m v=1 # comment");
}

Test(lp, precision)
{
    int64_t m = 0;
    cr_assert_eq(fj_lp_precision_parse("ns", &m), FJ_OK);
    cr_assert_eq(m, 1);
    cr_assert_eq(fj_lp_precision_parse("n", &m), FJ_OK);
    cr_assert_eq(m, 1);
    cr_assert_eq(fj_lp_precision_parse(NULL, &m), FJ_OK);
    cr_assert_eq(m, 1);
    cr_assert_eq(fj_lp_precision_parse("", &m), FJ_OK);
    cr_assert_eq(m, 1);
    const char *us[] = {"us", "u", "\xc2\xb5s", "\xce\xbcs"};
    for (int i = 0; i < 4; i++) {
        m = 0;
        cr_assert_eq(fj_lp_precision_parse(us[i], &m), FJ_OK, "%s", us[i]);
        cr_assert_eq(m, 1000);
    }
    cr_assert_eq(fj_lp_precision_parse("ms", &m), FJ_OK);
    cr_assert_eq(m, 1000000);
    cr_assert_eq(fj_lp_precision_parse("s", &m), FJ_OK);
    cr_assert_eq(m, 1000000000);
    cr_assert_eq(fj_lp_precision_parse("m", &m), FJ_OK);
    cr_assert_eq(m, INT64_C(60000000000));
    cr_assert_eq(fj_lp_precision_parse("h", &m), FJ_OK);
    cr_assert_eq(m, INT64_C(3600000000000));
    const char *b[] = {"sec", "S", "MS", "1s", "1ns", "d", "minutes", " s", "s "};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        cr_assert_eq(fj_lp_precision_parse(b[i], &m), FJ_EINVAL, "%s", b[i]);
}

Test(lp, infer_unit)
{
    cr_assert_eq(fj_lp_infer_unit(1740027951), 1000000000);        /* seconds, 2025 */
    cr_assert_eq(fj_lp_infer_unit(0), 1000000000);
    cr_assert_eq(fj_lp_infer_unit(9223372036), 1000000000);        /* 2262-04-11 in s */
    cr_assert_eq(fj_lp_infer_unit(-9223372036), 1000000000);
    cr_assert_eq(fj_lp_infer_unit(9223372037), 1000000);
    cr_assert_eq(fj_lp_infer_unit(1740027951123), 1000000);        /* ms */
    cr_assert_eq(fj_lp_infer_unit(9223372036854), 1000000);
    cr_assert_eq(fj_lp_infer_unit(9223372036855), 1000);
    cr_assert_eq(fj_lp_infer_unit(1740027951123456), 1000);        /* us */
    cr_assert_eq(fj_lp_infer_unit(9223372036854775), 1000);
    cr_assert_eq(fj_lp_infer_unit(9223372036854776), 1);
    cr_assert_eq(fj_lp_infer_unit(1740027951123456789), 1);        /* ns */
    cr_assert_eq(fj_lp_infer_unit(INT64_MIN), 1);
}

Test(lp, time_to_ns)
{
    int64_t ns = 0;
    cr_assert_eq(fj_lp_time_to_ns(1740027951, 1000000000, &ns), FJ_OK);
    cr_assert_eq(ns, INT64_C(1740027951000000000));
    cr_assert_eq(fj_lp_time_to_ns(-5, 1000, &ns), FJ_OK);
    cr_assert_eq(ns, -5000);
    cr_assert_eq(fj_lp_time_to_ns(9223372037, 1000000000, &ns), FJ_EINVAL);
    cr_assert_eq(fj_lp_time_to_ns(INT64_MIN, 1, &ns), FJ_OK);
    cr_assert_eq(ns, INT64_MIN);
}

/* --- lines, comments, line endings ---------------------------------------------------------- */

Test(lp, comments_and_blank_lines)
{
    const char *body = "# a comment\n\n   \n  # indented comment \xc3\xa9\r\nm v=1\n#\n\nm v=2\n# end";
    fj_lp_reset(P, body, strlen(body));
    fj_lp_line ln;
    cr_assert_not(fj_lp_done(P));
    cr_assert_eq(fj_lp_next(P, &ln, NULL), FJ_OK);
    cr_assert_eq(ln.lineno, 5);
    cr_assert_eq(ln.fields[0].v.f, 1.0);
    cr_assert_eq(fj_lp_next(P, &ln, NULL), FJ_OK);
    cr_assert_eq(ln.lineno, 8);
    cr_assert_eq(ln.fields[0].v.f, 2.0);
    cr_assert(fj_lp_done(P));
    cr_assert_eq(fj_lp_next(P, &ln, NULL), FJ_ENOTFOUND);
}

Test(lp, empty_bodies)
{
    const char *b[] = {"", "\n", "\r\n", "   ", "# only\n# comments", "\n\n\r\n  \n", "#"};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        fj_lp_reset(P, b[i], strlen(b[i]));
        cr_assert(fj_lp_done(P), "'%s'", b[i]);
        cr_assert_eq(fj_lp_next(P, &(fj_lp_line){0}, NULL), FJ_ENOTFOUND);
    }
    fj_lp_reset(P, NULL, 0);
    cr_assert(fj_lp_done(P));
}

Test(lp, bad_comments)
{
    bad_at("#\tcomment with a tab\nm v=1", 1, 1);
    bad("# bell \x07");
    bad("# del \x7f");
}

Test(lp, crlf)
{
    const char *body = "m v=1\r\nm v=2 2\r\nm,t=x v=\"s\"\r\n\r\nm v=3\r";
    fj_lp_reset(P, body, strlen(body));
    fj_lp_line ln;
    for (int i = 0; i < 4; i++)
        cr_assert_eq(fj_lp_next(P, &ln, NULL), FJ_OK, "line %d", i);
    cr_assert_eq(ln.lineno, 5);
    cr_assert_eq(ln.fields[0].v.f, 3.0);
    cr_assert(fj_lp_done(P));
}

Test(lp, lone_cr_is_an_error)
{
    bad("m v=1\rm v=2");
    bad("\rm v=1");
    bad("m v=1 5\rx");
    bad("m,t=a\r v=1");
    /* but LF alone, CR LF, and a CR at the very end are line ends */
    one("m v=1 5\r");
}

Test(lp, control_and_non_ascii_bytes)
{
    bad_at("x\x01y v=1", 1, 2);
    bad("m,x\x01y=v v=1");
    bad("m,k=x\x01y v=1");
    bad("m x\x01y=1");
    bad("m v=1\x01");
    bad("m\xc2\xa0v=1"); /* NO-BREAK SPACE is not a separator */
    fj_lp_line ln = one("temp\xc3\xa9,lieu=M\xc3\xbcnchen \xe2\x82\xac=1");
    cr_assert_str_eq(U(ln.measurement), "temp\xc3\xa9");
    cr_assert_str_eq(U(ln.tags[0].value), "M\xc3\xbcnchen");
    cr_assert_str_eq(U(ln.fields[0].key), "\xe2\x82\xac");
    /* invalid UTF-8 anywhere in a token */
    bad_at("bad\xff v=1", 1, 1);
    bad_at("m,bad\xff=foo v=1", 1, 3);
    bad_at("m,foo=bad\xff v=1", 1, 7);
    bad_at("m bad\xff=1", 1, 3);
    bad_at("m f=\"bad\xff\"", 1, 6);
    bad("m,k=\xc0\xaf v=1");          /* overlong */
    bad("m,k=\xed\xa0\x80 v=1");      /* surrogate */
    bad("m,k=\xf4\x90\x80\x80 v=1");  /* above U+10FFFF */
    bad("m,k=\xe2\x82 v=1");          /* truncated */
    one("m,k=\xf0\x9f\x98\x80 v=1");  /* an emoji is fine */
    /* NUL bytes outside strings are control bytes */
    fj_lp_reset(P, "m v=1\0", 6);
    cr_assert_eq(fj_lp_next(P, &(fj_lp_line){0}, NULL), FJ_EINVAL);
}

/* --- errors: position and recovery ---------------------------------------------------------- */

Test(lp, error_positions)
{
    bad_at("cpu,host=serverA,region value=1i", 1, 24);
    bad_at("m v=1,\n", 1, 7);
    bad_at("  m  v=1 x", 1, 10);   /* columns count the leading spaces */
    bad_at("m v=1,w=2,x=tru", 1, 13);
    bad_at("m,a=", 1, 5);
    bad_at("m, x=1", 1, 3);
    bad_at("m v=\"abc", 1, 5);
}

Test(lp, recovery_after_bad_lines)
{
    const char *body = "good v=1 1\n"
                       "bad v=oops 2\n"
                       "good v=2 3\n"
                       "bad,t v=1\n"
                       "\n"
                       "# comment\n"
                       "good v=3 4\n"
                       "bad v=\"unterminated\n"
                       "still inside v=1\n";
    fj_lp_reset(P, body, strlen(body));
    fj_lp_line ln;
    fj_err err = {0};
    size_t l, c;
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_OK);
    cr_assert_eq(ln.time, 1);
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_EINVAL);
    fj_lp_error_pos(P, &l, &c);
    cr_assert_eq(l, 2);
    cr_assert_eq(c, 7);
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_OK);
    cr_assert_eq(ln.time, 3);
    cr_assert_eq(ln.lineno, 3);
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_EINVAL);
    cr_assert_str_eq(err.path, "line 4, column 6");
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_OK);
    cr_assert_eq(ln.time, 4);
    cr_assert_eq(ln.lineno, 7);
    /* an unterminated string takes the rest of the body with it */
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_EINVAL);
    cr_assert_str_eq(err.path, "line 8, column 7");
    cr_assert(fj_lp_done(P));
}

Test(lp, out_of_memory_skips_the_line_and_goes_on)
{
    char body[4096];
    size_t n = (size_t)snprintf(body, sizeof body, "big");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(body + n, sizeof body - n, ",k%d=v", i);
    snprintf(body + n, sizeof body - n, " v=1\nsmall,t=1 v=2\n");
    fj_lp_reset(P, body, strlen(body));
    fj_lp_line ln;
    fj_err err = {0};
    fj_alloc_fail_after(0);
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_ENOMEM);
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_OK); /* needs no allocation */
    cr_assert_eq(ln.lineno, 2);
    fj_alloc_fail_after(-1);
    fj_lp_reset(P, body, strlen(body));
    cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_OK);
    cr_assert_eq(ln.n_tags, 40);
}

Test(lp, create_fails_cleanly_without_memory)
{
    for (long k = 0; k < 3; k++) {
        fj_alloc_fail_after(k);
        fj_lp_parser *q = fj_lp_parser_create("m v=1", 5);
        fj_alloc_fail_after(-1);
        cr_assert_null(q, "allocation %ld", k); /* the parser, its tags, its fields */
    }
    fj_lp_parser *q = fj_lp_parser_create("m v=1", 5);
    cr_assert_not_null(q);
    fj_lp_parser_destroy(q);
    fj_lp_parser_destroy(NULL);
}

Test(lp, long_float_tokens_use_the_slow_path)
{
    char body[2048];
    size_t n = (size_t)snprintf(body, sizeof body, "m v=0.");
    for (int i = 0; i < 1000; i++)
        body[n++] = '3';
    body[n] = '\0'; /* token at the very end of the body */
    cr_assert_eq(fval(body), 0.33333333333333333);
    strcpy(body + n, " 7");
    cr_assert_eq(fval(body), 0.33333333333333333);
}

/* --- scanning blocks ------------------------------------------------------------------------- */

/* Appends a readable account of everything the parser reports for body to out; line numbers are
 * given relative to shift. */
static void describe(const char *body, size_t len, size_t shift, char *out, size_t cap)
{
    fj_lp_parser *q = fj_lp_parser_create(body, len);
    cr_assert_not_null(q);
    size_t o = 0;
    fj_lp_line ln;
    fj_err err = {0};
    fj_status st;
#define OUT(...) (o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, __VA_ARGS__))
    while ((st = fj_lp_next(q, &ln, &err)) != FJ_ENOTFOUND) {
        if (st != FJ_OK) {
            size_t l, c;
            fj_lp_error_pos(q, &l, &c);
            OUT("ERR %zu:%zu %s\n", l - shift, c, err.message);
            continue;
        }
        OUT("%zu [%s]", ln.lineno - shift, U(ln.measurement));
        for (size_t i = 0; i < ln.n_tags; i++)
            OUT(" [%s]=[%s]", U(ln.tags[i].key), U(ln.tags[i].value));
        for (size_t i = 0; i < ln.n_fields; i++) {
            const fj_lp_field *f = &ln.fields[i];
            OUT(" [%s]:%d:", U(f->key), (int)f->type);
            switch (f->type) {
            case FJ_LP_FLOAT: OUT("%.17g", f->v.f); break;
            case FJ_LP_INT: OUT("%lld", (long long)f->v.i); break;
            case FJ_LP_UINT: OUT("%llu", (unsigned long long)f->v.u); break;
            case FJ_LP_BOOL: OUT("%d", f->v.b); break;
            case FJ_LP_STRING: OUT("[%s]", U(f->v.s)); break;
            }
        }
        OUT(ln.has_time ? " @%lld\n" : "\n", (long long)ln.time);
    }
#undef OUT
    cr_assert_lt(o, cap);
    fj_lp_parser_destroy(q);
}

/* The parser finds token ends with a bitmap per 64-byte block of the body. Shifting the same lines
 * through every position of a block (by a comment line in front) must not change any result. */
Test(lp, results_do_not_depend_on_block_positions)
{
    static const char lines[] =
        "cpu_load,cluster=fritz,hostname=f0101,type=node,type-id=0 value=13.436 1700000040\n"
        "a\\ long\\,measurement\\ name\\ that\\ crosses\\ blocks,tag\\ key\\=with\\ escapes=and\\,a\\ "
        "value\\=too,\\\\\\ x=M\xc3\xbcnchen\xe2\x82\xac\xf0\x9f\x98\x80 f\\,k=\"str \\\"q\\\" \\\\ \\n\nline\","
        "g=-12.5e-3,h=42i,i=7u,j=TRUE 1234567890123456789\n"
        "m,k=vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv\\ w f=1 5\n"
        "bad,tag=\xff\xfe v=1\n"
        "m,t=1,t=2 v=1\n"
        "m v=1 2 3\n"
        "   m   v=0.000000000000000000000000000001   \r\n"
        "m=eq\\=,t\\ t=\\=x\\\\y v=\"\" -5\n"
        "# trailing comment\n"
        "m v=\"unterminated...";
    static char base[1 << 14], shifted[1 << 14];
    describe(lines, sizeof lines - 1, 0, base, sizeof base);
    cr_assert(strstr(base, "[a long,measurement name that crosses blocks]") != NULL, "%s", base);
    cr_assert(strstr(base, "[\\\\ x]=[M\xc3\xbcnchen") != NULL, "%s", base);
    cr_assert(strstr(base, "ERR 5:9 invalid UTF-8") != NULL, "%s", base);
    cr_assert(strstr(base, "9 [m=eq\\=] [t t]=[=x\\\\y] [v]:4:[] @-5") != NULL, "%s", base);
    char body[1 << 12];
    for (size_t k = 0; k < 130; k++) {
        body[0] = '#';
        memset(body + 1, 'x', k);
        body[k + 1] = '\n';
        memcpy(body + k + 2, lines, sizeof lines - 1);
        describe(body, k + 2 + sizeof lines - 1, 1, shifted, sizeof shifted);
        cr_assert_str_eq(shifted, base, "shift %zu", k);
    }
}

/* --- the ClusterCockpit sample -------------------------------------------------------------- */

Test(lp, clustercockpit_sample_all_lines)
{
    const char *path = FJ_SHARED_DIR "/data/lineproto/cc-synthetic-fritz-2nodes-1interval.lp";
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    static char body[1 << 20];
    size_t len = fread(body, 1, sizeof body, f);
    fclose(f);
    cr_assert_gt(len, 0);
    fj_lp_reset(P, body, len);
    fj_lp_line ln;
    fj_err err = {0};
    size_t lines = 0;
    while (!fj_lp_done(P)) {
        cr_assert_eq(fj_lp_next(P, &ln, &err), FJ_OK, "%s: %s", err.path, err.message);
        lines++;
        cr_assert_eq(ln.lineno, lines);
        cr_assert_eq(ln.n_tags, 4);
        cr_assert(fj_lp_str_eq(&ln.tags[0].key, "cluster"));
        cr_assert(fj_lp_str_eq(&ln.tags[0].value, "fritz"));
        cr_assert(fj_lp_str_eq(&ln.tags[1].key, "hostname"));
        cr_assert(fj_lp_str_eq(&ln.tags[2].key, "type"));
        cr_assert(fj_lp_str_eq(&ln.tags[3].key, "type-id"));
        cr_assert_eq(ln.n_fields, 1);
        cr_assert(fj_lp_str_eq(&ln.fields[0].key, "value"));
        cr_assert_eq(ln.fields[0].type, FJ_LP_FLOAT);
        cr_assert(isfinite(ln.fields[0].v.f));
        cr_assert(ln.has_time);
        cr_assert_eq(ln.time, 1700000040);
        cr_assert_eq(fj_lp_infer_unit(ln.time), 1000000000);
    }
    cr_assert_eq(lines, 1038);
}
