/* storage/sqlite/query_common.c — the SQLite names of the running query (storage/query/backend.h) for
 * the backend's own query files (load, jobs, Chimbuko): statements typed as SQLite's, its value
 * conversions and the SQL builder with ?N placeholders. */
#include "storage/sqlite/query_int.h"

#include <string.h>

fj_status fj_sqq_begin(fj_sqq *x, fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    return fj_qx_begin(x, s, q, k, err);
}

fj_status fj_sqq_end(fj_sqq *x, fj_status st)
{
    return fj_qx_end(x, st);
}

fj_status fj_sqq_fail(fj_sqq *x, int rc, const char *what)
{
    return fj_sq_fail(x->s, rc, what, x->err);
}

fj_status fj_sqq_prepare(fj_sqq *x, const char *sql, sqlite3_stmt **st)
{
    fj_qrows r;
    fj_status rs = fj_sqlite_driver.prepare(x, sql, &r);
    *st = r.st;
    return rs;
}

fj_status fj_sqq_cluster(fj_sqq *x)
{
    return fj_qx_cluster(x);
}

fj_status fj_sqq_load_nodes(fj_sqq *x)
{
    return fj_qx_load_nodes(x);
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
    fj_qenv e = fj_qx_env(x);
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
    fj_qrows r;
    x->d = &fj_sqlite_driver; /* also for a context the writer's roll-up upkeep set up itself */
    fj_status rs = fj_qx_prepare_qb(x, b, &r);
    *st = r.st;
    return rs;
}

fj_status fj_sqq_strv_push(fj_sqq *x, fj_sqq_strv *sv, const char *s)
{
    fj_qenv e = fj_qx_env(x);
    return fj_qstrv_push(&e, sv, s);
}

fj_status fj_sqq_text_list(fj_sqq *x, sqlite3_stmt *st, int64_t id, const char ***out, size_t *n)
{
    fj_qenv e = fj_qx_env(x);
    fj_qrows r = fj_sqq_rows(x, st);
    return fj_qenv_text_list(&e, &r, id, out, n);
}

fj_qrows fj_sqq_rows(fj_sqq *x, sqlite3_stmt *st)
{
    return (fj_qrows){&fj_sq_qrows_ops, x, st};
}

fj_qenv fj_sqq_env(fj_sqq *x)
{
    return fj_qx_env(x);
}
