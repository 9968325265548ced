/* test_json.c — the JSON parser's contract: exact integers, strict grammar, UTF-8 validation,
 * error positions, concatenated documents, limits, and out-of-memory behaviour. */
#include "alloc.h"
#include "arena.h"
#include "json.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static fj_arena *A;

static void setup(void)
{
    A = fj_arena_create();
    cr_assert_not_null(A);
}

static void teardown(void)
{
    fj_alloc_fail_after(-1);
    fj_arena_destroy(A);
}

TestSuite(json, .init = setup, .fini = teardown);

/* Parses the whole of s[0..len) and insists it is one valid document. */
static fj_json *ok_n(const char *s, size_t len)
{
    fj_json *v = NULL;
    fj_err err = {0};
    size_t end = (size_t)-1;
    fj_status st = fj_json_parse(A, s, len, &end, &v, &err);
    cr_assert_eq(st, FJ_OK, "parse of '%.*s' failed: %s at %s", (int)(len > 80 ? 80 : len), s,
                 err.message, err.path);
    cr_assert_not_null(v);
    cr_assert_leq(end, len);
    return v;
}

static fj_json *ok(const char *s)
{
    return ok_n(s, strlen(s));
}

/* Insists s[0..len) fails with FJ_EINVAL, message msg at path, leaving *out and *end alone. */
static void bad_n(const char *s, size_t len, const char *msg, const char *path)
{
    fj_json sentinel_node;
    fj_json *v = &sentinel_node;
    size_t end = 12345;
    fj_err err = {0};
    fj_status st = fj_json_parse(A, s, len, &end, &v, &err);
    cr_assert_eq(st, FJ_EINVAL, "'%.*s' parsed but should fail with '%s'", (int)(len > 80 ? 80 : len), s, msg);
    cr_expect_str_eq(err.message, msg, "'%.*s': message", (int)(len > 80 ? 80 : len), s);
    if (path)
        cr_expect_str_eq(err.path, path, "'%.*s': path", (int)(len > 80 ? 80 : len), s);
    cr_expect_str_eq(err.code, "invalid");
    cr_expect_eq(v, &sentinel_node, "*out touched on error");
    cr_expect_eq(end, 12345, "*end touched on error");
}

static void bad(const char *s, const char *msg, const char *path)
{
    bad_n(s, strlen(s), msg, path);
}

/* ---- types -------------------------------------------------------------------------------- */

Test(json, every_type)
{
    cr_assert_eq(ok("null")->type, FJ_JSON_NULL);
    cr_assert_eq(ok("true")->type, FJ_JSON_TRUE);
    cr_assert_eq(ok("false")->type, FJ_JSON_FALSE);

    fj_json *v = ok("42");
    cr_assert_eq(v->type, FJ_JSON_UINT);
    cr_assert_eq(v->v.u, 42);

    v = ok("-42");
    cr_assert_eq(v->type, FJ_JSON_INT);
    cr_assert_eq(v->v.i, -42);

    v = ok("0");
    cr_assert_eq(v->type, FJ_JSON_UINT);
    cr_assert_eq(v->v.u, 0);

    v = ok("1.5");
    cr_assert_eq(v->type, FJ_JSON_REAL);
    cr_assert_float_eq(v->v.d, 1.5, 0);

    v = ok("\"hi\"");
    cr_assert_eq(v->type, FJ_JSON_STRING);
    cr_assert_eq(v->len, 2);
    cr_assert_str_eq(v->v.s, "hi");

    v = ok("[1, \"two\", null]");
    cr_assert_eq(v->type, FJ_JSON_ARRAY);
    cr_assert_eq(v->len, 3);
    cr_assert_eq(v->v.items[0].type, FJ_JSON_UINT);
    cr_assert_eq(v->v.items[1].type, FJ_JSON_STRING);
    cr_assert_str_eq(v->v.items[1].v.s, "two");
    cr_assert_eq(v->v.items[2].type, FJ_JSON_NULL);

    v = ok("{\"a\": 1, \"b\": [true], \"c\": {\"d\": -1.25e2}}");
    cr_assert_eq(v->type, FJ_JSON_OBJECT);
    cr_assert_eq(v->len, 3);
    cr_assert_str_eq(v->v.members[0].key, "a");
    cr_assert_eq(v->v.members[0].key_len, 1);
    cr_assert_str_eq(v->v.members[2].key, "c");
    const fj_json *d = fj_json_get(fj_json_get(v, "c"), "d");
    cr_assert_not_null(d);
    cr_assert_eq(d->type, FJ_JSON_REAL);
    cr_assert_float_eq(d->v.d, -125.0, 0);
    cr_assert_eq(fj_json_get(v, "b")->v.items[0].type, FJ_JSON_TRUE);
}

Test(json, type_names)
{
    cr_assert_str_eq(fj_json_type_name(FJ_JSON_NULL), "null");
    cr_assert_str_eq(fj_json_type_name(FJ_JSON_FALSE), "boolean");
    cr_assert_str_eq(fj_json_type_name(FJ_JSON_TRUE), "boolean");
    cr_assert_str_eq(fj_json_type_name(FJ_JSON_INT), "integer");
    cr_assert_str_eq(fj_json_type_name(FJ_JSON_UINT), "integer");
    cr_assert_str_eq(fj_json_type_name(FJ_JSON_REAL), "number");
    cr_assert_str_eq(fj_json_type_name(FJ_JSON_STRING), "string");
    cr_assert_str_eq(fj_json_type_name(FJ_JSON_ARRAY), "array");
    cr_assert_str_eq(fj_json_type_name(FJ_JSON_OBJECT), "object");
}

/* ---- numbers ------------------------------------------------------------------------------ */

Test(json, uint64_max_exact)
{
    fj_json *v = ok("18446744073709551615");
    cr_assert_eq(v->type, FJ_JSON_UINT);
    cr_assert_eq(v->v.u, UINT64_MAX);
    v = ok("18446744073709551614");
    cr_assert_eq(v->v.u, UINT64_MAX - 1);
    /* Above 2^53, where a double would round. */
    v = ok("9007199254740993");
    cr_assert_eq(v->v.u, 9007199254740993ull);
}

Test(json, uint64_overflow_rejected)
{
    bad("18446744073709551616", "number out of range", "line 1, column 1");
    bad("18446744073709551620", "number out of range", NULL);
    bad("99999999999999999999", "number out of range", NULL);
    bad("184467440737095516150", "number out of range", NULL);
    bad("[1, 100000000000000000000000]", "number out of range", "line 1, column 5");
}

Test(json, int64_min_exact)
{
    fj_json *v = ok("-9223372036854775808");
    cr_assert_eq(v->type, FJ_JSON_INT);
    cr_assert_eq(v->v.i, INT64_MIN);
    v = ok("-9223372036854775807");
    cr_assert_eq(v->v.i, -INT64_MAX);
    v = ok("9223372036854775808"); /* positive 2^63 fits UINT */
    cr_assert_eq(v->type, FJ_JSON_UINT);
    cr_assert_eq(v->v.u, 9223372036854775808ull);
}

Test(json, below_int64_min_rejected)
{
    bad("-9223372036854775809", "number out of range", "line 1, column 1");
    bad("-18446744073709551615", "number out of range", NULL);
    bad("-18446744073709551616", "number out of range", NULL);
}

Test(json, negative_zero_is_uint_zero)
{
    fj_json *v = ok("-0");
    cr_assert_eq(v->type, FJ_JSON_UINT);
    cr_assert_eq(v->v.u, 0);
    v = ok("-0.0");
    cr_assert_eq(v->type, FJ_JSON_REAL);
    cr_assert(v->v.d == 0.0 && signbit(v->v.d));
}

Test(json, reals)
{
    struct { const char *in; double want; } cases[] = {
        {"0.5", 0.5}, {"-2.5e-3", -2.5e-3}, {"1E2", 100.0}, {"1e+2", 100.0}, {"1e-2", 0.01},
        {"0e0", 0.0}, {"123.456", 123.456}, {"1.7976931348623157e308", 1.7976931348623157e308},
        {"18446744073709551616.0", 18446744073709551616.0}, {"1e-400", 0.0},
        {"99999999999999999999e0", 1e20},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fj_json *v = ok(cases[i].in);
        cr_assert_eq(v->type, FJ_JSON_REAL, "%s", cases[i].in);
        cr_assert_eq(v->v.d, cases[i].want, "%s", cases[i].in);
    }
}

Test(json, reals_match_strtod)
{
    /* The parser has a fast path for short mantissas; it must agree with strtod bit for bit. */
    srand(12345);
    char buf[64];
    for (int i = 0; i < 200000; i++) {
        /* nd digits, a '.' after the first `point` of them when 0 < point < nd. */
        int nd = 1 + rand() % 19, point = rand() % (nd + 1), k = 0;
        int int_digits = point > 0 && point < nd ? point : nd;
        if (rand() % 2)
            buf[k++] = '-';
        for (int j = 0; j < nd; j++) {
            if (j == point && j > 0)
                buf[k++] = '.';
            buf[k++] = (char)('0' + (j == 0 && int_digits > 1 ? 1 + rand() % 9 : rand() % 10));
        }
        if (point == 0 || point == nd || rand() % 2)
            k += sprintf(buf + k, "e%d", rand() % 61 - 30);
        buf[k] = '\0';
        fj_json *v = ok(buf);
        double want = strtod(buf, NULL);
        cr_assert_eq(v->type, FJ_JSON_REAL, "%s", buf);
        cr_assert(memcmp(&v->v.d, &want, sizeof want) == 0, "%s: %.17g != %.17g", buf, v->v.d, want);
        fj_arena_destroy(A);
        A = fj_arena_create();
    }
}

Test(json, real_overflow_rejected)
{
    bad("1e400", "number out of range", "line 1, column 1");
    bad("-1e400", "number out of range", NULL);
    bad("1.8e308", "number out of range", NULL);
    bad("{\"x\": 1e99999}", "number out of range", "line 1, column 7");
}

Test(json, long_real_literal)
{
    /* Longer than the on-stack copy handed to strtod. */
    char buf[400] = "0.";
    memset(buf + 2, '0', 300);
    strcpy(buf + 302, "15");
    fj_json *v = ok(buf);
    cr_assert_eq(v->type, FJ_JSON_REAL);
    cr_assert_eq(v->v.d, 1.5e-301);
}

Test(json, bad_numbers)
{
    bad("01", "leading zero in number", "line 1, column 1");
    bad("-01", "leading zero in number", "line 1, column 2");
    bad("00", "leading zero in number", NULL);
    bad("+1", "unexpected '+'", "line 1, column 1");
    bad(".5", "unexpected '.'", "line 1, column 1");
    bad("1.", "unexpected end of input", "line 1, column 3");
    bad("1.]", "expected digit after '.'", "line 1, column 3");
    bad("1.e5", "expected digit after '.'", "line 1, column 3");
    bad("1e", "unexpected end of input", NULL);
    bad("1e+", "unexpected end of input", NULL);
    bad("1e+x", "expected digit in exponent", "line 1, column 4");
    bad("[1e]", "expected digit in exponent", "line 1, column 4");
    bad("-", "unexpected end of input", NULL);
    bad("- 1", "expected digit after '-'", "line 1, column 2");
    bad("-a", "expected digit after '-'", NULL);
    bad("NaN", "unexpected 'N'", NULL);
    bad("Infinity", "unexpected 'I'", NULL);
    bad("-Infinity", "expected digit after '-'", NULL);
    bad("[nan]", "invalid literal", "line 1, column 3");
    bad("1x", "invalid number", "line 1, column 2");
    bad("0x10", "invalid number", "line 1, column 2");
    bad("1.5.2", "invalid number", "line 1, column 4");
    bad("1-2", "invalid number", "line 1, column 2");
    bad("[1 2]", "expected ',' or ']'", "line 1, column 4");
}

/* ---- literals ----------------------------------------------------------------------------- */

Test(json, bad_literals)
{
    bad("tru", "unexpected end of input", "line 1, column 4");
    bad("trUe", "invalid literal", "line 1, column 3");
    bad("truex", "invalid literal", "line 1, column 5");
    bad("True", "unexpected 'T'", NULL);
    bad("nul", "unexpected end of input", NULL);
    bad("[fals]", "invalid literal", "line 1, column 6");
    bad("undefined", "unexpected 'u'", NULL);
}

/* ---- strings ------------------------------------------------------------------------------ */

Test(json, simple_escapes)
{
    fj_json *v = ok("\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"");
    cr_assert_eq(v->type, FJ_JSON_STRING);
    cr_assert_str_eq(v->v.s, "a\"b\\c/d\be\ff\ng\rh\ti");
    cr_assert_eq(v->len, strlen("a\"b\\c/d\be\ff\ng\rh\ti"));
}

Test(json, unicode_escapes)
{
    fj_json *v = ok("\"\\u0041\\u00e9\\u20AC\\uFFFF\"");
    cr_assert_str_eq(v->v.s, "A\xC3\xA9\xE2\x82\xAC\xEF\xBF\xBF");
    cr_assert_eq(v->len, 1 + 2 + 3 + 3);
    v = ok("\"\\u007f\\u0080\\u07FF\\u0800\"");
    cr_assert_str_eq(v->v.s, "\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80");
}

Test(json, surrogate_pairs)
{
    fj_json *v = ok("\"\\uD83D\\uDE00\"");
    cr_assert_str_eq(v->v.s, "\xF0\x9F\x98\x80");
    cr_assert_eq(v->len, 4);
    v = ok("\"x\\ud800\\udc00y\\uDBFF\\uDFFFz\"");
    cr_assert_str_eq(v->v.s, "x\xF0\x90\x80\x80y\xF4\x8F\xBF\xBFz");
}

Test(json, escaped_nul_kept)
{
    fj_json *v = ok("\"a\\u0000b\"");
    cr_assert_eq(v->len, 3);
    cr_assert_eq(memcmp(v->v.s, "a\0b", 4), 0);
}

Test(json, lone_surrogates_rejected)
{
    bad("\"\\uD800\"", "lone surrogate", "line 1, column 2");
    bad("\"\\uDC00\"", "lone surrogate", "line 1, column 2");
    bad("\"ab\\uDFFF\"", "lone surrogate", "line 1, column 4");
    bad("\"\\uD800x\"", "lone surrogate", NULL);
    bad("\"\\uD800\\n\"", "lone surrogate", NULL);
    bad("\"\\uD800\\u0041\"", "lone surrogate", NULL);
    bad("\"\\uD800\\uD800\"", "lone surrogate", NULL);
    bad("\"\\uDC00\\uD800\"", "lone surrogate", NULL);
    bad("\"\\uD800\\uZZZZ\"", "invalid \\u escape", "line 1, column 10");
    bad("\"\\uD800", "unterminated string", "line 1, column 1");
    bad("\"\\uD800\\", "unterminated string", "line 1, column 1");
}

Test(json, bad_escapes)
{
    bad("\"\\x\"", "invalid escape 'x'", "line 1, column 3");
    bad("\"\\U0041\"", "invalid escape 'U'", NULL);
    bad("\"\\'\"", "invalid escape '''", NULL);
    bad("\"\\u12G4\"", "invalid \\u escape", "line 1, column 6");
    bad("\"\\u12\"", "invalid \\u escape", "line 1, column 6");
    bad("\"\\u12", "unterminated string", "line 1, column 1");
    bad("\"\\", "unterminated string", "line 1, column 1");
}

Test(json, control_characters_rejected)
{
    bad("\"a\nb\"", "control character in string", "line 1, column 3");
    bad("\"a\tb\"", "control character in string", NULL);
    bad("\"\x1f\"", "control character in string", NULL);
    bad_n("\"a\0b\"", 5, "control character in string", "line 1, column 3");
    /* DEL is not a control character for JSON. */
    cr_assert_str_eq(ok("\"\x7f\"")->v.s, "\x7f");
}

Test(json, unterminated_string)
{
    bad("\"abc", "unterminated string", "line 1, column 1");
    bad("[\"abc\", \"def]", "unterminated string", "line 1, column 9");
    bad("\"", "unterminated string", NULL);
}

Test(json, valid_utf8_accepted)
{
    const char *s = "\"\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF \xEF\xBF\xBD \xED\x9F\xBF \xEE\x80\x80\"";
    fj_json *v = ok(s);
    cr_assert_eq(v->len, strlen(s) - 2);
    cr_assert_eq(memcmp(v->v.s, s + 1, v->len), 0);
}

Test(json, bad_utf8_rejected)
{
    struct { const char *in; const char *path; } cases[] = {
        {"\"\x80\"", "line 1, column 2"},             /* lone continuation byte */
        {"\"\xBF\"", "line 1, column 2"},
        {"\"\xC0\x80\"", "line 1, column 2"},         /* overlong NUL, C0 never valid */
        {"\"\xC1\xBF\"", "line 1, column 2"},         /* overlong */
        {"\"\xE0\x80\x80\"", "line 1, column 3"},     /* overlong 3-byte */
        {"\"\xE0\x9F\xBF\"", "line 1, column 3"},
        {"\"\xF0\x80\x80\x80\"", "line 1, column 3"}, /* overlong 4-byte */
        {"\"\xF0\x8F\xBF\xBF\"", "line 1, column 3"},
        {"\"\xED\xA0\x80\"", "line 1, column 3"},     /* U+D800 encoded directly */
        {"\"\xED\xBF\xBF\"", "line 1, column 3"},     /* U+DFFF */
        {"\"\xF4\x90\x80\x80\"", "line 1, column 3"}, /* U+110000 */
        {"\"\xF5\x80\x80\x80\"", "line 1, column 2"},
        {"\"\xFF\"", "line 1, column 2"},
        {"\"\xFE\"", "line 1, column 2"},
        {"\"\xE2\x82\"", "line 1, column 4"},         /* truncated by the closing quote */
        {"\"\xC3x\"", "line 1, column 3"},
        {"\"\xF0\x9F\x98 \"", "line 1, column 5"},
        {"\"ok \xC3\xA9 \xE2\x28\xA1\"", "line 1, column 9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        bad(cases[i].in, "invalid UTF-8", cases[i].path);
    /* Invalid UTF-8 in a key, too. */
    bad("{\"\xC0\xAF\": 1}", "invalid UTF-8", "line 1, column 3");
    /* Input ending inside a sequence. */
    bad("\"\xE2\x82", "unterminated string", "line 1, column 1");
}

Test(json, bad_bytes_outside_strings)
{
    bad("\xEF\xBB\xBF{}", "unexpected byte 0xEF", "line 1, column 1"); /* no BOM */
    bad_n("\0", 1, "unexpected byte 0x00", "line 1, column 1");
    bad("[1,\x01]", "unexpected byte 0x01", "line 1, column 4");
}

Test(json, one_megabyte_string)
{
    size_t n = 1024 * 1024;
    char *doc = malloc(n + 3);
    cr_assert_not_null(doc);
    doc[0] = '"';
    for (size_t i = 0; i < n; i++)
        doc[1 + i] = (char)('a' + i % 26);
    doc[n + 1] = '"';
    doc[n + 2] = '\0';
    fj_json *v = ok_n(doc, n + 2);
    cr_assert_eq(v->type, FJ_JSON_STRING);
    cr_assert_eq(v->len, n);
    cr_assert_eq(memcmp(v->v.s, doc + 1, n), 0);
    cr_assert_eq(v->v.s[n], '\0');

    /* The same size with an escape at the very end, so the decode path covers it. */
    doc[n - 1] = '\\';
    doc[n] = 'n';
    v = ok_n(doc, n + 2);
    cr_assert_eq(v->len, n - 1);
    cr_assert_eq(v->v.s[n - 2], '\n');
    cr_assert_eq(v->v.s[n - 1], '\0');
    cr_assert_eq(memcmp(v->v.s, doc + 1, n - 2), 0);
    free(doc);
}

Test(json, many_escapes_decode)
{
    /* 100k "\u00e9" escapes: 6 input bytes each become 2 output bytes. */
    size_t reps = 100000;
    char *doc = malloc(reps * 6 + 3);
    cr_assert_not_null(doc);
    char *p = doc;
    *p++ = '"';
    for (size_t i = 0; i < reps; i++, p += 6)
        memcpy(p, "\\u00e9", 6);
    *p++ = '"';
    *p = '\0';
    fj_json *v = ok(doc);
    cr_assert_eq(v->len, reps * 2);
    for (size_t i = 0; i < reps; i++)
        cr_assert(v->v.s[2 * i] == '\xC3' && v->v.s[2 * i + 1] == '\xA9');
    free(doc);
}

/* ---- structure ---------------------------------------------------------------------------- */

Test(json, empty_containers)
{
    const char *empties[] = {"[]", "{}", "[ ]", "{ }", "[\n\t\r ]", "{\n}"};
    for (size_t i = 0; i < sizeof empties / sizeof empties[0]; i++) {
        fj_json *v = ok(empties[i]);
        cr_assert(v->type == FJ_JSON_ARRAY || v->type == FJ_JSON_OBJECT);
        cr_assert_eq(v->len, 0, "%s", empties[i]);
        cr_assert_null(v->v.items, "%s", empties[i]);
    }
    fj_json *v = ok("[[], {}, [[]], {\"a\": {}}]");
    cr_assert_eq(v->len, 4);
    cr_assert_eq(v->v.items[0].type, FJ_JSON_ARRAY);
    cr_assert_eq(v->v.items[0].len, 0);
    cr_assert_eq(v->v.items[1].type, FJ_JSON_OBJECT);
    cr_assert_eq(v->v.items[1].len, 0);
    cr_assert_eq(v->v.items[2].len, 1);
    cr_assert_eq(v->v.items[2].v.items[0].len, 0);
    cr_assert_eq(fj_json_get(&v->v.items[3], "a")->type, FJ_JSON_OBJECT);
    cr_assert_eq(ok("\"\"")->len, 0);
    cr_assert_str_eq(ok("\"\"")->v.s, "");
    cr_assert_eq(ok("{\"\": 1}")->v.members[0].key_len, 0);
    cr_assert_not_null(fj_json_get(ok("{\"\": 1}"), ""));
}

Test(json, duplicate_keys_last_wins)
{
    fj_json *v = ok("{\"a\": 1, \"b\": 2, \"a\": 3}");
    cr_assert_eq(v->len, 3, "duplicates are kept in document order");
    cr_assert_eq(v->v.members[0].value.v.u, 1);
    cr_assert_eq(fj_json_get(v, "a")->v.u, 3);
    cr_assert_eq(fj_json_get(v, "b")->v.u, 2);
    cr_assert_null(fj_json_get(v, "c"));
    cr_assert_null(fj_json_get(v, "aa"));
    cr_assert_null(fj_json_get(v, ""));
    cr_assert_null(fj_json_get(ok("[1]"), "a"));
    cr_assert_null(fj_json_get(ok("\"a\""), "a"));
    cr_assert_null(fj_json_get(NULL, "a"));
}

Test(json, escaped_keys)
{
    fj_json *v = ok("{\"a\\u0062\": 1, \"\\u00e9\": 2}");
    cr_assert_str_eq(v->v.members[0].key, "ab");
    cr_assert_eq(v->v.members[0].key_len, 2);
    cr_assert_eq(fj_json_get(v, "ab")->v.u, 1);
    cr_assert_eq(fj_json_get(v, "\xC3\xA9")->v.u, 2);
}

Test(json, structural_errors)
{
    bad("[1,]", "trailing comma", "line 1, column 3");
    bad("[1, ]", "trailing comma", "line 1, column 3");
    bad("{\"a\":1,}", "trailing comma", "line 1, column 7");
    bad("[,1]", "unexpected ','", "line 1, column 2");
    bad("[1,,2]", "unexpected ','", "line 1, column 4");
    bad("{\"a\":1 \"b\":2}", "expected ',' or '}'", "line 1, column 8");
    bad("{\"a\":1]", "expected ',' or '}'", "line 1, column 7");
    bad("[1}", "expected ',' or ']'", "line 1, column 3");
    bad("{\"a\" 1}", "expected ':'", "line 1, column 6");
    bad("{a:1}", "expected string key", "line 1, column 2");
    bad("{1:1}", "expected string key", NULL);
    bad("{,}", "expected string key", NULL);
    bad("{\"a\":1,,}", "expected string key", "line 1, column 8");
    bad("{\"a\":}", "unexpected '}'", "line 1, column 6");
    bad("]", "unexpected ']'", NULL);
    bad("}", "unexpected '}'", NULL);
    bad(":", "unexpected ':'", NULL);
    bad("'a'", "unexpected '''", NULL);
}

Test(json, unexpected_end_of_input)
{
    bad("", "unexpected end of input", "line 1, column 1");
    bad("   ", "unexpected end of input", "line 1, column 4");
    bad("\n\n", "unexpected end of input", "line 3, column 1");
    bad("[", "unexpected end of input", "line 1, column 2");
    bad("[1", "unexpected end of input", NULL);
    bad("[1,", "unexpected end of input", NULL);
    bad("[1,\n", "unexpected end of input", "line 2, column 1");
    bad("{", "unexpected end of input", NULL);
    bad("{\"a\"", "unexpected end of input", NULL);
    bad("{\"a\":", "unexpected end of input", NULL);
    bad("{\"a\":1", "unexpected end of input", NULL);
    bad("{\"a\":1,", "unexpected end of input", NULL);
    bad_n("[1, 2]", 5, "unexpected end of input", "line 1, column 6"); /* len, not the NUL */
}

Test(json, line_and_column)
{
    bad("{\n  \"a\": 1,\n  \"b\": x\n}", "unexpected 'x'", "line 3, column 8");
    bad("[1,\r\n 2,]", "trailing comma", "line 2, column 3");
    bad("\n\n\n     @", "unexpected '@'", "line 4, column 6");
    /* Columns count bytes: the é before the error takes two. */
    bad("[\"\xC3\xA9\", x]", "unexpected 'x'", "line 1, column 8");
    bad("{\"k\":\n\n  \"v\n\"}", "control character in string", "line 3, column 5");
}

Test(json, whitespace)
{
    size_t end;
    fj_json *v;
    fj_err err = {0};
    const char *s = " \t\r\n[ 1 ,\t2\r\n,\n3 ] \n";
    cr_assert_eq(fj_json_parse(A, s, strlen(s), &end, &v, &err), FJ_OK);
    cr_assert_eq(v->len, 3);
    cr_assert_eq(end, strlen(" \t\r\n[ 1 ,\t2\r\n,\n3 ]"), "end is right after the value");
    s = "{ \"a\" :\n 1 }";
    cr_assert_eq(fj_json_get(ok(s), "a")->v.u, 1);
    /* Only the four RFC 8259 blanks are whitespace. */
    bad("\f1", "unexpected byte 0x0C", "line 1, column 1");
    bad("\v1", "unexpected byte 0x0B", NULL);
    bad("[1,\xC2\xA0" "2]", "unexpected byte 0xC2", "line 1, column 4");
    /* NULL end is allowed. */
    cr_assert_eq(fj_json_parse(A, "7", 1, NULL, &v, &err), FJ_OK);
    cr_assert_eq(v->v.u, 7);
}

Test(json, concatenated_documents)
{
    const char *s = "{\"a\":1} {\"b\":2}[3]\"s\"\n4 true\n-5 null";
    size_t len = strlen(s), off = 0, end;
    struct { fj_json_type type; size_t end; } want[] = {
        {FJ_JSON_OBJECT, 7}, {FJ_JSON_OBJECT, 15}, {FJ_JSON_ARRAY, 18}, {FJ_JSON_STRING, 21},
        {FJ_JSON_UINT, 23}, {FJ_JSON_TRUE, 28}, {FJ_JSON_INT, 31}, {FJ_JSON_NULL, 36},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        fj_json *v;
        fj_err err = {0};
        cr_assert_eq(fj_json_parse(A, s + off, len - off, &end, &v, &err), FJ_OK, "doc %zu: %s", i,
                     err.message);
        cr_assert_eq(v->type, want[i].type, "doc %zu", i);
        cr_assert_eq(off + end, want[i].end, "doc %zu", i);
        off += end;
    }
    cr_assert_eq(off, len);
    cr_assert_eq(fj_json_get(ok("{\"a\":1} {\"b\":2}"), "a")->v.u, 1);
}

Test(json, newline_delimited)
{
    const char *s = "{\"n\":0}\n{\"n\":1}\r\n{\"n\":2}\n\n{\"n\":3}\n";
    size_t len = strlen(s), off = 0, count = 0, end;
    for (;;) {
        size_t rest = off;
        while (rest < len && strchr(" \t\r\n", s[rest]))
            rest++;
        if (rest == len)
            break;
        fj_json *v;
        fj_err err = {0};
        cr_assert_eq(fj_json_parse(A, s + off, len - off, &end, &v, &err), FJ_OK);
        cr_assert_eq(fj_json_get(v, "n")->v.u, count);
        cr_assert_eq(s[off + end - 1], '}');
        off += end;
        count++;
    }
    cr_assert_eq(count, 4);
}

Test(json, error_in_second_document_is_relative)
{
    const char *s = "[1]\n[2,]";
    size_t end;
    fj_json *v;
    fj_err err = {0};
    cr_assert_eq(fj_json_parse(A, s, strlen(s), &end, &v, &err), FJ_OK);
    cr_assert_eq(end, 3);
    cr_assert_eq(fj_json_parse(A, s + end, strlen(s) - end, &end, &v, &err), FJ_EINVAL);
    cr_assert_str_eq(err.message, "trailing comma");
    cr_assert_str_eq(err.path, "line 2, column 3");
}

static char *nested(size_t depth, char open, char close)
{
    char *s = malloc(2 * depth + 1);
    memset(s, open, depth);
    memset(s + depth, close, depth);
    s[2 * depth] = '\0';
    return s;
}

Test(json, depth_limit)
{
    char *s = nested(256, '[', ']');
    fj_json *v = ok(s);
    for (int i = 0; i < 255; i++) {
        cr_assert_eq(v->type, FJ_JSON_ARRAY);
        cr_assert_eq(v->len, 1);
        v = &v->v.items[0];
    }
    cr_assert_eq(v->type, FJ_JSON_ARRAY);
    cr_assert_eq(v->len, 0);
    free(s);

    s = nested(257, '[', ']');
    bad(s, "nesting too deep", "line 1, column 257");
    free(s);

    s = nested(100000, '[', ']');
    bad(s, "nesting too deep", "line 1, column 257");
    free(s);

    /* Objects count too. */
    size_t n = 257;
    char *o = malloc(n * 6 + 2);
    char *p = o;
    for (size_t i = 0; i < n; i++, p += 5)
        memcpy(p, "{\"a\":", 5);
    *p++ = '1';
    memset(p, '}', n);
    p[n] = '\0';
    bad(o, "nesting too deep", "line 1, column 1281");
    o[(n - 1) * 5] = '1'; /* 256 levels: accepted */
    o[(n - 1) * 5 + 1] = '\0';
    memset(o + (n - 1) * 5 + 1, '}', n - 1);
    o[(n - 1) * 5 + 1 + n - 1] = '\0';
    v = ok(o);
    cr_assert_eq(v->type, FJ_JSON_OBJECT);
    free(o);
}

Test(json, large_containers_and_interleaved_scratch)
{
    /* More elements than the inline scratch holds, nested inside each other, so the shared
     * stacks grow while outer containers are still open. */
    size_t n = 5000;
    size_t cap = n * 64 + 64;
    char *s = malloc(cap);
    size_t k = 0;
    k += (size_t)sprintf(s + k, "{\"list\":[");
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(s + k, "%s{\"i\":%zu,\"sq\":[%zu,%zu],\"neg\":-%zu}", i ? "," : "", i, i,
                             i * i, i + 1);
    k += (size_t)sprintf(s + k, "],\"after\":\"end\"}");
    fj_json *v = ok_n(s, k);
    const fj_json *list = fj_json_get(v, "list");
    cr_assert_eq(list->len, n);
    for (size_t i = 0; i < n; i++) {
        const fj_json *e = &list->v.items[i];
        cr_assert_eq(e->len, 3);
        cr_assert_eq(fj_json_get(e, "i")->v.u, i);
        const fj_json *sq = fj_json_get(e, "sq");
        cr_assert_eq(sq->len, 2);
        cr_assert_eq(sq->v.items[1].v.u, i * i);
        cr_assert_eq(fj_json_get(e, "neg")->v.i, -(int64_t)(i + 1));
    }
    cr_assert_str_eq(fj_json_get(v, "after")->v.s, "end");
    free(s);
}

Test(json, error_after_scratch_grew_does_not_leak)
{
    /* Run under valgrind/ASan: the heap scratch must be freed on the error path. */
    size_t n = 1000, k = 0;
    char *s = malloc(n * 4 + 16);
    s[k++] = '[';
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(s + k, "%s{}", i ? "," : "");
    k += (size_t)sprintf(s + k, ",]");
    bad_n(s, k, "trailing comma", NULL);
    free(s);
}

/* ---- out of memory ------------------------------------------------------------------------ */

Test(json, enomem_from_arena)
{
    fj_json *v = NULL;
    fj_err err = {0};
    fj_alloc_fail_after(0);
    fj_status st = fj_json_parse(A, "\"x\"", 3, NULL, &v, &err);
    fj_alloc_fail_after(-1);
    cr_assert_eq(st, FJ_ENOMEM);
    cr_assert_str_eq(err.code, "out_of_memory");
    cr_assert_null(v);
}

Test(json, enomem_from_scratch)
{
    /* Warm the arena so only the scratch stack needs the heap. */
    cr_assert_not_null(fj_arena_alloc(A, 16));
    char s[400];
    size_t k = 0;
    s[k++] = '[';
    for (int i = 0; i < 100; i++)
        k += (size_t)sprintf(s + k, "%s1", i ? "," : "");
    s[k++] = ']';
    fj_json *v = NULL;
    fj_err err = {0};
    fj_alloc_fail_after(0);
    fj_status st = fj_json_parse(A, s, k, NULL, &v, &err);
    fj_alloc_fail_after(-1);
    cr_assert_eq(st, FJ_ENOMEM);
    cr_assert_null(v);
}

Test(json, enomem_at_every_allocation)
{
    /* curl's torture habit: fail the Nth allocation for every N until the parse succeeds. */
    size_t n = 200, k = 0;
    char *s = malloc(n * 80 + 64);
    s[k++] = '[';
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(s + k, "%s{\"k%zu\":[\"v\\n\",%zu,1.5,{\"x\":[[]]}]}", i ? "," : "", i, i);
    /* A long string and a real longer than strtod's on-stack copy. */
    k += (size_t)sprintf(s + k, ",\"%0200d\", 1%0100d.5]", 0, 0);
    fj_status st = FJ_ENOMEM;
    long fails = 0;
    for (long nth = 0; st == FJ_ENOMEM; nth++) {
        fj_arena *a = fj_arena_create();
        cr_assert_not_null(a);
        fj_json *v = NULL;
        fj_err err = {0};
        fj_alloc_fail_after(nth);
        st = fj_json_parse(a, s, k, NULL, &v, &err);
        fj_alloc_fail_after(-1);
        if (st == FJ_ENOMEM) {
            cr_assert_null(v);
            fails++;
        } else {
            cr_assert_eq(st, FJ_OK, "%s at %s", err.message, err.path);
            cr_assert_eq(v->len, n + 2);
        }
        fj_arena_destroy(a);
        cr_assert_lt(nth, 1000);
    }
    cr_assert_gt(fails, 2);
    free(s);
}

Test(json, null_err_is_allowed)
{
    fj_json *v;
    cr_assert_eq(fj_json_parse(A, "[1,]", 4, NULL, &v, NULL), FJ_EINVAL);
    cr_assert_eq(fj_json_parse(A, "[1]", 3, NULL, &v, NULL), FJ_OK);
}
