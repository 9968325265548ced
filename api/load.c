/* load.c — GET /api/v1/load/nodes, /api/v1/load/cluster and /api/v1/load/gpus (per card). */
#include "api/api.h"
#include "api/api_int.h"
#include "storage/core/store_query.h"

#include <stdio.h>
#include <string.h>

typedef enum { LOAD_NODES, LOAD_CLUSTER, LOAD_GPUS } load_kind;

/* fields: each a column of the answer's table, else 400 naming it; layout=columns: JSON only, and a
 * table grouped by node (not the cluster's). false when an answer was sent. */
static bool shape(fj_apiq *a, const fj_qtable *t, load_kind kind)
{
    a->fields = fj_api_strlist(a, "fields");
    for (size_t f = 0; f < a->fields.n; f++) {
        bool known = false;
        for (size_t i = 0; i < t->n_cols && !known; i++)
            known = strcmp(a->fields.v[f], t->cols[i].name) == 0;
        if (!known) {
            char why[200];
            snprintf(why, sizeof why, "'%.60s' is not a column of this answer (the columns are in /api/v1/openapi.json)",
                     a->fields.v[f]);
            fj_api_bad_param(a->r, "fields", why);
            return false;
        }
    }
    const fj_pval *layout = fj_param(&a->p, "layout");
    a->columns = layout && layout->set && layout->i == 1;
    if (a->columns && a->csv) {
        fj_api_bad_param(a->r, "layout", "columns is a JSON layout: CSV is rows");
        return false;
    }
    if (a->columns && kind == LOAD_CLUSTER) {
        fj_api_bad_param(a->r, "layout", "columns is for node and GPU load: the cluster's rows are one series already");
        return false;
    }
    return true;
}

static void load(fj_http_req *r, const fj_endpoint *ep, load_kind kind)
{
    fj_apiq a;
    if (!fj_api_begin(r, ep, NULL, &a))
        return;
    if (!shape(&a, kind == LOAD_CLUSTER ? &fj_qt_cluster_load : kind == LOAD_GPUS ? &fj_qt_gpu_load : &fj_qt_node_load, kind))
        return;
    fj_store *s = fj_api_store(&a);
    if (!s)
        return;
    fj_api_run(&a, s, kind == LOAD_CLUSTER ? fj_store_query_cluster_load
                      : kind == LOAD_GPUS  ? fj_store_query_gpu_load
                                           : fj_store_query_node_load);
}

void fj_api_load_nodes(fj_http_req *r)
{
    load(r, &fj_ep_load_nodes, LOAD_NODES);
}

void fj_api_load_cluster(fj_http_req *r)
{
    load(r, &fj_ep_load_cluster, LOAD_CLUSTER);
}

void fj_api_load_gpus(fj_http_req *r)
{
    load(r, &fj_ep_load_gpus, LOAD_GPUS);
}
