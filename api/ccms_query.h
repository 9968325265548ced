/* api/ccms_query.h — cc-metric-store's read side on fjord's time-series storage: the query
 * (GET|POST /api/query) and the health check (GET /api/healthcheck), and the cluster
 * configuration that says how a metric is aggregated and how a node's hardware threads nest.
 * The series are read through the store's time-series ops; the aggregation is api/ccms_agg.h.
 * docs/metrics.md describes the answers. */
#ifndef FJ_CCMS_QUERY_H
#define FJ_CCMS_QUERY_H

#include "server/http.h"

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* GET|POST /api/query: cc-metric-store's query. */
void fj_route_ccms_query(fj_http_req *r);
/* GET /api/healthcheck: with cc-backend's JSON body {"cluster","nodes","metric-names"} a map from
 * node to {"State","HealthMetrics"} (docs/metrics.md); else [?cluster=&node=] as before. Takes a
 * body, as /api/query does. */
void fj_route_ccms_health(fj_http_req *r);

/* Loads a cc-backend cluster.json (metricConfig: timestep, aggregation; subClusters: nodes,
 * topology) or a cc-metric-store config.json (metrics: frequency, aggregation) for the query
 * path. Call once before serving. */
fj_status fj_ccq_load_config(const char *path, fj_err *err);

/* What that configuration says of metric name: its unit (cluster.json's unit prefix and base,
 * "GB/s"; NULL when none) and its interval in seconds (0 when none). false when it names no such
 * metric (or none was loaded). For the metric catalogue (api/metrics_catalog.c). */
bool fj_ccq_metric_info(const char *name, const char **unit, int64_t *freq_s);
/* The i-th metric the loaded cluster.json marks as an energy metric (metricConfig[].energy:
 * "power", a gauge in watts, or "energy", a counter in joules; docs/energy.md): its name and
 * whether it is a counter. false past the last (or without a cluster.json). */
bool fj_ccq_energy_metric(size_t i, const char **name, bool *counter);

#endif
