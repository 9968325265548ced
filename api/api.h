/* api.h — fjord's own read API under /api/v1/: JSON by default, one error shape, read-only
 * database connections so queries never wait for ingest. */
#ifndef FJ_API_H
#define FJ_API_H

#include "http.h"

/* GET /api/v1/jobs?cluster=&from=&to=&limit= */
void fj_api_jobs(fj_http_req *r);
/* GET /api/v1/nodes?cluster= */
void fj_api_nodes(fj_http_req *r);
/* GET /api/v1/health: 200 {"status":"ok","version":...} without credentials. */
void fj_api_health(fj_http_req *r);

#endif
