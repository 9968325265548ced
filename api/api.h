/* api.h — fjord's read API under /api/v1/: JSON by default and CSV on request, one error shape,
 * parameters declared in spec.c (400 naming the bad one), read-only database connections so
 * queries never wait for ingest. docs/api.md describes every endpoint. */
#ifndef FJ_API_H
#define FJ_API_H

#include "server/http.h"

void fj_api_clusters(fj_http_req *r);        /* GET /api/v1/clusters */
void fj_api_nodes(fj_http_req *r);           /* GET /api/v1/nodes */
/* GET /api/v1/nodes/{node}/sysinfo, /topology and /measurements: the prefix route's dispatcher. */
void fj_api_node_sub(fj_http_req *r);
void fj_api_jobs(fj_http_req *r);            /* GET /api/v1/jobs */
void fj_api_job_sub(fj_http_req *r);         /* GET /api/v1/jobs/{id} and /api/v1/jobs/{id}/profile */
void fj_api_load_nodes(fj_http_req *r);      /* GET /api/v1/load/nodes */
void fj_api_load_cluster(fj_http_req *r);    /* GET /api/v1/load/cluster */
void fj_api_load_gpus(fj_http_req *r);       /* GET /api/v1/load/gpus */
void fj_api_slurm_jobs(fj_http_req *r);      /* GET /api/v1/slurm/jobs */
void fj_api_slurm_partitions(fj_http_req *r);/* GET /api/v1/slurm/partitions */
void fj_api_slurm_nodes(fj_http_req *r);     /* GET /api/v1/slurm/nodes */
void fj_api_uptime(fj_http_req *r);          /* GET /api/v1/uptime */
void fj_api_errors(fj_http_req *r);          /* GET /api/v1/errors */
void fj_api_openapi(fj_http_req *r);         /* GET /api/v1/openapi.json */
/* GET /api/v1/health: 200 {"status":"ok","version":...} without credentials. */
void fj_api_health(fj_http_req *r);

#endif
