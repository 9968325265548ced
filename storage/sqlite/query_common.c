/* storage/sqlite/query_common.c — the shared machinery of the SQLite query-API ops: one read transaction
 * per query (a consistent snapshot that never blocks the writer in WAL mode), the cluster and
 * its node set, an SQL builder with bound parameters, and value helpers. */
#include "storage/sqlite/query_int.h"

#include "alloc.h"

#include <stdlib.h>
#include <string.h>

fj_status fj_sqq_begin(fj_sqq *x, fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    memset(x, 0, sizeof *x);
    x->s = s;
    x->q = q;
    x->k = k;
    x->err = err;
    q->next.set = false;
    if (!(x->a = fj_arena_create()))
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    /* Queries over days of samples read far past the 256 MB that sq_open maps; mapping up to
     * 16 GB on read handles saves a read() and a copy per page. Per connection, and a no-op
     * when unchanged (SQLite caps it at its compile-time maximum). */
    if (s->mode == FJ_STORE_READ)
        sqlite3_exec(s->db, "PRAGMA mmap_size=17179869184", NULL, NULL, NULL);
    int rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        fj_arena_destroy(x->a);
        x->a = NULL;
        return fj_sq_fail(s, rc, "begin read", err);
    }
    x->in_tx = true;
    return FJ_OK;
}

fj_status fj_sqq_end(fj_sqq *x, fj_status st)
{
    if (x->in_tx && !sqlite3_get_autocommit(x->s->db))
        sqlite3_exec(x->s->db, "COMMIT", NULL, NULL, NULL);
    x->in_tx = false;
    fj_arena_destroy(x->a);
    x->a = NULL;
    return st;
}

fj_status fj_sqq_fail(fj_sqq *x, int rc, const char *what)
{
    return fj_sq_fail(x->s, rc, what, x->err);
}

fj_status fj_sqq_prepare(fj_sqq *x, const char *sql, sqlite3_stmt **st)
{
    int rc = sqlite3_prepare_v2(x->s->db, sql, -1, st, NULL);
    return rc == SQLITE_OK ? FJ_OK : fj_sq_fail(x->s, rc, "prepare query", x->err);
}

fj_status fj_sqq_cluster(fj_sqq *x)
{
    const char *name = x->q->cluster;
    if (!name || !*name)
        return fj_err_set(x->err, FJ_EINVAL, "cluster", "parameter 'cluster': required");
    sqlite3_stmt *st;
    fj_status rs = fj_sqq_prepare(x, "SELECT id FROM clusters WHERE name=?1", &st);
    if (rs != FJ_OK)
        return rs;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        x->cluster_id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return FJ_OK;
    if (rc == SQLITE_DONE)
        return fj_err_set(x->err, FJ_ENOTFOUND, "cluster", "no data for cluster '%s'", name);
    return fj_sqq_fail(x, rc, "find cluster");
}

fj_status fj_sqq_load_nodes(fj_sqq *x)
{
    sqlite3_stmt *st;
    fj_status rs = fj_sqq_prepare(x, "SELECT id, name FROM nodes WHERE cluster_id=?1 ORDER BY id", &st);
    if (rs != FJ_OK)
        return rs;
    sqlite3_bind_int64(st, 1, x->cluster_id);
    size_t cap = 0;
    fj_sqq_nodes *nd = &x->nodes;
    nd->filtered = x->q->host_match != NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (nd->n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            int64_t *ids = fj_arena_alloc(x->a, nc * sizeof *ids);
            const char **names = fj_arena_alloc(x->a, nc * sizeof *names);
            bool *want = fj_arena_alloc(x->a, nc * sizeof *want);
            if (!ids || !names || !want) {
                sqlite3_finalize(st);
                return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
            }
            if (nd->n) {
                memcpy(ids, nd->ids, nd->n * sizeof *ids);
                memcpy(names, nd->names, nd->n * sizeof *names);
                memcpy(want, nd->want, nd->n * sizeof *want);
            }
            nd->ids = ids;
            nd->names = names;
            nd->want = want;
            cap = nc;
        }
        const char *name = fj_arena_strdup(x->a, (const char *)sqlite3_column_text(st, 1));
        if (!name) {
            sqlite3_finalize(st);
            return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
        }
        nd->ids[nd->n] = sqlite3_column_int64(st, 0);
        nd->names[nd->n] = name;
        nd->want[nd->n] = !x->q->host_match || x->q->host_match(x->q->host_ctx, name);
        nd->n_want += nd->want[nd->n];
        nd->n++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? FJ_OK : fj_sqq_fail(x, rc, "list nodes");
}

long fj_sqq_node_index(const fj_sqq *x, int64_t id)
{
    return fj_qnodes_index(&x->nodes, id);
}

const char *fj_sqq_node_name(const fj_sqq *x, int64_t id)
{
    return fj_qnodes_name(&x->nodes, id);
}

fj_status fj_sqq_one_node(fj_sqq *x, int64_t *id)
{
    fj_qenv e = fj_sqq_env(x);
    return fj_qenv_one_node(&e, id);
}

/* --- SQL builder ------------------------------------------------------------------------- */

void fj_sqb_init(fj_sqb *b)
{
    fj_qb_init(b, '?');
}

void fj_sqb_node_list(fj_sqb *b, const fj_sqq *x)
{
    fj_qb_node_list(b, &x->nodes);
}

fj_status fj_sqb_prepare(fj_sqq *x, fj_sqb *b, sqlite3_stmt **st)
{
    if (b->st != FJ_OK)
        return fj_err_set(x->err, b->st, NULL, "building the query failed");
    fj_status rs = fj_sqq_prepare(x, b->sql.data ? b->sql.data : "", st);
    if (rs != FJ_OK)
        return rs;
    for (size_t i = 0; i < b->n; i++) {
        const fj_qb_param *p = &b->p[i];
        int j = (int)i + 1;
        if (p->t == 0)
            sqlite3_bind_int64(*st, j, p->i);
        else if (p->t == 1)
            sqlite3_bind_double(*st, j, p->d);
        else
            sqlite3_bind_text(*st, j, p->s, -1, SQLITE_STATIC);
    }
    return FJ_OK;
}

/* --- values -------------------------------------------------------------------------------- */

fj_value fj_v_col(sqlite3_stmt *st, int i, fj_vtype t)
{
    int ct = sqlite3_column_type(st, i);
    if (ct == SQLITE_NULL)
        return fj_v_null();
    switch (t) {
    case FJ_VT_INT:
        /* unsigned values past 2^63-1 are stored as REAL: show them as numbers all the same */
        if (ct == SQLITE_FLOAT)
            return fj_v_real(sqlite3_column_double(st, i));
        return fj_v_int(sqlite3_column_int64(st, i));
    case FJ_VT_BOOL: return fj_v_bool(sqlite3_column_int64(st, i) != 0);
    case FJ_VT_REAL: return fj_v_real(sqlite3_column_double(st, i));
    case FJ_VT_TIME: return fj_v_time(sqlite3_column_int64(st, i));
    case FJ_VT_JSON: return fj_v_json((const char *)sqlite3_column_text(st, i));
    default: return fj_v_text((const char *)sqlite3_column_text(st, i));
    }
}

fj_status fj_sqq_strv_push(fj_sqq *x, fj_sqq_strv *sv, const char *s)
{
    fj_qenv e = fj_sqq_env(x);
    return fj_qstrv_push(&e, sv, s);
}

fj_status fj_sqq_text_list(fj_sqq *x, sqlite3_stmt *st, int64_t id, const char ***out, size_t *n)
{
    fj_qenv e = fj_sqq_env(x);
    fj_qrows r = fj_sqq_rows(x, st);
    return fj_qenv_text_list(&e, &r, id, out, n);
}

/* --- the adapters of storage/query/backend.h ------------------------------------------------------- */

static fj_status qrows_step(const fj_qrows *r, const char *what, bool *row)
{
    int rc = sqlite3_step(r->st);
    *row = rc == SQLITE_ROW;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? FJ_OK : fj_sqq_fail(r->x, rc, what);
}

static void qrows_reset(const fj_qrows *r)
{
    sqlite3_reset(r->st);
}

static void qrows_bind_int(const fj_qrows *r, int i, int64_t v)
{
    sqlite3_bind_int64(r->st, i, v);
}

static bool qrows_is_null(const fj_qrows *r, int c)
{
    return sqlite3_column_type(r->st, c) == SQLITE_NULL;
}

static int64_t qrows_i64(const fj_qrows *r, int c)
{
    return sqlite3_column_int64(r->st, c);
}

static double qrows_dbl(const fj_qrows *r, int c)
{
    return sqlite3_column_double(r->st, c);
}

static const char *qrows_text(const fj_qrows *r, int c)
{
    return (const char *)sqlite3_column_text(r->st, c);
}

static fj_value qrows_value(const fj_qrows *r, int c, fj_vtype t)
{
    return fj_v_col(r->st, c, t);
}

static const unsigned char *qrows_blob(const fj_qrows *r, int c, size_t *len)
{
    const unsigned char *p = sqlite3_column_blob(r->st, c);
    *len = (size_t)sqlite3_column_bytes(r->st, c);
    return p;
}

static fj_status qrows_json(const fj_qrows *r, int c, fj_buf *out)
{
    switch (sqlite3_column_type(r->st, c)) {
    case SQLITE_NULL: return fj_buf_puts(out, "null");
    case SQLITE_INTEGER: return fj_buf_printf(out, "%lld", (long long)sqlite3_column_int64(r->st, c));
    case SQLITE_FLOAT: return fj_buf_printf(out, "%.17g", sqlite3_column_double(r->st, c));
    default: return fj_buf_json_str(out, (const char *)sqlite3_column_text(r->st, c));
    }
}

static const fj_qrows_ops qrows_ops = {qrows_step, qrows_reset, qrows_bind_int, qrows_is_null, qrows_i64,
                                       qrows_dbl,  qrows_text,  qrows_value,    qrows_blob,    qrows_json};

fj_qrows fj_sqq_rows(fj_sqq *x, sqlite3_stmt *st)
{
    return (fj_qrows){&qrows_ops, x, st};
}

fj_qenv fj_sqq_env(fj_sqq *x)
{
    return (fj_qenv){x->q, x->k, x->err, x->a, x->cluster_id, &x->nodes};
}
