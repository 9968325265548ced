/* dashboard.c — serves the web dashboard's embedded files (dashboard.h). */
#include "server/dashboard.h"

#include "alloc.h"
#include "server/codec.h"
#include "server/dashboard_files.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define UI_PREFIX "/ui/"
#define ASSETS_DIR "assets/"

/* Scripts and styles only from the bundle (no inline code, no eval); API calls to this server only;
 * images from the bundle and from blob: URLs (the topology SVG, fetched with the credential, is shown
 * through one, so its own scripts never run); the page cannot be framed. */
static const char csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
                          "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
                          "frame-ancestors 'none'";

static const fj_dash_file *find_file(const char *rel)
{
    for (size_t i = 0; i < fj_dash_n_files; i++)
        if (strcmp(fj_dash_files[i].path, rel) == 0)
            return &fj_dash_files[i];
    return NULL;
}

const fj_dash_file *fj_dash_lookup(const char *path)
{
    if (!path)
        return NULL;
    if (strcmp(path, "/") == 0 || strcmp(path, "/ui") == 0)
        return find_file("index.html");
    if (strncmp(path, UI_PREFIX, strlen(UI_PREFIX)) != 0)
        return NULL;
    const char *rel = path + strlen(UI_PREFIX);
    const fj_dash_file *f = find_file(rel);
    if (f)
        return f;
    /* A hashed asset that is not here (an old page asking for last release's bundle) is a 404, not
     * the page: a script answered with HTML would fail in a confusing way. */
    if (strncmp(rel, ASSETS_DIR, strlen(ASSETS_DIR)) == 0)
        return NULL;
    return find_file("index.html"); /* a view's address: the page routes it */
}

/* --- gzip copies, made once ------------------------------------------------------------- */

typedef struct gz_copy {
    unsigned char *data; /* NULL when compressing did not make the file smaller (or failed) */
    size_t len;
} gz_copy;

static gz_copy *gz_copies;
static pthread_once_t gz_once = PTHREAD_ONCE_INIT;

static void gzip_one(const fj_dash_file *f, gz_copy *out)
{
    size_t cap = fj_codec_gzip_bound(f->len);
    unsigned char *buf = fj_malloc(cap);
    size_t n = buf ? fj_codec_gzip(f->data, f->len, 9, buf, cap) : 0;
    if (n) {
        out->data = buf;
        out->len = n;
    } else {
        fj_free(buf);
    }
}

static void gzip_all(void)
{
    gz_copies = fj_calloc(fj_dash_n_files, sizeof *gz_copies);
    if (!gz_copies)
        return; /* served uncompressed */
    for (size_t i = 0; i < fj_dash_n_files; i++)
        gzip_one(&fj_dash_files[i], &gz_copies[i]);
}

/* --- the route --------------------------------------------------------------------------- */

static const char *content_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},   {".txt", "text/plain; charset=utf-8"},
        {".svg", "image/svg+xml"},             {".png", "image/png"},
        {".json", "application/json"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

void fj_route_dashboard(fj_http_req *r)
{
    /* A body never gets here: the route table marks these routes FJ_NO_BODY. */
    const fj_dash_file *f = fj_dash_lookup(fj_http_path(r));
    if (!f) {
        fj_err err = {0};
        fj_err_set(&err, FJ_ENOTFOUND, NULL, "no such dashboard file: %s", fj_http_path(r));
        fj_http_reply_error(r, FJ_ENOTFOUND, &err);
        return;
    }
    bool hashed = strncmp(f->path, ASSETS_DIR, strlen(ASSETS_DIR)) == 0;
    fj_http_reply_header(r, "Cache-Control", hashed ? "public, max-age=31536000, immutable" : "no-cache");
    fj_http_reply_header(r, "Content-Security-Policy", csp);
    fj_http_reply_header(r, "X-Content-Type-Options", "nosniff");
    fj_http_reply_header(r, "Referrer-Policy", "no-referrer");
    fj_http_reply_header(r, "Vary", "Accept-Encoding");
    const unsigned char *data = f->data;
    size_t len = f->len;
    if (fj_codec_accepts_gzip(fj_http_header(r, "Accept-Encoding"))) {
        pthread_once(&gz_once, gzip_all);
        const gz_copy *gz = gz_copies ? &gz_copies[f - fj_dash_files] : NULL;
        if (gz && gz->data) {
            fj_http_reply_header(r, "Content-Encoding", "gzip");
            data = gz->data;
            len = gz->len;
        }
    }
    fj_http_reply(r, 200, content_type(f->path), (const char *)data, len);
}
