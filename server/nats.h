/* nats.h — optional NATS subscriber (`--nats URL`): ClusterCockpit components publish line protocol
 * on <cluster>.metrics, <cluster>.events.<class> and <cluster>.log.<component>; fjord subscribes to
 * `*.metrics`, `*.events.>` and `*.log.>` and feeds every message through the same decoder and
 * writer as HTTP ingest, with the subject's first token as the default cluster (a `cluster` tag
 * still wins) and the timestamp unit inferred as on /api/write. NATS has no answer to give: bad
 * lines are logged and dropped, good lines are stored. Built only when libnats is found
 * (FJ_HAVE_NATS); otherwise fj_nats_start fails with FJ_EUNSUPPORTED. */
#ifndef FJ_NATS_H
#define FJ_NATS_H

#include "fj_status.h"
#include "server/http.h"

#include <stddef.h>
#include <stdint.h>

typedef struct fj_nats fj_nats;

/* Connects to url and subscribes; messages are submitted to srv's writer (waiting while its queue
 * is full). max_msg: bytes of one message accepted; max_future_s: refuse points later than arrival
 * plus this (0: no limit), as metrics-max-future on HTTP. */
fj_status fj_nats_start(const char *url, fj_server *srv, size_t max_msg, int64_t max_future_s, fj_nats **out,
                        fj_err *err);

/* Unsubscribes, waits for messages being handled and their commits, disconnects. NULL is a no-op. */
void fj_nats_stop(fj_nats *n);

/* Messages taken and lines refused so far (tests and logs). */
void fj_nats_counts(const fj_nats *n, size_t *messages, size_t *bad_lines);

#endif
