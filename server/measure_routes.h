/* measure_routes.h — the ingest handler for NVIDIA aicr snapshots (docs/measurements.md). */
#ifndef FJ_MEASURE_ROUTES_H
#define FJ_MEASURE_ROUTES_H

#include "server/http.h"

/* POST /api/v1/ingest/measurements?cluster=&node= (also reached through POST /ingest): one aicr
 * snapshot, YAML or JSON, in either spelling. The cluster must be the credential's (401
 * otherwise, as for Sonar); cluster and node default to metadata.cluster and
 * metadata.source-node. Answers 200 {"cluster","node","topic","time","measurements","subtypes",
 * "inserted","duplicates"} after the commit; 400 naming the bad field. */
void fj_route_measurements_ingest(fj_http_req *r);

#endif
