/* fuzz_lp.c — libFuzzer harness for the line-protocol parser (ingest/lp.c).
 *
 * Feeds the input as a request body and checks the contract on every line, not just the absence
 * of crashes: tokens lie inside the body, unescaping never grows a token, floats are finite, lines
 * advance, error positions are sane. Seeds: tests/fuzz/corpus/lp/. */
#include "arena.h"
#include "lp.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Copy into an exact-size heap block so ASan catches any read past the end of the body. */
    char *body = malloc(size ? size : 1);
    if (!body)
        return 0;
    if (size)
        memcpy(body, data, size);
    lo = body;
    hi = body + size;

    fj_lp_parser *p = fj_lp_parser_create(body, size);
    fj_arena *a = fj_arena_create();
    if (!p || !a)
        goto out;

    size_t last_line = 0, calls = 0;
    while (!fj_lp_done(p)) {
        CHECK(++calls <= size + 1); /* every call consumes at least one byte */
        fj_lp_line ln;
        fj_err err = {0};
        fj_status st = fj_lp_next(p, &ln, &err);
        if (st == FJ_EINVAL) {
            size_t l, c;
            fj_lp_error_pos(p, &l, &c);
            CHECK(l >= 1 && c >= 1 && c <= size + 1 && l <= size + 1);
            CHECK(l >= last_line);
            CHECK(err.path[0] != '\0' && err.message[0] != '\0');
            last_line = l;
            continue;
        }
        CHECK(st == FJ_OK);
        CHECK(ln.lineno >= 1 && ln.lineno >= last_line);
        last_line = ln.lineno;
        check_str(a, &ln.measurement, true);
        CHECK(ln.n_tags <= FJ_LP_MAX_TAGS);
        for (size_t i = 0; i < ln.n_tags; i++) {
            check_str(a, &ln.tags[i].key, true);
            check_str(a, &ln.tags[i].value, true);
        }
        CHECK(ln.n_fields >= 1 && ln.n_fields <= FJ_LP_MAX_FIELDS);
        for (size_t i = 0; i < ln.n_fields; i++) {
            const fj_lp_field *f = &ln.fields[i];
            check_str(a, &f->key, true);
            switch (f->type) {
            case FJ_LP_FLOAT: CHECK(isfinite(f->v.f)); break;
            case FJ_LP_STRING: check_str(a, &f->v.s, false); break;
            case FJ_LP_INT:
            case FJ_LP_UINT:
            case FJ_LP_BOOL: break;
            default: abort();
            }
        }
        if (ln.has_time) {
            int64_t ns;
            int64_t unit = fj_lp_infer_unit(ln.time);
            CHECK(fj_lp_time_to_ns(ln.time, unit, &ns) == FJ_OK);
        }
    }
    CHECK(fj_lp_next(p, &(fj_lp_line){0}, NULL) == FJ_ENOTFOUND);
out:
    fj_arena_destroy(a);
    fj_lp_parser_destroy(p);
    free(body);
    return 0;
}
