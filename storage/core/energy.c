/* storage/core/energy.c — the integration and sharing rules of docs/energy.md (storage/core/energy.h). */
#include "storage/core/energy.h"

#include "alloc.h"

#include <stdlib.h>
#include <string.h>

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double fj_en_cadence(const fj_en_reading *r, size_t n)
{
    if (n < 2)
        return 0;
    /* a few spacings on the stack; a long series sorts a heap copy */
    double small[64], *d = n - 1 <= 64 ? small : fj_malloc((n - 1) * sizeof *d);
    if (!d)
        return 0; /* no memory: no gap can be called */
    size_t k = 0;
    for (size_t i = 1; i < n; i++)
        if (r[i].t > r[i - 1].t)
            d[k++] = r[i].t - r[i - 1].t;
    double c = 0;
    if (k) {
        qsort(d, k, sizeof *d, cmp_dbl);
        c = d[(k - 1) / 2];
    }
    if (d != small)
        fj_free(d);
    return c;
}

bool fj_en_is_gap(double dt, double cadence)
{
    return cadence > 0 && dt > 2 * cadence;
}

double fj_en_inside(double t0, double t1, double from, double to)
{
    if (t1 <= t0)
        return 0;
    double a = t0 > from ? t0 : from, b = t1 < to ? t1 : to;
    return b > a ? (b - a) / (t1 - t0) : 0;
}

double fj_en_trapezoid(double t0, double p0, double t1, double p1, double from, double to)
{
    if (t1 <= t0)
        return 0;
    double a = t0 > from ? t0 : from, b = t1 < to ? t1 : to;
    if (b <= a)
        return 0;
    /* the line's values at the cut points, then their trapezoid */
    double slope = (p1 - p0) / (t1 - t0);
    double pa = p0 + slope * (a - t0), pb = p0 + slope * (b - t0);
    return (pa + pb) / 2 * (b - a);
}

bool fj_en_counter_rise(double v0, double v1, double wrap, double *rise)
{
    if (v1 >= v0) {
        *rise = v1 - v0;
        return true;
    }
    if (wrap > 0 && v0 < wrap) {
        *rise = (wrap - v0) + v1;
        return true;
    }
    *rise = 0;
    return false;
}

/* The seconds of [t0, t1] inside [from, to]. */
static double seconds_inside(double t0, double t1, double from, double to)
{
    return fj_en_inside(t0, t1, from, to) * (t1 - t0);
}

void fj_en_power(const fj_en_reading *r, size_t n, double cadence, double from, double to, fj_en_sum *s)
{
    if (cadence <= 0)
        cadence = fj_en_cadence(r, n);
    for (size_t i = 1; i < n; i++) {
        double t0 = r[i - 1].t, t1 = r[i].t, in = seconds_inside(t0, t1, from, to);
        if (in <= 0)
            continue;
        if (fj_en_is_gap(t1 - t0, cadence)) {
            s->missing_s += in;
            s->gaps++;
            continue;
        }
        s->joules += fj_en_trapezoid(t0, r[i - 1].v, t1, r[i].v, from, to);
        s->covered_s += in;
    }
}

void fj_en_counter(const fj_en_reading *r, size_t n, double cadence, double wrap, double from, double to,
                   fj_en_sum *s)
{
    if (cadence <= 0)
        cadence = fj_en_cadence(r, n);
    for (size_t i = 1; i < n; i++) {
        double t0 = r[i - 1].t, t1 = r[i].t, in = seconds_inside(t0, t1, from, to);
        if (in <= 0)
            continue;
        double rise;
        if (fj_en_is_gap(t1 - t0, cadence) || !fj_en_counter_rise(r[i - 1].v, r[i].v, wrap, &rise)) {
            s->missing_s += in;
            s->gaps++;
            continue;
        }
        s->joules += rise * fj_en_inside(t0, t1, from, to);
        s->covered_s += in;
    }
}

bool fj_en_interval(const fj_en_dual *a, const fj_en_dual *b, double wrap, double from, double to, double *joules,
                    bool *by_counter)
{
    double rise;
    *by_counter = false;
    if (a->has_counter && b->has_counter && fj_en_counter_rise(a->counter, b->counter, wrap, &rise)) {
        *joules = rise * fj_en_inside(a->t, b->t, from, to);
        *by_counter = true;
        return true;
    }
    if (a->has_power && b->has_power) {
        *joules = fj_en_trapezoid(a->t, a->power, b->t, b->power, from, to);
        return true;
    }
    *joules = 0;
    return false;
}

void fj_en_node_part(const fj_en_reading *r, size_t n, bool counter, double wrap, const fj_en_cover *cover,
                     size_t n_cover, double from, double to, fj_en_sum *s, bool *shared)
{
    double cadence = fj_en_cadence(r, n);
    /* before the node's first node-sample, only its own interval (as long as the one after it) */
    double start = n_cover > 1 ? cover[0].t - (cover[1].t - cover[0].t) : n_cover ? cover[0].t : 0;
    size_t c = 0;
    for (size_t i = 1; i < n; i++) {
        double t0 = r[i - 1].t, t1 = r[i].t;
        while (c < n_cover && cover[c].t < t1)
            c++;
        if (c == n_cover)
            break; /* after the node's last node-sample: nobody's */
        if (c == 0 && t1 <= start)
            continue;
        double in = fj_en_inside(t0, t1, from, to) * (t1 - t0), share = cover[c].share;
        if (in <= 0 || !(share > 0))
            continue;
        double e = 0, rise;
        bool ok = !fj_en_is_gap(t1 - t0, cadence);
        if (ok && counter) {
            ok = fj_en_counter_rise(r[i - 1].v, r[i].v, wrap, &rise);
            e = rise * fj_en_inside(t0, t1, from, to);
        } else if (ok) {
            e = fj_en_trapezoid(t0, r[i - 1].v, t1, r[i].v, from, to);
        }
        if (!ok) {
            s->missing_s += in;
            s->gaps++;
            continue;
        }
        s->joules += e * share;
        s->covered_s += in;
        if (!cover[c].alone)
            *shared = true;
    }
}

void fj_en_split(double e, const double *w, size_t n, double *out)
{
    if (!n)
        return;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += w[i] > 0 ? w[i] : 0;
    for (size_t i = 0; i < n; i++)
        out[i] += sum > 0 ? e * (w[i] > 0 ? w[i] : 0) / sum : e / (double)n;
}

/* The value of tres's entry key (an untyped count wins), else, when sum_typed, the sum of its
 * typed entries key:TYPE. -1 when none. */
static long tres_count(const char *tres, const char *key, bool sum_typed)
{
    if (!tres)
        return -1;
    size_t kl = strlen(key);
    long plain = -1, typed = -1;
    const char *p = tres;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq && (size_t)(eq - p) >= kl && memcmp(p, key, kl) == 0) {
            bool exact = (size_t)(eq - p) == kl, is_typed = !exact && p[kl] == ':';
            char *stop = NULL;
            long v = strtol(eq + 1, &stop, 10);
            if (stop != eq + 1 && stop == p + len && v >= 0) {
                if (exact)
                    plain = v;
                else if (is_typed && sum_typed)
                    typed = (typed < 0 ? 0 : typed) + v;
            }
        }
        if (!end)
            break;
        p = end + 1;
    }
    return plain >= 0 ? plain : typed;
}

long fj_en_tres_gpus(const char *tres)
{
    return tres_count(tres, "gres/gpu", true);
}

long fj_en_tres_nodes(const char *tres)
{
    return tres_count(tres, "node", false);
}
