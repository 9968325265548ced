/* json_path.c — the path's text, and the errors and notes that carry it (json_path.h). */
#include "ingest/json_path.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { NOTE_DETAIL_MAX = 256 };

void fj_jpath_render(const fj_jpath *p, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    int depth = p->depth < FJ_JPATH_MAX_DEPTH ? p->depth : FJ_JPATH_MAX_DEPTH;
    for (int k = 0; k < depth && o + 1 < cap; k++) {
        int w = p->seg[k].key ? snprintf(buf + o, cap - o, "%s%s", o ? "." : "", p->seg[k].key)
                              : snprintf(buf + o, cap - o, "[%zu]", p->seg[k].idx);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

fj_status fj_jpath_fail(fj_jpath *p, const char *fmt, ...)
{
    char path[sizeof p->err->path];
    char msg[sizeof p->err->message];
    fj_jpath_render(p, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fj_err_set(p->err, FJ_EINVAL, path, "%s", msg);
}

fj_status fj_jpath_oom(fj_jpath *p)
{
    char path[sizeof p->err->path];
    fj_jpath_render(p, path, sizeof path);
    return fj_err_set(p->err, FJ_ENOMEM, path, "out of memory");
}

fj_status fj_jpath_type_error(fj_jpath *p, const char *want, const fj_json *v)
{
    switch (v->type) {
    case FJ_JSON_INT:
        return fj_jpath_fail(p, "expected %s, got negative integer %lld", want, (long long)v->v.i);
    case FJ_JSON_UINT:
        return fj_jpath_fail(p, "expected %s, got integer %llu", want, (unsigned long long)v->v.u);
    case FJ_JSON_REAL:
        return fj_jpath_fail(p, "expected %s, got number %g", want, v->v.d);
    default:
        return fj_jpath_fail(p, "expected %s, got %s", want, fj_json_type_name(v->type));
    }
}

/* Room for one more note. The array grows by doubling in the arena (the old one stays there
 * until the batch is freed) up to max_notes + 1: the last slot is for "notes_truncated". */
static fj_status reserve_note(fj_jpath *p)
{
    if (p->n_notes < p->cap_notes)
        return FJ_OK;
    size_t cap = p->cap_notes ? p->cap_notes * 2 : 8;
    if (cap >= p->max_notes)
        cap = p->max_notes + 1;
    fj_note *nn = fj_arena_alloc(p->a, cap * sizeof *nn);
    if (!nn)
        return fj_jpath_oom(p);
    if (p->n_notes)
        memcpy(nn, p->notes, p->n_notes * sizeof *nn);
    p->notes = nn;
    p->cap_notes = cap;
    return FJ_OK;
}

fj_status fj_jpath_note(fj_jpath *p, const char *kind, const char *fmt, ...)
{
    if (p->n_notes >= p->max_notes) {
        p->dropped_notes++;
        return FJ_OK;
    }
    fj_status st = reserve_note(p);
    if (st)
        return st;
    char path[FJ_JPATH_NOTE_MAX], detail[NOTE_DETAIL_MAX];
    fj_jpath_render(p, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    fj_note *n = &p->notes[p->n_notes];
    n->kind = kind;
    n->path = fj_arena_strdup(p->a, path);
    n->detail = fj_arena_strdup(p->a, detail);
    if (!n->path || !n->detail)
        return fj_jpath_oom(p);
    p->n_notes++;
    return FJ_OK;
}

fj_status fj_jpath_end_notes(fj_jpath *p, fj_status st)
{
    if (st != FJ_OK || !p->dropped_notes)
        return st;
    /* fj_jpath_note kept the slot: notes stop at max_notes, the capacity is one more. */
    fj_note *n = &p->notes[p->n_notes];
    n->path = "";
    n->kind = "notes_truncated";
    n->detail = fj_arena_printf(p->a, "%zu more notes dropped", p->dropped_notes);
    if (!n->detail)
        return fj_err_set(p->err, FJ_ENOMEM, "", "out of memory");
    p->n_notes++;
    return FJ_OK;
}
