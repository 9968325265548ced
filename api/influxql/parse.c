/* api/influxql/parse.c — InfluxQL's lexer and a recursive-descent parser for the statements fjord
 * answers (api/influxql/influxql.h). The lexer runs on demand, one token ahead, because whether
 * `/` starts a regular expression or divides depends on what the parser expects. Errors use
 * InfluxDB's wording, so clients show what they would show against InfluxDB. */
#include "api/influxql/influxql.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    T_EOF, T_IDENT, T_QIDENT, T_STR, T_NUM, T_INT, T_DUR, T_REGEX, T_LP, T_RP, T_COMMA, T_SEMI, T_DOT, T_COLON2,
    T_ADD, T_SUB, T_MUL, T_DIV, T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE, T_EQRE, T_NERE, T_BAD,
} tok_kind;

typedef struct tok {
    tok_kind k;
    const char *p; /* where it starts */
    size_t n;
    char *s;       /* identifier, string or pattern, unquoted */
    double num;
    int64_t dur;
} tok;

typedef struct parser {
    fj_arena *a;
    iq_regs *regs;
    const char *text, *pos;
    tok t;      /* the current token */
    char *msg;
    size_t cap;
    bool failed;
    unsigned depth; /* expressions being parsed, one inside the other */
    unsigned nest;  /* subqueries being parsed, one inside the other */
    const fj_json *params; /* the request's bound parameters (an object), or NULL */
} parser;

static bool fail_msg(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --- lexer ------------------------------------------------------------------------------------ */

static void skip_space(parser *ps)
{
    for (;;) {
        while (isspace((unsigned char)*ps->pos))
            ps->pos++;
        if (ps->pos[0] == '-' && ps->pos[1] == '-') {
            while (*ps->pos && *ps->pos != '\n')
                ps->pos++;
        } else if (ps->pos[0] == '/' && ps->pos[1] == '*') {
            const char *e = strstr(ps->pos + 2, "*/");
            ps->pos = e ? e + 2 : ps->pos + strlen(ps->pos);
        } else {
            return;
        }
    }
}

static bool ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* A quoted string or identifier ending at q, with \\, \q and \n escapes. */
static char *unquote(parser *ps, const char **pp, char q, bool *ok)
{
    const char *p = *pp + 1;
    size_t cap = strlen(p) + 1;
    char *out = fj_arena_alloc(ps->a, cap), *o = out;
    *ok = false;
    if (!out)
        return NULL;
    while (*p && *p != q) {
        if (*p == '\\' && p[1]) {
            p++;
            *o++ = *p == 'n' ? '\n' : *p;
            p++;
        } else if (*p == '\n' && q == '\'') {
            break;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    if (*p == q) {
        *ok = true;
        p++;
    }
    *pp = p;
    return out;
}

static int64_t dur_unit(const char *u, size_t n)
{
    if (n == 2 && !strncmp(u, "ns", 2))
        return 1;
    if ((n == 1 && *u == 'u') || (n == 2 && !strncmp(u, "\xc2\xb5", 2)))
        return 1000;
    if (n == 2 && !strncmp(u, "ms", 2))
        return 1000000;
    if (n == 1) {
        switch (*u) {
        case 's': return 1000000000LL;
        case 'm': return 60000000000LL;
        case 'h': return 3600000000000LL;
        case 'd': return 86400000000000LL;
        case 'w': return 604800000000000LL;
        }
    }
    return 0;
}

/* A bound parameter, $name (InfluxDB's `params`, python3-influxdb's bind_params): the token is the
 * value the request bound to name, a string, number or boolean, as if written there as a literal;
 * p is just past the '$'. An unbound name fails the parse. Returns the position after the name. */
static const char *bound_param(parser *ps, tok *t, const char *p)
{
    const char *name = p;
    while (isalnum((unsigned char)*p) || *p == '_')
        p++;
    char *key = fj_arena_strndup(ps->a, name, (size_t)(p - name));
    const fj_json *v = ps->params && key ? fj_json_get(ps->params, key) : NULL;
    t->k = T_BAD;
    if (!v) {
        fail_msg(ps, "missing parameter: %s", key ? key : "");
        return p;
    }
    switch (v->type) {
    case FJ_JSON_STRING:
        t->k = T_STR;
        t->s = (char *)v->v.s;
        break;
    case FJ_JSON_UINT:
        t->k = T_INT;
        t->num = (double)v->v.u;
        break;
    case FJ_JSON_INT: /* negative: a number, as a written one would be after its minus */
        t->k = T_NUM;
        t->num = (double)v->v.i;
        break;
    case FJ_JSON_REAL:
        t->k = T_NUM;
        t->num = v->v.d;
        break;
    case FJ_JSON_TRUE:
    case FJ_JSON_FALSE:
        t->k = T_IDENT;
        t->s = v->type == FJ_JSON_TRUE ? "true" : "false";
        break;
    default: fail_msg(ps, "parameter %s: a %s cannot be bound", key, fj_json_type_name(v->type)); break;
    }
    return p;
}

static void lex(parser *ps)
{
    skip_space(ps);
    tok *t = &ps->t;
    *t = (tok){.p = ps->pos};
    const char *p = ps->pos;
    char c = *p;
    if (!c) {
        t->k = T_EOF;
        return;
    }
    if (ident_start(c)) {
        while (ident_char(*p))
            p++;
        t->k = T_IDENT;
        t->s = fj_arena_strndup(ps->a, ps->pos, (size_t)(p - ps->pos));
    } else if (c == '"' || c == '\'') {
        bool ok;
        t->s = unquote(ps, &p, c, &ok);
        t->k = !ok ? T_BAD : c == '"' ? T_QIDENT : T_STR;
    } else if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)p[1]))) {
        const char *s = p;
        while (isdigit((unsigned char)*p))
            p++;
        bool frac = false;
        if (*p == '.' && isdigit((unsigned char)p[1])) {
            frac = true;
            p++;
            while (isdigit((unsigned char)*p))
                p++;
        }
        if (*p == 'e' || *p == 'E') { /* an exponent, when digits follow */
            const char *e = p + 1;
            if (*e == '+' || *e == '-')
                e++;
            if (isdigit((unsigned char)*e)) {
                frac = true;
                p = e;
                while (isdigit((unsigned char)*p))
                    p++;
            }
        }
        t->num = strtod(s, NULL);
        t->k = frac ? T_NUM : T_INT;
        /* a duration: an integer and a unit, repeated (1h30m) */
        if (!frac) {
            const char *q = s;
            int64_t total = 0;
            bool any = false;
            while (isdigit((unsigned char)*q)) {
                const char *d = q;
                while (isdigit((unsigned char)*q))
                    q++;
                const char *u = q;
                while (isalpha((unsigned char)*q) || (unsigned char)*q == 0xc2 || (unsigned char)*q == 0xb5)
                    q++;
                int64_t m = dur_unit(u, (size_t)(q - u));
                if (!m || q == u)
                    break;
                total += strtoll(d, NULL, 10) * m;
                any = true;
                p = q;
            }
            if (any) {
                t->k = T_DUR;
                t->dur = total;
            }
        }
    } else {
        p++;
        switch (c) {
        case '(': t->k = T_LP; break;
        case ')': t->k = T_RP; break;
        case ',': t->k = T_COMMA; break;
        case ';': t->k = T_SEMI; break;
        case '.': t->k = T_DOT; break;
        case '+': t->k = T_ADD; break;
        case '-': t->k = T_SUB; break;
        case '*': t->k = T_MUL; break;
        case '/': t->k = T_DIV; break;
        case ':':
            t->k = *p == ':' ? T_COLON2 : T_BAD;
            p += *p == ':';
            break;
        case '=':
            t->k = *p == '~' ? T_EQRE : T_EQ;
            p += *p == '~';
            break;
        case '!':
            t->k = *p == '=' ? T_NE : *p == '~' ? T_NERE : T_BAD;
            p += *p == '=' || *p == '~';
            break;
        case '<':
            t->k = *p == '=' ? T_LE : *p == '>' ? T_NE : T_LT;
            p += *p == '=' || *p == '>';
            break;
        case '>':
            t->k = *p == '=' ? T_GE : T_GT;
            p += *p == '=';
            break;
        case '$':
            p = bound_param(ps, t, p);
            break;
        default: t->k = T_BAD; break;
        }
    }
    t->n = (size_t)(p - t->p);
    ps->pos = p;
}

/* The current token is `/`: re-read from there as a regular expression. */
static bool lex_regex(parser *ps)
{
    const char *p = ps->t.p + 1;
    fj_buf b;
    fj_buf_init(&b, 1 << 16);
    while (*p && *p != '/') {
        if (*p == '\\' && p[1] == '/') { /* an escaped slash is a slash */
            fj_buf_append(&b, "/", 1);
            p += 2;
            continue;
        }
        if (*p == '\\' && p[1]) {
            fj_buf_append(&b, p, 2);
            p += 2;
            continue;
        }
        fj_buf_append(&b, p++, 1);
    }
    if (*p != '/') {
        fj_buf_free(&b);
        return false;
    }
    ps->t.k = T_REGEX;
    ps->t.s = fj_arena_strndup(ps->a, b.data ? b.data : "", b.len);
    fj_buf_free(&b);
    ps->pos = p + 1;
    ps->t.n = (size_t)(ps->pos - ps->t.p);
    return true;
}

/* --- errors ------------------------------------------------------------------------------------- */

static void where_of(parser *ps, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *p = ps->text; p < at; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static bool fail(parser *ps, const char *expected)
{
    if (ps->failed)
        return false;
    ps->failed = true;
    int line, col;
    where_of(ps, ps->t.p, &line, &col);
    if (ps->t.k == T_EOF)
        snprintf(ps->msg, ps->cap, "error parsing query: found EOF, expected %s at line %d, char %d", expected, line,
                 col);
    else
        snprintf(ps->msg, ps->cap, "error parsing query: found %.*s, expected %s at line %d, char %d",
                 (int)(ps->t.n > 64 ? 64 : ps->t.n), ps->t.p, expected, line, col);
    return false;
}

static bool fail_msg(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail_msg(parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return false;
    ps->failed = true;
    int n = snprintf(ps->msg, ps->cap, "error parsing query: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->msg + n, ps->cap - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* --- helpers --------------------------------------------------------------------------------------- */

static bool is_kw(const parser *ps, const char *kw)
{
    return ps->t.k == T_IDENT && !strcasecmp(ps->t.s, kw);
}

static bool accept_kw(parser *ps, const char *kw)
{
    if (!is_kw(ps, kw))
        return false;
    lex(ps);
    return true;
}

static bool expect_kw(parser *ps, const char *kw)
{
    if (accept_kw(ps, kw))
        return true;
    return fail(ps, kw);
}

static bool accept(parser *ps, tok_kind k)
{
    if (ps->t.k != k)
        return false;
    lex(ps);
    return true;
}

static const char *const reserved[] = {
    "ALL", "ALTER", "ANY", "AS", "ASC", "BEGIN", "BY", "CREATE", "CONTINUOUS", "DATABASE", "DATABASES",
    "DEFAULT", "DELETE", "DESC", "DESTINATIONS", "DIAGNOSTICS", "DISTINCT", "DROP", "DURATION", "END", "EVERY",
    "EXPLAIN", "FIELD", "FOR", "FROM", "GRANT", "GRANTS", "GROUP", "GROUPS", "IN", "INF", "INSERT", "INTO", "KEY",
    "KEYS", "KILL", "LIMIT", "MEASUREMENT", "MEASUREMENTS", "NAME", "OFFSET", "ON", "ORDER", "PASSWORD", "POLICY",
    "POLICIES", "PRIVILEGES", "QUERIES", "QUERY", "READ", "REPLICATION", "RESAMPLE", "RETENTION", "REVOKE",
    "SELECT", "SERIES", "SET", "SHARD", "SHARDS", "SLIMIT", "SOFFSET", "STATS", "SUBSCRIPTION", "SUBSCRIPTIONS",
    "TAG", "TO", "USER", "USERS", "VALUES", "WHERE", "WITH", "WRITE", "AND", "OR", "TRUE", "FALSE", NULL,
};

static bool is_reserved(const char *s)
{
    for (size_t i = 0; reserved[i]; i++)
        if (!strcasecmp(reserved[i], s))
            return true;
    return false;
}

/* An identifier: bare (not a keyword) or "quoted". */
static const char *ident(parser *ps, const char *expected)
{
    if (ps->t.k == T_QIDENT || (ps->t.k == T_IDENT && !is_reserved(ps->t.s))) {
        const char *s = ps->t.s;
        lex(ps);
        return s;
    }
    fail(ps, expected);
    return NULL;
}

/* The type after `::` (InfluxDB's casts and Grafana's query builder: "value"::field,
 * "host"::tag, x::integer): its names are keywords too (FIELD, TAG), so they are taken as words.
 * fjord tells tags from fields by the catalogue, so the type names the same column and is not
 * kept: a name that is both a tag and a field is read as InfluxDB reads an unqualified one. */
static bool cast_type(parser *ps)
{
    static const char *const types[] = {"field", "tag", "float", "integer", "string", "boolean", "unsigned"};
    if (ps->t.k == T_IDENT)
        for (size_t i = 0; i < sizeof types / sizeof *types; i++)
            if (!strcasecmp(ps->t.s, types[i])) {
                lex(ps);
                return true;
            }
    fail(ps, "float, integer, unsigned, string, boolean, field, tag");
    return false;
}

static iq_expr *node(parser *ps, iq_kind k)
{
    iq_expr *e = fj_arena_calloc(ps->a, 1, sizeof *e);
    if (e) {
        e->k = k;
        e->height = 1;
    } else
        fail_msg(ps, "out of memory");
    return e;
}

/* The refusal of an expression nested past IQ_MAX_DEPTH, at the token where it went too deep. */
static bool too_deep(parser *ps)
{
    int line, col;
    where_of(ps, ps->t.p, &line, &col);
    return fail_msg(ps, "expression nested more than %d levels deep at line %d, char %d", IQ_MAX_DEPTH, line, col);
}

/* Gives e (an operator or a call) its height from its operands'; false past IQ_MAX_DEPTH, so that
 * a long chain (a OR a OR ...), which the parser builds in a loop, cannot make the evaluators
 * recurse deeper than the parser may. */
static bool set_height(parser *ps, iq_expr *e, const iq_expr *const *kids, size_t n)
{
    unsigned h = 0;
    for (size_t i = 0; i < n; i++)
        if (kids[i] && kids[i]->height > h)
            h = kids[i]->height;
    e->height = h + 1;
    return e->height <= IQ_MAX_DEPTH || too_deep(ps);
}

/* A regular expression through the server's one engine (api/re.h: PCRE2, bounded), recorded in
 * regs so that it is freed with the request. */
static fj_re *compile_re(parser *ps, const char *pattern)
{
    if (ps->regs->n == IQ_MAX_REGEX) {
        fail_msg(ps, "more than %d regular expressions", IQ_MAX_REGEX);
        return NULL;
    }
    char why[192];
    fj_re *re = fj_re_compile(pattern, why, sizeof why);
    if (!re) {
        fail_msg(ps, "invalid regular expression /%.64s%s/: %s", pattern, strlen(pattern) > 64 ? "..." : "", why);
        return NULL;
    }
    ps->regs->v[ps->regs->n++] = re;
    return re;
}

/* --- expressions ----------------------------------------------------------------------------------- */

static iq_expr *expr(parser *ps, int min_prec);

static iq_expr *call_args(parser *ps, iq_expr *e)
{
    iq_expr *args[16];
    size_t n = 0;
    if (!accept(ps, T_RP)) {
        do {
            if (n == 16)
                return fail_msg(ps, "too many arguments to %s()", e->s), NULL;
            if (ps->t.k == T_MUL) {
                args[n] = node(ps, IQ_WILD);
                lex(ps);
            } else if (ps->t.k == T_DIV) {
                if (!lex_regex(ps))
                    return fail(ps, "regex"), NULL;
                if (!(args[n] = node(ps, IQ_REGEX)))
                    return NULL;
                args[n]->s = ps->t.s;
                args[n]->re = compile_re(ps, ps->t.s);
                lex(ps);
                if (!args[n]->re)
                    return NULL;
            } else {
                args[n] = expr(ps, 0);
            }
            if (!args[n++])
                return NULL;
        } while (accept(ps, T_COMMA));
        if (!accept(ps, T_RP))
            return fail(ps, ")"), NULL;
    }
    e->args = fj_arena_calloc(ps->a, n + 1, sizeof *e->args);
    if (!e->args)
        return fail_msg(ps, "out of memory"), NULL;
    memcpy(e->args, args, n * sizeof *args);
    e->nargs = n;
    return set_height(ps, e, (const iq_expr *const *)args, n) ? e : NULL;
}

static iq_expr *primary(parser *ps)
{
    tok t = ps->t;
    iq_expr *e = NULL;
    switch (t.k) {
    case T_LP:
        lex(ps);
        e = expr(ps, 0);
        if (e && !accept(ps, T_RP))
            return fail(ps, ")"), NULL;
        return e;
    case T_SUB: /* a negative number or duration */
        lex(ps);
        if (ps->t.k == T_NUM || ps->t.k == T_INT) {
            if ((e = node(ps, IQ_NUM)))
                e->num = -ps->t.num;
        } else if (ps->t.k == T_DUR) {
            if ((e = node(ps, IQ_DUR)))
                e->dur = -ps->t.dur;
        } else {
            return fail(ps, "identifier, string, number, bool"), NULL;
        }
        lex(ps);
        return e;
    case T_NUM:
    case T_INT:
        if ((e = node(ps, IQ_NUM)))
            e->num = t.num;
        lex(ps);
        return e;
    case T_DUR:
        if ((e = node(ps, IQ_DUR)))
            e->dur = t.dur;
        lex(ps);
        return e;
    case T_STR:
        if ((e = node(ps, IQ_STR)))
            e->s = t.s;
        lex(ps);
        return e;
    case T_DIV:
        if (!lex_regex(ps))
            return fail(ps, "regex"), NULL;
        if ((e = node(ps, IQ_REGEX))) {
            e->s = ps->t.s;
            e->re = compile_re(ps, e->s);
        }
        lex(ps);
        return e && e->re ? e : NULL;
    case T_MUL:
        lex(ps);
        return node(ps, IQ_WILD);
    case T_QIDENT:
    case T_IDENT:
        if (t.k == T_IDENT && (!strcasecmp(t.s, "true") || !strcasecmp(t.s, "false"))) {
            if ((e = node(ps, IQ_BOOL)))
                e->num = !strcasecmp(t.s, "true");
            lex(ps);
            return e;
        }
        if (t.k == T_IDENT && !strcasecmp(t.s, "distinct")) { /* DISTINCT field; distinct(...) a call */
            lex(ps);
            if (accept(ps, T_LP)) {
                if (!(e = node(ps, IQ_CALL)))
                    return NULL;
                e->s = "distinct";
                return call_args(ps, e);
            }
            iq_expr *f = node(ps, IQ_REF);
            if (!f || !(f->s = ident(ps, "identifier")))
                return NULL;
            if (!(e = node(ps, IQ_CALL)) || !(e->args = fj_arena_calloc(ps->a, 2, sizeof *e->args)))
                return fail_msg(ps, "out of memory"), NULL;
            e->s = "distinct";
            e->args[0] = f;
            e->nargs = 1;
            return set_height(ps, e, (const iq_expr *const *)e->args, 1) ? e : NULL;
        }
        if (t.k == T_IDENT && is_reserved(t.s))
            return fail(ps, "identifier, string, number, bool"), NULL;
        lex(ps);
        if (t.k == T_IDENT && ps->t.k == T_LP) {
            lex(ps);
            if (!strcasecmp(t.s, "now")) {
                if (!accept(ps, T_RP))
                    return fail(ps, ")"), NULL;
                return node(ps, IQ_NOW);
            }
            if (!(e = node(ps, IQ_CALL)))
                return NULL;
            char *low = fj_arena_strdup(ps->a, t.s);
            for (char *q = low; q && *q; q++)
                *q = (char)tolower((unsigned char)*q);
            e->s = low;
            return call_args(ps, e);
        }
        if (!(e = node(ps, IQ_REF)))
            return NULL;
        e->s = t.s;
        if (accept(ps, T_COLON2) && !cast_type(ps))
            return NULL;
        return e;
    default:
        return fail(ps, "identifier, string, number, bool"), NULL;
    }
}

static int prec_of(tok_kind k, iq_op *op)
{
    switch (k) {
    case T_IDENT: return 0;
    case T_EQ: *op = IQ_EQ; return 4;
    case T_NE: *op = IQ_NE; return 4;
    case T_LT: *op = IQ_LT; return 4;
    case T_LE: *op = IQ_LE; return 4;
    case T_GT: *op = IQ_GT; return 4;
    case T_GE: *op = IQ_GE; return 4;
    case T_EQRE: *op = IQ_EQRE; return 4;
    case T_NERE: *op = IQ_NERE; return 4;
    case T_ADD: *op = IQ_ADD; return 5;
    case T_SUB: *op = IQ_SUB; return 5;
    case T_MUL: *op = IQ_MUL; return 6;
    case T_DIV: *op = IQ_DIV; return 6;
    default: return 0;
    }
}

static int prec_cur(parser *ps, iq_op *op)
{
    if (is_kw(ps, "AND")) {
        *op = IQ_AND;
        return 2;
    }
    if (is_kw(ps, "OR")) {
        *op = IQ_OR;
        return 1;
    }
    return prec_of(ps->t.k, op);
}

/* Precedence climbing: OR < AND < comparisons < + - < * /. */
static iq_expr *climb(parser *ps, int min_prec)
{
    iq_expr *l = primary(ps);
    while (l) {
        iq_op op = IQ_ADD;
        int p = prec_cur(ps, &op);
        if (!p || p < min_prec)
            break;
        lex(ps);
        iq_expr *r = expr(ps, p + 1);
        if (!r)
            return NULL;
        iq_expr *b = node(ps, IQ_BIN);
        if (!b)
            return NULL;
        b->op = op;
        b->l = l;
        b->r = r;
        if (!set_height(ps, b, (const iq_expr *const[]){l, r}, 2))
            return NULL;
        l = b;
    }
    return l;
}

/* Every nested expression (parentheses, operands, a call's arguments) comes through here: the
 * parser's recursion stops at IQ_MAX_DEPTH with an error instead of at the end of the stack. */
static iq_expr *expr(parser *ps, int min_prec)
{
    if (ps->depth >= IQ_MAX_DEPTH)
        return too_deep(ps), NULL;
    ps->depth++;
    iq_expr *e = climb(ps, min_prec);
    ps->depth--;
    return e;
}

/* --- clauses ------------------------------------------------------------------------------------ */

static bool select_stmt(parser *ps, iq_stmt *st);

/* How deep subqueries nest: each level runs a statement of its own. */
#define IQ_MAX_SUBQUERY 8

static bool source(parser *ps, iq_source *src)
{
    if (ps->t.k == T_LP) { /* a subquery: (SELECT ...) */
        lex(ps);
        if (!is_kw(ps, "SELECT"))
            return fail(ps, "SELECT");
        if (ps->nest >= IQ_MAX_SUBQUERY)
            return fail_msg(ps, "subqueries nested more than %d levels deep", IQ_MAX_SUBQUERY);
        iq_stmt *sub = fj_arena_calloc(ps->a, 1, sizeof *sub);
        if (!sub)
            return fail_msg(ps, "out of memory");
        lex(ps);
        ps->nest++;
        bool ok = select_stmt(ps, sub);
        ps->nest--;
        if (!ok)
            return false;
        if (!accept(ps, T_RP))
            return fail(ps, ")");
        src->sub = sub;
        return true;
    }
    if (ps->t.k == T_DIV) {
        if (!lex_regex(ps))
            return fail(ps, "regex");
        src->re = compile_re(ps, ps->t.s);
        src->name = ps->t.s;
        lex(ps);
        return src->re != NULL;
    }
    const char *parts[3];
    size_t n = 0;
    bool empty_rp = false;
    for (;;) {
        if (ps->t.k == T_DIV && n > 0) { /* db.rp./re/ */
            if (!lex_regex(ps))
                return fail(ps, "regex");
            src->re = compile_re(ps, ps->t.s);
            parts[n++] = ps->t.s;
            lex(ps);
            if (!src->re)
                return false;
            break;
        }
        if (n > 0 && ps->t.k == T_DOT) { /* db..m: the default policy */
            if (n >= 2)
                return fail(ps, "identifier");
            empty_rp = true;
            parts[n++] = "";
            lex(ps);
            continue;
        }
        const char *id = ident(ps, "identifier");
        if (!id)
            return false;
        parts[n++] = id;
        if (n == 3 || !accept(ps, T_DOT))
            break;
    }
    (void)empty_rp;
    src->name = parts[n - 1];
    if (n == 3) {
        src->db = parts[0];
        src->rp = parts[1];
    } else if (n == 2) {
        src->rp = parts[0];
    }
    return true;
}

static bool from_clause(parser *ps, iq_stmt *st, bool required)
{
    if (!accept_kw(ps, "FROM")) {
        if (required)
            return fail(ps, "FROM");
        return true;
    }
    iq_source tmp[64];
    size_t n = 0;
    do {
        if (n == 64)
            return fail_msg(ps, "too many sources");
        tmp[n] = (iq_source){0};
        if (!required && ps->t.k == T_LP) /* subqueries: in SELECT only */
            return fail(ps, "identifier");
        if (!source(ps, &tmp[n++]))
            return false;
    } while (accept(ps, T_COMMA));
    st->from = fj_arena_calloc(ps->a, n, sizeof *st->from);
    if (!st->from)
        return fail_msg(ps, "out of memory");
    memcpy(st->from, tmp, n * sizeof *tmp);
    st->nfrom = n;
    return true;
}

static bool where_clause(parser *ps, iq_stmt *st)
{
    if (!accept_kw(ps, "WHERE"))
        return true;
    st->where = expr(ps, 0);
    return st->where != NULL;
}

static bool int_arg(parser *ps, int64_t *out, const char *what)
{
    if (ps->t.k != T_INT)
        return fail(ps, "integer");
    if (ps->t.num < 0 || ps->t.num > 9.2e18)
        return fail_msg(ps, "%s out of range", what);
    *out = (int64_t)ps->t.num;
    lex(ps);
    return true;
}

static bool limits(parser *ps, iq_stmt *st)
{
    for (;;) {
        if (accept_kw(ps, "LIMIT")) {
            if (!int_arg(ps, &st->limit, "LIMIT"))
                return false;
        } else if (accept_kw(ps, "OFFSET")) {
            if (!int_arg(ps, &st->off, "OFFSET"))
                return false;
        } else if (accept_kw(ps, "SLIMIT")) {
            if (!int_arg(ps, &st->slimit, "SLIMIT"))
                return false;
        } else if (accept_kw(ps, "SOFFSET")) {
            if (!int_arg(ps, &st->soff, "SOFFSET"))
                return false;
        } else {
            return true;
        }
    }
}

static bool group_by(parser *ps, iq_stmt *st)
{
    if (!accept_kw(ps, "GROUP"))
        return true;
    if (!expect_kw(ps, "BY"))
        return false;
    const char *tags[64];
    size_t n = 0;
    do {
        if (ps->t.k == T_MUL) {
            st->gstar = true;
            lex(ps);
        } else if (ps->t.k == T_IDENT && !strcasecmp(ps->t.s, "time")) {
            lex(ps);
            if (!accept(ps, T_LP))
                return fail(ps, "(");
            if (ps->t.k != T_DUR)
                return fail(ps, "duration");
            st->every = ps->t.dur;
            lex(ps);
            if (accept(ps, T_COMMA)) {
                bool neg = accept(ps, T_SUB);
                if (ps->t.k == T_DUR) {
                    st->offset = neg ? -ps->t.dur : ps->t.dur;
                    lex(ps);
                } else if (is_kw(ps, "now")) {
                    return fail_msg(ps, "GROUP BY time offset now() is not supported");
                } else {
                    return fail(ps, "duration");
                }
            }
            if (!accept(ps, T_RP))
                return fail(ps, ")");
            if (st->every <= 0)
                return fail_msg(ps, "GROUP BY time interval must be positive");
            st->group_time = true;
        } else if (ps->t.k == T_DIV) {
            return fail_msg(ps, "GROUP BY a regular expression is not supported");
        } else {
            const char *id = ident(ps, "identifier");
            if (!id || (accept(ps, T_COLON2) && !cast_type(ps))) /* Grafana's "host"::tag */
                return false;
            if (n == 64)
                return fail_msg(ps, "too many GROUP BY tags");
            tags[n++] = id;
        }
    } while (accept(ps, T_COMMA));
    st->gtags = fj_arena_calloc(ps->a, n + 1, sizeof *st->gtags);
    if (!st->gtags)
        return fail_msg(ps, "out of memory");
    memcpy(st->gtags, tags, n * sizeof *tags);
    st->ngtags = n;
    return true;
}

static bool fill_clause(parser *ps, iq_stmt *st)
{
    if (!(ps->t.k == T_IDENT && !strcasecmp(ps->t.s, "fill")))
        return true;
    lex(ps);
    if (!accept(ps, T_LP))
        return fail(ps, "(");
    bool neg = accept(ps, T_SUB);
    if (ps->t.k == T_NUM || ps->t.k == T_INT) {
        st->fill = IQ_FILL_VALUE;
        st->fill_value = neg ? -ps->t.num : ps->t.num;
    } else if (neg) {
        return fail(ps, "number");
    } else if (is_kw(ps, "null")) {
        st->fill = IQ_FILL_NULL;
    } else if (is_kw(ps, "none")) {
        st->fill = IQ_FILL_NONE;
    } else if (is_kw(ps, "previous")) {
        st->fill = IQ_FILL_PREVIOUS;
    } else if (is_kw(ps, "linear")) {
        st->fill = IQ_FILL_LINEAR;
    } else {
        return fail(ps, "null, none, previous, linear or a number");
    }
    lex(ps);
    if (!accept(ps, T_RP))
        return fail(ps, ")");
    return true;
}

static bool order_by(parser *ps, iq_stmt *st)
{
    if (!accept_kw(ps, "ORDER"))
        return true;
    if (!expect_kw(ps, "BY"))
        return false;
    if (!(ps->t.k == T_IDENT && !strcasecmp(ps->t.s, "time")))
        return fail_msg(ps, "only ORDER BY time supported at this time");
    lex(ps);
    if (accept_kw(ps, "DESC"))
        st->desc = true;
    else
        accept_kw(ps, "ASC");
    if (ps->t.k == T_COMMA)
        return fail_msg(ps, "only ORDER BY time supported at this time");
    return true;
}

static bool tz_clause(parser *ps, iq_stmt *st)
{
    if (!(ps->t.k == T_IDENT && !strcasecmp(ps->t.s, "tz")))
        return true;
    lex(ps);
    if (!accept(ps, T_LP))
        return fail(ps, "(");
    if (ps->t.k != T_STR)
        return fail(ps, "string");
    st->tz = ps->t.s;
    /* InfluxDB (Go's LoadLocation) takes "" and "UTC" as UTC, any other name from zoneinfo */
    if (*st->tz && strcmp(st->tz, "UTC") && !(st->zone = fj_tz_get(st->tz)))
        return fail_msg(ps, "unable to find time zone %s", st->tz);
    lex(ps);
    if (!accept(ps, T_RP))
        return fail(ps, ")");
    return true;
}

static bool select_stmt(parser *ps, iq_stmt *st)
{
    st->kind = IQS_SELECT;
    iq_field tmp[128];
    size_t n = 0;
    do {
        if (n == 128)
            return fail_msg(ps, "too many fields");
        tmp[n] = (iq_field){0};
        if (!(tmp[n].e = expr(ps, 0)))
            return false;
        if (accept_kw(ps, "AS") && !(tmp[n].alias = ident(ps, "identifier")))
            return false;
        n++;
    } while (accept(ps, T_COMMA));
    st->fields = fj_arena_calloc(ps->a, n, sizeof *st->fields);
    if (!st->fields)
        return fail_msg(ps, "out of memory");
    memcpy(st->fields, tmp, n * sizeof *tmp);
    st->nfields = n;
    if (is_kw(ps, "INTO"))
        return fail_msg(ps, "SELECT ... INTO is not supported: fjord's InfluxQL is read-only");
    if (!from_clause(ps, st, true))
        return false;
    return where_clause(ps, st) && group_by(ps, st) && fill_clause(ps, st) && order_by(ps, st) && limits(ps, st) &&
           tz_clause(ps, st);
}

static bool on_clause(parser *ps, iq_stmt *st)
{
    if (!accept_kw(ps, "ON"))
        return true;
    return (st->on_db = ident(ps, "identifier")) != NULL;
}

/* WITH MEASUREMENT = m | =~ /re/ */
static bool with_measurement(parser *ps, iq_stmt *st)
{
    if (!accept_kw(ps, "WITH"))
        return true;
    if (!expect_kw(ps, "MEASUREMENT"))
        return false;
    st->has_with = true;
    if (accept(ps, T_EQRE) || (ps->t.k == T_NERE && (st->with_op = IQ_NERE, lex(ps), true))) {
        if (st->with_op != IQ_NERE)
            st->with_op = IQ_EQRE;
        if (ps->t.k != T_DIV || !lex_regex(ps))
            return fail(ps, "regex");
        st->with_re = compile_re(ps, ps->t.s);
        lex(ps);
        return st->with_re != NULL;
    }
    if (!accept(ps, T_EQ))
        return fail(ps, "=, =~");
    st->with_op = IQ_EQ;
    st->keys = fj_arena_calloc(ps->a, 1, sizeof *st->keys);
    if (!st->keys || !(st->keys[0] = ident(ps, "identifier")))
        return false;
    st->nkeys = 1;
    return true;
}

/* WITH KEY = "k" | != "k" | IN ("a","b") | =~ /re/ | !~ /re/ */
static bool with_key(parser *ps, iq_stmt *st)
{
    if (!expect_kw(ps, "WITH") || !expect_kw(ps, "KEY"))
        return false;
    st->has_with = true;
    if (ps->t.k == T_EQRE || ps->t.k == T_NERE) {
        st->with_op = ps->t.k == T_EQRE ? IQ_EQRE : IQ_NERE;
        lex(ps);
        if (ps->t.k != T_DIV || !lex_regex(ps))
            return fail(ps, "regex");
        st->with_re = compile_re(ps, ps->t.s);
        lex(ps);
        return st->with_re != NULL;
    }
    const char *keys[64];
    size_t n = 0;
    if (accept_kw(ps, "IN")) {
        st->with_op = IQ_OR;
        if (!accept(ps, T_LP))
            return fail(ps, "(");
        do {
            if (n == 64)
                return fail_msg(ps, "too many keys");
            if (!(keys[n++] = ident(ps, "identifier")))
                return false;
        } while (accept(ps, T_COMMA));
        if (!accept(ps, T_RP))
            return fail(ps, ")");
    } else if (ps->t.k == T_EQ || ps->t.k == T_NE) {
        st->with_op = ps->t.k == T_EQ ? IQ_EQ : IQ_NE;
        lex(ps);
        if (!(keys[n++] = ident(ps, "identifier")))
            return false;
    } else {
        return fail(ps, "=, !=, =~, !~, IN");
    }
    st->keys = fj_arena_calloc(ps->a, n, sizeof *st->keys);
    if (!st->keys)
        return fail_msg(ps, "out of memory");
    memcpy(st->keys, keys, n * sizeof *keys);
    st->nkeys = n;
    return true;
}

static bool show_stmt(parser *ps, iq_stmt *st)
{
    if (accept_kw(ps, "DATABASES")) {
        st->kind = IQS_SHOW_DATABASES;
        return true;
    }
    if (accept_kw(ps, "MEASUREMENTS")) {
        st->kind = IQS_SHOW_MEASUREMENTS;
        return on_clause(ps, st) && with_measurement(ps, st) && where_clause(ps, st) && limits(ps, st);
    }
    if (accept_kw(ps, "RETENTION")) {
        st->kind = IQS_SHOW_RETENTION_POLICIES;
        return expect_kw(ps, "POLICIES") && on_clause(ps, st);
    }
    if (accept_kw(ps, "SERIES")) {
        st->kind = IQS_SHOW_SERIES;
        return on_clause(ps, st) && from_clause(ps, st, false) && where_clause(ps, st) && limits(ps, st);
    }
    if (accept_kw(ps, "FIELD")) {
        st->kind = IQS_SHOW_FIELD_KEYS;
        return expect_kw(ps, "KEYS") && on_clause(ps, st) && from_clause(ps, st, false) && limits(ps, st);
    }
    if (accept_kw(ps, "TAG")) {
        if (accept_kw(ps, "KEYS")) {
            st->kind = IQS_SHOW_TAG_KEYS;
            return on_clause(ps, st) && from_clause(ps, st, false) && where_clause(ps, st) && limits(ps, st);
        }
        if (accept_kw(ps, "VALUES")) {
            st->kind = IQS_SHOW_TAG_VALUES;
            return on_clause(ps, st) && from_clause(ps, st, false) && with_key(ps, st) && where_clause(ps, st) &&
                   limits(ps, st);
        }
        return fail(ps, "KEYS, VALUES");
    }
    if (ps->t.k == T_IDENT) {
        static const char *const known[] = {"CONTINUOUS", "DIAGNOSTICS", "GRANTS", "QUERIES", "SHARD", "SHARDS",
                                            "STATS", "SUBSCRIPTIONS", "USERS", NULL};
        for (size_t i = 0; known[i]; i++)
            if (is_kw(ps, known[i]))
                return fail_msg(ps, "SHOW %s is not supported by fjord", known[i]);
    }
    return fail(ps, "CONTINUOUS, DATABASES, DIAGNOSTICS, FIELD, GRANTS, MEASUREMENT, MEASUREMENTS, QUERIES, "
                    "RETENTION, SERIES, SHARD, SHARDS, STATS, SUBSCRIPTIONS, TAG, USERS");
}

/* CREATE DATABASE name, as clients send at start (Telegraf's influxdb output, python3-influxdb's
 * create_database): a cluster's database exists once it has a credential, so the statement is
 * checked (route.c: only a credential that may write it) and changes nothing. Retention and
 * shards are fjord's own settings: WITH ... is refused. */
static bool create_stmt(parser *ps, iq_stmt *st)
{
    if (!accept_kw(ps, "DATABASE")) {
        if (ps->t.k == T_IDENT)
            return fail_msg(ps, "CREATE %s is not supported: fjord's InfluxQL creates only databases", ps->t.s);
        return fail(ps, "DATABASE");
    }
    st->kind = IQS_CREATE_DATABASE;
    if (!(st->on_db = ident(ps, "identifier")))
        return false;
    if (is_kw(ps, "WITH"))
        return fail_msg(ps, "CREATE DATABASE ... WITH is not supported: fjord keeps data by its own retention "
                            "settings");
    return true;
}

static bool statement(parser *ps, iq_stmt *st)
{
    if (accept_kw(ps, "SELECT"))
        return select_stmt(ps, st);
    if (accept_kw(ps, "SHOW"))
        return show_stmt(ps, st);
    if (accept_kw(ps, "CREATE"))
        return create_stmt(ps, st);
    static const char *const writes[] = {"DELETE", "DROP", "GRANT", "REVOKE", "ALTER", "SET", "KILL",
                                         "EXPLAIN", NULL};
    for (size_t i = 0; writes[i]; i++)
        if (is_kw(ps, writes[i]))
            return fail_msg(ps, "%s is not supported: fjord's InfluxQL reads only (SELECT and SHOW; CREATE "
                                "DATABASE is answered)", writes[i]);
    return fail(ps, "SELECT, DELETE, SHOW, CREATE, DROP, EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL");
}

void iq_regs_free(iq_regs *g)
{
    for (size_t i = 0; i < g->n; i++)
        fj_re_free(g->v[i]);
    g->n = 0;
}

const fj_re *iq_regs_failed(const iq_regs *g, const iq_stmt *st)
{
    for (size_t i = st->re_first; i < st->re_end && i < g->n; i++)
        if (fj_re_failure(g->v[i]))
            return g->v[i];
    return NULL;
}

bool iq_parse(fj_arena *a, const char *text, const fj_json *params, iq_regs *regs, iq_stmt **out, size_t *n,
              char *msg, size_t msg_cap)
{
    parser ps = {.a = a, .regs = regs, .text = text, .pos = text, .msg = msg, .cap = msg_cap, .params = params};
    msg[0] = '\0';
    size_t cap = 8, k = 0;
    iq_stmt *v = fj_arena_calloc(a, cap, sizeof *v);
    lex(&ps);
    while (v) {
        while (accept(&ps, T_SEMI))
            ;
        if (ps.t.k == T_EOF)
            break;
        if (k == cap) {
            iq_stmt *nv = fj_arena_calloc(a, cap * 2, sizeof *nv);
            if (!nv)
                break;
            memcpy(nv, v, k * sizeof *v);
            v = nv;
            cap *= 2;
        }
        v[k] = (iq_stmt){.re_first = regs->n};
        if (!statement(&ps, &v[k]))
            return false;
        v[k].re_end = regs->n;
        k++;
        if (ps.t.k != T_SEMI && ps.t.k != T_EOF)
            return fail(&ps, ";");
    }
    if (!v) {
        snprintf(msg, msg_cap, "out of memory");
        return false;
    }
    if (k == 0) {
        snprintf(msg, msg_cap, "error parsing query: found EOF, expected SELECT, DELETE, SHOW, CREATE, DROP, "
                               "EXPLAIN, GRANT, REVOKE, ALTER, SET, KILL at line 1, char %zu", strlen(text) + 1);
        return false;
    }
    *out = v;
    *n = k;
    return true;
}
