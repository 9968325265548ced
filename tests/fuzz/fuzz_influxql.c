/* fuzz_influxql.c — libFuzzer harness for InfluxQL's parser (api/influxql/parse.c) and its WHERE
 * clause (api/influxql/cond.c): text from the network, parsed before anything is read.
 *
 * Checks the contract, not just the absence of crashes: a parse either succeeds with at least one
 * statement of a known kind, or fails with InfluxDB's "error parsing query: " message; every
 * compiled regular expression is recorded for release; a WHERE clause splits into a range with
 * tmin <= tmax or an empty one, and its rest evaluates without reading outside the tree. Seeds:
 * tests/fuzz/corpus/influxql/. */
#include "api/influxql/iq_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            abort();                                                                               \
    } while (0)

static iq_val ref(void *ud, const char *name)
{
    (void)ud;
    if (name[0] == 'v')
        return (iq_val){.k = IQV_NUM, .n = 42};
    return (iq_val){.k = IQV_STR, .s = name};
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    fj_arena *a = fj_arena_create();
    iq_regs *regs = calloc(1, sizeof *regs);
    if (!a || !regs) {
        free(text);
        free(regs);
        fj_arena_destroy(a);
        return 0;
    }
    iq_stmt *st = NULL;
    size_t n = 0;
    char msg[512];
    bool ok = iq_parse(a, text, NULL, regs, &st, &n, msg, sizeof msg);
    CHECK(regs->n <= IQ_MAX_REGEX);
    if (!ok) {
        CHECK(!strncmp(msg, "error parsing query: ", 21) || !strcmp(msg, "out of memory"));
    } else {
        CHECK(n >= 1);
        iq_ctx c = {.a = a, .now_ns = 1700000000000000000LL};
        for (size_t i = 0; i < n; i++) {
            CHECK(st[i].kind >= IQS_SELECT && st[i].kind <= IQS_SHOW_SERIES);
            CHECK(!st[i].group_time || st[i].every > 0);
            int64_t tmin, tmax;
            const iq_expr *rest = NULL;
            char m2[256];
            if (iq_cond_split(&c, st[i].where, &tmin, &tmax, &rest, m2, sizeof m2))
                (void)iq_cond_true(rest, ref, NULL);
            else
                CHECK(m2[0] != '\0');
        }
    }
    iq_regs_free(regs);
    free(regs);
    fj_arena_destroy(a);
    free(text);
    return 0;
}
