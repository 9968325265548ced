/* tls.c — certificate sets loaded from PEM files, swapped atomically on reload. */
#include "server/tls.h"

#include "alloc.h"
#include "log.h"

#include <gnutls/abstract.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { MAX_CHAIN = 16 };

/* Everything one load read; immutable once published. */
typedef struct cert_set {
    gnutls_pcert_st chain[MAX_CHAIN];
    unsigned n_chain;
    gnutls_privkey_t key;
    gnutls_x509_trust_list_t client_ca; /* NULL: no client certificates asked */
    char desc[512];
    struct cert_set *older; /* replaced sets, freed with the fj_tls */
} cert_set;

struct fj_tls {
    char *cert_path, *key_path, *ca_path;
    char *ca_pem; /* the first client CA, for libmicrohttpd's "ask for a certificate" */
    _Atomic(cert_set *) current;
    pthread_mutex_t reload_mu;
};

static _Atomic(fj_tls *) active; /* the certificate callback's source (tls.h) */

static void free_set(cert_set *s)
{
    if (!s)
        return;
    for (unsigned i = 0; i < s->n_chain; i++)
        gnutls_pcert_deinit(&s->chain[i]);
    if (s->key)
        gnutls_privkey_deinit(s->key);
    if (s->client_ca)
        gnutls_x509_trust_list_deinit(s->client_ca, 1);
    fj_free(s);
}

static fj_status load_file(const char *path, const char *what, gnutls_datum_t *d, fj_err *err)
{
    int rc = gnutls_load_file(path, d);
    if (rc < 0)
        return fj_err_set(err, FJ_EIO, what, "%s %s cannot be read (%s)", what, path,
                          rc == GNUTLS_E_FILE_ERROR ? "missing or not readable by this user" : gnutls_strerror(rc));
    return FJ_OK;
}

/* Whether the key's public half is the certificate's: a certificate renewed with a new key and
 * the key file not yet replaced (or the other way round) must not be served. */
static bool key_matches(gnutls_pcert_st *cert, gnutls_privkey_t key)
{
    gnutls_pubkey_t from_key = NULL;
    gnutls_datum_t a = {0}, b = {0};
    bool same = gnutls_pubkey_init(&from_key) == 0 && gnutls_pubkey_import_privkey(from_key, key, 0, 0) == 0 &&
                gnutls_pubkey_export2(from_key, GNUTLS_X509_FMT_DER, &a) == 0 &&
                gnutls_pubkey_export2(cert->pubkey, GNUTLS_X509_FMT_DER, &b) == 0 && a.size == b.size &&
                !memcmp(a.data, b.data, a.size);
    gnutls_free(a.data);
    gnutls_free(b.data);
    if (from_key)
        gnutls_pubkey_deinit(from_key);
    return same;
}

static void describe(cert_set *s)
{
    gnutls_x509_crt_t crt;
    snprintf(s->desc, sizeof s->desc, "?");
    if (gnutls_x509_crt_init(&crt) < 0)
        return;
    if (gnutls_x509_crt_import(crt, &s->chain[0].cert, GNUTLS_X509_FMT_DER) == 0) {
        char dn[256] = "", serial_hex[80] = "", when[32] = "";
        size_t dn_len = sizeof dn;
        unsigned char serial[40];
        size_t serial_len = sizeof serial;
        if (gnutls_x509_crt_get_dn(crt, dn, &dn_len) < 0)
            snprintf(dn, sizeof dn, "?");
        if (gnutls_x509_crt_get_serial(crt, serial, &serial_len) == 0)
            for (size_t i = 0; i < serial_len && 2 * i + 2 < sizeof serial_hex; i++)
                snprintf(serial_hex + 2 * i, 3, "%02x", serial[i]);
        time_t exp = gnutls_x509_crt_get_expiration_time(crt);
        struct tm tm;
        if (exp != (time_t)-1 && gmtime_r(&exp, &tm))
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(s->desc, sizeof s->desc, "subject=\"%s\" serial=%s expires=%s chain=%u%s", dn, serial_hex, when,
                 s->n_chain, exp != (time_t)-1 && exp < time(NULL) ? " (EXPIRED)" : "");
    }
    gnutls_x509_crt_deinit(crt);
}

/* Reads the three files into a new set; NULL with *st and err filled on any problem. */
static cert_set *load_set(const fj_tls *t, fj_status *st, fj_err *err)
{
    cert_set *s = fj_calloc(1, sizeof *s);
    if (!s) {
        *st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    *st = FJ_EINVAL;
    gnutls_datum_t cert = {0}, key = {0}, ca = {0};
    int rc;
    if ((*st = load_file(t->cert_path, "tls-cert", &cert, err)) != FJ_OK ||
        (*st = load_file(t->key_path, "tls-key", &key, err)) != FJ_OK)
        goto fail;
    *st = FJ_EINVAL;
    s->n_chain = MAX_CHAIN;
    if ((rc = gnutls_pcert_list_import_x509_raw(s->chain, &s->n_chain, &cert, GNUTLS_X509_FMT_PEM, 0)) < 0 ||
        !s->n_chain) {
        s->n_chain = 0;
        fj_err_set(err, FJ_EINVAL, "tls-cert", "tls-cert %s holds no PEM certificate chain (%s)", t->cert_path,
                   rc < 0 ? gnutls_strerror(rc) : "empty");
        goto fail;
    }
    if ((rc = gnutls_privkey_init(&s->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(s->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        fj_err_set(err, FJ_EINVAL, "tls-key", "tls-key %s holds no unencrypted PEM private key (%s)", t->key_path,
                   gnutls_strerror(rc));
        goto fail;
    }
    if (!key_matches(&s->chain[0], s->key)) {
        fj_err_set(err, FJ_EINVAL, "tls-key", "tls-key %s is not the key of the certificate in %s", t->key_path,
                   t->cert_path);
        goto fail;
    }
    if (t->ca_path) {
        if ((*st = load_file(t->ca_path, "tls-client-ca", &ca, err)) != FJ_OK)
            goto fail;
        *st = FJ_EINVAL;
        if ((rc = gnutls_x509_trust_list_init(&s->client_ca, 0)) < 0 ||
            (rc = gnutls_x509_trust_list_add_trust_mem(s->client_ca, &ca, NULL, GNUTLS_X509_FMT_PEM, 0, 0)) <= 0) {
            fj_err_set(err, FJ_EINVAL, "tls-client-ca", "tls-client-ca %s holds no PEM CA certificate (%s)", t->ca_path,
                       rc < 0 ? gnutls_strerror(rc) : "none found");
            goto fail;
        }
    }
    describe(s);
    *st = FJ_OK;
    gnutls_free(cert.data);
    gnutls_free(key.data);
    gnutls_free(ca.data);
    return s;
fail:
    gnutls_free(cert.data);
    if (key.data)
        gnutls_memset(key.data, 0, key.size);
    gnutls_free(key.data);
    gnutls_free(ca.data);
    free_set(s);
    return NULL;
}

fj_status fj_tls_new(const fj_tls_files *files, fj_tls **out, fj_err *err)
{
    fj_tls *t = fj_calloc(1, sizeof *t);
    if (!t)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    pthread_mutex_init(&t->reload_mu, NULL);
    t->cert_path = fj_strdup(files->cert);
    t->key_path = fj_strdup(files->key);
    t->ca_path = files->client_ca && files->client_ca[0] ? fj_strdup(files->client_ca) : NULL;
    fj_status st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    cert_set *s = t->cert_path && t->key_path ? load_set(t, &st, err) : NULL;
    if (s && t->ca_path) {
        gnutls_datum_t ca = {0};
        if ((st = load_file(t->ca_path, "tls-client-ca", &ca, err)) == FJ_OK) {
            t->ca_pem = fj_malloc(ca.size + 1);
            if (t->ca_pem) {
                memcpy(t->ca_pem, ca.data, ca.size);
                t->ca_pem[ca.size] = '\0';
            }
            gnutls_free(ca.data);
        }
        if (!t->ca_pem) {
            if (st == FJ_OK)
                st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            free_set(s);
            s = NULL;
        }
    }
    if (!s) {
        fj_tls_free(t);
        return st != FJ_OK ? st : FJ_ENOMEM;
    }
    atomic_store(&t->current, s);
    atomic_store(&active, t);
    *out = t;
    return FJ_OK;
}

void fj_tls_free(fj_tls *t)
{
    if (!t)
        return;
    fj_tls *self = t;
    atomic_compare_exchange_strong(&active, &self, NULL);
    for (cert_set *s = atomic_load(&t->current), *next; s; s = next) {
        next = s->older;
        free_set(s);
    }
    pthread_mutex_destroy(&t->reload_mu);
    fj_free(t->cert_path);
    fj_free(t->key_path);
    fj_free(t->ca_path);
    fj_free(t->ca_pem);
    fj_free(t);
}

fj_status fj_tls_reload(fj_tls *t, fj_err *err)
{
    pthread_mutex_lock(&t->reload_mu);
    fj_status st;
    cert_set *s = load_set(t, &st, err);
    if (s) {
        s->older = atomic_load(&t->current);
        atomic_store(&t->current, s);
    }
    pthread_mutex_unlock(&t->reload_mu);
    return st;
}

void fj_tls_describe(fj_tls *t, char *out, size_t cap)
{
    snprintf(out, cap, "%s", atomic_load(&t->current)->desc);
}

int fj_tls_retrieve_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int n_req_ca,
                         const gnutls_pk_algorithm_t *pk_algos, int n_pk_algos, gnutls_pcert_st **pcert,
                         unsigned int *pcert_length, gnutls_privkey_t *key)
{
    (void)session, (void)req_ca_dn, (void)n_req_ca, (void)pk_algos, (void)n_pk_algos;
    fj_tls *t = atomic_load(&active);
    cert_set *s = t ? atomic_load(&t->current) : NULL;
    if (!s)
        return -1;
    *pcert = s->chain;
    *pcert_length = s->n_chain;
    *key = s->key;
    return 0;
}

bool fj_tls_wants_client_cert(const fj_tls *t)
{
    return t && t->ca_path;
}

const char *fj_tls_client_ca_pem(const fj_tls *t)
{
    return t ? t->ca_pem : NULL;
}

fj_status fj_tls_verify_client(fj_tls *t, gnutls_session_t session, fj_err *err)
{
    cert_set *s = atomic_load(&t->current);
    unsigned n = 0;
    const gnutls_datum_t *der = session ? gnutls_certificate_get_peers(session, &n) : NULL;
    if (!der || !n)
        return fj_err_set(err, FJ_EFORBIDDEN, "tls", "%s",
                          "this server requires a client certificate signed by the site's CA; none was presented");
    if (n > MAX_CHAIN)
        n = MAX_CHAIN;
    gnutls_x509_crt_t crts[MAX_CHAIN];
    unsigned imported = 0;
    for (; imported < n; imported++)
        if (gnutls_x509_crt_init(&crts[imported]) < 0 ||
            gnutls_x509_crt_import(crts[imported], &der[imported], GNUTLS_X509_FMT_DER) < 0) {
            imported += 1; /* the one that failed import is initialised; free it too */
            for (unsigned i = 0; i < imported; i++)
                gnutls_x509_crt_deinit(crts[i]);
            return fj_err_set(err, FJ_EFORBIDDEN, "tls", "%s", "the client certificate cannot be parsed");
        }
    gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
                                     .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT};
    unsigned status = 0;
    int rc = gnutls_x509_trust_list_verify_crt2(s->client_ca, crts, n, &purpose, 1, 0, &status, NULL);
    for (unsigned i = 0; i < n; i++)
        gnutls_x509_crt_deinit(crts[i]);
    if (rc < 0 || status) {
        gnutls_datum_t why = {0};
        if (rc >= 0)
            gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
        fj_err_set(err, FJ_EFORBIDDEN, "tls", "the client certificate is not accepted: %s",
                   why.data ? (const char *)why.data : gnutls_strerror(rc));
        gnutls_free(why.data);
        return FJ_EFORBIDDEN;
    }
    return FJ_OK;
}
