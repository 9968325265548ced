/* chimbuko_routes.c — Chimbuko data in: decode (ingest/chimbuko.c) into a batch of one envelope of
 * kind FJ_KIND_CHIMBUKO, name its cluster and run, check the cluster against the credential, hand
 * it to the writer, answer after the commit. */
#include "server/chimbuko_routes.h"

#include "ingest/chimbuko.h"
#include "storage/core/store_chimbuko.h"

#include <string.h>

typedef struct cctx {
    const char *cluster, *run;
    fj_cb_collection collection;
    int64_t created_at_ms;
    size_t records, notes;
    fj_write_count counts; /* one envelope */
} cctx;

static void on_committed(fj_http_req *r, fj_write_req *w)
{
    cctx *c = fj_http_submit_ctx(r);
    if (w->status != FJ_OK) {
        fj_http_reply_error(r, w->status == FJ_EIO ? FJ_EBUSY : w->status, &w->err);
        return;
    }
    fj_buf out;
    fj_buf_init(&out, (size_t)1 << 20);
    fj_buf_puts(&out, "{\"cluster\":");
    fj_buf_json_str(&out, c->cluster);
    fj_buf_puts(&out, ",\"run\":");
    fj_buf_json_str(&out, c->run);
    if (c->collection == FJ_CB_PACKET)
        fj_buf_printf(&out, ",\"created_at\":%lld", (long long)c->created_at_ms);
    else
        fj_buf_printf(&out, ",\"collection\":\"%s\",\"records\":%zu", fj_cb_collection_name(c->collection),
                      c->records);
    fj_buf_printf(&out, ",\"inserted\":%llu,\"duplicates\":%llu,\"notes\":%zu}\n",
                  (unsigned long long)c->counts.inserted, (unsigned long long)c->counts.duplicates, c->notes);
    if (out.data)
        fj_http_reply(r, 200, NULL, out.data, out.len);
    else
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
    fj_buf_free(&out);
}

/* The cluster (?cluster=, else the credential's) and the run (?run=, else "default"), checked.
 * false after answering. */
static bool target(fj_http_req *r, cctx *c)
{
    fj_err err = {0};
    const fj_principal *who = fj_http_principal(r);
    const char *cluster = fj_http_arg(r, "cluster"), *run = fj_http_arg(r, "run");
    if (!cluster || !*cluster)
        cluster = who->anonymous ? NULL : who->name;
    if (!cluster) {
        fj_err_set(&err, FJ_EINVAL, "cluster", "required: the cluster parameter (or a credential of the cluster)");
        fj_http_reply_error(r, FJ_EINVAL, &err);
        return false;
    }
    if (!fj_auth_may_write(who, cluster)) {
        fj_err_set(&err, FJ_EAUTH, "cluster", "credential '%s' may not write data of cluster '%s'", who->name, cluster);
        fj_http_reply_error(r, FJ_EAUTH, &err);
        return false;
    }
    if (!run || !*run)
        run = "default";
    if (!fj_cb_run_valid(run)) {
        fj_err_set(&err, FJ_EINVAL, "run", "invalid run label \"%.64s\" (1-128 letters, digits, '.', '_', '-', ':')",
                   run);
        fj_http_reply_error(r, FJ_EINVAL, &err);
        return false;
    }
    fj_arena *a = fj_http_arena(r);
    c->cluster = fj_arena_strdup(a, cluster);
    c->run = fj_arena_strdup(a, run);
    if (!c->cluster || !c->run) {
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
        return false;
    }
    return true;
}

static void ingest(fj_http_req *r, fj_cb_collection collection)
{
    fj_err err = {0};
    fj_status st;
    fj_batch *b = NULL;
    cctx *c = fj_arena_calloc(fj_http_arena(r), 1, sizeof *c);
    if (!c) {
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
        return;
    }
    c->collection = collection;
    if (!target(r, c))
        return;
    if (!(b = fj_batch_new())) {
        st = fj_err_set(&err, FJ_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    size_t len;
    const char *body = fj_http_body(r, &len);
    st = collection == FJ_CB_PACKET ? fj_chimbuko_decode_packet(body, len, b, &err)
                                    : fj_chimbuko_decode_records(body, len, collection, b, &err);
    if (st != FJ_OK)
        goto fail;
    fj_envelope *e = &b->envs[0];
    e->cluster = fj_arena_strdup(b->arena, c->cluster);
    e->u.chimbuko.run = fj_arena_strdup(b->arena, c->run);
    if (!e->cluster || !e->u.chimbuko.run) {
        st = fj_err_set(&err, FJ_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    const fj_chimbuko *cb = &e->u.chimbuko;
    c->created_at_ms = cb->packet.created_at_ms;
    c->records = cb->n_events + cb->n_meta + cb->n_profiles + cb->n_counters;
    c->notes = e->n_notes;
    fj_http_submit(r, b, &c->counts, on_committed, c);
    return;
fail:
    fj_batch_free(b);
    fj_http_reply_error(r, st, &err);
}

void fj_route_chimbuko_packet(fj_http_req *r)
{
    ingest(r, FJ_CB_PACKET);
}

void fj_route_chimbuko_records(fj_http_req *r)
{
    const char *rest = fj_http_path_rest(r);
    if (rest && strcmp(rest, "packet") == 0) {
        ingest(r, FJ_CB_PACKET);
        return;
    }
    int c = rest ? fj_cb_collection_parse(rest) : -1;
    if (c < 0) {
        fj_err err = {0};
        fj_err_set(&err, FJ_ENOTFOUND, "path",
                   "unknown collection '%s' (anomalies, normalexecs, metadata, func_stats, counter_stats, packet)",
                   rest ? rest : "");
        fj_http_reply_error(r, FJ_ENOTFOUND, &err);
        return;
    }
    ingest(r, (fj_cb_collection)c);
}
