/* udp.h — line protocol over UDP, as InfluxDB's UDP input takes it (collectd's write_influxdb_udp,
 * Telegraf's influxdb output with a udp:// URL): setting `udp`, one or more listeners, each
 * binding a port to one cluster and to the source addresses it accepts.
 *
 *   udp = 127.0.0.1:8089 cluster=c1 allow=10.1.0.0/16,127.0.0.1 precision=ms; [::]:8090 cluster=c2 allow=::1
 *
 * UDP carries no credential, and a source address is all a datagram claims: a datagram from an
 * address not in `allow` is counted and dropped before anything of it is read; a listener without
 * `allow` is a configuration error (docs/security.md, "UDP"). An accepted datagram (at most 64 KiB,
 * as UDP's own limit; a truncated one is bad) is one body through the same decoder and writer as
 * POST /write: its lines' cluster is the listener's (a line naming another cluster, in a `cluster`
 * tag or a job payload, makes the whole datagram refused), timestamps in `precision` (InfluxDB's
 * names; default ns, as InfluxDB's UDP input; collectd sends ms), bad lines dropped and counted.
 * Nobody is answered. Counters: GET /metrics's fjord_udp_datagrams_total{result=...}. */
#ifndef FJ_UDP_H
#define FJ_UDP_H

#include "fj_status.h"
#include "server/http.h"
#include "server/proxy.h"

#include <stddef.h>
#include <stdint.h>

enum { FJ_UDP_MAX_LISTENERS = 16, FJ_UDP_MAX_DATAGRAM = 65536 };

/* One listener as configured. */
typedef struct fj_udp_spec {
    char host[256];
    unsigned port;
    char cluster[256];
    fj_proxies allow; /* the accepted source addresses and ranges */
    int64_t unit_ns;  /* ns per timestamp unit */
} fj_udp_spec;

/* Parses the `udp` setting: listeners separated by ';', each HOST:PORT followed by cluster=NAME,
 * allow=ADDRS (addresses and CIDR ranges, separated by commas) and optionally precision=P.
 * FJ_EINVAL naming the listener and what is wrong (err->path "udp"). "" gives none. */
fj_status fj_udp_parse(const char *setting, fj_udp_spec *out, size_t *n, fj_err *err);

typedef struct fj_udp fj_udp;

/* Binds every listener of setting and starts a thread for each; datagrams are submitted to srv's
 * writer. max_future_s: refuse points later than arrival plus this (0: no limit), as
 * metrics-max-future. FJ_EIO when a port cannot be bound. */
fj_status fj_udp_start(const char *setting, fj_server *srv, int64_t max_future_s, fj_udp **out, fj_err *err);

/* The port listener i is bound to (after fj_udp_start; for a configured port 0). */
unsigned fj_udp_port(const fj_udp *u, size_t i);

/* Stops the threads, waits for the datagrams submitted to be committed, closes the sockets.
 * NULL is a no-op. */
void fj_udp_stop(fj_udp *u);

#endif
