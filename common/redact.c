/* redact.c — credentials out of connection strings (see redact.h). The string is read once, left
 * to right, and written to a bounded output: redaction decides what is written, the bound only
 * where the output stops, so a cut can never expose what redaction hid. */
#include "redact.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

typedef struct out {
    char *p;
    size_t cap, n; /* n < cap always: room for the NUL */
} out;

static void put(out *o, const char *s, size_t len)
{
    size_t room = o->cap - 1 - o->n;
    if (len > room)
        len = room;
    memcpy(o->p + o->n, s, len);
    o->n += len;
    o->p[o->n] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)tolower((unsigned char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Is the parameter name k[0..n) a password, read as libpq would (URL names percent-decoded)? */
static bool is_password_key(const char *k, size_t n, bool percent)
{
    static const char word[] = "password";
    const size_t wn = sizeof word - 1;
    char dec[256];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        char c = k[i];
        if (percent && c == '%' && i + 2 < n && hexval(k[i + 1]) >= 0 && hexval(k[i + 2]) >= 0) {
            c = (char)(hexval(k[i + 1]) * 16 + hexval(k[i + 2]));
            i += 2;
        }
        if (m == sizeof dec)
            return true; /* a name this long is no libpq keyword: hide its value rather than guess */
        dec[m++] = (char)tolower((unsigned char)c);
    }
    for (size_t i = 0; i + wn <= m; i++)
        if (!memcmp(dec + i, word, wn))
            return true;
    return false;
}

/* A URL's query (after '?'): name=value pairs separated by '&'. */
static void url_query(out *o, const char *q)
{
    while (*q) {
        size_t n = strcspn(q, "&");
        const char *eq = memchr(q, '=', n);
        if (eq && is_password_key(q, (size_t)(eq - q), true)) {
            put(o, q, (size_t)(eq - q) + 1);
            put(o, FJ_REDACTED, strlen(FJ_REDACTED));
        } else {
            put(o, q, n);
        }
        q += n;
        if (*q == '&')
            put(o, q++, 1);
    }
}

/* scheme://[userinfo@]rest. The userinfo ends at the last '@': libpq stops at the first '@' or
 * '/', but a string it cannot parse is shown in an error too, and a password with a stray '/',
 * '?' or '@' must not show through. A URL whose userinfo is a token (nats://TOKEN@host) is hidden
 * whole; elsewhere a userinfo without ':' is a user name and kept. */
static void url(out *o, const char *s, const char *sep)
{
    const char *auth = sep + 3, *at = strrchr(auth, '@'), *rest = s;
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        bool token = !colon && ((sep - s == 4 && !strncasecmp(s, "nats", 4)) ||
                                (sep - s == 3 && !strncasecmp(s, "tls", 3)));
        if (colon || token) {
            put(o, s, (size_t)((colon ? colon + 1 : auth) - s));
            put(o, FJ_REDACTED, strlen(FJ_REDACTED));
            rest = at;
        }
    }
    const char *q = strchr(rest, '?');
    if (!q) {
        put(o, rest, strlen(rest));
        return;
    }
    put(o, rest, (size_t)(q - rest) + 1);
    url_query(o, q + 1);
}

/* The end of a conninfo value starting at v: a quoted value to its closing quote, else to the
 * next space; a backslash escapes the next character in both (libpq's conninfo_parse). */
static const char *conninfo_value_end(const char *v)
{
    bool quoted = *v == '\'';
    const char *p = v + quoted;
    for (; *p; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            continue;
        }
        if (quoted ? *p == '\'' : isspace((unsigned char)*p))
            return quoted ? p + 1 : p;
    }
    return p;
}

/* key = value pairs separated by spaces ("host=h password='x y'"); anything else (a file name)
 * is copied as it is. */
static void conninfo(out *o, const char *s)
{
    const char *p = s;
    while (*p) {
        size_t sp = strspn(p, " \t\r\n");
        put(o, p, sp);
        p += sp;
        const char *key = p;
        while (*p && *p != '=' && !isspace((unsigned char)*p))
            p++;
        size_t kn = (size_t)(p - key);
        const char *eq = p + strspn(p, " \t\r\n");
        if (*eq != '=') { /* not a pair: copy the word */
            put(o, key, kn);
            continue;
        }
        const char *v = eq + 1;
        v += strspn(v, " \t\r\n");
        const char *end = conninfo_value_end(v);
        put(o, key, (size_t)(v - key));
        if (is_password_key(key, kn, false))
            put(o, FJ_REDACTED, strlen(FJ_REDACTED));
        else
            put(o, v, (size_t)(end - v));
        p = end;
    }
}

char *fj_redact_conn(const char *s, char *buf, size_t cap)
{
    out o = {buf, cap, 0};
    buf[0] = '\0';
    if (!s)
        return buf;
    /* A URL starts with a scheme (RFC 3986: a letter, then letters, digits, '+', '-', '.'); a
     * "://" further in is part of a value ("options='-c x=a://b'") of a conninfo string. */
    static const char scheme_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.";
    size_t sn = isalpha((unsigned char)s[0]) ? strspn(s, scheme_chars) : 0;
    if (sn && !strncmp(s + sn, "://", 3))
        url(&o, s, s + sn);
    else
        conninfo(&o, s);
    return buf;
}
