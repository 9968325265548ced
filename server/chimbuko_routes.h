/* chimbuko_routes.h — the ingest handlers for Chimbuko (docs/chimbuko.md): the parameter server's
 * packets and the provenance database's records. */
#ifndef FJ_CHIMBUKO_ROUTES_H
#define FJ_CHIMBUKO_ROUTES_H

#include "server/http.h"

/* POST /api/anomalydata[?cluster=&run=] (also /api/v1/ingest/chimbuko/packet): one pserver
 * packet, as Chimbuko's PSstatSender posts it about once a second. The cluster defaults to the
 * credential's (Chimbuko is configured with a URL only: http://cluster:secret@host/api/anomalydata
 * gives Basic auth). Answers 200 {"cluster","run","created_at","inserted","duplicates","notes"}
 * after the commit; an idle packet ({"created_at","version"}) is valid. 400 naming the bad field,
 * 401 for a cluster the credential does not cover. Chimbuko ignores the answer; only transport
 * errors stop its sender, and fjord always reads the whole body before answering. */
void fj_route_chimbuko_packet(fj_http_req *r);

/* POST /api/v1/ingest/chimbuko/{anomalies|normalexecs|metadata|func_stats|counter_stats}
 * [?cluster=&run=]: provenance records, one or many per request (an object, an array, or several
 * of either). All or nothing: 200 {"cluster","run","collection","records","inserted",
 * "duplicates","notes"} after the commit, or 400 with the path of the bad field. */
void fj_route_chimbuko_records(fj_http_req *r);

#endif
