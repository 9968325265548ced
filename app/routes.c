/* app/routes.c — the route table: method, path, access needed, whether a body is taken, handler.
 * It sits above both the write routes (server/) and the query endpoints (api/), which know
 * only server/http.h's route type, so neither folder includes the other's handlers.
 *
 * FJ_NO_BODY routes answer a request that carries a body (Content-Length > 0 or any
 * Transfer-Encoding) at once, without reading it: the open routes must never buffer or decode
 * what an unauthenticated client sends. cc-backend sends JSON bodies with GET /api/query and
 * GET /api/healthcheck, so those take one. */
#include "app/routes.h"

#include "api/account_usage.h"
#include "api/api.h"
#include "api/cc_list.h"
#include "api/ccms_query.h"
#include "api/metrics_catalog.h"
#include "api/influxql/influxql.h"
#include "api/chimbuko_api.h"
#include "server/chimbuko_routes.h"
#include "server/dashboard.h"
#include "server/ingest_routes.h"
#include "server/measure_routes.h"
#include "server/metrics_routes.h"
#include "api/problems.h"
#include "server/prom.h"
#include "api/sss.h"

const fj_route fj_routes[] = {
    /* Ingest: Sonar's HTTP sink and sonalyze's insert API, fjord's bulk path, the universal path. */
    {"POST", "/api/v1/insert/*", FJ_ACCESS_WRITE, FJ_BODY, fj_route_sonar_insert, FJ_ERRORS_FJORD},
    {"POST", "/api/v1/ingest/sonar", FJ_ACCESS_WRITE, FJ_BODY, fj_route_sonar_bulk, FJ_ERRORS_FJORD},
    {"POST", "/api/v1/ingest/measurements", FJ_ACCESS_WRITE, FJ_BODY, fj_route_measurements_ingest, FJ_ERRORS_FJORD},
    {"POST", "/ingest", FJ_ACCESS_WRITE, FJ_BODY, fj_route_ingest_any, FJ_ERRORS_FJORD},
    /* Line protocol (server/metrics_routes.c): cc-metric-store, InfluxDB 1.x and 2.x write paths;
     * cc-metric-store's query and health check (api/ccms_query.c); ClusterCockpit events;
     * cc-backend's job API. */
    {"POST", "/api/write", FJ_ACCESS_WRITE, FJ_BODY, fj_route_ccms_write, FJ_ERRORS_FJORD},
    {"POST", "/write", FJ_ACCESS_WRITE, FJ_BODY, fj_route_influx1_write, FJ_ERRORS_INFLUX},
    {"POST", "/api/v2/write", FJ_ACCESS_WRITE, FJ_BODY, fj_route_influx2_write, FJ_ERRORS_FJORD},
    {"GET,POST", "/api/query", FJ_ACCESS_READ, FJ_BODY, fj_route_ccms_query, FJ_ERRORS_FJORD},
    {"GET", "/api/healthcheck", FJ_ACCESS_READ, FJ_BODY, fj_route_ccms_health, FJ_ERRORS_FJORD},
    /* InfluxDB 1.x's query API (api/influxql/): InfluxQL on the same metrics; POST carries q in a
     * form body, read only after authentication. /ping is open, as InfluxDB's. */
    {"GET,POST", "/query", FJ_ACCESS_READ, FJ_BODY, fj_route_influx_query, FJ_ERRORS_INFLUX},
    {"GET,HEAD", "/ping", FJ_ACCESS_NONE, FJ_NO_BODY, fj_route_influx_ping, FJ_ERRORS_INFLUX},
    {"GET", "/api/v1/events", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_cc_events, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/cc/jobs", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_cc_jobs, FJ_ERRORS_FJORD},
    {"POST", "/api/jobs/start_job", FJ_ACCESS_WRITE, FJ_BODY, fj_route_cc_start_job, FJ_ERRORS_FJORD},
    {"POST", "/api/jobs/stop_job", FJ_ACCESS_WRITE, FJ_BODY, fj_route_cc_stop_job, FJ_ERRORS_FJORD},
    /* Chimbuko (server/chimbuko_routes.c): the parameter server's packets, provenance records. */
    {"POST", "/api/anomalydata", FJ_ACCESS_WRITE, FJ_BODY, fj_route_chimbuko_packet, FJ_ERRORS_FJORD},
    {"POST", "/api/v1/ingest/chimbuko/*", FJ_ACCESS_WRITE, FJ_BODY, fj_route_chimbuko_records, FJ_ERRORS_FJORD},
    /* Queries (api/; documented in api/spec.c, which /api/v1/openapi.json is built from). */
    {"GET", "/api/v1/clusters", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_clusters, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/nodes", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_nodes, FJ_ERRORS_FJORD},
    /* {node}/sysinfo, {node}/topology, {node}/measurements (api/nodes.c dispatches) */
    {"GET", "/api/v1/nodes/*", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_node_sub, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/jobs", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_jobs, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/jobs/*", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_job_sub, FJ_ERRORS_FJORD}, /* {id}, {id}/profile */
    {"GET", "/api/v1/load/nodes", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_load_nodes, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/load/cluster", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_load_cluster, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/load/gpus", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_load_gpus, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/slurm/jobs", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_slurm_jobs, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/slurm/partitions", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_slurm_partitions, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/slurm/nodes", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_slurm_nodes, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/uptime", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_uptime, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/errors", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_errors, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/problems", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_problems, FJ_ERRORS_FJORD}, /* api/problems.c */
    {"GET", "/api/v1/problems/users", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_problem_users, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/usage", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_account_usage, FJ_ERRORS_FJORD}, /* api/account_usage.c */
    {"GET", "/api/v1/metrics/catalog", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_metrics_catalog, FJ_ERRORS_FJORD}, /* api/metrics_catalog.c */
    /* Chimbuko queries (api/chimbuko.c) and the SSS Node object export (api/sss.c). */
    {"GET", "/api/v1/chimbuko/*", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_chimbuko, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/export/sss/nodes", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_sss_nodes, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/export/sss/nodes/*", FJ_ACCESS_READ, FJ_NO_BODY, fj_api_sss_node, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/openapi.json", FJ_ACCESS_NONE, FJ_NO_BODY, fj_api_openapi, FJ_ERRORS_FJORD},
    {"GET", "/api/v1/health", FJ_ACCESS_NONE, FJ_NO_BODY, fj_api_health, FJ_ERRORS_FJORD},
    /* Prometheus (server/prom.c) */
    {"GET", "/metrics", FJ_ACCESS_METRICS, FJ_NO_BODY, fj_route_prom_metrics, FJ_ERRORS_FJORD},
    /* The web dashboard (server/dashboard.c): its page and bundle, open (the page asks for a
     * credential and sends it with its API calls); under /ui/ only, so it shadows no API path. */
    {"GET", "/", FJ_ACCESS_NONE, FJ_NO_BODY, fj_route_dashboard, FJ_ERRORS_FJORD},
    {"GET", "/ui/*", FJ_ACCESS_NONE, FJ_NO_BODY, fj_route_dashboard, FJ_ERRORS_FJORD},
    {0},
};
