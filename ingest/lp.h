/* lp.h — zero-copy parser for InfluxDB line protocol (what ClusterCockpit collectors send).
 *
 * Grammar: the shared data's lineproto/influxdata-line-protocol.ebnf. Where the grammar is silent
 * or the reference decoder (github.com/influxdata/line-protocol/v2/lineprotocol) is stricter, we
 * follow the decoder, because its corpus is our conformance test: invalid UTF-8 in any token,
 * duplicate tag keys and floats out of double range are errors; `\n`, `\r`, `\t` are escapes in
 * string values; a tab in a comment is an error. Floats follow the grammar, not Go's ParseFloat
 * (no hex floats, no `_` digit separators, no NaN/Inf). Duplicate field keys are kept, in body
 * order (InfluxDB keeps the last).
 *
 * Nothing is copied: strings point into the body, which must outlive every fj_lp_line and
 * fj_lp_str taken from it. A parser belongs to one thread at a time; different parsers are
 * independent. */
#ifndef FJ_LP_H
#define FJ_LP_H

#include "arena.h"
#include "fj_status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* fjord's limits per line (not the protocol's): they bound the scratch memory one line can take.
 * A line with more is FJ_EINVAL. */
#define FJ_LP_MAX_TAGS 256
#define FJ_LP_MAX_FIELDS 1024

/* How a token is escaped. FJ_LP_RAW: p[0..n) is the value itself (the fast, common case).
 * Otherwise the value is p[0..n) with the escapes of that token kind removed; use
 * fj_lp_unescape, fj_lp_str_dup or fj_lp_str_eq. A backslash that escapes nothing stays. */
typedef enum fj_lp_esc {
    FJ_LP_RAW = 0,
    FJ_LP_ESC_NAME,   /* measurement: `\,` `\ ` */
    FJ_LP_ESC_KEY,    /* tag key, tag value, field key: `\,` `\=` `\ ` */
    FJ_LP_ESC_STRING  /* string field value: `\"` `\\` `\n` `\r` `\t` */
} fj_lp_esc;

typedef struct fj_lp_str {
    const char *p; /* the raw (still escaped) bytes in the body; the value is valid UTF-8, and a
                      string value may hold control bytes, NUL and newlines */
    size_t n;
    fj_lp_esc esc;
} fj_lp_str;

typedef struct fj_lp_tag {
    fj_lp_str key, value; /* both non-empty */
} fj_lp_tag;

typedef enum fj_lp_ftype {
    FJ_LP_FLOAT, /* 1.5, -2, .5e3 */
    FJ_LP_INT,   /* 42i */
    FJ_LP_UINT,  /* 42u */
    FJ_LP_BOOL,  /* t T true True TRUE f F false False FALSE */
    FJ_LP_STRING /* "..." */
} fj_lp_ftype;

typedef struct fj_lp_field {
    fj_lp_str key;
    fj_lp_ftype type;
    union {
        double f; /* finite */
        int64_t i;
        uint64_t u;
        bool b;
        fj_lp_str s;
    } v;
} fj_lp_field;

typedef struct fj_lp_line {
    fj_lp_str measurement;
    const fj_lp_tag *tags; /* body order, keys unique; owned by the parser */
    size_t n_tags;
    const fj_lp_field *fields; /* body order, n_fields >= 1; owned by the parser */
    size_t n_fields;
    bool has_time;
    int64_t time;  /* as written, in the body's unit: scale it with fj_lp_time_to_ns and the unit
                      from fj_lp_precision_parse or fj_lp_infer_unit. Without a timestamp InfluxDB
                      uses the arrival time truncated to the precision. */
    size_t lineno; /* 1-based line of the measurement */
} fj_lp_line;

typedef struct fj_lp_parser fj_lp_parser;

/* A parser positioned at the first line of body[0..len) (need not be NUL-terminated; may hold
 * NUL bytes). NULL on out-of-memory. */
fj_lp_parser *fj_lp_parser_create(const char *body, size_t len);

/* Starts over on another body, keeping the scratch memory. */
void fj_lp_reset(fj_lp_parser *p, const char *body, size_t len);

/* Frees the parser and its tag/field arrays (not the body). NULL is a no-op. */
void fj_lp_parser_destroy(fj_lp_parser *p);

/* True when only blank lines and comments remain.
 * Loop: `while (!fj_lp_done(p)) { st = fj_lp_next(p, &line, &err); ... }`. */
bool fj_lp_done(const fj_lp_parser *p);

/* Parses the next line into *line. Blank lines and comments are skipped; `\n`, `\r\n` and a final
 * `\r` end lines. Returns
 *   FJ_OK        *line is valid until the next call on p (its arrays are reused);
 *   FJ_EINVAL    the line is bad: err gets code "invalid", path "line L, column C" (1-based,
 *                column in bytes) and the reason (no body bytes are copied into it); the rest of
 *                that line is skipped and the next call goes on after it (InfluxDB's partial
 *                write; a caller wanting cc-metric-store's behaviour stops here);
 *   FJ_ENOMEM    the tag/field arrays could not grow; the line is skipped as for FJ_EINVAL;
 *   FJ_ENOTFOUND the body is exhausted (fj_lp_done is true); *line untouched.
 * err may be NULL. */
fj_status fj_lp_next(fj_lp_parser *p, fj_lp_line *line, fj_err *err);

/* Line and column (1-based) of the last FJ_EINVAL from fj_lp_next; 0, 0 before any. */
void fj_lp_error_pos(const fj_lp_parser *p, size_t *line, size_t *column);

/* Writes the unescaped value of s to dst (room for s->n bytes; no NUL added); returns its length
 * (<= s->n). */
size_t fj_lp_unescape(const fj_lp_str *s, char *dst);

/* The unescaped value as a NUL-terminated copy in a (length in *len if len is not NULL; a string
 * value may contain NUL bytes). NULL on out-of-memory. */
char *fj_lp_str_dup(fj_arena *a, const fj_lp_str *s, size_t *len);

/* Whether the unescaped value of s equals the NUL-terminated lit. No allocation. */
bool fj_lp_str_eq(const fj_lp_str *s, const char *lit);

/* Nanoseconds per unit of a write request's `precision`: "ns"/"n" 1, "us"/"u"/"µs"/"μs" 1e3,
 * "ms" 1e6, "s" 1e9 (InfluxDB v2's set), and v1's "m" 60e9 and "h" 3600e9. NULL or "" mean the
 * parameter was absent: ns, as in InfluxDB. Anything else: FJ_EINVAL. */
fj_status fj_lp_precision_parse(const char *s, int64_t *ns_per_unit);

/* Nanoseconds per unit guessed from a timestamp's magnitude, as cc-metric-store means to (it
 * ignores `precision` and tries s, ms, us, ns in turn): the coarsest unit in which ts still fits
 * int64 nanoseconds. So |ts| <= 9223372036 (until 2262-04-11 in s) is seconds, up to 9223372036854 is
 * milliseconds, up to 9223372036854775 microseconds, beyond that nanoseconds. (cc-metric-store's
 * fallback in fact re-reads an already consumed timestamp and gets the arrival time instead; we
 * do not copy that.) */
int64_t fj_lp_infer_unit(int64_t ts);

/* *ns = t * ns_per_unit; FJ_EINVAL when that overflows int64 (InfluxDB refuses such lines). */
fj_status fj_lp_time_to_ns(int64_t t, int64_t ns_per_unit, int64_t *ns);

#endif
