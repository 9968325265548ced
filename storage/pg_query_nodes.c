/* pg_query_nodes.c — clusters, nodes (latest sysinfo, GPU cards, Slurm state, partitions), a
 * node's sysinfo history and its topology renderings, for the PostgreSQL backend. A port of
 * sqlite_query_nodes.c: the same rows; names sort byte-wise (COLLATE "C") as in SQLite. */
#include "pg_query_int.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>
#include <zstd.h>

/* --- clusters -------------------------------------------------------------------------------- */

fj_status fj_pg_q_clusters(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *cl = NULL, *parts = NULL;
    if ((rs = fj_pgq_prepare(&x,
                             "SELECT c.id, c.name, (SELECT count(*) FROM nodes n WHERE n.cluster_id = c.id),"
                             " (SELECT max((SELECT max(time) FROM samples s WHERE s.node_id = n.id))"
                             "  FROM nodes n WHERE n.cluster_id = c.id),"
                             " (SELECT slurm FROM cluster_info ci WHERE ci.cluster_id = c.id ORDER BY time DESC LIMIT 1)"
                             " FROM clusters c ORDER BY c.name COLLATE \"C\"",
                             &cl)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x,
                             "SELECT x.s FROM partitions p JOIN strings x ON x.id = p.name_id WHERE p.cluster_id = $1"
                             " AND p.time = (SELECT max(time) FROM partitions WHERE cluster_id = $1) ORDER BY x.s COLLATE \"C\"",
                             &parts)) != FJ_OK ||
        (rs = k->table(k, &fj_qt_clusters)) != FJ_OK)
        goto out;
    int r;
    while ((r = fj_pgs_step(cl)) == FJ_PGS_ROW) {
        const char *name = fj_pgs_text(cl, 1);
        if (q->cluster_match && !q->cluster_match(q->cluster_ctx, name))
            continue;
        const char **pl = NULL;
        size_t pn = 0;
        if ((rs = fj_pgq_text_list(&x, parts, fj_pgs_int(cl, 0), &pl, &pn)) != FJ_OK)
            goto out;
        fj_value v[5] = {
            fj_pv_text(name),
            fj_pv_int(fj_pgs_int(cl, 2)),
            fj_pv_col(cl, 3, FJ_VT_TIME),
            fj_pv_col(cl, 4, FJ_VT_BOOL),
            fj_pv_list(pl, pn),
        };
        if ((rs = k->row(k, v)) != FJ_OK)
            goto out;
    }
    if (r != FJ_PGS_DONE)
        rs = fj_pgq_fail(&x, r, "clusters");
out:
    fj_pgs_finalize(cl);
    fj_pgs_finalize(parts);
    return fj_pgq_end(&x, rs);
}

/* --- sysinfo values ------------------------------------------------------------------------ */

#define SYSINFO_SELECT                                                                                 \
    "SELECT time, os_name, os_release, architecture, cpu_model, sockets, cores_per_socket,"           \
    " threads_per_core, memory_kb, numa_nodes, distances, n_gpus, topo_svg_blob, topo_text_blob FROM sysinfo"
#define N_SYSINFO_VALUES 14

typedef struct sysctx {
    fj_pgs *gpus;
    fj_buf json;
} sysctx;

static fj_status sysctx_prepare(fj_pgq *x, sysctx *c)
{
    fj_buf_init(&c->json, (size_t)1 << 20);
    return fj_pgq_prepare(x,
                          "SELECT idx, uuid, address, manufacturer, model, architecture, driver, firmware,"
                          " memory_kb, power_limit, max_power_limit, min_power_limit, max_ce_clock,"
                          " max_memory_clock FROM sysinfo_gpus WHERE node_id = $1 AND time = $2 ORDER BY idx",
                          &c->gpus);
}

static void sysctx_free(sysctx *c)
{
    fj_pgs_finalize(c->gpus);
    fj_buf_free(&c->json);
}

static const char *const gpu_keys[] = {"index",  "uuid",   "address",   "manufacturer",    "model",
                                       "architecture", "driver", "firmware", "memory_kb", "power_limit",
                                       "max_power_limit", "min_power_limit", "max_ce_clock",
                                       "max_memory_clock"};

/* The SYSINFO_COLS values of a SYSINFO_SELECT row into v (N_SYSINFO_VALUES of them). */
static fj_status sysinfo_values(fj_pgq *x, sysctx *c, fj_pgs *st, int64_t node_id, fj_value *v)
{
    fj_buf_reset(&c->json);
    fj_status bs = fj_buf_puts(&c->json, "[");
    fj_pgs_bind_int(c->gpus, 1, node_id);
    fj_pgs_bind_int(c->gpus, 2, fj_pgs_int(st, 0));
    int r = FJ_PGS_DONE, n = 0;
    while (bs == FJ_OK && (r = fj_pgs_step(c->gpus)) == FJ_PGS_ROW) {
        bs = fj_buf_puts(&c->json, n++ ? ",{" : "{");
        for (int i = 0; bs == FJ_OK && i < 14; i++) {
            bs = fj_buf_printf(&c->json, "%s\"%s\":", i ? "," : "", gpu_keys[i]);
            if (bs != FJ_OK)
                break;
            if (fj_pgs_isnull(c->gpus, i))
                bs = fj_buf_puts(&c->json, "null");
            else if (fj_pgs_is_number(c->gpus, i))
                bs = fj_buf_printf(&c->json, "%lld", (long long)fj_pgs_int(c->gpus, i));
            else
                bs = fj_buf_json_str(&c->json, fj_pgs_text(c->gpus, i));
        }
        if (bs == FJ_OK)
            bs = fj_buf_puts(&c->json, "}");
    }
    fj_pgs_reset(c->gpus);
    if (bs == FJ_OK)
        bs = fj_buf_puts(&c->json, "]");
    if (bs != FJ_OK)
        return fj_err_set(x->err, bs, NULL, "GPU list too large");

    static const char *const topo[2] = {"svg", "text"};
    const char **tl = fj_arena_alloc(x->a, 2 * sizeof *tl);
    if (!tl)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    size_t tn = 0;
    for (int i = 0; i < 2; i++)
        if (!fj_pgs_isnull(st, 12 + i))
            tl[tn++] = topo[i];
    char *cards = fj_arena_strdup(x->a, c->json.data ? c->json.data : "[]");
    if (!cards)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");

    size_t i = 0;
    for (int col = 1; col <= 4; col++)
        v[i++] = fj_pv_col(st, col, FJ_VT_TEXT);
    v[i++] = fj_pv_col(st, 5, FJ_VT_INT);
    v[i++] = fj_pv_col(st, 6, FJ_VT_INT);
    v[i++] = fj_pv_col(st, 7, FJ_VT_INT);
    if (!fj_pgs_isnull(st, 5) && !fj_pgs_isnull(st, 6) &&
        !fj_pgs_isnull(st, 7))
        v[i++] = fj_pv_int(fj_pgs_int(st, 5) * fj_pgs_int(st, 6) * fj_pgs_int(st, 7));
    else
        v[i++] = fj_pv_null();
    v[i++] = fj_pv_col(st, 8, FJ_VT_INT);
    v[i++] = fj_pv_col(st, 9, FJ_VT_INT);
    v[i++] = fj_pv_col(st, 10, FJ_VT_JSON);
    v[i++] = fj_pv_col(st, 11, FJ_VT_INT);
    v[i++] = fj_pv_json(cards);
    v[i++] = fj_pv_list(tl, tn);
    return r == FJ_PGS_DONE || r == FJ_PGS_ROW ? FJ_OK : fj_pgq_fail(x, r, "sysinfo gpus");
}

/* --- nodes ----------------------------------------------------------------------------------- */

fj_status fj_pg_q_nodes(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *pn = NULL, *last = NULL, *sys = NULL, *stt = NULL, *sts = NULL;
    sysctx sc = {0};
    fj_pgq_strv *parts = NULL;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = sysctx_prepare(&x, &sc)) != FJ_OK)
        goto out;
    if (!(parts = fj_arena_calloc(x.a, x.nodes.n + 1, sizeof *parts))) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    /* partition membership in the latest cluster envelope, once for all nodes */
    if ((rs = fj_pgq_prepare(&x,
                             "SELECT pn.node_id, x.s FROM partition_nodes pn JOIN strings x ON x.id = pn.name_id"
                             " WHERE pn.cluster_id = $1 AND pn.time = (SELECT max(time) FROM partitions"
                             " WHERE cluster_id = $1) ORDER BY x.s COLLATE \"C\"",
                             &pn)) != FJ_OK)
        goto out;
    fj_pgs_bind_int(pn, 1, x.cluster_id);
    int r;
    while ((r = fj_pgs_step(pn)) == FJ_PGS_ROW) {
        long ni = fj_pgq_node_index(&x, fj_pgs_int(pn, 0));
        if (ni < 0)
            continue;
        const char *name = fj_arena_strdup(x.a, fj_pgs_text(pn, 1));
        if (!name || (rs = fj_pgq_strv_push(&x, &parts[ni], name)) != FJ_OK) {
            rs = rs != FJ_OK ? rs : fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            goto out;
        }
    }
    if (r != FJ_PGS_DONE) {
        rs = fj_pgq_fail(&x, r, "partitions");
        goto out;
    }
    if ((rs = fj_pgq_prepare(&x,
                             "SELECT greatest(coalesce((SELECT max(time) FROM samples WHERE node_id = $1), 0),"
                             " coalesce((SELECT max(time) FROM sysinfo WHERE node_id = $1), 0))",
                             &last)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, SYSINFO_SELECT " WHERE node_id = $1 ORDER BY time DESC LIMIT 1", &sys)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT max(time) FROM node_states WHERE node_id = $1", &stt)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x,
                             "SELECT x.s FROM node_states ns JOIN strings x ON x.id = ns.state_id"
                             " WHERE ns.node_id = $1 AND ns.time = $2 ORDER BY x.s COLLATE \"C\"",
                             &sts)) != FJ_OK ||
        (rs = k->table(k, &fj_qt_nodes)) != FJ_OK)
        goto out;

    /* by name */
    size_t *order = fj_arena_alloc(x.a, (x.nodes.n + 1) * sizeof *order);
    if (!order) {
        rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        goto out;
    }
    size_t n = 0;
    for (size_t i = 0; i < x.nodes.n; i++)
        if (x.nodes.want[i]) {
            size_t j = n++;
            while (j > 0 && strcmp(x.nodes.names[order[j - 1]], x.nodes.names[i]) > 0) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = i;
        }

    for (size_t oi = 0; oi < n; oi++) {
        size_t ni = order[oi];
        int64_t id = x.nodes.ids[ni];
        fj_value v[7 + N_SYSINFO_VALUES];
        v[0] = fj_pv_text(q->cluster);
        v[1] = fj_pv_text(x.nodes.names[ni]);
        fj_pgs_bind_int(last, 1, id);
        r = fj_pgs_step(last);
        v[2] = r == FJ_PGS_ROW ? fj_pv_col(last, 0, FJ_VT_TIME) : fj_pv_null();
        fj_pgs_reset(last);
        /* states */
        fj_pgs_bind_int(stt, 1, id);
        r = fj_pgs_step(stt);
        int64_t st_time = r == FJ_PGS_ROW ? fj_pgs_int(stt, 0) : 0;
        fj_pgs_reset(stt);
        fj_pgq_strv states = {0};
        if (st_time) {
            fj_pgs_bind_int(sts, 2, st_time);
            const char **l;
            size_t ln;
            if ((rs = fj_pgq_text_list(&x, sts, id, &l, &ln)) != FJ_OK)
                goto out;
            states.v = l;
            states.n = ln;
        }
        v[3] = fj_pv_list(states.v, states.n);
        v[4] = fj_pv_time(st_time);
        v[5] = fj_pv_list(parts[ni].v, parts[ni].n);
        fj_pgs_bind_int(sys, 1, id);
        r = fj_pgs_step(sys);
        if (r == FJ_PGS_ROW) {
            v[6] = fj_pv_col(sys, 0, FJ_VT_TIME);
            if ((rs = sysinfo_values(&x, &sc, sys, id, v + 7)) != FJ_OK) {
                fj_pgs_reset(sys);
                goto out;
            }
        } else {
            for (size_t i = 6; i < 7 + N_SYSINFO_VALUES; i++)
                v[i] = fj_pv_null();
            v[7 + N_SYSINFO_VALUES - 1] = fj_pv_list(NULL, 0);
        }
        rs = k->row(k, v);
        fj_pgs_reset(sys);
        if (rs != FJ_OK)
            goto out;
        if (r != FJ_PGS_ROW && r != FJ_PGS_DONE) {
            rs = fj_pgq_fail(&x, r, "sysinfo");
            goto out;
        }
    }
out:
    fj_pgs_finalize(pn);
    fj_pgs_finalize(last);
    fj_pgs_finalize(sys);
    fj_pgs_finalize(stt);
    fj_pgs_finalize(sts);
    sysctx_free(&sc);
    return fj_pgq_end(&x, rs);
}

/* --- sysinfo history ------------------------------------------------------------------------ */

fj_status fj_pg_q_sysinfo(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    fj_pgq x;
    fj_status rs = fj_pgq_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *st = NULL;
    sysctx sc = {0};
    int64_t node = 0;
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_pgq_one_node(&x, &node)) != FJ_OK || (rs = sysctx_prepare(&x, &sc)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, SYSINFO_SELECT " WHERE node_id = $1 AND time >= $2 AND time <= $3 ORDER BY time",
                             &st)) != FJ_OK ||
        (rs = k->table(k, &fj_qt_sysinfo)) != FJ_OK)
        goto out;
    fj_pgs_bind_int(st, 1, node);
    fj_pgs_bind_int(st, 2, q->from);
    fj_pgs_bind_int(st, 3, q->to ? q->to : INT64_MAX);
    int r;
    while ((r = fj_pgs_step(st)) == FJ_PGS_ROW) {
        fj_value v[2 + N_SYSINFO_VALUES];
        v[0] = fj_pv_text(q->node);
        v[1] = fj_pv_col(st, 0, FJ_VT_TIME);
        if ((rs = sysinfo_values(&x, &sc, st, node, v + 2)) != FJ_OK || (rs = k->row(k, v)) != FJ_OK)
            goto out;
    }
    if (r != FJ_PGS_DONE)
        rs = fj_pgq_fail(&x, r, "sysinfo");
out:
    fj_pgs_finalize(st);
    sysctx_free(&sc);
    return fj_pgq_end(&x, rs);
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

fj_status fj_pg_q_topology(fj_store *s, fj_query *q, fj_buf *out, fj_time *when, fj_err *err)
{
    fj_pgq x;
    fj_sink none = {0};
    fj_status rs = fj_pgq_begin(&x, s, q, &none, err);
    if (rs != FJ_OK)
        return rs;
    fj_pgs *st = NULL, *bl = NULL;
    void *raw = NULL;
    int64_t node = 0;
    char sql[256];
    const char *col = q->svg ? "topo_svg_blob" : "topo_text_blob";
    snprintf(sql, sizeof sql,
             "SELECT time, %s FROM sysinfo WHERE node_id = $1 AND time <= $2 AND %s IS NOT NULL"
             " ORDER BY time DESC LIMIT 1",
             col, col);
    if ((rs = fj_pgq_cluster(&x)) != FJ_OK || (rs = fj_pgq_load_nodes(&x)) != FJ_OK ||
        (rs = fj_pgq_one_node(&x, &node)) != FJ_OK || (rs = fj_pgq_prepare(&x, sql, &st)) != FJ_OK ||
        (rs = fj_pgq_prepare(&x, "SELECT codec, size, data FROM blobs WHERE id = $1", &bl)) != FJ_OK)
        goto out;
    fj_pgs_bind_int(st, 1, node);
    fj_pgs_bind_int(st, 2, q->to ? q->to : INT64_MAX);
    int r = fj_pgs_step(st);
    if (r == FJ_PGS_DONE) {
        rs = fj_err_set(err, FJ_ENOTFOUND, "node", "node '%s' has sent no %s topology", q->node,
                        q->svg ? "SVG" : "text");
        goto out;
    }
    if (r != FJ_PGS_ROW) {
        rs = fj_pgq_fail(&x, r, "topology");
        goto out;
    }
    *when = fj_pgs_int(st, 0);
    fj_pgs_bind_int(bl, 1, fj_pgs_int(st, 1));
    r = fj_pgs_step(bl);
    if (r != FJ_PGS_ROW) {
        rs = r == FJ_PGS_DONE ? fj_err_set(err, FJ_EINTERNAL, NULL, "topology blob missing")
                              : fj_pgq_fail(&x, r, "topology blob");
        goto out;
    }
    const char *codec = fj_pgs_text(bl, 0);
    size_t size = (size_t)fj_pgs_int(bl, 1);
    size_t dlen = 0;
    const unsigned char *data = fj_pgs_blob(bl, 2, &dlen);
    const unsigned char *text = data;
    size_t tlen = dlen;
    if (codec && strcmp(codec, "zstd") == 0) {
        if (!(raw = fj_malloc(size + 1))) {
            rs = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            goto out;
        }
        size_t got = ZSTD_decompress(raw, size + 1, data, dlen);
        if (ZSTD_isError(got) || got != size) {
            rs = fj_err_set(err, FJ_EIO, NULL, "stored topology does not decompress");
            goto out;
        }
        text = raw;
        tlen = got;
    }
    if ((rs = b64_decode(text, tlen, out)) != FJ_OK)
        rs = fj_err_set(err, rs, NULL, "topology too large");
out:
    fj_free(raw);
    fj_pgs_finalize(st);
    fj_pgs_finalize(bl);
    return fj_pgq_end(&x, rs);
}
