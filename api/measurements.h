/* measurements.h — reading NVIDIA aicr snapshots back (docs/measurements.md). */
#ifndef FJ_API_MEASUREMENTS_H
#define FJ_API_MEASUREMENTS_H

#include "server/http.h"

/* GET /api/v1/nodes/{node}/measurements?cluster=[&path=]: without path, the node's latest
 * snapshot {"cluster","node","time","snapshot"}; with an aicr constraint path, the value it names
 * in that snapshot {"cluster","node","time","path","value","reading","unit","from"}. 400 for a
 * malformed path, 404 for no snapshot or nothing at the path, 422 for a predicate matching
 * several items. Called by the dispatcher of the /api/v1/nodes/ prefix route (api/nodes.c) for {node}/measurements;
 * answers 404 itself for any other rest of the path. */
void fj_api_node_measurements(fj_http_req *r);

#endif
