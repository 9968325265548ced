/* fuzz_json.c — libFuzzer harness for common/json.c. Any input must either fail cleanly with a
 * located error or give a tree that keeps json.h's promises (terminated valid UTF-8 strings,
 * negative INTs, finite REALs, bounded depth, last duplicate key wins). Concatenated documents
 * are read one after another, as the NDJSON callers do.
 * Run: fuzz_json -dict=tests/fuzz/json.dict tests/fuzz/corpus/json */
#include "arena.h"
#include "json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k;
        unsigned lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            k = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 3;
            lo = c == 0xE0 ? 0xA0 : 0x80;
            hi = c == 0xED ? 0x9F : 0xBF;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 4;
            lo = c == 0xF0 ? 0x90 : 0x80;
            hi = c == 0xF4 ? 0x8F : 0xBF;
        } else {
            return 0;
        }
        if (n - i < k || s[i + 1] < lo || s[i + 1] > hi)
            return 0;
        for (size_t j = 2; j < k; j++)
            if (s[i + j] < 0x80 || s[i + j] > 0xBF)
                return 0;
        i += k;
    }
    return 1;
}

static void check_string(const char *s, size_t len)
{
    if (!s || s[len] != '\0' || !valid_utf8((const unsigned char *)s, len))
        abort();
}

static void check(const fj_json *v, int depth)
{
    if (depth > 256 || strcmp(fj_json_type_name(v->type), "unknown") == 0)
        abort();
    switch (v->type) {
    case FJ_JSON_INT:
        if (v->v.i >= 0)
            abort();
        break;
    case FJ_JSON_REAL:
        if (!isfinite(v->v.d))
            abort();
        break;
    case FJ_JSON_STRING:
        check_string(v->v.s, v->len);
        break;
    case FJ_JSON_ARRAY:
        if (v->len && !v->v.items)
            abort();
        for (size_t i = 0; i < v->len; i++)
            check(&v->v.items[i], depth + 1);
        break;
    case FJ_JSON_OBJECT:
        if (v->len && !v->v.members)
            abort();
        for (size_t i = 0; i < v->len; i++) {
            const fj_json_member *m = &v->v.members[i];
            check_string(m->key, m->key_len);
            check(&m->value, depth + 1);
            /* fj_json_get matches by strlen, so keys holding \u0000 are out of its reach. */
            if (strlen(m->key) == m->key_len) {
                const fj_json *got = fj_json_get(v, m->key);
                if (!got)
                    abort();
                for (size_t j = i + 1; j < v->len; j++)
                    if (v->v.members[j].key_len == m->key_len &&
                        memcmp(v->v.members[j].key, m->key, m->key_len) == 0 && got == &m->value)
                        abort(); /* a later duplicate must win */
            }
        }
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fj_arena *a = fj_arena_create();
    if (!a)
        return 0;
    size_t off = 0;
    for (int docs = 0; docs < 64 && off < size; docs++) {
        fj_json *v = NULL;
        fj_err err = {0};
        size_t end = 0;
        fj_status st = fj_json_parse(a, (const char *)data + off, size - off, &end, &v, &err);
        if (st != FJ_OK) {
            if (st != FJ_EINVAL || v != NULL || strncmp(err.path, "line ", 5) != 0 || !err.message[0])
                abort();
            break;
        }
        if (!v || end == 0 || end > size - off)
            abort();
        check(v, 0);
        off += end;
    }
    fj_arena_destroy(a);
    return 0;
}
