/* storage/query/qx.c — a running query (storage/query/qx.h) and the helpers the queries build on
 * it: the node set of a query, strings copied into the query's arena, a query run from its parts. */
#include "storage/query/qx.h"
#include "storage/query/sqlbuf.h"

#include <string.h>

/* --- nodes ------------------------------------------------------------------------------------- */

long fj_qnodes_index(const fj_qnodes *nodes, int64_t id)
{
    size_t lo = 0, hi = nodes->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nodes->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nodes->n && nodes->ids[lo] == id ? (long)lo : -1;
}

const char *fj_qnodes_name(const fj_qnodes *nodes, int64_t id)
{
    long i = fj_qnodes_index(nodes, id);
    return i < 0 ? NULL : nodes->names[i];
}

fj_status fj_qenv_one_node(const fj_qenv *e, int64_t *id)
{
    const char *name = e->q->node;
    if (!name || !*name)
        return fj_err_set(e->err, FJ_EINVAL, "node", "a node is required");
    for (size_t i = 0; i < e->nodes->n; i++)
        if (strcmp(e->nodes->names[i], name) == 0) {
            *id = e->nodes->ids[i];
            return FJ_OK;
        }
    return fj_err_set(e->err, FJ_ENOTFOUND, "node", "no node '%s' in cluster '%s'", name, e->q->cluster);
}

fj_status fj_qenv_wanted_by_name(const fj_qenv *e, size_t **order, size_t *n)
{
    const fj_qnodes *nd = e->nodes;
    size_t *o = fj_arena_alloc(e->a, (nd->n + 1) * sizeof *o), k = 0;
    if (!o)
        return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
    /* insertion sort: stable, and the node lists of one cluster are small */
    for (size_t i = 0; i < nd->n; i++)
        if (nd->want[i]) {
            size_t j = k++;
            while (j > 0 && strcmp(nd->names[o[j - 1]], nd->names[i]) > 0) {
                o[j] = o[j - 1];
                j--;
            }
            o[j] = i;
        }
    *order = o;
    *n = k;
    return FJ_OK;
}

/* --- strings ----------------------------------------------------------------------------------- */

fj_status fj_qgrow(fj_arena *a, fj_err *err, void *arr, size_t n, size_t *cap, size_t elem, size_t first)
{
    if (n < *cap)
        return FJ_OK;
    size_t nc = *cap ? *cap * 2 : first;
    void *old, *v = fj_arena_alloc(a, nc * elem);
    if (!v)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    memcpy(&old, arr, sizeof old); /* arr points to a T *: copied as bytes, whatever T is */
    if (n)
        memcpy(v, old, n * elem);
    memcpy(arr, &v, sizeof v);
    *cap = nc;
    return FJ_OK;
}

fj_status fj_qstrv_push(const fj_qenv *e, fj_qstrv *sv, const char *s)
{
    fj_status rs = fj_qgrow(e->a, e->err, &sv->v, sv->n, &sv->cap, sizeof *sv->v, 8);
    if (rs == FJ_OK)
        sv->v[sv->n++] = s;
    return rs;
}

fj_status fj_qenv_text_list(const fj_qenv *e, const fj_qrows *r, int64_t id, const char ***out, size_t *n)
{
    fj_qstrv sv = {0};
    fj_qr_bind(r, 1, id);
    bool row = false;
    fj_status rs;
    while ((rs = fj_qr_step(r, "list", &row)) == FJ_OK && row) {
        const char *t = fj_qr_text(r, 0);
        char *c = t ? fj_arena_strdup(e->a, t) : NULL;
        if (t && !c) {
            rs = fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
            break;
        }
        if (c && (rs = fj_qstrv_push(e, &sv, c)) != FJ_OK)
            break;
    }
    fj_qr_reset(r);
    if (rs != FJ_OK)
        return rs;
    *out = sv.v;
    *n = sv.n;
    return FJ_OK;
}

/* --- a running query ---------------------------------------------------------------------------- */

fj_status fj_qx_begin(fj_qx *x, fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    memset(x, 0, sizeof *x);
    x->s = s;
    x->d = fj_driver_of(s);
    x->q = q;
    x->k = k;
    x->err = err;
    q->next.set = false;
    if (!(x->a = fj_arena_create()))
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    fj_status st = x->d->begin_read(x);
    if (st != FJ_OK) {
        fj_arena_destroy(x->a);
        x->a = NULL;
        return st;
    }
    x->in_tx = true;
    return FJ_OK;
}

fj_status fj_qx_end(fj_qx *x, fj_status st)
{
    while (x->n_open)
        fj_qx_finalize(x, &x->open[x->n_open - 1]);
    if (x->in_tx)
        x->d->end_read(x, st);
    x->in_tx = false;
    fj_arena_destroy(x->a);
    x->a = NULL;
    return st;
}

fj_qenv fj_qx_env(fj_qx *x)
{
    return (fj_qenv){x->q, x->k, x->err, x->a, x->cluster_id, &x->nodes, x->node};
}

fj_status fj_qx_one_node(fj_qx *x, int64_t *id)
{
    fj_qenv e = fj_qx_env(x);
    return fj_qenv_one_node(&e, id);
}

/* Appends the dialect's text of shared SQL to out: ?N placeholders take the dialect's mark, and
 * each {token} of storage/core/driver.h its text. Neither is looked for inside quoted literals. */
static fj_status dialect_sql(const fj_dialect *d, const char *sql, fj_buf *out)
{
    const struct {
        const char *token;
        const char *text;
    } tokens[] = {{"{bytes}", d->bytewise}, {"{greatest}", d->greatest}, {"{cross}", d->cross}, {"{real}", d->real}};
    fj_status st = FJ_OK;
    bool quoted = false;
    for (const char *p = sql; *p && st == FJ_OK; p++) {
        if (*p == '\'')
            quoted = !quoted;
        if (!quoted && *p == '?' && p[1] >= '0' && p[1] <= '9') {
            st = fj_buf_append(out, &d->mark, 1);
            continue;
        }
        size_t t = 0, n = sizeof tokens / sizeof tokens[0];
        if (!quoted && *p == '{')
            while (t < n && strncmp(p, tokens[t].token, strlen(tokens[t].token)) != 0)
                t++;
        if (!quoted && *p == '{' && t < n) {
            st = fj_buf_puts(out, tokens[t].text);
            p += strlen(tokens[t].token) - 1;
        } else
            st = fj_buf_append(out, p, 1);
    }
    return st == FJ_OK ? fj_buf_append(out, "", 1) : st;
}

/* Prepares the dialect's text of shared SQL. */
static fj_status prepare_shared(fj_qx *x, const char *sql, fj_qrows *r)
{
    r->st = NULL;
    fj_buf b;
    fj_buf_init(&b, (size_t)32 << 20);
    fj_status st = dialect_sql(&x->d->dialect, sql, &b);
    if (st != FJ_OK) {
        fj_buf_free(&b);
        return fj_err_set(x->err, st, NULL, "building the query failed");
    }
    st = x->d->prepare(x, b.data, r);
    fj_buf_free(&b);
    if (st != FJ_OK || !r->st)
        return st;
    /* kept open for fj_qx_end (a roll-up drain's query has an arena but never ends: it finalizes
     * its own statements, which takes them off the list) */
    if ((st = fj_qgrow(x->a, x->err, &x->open, x->n_open, &x->cap_open, sizeof *x->open, 16)) != FJ_OK) {
        x->d->finalize(r);
        r->st = NULL;
        return st;
    }
    x->open[x->n_open++] = *r;
    return FJ_OK;
}

fj_status fj_qx_prepare(fj_qx *x, const char *sql, fj_qrows *r)
{
    return prepare_shared(x, sql, r);
}

fj_status fj_qx_prepare_qb(fj_qx *x, fj_sqlbuf *b, fj_qrows *r)
{
    r->st = NULL;
    if (b->st != FJ_OK)
        return fj_err_set(x->err, b->st, NULL, "building the query failed");
    fj_status rs = prepare_shared(x, b->sql.data ? b->sql.data : "", r);
    if (rs != FJ_OK)
        return rs;
    for (size_t i = 0; i < b->n; i++) {
        const fj_sqlbuf_param *p = &b->p[i];
        int j = (int)i + 1;
        if (p->t == 0)
            r->ops->bind_int(r, j, p->i);
        else if (p->t == 1)
            r->ops->bind_real(r, j, p->d);
        else
            r->ops->bind_text(r, j, p->s);
    }
    return FJ_OK;
}

void fj_qx_finalize(fj_qx *x, const fj_qrows *r)
{
    if (!r->st)
        return;
    void *st = r->st;
    x->d->finalize(r);
    for (size_t i = x->n_open; i-- > 0;)
        if (x->open[i].st == st) {
            x->open[i] = x->open[--x->n_open];
            break;
        }
}

fj_status fj_qx_cluster(fj_qx *x)
{
    const char *name = x->q->cluster;
    if (!name || !*name)
        return fj_err_set(x->err, FJ_EINVAL, "cluster", "parameter 'cluster': required");
    fj_qrows r;
    fj_status rs = fj_qx_prepare(x, "SELECT id FROM clusters WHERE name = ?1", &r);
    if (rs != FJ_OK)
        return rs;
    fj_qr_bind_text(&r, 1, name);
    bool row = false;
    rs = fj_qr_step(&r, "find cluster", &row);
    if (rs == FJ_OK && row)
        x->cluster_id = fj_qr_i64(&r, 0);
    fj_qx_finalize(x, &r);
    if (rs != FJ_OK)
        return rs;
    if (!row)
        return fj_err_set(x->err, FJ_ENOTFOUND, "cluster", "no data for cluster '%s'", name);
    return FJ_OK;
}

fj_status fj_qx_load_nodes(fj_qx *x)
{
    fj_qrows r;
    fj_status rs = fj_qx_prepare(x, "SELECT id, name FROM nodes WHERE cluster_id = ?1 ORDER BY id", &r);
    if (rs != FJ_OK)
        return rs;
    fj_qr_bind(&r, 1, x->cluster_id);
    size_t cap = 0;
    fj_qnodes *nd = &x->nodes;
    nd->filtered = x->q->host_match != NULL;
    bool row = false;
    while ((rs = fj_qr_step(&r, "list nodes", &row)) == FJ_OK && row) {
        if (nd->n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            int64_t *ids = fj_arena_alloc(x->a, nc * sizeof *ids);
            const char **names = fj_arena_alloc(x->a, nc * sizeof *names);
            bool *want = fj_arena_alloc(x->a, nc * sizeof *want);
            if (!ids || !names || !want) {
                rs = fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
                break;
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
        const char *name = fj_arena_strdup(x->a, fj_qr_text(&r, 1));
        if (!name) {
            rs = fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
            break;
        }
        nd->ids[nd->n] = fj_qr_i64(&r, 0);
        nd->names[nd->n] = name;
        nd->want[nd->n] = !x->q->host_match || x->q->host_match(x->q->host_ctx, name);
        nd->n_want += nd->want[nd->n];
        nd->n++;
    }
    fj_qx_finalize(x, &r);
    return rs;
}

/* --- a query op from its parts ---------------------------------------------------------------- */

fj_status fj_qx_run(fj_store *s, fj_query *q, fj_sink *k, fj_err *err, fj_qx_needs needs, const char *const *sql,
                    fj_qx_rows_fn rows, void *arg)
{
    fj_qx x;
    fj_qrows st[FJ_QX_MAX_STMTS] = {{0}};
    fj_status rs = fj_qx_begin(&x, s, q, k, err);
    if (rs != FJ_OK)
        return rs;
    if (needs >= FJ_QX_NODES && ((rs = fj_qx_cluster(&x)) != FJ_OK || (rs = fj_qx_load_nodes(&x)) != FJ_OK))
        return fj_qx_end(&x, rs);
    if (needs >= FJ_QX_ONE_NODE && (rs = fj_qx_one_node(&x, &x.node)) != FJ_OK)
        return fj_qx_end(&x, rs);
    for (size_t i = 0; sql && sql[i]; i++)
        if (i == FJ_QX_MAX_STMTS)
            return fj_qx_end(&x, fj_err_set(err, FJ_EINTERNAL, NULL, "a query op with too many statements"));
        else if ((rs = fj_qx_prepare(&x, sql[i], &st[i])) != FJ_OK)
            return fj_qx_end(&x, rs);
    fj_qenv e = fj_qx_env(&x);
    return fj_qx_end(&x, rows(&x, &e, st, arg));
}

typedef struct rows2_op {
    fj_qx_rows2_fn rows;
} rows2_op;

static fj_status rows2(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)x;
    return ((const rows2_op *)arg)->rows(e, &st[0], &st[1]);
}

fj_status fj_qx_run2(fj_store *s, fj_query *q, fj_sink *k, fj_err *err, fj_qx_needs needs, const char *const sql[3],
                     fj_qx_rows2_fn rows)
{
    rows2_op op = {rows};
    return fj_qx_run(s, q, k, err, needs, sql, rows2, &op);
}

typedef struct built_op {
    fj_qx_build_fn build;
    fj_qx_built_rows_fn rows;
} built_op;

static fj_status built_rows(fj_qx *x, const fj_qenv *e, const fj_qrows *st, void *arg)
{
    (void)st;
    const built_op *op = arg;
    fj_sqlbuf b;
    fj_sqlbuf_init(&b, x->d->dialect.mark);
    op->build(&b, e, x->d->dialect.bytewise);
    fj_qrows r;
    fj_status rs = fj_qx_prepare_qb(x, &b, &r);
    fj_sqlbuf_free(&b);
    return rs == FJ_OK ? op->rows(e, &r) : rs;
}

fj_status fj_qx_run_built(fj_store *s, fj_query *q, fj_sink *k, fj_err *err, fj_qx_build_fn build,
                          fj_qx_built_rows_fn rows)
{
    built_op op = {build, rows};
    return fj_qx_run(s, q, k, err, FJ_QX_NODES, NULL, built_rows, &op);
}
