/* Tests of server/udp.c's setting: listeners, their cluster, allowed sources and precision, and
 * what is refused (a listener without allow= above all: UDP carries no credential). */
#include "server/udp.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <string.h>

static bool allows(const fj_udp_spec *s, const char *ip)
{
    return fj_proxies_trust_text(&s->allow, ip);
}

Test(udp, parses_listeners)
{
    fj_udp_spec v[FJ_UDP_MAX_LISTENERS];
    size_t n = 99;
    fj_err err = {0};
    cr_assert_eq(fj_udp_parse("127.0.0.1:8089 cluster=fritz allow=10.1.0.0/16,127.0.0.1 precision=ms ;"
                              "  [::1]:0 allow=::1 cluster=alex ;",
                              v, &n, &err),
                 FJ_OK, "%s", err.message);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(v[0].host, "127.0.0.1");
    cr_expect_eq(v[0].port, 8089);
    cr_expect_str_eq(v[0].cluster, "fritz");
    cr_expect_eq(v[0].unit_ns, 1000000);
    cr_expect(allows(&v[0], "10.1.200.3") && allows(&v[0], "127.0.0.1"));
    cr_expect(!allows(&v[0], "127.0.0.2") && !allows(&v[0], "10.2.0.1"), "nothing else");
    cr_expect_str_eq(v[1].host, "::1");
    cr_expect_eq(v[1].port, 0);
    cr_expect_str_eq(v[1].cluster, "alex");
    cr_expect_eq(v[1].unit_ns, 1, "nanoseconds unless told, as InfluxDB's UDP input");
    cr_expect(allows(&v[1], "::1") && !allows(&v[1], "127.0.0.1"));
    cr_assert_eq(fj_udp_parse("", v, &n, &err), FJ_OK);
    cr_expect_eq(n, 0, "no setting, no listener");
}

Test(udp, refuses_what_it_cannot_take)
{
    static const struct {
        const char *setting, *says;
    } bad[] = {
        {"127.0.0.1:8089 cluster=c", "allow= is required"},
        {"127.0.0.1:8089 cluster=c allow=", "allow= is required"},
        {"127.0.0.1:8089 allow=127.0.0.1", "cluster= is required"},
        {"127.0.0.1 cluster=c allow=127.0.0.1", "HOST:PORT"},
        {"127.0.0.1:70000 cluster=c allow=127.0.0.1", "0-65535"},
        {"127.0.0.1:1 cluster=c allow=10.0.0.0/99", "10.0.0.0/99"},
        {"127.0.0.1:1 cluster=c allow=127.0.0.1 precision=fortnight", "precision"},
        {"127.0.0.1:1 cluster=c allow=127.0.0.1 database=x", "expected cluster="},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fj_udp_spec v[FJ_UDP_MAX_LISTENERS];
        size_t n;
        fj_err err = {0};
        cr_expect_eq(fj_udp_parse(bad[i].setting, v, &n, &err), FJ_EINVAL, "%s", bad[i].setting);
        cr_expect(strstr(err.message, bad[i].says) != NULL, "%s: %s", bad[i].setting, err.message);
        cr_expect_str_eq(err.path, "udp");
    }
}
