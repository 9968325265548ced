/* api/influxql/cond.c — the WHERE clause: its time terms as a range, the rest evaluated per
 * series (tags) or per row (fields), with InfluxDB's rules: an absent tag is "", a comparison
 * with a missing value is false. Also the answer's small JSON pieces. */
#include "api/influxql/iq_int.h"

#include "timefmt.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- evaluation --------------------------------------------------------------------------------- */

static iq_val eval(const iq_expr *e, iq_ref_fn ref, void *ud);

static iq_val num(double n) { return (iq_val){.k = IQV_NUM, .n = n}; }
static iq_val boolean(bool b) { return (iq_val){.k = IQV_BOOL, .n = b}; }

static iq_val compare(iq_op op, iq_val l, iq_val r, const iq_expr *re)
{
    if (op == IQ_EQRE || op == IQ_NERE) {
        if (l.k != IQV_STR || !re || !re->re)
            return boolean(false);
        bool m = fj_re_match(re->re, l.s);
        return boolean(op == IQ_EQRE ? m : !m);
    }
    if (l.k == IQV_NULL || r.k == IQV_NULL)
        return boolean(false);
    int c;
    if (l.k == IQV_STR && r.k == IQV_STR)
        c = strcmp(l.s, r.s);
    else if (l.k != IQV_STR && r.k != IQV_STR)
        c = l.n < r.n ? -1 : l.n > r.n ? 1 : 0;
    else
        return boolean(false);
    switch (op) {
    case IQ_EQ: return boolean(c == 0);
    case IQ_NE: return boolean(c != 0);
    case IQ_LT: return boolean(c < 0);
    case IQ_LE: return boolean(c <= 0);
    case IQ_GT: return boolean(c > 0);
    case IQ_GE: return boolean(c >= 0);
    default: return boolean(false);
    }
}

static iq_val eval(const iq_expr *e, iq_ref_fn ref, void *ud)
{
    switch (e->k) {
    case IQ_NUM: return num(e->num);
    case IQ_BOOL: return boolean(e->num != 0);
    case IQ_STR: return (iq_val){.k = IQV_STR, .s = e->s};
    case IQ_DUR: return num((double)e->dur);
    case IQ_REF: return ref(ud, e->s);
    case IQ_BIN: break;
    default: return (iq_val){0};
    }
    if (e->op == IQ_AND) {
        iq_val l = eval(e->l, ref, ud);
        if (!(l.k == IQV_BOOL && l.n))
            return boolean(false);
        iq_val r = eval(e->r, ref, ud);
        return boolean(r.k == IQV_BOOL && r.n);
    }
    if (e->op == IQ_OR) {
        iq_val l = eval(e->l, ref, ud);
        if (l.k == IQV_BOOL && l.n)
            return boolean(true);
        iq_val r = eval(e->r, ref, ud);
        return boolean(r.k == IQV_BOOL && r.n);
    }
    iq_val l = eval(e->l, ref, ud);
    if (e->op == IQ_EQRE || e->op == IQ_NERE)
        return compare(e->op, l, (iq_val){0}, e->r);
    iq_val r = eval(e->r, ref, ud);
    switch (e->op) {
    case IQ_ADD:
    case IQ_SUB:
    case IQ_MUL:
    case IQ_DIV:
        if (l.k != IQV_NUM || r.k != IQV_NUM)
            return (iq_val){0};
        return num(e->op == IQ_ADD ? l.n + r.n : e->op == IQ_SUB ? l.n - r.n : e->op == IQ_MUL ? l.n * r.n
                                                                     : r.n == 0 ? 0 : l.n / r.n);
    default: return compare(e->op, l, r, NULL);
    }
}

bool iq_cond_true(const iq_expr *e, iq_ref_fn ref, void *ud)
{
    if (!e)
        return true;
    iq_val v = eval(e, ref, ud);
    return v.k == IQV_BOOL && v.n;
}

bool iq_cond_uses_fields(const iq_expr *e, const iq_meas *m)
{
    if (!e)
        return false;
    if (e->k == IQ_REF)
        return strcmp(e->s, "time") && !iq_meas_has_tag(m, e->s);
    if (e->k == IQ_BIN)
        return iq_cond_uses_fields(e->l, m) || iq_cond_uses_fields(e->r, m);
    return false;
}

/* --- time terms --------------------------------------------------------------------------------- */

/* RFC 3339 with optional fraction, or "YYYY-MM-DD[ HH:MM:SS[.frac]]" as InfluxQL also reads. */
static bool parse_time_str(const char *s, int64_t *ns)
{
    char buf[64];
    size_t n = strlen(s);
    if (n < 10 || n >= sizeof buf - 12)
        return false;
    memcpy(buf, s, n + 1);
    if (n == 10)
        strcpy(buf + 10, "T00:00:00Z");
    else if (buf[10] == ' ')
        buf[10] = 'T';
    int64_t frac = 0;
    char *dot = strchr(buf, '.');
    if (dot) {
        char *p = dot + 1;
        int64_t scale = 100000000;
        while (isdigit((unsigned char)*p)) {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
        memmove(dot, p, strlen(p) + 1);
    }
    size_t m = strlen(buf);
    if (m == 19)
        strcpy(buf + 19, "Z");
    fj_time t;
    if (fj_time_parse_rfc3339(buf, 0, &t) != FJ_OK)
        return false;
    *ns = t * 1000000000LL + frac;
    return true;
}

/* A time value: now(), a duration or integer (ns since the epoch), a time string, and sums. */
static bool time_value(iq_ctx *c, const iq_expr *e, int64_t *ns)
{
    switch (e->k) {
    case IQ_NOW: *ns = c->now_ns; return true;
    case IQ_DUR: *ns = e->dur; return true;
    case IQ_NUM: *ns = (int64_t)e->num; return true;
    case IQ_STR: return parse_time_str(e->s, ns);
    case IQ_BIN:
        if (e->op == IQ_ADD || e->op == IQ_SUB) {
            int64_t l, r;
            if (!time_value(c, e->l, &l) || !time_value(c, e->r, &r))
                return false;
            *ns = e->op == IQ_ADD ? l + r : l - r;
            return true;
        }
        return false;
    default: return false;
    }
}

static bool is_time_ref(const iq_expr *e)
{
    return e && e->k == IQ_REF && !strcasecmp(e->s, "time");
}

static bool mentions_time(const iq_expr *e)
{
    if (!e)
        return false;
    if (is_time_ref(e))
        return true;
    return e->k == IQ_BIN && (mentions_time(e->l) || mentions_time(e->r));
}

static iq_op flip(iq_op op)
{
    switch (op) {
    case IQ_LT: return IQ_GT;
    case IQ_LE: return IQ_GE;
    case IQ_GT: return IQ_LT;
    case IQ_GE: return IQ_LE;
    default: return op;
    }
}

static bool split(iq_ctx *c, const iq_expr *e, int64_t *tmin, int64_t *tmax, const iq_expr **rest, fj_arena *a,
                  char *msg, size_t cap)
{
    if (e->k == IQ_BIN && e->op == IQ_AND) {
        const iq_expr *l = NULL, *r = NULL;
        if (!split(c, e->l, tmin, tmax, &l, a, msg, cap) || !split(c, e->r, tmin, tmax, &r, a, msg, cap))
            return false;
        if (l && r) {
            iq_expr *b = fj_arena_calloc(a, 1, sizeof *b);
            if (!b)
                return snprintf(msg, cap, "out of memory"), false;
            *b = *e;
            b->l = (iq_expr *)l;
            b->r = (iq_expr *)r;
            *rest = b;
        } else {
            *rest = l ? l : r;
        }
        return true;
    }
    if (e->k == IQ_BIN && e->op >= IQ_EQ && e->op <= IQ_GE && (is_time_ref(e->l) || is_time_ref(e->r))) {
        iq_op op = is_time_ref(e->l) ? e->op : flip(e->op);
        const iq_expr *v = is_time_ref(e->l) ? e->r : e->l;
        int64_t t;
        if (!time_value(c, v, &t))
            return snprintf(msg, cap, "invalid time condition: cannot read the time value"), false;
        switch (op) {
        case IQ_EQ: *tmin = t > *tmin ? t : *tmin; *tmax = t < *tmax ? t : *tmax; break;
        case IQ_GT: t = t == IQ_NO_MAX ? t : t + 1; /* fall through */
        case IQ_GE: *tmin = t > *tmin ? t : *tmin; break;
        case IQ_LT: t = t == IQ_NO_MIN ? t : t - 1; /* fall through */
        case IQ_LE: *tmax = t < *tmax ? t : *tmax; break;
        default: return snprintf(msg, cap, "invalid operator != on time"), false;
        }
        *rest = NULL;
        return true;
    }
    if (mentions_time(e))
        return snprintf(msg, cap, "invalid time condition: time may only be compared at the top level, joined by AND"),
               false;
    *rest = e;
    return true;
}

bool iq_cond_split(iq_ctx *c, const iq_expr *cond, int64_t *tmin, int64_t *tmax, const iq_expr **rest, char *msg,
                   size_t cap)
{
    *tmin = IQ_NO_MIN;
    *tmax = IQ_NO_MAX;
    *rest = NULL;
    msg[0] = '\0';
    if (!cond)
        return true;
    return split(c, cond, tmin, tmax, rest, c->a, msg, cap);
}

/* --- JSON pieces ----------------------------------------------------------------------------------- */

/* Digits of v into the end of buf[0..cap); returns where they start. */
static char *digits(char *end, uint64_t v, int min_width)
{
    char *p = end;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
        min_width--;
    } while (v || min_width > 0);
    return p;
}

/* v as decimal text at dst; its length. */
static size_t fmt_i64(char *dst, int64_t v)
{
    char buf[24], *end = buf + sizeof buf;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char *p = digits(end, u, 1);
    if (v < 0)
        *--p = '-';
    memcpy(dst, p, (size_t)(end - p));
    return (size_t)(end - p);
}

/* floor(t / d) for the epoch units, each a constant division */
static int64_t floor_div(int64_t t, int64_t d)
{
    return t / d - (t % d < 0);
}

/* Answers carry tens of thousands of times and numbers: written without printf, which was most of
 * the cost of a large answer. */
size_t iq_fmt_time(const iq_ctx *c, char *dst, int64_t t)
{
    switch (c->epoch) { /* floor, as InfluxDB truncates toward the past */
    case IQ_EPOCH_NS: return fmt_i64(dst, t);
    case IQ_EPOCH_US: return fmt_i64(dst, floor_div(t, 1000));
    case IQ_EPOCH_MS: return fmt_i64(dst, floor_div(t, 1000000));
    case IQ_EPOCH_S: return fmt_i64(dst, floor_div(t, 1000000000LL));
    case IQ_EPOCH_M: return fmt_i64(dst, floor_div(t, 60000000000LL));
    case IQ_EPOCH_H: return fmt_i64(dst, floor_div(t, 3600000000000LL));
    case IQ_EPOCH_RFC3339: break;
    }
    int64_t s = t / 1000000000LL, f = t % 1000000000LL;
    if (f < 0) {
        f += 1000000000LL;
        s--;
    }
    int32_t zone = c->zone ? fj_tz_offset(c->zone, s) : 0; /* local time, then its offset */
    s += zone;
    int64_t days = s / 86400 - (s % 86400 < 0), sod = s - days * 86400;
    /* civil from days (Howard Hinnant's algorithm) */
    int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    if (y < 0 || y > 9999) { /* outside RFC 3339's years: the plain number, quoted */
        dst[0] = '"';
        size_t n = 1 + fmt_i64(dst + 1, t);
        dst[n++] = '"';
        return n;
    }
    /* "yyyy-mm-ddThh:mm:ss[.fraction]Z" */
    char b[40], *e = b + 21;
    memcpy(b, "\"0000-00-00T00:00:00", 20);
    digits(b + 5, (uint64_t)y, 4);
    digits(b + 8, (uint64_t)m, 2);
    digits(b + 11, (uint64_t)d, 2);
    digits(b + 14, (uint64_t)(sod / 3600), 2);
    digits(b + 17, (uint64_t)(sod / 60 % 60), 2);
    digits(b + 20, (uint64_t)(sod % 60), 2);
    e = b + 20;
    if (f) {
        *e++ = '.';
        digits(e + 9, (uint64_t)f, 9);
        e += 9;
        while (e[-1] == '0')
            e--;
    }
    if (zone) { /* as Go's Z07:00: hours and minutes, Z for none */
        int32_t az = zone < 0 ? -zone : zone;
        e[0] = zone < 0 ? '-' : '+';
        digits(e + 3, (uint64_t)(az / 3600), 2);
        e[3] = ':';
        digits(e + 6, (uint64_t)(az / 60 % 60), 2);
        e += 6;
    } else
        *e++ = 'Z';
    *e++ = '"';
    memcpy(dst, b, (size_t)(e - b));
    return (size_t)(e - b);
}

size_t iq_fmt_num(char *dst, double v)
{
    if (!isfinite(v)) {
        memcpy(dst, "null", 4);
        return 4;
    }
    /* the fewest decimals (up to 9) whose text reads back as v: r / 10^k is correctly rounded, as
     * reading "r e-k" is, so equality means the text is exact */
    static const double pow10[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    double a = fabs(v);
    for (int k = 0; k <= 9 && a * pow10[k] < 9007199254740992.0; k++) {
        double r = nearbyint(a * pow10[k]);
        if (r / pow10[k] != a)
            continue;
        char buf[48], *end = buf + sizeof buf, *p;
        uint64_t u = (uint64_t)r, ip = u, fp = 0;
        if (k) {
            uint64_t p10 = (uint64_t)pow10[k];
            ip = u / p10;
            fp = u % p10;
            p = digits(end, fp, k);
            *--p = '.';
            p = digits(p, ip, 1);
        } else {
            p = digits(end, ip, 1);
        }
        if (v < 0 && r != 0)
            *--p = '-';
        memcpy(dst, p, (size_t)(end - p));
        return (size_t)(end - p);
    }
    if (a >= 9007199254740992.0 && a < 1e21) { /* a whole number past 2^53: Go writes its shortest digits, then zeros */
        char e[40];
        for (int p = 1; p <= 17; p++) {
            snprintf(e, sizeof e, "%.*e", p - 1, a);
            if (strtod(e, NULL) != a)
                continue;
            char *x = strchr(e, 'e');
            int exp = x ? atoi(x + 1) : 0;
            size_t n = 0;
            if (v < 0)
                dst[n++] = '-';
            for (const char *q = e; q < x; q++)
                if (*q != '.')
                    dst[n++] = *q;
            for (int z = p - 1; z < exp; z++)
                dst[n++] = '0';
            return n;
        }
    }
    return (size_t)snprintf(dst, IQ_FMT_MAX, "%.17g", v); /* always reads back as v */
}

void iq_put_time(const iq_ctx *c, fj_buf *out, int64_t t)
{
    char b[IQ_FMT_MAX];
    fj_buf_append(out, b, iq_fmt_time(c, b, t));
}

void iq_put_num(fj_buf *out, double v)
{
    char b[IQ_FMT_MAX];
    fj_buf_append(out, b, iq_fmt_num(b, v));
}

void iq_put_stmt_error(fj_buf *out, int id, const char *msg)
{
    fj_buf_printf(out, "{\"statement_id\":%d,\"error\":", id);
    fj_buf_json_str(out, msg);
    fj_buf_puts(out, "}");
}
