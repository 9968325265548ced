/* fuzz_lp.c — libFuzzer harness for the line-protocol parser (ingest/lp.c).
 *
 * Feeds the input as a request body and checks the contract on every line, not just the absence
 * of crashes: tokens lie inside the body, unescaping never grows a token, floats are finite, lines
 * advance, error positions are sane, and the results do not depend on where the input sits in the
 * parser's scanning blocks. Seeds: tests/fuzz/corpus/lp/. */
#include "arena.h"
#include "ingest/lp.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            abort();                                                                               \
    } while (0)

static const char *lo, *hi;

static void check_str(fj_arena *a, const fj_lp_str *s, bool nonempty)
{
    CHECK(s->p >= lo && s->p + s->n <= hi);
    CHECK(!nonempty || s->n > 0);
    CHECK(s->esc >= FJ_LP_RAW && s->esc <= FJ_LP_ESC_STRING);
    size_t n = (size_t)-1;
    char *d = fj_lp_str_dup(a, s, &n);
    if (!d)
        return;
    CHECK(n <= s->n);
    CHECK(d[n] == '\0');
    CHECK(s->esc != FJ_LP_RAW || (n == s->n && memcmp(d, s->p, n) == 0));
    CHECK(s->esc == FJ_LP_RAW || n < s->n); /* an escape always drops a backslash */
    if (memchr(d, '\0', n) == NULL)
        CHECK(fj_lp_str_eq(s, d));
}

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

static uint64_t mix_str(uint64_t h, fj_arena *a, const fj_lp_str *s)
{
    size_t n = 0;
    char *d = fj_lp_str_dup(a, s, &n);
    CHECK(d);
    h = mix(h, &n, sizeof n);
    return mix(h, d, n);
}

/* Parses body[0..size) checking the contract on every line; returns a digest of everything the
 * parser reported, with line numbers taken relative to line_shift. */
static uint64_t parse_all(const char *body, size_t size, size_t line_shift)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    lo = body;
    hi = body + size;
    fj_lp_parser *p = fj_lp_parser_create(body, size);
    fj_arena *a = fj_arena_create();
    CHECK(p && a);

    size_t last_line = 0, calls = 0;
    while (!fj_lp_done(p)) {
        CHECK(++calls <= size + 1); /* every call consumes at least one byte */
        fj_lp_line ln;
        fj_err err = {0};
        fj_status st = fj_lp_next(p, &ln, &err);
        h = mix(h, &st, sizeof st);
        if (st == FJ_EINVAL) {
            size_t l, c;
            fj_lp_error_pos(p, &l, &c);
            CHECK(l >= 1 && c >= 1 && c <= size + 1 && l <= size + 1);
            CHECK(l >= last_line);
            CHECK(err.path[0] != '\0' && err.message[0] != '\0');
            last_line = l;
            l -= line_shift;
            h = mix(h, &l, sizeof l);
            h = mix(h, &c, sizeof c);
            continue;
        }
        CHECK(st == FJ_OK);
        CHECK(ln.lineno >= 1 && ln.lineno >= last_line);
        last_line = ln.lineno;
        size_t rel = ln.lineno - line_shift;
        h = mix(h, &rel, sizeof rel);
        check_str(a, &ln.measurement, true);
        h = mix_str(h, a, &ln.measurement);
        CHECK(ln.n_tags <= FJ_LP_MAX_TAGS);
        for (size_t i = 0; i < ln.n_tags; i++) {
            check_str(a, &ln.tags[i].key, true);
            check_str(a, &ln.tags[i].value, true);
            h = mix_str(h, a, &ln.tags[i].key);
            h = mix_str(h, a, &ln.tags[i].value);
        }
        CHECK(ln.n_fields >= 1 && ln.n_fields <= FJ_LP_MAX_FIELDS);
        for (size_t i = 0; i < ln.n_fields; i++) {
            const fj_lp_field *f = &ln.fields[i];
            check_str(a, &f->key, true);
            h = mix_str(h, a, &f->key);
            h = mix(h, &f->type, sizeof f->type);
            switch (f->type) {
            case FJ_LP_FLOAT: CHECK(isfinite(f->v.f)); h = mix(h, &f->v.f, sizeof f->v.f); break;
            case FJ_LP_STRING: check_str(a, &f->v.s, false); h = mix_str(h, a, &f->v.s); break;
            case FJ_LP_INT: h = mix(h, &f->v.i, sizeof f->v.i); break;
            case FJ_LP_UINT: h = mix(h, &f->v.u, sizeof f->v.u); break;
            case FJ_LP_BOOL: h = mix(h, &f->v.b, sizeof f->v.b); break;
            default: abort();
            }
        }
        h = mix(h, &ln.has_time, sizeof ln.has_time);
        if (ln.has_time) {
            int64_t ns;
            int64_t unit = fj_lp_infer_unit(ln.time);
            CHECK(fj_lp_time_to_ns(ln.time, unit, &ns) == FJ_OK);
            h = mix(h, &ln.time, sizeof ln.time);
        }
    }
    CHECK(fj_lp_next(p, &(fj_lp_line){0}, NULL) == FJ_ENOTFOUND);
    fj_arena_destroy(a);
    fj_lp_parser_destroy(p);
    return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exact-size heap copies so ASan catches any read past the end of the body. The second parse
     * puts a comment line in front, which moves every byte to another place in the parser's
     * 64-byte scanning blocks: the results must not change (but for the line numbers). */
    size_t k = size % 61;
    char *body = malloc(size ? size : 1), *shifted = malloc(size + k + 2);
    if (!body || !shifted)
        goto out;
    if (size)
        memcpy(body, data, size);
    shifted[0] = '#';
    memset(shifted + 1, 'x', k);
    shifted[k + 1] = '\n';
    if (size)
        memcpy(shifted + k + 2, data, size);
    uint64_t h1 = parse_all(body, size, 0);
    uint64_t h2 = parse_all(shifted, size + k + 2, 1);
    CHECK(h1 == h2);
out:
    free(body);
    free(shifted);
    return 0;
}
