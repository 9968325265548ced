/* chimbuko_api.h — the Chimbuko queries under /api/v1/chimbuko/ (docs/chimbuko.md): runs, anomaly
 * statistics over time per application, rank and function, the top ranks and functions of a time
 * window, and the provenance records. JSON by default, CSV with format=csv, as the query API. */
#ifndef FJ_API_CHIMBUKO_API_H
#define FJ_API_CHIMBUKO_API_H

#include "server/http.h"
#include "api/spec.h"
#include "storage/core/store_chimbuko.h"

/* GET /api/v1/chimbuko/{runs | stats/{ranks,functions,metrics,counters} | top |
 * provenance/{anomalies,normalexecs,events,metadata,func_stats,counter_stats}}?cluster=...
 * 404 for another path. */
void fj_api_chimbuko(fj_http_req *r);

/* The endpoints, for the OpenAPI document (NULL-terminated). */
extern const fj_endpoint *const fj_chimbuko_endpoints[];

#endif
