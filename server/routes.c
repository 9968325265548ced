/* routes.c — the route table: method, path, access needed, handler. */
#include "routes.h"

#include "api.h"
#include "ingest_routes.h"
#include "measure_routes.h"

const fj_route fj_routes[] = {
    /* Ingest: Sonar's HTTP sink and sonalyze's insert API, fjord's bulk path, the universal path. */
    {"POST", "/api/v1/insert/*", FJ_ACCESS_WRITE, fj_route_sonar_insert},
    {"POST", "/api/v1/ingest/sonar", FJ_ACCESS_WRITE, fj_route_sonar_bulk},
    {"POST", "/api/v1/ingest/measurements", FJ_ACCESS_WRITE, fj_route_measurements_ingest},
    {"POST", "/ingest", FJ_ACCESS_WRITE, fj_route_ingest_any},
    /* Queries (api/; documented in api/spec.c, which /api/v1/openapi.json is built from). */
    {"GET", "/api/v1/clusters", FJ_ACCESS_READ, fj_api_clusters},
    {"GET", "/api/v1/nodes", FJ_ACCESS_READ, fj_api_nodes},
    /* {node}/sysinfo, {node}/topology, {node}/measurements (api/nodes.c dispatches) */
    {"GET", "/api/v1/nodes/*", FJ_ACCESS_READ, fj_api_node_sub},
    {"GET", "/api/v1/jobs", FJ_ACCESS_READ, fj_api_jobs},
    {"GET", "/api/v1/jobs/*", FJ_ACCESS_READ, fj_api_job_sub}, /* {id}, {id}/profile */
    {"GET", "/api/v1/load/nodes", FJ_ACCESS_READ, fj_api_load_nodes},
    {"GET", "/api/v1/load/cluster", FJ_ACCESS_READ, fj_api_load_cluster},
    {"GET", "/api/v1/slurm/jobs", FJ_ACCESS_READ, fj_api_slurm_jobs},
    {"GET", "/api/v1/slurm/partitions", FJ_ACCESS_READ, fj_api_slurm_partitions},
    {"GET", "/api/v1/slurm/nodes", FJ_ACCESS_READ, fj_api_slurm_nodes},
    {"GET", "/api/v1/uptime", FJ_ACCESS_READ, fj_api_uptime},
    {"GET", "/api/v1/errors", FJ_ACCESS_READ, fj_api_errors},
    {"GET", "/api/v1/openapi.json", FJ_ACCESS_NONE, fj_api_openapi},
    {"GET", "/api/v1/health", FJ_ACCESS_NONE, fj_api_health},
    {0},
};
