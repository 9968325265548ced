/* storage/query/nodes.c — clusters, nodes, sysinfo and topology as every backend answers them
 * (storage/query/nodes.h). */
#include "storage/query/nodes.h"
#include "storage/core/store_query.h"
#include "storage/query/sqlbuf.h"

#include "alloc.h"
#include "storage/query/value.h"

#include <stdio.h>
#include <string.h>
#include <zstd.h>

/* --- clusters -------------------------------------------------------------------------------- */

fj_status fj_qclusters_rows(const fj_qenv *e, const fj_qrows *clusters, const fj_qrows *parts)
{
    const fj_query *q = e->q;
    fj_sink *k = e->k;
    fj_status rs = k->table(k, &fj_qt_clusters);
    bool row = false;
    while (rs == FJ_OK && (rs = fj_qr_step(clusters, "clusters", &row)) == FJ_OK && row) {
        const char *name = fj_qr_text(clusters, 1);
        if (q->cluster_match && !q->cluster_match(q->cluster_ctx, name))
            continue;
        const char **pl = NULL;
        size_t pn = 0;
        if ((rs = fj_qenv_text_list(e, parts, fj_qr_i64(clusters, 0), &pl, &pn)) != FJ_OK)
            break;
        fj_value v[7] = {
            fj_value_text(name),
            fj_value_int(fj_qr_i64(clusters, 2)),
            fj_qr_value(clusters, 3, FJ_VT_TIME),
            fj_qr_value(clusters, 4, FJ_VT_BOOL),
            fj_value_list(pl, pn),
            fj_value_int(fj_qr_i64(clusters, 5)),
            fj_value_bool(fj_qr_i64(clusters, 6) != 0),
        };
        rs = k->row(k, v);
    }
    return rs;
}

/* --- sysinfo values ------------------------------------------------------------------------ */

#define N_SYSINFO_VALUES 14

static const char *const gpu_keys[] = {"index",  "uuid",   "address",   "manufacturer",    "model",
                                       "architecture", "driver", "firmware", "memory_kb", "power_limit",
                                       "max_power_limit", "min_power_limit", "max_ce_clock",
                                       "max_memory_clock"};

/* The GPU cards of node_id at time as a JSON array into json. Fails only when json does; how
 * reading the cards ended is *read. */
static fj_status gpu_list(const fj_qenv *e, const fj_qrows *gpus, int64_t node_id, int64_t time, fj_buf *json,
                          fj_status *read)
{
    fj_buf_reset(json);
    fj_status bs = fj_buf_puts(json, "[");
    fj_qr_bind(gpus, 1, node_id);
    fj_qr_bind(gpus, 2, time);
    bool row = false;
    int n = 0;
    *read = FJ_OK;
    while (bs == FJ_OK && (*read = fj_qr_step(gpus, "sysinfo gpus", &row)) == FJ_OK && row) {
        bs = fj_buf_puts(json, n++ ? ",{" : "{");
        for (int i = 0; bs == FJ_OK && i < 14; i++) {
            bs = fj_buf_printf(json, "%s\"%s\":", i ? "," : "", gpu_keys[i]);
            if (bs == FJ_OK)
                bs = gpus->ops->json(gpus, i, json);
        }
        if (bs == FJ_OK)
            bs = fj_buf_puts(json, "}");
    }
    fj_qr_reset(gpus);
    if (bs == FJ_OK)
        bs = fj_buf_puts(json, "]");
    return bs == FJ_OK ? FJ_OK : fj_err_set(e->err, bs, NULL, "GPU list too large");
}

/* The SYSINFO_COLS values of an FJ_QSYSINFO_SELECT row into v (N_SYSINFO_VALUES of them). */
static fj_status sysinfo_values(const fj_qenv *e, const fj_qrows *gpus, fj_buf *json, const fj_qrows *st,
                                int64_t node_id, fj_value *v)
{
    fj_status read;
    fj_status rs = gpu_list(e, gpus, node_id, fj_qr_i64(st, 0), json, &read);
    if (rs != FJ_OK)
        return rs;

    static const char *const topo[2] = {"svg", "text"};
    const char **tl = fj_arena_alloc(e->a, 2 * sizeof *tl);
    if (!tl)
        return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
    size_t tn = 0;
    for (int i = 0; i < 2; i++)
        if (!fj_qr_null(st, 12 + i))
            tl[tn++] = topo[i];
    char *cards = fj_arena_strdup(e->a, json->data ? json->data : "[]");
    if (!cards)
        return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");

    size_t i = 0;
    for (int col = 1; col <= 4; col++)
        v[i++] = fj_qr_value(st, col, FJ_VT_TEXT);
    v[i++] = fj_qr_value(st, 5, FJ_VT_INT);
    v[i++] = fj_qr_value(st, 6, FJ_VT_INT);
    v[i++] = fj_qr_value(st, 7, FJ_VT_INT);
    if (!fj_qr_null(st, 5) && !fj_qr_null(st, 6) && !fj_qr_null(st, 7))
        v[i++] = fj_value_int(fj_qr_i64(st, 5) * fj_qr_i64(st, 6) * fj_qr_i64(st, 7));
    else
        v[i++] = fj_value_null();
    v[i++] = fj_qr_value(st, 8, FJ_VT_INT);
    v[i++] = fj_qr_value(st, 9, FJ_VT_INT);
    v[i++] = fj_qr_value(st, 10, FJ_VT_JSON);
    v[i++] = fj_qr_value(st, 11, FJ_VT_INT);
    v[i++] = fj_value_json(cards);
    v[i++] = fj_value_list(tl, tn);
    return read;
}

/* --- nodes ----------------------------------------------------------------------------------- */

/* Each node's partitions in the latest cluster envelope (parts[i] for node index i), read once
 * for all nodes. */
static fj_status node_partitions(const fj_qenv *e, const fj_qrows *r, fj_qstrv *parts)
{
    fj_qr_bind(r, 1, e->cluster_id);
    fj_status rs;
    bool row = false;
    while ((rs = fj_qr_step(r, "partitions", &row)) == FJ_OK && row) {
        long ni = fj_qnodes_index(e->nodes, fj_qr_i64(r, 0));
        if (ni < 0)
            continue;
        const char *name = fj_arena_strdup(e->a, fj_qr_text(r, 1));
        if (!name)
            return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
        if ((rs = fj_qstrv_push(e, &parts[ni], name)) != FJ_OK)
            return rs;
    }
    return rs;
}

fj_status fj_qnode_list_rows(const fj_qenv *e, const fj_qnode_stmts *st)
{
    const fj_query *q = e->q;
    fj_sink *k = e->k;
    fj_buf json;
    fj_buf_init(&json, (size_t)1 << 20);
    fj_status rs = FJ_OK;
    fj_qstrv *parts = fj_arena_calloc(e->a, e->nodes->n + 1, sizeof *parts);
    size_t *order = NULL, n = 0;
    if (!parts) {
        rs = fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    if ((rs = node_partitions(e, &st->partitions, parts)) != FJ_OK || (rs = k->table(k, &fj_qt_nodes)) != FJ_OK ||
        (rs = fj_qenv_wanted_by_name(e, &order, &n)) != FJ_OK)
        goto out;

    const fj_qrows *last = &st->last, *stt = &st->state_time, *sys = &st->sysinfo;
    for (size_t oi = 0; oi < n; oi++) {
        size_t ni = order[oi];
        int64_t id = e->nodes->ids[ni];
        fj_value v[7 + N_SYSINFO_VALUES];
        v[0] = fj_value_text(q->cluster);
        v[1] = fj_value_text(e->nodes->names[ni]);
        /* a failed read of the last time or of the state time shows as none */
        bool row = false;
        fj_qr_bind(last, 1, id);
        v[2] = fj_qr_step(last, "last seen", &row) == FJ_OK && row ? fj_qr_value(last, 0, FJ_VT_TIME)
                                                                           : fj_value_null();
        fj_qr_reset(last);
        fj_qr_bind(stt, 1, id);
        int64_t st_time = fj_qr_step(stt, "node state time", &row) == FJ_OK && row ? fj_qr_i64(stt, 0) : 0;
        fj_qr_reset(stt);
        fj_qstrv states = {0};
        if (st_time) {
            fj_qr_bind(&st->states, 2, st_time);
            const char **l;
            size_t ln;
            if ((rs = fj_qenv_text_list(e, &st->states, id, &l, &ln)) != FJ_OK)
                goto out;
            states.v = l;
            states.n = ln;
        }
        v[3] = fj_value_list(states.v, states.n);
        v[4] = fj_value_time(st_time);
        v[5] = fj_value_list(parts[ni].v, parts[ni].n);
        fj_qr_bind(sys, 1, id);
        /* a failed read of the sysinfo still sends the node's row, then fails */
        fj_status read = fj_qr_step(sys, "sysinfo", &row);
        if (read == FJ_OK && row) {
            v[6] = fj_qr_value(sys, 0, FJ_VT_TIME);
            if ((rs = sysinfo_values(e, &st->gpus, &json, sys, id, v + 7)) != FJ_OK) {
                fj_qr_reset(sys);
                goto out;
            }
        } else {
            for (size_t i = 6; i < 7 + N_SYSINFO_VALUES; i++)
                v[i] = fj_value_null();
            v[7 + N_SYSINFO_VALUES - 1] = fj_value_list(NULL, 0);
        }
        rs = k->row(k, v);
        fj_qr_reset(sys);
        if (rs != FJ_OK)
            goto out;
        if ((rs = read) != FJ_OK)
            goto out;
    }
out:
    fj_buf_free(&json);
    return rs;
}

/* --- sysinfo history ------------------------------------------------------------------------ */

fj_status fj_qsysinfo_rows(const fj_qenv *e, int64_t node, const fj_qrows *rows, const fj_qrows *gpus)
{
    const fj_query *q = e->q;
    fj_sink *k = e->k;
    fj_buf json;
    fj_buf_init(&json, (size_t)1 << 20);
    fj_status rs = k->table(k, &fj_qt_sysinfo);
    fj_qr_bind(rows, 1, node);
    fj_qr_bind(rows, 2, q->from);
    fj_qr_bind(rows, 3, q->to ? q->to : INT64_MAX);
    bool row = false;
    while (rs == FJ_OK && (rs = fj_qr_step(rows, "sysinfo", &row)) == FJ_OK && row) {
        fj_value v[2 + N_SYSINFO_VALUES];
        v[0] = fj_value_text(q->node);
        v[1] = fj_qr_value(rows, 0, FJ_VT_TIME);
        if ((rs = sysinfo_values(e, gpus, &json, rows, node, v + 2)) == FJ_OK)
            rs = k->row(k, v);
    }
    fj_buf_free(&json);
    return rs;
}

/* --- topology ------------------------------------------------------------------------------ */

static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

/* Decodes base64 (standard or URL alphabet, padding and whitespace ignored) into out. */
static fj_status b64_decode(const unsigned char *p, size_t n, fj_buf *out)
{
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_val(p[i]);
        if (v < 0)
            continue;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            unsigned char c = (unsigned char)(acc >> bits);
            fj_status st = fj_buf_append(out, &c, 1);
            if (st != FJ_OK)
                return st;
        }
    }
    return FJ_OK;
}

fj_status fj_qtopology_read(const fj_qenv *e, int64_t node, const fj_qrows *latest, const fj_qrows *blob,
                            fj_buf *out, fj_time *when)
{
    const fj_query *q = e->q;
    void *raw = NULL;
    fj_qr_bind(latest, 1, node);
    fj_qr_bind(latest, 2, q->to ? q->to : INT64_MAX);
    bool row = false;
    fj_status rs = fj_qr_step(latest, "topology", &row);
    if (rs != FJ_OK)
        goto out;
    if (!row) {
        rs = fj_err_set(e->err, FJ_ENOTFOUND, "node", "node '%s' has sent no %s topology", q->node,
                        q->svg ? "SVG" : "text");
        goto out;
    }
    *when = fj_qr_i64(latest, 0);
    fj_qr_bind(blob, 1, fj_qr_i64(latest, 1));
    if ((rs = fj_qr_step(blob, "topology blob", &row)) != FJ_OK)
        goto out;
    if (!row) {
        rs = fj_err_set(e->err, FJ_EINTERNAL, NULL, "topology blob missing");
        goto out;
    }
    const char *codec = fj_qr_text(blob, 0);
    size_t size = (size_t)fj_qr_i64(blob, 1);
    size_t dlen = 0;
    const unsigned char *data = blob->ops->blob(blob, 2, &dlen);
    const unsigned char *text = data;
    size_t tlen = dlen;
    if (codec && strcmp(codec, "zstd") == 0) {
        if (!(raw = fj_malloc(size + 1))) {
            rs = fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
            goto out;
        }
        size_t got = ZSTD_decompress(raw, size + 1, data, dlen);
        if (ZSTD_isError(got) || got != size) {
            rs = fj_err_set(e->err, FJ_EIO, NULL, "stored topology does not decompress");
            goto out;
        }
        text = raw;
        tlen = got;
    }
    if ((rs = b64_decode(text, tlen, out)) != FJ_OK)
        rs = fj_err_set(e->err, rs, NULL, "topology too large");
out:
    fj_free(raw);
    return rs;
}

/* --- the ops of storage/core/store.h: their SQL and rows (fj_qx_run does the rest) ------------- */

#define GPUS_SQL FJ_QSYSINFO_GPUS_SELECT " WHERE node_id = ?1 AND time = ?2 ORDER BY idx"

/* --- clusters -------------------------------------------------------------------------------- */

fj_status fj_store_query_clusters(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    static const char *const sql[] = {
        /* Sonar's clusters (and those Chimbuko created), and the clusters that only send line
         * protocol (ts_series names them; they have no row in clusters, so id 0: no partitions) */
        "SELECT id, name, nodes, last_seen, slurm, metrics_hosts, chimbuko FROM ("
        " SELECT c.id AS id, c.name AS name, (SELECT count(*) FROM nodes n WHERE n.cluster_id = c.id) AS nodes,"
        " (SELECT max((SELECT max(time) FROM samples s WHERE s.node_id = n.id))"
        "  FROM nodes n WHERE n.cluster_id = c.id) AS last_seen,"
        " (SELECT slurm FROM cluster_info ci WHERE ci.cluster_id = c.id ORDER BY time DESC LIMIT 1) AS slurm,"
        " (SELECT count(DISTINCT t.host) FROM ts_series t WHERE t.cluster = c.name) AS metrics_hosts,"
        " CASE WHEN EXISTS (SELECT 1 FROM chimbuko_packets p WHERE p.cluster_id = c.id) THEN 1 ELSE 0 END AS chimbuko"
        " FROM clusters c"
        " UNION ALL"
        " SELECT 0, t.cluster, 0, NULL, NULL, count(DISTINCT t.host), 0 FROM ts_series t"
        " WHERE NOT EXISTS (SELECT 1 FROM clusters c WHERE c.name = t.cluster) GROUP BY t.cluster"
        ") u ORDER BY name{bytes}",
        "SELECT x.s FROM partitions p JOIN strings x ON x.id = p.name_id WHERE p.cluster_id = ?1"
        " AND p.time = (SELECT max(time) FROM partitions WHERE cluster_id = ?1) ORDER BY x.s{bytes}",
        NULL,
    };
    return fj_qx_run2(s, q, k, err, FJ_QX_TX, sql, fj_qclusters_rows);
}

/* --- nodes ----------------------------------------------------------------------------------- */

static fj_status nodes(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)x, (void)arg;
    fj_qnode_stmts ns = {st[0], st[1], st[2], st[3], st[4], st[5]};
    return fj_qnode_list_rows(e, &ns);
}

fj_status fj_store_query_nodes(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    /* in the order of fj_qnode_stmts' fields */
    static const char *const sql[] = {
        "SELECT pn.node_id, x.s FROM partition_nodes pn JOIN strings x ON x.id = pn.name_id"
        " WHERE pn.cluster_id = ?1 AND pn.time = (SELECT max(time) FROM partitions"
        " WHERE cluster_id = ?1) ORDER BY x.s{bytes}",
        "SELECT {greatest}(coalesce((SELECT max(time) FROM samples WHERE node_id = ?1), 0),"
        " coalesce((SELECT max(time) FROM sysinfo WHERE node_id = ?1), 0))",
        FJ_QSYSINFO_SELECT " WHERE node_id = ?1 ORDER BY time DESC LIMIT 1",
        "SELECT max(time) FROM node_states WHERE node_id = ?1",
        "SELECT x.s FROM node_states ns JOIN strings x ON x.id = ns.state_id"
        " WHERE ns.node_id = ?1 AND ns.time = ?2 ORDER BY x.s{bytes}",
        GPUS_SQL,
        NULL,
    };
    return fj_qx_run(s, q, k, err, FJ_QX_NODES, sql, nodes, NULL);
}

/* --- sysinfo history ------------------------------------------------------------------------ */

static fj_status sysinfo(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)x, (void)arg;
    return fj_qsysinfo_rows(e, e->node, &st[1], &st[0]);
}

fj_status fj_store_query_sysinfo(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    static const char *const sql[] = {
        GPUS_SQL,
        FJ_QSYSINFO_SELECT " WHERE node_id = ?1 AND time >= ?2 AND time <= ?3 ORDER BY time",
        NULL,
    };
    return fj_qx_run(s, q, k, err, FJ_QX_ONE_NODE, sql, sysinfo, NULL);
}

/* --- topology ------------------------------------------------------------------------------ */

typedef struct topology_out {
    fj_buf *out;
    fj_time *when;
} topology_out;

static fj_status topology(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)x;
    topology_out *o = arg;
    return fj_qtopology_read(e, e->node, &st[0], &st[1], o->out, o->when);
}

fj_status fj_store_query_topology(fj_store *s, fj_query *q, fj_buf *out, fj_time *when, fj_err *err)
{
    fj_sink none = {0};
    char latest[256];
    const char *col = q->svg ? "topo_svg_blob" : "topo_text_blob";
    snprintf(latest, sizeof latest,
             "SELECT time, %s FROM sysinfo WHERE node_id = ?1 AND time <= ?2 AND %s IS NOT NULL"
             " ORDER BY time DESC LIMIT 1",
             col, col);
    const char *const sql[] = {latest, "SELECT codec, size, data FROM blobs WHERE id = ?1", NULL};
    topology_out o = {out, when};
    return fj_qx_run(s, q, &none, err, FJ_QX_ONE_NODE, sql, topology, &o);
}
