/* sqlite_query_common.c — the shared machinery of the SQLite query-API ops: one read transaction
 * per query (a consistent snapshot that never blocks the writer in WAL mode), the cluster and
 * its node set, an SQL builder with bound parameters, and value helpers. */
#include "sqlite_query_int.h"

#include "alloc.h"

#include <stdarg.h>
#include <stdio.h>
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
    size_t lo = 0, hi = x->nodes.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->nodes.ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->nodes.n && x->nodes.ids[lo] == id ? (long)lo : -1;
}

const char *fj_sqq_node_name(const fj_sqq *x, int64_t id)
{
    long i = fj_sqq_node_index(x, id);
    return i < 0 ? NULL : x->nodes.names[i];
}

fj_status fj_sqq_one_node(fj_sqq *x, int64_t *id)
{
    const char *name = x->q->node;
    if (!name || !*name)
        return fj_err_set(x->err, FJ_EINVAL, "node", "a node is required");
    for (size_t i = 0; i < x->nodes.n; i++)
        if (strcmp(x->nodes.names[i], name) == 0) {
            *id = x->nodes.ids[i];
            return FJ_OK;
        }
    return fj_err_set(x->err, FJ_ENOTFOUND, "node", "no node '%s' in cluster '%s'", name, x->q->cluster);
}

/* --- SQL builder ------------------------------------------------------------------------- */

void fj_sqb_init(fj_sqb *b)
{
    memset(b, 0, sizeof *b);
    fj_buf_init(&b->sql, (size_t)16 << 20);
}

void fj_sqb_free(fj_sqb *b)
{
    fj_buf_free(&b->sql);
    fj_free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

void fj_sqb_put(fj_sqb *b, const char *text)
{
    if (b->st == FJ_OK)
        b->st = fj_buf_puts(&b->sql, text);
}

void fj_sqb_printf(fj_sqb *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        if (b->st == FJ_OK)
            b->st = FJ_EINTERNAL;
        return;
    }
    fj_sqb_put(b, tmp);
}

static fj_sqb_param *add_param(fj_sqb *b)
{
    if (b->st != FJ_OK)
        return NULL;
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 16;
        fj_sqb_param *p = fj_realloc(b->p, nc * sizeof *p);
        if (!p) {
            b->st = FJ_ENOMEM;
            return NULL;
        }
        b->p = p;
        b->cap = nc;
    }
    fj_sqb_param *p = &b->p[b->n++];
    memset(p, 0, sizeof *p);
    fj_sqb_printf(b, "?%zu", b->n);
    return p;
}

void fj_sqb_int(fj_sqb *b, int64_t v)
{
    fj_sqb_param *p = add_param(b);
    if (p)
        p->t = 0, p->i = v;
}

void fj_sqb_real(fj_sqb *b, double v)
{
    fj_sqb_param *p = add_param(b);
    if (p)
        p->t = 1, p->d = v;
}

void fj_sqb_text(fj_sqb *b, const char *s)
{
    fj_sqb_param *p = add_param(b);
    if (p)
        p->t = 2, p->s = s;
}

void fj_sqb_text_list(fj_sqb *b, const fj_strlist *l)
{
    if (!l->n) {
        fj_sqb_put(b, "(NULL)");
        return;
    }
    fj_sqb_put(b, "(");
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            fj_sqb_put(b, ",");
        fj_sqb_text(b, l->v[i]);
    }
    fj_sqb_put(b, ")");
}

void fj_sqb_int_list(fj_sqb *b, const int64_t *v, size_t n)
{
    if (!n) {
        fj_sqb_put(b, "(NULL)");
        return;
    }
    fj_sqb_put(b, "(");
    for (size_t i = 0; i < n; i++)
        fj_sqb_printf(b, i ? ",%lld" : "%lld", (long long)v[i]);
    fj_sqb_put(b, ")");
}

void fj_sqb_node_list(fj_sqb *b, const fj_sqq *x)
{
    size_t k = 0;
    fj_sqb_put(b, "(");
    for (size_t i = 0; i < x->nodes.n; i++)
        if (x->nodes.want[i])
            fj_sqb_printf(b, k++ ? ",%lld" : "%lld", (long long)x->nodes.ids[i]);
    fj_sqb_put(b, k ? ")" : "NULL)");
}

fj_status fj_sqb_prepare(fj_sqq *x, fj_sqb *b, sqlite3_stmt **st)
{
    if (b->st != FJ_OK)
        return fj_err_set(x->err, b->st, NULL, "building the query failed");
    fj_status rs = fj_sqq_prepare(x, b->sql.data ? b->sql.data : "", st);
    if (rs != FJ_OK)
        return rs;
    for (size_t i = 0; i < b->n; i++) {
        const fj_sqb_param *p = &b->p[i];
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

fj_value fj_v_null(void)
{
    fj_value v = {0};
    return v;
}

fj_value fj_v_int(int64_t i)
{
    fj_value v = {.t = FJ_VT_INT, .i = i};
    return v;
}

fj_value fj_v_real(double d)
{
    fj_value v = {.t = FJ_VT_REAL, .d = d};
    return v;
}

fj_value fj_v_bool(bool b)
{
    fj_value v = {.t = FJ_VT_BOOL, .i = b ? 1 : 0};
    return v;
}

fj_value fj_v_text(const char *s)
{
    fj_value v = {.t = s ? FJ_VT_TEXT : FJ_VT_NULL, .s = s};
    return v;
}

fj_value fj_v_time(int64_t t)
{
    fj_value v = {.t = t ? FJ_VT_TIME : FJ_VT_NULL, .i = t};
    return v;
}

fj_value fj_v_list(const char *const *l, size_t n)
{
    fj_value v = {.t = FJ_VT_LIST, .list = l, .n = n};
    return v;
}

fj_value fj_v_json(const char *s)
{
    fj_value v = {.t = s ? FJ_VT_JSON : FJ_VT_NULL, .s = s};
    return v;
}

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

fj_value fj_v_avg(double sum, double n)
{
    return n > 0 ? fj_v_real(sum / n) : fj_v_null();
}

fj_status fj_sqq_strv_push(fj_sqq *x, fj_sqq_strv *sv, const char *s)
{
    if (sv->n == sv->cap) {
        size_t nc = sv->cap ? sv->cap * 2 : 8;
        const char **v = fj_arena_alloc(x->a, nc * sizeof *v);
        if (!v)
            return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
        if (sv->n)
            memcpy(v, sv->v, sv->n * sizeof *v);
        sv->v = v;
        sv->cap = nc;
    }
    sv->v[sv->n++] = s;
    return FJ_OK;
}

fj_status fj_sqq_text_list(fj_sqq *x, sqlite3_stmt *st, int64_t id, const char ***out, size_t *n)
{
    fj_sqq_strv sv = {0};
    sqlite3_bind_int64(st, 1, id);
    int rc;
    fj_status rs = FJ_OK;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        char *c = t ? fj_arena_strdup(x->a, t) : NULL;
        if (t && !c) {
            rs = fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
            break;
        }
        if (c && (rs = fj_sqq_strv_push(x, &sv, c)) != FJ_OK)
            break;
    }
    sqlite3_reset(st);
    if (rs != FJ_OK)
        return rs;
    if (rc != SQLITE_DONE)
        return fj_sqq_fail(x, rc, "list");
    *out = sv.v;
    *n = sv.n;
    return FJ_OK;
}
