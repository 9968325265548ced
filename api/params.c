/* params.c — parsing and checking of the query API's parameters, and page cursors. */
#include "api/params.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const fj_pval unset;

const fj_pval *fj_param(const fj_params *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->spec[i].name, name) == 0)
            return &p->v[i];
    return &unset;
}

static bool parse_i64(const char *s, int64_t *out)
{
    if (!*s || isspace((unsigned char)*s))
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno)
        return false;
    *out = v;
    return true;
}

static bool parse_real(const char *s, double *out, char **end)
{
    if (!*s || isspace((unsigned char)*s))
        return false;
    errno = 0;
    double v = strtod(s, end);
    if (*end == s || errno || !isfinite(v))
        return false;
    *out = v;
    return true;
}

fj_status fj_parse_duration(const char *s, int64_t *out)
{
    char *end;
    double v;
    if (!parse_real(s, &v, &end) || v < 0)
        return FJ_EINVAL;
    double mul = 1;
    if (*end) {
        switch (*end) {
        case 's': mul = 1; break;
        case 'm': mul = 60; break;
        case 'h': mul = 3600; break;
        case 'd': mul = 86400; break;
        case 'w': mul = 7 * 86400; break;
        default: return FJ_EINVAL;
        }
        if (end[1])
            return FJ_EINVAL;
    }
    double r = v * mul;
    if (r > 1e15)
        return FJ_EINVAL;
    *out = (int64_t)llround(r);
    return FJ_OK;
}

fj_status fj_parse_kb(const char *s, double *out)
{
    char *end;
    double v;
    if (!parse_real(s, &v, &end) || v < 0)
        return FJ_EINVAL;
    double mul = 1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mul = 1; break;
        case 'M': mul = 1024.0; break;
        case 'G': mul = 1024.0 * 1024; break;
        case 'T': mul = 1024.0 * 1024 * 1024; break;
        default: return FJ_EINVAL;
        }
        const char *rest = end + 1;
        if (strcmp(rest, "") != 0 && strcmp(rest, "B") != 0 && strcmp(rest, "iB") != 0 && strcmp(rest, "b") != 0)
            return FJ_EINVAL;
    }
    *out = v * mul;
    return FJ_OK;
}

fj_status fj_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return FJ_OK;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return FJ_OK;
        }
    }
    return FJ_EINVAL;
}

fj_status fj_parse_time(const char *s, fj_time now, fj_time *out)
{
    if (strcmp(s, "now") == 0) {
        *out = now;
        return FJ_OK;
    }
    if (strncmp(s, "now-", 4) == 0) {
        int64_t d;
        if (fj_parse_duration(s + 4, &d) != FJ_OK)
            return FJ_EINVAL;
        *out = now - d;
        return FJ_OK;
    }
    fj_time t;
    if (fj_time_parse_param(s, &t) != FJ_OK || t < 0)
        return FJ_EINVAL;
    *out = t;
    return FJ_OK;
}

/* Index of v in "a|b|c", or -1. */
static int enum_index(const char *values, const char *v)
{
    int i = 0;
    size_t n = strlen(v);
    for (const char *p = values; p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0)
            return i;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

static fj_status bad(fj_err *err, const char *name, const char *why)
{
    return fj_err_set(err, FJ_EINVAL, name, "parameter '%s': %s", name, why);
}

/* Appends the comma-separated items of value to the list of v. */
static fj_status add_items(fj_arena *a, const fj_pspec *sp, fj_pval *v, const char *value, fj_err *err)
{
    size_t extra = 1;
    for (const char *p = value; *p; p++)
        extra += *p == ',';
    size_t cap = v->n + extra;
    const char **list = NULL;
    int64_t *ints = NULL;
    if (sp->type == FJ_PT_INTLIST) {
        if (!(ints = fj_arena_alloc(a, cap * sizeof *ints)))
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        if (v->n)
            memcpy(ints, v->ints, v->n * sizeof *ints);
    } else {
        if (!(list = fj_arena_alloc(a, cap * sizeof *list)))
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        if (v->n)
            memcpy(list, v->list, v->n * sizeof *list);
    }
    size_t n = v->n;
    if (sp->type == FJ_PT_HOSTS) { /* commas inside node ranges belong to them: hostpat splits */
        list[n++] = value;
    } else {
        const char *p = value;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char *item = fj_arena_strndup(a, p, len);
            if (!item)
                return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            if (!*item)
                return bad(err, sp->name, "empty item in the list");
            if (sp->type == FJ_PT_INTLIST) {
                if (!parse_i64(item, &ints[n]) || ints[n] < 0)
                    return fj_err_set(err, FJ_EINVAL, sp->name, "parameter '%s': '%s' is not a nonnegative integer",
                                      sp->name, item);
                n++;
            } else {
                list[n++] = item;
            }
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    v->list = list;
    v->ints = ints;
    v->n = n;
    return FJ_OK;
}

static fj_status parse_one(fj_arena *a, const fj_pspec *sp, fj_pval *v, const char *value, fj_time now, fj_err *err)
{
    const char *name = sp->name;
    bool list = sp->type == FJ_PT_LIST || sp->type == FJ_PT_INTLIST || sp->type == FJ_PT_HOSTS;
    if (v->set && !list)
        return bad(err, name, "given more than once");
    if (!value || !*value)
        return bad(err, name, "empty value");
    if (!v->set)
        v->s = value;
    v->set = true;
    bool b;
    switch (sp->type) {
    case FJ_PT_STRING:
    case FJ_PT_CURSOR: return FJ_OK;
    case FJ_PT_TIME:
        if (fj_parse_time(value, now, &v->i) != FJ_OK)
            return bad(err, name, "not a time: use RFC 3339 (2025-11-25T10:00:00Z), epoch seconds, now or now-2h");
        return FJ_OK;
    case FJ_PT_DURATION:
        if (fj_parse_duration(value, &v->i) != FJ_OK)
            return bad(err, name, "not a duration: use seconds or a number with s, m, h, d or w (15m, 6h)");
        return FJ_OK;
    case FJ_PT_INT:
        if (!parse_i64(value, &v->i))
            return bad(err, name, "not an integer");
        if (sp->min < sp->max && (v->i < sp->min || v->i > sp->max))
            return fj_err_set(err, FJ_EINVAL, name, "parameter '%s': must be %lld to %lld", name,
                              (long long)sp->min, (long long)sp->max);
        return FJ_OK;
    case FJ_PT_NUMBER: {
        char *end;
        if (!parse_real(value, &v->d, &end) || *end)
            return bad(err, name, "not a number");
        return FJ_OK;
    }
    case FJ_PT_KB:
        if (fj_parse_kb(value, &v->d) != FJ_OK)
            return bad(err, name, "not a size: use kibibytes, or a number with K, M, G or T (16G)");
        return FJ_OK;
    case FJ_PT_BOOL:
        if (fj_parse_bool(value, &b) != FJ_OK)
            return bad(err, name, "not a boolean: use true or false");
        v->i = b;
        return FJ_OK;
    case FJ_PT_ENUM: {
        int i = enum_index(sp->values, value);
        if (i < 0) {
            char why[320];
            snprintf(why, sizeof why, "'%.60s' is not one of %s", value, sp->values);
            for (char *p = why; *p; p++)
                if (*p == '|')
                    *p = ',';
            return bad(err, name, why);
        }
        v->i = i;
        return FJ_OK;
    }
    case FJ_PT_LIST:
    case FJ_PT_INTLIST:
    case FJ_PT_HOSTS: return add_items(a, sp, v, value, err);
    }
    return FJ_OK;
}

/* Levenshtein distance, capped at 99 (names are short). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return 99;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof *prev);
    }
    return prev[lb];
}

fj_status fj_params_parse(fj_arena *a, const fj_pspec *spec, const fj_arg *args, size_t n_args, fj_time now,
                          fj_params *out, fj_err *err)
{
    size_t n = 0;
    while (spec[n].name)
        n++;
    out->spec = spec;
    out->n = n;
    out->v = fj_arena_calloc(a, n + 1, sizeof *out->v);
    if (!out->v)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < n_args; i++) {
        const char *name = args[i].name;
        if (strcmp(name, "u") == 0 || strcmp(name, "p") == 0)
            continue;
        size_t j = 0;
        while (j < n && strcmp(spec[j].name, name) != 0)
            j++;
        if (j == n) {
            size_t best = n, best_d = 3; /* suggest a name within two edits */
            for (size_t k = 0; k < n; k++) {
                size_t d = edit_distance(name, spec[k].name);
                if (d < best_d)
                    best = k, best_d = d;
            }
            if (best < n)
                return fj_err_set(err, FJ_EINVAL, name, "parameter '%.60s': unknown; did you mean '%s'?", name,
                                  spec[best].name);
            return fj_err_set(err, FJ_EINVAL, name,
                              "parameter '%.60s': unknown here (the parameters are in /api/v1/openapi.json)", name);
        }
        fj_status st = parse_one(a, &spec[j], &out->v[j], args[i].value, now, err);
        if (st != FJ_OK)
            return st;
    }
    for (size_t j = 0; j < n; j++)
        if (spec[j].required && !out->v[j].set)
            return bad(err, spec[j].name, "required");
    return FJ_OK;
}

/* --- cursors ------------------------------------------------------------------------------- */

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void fj_cursor_encode(const char *tag, const fj_qpos *pos, char out[FJ_CURSOR_MAX])
{
    char raw[FJ_CURSOR_MAX * 3 / 4 - 4];
    int n = snprintf(raw, sizeof raw, "%s|%.17g|%lld|%s", tag, pos->v, (long long)pos->id, pos->s);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t w = (uint32_t)(unsigned char)raw[i] << 16;
        if (i + 1 < len)
            w |= (uint32_t)(unsigned char)raw[i + 1] << 8;
        if (i + 2 < len)
            w |= (unsigned char)raw[i + 2];
        out[o++] = b64url[(w >> 18) & 63];
        out[o++] = b64url[(w >> 12) & 63];
        if (i + 1 < len)
            out[o++] = b64url[(w >> 6) & 63];
        if (i + 2 < len)
            out[o++] = b64url[w & 63];
    }
    out[o] = '\0';
}

fj_status fj_cursor_decode(const char *tag, const char *cursor, fj_qpos *pos)
{
    char raw[FJ_CURSOR_MAX];
    size_t len = strlen(cursor), o = 0;
    if (len >= FJ_CURSOR_MAX || len % 4 == 1)
        return FJ_EINVAL;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        const char *p = strchr(b64url, cursor[i]);
        if (!p || !cursor[i])
            return FJ_EINVAL;
        acc = (acc << 6) | (uint32_t)(p - b64url);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            raw[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    raw[o] = '\0';
    if (memchr(raw, '\0', o))
        return FJ_EINVAL;
    size_t tl = strlen(tag);
    if (strncmp(raw, tag, tl) != 0 || raw[tl] != '|')
        return FJ_EINVAL;
    char *p = raw + tl + 1, *end;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p || *end != '|' || errno || !isfinite(v))
        return FJ_EINVAL;
    p = end + 1;
    long long id = strtoll(p, &end, 10);
    if (end == p || *end != '|' || errno)
        return FJ_EINVAL;
    p = end + 1;
    if (strlen(p) >= sizeof pos->s)
        return FJ_EINVAL;
    pos->set = true;
    pos->v = v;
    pos->id = id;
    snprintf(pos->s, sizeof pos->s, "%s", p);
    return FJ_OK;
}
