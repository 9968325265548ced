/* api/influxql/influxql.h — InfluxDB 1.x's query language on fjord's line-protocol metrics: the
 * statements as a syntax tree (iq_parse), their execution over the store's time-series ops
 * (iq_exec), and the HTTP routes GET|POST /query and GET|HEAD /ping (fj_route_influx_*).
 *
 * A database is a cluster. What fjord stored from line protocol is shown as InfluxDB would show
 * it (docs/metrics.md "InfluxQL"): a ClusterCockpit metric line is measurement <metric> with field
 * `value`; a generic line's metric <measurement>.<field> is measurement and field again, and its
 * tags folded into the series key's sub-type come back as tags. Everything lives in the request's
 * arena. */
#ifndef FJ_INFLUXQL_H
#define FJ_INFLUXQL_H

#include "api/re.h"
#include "arena.h"
#include "buf.h"
#include "json.h"
#include "server/http.h"
#include "tz.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- the syntax tree ---------------------------------------------------------------------------- */

typedef enum {
    IQ_NUM,   /* num */
    IQ_STR,   /* s: a 'string' */
    IQ_REGEX, /* s (the pattern), re */
    IQ_REF,   /* s: a field, tag or `time` */
    IQ_CALL,  /* s: the function's lower-case name, args */
    IQ_BIN,   /* op, l, r */
    IQ_NOW,   /* now() */
    IQ_DUR,   /* dur (ns) */
    IQ_WILD,  /* * */
    IQ_BOOL,  /* num: 1 or 0 */
} iq_kind;

typedef enum {
    IQ_ADD, IQ_SUB, IQ_MUL, IQ_DIV, IQ_EQ, IQ_NE, IQ_LT, IQ_LE, IQ_GT, IQ_GE, IQ_EQRE, IQ_NERE, IQ_AND, IQ_OR,
} iq_op;

typedef struct iq_expr {
    iq_kind k;
    iq_op op;
    double num;
    int64_t dur;
    const char *s;
    fj_re *re;
    struct iq_expr *l, *r;
    struct iq_expr **args;
    size_t nargs;
    unsigned height; /* levels from here to the deepest leaf, this node included (<= IQ_MAX_DEPTH) */
} iq_expr;

typedef enum {
    IQS_SELECT,
    IQS_SHOW_DATABASES,
    IQS_SHOW_MEASUREMENTS,
    IQS_SHOW_TAG_KEYS,
    IQS_SHOW_TAG_VALUES,
    IQS_SHOW_FIELD_KEYS,
    IQS_SHOW_RETENTION_POLICIES,
    IQS_SHOW_SERIES,
    IQS_CREATE_DATABASE, /* on_db: the database (a cluster); answered, changes nothing */
} iq_stmt_kind;

/* A FROM source: a measurement name or a regular expression, optionally db.rp. qualified, or a
 * subquery (sub; name NULL). */
struct iq_stmt;
typedef struct iq_source {
    const char *db, *rp, *name;
    fj_re *re;
    const struct iq_stmt *sub;
} iq_source;

typedef struct iq_field {
    iq_expr *e;
    const char *alias; /* NULL: named after the expression */
} iq_field;

typedef enum { IQ_FILL_NULL, IQ_FILL_NONE, IQ_FILL_VALUE, IQ_FILL_PREVIOUS, IQ_FILL_LINEAR } iq_fill;

typedef struct iq_stmt {
    iq_stmt_kind kind;
    iq_field *fields;
    size_t nfields;
    iq_source *from;
    size_t nfrom;
    iq_expr *where;
    bool group_time;
    int64_t every, offset; /* ns */
    const char **gtags;
    size_t ngtags;
    bool gstar;
    iq_fill fill;
    double fill_value;
    bool desc;
    int64_t limit, off, slimit, soff; /* 0: none */
    const char *tz;      /* tz('...') as written */
    const fj_tz *zone;   /* its zone; NULL: UTC (no tz, tz(''), tz('UTC')) */
    const char *on_db; /* SHOW ... ON db; CREATE DATABASE db */
    /* SHOW MEASUREMENTS WITH MEASUREMENT; SHOW TAG VALUES WITH KEY: op IQ_EQ (keys[0]), IQ_NE,
     * IQ_EQRE / IQ_NERE (re), or IQ_OR for IN (keys) */
    bool has_with;
    iq_op with_op;
    const char **keys;
    size_t nkeys;
    fj_re *with_re;
    size_t re_first, re_end; /* its regular expressions: iq_regs's v[re_first .. re_end) */
} iq_stmt;

/* The regular expressions a parse compiled (api/re.h): PCRE2 allocates outside the arena, so the
 * caller releases them with iq_regs_free once the statements ran. At most IQ_MAX_REGEX a request. */
#define IQ_MAX_REGEX 256
typedef struct iq_regs {
    fj_re *v[IQ_MAX_REGEX];
    size_t n;
} iq_regs;
void iq_regs_free(iq_regs *g);
/* The first of statement st's expressions whose match hit one of its limits (fj_re_failure), or
 * NULL. The statement is then answered with an error instead of what it found. */
const fj_re *iq_regs_failed(const iq_regs *g, const iq_stmt *st);

/* How deep an expression may nest: parentheses, operators and function calls together, as the
 * parser recurses and as the tree's evaluators (api/influxql/cond.c, select.c) recurse again.
 * A 45,000-deep WHERE clause overflowed a worker's stack; real queries nest a few levels. */
#define IQ_MAX_DEPTH 256

/* Parses text (NUL-terminated) into statements, each $name taking the value params (a JSON
 * object, or NULL) binds to name. On a syntax error returns false with msg set to InfluxDB's
 * wording ("error parsing query: found X, expected Y at line L, char C"; "missing parameter: x").
 * Compiled regular expressions are recorded in regs, also on failure. */
bool iq_parse(fj_arena *a, const char *text, const fj_json *params, iq_regs *regs, iq_stmt **out, size_t *n,
              char *msg, size_t msg_cap);

/* --- execution ------------------------------------------------------------------------------------ */

typedef enum { IQ_EPOCH_RFC3339 = 0, IQ_EPOCH_NS, IQ_EPOCH_US, IQ_EPOCH_MS, IQ_EPOCH_S, IQ_EPOCH_M, IQ_EPOCH_H } iq_epoch;

typedef struct iq_ctx {
    fj_http_req *r;
    fj_arena *a;
    fj_store *s;
    fj_ts_engine *live;
    const char *db;  /* the db parameter, or NULL */
    iq_epoch epoch;
    const fj_tz *zone; /* the statement's tz(): RFC 3339 times carry its offset */
    int64_t now_ns;  /* now(), fixed for the request */
    /* the statement's time range (ns, inclusive; INT64_MIN/MAX: open): where the catalog looks
     * for Sonar's GPU cards */
    int64_t window_from, window_to;
    const fj_cancel *cancel; /* the read's token (server/http.h): loops stop when it is set */
} iq_ctx;

/* Whether the statement must stop now: its read was cancelled (deadline, client gone, drain). The
 * loops that scale with the data (series read, groups, buckets) check it and return FJ_EBUSY;
 * route.c then answers the reason as the statement's error. */
static inline bool iq_stopped(const iq_ctx *c)
{
    return fj_cancel_check(c->cancel) != FJ_CANCEL_NONE;
}

/* Runs one statement, writing {"statement_id":id,...} to out: its series, nothing when empty,
 * or "error" with InfluxDB's wording. Returns FJ_OK, or FJ_ENOMEM / FJ_EIO when the request as a
 * whole must fail (err says). */
fj_status iq_exec(iq_ctx *c, const iq_stmt *st, int id, fj_buf *out, fj_err *err);

/* --- routes ------------------------------------------------------------------------------------------- */

/* GET|POST /query: q (query string, or a form body on POST), db, epoch, pretty (ignored). */
void fj_route_influx_query(fj_http_req *r);
/* GET|HEAD /ping: 204 with InfluxDB 1.6.7's version headers. */
void fj_route_influx_ping(fj_http_req *r);

#endif
