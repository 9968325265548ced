/* params.h — the query API's parameters: declared per endpoint (name, type, documentation) and
 * parsed in one place, so every bad parameter answers 400 naming it and why, and the OpenAPI
 * document is generated from the same declarations. Also the opaque page cursors. Pure (no HTTP,
 * no clock): unit-tested directly. */
#ifndef FJ_PARAMS_H
#define FJ_PARAMS_H

#include "arena.h"
#include "fj_status.h"
#include "storage/core/store.h"
#include "storage/core/store_query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum fj_ptype {
    FJ_PT_STRING,   /* nonempty text */
    FJ_PT_TIME,     /* RFC 3339, epoch seconds, `now` or `now-DURATION` */
    FJ_PT_DURATION, /* seconds, or a number with s, m, h, d, w */
    FJ_PT_INT,      /* integer */
    FJ_PT_NUMBER,   /* finite real */
    FJ_PT_KB,       /* kibibytes: a number, or with K, M, G, T (KiB, MiB, ...) */
    FJ_PT_BOOL,     /* true/false, 1/0, yes/no */
    FJ_PT_ENUM,     /* one of `values` ("a|b|c"); i is its index */
    FJ_PT_LIST,     /* comma-separated strings; repeatable */
    FJ_PT_INTLIST,  /* comma-separated integers; repeatable */
    FJ_PT_HOSTS,    /* host patterns (hostpat.h); repeatable; kept as given */
    FJ_PT_CURSOR    /* an opaque page cursor */
} fj_ptype;

typedef struct fj_pspec {
    const char *name;   /* NULL ends a list */
    fj_ptype type;
    const char *doc;
    const char *values; /* ENUM: "a|b|c" */
    bool required;
    int64_t min;        /* INT: smallest value allowed (when min < max) */
    int64_t max;
} fj_pspec;

typedef struct fj_pval {
    bool set;
    int64_t i;         /* TIME, DURATION, INT, BOOL (0/1), ENUM (index) */
    double d;          /* NUMBER, KB */
    const char *s;     /* the text as given (first occurrence) */
    const char **list; /* LIST, HOSTS: the items */
    int64_t *ints;     /* INTLIST */
    size_t n;
} fj_pval;

typedef struct fj_arg {
    const char *name, *value; /* value NULL for a bare `?name` */
} fj_arg;

typedef struct fj_params {
    const fj_pspec *spec;
    fj_pval *v; /* parallel to spec */
    size_t n;
} fj_params;

/* Parses args against spec (NULL-name terminated) into *out (arena memory). Refused, with
 * FJ_EINVAL and err->path the parameter name: unknown names (except `u` and `p`, InfluxDB's
 * credentials), a value that does not parse, a repeated non-list parameter, a missing required
 * one. now is the wall clock, for `now`. */
fj_status fj_params_parse(fj_arena *a, const fj_pspec *spec, const fj_arg *args, size_t n_args, fj_time now,
                          fj_params *out, fj_err *err);

/* The parsed value of a declared name (an unset value for names not declared). */
const fj_pval *fj_param(const fj_params *p, const char *name);

fj_status fj_parse_duration(const char *s, int64_t *out);
fj_status fj_parse_kb(const char *s, double *out);
fj_status fj_parse_bool(const char *s, bool *out);
fj_status fj_parse_time(const char *s, fj_time now, fj_time *out);

/* A cursor is base64url of "tag|value|id|text": tag binds it to one endpoint and order, so a
 * cursor from another listing is refused rather than misread. out needs 256 bytes. */
#define FJ_CURSOR_MAX 256
void fj_cursor_encode(const char *tag, const fj_qpos *pos, char out[FJ_CURSOR_MAX]);
/* FJ_EINVAL when malformed or made for another tag. */
fj_status fj_cursor_decode(const char *tag, const char *cursor, fj_qpos *pos);

#endif
