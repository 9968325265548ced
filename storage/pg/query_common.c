/* storage/pg/query_common.c — the PostgreSQL names of the running query (storage/query/backend.h) for
 * the backend's own query files (load, jobs, Chimbuko): the cluster and its node set, the SQL
 * builder with $N placeholders and globs as regular expressions, and value helpers. */
#include "storage/pg/query_int.h"

#include "alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fj_status fj_pgq_begin(fj_pgq *x, fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    return fj_qx_begin(x, s, q, k, err);
}

fj_status fj_pgq_end(fj_pgq *x, fj_status st)
{
    return fj_qx_end(x, st);
}

/* --- cluster and nodes --------------------------------------------------------------------------- */

fj_status fj_pgq_cluster(fj_pgq *x)
{
    return fj_qx_cluster(x);
}

fj_status fj_pgq_load_nodes(fj_pgq *x)
{
    return fj_qx_load_nodes(x);
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
    if (fj_pgs_nparams(*st) < (int)b->n)
        return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
    return FJ_OK;
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

fj_qrows fj_pgq_rows(fj_pgq *x, fj_pgs *st)
{
    return (fj_qrows){&fj_pg_qrows_ops, x, st};
}

fj_qenv fj_pgq_env(fj_pgq *x)
{
    return fj_qx_env(x);
}
