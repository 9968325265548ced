/* api/influxql/select.c — SELECT: which series a statement reads (FROM, WHERE on tags), their points
 * (the store's ts_read_many, stored chunks merged with the live engine), grouped as GROUP BY says,
 * then either the raw rows or aggregates per time bucket with fill, transformations (derivative,
 * difference, moving_average, cumulative_sum) and arithmetic, as InfluxDB 1.6 answers them. */
#include "api/influxql/iq_int.h"

#include "storage/core/store_ts.h"
#include "storage/query/influx_catalog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BUCKETS 2000000
#define NSEC 1000000000LL

/* --- the statement's shape ------------------------------------------------------------------------ */

/* FN_ROWS: functions that answer several rows a bucket (distinct, top, bottom). */
typedef enum { FN_NONE, FN_AGG, FN_SELECTOR, FN_TRANSFORM, FN_ROWS } fn_class;

static fn_class classify(const char *name)
{
    static const char *const aggs[] = {"mean", "median", "sum", "count", "spread", "stddev", "mode", "integral", NULL};
    static const char *const sels[] = {"min", "max", "first", "last", "percentile", NULL};
    static const char *const trans[] = {"derivative", "non_negative_derivative", "difference",
                                        "non_negative_difference", "moving_average", "cumulative_sum", "elapsed", NULL};
    for (size_t i = 0; aggs[i]; i++)
        if (!strcmp(aggs[i], name))
            return FN_AGG;
    for (size_t i = 0; sels[i]; i++)
        if (!strcmp(sels[i], name))
            return FN_SELECTOR;
    for (size_t i = 0; trans[i]; i++)
        if (!strcmp(trans[i], name))
            return FN_TRANSFORM;
    if (!strcmp(name, "distinct") || !strcmp(name, "top") || !strcmp(name, "bottom") || !strcmp(name, "sample"))
        return FN_ROWS;
    return FN_NONE;
}

static bool has_call(const iq_expr *e)
{
    if (!e)
        return false;
    if (e->k == IQ_CALL)
        return true;
    return e->k == IQ_BIN && (has_call(e->l) || has_call(e->r));
}

static bool has_transform(const iq_expr *e)
{
    if (!e)
        return false;
    if (e->k == IQ_CALL)
        return classify(e->s) == FN_TRANSFORM;
    return e->k == IQ_BIN && (has_transform(e->l) || has_transform(e->r));
}

/* A duration as InfluxQL writes it: in the largest unit that divides it (1h, 90s, 1500ms). */
static void fmt_dur(char *dst, size_t cap, int64_t d)
{
    static const struct {
        int64_t ns;
        const char *u;
    } units[] = {{7 * 86400 * NSEC, "w"}, {86400 * NSEC, "d"}, {3600 * NSEC, "h"}, {60 * NSEC, "m"},
                 {NSEC, "s"},          {1000000, "ms"},      {1000, "u"},        {1, "ns"}};
    size_t i = 0;
    while (d && i + 1 < sizeof units / sizeof units[0] && d % units[i].ns)
        i++;
    if (!d)
        i = 4; /* 0s */
    snprintf(dst, cap, "%lld%s", (long long)(d / units[i].ns), units[i].u);
}

/* A unit argument (derivative, elapsed, integral) must be a positive duration: InfluxDB's words. */
static bool positive_unit(const iq_expr *e, char *msg, size_t cap)
{
    if (e->nargs != 2 || e->args[1]->k != IQ_DUR || e->args[1]->dur > 0)
        return true;
    char d[48];
    fmt_dur(d, sizeof d, e->args[1]->dur);
    return snprintf(msg, cap, "duration argument must be positive, got %s", d), false;
}

/* top(field[, tag ...], N) and bottom(...): InfluxDB's checks and words. */
static bool check_top(const iq_expr *e, char *msg, size_t cap)
{
    if (e->nargs < 2)
        return snprintf(msg, cap, "invalid number of arguments for %s, expected at least 2, got %zu", e->s, e->nargs),
               false;
    const iq_expr *f = e->args[0], *n = e->args[e->nargs - 1];
    if (f->k != IQ_REF)
        return snprintf(msg, cap, "expected first argument to be a field in %s(), found %s", e->s,
                        f->k == IQ_WILD ? "*" : f->k == IQ_REGEX ? "a regular expression" : "another kind"),
               false;
    for (size_t i = 1; i + 1 < e->nargs; i++)
        if (e->args[i]->k != IQ_REF)
            return snprintf(msg, cap, "only fields or tags are allowed in %s(), found '%s'", e->s,
                            e->args[i]->k == IQ_STR ? e->args[i]->s : "?"),
                   false;
    if (n->k != IQ_NUM || n->num != floor(n->num))
        return n->k == IQ_NUM ? snprintf(msg, cap, "expected integer as last argument in %s(), found %.3f", e->s, n->num)
                              : snprintf(msg, cap, "expected integer as last argument in %s()", e->s),
               false;
    if (n->num < 1)
        return snprintf(msg, cap, "limit (%.0f) in %s function must be at least 1", n->num, e->s), false;
    return true;
}

/* Checks every call: known, with the arguments InfluxDB takes. */
static bool check_calls(const iq_expr *e, bool group_time, char *msg, size_t cap)
{
    if (!e)
        return true;
    if (e->k == IQ_BIN)
        return check_calls(e->l, group_time, msg, cap) && check_calls(e->r, group_time, msg, cap);
    if (e->k != IQ_CALL)
        return true;
    fn_class fc = classify(e->s);
    if (fc == FN_NONE)
        return snprintf(msg, cap, "undefined function %s()", e->s), false;
    if (fc == FN_TRANSFORM) {
        bool ma = !strcmp(e->s, "moving_average");
        bool der = strstr(e->s, "derivative") != NULL || !strcmp(e->s, "elapsed");
        size_t want_min = ma ? 2 : 1, want_max = ma ? 2 : der ? 2 : 1;
        if (e->nargs < want_min || e->nargs > want_max)
            return snprintf(msg, cap, "invalid number of arguments for %s, expected %zu, got %zu", e->s, want_min,
                            e->nargs),
                   false;
        const iq_expr *in = e->args[0];
        if (!group_time && in->k == IQ_CALL)
            return snprintf(msg, cap, "%s aggregate requires a GROUP BY interval", e->s), false;
        if (group_time && in->k != IQ_CALL)
            return snprintf(msg, cap, "aggregate function required inside the call to %s", e->s), false;
        if (in->k == IQ_CALL && classify(in->s) != FN_AGG && classify(in->s) != FN_SELECTOR)
            return snprintf(msg, cap, "unsupported call inside %s: %s()", e->s, in->s), false;
        if (in->k == IQ_CALL && !check_calls(in, group_time, msg, cap))
            return false;
        if (in->k != IQ_CALL && in->k != IQ_REF && in->k != IQ_WILD && in->k != IQ_REGEX)
            return snprintf(msg, cap, "expected field argument in %s()", e->s), false;
        if (ma && (e->args[1]->k != IQ_NUM || e->args[1]->num < 1))
            return snprintf(msg, cap, "second argument for moving_average must be an integer, got %s",
                            e->args[1]->k == IQ_NUM ? "a number below 1" : "another kind"),
                   false;
        if (!strcmp(e->s, "elapsed") && e->nargs == 2 && e->args[1]->k != IQ_DUR) /* in InfluxDB's words */
            return snprintf(msg, cap, "second argument to elapsed must be a duration, got *influxql.%s",
                            e->args[1]->k == IQ_STR    ? "StringLiteral"
                            : e->args[1]->k == IQ_NUM  ? (e->args[1]->num == floor(e->args[1]->num) ? "IntegerLiteral"
                                                                                                     : "NumberLiteral")
                            : e->args[1]->k == IQ_REF  ? "VarRef"
                            : e->args[1]->k == IQ_BOOL ? "BooleanLiteral"
                                                       : "Call"),
                   false;
        if (der && e->nargs == 2 && e->args[1]->k != IQ_DUR)
            return snprintf(msg, cap, "second argument to %s must be a duration", e->s), false;
        if (der && !positive_unit(e, msg, cap))
            return false;
        return true;
    }
    bool pct = !strcmp(e->s, "percentile");
    if (!strcmp(e->s, "integral") && (e->nargs < 1 || e->nargs > 2))
        return snprintf(msg, cap, "invalid number of arguments for integral, expected 1-2, got %zu", e->nargs), false;
    if (!strcmp(e->s, "integral") && e->nargs == 2 && e->args[1]->k != IQ_DUR)
        return snprintf(msg, cap, "second argument must be a duration"), false;
    if (!strcmp(e->s, "integral") && !positive_unit(e, msg, cap))
        return false;
    if (!strcmp(e->s, "integral") &&
        (e->args[0]->k == IQ_REF || e->args[0]->k == IQ_WILD || e->args[0]->k == IQ_REGEX))
        return true; /* a wildcard: one call per field (expand_calls) */
    if (!strcmp(e->s, "sample")) { /* sample(f, N): in InfluxDB's words */
        if (e->nargs != 2)
            return snprintf(msg, cap, "invalid number of arguments for sample, expected 2, got %zu", e->nargs), false;
        if (e->args[1]->k != IQ_NUM || e->args[1]->num != floor(e->args[1]->num))
            return snprintf(msg, cap, "expected integer argument in sample()"), false;
        if (e->args[1]->num < 1)
            return snprintf(msg, cap, "sample window must be greater than 1, got %.0f", e->args[1]->num), false;
        if (e->args[0]->k != IQ_REF && e->args[0]->k != IQ_WILD && e->args[0]->k != IQ_REGEX)
            return snprintf(msg, cap, "expected field argument in sample()"), false;
        return true;
    }
    if (fc == FN_ROWS && strcmp(e->s, "distinct")) /* top(f[, tag...], N), bottom(...) */
        return check_top(e, msg, cap);
    if (fc == FN_ROWS && e->nargs > 1)
        return snprintf(msg, cap, "distinct function can only have one argument"), false;
    if (fc == FN_ROWS && (e->nargs != 1 || e->args[0]->k != IQ_REF)) /* distinct takes no wildcard */
        return snprintf(msg, cap, "expected field argument in %s()", e->s), false;
    /* count(distinct(field)): the number of distinct values */
    if (!strcmp(e->s, "count") && e->nargs == 1 && e->args[0]->k == IQ_CALL && !strcmp(e->args[0]->s, "distinct"))
        return check_calls(e->args[0], group_time, msg, cap);
    if (e->nargs != (pct ? 2u : 1u))
        return snprintf(msg, cap, "invalid number of arguments for %s, expected %d, got %zu", e->s, pct ? 2 : 1,
                        e->nargs),
               false;
    if (e->args[0]->k == IQ_WILD || e->args[0]->k == IQ_REGEX) /* one call per field (expand_calls) */
        return !pct || e->args[1]->k == IQ_NUM ? true
                                               : (snprintf(msg, cap, "expected float argument in percentile()"), false);
    if (e->args[0]->k == IQ_CALL)
        return snprintf(msg, cap, "%s() cannot take a call as its argument", e->s), false;
    if (e->args[0]->k != IQ_REF)
        return snprintf(msg, cap, "expected field argument in %s()", e->s), false;
    if (pct && e->args[1]->k != IQ_NUM)
        return snprintf(msg, cap, "expected float argument in percentile()"), false;
    return true;
}

/* The column's name, as InfluxDB names it: a call by its function, a field by its name, and
 * arithmetic by its operands' names joined with '_'. */
static void name_of(const iq_expr *e, fj_buf *b)
{
    switch (e->k) {
    case IQ_REF: fj_buf_puts(b, e->s); break;
    case IQ_CALL: fj_buf_puts(b, e->s); break;
    case IQ_BIN: {
        size_t before = b->len;
        name_of(e->l, b);
        size_t mid = b->len;
        if (mid > before)
            fj_buf_puts(b, "_");
        size_t after_sep = b->len;
        name_of(e->r, b);
        if (b->len == after_sep && after_sep > mid) /* nothing on the right: drop the separator */
            b->len = mid;
        if (b->data)
            b->data[b->len] = '\0';
        break;
    }
    default: break;
    }
}

/* --- points --------------------------------------------------------------------------------------- */

/* The rows of one group: times (sorted), per row the series it came from and k field values
 * (NaN: none). */
typedef struct rows {
    int64_t *t;
    double *v;
    const iq_iser **is;
    size_t n, cap, k;
} rows;

static bool rows_push(fj_arena *a, rows *r, int64_t t, const double *v, const iq_iser *is)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        int64_t *nt = fj_arena_alloc(a, cap * sizeof *nt);
        double *nv = fj_arena_alloc(a, cap * r->k * sizeof *nv + 1);
        const iq_iser **ni = fj_arena_alloc(a, cap * sizeof *ni);
        if (!nt || !nv || !ni)
            return false;
        if (r->n) {
            memcpy(nt, r->t, r->n * sizeof *nt);
            memcpy(nv, r->v, r->n * r->k * sizeof *nv);
            memcpy(ni, r->is, r->n * sizeof *ni);
        }
        r->t = nt;
        r->v = nv;
        r->is = ni;
        r->cap = cap;
    }
    r->t[r->n] = t;
    memcpy(&r->v[r->n * r->k], v, r->k * sizeof *v);
    r->is[r->n] = is;
    r->n++;
    return true;
}

static __thread const rows *t_sort_rows; /* qsort has no context argument: one sort at a time per thread */

static int cmp_row(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    const rows *r = t_sort_rows;
    if (r->t[a] != r->t[b])
        return r->t[a] < r->t[b] ? -1 : 1;
    return a < b ? -1 : a > b; /* stable: series order among equal times */
}

/* Sorts rows by time, keeping the order of the series among equal times. */
static bool rows_sort(fj_arena *a, rows *r)
{
    bool sorted = true;
    for (size_t i = 1; i < r->n && sorted; i++)
        sorted = r->t[i - 1] <= r->t[i];
    if (sorted)
        return true;
    size_t *idx = fj_arena_alloc(a, r->n * sizeof *idx);
    int64_t *nt = fj_arena_alloc(a, r->n * sizeof *nt);
    double *nv = fj_arena_alloc(a, r->n * r->k * sizeof *nv + 1);
    const iq_iser **ni = fj_arena_alloc(a, r->n * sizeof *ni);
    if (!idx || !nt || !nv || !ni)
        return false;
    for (size_t i = 0; i < r->n; i++)
        idx[i] = i;
    t_sort_rows = r;
    qsort(idx, r->n, sizeof *idx, cmp_row);
    for (size_t i = 0; i < r->n; i++) {
        nt[i] = r->t[idx[i]];
        memcpy(&nv[i * r->k], &r->v[idx[i] * r->k], r->k * sizeof *nv);
        ni[i] = r->is[idx[i]];
    }
    r->t = nt;
    r->v = nv;
    r->is = ni;
    r->cap = r->n;
    return true;
}

/* --- the statement as it runs ---------------------------------------------------------------------- */

typedef struct group {
    const char **kv;       /* the GROUP BY tags' values */
    const iq_iser **isers; /* its series, in catalog order */
    size_t n;
    rows r;
} group;

typedef struct run {
    iq_ctx *c;
    const iq_stmt *st;
    const iq_meas *m;
    const iq_catalog *cat;
    const iq_expr *rest;
    bool rest_fields;
    int64_t tmin, tmax;
    const char **need; /* the fields read, by name */
    size_t nneed;
    const char **gkeys; /* GROUP BY tag keys */
    size_t ngkeys;
    iq_field *fields; /* after * is expanded */
    size_t nfields;
    char *msg;
    size_t cap;
    /* Field types (docs/metrics.md, "Field types"): per need, the field's type (fj_ts_ftype); a
     * string's value in a row is its index in sv, a boolean's 1 or 0. */
    uint8_t *ntype;
    const char **sv;
    size_t ns, scap;
    uint64_t rng; /* sample()'s random choices (xorshift; never 0) */
    const iq_subdata *sub; /* FROM (SELECT ...): the subquery's points */
} run;

/* The string whose index is x, or NULL when x is none. */
static const char *str_at(const run *u, double x)
{
    if (!(x >= 0) || x >= (double)u->ns)
        return NULL;
    return u->sv[(size_t)x];
}

/* Adds v[0..len) to the string table: its index, or -1 when out of memory. */
static long add_string(run *u, const char *v, size_t len)
{
    fj_arena *a = u->c->a;
    if (u->ns == u->scap) {
        size_t cap = u->scap ? u->scap * 2 : 256;
        const char **ns = fj_arena_alloc(a, cap * sizeof *ns);
        if (!ns)
            return -1;
        if (u->ns)
            memcpy(ns, u->sv, u->ns * sizeof *ns);
        u->sv = ns;
        u->scap = cap;
    }
    char *c = fj_arena_strndup(a, v, len);
    if (!c)
        return -1;
    u->sv[u->ns] = c;
    return (long)u->ns++;
}

/* An integer field's value as InfluxDB writes an int64 (no exponent); dst has IQ_FMT_MAX bytes. */
static size_t fmt_int(char *dst, double x)
{
    if (!isfinite(x) || fabs(x) >= 9.2e18)
        return iq_fmt_num(dst, x);
    int n = snprintf(dst, IQ_FMT_MAX, "%.0f", x);
    return n > 0 ? (size_t)n : 0;
}

/* A value of a column of type ft: a string or a boolean as such, an integer without exponent,
 * anything else as a number. */
static void put_typed(const run *u, fj_buf *out, uint8_t ft, double x)
{
    const char *str = ft == FJ_TS_STRING ? str_at(u, x) : NULL;
    if (isnan(x))
        fj_buf_puts(out, "null");
    else if (str)
        fj_buf_json_str(out, str);
    else if (ft == FJ_TS_BOOLEAN && (x == 0 || x == 1))
        fj_buf_puts(out, x != 0 ? "true" : "false");
    else if (ft == FJ_TS_INTEGER) {
        char b[IQ_FMT_MAX];
        fj_buf_append(out, b, fmt_int(b, x));
    } else
        iq_put_num(out, x);
}

static long need_index(const run *u, const char *name)
{
    for (size_t i = 0; i < u->nneed; i++)
        if (!strcmp(u->need[i], name))
            return (long)i;
    return -1;
}

static bool is_field(const iq_meas *m, const char *name)
{
    for (size_t i = 0; i < m->nfields; i++)
        if (!strcmp(m->fields[i], name))
            return true;
    return false;
}

static void collect_fields(run *u, const iq_expr *e)
{
    if (!e)
        return;
    if (e->k == IQ_REF && is_field(u->m, e->s) && need_index(u, e->s) < 0 && !iq_meas_has_tag(u->m, e->s))
        u->need[u->nneed++] = e->s;
    if (e->k == IQ_BIN) {
        collect_fields(u, e->l);
        collect_fields(u, e->r);
    }
    if (e->k == IQ_CALL)
        for (size_t i = 0; i < e->nargs; i++)
            collect_fields(u, e->args[i]);
}

typedef struct row_ref {
    const run *u;
    const iq_iser *is;
    const double *v;
} row_ref;

static iq_val ref_row(void *ud, const char *name)
{
    row_ref *rr = ud;
    long j = rr->v ? need_index(rr->u, name) : -1;
    if (j >= 0) {
        double x = rr->v[j];
        if (isnan(x))
            return (iq_val){0};
        uint8_t ft = rr->u->ntype ? rr->u->ntype[j] : FJ_TS_FLOAT;
        if (ft == FJ_TS_STRING) {
            const char *str = str_at(rr->u, x);
            return str ? (iq_val){.k = IQV_STR, .s = str} : (iq_val){0};
        }
        return (iq_val){.k = ft == FJ_TS_BOOLEAN ? IQV_BOOL : IQV_NUM, .n = x};
    }
    if (iq_meas_has_tag(rr->u->m, name) || !is_field(rr->u->m, name))
        return (iq_val){.k = IQV_STR, .s = iq_tag_value(rr->is, name)};
    return (iq_val){0};
}

typedef struct reader {
    const run *u;
    const uint32_t *ids;
    fj_ts_points *copy; /* per id */
    fj_arena *a;
} reader;

static fj_status keep_points(void *ud, size_t i, const fj_ts_points *pts)
{
    reader *rd = ud;
    if (iq_stopped(rd->u->c))
        return FJ_EBUSY; /* ends the read of the other series too */
    fj_ts_points *c = &rd->copy[i];
    c->n = pts->n;
    if (!pts->n)
        return FJ_OK;
    c->t = fj_arena_alloc(rd->a, pts->n * sizeof *c->t);
    c->v = fj_arena_alloc(rd->a, pts->n * sizeof *c->v);
    if (!c->t || !c->v)
        return FJ_ENOMEM;
    memcpy(c->t, pts->t, pts->n * sizeof *c->t);
    memcpy(c->v, pts->v, pts->n * sizeof *c->v);
    return FJ_OK;
}

static int cmp_group(const void *x, const void *y, size_t n)
{
    const group *a = x, *b = y;
    for (size_t i = 0; i < n; i++) {
        int c = strcmp(a->kv[i], b->kv[i]);
        if (c)
            return c;
    }
    return 0;
}

/* A series with its GROUP BY values and its place in the catalog. */
typedef struct keyed {
    const char **kv;
    const iq_iser *is;
    size_t pos;
} keyed;

static __thread size_t t_ngkeys; /* qsort has no context argument */
static int cmp_keyed(const void *x, const void *y)
{
    const keyed *a = x, *b = y;
    int c = cmp_group(&(group){.kv = a->kv}, &(group){.kv = b->kv}, t_ngkeys);
    return c ? c : (a->pos > b->pos) - (a->pos < b->pos);
}

/* --- aggregates -------------------------------------------------------------------------------------- */

static int cmp_dbl(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The aggregates and selectors, resolved once per column rather than by name per bucket. */
typedef enum { AG_COUNT, AG_SUM, AG_MEAN, AG_MIN, AG_MAX, AG_FIRST, AG_LAST, AG_SPREAD, AG_STDDEV, AG_MEDIAN,
               AG_PERCENTILE, AG_MODE, AG_INTEGRAL, AG_NONE } ag_fn;

static ag_fn ag_of(const char *f)
{
    static const char *const names[] = {"count", "sum", "mean", "min", "max", "first", "last", "spread",
                                        "stddev", "median", "percentile", "mode", "integral"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(names[i], f))
            return (ag_fn)i;
    return AG_NONE;
}

/* One aggregate over v[0..n) (time order; times in t), its value and, for a selector, the time
 * of the point it selected. NaN when there is no answer. */
static double aggregate(const iq_expr *call, ag_fn fn, double *v, const int64_t *t, size_t n, int64_t *sel_t)
{
    *sel_t = n ? t[0] : 0;
    if (fn == AG_COUNT)
        return (double)n;
    if (!n)
        return NAN;
    if (fn == AG_SUM || fn == AG_MEAN) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += v[i];
        return fn == AG_SUM ? s : s / (double)n;
    }
    if (fn == AG_MIN || fn == AG_MAX) {
        bool mx = fn == AG_MAX;
        size_t b = 0;
        for (size_t i = 1; i < n; i++)
            if (mx ? v[i] > v[b] : v[i] < v[b])
                b = i;
        *sel_t = t[b];
        return v[b];
    }
    if (fn == AG_FIRST || fn == AG_LAST) {
        /* among points of the same time (several series), the largest value, as InfluxDB's
         * first and last reducers break ties */
        bool last = fn == AG_LAST;
        size_t b = last ? n - 1 : 0;
        for (size_t i = 0; i < n && t[i] == t[b]; i++) /* first: the run at the start */
            if (!last && v[i] > v[b])
                b = i;
        for (size_t i = n; last && i-- > 0 && t[i] == t[n - 1];)
            if (v[i] > v[b])
                b = i;
        *sel_t = t[b];
        return v[b];
    }
    if (fn == AG_SPREAD) {
        double lo = v[0], hi = v[0];
        for (size_t i = 1; i < n; i++) {
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
        }
        return hi - lo;
    }
    if (fn == AG_STDDEV) {
        if (n < 2)
            return NAN;
        double m = 0, s = 0;
        for (size_t i = 0; i < n; i++)
            m += v[i];
        m /= (double)n;
        for (size_t i = 0; i < n; i++)
            s += (v[i] - m) * (v[i] - m);
        return sqrt(s / (double)(n - 1));
    }
    if (fn == AG_MEDIAN) {
        qsort(v, n, sizeof *v, cmp_dbl);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }
    if (fn == AG_PERCENTILE) {
        /* InfluxDB's nearest rank: the value at floor(n * p / 100 + 0.5) - 1 in sorted order, and
         * the time of that point */
        double p = call->args[1]->num;
        long i = (long)floor((double)n * p / 100.0 + 0.5) - 1;
        if (i < 0 || i >= (long)n)
            return NAN;
        size_t *ix = malloc(n * sizeof *ix);
        if (!ix)
            return NAN;
        for (size_t k = 0; k < n; k++)
            ix[k] = k;
        /* a stable selection by value: insertion order breaks ties, as Go's sort.Stable */
        for (size_t a = 1; a < n; a++) {
            size_t x = ix[a], b = a;
            while (b > 0 && v[ix[b - 1]] > v[x]) {
                ix[b] = ix[b - 1];
                b--;
            }
            ix[b] = x;
        }
        double r = v[ix[i]];
        *sel_t = t[ix[i]];
        free(ix);
        return r;
    }
    return NAN;
}

/* --- distinct values -------------------------------------------------------------------------------- */

typedef struct by_value {
    const run *u;
    const double *v;
    uint8_t ft;
} by_value;
static __thread by_value t_by_value; /* qsort has no context argument */

static int cmp_by_value(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    double p = t_by_value.v[a], q = t_by_value.v[b];
    int c;
    if (t_by_value.ft == FJ_TS_STRING) {
        const char *s = str_at(t_by_value.u, p), *t = str_at(t_by_value.u, q);
        c = strcmp(s ? s : "", t ? t : "");
    } else
        c = p < q ? -1 : p > q;
    return c ? c : (a > b) - (a < b); /* the earlier point of a value first */
}

/* Whether x and y are the same value of a field of type ft (strings by text). */
static bool same_value(const run *u, uint8_t ft, double x, double y)
{
    if (ft != FJ_TS_STRING)
        return x == y;
    const char *s = str_at(u, x), *t = str_at(u, y);
    return !strcmp(s ? s : "", t ? t : "");
}

static int cmp_size(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return (a > b) - (a < b);
}

/* The first point of each distinct value among v[0..n) (in time order; a string's value is its
 * index in the run's table, compared by text): their indices into idx, in time order, as
 * InfluxDB's distinct reducer keeps each value's first point and emits them by time. Their count. */
static size_t distinct_points(const run *u, uint8_t ft, const double *v, size_t n, size_t *idx)
{
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    t_by_value = (by_value){u, v, ft};
    qsort(idx, n, sizeof *idx, cmp_by_value);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!k || !same_value(u, ft, v[idx[i]], v[idx[k - 1]]))
            idx[k++] = idx[i];
    }
    qsort(idx, k, sizeof *idx, cmp_size);
    return k;
}

/* The most frequent of v[0..n) (a string's value is its index in the run's table, compared by
 * text); among equally frequent values the smallest (InfluxDB's choice among them follows the
 * order its unstable sort leaves). NaN when n is 0. */
static double mode_of(const run *u, uint8_t ft, const double *v, size_t n, size_t *idx)
{
    if (!n)
        return NAN;
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    t_by_value = (by_value){u, v, ft};
    qsort(idx, n, sizeof *idx, cmp_by_value);
    size_t best = idx[0], most = 0, run_len = 0;
    for (size_t i = 0; i < n; i++) {
        run_len = i && same_value(u, ft, v[idx[i - 1]], v[idx[i]]) ? run_len + 1 : 1;
        if (run_len > most) {
            most = run_len;
            best = idx[i];
        }
    }
    return v[best];
}

/* --- columns over the grid -------------------------------------------------------------------------- */

typedef struct grid {
    int64_t *t; /* bucket starts, or row times */
    size_t n;
    bool buckets; /* GROUP BY time */
    int64_t every, offset;
    const fj_tz *zone; /* tz(): a row's bucket is zone_bucket's, not [t[b], t[b] + every) */
} grid;

static int64_t floor_bucket(int64_t t, int64_t every, int64_t offset)
{
    int64_t m = (t - offset) % every;
    if (m < 0)
        m += every;
    return t - m;
}

/* The start of t's bucket in a zone, as InfluxDB 1.6 computes it (its IteratorOptions.Window):
 * buckets aligned in the local time of t (less the GROUP BY offset), then moved by the change of
 * offset between t and that start when the change is shorter than a bucket (a day across a DST
 * change begins at local midnight). */
static int64_t zone_bucket(const fj_tz *z, int64_t t, int64_t every, int64_t offset)
{
    t -= offset;
    int64_t zone = (int64_t)fj_tz_offset_ns(z, t) * NSEC;
    int64_t dt = (t + zone) % every;
    if (dt < 0)
        dt += every;
    int64_t start = t - dt, o = zone - (int64_t)fj_tz_offset_ns(z, start) * NSEC;
    if (o != 0 && (o < 0 ? -o : o) < every)
        start += o;
    return start + offset;
}

static int64_t bucket_of(const grid *g, int64_t t)
{
    return g->zone ? zone_bucket(g->zone, t, g->every, g->offset) : floor_bucket(t, g->every, g->offset);
}

/* The bucket after the one at t in a zone, as InfluxDB's fill walks them: one interval on, less
 * the change of offset on the way when it is shorter than an interval. */
static int64_t zone_next(const fj_tz *z, int64_t t, int64_t every)
{
    int64_t was = fj_tz_offset_ns(z, t), next = t + every, now = fj_tz_offset_ns(z, next - 1);
    int64_t diff = (was - now) * NSEC;
    if (diff && (diff < 0 ? -diff : diff) < every)
        next += diff;
    return next;
}

typedef struct col {
    double *v;    /* per grid time; NaN: none */
    int64_t *sel; /* per grid time: the selected point's time (selectors) */
    bool transformed;
    uint8_t ftype; /* what v holds: a selector of a string or boolean field answers those */
    double fill_empty; /* a string column's fill(number): the index of "" */
} col;

static bool eval_col(run *u, const iq_expr *e, const group *gr, const grid *g, col *out);

static void apply_fill(const run *u, const iq_expr *call, col *c, size_t n)
{
    bool is_count = !strcmp(call->s, "count");
    if (c->ftype == FJ_TS_STRING || c->ftype == FJ_TS_BOOLEAN) {
        /* as InfluxDB's string and boolean iterators: a number fills with "" or false, linear
         * fills nothing (previous and none as for numbers) */
        if (u->st->fill == IQ_FILL_LINEAR)
            return;
        if (u->st->fill == IQ_FILL_VALUE) {
            for (size_t i = 0; i < n; i++)
                if (isnan(c->v[i]))
                    c->v[i] = c->ftype == FJ_TS_STRING ? c->fill_empty : 0;
            return;
        }
    }
    switch (u->st->fill) {
    case IQ_FILL_NULL:
        if (is_count)
            for (size_t i = 0; i < n; i++)
                if (isnan(c->v[i]))
                    c->v[i] = 0;
        break;
    case IQ_FILL_NONE: break;
    case IQ_FILL_VALUE: /* count is an integer: its fill value too */
        for (size_t i = 0; i < n; i++)
            if (isnan(c->v[i]))
                c->v[i] = is_count ? trunc(u->st->fill_value) : u->st->fill_value;
        break;
    case IQ_FILL_PREVIOUS:
        for (size_t i = 1; i < n; i++)
            if (isnan(c->v[i]))
                c->v[i] = c->v[i - 1];
        break;
    case IQ_FILL_LINEAR: {
        long prev = -1;
        for (size_t i = 0; i < n; i++) {
            if (isnan(c->v[i]))
                continue;
            if (prev >= 0 && (size_t)prev + 1 < i)
                for (size_t k = (size_t)prev + 1; k < i; k++)
                    c->v[k] = c->v[prev] + (c->v[i] - c->v[prev]) * (double)(k - (size_t)prev) / (double)(i - (size_t)prev);
            prev = (long)i;
        }
        break;
    }
    }
}

/* The index of the bucket starting at t in g, or g->n. */
static size_t bucket_at(const grid *g, int64_t t)
{
    size_t lo = 0, hi = g->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->t[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n && g->t[lo] == t ? lo : g->n;
}

/* integral(f[, unit]) into out->v, as InfluxDB 1.6's integral reducer walks the points of the whole
 * range: the trapezium rule between consecutive points (of equal times the later one counts); a
 * step that crosses its bucket's end is split there, the value interpolated, and the rest of the
 * step, over any empty buckets, goes to the bucket of its end point; a bucket whose only point is
 * at its start has no area and no value. For an integer field InfluxDB's reducer keeps the earlier
 * point's value and reuses the interpolated one as the next point's in the first step of the new
 * bucket: so does fjord. Without GROUP BY time, the one value of the range. */
static void integral_col(const grid *g, const rows *rw, long j, int64_t unit, bool integer, double *v)
{
    bool have = false;
    int64_t pt = 0, ws = 0, we = 0;
    double pv = 0, sum = 0;
    for (size_t r = 0; r < rw->n && j >= 0; r++) {
        double x = rw->v[r * rw->k + (size_t)j];
        int64_t t = rw->t[r];
        if (isnan(x))
            continue;
        if (!have) {
            have = true;
            pt = t;
            pv = x;
            if (g->buckets) {
                ws = bucket_of(g, t);
                we = g->zone ? zone_next(g->zone, ws, g->every) : ws + g->every;
            }
            continue;
        }
        if (t == pt) {
            pv = x;
            continue;
        }
        double next = x; /* the value of the step's end */
        if (g->buckets && t >= we) {
            if (pt != we) {
                double at = (x - pv) / (double)(t - pt) * (double)(we - pt) + pv; /* InfluxDB's rounding */
                sum += 0.5 * (at + pv) * ((double)(we - pt) / (double)unit);
                if (integer)
                    next = at;
                else
                    pv = at;
                pt = we;
            }
            size_t b = bucket_at(g, ws);
            if (b < g->n)
                v[b] = sum;
            ws = bucket_of(g, t);
            we = g->zone ? zone_next(g->zone, ws, g->every) : ws + g->every;
            sum = 0;
        }
        sum += 0.5 * (next + pv) * ((double)(t - pt) / (double)unit);
        pt = t;
        pv = x;
    }
    if (have && (!g->buckets || pt != ws)) {
        size_t b = g->buckets ? bucket_at(g, ws) : 0;
        if (b < g->n)
            v[b] = sum;
    }
}

static bool agg_col(run *u, const iq_expr *call, const group *gr, const grid *g, col *out)
{
    fj_arena *a = u->c->a;
    /* count(distinct(field)) counts the field's distinct values */
    bool dist = call->args[0]->k == IQ_CALL, mode = !strcmp(call->s, "mode");
    long j = need_index(u, (dist ? call->args[0]->args[0] : call->args[0])->s);
    size_t *didx = dist || mode ? fj_arena_alloc(a, gr->r.n * sizeof *didx + 1) : NULL;
    if ((dist || mode) && !didx)
        return false;
    out->v = fj_arena_alloc(a, g->n * sizeof *out->v + 1);
    out->sel = fj_arena_calloc(a, g->n + 1, sizeof *out->sel);
    double *vals = fj_arena_alloc(a, gr->r.n * sizeof *vals + 1);
    int64_t *ts = fj_arena_alloc(a, gr->r.n * sizeof *ts + 1);
    if (!out->v || !out->sel || !vals || !ts)
        return false;
    for (size_t i = 0; i < g->n; i++)
        out->v[i] = NAN;
    size_t r = 0;
    const rows *rw = &gr->r;
    size_t nb = g->n;
    ag_fn fn = ag_of(call->s);
    uint8_t ft = j >= 0 && u->ntype ? u->ntype[j] : FJ_TS_FLOAT;
    if ((ft == FJ_TS_STRING || ft == FJ_TS_BOOLEAN) &&
        (fn == AG_FIRST || fn == AG_LAST || fn == AG_MIN || fn == AG_MAX || fn == AG_MODE))
        out->ftype = ft;
    if (ft == FJ_TS_INTEGER && fn != AG_MEAN && fn != AG_MEDIAN && fn != AG_STDDEV && fn != AG_COUNT &&
        fn != AG_INTEGRAL)
        out->ftype = ft; /* sums, selectors and spreads of integers are integers */
    if (fn == AG_INTEGRAL) { /* over the whole range, not bucket by bucket; never filled */
        integral_col(g, &gr->r, j, call->nargs == 2 ? call->args[1]->dur : NSEC, ft == FJ_TS_INTEGER, out->v);
        return true;
    }
    /* rows are time-sorted and buckets ascending: one walk */
    for (size_t b = 0; b < nb; b++) {
        size_t n = 0;
        if (g->buckets && g->zone) { /* the rows whose bucket starts at t[b] */
            while (r < rw->n && bucket_of(g, rw->t[r]) < g->t[b])
                r++;
            for (; r < rw->n && bucket_of(g, rw->t[r]) == g->t[b]; r++) {
                double x = j >= 0 ? rw->v[r * rw->k + (size_t)j] : NAN;
                if (!isnan(x)) {
                    vals[n] = x;
                    ts[n++] = rw->t[r];
                }
            }
            if (dist)
                n = distinct_points(u, ft, vals, n, didx);
            out->v[b] = mode ? mode_of(u, ft, vals, n, didx) : aggregate(call, fn, vals, ts, n, &out->sel[b]);
            if (fn == AG_COUNT && n == 0)
                out->v[b] = NAN;
            continue;
        }
        while (r < rw->n && g->buckets && rw->t[r] < g->t[b])
            r++;
        int64_t end = g->buckets ? g->t[b] + g->every : IQ_NO_MAX;
        while (r < rw->n && (rw->t[r] < end || (!g->buckets && end == IQ_NO_MAX))) {
            if (!g->buckets || rw->t[r] >= g->t[b]) {
                double x = j >= 0 ? rw->v[r * rw->k + (size_t)j] : NAN;
                if (!isnan(x)) {
                    vals[n] = x;
                    ts[n++] = rw->t[r];
                }
            }
            r++;
            if (!g->buckets && r == rw->n)
                break;
        }
        if (dist)
            n = distinct_points(u, ft, vals, n, didx);
        out->v[b] = mode ? mode_of(u, ft, vals, n, didx) : aggregate(call, fn, vals, ts, n, &out->sel[b]);
        if (fn == AG_COUNT && n == 0)
            out->v[b] = NAN; /* fill decides what an empty count shows */
    }
    if (out->ftype == FJ_TS_STRING && u->st->fill == IQ_FILL_VALUE) {
        long e = add_string(u, "", 0);
        if (e < 0)
            return false;
        out->fill_empty = (double)e;
    }
    apply_fill(u, call, out, nb);
    return true;
}

/* A transformation over the non-empty values of its argument's column, in time order. */
static bool transform_col(run *u, const iq_expr *call, const group *gr, const grid *g, col *out)
{
    fj_arena *a = u->c->a;
    col in = {0};
    const iq_expr *arg = call->args[0];
    if (arg->k == IQ_CALL) {
        if (!agg_col(u, arg, gr, g, &in))
            return false;
    } else { /* raw: the grid is the rows' times */
        long j = need_index(u, arg->s);
        in.v = fj_arena_alloc(a, g->n * sizeof *in.v + 1);
        if (!in.v)
            return false;
        for (size_t i = 0; i < g->n; i++)
            in.v[i] = NAN;
        for (size_t r = 0, i = 0; r < gr->r.n && j >= 0; r++) {
            while (i < g->n && g->t[i] < gr->r.t[r])
                i++;
            double x = gr->r.v[r * gr->r.k + (size_t)j];
            if (i < g->n && g->t[i] == gr->r.t[r] && isnan(in.v[i]))
                in.v[i] = x;
        }
    }
    out->v = fj_arena_alloc(a, g->n * sizeof *out->v + 1);
    if (!out->v)
        return false;
    out->transformed = true;
    for (size_t i = 0; i < g->n; i++)
        out->v[i] = NAN;
    const char *f = call->s;
    bool nonneg = !strncmp(f, "non_negative", 12);
    if (!strcmp(f, "elapsed")) { /* the time since the previous point, in whole units (1ns unless given) */
        int64_t unit = call->nargs == 2 ? call->args[1]->dur : 1;
        out->ftype = FJ_TS_INTEGER;
        long prev = -1;
        for (size_t i = 0; i < g->n; i++) {
            if (isnan(in.v[i]))
                continue;
            if (prev >= 0)
                out->v[i] = (double)((g->t[i] - g->t[prev]) / unit);
            prev = (long)i;
        }
    } else if (strstr(f, "derivative")) {
        int64_t unit = call->nargs == 2 ? call->args[1]->dur : g->buckets ? g->every : NSEC;
        long prev = -1;
        for (size_t i = 0; i < g->n; i++) {
            if (isnan(in.v[i]))
                continue;
            if (prev >= 0) {
                double d = (in.v[i] - in.v[prev]) / ((double)(g->t[i] - g->t[prev]) / (double)unit);
                if (!(nonneg && d < 0))
                    out->v[i] = d;
            }
            prev = (long)i;
        }
    } else if (strstr(f, "difference")) {
        long prev = -1;
        for (size_t i = 0; i < g->n; i++) {
            if (isnan(in.v[i]))
                continue;
            if (prev >= 0) {
                double d = in.v[i] - in.v[prev];
                if (!(nonneg && d < 0))
                    out->v[i] = d;
            }
            prev = (long)i;
        }
    } else if (!strcmp(f, "cumulative_sum")) {
        double s = 0;
        for (size_t i = 0; i < g->n; i++)
            if (!isnan(in.v[i]))
                out->v[i] = s += in.v[i];
    } else if (!strcmp(f, "moving_average")) {
        size_t w = (size_t)call->args[1]->num, have = 0;
        double *win = fj_arena_alloc(a, w * sizeof *win);
        if (!win)
            return false;
        for (size_t i = 0; i < g->n; i++) {
            if (isnan(in.v[i]))
                continue;
            win[have % w] = in.v[i];
            have++;
            if (have >= w) {
                double s = 0;
                for (size_t k = 0; k < w; k++)
                    s += win[k];
                out->v[i] = s / (double)w;
            }
        }
    }
    return true;
}

static bool eval_col(run *u, const iq_expr *e, const group *gr, const grid *g, col *out)
{
    fj_arena *a = u->c->a;
    *out = (col){0};
    if (e->k == IQ_CALL)
        return classify(e->s) == FN_TRANSFORM ? transform_col(u, e, gr, g, out) : agg_col(u, e, gr, g, out);
    out->v = fj_arena_alloc(a, g->n * sizeof *out->v + 1);
    if (!out->v)
        return false;
    if (e->k == IQ_NUM) {
        for (size_t i = 0; i < g->n; i++)
            out->v[i] = e->num;
        return true;
    }
    if (e->k != IQ_BIN || e->op > IQ_DIV) {
        for (size_t i = 0; i < g->n; i++)
            out->v[i] = NAN;
        return true;
    }
    col l, r;
    if (!eval_col(u, e->l, gr, g, &l) || !eval_col(u, e->r, gr, g, &r))
        return false;
    out->transformed = l.transformed || r.transformed;
    for (size_t i = 0; i < g->n; i++) {
        double x = l.v[i], y = r.v[i];
        out->v[i] = e->op == IQ_ADD ? x + y : e->op == IQ_SUB ? x - y : e->op == IQ_MUL ? x * y : y == 0 ? 0 : x / y;
        if (isnan(x) || isnan(y))
            out->v[i] = NAN;
    }
    return true;
}

/* Raw values: a field, a tag, a constant, arithmetic. */
static iq_val eval_raw(const run *u, const iq_expr *e, const iq_iser *is, const double *v)
{
    row_ref rr = {u, is, v};
    switch (e->k) {
    case IQ_REF: return ref_row(&rr, e->s);
    case IQ_NUM: return (iq_val){.k = IQV_NUM, .n = e->num};
    case IQ_STR: return (iq_val){.k = IQV_STR, .s = e->s};
    case IQ_BIN: {
        iq_val l = eval_raw(u, e->l, is, v), r = eval_raw(u, e->r, is, v);
        if (l.k != IQV_NUM || r.k != IQV_NUM || e->op > IQ_DIV)
            return (iq_val){0};
        double x = l.n, y = r.n;
        return (iq_val){.k = IQV_NUM,
                        .n = e->op == IQ_ADD ? x + y : e->op == IQ_SUB ? x - y : e->op == IQ_MUL ? x * y
                                                                         : y == 0 ? 0 : x / y};
    }
    default: return (iq_val){0};
    }
}

static bool refs_field(const run *u, const iq_expr *e)
{
    if (e->k == IQ_REF)
        return need_index(u, e->s) >= 0;
    return e->k == IQ_BIN && (refs_field(u, e->l) || refs_field(u, e->r));
}

/* --- one series of the answer ------------------------------------------------------------------------ */

static void put_header(run *u, const group *gr, fj_buf *out, bool *any, const char **names)
{
    fj_buf_puts(out, *any ? "," : ",\"series\":[");
    *any = true;
    fj_buf_puts(out, "{\"name\":");
    fj_buf_json_str(out, u->m->name);
    if (u->ngkeys) {
        fj_buf_puts(out, ",\"tags\":{");
        for (size_t i = 0; i < u->ngkeys; i++) {
            fj_buf_puts(out, i ? "," : "");
            fj_buf_json_str(out, u->gkeys[i]);
            fj_buf_puts(out, ":");
            fj_buf_json_str(out, gr->kv[i]);
        }
        fj_buf_puts(out, "}");
    }
    fj_buf_puts(out, ",\"columns\":[\"time\"");
    for (size_t i = 0; i < u->nfields; i++) {
        fj_buf_puts(out, ",");
        fj_buf_json_str(out, names[i]);
    }
    fj_buf_puts(out, "],\"values\":[");
}

/* The order in which rows are written: ascending or, with ORDER BY time DESC, descending, after
 * OFFSET and within LIMIT. */
static bool take_row(const run *u, size_t *seen)
{
    size_t k = (*seen)++;
    if ((int64_t)k < u->st->off)
        return false;
    return !u->st->limit || (int64_t)k < u->st->off + u->st->limit;
}

/* Whether e is an integer field itself (its raw values are integers; arithmetic on them may not be). */
static bool int_ref(const run *u, const iq_expr *e)
{
    long j = e->k == IQ_REF ? need_index(u, e->s) : -1;
    return j >= 0 && u->ntype[j] == FJ_TS_INTEGER;
}

/* A raw value x of column e: typed as its field, a tag's string, or null. */
static void put_raw(const run *u, fj_buf *out, const iq_expr *e, iq_val x)
{
    if (x.k == IQV_NUM && int_ref(u, e))
        put_typed(u, out, FJ_TS_INTEGER, x.n);
    else if (x.k == IQV_NUM)
        iq_put_num(out, x.n);
    else if (x.k == IQV_STR)
        fj_buf_json_str(out, x.s);
    else if (x.k == IQV_BOOL)
        fj_buf_puts(out, x.n != 0 ? "true" : "false");
    else
        fj_buf_puts(out, "null");
}

static bool raw_series(run *u, const group *gr, fj_buf *out, bool *any, const char **names)
{
    const rows *r = &gr->r;
    size_t written = 0, seen = 0;
    for (size_t q = 0; q < r->n; q++) {
        size_t i = u->st->desc ? r->n - 1 - q : q;
        const double *v = &r->v[i * r->k];
        bool some = false;
        for (size_t f = 0; f < u->nfields && !some; f++)
            some = refs_field(u, u->fields[f].e) && eval_raw(u, u->fields[f].e, r->is[i], v).k != IQV_NULL;
        if (!some || !take_row(u, &seen))
            continue;
        if (!written)
            put_header(u, gr, out, any, names);
        fj_buf_puts(out, written++ ? ",[" : "[");
        iq_put_time(u->c, out, r->t[i]);
        for (size_t f = 0; f < u->nfields; f++) {
            fj_buf_puts(out, ",");
            put_raw(u, out, u->fields[f].e, eval_raw(u, u->fields[f].e, r->is[i], v));
        }
        fj_buf_puts(out, "]");
    }
    if (written)
        fj_buf_puts(out, "]}");
    return true;
}

/* The buckets of a zone: InfluxDB's fill walk from lo's bucket to hi's, and every bucket that
 * holds rows (across a DST change the two can differ, and InfluxDB answers both). */
static bool zone_grid(run *u, const group *gr, grid *g, int64_t lo, int64_t hi)
{
    int64_t first = bucket_of(g, lo), last = bucket_of(g, hi);
    size_t cap = 0, n = 0;
    for (int64_t t = first; t <= last && cap <= MAX_BUCKETS; t = zone_next(g->zone, t, g->every))
        cap++;
    int64_t prev = INT64_MIN;
    for (size_t r = 0; r < gr->r.n; r++) {
        int64_t k = bucket_of(g, gr->r.t[r]);
        cap += k != prev;
        prev = k;
    }
    if (cap > MAX_BUCKETS) {
        snprintf(u->msg, u->cap, "too many buckets: GROUP BY time(%lldns) over this range makes more than %d",
                 (long long)g->every, MAX_BUCKETS);
        return true;
    }
    g->t = fj_arena_alloc(u->c->a, cap * sizeof *g->t + 1);
    if (!g->t)
        return false;
    /* merge the walk with the rows' buckets (both ascending), without repeats */
    int64_t w = first;
    size_t r = 0;
    prev = INT64_MIN;
    while (w <= last || r < gr->r.n) {
        int64_t k = r < gr->r.n ? bucket_of(g, gr->r.t[r]) : INT64_MAX, t = w <= last && w <= k ? w : k;
        if (t == w && w <= last)
            w = zone_next(g->zone, w, g->every);
        if (t == k)
            r++;
        if (t != prev && n < cap)
            g->t[n++] = prev = t;
    }
    g->n = n;
    return true;
}

/* The first and one-past-last row of each bucket of g into first[b], end[b] (rows time-sorted). */
static void bucket_ranges(const grid *g, const rows *rw, size_t *first, size_t *end)
{
    size_t r = 0;
    for (size_t b = 0; b < g->n; b++) {
        if (!g->buckets) {
            first[b] = 0;
            end[b] = rw->n;
            continue;
        }
        while (r < rw->n && bucket_of(g, rw->t[r]) < g->t[b])
            r++;
        first[b] = r;
        while (r < rw->n && bucket_of(g, rw->t[r]) == g->t[b])
            r++;
        end[b] = r;
    }
}

/* The order of top's (bottom's) choice: the larger (smaller) value first, then the earlier point. */
typedef struct by_rank {
    const rows *rw;
    size_t j;
    bool top;
} by_rank;
static __thread by_rank t_by_rank; /* qsort has no context argument */

static int cmp_rank(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    const rows *rw = t_by_rank.rw;
    double p = rw->v[a * rw->k + t_by_rank.j], q = rw->v[b * rw->k + t_by_rank.j];
    if (p != q)
        return (p > q) == t_by_rank.top ? -1 : 1;
    if (rw->t[a] != rw->t[b])
        return rw->t[a] < rw->t[b] ? -1 : 1;
    return (a > b) - (a < b);
}

static int cmp_time_rank(const void *x, const void *y) /* rows by time, rank order among equal times */
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    const rows *rw = t_by_rank.rw;
    if (rw->t[a] != rw->t[b])
        return rw->t[a] < rw->t[b] ? -1 : 1;
    return cmp_rank(x, y);
}

/* top(f[, tag ...], N) or bottom over rows [lo, hi) of rw: the rows chosen into idx, in time order;
 * their count. With tags, each combination of their values first gives its best point (InfluxDB
 * runs max or min grouped by them), and the N best of those are chosen. */
static size_t top_points(const run *u, const iq_expr *call, const rows *rw, size_t j, size_t lo, size_t hi,
                         size_t *idx)
{
    bool top = !strcmp(call->s, "top");
    size_t want = (size_t)call->args[call->nargs - 1]->num, ntags = call->nargs - 2, n = 0;
    for (size_t r = lo; r < hi; r++)
        if (!isnan(rw->v[r * rw->k + j]))
            idx[n++] = r;
    t_by_rank = (by_rank){rw, j, top};
    qsort(idx, n, sizeof *idx, cmp_rank);
    if (ntags) { /* keep the first (best) of each combination of the tags' values */
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            bool seen = false;
            for (size_t p = 0; p < k && !seen; p++) {
                seen = true;
                for (size_t g = 0; g < ntags && seen; g++)
                    seen = !strcmp(iq_tag_value(rw->is[idx[p]], call->args[1 + g]->s),
                                   iq_tag_value(rw->is[idx[i]], call->args[1 + g]->s));
            }
            if (!seen)
                idx[k++] = idx[i];
        }
        n = k;
    }
    n = n < want ? n : want;
    qsort(idx, n, sizeof *idx, cmp_time_rank);
    return n;
}

/* sample(f, N) over rows [lo, hi) of rw: N of the points with a value, chosen at random (all of
 * them when there are no more), into idx in time order; their count. */
static size_t sample_points(run *u, const iq_expr *call, const rows *rw, size_t j, size_t lo, size_t hi,
                            size_t *idx)
{
    size_t want = (size_t)call->args[1]->num, n = 0;
    for (size_t r = lo; r < hi; r++)
        if (!isnan(rw->v[r * rw->k + j]))
            idx[n++] = r;
    if (n <= want)
        return n;
    for (size_t i = 0; i < want; i++) { /* the first `want` of a partial Fisher-Yates shuffle */
        u->rng ^= u->rng << 13;
        u->rng ^= u->rng >> 7;
        u->rng ^= u->rng << 17;
        size_t k = i + (size_t)(u->rng % (n - i)), x = idx[i];
        idx[i] = idx[k];
        idx[k] = x;
    }
    qsort(idx, want, sizeof *idx, cmp_size);
    return want;
}

/* A chosen point of a function of several rows: its row, its column, its place in the choice. */
typedef struct pick {
    size_t r, f, k;
    int64_t t;
} pick;

static int cmp_pick(const void *x, const void *y)
{
    const pick *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->f != b->f)
        return a->f < b->f ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

/* Functions of several rows a bucket: distinct alone in the statement, its rows at its bucket's
 * time; top, bottom or sample, their points at their own times in time order, with the tags and
 * fields beside them taken from the points chosen (sample(*): each field's points, the other
 * fields' columns null). Empty buckets are not filled, as InfluxDB does not. */
static bool rows_fn_series(run *u, const group *gr, const grid *g, fj_buf *out, bool *any, const char **names)
{
    fj_arena *a = u->c->a;
    size_t fi = 0; /* the (first) function's column */
    while (fi + 1 < u->nfields && !(u->fields[fi].e->k == IQ_CALL && classify(u->fields[fi].e->s) == FN_ROWS))
        fi++;
    const iq_expr *call = u->fields[fi].e;
    bool dist = !strcmp(call->s, "distinct");
    long j = need_index(u, call->args[0]->s);
    uint8_t ft = j >= 0 ? u->ntype[j] : FJ_TS_FLOAT;
    const rows *rw = &gr->r;
    double *vals = fj_arena_alloc(a, rw->n * sizeof *vals + 1);
    size_t *idx = fj_arena_alloc(a, rw->n * sizeof *idx + 1);
    size_t *first = fj_arena_alloc(a, g->n * sizeof *first + 1), *end = fj_arena_alloc(a, g->n * sizeof *end + 1);
    pick *pk = dist ? NULL : fj_arena_alloc(a, (rw->n * u->nfields + 1) * sizeof *pk);
    if (!vals || !idx || !first || !end || (!dist && !pk))
        return false;
    bucket_ranges(g, rw, first, end);
    size_t written = 0, seen = 0;
    for (size_t q = 0; q < g->n; q++) {
        size_t b = u->st->desc && dist ? g->n - 1 - q : q, n = 0, k = 0;
        if (dist && j >= 0) {
            for (size_t r = first[b]; r < end[b]; r++)
                if (!isnan(rw->v[r * rw->k + (size_t)j]))
                    vals[n++] = rw->v[r * rw->k + (size_t)j];
            k = distinct_points(u, ft, vals, n, idx);
        }
        for (size_t f = 0; f < u->nfields && !dist; f++) { /* each function column's points */
            const iq_expr *e = u->fields[f].e;
            long jf = e->k == IQ_CALL && classify(e->s) == FN_ROWS ? need_index(u, e->args[0]->s) : -1;
            if (jf < 0)
                continue;
            size_t m = !strcmp(e->s, "sample") ? sample_points(u, e, rw, (size_t)jf, first[b], end[b], idx)
                                               : top_points(u, e, rw, (size_t)jf, first[b], end[b], idx);
            for (size_t i = 0; i < m; i++)
                pk[k + i] = (pick){idx[i], f, i, rw->t[idx[i]]};
            k += m;
        }
        if (!dist)
            qsort(pk, k, sizeof *pk, cmp_pick);
        for (size_t i = 0; i < k; i++) {
            if (!take_row(u, &seen))
                continue;
            if (!written)
                put_header(u, gr, out, any, names);
            fj_buf_puts(out, written++ ? ",[" : "[");
            size_t r = dist ? 0 : pk[i].r;
            iq_put_time(u->c, out, dist ? g->t[b] : rw->t[r]);
            for (size_t f = 0; f < u->nfields; f++) {
                const iq_expr *e = u->fields[f].e;
                fj_buf_puts(out, ",");
                if (dist)
                    put_typed(u, out, ft, vals[idx[i]]);
                else if (f == pk[i].f) {
                    long jf = need_index(u, e->args[0]->s);
                    put_typed(u, out, u->ntype[jf], rw->v[r * rw->k + (size_t)jf]);
                } else if (e->k == IQ_CALL)
                    fj_buf_puts(out, "null");
                else
                    put_raw(u, out, e, eval_raw(u, e, rw->is[r], &rw->v[r * rw->k]));
            }
            fj_buf_puts(out, "]");
        }
    }
    if (written)
        fj_buf_puts(out, "]}");
    return true;
}

static bool agg_series(run *u, const group *gr, int64_t data_min, fj_buf *out, bool *any, const char **names)
{
    fj_arena *a = u->c->a;
    grid g = {0};
    bool transform = false, integral = false, integral_at0 = false;
    for (size_t f = 0; f < u->nfields; f++) {
        transform = transform || has_transform(u->fields[f].e);
        const iq_expr *e = u->fields[f].e;
        integral = integral || (e->k == IQ_CALL && !strcmp(e->s, "integral"));
        /* without GROUP BY time InfluxDB answers a float field's integral at time 0, an integer
         * field's at the range's start */
        if (e->k == IQ_CALL && !strcmp(e->s, "integral") && e->args[0]->k == IQ_REF &&
            (need_index(u, e->args[0]->s) < 0 || u->ntype[need_index(u, e->args[0]->s)] != FJ_TS_INTEGER))
            integral_at0 = true;
    }
    if (u->st->group_time) {
        g.buckets = true;
        g.every = u->st->every;
        g.offset = u->st->offset;
        g.zone = u->st->zone;
        int64_t lo = u->tmin != IQ_NO_MIN ? u->tmin : data_min;
        int64_t hi = u->tmax != IQ_NO_MAX ? u->tmax : u->c->now_ns;
        if (g.zone) {
            if (!zone_grid(u, gr, &g, lo, hi))
                return false;
            if (u->msg[0] || !g.n)
                return true;
        } else {
            int64_t first = floor_bucket(lo, g.every, u->st->offset), last = floor_bucket(hi, g.every, u->st->offset);
            if (last < first)
                return true;
            if ((last - first) / g.every + 1 > MAX_BUCKETS) {
                snprintf(u->msg, u->cap, "too many buckets: GROUP BY time(%lldns) over this range makes more than %d",
                         (long long)g.every, MAX_BUCKETS);
                return true;
            }
            g.n = (size_t)((last - first) / g.every + 1);
            g.t = fj_arena_alloc(a, g.n * sizeof *g.t);
            if (!g.t)
                return false;
            for (size_t i = 0; i < g.n; i++)
                g.t[i] = first + (int64_t)i * g.every;
        }
    } else if (transform) { /* raw transformation: the rows' distinct times */
        g.t = fj_arena_alloc(a, gr->r.n * sizeof *g.t + 1);
        if (!g.t)
            return false;
        for (size_t i = 0; i < gr->r.n; i++)
            if (!g.n || g.t[g.n - 1] != gr->r.t[i])
                g.t[g.n++] = gr->r.t[i];
    } else {
        g.n = 1;
        g.t = fj_arena_alloc(a, sizeof *g.t);
        if (!g.t)
            return false;
        g.t[0] = u->tmin != IQ_NO_MIN && !integral_at0 ? u->tmin : 0;
    }
    for (size_t f = 0; f < u->nfields; f++)
        if (u->fields[f].e->k == IQ_CALL && classify(u->fields[f].e->s) == FN_ROWS)
            return rows_fn_series(u, gr, &g, out, any, names);
    col *cols = fj_arena_calloc(a, u->nfields, sizeof *cols);
    if (!cols)
        return false;
    for (size_t f = 0; f < u->nfields; f++)
        if (!eval_col(u, u->fields[f].e, gr, &g, &cols[f]))
            return false;
    /* one selector alone, without GROUP BY time: the time of the point it selected */
    bool sel_time = !u->st->group_time && u->nfields == 1 && u->fields[0].e->k == IQ_CALL &&
                    classify(u->fields[0].e->s) == FN_SELECTOR;
    bool drop_empty = transform || integral || u->st->fill == IQ_FILL_NONE || !u->st->group_time;
    bool any_value = false; /* a series whose every value is empty is not answered, as InfluxDB */
    for (size_t i = 0; i < g.n && !any_value; i++)
        for (size_t f = 0; f < u->nfields && !any_value; f++)
            any_value = !isnan(cols[f].v[i]);
    if (!any_value)
        return true;
    size_t written = 0, seen = 0;
    char *line = fj_arena_alloc(a, (u->nfields + 1) * (IQ_FMT_MAX + 1) + 4);
    if (!line)
        return false;
    for (size_t q = 0; q < g.n; q++) {
        size_t i = u->st->desc ? g.n - 1 - q : q;
        if (drop_empty) {
            bool some = false;
            for (size_t f = 0; f < u->nfields && !some; f++)
                some = !isnan(cols[f].v[i]);
            if (!some)
                continue;
        }
        if (!take_row(u, &seen))
            continue;
        if (!written)
            put_header(u, gr, out, any, names);
        /* the row in one piece: [time,v1,v2...] */
        size_t n = 0;
        if (written++)
            line[n++] = ',';
        line[n++] = '[';
        n += iq_fmt_time(u->c, line + n, sel_time && cols[0].sel ? cols[0].sel[i] : g.t[i]);
        for (size_t f = 0; f < u->nfields; f++) {
            line[n++] = ',';
            if (cols[f].ftype == FJ_TS_STRING || cols[f].ftype == FJ_TS_BOOLEAN) { /* no fixed width */
                fj_buf_append(out, line, n);
                n = 0;
                put_typed(u, out, cols[f].ftype, cols[f].v[i]);
                continue;
            }
            n += cols[f].ftype == FJ_TS_INTEGER ? fmt_int(line + n, cols[f].v[i]) : iq_fmt_num(line + n, cols[f].v[i]);
        }
        line[n++] = ']';
        fj_buf_append(out, line, n);
    }
    if (written)
        fj_buf_puts(out, "]}");
    return true;
}

/* --- the statement ------------------------------------------------------------------------------------ */

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* What InfluxDB refuses of a string or boolean field: every aggregate and transformation but
 * count, first, last (and min, max of booleans), as its iterators of those types lack them. The
 * statement's error, in InfluxDB's words, goes to u->msg. */
static void check_types(run *u, const iq_expr *e)
{
    if (!e || u->msg[0])
        return;
    if (e->k == IQ_BIN) {
        check_types(u, e->l);
        check_types(u, e->r);
        return;
    }
    if (e->k != IQ_CALL)
        return;
    for (size_t i = 0; i < e->nargs; i++)
        check_types(u, e->args[i]);
    if (!e->nargs || e->args[0]->k != IQ_REF || !strcmp(e->s, "distinct") || !strcmp(e->s, "elapsed") ||
        !strcmp(e->s, "sample"))
        return; /* distinct, elapsed and sample take every type */
    long j = need_index(u, e->args[0]->s);
    uint8_t ft = j >= 0 ? u->ntype[j] : FJ_TS_FLOAT;
    if (ft != FJ_TS_STRING && ft != FJ_TS_BOOLEAN)
        return;
    ag_fn fn = ag_of(e->s);
    if (fn == AG_COUNT || fn == AG_FIRST || fn == AG_LAST || fn == AG_MODE ||
        (ft == FJ_TS_BOOLEAN && (fn == AG_MIN || fn == AG_MAX)))
        return;
    snprintf(u->msg, u->cap, "unsupported %s iterator type: *query.%sInterruptIterator", e->s,
             ft == FJ_TS_STRING ? "string" : "boolean");
}

/* The string points of one series, as they are read (fj_q_ts_strings): into pts[pos[i]], each
 * value its index in the run's string table. */
typedef struct sreader {
    run *u;
    fj_ts_points *pts;
    const size_t *pos;
} sreader;

static fj_status keep_string(void *ud, size_t i, int64_t t, const char *v, size_t len)
{
    sreader *sr = ud;
    run *u = sr->u;
    if (iq_stopped(u->c))
        return FJ_EBUSY;
    long k = add_string(u, v, len);
    return k >= 0 && iq_points_push(u->c->a, &sr->pts[sr->pos[i]], t, (double)k) ? FJ_OK : FJ_ENOMEM;
}

/* The call inside e whose argument is * or /regex/ (count(*), derivative(mean(/usage/))), or NULL. */
static const iq_expr *wild_call(const iq_expr *e)
{
    if (!e || e->k != IQ_CALL || !e->nargs)
        return NULL;
    if (e->args[0]->k == IQ_WILD || e->args[0]->k == IQ_REGEX)
        return e;
    return wild_call(e->args[0]);
}

/* Whether InfluxDB expands a wildcard of function fn over a field of type ft: count, first, last,
 * distinct, mode, sample and elapsed take every type, min and max all but strings, the others
 * numbers only (its RewriteFields). */
static bool wild_takes(const char *fn, uint8_t ft)
{
    static const char *const any[] = {"count", "first", "last", "distinct", "mode", "sample", "elapsed", NULL};
    for (size_t i = 0; any[i]; i++)
        if (!strcmp(any[i], fn))
            return true;
    if (!strcmp(fn, "min") || !strcmp(fn, "max"))
        return ft != FJ_TS_STRING;
    return ft != FJ_TS_STRING && ft != FJ_TS_BOOLEAN;
}

/* A copy of the calls down to w, w's argument replaced by field. */
static iq_expr *with_field(fj_arena *a, const iq_expr *e, const iq_expr *w, const char *field)
{
    iq_expr *c = fj_arena_alloc(a, sizeof *c);
    iq_expr **args = fj_arena_alloc(a, (e->nargs + 1) * sizeof *args);
    if (!c || !args)
        return NULL;
    *c = *e;
    memcpy(args, e->args, e->nargs * sizeof *args);
    c->args = args;
    if (e == w) {
        iq_expr *r = fj_arena_calloc(a, 1, sizeof *r);
        if (!r)
            return NULL;
        r->k = IQ_REF;
        r->s = field;
        r->height = 1;
        args[0] = r;
    } else if (!(args[0] = with_field(a, e->args[0], w, field)))
        return NULL;
    return c;
}

/* The fields with each call on * or /regex/ made one call per field of measurement m that it
 * matches and takes, in field name order, named <name>_<field> as InfluxDB names them. */
static bool expand_calls(run *u, const iq_field *in, size_t nin, iq_field **out, size_t *nout)
{
    fj_arena *a = u->c->a;
    const iq_meas *m = u->m;
    iq_field *f = fj_arena_calloc(a, nin * (m->nfields + 1) + 1, sizeof *f);
    if (!f)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < nin; i++) {
        const iq_expr *w = wild_call(in[i].e);
        if (!w) {
            f[n++] = in[i];
            continue;
        }
        const char *base = in[i].alias ? in[i].alias : in[i].e->s;
        for (size_t k = 0; k < m->nfields; k++) {
            if (!wild_takes(w->s, m->ftypes[k]) ||
                (w->args[0]->k == IQ_REGEX && !fj_re_match(w->args[0]->re, m->fields[k])))
                continue;
            iq_expr *e = with_field(a, in[i].e, w, m->fields[k]);
            char *alias = fj_arena_printf(a, "%s_%s", base, m->fields[k]);
            if (!e || !alias)
                return false;
            f[n++] = (iq_field){e, alias};
        }
    }
    *out = f;
    *nout = n;
    return true;
}

/* One measurement's series of the answer. */
static fj_status run_measurement(run *u, fj_buf *out, bool *any, fj_err *err)
{
    iq_ctx *c = u->c;
    fj_arena *a = c->a;
    const iq_meas *m = u->m;
    const iq_stmt *st = u->st;
    bool aggregate_mode = false, wild = false;
    for (size_t f = 0; f < st->nfields; f++) {
        aggregate_mode = aggregate_mode || has_call(st->fields[f].e);
        wild = wild || st->fields[f].e->k == IQ_WILD;
    }
    /* GROUP BY keys */
    u->gkeys = st->gstar ? m->tagkeys : st->gtags;
    u->ngkeys = st->gstar ? m->ntagkeys : st->ngtags;
    if (st->gstar && st->ngtags) { /* GROUP BY *, tag: every tag once */
        const char **k = fj_arena_calloc(a, m->ntagkeys + st->ngtags + 1, sizeof *k);
        if (!k)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        memcpy(k, m->tagkeys, m->ntagkeys * sizeof *k);
        size_t n = m->ntagkeys;
        for (size_t i = 0; i < st->ngtags; i++)
            if (!iq_meas_has_tag(m, st->gtags[i]))
                k[n++] = st->gtags[i];
        qsort(k, n, sizeof *k, cmp_str);
        u->gkeys = k;
        u->ngkeys = n;
    } else if (u->ngkeys > 1) {
        const char **k = fj_arena_calloc(a, u->ngkeys, sizeof *k);
        if (!k)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        memcpy(k, u->gkeys, u->ngkeys * sizeof *k);
        qsort(k, u->ngkeys, sizeof *k, cmp_str);
        size_t n = 1;
        for (size_t i = 1; i < u->ngkeys; i++)
            if (strcmp(k[i], k[n - 1]))
                k[n++] = k[i];
        u->gkeys = k;
        u->ngkeys = n;
    }
    /* fields, with * expanded (raw only): fields and tags not grouped by, sorted by name */
    if (wild) {
        size_t cap = m->nfields + m->ntagkeys + st->nfields;
        u->fields = fj_arena_calloc(a, cap + 1, sizeof *u->fields);
        if (!u->fields)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        u->nfields = 0;
        for (size_t f = 0; f < st->nfields; f++) {
            if (st->fields[f].e->k != IQ_WILD) {
                u->fields[u->nfields++] = st->fields[f];
                continue;
            }
            const char **names = fj_arena_calloc(a, m->nfields + m->ntagkeys + 1, sizeof *names);
            if (!names)
                return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            size_t n = 0;
            for (size_t i = 0; i < m->nfields; i++)
                names[n++] = m->fields[i];
            for (size_t i = 0; i < m->ntagkeys; i++) {
                bool grouped = false;
                for (size_t g = 0; g < u->ngkeys && !grouped; g++)
                    grouped = !strcmp(u->gkeys[g], m->tagkeys[i]);
                if (!grouped)
                    names[n++] = m->tagkeys[i];
            }
            qsort(names, n, sizeof *names, cmp_str);
            for (size_t i = 0; i < n; i++) {
                iq_expr *e = fj_arena_calloc(a, 1, sizeof *e);
                if (!e)
                    return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                e->k = IQ_REF;
                e->s = names[i];
                u->fields[u->nfields++] = (iq_field){e, NULL};
            }
        }
    } else if (!expand_calls(u, st->fields, st->nfields, &u->fields, &u->nfields))
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    /* top(f, tag..., N): a column for each tag named, after its own, as InfluxDB adds them */
    for (size_t f = 0; f < u->nfields; f++) {
        const iq_expr *e = u->fields[f].e;
        if (e->k != IQ_CALL || classify(e->s) != FN_ROWS || e->nargs < 3)
            continue;
        size_t nt = e->nargs - 2;
        iq_field *nf = fj_arena_calloc(a, u->nfields + nt + 1, sizeof *nf);
        if (!nf)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        memcpy(nf, u->fields, (f + 1) * sizeof *nf);
        for (size_t i = 0; i < nt; i++)
            nf[f + 1 + i] = (iq_field){e->args[1 + i], NULL};
        memcpy(nf + f + 1 + nt, u->fields + f + 1, (u->nfields - f - 1) * sizeof *nf);
        u->fields = nf;
        u->nfields += nt;
        break;
    }
    /* column names, made distinct as InfluxDB does (mean, mean_1) */
    const char **names = fj_arena_calloc(a, u->nfields + 1, sizeof *names);
    if (!names)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t f = 0; f < u->nfields; f++) {
        if (u->fields[f].alias) {
            names[f] = u->fields[f].alias;
        } else {
            fj_buf b;
            fj_buf_init(&b, 4096);
            name_of(u->fields[f].e, &b);
            names[f] = fj_arena_strdup(a, b.data ? b.data : "");
            fj_buf_free(&b);
        }
        for (int dup = 1;; dup++) {
            bool clash = false;
            for (size_t p = 0; p < f && !clash; p++)
                clash = !strcmp(names[p], names[f]);
            if (!clash)
                break;
            const char *base = u->fields[f].alias ? u->fields[f].alias : names[f];
            char *nn = fj_arena_printf(a, "%s_%d", base, dup);
            if (!nn)
                return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            /* base may already carry a suffix from an earlier try: rebuild from the original */
            if (dup > 1) {
                fj_buf b;
                fj_buf_init(&b, 4096);
                if (u->fields[f].alias)
                    fj_buf_puts(&b, u->fields[f].alias);
                else
                    name_of(u->fields[f].e, &b);
                nn = fj_arena_printf(a, "%s_%d", b.data ? b.data : "", dup);
                fj_buf_free(&b);
            }
            names[f] = nn;
        }
    }
    /* the fields read */
    u->need = fj_arena_calloc(a, m->nfields + 1, sizeof *u->need);
    if (!u->need)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    u->nneed = 0;
    for (size_t f = 0; f < u->nfields; f++)
        collect_fields(u, u->fields[f].e);
    size_t select_fields = u->nneed;
    if (!select_fields)
        return FJ_OK; /* nothing of this measurement is selected */
    u->rest_fields = iq_cond_uses_fields(u->rest, m);
    if (u->rest_fields)
        collect_fields(u, u->rest);
    u->ntype = fj_arena_calloc(a, u->nneed + 1, sizeof *u->ntype);
    if (!u->ntype)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t j = 0; j < u->nneed; j++)
        u->ntype[j] = iq_field_type(m, u->need[j]);
    for (size_t f = 0; f < u->nfields && !u->msg[0]; f++)
        check_types(u, u->fields[f].e);
    if (u->msg[0])
        return FJ_OK;
    /* series, filtered by the tag conditions, sorted by their GROUP BY values (then by series
     * key, their catalog order), into groups */
    keyed *ks = fj_arena_calloc(a, m->n + 1, sizeof *ks);
    group *groups = fj_arena_calloc(a, m->n + 1, sizeof *groups);
    if (!ks || !groups)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    size_t nks = 0, ngroups = 0;
    for (size_t i = m->first; i < m->first + m->n; i++) {
        const iq_iser *is = &u->cat->iser[i];
        if (!u->rest_fields) {
            row_ref rr = {u, is, NULL};
            if (!iq_cond_true(u->rest, ref_row, &rr))
                continue;
        }
        const char **kv = fj_arena_calloc(a, u->ngkeys + 1, sizeof *kv);
        if (!kv)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        for (size_t k = 0; k < u->ngkeys; k++)
            kv[k] = iq_tag_value(is, u->gkeys[k]);
        ks[nks++] = (keyed){kv, is, i};
    }
    t_ngkeys = u->ngkeys;
    if (nks > 1 && u->ngkeys)
        qsort(ks, nks, sizeof *ks, cmp_keyed);
    const iq_iser **members = fj_arena_calloc(a, nks + 1, sizeof *members);
    if (!members)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < nks; i++) {
        if (!ngroups || cmp_group(&(group){.kv = ks[i].kv}, &groups[ngroups - 1], u->ngkeys))
            groups[ngroups++] = (group){.kv = ks[i].kv, .isers = &members[i], .r = {.k = u->nneed}};
        members[i] = ks[i].is;
        groups[ngroups - 1].n++;
    }
    /* SLIMIT / SOFFSET over the groups */
    size_t g0 = (size_t)st->soff < ngroups ? (size_t)st->soff : ngroups;
    size_t g1 = st->slimit && g0 + (size_t)st->slimit < ngroups ? g0 + (size_t)st->slimit : ngroups;
    /* read: every needed field of every series of the chosen groups, in one call */
    size_t nids = 0;
    for (size_t g = g0; g < g1; g++)
        nids += groups[g].n * u->nneed;
    uint32_t *ids = fj_arena_calloc(a, nids + 1, sizeof *ids);
    long *slot = fj_arena_calloc(a, nids + 1, sizeof *slot);
    fj_ts_points *pts = fj_arena_calloc(a, nids + 1, sizeof *pts);
    if (!ids || !slot || !pts)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    size_t n = 0;
    for (size_t g = g0; g < g1; g++)
        for (size_t s = 0; s < groups[g].n; s++) {
            const iq_iser *is = groups[g].isers[s];
            for (size_t j = 0; j < u->nneed; j++) {
                slot[n] = -1;
                for (size_t f = 0; f < is->nfields; f++)
                    if (!strcmp(u->cat->fser[is->first + f].field, u->need[j]))
                        slot[n] = (long)(is->first + f);
                n++;
            }
        }
    size_t nread = 0;
    uint32_t *rids = fj_arena_calloc(a, nids + 1, sizeof *rids);
    size_t *rpos = fj_arena_calloc(a, nids + 1, sizeof *rpos);
    if (!rids || !rpos)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    uint32_t *sids = fj_arena_calloc(a, nids + 1, sizeof *sids);
    size_t *spos = fj_arena_calloc(a, nids + 1, sizeof *spos), nstr = 0;
    if (!sids || !spos)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < n; i++)
        if (slot[i] >= 0 && u->cat->fser[slot[i]].ftype == FJ_TS_STRING) { /* rows of their own */
            sids[nstr] = u->cat->fser[slot[i]].id;
            spos[nstr++] = i;
        } else if (slot[i] >= 0) {
            rids[nread] = u->cat->fser[slot[i]].id;
            rpos[nread++] = i;
        }
    fj_ts_points *got = fj_arena_calloc(a, nread + 1, sizeof *got);
    if (!got)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    int64_t from = u->tmin, to = u->tmax;
    if (st->group_time && to == IQ_NO_MAX)
        to = c->now_ns;
    fj_status rs = FJ_OK;
    if (m->src == IQ_SRC_TS) {
        reader rd = {.u = u, .ids = rids, .copy = got, .a = a};
        fj_ts_points scratch = {0};
        if (nread && from <= to)
            rs = fj_store_ts_read_many(c->s, c->live, rids, nread, from, to, &scratch, keep_points, &rd, err);
        fj_ts_points_free(&scratch);
        if (rs != FJ_OK)
            return rs;
        for (size_t i = 0; i < nread; i++)
            pts[rpos[i]] = got[i];
        sreader sr = {u, pts, spos};
        if (nstr && from <= to && (rs = fj_q_ts_strings(c->s, sids, nstr, from, to, keep_string, &sr, err)) != FJ_OK)
            return rs == FJ_ENOMEM ? fj_err_set(err, FJ_ENOMEM, NULL, "out of memory") : rs;
    } else if (m->src == IQ_SRC_SUB) { /* the subquery's points */
        for (size_t i = 0; i < n; i++) {
            if (slot[i] < 0)
                continue;
            const iq_fser *fs = &u->cat->fser[slot[i]];
            const fj_ts_points *sp = &u->sub->pts[fs->id];
            fj_ts_points *p = &pts[i];
            p->t = fj_arena_alloc(a, sp->n * sizeof *p->t + 1);
            p->v = fj_arena_alloc(a, sp->n * sizeof *p->v + 1);
            if (!p->t || !p->v)
                return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            for (size_t k = 0; k < sp->n; k++) { /* all of them: the subquery applied the range */
                double v = sp->v[k];
                if (fs->ftype == FJ_TS_STRING) { /* into this run's table of strings */
                    const char *str = u->sub->strs[(size_t)v];
                    long x = add_string(u, str, strlen(str));
                    if (x < 0)
                        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                    v = (double)x;
                }
                p->t[p->n] = sp->t[k];
                p->v[p->n++] = v;
            }
        }
    } else if (nids && from <= to) { /* Sonar: the load queries, one bucket a point */
        size_t nis = nids / u->nneed, k = 0;
        const iq_iser **isers = fj_arena_calloc(a, nis + 1, sizeof *isers);
        fj_ts_points **where = fj_arena_calloc(a, nids + 1, sizeof *where);
        if (!isers || !where)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        for (size_t g = g0; g < g1; g++)
            for (size_t s2 = 0; s2 < groups[g].n; s2++)
                isers[k++] = groups[g].isers[s2];
        for (size_t i = 0; i < nids; i++)
            where[i] = slot[i] >= 0 ? &pts[i] : NULL;
        /* load buckets are aligned to multiples of their width: with an offset, the largest
         * width that divides both, so that each InfluxQL bucket is whole load buckets */
        int64_t width = st->group_time ? st->every : 0, off = st->group_time ? st->offset % st->every : 0;
        for (int64_t x = width, y = off < 0 ? -off : off; y;) {
            int64_t r = x % y;
            x = y;
            y = r;
            width = x;
        }
        /* in a zone, buckets start at local times: narrowed further to divide each UTC offset the
         * zone has over the range (and so each change between them) */
        for (int64_t s = from / NSEC - 1; st->group_time && st->zone && s <= to / NSEC;
             s = fj_tz_next_change(st->zone, s)) {
            int64_t y = (int64_t)fj_tz_offset(st->zone, s) * NSEC;
            for (int64_t x = width, y2 = y < 0 ? -y : y; y2;) {
                int64_t r = x % y2;
                x = y2;
                y2 = r;
                width = x;
            }
            if (s == INT64_MAX)
                break;
        }
        rs = iq_sonar_read(c, m->src, isers, nis, u->need, u->nneed, where, from, to, width, err);
        if (rs != FJ_OK)
            return rs;
    }
    /* rows per group: each series' fields merged by time */
    int64_t data_min = IQ_NO_MAX;
    n = 0;
    double *v = fj_arena_alloc(a, (u->nneed + 1) * sizeof *v);
    size_t *pos = fj_arena_alloc(a, (u->nneed + 1) * sizeof *pos);
    if (!v || !pos)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t g = g0; g < g1; g++) {
        group *gr = &groups[g];
        for (size_t s = 0; s < gr->n; s++, n += u->nneed) {
            if (iq_stopped(c))
                return fj_err_set(err, FJ_EBUSY, NULL, "the query was stopped");
            const fj_ts_points *p = &pts[n];
            memset(pos, 0, u->nneed * sizeof *pos);
            for (;;) {
                int64_t t = IQ_NO_MAX;
                bool more = false;
                for (size_t j = 0; j < u->nneed; j++)
                    if (pos[j] < p[j].n && (!more || p[j].t[pos[j]] < t)) {
                        t = p[j].t[pos[j]];
                        more = true;
                    }
                if (!more)
                    break;
                for (size_t j = 0; j < u->nneed; j++) {
                    v[j] = NAN;
                    if (pos[j] < p[j].n && p[j].t[pos[j]] == t)
                        v[j] = p[j].v[pos[j]++];
                }
                if (u->rest_fields) {
                    row_ref rr = {u, gr->isers[s], v};
                    if (!iq_cond_true(u->rest, ref_row, &rr))
                        continue;
                }
                /* a row whose selected fields are all empty is no row */
                bool some = false;
                for (size_t j = 0; j < select_fields && !some; j++)
                    some = !isnan(v[j]);
                if (!some)
                    continue;
                if (!rows_push(a, &gr->r, t, v, gr->isers[s]))
                    return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                data_min = t < data_min ? t : data_min;
            }
        }
        if (gr->n > 1 && !rows_sort(a, &gr->r))
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        /* a subquery's points before the outer range's start (its buckets' times) end InfluxDB's
         * one window of an outer statement without GROUP BY time: it answers nothing for them */
        if (m->src == IQ_SRC_SUB && !st->group_time && u->tmin != IQ_NO_MIN && gr->r.n && gr->r.t[0] < u->tmin)
            gr->r.n = 0;
    }
    for (size_t q = g0; q < g1 && !u->msg[0]; q++) {
        if (iq_stopped(c))
            return fj_err_set(err, FJ_EBUSY, NULL, "the query was stopped");
        size_t g = st->desc ? g1 - 1 - (q - g0) : q; /* ORDER BY time DESC reverses the series too */
        if (!groups[g].r.n)
            continue;
        bool ok = aggregate_mode ? agg_series(u, &groups[g], data_min, out, any, names)
                                 : raw_series(u, &groups[g], out, any, names);
        if (!ok)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    }
    return FJ_OK;
}

/* Runs subquery inner and reads its answer back as a catalog (subquery.c). A statement error of
 * the inner statement is the outer one's, in msg. */
static fj_status run_subquery(iq_ctx *c, const iq_stmt *inner, iq_catalog *cat, iq_subdata *data, char *msg,
                              size_t cap, fj_err *err)
{
    *cat = (iq_catalog){0};
    *data = (iq_subdata){0};
    iq_ctx ic = *c;
    ic.epoch = IQ_EPOCH_NS; /* times read back exactly */
    fj_buf b;
    fj_buf_init(&b, (size_t)1 << 30);
    if (c->r)
        fj_buf_set_budget(&b, fj_http_mem(c->r)); /* the inner answer counts against query-memory too */
    fj_buf_puts(&b, "{\"statement_id\":0");
    bool any = false;
    fj_status st = iq_select(&ic, inner, &b, &any, msg, cap, err);
    fj_buf_puts(&b, any ? "]}" : "}");
    if (st == FJ_OK && !msg[0] && fj_buf_status(&b) != FJ_OK)
        st = fj_err_set(err, fj_buf_status(&b), NULL, "the subquery's answer exceeds the query memory");
    else if (st == FJ_OK && !msg[0])
        st = b.data ? iq_subquery_catalog(c, b.data, b.len, cat, data, err)
                    : fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    fj_buf_free(&b);
    return st;
}

fj_status iq_select(iq_ctx *c, const iq_stmt *st, fj_buf *out, bool *any, char *msg, size_t cap, fj_err *err)
{
    const char *db = c->db;
    for (size_t i = 0; i < st->nfrom; i++)
        if (st->from[i].db)
            db = st->from[i].db;
    if (!db || !*db)
        return snprintf(msg, cap, "database name required"), FJ_OK;
    if (!fj_auth_may_read(fj_http_principal(c->r), db))
        return snprintf(msg, cap, "error authorizing query: this credential may not read database %s", db), FJ_OK;
    bool aggregate_mode = false, raw_ref = false;
    for (size_t f = 0; f < st->nfields; f++) {
        const iq_expr *e = st->fields[f].e;
        if (!check_calls(e, st->group_time, msg, cap))
            return FJ_OK;
        aggregate_mode = aggregate_mode || has_call(e);
        raw_ref = raw_ref || !has_call(e);
    }
    /* top and bottom: the only call, beside fields and tags of the points they choose */
    const char *top = NULL;
    size_t ncalls = 0;
    for (size_t f = 0; f < st->nfields; f++)
        if (has_call(st->fields[f].e)) {
            ncalls++;
            if (st->fields[f].e->k == IQ_CALL && classify(st->fields[f].e->s) == FN_ROWS &&
                strcmp(st->fields[f].e->s, "distinct"))
                top = st->fields[f].e->s;
        }
    if (top && ncalls > 1)
        return snprintf(msg, cap, "selector function %s() cannot be combined with other functions", top), FJ_OK;
    if (aggregate_mode && raw_ref && !top) {
        for (size_t f = 0; f < st->nfields; f++)
            if (!has_call(st->fields[f].e) && st->fields[f].e->k != IQ_NUM)
                return snprintf(msg, cap, "mixing aggregate and non-aggregate queries is not supported"), FJ_OK;
    }
    if (st->group_time && !aggregate_mode)
        return snprintf(msg, cap, "GROUP BY requires at least one aggregate function"), FJ_OK;
    for (size_t f = 0; f < st->nfields && st->nfields > 1; f++)
        if (st->fields[f].e->k == IQ_CALL && !strcmp(st->fields[f].e->s, "distinct"))
            return snprintf(msg, cap, "aggregate function %s() cannot be combined with other functions or fields",
                            st->fields[f].e->s),
                   FJ_OK;
    bool wild = false;
    for (size_t f = 0; f < st->nfields; f++)
        wild = wild || st->fields[f].e->k == IQ_WILD;
    if (wild && aggregate_mode)
        return snprintf(msg, cap, "mixing aggregate and non-aggregate queries is not supported"), FJ_OK;
    run u = {.c = c, .st = st, .msg = msg, .cap = cap, .rng = ((uint64_t)c->now_ns ^ 0x9e3779b97f4a7c15ULL) | 1};
    msg[0] = '\0';
    if (!iq_cond_split(c, st->where, &u.tmin, &u.tmax, &u.rest, msg, cap))
        return FJ_OK;
    c->window_from = u.tmin;
    c->window_to = u.tmax;
    iq_catalog cat;
    iq_subdata sub = {0};
    bool has_sub = false;
    for (size_t i = 0; i < st->nfrom; i++)
        has_sub = has_sub || st->from[i].sub;
    if (has_sub && st->nfrom > 1)
        return snprintf(msg, cap, "a subquery must be the only source of its FROM in fjord"), FJ_OK;
    fj_status rs = has_sub ? run_subquery(c, st->from[0].sub, &cat, &sub, msg, cap, err)
                           : iq_catalog_load(c, db, st->from, st->nfrom, &cat, err);
    if (rs != FJ_OK || msg[0])
        return rs;
    u.sub = &sub;
    if (has_sub) { /* the outer range: its own WHERE */
        c->window_from = u.tmin;
        c->window_to = u.tmax;
    }
    if (!cat.nmeas && has_sub)
        return FJ_OK;
    if (!cat.nmeas) { /* nothing of what FROM names: is there such a database at all? */
        bool known = false;
        if ((rs = iq_db_known(c, db, &known, err)) != FJ_OK)
            return rs;
        if (!known)
            snprintf(msg, cap, "database not found: %s", db);
        return FJ_OK;
    }
    u.cat = &cat;
    for (size_t m = 0; m < cat.nmeas && rs == FJ_OK && !msg[0]; m++) {
        if (!iq_sources_match(st->from, st->nfrom, cat.meas[m].name))
            continue;
        u.m = &cat.meas[m];
        size_t mark = out->len;
        bool any_before = *any;
        rs = run_measurement(&u, out, any, err);
        if (msg[0]) { /* a statement error: drop what this measurement wrote */
            out->len = mark;
            *any = any_before;
        }
    }
    return rs;
}
