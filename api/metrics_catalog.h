/* metrics_catalog.h — GET /api/v1/metrics/catalog: the ClusterCockpit (line-protocol) metrics a
 * cluster has sent, so no one types metric names (docs/metrics.md, "The metric catalogue"). */
#ifndef FJ_API_METRICS_CATALOG_H
#define FJ_API_METRICS_CATALOG_H

#include "server/http.h"
#include "api/spec.h"

/* GET /api/v1/metrics/catalog?cluster=&from=&to=: one row per metric (JSON or CSV). */
void fj_api_metrics_catalog(fj_http_req *r);

/* The endpoints, for the OpenAPI document (NULL-terminated). */
extern const fj_endpoint *const fj_metrics_catalog_endpoints[];

#endif
