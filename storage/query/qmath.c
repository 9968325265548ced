/* storage/query/qmath.c — bucket grids, CPU utilisation from cumulative counters, accumulators, varints. */
#include "storage/query/qmath.h"

#include <limits.h>
#include <string.h>

/* A little-endian word as read from memory. */
static inline uint64_t le64(uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(w);
#else
    return w;
#endif
}

int64_t fj_qm_default_bucket(fj_time from, fj_time to)
{
    int64_t span = to > from ? to - from : 0;
    int64_t b = span / 120 + (span % 120 != 0);
    return b < 60 ? 60 : b;
}

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

fj_status fj_qm_grid_make(fj_time from, fj_time to, int64_t step, size_t max_buckets, fj_qm_grid *g)
{
    if (step <= 0 || from > to)
        return FJ_EINVAL;
    int64_t first = floor_div(from, step), last = floor_div(to, step);
    uint64_t n = (uint64_t)(last - first) + 1;
    if (n > max_buckets)
        return FJ_ETOOBIG;
    g->from = first * step;
    g->step = step;
    g->n = (size_t)n;
    return FJ_OK;
}

long fj_qm_bucket(const fj_qm_grid *g, fj_time t)
{
    if (t < g->from)
        return -1;
    int64_t i = (t - g->from) / g->step;
    return (uint64_t)i < g->n ? (long)i : -1;
}

size_t fj_qm_varints(const unsigned char *p, size_t len, uint64_t *out, size_t max)
{
    size_t n = 0, i = 0;
    while (i < len) {
        uint64_t v = 0;
        unsigned shift = 0;
        for (;;) {
            if (i >= len || shift > 63)
                return (size_t)-1;
            unsigned char b = p[i++];
            if (shift == 63 && (b & 0x7e))
                return (size_t)-1; /* more than 64 bits */
            v |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80))
                break;
            shift += 7;
        }
        if (n >= max)
            return (size_t)-1;
        out[n++] = v;
    }
    return n;
}

bool fj_qm_cpu_interval(fj_time t0, fj_time boot0, const uint64_t *c0, size_t n0, fj_time t1, fj_time boot1,
                        const uint64_t *c1, size_t n1, fj_qm_cpu *out)
{
    if (t1 <= t0)
        return false;
    if (boot0 && boot1 && boot0 != boot1)
        return false;
    size_t n = n0 < n1 ? n0 : n1;
    if (n == 0)
        return false;
    double busy = 0;
    for (size_t i = 0; i < n; i++)
        if (c1[i] > c0[i])
            busy += (double)(c1[i] - c0[i]);
    out->busy_s = busy;
    out->seconds = (double)(t1 - t0);
    out->cores = n;
    return true;
}

int fj_qm_cpu_step(fj_qm_cpustate *s, fj_time t, fj_time boot, const unsigned char *p, size_t len, fj_qm_cpu *out)
{
    if (!p || !len || (s->have && t <= s->t))
        return 0;
    if (len > s->cap) { /* never more counters than bytes */
        s->have = false;
        return -1;
    }
    bool interval = s->have && !(s->boot && boot && s->boot != boot);
    size_t nmin = interval ? s->n : 0, i = 0;
    uint64_t busy = 0, *c = s->c;
    const unsigned char *q = p, *end = p + len;
    /* Decode and subtract in one pass. Counters of a few weeks take 1 to 3 bytes: while 8 bytes
     * remain, such a value is read as one little-endian word, its length found from the first
     * byte without the continuation bit, and its 7-bit groups gathered without branches. Longer
     * values and the tail take the checked loop. The subtraction is branch-free (a decrease
     * counts 0). */
    while (q < end) {
        uint64_t v, w = 0, ends = 0;
        unsigned n = 9;
        if (end - q >= 8) {
            memcpy(&w, q, 8);
            w = le64(w);
            ends = ~w & 0x8080808080808080ull; /* bytes without the continuation bit */
            if (ends)
                n = (unsigned)(__builtin_ctzll(ends) >> 3) + 1;
        }
        if (n <= 3) {
            v = (w & 0x7f) | ((w >> 1) & 0x3f80) | ((w >> 2) & 0x1fc000);
            v &= ((uint64_t)1 << (7 * n)) - 1;
            q += n;
        } else {
            v = 0;
            unsigned sh = 0;
            for (;;) {
                if (q == end || sh > 63 || (sh == 63 && *q > 1)) {
                    s->have = false; /* malformed: the state starts over */
                    return -1;
                }
                uint64_t b = *q++;
                v |= (b & 0x7f) << sh;
                if (!(b & 0x80))
                    break;
                sh += 7;
            }
        }
        if (i < nmin) {
            uint64_t old = c[i];
            busy += v > old ? v - old : 0;
        }
        c[i++] = v;
    }
    if (nmin > i)
        nmin = i;
    fj_time t0 = s->t;
    s->t = t;
    s->boot = boot;
    s->n = i;
    s->have = true;
    if (!nmin)
        return 0;
    out->busy_s = (double)busy;
    out->seconds = (double)(t - t0);
    out->cores = nmin;
    return 1;
}

double fj_qm_cpu_cores(const fj_qm_cpu *c)
{
    return c->seconds > 0 ? c->busy_s / c->seconds : 0;
}

double fj_qm_cpu_util(const fj_qm_cpu *c)
{
    return c->cores ? fj_qm_cpu_cores(c) / (double)c->cores * 100.0 : 0;
}

void fj_qm_addw(fj_qm_acc *a, double v, double weight)
{
    if (a->n == 0 || v > a->max)
        a->max = v;
    a->sum += v * weight;
    a->w += weight;
    a->n++;
}

void fj_qm_add(fj_qm_acc *a, double v)
{
    fj_qm_addw(a, v, 1.0);
}

bool fj_qm_avg(const fj_qm_acc *a, double *out)
{
    if (a->n == 0 || a->w <= 0)
        return false;
    *out = a->sum / a->w;
    return true;
}
