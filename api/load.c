/* load.c — GET /api/v1/load/nodes, /api/v1/load/cluster and /api/v1/load/gpus (per card). */
#include "api.h"
#include "api_int.h"
#include "storage/core/store_query.h"

typedef enum { LOAD_NODES, LOAD_CLUSTER, LOAD_GPUS } load_kind;

static void load(fj_http_req *r, const fj_endpoint *ep, load_kind kind)
{
    fj_apiq a;
    if (!fj_api_begin(r, ep, NULL, &a))
        return;
    fj_store *s = fj_api_store(&a);
    if (!s)
        return;
    const fj_store_ops *ops = fj_store_ops_of(s);
    fj_api_run(&a, s, kind == LOAD_CLUSTER ? ops->query->q_cluster_load : kind == LOAD_GPUS ? ops->query->q_gpu_load : ops->query->q_node_load);
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
