/* auth.c — credential checks against a periodically refreshed copy of the token table, and the
 * limits on failed checks (token buckets per client address and per user name). */
#include "server/auth.h"

#include "alloc.h"
#include "arena.h"
#include "json.h"
#include "log.h"
#include "ratelog.h"
#include "storage/core/store.h"
#include "storage/core/tokens.h"
#include "timefmt.h"

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

fj_status fj_auth_parse_header(const char *value, fj_credential *out)
{
    memset(out, 0, sizeof *out);
    if (!value || !*value)
        return FJ_OK;
    if (!strncasecmp(value, "Basic ", 6)) {
        const char *b64 = value + 6;
        while (*b64 == ' ')
            b64++;
        unsigned char raw[600];
        size_t n = 0;
        if (sodium_base642bin(raw, sizeof raw - 1, b64, strlen(b64), NULL, &n, NULL,
                              sodium_base64_VARIANT_ORIGINAL) != 0)
            return FJ_EAUTH;
        raw[n] = '\0';
        /* A NUL would cut the user or the password short where they are compared as C strings:
         * "fritz\0junk" would pass as "fritz". */
        if (memchr(raw, '\0', n))
            return FJ_EAUTH;
        char *colon = memchr(raw, ':', n);
        if (!colon)
            return FJ_EAUTH;
        size_t ul = (size_t)(colon - (char *)raw), pl = n - ul - 1;
        if (ul >= sizeof out->user || pl >= sizeof out->secret)
            return FJ_EAUTH;
        memcpy(out->user, raw, ul);
        memcpy(out->secret, colon + 1, pl);
        out->kind = FJ_CRED_BASIC;
        return FJ_OK;
    }
    const char *tok = NULL;
    if (!strncasecmp(value, "Bearer ", 7))
        tok = value + 7;
    else if (!strncasecmp(value, "Token ", 6)) /* InfluxDB 2.x */
        tok = value + 6;
    if (!tok)
        return FJ_EAUTH;
    while (*tok == ' ')
        tok++;
    if (!*tok || strlen(tok) >= sizeof out->secret)
        return FJ_EAUTH;
    snprintf(out->secret, sizeof out->secret, "%s", tok);
    out->kind = FJ_CRED_BEARER;
    return FJ_OK;
}

static void to_hex(char *out, const unsigned char *in, size_t n)
{
    sodium_bin2hex(out, n * 2 + 1, in, n);
}

void fj_token_generate(char out[65])
{
    unsigned char raw[32];
    randombytes_buf(raw, sizeof raw);
    to_hex(out, raw, sizeof raw);
}

static void digest(const unsigned char salt[16], const char *secret, unsigned char out[32])
{
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, salt, 16);
    crypto_hash_sha256_update(&st, (const unsigned char *)secret, strlen(secret));
    crypto_hash_sha256_final(&st, out);
}

void fj_token_hash(const char *secret, char out[128])
{
    unsigned char salt[16], d[32];
    char salt_hex[33], d_hex[65];
    randombytes_buf(salt, sizeof salt);
    digest(salt, secret, d);
    to_hex(salt_hex, salt, sizeof salt);
    to_hex(d_hex, d, sizeof d);
    snprintf(out, 128, "sha256$%s$%s", salt_hex, d_hex);
}

bool fj_token_verify(const char *secret, const char *hash)
{
    unsigned char salt[16], want[32], got[32];
    size_t n;
    if (strncmp(hash, "sha256$", 7) != 0 || strlen(hash) != 7 + 32 + 1 + 64 || hash[7 + 32] != '$')
        return false;
    if (sodium_hex2bin(salt, sizeof salt, hash + 7, 32, NULL, &n, NULL) != 0 || n != 16)
        return false;
    if (sodium_hex2bin(want, sizeof want, hash + 40, 64, NULL, &n, NULL) != 0 || n != 32)
        return false;
    digest(salt, secret, got);
    return sodium_memcmp(want, got, sizeof got) == 0;
}

/* A failure budget: `tokens` refill at fail_per_min a minute up to fail_burst. The tables are
 * fixed: when full, the least recently used entry is forgotten, so memory stays bounded however
 * many addresses or names an attacker uses (forgetting one only gives it a fresh budget). */
enum { LIMIT_SLOTS = 4096, LIMIT_PROBE = 16, LIMIT_KEY = 64 };

typedef struct bucket {
    char key[LIMIT_KEY];
    double tokens;
    int64_t last_ns;      /* last refill */
    int64_t last_fail_ns; /* last failure */
} bucket;

typedef struct limiter {
    bucket slots[LIMIT_SLOTS];
} limiter;

struct fj_auth {
    bool jwt;
    unsigned char jwt_pk[crypto_sign_PUBLICKEYBYTES];
    char *db_url;
    int ttl_s;
    pthread_mutex_t mu;
    fj_token_rec *tokens;
    size_t n_tokens;
    bool loaded;     /* tokens holds a copy of the table (possibly empty) */
    bool refreshing; /* a thread is reading the table now */
    int64_t loaded_ns; /* monotonic time of the last load (attempt) */
    pthread_cond_t refreshed; /* signalled when a refresh ends */
    char dummy_hash[128];     /* checked for unknown Basic names, so they cost what known ones do */
    fj_auth_limits lim;
    pthread_mutex_t lim_mu;   /* the two limiters */
    limiter *by_addr, *by_name;
};

static void refresh(fj_auth *a, int64_t fresh_since);

fj_auth *fj_auth_new(const char *db_url, int ttl_s)
{
    if (sodium_init() < 0)
        return NULL;
    fj_auth *a = fj_calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->db_url = fj_strdup(db_url);
    a->ttl_s = ttl_s;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->refreshed, NULL);
    pthread_mutex_init(&a->lim_mu, NULL);
    char secret[65];
    fj_token_generate(secret);
    fj_token_hash(secret, a->dummy_hash);
    /* Load once now, so the first requests after a start are checked against the table. */
    pthread_mutex_lock(&a->mu);
    refresh(a, 0);
    pthread_mutex_unlock(&a->mu);
    return a;
}

void fj_auth_free(fj_auth *a)
{
    if (!a)
        return;
    fj_free(a->tokens);
    fj_free(a->db_url);
    fj_free(a->by_addr);
    fj_free(a->by_name);
    pthread_mutex_destroy(&a->lim_mu);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->refreshed);
    fj_free(a);
}

static fj_ratelog refresh_log = FJ_RATELOG_INIT("cannot refresh credentials", 10);

/* Reads the credential table into a new list; FJ_OK or the failure (logged). */
static fj_status load_tokens(const char *db_url, fj_token_rec **list, size_t *n)
{
    fj_store_opts opts = {.mode = FJ_STORE_READ};
    fj_store *s = NULL;
    fj_err err = {0};
    fj_status st = fj_store_open(db_url, &opts, &s, &err);
    if (st == FJ_OK)
        st = fj_tokens_list(s, list, n, &err);
    if (st != FJ_OK) /* once per 10 s: during an outage every unknown credential tries again */
        fj_log_limited(&refresh_log, FJ_LOG_WARN, "%s", err.message);
    fj_store_close(s);
    return st;
}

/* Called with a->mu held; returns with it held. The database is read without the lock, by one
 * thread at a time, so a slow or unreachable database delays only the refreshing request: the
 * others keep checking against the previous copy. A failed refresh keeps that copy and is retried
 * later: a database hiccup must not lock every producer out.
 * fresh_since: 0 for the periodic refresh (every ttl_s); otherwise the caller's credential was not
 * in the copy, and the copy must come from a read that began after fresh_since (the request's
 * arrival), so a credential added with `fjord token add` before the request works at once.
 * Such reads are made one at a time: concurrent callers wait for the read in progress. */
static void refresh(fj_auth *a, int64_t fresh_since)
{
    for (;;) {
        if (fresh_since && a->refreshing) {
            pthread_cond_wait(&a->refreshed, &a->mu);
            continue;
        }
        if (a->loaded && fresh_since && a->loaded_ns >= fresh_since)
            return;
        if (a->loaded && !fresh_since &&
            (a->refreshing || fj_mono_ns() - a->loaded_ns < (int64_t)a->ttl_s * 1000000000LL))
            return;
        break;
    }
    a->refreshing = true;
    a->loaded_ns = fj_mono_ns(); /* the read begins now; also the back-off after a failure */
    pthread_mutex_unlock(&a->mu);
    fj_token_rec *list = NULL;
    size_t n = 0;
    fj_status st = load_tokens(a->db_url, &list, &n);
    pthread_mutex_lock(&a->mu);
    if (st == FJ_OK) {
        fj_free(a->tokens);
        a->tokens = list;
        a->n_tokens = n;
        a->loaded = true;
    }
    a->refreshing = false;
    pthread_cond_broadcast(&a->refreshed);
}

/* Looks c up in the current copy; called with a->mu held. Every record a Basic user name could
 * match is verified (one hash for the usual one record per name) and a name with no record is
 * verified against a dummy hash, so a wrong secret for a known name and an unknown name take the
 * same time; a Bearer secret is verified against every record. */
static bool lookup(fj_auth *a, const fj_credential *c, fj_principal *who)
{
    bool found = false, name_known = false;
    for (size_t i = 0; i < a->n_tokens; i++) {
        const fj_token_rec *t = &a->tokens[i];
        if (c->kind == FJ_CRED_BASIC && strcmp(t->cluster, c->user) != 0)
            continue;
        name_known = true;
        if (fj_token_verify(c->secret, t->hash) && !found) {
            snprintf(who->name, sizeof who->name, "%s", t->cluster);
            who->read_only = t->read_only;
            found = true;
        }
    }
    if (c->kind == FJ_CRED_BASIC && !name_known)
        (void)fj_token_verify(c->secret, a->dummy_hash);
    return found;
}

fj_status fj_auth_set_jwt_key(fj_auth *a, const char *b64, fj_err *err)
{
    size_t n = 0;
    unsigned char pk[crypto_sign_PUBLICKEYBYTES + 1];
    if (sodium_base642bin(pk, sizeof pk, b64, strlen(b64), NULL, &n, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 ||
        n != crypto_sign_PUBLICKEYBYTES)
        return fj_err_set(err, FJ_EINVAL, "jwt-public-key", "jwt-public-key must be the base64 of a 32-byte Ed25519 key");
    memcpy(a->jwt_pk, pk, sizeof a->jwt_pk);
    a->jwt = true;
    return FJ_OK;
}

/* base64url (padding optional) into out; the decoded length, or -1. */
static long b64url(const char *p, size_t n, unsigned char *out, size_t cap)
{
    size_t got = 0;
    while (n && p[n - 1] == '=')
        n--;
    if (sodium_base642bin(out, cap, p, n, NULL, &got, NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0)
        return -1;
    return (long)got;
}

static fj_status jwt_check(fj_auth *a, const char *tok, fj_principal *who, fj_err *err)
{
    const char *d1 = strchr(tok, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    if (!d2 || strchr(d2 + 1, '.'))
        return fj_err_set(err, FJ_EAUTH, NULL, "malformed JWT");
    unsigned char hdr[512], claims[2048], sig[crypto_sign_BYTES + 1];
    long hn = b64url(tok, (size_t)(d1 - tok), hdr, sizeof hdr - 1);
    long cn = b64url(d1 + 1, (size_t)(d2 - d1 - 1), claims, sizeof claims - 1);
    long sn = b64url(d2 + 1, strlen(d2 + 1), sig, sizeof sig);
    if (hn < 0 || cn < 0 || sn != crypto_sign_BYTES)
        return fj_err_set(err, FJ_EAUTH, NULL, "malformed JWT");
    if (crypto_sign_verify_detached(sig, (const unsigned char *)tok, (unsigned long long)(d2 - tok), a->jwt_pk) != 0)
        return fj_err_set(err, FJ_EAUTH, NULL, "JWT signature does not verify");
    fj_arena *ar = fj_arena_create();
    fj_json *h = NULL, *c = NULL;
    fj_status st = ar ? FJ_OK : fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    if (st == FJ_OK && (fj_json_parse(ar, (const char *)hdr, (size_t)hn, NULL, &h, NULL) != FJ_OK ||
                        fj_json_parse(ar, (const char *)claims, (size_t)cn, NULL, &c, NULL) != FJ_OK ||
                        c->type != FJ_JSON_OBJECT))
        st = fj_err_set(err, FJ_EAUTH, NULL, "malformed JWT");
    const fj_json *alg = st == FJ_OK ? fj_json_get(h, "alg") : NULL;
    if (st == FJ_OK && (!alg || alg->type != FJ_JSON_STRING || strcmp(alg->v.s, "EdDSA") != 0))
        st = fj_err_set(err, FJ_EAUTH, NULL, "JWT alg must be EdDSA");
    fj_time now = fj_time_now();
    const fj_json *exp = st == FJ_OK ? fj_json_get(c, "exp") : NULL, *nbf = st == FJ_OK ? fj_json_get(c, "nbf") : NULL;
    if (st == FJ_OK && exp && !((exp->type == FJ_JSON_UINT && (fj_time)exp->v.u > now) ||
                                (exp->type == FJ_JSON_REAL && exp->v.d > (double)now)))
        st = fj_err_set(err, FJ_EAUTH, NULL, "JWT expired");
    if (st == FJ_OK && nbf && nbf->type == FJ_JSON_UINT && (fj_time)nbf->v.u > now)
        st = fj_err_set(err, FJ_EAUTH, NULL, "JWT not valid yet");
    if (st == FJ_OK) {
        const fj_json *cl = fj_json_get(c, "cluster"), *sub = fj_json_get(c, "sub");
        if (cl && cl->type == FJ_JSON_STRING && cl->len && cl->len < sizeof who->name) {
            snprintf(who->name, sizeof who->name, "%s", cl->v.s);
        } else {
            snprintf(who->name, sizeof who->name, "%s", sub && sub->type == FJ_JSON_STRING ? sub->v.s : "jwt");
            who->any_cluster = true;
        }
    }
    fj_arena_destroy(ar);
    return st;
}

void fj_auth_set_limits(fj_auth *a, const fj_auth_limits *lim)
{
    pthread_mutex_lock(&a->lim_mu);
    a->lim = *lim;
    if (lim->fail_per_min && !a->by_addr) {
        a->by_addr = fj_calloc(1, sizeof *a->by_addr);
        a->by_name = fj_calloc(1, sizeof *a->by_name);
        if (!a->by_addr || !a->by_name) { /* no limits rather than no service */
            fj_free(a->by_addr);
            fj_free(a->by_name);
            a->by_addr = a->by_name = NULL;
            fj_warn("out of memory: authentication failures are not limited");
        }
    }
    pthread_mutex_unlock(&a->lim_mu);
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The bucket for key (claimed with a full budget if new); called with a->lim_mu held. */
static bucket *bucket_of(fj_auth *a, limiter *l, const char *key, int64_t now)
{
    char k[LIMIT_KEY];
    uint64_t h = fnv1a(key);
    if (strlen(key) < sizeof k)
        snprintf(k, sizeof k, "%s", key);
    else /* a long user name: its hash stands for it */
        snprintf(k, sizeof k, "#%016llx", (unsigned long long)h);
    bucket *victim = NULL;
    for (size_t i = 0; i < LIMIT_PROBE; i++) {
        bucket *b = &l->slots[(h + i) % LIMIT_SLOTS];
        if (b->key[0] && !strcmp(b->key, k))
            return b;
        if (!victim || (victim->key[0] && (!b->key[0] || b->last_ns < victim->last_ns)))
            victim = b;
    }
    snprintf(victim->key, sizeof victim->key, "%s", k);
    victim->tokens = a->lim.fail_burst;
    victim->last_ns = now;
    victim->last_fail_ns = 0;
    return victim;
}

static void refill(const fj_auth *a, bucket *b, int64_t now)
{
    double per_ns = (double)a->lim.fail_per_min / 60e9;
    b->tokens += (double)(now - b->last_ns) * per_ns;
    if (b->tokens > a->lim.fail_burst)
        b->tokens = a->lim.fail_burst;
    b->last_ns = now;
}

/* Counts one failure; the seconds until the bucket allows another, 0 when it still had one. */
static unsigned spend(const fj_auth *a, bucket *b, int64_t now)
{
    refill(a, b, now);
    b->last_fail_ns = now;
    if (b->tokens >= 1.0) {
        b->tokens -= 1.0;
        return 0;
    }
    double wait_s = (1.0 - b->tokens) * 60.0 / (double)a->lim.fail_per_min;
    return (unsigned)wait_s + 1;
}

/* May a miss from client re-read the table? Only when that address had no failure within the
 * refresh period: a fresh credential still works at once for a well-behaved client, and a
 * guesser's failures are checked against the copy (refreshed every ttl_s anyway). */
static bool may_reread(fj_auth *a, const char *client, int64_t now)
{
    if (!client)
        return true;
    pthread_mutex_lock(&a->lim_mu);
    bool ok = true;
    if (a->by_addr) {
        bucket *b = bucket_of(a, a->by_addr, client, now);
        ok = !b->last_fail_ns || now - b->last_fail_ns >= (int64_t)a->ttl_s * 1000000000LL;
    }
    pthread_mutex_unlock(&a->lim_mu);
    return ok;
}

/* Counts a failure against client and name; fills v and returns FJ_ELIMITED past a limit. */
static fj_status count_failure(fj_auth *a, const char *client, const char *name, fj_auth_verdict *v, fj_err *err)
{
    if (!client)
        return FJ_EAUTH;
    int64_t now = fj_mono_ns();
    unsigned wait = 0;
    pthread_mutex_lock(&a->lim_mu);
    if (a->by_addr) {
        wait = spend(a, bucket_of(a, a->by_addr, client, now), now);
        if (name && *name) {
            unsigned w = spend(a, bucket_of(a, a->by_name, name, now), now);
            wait = w > wait ? w : wait;
        }
    }
    unsigned delay = a->lim.fail_delay_ms;
    pthread_mutex_unlock(&a->lim_mu);
    if (!wait)
        return FJ_EAUTH;
    v->retry_after_s = wait;
    v->delay_ms = delay;
    return fj_err_set(err, FJ_ELIMITED, NULL, "too many failed authentications from this address or for this "
                      "name; retry in %u s", wait);
}

fj_status fj_auth_check_from(fj_auth *a, const fj_credential *c, const char *client, fj_principal *who,
                             fj_err *err, fj_auth_verdict *verdict)
{
    fj_auth_verdict none = {0};
    if (!verdict)
        verdict = &none;
    *verdict = none;
    memset(who, 0, sizeof *who);
    if (c->kind == FJ_CRED_NONE)
        return fj_err_set(err, FJ_EAUTH, NULL, "credentials required (Basic cluster:secret or Bearer token)");
    if (a->jwt && c->kind == FJ_CRED_BEARER && strchr(c->secret, '.')) {
        fj_status st = jwt_check(a, c->secret, who, err);
        if (st == FJ_OK && err)
            memset(err, 0, sizeof *err);
        else if (st == FJ_EAUTH && count_failure(a, client, NULL, verdict, err) == FJ_ELIMITED)
            return FJ_ELIMITED;
        return st;
    }
    int64_t arrived = fj_mono_ns();
    pthread_mutex_lock(&a->mu);
    refresh(a, 0);
    bool found = lookup(a, c, who);
    pthread_mutex_unlock(&a->mu);
    if (!found && may_reread(a, client, arrived)) {
        pthread_mutex_lock(&a->mu);
        refresh(a, arrived);
        found = lookup(a, c, who);
        pthread_mutex_unlock(&a->mu);
    }
    if (!found) {
        memset(who, 0, sizeof *who);
        if (count_failure(a, client, c->kind == FJ_CRED_BASIC ? c->user : NULL, verdict, err) == FJ_ELIMITED)
            return FJ_ELIMITED;
        return fj_err_set(err, FJ_EAUTH, NULL, "unknown credential or wrong secret");
    }
    if (err)
        memset(err, 0, sizeof *err);
    return FJ_OK;
}

fj_status fj_auth_check(fj_auth *a, const fj_credential *c, fj_principal *who, fj_err *err)
{
    return fj_auth_check_from(a, c, NULL, who, err, NULL);
}

bool fj_auth_may_write(const fj_principal *who, const char *cluster)
{
    if (who->anonymous || (who->any_cluster && !who->read_only))
        return true;
    return !who->read_only && cluster && strcmp(who->name, cluster) == 0;
}

bool fj_auth_may_read(const fj_principal *who, const char *cluster)
{
    if (who->anonymous || who->read_only || who->any_cluster)
        return true;
    return cluster && strcmp(who->name, cluster) == 0;
}

bool fj_auth_name_known(fj_auth *a, const char *name)
{
    bool known = false;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n_tokens && !known; i++)
        known = strcmp(a->tokens[i].cluster, name) == 0;
    pthread_mutex_unlock(&a->mu);
    return known;
}

bool fj_auth_secret_equal(const char *presented, const char *configured)
{
    unsigned char h1[crypto_generichash_BYTES], h2[crypto_generichash_BYTES];
    crypto_generichash(h1, sizeof h1, (const unsigned char *)presented, strlen(presented), NULL, 0);
    crypto_generichash(h2, sizeof h2, (const unsigned char *)configured, strlen(configured), NULL, 0);
    return sodium_memcmp(h1, h2, sizeof h1) == 0;
}
