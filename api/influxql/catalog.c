/* api/influxql/catalog.c — a cluster's line-protocol series as InfluxDB shows them.
 *
 * fjord keys a series by (cluster, host, metric, type, type-id, stype, stype-id) (docs/metrics.md).
 * Back to InfluxDB's view:
 * - metric `m.f` (a generic line's measurement and field) is measurement m, field f; a metric
 *   without an unescaped dot (a ClusterCockpit metric line) is measurement m, field `value`; a
 *   measurement's dots are escaped (`node\.temp.celsius`; ingest/metric_name.h);
 * - tag `cluster` always; the host as `hostname` for ClusterCockpit lines and `host` for generic
 *   ones (the tag each kind of sender uses); `type` (ClusterCockpit lines always, generic lines
 *   when not `node`), `type-id`, and for generic lines the tags folded into the sub-type
 *   (stype "k1,k2", stype-id "v1,v2") as tags k1, k2; otherwise `stype`, `stype-id`. */
#include "api/influxql/iq_int.h"

#include "ingest/metric_name.h"
#include "storage/core/store_ts.h"
#include "storage/query/influx_catalog.h"

#include <stdlib.h>
#include <string.h>

typedef struct loader {
    fj_arena *a;
    iq_fser *v;
    size_t n, cap;
    fj_status st;
    uint8_t ftype; /* of the series being pushed */
} loader;

static char *dup(fj_arena *a, fj_ts_str s)
{
    return fj_arena_strndup(a, s.p ? s.p : "", s.n);
}

static int cmp_tag(const void *x, const void *y)
{
    return strcmp(((const iq_tag *)x)->k, ((const iq_tag *)y)->k);
}

/* The items of a fold ("k1,k2" or "v1,v2"; commas in an item escaped) into v[0..*n), unescaped
 * copies; false when more than max. */
static bool fold_items(fj_arena *a, const char *s, const char **v, size_t *n, size_t max)
{
    size_t len = strlen(s), at = 0;
    *n = 0;
    for (;;) {
        if (*n == max)
            return false;
        char *item = fj_arena_alloc(a, len - at + 1);
        if (!item)
            return false;
        size_t got, used = fj_mname_unescape(s + at, len - at, ',', item, &got);
        item[got] = '\0';
        v[(*n)++] = item;
        at += used;
        if (at >= len)
            return true;
        at++; /* the comma */
    }
}

/* stype "k1,k2" with stype-id "v1,v2" as tags; false when the counts differ. */
static bool unfold(fj_arena *a, const char *ks, const char *vs, iq_tag *tags, size_t *n, size_t max)
{
    const char *k[40], *v[40];
    size_t nk, nv;
    if (!fold_items(a, ks, k, &nk, 40) || !fold_items(a, vs, v, &nv, 40) || nk != nv || *n + nk > max)
        return false;
    for (size_t i = 0; i < nk; i++)
        tags[(*n)++] = (iq_tag){k[i], v[i]};
    return true;
}

/* s with InfluxDB's escapes of a series key: a backslash before each of `,`, ` ` (and `=` in a
 * tag: eq) */
static void put_escaped(fj_buf *b, const char *s, bool eq)
{
    for (; *s; s++) {
        if (*s == ',' || *s == ' ' || (eq && *s == '='))
            fj_buf_append(b, "\\", 1);
        fj_buf_append(b, s, 1);
    }
}

/* Appends one fser: its tags sorted and copied, its series key made. */
static fj_status push(loader *l, uint32_t id, int src, const char *meas, const char *field, const iq_tag *in,
                      size_t n)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        iq_fser *nv = fj_arena_calloc(l->a, cap, sizeof *nv);
        if (!nv)
            return l->st = FJ_ENOMEM;
        if (l->n)
            memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = cap;
    }
    iq_fser *f = &l->v[l->n];
    f->tags = fj_arena_calloc(l->a, n + 1, sizeof *f->tags);
    if (!f->tags)
        return l->st = FJ_ENOMEM;
    memcpy(f->tags, in, n * sizeof *in);
    qsort(f->tags, n, sizeof *f->tags, cmp_tag);
    fj_buf k;
    fj_buf_init(&k, 1 << 20);
    put_escaped(&k, meas, false);
    for (size_t i = 0; i < n; i++) {
        fj_buf_puts(&k, ",");
        put_escaped(&k, f->tags[i].k, true);
        fj_buf_puts(&k, "=");
        put_escaped(&k, f->tags[i].v, true);
    }
    f->skey = k.data ? fj_arena_strndup(l->a, k.data, k.len) : NULL;
    fj_buf_free(&k);
    if (!f->skey)
        return l->st = FJ_ENOMEM;
    f->ntags = n;
    f->id = id;
    f->src = src;
    f->ftype = l->ftype;
    f->meas = meas;
    f->field = field;
    l->n++;
    return FJ_OK;
}

static fj_status add_sonar(void *ud, int src, const char *meas, const char *field, const iq_tag *tags, size_t n)
{
    ((loader *)ud)->ftype = FJ_TS_FLOAT;
    return push(ud, 0, src, meas, field, tags, n);
}

static fj_status add(void *ud, uint32_t id, const fj_ts_key *key)
{
    loader *l = ud;
    char *metric = dup(l->a, key->metric), *host = dup(l->a, key->host), *type = dup(l->a, key->type),
         *type_id = dup(l->a, key->type_id), *stype = dup(l->a, key->stype), *stype_id = dup(l->a, key->stype_id),
         *cluster = dup(l->a, key->cluster);
    iq_tag tags[40];
    size_t n = 0;
    if (!metric || !host || !type || !type_id || !stype || !stype_id || !cluster)
        return l->st = FJ_ENOMEM;
    /* the measurement up to the first unescaped dot, unescaped in place; the field after it */
    size_t mlen = strlen(metric), mn;
    size_t at = fj_mname_unescape(metric, mlen, '.', metric, &mn);
    bool generic = at < mlen;
    const char *field = generic ? metric + at + 1 : "value";
    metric[mn] = '\0';
    tags[n++] = (iq_tag){"cluster", cluster};
    if (*host)
        tags[n++] = (iq_tag){generic ? "host" : "hostname", host};
    if (*type && (!generic || strcmp(type, "node")))
        tags[n++] = (iq_tag){"type", type};
    if (*type_id)
        tags[n++] = (iq_tag){"type-id", type_id};
    if (*stype && !(generic && unfold(l->a, stype, stype_id, tags, &n, 36))) {
        tags[n++] = (iq_tag){"stype", stype};
        if (*stype_id)
            tags[n++] = (iq_tag){"stype-id", stype_id};
    }
    l->ftype = key->ftype;
    return push(l, id, IQ_SRC_TS, metric, field, tags, n);
}

static int cmp_fser(const void *x, const void *y)
{
    const iq_fser *a = x, *b = y;
    int c = strcmp(a->meas, b->meas);
    if (!c)
        c = strcmp(a->skey, b->skey);
    return c ? c : strcmp(a->field, b->field);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The distinct strings of v[0..n), sorted, in place; the new count. */
static size_t uniq(const char **v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_str);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (strcmp(v[i], v[k - 1]))
            v[k++] = v[i];
    return k;
}

static fj_status finish(iq_ctx *c, loader *lp, iq_catalog *cat, fj_err *err);

static fj_status add_typed(void *ud, uint32_t id, uint8_t ftype, const char *meas, const char *field,
                           const iq_tag *tags, size_t n)
{
    ((loader *)ud)->ftype = ftype;
    return push(ud, id, IQ_SRC_SUB, meas, field, tags, n);
}

fj_status iq_catalog_build(iq_ctx *c, iq_catalog_list list, void *ud, iq_catalog *cat, fj_err *err)
{
    *cat = (iq_catalog){0};
    loader l = {.a = c->a};
    fj_status st = list(ud, add_typed, &l, err);
    if (l.st != FJ_OK)
        return fj_err_set(err, l.st, NULL, "out of memory");
    if (st != FJ_OK)
        return st;
    return finish(c, &l, cat, err);
}

fj_status iq_catalog_load(iq_ctx *c, const char *db, const iq_source *from, size_t nfrom, iq_catalog *cat,
                          fj_err *err)
{
    *cat = (iq_catalog){0};
    loader l = {.a = c->a};
    bool named = nfrom > 0;
    for (size_t i = 0; i < nfrom; i++)
        named = named && !from[i].re;
    fj_status st = FJ_OK;
    unsigned sonar = IQ_SONAR_ALL;
    if (named) { /* only the measurements named: not every series of the cluster */
        sonar = 0;
        for (size_t i = 0; i < nfrom && st == FJ_OK; i++) {
            bool seen = false;
            for (size_t k = 0; k < i && !seen; k++)
                seen = !strcmp(from[k].name, from[i].name);
            int src = iq_sonar_src(from[i].name);
            if (src != IQ_SRC_TS)
                sonar |= 1u << src;
            else if (!seen)
                st = fj_q_ts_series_of(c->s, db, from[i].name, add, &l, err);
        }
    } else {
        fj_ts_sel sel = {db, NULL, NULL};
        st = fj_store_ts_series(c->s, &sel, add, &l, err);
    }
    if (l.st != FJ_OK)
        return fj_err_set(err, l.st, NULL, "out of memory");
    if (st != FJ_OK)
        return st;
    st = sonar ? iq_sonar_catalog(c, db, sonar, add_sonar, &l, err) : FJ_OK;
    if (l.st != FJ_OK)
        return fj_err_set(err, l.st, NULL, "out of memory");
    if (st != FJ_OK)
        return st;
    return finish(c, &l, cat, err);
}

/* The catalog of l's series: sorted, grouped into InfluxDB series and measurements. */
static fj_status finish(iq_ctx *c, loader *lp, iq_catalog *cat, fj_err *err)
{
    loader l = *lp;
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, cmp_fser);
    cat->fser = l.v;
    cat->nfser = l.n;
    cat->iser = fj_arena_calloc(c->a, l.n + 1, sizeof *cat->iser);
    cat->meas = fj_arena_calloc(c->a, l.n + 1, sizeof *cat->meas);
    if (!cat->iser || !cat->meas)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    for (size_t i = 0; i < l.n; i++) {
        if (!cat->niser || strcmp(cat->iser[cat->niser - 1].f->skey, l.v[i].skey) ||
            strcmp(cat->iser[cat->niser - 1].f->meas, l.v[i].meas))
            cat->iser[cat->niser++] = (iq_iser){.f = &l.v[i], .first = i};
        cat->iser[cat->niser - 1].nfields++;
    }
    for (size_t i = 0; i < cat->niser; i++) {
        if (!cat->nmeas || strcmp(cat->meas[cat->nmeas - 1].name, cat->iser[i].f->meas))
            cat->meas[cat->nmeas++] = (iq_meas){.name = cat->iser[i].f->meas, .src = cat->iser[i].f->src, .first = i};
        cat->meas[cat->nmeas - 1].n++;
    }
    for (size_t m = 0; m < cat->nmeas; m++) {
        iq_meas *me = &cat->meas[m];
        size_t nt = 0, nf = 0;
        for (size_t i = me->first; i < me->first + me->n; i++) {
            nt += cat->iser[i].f->ntags;
            nf += cat->iser[i].nfields;
        }
        me->tagkeys = fj_arena_calloc(c->a, nt + 1, sizeof *me->tagkeys);
        me->fields = fj_arena_calloc(c->a, nf + 1, sizeof *me->fields);
        me->ftypes = fj_arena_calloc(c->a, nf + 1, sizeof *me->ftypes);
        if (!me->tagkeys || !me->fields || !me->ftypes)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        for (size_t i = me->first; i < me->first + me->n; i++) {
            const iq_iser *is = &cat->iser[i];
            for (size_t t = 0; t < is->f->ntags; t++)
                me->tagkeys[me->ntagkeys++] = is->f->tags[t].k;
            for (size_t f = 0; f < is->nfields; f++)
                me->fields[me->nfields++] = cat->fser[is->first + f].field;
        }
        me->ntagkeys = uniq(me->tagkeys, me->ntagkeys);
        me->nfields = uniq(me->fields, me->nfields);
        /* each field's type: its first series' (a series' type is fixed, not a field's: docs/metrics.md) */
        for (size_t f = 0; f < me->nfields; f++) {
            bool found = false;
            for (size_t i = me->first; i < me->first + me->n && !found; i++) {
                const iq_iser *is = &cat->iser[i];
                for (size_t k = 0; k < is->nfields && !found; k++)
                    if (!strcmp(cat->fser[is->first + k].field, me->fields[f])) {
                        me->ftypes[f] = cat->fser[is->first + k].ftype;
                        found = true;
                    }
            }
        }
    }
    return FJ_OK;
}

