/* storage/pg/query_common.c — the shared machinery of the PostgreSQL query-API ops: one read-only
 * REPEATABLE READ transaction per query (a consistent snapshot; readers never block the writers),
 * the cluster and its node set, statements with a cursor, an SQL builder with typed parameters,
 * and value helpers. */
#include "storage/pg/query_int.h"

#include "alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OID_BOOL 16
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_TEXT 25
#define OID_FLOAT4 700
#define OID_FLOAT8 701
#define OID_NUMERIC 1700

struct fj_pgs {
    fj_pgq *x;
    const char *sql;
    int n, cap; /* parameters */
    Oid *types;
    const char **vals;
    char (*num)[32];
    PGresult *res;
    int row, nrows;
    bool ran;
    unsigned char *blob;
    size_t blob_cap;
};

static fj_status oom(fj_pgq *x)
{
    return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
}

fj_status fj_pgq_begin(fj_pgq *x, fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    memset(x, 0, sizeof *x);
    x->s = s;
    x->q = q;
    x->k = k;
    x->err = err;
    q->next.set = false;
    if (!(x->a = fj_arena_create()))
        return oom(x);
    fj_status st = fj_pg_begin(s, true, err);
    if (st != FJ_OK) {
        fj_arena_destroy(x->a);
        x->a = NULL;
        return st;
    }
    x->in_tx = true;
    return FJ_OK;
}

fj_status fj_pgq_end(fj_pgq *x, fj_status st)
{
    if (x->in_tx) {
        fj_err e2 = {0};
        if (st != FJ_OK || fj_pg_exec(x->s, "COMMIT", "end read", &e2) != FJ_OK)
            fj_pg_rollback(x->s);
    }
    x->in_tx = false;
    fj_arena_destroy(x->a);
    x->a = NULL;
    return st;
}

fj_status fj_pgq_fail(fj_pgq *x, int r, const char *what)
{
    if (x->fail != FJ_OK)
        return x->fail;
    return fj_err_set(x->err, FJ_EINTERNAL, NULL, "postgres: %s: unexpected step result %d", what, r);
}

/* --- statements ---------------------------------------------------------------------------------- */

fj_status fj_pgq_prepare(fj_pgq *x, const char *sql, fj_pgs **out)
{
    fj_pgs *st = fj_arena_calloc(x->a, 1, sizeof *st);
    char *copy = st ? fj_arena_strdup(x->a, sql) : NULL;
    if (!copy)
        return oom(x);
    st->x = x;
    st->sql = copy;
    *out = st;
    return FJ_OK;
}

/* Room for parameter i (1-based); false on out-of-memory (the statement then fails to run). */
static bool param_room(fj_pgs *st, int i)
{
    if (i <= st->cap) {
        if (i > st->n)
            st->n = i;
        return true;
    }
    int cap = st->cap ? st->cap * 2 : 16;
    while (cap < i)
        cap *= 2;
    Oid *t = fj_arena_calloc(st->x->a, (size_t)cap, sizeof *t);
    const char **v = fj_arena_calloc(st->x->a, (size_t)cap, sizeof *v);
    char(*num)[32] = fj_arena_calloc(st->x->a, (size_t)cap, sizeof *num);
    if (!t || !v || !num)
        return false;
    if (st->cap) {
        memcpy(t, st->types, (size_t)st->cap * sizeof *t);
        memcpy(num, st->num, (size_t)st->cap * sizeof *num);
        for (int k = 0; k < st->cap; k++) /* numbers point into num: repoint them */
            v[k] = st->vals[k] == st->num[k] ? num[k] : st->vals[k];
    }
    st->types = t;
    st->vals = v;
    st->num = num;
    st->cap = cap;
    if (i > st->n)
        st->n = i;
    return true;
}

void fj_pgs_bind_int(fj_pgs *st, int i, int64_t v)
{
    if (!param_room(st, i))
        return;
    snprintf(st->num[i - 1], sizeof st->num[0], "%lld", (long long)v);
    st->types[i - 1] = OID_INT8;
    st->vals[i - 1] = st->num[i - 1];
}

void fj_pgs_bind_real(fj_pgs *st, int i, double v)
{
    if (!param_room(st, i))
        return;
    if (v != v)
        snprintf(st->num[i - 1], sizeof st->num[0], "NaN");
    else if (v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
        snprintf(st->num[i - 1], sizeof st->num[0], v > 0 ? "Infinity" : "-Infinity");
    else
        snprintf(st->num[i - 1], sizeof st->num[0], "%.17g", v);
    st->types[i - 1] = OID_FLOAT8;
    st->vals[i - 1] = st->num[i - 1];
}

void fj_pgs_bind_text(fj_pgs *st, int i, const char *s)
{
    if (!param_room(st, i))
        return;
    st->types[i - 1] = OID_TEXT;
    st->vals[i - 1] = s;
}

int fj_pgs_step(fj_pgs *st)
{
    fj_pgq *x = st->x;
    if (!st->ran) {
        fj_store *s = x->s;
        if (!s->conn || PQstatus(s->conn) != CONNECTION_OK) {
            x->fail = fj_pg_fail(s, NULL, "query", x->err);
            return FJ_PGS_ERR;
        }
        st->res = PQexecParams(s->conn, st->sql, st->n, st->types, st->vals, NULL, NULL, 0);
        ExecStatusType rs = st->res ? PQresultStatus(st->res) : PGRES_FATAL_ERROR;
        if (rs != PGRES_TUPLES_OK && rs != PGRES_COMMAND_OK) {
            x->fail = fj_pg_fail(s, st->res, "query", x->err);
            PQclear(st->res);
            st->res = NULL;
            return FJ_PGS_ERR;
        }
        st->ran = true;
        st->row = -1;
        st->nrows = PQntuples(st->res);
    }
    if (st->row + 1 < st->nrows) {
        st->row++;
        return FJ_PGS_ROW;
    }
    st->row = st->nrows;
    return FJ_PGS_DONE;
}

void fj_pgs_reset(fj_pgs *st)
{
    if (!st)
        return;
    PQclear(st->res);
    st->res = NULL;
    st->ran = false;
}

void fj_pgs_finalize(fj_pgs *st)
{
    if (!st)
        return;
    fj_pgs_reset(st);
    fj_free(st->blob);
    st->blob = NULL;
    st->blob_cap = 0;
}

static bool has_row(const fj_pgs *st, int c)
{
    return st->res && st->row >= 0 && st->row < st->nrows && c >= 0 && c < PQnfields(st->res);
}

bool fj_pgs_isnull(fj_pgs *st, int c)
{
    return !has_row(st, c) || PQgetisnull(st->res, st->row, c);
}

int64_t fj_pgs_int(fj_pgs *st, int c)
{
    if (fj_pgs_isnull(st, c))
        return 0;
    const char *v = PQgetvalue(st->res, st->row, c);
    if (PQftype(st->res, c) == OID_BOOL)
        return v[0] == 't';
    return strtoll(v, NULL, 10);
}

double fj_pgs_double(fj_pgs *st, int c)
{
    if (fj_pgs_isnull(st, c))
        return 0;
    const char *v = PQgetvalue(st->res, st->row, c);
    if (PQftype(st->res, c) == OID_BOOL)
        return v[0] == 't';
    return strtod(v, NULL);
}

const char *fj_pgs_text(fj_pgs *st, int c)
{
    return fj_pgs_isnull(st, c) ? NULL : PQgetvalue(st->res, st->row, c);
}

bool fj_pgs_is_number(fj_pgs *st, int c)
{
    if (!st->res)
        return false;
    Oid t = PQftype(st->res, c);
    return t == OID_INT8 || t == OID_INT4 || t == OID_INT2 || t == OID_FLOAT4 || t == OID_FLOAT8 ||
           t == OID_NUMERIC;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

const unsigned char *fj_pgs_blob(fj_pgs *st, int c, size_t *len)
{
    *len = 0;
    if (fj_pgs_isnull(st, c))
        return NULL;
    const char *v = PQgetvalue(st->res, st->row, c);
    size_t n = (size_t)PQgetlength(st->res, st->row, c);
    if (n < 2 || v[0] != '\\' || v[1] != 'x') /* bytea_output = hex is the default since 9.0 */
        return NULL;
    size_t out = (n - 2) / 2;
    if (out + 1 > st->blob_cap) {
        unsigned char *b = fj_realloc(st->blob, out + 1);
        if (!b)
            return NULL;
        st->blob = b;
        st->blob_cap = out + 1;
    }
    for (size_t i = 0; i < out; i++) {
        int hi = hexval(v[2 + 2 * i]), lo = hexval(v[3 + 2 * i]);
        if (hi < 0 || lo < 0)
            return NULL;
        st->blob[i] = (unsigned char)(hi << 4 | lo);
    }
    *len = out;
    return st->blob;
}

/* --- cluster and nodes --------------------------------------------------------------------------- */

fj_status fj_pgq_cluster(fj_pgq *x)
{
    const char *name = x->q->cluster;
    if (!name || !*name)
        return fj_err_set(x->err, FJ_EINVAL, "cluster", "parameter 'cluster': required");
    fj_pgs *st;
    fj_status rs = fj_pgq_prepare(x, "SELECT id FROM clusters WHERE name = $1", &st);
    if (rs != FJ_OK)
        return rs;
    fj_pgs_bind_text(st, 1, name);
    int r = fj_pgs_step(st);
    if (r == FJ_PGS_ROW)
        x->cluster_id = fj_pgs_int(st, 0);
    fj_pgs_finalize(st);
    if (r == FJ_PGS_ROW)
        return FJ_OK;
    if (r == FJ_PGS_DONE)
        return fj_err_set(x->err, FJ_ENOTFOUND, "cluster", "no data for cluster '%s'", name);
    return fj_pgq_fail(x, r, "find cluster");
}

fj_status fj_pgq_load_nodes(fj_pgq *x)
{
    fj_pgs *st;
    fj_status rs = fj_pgq_prepare(x, "SELECT id, name FROM nodes WHERE cluster_id = $1 ORDER BY id", &st);
    if (rs != FJ_OK)
        return rs;
    fj_pgs_bind_int(st, 1, x->cluster_id);
    int r = fj_pgs_step(st);
    if (r == FJ_PGS_ERR)
        return fj_pgq_fail(x, r, "list nodes");
    fj_pgq_nodes *nd = &x->nodes;
    size_t cap = (size_t)st->nrows + 1;
    nd->ids = fj_arena_alloc(x->a, cap * sizeof *nd->ids);
    nd->names = fj_arena_alloc(x->a, cap * sizeof *nd->names);
    nd->want = fj_arena_alloc(x->a, cap * sizeof *nd->want);
    nd->filtered = x->q->host_match != NULL;
    if (!nd->ids || !nd->names || !nd->want) {
        fj_pgs_finalize(st);
        return oom(x);
    }
    for (; r == FJ_PGS_ROW; r = fj_pgs_step(st)) {
        const char *name = fj_arena_strdup(x->a, fj_pgs_text(st, 1));
        if (!name) {
            fj_pgs_finalize(st);
            return oom(x);
        }
        nd->ids[nd->n] = fj_pgs_int(st, 0);
        nd->names[nd->n] = name;
        nd->want[nd->n] = !x->q->host_match || x->q->host_match(x->q->host_ctx, name);
        nd->n_want += nd->want[nd->n];
        nd->n++;
    }
    fj_pgs_finalize(st);
    return FJ_OK;
}

long fj_pgq_node_index(const fj_pgq *x, int64_t id)
{
    return fj_qnodes_index(&x->nodes, id);
}

const char *fj_pgq_node_name(const fj_pgq *x, int64_t id)
{
    return fj_qnodes_name(&x->nodes, id);
}

fj_status fj_pgq_one_node(fj_pgq *x, int64_t *id)
{
    fj_qenv e = fj_pgq_env(x);
    return fj_qenv_one_node(&e, id);
}

fj_status fj_pgq_wanted_by_name(fj_pgq *x, size_t **order, size_t *n)
{
    fj_qenv e = fj_pgq_env(x);
    return fj_qenv_wanted_by_name(&e, order, n);
}

/* --- SQL builder --------------------------------------------------------------------------------- */

void fj_pgb_init(fj_pgb *b)
{
    fj_qb_init(b, '$');
}

void fj_pgb_node_list(fj_pgb *b, const fj_pgq *x)
{
    fj_qb_node_list(b, &x->nodes);
}

void fj_pgb_glob(fj_pgb *b, fj_pgq *x, const char *glob)
{
    /* ^...$ with every regex metacharacter outside [...] escaped; * -> .*, ? -> . */
    size_t n = strlen(glob);
    char *re = fj_arena_alloc(x->a, 2 * n + 8);
    if (!re) {
        if (b->st == FJ_OK)
            b->st = FJ_ENOMEM;
        return;
    }
    size_t k = 0;
    re[k++] = '^';
    for (size_t i = 0; i < n; i++) {
        char c = glob[i];
        if (c == '*') {
            re[k++] = '.';
            re[k++] = '*';
        } else if (c == '?') {
            re[k++] = '.';
        } else if (c == '[' && strchr(glob + i + 1 + (glob[i + 1] == '^' || glob[i + 1] == ']'), ']')) {
            /* a class: copied up to its closing bracket ("]" first is a member, as in GLOB) */
            size_t j = i + 1;
            re[k++] = '[';
            if (glob[j] == '^')
                re[k++] = '^', j++;
            if (glob[j] == ']')
                re[k++] = '\\', re[k++] = ']', j++;
            while (glob[j] != ']') {
                if (glob[j] == '\\')
                    re[k++] = '\\';
                re[k++] = glob[j++];
            }
            re[k++] = ']';
            i = j;
        } else {
            if (strchr(".^$+()[]{}|\\", c))
                re[k++] = '\\';
            re[k++] = c;
        }
    }
    re[k++] = '$';
    re[k] = '\0';
    fj_qb_text(b, re);
}

fj_status fj_pgb_prepare(fj_pgq *x, fj_pgb *b, fj_pgs **st)
{
    if (b->st != FJ_OK)
        return fj_err_set(x->err, b->st, NULL, "building the query failed");
    fj_status rs = fj_pgq_prepare(x, b->sql.data ? b->sql.data : "", st);
    if (rs != FJ_OK)
        return rs;
    for (size_t i = 0; i < b->n; i++) {
        const fj_qb_param *p = &b->p[i];
        int j = (int)i + 1;
        if (p->t == 0)
            fj_pgs_bind_int(*st, j, p->i);
        else if (p->t == 1)
            fj_pgs_bind_real(*st, j, p->d);
        else
            fj_pgs_bind_text(*st, j, p->s);
    }
    if ((*st)->n < (int)b->n)
        return oom(x);
    return FJ_OK;
}

/* --- values -------------------------------------------------------------------------------------- */

fj_value fj_pv_col(fj_pgs *st, int i, fj_vtype t)
{
    if (fj_pgs_isnull(st, i))
        return fj_v_null();
    switch (t) {
    case FJ_VT_INT: return fj_v_int(fj_pgs_int(st, i));
    case FJ_VT_BOOL: return fj_v_bool(fj_pgs_int(st, i) != 0);
    case FJ_VT_REAL: return fj_v_real(fj_pgs_double(st, i));
    case FJ_VT_TIME: return fj_v_time(fj_pgs_int(st, i));
    case FJ_VT_JSON: return fj_v_json(fj_pgs_text(st, i));
    default: return fj_v_text(fj_pgs_text(st, i));
    }
}

fj_status fj_pgq_strv_push(fj_pgq *x, fj_pgq_strv *sv, const char *s)
{
    fj_qenv e = fj_pgq_env(x);
    return fj_qstrv_push(&e, sv, s);
}

fj_status fj_pgq_text_list(fj_pgq *x, fj_pgs *st, int64_t id, const char ***out, size_t *n)
{
    fj_qenv e = fj_pgq_env(x);
    fj_qrows r = fj_pgq_rows(x, st);
    return fj_qenv_text_list(&e, &r, id, out, n);
}

/* --- the adapters of storage/query/backend.h --------------------------------------------------------- */

static fj_status qrows_step(const fj_qrows *r, const char *what, bool *row)
{
    int rc = fj_pgs_step(r->st);
    *row = rc == FJ_PGS_ROW;
    return rc == FJ_PGS_ROW || rc == FJ_PGS_DONE ? FJ_OK : fj_pgq_fail(r->x, rc, what);
}

static void qrows_reset(const fj_qrows *r)
{
    fj_pgs_reset(r->st);
}

static void qrows_bind_int(const fj_qrows *r, int i, int64_t v)
{
    fj_pgs_bind_int(r->st, i, v);
}

static bool qrows_is_null(const fj_qrows *r, int c)
{
    return fj_pgs_isnull(r->st, c);
}

static int64_t qrows_i64(const fj_qrows *r, int c)
{
    return fj_pgs_int(r->st, c);
}

static double qrows_dbl(const fj_qrows *r, int c)
{
    return fj_pgs_double(r->st, c);
}

static const char *qrows_text(const fj_qrows *r, int c)
{
    return fj_pgs_text(r->st, c);
}

static fj_value qrows_value(const fj_qrows *r, int c, fj_vtype t)
{
    return fj_pv_col(r->st, c, t);
}

static const unsigned char *qrows_blob(const fj_qrows *r, int c, size_t *len)
{
    return fj_pgs_blob(r->st, c, len);
}

/* A number as an integer (truncated), as this backend has always answered GPU cards' figures. */
static fj_status qrows_json(const fj_qrows *r, int c, fj_buf *out)
{
    if (fj_pgs_isnull(r->st, c))
        return fj_buf_puts(out, "null");
    if (fj_pgs_is_number(r->st, c))
        return fj_buf_printf(out, "%lld", (long long)fj_pgs_int(r->st, c));
    return fj_buf_json_str(out, fj_pgs_text(r->st, c));
}

static const fj_qrows_ops qrows_ops = {qrows_step, qrows_reset, qrows_bind_int, qrows_is_null, qrows_i64,
                                       qrows_dbl,  qrows_text,  qrows_value,    qrows_blob,    qrows_json};

fj_qrows fj_pgq_rows(fj_pgq *x, fj_pgs *st)
{
    return (fj_qrows){&qrows_ops, x, st};
}

fj_qenv fj_pgq_env(fj_pgq *x)
{
    return (fj_qenv){x->q, x->k, x->err, x->a, x->cluster_id, &x->nodes};
}
