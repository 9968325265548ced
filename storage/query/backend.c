/* storage/query/backend.c — the helpers shared query code builds on the reader of storage/query/backend.h: the
 * node set of a query, strings copied into the query's arena. */
#include "storage/query/backend.h"

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

fj_status fj_qstrv_push(const fj_qenv *e, fj_qstrv *sv, const char *s)
{
    if (sv->n == sv->cap) {
        size_t nc = sv->cap ? sv->cap * 2 : 8;
        const char **v = fj_arena_alloc(e->a, nc * sizeof *v);
        if (!v)
            return fj_err_set(e->err, FJ_ENOMEM, NULL, "out of memory");
        if (sv->n)
            memcpy(v, sv->v, sv->n * sizeof *v);
        sv->v = v;
        sv->cap = nc;
    }
    sv->v[sv->n++] = s;
    return FJ_OK;
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
