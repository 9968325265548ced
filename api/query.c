/* query.c — the common part of every query handler: parameters (params.h, declared in spec.c),
 * credential check, format choice, then one store query written by the JSON or CSV writer. */
#include "api/api_int.h"

#include <stdio.h>
#include <string.h>

void fj_api_bad_param(fj_http_req *r, const char *name, const char *why)
{
    fj_err err = {0};
    fj_err_set(&err, FJ_EINVAL, name, "parameter '%s': %s", name, why);
    fj_http_reply_error(r, FJ_EINVAL, &err);
}

typedef struct argv {
    fj_arena *a;
    fj_arg *v;
    size_t n, cap;
    bool oom;
} argv;

static bool collect(void *ctx, const char *name, const char *value)
{
    argv *av = ctx;
    if (av->n == av->cap) {
        size_t nc = av->cap ? av->cap * 2 : 32;
        fj_arg *v = fj_arena_alloc(av->a, nc * sizeof *v);
        if (!v) {
            av->oom = true;
            return false;
        }
        if (av->n)
            memcpy(v, av->v, av->n * sizeof *v);
        av->v = v;
        av->cap = nc;
    }
    av->v[av->n].name = name;
    av->v[av->n].value = value;
    av->n++;
    return true;
}

static bool host_match(void *ctx, const char *name)
{
    return fj_hostpat_match(ctx, name);
}

fj_strlist fj_api_strlist(const fj_apiq *a, const char *name)
{
    const fj_pval *v = fj_param(&a->p, name);
    fj_strlist l = {v->list, v->n};
    return l;
}

fj_intlist fj_api_intlist(const fj_apiq *a, const char *name)
{
    const fj_pval *v = fj_param(&a->p, name);
    fj_intlist l = {v->ints, v->n};
    return l;
}

fj_tri fj_api_tri(const fj_apiq *a, const char *name)
{
    const fj_pval *v = fj_param(&a->p, name);
    return !v->set ? FJ_TRI_ANY : v->i ? FJ_TRI_YES : FJ_TRI_NO;
}

/* Whether ep's bucket is a width (a duration), not a kind of bucket its handler reads itself
 * (GET /api/v1/usage: day, week, month). */
static bool bucket_is_duration(const fj_endpoint *ep)
{
    for (const fj_pspec *p = ep->params; p && p->name; p++)
        if (strcmp(p->name, "bucket") == 0)
            return p->type == FJ_PT_DURATION;
    return false;
}

bool fj_api_begin(fj_http_req *r, const fj_endpoint *ep, const char *tag, fj_apiq *a)
{
    memset(a, 0, sizeof *a);
    a->r = r;
    a->ep = ep;
    fj_arena *ar = fj_http_arena(r);
    argv av = {ar, NULL, 0, 0, false};
    fj_http_args_each(r, collect, &av);
    fj_err err = {0};
    if (av.oom) {
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
        return false;
    }
    fj_time now = fj_time_now();
    a->q.now = now;
    fj_status st = fj_params_parse(ar, ep->params, av.v, av.n, now, &a->p, &err);
    if (st != FJ_OK) {
        fj_http_reply_error(r, st, &err);
        return false;
    }
    fj_query *q = &a->q;
    const fj_pval *v;
    if ((v = fj_param(&a->p, "cluster"))->set) {
        q->cluster = v->s;
        if (!fj_auth_may_read(fj_http_principal(r), q->cluster)) {
            fj_err_set(&err, FJ_EFORBIDDEN, "cluster", "this credential may not read cluster '%s'", q->cluster);
            fj_http_reply_error(r, FJ_EFORBIDDEN, &err);
            return false;
        }
    }
    if ((v = fj_param(&a->p, "from"))->set)
        q->from = v->i;
    if ((v = fj_param(&a->p, "to"))->set)
        q->to = v->i;
    if ((v = fj_param(&a->p, "at"))->set)
        q->to = v->i;
    if (q->from && q->to && q->from > q->to) {
        fj_api_bad_param(r, "from", "after 'to'");
        return false;
    }
    if ((v = fj_param(&a->p, "host"))->set) {
        st = fj_hostpat_compile(ar, v->list, v->n, &a->hosts, &err);
        if (st != FJ_OK) {
            if (st == FJ_ETOOBIG)
                st = FJ_EINVAL;
            snprintf(err.path, sizeof err.path, "host");
            fj_http_reply_error(r, st, &err);
            return false;
        }
        q->host_match = host_match;
        q->host_ctx = a->hosts;
    }
    if ((v = fj_param(&a->p, "bucket"))->set && bucket_is_duration(ep)) {
        if (v->i < 1) {
            fj_api_bad_param(r, "bucket", "must be at least 1 second");
            return false;
        }
        q->bucket_s = v->i;
    }
    if (ep->flags & FJ_EP_PAGED)
        q->limit = 1000;
    if ((v = fj_param(&a->p, "limit"))->set)
        q->limit = (size_t)v->i;
    /* a cursor belongs to one listing and order */
    const fj_pval *sort = fj_param(&a->p, "sort"), *order = fj_param(&a->p, "order");
    snprintf(a->tag, sizeof a->tag, "%s:%s:%s", tag ? tag : "", sort->set ? sort->s : "",
             order->set ? order->s : "asc");
    if ((v = fj_param(&a->p, "cursor"))->set && fj_cursor_decode(a->tag, v->s, &q->after) != FJ_OK) {
        fj_api_bad_param(r, "cursor", "not a cursor of this listing and order (pass the previous answer's next)");
        return false;
    }
    if ((v = fj_param(&a->p, "order"))->set)
        q->desc = v->i == 1;
    if ((v = fj_param(&a->p, "format"))->set) {
        a->csv = v->i == 1;
    } else {
        const char *accept = fj_http_header(r, "Accept");
        a->csv = accept && strstr(accept, "text/csv") != NULL;
    }
    return true;
}

fj_store *fj_api_store(fj_apiq *a)
{
    fj_err err = {0};
    fj_store *s = fj_http_reader(a->r, &err);
    if (!s)
        fj_http_reply_error(a->r, FJ_EBUSY, &err);
    return s;
}

/* raw_expired_before: the time before which retention deleted the raw rows this answer is made
 * from (process samples for jobs and profiles, node samples for load, errors, Slurm records), when
 * the query's window starts before it; else null (docs/api.md). */
static fj_status write_expired(fj_apiq *a, fj_store *s, fj_out *o, fj_err *err)
{
    fj_retention_marks m;
    fj_status st = fj_retention_marks_read(s, &m, err);
    if (st != FJ_OK)
        return st;
    const fj_qtable *t = a->ep->tables[0];
    fj_time mark = t == &fj_qt_jobs || t == &fj_qt_job || t == &fj_qt_profile ? m.process_samples
                   : t == &fj_qt_errors                                       ? m.errors
                   : t == &fj_qt_slurm_jobs                                   ? m.slurm
                                                                              : m.node_samples;
    if (mark && (!a->q.from || a->q.from < mark))
        return fj_out_meta_time(o, "raw_expired_before", mark);
    return fj_out_meta_str(o, "raw_expired_before", NULL);
}

/* The members named in ep->meta, from what the query used. */
static fj_status write_meta(fj_apiq *a, fj_store *store, fj_out *o, fj_err *err)
{
    const char *s = a->ep->meta;
    fj_status st = FJ_OK;
    while (s && st == FJ_OK) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (len == 4 && strncmp(s, "from", 4) == 0)
            st = fj_out_meta_time(o, "from", a->q.from);
        else if (len == 2 && strncmp(s, "to", 2) == 0)
            st = fj_out_meta_time(o, "to", a->q.to);
        else if (len == 8 && strncmp(s, "bucket_s", 8) == 0)
            st = fj_out_meta_int(o, "bucket_s", a->q.bucket_s);
        else if (len == 10 && strncmp(s, "interval_s", 10) == 0)
            st = fj_out_meta_int(o, "interval_s", a->q.interval_s);
        else if (len == 18 && strncmp(s, "raw_expired_before", 18) == 0)
            st = write_expired(a, store, o, err);
        s = comma ? comma + 1 : NULL;
    }
    return st;
}

/* Runs op, or opc with ctx when op is NULL, into the writer and answers. */
static void run_op(fj_apiq *a, fj_store *s, fj_qop op, fj_qop_ctx opc, void *ctx)
{
    fj_err err = {0};
    fj_buf body;
    fj_buf_init(&body, (size_t)1 << 30);
    fj_buf_set_budget(&body, fj_http_mem(a->r)); /* counts against query-memory */
    fj_out o;
    fj_out_init(&o, &body, a->csv);
    o.single = a->ep->single;
    if (a->fields.n)
        fj_out_fields(&o, a->fields.v, a->fields.n);
    if (a->columns)
        fj_out_columns(&o, &a->q);
    fj_status st = op ? op(s, &a->q, &o.sink, &err) : opc(s, &a->q, ctx, &o.sink, &err);
    if (st == FJ_OK && o.st != FJ_OK)
        st = o.st;
    if (st == FJ_ETOOBIG) /* not the request's size: the answer's */
        st = fj_err_set(&err, FJ_EINVAL, NULL, "the answer is over 1 GiB: narrow the query or page it");
    char next[FJ_CURSOR_MAX] = "";
    if (st == FJ_OK) {
        if (a->q.next.set)
            fj_cursor_encode(a->tag, &a->q.next, next);
        if (a->ep->meta)
            st = write_meta(a, s, &o, &err);
        if (st == FJ_OK)
            st = fj_out_finish(&o, (a->ep->flags & FJ_EP_PAGED) != 0, next[0] ? next : NULL);
        if (st != FJ_OK && !err.message[0]) /* not the store's failure (it said what): the answer's size */
            st = fj_err_set(&err, st == FJ_ETOOBIG ? FJ_EINVAL : st, NULL,
                            "the answer is over 1 GiB: narrow the query or page it");
    }
    if (st == FJ_OK) {
        if (next[0])
            fj_http_reply_header(a->r, "Fjord-Next-Cursor", next);
        fj_http_reply(a->r, 200, a->csv ? "text/csv; charset=utf-8" : NULL, body.data ? body.data : "",
                      body.len);
    } else {
        fj_http_reply_error(a->r, st, &err);
    }
    fj_out_free(&o);
    fj_buf_free(&body);
}

void fj_api_run(fj_apiq *a, fj_store *s, fj_qop op)
{
    run_op(a, s, op, NULL, NULL);
}

void fj_api_run_ctx(fj_apiq *a, fj_store *s, fj_qop_ctx op, void *ctx)
{
    run_op(a, s, NULL, op, ctx);
}
