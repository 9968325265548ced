/* api/influxql/show.c — the SHOW statements Grafana and the influx CLI send: databases (the
 * clusters the credential may read), measurements, tag keys and values, field keys, series and
 * retention policies, from a cluster's catalog (api/influxql/catalog.c). */
#include "api/influxql/iq_int.h"

#include "storage/core/store_query.h"
#include "storage/core/store_ts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static void series_open(fj_buf *out, bool *any, const char *name, const char *c1, const char *c2)
{
    fj_buf_puts(out, *any ? "," : ",\"series\":[");
    *any = true;
    fj_buf_puts(out, "{");
    if (name) {
        fj_buf_puts(out, "\"name\":");
        fj_buf_json_str(out, name);
        fj_buf_puts(out, ",");
    }
    fj_buf_puts(out, "\"columns\":[");
    fj_buf_json_str(out, c1);
    if (c2) {
        fj_buf_puts(out, ",");
        fj_buf_json_str(out, c2);
    }
    fj_buf_puts(out, "],\"values\":[");
}

/* One row of a one-column series: the series (name, column col) opened before the first row,
 * *rows counting them; the caller closes it with "]}" when *rows is not 0. */
static void name_row(fj_buf *out, bool *any, size_t *rows, const char *name, const char *col, const char *value)
{
    if (!(*rows)++)
        series_open(out, any, name, col, NULL);
    else
        fj_buf_puts(out, ",");
    fj_buf_puts(out, "[");
    fj_buf_json_str(out, value);
    fj_buf_puts(out, "]");
}

/* Rows within OFFSET and LIMIT. */
static bool within(const iq_stmt *st, size_t k)
{
    return (int64_t)k >= st->off && (!st->limit || (int64_t)k < st->off + st->limit);
}

typedef struct tag_ref {
    const iq_iser *is;
} tag_ref;

static iq_val ref_tag(void *ud, const char *name)
{
    const tag_ref *t = ud;
    return (iq_val){.k = IQV_STR, .s = iq_tag_value(t->is, name)};
}

/* Whether series is passes the statement's WHERE (tags only; time terms are ignored, as
 * InfluxDB 1.6 does for SHOW on its in-memory index). */
static bool series_passes(iq_ctx *c, const iq_expr *rest, const iq_iser *is)
{
    (void)c;
    tag_ref t = {is};
    return iq_cond_true(rest, ref_tag, &t);
}

typedef struct names {
    const char **v;
    size_t n, cap;
    fj_arena *a;
} names;

static bool names_add(names *l, const char *s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        const char **nv = fj_arena_calloc(l->a, cap, sizeof *nv);
        if (!nv)
            return false;
        if (l->n)
            memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return true;
}

static void names_sort_uniq(names *l)
{
    if (!l->n)
        return;
    qsort(l->v, l->n, sizeof *l->v, cmp_str);
    size_t k = 1;
    for (size_t i = 1; i < l->n; i++)
        if (strcmp(l->v[i], l->v[k - 1]))
            l->v[k++] = l->v[i];
    l->n = k;
}

/* SHOW DATABASES: the clusters with line-protocol series that the credential may read. */
static fj_status show_databases(iq_ctx *c, fj_buf *out, bool *any, fj_err *err)
{
    const fj_principal *who = fj_http_principal(c->r);
    names l = {.a = c->a};
    fj_status rs = iq_databases(c, &l.v, &l.n, err);
    if (rs != FJ_OK)
        return rs;
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (!fj_auth_may_read(who, l.v[i]))
            continue;
        name_row(out, any, &k, "databases", "name", l.v[i]);
    }
    if (k)
        fj_buf_puts(out, "]}");
    return FJ_OK;
}

fj_status iq_show(iq_ctx *c, const iq_stmt *st, fj_buf *out, bool *any, char *msg, size_t cap, fj_err *err)
{
    msg[0] = '\0';
    if (st->kind == IQS_SHOW_DATABASES)
        return show_databases(c, out, any, err);
    const char *db = st->on_db ? st->on_db : c->db;
    for (size_t i = 0; i < st->nfrom; i++)
        if (st->from[i].db)
            db = st->from[i].db;
    if (!db || !*db)
        return snprintf(msg, cap, "database name required"), FJ_OK;
    if (!fj_auth_may_read(fj_http_principal(c->r), db))
        return snprintf(msg, cap, "error authorizing query: this credential may not read database %s", db), FJ_OK;
    int64_t tmin, tmax;
    const iq_expr *rest = NULL;
    if (!iq_cond_split(c, st->where, &tmin, &tmax, &rest, msg, cap))
        return FJ_OK;
    c->window_from = tmin;
    c->window_to = tmax;
    iq_catalog cat;
    fj_status rs = iq_catalog_load(c, db, st->kind == IQS_SHOW_MEASUREMENTS ? NULL : st->from,
                                   st->kind == IQS_SHOW_MEASUREMENTS ? 0 : st->nfrom, &cat, err);
    if (rs != FJ_OK)
        return rs;
    if (!cat.nmeas) {
        bool known = false;
        if ((rs = iq_db_known(c, db, &known, err)) != FJ_OK)
            return rs;
        if (!known)
            snprintf(msg, cap, "database not found: %s", db);
        if (!known || st->kind != IQS_SHOW_RETENTION_POLICIES)
            return FJ_OK;
    }
    if (st->kind == IQS_SHOW_RETENTION_POLICIES) {
        series_open(out, any, NULL, "name", "duration");
        /* the two columns above are rewritten whole: InfluxDB's five */
        out->len -= strlen("\"name\",\"duration\"],\"values\":[");
        fj_buf_puts(out, "\"name\",\"duration\",\"shardGroupDuration\",\"replicaN\",\"default\"],\"values\":["
                         "[\"autogen\",\"0s\",\"168h0m0s\",1,true]]}");
        return FJ_OK;
    }
    names l = {.a = c->a};
    size_t k = 0;
    switch (st->kind) {
    case IQS_SHOW_MEASUREMENTS:
        for (size_t m = 0; m < cat.nmeas; m++) {
            const iq_meas *me = &cat.meas[m];
            if (st->has_with) {
                bool hit = st->with_re ? fj_re_match(st->with_re, me->name) : !strcmp(st->keys[0], me->name);
                if (st->with_op == IQ_NERE)
                    hit = !hit;
                if (!hit)
                    continue;
            }
            bool pass = !rest;
            for (size_t i = me->first; i < me->first + me->n && !pass; i++)
                pass = series_passes(c, rest, &cat.iser[i]);
            if (!pass || !within(st, k++))
                continue;
            name_row(out, any, &l.n, "measurements", "name", me->name);
        }
        if (l.n)
            fj_buf_puts(out, "]}");
        return FJ_OK;
    case IQS_SHOW_SERIES:
        for (size_t i = 0; i < cat.niser; i++) {
            const iq_iser *is = &cat.iser[i];
            if (!iq_sources_match(st->from, st->nfrom, is->f->meas) || !series_passes(c, rest, is))
                continue;
            if (!names_add(&l, is->f->skey))
                return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        }
        names_sort_uniq(&l);
        for (size_t i = 0; i < l.n; i++) {
            if (!within(st, i))
                continue;
            name_row(out, any, &k, NULL, "key", l.v[i]);
        }
        if (k)
            fj_buf_puts(out, "]}");
        return FJ_OK;
    default: break;
    }
    /* per measurement: tag keys, tag values, field keys */
    for (size_t m = 0; m < cat.nmeas; m++) {
        const iq_meas *me = &cat.meas[m];
        if (!iq_sources_match(st->from, st->nfrom, me->name))
            continue;
        l.n = 0;
        if (st->kind == IQS_SHOW_FIELD_KEYS) {
            for (size_t i = 0; i < me->nfields; i++)
                if (!names_add(&l, me->fields[i]))
                    return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        } else {
            for (size_t i = me->first; i < me->first + me->n; i++) {
                const iq_iser *is = &cat.iser[i];
                if (!series_passes(c, rest, is))
                    continue;
                for (size_t t = 0; t < is->f->ntags; t++) {
                    const char *key = is->f->tags[t].k;
                    if (st->kind == IQS_SHOW_TAG_VALUES) {
                        bool hit = false;
                        if (st->with_re)
                            hit = fj_re_match(st->with_re, key);
                        else
                            for (size_t q = 0; q < st->nkeys && !hit; q++)
                                hit = !strcmp(st->keys[q], key);
                        if (st->with_op == IQ_NE || st->with_op == IQ_NERE)
                            hit = !hit;
                        if (!hit)
                            continue;
                        /* key and value as one string, split again when written */
                        char *kv = fj_arena_printf(c->a, "%s%c%s", key, '\x01', is->f->tags[t].v);
                        if (!kv || !names_add(&l, kv))
                            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                    } else if (!names_add(&l, key)) {
                        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                    }
                }
            }
        }
        names_sort_uniq(&l);
        size_t w = 0;
        for (size_t i = 0; i < l.n; i++) {
            if (!within(st, i))
                continue;
            if (!w++) {
                if (st->kind == IQS_SHOW_FIELD_KEYS)
                    series_open(out, any, me->name, "fieldKey", "fieldType");
                else if (st->kind == IQS_SHOW_TAG_KEYS)
                    series_open(out, any, me->name, "tagKey", NULL);
                else
                    series_open(out, any, me->name, "key", "value");
            } else {
                fj_buf_puts(out, ",");
            }
            fj_buf_puts(out, "[");
            if (st->kind == IQS_SHOW_TAG_VALUES) {
                const char *sep = strchr(l.v[i], '\x01');
                char *key = fj_arena_strndup(c->a, l.v[i], (size_t)(sep - l.v[i]));
                fj_buf_json_str(out, key ? key : "");
                fj_buf_puts(out, ",");
                fj_buf_json_str(out, sep + 1);
            } else {
                fj_buf_json_str(out, l.v[i]);
                if (st->kind == IQS_SHOW_FIELD_KEYS) {
                    fj_buf_puts(out, ",");
                    fj_buf_json_str(out, iq_ftype_name(iq_field_type(me, l.v[i])));
                }
            }
            fj_buf_puts(out, "]");
        }
        if (w)
            fj_buf_puts(out, "]}");
    }
    return FJ_OK;
}
