/* proxy.h — which peers are trusted reverse proxies, and who the client behind one is.
 *
 * Behind a reverse proxy every connection comes from the proxy's address. A proxy names the
 * client it relays for in X-Forwarded-For (a comma-separated list, each proxy appending the
 * address it received the request from) or in RFC 7239's Forwarded (`for=` of each element).
 * Anyone can send those headers, so they are believed only from a peer in `trusted-proxies`,
 * and only as far as the chain stays within trusted addresses: the client is the rightmost
 * address that is not itself a trusted proxy. Everything to its left was written by that
 * client (or by proxies it chose) and is not believed.
 *
 * Only one header is read (`forwarded-header`): when a proxy maintains one and passes the
 * other through from the client unchanged, reading both would let a client name itself. */
#ifndef FJ_PROXY_H
#define FJ_PROXY_H

#include "fj_status.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

enum { FJ_PROXY_MAX_RANGES = 64 };

/* One address range: family AF_INET or AF_INET6, network bytes (IPv4 in the first 4), prefix
 * length in bits. */
typedef struct fj_addr_range {
    int family;
    unsigned char net[16];
    unsigned prefix;
} fj_addr_range;

typedef enum { FJ_FWD_X_FORWARDED_FOR, FJ_FWD_FORWARDED } fj_forwarded_header;

typedef struct fj_proxies {
    fj_addr_range ranges[FJ_PROXY_MAX_RANGES];
    size_t n;
    fj_forwarded_header header;
} fj_proxies;

/* Parses a list of addresses and CIDR ranges separated by commas or spaces ("127.0.0.1,
 * 10.0.0.0/8 ::1 fd00::/8"). An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 one.
 * An empty list trusts no one. FJ_EINVAL naming the bad entry, with err->path "trusted-proxies". */
fj_status fj_proxies_parse(const char *list, fj_proxies *out, fj_err *err);

/* "x-forwarded-for" or "forwarded" (case-insensitive); FJ_EINVAL otherwise. */
fj_status fj_proxies_set_header(fj_proxies *p, const char *name, fj_err *err);

/* Is this address (text, or a socket address) in the list? */
bool fj_proxies_trust_text(const fj_proxies *p, const char *addr);
bool fj_proxies_trust_sockaddr(const fj_proxies *p, const struct sockaddr *sa);

/* The client behind a trusted proxy. `header` is the configured header's value as received (all
 * its lines joined with ", "; NULL when absent). Walks its hops from the right: a trusted proxy's
 * address moves on to the next hop to the left, anything else is the client. The client's
 * address is written to out in canonical form (inet_ntop). A hop that is not an address
 * ("unknown", an obfuscated RFC 7239 name, garbage) ends the walk: the trusted proxy to its right
 * is then the client, and when there is none, false (absent or empty header too): the caller
 * names the peer itself. When every hop is a trusted proxy, the leftmost is the client. */
bool fj_proxies_client(const fj_proxies *p, const char *header, char *out, size_t cap);

#endif
