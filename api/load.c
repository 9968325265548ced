/* load.c — GET /api/v1/load/nodes and /api/v1/load/cluster. */
#include "api.h"
#include "api_int.h"

static void load(fj_http_req *r, const fj_endpoint *ep, bool cluster)
{
    fj_apiq a;
    if (!fj_api_begin(r, ep, NULL, &a))
        return;
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, cluster ? fj_store_ops_of(s)->q_cluster_load : fj_store_ops_of(s)->q_node_load);
}

void fj_api_load_nodes(fj_http_req *r)
{
    load(r, &fj_ep_load_nodes, false);
}

void fj_api_load_cluster(fj_http_req *r)
{
    load(r, &fj_ep_load_cluster, true);
}
