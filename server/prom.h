/* prom.h — fjord's figures for Prometheus: counters bumped where things happen, gauges read when
 * scraped, and GET /metrics writing them in the text exposition format (version 0.0.4).
 *
 * The counters are process-wide, as the log is (one server a process): the request path would
 * otherwise carry a handle into every ingest handler. Bumping one is a relaxed atomic add on a
 * cell of its own label set (route x status, cluster x reason), so request threads share a cache
 * line only when they answer the same route with the same status; no lock is taken.
 *
 * Every label set is bounded, whatever clients send: routes are the route table's templates,
 * statuses a fixed list ("other" beyond), reasons the first 32 error codes seen ("other" beyond),
 * clusters and credential names the first 256 seen ("_other" beyond). Names that reach the
 * tables come from checked credentials, or from data a checked credential may write. */
#ifndef FJ_PROM_H
#define FJ_PROM_H

#include "server/http.h"

#include <stddef.h>
#include <stdint.h>

/* Names the route labels after routes (terminated by a zeroed entry; at most 64 are labelled,
 * the rest share "other") and notes the start time. Call once before serving. */
void fj_prom_init(const fj_route *routes);

/* One answered request: its route (index into the table given to fj_prom_init; -1 for none),
 * status, body bytes received and answer bytes sent. */
void fj_prom_request(int route, int status, size_t bytes_in, size_t bytes_out);

/* A failed authentication; reason "unauthorized", "rate_limited" or "malformed". */
void fj_prom_auth_failure(const char *reason);

typedef enum { FJ_PROM_ENVELOPES, FJ_PROM_POINTS } fj_prom_unit;

/* n envelopes or points committed for cluster (also its last-accepted time). */
void fj_prom_accepted(fj_prom_unit unit, const char *cluster, uint64_t n);
/* n envelopes or points refused, for cluster (the credential's, when the data named another or
 * none) and reason (an error code). */
void fj_prom_refused(fj_prom_unit unit, const char *cluster, const char *reason, uint64_t n);

/* A refusal of a request made with credential `name` (a checked one, or a Basic user name that
 * has a credential): its last-refusal time. */
void fj_prom_credential_refused(const char *name);

/* What became of n datagrams of a UDP listener (server/udp.h): accepted (their good lines
 * submitted), refused (a source address not allowed, or a line naming another cluster), bad (no
 * good line, or too large), dropped (the writer's queue stayed full), overflowed (dropped by the
 * kernel before fjord read them: the socket's buffer was full). */
typedef enum {
    FJ_PROM_UDP_ACCEPTED,
    FJ_PROM_UDP_REFUSED,
    FJ_PROM_UDP_BAD,
    FJ_PROM_UDP_DROPPED,
    FJ_PROM_UDP_OVERFLOWED
} fj_prom_udp_result;
void fj_prom_udp(fj_prom_udp_result result, uint64_t n);

/* One group commit of n batches that took `seconds` (writer thread). */
void fj_prom_commit(size_t batches, double seconds);

/* The handler of GET /metrics. */
void fj_route_prom_metrics(fj_http_req *r);

#endif
