/* api/influxql/series.c — what the InfluxQL statements ask of a catalogue's series: a series'
 * tag value, a measurement's tag keys, whether FROM names a measurement; and the points a statement
 * builds itself. Below catalog.c, sonar.c, select.c, subquery.c and show.c. */
#include "api/influxql/iq_int.h"

#include "api/re.h"

#include <string.h>

const char *iq_tag_value(const iq_iser *is, const char *k)
{
    for (size_t i = 0; i < is->f->ntags; i++)
        if (!strcmp(is->f->tags[i].k, k))
            return is->f->tags[i].v;
    return "";
}

bool iq_meas_has_tag(const iq_meas *m, const char *k)
{
    for (size_t i = 0; i < m->ntagkeys; i++)
        if (!strcmp(m->tagkeys[i], k))
            return true;
    return false;
}

bool iq_sources_match(const iq_source *src, size_t n, const char *m)
{
    if (!n)
        return true;
    for (size_t i = 0; i < n; i++) {
        if (src[i].sub || (src[i].re ? fj_re_match(src[i].re, m) : !strcmp(src[i].name, m)))
            return true;
    }
    return false;
}

uint8_t iq_field_type(const iq_meas *m, const char *f)
{
    for (size_t i = 0; m->ftypes && i < m->nfields; i++)
        if (!strcmp(m->fields[i], f))
            return m->ftypes[i] == FJ_TS_UNTYPED ? FJ_TS_FLOAT : m->ftypes[i];
    return FJ_TS_FLOAT;
}

const char *iq_ftype_name(uint8_t t)
{
    static const char *const names[] = {"float", "integer", "string", "boolean", "float"};
    return t <= FJ_TS_UNTYPED ? names[t] : "float";
}

bool iq_points_push(fj_arena *a, fj_ts_points *p, int64_t t, double v)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        int64_t *nt = fj_arena_alloc(a, cap * sizeof *nt);
        double *nv = fj_arena_alloc(a, cap * sizeof *nv);
        if (!nt || !nv)
            return false;
        if (p->n) {
            memcpy(nt, p->t, p->n * sizeof *nt);
            memcpy(nv, p->v, p->n * sizeof *nv);
        }
        p->t = nt;
        p->v = nv;
        p->cap = cap;
    }
    p->t[p->n] = t;
    p->v[p->n++] = v;
    return true;
}
