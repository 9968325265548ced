/* proxy.c — trusted-proxy ranges and the forwarded client (X-Forwarded-For, RFC 7239 Forwarded). */
#include "server/proxy.h"

#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { MAX_HOPS = 64 }; /* a longer chain is read from its right end only */

/* An address as (family, 16 bytes); an IPv4-mapped IPv6 address becomes IPv4, so "::ffff:10.1.2.3"
 * from a dual-stack socket matches 10.0.0.0/8. */
static bool parse_addr(const char *text, int *family, unsigned char bin[16])
{
    memset(bin, 0, 16);
    if (inet_pton(AF_INET, text, bin) == 1) {
        *family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, text, bin) != 1)
        return false;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!memcmp(bin, mapped, 12)) {
        memmove(bin, bin + 12, 4);
        memset(bin + 4, 0, 12);
        *family = AF_INET;
    } else {
        *family = AF_INET6;
    }
    return true;
}

static bool in_range(const fj_addr_range *r, int family, const unsigned char bin[16])
{
    if (r->family != family)
        return false;
    unsigned full = r->prefix / 8, rest = r->prefix % 8;
    if (memcmp(r->net, bin, full))
        return false;
    return !rest || ((r->net[full] ^ bin[full]) & (unsigned char)(0xff << (8 - rest))) == 0;
}

static bool trusted(const fj_proxies *p, int family, const unsigned char bin[16])
{
    for (size_t i = 0; i < p->n; i++)
        if (in_range(&p->ranges[i], family, bin))
            return true;
    return false;
}

fj_status fj_proxies_parse(const char *list, fj_proxies *out, fj_err *err)
{
    fj_forwarded_header header = out->header;
    memset(out, 0, sizeof *out);
    out->header = header;
    for (const char *p = list ? list : ""; *p;) {
        size_t n = strcspn(p, ", \t");
        if (!n) {
            p++;
            continue;
        }
        char item[80];
        if (n >= sizeof item)
            return fj_err_set(err, FJ_EINVAL, "trusted-proxies", "trusted-proxies: '%.40s...' is not an address", p);
        memcpy(item, p, n);
        item[n] = '\0';
        p += n;
        if (out->n == FJ_PROXY_MAX_RANGES)
            return fj_err_set(err, FJ_EINVAL, "trusted-proxies", "trusted-proxies: more than %d entries",
                              FJ_PROXY_MAX_RANGES);
        fj_addr_range *r = &out->ranges[out->n];
        char *slash = strchr(item, '/');
        if (slash)
            *slash = '\0';
        if (!parse_addr(item, &r->family, r->net))
            return fj_err_set(err, FJ_EINVAL, "trusted-proxies",
                              "trusted-proxies: '%s' is not an IPv4 or IPv6 address or CIDR range", item);
        unsigned max = r->family == AF_INET ? 32 : 128;
        r->prefix = max;
        if (slash) {
            char *end;
            unsigned long bits = strtoul(slash + 1, &end, 10);
            if (end == slash + 1 || *end || bits > max)
                return fj_err_set(err, FJ_EINVAL, "trusted-proxies",
                                  "trusted-proxies: prefix length '/%s' of %s is not 0-%u", slash + 1, item, max);
            r->prefix = (unsigned)bits;
        }
        out->n++;
    }
    return FJ_OK;
}

fj_status fj_proxies_set_header(fj_proxies *p, const char *name, fj_err *err)
{
    if (!strcasecmp(name, "x-forwarded-for"))
        p->header = FJ_FWD_X_FORWARDED_FOR;
    else if (!strcasecmp(name, "forwarded"))
        p->header = FJ_FWD_FORWARDED;
    else
        return fj_err_set(err, FJ_EINVAL, "forwarded-header",
                          "forwarded-header must be X-Forwarded-For or Forwarded, not '%s'", name);
    return FJ_OK;
}

bool fj_proxies_trust_text(const fj_proxies *p, const char *addr)
{
    int family;
    unsigned char bin[16];
    return p && p->n && addr && parse_addr(addr, &family, bin) && trusted(p, family, bin);
}

bool fj_proxies_trust_sockaddr(const fj_proxies *p, const struct sockaddr *sa)
{
    if (!p || !p->n || !sa)
        return false;
    char text[INET6_ADDRSTRLEN];
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, text, sizeof text);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, text, sizeof text);
    else
        return false;
    return fj_proxies_trust_text(p, text);
}

/* One hop as a proxy writes it: "10.1.2.3", "10.1.2.3:5000", "::1", "[::1]:5000", possibly in
 * double quotes (Forwarded). false for anything else ("unknown", "_hidden", garbage). */
static bool parse_hop(const char *s, size_t n, int *family, unsigned char bin[16])
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"')
        s++, n -= 2;
    char text[INET6_ADDRSTRLEN + 8];
    if (!n || n >= sizeof text)
        return false;
    if (s[0] == '[') { /* [v6] or [v6]:port */
        const char *close = memchr(s, ']', n);
        if (!close)
            return false;
        n = (size_t)(close - s - 1);
        s++;
        if (n >= sizeof text)
            return false;
    } else {
        const char *colon = memchr(s, ':', n);
        if (colon && !memchr(colon + 1, ':', n - (size_t)(colon + 1 - s))) /* one colon: v4:port */
            n = (size_t)(colon - s);
    }
    memcpy(text, s, n);
    text[n] = '\0';
    return parse_addr(text, family, bin);
}

/* The `for=` value of one Forwarded element ("for=1.2.3.4;proto=https"), or false. */
static bool forwarded_for(const char *s, size_t n, const char **val, size_t *val_n)
{
    const char *end = s + n;
    while (s < end) {
        const char *semi = memchr(s, ';', (size_t)(end - s));
        const char *pair_end = semi ? semi : end;
        while (s < pair_end && isspace((unsigned char)*s))
            s++;
        if (pair_end - s > 4 && !strncasecmp(s, "for=", 4)) {
            *val = s + 4;
            *val_n = (size_t)(pair_end - s - 4);
            return true;
        }
        s = semi ? semi + 1 : end;
    }
    return false;
}

bool fj_proxies_client(const fj_proxies *p, const char *header, char *out, size_t cap)
{
    if (!header || !*header || !cap)
        return false;
    /* The hops, left to right (the rightmost MAX_HOPS of a longer chain). A comma inside a quoted
     * Forwarded value would be odd (IPv6 addresses hold colons, not commas) and ends a hop. */
    const char *hop[MAX_HOPS];
    size_t hop_n[MAX_HOPS], n = 0;
    for (const char *s = header;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (n == MAX_HOPS) {
            memmove(hop, hop + 1, sizeof hop[0] * (MAX_HOPS - 1));
            memmove(hop_n, hop_n + 1, sizeof hop_n[0] * (MAX_HOPS - 1));
            n--;
        }
        hop[n] = s;
        hop_n[n++] = len;
        if (!comma)
            break;
        s = comma + 1;
    }
    int family = 0;
    unsigned char bin[16];
    bool found = false;
    for (size_t i = n; i-- > 0;) {
        const char *v = hop[i];
        size_t vn = hop_n[i];
        int f;
        unsigned char b[16];
        /* An element without for=, or a name that is no address ("unknown", "_hidden"): the
         * chain cannot be checked further, and the last trusted hop, if any, is the client. */
        if ((p->header == FJ_FWD_FORWARDED && !forwarded_for(hop[i], hop_n[i], &v, &vn)) || !parse_hop(v, vn, &f, b))
            break;
        family = f;
        memcpy(bin, b, 16);
        found = true;
        if (!trusted(p, f, b))
            break;
    }
    if (!found)
        return false;
    return inet_ntop(family, bin, out, (socklen_t)cap) != NULL;
}
