/* api/influxql/series.c — what the InfluxQL statements ask of a catalogue's series: a series'
 * tag value, a measurement's tag keys, whether FROM names a measurement. Below catalog.c, sonar.c,
 * select.c and show.c. */
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
