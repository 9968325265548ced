/* storage/ts/obuf.c — compressed open buffer of one series (format in storage/ts/obuf.h). */
#include "storage/ts/obuf.h"

#include "alloc.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#define DEC_MAX 4
#define NO_SCALE 0xff /* no exact mantissa yet: every value so far was a raw double */
#define RAW_TAG 7     /* escape: 64 bits of IEEE 754 follow */
#define SHRINK_AFTER 8
/* Most bits one point takes: a time escape (3 + 64) and a value escape (2 + 3 + 64). */
#define MAX_POINT_BYTES 17
#define MALLOC_HEADER 8 /* what the allocator keeps beside each block (glibc on 64 bits) */

struct fj_ts_obuf {
    int64_t t_last; /* the newest point, not yet in the bits */
    double v_last;
    int64_t t_prev;  /* the last point in the bits */
    int64_t dt_prev; /* its time difference from the one before (from the third point on) */
    int64_t m_prev;  /* the last exact value's mantissa at scale k */
    uint32_t n;      /* points, the newest included */
    uint32_t bits;   /* bits used in data */
    uint32_t cap;    /* bytes of data; a multiple of 16, so the block fills the allocator's size class */
    uint8_t k, w, fit, pad;
    unsigned char data[];
};

_Static_assert(sizeof(fj_ts_obuf) == 56, "header size as documented");

static const double ten_to[DEC_MAX + 1] = {1, 10, 100, 1000, 10000};

static inline uint64_t zigzag(uint64_t d)
{
    return d << 1 ^ (0 - (d >> 63));
}

static inline uint64_t unzigzag(uint64_t z)
{
    return z >> 1 ^ (0 - (z & 1));
}

/* v == m / 10^k exactly, bit for bit, as the decoder computes it (-0.0 is not 0). */
static inline bool exact_at(double v, unsigned k, int64_t *m)
{
    double x = nearbyint(v * ten_to[k]);
    if (!(fabs(x) < 0x1p53))
        return false;
    int64_t mm = (int64_t)x;
    double back = (double)mm / ten_to[k];
    if (memcmp(&back, &v, sizeof v) != 0)
        return false;
    *m = mm;
    return true;
}

static void put_bits(fj_ts_obuf *b, uint64_t x, unsigned n)
{
    while (n) {
        unsigned off = b->bits & 7, room = 8 - off, take = n < room ? n : room;
        unsigned part = (unsigned)(x >> (n - take)) & ((1u << take) - 1);
        b->data[b->bits >> 3] |= (unsigned char)(part << (room - take));
        b->bits += take;
        n -= take;
    }
}

typedef struct reader {
    const unsigned char *p;
    uint32_t pos;
} reader;

static uint64_t get_bits(reader *r, unsigned n)
{
    uint64_t x = 0;
    while (n) {
        unsigned off = r->pos & 7, room = 8 - off, take = n < room ? n : room;
        unsigned byte = r->p[r->pos >> 3];
        x = x << take | ((byte >> (room - take)) & ((1u << take) - 1));
        r->pos += take;
        n -= take;
    }
    return x;
}

fj_ts_obuf *fj_ts_obuf_new(int64_t t, double v)
{
    fj_ts_obuf *b = fj_malloc(sizeof *b);
    if (!b)
        return NULL;
    *b = (fj_ts_obuf){.t_last = t, .v_last = v, .n = 1, .k = NO_SCALE};
    return b;
}

void fj_ts_obuf_free(fj_ts_obuf *b)
{
    fj_free(b);
}

/* Room for one more point in the bits. */
static bool reserve(fj_ts_obuf **bp)
{
    fj_ts_obuf *b = *bp;
    if ((size_t)b->cap * 8 - b->bits >= MAX_POINT_BYTES * 8)
        return true;
    size_t nc = b->cap + b->cap / 8;
    if (nc < (size_t)b->cap + MAX_POINT_BYTES)
        nc = (size_t)b->cap + MAX_POINT_BYTES;
    nc = (nc + 15) & ~(size_t)15;
    if (nc > UINT32_MAX / 8)
        return false;
    fj_ts_obuf *nb = fj_realloc(b, sizeof *b + nc);
    if (!nb)
        return false;
    memset(nb->data + nb->cap, 0, nc - nb->cap);
    nb->cap = (uint32_t)nc;
    *bp = nb;
    return true;
}

static void put_time(fj_ts_obuf *b, int64_t t)
{
    uint32_t enc = b->n - 1; /* points already in the bits */
    if (enc == 0) {
        put_bits(b, (uint64_t)t, 64);
    } else {
        int64_t dt = (int64_t)((uint64_t)t - (uint64_t)b->t_prev);
        if (enc == 1) {
            put_bits(b, (uint64_t)dt, 64);
        } else {
            uint64_t z = zigzag((uint64_t)dt - (uint64_t)b->dt_prev);
            if (z == 0)
                put_bits(b, 0, 1);
            else if (z >> 20 == 0)
                put_bits(b, (uint64_t)2 << 20 | z, 22);
            else if (z >> 34 == 0)
                put_bits(b, (uint64_t)6 << 34 | z, 37);
            else {
                put_bits(b, 7, 3);
                put_bits(b, z, 64);
            }
        }
        b->dt_prev = dt;
    }
    b->t_prev = t;
}

static void put_value(fj_ts_obuf *b, double v)
{
    int64_t m;
    if (b->k != NO_SCALE && exact_at(v, b->k, &m)) {
        uint64_t z = zigzag((uint64_t)m - (uint64_t)b->m_prev);
        if (b->w == 64 || z >> b->w == 0) {
            put_bits(b, 0, 1);
            put_bits(b, z, b->w);
            if (b->w && z >> (b->w - 1) == 0) {
                if (++b->fit == SHRINK_AFTER) {
                    b->w--;
                    b->fit = 0;
                }
            } else {
                b->fit = 0;
            }
        } else {
            unsigned nw = 64 - (unsigned)__builtin_clzll(z); /* z >= 2^w >= 1 */
            put_bits(b, 2, 2);
            put_bits(b, nw - 1, 6);
            put_bits(b, z, nw);
            b->w = (uint8_t)nw;
            b->fit = 0;
        }
        b->m_prev = m;
        return;
    }
    put_bits(b, 3, 2);
    for (unsigned k = 0; k <= DEC_MAX; k++) {
        if (exact_at(v, k, &m)) {
            put_bits(b, k, 3);
            put_bits(b, zigzag((uint64_t)m), 64);
            b->k = (uint8_t)k;
            b->m_prev = m;
            return;
        }
    }
    uint64_t raw;
    memcpy(&raw, &v, sizeof raw);
    put_bits(b, RAW_TAG, 3);
    put_bits(b, raw, 64);
}

fj_status fj_ts_obuf_append(fj_ts_obuf **bp, int64_t t, double v)
{
    if (t <= (*bp)->t_last)
        return FJ_EINVAL;
    if ((*bp)->n == UINT32_MAX || !reserve(bp))
        return FJ_ENOMEM;
    fj_ts_obuf *b = *bp;
    /* the newest point goes into the bits; the new one waits in its place */
    put_time(b, b->t_last);
    put_value(b, b->v_last);
    b->t_last = t;
    b->v_last = v;
    b->n++;
    return FJ_OK;
}

void fj_ts_obuf_replace_last(fj_ts_obuf *b, double v)
{
    b->v_last = v;
}

size_t fj_ts_obuf_count(const fj_ts_obuf *b)
{
    return b->n;
}

int64_t fj_ts_obuf_last_t(const fj_ts_obuf *b)
{
    return b->t_last;
}

double fj_ts_obuf_last_v(const fj_ts_obuf *b)
{
    return b->v_last;
}

const void *fj_ts_obuf_tail(const fj_ts_obuf *b)
{
    return b->data + (b->bits >> 3);
}

size_t fj_ts_obuf_bytes(const fj_ts_obuf *b)
{
    return MALLOC_HEADER + sizeof *b + b->cap;
}

void fj_ts_obuf_decode(const fj_ts_obuf *b, int64_t *t, double *v)
{
    reader r = {.p = b->data};
    int64_t tp = 0, dt = 0, m = 0;
    unsigned k = NO_SCALE, w = 0, fit = 0;
    uint32_t enc = b->n - 1;
    for (uint32_t i = 0; i < enc; i++) {
        if (i == 0) {
            tp = (int64_t)get_bits(&r, 64);
        } else {
            if (i == 1) {
                dt = (int64_t)get_bits(&r, 64);
            } else if (get_bits(&r, 1)) {
                uint64_t z;
                if (!get_bits(&r, 1))
                    z = get_bits(&r, 20);
                else if (!get_bits(&r, 1))
                    z = get_bits(&r, 34);
                else
                    z = get_bits(&r, 64);
                dt = (int64_t)((uint64_t)dt + unzigzag(z));
            }
            tp = (int64_t)((uint64_t)tp + (uint64_t)dt);
        }
        t[i] = tp;
        if (!get_bits(&r, 1)) {
            uint64_t z = get_bits(&r, w);
            m = (int64_t)((uint64_t)m + unzigzag(z));
            if (w && z >> (w - 1) == 0) {
                if (++fit == SHRINK_AFTER) {
                    w--;
                    fit = 0;
                }
            } else {
                fit = 0;
            }
            v[i] = (double)m / ten_to[k];
        } else if (!get_bits(&r, 1)) {
            w = (unsigned)get_bits(&r, 6) + 1;
            fit = 0;
            m = (int64_t)((uint64_t)m + unzigzag(get_bits(&r, w)));
            v[i] = (double)m / ten_to[k];
        } else {
            unsigned tag = (unsigned)get_bits(&r, 3);
            uint64_t x = get_bits(&r, 64);
            if (tag == RAW_TAG) {
                memcpy(&v[i], &x, sizeof x);
            } else {
                k = tag;
                m = (int64_t)unzigzag(x);
                v[i] = (double)m / ten_to[k];
            }
        }
    }
    t[enc] = b->t_last;
    v[enc] = b->v_last;
}
