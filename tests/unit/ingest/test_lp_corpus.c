/* test_lp_corpus.c — conformance of the line-protocol parser against every decode case of
 * influxdata/line-protocol's corpus (shared/data/lineproto/influxdata-line-protocol-corpus.json).
 *
 * A case passes when we fail where the corpus has an error, and otherwise produce the same points:
 * name, tags (compared sorted, as the corpus lists them), fields in order with type and value, and
 * the time in ns (the body's timestamp times the precision, or the default time truncated to the
 * precision). Like the reference decoder, one bad line makes the whole case an error. */
#include "arena.h"
#include "json.h"
#include "ingest/lp.h"

#include <criterion/criterion.h>

#include "../fj_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CORPUS FJ_SHARED_DIR "/data/lineproto/influxdata-line-protocol-corpus.json"

/* Cases where we deliberately differ from the corpus: key and why. Keep it empty if at all possible;
 * each entry is printed with its reason on every run. */
static const struct {
    const char *key, *reason;
} exceptions[] = {
    {NULL, NULL},
};

static const char *exception_reason(const char *key)
{
    for (size_t i = 0; exceptions[i].key; i++)
        if (strcmp(exceptions[i].key, key) == 0)
            return exceptions[i].reason;
    return NULL;
}

#define read_file fj_test_read_file

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

/* Standard base64 (padding optional) into a fresh arena buffer. */
static char *b64decode(fj_arena *a, const char *s, size_t n, size_t *out_len)
{
    char *out = fj_arena_alloc(a, n + 1);
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n && s[i] != '='; i++) {
        int v = b64val((unsigned char)s[i]);
        cr_assert_geq(v, 0, "bad base64 in corpus");
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    *out_len = o;
    return out;
}

/* A corpus string, or {binary: base64}, as bytes. */
static const char *text_of(fj_arena *a, const fj_json *v, size_t *len)
{
    if (v->type == FJ_JSON_STRING) {
        *len = v->len;
        return v->v.s;
    }
    const fj_json *b = fj_json_get(v, "binary");
    cr_assert(b && b->type == FJ_JSON_STRING, "corpus text is neither string nor binary");
    return b64decode(a, b->v.s, b->len, len);
}

static int64_t json_i64(const fj_json *v)
{
    cr_assert(v && (v->type == FJ_JSON_INT || v->type == FJ_JSON_UINT));
    return v->type == FJ_JSON_INT ? v->v.i : (int64_t)v->v.u;
}

static double json_num(const fj_json *v)
{
    switch (v->type) {
    case FJ_JSON_INT: return (double)v->v.i;
    case FJ_JSON_UINT: return (double)v->v.u;
    case FJ_JSON_REAL: return v->v.d;
    default: cr_assert_fail("not a number in corpus"); return 0;
    }
}

static int64_t precision_ns(const fj_json *prec)
{
    cr_assert(prec && prec->type == FJ_JSON_STRING);
    if (strcmp(prec->v.s, "1ns") == 0) return 1;
    if (strcmp(prec->v.s, "1\xc2\xb5s") == 0) return 1000;
    if (strcmp(prec->v.s, "1ms") == 0) return 1000000;
    if (strcmp(prec->v.s, "1s") == 0) return 1000000000;
    cr_assert_fail("unknown corpus precision %s", prec->v.s);
    return 0;
}

/* One parsed point, unescaped, in the arena. */
typedef struct {
    const char *s;
    size_t n;
} bytes;
typedef struct {
    bytes key, val;
} tagkv;
typedef struct {
    bytes name;
    tagkv *tags;
    size_t n_tags;
    bytes *fkeys;
    fj_lp_field *fields; /* string values unescaped into sval */
    bytes *sval;
    size_t n_fields;
    int64_t time;
} point;

static bytes unesc(fj_arena *a, const fj_lp_str *s)
{
    bytes b;
    b.s = fj_lp_str_dup(a, s, &b.n);
    cr_assert_not_null(b.s);
    return b;
}

static int bytes_cmp(bytes x, bytes y)
{
    size_t n = x.n < y.n ? x.n : y.n;
    int c = memcmp(x.s, y.s, n);
    return c ? c : (x.n > y.n) - (x.n < y.n);
}

static int tag_cmp(const void *x, const void *y)
{
    return bytes_cmp(((const tagkv *)x)->key, ((const tagkv *)y)->key);
}

static bool bytes_eq_json(bytes b, const fj_json *j)
{
    return j && j->type == FJ_JSON_STRING && j->len == b.n && memcmp(j->v.s, b.s, b.n) == 0;
}

/* Runs the parser like the reference corpus harness: every line must parse. Returns the number of
 * points, or -1 on error (with the reason in why). */
static long decode(fj_arena *a, fj_lp_parser *p, const char *text, size_t len, int64_t prec,
                   int64_t default_time, point **out, char *why, size_t whylen)
{
    size_t cap = 8, n = 0;
    point *pts = fj_arena_alloc(a, cap * sizeof *pts);
    fj_lp_reset(p, text, len);
    fj_lp_line ln;
    fj_err err = {0};
    fj_status st;
    while ((st = fj_lp_next(p, &ln, &err)) != FJ_ENOTFOUND) {
        if (st != FJ_OK) {
            snprintf(why, whylen, "%s: %s", err.path, err.message);
            return -1;
        }
        if (n == cap) {
            point *np = fj_arena_alloc(a, 2 * cap * sizeof *pts);
            memcpy(np, pts, n * sizeof *pts);
            pts = np;
            cap *= 2;
        }
        point *pt = &pts[n++];
        pt->name = unesc(a, &ln.measurement);
        pt->n_tags = ln.n_tags;
        pt->tags = fj_arena_alloc(a, (ln.n_tags + 1) * sizeof *pt->tags);
        for (size_t i = 0; i < ln.n_tags; i++) {
            pt->tags[i].key = unesc(a, &ln.tags[i].key);
            pt->tags[i].val = unesc(a, &ln.tags[i].value);
        }
        qsort(pt->tags, pt->n_tags, sizeof *pt->tags, tag_cmp);
        pt->n_fields = ln.n_fields;
        pt->fkeys = fj_arena_alloc(a, ln.n_fields * sizeof *pt->fkeys);
        pt->sval = fj_arena_alloc(a, ln.n_fields * sizeof *pt->sval);
        pt->fields = fj_arena_alloc(a, ln.n_fields * sizeof *pt->fields);
        for (size_t i = 0; i < ln.n_fields; i++) {
            pt->fkeys[i] = unesc(a, &ln.fields[i].key);
            pt->fields[i] = ln.fields[i];
            if (ln.fields[i].type == FJ_LP_STRING)
                pt->sval[i] = unesc(a, &ln.fields[i].v.s);
        }
        if (ln.has_time) {
            if (fj_lp_time_to_ns(ln.time, prec, &pt->time) != FJ_OK) {
                snprintf(why, whylen, "line %zu: timestamp out of range for the precision", ln.lineno);
                return -1;
            }
        } else {
            /* Go's time.Truncate: round down to a multiple of the precision. */
            int64_t r = default_time % prec;
            pt->time = default_time - (r < 0 ? r + prec : r);
        }
    }
    *out = pts;
    return (long)n;
}

/* Compares our points with the corpus result; describes the first difference in why. */
static bool same(const point *pts, long n, const fj_json *result, char *why, size_t whylen)
{
    if (result->type != FJ_JSON_ARRAY || (long)result->len != n) {
        snprintf(why, whylen, "%ld points, corpus has %zu", n, result->len);
        return false;
    }
    for (long k = 0; k < n; k++) {
        const point *pt = &pts[k];
        const fj_json *r = &result->v.items[k];
        if (!bytes_eq_json(pt->name, fj_json_get(r, "name"))) {
            snprintf(why, whylen, "point %ld: name '%.*s'", k, (int)pt->name.n, pt->name.s);
            return false;
        }
        const fj_json *tags = fj_json_get(r, "tags");
        if (!tags || tags->len != pt->n_tags) {
            snprintf(why, whylen, "point %ld: %zu tags", k, pt->n_tags);
            return false;
        }
        for (size_t i = 0; i < pt->n_tags; i++)
            if (!bytes_eq_json(pt->tags[i].key, fj_json_get(&tags->v.items[i], "key")) ||
                !bytes_eq_json(pt->tags[i].val, fj_json_get(&tags->v.items[i], "value"))) {
                snprintf(why, whylen, "point %ld: tag %zu '%.*s'='%.*s'", k, i, (int)pt->tags[i].key.n,
                         pt->tags[i].key.s, (int)pt->tags[i].val.n, pt->tags[i].val.s);
                return false;
            }
        const fj_json *fields = fj_json_get(r, "fields");
        if (!fields || fields->len != pt->n_fields) {
            snprintf(why, whylen, "point %ld: %zu fields", k, pt->n_fields);
            return false;
        }
        for (size_t i = 0; i < pt->n_fields; i++) {
            const fj_json *fj = &fields->v.items[i], *val = fj_json_get(fj, "value");
            const fj_lp_field *f = &pt->fields[i];
            if (!bytes_eq_json(pt->fkeys[i], fj_json_get(fj, "key")) || !val ||
                val->type != FJ_JSON_OBJECT || val->len != 1) {
                snprintf(why, whylen, "point %ld: field %zu key '%.*s'", k, i,
                         (int)pt->fkeys[i].n, pt->fkeys[i].s);
                return false;
            }
            const char *t = val->v.members[0].key;
            const fj_json *x = &val->v.members[0].value;
            bool ok;
            switch (f->type) {
            case FJ_LP_FLOAT: ok = !strcmp(t, "float") && json_num(x) == f->v.f; break;
            case FJ_LP_INT: ok = !strcmp(t, "int") && json_i64(x) == f->v.i; break;
            case FJ_LP_UINT:
                ok = !strcmp(t, "uint") && x->type == FJ_JSON_UINT && x->v.u == f->v.u;
                break;
            case FJ_LP_BOOL:
                ok = !strcmp(t, "bool") && x->type == (f->v.b ? FJ_JSON_TRUE : FJ_JSON_FALSE);
                break;
            case FJ_LP_STRING: ok = !strcmp(t, "string") && bytes_eq_json(pt->sval[i], x); break;
            default: ok = false;
            }
            if (!ok) {
                snprintf(why, whylen, "point %ld: field %zu '%.*s' type %d differs (corpus: %s)", k, i,
                         (int)pt->fkeys[i].n, pt->fkeys[i].s, (int)f->type, t);
                return false;
            }
        }
        if (json_i64(fj_json_get(r, "time")) != pt->time) {
            snprintf(why, whylen, "point %ld: time %lld", k, (long long)pt->time);
            return false;
        }
    }
    return true;
}

Test(lp_corpus, every_decode_case)
{
    size_t len;
    char *text = read_file(CORPUS, &len);
    cr_assert_not_null(text, "cannot read %s", CORPUS);
    fj_arena *a = fj_arena_create();
    fj_json *root = NULL;
    fj_err err = {0};
    cr_assert_eq(fj_json_parse(a, text, len, NULL, &root, &err), FJ_OK, "corpus JSON: %s at %s",
                 err.message, err.path);
    const fj_json *dec = fj_json_get(root, "decode");
    cr_assert(dec && dec->type == FJ_JSON_OBJECT);

    fj_lp_parser *p = fj_lp_parser_create(NULL, 0);
    cr_assert_not_null(p);
    size_t pass = 0, fail = 0, excepted = 0, want_err = 0;
    for (size_t c = 0; c < dec->len; c++) {
        const char *key = dec->v.members[c].key;
        const fj_json *tc = &dec->v.members[c].value;
        const fj_json *in = fj_json_get(tc, "input"), *out = fj_json_get(tc, "output");
        cr_assert(in && out);
        fj_arena *ca = fj_arena_create();
        size_t tlen;
        const char *t = text_of(ca, fj_json_get(in, "text"), &tlen);
        int64_t prec = precision_ns(fj_json_get(in, "precision"));
        int64_t dflt = json_i64(fj_json_get(in, "defaultTime"));
        const fj_json *result = fj_json_get(out, "result"), *error = fj_json_get(out, "error");

        point *pts = NULL;
        char why[512] = "";
        long n = decode(ca, p, t, tlen, prec, dflt, &pts, why, sizeof why);
        bool ok;
        if (error) {
            want_err++;
            ok = n < 0;
            if (!ok)
                snprintf(why, sizeof why, "parsed %ld point(s), corpus says: %s", n, error->v.s);
        } else {
            cr_assert_not_null(result, "case %s has neither result nor error", key);
            ok = n >= 0 && same(pts, n, result, why, sizeof why);
        }
        const char *reason = exception_reason(key);
        if (ok) {
            pass++;
            if (reason)
                fprintf(stderr, "lp corpus: exception %s now passes; remove it\n", key);
        } else if (reason) {
            excepted++;
            fprintf(stderr, "lp corpus: exception %s: %s\n", key, reason);
        } else {
            fail++;
            fprintf(stderr, "lp corpus: FAIL %s: %s\n    input: '%.*s'\n", key, why,
                    (int)(tlen > 200 ? 200 : tlen), t);
        }
        fj_arena_destroy(ca);
    }
    fprintf(stderr,
            "lp corpus: %zu/%zu decode cases pass (%zu expect an error), "
            "%zu intentional exception(s), %zu failure(s)\n",
            pass, dec->len, want_err, excepted, fail);
    cr_expect_eq(dec->len, 6615, "corpus changed size");
    cr_expect_eq(fail, 0, "%zu corpus case(s) fail", fail);
    fj_lp_parser_destroy(p);
    fj_arena_destroy(a);
    free(text);
}
