/* api/influxql/subquery.c — SELECT ... FROM (SELECT ...): the inner statement's answer (run by
 * select.c as any statement, times in nanoseconds) read back, and its series offered to the outer
 * statement as a catalog: a measurement per name it answered, its GROUP BY tags as tags, each
 * column but time a field (of the type of its first value: a number a float, a string, a
 * boolean), each field of each series with its points. */
#include "api/influxql/iq_int.h"

#include <string.h>

typedef struct sub_list {
    iq_ctx *c;
    const fj_json *series; /* the answer's array of series */
    iq_subdata *data;
} sub_list;

static fj_status add_string(iq_ctx *c, iq_subdata *d, const char *s, double *index)
{
    if (d->nstrs % 256 == 0) {
        const char **ns = fj_arena_alloc(c->a, (d->nstrs + 256) * sizeof *ns);
        if (!ns)
            return FJ_ENOMEM;
        if (d->nstrs)
            memcpy(ns, d->strs, d->nstrs * sizeof *ns);
        d->strs = ns;
    }
    d->strs[d->nstrs] = s;
    *index = (double)d->nstrs++;
    return FJ_OK;
}

/* Each column of each series of the answer as a field series, its points into data. */
static fj_status list_series(void *ud, iq_fser_add_typed add, void *l, fj_err *err)
{
    sub_list *sl = ud;
    iq_ctx *c = sl->c;
    iq_subdata *d = sl->data;
    size_t total = 0;
    for (size_t i = 0; i < sl->series->len; i++) {
        const fj_json *cols = fj_json_get(&sl->series->v.items[i], "columns");
        total += cols && cols->type == FJ_JSON_ARRAY ? cols->len : 0;
    }
    d->pts = fj_arena_calloc(c->a, total + 1, sizeof *d->pts);
    if (!d->pts)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < sl->series->len; i++) {
        const fj_json *s = &sl->series->v.items[i];
        const fj_json *name = fj_json_get(s, "name"), *tags = fj_json_get(s, "tags");
        const fj_json *cols = fj_json_get(s, "columns"), *vals = fj_json_get(s, "values");
        if (!name || name->type != FJ_JSON_STRING || !cols || cols->type != FJ_JSON_ARRAY || !vals ||
            vals->type != FJ_JSON_ARRAY)
            return fj_err_set(err, FJ_EIO, NULL, "a subquery's answer is not as written");
        size_t nt = tags && tags->type == FJ_JSON_OBJECT ? tags->len : 0;
        iq_tag *tg = fj_arena_calloc(c->a, nt + 1, sizeof *tg);
        if (!tg)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        for (size_t k = 0; k < nt; k++)
            tg[k] = (iq_tag){tags->v.members[k].key,
                             tags->v.members[k].value.type == FJ_JSON_STRING ? tags->v.members[k].value.v.s : ""};
        for (size_t col = 1; col < cols->len; col++) {
            if (cols->v.items[col].type != FJ_JSON_STRING)
                continue;
            uint32_t id = (uint32_t)d->npts++;
            fj_ts_points *p = &d->pts[id];
            uint8_t ft = FJ_TS_FLOAT;
            bool typed = false;
            for (size_t r = 0; r < vals->len; r++) {
                const fj_json *row = &vals->v.items[r];
                if (row->type != FJ_JSON_ARRAY || row->len <= col)
                    continue;
                const fj_json *t = &row->v.items[0], *x = &row->v.items[col];
                int64_t tn = t->type == FJ_JSON_UINT ? (int64_t)t->v.u : t->type == FJ_JSON_INT ? t->v.i : 0;
                double v;
                uint8_t xt;
                switch (x->type) {
                case FJ_JSON_UINT: v = (double)x->v.u, xt = FJ_TS_FLOAT; break;
                case FJ_JSON_INT: v = (double)x->v.i, xt = FJ_TS_FLOAT; break;
                case FJ_JSON_REAL: v = x->v.d, xt = FJ_TS_FLOAT; break;
                case FJ_JSON_TRUE: v = 1, xt = FJ_TS_BOOLEAN; break;
                case FJ_JSON_FALSE: v = 0, xt = FJ_TS_BOOLEAN; break;
                case FJ_JSON_STRING:
                    if (add_string(c, d, x->v.s, &v) != FJ_OK)
                        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                    xt = FJ_TS_STRING;
                    break;
                default: continue; /* null: no point */
                }
                if (!typed) {
                    ft = xt;
                    typed = true;
                }
                if (xt != ft) /* a column of mixed types: its first type's points only */
                    continue;
                if (!iq_points_push(c->a, p, tn, v))
                    return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            }
            fj_status st = add(l, id, ft, name->v.s, cols->v.items[col].v.s, tg, nt);
            if (st != FJ_OK)
                return fj_err_set(err, st, NULL, "out of memory");
        }
    }
    return FJ_OK;
}

fj_status iq_subquery_catalog(iq_ctx *c, const char *answer, size_t len, iq_catalog *cat, iq_subdata *data,
                              fj_err *err)
{
    *data = (iq_subdata){0};
    *cat = (iq_catalog){0};
    fj_json *doc = NULL;
    fj_status st = fj_json_parse(c->a, answer, len, NULL, &doc, err);
    if (st != FJ_OK)
        return st;
    const fj_json *series = fj_json_get(doc, "series");
    if (!series || series->type != FJ_JSON_ARRAY || !series->len)
        return FJ_OK; /* an empty answer: no series */
    sub_list sl = {c, series, data};
    return iq_catalog_build(c, list_series, &sl, cat, err);
}
