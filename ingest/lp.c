/* lp.c — InfluxDB line-protocol parser (see lp.h for the contract).
 *
 * One pass over each line; tokens are slices of the body. Where a measurement, key or tag value
 * ends is found in a bitmap of "stop" bytes per 64-byte block (SSE2 where there is SSE2), so the
 * common token costs a ctz rather than a branch per byte; escapes and bytes >= 0x80 are stops too,
 * handled out of line. Numbers are scanned and accumulated in one pass (8 digits at a time) and
 * converted exactly: Clinger's fast path, else strtod in the C locale. That is what makes the
 * ClusterCockpit lines go at several million per second per core. */
#define _GNU_SOURCE /* memrchr, strtod_l */
#include "ingest/lp.h"

#include "alloc.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    C_NAME = 0x01,    /* plain measurement byte: printable ASCII but `,` ` ` `\` (documentation:
                         scan_token takes C_KEY's complement as stops and lets `=` through) */
    C_KEY = 0x02,     /* plain key/tag-value byte: printable ASCII but `,` `=` ` ` `\` */
    C_FVAL = 0x04,    /* may be part of an unquoted field value: all but `,` ` ` CR LF */
    C_COMMENT = 0x08, /* may be in a comment: all but 0x00-0x1f and 0x7f */
    C_DIGIT = 0x10,
    C_ENAME = 0x20,   /* escapable after `\` in a measurement */
    C_EKEY = 0x40,    /* escapable after `\` in keys and tag values */
    C_ESTR = 0x80,    /* escapable after `\` in a string value */
};

static const unsigned char cls[256] = {
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04, 0x04, 0x00, 0x04, 0x04,
    0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,
    0x68, 0x0f, 0x8f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x68, 0x0f, 0x0f, 0x0f,
    0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x1f, 0x0f, 0x0f, 0x0f, 0x4d, 0x0f, 0x0f,
    0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f,
    0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x8c, 0x0f, 0x0f, 0x0f,
    0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x8f, 0x0f,
    0x0f, 0x0f, 0x8f, 0x0f, 0x8f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x04,
    0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c,
    0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c,
    0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c,
    0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c,
    0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c,
    0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c,
    0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c,
    0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c,

};

#define CLS(c) cls[(unsigned char)(c)]

/* A bitmap of the bytes that may end a measurement or key in the 64 bytes from base (next_stop). */
typedef struct stops {
    uintptr_t base;
    uint64_t mask;
} stops;

struct fj_lp_parser {
    const char *cur, *end; /* cur: start of the next line, blank lines and comments skipped */
    const char *linestart; /* start of cur's physical line (before its leading spaces) */
    size_t line;           /* line number at cur */
    fj_lp_tag *tags;
    size_t tags_cap;
    fj_lp_field *fields;
    size_t fields_cap;
    stops blk; /* the block of stop bytes last scanned (see next_stop) */
    char *num; /* copy of a long float token for strtod */
    size_t num_cap;
    size_t err_line, err_col;
};

enum { INITIAL_ITEMS = 16 };

/* --- small helpers ------------------------------------------------------------------------ */

/* Consumes one end of line at *ps: LF, CR LF, a CR that ends the body, or the end of the body. */
static inline bool take_eol(const char **ps, const char *e, size_t *nl)
{
    const char *s = *ps;
    if (s == e)
        return true;
    if (*s == '\n') {
        *ps = s + 1;
        ++*nl;
        return true;
    }
    if (*s == '\r') {
        if (s + 1 == e) {
            *ps = e;
            return true;
        }
        if (s[1] == '\n') {
            *ps = s + 2;
            ++*nl;
            return true;
        }
    }
    return false;
}

static size_t count_nl(const char *s, const char *e)
{
    size_t n = 0;
    while (s < e && (s = memchr(s, '\n', (size_t)(e - s))) != NULL) {
        n++;
        s++;
    }
    return n;
}

/* Strict UTF-8 as Go's utf8.Valid: no overlongs, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const unsigned char *s, const unsigned char *e)
{
    while (s < e) {
        unsigned c = *s;
        if (c < 0x80) {
            s++;
            continue;
        }
        size_t n;
        unsigned lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf)
            n = 1;
        else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        } else
            return false;
        if ((size_t)(e - s) <= n)
            return false;
        if (s[1] < lo || s[1] > hi)
            return false;
        for (size_t i = 2; i <= n; i++)
            if ((s[i] & 0xc0) != 0x80)
                return false;
        s += n + 1;
    }
    return true;
}

#if defined(__SSE2__)
#include <emmintrin.h>

/* stops64 for 16 bytes. A byte >= 0x80 is negative as int8, so the signed compare that catches
 * control bytes and space catches it too. */
static inline unsigned stops16(const char *s)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i m = _mm_cmplt_epi8(v, _mm_set1_epi8(0x21));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8(',')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('=')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
    return (unsigned)_mm_movemask_epi8(m);
}

/* Bit i set when s[i] is `"`, `\`, LF or >= 0x80: what a string value's scan must look at. */
static inline unsigned string_stops(const char *s)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i m = _mm_cmplt_epi8(v, _mm_setzero_si128());
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));
    return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* Bit i set when s[i] may end a plain run of a measurement or key: a control byte, space, `,`, `=`,
 * `\`, 0x7f, or a byte >= 0x80 (the bytes without C_KEY). Needs 64 readable bytes at s. */
static inline uint64_t stops64(const char *s)
{
    uint64_t m = 0;
#if defined(__SSE2__)
    for (int k = 0; k < 4; k++)
        m |= (uint64_t)stops16(s + 16 * k) << (16 * k);
#else
    for (int k = 0; k < 64; k++)
        m |= (uint64_t)!(CLS(s[k]) & C_KEY) << k;
#endif
    return m;
}

/* stops64 for the body's last e - s < 64 bytes: bits past e are cleared, so "none" means e. */
static __attribute__((noinline)) uint64_t stops_tail(const char *s, const char *e)
{
    char pad[64] = {0};
    memcpy(pad, s, (size_t)(e - s));
    return stops64(pad) & ((UINT64_C(1) << (e - s)) - 1);
}

/* The first byte at or after s (and before e) that may end a key, or e. Rather than testing byte
 * by byte, the parser keeps a bitmap of such bytes for one 64-byte block of the body (the
 * structural-index idea of simdjson): a token end is then a ctz, and the bitmap serves the next
 * tokens and usually the next line too. */
static inline __attribute__((always_inline)) const char *next_stop(stops *b, const char *s,
                                                                   const char *e)
{
    for (;;) {
        uintptr_t off = (uintptr_t)s - b->base;
        if (off < 64) {
            uint64_t m = b->mask & (~UINT64_C(0) << off);
            if (m)
                return (const char *)(b->base + (uintptr_t)__builtin_ctzll(m));
            if (b->base + 64 >= (uintptr_t)e)
                return e;
            s = (const char *)(b->base + 64);
        }
        b->mask = e - s >= 64 ? stops64(s) : stops_tail(s, e);
        b->base = (uintptr_t)s;
    }
}

/* Scans a measurement (name true: `=` is an ordinary byte, escapes are C_ENAME) or a key or tag
 * value (escapes are C_EKEY). *esc tells whether an escape was seen, *high whether a byte >= 0x80
 * was (the caller then validates UTF-8). */
static inline __attribute__((always_inline)) const char *scan_token(stops *b, const char *s,
                                                                    const char *e, bool name,
                                                                    bool *esc, bool *high)
{
    for (;;) {
        s = next_stop(b, s, e);
        if (s == e)
            return s;
        unsigned char c = (unsigned char)*s;
        if (c == '\\') {
            if (s + 1 < e && (CLS(s[1]) & (name ? C_ENAME : C_EKEY))) {
                *esc = true;
                s += 2;
            } else {
                s++; /* a backslash that escapes nothing is an ordinary byte */
            }
        } else if (c >= 0x80) {
            *high = true;
            s++;
        } else if (c == '=' && name) {
            s++;
        } else {
            return s;
        }
    }
}

static unsigned esc_bit(fj_lp_esc k)
{
    switch (k) {
    case FJ_LP_ESC_NAME: return C_ENAME;
    case FJ_LP_ESC_KEY: return C_EKEY;
    case FJ_LP_ESC_STRING: return C_ESTR;
    default: return 0;
    }
}

/* The unescaped byte at s->p[*i], advancing *i past it (and its backslash). */
static inline unsigned char unesc_next(const fj_lp_str *s, unsigned bit, size_t *i)
{
    unsigned char c = (unsigned char)s->p[*i];
    if (c == '\\' && bit && *i + 1 < s->n && (CLS(s->p[*i + 1]) & bit)) {
        c = (unsigned char)s->p[*i + 1];
        *i += 2;
        if (bit == C_ESTR)
            c = c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : c;
        return c;
    }
    ++*i;
    return c;
}

static bool str_equal(const fj_lp_str *a, const fj_lp_str *b)
{
    if (!a->esc && !b->esc)
        return a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
    unsigned ba = esc_bit(a->esc), bb = esc_bit(b->esc);
    size_t i = 0, j = 0;
    while (i < a->n && j < b->n)
        if (unesc_next(a, ba, &i) != unesc_next(b, bb, &j))
            return false;
    return i == a->n && j == b->n;
}

static uint32_t str_hash(const fj_lp_str *s)
{
    unsigned bit = esc_bit(s->esc);
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < s->n;)
        h = (h ^ unesc_next(s, bit, &i)) * 16777619u;
    return h;
}

/* A tag whose key an earlier tag has too, or NULL: pairwise for a handful, a hash set beyond.
 * Only called when the keys are not already strictly ascending (see parse_line). */
static const fj_lp_tag *dup_tag(const fj_lp_tag *t, size_t n)
{
    if (n <= 16) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (t[i].key.n == t[j].key.n && str_equal(&t[i].key, &t[j].key))
                    return &t[i];
        return NULL;
    }
    enum { SLOTS = 2 * FJ_LP_MAX_TAGS };
    uint16_t slot[SLOTS];
    memset(slot, 0xff, sizeof slot);
    for (size_t i = 0; i < n; i++) {
        size_t h = str_hash(&t[i].key) & (SLOTS - 1);
        while (slot[h] != 0xffff) {
            if (str_equal(&t[slot[h]].key, &t[i].key))
                return &t[i];
            h = (h + 1) & (SLOTS - 1);
        }
        slot[h] = (uint16_t)i;
    }
    return NULL;
}

/* Whether raw key a sorts strictly before raw key b (bytewise, a prefix first). */
static inline bool raw_before(const fj_lp_str *a, const fj_lp_str *b)
{
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++) /* keys are short and differ early: no call to memcmp */
        if (a->p[i] != b->p[i])
            return (unsigned char)a->p[i] < (unsigned char)b->p[i];
    return a->n < b->n;
}

/* "'x'" for printable ASCII, else a name or hex, for error messages (never copies body bytes
 * that could be invalid UTF-8 into a message). */
static const char *show(char buf[16], const char *s, const char *e)
{
    if (s >= e)
        return "end of input";
    unsigned char c = (unsigned char)*s;
    if (c == ' ')
        return "space";
    if (c == '\n')
        return "newline";
    if (c == '\r')
        return "carriage return";
    if (c == '\t')
        return "tab";
    if (c > 0x20 && c < 0x7f)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02x", c);
    return buf;
}

/* --- numbers ------------------------------------------------------------------------------ */

static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;

static void c_locale_init(void)
{
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* strtod of a validated decimal float (so no hex, inf or nan can reach it), in the C locale
 * whatever the process locale is. */
static fj_status slow_float(fj_lp_parser *p, const char *b, size_t n, double *out)
{
    char stack[128];
    char *buf = stack;
    if (n >= sizeof stack) {
        if (n >= p->num_cap) {
            char *nb = fj_realloc(p->num, n + 1);
            if (!nb)
                return FJ_ENOMEM;
            p->num = nb;
            p->num_cap = n + 1;
        }
        buf = p->num;
    }
    memcpy(buf, b, n);
    buf[n] = '\0';
    pthread_once(&c_locale_once, c_locale_init);
    *out = c_locale != (locale_t)0 ? strtod_l(buf, NULL, c_locale) : strtod(buf, NULL);
    return FJ_OK;
}

static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SWAR_DIGITS 1
static inline uint64_t load8(const char *s)
{
    uint64_t v;
    memcpy(&v, s, 8);
    return v;
}

/* Whether the 8 bytes in v are all ASCII digits. */
static inline bool eight_digits(uint64_t v)
{
    return ((v & UINT64_C(0xF0F0F0F0F0F0F0F0)) |
            (((v + UINT64_C(0x0606060606060606)) & UINT64_C(0xF0F0F0F0F0F0F0F0)) >> 4)) ==
           UINT64_C(0x3333333333333333);
}

/* The value of 8 ASCII digits, first digit most significant (the fast_float/simdjson trick). */
static inline uint64_t eight_value(uint64_t v)
{
    v -= UINT64_C(0x3030303030303030);
    v = v * 10 + (v >> 8);
    return (((v & UINT64_C(0x000000FF000000FF)) * UINT64_C(0x000F424000000064)) +
            (((v >> 16) & UINT64_C(0x000000FF000000FF)) * UINT64_C(0x0000271000000001))) >> 32;
}
#endif

/* Value of n <= 19 known digits at s (cannot overflow). */
static inline uint64_t digits_value(const char *s, size_t n)
{
    uint64_t u = 0;
#ifdef SWAR_DIGITS
    for (; n >= 8; n -= 8, s += 8)
        u = u * 100000000 + eight_value(load8(s));
#endif
    for (; n; n--)
        u = u * 10 + (uint64_t)(*s++ - '0');
    return u;
}

/* Value of the known digits s[0..n) as uint64; false on overflow. Leading zeros are allowed. */
static inline bool digits_u64(const char *s, size_t n, uint64_t *out)
{
    while (n > 19 && *s == '0')
        s++, n--;
    if (n <= 19) {
        *out = digits_value(s, n);
        return true;
    }
    if (n > 20)
        return false;
    uint64_t u = digits_value(s, 19);
    unsigned d = (unsigned)(s[19] - '0');
    if (u > (UINT64_MAX - d) / 10)
        return false;
    *out = u * 10 + d;
    return true;
}

/* -u (neg) or u as int64, for u <= 2^63 (neg) or u <= INT64_MAX. */
static inline int64_t to_i64(uint64_t u, bool neg)
{
    if (!neg)
        return (int64_t)u;
    return u > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)u;
}

/* -digits as int64 (neg) or +digits; false when out of range. */
static inline bool digits_i64(const char *s, size_t n, bool neg, int64_t *out)
{
    uint64_t u;
    if (!digits_u64(s, n, &u) || u > (uint64_t)INT64_MAX + neg)
        return false;
    *out = to_i64(u, neg);
    return true;
}

static const uint64_t pow10_u64[20] = {
    UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000), UINT64_C(100000),
    UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000), UINT64_C(1000000000),
    UINT64_C(10000000000), UINT64_C(100000000000), UINT64_C(1000000000000),
    UINT64_C(10000000000000), UINT64_C(100000000000000), UINT64_C(1000000000000000),
    UINT64_C(10000000000000000), UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
    UINT64_C(10000000000000000000)};

/* Scans the digits at *ps, returning how many there were; *u is their value when that count is at
 * most 19 (and garbage beyond: use digits_u64 then). One pass, eight digits at a time while there
 * are eight. (Shifting a shorter run into a '0'-padded word to save the per-digit branch measured
 * slower on ClusterCockpit values: their short runs predict well.) */
static inline size_t scan_digits(const char **ps, const char *e, uint64_t *u)
{
    const char *s = *ps, *s0 = s;
    uint64_t v = 0;
    unsigned d;
#ifdef SWAR_DIGITS
    uint64_t w;
    while (e - s >= 8 && eight_digits(w = load8(s))) {
        v = v * 100000000 + eight_value(w);
        s += 8;
    }
#endif
    while (s < e && (d = (unsigned)(unsigned char)*s - '0') < 10) {
        v = v * 10 + d;
        s++;
    }
    *ps = s;
    *u = v;
    return (size_t)(s - s0);
}

enum num_result { NUM_OK, NUM_SYNTAX, NUM_RANGE, NUM_NOMEM };

/* Parses the unquoted numeric field value at s (which starts with `-`, `.` or a digit) into f;
 * *endp receives the end of the value. The value must end at a separator (`,` ` ` CR LF) or the
 * end of the body. */
static enum num_result parse_number(fj_lp_parser *p, const char *s, const char *e, fj_lp_field *f,
                                    const char **endp)
{
    const char *b = s;
    bool neg = *s == '-';
    s += neg;
    const char *i0 = s;
    uint64_t m;
    size_t ni = scan_digits(&s, e, &m);
    const char *i1 = s;

    if (s < e && (*s == 'i' || *s == 'u') && (s + 1 == e || !(CLS(s[1]) & C_FVAL))) {
        *endp = s + 1;
        if (ni == 0)
            return NUM_SYNTAX;
        if (*s == 'u') {
            if (neg)
                return NUM_SYNTAX;
            f->type = FJ_LP_UINT;
            if (ni <= 19) {
                f->v.u = m;
                return NUM_OK;
            }
            return digits_u64(i0, ni, &f->v.u) ? NUM_OK : NUM_RANGE;
        }
        f->type = FJ_LP_INT;
        return digits_i64(i0, ni, neg, &f->v.i) ? NUM_OK : NUM_RANGE;
    }

    const char *f0 = s, *f1 = s;
    size_t nf = 0;
    if (s < e && *s == '.') {
        f0 = ++s;
        uint64_t fv;
        nf = scan_digits(&s, e, &fv);
        f1 = s;
        if (nf <= 19)
            m = m * pow10_u64[nf] + fv; /* meaningful only while ni + nf <= 19 */
    }
    if (ni == 0 && nf == 0) {
        *endp = s;
        return NUM_SYNTAX;
    }
    long ex = 0;
    if (s < e && (*s == 'e' || *s == 'E')) {
        s++;
        bool eneg = false;
        if (s < e && (*s == '+' || *s == '-'))
            eneg = *s++ == '-';
        if (s == e || !(CLS(*s) & C_DIGIT)) {
            *endp = s;
            return NUM_SYNTAX;
        }
        for (; s < e && (CLS(*s) & C_DIGIT); s++)
            if (ex < 100000) /* far past any double; only the sign of the excess matters */
                ex = ex * 10 + (*s - '0');
        if (eneg)
            ex = -ex;
    }
    *endp = s;
    if (s < e && (CLS(*s) & C_FVAL))
        return NUM_SYNTAX; /* "1.5x", "0x1p3", "1_000", "12iu"... */

    /* m holds the digits exactly when there are at most 19 of them (leading zeros included);
     * otherwise take the first 19 significant ones and note whether any dropped one is nonzero.
     * Then Clinger's fast path: m and the power of ten both exact doubles, one rounding. */
    long dexp = ex - (long)nf;
    bool exact = true;
    if (ni + nf > 19) {
        while (i0 < i1 && *i0 == '0')
            i0++;
        ni = (size_t)(i1 - i0);
        dexp = ex;
        if (ni >= 19) {
            m = digits_value(i0, 19);
            dexp += (long)(ni - 19);
            for (const char *q = i0 + 19; q < i1 && exact; q++)
                exact = *q == '0';
            for (const char *q = f0; q < f1 && exact; q++)
                exact = *q == '0';
        } else {
            m = digits_value(i0, ni);
            if (ni == 0)
                while (f0 < f1 && *f0 == '0') /* 0.000123: the zeros only scale */
                    f0++, nf--, dexp--;
            size_t take = nf < 19 - ni ? nf : 19 - ni;
            for (size_t k = 0; k < take; k++)
                m = m * 10 + (uint64_t)(f0[k] - '0');
            dexp -= (long)take;
            for (const char *q = f0 + take; q < f1 && exact; q++)
                exact = *q == '0';
        }
    }
    double v;
    if (m == 0) {
        v = 0.0;
    } else if (exact && m <= (UINT64_C(1) << 53) && dexp >= -22 && dexp <= 22) {
        v = (double)m;
        v = dexp < 0 ? v / pow10_exact[-dexp] : v * pow10_exact[dexp];
    } else {
        if (slow_float(p, b + neg, (size_t)(s - b) - neg, &v) != FJ_OK)
            return NUM_NOMEM;
        if (!isfinite(v))
            return NUM_RANGE; /* overflow; underflow to 0 or a subnormal is fine, as in Go */
    }
    f->type = FJ_LP_FLOAT;
    f->v.f = neg ? -v : v;
    return NUM_OK;
}

static bool parse_bool(const char *s, size_t n, bool *out)
{
    switch (n) {
    case 1:
        if (*s == 't' || *s == 'T')
            return *out = true, true;
        if (*s == 'f' || *s == 'F')
            return *out = false, true;
        return false;
    case 4:
        if (!memcmp(s, "true", 4) || !memcmp(s, "True", 4) || !memcmp(s, "TRUE", 4))
            return *out = true, true;
        return false;
    case 5:
        if (!memcmp(s, "false", 5) || !memcmp(s, "False", 5) || !memcmp(s, "FALSE", 5))
            return *out = false, true;
        return false;
    default:
        return false;
    }
}

/* --- lines -------------------------------------------------------------------------------- */

/* Skips blank lines and valid comments; leaves cur at the first byte of a line to parse (or at a
 * comment with a forbidden byte, which parse_line then reports). */
static void skip_blank(fj_lp_parser *p)
{
    const char *s = p->cur, *e = p->end, *ls = s;
    size_t nl = 0;
    for (;;) {
        ls = s;
        while (s < e && *s == ' ')
            s++;
        if (s == e)
            break;
        if (*s == '#') {
            const char *q = s + 1;
            while (q < e && (CLS(*q) & C_COMMENT))
                q++;
            if (!take_eol(&q, e, &nl))
                break;
            s = q;
        } else if (*s == '\n' || *s == '\r') {
            if (!take_eol(&s, e, &nl))
                break; /* a lone CR: parse_line reports it */
        } else {
            break;
        }
    }
    p->cur = s;
    p->linestart = ls;
    p->line += nl;
}

/* Ends the current line after an error at `at`, found while scanning at `cur`: records the
 * position, fills err, and resumes after the next LF at or after cur. */
static fj_status fail(fj_lp_parser *p, fj_status st, const char *at, const char *cur, fj_err *err,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static fj_status fail(fj_lp_parser *p, fj_status st, const char *at, const char *cur, fj_err *err,
                      const char *fmt, ...)
{
    const char *e = p->end;
    if (at > e)
        at = e;
    const char *ls = at > p->linestart ? memrchr(p->linestart, '\n', (size_t)(at - p->linestart))
                                       : NULL;
    ls = ls ? ls + 1 : p->linestart;
    p->err_line = p->line + count_nl(p->cur, at);
    p->err_col = (size_t)(at - ls) + 1;
    if (err) {
        char msg[sizeof err->message], path[64];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(path, sizeof path, "line %zu, column %zu", p->err_line, p->err_col);
        fj_err_set(err, st, path, "%s", msg);
    }
    if (cur < p->cur)
        cur = p->cur;
    const char *q = cur < e ? memchr(cur, '\n', (size_t)(e - cur)) : NULL;
    const char *next = q ? q + 1 : e;
    p->line += count_nl(p->cur, next);
    p->cur = next;
    skip_blank(p);
    return st;
}

#define FAIL(at, cur, ...) return fail(p, FJ_EINVAL, (at), (cur), err, __VA_ARGS__)
#define UTF8_CHECK(b, s, what)                                                                     \
    do {                                                                                           \
        if (high && !utf8_valid((const unsigned char *)(b), (const unsigned char *)(s)))           \
            FAIL(b, s, "invalid UTF-8 in %s", what);                                               \
    } while (0)

static bool grow(void **arr, size_t *cap, size_t elem, size_t max)
{
    size_t n = *cap * 2;
    if (n > max)
        n = max;
    void *a = fj_realloc(*arr, n * elem);
    if (!a)
        return false;
    *arr = a;
    *cap = n;
    return true;
}

static fj_status parse_line(fj_lp_parser *p, fj_lp_line *ln, fj_err *err)
{
    const char *const start = p->cur, *const e = p->end;
    const char *s = start;
    size_t nl = 0;
    bool esc = false, high = false;
    char cb[16];
    stops blk = p->blk; /* a local copy stays in registers; written back for the next line */

    /* measurement */
    if (*s == '#')
        FAIL(s, s, "comment contains a control character (tab or 0x00-0x1f, 0x7f)");
    s = scan_token(&blk, s, e, true, &esc, &high);
    if (s == start)
        FAIL(s, s, "invalid character %s at start of measurement name", show(cb, s, e));
    UTF8_CHECK(start, s, "measurement");
    ln->measurement = (fj_lp_str){start, (size_t)(s - start), esc ? FJ_LP_ESC_NAME : FJ_LP_RAW};

    /* tags */
    size_t nt = 0;
    /* Raw keys in strictly ascending order (as Telegraf and cc-metric-collector send them) cannot
     * repeat, which spares the duplicate check. */
    bool ascending = true;
    while (s < e && *s == ',') {
        const char *k = ++s;
        esc = high = false;
        s = scan_token(&blk, s, e, false, &esc, &high);
        if (s == k)
            FAIL(s, s, "expected tag key after comma, found %s", show(cb, s, e));
        UTF8_CHECK(k, s, "tag key");
        if (s == e || *s != '=')
            FAIL(s, s, "expected '=' after tag key, found %s", show(cb, s, e));
        fj_lp_str key = {k, (size_t)(s - k), esc ? FJ_LP_ESC_KEY : FJ_LP_RAW};
        const char *v = ++s;
        esc = high = false;
        s = scan_token(&blk, s, e, false, &esc, &high);
        if (s == v)
            FAIL(s, s, "expected tag value after '=', found %s", show(cb, s, e));
        UTF8_CHECK(v, s, "tag value");
        if (nt == p->tags_cap) {
            if (nt == FJ_LP_MAX_TAGS)
                FAIL(k, s, "more than %d tags", FJ_LP_MAX_TAGS);
            if (!grow((void **)&p->tags, &p->tags_cap, sizeof *p->tags, FJ_LP_MAX_TAGS))
                return fail(p, FJ_ENOMEM, k, s, err, "out of memory");
        }
        ascending = ascending && !key.esc && (nt == 0 || raw_before(&p->tags[nt - 1].key, &key));
        p->tags[nt].key = key;
        p->tags[nt].value = (fj_lp_str){v, (size_t)(s - v), esc ? FJ_LP_ESC_KEY : FJ_LP_RAW};
        nt++;
    }
    if (s == e || *s != ' ')
        FAIL(s, s, "expected tag key or field set, found %s", show(cb, s, e));
    while (s < e && *s == ' ')
        s++;
    if (nt > 1 && !ascending) {
        const fj_lp_tag *d = dup_tag(p->tags, nt);
        if (d)
            FAIL(d->key.p, s, "duplicate tag key");
    }

    /* fields */
    size_t nf = 0;
    for (;;) {
        const char *k = s;
        esc = high = false;
        s = scan_token(&blk, s, e, false, &esc, &high);
        if (s == k)
            FAIL(s, s, "expected field key, found %s", show(cb, s, e));
        UTF8_CHECK(k, s, "field key");
        if (s == e || *s != '=')
            FAIL(s, s, "expected '=' after field key, found %s", show(cb, s, e));
        s++;
        if (nf == p->fields_cap) {
            if (nf == FJ_LP_MAX_FIELDS)
                FAIL(k, s, "more than %d fields", FJ_LP_MAX_FIELDS);
            if (!grow((void **)&p->fields, &p->fields_cap, sizeof *p->fields, FJ_LP_MAX_FIELDS))
                return fail(p, FJ_ENOMEM, k, s, err, "out of memory");
        }
        fj_lp_field *f = &p->fields[nf];
        f->key = (fj_lp_str){k, (size_t)(s - 1 - k), esc ? FJ_LP_ESC_KEY : FJ_LP_RAW};
        const char *v = s;
        if (s == e)
            FAIL(s, s, "expected field value, found end of input");
        switch (*s) {
        case '"': {
            const char *q = s + 1;
            esc = high = false;
            while (q < e && *q != '"') {
#if defined(__SSE2__)
                if (e - q >= 16) {
                    unsigned m = string_stops(q);
                    if (!m) {
                        q += 16;
                        continue;
                    }
                    q += __builtin_ctz(m);
                    if (*q == '"')
                        break;
                }
#endif
                unsigned char c = (unsigned char)*q;
                if (c == '\\' && q + 1 < e && (CLS(q[1]) & C_ESTR)) {
                    esc = true;
                    q += 2;
                    continue;
                }
                nl += c == '\n';
                high |= c >= 0x80;
                q++;
            }
            if (q == e)
                FAIL(v, q, "unterminated string value");
            UTF8_CHECK(v + 1, q, "string value");
            f->type = FJ_LP_STRING;
            f->v.s = (fj_lp_str){v + 1, (size_t)(q - v - 1), esc ? FJ_LP_ESC_STRING : FJ_LP_RAW};
            s = q + 1;
            break;
        }
        case 't': case 'T': case 'f': case 'F':
            while (s < e && (CLS(*s) & C_FVAL))
                s++;
            if (!parse_bool(v, (size_t)(s - v), &f->v.b))
                FAIL(v, s, "invalid boolean value");
            f->type = FJ_LP_BOOL;
            break;
        case '-': case '.':
        case '0': case '1': case '2': case '3': case '4':
        case '5': case '6': case '7': case '8': case '9':
            switch (parse_number(p, s, e, f, &s)) {
            case NUM_OK: break;
            case NUM_SYNTAX: FAIL(v, s, "invalid number");
            case NUM_RANGE: FAIL(v, s, "number out of range");
            case NUM_NOMEM: return fail(p, FJ_ENOMEM, v, s, err, "out of memory");
            }
            break;
        default:
            FAIL(v, s, "field value has unrecognized type (starts with %s)", show(cb, s, e));
        }
        nf++;
        if (s == e)
            goto done;
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s != ' ' && *s != '\r' && *s != '\n')
            FAIL(s, s, "unexpected %s after field value", show(cb, s, e));
        break;
    }

    /* timestamp */
    while (s < e && *s == ' ')
        s++;
    if (take_eol(&s, e, &nl))
        goto done;
    const char *t = s;
    bool tneg = *s == '-';
    const char *d0 = s += tneg;
    uint64_t tu;
    size_t nd = scan_digits(&s, e, &tu);
    if ((s < e && *s != ' ' && *s != '\r' && *s != '\n') || nd == 0)
        FAIL(t, s, "invalid timestamp");
    if (nd <= 19 && tu <= (uint64_t)INT64_MAX + tneg)
        ln->time = to_i64(tu, tneg);
    else if (!digits_i64(d0, nd, tneg, &ln->time))
        FAIL(t, s, "timestamp out of range");
    ln->has_time = true;
    while (s < e && *s == ' ')
        s++;
    if (!take_eol(&s, e, &nl))
        FAIL(s, s, "unexpected %s after timestamp", show(cb, s, e));
    goto done_time;

done:
    ln->has_time = false;
    ln->time = 0;
done_time:
    ln->tags = p->tags;
    ln->n_tags = nt;
    ln->fields = p->fields;
    ln->n_fields = nf;
    ln->lineno = p->line;
    p->blk = blk;
    p->line += nl;
    p->cur = s;
    if (s < e && (unsigned char)*s > ' ' && *s != '#')
        p->linestart = s; /* the next line starts right here: the usual case */
    else
        skip_blank(p);
    return FJ_OK;
}

/* --- public ------------------------------------------------------------------------------- */

void fj_lp_reset(fj_lp_parser *p, const char *body, size_t len)
{
    p->cur = body ? body : "";
    p->end = p->cur + (body ? len : 0);
    p->linestart = p->cur;
    p->line = 1;
    p->err_line = p->err_col = 0;
    p->blk.base = (uintptr_t)p->end + 64; /* no block yet (any s is below it) */
    skip_blank(p);
}

fj_lp_parser *fj_lp_parser_create(const char *body, size_t len)
{
    fj_lp_parser *p = fj_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->tags = fj_malloc(INITIAL_ITEMS * sizeof *p->tags);
    p->fields = fj_malloc(INITIAL_ITEMS * sizeof *p->fields);
    if (!p->tags || !p->fields) {
        fj_lp_parser_destroy(p);
        return NULL;
    }
    p->tags_cap = p->fields_cap = INITIAL_ITEMS;
    fj_lp_reset(p, body, len);
    return p;
}

void fj_lp_parser_destroy(fj_lp_parser *p)
{
    if (!p)
        return;
    fj_free(p->tags);
    fj_free(p->fields);
    fj_free(p->num);
    fj_free(p);
}

bool fj_lp_done(const fj_lp_parser *p)
{
    return p->cur >= p->end;
}

fj_status fj_lp_next(fj_lp_parser *p, fj_lp_line *line, fj_err *err)
{
    if (p->cur >= p->end)
        return FJ_ENOTFOUND;
    return parse_line(p, line, err);
}

void fj_lp_error_pos(const fj_lp_parser *p, size_t *line, size_t *column)
{
    if (line)
        *line = p->err_line;
    if (column)
        *column = p->err_col;
}

size_t fj_lp_unescape(const fj_lp_str *s, char *dst)
{
    if (!s->esc) {
        if (s->n)
            memcpy(dst, s->p, s->n);
        return s->n;
    }
    unsigned bit = esc_bit(s->esc);
    size_t n = 0;
    for (size_t i = 0; i < s->n;)
        dst[n++] = (char)unesc_next(s, bit, &i);
    return n;
}

char *fj_lp_str_dup(fj_arena *a, const fj_lp_str *s, size_t *len)
{
    char *d = fj_arena_alloc(a, s->n + 1);
    if (!d)
        return NULL;
    size_t n = fj_lp_unescape(s, d);
    d[n] = '\0';
    if (len)
        *len = n;
    return d;
}

bool fj_lp_str_eq(const fj_lp_str *s, const char *lit)
{
    size_t ln = strlen(lit);
    if (!s->esc)
        return s->n == ln && memcmp(s->p, lit, ln) == 0;
    fj_lp_str l = {lit, ln, FJ_LP_RAW};
    return str_equal(s, &l);
}

fj_status fj_lp_precision_parse(const char *s, int64_t *ns_per_unit)
{
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = {
        {"", 1}, {"ns", 1}, {"n", 1},
        {"us", 1000}, {"u", 1000},
        {"\xc2\xb5s", 1000}, /* µs, MICRO SIGN */
        {"\xce\xbcs", 1000}, /* μs, GREEK SMALL LETTER MU */
        {"ms", 1000000}, {"s", 1000000000},
        {"m", INT64_C(60000000000)}, {"h", INT64_C(3600000000000)},
    };
    if (!s)
        s = "";
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(s, units[i].name) == 0) {
            *ns_per_unit = units[i].ns;
            return FJ_OK;
        }
    return FJ_EINVAL;
}

int64_t fj_lp_infer_unit(int64_t ts)
{
    static const int64_t units[] = {1000000000, 1000000, 1000};
    for (size_t i = 0; i < 3; i++)
        if (ts <= INT64_MAX / units[i] && ts >= INT64_MIN / units[i])
            return units[i];
    return 1;
}

fj_status fj_lp_time_to_ns(int64_t t, int64_t ns_per_unit, int64_t *ns)
{
    int64_t r;
    if (__builtin_mul_overflow(t, ns_per_unit, &r))
        return FJ_EINVAL;
    *ns = r;
    return FJ_OK;
}
