/* proxy.c: trusted ranges and the forwarded client. */
#include "server/proxy.h"

#include <criterion/criterion.h>
#include <string.h>

static fj_proxies make(const char *list, fj_forwarded_header h)
{
    fj_proxies p = {.header = h};
    fj_err err = {0};
    cr_assert_eq(fj_proxies_parse(list, &p, &err), FJ_OK, "%s", err.message);
    return p;
}

Test(proxy, ranges)
{
    fj_proxies p = make("127.0.0.1, 10.8.0.0/16 fd00::/8", FJ_FWD_X_FORWARDED_FOR);
    cr_assert(fj_proxies_trust_text(&p, "127.0.0.1"));
    cr_assert(!fj_proxies_trust_text(&p, "127.0.0.2"));
    cr_assert(fj_proxies_trust_text(&p, "10.8.255.1"));
    cr_assert(!fj_proxies_trust_text(&p, "10.9.0.1"));
    cr_assert(fj_proxies_trust_text(&p, "::ffff:10.8.1.1"), "IPv4-mapped is IPv4");
    cr_assert(fj_proxies_trust_text(&p, "fd12::1"));
    cr_assert(!fj_proxies_trust_text(&p, "fe80::1"));
    fj_proxies odd = make("10.1.2.128/25", FJ_FWD_X_FORWARDED_FOR);
    cr_assert(fj_proxies_trust_text(&odd, "10.1.2.200"));
    cr_assert(!fj_proxies_trust_text(&odd, "10.1.2.127"));
    fj_proxies none = make("", FJ_FWD_X_FORWARDED_FOR);
    cr_assert(!fj_proxies_trust_text(&none, "127.0.0.1"));
}

Test(proxy, bad_entries)
{
    const char *bad[] = {"10.0.0.0/33", "::/129", "example.org", "10.0.0.1/", "10.0.0.1/x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fj_proxies p = {0};
        fj_err err = {0};
        cr_assert_eq(fj_proxies_parse(bad[i], &p, &err), FJ_EINVAL, "%s", bad[i]);
        cr_assert_str_eq(err.path, "trusted-proxies");
    }
}

static const char *client(const fj_proxies *p, const char *header)
{
    static char out[64];
    return fj_proxies_client(p, header, out, sizeof out) ? out : NULL;
}

Test(proxy, x_forwarded_for)
{
    fj_proxies p = make("127.0.0.1 10.8.0.0/16", FJ_FWD_X_FORWARDED_FOR);
    cr_assert_str_eq(client(&p, "203.0.113.7"), "203.0.113.7");
    cr_assert_str_eq(client(&p, "192.0.2.1, 198.51.100.4, 10.8.0.9"), "198.51.100.4", "rightmost untrusted");
    cr_assert_str_eq(client(&p, " 198.51.100.4:5000 "), "198.51.100.4", "a port is dropped");
    cr_assert_str_eq(client(&p, "[2001:db8::1]:80"), "2001:db8::1");
    cr_assert_str_eq(client(&p, "2001:DB8:0::1"), "2001:db8::1", "canonical form");
    cr_assert_str_eq(client(&p, "10.8.0.2, 10.8.0.3"), "10.8.0.2", "all trusted: the leftmost");
    cr_assert_null(client(&p, "unknown"));
    cr_assert_null(client(&p, ""));
    cr_assert_null(client(&p, NULL));
    cr_assert_str_eq(client(&p, "garbage, 10.8.0.3"), "10.8.0.3", "an unusable hop: the proxy that wrote it");
    cr_assert_null(client(&p, "203.0.113.7\r\nX-Evil: 1"), "nothing but an address is written to logs");
}

Test(proxy, forwarded)
{
    fj_proxies p = make("127.0.0.1", FJ_FWD_FORWARDED);
    cr_assert_str_eq(client(&p, "for=192.0.2.60;proto=http;by=203.0.113.43"), "192.0.2.60");
    cr_assert_str_eq(client(&p, "For=\"[2001:db8:cafe::17]:4711\""), "2001:db8:cafe::17");
    cr_assert_str_eq(client(&p, "for=192.0.2.43, for=198.51.100.17"), "198.51.100.17");
    cr_assert_str_eq(client(&p, "proto=https;for=192.0.2.9"), "192.0.2.9");
    cr_assert_null(client(&p, "for=_hidden"));
    cr_assert_null(client(&p, "proto=https"));
}
