/* storage/ts/request_log.c — point records of the metrics request log (format in storage/ts/request_log.h). */
#include "storage/ts/request_log.h"
#include "storage/core/grow.h"

#include "alloc.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#define MAGIC "FJP1"
#define MAGIC_LEN 4
#define MAX_POINT_BYTES (5 + 10 + 1 + 8) /* id difference, time difference, value tag and bits */
#define DEC_MAX 4                        /* decimals of a value kept as an integer */
#define RAW_VALUE 7                      /* value tag: 8 bytes of IEEE 754 follow */

struct fj_ts_log {
    uint8_t *raw; /* the record being built */
    size_t raw_len, raw_cap;
    uint32_t prev_id;
    uint64_t prev_t;
    size_t count;
    /* decoded points */
    uint32_t *ids;
    int64_t *t;
    double *v;
    size_t pts_cap;
};

fj_ts_log *fj_ts_log_create(void)
{
    fj_ts_log *l = fj_calloc(1, sizeof *l);
    if (l)
        fj_ts_log_begin(l);
    return l;
}

void fj_ts_log_destroy(fj_ts_log *l)
{
    if (!l)
        return;
    fj_free(l->raw);
    fj_free(l->ids);
    fj_free(l->t);
    fj_free(l->v);
    fj_free(l);
}

void fj_ts_log_begin(fj_ts_log *l)
{
    l->raw_len = 0;
    l->prev_id = 0;
    l->prev_t = 0;
    l->count = 0;
}

static inline uint8_t *put_uv(uint8_t *p, uint64_t x)
{
    while (x >= 0x80) {
        *p++ = (uint8_t)(x | 0x80);
        x >>= 7;
    }
    *p++ = (uint8_t)x;
    return p;
}

/* Differences are taken modulo 2^64 and zigzagged, so any two int64 times (or uint32 ids) have one. */
static inline uint64_t zigzag(uint64_t d)
{
    return d << 1 ^ (0 - (d >> 63));
}

static inline uint64_t unzigzag(uint64_t z)
{
    return z >> 1 ^ (0 - (z & 1));
}

static const double ten_to[DEC_MAX + 1] = {1, 10, 100, 1000, 10000};

/* A value with at most DEC_MAX decimals (what collectors send) as the integer m with
 * v == m / 10^k exactly, bit for bit, as the decoder computes it; anything else as its bits. */
static uint8_t *put_value(uint8_t *p, double v)
{
    for (unsigned k = 0; k <= DEC_MAX; k++) {
        double x = nearbyint(v * ten_to[k]);
        if (!(fabs(x) < 0x1p53))
            break; /* too large, or NaN / infinite */
        int64_t m = (int64_t)x;
        double back = (double)m / ten_to[k];
        if (memcmp(&back, &v, sizeof v) == 0) /* -0.0 and 0.0 differ here, as they must */
            return put_uv(p, zigzag((uint64_t)m) << 3 | k);
    }
    *p++ = RAW_VALUE;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    for (int b = 0; b < 8; b++)
        *p++ = (uint8_t)(bits >> 8 * b);
    return p;
}

fj_status fj_ts_log_add(fj_ts_log *l, const uint32_t *ids, const int64_t *t, const double *v, size_t n)
{
    size_t need = l->raw_len + (l->raw_len ? 0 : MAGIC_LEN) + n * MAX_POINT_BYTES;
    if (!fj_grow(&l->raw, &l->raw_cap, need, 1, 4096))
        return FJ_ENOMEM;
    uint8_t *p = l->raw + l->raw_len;
    if (!l->raw_len) {
        memcpy(p, MAGIC, MAGIC_LEN);
        p += MAGIC_LEN;
    }
    for (size_t i = 0; i < n; i++) {
        /* an id difference fits 33 bits: sign-extend it from 64 so zigzag keeps it short */
        p = put_uv(p, zigzag((uint64_t)((int64_t)ids[i] - (int64_t)l->prev_id)));
        p = put_uv(p, zigzag((uint64_t)t[i] - l->prev_t));
        p = put_value(p, v[i]);
        l->prev_id = ids[i];
        l->prev_t = (uint64_t)t[i];
    }
    l->raw_len = (size_t)(p - l->raw);
    l->count += n;
    return FJ_OK;
}

size_t fj_ts_log_count(const fj_ts_log *l)
{
    return l->count;
}

fj_status fj_ts_log_finish(fj_ts_log *l, const void **out, size_t *len)
{
    if (!l->raw_len) { /* no points: the magic alone */
        if (!fj_grow(&l->raw, &l->raw_cap, MAGIC_LEN, 1, 4096))
            return FJ_ENOMEM;
        memcpy(l->raw, MAGIC, MAGIC_LEN);
        l->raw_len = MAGIC_LEN;
    }
    *out = l->raw;
    *len = l->raw_len;
    return FJ_OK;
}

static bool get_uv(const uint8_t **p, const uint8_t *end, uint64_t *x)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *x = r;
            return true;
        }
    }
    return false;
}

fj_status fj_ts_log_decode(fj_ts_log *l, const void *rec, size_t len, const uint32_t **ids, const int64_t **t,
                           const double **v, size_t *n)
{
    *n = 0;
    if (len < MAGIC_LEN || memcmp(rec, MAGIC, MAGIC_LEN))
        return FJ_EIO;
    /* every point takes at least 3 bytes: enough room for all of them */
    size_t most = (len - MAGIC_LEN) / 3;
    if (!fj_grow_cols(&l->pts_cap, most, 4096, 3, (void *[]){&l->ids, &l->t, &l->v},
                      (size_t[]){sizeof *l->ids, sizeof *l->t, sizeof *l->v}))
        return FJ_ENOMEM;
    const uint8_t *p = (const uint8_t *)rec + MAGIC_LEN, *end = (const uint8_t *)rec + len;
    uint64_t id = 0, tt = 0;
    size_t k = 0;
    while (p < end) {
        uint64_t did, dt, tag;
        if (!get_uv(&p, end, &did) || !get_uv(&p, end, &dt) || !get_uv(&p, end, &tag))
            return FJ_EIO;
        id += unzigzag(did);
        tt += unzigzag(dt);
        if (id == 0 || id > UINT32_MAX)
            return FJ_EIO;
        double value;
        if (tag == RAW_VALUE) {
            if (end - p < 8)
                return FJ_EIO;
            uint64_t bits = 0;
            for (int b = 0; b < 8; b++)
                bits |= (uint64_t)p[b] << 8 * b;
            p += 8;
            memcpy(&value, &bits, sizeof bits);
        } else if ((tag & 7) <= DEC_MAX) {
            value = (double)(int64_t)unzigzag(tag >> 3) / ten_to[tag & 7];
        } else {
            return FJ_EIO;
        }
        l->ids[k] = (uint32_t)id;
        l->t[k] = (int64_t)tt;
        l->v[k] = value;
        k++;
    }
    *ids = l->ids;
    *t = l->t;
    *v = l->v;
    *n = k;
    return FJ_OK;
}
