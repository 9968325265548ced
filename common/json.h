/* json.h — a strict JSON parser into an arena, and nothing else.
 *
 * Why our own: Sonar's spec allows unsigned values up to 2^64-1, which jansson rejects ("too big
 * integer") and json-c silently saturates; a bad-input error must also say exactly where. This
 * parser keeps every integer exactly (FJ_JSON_UINT for 0..2^64-1, FJ_JSON_INT for negatives down
 * to INT64_MIN), rejects numbers it cannot represent and non-finite reals, validates UTF-8, and
 * allocates only from the caller's arena (no per-node frees, one lifetime).
 * JSON output is written with fj_buf (buf.h), which needs no DOM.
 *
 * Thread-safety: none needed; all state is in the arguments. */
#ifndef FJ_JSON_H
#define FJ_JSON_H

#include "arena.h"
#include "fj_status.h"

#include <stddef.h>
#include <stdint.h>

typedef enum fj_json_type {
    FJ_JSON_NULL,
    FJ_JSON_FALSE,
    FJ_JSON_TRUE,
    FJ_JSON_INT,    /* a negative integer, in .i */
    FJ_JSON_UINT,   /* a non-negative integer 0..2^64-1, in .u */
    FJ_JSON_REAL,   /* a number with fraction or exponent, finite, in .d */
    FJ_JSON_STRING, /* decoded, NUL-terminated UTF-8 in .s, byte length in .len (may hold \u0000) */
    FJ_JSON_ARRAY,  /* .len elements in .items */
    FJ_JSON_OBJECT  /* .len members in .members, in document order */
} fj_json_type;

typedef struct fj_json fj_json;
typedef struct fj_json_member fj_json_member;

struct fj_json {
    fj_json_type type;
    size_t len;
    union {
        int64_t i;
        uint64_t u;
        double d;
        const char *s;
        fj_json *items;
        fj_json_member *members;
    } v;
};

struct fj_json_member {
    const char *key; /* decoded, NUL-terminated */
    size_t key_len;
    fj_json value;
};

/* `-0` parses as FJ_JSON_UINT 0 (so FJ_JSON_INT always means negative); empty containers have
 * .len 0 and NULL items/members. Memory: about 4x the input size in the arena.
 *
 * Parses one JSON value starting at text (leading whitespace skipped) and stops right after it,
 * so concatenated documents can be read one by one: *end receives the offset just past the value
 * (may be NULL). Nesting deeper than 256 is refused.
 * Errors: FJ_EINVAL with err->path "line L, column C" (1-based, of the offending byte) and a
 * message such as "unterminated string" or "integer out of range"; FJ_ENOMEM when the arena
 * cannot grow. On error *out is untouched; arena memory already used is not reclaimed. */
fj_status fj_json_parse(fj_arena *a, const char *text, size_t len, size_t *end, fj_json **out, fj_err *err);

/* The value of member `key` of an object, or NULL when absent or when obj is not an object.
 * With duplicate keys the last one wins (as in Go's encoding/json, which Sonar's tools use). */
const fj_json *fj_json_get(const fj_json *obj, const char *key);

/* "null", "boolean", "integer", "number", "string", "array", "object" — for error messages. */
const char *fj_json_type_name(fj_json_type t);

#endif
