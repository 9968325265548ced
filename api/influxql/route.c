/* api/influxql/route.c — GET|POST /query and GET|HEAD /ping, as InfluxDB 1.6.7 answers them.
 *
 * /query takes q (several statements separated by ';'), db, epoch, params (bound parameters, a JSON
 * object) and pretty from the query string, or on POST from a form body
 * (application/x-www-form-urlencoded), which the pipeline reads only after the request was
 * authenticated. CREATE DATABASE is authorized here for the whole request, as InfluxDB does, and
 * changes nothing. The answer is {"results":[{"statement_id":N,"series":[...]}]}
 * with a statement's error in its result; a request that cannot run at all (no q, a syntax error)
 * is 400 {"error":"..."}. chunked=true is answered as one document, which InfluxDB's clients read
 * as one chunk.
 *
 * Limits (docs/security.md "Reads"): each statement runs in the room the one before gave back (the
 * arena is released to a mark after every statement; its answer is in the answer buffer). A
 * statement stopped by query-memory, query-memory-total or query-timeout gets the error in its
 * result and the statements after it "not executed", as InfluxDB answers its own limits
 * (max-select-point, query-timeout). */
#include "api/influxql/iq_int.h"

#include "timefmt.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IQ_VERSION "1.6.7"

static void add_version(fj_http_req *r)
{
    fj_http_reply_header(r, "X-Influxdb-Version", IQ_VERSION);
    fj_http_reply_header(r, "X-Influxdb-Build", "OSS");
}

void fj_route_influx_ping(fj_http_req *r)
{
    add_version(r);
    fj_http_reply(r, 204, NULL, "", 0);
}

static void reply_error(fj_http_req *r, int status, const char *msg)
{
    fj_buf b;
    fj_buf_init(&b, 1 << 16);
    fj_buf_puts(&b, "{\"error\":");
    fj_buf_json_str(&b, msg);
    fj_buf_puts(&b, "}\n");
    add_version(r);
    if (b.data)
        fj_http_reply(r, status, NULL, b.data, b.len);
    else
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
    fj_buf_free(&b);
}

fj_status iq_exec(iq_ctx *c, const iq_stmt *st, int id, fj_buf *out, fj_err *err)
{
    char msg[512] = "";
    size_t mark = out->len;
    bool any = false;
    fj_buf_printf(out, "{\"statement_id\":%d", id);
    c->zone = st->zone;
    fj_status rs = FJ_OK;
    if (st->kind == IQS_SELECT)
        rs = iq_select(c, st, out, &any, msg, sizeof msg, err);
    else if (st->kind != IQS_CREATE_DATABASE) /* authorized before any statement ran: nothing to do */
        rs = iq_show(c, st, out, &any, msg, sizeof msg, err);
    if (rs != FJ_OK)
        return rs;
    if (msg[0]) {
        out->len = mark;
        iq_put_stmt_error(out, id, msg);
        return fj_buf_status(out);
    }
    fj_buf_puts(out, any ? "]}" : "}");
    return fj_buf_status(out);
}

/* When the read was stopped by a limit: out cut back to the statement's start, the statement's
 * error there and "not executed" for the statements after it; true. The arena is released
 * first, so the budget has room for these few bytes again. */
static bool limit_hit(iq_ctx *c, size_t mark, fj_arena_mark am, int id, size_t n, fj_buf *out)
{
    fj_err lim;
    if (!fj_http_read_limit(c->r, &lim))
        return false;
    char msg[512];
    if (lim.path[0])
        snprintf(msg, sizeof msg, "%s limit exceeded: %s", lim.path, lim.message);
    else
        snprintf(msg, sizeof msg, "%s", lim.message);
    fj_arena_release(c->a, am);
    fj_mem_clear_over(fj_http_mem(c->r));
    out->len = mark;
    out->err = FJ_OK;
    if (out->data)
        out->data[mark] = '\0';
    iq_put_stmt_error(out, id, msg);
    for (size_t k = (size_t)id + 1; k < n; k++) {
        fj_buf_puts(out, ",");
        iq_put_stmt_error(out, (int)k, "not executed");
    }
    return true;
}

/* The statements in turn, each with the arena as the parse left it. */
static fj_status exec_checked(iq_ctx *c, const iq_regs *regs, const iq_stmt *st, int id, fj_buf *out, fj_err *err);

static fj_status run_statements(iq_ctx *c, const iq_regs *regs, const iq_stmt *sts, size_t n, fj_buf *out,
                                fj_err *err)
{
    fj_arena_mark am = fj_arena_save(c->a);
    fj_status st = FJ_OK;
    for (size_t i = 0; i < n && st == FJ_OK; i++) {
        if (i)
            fj_buf_puts(out, ",");
        size_t mark = out->len;
        st = exec_checked(c, regs, &sts[i], (int)i, out, err);
        if (limit_hit(c, mark, am, (int)i, n, out))
            return fj_buf_status(out);
        fj_arena_release(c->a, am);
    }
    return st;
}

static int hexval(char c)
{
    return isdigit((unsigned char)c) ? c - '0' : isxdigit((unsigned char)c) ? (tolower((unsigned char)c) - 'a' + 10) : -1;
}

/* The value of name in a form body (a=1&b=2, percent-encoded, '+' a space), into the arena. */
static const char *form_value(fj_arena *a, const char *body, size_t len, const char *name)
{
    size_t nl = strlen(name);
    const char *p = body, *end = body + len;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end;
        if ((size_t)(e - p) > nl && !strncmp(p, name, nl) && p[nl] == '=') {
            const char *v = p + nl + 1;
            char *o = fj_arena_alloc(a, (size_t)(e - v) + 1), *w = o;
            if (!o)
                return NULL;
            while (v < e) {
                if (*v == '+') {
                    *w++ = ' ';
                    v++;
                } else if (*v == '%' && e - v >= 3 && hexval(v[1]) >= 0 && hexval(v[2]) >= 0) {
                    *w++ = (char)(hexval(v[1]) * 16 + hexval(v[2]));
                    v += 3;
                } else {
                    *w++ = *v++;
                }
            }
            *w = '\0';
            return o;
        }
        p = e + 1;
    }
    return NULL;
}

static iq_epoch epoch_of(const char *s)
{
    if (!s)
        return IQ_EPOCH_RFC3339;
    if (!strcmp(s, "ns") || !strcmp(s, "n"))
        return IQ_EPOCH_NS;
    if (!strcmp(s, "u") || !strcmp(s, "us") || !strcmp(s, "\xc2\xb5"))
        return IQ_EPOCH_US;
    if (!strcmp(s, "ms"))
        return IQ_EPOCH_MS;
    if (!strcmp(s, "s"))
        return IQ_EPOCH_S;
    if (!strcmp(s, "m"))
        return IQ_EPOCH_M;
    if (!strcmp(s, "h"))
        return IQ_EPOCH_H;
    return IQ_EPOCH_RFC3339;
}

/* Runs one statement; when one of its regular expressions hit a limit while matching, what it
 * wrote is taken back and the statement answers that error instead: a partial answer would look
 * like a complete one. */
static fj_status exec_checked(iq_ctx *c, const iq_regs *regs, const iq_stmt *st, int id, fj_buf *out, fj_err *err)
{
    size_t mark = out->len;
    fj_status s = iq_exec(c, st, id, out, err);
    const fj_re *bad = iq_regs_failed(regs, st);
    if (s != FJ_OK || !bad || fj_buf_status(out) != FJ_OK)
        return s;
    char msg[256];
    const char *p = fj_re_pattern(bad);
    snprintf(msg, sizeof msg, "regular expression /%.64s%s/ was stopped: %s", p, strlen(p) > 64 ? "..." : "",
             fj_re_failure(bad));
    out->len = mark;
    out->data[mark] = '\0';
    iq_put_stmt_error(out, id, msg);
    return FJ_OK;
}

/* The request's `params` (a JSON object of bound parameters, as InfluxDB takes them), or false
 * with msg saying what is wrong with them. */
static bool bound_params(fj_arena *a, const char *text, const fj_json **out, char *msg, size_t cap)
{
    fj_json *v = NULL;
    fj_err err = {0};
    if (fj_json_parse(a, text, strlen(text), NULL, &v, &err) != FJ_OK) {
        snprintf(msg, cap, "error parsing query parameters: %s at %s", err.message, err.path);
        return false;
    }
    if (v->type != FJ_JSON_OBJECT) {
        snprintf(msg, cap, "error parsing query parameters: a JSON object expected, not a %s",
                 fj_json_type_name(v->type));
        return false;
    }
    *out = v;
    return true;
}

void fj_route_influx_query(fj_http_req *r)
{
    fj_arena *a = fj_http_arena(r);
    const char *q = fj_http_arg(r, "q"), *db = fj_http_arg(r, "db"), *epoch = fj_http_arg(r, "epoch"),
               *params = fj_http_arg(r, "params");
    size_t blen = 0;
    const char *body = fj_http_body(r, &blen);
    const char *ctype = fj_http_header(r, "Content-Type");
    if (body && blen && (!ctype || !strncasecmp(ctype, "application/x-www-form-urlencoded", 33))) {
        const char *fq = form_value(a, body, blen, "q"), *fdb = form_value(a, body, blen, "db"),
                   *fe = form_value(a, body, blen, "epoch"), *fp = form_value(a, body, blen, "params");
        q = fq ? fq : q;
        db = fdb ? fdb : db;
        epoch = fe ? fe : epoch;
        params = fp ? fp : params;
    }
    if (!q || !*q) {
        reply_error(r, 400, "missing required parameter \"q\"");
        return;
    }
    iq_regs *regs = fj_arena_calloc(a, 1, sizeof *regs);
    if (!regs) {
        fj_http_reply_error(r, FJ_ENOMEM, NULL);
        return;
    }
    iq_stmt *sts = NULL;
    size_t n = 0;
    char msg[512];
    const fj_json *bound = NULL;
    if (params && *params && !bound_params(a, params, &bound, msg, sizeof msg)) {
        reply_error(r, 400, msg);
        return;
    }
    if (!iq_parse(a, q, bound, regs, &sts, &n, msg, sizeof msg)) {
        iq_regs_free(regs);
        reply_error(r, 400, msg);
        return;
    }
    /* as InfluxDB, the whole request is authorized before its first statement runs */
    const fj_principal *who = fj_http_principal(r);
    for (size_t i = 0; i < n; i++)
        if (sts[i].kind == IQS_CREATE_DATABASE && !fj_auth_may_write(who, sts[i].on_db)) {
            snprintf(msg, sizeof msg,
                     "error authorizing query: %.200s not authorized to execute statement 'CREATE DATABASE "
                     "%.200s', requires admin privilege",
                     who->anonymous ? "anonymous" : who->name, sts[i].on_db);
            iq_regs_free(regs);
            reply_error(r, 403, msg);
            return;
        }
    fj_err err = {0};
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    iq_ctx c = {.r = r, .a = a, .db = db, .epoch = epoch_of(epoch),
                .now_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec};
    c.s = fj_http_reader(r, &err);
    if (!c.s) {
        iq_regs_free(regs);
        fj_http_reply_error(r, FJ_EBUSY, &err);
        return;
    }
    c.live = fj_http_ts_engine(r);
    c.cancel = fj_http_cancel(r);
    fj_buf out;
    fj_buf_init(&out, (size_t)1 << 30);
    fj_buf_set_budget(&out, fj_http_mem(r)); /* the answer counts against query-memory */
    fj_buf_puts(&out, "{\"results\":[");
    fj_status st = run_statements(&c, regs, sts, n, &out, &err);
    fj_buf_puts(&out, "]}\n");
    iq_regs_free(regs);
    if (st == FJ_OK && fj_buf_status(&out) == FJ_OK && out.data) {
        add_version(r);
        fj_http_reply(r, 200, NULL, out.data, out.len);
    } else {
        fj_http_reply_error(r, st == FJ_OK ? FJ_ENOMEM : st, &err);
    }
    fj_buf_free(&out);
}
