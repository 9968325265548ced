/* aicr.c — aicr snapshots: YAML (libyaml) and JSON (common/json.c) into one generic tree, the tree
 * into fj_aicr_snapshot with validation, the normalised JSON, Go's Reading.String(), and the
 * resolution of constraint paths. */
#include "ingest/aicr.h"

#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#define MAX_DEPTH 32 /* a snapshot nests 9 deep at most (root ... items[k].data.key.value) */
#define JSON_CAP ((size_t)1 << 30)

static size_t skip_ws(const char *b, size_t len, size_t i);

/* --- the generic tree both parsers produce ----------------------------------------------- */

/* A node, typed as JSON is. YAML plain scalars are resolved with the YAML 1.2 core schema (as
 * aicr's yaml.v3 does when decoding into `any`); quoted and block scalars are strings. */
typedef struct gnode gnode;
struct gnode {
    fj_json_type type;
    const char *text;   /* scalars: the string, or the scalar as written (numbers, booleans) */
    int64_t i;
    uint64_t u;
    double d;
    size_t len;         /* ARRAY and OBJECT: number of elements */
    size_t cap;
    gnode *kids;        /* ARRAY elements, OBJECT values */
    const char **keys;  /* OBJECT keys */
    unsigned line, col; /* YAML: 1-based position; 0 for JSON */
};

typedef struct dec {
    fj_arena *a;
    fj_err *err;
    char path[160];
    size_t plen;
} dec;

static fj_status nomem(dec *d)
{
    return fj_err_set(d->err, FJ_ENOMEM, d->plen ? d->path : "body", "out of memory");
}

/* Fails at the current path; the message gets the YAML position of n when there is one. */
__attribute__((format(printf, 3, 4))) static fj_status fail(dec *d, const gnode *n, const char *fmt, ...)
{
    char msg[sizeof d->err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n && n->line)
        return fj_err_set(d->err, FJ_EINVAL, d->plen ? d->path : "body", "%s (line %u, column %u)", msg, n->line,
                          n->col);
    return fj_err_set(d->err, FJ_EINVAL, d->plen ? d->path : "body", "%s", msg);
}

/* Fails where the YAML parser stands: the path is "line L, column C", as for syntax errors. */
__attribute__((format(printf, 3, 4))) static fj_status yfail(dec *d, const gnode *at, const char *fmt, ...)
{
    char msg[sizeof d->err->message], where[48];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(where, sizeof where, "line %u, column %u", at->line, at->col);
    return fj_err_set(d->err, FJ_EINVAL, where, "%s", msg);
}

static bool plain_key(const char *k)
{
    if (!*k)
        return false;
    for (const char *p = k; *p; p++)
        if (*p == '.' || *p == '[' || *p == ']' || *p == '"' || *p == ' ')
            return false;
    return true;
}

/* Path steps: push returns the length to pop back to. */
static size_t push_key(dec *d, const char *key)
{
    size_t old = d->plen;
    int n;
    if (plain_key(key))
        n = snprintf(d->path + old, sizeof d->path - old, "%s%s", old ? "." : "", key);
    else
        n = snprintf(d->path + old, sizeof d->path - old, "[\"%s\"]", key);
    d->plen = n < 0 ? old : old + (size_t)n;
    if (d->plen >= sizeof d->path)
        d->plen = sizeof d->path - 1;
    return old;
}

static size_t push_index(dec *d, size_t i)
{
    size_t old = d->plen;
    int n = snprintf(d->path + old, sizeof d->path - old, "[%zu]", i);
    d->plen = n < 0 ? old : old + (size_t)n;
    if (d->plen >= sizeof d->path)
        d->plen = sizeof d->path - 1;
    return old;
}

static void pop(dec *d, size_t old)
{
    d->plen = old;
    d->path[old] = '\0';
}

/* Appends a zeroed child to an ARRAY or OBJECT node (the array moves as it grows). */
static gnode *add_kid(fj_arena *a, gnode *n, const char *key)
{
    if (n->len == n->cap) {
        size_t cap = n->cap ? n->cap * 2 : 4;
        gnode *kids = fj_arena_calloc(a, cap, sizeof *kids);
        const char **keys = n->type == FJ_JSON_OBJECT ? fj_arena_calloc(a, cap, sizeof *keys) : NULL;
        if (!kids || (n->type == FJ_JSON_OBJECT && !keys))
            return NULL;
        if (n->len) {
            memcpy(kids, n->kids, n->len * sizeof *kids);
            if (keys)
                memcpy(keys, n->keys, n->len * sizeof *keys);
        }
        n->kids = kids;
        n->keys = keys;
        n->cap = cap;
    }
    if (n->type == FJ_JSON_OBJECT)
        n->keys[n->len] = key;
    gnode *k = &n->kids[n->len++];
    memset(k, 0, sizeof *k);
    return k;
}

static const gnode *get(const gnode *obj, const char *key)
{
    if (!obj || obj->type != FJ_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->len; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->kids[i];
    return NULL;
}

static bool is_scalar(const gnode *n)
{
    return n->type != FJ_JSON_ARRAY && n->type != FJ_JSON_OBJECT;
}

static const char *type_word(const gnode *n)
{
    return fj_json_type_name(n->type);
}

/* --- numbers --------------------------------------------------------------------------- */

/* The shortest decimal digits that read back as v (no sign, no trailing zeros) and the decimal
 * exponent of the first digit, as Go's strconv finds them. v must be finite and non-zero. */
static void shortest(double v, char digits[20], int *exp10)
{
    char buf[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, fabs(v));
        if (strtod(buf, NULL) == fabs(v)) /* exact: the digits read back as v */
            break;
    }
    size_t n = 0;
    const char *p = buf;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && n < 19)
            digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = '\0';
    *exp10 = *p == 'e' ? atoi(p + 1) : 0;
}

/* Go's %v of a float64: shortest digits; %e form (1e+06, 1.5e-05) when the exponent is below -4
 * or at least 6 (strconv uses precision 6 for this decision when the precision is shortest),
 * else %f form (24.04, 100000). */
static void go_float(double v, char out[48])
{
    if (v == 0) {
        snprintf(out, 48, "%s", signbit(v) ? "-0" : "0");
        return;
    }
    char dg[20];
    int x;
    shortest(v, dg, &x);
    int nd = (int)strlen(dg);
    char *o = out;
    if (v < 0)
        *o++ = '-';
    if (x < -4 || x >= 6) {
        *o++ = dg[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, dg + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        snprintf(o, (size_t)(out + 48 - o), "e%c%02d", x < 0 ? '-' : '+', abs(x));
        return;
    }
    if (x < 0) {
        *o++ = '0';
        *o++ = '.';
        for (int k = 0; k < -x - 1; k++)
            *o++ = '0';
        memcpy(o, dg, (size_t)nd);
        o += nd;
    } else {
        for (int k = 0; k <= x; k++)
            *o++ = k < nd ? dg[k] : '0';
        if (nd > x + 1) {
            *o++ = '.';
            memcpy(o, dg + x + 1, (size_t)(nd - x - 1));
            o += nd - x - 1;
        }
    }
    *o = '\0';
}

/* A REAL as JSON that reads back as a REAL (never as an integer). */
static void json_real(double v, char out[48])
{
    go_float(v, out);
    if (!strpbrk(out, ".e"))
        strcat(out, ".0");
}

static bool all_digits(const char *s, size_t n, int base)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = base == 16 ? ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
                  : base == 8 ? (c >= '0' && c <= '7')
                              : (c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool float_syntax(const char *s)
{
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    size_t intd = 0, fracd = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        intd++;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++)
            fracd++;
    }
    if (intd == 0 && fracd == 0)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '-' || *p == '+')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

static bool one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

static const char *const null_words[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const true_words[] = {"true", "True", "TRUE", NULL};
static const char *const false_words[] = {"false", "False", "FALSE", NULL};
static const char *const inf_nan[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf",
                                      "-.INF", ".nan", ".NaN", ".NAN", NULL};

/* Go's strconv.ParseInt/ParseUint with base 0 (as yaml.v3 resolves a plain scalar, after
 * dropping '_'): optional sign, then 0x/0o/0b or a leading 0 (octal), or decimal. */
static bool go_int(const char *s, bool *neg, uint64_t *mag)
{
    const char *p = s;
    *neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    int base = 10;
    if (p[0] == '0' && p[1]) {
        char x = (char)(p[1] | 0x20); /* lower case */
        base = x == 'x' ? 16 : x == 'b' ? 2 : 8;
        p += x == 'x' || x == 'o' || x == 'b' ? 2 : 1; /* 0x1F, 0o17, 0b101; else 0777 */
    }
    size_t n = strlen(p);
    if (base == 2) {
        for (size_t i = 0; i < n; i++)
            if (p[i] != '0' && p[i] != '1')
                return false;
        if (!n)
            return false;
    } else if (!all_digits(p, n, base)) {
        return false;
    }
    errno = 0;
    unsigned long long v = strtoull(p, NULL, base);
    if (errno)
        return false;
    *mag = v;
    return true;
}

/* Resolves a plain YAML scalar as aicr's yaml.v3 does when decoding into `any`: null, booleans
 * (true/false in three casings; yes/no/on/off stay strings), integers (Go base-0 syntax,
 * underscores dropped; past int64 an unsigned, past that a float), floats, else a string.
 * .inf, .nan and overflowing floats become non-finite REALs, which set_reading refuses (JSON cannot
 * hold them) and context keeps as written. */
static fj_status resolve_plain(dec *d, gnode *n)
{
    const char *s = n->text;
    if (one_of(s, null_words)) {
        n->type = FJ_JSON_NULL;
        return FJ_OK;
    }
    if (one_of(s, true_words) || one_of(s, false_words)) {
        n->type = one_of(s, true_words) ? FJ_JSON_TRUE : FJ_JSON_FALSE;
        return FJ_OK;
    }
    if (one_of(s, inf_nan)) { /* refused where a reading is read, so the error names the field */
        n->type = FJ_JSON_REAL;
        n->d = strpbrk(s, "aA") ? NAN : s[0] == '-' ? -INFINITY : INFINITY;
        return FJ_OK;
    }
    n->type = FJ_JSON_STRING;
    if (!strchr("0123456789+-.", s[0]))
        return FJ_OK;
    char *plain = fj_arena_strdup(d->a, s);
    if (!plain)
        return nomem(d);
    char *w = plain;
    for (const char *r = s; *r; r++)
        if (*r != '_')
            *w++ = *r;
    *w = '\0';
    bool neg;
    uint64_t mag;
    if (go_int(plain, &neg, &mag) && (!neg || mag <= (uint64_t)INT64_MAX + 1)) {
        if (neg && mag > 0) {
            n->type = FJ_JSON_INT;
            n->i = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
        } else {
            n->type = FJ_JSON_UINT;
            n->u = mag;
        }
        return FJ_OK;
    }
    if (float_syntax(plain)) {
        n->d = strtod(plain, NULL); /* may overflow to infinity: refused as a reading */
        n->type = FJ_JSON_REAL;
    }
    return FJ_OK;
}

/* --- YAML -------------------------------------------------------------------------------- */

typedef struct yframe {
    gnode *node;
    const char *key; /* mapping: the key waiting for its value, or NULL */
} yframe;

#define YAML_TAG_PREFIX "tag:yaml.org,2002:"

static fj_status yaml_scalar(dec *d, gnode *n, const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (memchr(v, 0, len))
        return yfail(d, n, "NUL character in a scalar");
    n->text = fj_arena_strndup(d->a, v, len);
    if (!n->text)
        return nomem(d);
    n->type = FJ_JSON_STRING;
    const char *tag = (const char *)ev->data.scalar.tag;
    if (tag) {
        size_t pl = strlen(YAML_TAG_PREFIX);
        if (strcmp(tag, "!") == 0 || strcmp(tag, YAML_TAG_PREFIX "str") == 0)
            return FJ_OK;
        if (strncmp(tag, YAML_TAG_PREFIX, pl) != 0 ||
            !(strcmp(tag + pl, "int") == 0 || strcmp(tag + pl, "float") == 0 || strcmp(tag + pl, "bool") == 0 ||
              strcmp(tag + pl, "null") == 0))
            return yfail(d, n, "unsupported YAML tag %.60s", tag);
        fj_status st = resolve_plain(d, n);
        if (st != FJ_OK)
            return st;
        const char *want = tag + pl;
        bool ok = (strcmp(want, "int") == 0 && (n->type == FJ_JSON_INT || n->type == FJ_JSON_UINT)) ||
                  (strcmp(want, "float") == 0 &&
                   (n->type == FJ_JSON_REAL || n->type == FJ_JSON_INT || n->type == FJ_JSON_UINT)) ||
                  (strcmp(want, "bool") == 0 && (n->type == FJ_JSON_TRUE || n->type == FJ_JSON_FALSE)) ||
                  (strcmp(want, "null") == 0 && n->type == FJ_JSON_NULL);
        if (!ok)
            return yfail(d, n, "\"%.40s\" is not a valid !!%s", n->text, want);
        if (strcmp(want, "float") == 0 && n->type != FJ_JSON_REAL) {
            n->d = n->type == FJ_JSON_INT ? (double)n->i : (double)n->u;
            n->type = FJ_JSON_REAL;
        }
        return FJ_OK;
    }
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE && ev->data.scalar.style != YAML_ANY_SCALAR_STYLE)
        return FJ_OK;
    return resolve_plain(d, n);
}

static fj_status yaml_error(dec *d, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return nomem(d);
    char where[48];
    snprintf(where, sizeof where, "line %zu, column %zu", p->problem_mark.line + 1, p->problem_mark.column + 1);
    return fj_err_set(d->err, FJ_EINVAL, where, "YAML: %s%s%s", p->problem ? p->problem : "syntax error",
                      p->context ? " " : "", p->context ? p->context : "");
}

/* Builds the tree of the one YAML document in body (libyaml's own allocations use malloc: it has
 * no allocator hook). */
static fj_status yaml_tree(dec *d, const char *body, size_t len, gnode **out)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return nomem(d);
    yaml_parser_set_input_string(&p, (const unsigned char *)body, len);
    yframe stack[MAX_DEPTH];
    size_t depth = 0;
    gnode *root = NULL;
    int docs = 0;
    fj_status st = FJ_OK;
    for (bool done = false; !done && st == FJ_OK;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            st = yaml_error(d, &p);
            break;
        }
        gnode pos = {.line = (unsigned)ev.start_mark.line + 1, .col = (unsigned)ev.start_mark.column + 1};
        gnode *n = NULL;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1)
                st = yfail(d, &pos, "a second YAML document: send one snapshot per request");
            break;
        case YAML_ALIAS_EVENT:
            st = yfail(d, &pos, "YAML aliases (*%.40s) are not supported", (const char *)ev.data.alias.anchor);
            break;
        case YAML_SCALAR_EVENT:
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            yframe *top = depth ? &stack[depth - 1] : NULL;
            if (top && top->node->type == FJ_JSON_OBJECT && !top->key) {
                /* a mapping key */
                if (ev.type != YAML_SCALAR_EVENT) {
                    st = yfail(d, &pos, "mapping keys must be scalars");
                    break;
                }
                const char *k = (const char *)ev.data.scalar.value;
                if (memchr(k, 0, ev.data.scalar.length)) {
                    st = yfail(d, &pos, "NUL character in a mapping key");
                    break;
                }
                if (!(top->key = fj_arena_strndup(d->a, k, ev.data.scalar.length)))
                    st = nomem(d);
                break;
            }
            if (top) {
                n = add_kid(d->a, top->node, top->key);
                top->key = NULL;
            } else {
                n = root = fj_arena_calloc(d->a, 1, sizeof *root);
            }
            if (!n) {
                st = nomem(d);
                break;
            }
            n->line = pos.line;
            n->col = pos.col;
            if (ev.type == YAML_SCALAR_EVENT) {
                st = yaml_scalar(d, n, &ev);
                break;
            }
            if (depth == MAX_DEPTH) {
                st = yfail(d, &pos, "nested more than %d levels deep", MAX_DEPTH);
                break;
            }
            n->type = ev.type == YAML_MAPPING_START_EVENT ? FJ_JSON_OBJECT : FJ_JSON_ARRAY;
            stack[depth++] = (yframe){.node = n};
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    if (st == FJ_OK && (!root || root->type == FJ_JSON_NULL))
        st = fail(d, NULL, "empty body: no snapshot");
    if (st == FJ_OK)
        *out = root;
    return st;
}

/* --- JSON -------------------------------------------------------------------------------- */

static fj_status from_json(dec *d, const fj_json *j, gnode *n)
{
    char num[48];
    n->type = j->type;
    switch (j->type) {
    case FJ_JSON_NULL: n->text = ""; return FJ_OK;
    case FJ_JSON_TRUE: n->text = "true"; return FJ_OK;
    case FJ_JSON_FALSE: n->text = "false"; return FJ_OK;
    case FJ_JSON_INT:
        n->i = j->v.i;
        snprintf(num, sizeof num, "%lld", (long long)j->v.i);
        break;
    case FJ_JSON_UINT:
        n->u = j->v.u;
        snprintf(num, sizeof num, "%llu", (unsigned long long)j->v.u);
        break;
    case FJ_JSON_REAL:
        n->d = j->v.d;
        go_float(j->v.d, num);
        break;
    case FJ_JSON_STRING:
        if (strlen(j->v.s) != j->len)
            return fail(d, NULL, "NUL character (\\u0000) in a string");
        n->text = j->v.s;
        return FJ_OK;
    case FJ_JSON_ARRAY:
    case FJ_JSON_OBJECT:
        n->len = n->cap = j->len;
        n->kids = j->len ? fj_arena_calloc(d->a, j->len, sizeof *n->kids) : NULL;
        if (j->type == FJ_JSON_OBJECT)
            n->keys = j->len ? fj_arena_calloc(d->a, j->len, sizeof *n->keys) : NULL;
        if (j->len && (!n->kids || (j->type == FJ_JSON_OBJECT && !n->keys)))
            return nomem(d);
        for (size_t i = 0; i < j->len; i++) {
            const fj_json *v = j->type == FJ_JSON_ARRAY ? &j->v.items[i] : &j->v.members[i].value;
            if (j->type == FJ_JSON_OBJECT) {
                const fj_json_member *m = &j->v.members[i];
                if (strlen(m->key) != m->key_len)
                    return fail(d, NULL, "NUL character (\\u0000) in a key");
                n->keys[i] = m->key;
            }
            fj_status st = from_json(d, v, &n->kids[i]);
            if (st != FJ_OK)
                return st;
        }
        return FJ_OK;
    }
    if (!(n->text = fj_arena_strdup(d->a, num)))
        return nomem(d);
    return FJ_OK;
}

static fj_status json_tree(dec *d, const char *body, size_t len, gnode **out)
{
    fj_json *j;
    size_t end;
    fj_status st = fj_json_parse(d->a, body, len, &end, &j, d->err);
    if (st != FJ_OK)
        return st;
    for (; end < len; end++)
        if (body[end] != ' ' && body[end] != '\t' && body[end] != '\r' && body[end] != '\n')
            return fj_err_set(d->err, FJ_EINVAL, "body", "data after the snapshot: send one snapshot per request");
    gnode *root = fj_arena_calloc(d->a, 1, sizeof *root);
    if (!root)
        return nomem(d);
    if ((st = from_json(d, j, root)) != FJ_OK)
        return st;
    *out = root;
    return FJ_OK;
}

/* --- the snapshot ------------------------------------------------------------------------ */

static int cmp_str_ptr(const void *a, const void *b)
{
    int c = strcmp(**(const char *const *const *)a, **(const char *const *const *)b);
    if (c)
        return c;
    /* equal names: keep document order, so the later one is reported */
    const char *const *pa = *(const char *const *const *)a, *const *pb = *(const char *const *const *)b;
    return pa < pb ? -1 : pa > pb;
}

/* Index of the second occurrence of a name that occurs twice in names[0..n) (stride in bytes
 * between names), or n when all differ. */
static size_t find_dup(fj_arena *a, const char *const *names, size_t n, size_t stride)
{
    if (n < 2)
        return n;
    const char *const *first = names;
#define NAME_AT(i) ((const char *const *)((const char *)first + (i) * stride))
    if (n <= 16) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (strcmp(*NAME_AT(i), *NAME_AT(j)) == 0)
                    return i;
        return n;
    }
    const char *const **v = fj_arena_calloc(a, n, sizeof *v);
    if (!v) /* out of memory: the slow way */
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (strcmp(*NAME_AT(i), *NAME_AT(j)) == 0)
                    return i;
    if (!v)
        return n;
    for (size_t i = 0; i < n; i++)
        v[i] = NAME_AT(i);
    qsort(v, n, sizeof *v, cmp_str_ptr);
    size_t best = n;
    for (size_t i = 1; i < n; i++)
        if (strcmp(*v[i], *v[i - 1]) == 0) {
            size_t idx = (size_t)((const char *)v[i] - (const char *)first) / stride;
            if (idx < best)
                best = idx;
        }
    return best;
#undef NAME_AT
}

/* A mapping the decoder reads: no key twice (as yaml.v3 refuses; Go's JSON would keep the last). */
static fj_status want_object(dec *d, const gnode *n, const char *what)
{
    if (n->type != FJ_JSON_OBJECT)
        return fail(d, n, "%s must be a mapping, not %s %s", what, strchr("aeiou", type_word(n)[0]) ? "an" : "a",
                    type_word(n));
    size_t k = find_dup(d->a, n->keys, n->len, sizeof *n->keys);
    if (k < n->len) {
        size_t old = push_key(d, n->keys[k]);
        fj_status st = fail(d, &n->kids[k], "duplicate key \"%.60s\"", n->keys[k]);
        pop(d, old);
        return st;
    }
    return FJ_OK;
}

static const char *const known_types[] = {"K8s", "GPU", "OS", "SystemD", "NodeTopology", "NetworkTopology"};
#define N_KNOWN_TYPES (sizeof known_types / sizeof known_types[0])

static const char *canonical_type(const char *t)
{
    for (size_t i = 0; i < N_KNOWN_TYPES; i++)
        if (strcasecmp(t, known_types[i]) == 0)
            return known_types[i];
    return t;
}

/* A context (or metadata) value: a string; numbers and booleans as written; null as "". */
static fj_status dec_context(dec *d, const gnode *n, fj_aicr_pair **out, size_t *n_out, const char *what)
{
    *out = NULL;
    *n_out = 0;
    if (n->type == FJ_JSON_NULL)
        return FJ_OK;
    fj_status st = want_object(d, n, what);
    if (st != FJ_OK)
        return st;
    if (!n->len)
        return FJ_OK;
    fj_aicr_pair *v = fj_arena_calloc(d->a, n->len, sizeof *v);
    if (!v)
        return nomem(d);
    for (size_t i = 0; i < n->len; i++) {
        const gnode *k = &n->kids[i];
        size_t old = push_key(d, n->keys[i]);
        if (!*n->keys[i])
            return fail(d, k, "empty key");
        if (!is_scalar(k))
            return fail(d, k, "%s values are strings, not %s", what, k->type == FJ_JSON_ARRAY ? "lists" : "mappings");
        v[i].key = n->keys[i];
        v[i].value = k->type == FJ_JSON_NULL ? "" : k->text;
        pop(d, old);
    }
    *out = v;
    *n_out = n->len;
    return FJ_OK;
}

static fj_status set_reading(dec *d, const gnode *n, fj_aicr_reading *r)
{
    switch (n->type) {
    case FJ_JSON_STRING: r->type = FJ_AICR_STRING; r->v.s = n->text; return FJ_OK;
    case FJ_JSON_INT: r->type = FJ_AICR_INT; r->v.i = n->i; return FJ_OK;
    case FJ_JSON_UINT: r->type = FJ_AICR_UINT; r->v.u = n->u; return FJ_OK;
    case FJ_JSON_REAL:
        if (!isfinite(n->d))
            return fail(d, n, "%.40s is not a finite number", n->text);
        r->type = FJ_AICR_REAL;
        r->v.d = n->d;
        return FJ_OK;
    case FJ_JSON_TRUE:
    case FJ_JSON_FALSE: r->type = FJ_AICR_BOOL; r->v.b = n->type == FJ_JSON_TRUE; return FJ_OK;
    case FJ_JSON_NULL: return fail(d, n, "null is not a reading (want a string, number or boolean)");
    default: return fail(d, n, "a reading is a string, number or boolean, not %s", type_word(n));
    }
}

/* data: key -> scalar (Go types) or {value, unit} (aicr's OpenAPI). */
static fj_status dec_data(dec *d, const gnode *n, fj_aicr_reading **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (n->type == FJ_JSON_NULL)
        return FJ_OK;
    fj_status st = want_object(d, n, "data");
    if (st != FJ_OK || !n->len)
        return st;
    fj_aicr_reading *v = fj_arena_calloc(d->a, n->len, sizeof *v);
    if (!v)
        return nomem(d);
    for (size_t i = 0; i < n->len; i++) {
        const gnode *k = &n->kids[i];
        size_t old = push_key(d, n->keys[i]);
        if (!*n->keys[i])
            return fail(d, k, "empty key");
        v[i].key = n->keys[i];
        if (k->type == FJ_JSON_OBJECT) {
            if ((st = want_object(d, k, "a reading")) != FJ_OK)
                return st;
            const gnode *val = get(k, "value"), *unit = get(k, "unit");
            if (!val)
                return fail(d, k, "a reading mapping needs `value` (and optionally `unit`)");
            size_t o2 = push_key(d, "value");
            if (!is_scalar(val))
                return fail(d, val, "a reading is a string, number or boolean, not %s", type_word(val));
            if ((st = set_reading(d, val, &v[i])) != FJ_OK)
                return st;
            pop(d, o2);
            if (unit && unit->type != FJ_JSON_NULL) {
                o2 = push_key(d, "unit");
                if (unit->type != FJ_JSON_STRING)
                    return fail(d, unit, "a unit is a string, not %s", type_word(unit));
                v[i].unit = *unit->text ? unit->text : NULL;
                pop(d, o2);
            }
        } else if ((st = set_reading(d, k, &v[i])) != FJ_OK) {
            return st;
        }
        pop(d, old);
    }
    *out = v;
    *n_out = n->len;
    return FJ_OK;
}

static fj_status dec_items(dec *d, const gnode *n, fj_aicr_subtype *st_out)
{
    if (n->type == FJ_JSON_NULL)
        return FJ_OK;
    if (n->type != FJ_JSON_ARRAY)
        return fail(d, n, "items must be a list, not %s", type_word(n));
    if (!n->len)
        return FJ_OK;
    fj_aicr_item *items = fj_arena_calloc(d->a, n->len, sizeof *items);
    if (!items)
        return nomem(d);
    fj_status st;
    for (size_t i = 0; i < n->len; i++) {
        const gnode *it = &n->kids[i];
        size_t old = push_index(d, i);
        if ((st = want_object(d, it, "an item")) != FJ_OK)
            return st;
        const gnode *x;
        if ((x = get(it, "items"))) {
            push_key(d, "items");
            return fail(d, x, "an ItemEntry does not support nested items");
        }
        if ((x = get(it, "data"))) {
            size_t o2 = push_key(d, "data");
            if ((st = dec_data(d, x, &items[i].data, &items[i].n_data)) != FJ_OK)
                return st;
            pop(d, o2);
        }
        if ((x = get(it, "context"))) {
            size_t o2 = push_key(d, "context");
            if ((st = dec_context(d, x, &items[i].context, &items[i].n_context, "context")) != FJ_OK)
                return st;
            pop(d, o2);
        }
        pop(d, old);
    }
    st_out->items = items;
    st_out->n_items = n->len;
    return FJ_OK;
}

static fj_status dec_subtype(dec *d, const gnode *n, fj_aicr_subtype *s)
{
    fj_status st = want_object(d, n, "a subtype");
    if (st != FJ_OK)
        return st;
    const gnode *go = get(n, "subtype"), *oa = get(n, "name");
    const char *name = NULL;
    for (int k = 0; k < 2; k++) {
        const gnode *x = k ? oa : go;
        if (!x || x->type == FJ_JSON_NULL)
            continue;
        size_t old = push_key(d, k ? "name" : "subtype");
        if (x->type != FJ_JSON_STRING)
            return fail(d, x, "a subtype name is a string, not %s", type_word(x));
        if (name && *name && *x->text && strcmp(name, x->text) != 0)
            return fail(d, x, "`subtype` (\"%.40s\") and `name` (\"%.40s\") differ", name, x->text);
        if (!name || !*name)
            name = x->text;
        pop(d, old);
    }
    if (!name || !*name) {
        size_t old = push_key(d, "subtype");
        st = fail(d, n, "required: the subtype's name (`subtype`; `name` in aicr's OpenAPI spelling)");
        pop(d, old);
        return st;
    }
    s->name = name;
    const gnode *x;
    if ((x = get(n, "data"))) {
        size_t old = push_key(d, "data");
        if ((st = dec_data(d, x, &s->data, &s->n_data)) != FJ_OK)
            return st;
        pop(d, old);
    }
    if ((x = get(n, "context"))) {
        size_t old = push_key(d, "context");
        if ((st = dec_context(d, x, &s->context, &s->n_context, "context")) != FJ_OK)
            return st;
        pop(d, old);
    }
    if ((x = get(n, "items"))) {
        size_t old = push_key(d, "items");
        if ((st = dec_items(d, x, s)) != FJ_OK)
            return st;
        pop(d, old);
    }
    return FJ_OK;
}

static fj_status dec_measurement(dec *d, const gnode *n, fj_aicr_measurement *m)
{
    fj_status st = want_object(d, n, "a measurement");
    if (st != FJ_OK)
        return st;
    const gnode *t = get(n, "type");
    size_t old = push_key(d, "type");
    if (!t || t->type == FJ_JSON_NULL)
        return fail(d, n, "required: the measurement's type (K8s, GPU, OS, SystemD, NodeTopology, NetworkTopology)");
    if (t->type != FJ_JSON_STRING || !*t->text)
        return fail(d, t, "a measurement type is a non-empty string");
    m->type = canonical_type(t->text);
    pop(d, old);
    const gnode *subs = get(n, "subtypes");
    if (!subs || subs->type == FJ_JSON_NULL)
        return FJ_OK;
    old = push_key(d, "subtypes");
    if (subs->type != FJ_JSON_ARRAY)
        return fail(d, subs, "subtypes must be a list, not %s", type_word(subs));
    if (subs->len && !(m->subtypes = fj_arena_calloc(d->a, subs->len, sizeof *m->subtypes)))
        return nomem(d);
    for (size_t i = 0; i < subs->len; i++) {
        size_t o2 = push_index(d, i);
        if ((st = dec_subtype(d, &subs->kids[i], &m->subtypes[i])) != FJ_OK)
            return st;
        pop(d, o2);
    }
    m->n_subtypes = subs->len;
    size_t k = m->n_subtypes < 2 ? m->n_subtypes
                                 : find_dup(d->a, &m->subtypes[0].name, m->n_subtypes, sizeof *m->subtypes);
    if (k < m->n_subtypes) {
        push_index(d, k);
        return fail(d, &subs->kids[k], "subtype \"%.60s\" appears twice in this measurement", m->subtypes[k].name);
    }
    pop(d, old);
    return FJ_OK;
}

static fj_status dec_snapshot(dec *d, const gnode *root, fj_aicr_snapshot *s)
{
    if (root->type != FJ_JSON_OBJECT)
        return fail(d, root, "an aicr snapshot is a mapping with `measurements`, not %s", type_word(root));
    fj_status st = want_object(d, root, "a snapshot");
    if (st != FJ_OK)
        return st;
    const gnode *x;
    if ((x = get(root, "kind")) && x->type != FJ_JSON_NULL) {
        size_t old = push_key(d, "kind");
        if (x->type != FJ_JSON_STRING || strcmp(x->text, "Snapshot") != 0)
            return fail(d, x, "kind is \"%.40s\"; an aicr snapshot has kind Snapshot",
                        x->type == FJ_JSON_STRING ? x->text : type_word(x));
        pop(d, old);
    }
    if ((x = get(root, "apiVersion")) && x->type != FJ_JSON_NULL) {
        size_t old = push_key(d, "apiVersion");
        if (x->type != FJ_JSON_STRING)
            return fail(d, x, "apiVersion is a string, not %s", type_word(x));
        s->api_version = *x->text ? x->text : NULL;
        pop(d, old);
    }
    if ((x = get(root, "metadata"))) {
        size_t old = push_key(d, "metadata");
        if ((st = dec_context(d, x, &s->metadata, &s->n_metadata, "metadata")) != FJ_OK)
            return st;
        pop(d, old);
    }
    const gnode *ms = get(root, "measurements");
    size_t old = push_key(d, "measurements");
    if (!ms)
        return fail(d, root, "required field is missing: not an aicr snapshot (a snapshot lists its "
                             "measurements; a k8s-launch-kit preset or cluster-config is not one)");
    if (ms->type == FJ_JSON_NULL)
        return FJ_OK;
    if (ms->type != FJ_JSON_ARRAY)
        return fail(d, ms, "measurements must be a list, not %s", type_word(ms));
    if (ms->len && !(s->measurements = fj_arena_calloc(d->a, ms->len, sizeof *s->measurements)))
        return nomem(d);
    for (size_t i = 0; i < ms->len; i++) {
        size_t o2 = push_index(d, i);
        if ((st = dec_measurement(d, &ms->kids[i], &s->measurements[i])) != FJ_OK)
            return st;
        pop(d, o2);
    }
    s->n_measurements = ms->len;
    pop(d, old);
    return FJ_OK;
}

fj_status fj_aicr_decode(fj_arena *a, const char *body, size_t len, fj_aicr_format fmt, fj_aicr_snapshot **out,
                         fj_err *err)
{
    dec d = {.a = a, .err = err};
    if (fmt == FJ_AICR_AUTO) {
        size_t i = 0;
        i = skip_ws(body, len, 0);
        fmt = i < len && body[i] == '{' ? FJ_AICR_JSON : FJ_AICR_YAML;
    }
    gnode *root = NULL;
    fj_status st = fmt == FJ_AICR_JSON ? json_tree(&d, body, len, &root) : yaml_tree(&d, body, len, &root);
    if (st != FJ_OK)
        return st;
    fj_aicr_snapshot *s = fj_arena_calloc(a, 1, sizeof *s);
    if (!s)
        return nomem(&d);
    if ((st = dec_snapshot(&d, root, s)) != FJ_OK)
        return st;
    *out = s;
    return FJ_OK;
}

const char *fj_aicr_meta(const fj_aicr_snapshot *s, const char *key)
{
    for (size_t i = 0; i < s->n_metadata; i++)
        if (strcmp(s->metadata[i].key, key) == 0)
            return s->metadata[i].value;
    return NULL;
}

/* --- normalised JSON --------------------------------------------------------------------- */

typedef struct jw {
    fj_buf *b;
    fj_status st;
} jw;

static void w_raw(jw *w, const char *s)
{
    if (w->st == FJ_OK)
        w->st = fj_buf_puts(w->b, s);
}

static void w_str(jw *w, const char *s)
{
    if (w->st == FJ_OK)
        w->st = fj_buf_json_str(w->b, s);
}

static void w_value(jw *w, const fj_aicr_reading *r)
{
    char num[48];
    switch (r->type) {
    case FJ_AICR_STRING: w_str(w, r->v.s); return;
    case FJ_AICR_INT: snprintf(num, sizeof num, "%lld", (long long)r->v.i); break;
    case FJ_AICR_UINT: snprintf(num, sizeof num, "%llu", (unsigned long long)r->v.u); break;
    case FJ_AICR_REAL: json_real(r->v.d, num); break;
    case FJ_AICR_BOOL: snprintf(num, sizeof num, "%s", r->v.b ? "true" : "false"); break;
    }
    w_raw(w, num);
}

/* "name":{...} followed by a comma; nothing when empty and not always. */
static void w_pairs(jw *w, const char *name, const fj_aicr_pair *p, size_t n, bool always)
{
    if (!n && !always)
        return;
    w_raw(w, "\"");
    w_raw(w, name);
    w_raw(w, "\":{");
    for (size_t i = 0; i < n; i++) {
        if (i)
            w_raw(w, ",");
        w_str(w, p[i].key);
        w_raw(w, ":");
        w_str(w, p[i].value);
    }
    w_raw(w, "},");
}

static void w_data(jw *w, const fj_aicr_reading *r, size_t n)
{
    w_raw(w, "\"data\":{");
    for (size_t i = 0; i < n; i++) {
        if (i)
            w_raw(w, ",");
        w_str(w, r[i].key);
        w_raw(w, ":");
        if (r[i].unit) {
            w_raw(w, "{\"value\":");
            w_value(w, &r[i]);
            w_raw(w, ",\"unit\":");
            w_str(w, r[i].unit);
            w_raw(w, "}");
        } else {
            w_value(w, &r[i]);
        }
    }
    w_raw(w, "}");
}

static void w_subtype(jw *w, const fj_aicr_subtype *st)
{
    w_raw(w, "{\"subtype\":");
    w_str(w, st->name);
    w_raw(w, ",");
    w_pairs(w, "context", st->context, st->n_context, false);
    w_data(w, st->data, st->n_data);
    if (st->n_items) {
        w_raw(w, ",\"items\":[");
        for (size_t i = 0; i < st->n_items; i++) {
            const fj_aicr_item *it = &st->items[i];
            w_raw(w, i ? ",{" : "{");
            w_pairs(w, "context", it->context, it->n_context, false);
            w_data(w, it->data, it->n_data);
            w_raw(w, "}");
        }
        w_raw(w, "]");
    }
    w_raw(w, "}");
}

fj_status fj_aicr_subtype_json(const fj_aicr_subtype *st, fj_buf *out)
{
    jw w = {out, FJ_OK};
    w_subtype(&w, st);
    return w.st;
}

fj_status fj_aicr_json(const fj_aicr_snapshot *s, fj_buf *out)
{
    jw w = {out, FJ_OK};
    w_raw(&w, "{\"kind\":\"Snapshot\"");
    if (s->api_version) {
        w_raw(&w, ",\"apiVersion\":");
        w_str(&w, s->api_version);
    }
    w_raw(&w, ",");
    w_pairs(&w, "metadata", s->metadata, s->n_metadata, true);
    w_raw(&w, "\"measurements\":[");
    for (size_t i = 0; i < s->n_measurements; i++) {
        const fj_aicr_measurement *m = &s->measurements[i];
        w_raw(&w, i ? ",{\"type\":" : "{\"type\":");
        w_str(&w, m->type);
        w_raw(&w, ",\"subtypes\":[");
        for (size_t k = 0; k < m->n_subtypes; k++) {
            if (k)
                w_raw(&w, ",");
            w_subtype(&w, &m->subtypes[k]);
        }
        w_raw(&w, "]}");
    }
    w_raw(&w, "]}");
    return w.st;
}

/* The buffer's text copied into the arena. */
static fj_status buf_to_arena(fj_buf *b, fj_arena *a, const char **out)
{
    *out = fj_arena_strndup(a, b->data ? b->data : "", b->len);
    return *out ? FJ_OK : FJ_ENOMEM;
}

fj_status fj_aicr_record(const fj_aicr_snapshot *s, fj_arena *a, fj_measurements *rec, fj_err *err)
{
    memset(rec, 0, sizeof *rec);
    fj_buf b;
    fj_buf_init(&b, JSON_CAP);
    fj_status st = fj_aicr_json(s, &b);
    if (st == FJ_OK)
        st = buf_to_arena(&b, a, &rec->json);
    size_t n = 0;
    for (size_t i = 0; i < s->n_measurements; i++)
        n += s->measurements[i].n_subtypes;
    if (st == FJ_OK && n && !(rec->rows = fj_arena_calloc(a, n, sizeof *rec->rows)))
        st = FJ_ENOMEM;
    /* instance: the measurement's rank among those of its type (sorting keeps this n log n for a
     * body with very many measurements) */
    uint32_t *inst = s->n_measurements ? fj_arena_calloc(a, s->n_measurements, sizeof *inst) : NULL;
    const char *const **order = s->n_measurements ? fj_arena_calloc(a, s->n_measurements, sizeof *order) : NULL;
    if (st == FJ_OK && s->n_measurements && (!inst || !order))
        st = FJ_ENOMEM;
    if (st == FJ_OK && s->n_measurements) {
        for (size_t i = 0; i < s->n_measurements; i++)
            order[i] = &s->measurements[i].type;
        qsort(order, s->n_measurements, sizeof *order, cmp_str_ptr); /* by type, then document order */
#define MEASUREMENT_OF(p) ((size_t)((const char *)(p) - (const char *)&s->measurements[0].type) / sizeof *s->measurements)
        for (size_t i = 0; i < s->n_measurements; i++)
            inst[MEASUREMENT_OF(order[i])] =
                i && strcmp(*order[i], *order[i - 1]) == 0 ? inst[MEASUREMENT_OF(order[i - 1])] + 1 : 0;
#undef MEASUREMENT_OF
    }
    for (size_t i = 0; st == FJ_OK && i < s->n_measurements; i++) {
        const fj_aicr_measurement *m = &s->measurements[i];
        uint32_t instance = inst[i];
        for (size_t k = 0; st == FJ_OK && k < m->n_subtypes; k++) {
            fj_measure_row *r = &rec->rows[rec->n_rows++];
            r->type = m->type;
            r->instance = instance;
            r->subtype = m->subtypes[k].name;
            fj_buf_reset(&b);
            st = fj_aicr_subtype_json(&m->subtypes[k], &b);
            if (st == FJ_OK)
                st = buf_to_arena(&b, a, &r->json);
        }
    }
    fj_buf_free(&b);
    rec->n_measurements = s->n_measurements;
    if (st != FJ_OK)
        return fj_err_set(err, st, "body", "%s", st == FJ_ETOOBIG ? "snapshot too large" : "out of memory");
    return FJ_OK;
}

/* --- Reading.String() -------------------------------------------------------------------- */

const char *fj_aicr_reading_string(fj_arena *a, const fj_aicr_reading *r)
{
    char num[48];
    switch (r->type) {
    case FJ_AICR_STRING: return r->v.s;
    case FJ_AICR_INT: snprintf(num, sizeof num, "%lld", (long long)r->v.i); break;
    case FJ_AICR_UINT: snprintf(num, sizeof num, "%llu", (unsigned long long)r->v.u); break;
    case FJ_AICR_REAL: go_float(r->v.d, num); break;
    case FJ_AICR_BOOL: return r->v.b ? "true" : "false";
    }
    return fj_arena_strdup(a, num);
}

fj_status fj_aicr_reading_json(const fj_aicr_reading *r, fj_buf *out)
{
    jw w = {out, FJ_OK};
    w_value(&w, r);
    return w.st;
}

/* --- telling bodies apart ---------------------------------------------------------------- */

static size_t skip_ws(const char *b, size_t len, size_t i)
{
    while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n'))
        i++;
    return i;
}

/* Past the string starting at b[i] == '"', or len when unterminated. */
static size_t skip_string(const char *b, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (b[i] == '\\')
            i++;
        else if (b[i] == '"')
            return i + 1;
    }
    return len;
}

static size_t skip_value(const char *b, size_t len, size_t i)
{
    if (i >= len)
        return len;
    if (b[i] == '"')
        return skip_string(b, len, i);
    if (b[i] == '{' || b[i] == '[') {
        size_t depth = 0;
        while (i < len) {
            char c = b[i];
            if (c == '"') {
                i = skip_string(b, len, i);
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return i + 1;
            i++;
        }
        return len;
    }
    while (i < len && !strchr(",}] \t\r\n", b[i]))
        i++;
    return i;
}

bool fj_aicr_json_is_snapshot(const char *b, size_t len)
{
    size_t i = skip_ws(b, len, 0);
    if (i >= len || b[i] != '{')
        return false;
    i++;
    for (;;) {
        i = skip_ws(b, len, i);
        if (i >= len || b[i] != '"')
            return false;
        size_t ks = i + 1;
        i = skip_string(b, len, i);
        if (i >= len)
            return false;
        bool kind = i - 1 - ks == 4 && memcmp(b + ks, "kind", 4) == 0;
        i = skip_ws(b, len, i);
        if (i >= len || b[i] != ':')
            return false;
        i = skip_ws(b, len, i + 1);
        if (kind) {
            size_t vs = i + 1;
            if (i >= len || b[i] != '"')
                return false;
            i = skip_string(b, len, i);
            return i <= len && i - 1 - vs == 8 && memcmp(b + vs, "Snapshot", 8) == 0;
        }
        i = skip_ws(b, len, skip_value(b, len, i));
        if (i >= len || b[i] != ',')
            return false;
        i++;
    }
}

bool fj_aicr_content_type_is_yaml(const char *ctype)
{
    if (!ctype)
        return false;
    while (*ctype == ' ')
        ctype++;
    static const char *const types[] = {"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t n = strlen(types[i]);
        if (strncasecmp(ctype, types[i], n) == 0 && (ctype[n] == '\0' || ctype[n] == ';' || ctype[n] == ' '))
            return true;
    }
    return false;
}

/* --- constraint paths -------------------------------------------------------------------- */

static fj_status path_fail(fj_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static fj_status path_fail(fj_err *err, const char *fmt, ...)
{
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fj_err_set(err, FJ_EINVAL, "path", "%s", msg);
}

#define PATH_FORMS "want {Type}.{Subtype}.{Key}, {Type}.{Subtype}[N].{Key} or {Type}.{Subtype}[key=value].{Key}"

fj_status fj_aicr_path_parse(fj_arena *a, const char *path, fj_aicr_path *out, fj_err *err)
{
    memset(out, 0, sizeof *out);
    if (!path || !*path)
        return path_fail(err, "empty path: " PATH_FORMS);
    const char *dot = strchr(path, '.');
    if (!dot || dot == path)
        return path_fail(err, "no type: " PATH_FORMS);
    if (memchr(path, '[', (size_t)(dot - path)))
        return path_fail(err, "a selector belongs after the subtype, not the type: " PATH_FORMS);
    out->type = fj_arena_strndup(a, path, (size_t)(dot - path));
    const char *rest = dot + 1;
    const char *br = strchr(rest, '[');
    const char *sub_end = strpbrk(rest, ".[");
    bool systemd = strcmp(out->type, "SystemD") == 0;
    if (systemd && !br) /* unit names have dots, D-Bus property names have none */
        sub_end = strrchr(rest, '.');
    else if (systemd)
        sub_end = br;
    if (!sub_end)
        return path_fail(err, "no key after the subtype: " PATH_FORMS);
    if (sub_end == rest)
        return path_fail(err, "empty subtype: " PATH_FORMS);
    out->subtype = fj_arena_strndup(a, rest, (size_t)(sub_end - rest));
    const char *k = sub_end;
    if (*k == '[') {
        const char *close = strchr(k, ']');
        if (!close)
            return path_fail(err, "unclosed '[' after the subtype: " PATH_FORMS);
        const char *sel = k + 1;
        size_t sl = (size_t)(close - sel);
        if (sl == 0)
            return path_fail(err, "empty selector []: " PATH_FORMS);
        if (close[1] != '.')
            return path_fail(err, "a selector is followed by '.' and the key: " PATH_FORMS);
        k = close + 1;
        if (all_digits(sel, sl, 10)) {
            char *num = fj_arena_strndup(a, sel, sl);
            if (!num)
                return fj_err_set(err, FJ_ENOMEM, "path", "out of memory");
            errno = 0;
            unsigned long long v = strtoull(num, NULL, 10);
            out->sel = FJ_AICR_SEL_INDEX;
            out->index = errno ? UINT64_MAX : (uint64_t)v; /* too large: out of range when resolved */
        } else {
            const char *eq = memchr(sel, '=', sl);
            if (!eq)
                return path_fail(err, "selector [%.*s] is neither an index nor key=value", (int)(sl > 60 ? 60 : sl),
                                 sel);
            if (eq == sel)
                return path_fail(err, "predicate [%.*s] has no key", (int)(sl > 60 ? 60 : sl), sel);
            if (eq + 1 == close)
                return path_fail(err, "predicate [%.*s] has no value", (int)(sl > 60 ? 60 : sl), sel);
            out->sel = FJ_AICR_SEL_PREDICATE;
            out->pred_key = fj_arena_strndup(a, sel, (size_t)(eq - sel));
            out->pred_value = fj_arena_strndup(a, eq + 1, (size_t)(close - eq - 1));
        }
    }
    if (*k != '.' || !k[1])
        return path_fail(err, "no key after the %s: " PATH_FORMS, out->sel ? "selector" : "subtype");
    out->key = fj_arena_strdup(a, k + 1);
    if (!out->type || !out->subtype || !out->key ||
        (out->sel == FJ_AICR_SEL_PREDICATE && (!out->pred_key || !out->pred_value)))
        return fj_err_set(err, FJ_ENOMEM, "path", "out of memory");
    return FJ_OK;
}

static const fj_aicr_reading *find_reading(const fj_aicr_reading *r, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(r[i].key, key) == 0)
            return &r[i];
    return NULL;
}

static const char *find_pair(const fj_aicr_pair *p, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(p[i].key, key) == 0)
            return p[i].value;
    return NULL;
}

/* "a, b, c" of up to cap bytes, for messages. */
static void list_names(char *out, size_t cap, const char *const *names, size_t n, size_t stride)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && off < cap; i++) {
        const char *s = *(const char *const *)((const char *)names + i * stride);
        int w = snprintf(out + off, cap - off, "%s%s", i ? ", " : "", s);
        off += w < 0 ? 0 : (size_t)w;
    }
    if (off >= cap && cap > 4)
        memcpy(out + cap - 4, "...", 4);
}

static fj_status not_found(fj_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static fj_status not_found(fj_err *err, const char *fmt, ...)
{
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fj_err_set(err, FJ_ENOTFOUND, "path", "%s", msg);
}

fj_status fj_aicr_resolve(fj_arena *a, const fj_aicr_snapshot *s, const fj_aicr_path *p, fj_aicr_result *out,
                          fj_err *err)
{
    memset(out, 0, sizeof *out);
    char names[120];
    const fj_aicr_measurement *m = NULL;
    for (size_t i = 0; i < s->n_measurements && !m; i++)
        if (strcmp(s->measurements[i].type, p->type) == 0)
            m = &s->measurements[i];
    if (!m) {
        if (s->n_measurements)
            list_names(names, sizeof names, &s->measurements[0].type, s->n_measurements, sizeof *s->measurements);
        const char *canon = canonical_type(p->type);
        if (canon != p->type && strcmp(canon, p->type) != 0)
            return not_found(err, "no measurement of type %.40s (type names are case-sensitive: %s)", p->type, canon);
        return not_found(err, "no measurement of type %.40s in the snapshot (it has: %s)", p->type,
                         s->n_measurements ? names : "none");
    }
    const fj_aicr_subtype *st = NULL;
    for (size_t i = 0; i < m->n_subtypes && !st; i++)
        if (strcmp(m->subtypes[i].name, p->subtype) == 0)
            st = &m->subtypes[i];
    if (!st) {
        if (m->n_subtypes)
            list_names(names, sizeof names, &m->subtypes[0].name, m->n_subtypes, sizeof *m->subtypes);
        return not_found(err, "no subtype %.60s in %s (it has: %s)", p->subtype, m->type,
                         m->n_subtypes ? names : "none");
    }
    if (p->sel == FJ_AICR_SEL_NONE) {
        /* the legacy form reads Subtype.Data only */
        const fj_aicr_reading *r = find_reading(st->data, st->n_data, p->key);
        if (!r) {
            if (find_pair(st->context, st->n_context, p->key))
                return not_found(err, "%s.%s has %.60s in its context, not its data: {Type}.{Subtype}.{Key} reads "
                                      "data only",
                                 m->type, st->name, p->key);
            return not_found(err, "no key %.60s in the data of %s.%s", p->key, m->type, st->name);
        }
        out->reading = r;
        out->value = fj_aicr_reading_string(a, r);
        out->from = "data";
        return out->value ? FJ_OK : fj_err_set(err, FJ_ENOMEM, "path", "out of memory");
    }
    if (!st->n_items)
        return not_found(err, "%s.%s has no items, so a selector cannot pick one", m->type, st->name);
    const fj_aicr_item *it = NULL;
    if (p->sel == FJ_AICR_SEL_INDEX) {
        if (p->index >= st->n_items)
            return not_found(err, "%s.%s has %zu items: index %llu is out of range", m->type, st->name, st->n_items,
                             (unsigned long long)p->index);
        it = &st->items[p->index];
    } else {
        size_t matches = 0;
        for (size_t i = 0; i < st->n_items; i++) {
            const fj_aicr_item *c = &st->items[i];
            const fj_aicr_reading *r = find_reading(c->data, c->n_data, p->pred_key);
            const char *v = r ? fj_aicr_reading_string(a, r) : find_pair(c->context, c->n_context, p->pred_key);
            if (r && !v)
                return fj_err_set(err, FJ_ENOMEM, "path", "out of memory");
            if (v && strcmp(v, p->pred_value) == 0) {
                if (!matches++)
                    it = c;
            }
        }
        if (matches == 0)
            return not_found(err, "no item of %s.%s has %.60s=%.60s", m->type, st->name, p->pred_key, p->pred_value);
        if (matches > 1)
            return fj_err_set(err, FJ_ECONFLICT, "path",
                              "%zu items of %s.%s have %.60s=%.60s: a predicate must match exactly one item "
                              "(pick a more specific field)",
                              matches, m->type, st->name, p->pred_key, p->pred_value);
    }
    const fj_aicr_reading *r = find_reading(it->data, it->n_data, p->key);
    if (r) {
        out->reading = r;
        out->value = fj_aicr_reading_string(a, r);
        out->from = "data";
        return out->value ? FJ_OK : fj_err_set(err, FJ_ENOMEM, "path", "out of memory");
    }
    const char *v = find_pair(it->context, it->n_context, p->key);
    if (!v)
        return not_found(err, "the chosen item of %s.%s has no %.60s in its data or context", m->type, st->name,
                         p->key);
    out->value = v;
    out->from = "context";
    return FJ_OK;
}
