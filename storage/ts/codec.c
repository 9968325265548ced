/* storage/ts/codec.c — chunk encoding of one time series (see storage/ts/codec.h for the blob layout).
 *
 * Integer sequences (time deltas, value mantissas) go through one "int stream" coder: it picks a
 * difference order (0: the values, 1: deltas, 2: delta-of-delta) and a block size, then stores each
 * block frame-of-reference bit-packed (block minimum, bit width, fixed-width offsets). Exact byte
 * sizes of every (order, block size) are computed before writing, so the choice is the smallest.
 * Arithmetic on sequences is modular (uint64), so any int64 input round-trips. */
#include "storage/ts/codec.h"
#include "storage/core/grow.h"

#include "alloc.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <zstd.h>

#define FORMAT_VERSION 1
#define FLAG_ZSTD 0x10

#define VMODE_DECIMAL 1
#define VMODE_XOR 2

/* Block sizes the int stream may use: 16 << i for i in 0..4. */
#define NB_SIZES 5
#define BLOCK_MIN 16
/* Int stream header: bits 0-1 order, bits 2-4 block size index, or HDR_SPARSE: only the nonzero
 * values are stored, as (zeros skipped, value) pairs. */
#define HDR_SPARSE 0x20
#define SPARSE 99
#define ZSTD_LEVEL 3
/* zstd is only tried on bodies at least this long: below it the frame overhead always wins. */
#define ZSTD_MIN_BODY 48
/* A decimal chunk falls back to XOR when more than 1/EXC_DIV of its values are exceptions. */
#define EXC_DIV 8

struct fj_ts_codec {
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
    uint8_t *body;   /* raw body, then the final blob */
    size_t body_cap;
    uint8_t *zbuf;   /* zstd output (encode) or decompressed body (decode) */
    size_t zbuf_cap;
    uint64_t *u;     /* n integers: time deltas, mantissas */
    uint64_t *w;     /* n integers: differenced stream */
    uint8_t *exc;    /* n flags: value is an exception */
    size_t n_cap;
    uint64_t *bstat; /* per-16 block min/max of one order, 2 per block */
    size_t bstat_cap;
};

static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* ---- small helpers ---------------------------------------------------------------------- */

static inline uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline uint64_t zz(uint64_t s) /* s is an int64 in two's complement */
{
    return (s << 1) ^ (uint64_t)((int64_t)s >> 63);
}

static inline uint64_t unzz(uint64_t u)
{
    return (u >> 1) ^ (0 - (u & 1));
}

static inline unsigned uv_len(uint64_t x)
{
    unsigned n = 1;
    while (x >= 0x80) {
        x >>= 7;
        n++;
    }
    return n;
}

static inline unsigned bit_width(uint64_t x)
{
    return x ? 64u - (unsigned)__builtin_clzll(x) : 0;
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

/* Times in nanoseconds are mostly round decimals (whole seconds, a 60 s interval), which a plain
 * varint spends 6-9 bytes on. A "decimal varint" stores mag as one varint of
 * (mag / 10^e) << 6 | sign << 5 | e, e being its count of trailing decimal zeros, or when that
 * quotient does not fit, the varint of 31 | sign << 5 followed by the varint of mag. */
#define DV_ESC 31

static const uint64_t p10u[20] = {UINT64_C(1),
                                  UINT64_C(10),
                                  UINT64_C(100),
                                  UINT64_C(1000),
                                  UINT64_C(10000),
                                  UINT64_C(100000),
                                  UINT64_C(1000000),
                                  UINT64_C(10000000),
                                  UINT64_C(100000000),
                                  UINT64_C(1000000000),
                                  UINT64_C(10000000000),
                                  UINT64_C(100000000000),
                                  UINT64_C(1000000000000),
                                  UINT64_C(10000000000000),
                                  UINT64_C(100000000000000),
                                  UINT64_C(1000000000000000),
                                  UINT64_C(10000000000000000),
                                  UINT64_C(100000000000000000),
                                  UINT64_C(1000000000000000000),
                                  UINT64_C(10000000000000000000)};

static uint8_t *put_dv(uint8_t *p, uint64_t mag, unsigned sign)
{
    uint64_t q = mag;
    unsigned e = 0;
    while (q && q % 10 == 0) {
        q /= 10;
        e++;
    }
    if (q >> 58)
        return put_uv(put_uv(p, DV_ESC | sign << 5), mag);
    return put_uv(p, q << 6 | sign << 5 | e);
}

static uint8_t *put_sdv(uint8_t *p, int64_t x)
{
    return x < 0 ? put_dv(p, 0 - (uint64_t)x, 1) : put_dv(p, (uint64_t)x, 0);
}

static inline void st64(uint8_t *p, uint64_t x)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(x >> (8 * i));
}

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x |= (uint64_t)p[i] << (8 * i);
    return x;
}

/* A bounds-checked reader: every failure sets bad and yields zeros. */
typedef struct rd {
    const uint8_t *p, *end;
    bool bad;
} rd;

static inline uint64_t get_uv(rd *r)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) {
            r->bad = true;
            return 0;
        }
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1) {
            r->bad = true;
            return 0;
        }
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return x;
    }
    r->bad = true;
    return 0;
}

static inline uint8_t get_u8(rd *r)
{
    if (r->p >= r->end) {
        r->bad = true;
        return 0;
    }
    return *r->p++;
}

/* A decimal varint (see put_dv); *sign gets its sign bit. */
static uint64_t get_dv(rd *r, unsigned *sign)
{
    uint64_t v = get_uv(r);
    unsigned e = (unsigned)(v & 31);
    *sign = (unsigned)(v >> 5) & 1;
    if (e == DV_ESC) {
        if (v >> 6)
            r->bad = true;
        return get_uv(r);
    }
    uint64_t q = v >> 6;
    if (e > 19 || q > UINT64_MAX / p10u[e]) {
        r->bad = true;
        return 0;
    }
    return q * p10u[e];
}

static uint64_t get_udv(rd *r)
{
    unsigned sign;
    uint64_t m = get_dv(r, &sign);
    if (sign)
        r->bad = true;
    return m;
}

static int64_t get_sdv(rd *r)
{
    unsigned sign;
    uint64_t m = get_dv(r, &sign);
    if (m > (sign ? UINT64_C(1) << 63 : (uint64_t)INT64_MAX)) {
        r->bad = true;
        return 0;
    }
    return sign ? (int64_t)(0 - m) : (int64_t)m;
}

/* LSB-first bit writer; the destination is sized beforehand. */
typedef struct bitw {
    uint8_t *p;
    uint64_t acc;
    unsigned n;
} bitw;

static inline void bw_put(bitw *b, uint64_t x, unsigned w) /* w <= 64, x < 2^w */
{
    if (w == 0)
        return;
    b->acc |= x << b->n;
    if (b->n + w >= 64) {
        st64(b->p, b->acc);
        b->p += 8;
        unsigned used = 64 - b->n;
        b->acc = used == 64 ? 0 : x >> used;
        b->n = b->n + w - 64;
    } else {
        b->n += w;
    }
}

static inline uint8_t *bw_end(bitw *b)
{
    for (unsigned i = 0; i < b->n; i += 8)
        *b->p++ = (uint8_t)(b->acc >> i);
    return b->p;
}

typedef struct bitr {
    const uint8_t *p, *end;
    uint64_t acc;
    unsigned n;
    bool bad;
} bitr;

static inline uint64_t br_get(bitr *b, unsigned w) /* w <= 64 */
{
    if (w == 0)
        return 0;
    if (w > 56) {
        uint64_t lo = br_get(b, 32);
        return lo | br_get(b, w - 32) << 32;
    }
    while (b->n < w) {
        if (b->p < b->end)
            b->acc |= (uint64_t)*b->p++ << b->n;
        else
            b->bad = true;
        b->n += 8;
    }
    uint64_t r = b->acc & ((UINT64_C(1) << w) - 1);
    b->acc >>= w;
    b->n -= w;
    return r;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* ---- scratch ---------------------------------------------------------------------------- */

fj_ts_codec *fj_ts_codec_create(void)
{
    return fj_calloc(1, sizeof(fj_ts_codec));
}

void fj_ts_codec_destroy(fj_ts_codec *c)
{
    if (!c)
        return;
    ZSTD_freeCCtx(c->cctx);
    ZSTD_freeDCtx(c->dctx);
    fj_free(c->body);
    fj_free(c->zbuf);
    fj_free(c->u);
    fj_free(c->w);
    fj_free(c->exc);
    fj_free(c->bstat);
    fj_free(c);
}

/* Room for n values in each of the int streams' arrays (one capacity). */
static bool ensure_n(fj_ts_codec *c, size_t n)
{
    return fj_grow_cols(&c->n_cap, n, 256, 3, (void *[]){&c->u, &c->w, &c->exc},
                        (size_t[]){sizeof *c->u, sizeof *c->w, sizeof *c->exc});
}

/* An upper bound of the raw body of n points, whatever the data (every int stream value at most
 * 64 bits plus per-block headers; every XOR value at most 2 + 12 + 64 bits; an exception 18 bytes). */
static size_t body_bound(size_t n)
{
    return 64 + 48 * n;
}

/* ---- int stream ------------------------------------------------------------------------- */

/* The order-k difference of x at i >= k (modular). */
static inline uint64_t diff_at(const uint64_t *x, size_t i, unsigned order)
{
    switch (order) {
    case 0:
        return x[i];
    case 1:
        return x[i] - x[i - 1];
    default:
        return (x[i] - x[i - 1]) - (x[i - 1] - x[i - 2]);
    }
}

/* The inverse of diff_at: x[i] from y, the order-k difference at i >= k, and x before i; *d1
 * carries the first difference from one i to the next (order 2). */
static inline void undiff_at(uint64_t *x, size_t i, uint64_t y, unsigned order, uint64_t *d1)
{
    switch (order) {
    case 0:
        x[i] = y;
        break;
    case 1:
        x[i] = x[i - 1] + y;
        break;
    default:
        *d1 += y;
        x[i] = x[i - 1] + *d1;
        break;
    }
}

/* Exact byte size of the blocks of y[0..m) (the differenced stream) for every block size, from
 * the min/max of its 16-value groups (bstat: min, max pairs, signed). */
static void for_sizes(const uint64_t *bstat, size_t m, size_t size[NB_SIZES])
{
    size_t ngroups = (m + BLOCK_MIN - 1) / BLOCK_MIN;
    for (unsigned s = 0; s < NB_SIZES; s++) {
        size_t per = (size_t)1 << s; /* groups per block */
        size_t B = (size_t)BLOCK_MIN << s;
        size_t total = 0;
        int64_t prev_base = 0;
        for (size_t g = 0; g < ngroups; g += per) {
            int64_t mn = (int64_t)bstat[2 * g], mx = (int64_t)bstat[2 * g + 1];
            size_t ge = g + per < ngroups ? g + per : ngroups;
            for (size_t h = g + 1; h < ge; h++) {
                if ((int64_t)bstat[2 * h] < mn)
                    mn = (int64_t)bstat[2 * h];
                if ((int64_t)bstat[2 * h + 1] > mx)
                    mx = (int64_t)bstat[2 * h + 1];
            }
            size_t cnt = (g / per) * B + B <= m ? B : m - (g / per) * B;
            unsigned wd = bit_width((uint64_t)mx - (uint64_t)mn);
            total += uv_len(zz((uint64_t)mn - (uint64_t)prev_base)) + 1 + (cnt * wd + 7) / 8;
            prev_base = mn;
        }
        size[s] = total;
    }
}

/* Writes x[0..n) as an int stream; returns the end. hdr byte: bits 0-1 order, bits 2-4 block size
 * index. Heads (the first `order` values) are svarints: x0, then x1 - x0. */
static uint8_t *put_ints(fj_ts_codec *c, uint8_t *p, const uint64_t *x, size_t n)
{
    /* constant (a regular interval, an idle metric): no search needed */
    size_t same = 1;
    while (same < n && x[same] == x[0])
        same++;
    if (same == n) {
        if (x[0] == 0) {
            *p++ = HDR_SPARSE; /* order 0, no nonzero value */
        } else {
            *p++ = 1 | HDR_SPARSE; /* order 1: x0, then zero deltas */
            p = put_uv(p, zz(x[0]));
        }
        *p++ = 0;
        return p;
    }
    unsigned best_order = 0, best_s = 0;
    size_t best = SIZE_MAX;
    for (unsigned order = 0; order <= 2; order++) {
        if (order > n || (order > 0 && order == n && best != SIZE_MAX))
            break;
        size_t m = n - order, ngroups = (m + BLOCK_MIN - 1) / BLOCK_MIN;
        for (size_t g = 0; g < ngroups; g++) {
            size_t i0 = order + g * BLOCK_MIN, i1 = i0 + BLOCK_MIN < n ? i0 + BLOCK_MIN : n;
            int64_t mn = INT64_MAX, mx = INT64_MIN;
            for (size_t i = i0; i < i1; i++) {
                int64_t y = (int64_t)diff_at(x, i, order);
                mn = y < mn ? y : mn;
                mx = y > mx ? y : mx;
            }
            c->bstat[2 * g] = (uint64_t)mn;
            c->bstat[2 * g + 1] = (uint64_t)mx;
        }
        size_t heads = 0;
        if (order >= 1)
            heads += uv_len(zz(x[0]));
        if (order >= 2)
            heads += uv_len(zz(x[1] - x[0]));
        size_t sz[NB_SIZES];
        for_sizes(c->bstat, m, sz);
        for (unsigned s = 0; s < NB_SIZES; s++) {
            if (heads + sz[s] < best) {
                best = heads + sz[s];
                best_order = order;
                best_s = s;
            }
        }
        /* sparse: only worth computing when a block size found long runs of zeros */
        if (sz[NB_SIZES - 1] < m) {
            size_t nnz = 0, ssz = 0, last = order;
            for (size_t i = order; i < n && ssz < best; i++) {
                uint64_t y = diff_at(x, i, order);
                if (y) {
                    nnz++;
                    ssz += uv_len(i - last) + uv_len(zz(y));
                    last = i + 1;
                }
            }
            ssz += heads + uv_len(nnz);
            if (ssz < best) {
                best = ssz;
                best_order = order;
                best_s = SPARSE;
            }
        }
    }
    *p++ = (uint8_t)(best_order | (best_s == SPARSE ? HDR_SPARSE : best_s << 2));
    if (best_order >= 1)
        p = put_uv(p, zz(x[0]));
    if (best_order >= 2)
        p = put_uv(p, zz(x[1] - x[0]));
    if (best_s == SPARSE) {
        size_t nnz = 0;
        for (size_t i = best_order; i < n; i++)
            nnz += diff_at(x, i, best_order) != 0;
        p = put_uv(p, nnz);
        size_t last = best_order;
        for (size_t i = best_order; i < n; i++) {
            uint64_t y = diff_at(x, i, best_order);
            if (y) {
                p = put_uv(p, i - last);
                p = put_uv(p, zz(y));
                last = i + 1;
            }
        }
        return p;
    }
    size_t B = (size_t)BLOCK_MIN << best_s;
    uint64_t prev_base = 0;
    for (size_t i0 = best_order; i0 < n; i0 += B) {
        size_t i1 = i0 + B < n ? i0 + B : n;
        int64_t mn = INT64_MAX, mx = INT64_MIN;
        for (size_t i = i0; i < i1; i++) {
            int64_t y = (int64_t)diff_at(x, i, best_order);
            c->w[i] = (uint64_t)y;
            mn = y < mn ? y : mn;
            mx = y > mx ? y : mx;
        }
        unsigned wd = bit_width((uint64_t)mx - (uint64_t)mn);
        p = put_uv(p, zz((uint64_t)mn - prev_base));
        prev_base = (uint64_t)mn;
        *p++ = (uint8_t)wd;
        if (wd) {
            bitw b = {p, 0, 0};
            for (size_t i = i0; i < i1; i++)
                bw_put(&b, c->w[i] - (uint64_t)mn, wd);
            p = bw_end(&b);
        }
    }
    return p;
}

/* Reads an int stream of n values into x. */
static void get_ints(rd *r, uint64_t *x, size_t n)
{
    if (n == 0)
        return;
    uint8_t hdr = get_u8(r);
    unsigned order = hdr & 3, s = (hdr >> 2) & 7;
    bool sparse = hdr & HDR_SPARSE;
    if (order > 2 || (sparse ? s != 0 : s >= NB_SIZES) || hdr >> 6 || order > n) {
        r->bad = true;
        return;
    }
    uint64_t d1 = 0;
    if (order >= 1)
        x[0] = unzz(get_uv(r));
    if (order >= 2) {
        d1 = unzz(get_uv(r));
        x[1] = x[0] + d1;
    }
    if (sparse) {
        uint64_t nnz = get_uv(r);
        if (nnz > n - order) {
            r->bad = true;
            return;
        }
        size_t i = order;
        for (uint64_t j = 0; j <= nnz && !r->bad; j++) {
            /* zeros up to the next nonzero (or the end), then the nonzero */
            size_t stop = n;
            uint64_t y = 0;
            if (j < nnz) {
                uint64_t gap = get_uv(r);
                if (gap >= n - i) {
                    r->bad = true;
                    return;
                }
                stop = i + (size_t)gap;
                y = unzz(get_uv(r));
            }
            for (; i <= stop && i < n; i++)
                undiff_at(x, i, i == stop ? y : 0, order, &d1);
        }
        return;
    }
    size_t B = (size_t)BLOCK_MIN << s;
    uint64_t base = 0;
    for (size_t i0 = order; i0 < n && !r->bad; i0 += B) {
        size_t i1 = i0 + B < n ? i0 + B : n;
        base += unzz(get_uv(r));
        unsigned wd = get_u8(r);
        if (wd > 64) {
            r->bad = true;
            return;
        }
        size_t nbytes = ((i1 - i0) * wd + 7) / 8;
        if ((size_t)(r->end - r->p) < nbytes) {
            r->bad = true;
            return;
        }
        bitr b = {r->p, r->p + nbytes, 0, 0, false};
        r->p += nbytes;
        for (size_t i = i0; i < i1; i++)
            undiff_at(x, i, base + br_get(&b, wd), order, &d1);
    }
}

/* ---- values ----------------------------------------------------------------------------- */

/* Is v exactly (double)m / 10^k for an integer |m| < 2^53? The decoder computes exactly that
 * expression, so this check (not any reasoning about decimals) is what makes the path lossless. */
static inline bool dec_at(double v, unsigned k, int64_t *m)
{
    double s = v * p10[k];
    if (!(s > -9007199254740992.0 && s < 9007199254740992.0))
        return false;
    /* round half away from zero; a wrong guess near 2^53 only makes an exception */
    int64_t mm = (int64_t)(s + (s >= 0 ? 0.5 : -0.5));
    if (dbits((double)mm / p10[k]) != dbits(v))
        return false;
    *m = mm;
    return true;
}

static uint8_t *put_xor(uint8_t *p, const double *v, size_t n)
{
    bitw b = {p, 0, 0};
    uint64_t prev = dbits(v[0]);
    bw_put(&b, prev, 64);
    unsigned plz = 65, ptz = 65; /* no window yet */
    for (size_t i = 1; i < n; i++) {
        uint64_t cur = dbits(v[i]), x = cur ^ prev;
        prev = cur;
        if (!x) {
            bw_put(&b, 0, 1);
            continue;
        }
        unsigned lz = (unsigned)__builtin_clzll(x), tz = (unsigned)__builtin_ctzll(x);
        if (plz <= 64 && lz >= plz && tz >= ptz) {
            bw_put(&b, 1, 2); /* bits "1","0" */
            bw_put(&b, x >> ptz, 64 - plz - ptz);
        } else {
            unsigned mlen = 64 - lz - tz;
            bw_put(&b, 3, 2); /* bits "1","1" */
            bw_put(&b, lz, 6);
            bw_put(&b, mlen - 1, 6);
            bw_put(&b, x >> tz, mlen);
            plz = lz;
            ptz = tz;
        }
    }
    return bw_end(&b);
}

static void get_xor(rd *r, double *v, size_t n)
{
    bitr b = {r->p, r->end, 0, 0, false};
    uint64_t prev = br_get(&b, 64);
    v[0] = bitsd(prev);
    unsigned plz = 65, ptz = 65;
    for (size_t i = 1; i < n && !b.bad; i++) {
        if (br_get(&b, 1)) {
            if (br_get(&b, 1) == 0) {
                if (plz > 64) {
                    b.bad = true;
                    break;
                }
                prev ^= br_get(&b, 64 - plz - ptz) << ptz;
            } else {
                unsigned lz = (unsigned)br_get(&b, 6), mlen = (unsigned)br_get(&b, 6) + 1;
                if (lz + mlen > 64) {
                    b.bad = true;
                    break;
                }
                unsigned tz = 64 - lz - mlen;
                prev ^= br_get(&b, mlen) << tz;
                plz = lz;
                ptz = tz;
            }
        }
        v[i] = bitsd(prev);
    }
    /* the bit reader may have buffered bytes it did not use: nothing follows the XOR stream */
    r->p = b.p;
    r->bad |= b.bad;
}

/* Decimal encoding; returns NULL when too many values are not short decimals. */
static uint8_t *put_decimal(fj_ts_codec *c, uint8_t *p, const double *v, size_t n)
{
    int64_t *m = (int64_t *)c->u;
    uint8_t *exc = c->exc;
    size_t n_exc = 0, max_exc = n / EXC_DIV;
    unsigned k = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t mm;
        exc[i] = 0;
        if (dec_at(v[i], k, &mm))
            continue;
        unsigned j = k + 1;
        while (j <= 22 && !dec_at(v[i], j, &mm))
            j++;
        if (j <= 22) {
            k = j;
        } else {
            exc[i] = 1;
            if (++n_exc > max_exc)
                return NULL;
        }
    }
    size_t first_ok = n;
    for (size_t i = 0; i < n; i++) {
        if (!exc[i] && !dec_at(v[i], k, &m[i])) {
            exc[i] = 1;
            if (++n_exc > max_exc)
                return NULL;
        }
        if (!exc[i] && first_ok == n)
            first_ok = i;
    }
    int e = -(int)k;
    if (k == 0 && first_ok < n) {
        /* integers: take out common trailing zeros (m * 10^e is exact below 2^53) */
        for (;;) {
            bool all = e < 22, any = false;
            for (size_t i = 0; i < n && all; i++) {
                if (exc[i])
                    continue;
                all = m[i] % 10 == 0;
                any |= m[i] != 0;
            }
            if (!all || !any)
                break;
            for (size_t i = 0; i < n; i++)
                if (!exc[i])
                    m[i] /= 10;
            e++;
        }
    }
    /* exceptions take the neighbouring mantissa so they cost ~nothing in the stream */
    int64_t fill = first_ok < n ? m[first_ok] : 0;
    for (size_t i = 0; i < n; i++) {
        if (exc[i])
            m[i] = fill;
        else
            fill = m[i];
    }
    *p++ = VMODE_DECIMAL;
    p = put_uv(p, zz((uint64_t)(int64_t)e));
    p = put_uv(p, n_exc);
    size_t last = 0;
    for (size_t i = 0; i < n; i++) {
        if (!exc[i])
            continue;
        p = put_uv(p, i - last);
        st64(p, dbits(v[i]));
        p += 8;
        last = i;
    }
    return put_ints(c, p, (uint64_t *)m, n);
}

static void get_decimal(fj_ts_codec *c, rd *r, double *v, size_t n)
{
    int64_t e = (int64_t)unzz(get_uv(r));
    uint64_t n_exc = get_uv(r);
    if (r->bad || e < -22 || e > 22 || n_exc > n) {
        r->bad = true;
        return;
    }
    /* exceptions are read into place after the mantissas, so remember where they are */
    const uint8_t *exc_start = r->p;
    size_t pos = 0;
    for (uint64_t j = 0; j < n_exc && !r->bad; j++) {
        uint64_t gap = get_uv(r);
        if (gap > n || pos + gap >= n || (j > 0 && gap == 0)) {
            r->bad = true;
            return;
        }
        pos += gap;
        if (r->end - r->p < 8) {
            r->bad = true;
            return;
        }
        r->p += 8;
    }
    int64_t *m = (int64_t *)c->u;
    get_ints(r, (uint64_t *)m, n);
    if (r->bad)
        return;
    if (e < 0) {
        double d = p10[-e];
        for (size_t i = 0; i < n; i++)
            v[i] = (double)m[i] / d;
    } else {
        double f = p10[e];
        for (size_t i = 0; i < n; i++)
            v[i] = (double)m[i] * f;
    }
    rd x = {exc_start, r->end, false};
    pos = 0;
    for (uint64_t j = 0; j < n_exc; j++) {
        pos += get_uv(&x);
        v[pos] = bitsd(ld64(x.p));
        x.p += 8;
    }
}

/* ---- chunk ------------------------------------------------------------------------------ */

static fj_status encode(fj_ts_codec *c, const int64_t *t, const double *v, size_t n, fj_buf *out)
{
    if (n > FJ_TS_CHUNK_MAX_POINTS)
        return FJ_EINVAL;
    for (size_t i = 1; i < n; i++)
        if (t[i] <= t[i - 1])
            return FJ_EINVAL;
    size_t bound = body_bound(n);
    if (!fj_grow(&c->body, &c->body_cap, 32 + bound, 1, 64) || !ensure_n(c, n) ||
        !fj_grow(&c->bstat, &c->bstat_cap, 2 * (n / BLOCK_MIN + 2), sizeof *c->bstat, 64))
        return FJ_ENOMEM;

    /* header */
    uint8_t hdr[32], *h = hdr; /* at most 1 + 3 + 11 + 11 bytes */
    *h++ = FORMAT_VERSION;
    h = put_uv(h, n);
    if (n > 0) {
        h = put_sdv(h, t[0]);
        h = put_dv(h, (uint64_t)t[n - 1] - (uint64_t)t[0], 0);
    }
    size_t hlen = (size_t)(h - hdr);

    /* body, written after room for the header */
    uint8_t *body = c->body + 32, *p = body;
    if (n >= 2) {
        /* times as offsets from the grid t_0 + i * step (in units of the gcd of the intervals):
         * a regular series is all zeros, and a point that is a second late is one small value
         * (delta-of-delta would make it three); the int stream still picks deltas when better */
        uint64_t g = 0;
        for (size_t i = 1; i < n && g != 1; i++)
            g = gcd64((uint64_t)t[i] - (uint64_t)t[i - 1], g);
        uint64_t step = ((uint64_t)t[n - 1] - (uint64_t)t[0]) / g / (n - 1);
        for (size_t i = 1; i < n; i++)
            c->u[i - 1] = ((uint64_t)t[i] - (uint64_t)t[0]) / g - (uint64_t)i * step;
        p = put_dv(p, g, 0);
        p = put_uv(p, step);
        /* c->u is reused by put_decimal below, so the stream is written now */
        p = put_ints(c, p, c->u, n - 1);
    }
    if (n >= 1) {
        uint8_t *q = put_decimal(c, p, v, n);
        if (!q || (size_t)(q - p) > 6 * n + 16) {
            /* not decimals, or decimals so long that XOR may be smaller: keep the smaller */
            uint8_t *xs = q ? q : p;
            uint8_t *xe = put_xor(xs + 1, v, n);
            xs[0] = VMODE_XOR;
            if (!q || xe - xs < q - p) {
                memmove(p, xs, (size_t)(xe - xs));
                q = p + (xe - xs);
            }
        }
        p = q;
    }
    size_t blen = (size_t)(p - body);

    /* zstd where it pays */
    const uint8_t *payload = body;
    size_t plen = blen;
    uint8_t flags = FORMAT_VERSION;
    if (blen >= ZSTD_MIN_BODY) {
        size_t zcap = ZSTD_compressBound(blen) + 16;
        if (!c->cctx && !(c->cctx = ZSTD_createCCtx()))
            return FJ_ENOMEM;
        if (!fj_grow(&c->zbuf, &c->zbuf_cap, zcap, 1, 64))
            return FJ_ENOMEM;
        uint8_t *z = put_uv(c->zbuf, blen);
        size_t zl = ZSTD_compressCCtx(c->cctx, z, zcap - (size_t)(z - c->zbuf), body, blen, ZSTD_LEVEL);
        if (!ZSTD_isError(zl) && (size_t)(z - c->zbuf) + zl < blen) {
            payload = c->zbuf;
            plen = (size_t)(z - c->zbuf) + zl;
            flags |= FLAG_ZSTD;
        }
    }
    hdr[0] = flags;
    /* one append, so a failure leaves out untouched */
    uint8_t *blob = payload == body ? body - hlen : c->body + 32 - hlen;
    if (payload != body)
        memcpy(c->body + 32, payload, plen);
    memcpy(blob, hdr, hlen);
    return fj_buf_append(out, blob, hlen + plen);
}

fj_status fj_ts_chunk_encode(fj_ts_codec *c, const int64_t *t, const double *v, size_t n,
                             fj_buf *out)
{
    if (c)
        return encode(c, t, v, n, out);
    fj_ts_codec *tmp = fj_ts_codec_create();
    if (!tmp)
        return FJ_ENOMEM;
    fj_status st = encode(tmp, t, v, n, out);
    fj_ts_codec_destroy(tmp);
    return st;
}

static fj_status read_header(rd *r, fj_ts_chunk_hdr *h, uint8_t *flags)
{
    *flags = get_u8(r);
    uint64_t n = get_uv(r);
    h->t_first = h->t_last = 0;
    if (n > 0) {
        h->t_first = get_sdv(r);
        uint64_t span = get_udv(r);
        h->t_last = (int64_t)((uint64_t)h->t_first + span);
        if (h->t_last < h->t_first || (n == 1 && span != 0) || (n > 1 && span < n - 1))
            r->bad = true;
    }
    if (r->bad || (*flags & 0x0f) != FORMAT_VERSION || (*flags & ~(FLAG_ZSTD | 0x0f)) ||
        n > FJ_TS_CHUNK_MAX_POINTS)
        return FJ_EINVAL;
    h->n = (size_t)n;
    return FJ_OK;
}

fj_status fj_ts_chunk_header(const void *blob, size_t len, fj_ts_chunk_hdr *h)
{
    rd r = {blob, (const uint8_t *)blob + len, false};
    uint8_t flags;
    return read_header(&r, h, &flags);
}

static fj_status decode(fj_ts_codec *c, const void *blob, size_t len, int64_t *t, double *v,
                        size_t cap, size_t *np)
{
    rd r = {blob, (const uint8_t *)blob + len, false};
    fj_ts_chunk_hdr h;
    uint8_t flags;
    if (read_header(&r, &h, &flags) != FJ_OK)
        return FJ_EINVAL;
    size_t n = h.n;
    *np = n;
    if (n > cap)
        return FJ_ETOOBIG;
    if (n == 0)
        return r.p == r.end ? FJ_OK : FJ_EINVAL;
    if (!ensure_n(c, n))
        return FJ_ENOMEM;
    if (flags & FLAG_ZSTD) {
        uint64_t raw = get_uv(&r);
        if (r.bad || raw > body_bound(n))
            return FJ_EINVAL;
        if (!c->dctx && !(c->dctx = ZSTD_createDCtx()))
            return FJ_ENOMEM;
        if (!fj_grow(&c->zbuf, &c->zbuf_cap, (size_t)raw + 1, 1, 64))
            return FJ_ENOMEM;
        size_t got = ZSTD_decompressDCtx(c->dctx, c->zbuf, (size_t)raw, r.p, (size_t)(r.end - r.p));
        if (ZSTD_isError(got) || got != raw)
            return FJ_EINVAL;
        r.p = c->zbuf;
        r.end = c->zbuf + raw;
    }
    t[0] = h.t_first;
    if (n >= 2) {
        uint64_t g = get_udv(&r), step = get_uv(&r);
        if (g == 0)
            r.bad = true;
        get_ints(&r, c->u, n - 1);
        if (r.bad)
            return FJ_EINVAL;
        /* modular arithmetic is exact for a valid blob; a corrupt one fails the order checks */
        for (size_t i = 1; i < n; i++) {
            t[i] = (int64_t)((uint64_t)h.t_first + (c->u[i - 1] + (uint64_t)i * step) * g);
            if (t[i] <= t[i - 1])
                return FJ_EINVAL;
        }
        if (t[n - 1] != h.t_last)
            return FJ_EINVAL;
    }
    uint8_t mode = get_u8(&r);
    if (mode == VMODE_DECIMAL)
        get_decimal(c, &r, v, n);
    else if (mode == VMODE_XOR)
        get_xor(&r, v, n);
    else
        r.bad = true;
    if (r.bad || r.p != r.end)
        return FJ_EINVAL;
    return FJ_OK;
}

fj_status fj_ts_chunk_decode(fj_ts_codec *c, const void *blob, size_t len, int64_t *t, double *v,
                             size_t cap, size_t *n)
{
    size_t dummy;
    if (!n)
        n = &dummy;
    if (c)
        return decode(c, blob, len, t, v, cap, n);
    fj_ts_codec *tmp = fj_ts_codec_create();
    if (!tmp)
        return FJ_ENOMEM;
    fj_status st = decode(tmp, blob, len, t, v, cap, n);
    fj_ts_codec_destroy(tmp);
    return st;
}
