/* routes.c — the route table: method, path, access needed, handler. */
#include "routes.h"

#include "api.h"
#include "ingest_routes.h"
#include "measure_routes.h"
#include "measurements.h"

const fj_route fj_routes[] = {
    /* Ingest: Sonar's HTTP sink and sonalyze's insert API, fjord's bulk path, the universal path. */
    {"POST", "/api/v1/insert/*", FJ_ACCESS_WRITE, fj_route_sonar_insert},
    {"POST", "/api/v1/ingest/sonar", FJ_ACCESS_WRITE, fj_route_sonar_bulk},
    {"POST", "/api/v1/ingest/measurements", FJ_ACCESS_WRITE, fj_route_measurements_ingest},
    {"POST", "/ingest", FJ_ACCESS_WRITE, fj_route_ingest_any},
    /* Queries. */
    {"GET", "/api/v1/jobs", FJ_ACCESS_READ, fj_api_jobs},
    {"GET", "/api/v1/nodes", FJ_ACCESS_READ, fj_api_nodes},
    {"GET", "/api/v1/nodes/*", FJ_ACCESS_READ, fj_api_node_measurements}, /* {node}/measurements */
    {"GET", "/api/v1/health", FJ_ACCESS_NONE, fj_api_health},
    {0},
};
