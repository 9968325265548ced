/* send.c — libcurl POSTs. The measurements URL carries cluster and node as query parameters,
 * Sonar envelopes carry them in the data. */
#include "send.h"

#include "alloc.h"
#include "envelope.h"
#include "log.h"

#include <curl/curl.h>
#include <zstd.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FJ_PUSH_VERSION
#define FJ_PUSH_VERSION "0.0.0"
#endif

struct fj_sender {
    const fj_push_config *cfg;
    CURL *curl;
    char *sonar_url, *meas_url;
    long reuse_s; /* the kept connection is reused only when idle at most this long */
};

static int curl_ready;

fj_status fj_zstd_compress(const void *in, size_t n, fj_buf *out)
{
    size_t bound = ZSTD_compressBound(n);
    char *tmp = fj_malloc(bound);
    if (!tmp)
        return FJ_ENOMEM;
    size_t z = ZSTD_compress(tmp, bound, in, n, 3);
    fj_status st = ZSTD_isError(z) ? FJ_EINTERNAL : fj_buf_append(out, tmp, z);
    fj_free(tmp);
    return st;
}

fj_status fj_auth_header(fj_auth_type type, const char *secret, char *out, size_t n)
{
    out[0] = '\0';
    if (type == FJ_AUTH_NONE || !secret || !*secret)
        return FJ_OK;
    if (type == FJ_AUTH_AUTO)
        type = strchr(secret, ':') ? FJ_AUTH_BASIC : FJ_AUTH_BEARER;
    if (type == FJ_AUTH_BEARER) {
        int r = snprintf(out, n, "Authorization: Bearer %s", secret);
        return r > 0 && (size_t)r < n ? FJ_OK : FJ_ETOOBIG;
    }
    fj_buf b;
    fj_buf_init(&b, n);
    fj_status st = fj_buf_puts(&b, "Authorization: Basic ");
    if (st == FJ_OK)
        st = fj_buf_base64(&b, secret, strlen(secret));
    if (st == FJ_OK && b.len < n)
        memcpy(out, b.data, b.len + 1);
    else if (st == FJ_OK)
        st = FJ_ETOOBIG;
    fj_buf_free(&b);
    return st;
}

/* The secret: the file's first line, trailing whitespace removed. */
static fj_status read_secret(const char *path, char *out, size_t n, fj_err *err)
{
    out[0] = '\0';
    if (!path || !*path)
        return FJ_OK;
    FILE *f = fopen(path, "re");
    if (!f)
        return fj_err_set(err, FJ_EAUTH, path, "cannot read auth file: %s", strerror(errno));
    if (!fgets(out, (int)n, f))
        out[0] = '\0';
    fclose(f);
    size_t len = strlen(out);
    while (len && (out[len - 1] == '\n' || out[len - 1] == '\r' || out[len - 1] == ' ' || out[len - 1] == '\t'))
        out[--len] = '\0';
    return FJ_OK;
}

/* scheme://host[:port] of url, then path. */
static char *derive_url(const char *url, const char *path)
{
    const char *p = strstr(url, "://");
    p = p ? strchr(p + 3, '/') : NULL;
    size_t origin = p ? (size_t)(p - url) : strlen(url);
    size_t n = origin + strlen(path) + 1;
    char *out = fj_malloc(n);
    if (out)
        snprintf(out, n, "%.*s%s", (int)origin, url, path);
    return out;
}

fj_sender *fj_sender_new(const fj_push_config *cfg)
{
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return NULL;
        curl_ready = 1;
    }
    fj_sender *s = fj_calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cfg = cfg;
    s->reuse_s = fj_keepalive_reuse_s(NULL);
    s->curl = curl_easy_init();
    s->sonar_url = fj_strdup(cfg->url ? cfg->url : "");
    char *base = cfg->measurements_url && *cfg->measurements_url
                     ? fj_strdup(cfg->measurements_url)
                     : derive_url(cfg->url ? cfg->url : "", "/api/v1/ingest/measurements");
    if (s->curl && base) {
        char *c = curl_easy_escape(s->curl, cfg->cluster ? cfg->cluster : "", 0);
        char *nd = curl_easy_escape(s->curl, cfg->node ? cfg->node : "", 0);
        size_t n = strlen(base) + (c ? strlen(c) : 0) + (nd ? strlen(nd) : 0) + 32;
        s->meas_url = c && nd ? fj_malloc(n) : NULL;
        if (s->meas_url)
            snprintf(s->meas_url, n, "%s%scluster=%s&node=%s", base, strchr(base, '?') ? "&" : "?", c, nd);
        curl_free(c);
        curl_free(nd);
    }
    fj_free(base);
    if (!s->curl || !s->sonar_url || !s->meas_url) {
        fj_sender_free(s);
        return NULL;
    }
    return s;
}

void fj_sender_free(fj_sender *s)
{
    if (!s)
        return;
    if (s->curl)
        curl_easy_cleanup(s->curl);
    fj_free(s->sonar_url);
    fj_free(s->meas_url);
    fj_free(s);
}

const char *fj_sender_url(const fj_sender *s, fj_item_kind kind)
{
    return kind == FJ_ITEM_MEASUREMENT ? s->meas_url : s->sonar_url;
}

long fj_keepalive_reuse_s(const char *keep_alive)
{
    const char *t = keep_alive ? strstr(keep_alive, "timeout=") : NULL;
    long n = t ? strtol(t + 8, NULL, 10) : 0;
    if (n <= 0)
        return FJ_REUSE_DEFAULT_S;
    return n > 10 ? n - 5 : n / 2 > 0 ? n / 2 : 1;
}

/* What the server announced about its idle limit in the answer just read. */
static void note_keep_alive(fj_sender *s)
{
    struct curl_header *h = NULL;
    if (curl_easy_header(s->curl, "Keep-Alive", 0, CURLH_HEADER, -1, &h) == CURLHE_OK && h)
        s->reuse_s = fj_keepalive_reuse_s(h->value);
    else
        s->reuse_s = fj_keepalive_reuse_s(NULL);
}

/* The response body is read and discarded (kept short for the log). */
static size_t sink(char *p, size_t sz, size_t n, void *user)
{
    fj_buf *b = user;
    size_t len = sz * n;
    if (b->len < 512)
        fj_buf_append(b, p, len < 512 - b->len ? len : 512 - b->len);
    return len;
}

fj_status fj_sender_post(fj_sender *s, fj_item_kind kind, const void *zbody, size_t len, long *retry_after,
                         fj_err *err)
{
    const fj_push_config *cfg = s->cfg;
    *retry_after = 0;
    char secret[1024], auth[1600];
    fj_status st = read_secret(cfg->auth_file, secret, sizeof secret, err);
    if (st != FJ_OK)
        return st;
    if ((st = fj_auth_header(cfg->auth_type, secret, auth, sizeof auth)) != FJ_OK)
        return fj_err_set(err, FJ_EAUTH, cfg->auth_file, "credentials too long");
    memset(secret, 0, sizeof secret);

    struct curl_slist *h = NULL, *h2;
    const char *lines[] = {"Content-Type: application/json", "Content-Encoding: zstd", "Expect:", auth[0] ? auth : NULL};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        if (!lines[i])
            continue;
        if (!(h2 = curl_slist_append(h, lines[i]))) {
            curl_slist_free_all(h);
            return FJ_ENOMEM;
        }
        h = h2;
    }
    fj_buf resp;
    fj_buf_init(&resp, 1024);
    CURL *c = s->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, fj_sender_url(s, kind));
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, zbody);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "fjord-push/" FJ_PUSH_VERSION);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, cfg->timeout);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, cfg->timeout < 10 ? cfg->timeout : 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    /* Between sends (30 s apart) the connection sits idle; reusing it after the server closed it
     * races the close: the POST may go out as the FIN comes in. A connection idle longer than the
     * server's announced limit minus a margin is not reused (docs/pusher.md). */
    curl_easy_setopt(c, CURLOPT_MAXAGE_CONN, s->reuse_s);
    /* The server's certificate is always verified (name and chain), against ca_file or the
     * system's CAs: there is no switch to turn that off. */
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (cfg->ca_file && *cfg->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, cfg->ca_file);
    if (cfg->client_cert && *cfg->client_cert) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, cfg->client_cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY, cfg->client_key);
    }
    char detail[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, detail);
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(h);
    memset(auth, 0, sizeof auth);
    if (rc != CURLE_OK) {
        fj_buf_free(&resp);
        const char *why = detail[0] ? detail : curl_easy_strerror(rc);
        if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
            return fj_err_set(err, FJ_EBUSY, fj_sender_url(s, kind),
                              "the server's certificate is not trusted (checked against %s): %s; nothing sent",
                              cfg->ca_file && *cfg->ca_file ? cfg->ca_file : "the system's CAs", why);
        if (rc == CURLE_SSL_CERTPROBLEM)
            return fj_err_set(err, FJ_EBUSY, fj_sender_url(s, kind), "client_cert/client_key cannot be used: %s", why);
        return fj_err_set(err, FJ_EBUSY, fj_sender_url(s, kind), "%s", why);
    }
    note_keep_alive(s);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_off_t ra = 0;
    if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
        *retry_after = (long)ra;
    const char *body = resp.data ? resp.data : "";
    if (code >= 200 && code < 300)
        st = FJ_OK;
    else if (code == 401 || code == 403)
        st = fj_err_set(err, FJ_EAUTH, fj_sender_url(s, kind), "HTTP %ld: %.200s", code, body);
    else if (code == 408 || code == 429 || code >= 500)
        st = fj_err_set(err, FJ_EBUSY, fj_sender_url(s, kind), "HTTP %ld: %.200s", code, body);
    else
        st = fj_err_set(err, FJ_EINVAL, fj_sender_url(s, kind), "HTTP %ld: %.200s", code, body);
    fj_buf_free(&resp);
    return st;
}
