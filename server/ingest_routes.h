/* ingest_routes.h — HTTP handlers that take data in: Sonar's insert paths, fjord's multi-envelope
 * path and the universal /ingest, which tells formats apart by Content-Type and content. */
#ifndef FJ_INGEST_ROUTES_H
#define FJ_INGEST_ROUTES_H

#include "server/http.h"

/* POST /api/v1/insert/{type} and /api/v1/insert/<prefix>.<type>: exactly one envelope, answered
 * as sonalyze does: 200 {"cluster","node","topic","time"} (plus row counts). */
void fj_route_sonar_insert(fj_http_req *r);

/* POST /api/v1/ingest/sonar: one or many envelopes of any kind; each accepted or rejected on its
 * own; 200 when all were accepted, 400 listing the rejected ones otherwise (the accepted ones are
 * committed either way). */
void fj_route_sonar_bulk(fj_http_req *r);

/* POST /ingest: every format fjord reads. */
void fj_route_ingest_any(fj_http_req *r);

#endif
