/* storage/query/gpuload.c — per-card GPU buckets and their rows (storage/query/gpuload.h). */
#include "storage/query/gpuload.h"

#include "alloc.h"

#include <math.h>
#include <string.h>

struct fj_gl_bucket {
    int64_t samples;
    fj_qm_acc util, mem, power, temp;
};

fj_status fj_gl_init(fj_gl_series *s, const fj_qm_grid *g, fj_sink *k)
{
    memset(s, 0, sizeof *s);
    s->g = g;
    s->k = k;
    s->b = fj_calloc(g->n ? g->n : 1, sizeof *s->b);
    return s->b ? FJ_OK : FJ_ENOMEM;
}

void fj_gl_free(fj_gl_series *s)
{
    fj_free(s->b);
    fj_free(s->uuid);
    s->b = NULL;
    s->uuid = NULL;
}

static fj_value v_null(void)
{
    return (fj_value){.t = FJ_VT_NULL};
}

static fj_value v_int(int64_t i)
{
    return (fj_value){.t = FJ_VT_INT, .i = i};
}

static fj_value v_avg(const fj_qm_acc *a, bool integer)
{
    double v;
    if (!fj_qm_avg(a, &v))
        return v_null();
    return integer ? v_int((int64_t)llround(v)) : (fj_value){.t = FJ_VT_REAL, .d = v};
}

static fj_value v_max(const fj_qm_acc *a, bool integer)
{
    if (!a->n)
        return v_null();
    return integer ? v_int((int64_t)llround(a->max)) : (fj_value){.t = FJ_VT_REAL, .d = a->max};
}

fj_status fj_gl_flush(fj_gl_series *s)
{
    if (!s->open)
        return FJ_OK;
    s->open = false;
    for (size_t i = 0; i < s->g->n; i++) {
        const fj_gl_bucket *b = &s->b[i];
        if (!b->samples)
            continue;
        fj_value v[13] = {
            {.t = FJ_VT_TEXT, .s = s->node},
            v_int(s->card),
            s->uuid ? (fj_value){.t = FJ_VT_TEXT, .s = s->uuid} : v_null(),
            {.t = FJ_VT_TIME, .i = s->g->from + (int64_t)i * s->g->step},
            v_int(b->samples),
            v_avg(&b->util, false),
            v_max(&b->util, false),
            v_avg(&b->mem, true),
            v_max(&b->mem, true),
            v_avg(&b->power, false),
            v_max(&b->power, false),
            v_avg(&b->temp, false),
            v_max(&b->temp, false),
        };
        fj_status rs = s->k->row(s->k, v);
        if (rs != FJ_OK)
            return rs;
    }
    return FJ_OK;
}

static bool same_uuid(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static void add(fj_qm_acc *a, double v)
{
    if (!isnan(v))
        fj_qm_add(a, v);
}

fj_status fj_gl_add(fj_gl_series *s, const char *node, int64_t card, const char *uuid, fj_time t, double util,
                    double mem_kb, double power_w, double temp_c)
{
    if (!s->open || s->card != card || !same_uuid(s->uuid, uuid) || s->node != node) {
        fj_status rs = fj_gl_flush(s);
        if (rs != FJ_OK)
            return rs;
        fj_free(s->uuid);
        s->uuid = NULL;
        if (uuid && !(s->uuid = fj_strdup(uuid)))
            return FJ_ENOMEM;
        s->node = node;
        s->card = card;
        s->open = true;
        memset(s->b, 0, s->g->n * sizeof *s->b);
    }
    long bi = fj_qm_bucket(s->g, t);
    if (bi < 0)
        return FJ_OK;
    fj_gl_bucket *b = &s->b[bi];
    b->samples++;
    add(&b->util, util);
    add(&b->mem, mem_kb);
    add(&b->power, power_w);
    add(&b->temp, temp_c);
    return FJ_OK;
}
