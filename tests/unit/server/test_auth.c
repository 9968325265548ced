/* Tests of server/auth.c: header parsing, secrets and their hashes. */
#include "server/auth.h"

#include <criterion/criterion.h>
#include <sodium.h>
#include <string.h>

Test(auth, parses_basic_bearer_and_token)
{
    fj_credential c;
    /* "test.local:secret", as in Sonar 0.19's captured requests */
    cr_assert_eq(fj_auth_parse_header("Basic dGVzdC5sb2NhbDpzZWNyZXQ=", &c), FJ_OK);
    cr_assert_eq(c.kind, FJ_CRED_BASIC);
    cr_assert_str_eq(c.user, "test.local");
    cr_assert_str_eq(c.secret, "secret");
    cr_assert_eq(fj_auth_parse_header("Bearer abc123", &c), FJ_OK);
    cr_assert_eq(c.kind, FJ_CRED_BEARER);
    cr_assert_str_eq(c.secret, "abc123");
    cr_assert_eq(fj_auth_parse_header("Token abc123", &c), FJ_OK);
    cr_assert_eq(c.kind, FJ_CRED_BEARER);
    cr_assert_eq(fj_auth_parse_header(NULL, &c), FJ_OK);
    cr_assert_eq(c.kind, FJ_CRED_NONE);
}

Test(auth, rejects_malformed_headers)
{
    fj_credential c;
    cr_assert_eq(fj_auth_parse_header("Basic !!!notbase64", &c), FJ_EAUTH);
    cr_assert_eq(fj_auth_parse_header("Basic bm9jb2xvbg==", &c), FJ_EAUTH); /* "nocolon" */
    cr_assert_eq(fj_auth_parse_header("Digest xyz", &c), FJ_EAUTH);
    cr_assert_eq(fj_auth_parse_header("Bearer ", &c), FJ_EAUTH);
}

Test(auth, hash_and_verify)
{
    cr_assert_geq(sodium_init(), 0);
    char secret[65], hash[128], hash2[128];
    fj_token_generate(secret);
    cr_assert_eq(strlen(secret), 64);
    fj_token_hash(secret, hash);
    fj_token_hash(secret, hash2);
    cr_assert_str_neq(hash, hash2, "salted: two hashes of one secret differ");
    cr_assert(fj_token_verify(secret, hash));
    cr_assert(fj_token_verify(secret, hash2));
    secret[0] = secret[0] == 'a' ? 'b' : 'a';
    cr_assert_not(fj_token_verify(secret, hash));
    cr_assert_not(fj_token_verify("x", "sha256$short"));
}

Test(auth, permissions)
{
    fj_principal up = {.name = "c1"}, ro = {.name = "analysts", .read_only = true}, anon = {.anonymous = true};
    cr_assert(fj_auth_may_write(&up, "c1"));
    cr_assert_not(fj_auth_may_write(&up, "c2"));
    cr_assert(fj_auth_may_read(&up, "c1"));
    cr_assert_not(fj_auth_may_read(&up, "c2"));
    cr_assert_not(fj_auth_may_write(&ro, "c1"));
    cr_assert(fj_auth_may_read(&ro, "c2"));
    cr_assert(fj_auth_may_write(&anon, "any"));
}
