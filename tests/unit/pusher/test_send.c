/* test_send.c — credentials, compression, and the retry arithmetic of the daemon. */
#include "daemon.h"
#include "send.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

Test(send, auth_headers)
{
    char h[256];
    cr_assert_eq(fj_auth_header(FJ_AUTH_AUTO, "test.local:secret", h, sizeof h), FJ_OK);
    cr_assert_str_eq(h, "Authorization: Basic dGVzdC5sb2NhbDpzZWNyZXQ="); /* as Sonar's HTTP sink sends */
    cr_assert_eq(fj_auth_header(FJ_AUTH_AUTO, "tok123", h, sizeof h), FJ_OK);
    cr_assert_str_eq(h, "Authorization: Bearer tok123");
    cr_assert_eq(fj_auth_header(FJ_AUTH_BEARER, "a:b", h, sizeof h), FJ_OK);
    cr_assert_str_eq(h, "Authorization: Bearer a:b");
    cr_assert_eq(fj_auth_header(FJ_AUTH_BASIC, "token", h, sizeof h), FJ_OK);
    cr_assert_str_eq(h, "Authorization: Basic dG9rZW4=");
    cr_assert_eq(fj_auth_header(FJ_AUTH_NONE, "a:b", h, sizeof h), FJ_OK);
    cr_assert_str_eq(h, "");
    cr_assert_eq(fj_auth_header(FJ_AUTH_AUTO, "", h, sizeof h), FJ_OK);
    cr_assert_str_eq(h, "");
}

Test(send, zstd_round_trip)
{
    const char *json = "{\"meta\":{\"producer\":\"fjord-push\"},\"data\":{\"type\":\"sample\"}}";
    fj_buf z;
    fj_buf_init(&z, 1 << 20);
    cr_assert_eq(fj_zstd_compress(json, strlen(json), &z), FJ_OK);
    char back[256];
    size_t n = ZSTD_decompress(back, sizeof back, z.data, z.len);
    cr_assert(!ZSTD_isError(n));
    cr_assert_eq(n, strlen(json));
    cr_assert(!memcmp(back, json, n));
    fj_buf_free(&z);
}

Test(send, keepalive_reuse)
{
    cr_assert_eq(fj_keepalive_reuse_s(NULL), FJ_REUSE_DEFAULT_S);
    cr_assert_eq(fj_keepalive_reuse_s(""), FJ_REUSE_DEFAULT_S);
    cr_assert_eq(fj_keepalive_reuse_s("max=100"), FJ_REUSE_DEFAULT_S);
    cr_assert_eq(fj_keepalive_reuse_s("timeout=60"), 55); /* fjord's default keepalive-timeout */
    cr_assert_eq(fj_keepalive_reuse_s("timeout=5, max=1000"), 2); /* Apache's default */
    cr_assert_eq(fj_keepalive_reuse_s("timeout=11"), 6);
    cr_assert_eq(fj_keepalive_reuse_s("timeout=10"), 5);
    cr_assert_eq(fj_keepalive_reuse_s("timeout=1"), 1);
    cr_assert_eq(fj_keepalive_reuse_s("timeout=0"), FJ_REUSE_DEFAULT_S);
    cr_assert_eq(fj_keepalive_reuse_s("timeout=-3"), FJ_REUSE_DEFAULT_S);
    /* always below what was announced, so the client gives up first */
    for (long n = 1; n < 400; n++) {
        char h[32];
        snprintf(h, sizeof h, "timeout=%ld", n);
        long r = fj_keepalive_reuse_s(h);
        cr_assert(r >= 1 && (r < n || n == 1), "timeout=%ld gave %ld", n, r);
    }
}

Test(send, measurement_url)
{
    fj_push_config c;
    fj_push_config_init(&c);
    c.cluster = strdup("my cluster");
    free(c.node);
    c.node = strdup("g001");
    c.url = strdup("https://fjord.example:8443/ingest");
    fj_sender *s = fj_sender_new(&c);
    cr_assert_not_null(s);
    cr_assert_str_eq(fj_sender_url(s, FJ_ITEM_SONAR), "https://fjord.example:8443/ingest");
    cr_assert_str_eq(fj_sender_url(s, FJ_ITEM_MEASUREMENT),
                     "https://fjord.example:8443/api/v1/ingest/measurements?cluster=my%20cluster&node=g001");
    fj_sender_free(s);
    fj_push_config_free(&c);
}

Test(daemon, clock_alignment)
{
    cr_assert_eq(fj_next_aligned(100, 30), 120);
    cr_assert_eq(fj_next_aligned(120, 30), 150);
    cr_assert_eq(fj_next_aligned(1700000017, 86400), 1700006400);
}

Test(daemon, backoff)
{
    cr_assert_eq(fj_backoff(1, 0, 0), 1);
    cr_assert_eq(fj_backoff(2, 0, 0), 2);
    cr_assert_eq(fj_backoff(4, 0, 0), 8);
    cr_assert_eq(fj_backoff(9, 0, 0), 256);
    cr_assert_eq(fj_backoff(12, 0, 0), 300);
    cr_assert_eq(fj_backoff(1, 120, 0), 120); /* never sooner than Retry-After */
    cr_assert_eq(fj_backoff(12, 0, 0.999), 374);
}
