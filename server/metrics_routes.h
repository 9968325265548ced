/* metrics_routes.h — HTTP handlers for line-protocol metrics and ClusterCockpit: the write paths of
 * cc-metric-store, InfluxDB 1.x and 2.x (and /ingest's line-protocol branch), cc-metric-store's
 * query and health check, ClusterCockpit events, and cc-backend's job start/stop API.
 * docs/metrics.md describes the answers. */
#ifndef FJ_METRICS_ROUTES_H
#define FJ_METRICS_ROUTES_H

#include "http.h"

/* POST /api/write?cluster=: cc-metric-store; 200, or 400 listing bad lines (good ones stored). */
void fj_route_ccms_write(fj_http_req *r);
/* POST /write?db=&precision=: InfluxDB 1.x; 204. */
void fj_route_influx1_write(fj_http_req *r);
/* POST /api/v2/write?org=&bucket=&precision=: InfluxDB 2.x; 204. */
void fj_route_influx2_write(fj_http_req *r);
/* /ingest with a line-protocol body: as /api/write. */
void fj_route_lp_ingest(fj_http_req *r);

/* GET|POST /api/query: cc-metric-store's query (metrics_query.c). */
void fj_route_ccms_query(fj_http_req *r);
/* GET /api/healthcheck: with cc-backend's JSON body {"cluster","nodes","metric-names"} a map from
 * node to {"State","HealthMetrics"} (docs/metrics.md); else [?cluster=&node=] as before. Takes a
 * body, as /api/query does. */
void fj_route_ccms_health(fj_http_req *r);
/* GET /api/v1/events?cluster=&from=&to=&kind=&name=&host=&limit= */
void fj_route_cc_events(fj_http_req *r);
/* GET /api/v1/cc/jobs?cluster=&from=&to=&limit=: ClusterCockpit jobs joined with Sonar's Slurm jobs. */
void fj_route_cc_jobs(fj_http_req *r);
/* POST /api/jobs/start_job/ (201; 422 duplicate) and /api/jobs/stop_job/ (200 with the job; 422
 * not running; 404 unknown; 400 stop before start). */
void fj_route_cc_start_job(fj_http_req *r);
void fj_route_cc_stop_job(fj_http_req *r);

/* Loads a cc-backend cluster.json (metricConfig: timestep, aggregation; subClusters: nodes,
 * topology) or a cc-metric-store config.json (metrics: frequency, aggregation) for the query
 * path. Call once before serving. */
fj_status fj_ccq_load_config(const char *path, fj_err *err);

#endif
