/* measure_routes.c — aicr snapshots in: decode (ingest/aicr.c) into a batch of one envelope of kind
 * FJ_KIND_MEASUREMENTS, check the cluster against the credential, hand it to the writer, answer
 * after the commit. */
#include "server/measure_routes.h"

#include "ingest/aicr.h"
#include "ingest/noderange.h"

#include <string.h>

typedef struct mctx {
    const char *cluster, *node;
    fj_time time;
    size_t n_measurements, n_subtypes;
    fj_write_count counts; /* one envelope */
} mctx;

static void on_committed(fj_http_req *r, fj_write_req *w)
{
    mctx *c = fj_http_submit_ctx(r);
    if (w->status != FJ_OK) {
        fj_http_reply_error(r, w->status == FJ_EIO ? FJ_EBUSY : w->status, &w->err);
        return;
    }
    char t[21];
    fj_time_format(c->time, t);
    fj_buf out;
    fj_buf_init(&out, (size_t)1 << 20);
    fj_buf_puts(&out, "{\"cluster\":");
    fj_buf_json_str(&out, c->cluster);
    fj_buf_puts(&out, ",\"node\":");
    fj_buf_json_str(&out, c->node);
    fj_buf_printf(&out,
                  ",\"topic\":\"measurements\",\"time\":\"%s\",\"measurements\":%zu,\"subtypes\":%zu,"
                  "\"inserted\":%llu,\"duplicates\":%llu}\n",
                  t, c->n_measurements, c->n_subtypes, (unsigned long long)c->counts.inserted,
                  (unsigned long long)c->counts.duplicates);
    if (out.data)
        fj_http_reply(r, 200, NULL, out.data, out.len);
    else
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
    fj_buf_free(&out);
}

static const char *nonempty(const char *s)
{
    return s && *s ? s : NULL;
}

/* 401 unless the credential may write the cluster (as sonalyze answers). */
static bool may_write(fj_http_req *r, const char *cluster, fj_err *err)
{
    const fj_principal *who = fj_http_principal(r);
    if (fj_auth_may_write(who, cluster))
        return true;
    fj_err_set(err, FJ_EAUTH, "cluster", "credential '%s' may not write data of cluster '%s'", who->name, cluster);
    return false;
}

void fj_route_measurements_ingest(fj_http_req *r)
{
    fj_err err = {0};
    fj_status st = FJ_OK;
    fj_batch *b = NULL;
    mctx *c = fj_arena_calloc(fj_http_arena(r), 1, sizeof *c);
    if (!c || !(b = fj_batch_new())) {
        st = fj_err_set(&err, FJ_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    /* A cluster named in the URL is checked before the body is decoded. */
    const char *cluster = nonempty(fj_http_arg(r, "cluster")), *node = nonempty(fj_http_arg(r, "node"));
    if (cluster && !may_write(r, cluster, &err)) {
        st = FJ_EAUTH;
        goto fail;
    }

    size_t len;
    const char *body = fj_http_body(r, &len);
    if (len > FJ_AICR_MAX_BODY) {
        st = fj_err_set(&err, FJ_ETOOBIG, "body", "an aicr snapshot of %zu bytes exceeds the limit of %zu bytes", len,
                        FJ_AICR_MAX_BODY);
        goto fail;
    }
    const char *ctype = fj_http_header(r, "Content-Type");
    fj_aicr_format fmt = fj_aicr_content_type_is_yaml(ctype)     ? FJ_AICR_YAML
                         : ctype && strstr(ctype, "json") != NULL ? FJ_AICR_JSON
                                                                  : FJ_AICR_AUTO;
    fj_aicr_snapshot *snap;
    if ((st = fj_aicr_decode(b->arena, body, len, fmt, &snap, &err)) != FJ_OK)
        goto fail;

    /* The snapshot's own metadata.cluster is checked too when the URL names the cluster: it is
     * stored with the snapshot, and every cluster a write names must be the credential's. */
    const char *meta_cluster = nonempty(fj_aicr_meta(snap, "cluster"));
    if (meta_cluster && cluster && strcmp(meta_cluster, cluster) != 0 &&
        !fj_auth_may_write(fj_http_principal(r), meta_cluster)) {
        st = fj_err_set(&err, FJ_EAUTH, "metadata.cluster", "credential '%s' may not write data of cluster '%s'",
                        fj_http_principal(r)->name, meta_cluster);
        goto fail;
    }
    if (!cluster)
        cluster = meta_cluster;
    if (!cluster && !fj_http_principal(r)->anonymous)
        cluster = fj_http_principal(r)->name;
    if (!node)
        node = nonempty(fj_aicr_meta(snap, "source-node"));
    if (!cluster) {
        st = fj_err_set(&err, FJ_EINVAL, "cluster", "required: the cluster parameter (or metadata.cluster)");
        goto fail;
    }
    if (!node) {
        st = fj_err_set(&err, FJ_EINVAL, "node", "required: the node parameter (or metadata.source-node)");
        goto fail;
    }
    if (!fj_hostname_valid(cluster) || !fj_hostname_valid(node)) {
        bool bad_cluster = !fj_hostname_valid(cluster);
        st = fj_err_set(&err, FJ_EINVAL, bad_cluster ? "cluster" : "node",
                        "invalid %s name \"%.64s\" (letters, digits, '-' and '.' in nonempty labels, at most 253 "
                        "bytes)",
                        bad_cluster ? "cluster" : "node", bad_cluster ? cluster : node);
        goto fail;
    }
    if (!may_write(r, cluster, &err)) {
        st = FJ_EAUTH;
        goto fail;
    }

    fj_envelope *e = fj_batch_add(b);
    if (!e) {
        st = fj_err_set(&err, FJ_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    e->kind = FJ_KIND_MEASUREMENTS;
    e->cluster = fj_arena_strdup(b->arena, cluster);
    e->node = fj_arena_strdup(b->arena, node);
    e->producer = nonempty(fj_aicr_meta(snap, "producer"));
    e->version = nonempty(fj_aicr_meta(snap, "version"));
    const char *ts = nonempty(fj_aicr_meta(snap, "timestamp"));
    if (ts) {
        if (fj_time_parse_rfc3339(ts, 0, &e->time) != FJ_OK) {
            st = fj_err_set(&err, FJ_EINVAL, "metadata.timestamp",
                            "invalid timestamp \"%.40s\" (want RFC 3339, e.g. 2025-01-15T10:30:00Z)", ts);
            goto fail;
        }
    } else {
        e->time = fj_time_now();
        e->u.measurements.arrival_time = true;
    }
    bool arrival = e->u.measurements.arrival_time;
    if ((st = fj_aicr_record(snap, b->arena, &e->u.measurements, &err)) != FJ_OK)
        goto fail;
    e->u.measurements.arrival_time = arrival;
    e->u.measurements.stored_time = &c->time; /* the writer says where it went */
    if (!e->cluster || !e->node) {
        st = fj_err_set(&err, FJ_ENOMEM, NULL, "out of memory");
        goto fail;
    }

    /* The answer is written after the writer is done with the batch: keep the names in the
     * request's arena. */
    c->cluster = fj_arena_strdup(fj_http_arena(r), e->cluster);
    c->node = fj_arena_strdup(fj_http_arena(r), e->node);
    if (!c->cluster || !c->node) {
        st = fj_err_set(&err, FJ_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    c->time = e->time;
    c->n_measurements = e->u.measurements.n_measurements;
    c->n_subtypes = e->u.measurements.n_rows;
    fj_http_submit(r, b, &c->counts, on_committed, c);
    return;
fail:
    fj_batch_free(b);
    fj_http_reply_error(r, st, &err);
}
