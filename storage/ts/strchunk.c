/* storage/ts/strchunk.c — string chunks (storage/ts/strchunk.h). */
#include "storage/ts/strchunk.h"

#include "alloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define VERSION 1
#define ZSTD_LEVEL 3
#define ZSTD_MIN 64 /* values' bytes below this are stored as they are */

static fj_status put_varint(fj_buf *b, uint64_t v)
{
    unsigned char x[10];
    size_t n = 0;
    do {
        x[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            x[n] |= 0x80;
        n++;
    } while (v);
    return fj_buf_append(b, x, n);
}

static bool get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        unsigned char c = *(*p)++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

void fj_ts_strs_free(fj_ts_strs *s)
{
    fj_free(s->t);
    fj_free(s->off);
    fj_free(s->len);
    fj_free(s->data);
    *s = (fj_ts_strs){0};
}

fj_status fj_ts_strchunk_encode(fj_ts_codec *c, const int64_t *t, const char *const *v, const size_t *len, size_t n,
                                fj_buf *out)
{
    if (n == 0 || n > FJ_TS_CHUNK_MAX_POINTS)
        return FJ_EINVAL;
    size_t at = out->len;
    fj_buf times, vals;
    fj_buf_init(&times, (size_t)1 << 30);
    fj_buf_init(&vals, (size_t)1 << 30);
    double *zero = fj_calloc(n, sizeof *zero);
    void *z = NULL;
    fj_status st = zero ? fj_ts_chunk_encode(c, t, zero, n, &times) : FJ_ENOMEM;
    for (size_t i = 0; st == FJ_OK && i < n; i++)
        if ((st = put_varint(&vals, len[i])) == FJ_OK && len[i])
            st = fj_buf_append(&vals, v[i], len[i]);
    unsigned char head = VERSION;
    if (st == FJ_OK && (st = fj_buf_append(out, &head, 1)) == FJ_OK && (st = put_varint(out, n)) == FJ_OK &&
        (st = put_varint(out, times.len)) == FJ_OK)
        st = fj_buf_append(out, times.data, times.len);
    size_t zn = 0;
    if (st == FJ_OK && vals.len >= ZSTD_MIN) {
        size_t cap = ZSTD_compressBound(vals.len);
        if (!(z = fj_malloc(cap))) {
            st = FJ_ENOMEM;
        } else {
            zn = ZSTD_compress(z, cap, vals.data, vals.len, ZSTD_LEVEL);
            if (ZSTD_isError(zn) || zn >= vals.len)
                zn = 0; /* not smaller: as they are */
        }
    }
    if (st == FJ_OK) {
        unsigned char flags = zn ? 1 : 0;
        if ((st = fj_buf_append(out, &flags, 1)) == FJ_OK && (st = put_varint(out, vals.len)) == FJ_OK) {
            if (zn && (st = put_varint(out, zn)) == FJ_OK)
                st = fj_buf_append(out, z, zn);
            else if (!zn && vals.len)
                st = fj_buf_append(out, vals.data, vals.len);
        }
    }
    if (st != FJ_OK)
        out->len = at;
    fj_free(z);
    fj_free(zero);
    fj_buf_free(&times);
    fj_buf_free(&vals);
    return st;
}

static bool room(fj_ts_strs *s, size_t n, size_t bytes)
{
    if (n > s->cap) {
        int64_t *t = fj_realloc(s->t, n * sizeof *t);
        if (t)
            s->t = t;
        size_t *o = fj_realloc(s->off, n * sizeof *o);
        if (o)
            s->off = o;
        size_t *l = fj_realloc(s->len, n * sizeof *l);
        if (l)
            s->len = l;
        if (!t || !o || !l)
            return false;
        s->cap = n;
    }
    if (bytes > s->data_cap) {
        char *d = fj_realloc(s->data, bytes);
        if (!d)
            return false;
        s->data = d;
        s->data_cap = bytes;
    }
    return true;
}

fj_status fj_ts_strchunk_decode(fj_ts_codec *c, const void *blob, size_t blen, fj_ts_strs *out)
{
    const unsigned char *p = blob, *end = p + blen;
    uint64_t n = 0, tlen = 0, vlen = 0;
    out->n = out->data_len = 0;
    if (blen < 1 || *p++ != VERSION || !get_varint(&p, end, &n) || n == 0 || n > FJ_TS_CHUNK_MAX_POINTS ||
        !get_varint(&p, end, &tlen) || tlen > (uint64_t)(end - p))
        return FJ_EINVAL;
    const unsigned char *times = p;
    p += tlen;
    if (p >= end)
        return FJ_EINVAL;
    unsigned char flags = *p++;
    if (!get_varint(&p, end, &vlen) || vlen > ((size_t)1 << 31) || !room(out, (size_t)n, (size_t)vlen + 1))
        return vlen > ((size_t)1 << 31) ? FJ_EINVAL : FJ_ENOMEM;
    double *scratch = fj_malloc((size_t)n * sizeof *scratch);
    if (!scratch)
        return FJ_ENOMEM;
    size_t got = 0;
    fj_status st = fj_ts_chunk_decode(c, times, (size_t)tlen, out->t, scratch, (size_t)n, &got);
    fj_free(scratch);
    if (st != FJ_OK || got != n)
        return st == FJ_ENOMEM ? st : FJ_EINVAL;
    if (flags & 1) {
        uint64_t zn;
        if (!get_varint(&p, end, &zn) || zn > (uint64_t)(end - p))
            return FJ_EINVAL;
        size_t d = ZSTD_decompress(out->data, out->data_cap, p, (size_t)zn);
        if (ZSTD_isError(d) || d != vlen)
            return FJ_EINVAL;
    } else {
        if (vlen > (uint64_t)(end - p))
            return FJ_EINVAL;
        if (vlen)
            memcpy(out->data, p, (size_t)vlen);
    }
    const unsigned char *q = (const unsigned char *)out->data, *qe = q + vlen;
    for (size_t i = 0; i < n; i++) {
        uint64_t l;
        if (!get_varint(&q, qe, &l) || l > (uint64_t)(qe - q))
            return FJ_EINVAL;
        out->off[i] = (size_t)(q - (const unsigned char *)out->data);
        out->len[i] = (size_t)l;
        q += l;
    }
    out->n = (size_t)n;
    out->data_len = (size_t)vlen;
    return FJ_OK;
}

fj_status fj_ts_strs_add(fj_ts_strs *s, int64_t t, const char *v, size_t len)
{
    if (s->n == s->cap || s->data_len + len > s->data_cap) {
        size_t n = s->n == s->cap ? (s->cap ? s->cap * 2 : 64) : s->cap;
        size_t bytes = s->data_len + len > s->data_cap ? (s->data_len + len) * 2 + 256 : s->data_cap;
        if (!room(s, n, bytes))
            return FJ_ENOMEM;
    }
    s->t[s->n] = t;
    s->off[s->n] = s->data_len;
    s->len[s->n] = len;
    if (len)
        memcpy(s->data + s->data_len, v, len);
    s->data_len += len;
    s->n++;
    return FJ_OK;
}

fj_status fj_ts_strchunk_merge(fj_ts_codec *c, const fj_ts_strs *old, const fj_ts_strs *rows, fj_buf *out,
                               int64_t *first, int64_t *last, size_t *n)
{
    size_t cap = old->n + rows->n;
    if (!cap || cap > FJ_TS_CHUNK_MAX_POINTS)
        return FJ_EINVAL;
    int64_t *t = fj_malloc(cap * sizeof *t);
    const char **v = fj_malloc(cap * sizeof *v);
    size_t *len = fj_malloc(cap * sizeof *len);
    fj_status st = FJ_ENOMEM;
    if (t && v && len) {
        size_t i = 0, j = 0, k = 0;
        while (i < old->n || j < rows->n) {
            bool row = j < rows->n && (i >= old->n || rows->t[j] <= old->t[i]);
            const fj_ts_strs *src = row ? rows : old;
            size_t at = row ? j : i;
            if (row && i < old->n && old->t[i] == rows->t[j])
                i++; /* the row is the later write */
            t[k] = src->t[at];
            v[k] = src->data + src->off[at];
            len[k++] = src->len[at];
            if (row)
                j++;
            else
                i++;
        }
        st = fj_ts_strchunk_encode(c, t, v, len, k, out);
        if (st == FJ_OK) {
            *first = t[0];
            *last = t[k - 1];
            *n = k;
        }
    }
    fj_free(t);
    fj_free(v);
    fj_free(len);
    return st;
}
