/* auth.h — per-cluster credentials: generation, hashing, header parsing and checking.
 *
 * A credential is a name and a secret. Upload credentials are named after their cluster; a
 * read-only credential may read every cluster and write none. Only a salted SHA-256 of the
 * secret is stored. The secret printed by `fjord token add` works as the Basic-auth password
 * (user = cluster), as a Bearer token, and as InfluxDB's `Token` scheme. */
#ifndef FJ_AUTH_H
#define FJ_AUTH_H

#include "fj_status.h"

#include <stdbool.h>

typedef enum { FJ_CRED_NONE, FJ_CRED_BASIC, FJ_CRED_BEARER } fj_cred_kind;

typedef struct fj_credential {
    fj_cred_kind kind;
    char user[256];   /* Basic only */
    char secret[2048]; /* room for a JWT */
} fj_credential;

/* Who a checked credential belongs to. */
typedef struct fj_principal {
    char name[256];   /* the cluster for upload credentials */
    bool read_only;
    bool anonymous;   /* dev mode: no credential was given */
    bool any_cluster; /* a JWT without a cluster claim: may write and read every cluster */
} fj_principal;

/* Parses an Authorization header value (NULL or "" gives FJ_CRED_NONE). Schemes: Basic, Bearer,
 * Token (as Bearer). FJ_EAUTH for a malformed header, a Basic user or password holding a NUL byte
 * included. */
fj_status fj_auth_parse_header(const char *value, fj_credential *out);

/* A new random secret: 64 hex characters (256 bits), NUL-terminated. */
void fj_token_generate(char out[65]);

/* "sha256$<salt>$<digest>" for secret, written into out (128 bytes). */
void fj_token_hash(const char *secret, char out[128]);

/* Constant-time check of secret against a stored hash. */
bool fj_token_verify(const char *secret, const char *hash);

typedef struct fj_auth fj_auth;

/* An authenticator reading credentials from the database at db_url, cached for ttl_s seconds (so
 * `fjord token revoke` takes effect within ttl_s). NULL on failure. */
fj_auth *fj_auth_new(const char *db_url, int ttl_s);
void fj_auth_free(fj_auth *a);

/* Checks a credential: FJ_OK and *who on success; FJ_EAUTH when absent, unknown or wrong.
 * Thread-safe. A credential not in the cached copy of the table makes it re-read (so one added
 * with `fjord token add` works at once). Not limited: servers use fj_auth_check_from. */
fj_status fj_auth_check(fj_auth *a, const fj_credential *c, fj_principal *who, fj_err *err);

/* Limits on failed checks, per client address and per Basic user name: `fail_burst` failures at
 * once, then `fail_per_min` a minute (token buckets). fail_per_min 0 turns the limits off. */
typedef struct fj_auth_limits {
    unsigned fail_burst;
    unsigned fail_per_min;
    unsigned fail_delay_ms; /* how long a failure over a limit waits for its answer */
} fj_auth_limits;

/* Sets the limits (before serving; the default is no limit). */
void fj_auth_set_limits(fj_auth *a, const fj_auth_limits *lim);

/* What the caller must do with a failure beyond answering it. */
typedef struct fj_auth_verdict {
    unsigned retry_after_s; /* FJ_ELIMITED: the Retry-After of the 429 */
    unsigned delay_ms;      /* hold the failure's answer this long (never a success's) */
} fj_auth_verdict;

/* fj_auth_check for a request from `client` (its address as text). A correct credential is always
 * accepted, whatever the limits: an attacker guessing a cluster's name must not lock the
 * cluster's nodes out. A failure is counted against the address and the Basic user name; past
 * either limit it is FJ_ELIMITED (429) instead of FJ_EAUTH, with verdict->retry_after_s and
 * verdict->delay_ms set, which slows guessing down to the limit without refusing anyone right.
 * The table is re-read for an unknown credential only when the address had no failure in the
 * last refresh period, so repeated failures cost one hash each. A Basic check costs one hash
 * whether the user name exists or not (a dummy hash for unknown names), so timing does not tell
 * which names have credentials. */
fj_status fj_auth_check_from(fj_auth *a, const fj_credential *c, const char *client, fj_principal *who,
                             fj_err *err, fj_auth_verdict *verdict);

/* Also accept Ed25519-signed JWTs (header alg "EdDSA"), checked with this base64 public key
 * (32 bytes), as cc-metric-store does: a Bearer (or X-Auth-Token) value of three dot-separated
 * parts is verified with crypto_sign_verify_detached; `exp` and `nbf` are checked when present.
 * A token with a string claim `cluster` is that cluster's upload credential; one without may
 * write and read every cluster (cc-metric-store accepts any valid token). Call before serving.
 * FJ_EINVAL for a key that is not base64 of 32 bytes. */
fj_status fj_auth_set_jwt_key(fj_auth *a, const char *b64, fj_err *err);

/* Whether a credential named `name` exists (in the cached table). Thread-safe. */
bool fj_auth_name_known(fj_auth *a, const char *name);

/* Constant-time comparison of a presented secret with a configured one (the metrics-token):
 * both are hashed first, so neither the content nor the length leaks through timing. */
bool fj_auth_secret_equal(const char *presented, const char *configured);

/* May `who` write data of `cluster`? Read it? */
bool fj_auth_may_write(const fj_principal *who, const char *cluster);
bool fj_auth_may_read(const fj_principal *who, const char *cluster);

#endif
