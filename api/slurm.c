/* slurm.c — GET /api/v1/slurm/jobs, /api/v1/slurm/partitions and /api/v1/slurm/nodes. */
#include "api/api.h"
#include "api/api_int.h"
#include "storage/core/store_query.h"

void fj_api_slurm_jobs(fj_http_req *r)
{
    fj_apiq a;
    if (!fj_api_begin(r, &fj_ep_slurm_jobs, "slurm", &a))
        return;
    fj_query *q = &a.q;
    q->users = fj_api_strlist(&a, "user");
    q->states = fj_api_strlist(&a, "state");
    q->partitions = fj_api_strlist(&a, "partition");
    q->accounts = fj_api_strlist(&a, "account");
    q->jobs = fj_api_intlist(&a, "job");
    q->array_jobs = fj_api_intlist(&a, "array");
    q->het_jobs = fj_api_intlist(&a, "het");
    q->running = fj_api_tri(&a, "running");
    q->steps = fj_api_tri(&a, "steps");
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, fj_store_query_slurm_jobs);
}

void fj_api_slurm_partitions(fj_http_req *r)
{
    fj_apiq a;
    if (!fj_api_begin(r, &fj_ep_slurm_partitions, NULL, &a))
        return;
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, fj_store_query_partitions);
}

void fj_api_slurm_nodes(fj_http_req *r)
{
    fj_apiq a;
    if (!fj_api_begin(r, &fj_ep_slurm_nodes, NULL, &a))
        return;
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, fj_store_query_node_states);
}
