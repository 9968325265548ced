/* metrics_routes.h — HTTP handlers for line-protocol metrics and ClusterCockpit: the write paths of
 * cc-metric-store, InfluxDB 1.x and 2.x (and /ingest's line-protocol branch), ClusterCockpit
 * and cc-backend's job start/stop API. cc-metric-store's query and health check are in
 * api/ccms_query.h, the events and jobs listings in api/cc_list.h. docs/metrics.md describes the answers. */
#ifndef FJ_METRICS_ROUTES_H
#define FJ_METRICS_ROUTES_H

#include "server/http.h"

/* POST /api/write?cluster=: cc-metric-store; 200, or 400 listing bad lines (good ones stored). */
void fj_route_ccms_write(fj_http_req *r);
/* POST /write?db=&precision=: InfluxDB 1.x; 204. */
void fj_route_influx1_write(fj_http_req *r);
/* POST /api/v2/write?org=&bucket=&precision=: InfluxDB 2.x; 204. */
void fj_route_influx2_write(fj_http_req *r);
/* /ingest with a line-protocol body: as /api/write. */
void fj_route_lp_ingest(fj_http_req *r);

/* POST /api/jobs/start_job/ (201; 422 duplicate) and /api/jobs/stop_job/ (200 with the job; 422
 * not running; 404 unknown; 400 stop before start). */
void fj_route_cc_start_job(fj_http_req *r);
void fj_route_cc_stop_job(fj_http_req *r);

#endif
