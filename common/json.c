/* json.c — strict RFC 8259 parser into an arena; the contract is in json.h.
 *
 * One recursive-descent pass (recursion is bounded by the 256 nesting limit). Elements of open
 * containers collect on two heap scratch stacks shared by all levels and are copied to one
 * exact-size arena block when their container closes, so the arena holds only the result.
 * Strings are scanned once (UTF-8, escapes and surrogates validated there, in input order, so the
 * first bad byte is the one reported), then either memcpy'd or decoded into a block of the raw
 * length, which decoding can only shrink.
 *
 * Choices the header leaves open:
 * - `-0` is FJ_JSON_UINT 0, so FJ_JSON_INT always means "negative"; `-0.0` is REAL -0.0.
 * - Empty arrays and objects have .len 0 and a NULL items/members pointer.
 * - Columns count bytes, not characters; lines count '\n'. "unterminated string" points at the
 *   opening quote, "unexpected end of input" one past the last byte, "number out of range" at the
 *   first byte of the number, "trailing comma" at the comma.
 * - A number or literal may not run straight into a letter, digit, '.', '_', '+' or '-' ("12x",
 *   "truex", "1.5.2", "01"): otherwise a concatenated stream "12" would silently read as 1 then 2.
 * - *end is written only on success, like *out. */
#include "json.h"

#include "alloc.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { JSON_MAX_DEPTH = 256, SCRATCH_INLINE = 32 };

typedef struct parser {
    fj_arena *arena;
    const unsigned char *text, *cur, *end; /* cur: the next byte to read */
    fj_err *err;
    /* Scratch stacks of the open containers' elements; they start in the inline arrays so small
     * documents never touch the heap. */
    fj_json *vals;
    size_t nvals, capvals;
    fj_json_member *mems;
    size_t nmems, capmems;
    fj_json vals_inline[SCRATCH_INLINE];
    fj_json_member mems_inline[SCRATCH_INLINE];
} parser;

/* Bytes that need no attention inside a string: printable ASCII other than '"' and '\\'. */
static const unsigned char str_plain[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static inline bool is_digit(unsigned c)
{
    return c - '0' < 10;
}

static inline bool is_ws(unsigned c)
{
    return c <= ' ' && (c == ' ' || c == '\n' || c == '\r' || c == '\t');
}

/* Bytes that would continue a number or a literal token. */
static inline bool runs_on(unsigned c)
{
    return is_digit(c) || ((c | 0x20) - 'a' < 26) || c == '.' || c == '_' || c == '+' || c == '-';
}

/* Nonzero when one of the 8 bytes of x is < 0x20, '"', '\\' or >= 0x80 (the has-zero-byte and
 * has-less-than tricks; exact as to whether such a byte exists, which is all that is asked). */
static inline uint64_t swar_special(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    return (((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b) | x) & highs;
}

static fj_status fail_at(parser *p, const unsigned char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static fj_status fail_at(parser *p, const unsigned char *at, const char *fmt, ...)
{
    if (!p->err)
        return FJ_EINVAL;
    /* The position is computed only here, so the hot path never counts lines. */
    const unsigned char *line_start = p->text, *q = p->text;
    size_t line = 1;
    while (q < at && (q = memchr(q, '\n', (size_t)(at - q))) != NULL) {
        line++;
        line_start = ++q;
    }
    char path[64], msg[128];
    snprintf(path, sizeof path, "line %zu, column %zu", line, (size_t)(at - line_start) + 1);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fj_err_set(p->err, FJ_EINVAL, path, "%s", msg);
}

static fj_status fail_eof(parser *p)
{
    return fail_at(p, p->end, "unexpected end of input");
}

static fj_status fail_nomem(parser *p)
{
    return fj_err_set(p->err, FJ_ENOMEM, NULL, "out of memory parsing JSON");
}

/* "'x'" for printable ASCII, "byte 0xNN" otherwise, so messages stay printable. */
static const char *describe(unsigned char c, char buf[16])
{
    if (c > 0x20 && c < 0x7f)
        snprintf(buf, 16, "'%c'", c);
    else
        snprintf(buf, 16, "byte 0x%02X", c);
    return buf;
}

static inline void skip_ws(parser *p)
{
    const unsigned char *q = p->cur, *e = p->end;
    while (q < e && is_ws(*q))
        q++;
    p->cur = q;
}

/* Doubles a scratch stack; the first growth leaves the inline array. */
static bool grow(void **buf, size_t *cap, size_t sz, void *inline_buf)
{
    if (*cap > SIZE_MAX / 2 / sz)
        return false;
    size_t ncap = *cap * 2;
    void *nb;
    if (*buf == inline_buf) {
        nb = fj_malloc(ncap * sz);
        if (nb)
            memcpy(nb, *buf, *cap * sz);
    } else {
        nb = fj_realloc(*buf, ncap * sz);
    }
    if (!nb)
        return false;
    *buf = nb;
    *cap = ncap;
    return true;
}

static fj_status parse_value(parser *p, fj_json *v, unsigned depth);

/* ---- strings ------------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence whose lead byte (>= 0x80) is at q; 0 with *bad at the
 * offending byte (overlong, surrogate, > U+10FFFF, bad continuation); -1 when input ends inside. */
static int utf8_seq(const unsigned char *q, const unsigned char *e, const unsigned char **bad)
{
    unsigned c = q[0], lo = 0x80, hi = 0xBF;
    int n;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* U+D800..DFFF */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* > U+10FFFF */
    } else {
        *bad = q;
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if (q + i >= e)
            return -1;
        if (q[i] < lo || q[i] > hi) {
            *bad = q + i;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return n;
}

static inline int hexval(unsigned c)
{
    if (is_digit(c))
        return (int)(c - '0');
    c |= 0x20;
    if (c - 'a' < 6)
        return (int)(c - 'a' + 10);
    return -1;
}

/* The 4 hex digits after the "\u" at q, already validated by scan_u. */
static unsigned hex4(const unsigned char *q)
{
    return (unsigned)(hexval(q[2]) << 12 | hexval(q[3]) << 8 | hexval(q[4]) << 4 | hexval(q[5]));
}

/* Validates "\uXXXX" at q; *cp gets the code unit. */
static fj_status scan_u(parser *p, const unsigned char *q, const unsigned char *open, unsigned *cp)
{
    for (int i = 2; i < 6; i++) {
        if (q + i >= p->end)
            return fail_at(p, open, "unterminated string");
        if (hexval(q[i]) < 0)
            return fail_at(p, q + i, "invalid \\u escape");
    }
    *cp = hex4(q);
    return FJ_OK;
}

static size_t utf8_put(char *d, unsigned cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xC0 | cp >> 6);
        d[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xE0 | cp >> 12);
        d[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        d[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (char)(0xF0 | cp >> 18);
    d[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    d[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    d[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the already-validated body [r, end) with escapes into d; returns the decoded length. */
static size_t decode_escaped(char *d, const unsigned char *r, const unsigned char *end)
{
    char *start = d;
    while (r < end) {
        const unsigned char *bs = memchr(r, '\\', (size_t)(end - r));
        if (!bs)
            bs = end;
        memcpy(d, r, (size_t)(bs - r));
        d += bs - r;
        r = bs;
        if (r >= end)
            break;
        unsigned cp;
        switch (r[1]) {
        case 'b': *d++ = '\b'; r += 2; continue;
        case 'f': *d++ = '\f'; r += 2; continue;
        case 'n': *d++ = '\n'; r += 2; continue;
        case 'r': *d++ = '\r'; r += 2; continue;
        case 't': *d++ = '\t'; r += 2; continue;
        case 'u':
            cp = hex4(r);
            r += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(r) - 0xDC00);
                r += 6;
            }
            d += utf8_put(d, cp);
            continue;
        default: /* '"', '\\', '/' */
            *d++ = (char)r[1];
            r += 2;
            continue;
        }
    }
    return (size_t)(d - start);
}

/* Validates the escape at q (a backslash); returns its length in bytes, or 0 after failing. */
static size_t scan_escape(parser *p, const unsigned char *q, const unsigned char *open, fj_status *st)
{
    const unsigned char *e = p->end;
    unsigned cp, lo;
    if (e - q < 2) {
        *st = fail_at(p, open, "unterminated string");
        return 0;
    }
    switch (q[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        return 2;
    case 'u':
        break;
    default: {
        char b[16];
        *st = fail_at(p, q + 1, "invalid escape %s", describe(q[1], b));
        return 0;
    }
    }
    if ((*st = scan_u(p, q, open, &cp)) != FJ_OK)
        return 0;
    if (cp < 0xD800 || cp > 0xDFFF)
        return 6;
    if (cp >= 0xDC00)
        goto lone;
    /* A high surrogate: a low one must follow at once. */
    for (int i = 6; i < 8; i++) {
        if (q + i >= e) {
            *st = fail_at(p, open, "unterminated string");
            return 0;
        }
        if (q[i] != "\\u"[i - 6])
            goto lone;
    }
    if ((*st = scan_u(p, q + 6, open, &lo)) != FJ_OK)
        return 0;
    if (lo >= 0xDC00 && lo <= 0xDFFF)
        return 12;
lone:
    *st = fail_at(p, q, "lone surrogate");
    return 0;
}

/* At the opening quote: validates the string, copies it NUL-terminated into the arena. */
static fj_status parse_string(parser *p, const char **out, size_t *out_len)
{
    const unsigned char *e = p->end, *open = p->cur, *q = open + 1, *bad = NULL;
    bool escaped = false;
    fj_status st = FJ_OK;

    for (;;) {
        /* Eight plain bytes at a time, then byte by byte up to the one that needs a look. */
        while (e - q >= 8) {
            uint64_t x;
            memcpy(&x, q, 8);
            if (swar_special(x))
                break;
            q += 8;
        }
        while (q < e && str_plain[*q])
            q++;
        if (q >= e)
            return fail_at(p, open, "unterminated string");
        unsigned c = *q;
        if (c == '"')
            break;
        if (c == '\\') {
            size_t n = scan_escape(p, q, open, &st);
            if (!n)
                return st;
            escaped = true;
            q += n;
            continue;
        }
        if (c < 0x20)
            return fail_at(p, q, "control character in string");
        int n = utf8_seq(q, e, &bad);
        if (n < 0)
            return fail_at(p, open, "unterminated string");
        if (n == 0)
            return fail_at(p, bad, "invalid UTF-8");
        q += n;
    }

    const unsigned char *raw = open + 1;
    size_t n = (size_t)(q - raw);
    char *dst = fj_arena_alloc(p->arena, n + 1);
    if (!dst)
        return fail_nomem(p);
    if (!escaped)
        memcpy(dst, raw, n);
    else
        n = decode_escaped(dst, raw, q);
    dst[n] = '\0';
    *out = dst;
    *out_len = n;
    p->cur = q + 1;
    return FJ_OK;
}

/* ---- scalars ------------------------------------------------------------------------------ */

static fj_status parse_literal(parser *p, const char *lit, size_t n)
{
    const unsigned char *q = p->cur;
    for (size_t i = 0; i < n; i++) {
        if (q + i >= p->end)
            return fail_eof(p);
        if (q[i] != (unsigned char)lit[i])
            return fail_at(p, q + i, "invalid literal");
    }
    q += n;
    if (q < p->end && runs_on(*q))
        return fail_at(p, q, "invalid literal");
    p->cur = q;
    return FJ_OK;
}

/* Exact powers of ten for the fast real path (all representable in a double). */
static const double pow10_exact[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* Exact value of the decimal digits [s, e) if it fits in uint64_t. */
static bool digits_to_u64(const unsigned char *s, const unsigned char *e, uint64_t *out)
{
    uint64_t u = 0;
    for (; s < e; s++)
        if (__builtin_mul_overflow(u, 10, &u) || __builtin_add_overflow(u, (uint64_t)(*s - '0'), &u))
            return false;
    *out = u;
    return true;
}

static fj_status parse_number(parser *p, fj_json *v)
{
    const unsigned char *e = p->end, *start = p->cur, *q = start;
    bool neg = false;

    if (*q == '-') {
        neg = true;
        if (++q >= e)
            return fail_eof(p);
        if (!is_digit(*q))
            return fail_at(p, q, "expected digit after '-'");
    }
    /* All digits of the integer and fraction parts go into m; it wraps past 19 digits, when
     * nd says it is not to be used. */
    uint64_t m = 0;
    const unsigned char *int_start = q;
    while (q < e && is_digit(*q))
        m = m * 10 + (uint64_t)(*q++ - '0');
    size_t int_digits = (size_t)(q - int_start), frac_digits = 0;
    if (int_digits > 1 && *int_start == '0')
        return fail_at(p, int_start, "leading zero in number");

    bool real = false, exp_neg = false;
    long exp = 0;
    if (q < e && *q == '.') {
        real = true;
        if (++q >= e)
            return fail_eof(p);
        if (!is_digit(*q))
            return fail_at(p, q, "expected digit after '.'");
        const unsigned char *frac_start = q;
        while (q < e && is_digit(*q))
            m = m * 10 + (uint64_t)(*q++ - '0');
        frac_digits = (size_t)(q - frac_start);
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        real = true;
        q++;
        if (q < e && (*q == '+' || *q == '-'))
            exp_neg = *q++ == '-';
        if (q >= e)
            return fail_eof(p);
        if (!is_digit(*q))
            return fail_at(p, q, "expected digit in exponent");
        while (q < e && is_digit(*q)) {
            if (exp < 100000) /* saturate: only the fast-path test below reads it */
                exp = exp * 10 + (*q - '0');
            q++;
        }
    }
    if (q < e && runs_on(*q))
        return fail_at(p, q, "invalid number");

    v->len = 0;
    if (!real) {
        uint64_t u = m;
        if (int_digits > 19 && !digits_to_u64(int_start, int_start + int_digits, &u))
            return fail_at(p, start, "number out of range");
        if (!neg || u == 0) {
            v->type = FJ_JSON_UINT;
            v->v.u = u;
        } else if (u > (uint64_t)INT64_MAX + 1) {
            return fail_at(p, start, "number out of range");
        } else {
            v->type = FJ_JSON_INT;
            /* -(int64_t)u would overflow for 2^63. */
            v->v.i = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
        }
        p->cur = q;
        return FJ_OK;
    }

    double d;
    long e10 = (exp_neg ? -exp : exp) - (long)frac_digits;
#if FLT_EVAL_METHOD == 0
    /* Clinger's fast path: an exact mantissa below 2^53 times or over an exact power of ten is
     * one correctly rounded IEEE operation, the same result strtod gives, at a fraction of the
     * cost. Reals are a third of a Sonar envelope's numbers. */
    if (int_digits + frac_digits <= 19 && m <= (1ull << 53) && e10 >= -22 && e10 <= 22) {
        d = (double)m;
        d = e10 < 0 ? d / pow10_exact[-e10] : d * pow10_exact[e10];
        if (neg)
            d = -d;
    } else
#endif
    {
        /* strtod needs a terminated copy: the input is not NUL-terminated. */
        size_t n = (size_t)(q - start);
        char small[64];
        char *buf = n < sizeof small ? small : fj_malloc(n + 1);
        if (!buf)
            return fail_nomem(p);
        memcpy(buf, start, n);
        buf[n] = '\0';
        d = strtod(buf, NULL);
        if (buf != small)
            fj_free(buf);
    }
    if (!isfinite(d))
        return fail_at(p, start, "number out of range");
    v->type = FJ_JSON_REAL;
    v->v.d = d;
    p->cur = q;
    return FJ_OK;
}

/* ---- containers --------------------------------------------------------------------------- */

/* At a ',': skips blanks after it and refuses the closing bracket (RFC 8259 has no trailing
 * comma). */
static fj_status after_comma(parser *p, unsigned char close)
{
    const unsigned char *comma = p->cur++;
    skip_ws(p);
    if (p->cur >= p->end)
        return fail_eof(p);
    if (*p->cur == close)
        return fail_at(p, comma, "trailing comma");
    return FJ_OK;
}

static fj_status parse_array(parser *p, fj_json *v, unsigned depth)
{
    const size_t base = p->nvals;
    fj_status st;
    p->cur++;
    skip_ws(p);
    if (p->cur >= p->end)
        return fail_eof(p);
    if (*p->cur != ']') {
        for (;;) {
            fj_json item;
            if ((st = parse_value(p, &item, depth)) != FJ_OK)
                return st;
            if (p->nvals == p->capvals &&
                !grow((void **)&p->vals, &p->capvals, sizeof *p->vals, p->vals_inline))
                return fail_nomem(p);
            p->vals[p->nvals++] = item;
            skip_ws(p);
            if (p->cur >= p->end)
                return fail_eof(p);
            if (*p->cur == ']')
                break;
            if (*p->cur != ',')
                return fail_at(p, p->cur, "expected ',' or ']'");
            if ((st = after_comma(p, ']')) != FJ_OK)
                return st;
        }
    }
    p->cur++;
    size_t n = p->nvals - base;
    v->type = FJ_JSON_ARRAY;
    v->len = n;
    v->v.items = NULL;
    if (n) {
        if (!(v->v.items = fj_arena_alloc(p->arena, n * sizeof *v->v.items)))
            return fail_nomem(p);
        memcpy(v->v.items, p->vals + base, n * sizeof *v->v.items);
    }
    p->nvals = base;
    return FJ_OK;
}

static fj_status parse_object(parser *p, fj_json *v, unsigned depth)
{
    const size_t base = p->nmems;
    fj_status st;
    p->cur++;
    skip_ws(p);
    if (p->cur >= p->end)
        return fail_eof(p);
    if (*p->cur != '}') {
        for (;;) {
            fj_json_member m;
            if (*p->cur != '"')
                return fail_at(p, p->cur, "expected string key");
            if ((st = parse_string(p, &m.key, &m.key_len)) != FJ_OK)
                return st;
            skip_ws(p);
            if (p->cur >= p->end)
                return fail_eof(p);
            if (*p->cur != ':')
                return fail_at(p, p->cur, "expected ':'");
            p->cur++;
            if ((st = parse_value(p, &m.value, depth)) != FJ_OK)
                return st;
            if (p->nmems == p->capmems &&
                !grow((void **)&p->mems, &p->capmems, sizeof *p->mems, p->mems_inline))
                return fail_nomem(p);
            p->mems[p->nmems++] = m;
            skip_ws(p);
            if (p->cur >= p->end)
                return fail_eof(p);
            if (*p->cur == '}')
                break;
            if (*p->cur != ',')
                return fail_at(p, p->cur, "expected ',' or '}'");
            if ((st = after_comma(p, '}')) != FJ_OK)
                return st;
        }
    }
    p->cur++;
    size_t n = p->nmems - base;
    v->type = FJ_JSON_OBJECT;
    v->len = n;
    v->v.members = NULL;
    if (n) {
        if (!(v->v.members = fj_arena_alloc(p->arena, n * sizeof *v->v.members)))
            return fail_nomem(p);
        memcpy(v->v.members, p->mems + base, n * sizeof *v->v.members);
    }
    p->nmems = base;
    return FJ_OK;
}

/* depth = number of containers already open around this value. */
static fj_status parse_value(parser *p, fj_json *v, unsigned depth)
{
    skip_ws(p);
    if (p->cur >= p->end)
        return fail_eof(p);
    unsigned char c = *p->cur;
    switch (c) {
    case '"':
        v->type = FJ_JSON_STRING;
        return parse_string(p, &v->v.s, &v->len);
    case '-': case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        return parse_number(p, v);
    case '{':
    case '[':
        if (depth >= JSON_MAX_DEPTH)
            return fail_at(p, p->cur, "nesting too deep");
        return c == '{' ? parse_object(p, v, depth + 1) : parse_array(p, v, depth + 1);
    case 't':
        v->type = FJ_JSON_TRUE;
        v->len = 0;
        v->v.u = 0;
        return parse_literal(p, "true", 4);
    case 'f':
        v->type = FJ_JSON_FALSE;
        v->len = 0;
        v->v.u = 0;
        return parse_literal(p, "false", 5);
    case 'n':
        v->type = FJ_JSON_NULL;
        v->len = 0;
        v->v.u = 0;
        return parse_literal(p, "null", 4);
    default: {
        char b[16];
        return fail_at(p, p->cur, "unexpected %s", describe(c, b));
    }
    }
}

fj_status fj_json_parse(fj_arena *a, const char *text, size_t len, size_t *end, fj_json **out, fj_err *err)
{
    static const unsigned char empty[1];
    parser p;
    p.arena = a;
    p.text = text ? (const unsigned char *)text : empty;
    p.cur = p.text;
    p.end = p.text + (text ? len : 0);
    p.err = err;
    p.vals = p.vals_inline;
    p.nvals = 0;
    p.capvals = SCRATCH_INLINE;
    p.mems = p.mems_inline;
    p.nmems = 0;
    p.capmems = SCRATCH_INLINE;

    fj_json v;
    fj_status st = parse_value(&p, &v, 0);
    if (st == FJ_OK) {
        fj_json *node = fj_arena_alloc(a, sizeof *node);
        if (!node) {
            st = fail_nomem(&p);
        } else {
            *node = v;
            *out = node;
            if (end)
                *end = (size_t)(p.cur - p.text);
        }
    }
    if (p.vals != p.vals_inline)
        fj_free(p.vals);
    if (p.mems != p.mems_inline)
        fj_free(p.mems);
    return st;
}

const fj_json *fj_json_get(const fj_json *obj, const char *key)
{
    if (!obj || obj->type != FJ_JSON_OBJECT || !key)
        return NULL;
    size_t n = strlen(key);
    /* Backwards, so the first match is the last duplicate. */
    for (size_t i = obj->len; i-- > 0;) {
        const fj_json_member *m = &obj->v.members[i];
        if (m->key_len == n && memcmp(m->key, key, n) == 0)
            return &m->value;
    }
    return NULL;
}

const char *fj_json_type_name(fj_json_type t)
{
    switch (t) {
    case FJ_JSON_NULL: return "null";
    case FJ_JSON_FALSE:
    case FJ_JSON_TRUE: return "boolean";
    case FJ_JSON_INT:
    case FJ_JSON_UINT: return "integer";
    case FJ_JSON_REAL: return "number";
    case FJ_JSON_STRING: return "string";
    case FJ_JSON_ARRAY: return "array";
    case FJ_JSON_OBJECT: return "object";
    }
    return "unknown";
}
