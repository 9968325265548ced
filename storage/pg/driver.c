/* storage/pg/driver.c — the PostgreSQL driver at the bottom of the backend (libpq): the connection
 * (connect, reconnect once when it was lost while idle), transactions (begin, rollback), the
 * write path's prepared statements (one per id, prepared per session on first use), one-off SQL,
 * error mapping from SQLSTATE, and the statement reader and SQL part of the driver of
 * storage/core/driver.h (named by the driver's table in storage/pg/backend.c). Every file of
 * storage/pg/ calls down into it; it calls nothing of theirs (statement texts come through the
 * handle's stmt_text, which the backend's open fills). */
#include "storage/pg/query_int.h"

#include "alloc.h"
#include "cancel.h"

#include "log.h"
#include "timefmt.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- errors, statements ------------------------------------------------------------------- */

static bool sqlstate_is(const char *state, const char *prefix)
{
    return state && strncmp(state, prefix, strlen(prefix)) == 0;
}

fj_status fj_pg_fail(fj_store *s, const PGresult *r, const char *what, fj_err *err)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    char conn_msg[200] = "";
    if (!msg && s->conn) {
        snprintf(conn_msg, sizeof conn_msg, "%s", PQerrorMessage(s->conn));
        size_t n = strlen(conn_msg);
        while (n && (conn_msg[n - 1] == '\n' || conn_msg[n - 1] == ' '))
            conn_msg[--n] = '\0';
        msg = conn_msg;
    }
    if (!msg || !*msg)
        msg = "unknown error";
    snprintf(s->sqlstate, sizeof s->sqlstate, "%s", state ? state : "");
    /* Connection gone (server restarted or unreachable), or the server is shutting down. */
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK || sqlstate_is(state, "08") || sqlstate_is(state, "57P"))
        return fj_err_set(err, FJ_EBUSY, "db", "postgres: %s: database unavailable (%s); retry later", what, msg);
    fj_status st = FJ_EIO;
    if (sqlstate_is(state, "40") || sqlstate_is(state, "55P03") || sqlstate_is(state, "57014") ||
        sqlstate_is(state, "53"))
        st = FJ_EBUSY; /* deadlock, serialization, lock or statement timeout, resources: retry */
    else if (sqlstate_is(state, "23514")) {
        st = FJ_EBUSY; /* no partition for a row: one was dropped under us; ensured again next time */
        s->n_weeks = 0; /* fj_pg_weeks_forget, without calling up */
    } else if (sqlstate_is(state, "22") || sqlstate_is(state, "54"))
        st = FJ_EINVAL; /* data that PostgreSQL cannot hold */
    return fj_err_set(err, st, "db", "postgres: %s: %s%s%s", what, msg, state ? " [" : "", state ? state : "");
}

/* --- a read's statement, stopped from the watch ------------------------------------------ */

/* libpq waits inside PQexec* for a statement's whole result, where the read's loops cannot see
 * its token: a big aggregate would run on after the deadline or the client's leaving. So while a
 * read (a thread with a token, fj_cancel_current) waits for a statement, the token holds this
 * connection's cancel request, which the read pool's watch sends when it sets the token (and
 * every 100 ms after, while the read still runs). PostgreSQL then ends the statement with SQLSTATE
 * 57014 and the read answers the reason the token holds. Writers have no token: nothing changes
 * for them. */
static void send_cancel(void *arg)
{
    char msg[256];
    PQcancel(arg, msg, sizeof msg); /* best effort: the read stops at its next row anyway */
}

/* Registers the cancel request with this thread's read token; the token to unhook, or NULL. */
static fj_cancel *stoppable_begin(fj_store *s)
{
    fj_cancel *c = fj_cancel_current();
    if (!c || !s->conn)
        return NULL;
    int pid = PQbackendPID(s->conn);
    if (!s->cancel || s->cancel_pid != pid) {
        if (s->cancel)
            PQfreeCancel(s->cancel);
        s->cancel = PQgetCancel(s->conn);
        s->cancel_pid = pid;
    }
    if (!s->cancel)
        return NULL;
    fj_cancel_hook(c, send_cancel, s->cancel);
    return c;
}

static void stoppable_end(fj_cancel *c)
{
    fj_cancel_unhook(c);
}

fj_status fj_pg_run(fj_store *s, fj_pg_stmt_id id, int n, const char *const *vals, PGresult **res,
                    const char *what, fj_err *err)
{
    if (res)
        *res = NULL;
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK)
        return fj_pg_fail(s, NULL, what, err);
    char name[16];
    snprintf(name, sizeof name, "fj%d", (int)id);
    if (!s->prepared[id]) {
        const char *sql = s->stmt_text(id);
        if (!sql)
            return fj_err_set(err, FJ_EINTERNAL, "db", "postgres: no SQL for statement %d", (int)id);
        PGresult *p = PQprepare(s->conn, name, sql, 0, NULL);
        if (!p || PQresultStatus(p) != PGRES_COMMAND_OK) {
            fj_status st = fj_pg_fail(s, p, what, err);
            PQclear(p);
            return st;
        }
        PQclear(p);
        s->prepared[id] = true;
    }
    fj_cancel *c = stoppable_begin(s);
    PGresult *r = PQexecPrepared(s->conn, name, n, vals, NULL, NULL, 0);
    stoppable_end(c);
    ExecStatusType rs = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK) {
        fj_status st = fj_pg_fail(s, r, what, err);
        PQclear(r);
        return st;
    }
    if (res)
        *res = r;
    else
        PQclear(r);
    return FJ_OK;
}

fj_status fj_pg_forget_plans(fj_store *s, fj_err *err)
{
    fj_status st = fj_pg_exec(s, "DEALLOCATE ALL", "forget plans", err);
    if (st == FJ_OK) {
        memset(s->prepared, 0, sizeof s->prepared);
        fj_intern_clear(&s->kept);
    }
    return st;
}

/* Notices of the session: only a warning during fj_pg_commit matters (the cancelled wait for a
 * synchronous standby, "canceling wait for synchronous replication"); the rest are dropped, as
 * client_min_messages = warning left only warnings to drop. Matched by severity, not by the
 * message, which the server may translate. */
static void on_notice(void *arg, const PGresult *r)
{
    fj_store *s = arg;
    const char *sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
    if (s->in_commit && sev && strcmp(sev, "WARNING") == 0)
        s->commit_warned = true;
}

fj_status fj_pg_commit(fj_store *s, fj_err *err)
{
    if (s->commit_timeout_s <= 0)
        return fj_pg_exec(s, "COMMIT", "commit", err);
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK || !PQsendQuery(s->conn, "COMMIT"))
        return fj_pg_fail(s, NULL, "commit", err);
    /* The server's statement_timeout ends before a COMMIT's wait for a standby begins, so the wait
     * is cut from here: a cancel request, which PostgreSQL answers with a warning and the commit
     * done on the primary only. */
    s->in_commit = true;
    s->commit_warned = false;
    bool cancelled = false;
    int64_t deadline = fj_mono_ns() + s->commit_timeout_s * INT64_C(1000000000);
    while (PQisBusy(s->conn)) {
        int64_t left = deadline - fj_mono_ns();
        struct pollfd p = {.fd = PQsocket(s->conn), .events = POLLIN};
        int rc = poll(&p, 1, cancelled ? 1000 : left > 0 ? (int)(left / 1000000) + 1 : 0);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc == 0 && !cancelled && fj_mono_ns() >= deadline) {
            PGcancel *c = PQgetCancel(s->conn);
            char msg[256];
            if (c) {
                PQcancel(c, msg, sizeof msg);
                PQfreeCancel(c);
            }
            cancelled = true;
            continue;
        }
        if (rc < 0 || (rc > 0 && !PQconsumeInput(s->conn)))
            break;
    }
    PGresult *r, *bad = NULL;
    while ((r = PQgetResult(s->conn))) {
        if (!bad && PQresultStatus(r) != PGRES_COMMAND_OK)
            bad = r;
        else
            PQclear(r);
    }
    s->in_commit = false;
    if (bad || PQstatus(s->conn) != CONNECTION_OK) {
        fj_status st = fj_pg_fail(s, bad, "commit", err);
        PQclear(bad);
        return st;
    }
    if (cancelled && s->commit_warned)
        return fj_err_set(err, FJ_EBUSY, "db",
                          "postgres: the commit was not confirmed by a synchronous standby within %llds "
                          "(synchronous_standby_names): stored on the primary only; retry later",
                          (long long)s->commit_timeout_s);
    return FJ_OK;
}

fj_status fj_pg_exec(fj_store *s, const char *sql, const char *what, fj_err *err)
{
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK)
        return fj_pg_fail(s, NULL, what, err);
    PGresult *r = PQexec(s->conn, sql);
    ExecStatusType rs = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    fj_status st = FJ_OK;
    if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK)
        st = fj_pg_fail(s, r, what, err);
    PQclear(r);
    return st;
}

int64_t fj_pg_int(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* --- connection --------------------------------------------------------------------------- */

fj_status fj_pg_reconnect(fj_store *s, fj_err *err)
{
    if (s->conn)
        PQfinish(s->conn);
    memset(s->prepared, 0, sizeof s->prepared);
    memset(s->staged, 0, sizeof s->staged);
    fj_intern_clear(&s->kept);
    /* Defaults first: settings in the URL (expanded at "dbname") override them. */
    const char *const keys[] = {"connect_timeout", "application_name", "keepalives_idle", "keepalives_interval",
                                "keepalives_count", "dbname", NULL};
    const char *const vals[] = {"10", "fjord", "30", "10", "3", s->url, NULL};
    s->conn = PQconnectdbParams(keys, vals, 1);
    if (!s->conn)
        return fj_err_set(err, FJ_ENOMEM, "db", "postgres: out of memory connecting to %s", s->shown);
    if (PQstatus(s->conn) != CONNECTION_OK) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s", PQerrorMessage(s->conn));
        size_t n = strlen(msg);
        while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
            msg[--n] = '\0';
        return fj_err_set(err, FJ_EBUSY, "db", "postgres: cannot connect to %s: %s", s->shown, msg);
    }
    PQsetNoticeReceiver(s->conn, on_notice, s);
    /* Times are integers and names are compared byte-wise: the session settings that matter are
     * fixed here so the results do not depend on the server's defaults. */
    /* A statement that waits for a lock longer than lock_timeout fails (503, retried) rather than
     * hold up every request behind it: as SQLite's busy timeout. */
    fj_status st = fj_pg_exec(s, "SET client_encoding = 'UTF8'; SET timezone = 'UTC'; "
                                 "SET client_min_messages = 'warning'; SET lock_timeout = '" FJ_PG_LOCK_TIMEOUT "'",
                              "session settings", err);
    return st;
}

fj_status fj_pg_connect(fj_store *s, fj_err *err)
{
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK)
        return FJ_OK;
    fj_status st = fj_pg_reconnect(s, err);
    if (st == FJ_OK)
        fj_info("postgres: connected to %s", s->shown);
    return st;
}

fj_status fj_pg_begin(fj_store *s, bool read_only, fj_err *err)
{
    const char *sql = read_only ? "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY" : "BEGIN";
    fj_status st = fj_pg_connect(s, err);
    if (st != FJ_OK)
        return st;
    st = fj_pg_exec(s, sql, "begin", err);
    if (st == FJ_EBUSY && PQstatus(s->conn) != CONNECTION_OK) {
        /* The connection died while idle (a server restart): nothing was sent yet, try once more. */
        st = fj_pg_reconnect(s, err);
        if (st == FJ_OK) {
            fj_info("postgres: reconnected to %s", s->shown);
            st = fj_pg_exec(s, sql, "begin", err);
        }
    }
    return st;
}

void fj_pg_rollback(fj_store *s)
{
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK && PQtransactionStatus(s->conn) != PQTRANS_IDLE) {
        PGresult *r = PQexec(s->conn, "ROLLBACK");
        PQclear(r);
    }
}


/* --- statements of a running query, with a cursor in the manner of sqlite3_step -------------------- */

/* Statements are sent with PQexecParams: the SQL text and the values travel apart, values are
 * never pasted into SQL (integer lists of node ids excepted, which are numbers we format). Each
 * result is read whole before the next statement runs, so statements may be nested freely. */

#define OID_BOOL 16
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_TEXT 25
#define OID_FLOAT4 700
#define OID_FLOAT8 701
#define OID_NUMERIC 1700

struct fj_pgs {
    fj_pgq *x;
    const char *sql;
    bool keep; /* a kept statement: prepared once per session */
    int n, cap; /* parameters */
    Oid *types;
    const char **vals;
    char (*num)[32];
    PGresult *res;
    int row, nrows;
    bool ran;
    unsigned char *blob;
    size_t blob_cap;
};

static fj_status oom(fj_pgq *x)
{
    return fj_err_set(x->err, FJ_ENOMEM, NULL, "out of memory");
}

fj_status fj_pgq_fail(fj_pgq *x, int r, const char *what)
{
    if (x->fail != FJ_OK)
        return x->fail;
    return fj_err_set(x->err, FJ_EINTERNAL, NULL, "postgres: %s: unexpected step result %d", what, r);
}

/* --- statements ---------------------------------------------------------------------------------- */

fj_status fj_pgq_prepare(fj_pgq *x, const char *sql, fj_pgs **out)
{
    fj_pgs *st = fj_arena_calloc(x->a, 1, sizeof *st);
    char *copy = st ? fj_arena_strdup(x->a, sql) : NULL;
    if (!copy)
        return oom(x);
    st->x = x;
    st->sql = copy;
    *out = st;
    return FJ_OK;
}

fj_status fj_pgq_prepare_kept(fj_pgq *x, const char *sql, fj_pgs **out)
{
    fj_status st = fj_pgq_prepare(x, sql, out);
    if (st == FJ_OK)
        (*out)->keep = true;
    return st;
}

/* Runs st: a kept statement as the session's prepared statement "fjk<n>", prepared at its first
 * run with the types of that run's parameters; any other with its text. NULL with *oom set: out
 * of memory, nothing sent. s->kept holds n for a prepared one, -n while its name is reserved and
 * the statement not (yet) prepared: a failed PREPARE is tried again, under the same name. */
static PGresult *exec_statement(fj_store *s, fj_pgs *st, bool *oom)
{
    *oom = false;
    if (!st->keep)
        return PQexecParams(s->conn, st->sql, st->n, st->types, st->vals, NULL, NULL, 0);
    size_t len = strlen(st->sql);
    int64_t id = fj_intern_get(&s->kept, 0, st->sql, len);
    if (!id) {
        id = -(int64_t)(s->kept.n + 1);
        if (fj_intern_put(&s->kept, 0, st->sql, len, id) != FJ_OK) {
            *oom = true;
            return NULL;
        }
    }
    char name[32];
    snprintf(name, sizeof name, "fjk%lld", (long long)(id < 0 ? -id : id));
    if (id < 0) {
        PGresult *p = PQprepare(s->conn, name, st->sql, st->n, st->types);
        if (!p || PQresultStatus(p) != PGRES_COMMAND_OK)
            return p;
        PQclear(p);
        fj_intern_replace(&s->kept, 0, st->sql, len, -id);
    }
    return PQexecPrepared(s->conn, name, st->n, st->vals, NULL, NULL, 0);
}

/* Room for parameter i (1-based); false on out-of-memory (the statement then fails to run). */
static bool param_room(fj_pgs *st, int i)
{
    if (i <= st->cap) {
        if (i > st->n)
            st->n = i;
        return true;
    }
    int cap = st->cap ? st->cap * 2 : 16;
    while (cap < i)
        cap *= 2;
    Oid *t = fj_arena_calloc(st->x->a, (size_t)cap, sizeof *t);
    const char **v = fj_arena_calloc(st->x->a, (size_t)cap, sizeof *v);
    char(*num)[32] = fj_arena_calloc(st->x->a, (size_t)cap, sizeof *num);
    if (!t || !v || !num)
        return false;
    if (st->cap) {
        memcpy(t, st->types, (size_t)st->cap * sizeof *t);
        memcpy(num, st->num, (size_t)st->cap * sizeof *num);
        for (int k = 0; k < st->cap; k++) /* numbers point into num: repoint them */
            v[k] = st->vals[k] == st->num[k] ? num[k] : st->vals[k];
    }
    st->types = t;
    st->vals = v;
    st->num = num;
    st->cap = cap;
    if (i > st->n)
        st->n = i;
    return true;
}

int fj_pgs_nparams(const fj_pgs *st)
{
    return st->n;
}

void fj_pgs_bind_int(fj_pgs *st, int i, int64_t v)
{
    if (!param_room(st, i))
        return;
    snprintf(st->num[i - 1], sizeof st->num[0], "%lld", (long long)v);
    st->types[i - 1] = OID_INT8;
    st->vals[i - 1] = st->num[i - 1];
}

void fj_pgs_bind_real(fj_pgs *st, int i, double v)
{
    if (!param_room(st, i))
        return;
    if (v != v)
        snprintf(st->num[i - 1], sizeof st->num[0], "NaN");
    else if (v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
        snprintf(st->num[i - 1], sizeof st->num[0], v > 0 ? "Infinity" : "-Infinity");
    else
        snprintf(st->num[i - 1], sizeof st->num[0], "%.17g", v);
    st->types[i - 1] = OID_FLOAT8;
    st->vals[i - 1] = st->num[i - 1];
}

void fj_pgs_bind_text(fj_pgs *st, int i, const char *s)
{
    if (!param_room(st, i))
        return;
    st->types[i - 1] = OID_TEXT;
    st->vals[i - 1] = s;
}

int fj_pgs_step(fj_pgs *st)
{
    fj_pgq *x = st->x;
    if (!st->ran) {
        fj_store *s = x->s;
        if (!s->conn || PQstatus(s->conn) != CONNECTION_OK) {
            x->fail = fj_pg_fail(s, NULL, "query", x->err);
            return FJ_PGS_ERR;
        }
        bool no_memory;
        fj_cancel *c = stoppable_begin(s);
        st->res = exec_statement(s, st, &no_memory);
        stoppable_end(c);
        if (no_memory) {
            x->fail = oom(x);
            return FJ_PGS_ERR;
        }
        ExecStatusType rs = st->res ? PQresultStatus(st->res) : PGRES_FATAL_ERROR;
        if (rs != PGRES_TUPLES_OK && rs != PGRES_COMMAND_OK) {
            x->fail = fj_pg_fail(s, st->res, "query", x->err);
            PQclear(st->res);
            st->res = NULL;
            return FJ_PGS_ERR;
        }
        st->ran = true;
        st->row = -1;
        st->nrows = PQntuples(st->res);
    }
    if (st->row + 1 < st->nrows) {
        st->row++;
        return FJ_PGS_ROW;
    }
    st->row = st->nrows;
    return FJ_PGS_DONE;
}

void fj_pgs_reset(fj_pgs *st)
{
    if (!st)
        return;
    PQclear(st->res);
    st->res = NULL;
    st->ran = false;
}

void fj_pgs_finalize(fj_pgs *st)
{
    if (!st)
        return;
    fj_pgs_reset(st);
    fj_free(st->blob);
    st->blob = NULL;
    st->blob_cap = 0;
}

static bool has_row(const fj_pgs *st, int c)
{
    return st->res && st->row >= 0 && st->row < st->nrows && c >= 0 && c < PQnfields(st->res);
}

bool fj_pgs_isnull(fj_pgs *st, int c)
{
    return !has_row(st, c) || PQgetisnull(st->res, st->row, c);
}

/* Column c of the current row as the text of a number: NULL for NULL (read as 0), a boolean as
 * "1" or "0", anything else as PostgreSQL wrote it. */
static const char *number_text(fj_pgs *st, int c)
{
    if (fj_pgs_isnull(st, c))
        return NULL;
    const char *v = PQgetvalue(st->res, st->row, c);
    if (PQftype(st->res, c) == OID_BOOL)
        return v[0] == 't' ? "1" : "0";
    return v;
}

int64_t fj_pgs_int(fj_pgs *st, int c)
{
    const char *v = number_text(st, c);
    return v ? strtoll(v, NULL, 10) : 0;
}

double fj_pgs_double(fj_pgs *st, int c)
{
    const char *v = number_text(st, c);
    return v ? strtod(v, NULL) : 0;
}

const char *fj_pgs_text(fj_pgs *st, int c)
{
    return fj_pgs_isnull(st, c) ? NULL : PQgetvalue(st->res, st->row, c);
}

bool fj_pgs_is_number(fj_pgs *st, int c)
{
    if (!st->res)
        return false;
    Oid t = PQftype(st->res, c);
    return t == OID_INT8 || t == OID_INT4 || t == OID_INT2 || t == OID_FLOAT4 || t == OID_FLOAT8 ||
           t == OID_NUMERIC;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

const unsigned char *fj_pgs_blob(fj_pgs *st, int c, size_t *len)
{
    *len = 0;
    if (fj_pgs_isnull(st, c))
        return NULL;
    const char *v = PQgetvalue(st->res, st->row, c);
    size_t n = (size_t)PQgetlength(st->res, st->row, c);
    if (n < 2 || v[0] != '\\' || v[1] != 'x') /* bytea_output = hex is the default since 9.0 */
        return NULL;
    size_t out = (n - 2) / 2;
    if (out + 1 > st->blob_cap) {
        unsigned char *b = fj_realloc(st->blob, out + 1);
        if (!b)
            return NULL;
        st->blob = b;
        st->blob_cap = out + 1;
    }
    for (size_t i = 0; i < out; i++) {
        int hi = hexval(v[2 + 2 * i]), lo = hexval(v[3 + 2 * i]);
        if (hi < 0 || lo < 0)
            return NULL;
        st->blob[i] = (unsigned char)(hi << 4 | lo);
    }
    *len = out;
    return st->blob;
}

/* --- values -------------------------------------------------------------------------------------- */

fj_value fj_pv_col(fj_pgs *st, int i, fj_vtype t)
{
    if (fj_pgs_isnull(st, i))
        return fj_value_null();
    switch (t) {
    case FJ_VT_INT: return fj_value_int(fj_pgs_int(st, i));
    case FJ_VT_BOOL: return fj_value_bool(fj_pgs_int(st, i) != 0);
    case FJ_VT_REAL: return fj_value_real(fj_pgs_double(st, i));
    case FJ_VT_TIME: return fj_value_time(fj_pgs_int(st, i));
    case FJ_VT_JSON: return fj_value_json(fj_pgs_text(st, i));
    default: return fj_value_text(fj_pgs_text(st, i));
    }
}

/* --- the reader of storage/core/driver.h -------------------------------------------------------- */

static fj_status qrows_step(const fj_qrows *r, const char *what, bool *row)
{
    int rc = fj_pgs_step(r->st);
    *row = rc == FJ_PGS_ROW;
    return rc == FJ_PGS_ROW || rc == FJ_PGS_DONE ? FJ_OK : fj_pgq_fail(r->x, rc, what);
}

static void qrows_reset(const fj_qrows *r)
{
    fj_pgs_reset(r->st);
}

static void qrows_bind_int(const fj_qrows *r, int i, int64_t v)
{
    fj_pgs_bind_int(r->st, i, v);
}

static void qrows_bind_real(const fj_qrows *r, int i, double v)
{
    fj_pgs_bind_real(r->st, i, v);
}

static void qrows_bind_text(const fj_qrows *r, int i, const char *s)
{
    fj_pgs_bind_text(r->st, i, s);
}

static bool qrows_is_null(const fj_qrows *r, int c)
{
    return fj_pgs_isnull(r->st, c);
}

static int64_t qrows_i64(const fj_qrows *r, int c)
{
    return fj_pgs_int(r->st, c);
}

static double qrows_dbl(const fj_qrows *r, int c)
{
    return fj_pgs_double(r->st, c);
}

static void qrows_reals(const fj_qrows *r, int col, int n, double *v)
{
    for (int i = 0; i < n; i++)
        v[i] = fj_pgs_double(r->st, col + i);
}

static const char *qrows_text(const fj_qrows *r, int c)
{
    return fj_pgs_text(r->st, c);
}

static fj_value qrows_value(const fj_qrows *r, int c, fj_vtype t)
{
    return fj_pv_col(r->st, c, t);
}

static const unsigned char *qrows_blob(const fj_qrows *r, int c, size_t *len)
{
    return fj_pgs_blob(r->st, c, len);
}

/* A number as an integer (truncated), as this backend has always answered GPU cards' figures. */
static fj_status qrows_json(const fj_qrows *r, int c, fj_buf *out)
{
    if (fj_pgs_isnull(r->st, c))
        return fj_buf_puts(out, "null");
    if (fj_pgs_is_number(r->st, c))
        return fj_buf_printf(out, "%lld", (long long)fj_pgs_int(r->st, c));
    return fj_buf_json_str(out, fj_pgs_text(r->st, c));
}

const fj_qrows_ops fj_pg_qrows_ops = {qrows_step,      qrows_reset,   qrows_bind_int, qrows_bind_real,
                                      qrows_bind_text, qrows_is_null, qrows_i64,      qrows_dbl, qrows_reals,
                                      qrows_text,      qrows_value,   qrows_blob,     qrows_json};

/* The columns a row of fj_pg_driver_run() may have (the store's own statements read a few). */
#define RUN_MAX_COLS 16

/* --- the driver of storage/core/driver.h ------------------------------------------------------------ */

fj_status fj_pg_driver_begin_read(fj_qx *x)
{
    return fj_pg_begin(x->s, true, x->err);
}

void fj_pg_driver_end_read(fj_qx *x, fj_status st)
{
    fj_err e2 = {0};
    if (st != FJ_OK || fj_pg_exec(x->s, "COMMIT", "end read", &e2) != FJ_OK)
        fj_pg_rollback(x->s);
}

fj_status fj_pg_driver_prepare(fj_qx *x, const char *sql, fj_qrows *r)
{
    fj_pgs *st = NULL;
    fj_status rs = fj_pgq_prepare(x, sql, &st);
    *r = (fj_qrows){&fj_pg_qrows_ops, x, rs == FJ_OK ? st : NULL};
    return rs;
}

void fj_pg_driver_finalize(const fj_qrows *r)
{
    fj_pgs_finalize(r->st);
}

/* A job's process rows in a window (fj_layout_sql's job_procs): the job's node-samples in the
 * window and their process rows (and GPU rows when the job used a GPU). A sample is (node, time)
 * and a process (node, time, seq) here: the dense ranks number them as SQLite's row ids would.
 * Rows of one process are adjacent. */
#define JOB_PROCS(gpu_cols, gpu_join)                                                                  \
    "SELECT p.node_id, p.time, dense_rank() OVER (ORDER BY p.node_id, p.time),"                        \
    " dense_rank() OVER (ORDER BY p.node_id, p.time, p.seq), p.pid, p.ppid, p.cmd_id, p.resident_kb,"  \
    " p.cpu_util_m, p.rolledup, p.cpu_time, p.cpu_avg_m, p.num_threads,"                               \
    " (SELECT CASE WHEN e.producer = 'fjord-push' THEN e.version END FROM jobs j JOIN envelopes e"    \
    " ON e.cluster_id = j.cluster_id AND e.node_id = js.node_id AND e.kind = 'sample'"                 \
    " AND e.time = js.time WHERE j.id = ?1)" gpu_cols " FROM job_samples js"                        \
    " JOIN sample_procs p ON p.node_id = js.node_id AND p.time = js.time AND p.job = ?2 AND p.epoch = ?3" \
    gpu_join " WHERE js.rjob_id = ?1 AND js.time >= ?7 AND js.time <= ?8"                              \
    " AND (?2 <> 0 OR (p.pid = ?4 AND (?6 = 0 OR (p.ppid = ?5 AND p.cmd_id = ?6))))"                   \
    " ORDER BY p.node_id, p.time, p.seq"

/* A sample is (node, time), and so are its GPU cards' and its processes' rows: its time is the key
 * of usage_gpus and job_usage. */
const fj_layout_sql fj_pg_driver_layout = {
    .uptime_cards = "SELECT g.time, g.idx, g.failing FROM sample_gpus g"
                    " WHERE g.node_id = ?1 AND g.time >= ?2 AND g.time <= ?3"
                    " ORDER BY g.time, g.idx",
    .usage_samples = "SELECT time, time, boot, used_memory_kb, load1, cpus FROM samples WHERE node_id = ?1"
                     " ORDER BY time DESC LIMIT 2",
    .usage_gpus = "SELECT count(*), sum(ce_util), sum(memory_kb) FROM sample_gpus"
                  " WHERE node_id = ?1 AND time = ?2",
    .job_last_sample = "SELECT js.time FROM job_samples js WHERE js.rjob_id = ?1 AND js.node_id = ?2"
                       " AND js.time <= ?3 ORDER BY js.time DESC LIMIT 1",
    .job_usage = "SELECT sum(p.cpu_time), sum(p.data_read_kb), sum(p.data_written_kb)"
                 " FROM sample_procs p WHERE p.node_id = ?7 AND p.time = ?1 AND p.job = ?2"
                 " AND p.epoch = ?3"
                 " AND (?2 <> 0 OR (p.pid = ?4 AND (?6 = 0 OR (p.ppid = ?5 AND p.cmd_id = ?6))))",
    .job_procs = JOB_PROCS("", ""),
    .job_procs_gpu = JOB_PROCS(", g.gpu_util_m, g.gpu_memory_kb",
                               " LEFT JOIN sample_proc_gpus g ON g.node_id = p.node_id AND g.time = p.time"
                               " AND g.job = p.job AND g.epoch = p.epoch AND g.seq = p.seq"),
    .load_gpus = "SELECT g.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                 " FROM sample_gpus g WHERE g.node_id = ?1 AND g.time >= ?2 AND g.time <= ?3"
                 " ORDER BY g.time, g.idx",
    .gpu_load_cards = "SELECT g.idx, u.s, g.time, g.ce_util, g.memory_kb, g.power, g.temperature"
                      " FROM sample_gpus g LEFT JOIN strings u ON u.id = g.uuid_id"
                      " WHERE g.node_id = ?1 AND g.time >= ?2 AND g.time <= ?3"
                      " ORDER BY g.idx, u.s NULLS FIRST, g.time",
    .energy_card_use = "SELECT g.time, g.idx, g.job, g.epoch, sum(g.gpu_util_m) FROM sample_proc_gpus g"
                       " WHERE g.node_id = ?1 AND g.time >= ?2 AND g.time <= ?3"
                       " GROUP BY g.time, g.idx, g.job, g.epoch ORDER BY g.time, g.idx",
    .energy_cards = "SELECT g.idx, u.s, g.time, g.power, g.energy_mj"
                    " FROM sample_gpus g LEFT JOIN strings u ON u.id = g.uuid_id"
                    " WHERE g.node_id = ?1 AND g.time >= ?2 AND g.time <= ?3"
                    " ORDER BY g.idx, u.s NULLS FIRST, g.time",
    /* for all instances sharing the database */
    .stats = "SELECT pg_database_size(current_database()),"
             " (SELECT count(*) FROM ts_series), (SELECT count(*) FROM ts_chunk),"
             " (SELECT count(*) FROM request_log), (SELECT coalesce(sum(octet_length(body)), 0) FROM request_log),"
             " (SELECT count(*) FROM request_log l JOIN ts_instances i ON i.id = l.instance_id"
             "   WHERE l.lsn > i.durable_lsn)",
};

/* One statement of fj_pg_driver_run(): the shared form's ?N become $N (the store's own statements hold no
 * '?' elsewhere). */
static fj_status run_once(fj_store *s, const char *sql, int n, const char *const *params,
                          void (*row)(void *ctx, int ncols, const char *const *cells), void *ctx,
                          int64_t *changed, const char *what, fj_err *err)
{
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK)
        return fj_pg_fail(s, NULL, what, err);
    size_t len = strlen(sql);
    char *text = fj_malloc(len + 1);
    if (!text)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    for (size_t i = 0; i <= len; i++)
        text[i] = sql[i] == '?' && sql[i + 1] >= '0' && sql[i + 1] <= '9' ? '$' : sql[i];
    fj_cancel *token = stoppable_begin(s);
    PGresult *r = PQexecParams(s->conn, text, n, NULL, params, NULL, NULL, 0);
    stoppable_end(token);
    fj_free(text);
    ExecStatusType rs = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (rs != PGRES_COMMAND_OK && rs != PGRES_TUPLES_OK) {
        fj_status st = fj_pg_fail(s, r, what, err);
        PQclear(r);
        return st;
    }
    int ncols = PQnfields(r);
    if (ncols > RUN_MAX_COLS) {
        PQclear(r);
        return fj_err_set(err, FJ_EINTERNAL, "db", "postgres: %s: %d columns", what, ncols);
    }
    for (int i = 0, nrows = PQntuples(r); row && i < nrows; i++) {
        const char *cells[RUN_MAX_COLS];
        for (int c = 0; c < ncols; c++)
            cells[c] = PQgetisnull(r, i, c) ? NULL : PQgetvalue(r, i, c);
        row(ctx, ncols, cells);
    }
    if (changed)
        *changed = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return FJ_OK;
}

fj_status fj_pg_driver_run(fj_store *s, const char *sql, int n, const char *const *params,
                     void (*row)(void *ctx, int ncols, const char *const *cells), void *ctx,
                     int64_t *changed, const char *what, fj_err *err)
{
    fj_status st = fj_pg_connect(s, err);
    if (st != FJ_OK)
        return st;
    st = run_once(s, sql, n, params, row, ctx, changed, what, err);
    if (st == FJ_EBUSY && PQstatus(s->conn) != CONNECTION_OK && fj_pg_reconnect(s, err) == FJ_OK)
        st = run_once(s, sql, n, params, row, ctx, changed, what, err);
    return st;
}

bool fj_pg_driver_writable(const fj_store *s)
{
    return s->mode == FJ_STORE_WRITE;
}
