/* codec.c — streaming gzip and zstd decoders writing into a capped buffer. */
#include "server/codec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

static fj_status gunzip(const void *in, size_t n, fj_buf *out, fj_err *err)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK) /* +32: accept gzip and zlib headers */
        return fj_err_set(err, FJ_ENOMEM, NULL, "cannot start gzip decoder");
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    fj_status st = FJ_OK;
    unsigned char chunk[64 * 1024];
    int rc;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) {
            st = fj_err_set(err, FJ_EINVAL, "body", "corrupt gzip body: %s", z.msg ? z.msg : "inflate failed");
            break;
        }
        st = fj_buf_append(out, chunk, sizeof chunk - z.avail_out);
        if (st == FJ_ETOOBIG)
            fj_err_set(err, st, "body", "decoded body exceeds %zu bytes", out->cap);
        /* Concatenated gzip members are legal: restart after each one. */
        if (rc == Z_STREAM_END && z.avail_in > 0 && st == FJ_OK) {
            inflateReset(&z);
            rc = Z_OK;
        }
    } while (st == FJ_OK && rc != Z_STREAM_END && (z.avail_in > 0 || z.avail_out == 0));
    if (st == FJ_OK && rc != Z_STREAM_END)
        st = fj_err_set(err, FJ_EINVAL, "body", "truncated gzip body");
    inflateEnd(&z);
    return st;
}

static fj_status unzstd(const void *in, size_t n, fj_buf *out, fj_err *err)
{
    ZSTD_DStream *ds = ZSTD_createDStream();
    if (!ds)
        return fj_err_set(err, FJ_ENOMEM, NULL, "cannot start zstd decoder");
    ZSTD_DCtx_setParameter(ds, ZSTD_d_windowLogMax, 27); /* refuse 2 GB windows from clients */
    ZSTD_inBuffer ib = {in, n, 0};
    unsigned char chunk[64 * 1024];
    fj_status st = FJ_OK;
    size_t rc = 1;
    while (st == FJ_OK && (ib.pos < ib.size || rc != 0)) {
        ZSTD_outBuffer ob = {chunk, sizeof chunk, 0};
        size_t before = ib.pos;
        rc = ZSTD_decompressStream(ds, &ob, &ib);
        if (ZSTD_isError(rc)) {
            st = fj_err_set(err, FJ_EINVAL, "body", "corrupt zstd body: %s", ZSTD_getErrorName(rc));
            break;
        }
        st = fj_buf_append(out, chunk, ob.pos);
        if (st == FJ_ETOOBIG)
            fj_err_set(err, st, "body", "decoded body exceeds %zu bytes", out->cap);
        if (st == FJ_OK && rc != 0 && ib.pos == ib.size && ob.pos < ob.size && ib.pos == before)
            st = fj_err_set(err, FJ_EINVAL, "body", "truncated zstd body");
    }
    ZSTD_freeDStream(ds);
    return st;
}

fj_status fj_codec_decode(const char *encoding, const void *in, size_t n, fj_buf *out, fj_err *err)
{
    fj_status st;
    if (!encoding || !*encoding || !strcasecmp(encoding, "identity")) {
        st = fj_buf_append(out, in, n);
        if (st == FJ_ETOOBIG)
            fj_err_set(err, st, "body", "body exceeds %zu bytes", out->cap);
        return st;
    }
    if (!strcasecmp(encoding, "gzip") || !strcasecmp(encoding, "x-gzip") || !strcasecmp(encoding, "deflate"))
        return gunzip(in, n, out, err);
    if (!strcasecmp(encoding, "zstd"))
        return unzstd(in, n, out, err);
    return fj_err_set(err, FJ_EUNSUPPORTED, "Content-Encoding",
                      "unsupported Content-Encoding '%s' (use gzip, zstd or none)", encoding);
}

bool fj_codec_accepts_gzip(const char *ae)
{
    if (!ae)
        return false;
    for (const char *p = ae; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *name = p;
        while (*p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t')
            p++;
        size_t n = (size_t)(p - name);
        bool gzip = (n == 4 && strncasecmp(name, "gzip", 4) == 0) || (n == 1 && *name == '*');
        double q = 1;
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *qs = p;
        while ((qs = strstr(qs, "q=")) && qs < end) { /* parameters of this item only */
            q = strtod(qs + 2, NULL);
            qs += 2;
        }
        if (gzip && q > 0)
            return true;
        p = end;
    }
    return false;
}

size_t fj_codec_gzip_bound(size_t n)
{
    return (size_t)compressBound((uLong)n) + 32; /* deflate's bound and the gzip header and trailer */
}

size_t fj_codec_gzip(const void *in, size_t n, int level, void *out, size_t cap)
{
    z_stream zs = {0};
    if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    size_t written = deflate(&zs, Z_FINISH) == Z_STREAM_END && zs.total_out < n ? (size_t)zs.total_out : 0;
    deflateEnd(&zs);
    return written;
}
