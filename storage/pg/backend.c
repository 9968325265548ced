/* storage/pg/backend.c — the PostgreSQL backend (libpq): opening and reconnecting, embedded migrations under an
 * advisory lock, week partitions and retention, prepared statements, error mapping, name cache,
 * column arrays and tokens. The write path is in storage/pg/write.c, the queries in pg_query_*.c; the
 * schema in migrations/postgres/. */
#include "storage/pg/int.h"
#include "storage/pg/migrations.h"
#include "storage/pg/query_int.h"
#include "storage/pg/ts.h"

#include "alloc.h"
#include "log.h"
#include "redact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Session advisory lock held while migrations run ('fjordmig'), so that two `fjord migrate` or
 * `fjord serve` never migrate one database at once. Partition DDL has its own (in the schema). */
#define MIGRATE_LOCK "7379250473474779495"
/* A DDL statement (partition create/drop) waits at most this long for its table locks: behind a
 * long query it gives up (the write answers 503 and is retried) instead of queueing every other
 * request behind it. */
#define LOCK_TIMEOUT "5s"
#define DDL_LOCK_TIMEOUT "SET LOCAL lock_timeout = '" LOCK_TIMEOUT "'"
#define WEEK_S 604800
#define MONDAY0 345600 /* 1970-01-05T00:00:00Z, the first Monday */
#define WEEKS_AHEAD 2
#define RETENTION_EVERY_S 3600

/* --- name map ----------------------------------------------------------------------------- */

static uint64_t map_hash(int64_t ns, const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)ns;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)key[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 29;
    return h ? h : 1;
}

int64_t fj_pg_map_get(const fj_pg_map *m, int64_t ns, const char *key, size_t len)
{
    if (!m->cap)
        return 0;
    uint64_t h = map_hash(ns, key, len);
    for (size_t i = (size_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const fj_pg_map_ent *e = &m->slots[i];
        if (!e->hash)
            return 0;
        if (e->hash == h && e->ns == ns && e->len == len && memcmp(e->key, key, len) == 0)
            return e->id;
    }
}

static fj_status map_grow(fj_pg_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    fj_pg_map_ent *slots = fj_calloc(cap, sizeof *slots);
    if (!slots)
        return FJ_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        fj_pg_map_ent *e = &m->slots[i];
        if (!e->hash)
            continue;
        size_t j = (size_t)e->hash & (cap - 1);
        while (slots[j].hash)
            j = (j + 1) & (cap - 1);
        slots[j] = *e;
    }
    fj_free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return FJ_OK;
}

fj_status fj_pg_map_put(fj_pg_map *m, int64_t ns, const char *key, size_t len, int64_t id)
{
    if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m) != FJ_OK)
        return FJ_ENOMEM;
    uint64_t h = map_hash(ns, key, len);
    size_t i = (size_t)h & (m->cap - 1);
    for (; m->slots[i].hash; i = (i + 1) & (m->cap - 1))
        if (m->slots[i].hash == h && m->slots[i].ns == ns && m->slots[i].len == len &&
            memcmp(m->slots[i].key, key, len) == 0) {
            m->slots[i].id = id;
            return FJ_OK;
        }
    char *k = fj_malloc(len + 1);
    if (!k)
        return FJ_ENOMEM;
    memcpy(k, key, len);
    k[len] = '\0';
    m->slots[i] = (fj_pg_map_ent){h, ns, id, k, len};
    m->n++;
    return FJ_OK;
}

void fj_pg_map_clear(fj_pg_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        fj_free(m->slots[i].key);
    fj_free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}

/* --- column arrays ------------------------------------------------------------------------ */

/* Arrays are capped well below libpq's 1 GB per parameter. */
#define ARR_CAP ((size_t)768 << 20)

void fj_pg_cols_init(fj_pg_cols *t, int ncols)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    for (int i = 0; i < FJ_PG_MAXCOLS; i++)
        fj_buf_init(&t->c[i].b, ARR_CAP);
}

void fj_pg_cols_reset(fj_pg_cols *t)
{
    for (int i = 0; i < FJ_PG_MAXCOLS; i++) {
        fj_buf_reset(&t->c[i].b);
        t->c[i].n = 0;
    }
    t->nrows = 0;
    t->copy = t->ord = false;
    t->in_row = 0;
    t->st = FJ_OK;
}

void fj_pg_cols_copy(fj_pg_cols *t, bool ord)
{
    t->copy = true;
    t->ord = ord;
}

static void fail_with(fj_pg_cols *t, fj_status st)
{
    if (st != FJ_OK && t->st == FJ_OK)
        t->st = st == FJ_ETOOBIG ? FJ_ETOOBIG : FJ_ENOMEM;
}

/* COPY mode: the separator before a value. */
static fj_buf *copy_sep(fj_pg_cols *t)
{
    fj_buf *b = &t->c[0].b;
    if (t->in_row++)
        fail_with(t, fj_buf_append(b, "\t", 1));
    return b;
}

void fj_pg_cols_free(fj_pg_cols *t)
{
    for (int i = 0; i < FJ_PG_MAXCOLS; i++)
        fj_buf_free(&t->c[i].b);
    fj_free(t->env);
    t->env = NULL;
    t->env_cap = 0;
    t->nrows = 0;
}

/* A value that needs no quoting or escaping in either format (numbers, NULL). */
static void put(fj_pg_cols *t, int col, const char *s, size_t n)
{
    if (t->st != FJ_OK)
        return;
    if (t->copy) {
        fail_with(t, fj_buf_append(copy_sep(t), s, n));
        return;
    }
    fj_pg_arr *a = &t->c[col];
    fj_status st = fj_buf_append(&a->b, a->n ? "," : "{", 1);
    if (st == FJ_OK)
        st = fj_buf_append(&a->b, s, n);
    if (st != FJ_OK)
        t->st = st == FJ_ETOOBIG ? FJ_ETOOBIG : FJ_ENOMEM;
    a->n++;
}

void fj_pg_null(fj_pg_cols *t, int col)
{
    if (t->copy)
        put(t, col, "\\N", 2);
    else
        put(t, col, "NULL", 4);
}

void fj_pg_i64(fj_pg_cols *t, int col, int64_t v)
{
    char tmp[24], *p = tmp + sizeof tmp;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    put(t, col, p, (size_t)(tmp + sizeof tmp - p));
}

void fj_pg_u64(fj_pg_cols *t, int col, uint64_t v)
{
    fj_pg_i64(t, col, v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v);
}

void fj_pg_f64(fj_pg_cols *t, int col, double v)
{
    char tmp[40];
    int n;
    if (v != v)
        n = snprintf(tmp, sizeof tmp, "NaN");
    else if (v > 1.7976931348623157e308)
        n = snprintf(tmp, sizeof tmp, "Infinity");
    else if (v < -1.7976931348623157e308)
        n = snprintf(tmp, sizeof tmp, "-Infinity");
    else
        n = snprintf(tmp, sizeof tmp, "%.17g", v);
    put(t, col, tmp, (size_t)n);
}

/* COPY text format: backslash, tab, newline and carriage return are escaped. */
static void copy_text(fj_pg_cols *t, const char *s, size_t n)
{
    fj_buf *b = copy_sep(t);
    fj_status st = FJ_OK;
    size_t run = 0;
    for (size_t i = 0; st == FJ_OK && i < n; i++) {
        const char *esc = s[i] == '\\' ? "\\\\" : s[i] == '\t' ? "\\t" : s[i] == '\n' ? "\\n" : s[i] == '\r' ? "\\r" : NULL;
        if (!esc)
            continue;
        st = fj_buf_append(b, s + run, i - run);
        if (st == FJ_OK)
            st = fj_buf_append(b, esc, 2);
        run = i + 1;
    }
    if (st == FJ_OK)
        st = fj_buf_append(b, s + run, n - run);
    fail_with(t, st);
}

void fj_pg_textn(fj_pg_cols *t, int col, const char *s, size_t n)
{
    if (t->st != FJ_OK)
        return;
    if (t->copy) {
        copy_text(t, s, n);
        return;
    }
    fj_pg_arr *a = &t->c[col];
    fj_buf *b = &a->b;
    /* Every element quoted: inside quotes only '"' and '\' need a backslash. */
    fj_status st = fj_buf_append(b, a->n ? ",\"" : "{\"", 2);
    size_t run = 0;
    for (size_t i = 0; st == FJ_OK && i < n; i++) {
        if (s[i] != '"' && s[i] != '\\')
            continue;
        st = fj_buf_append(b, s + run, i - run);
        if (st == FJ_OK)
            st = fj_buf_append(b, "\\", 1);
        run = i;
    }
    if (st == FJ_OK)
        st = fj_buf_append(b, s + run, n - run);
    if (st == FJ_OK)
        st = fj_buf_append(b, "\"", 1);
    if (st != FJ_OK)
        t->st = st == FJ_ETOOBIG ? FJ_ETOOBIG : FJ_ENOMEM;
    a->n++;
}

void fj_pg_text(fj_pg_cols *t, int col, const char *s)
{
    if (s)
        fj_pg_textn(t, col, s, strlen(s));
    else
        fj_pg_null(t, col);
}

void fj_pg_bytea(fj_pg_cols *t, int col, const unsigned char *p, size_t n)
{
    if (t->st != FJ_OK)
        return;
    static const char hex[] = "0123456789abcdef";
    fj_pg_arr *a = &t->c[col];
    /* "\\x..." inside the array literal or the COPY text: their parsers turn \\ into the \ of
     * bytea's hex form. */
    fj_status st;
    if (t->copy)
        st = fj_buf_append(copy_sep(t), "\\\\x", 3);
    else
        st = fj_buf_append(&a->b, a->n ? ",\"\\\\x" : "{\"\\\\x", 5);
    fj_buf *out = t->copy ? &t->c[0].b : &a->b;
    char chunk[256];
    size_t k = 0;
    for (size_t i = 0; st == FJ_OK && i < n; i++) {
        chunk[k++] = hex[p[i] >> 4];
        chunk[k++] = hex[p[i] & 15];
        if (k == sizeof chunk) {
            st = fj_buf_append(out, chunk, k);
            k = 0;
        }
    }
    if (st == FJ_OK && k)
        st = fj_buf_append(out, chunk, k);
    if (st == FJ_OK && !t->copy)
        st = fj_buf_append(out, "\"", 1);
    fail_with(t, st);
    a->n++;
}

void fj_pg_row(fj_pg_cols *t, size_t env)
{
    if (t->st != FJ_OK)
        return;
    if (t->copy) {
        if (t->ord) {
            char tmp[24];
            int n = snprintf(tmp, sizeof tmp, "\t%zu", t->nrows + 1);
            fail_with(t, fj_buf_append(&t->c[0].b, tmp, (size_t)n));
        }
        fail_with(t, fj_buf_append(&t->c[0].b, "\n", 1));
        t->in_row = 0;
        if (t->st != FJ_OK)
            return;
    }
    if (t->nrows == t->env_cap) {
        size_t cap = t->env_cap ? t->env_cap * 2 : 256;
        size_t *v = fj_realloc(t->env, cap * sizeof *v);
        if (!v) {
            t->st = FJ_ENOMEM;
            return;
        }
        t->env = v;
        t->env_cap = cap;
    }
    t->env[t->nrows++] = env;
}

fj_status fj_pg_cols_finish(fj_pg_cols *t, const char **vals)
{
    if (t->copy)
        return t->st;
    for (int i = 0; t->st == FJ_OK && i < t->ncols; i++) {
        fj_pg_arr *a = &t->c[i];
        fj_status st = fj_buf_append(&a->b, a->n ? "}" : "{}", a->n ? 1 : 2);
        if (st != FJ_OK)
            t->st = st == FJ_ETOOBIG ? FJ_ETOOBIG : FJ_ENOMEM;
        vals[i] = a->b.data;
    }
    return t->st;
}

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
    /* Connection gone (server restarted or unreachable), or the server is shutting down. */
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK || sqlstate_is(state, "08") || sqlstate_is(state, "57P"))
        return fj_err_set(err, FJ_EBUSY, "db", "postgres: %s: database unavailable (%s); retry later", what, msg);
    fj_status st = FJ_EIO;
    if (sqlstate_is(state, "40") || sqlstate_is(state, "55P03") || sqlstate_is(state, "57014") ||
        sqlstate_is(state, "53"))
        st = FJ_EBUSY; /* deadlock, serialization, lock or statement timeout, resources: retry */
    else if (sqlstate_is(state, "23514")) {
        st = FJ_EBUSY; /* no partition for a row: one was dropped under us; ensured again next time */
        fj_pg_weeks_forget(s);
    } else if (sqlstate_is(state, "22") || sqlstate_is(state, "54"))
        st = FJ_EINVAL; /* data that PostgreSQL cannot hold */
    return fj_err_set(err, st, "db", "postgres: %s: %s%s%s", what, msg, state ? " [" : "", state ? state : "");
}

static const char *stmt_sql(fj_pg_stmt_id id)
{
    static const char *const sql[] = {
#define FJ_PG_SQL(name, text) text,
        FJ_PG_STMTS(FJ_PG_SQL)
#undef FJ_PG_SQL
    };
    if (sql[id])
        return sql[id];
    const char *b = fj_pg_built_sql(id);
    return b ? b : fj_pg_chimbuko_sql(id);
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
        const char *sql = stmt_sql(id);
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
    PGresult *r = PQexecPrepared(s->conn, name, n, vals, NULL, NULL, 0);
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

/* The URL as logs and errors show it: every credential in it redacted (common/redact.h). */
static char *url_shown(const char *url)
{
    char shown[1024];
    return fj_strdup(fj_redact_conn(url, shown, sizeof shown));
}

static fj_status connect_now(fj_store *s, fj_err *err)
{
    if (s->conn)
        PQfinish(s->conn);
    memset(s->prepared, 0, sizeof s->prepared);
    memset(s->staged, 0, sizeof s->staged);
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
    /* Times are integers and names are compared byte-wise: the session settings that matter are
     * fixed here so the results do not depend on the server's defaults. */
    /* A statement that waits for a lock longer than lock_timeout fails (503, retried) rather than
     * hold up every request behind it: as SQLite's busy timeout. */
    fj_status st = fj_pg_exec(s, "SET client_encoding = 'UTF8'; SET timezone = 'UTC'; "
                                 "SET client_min_messages = 'warning'; SET lock_timeout = '" LOCK_TIMEOUT "'",
                              "session settings", err);
    return st;
}

fj_status fj_pg_connect(fj_store *s, fj_err *err)
{
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK)
        return FJ_OK;
    fj_status st = connect_now(s, err);
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
        st = connect_now(s, err);
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

/* --- partitions and retention ------------------------------------------------------------- */

int64_t fj_pg_week_of(fj_time t)
{
    int64_t d = t - MONDAY0;
    int64_t q = d / WEEK_S;
    if (d % WEEK_S < 0)
        q--; /* floor, also before 1970 */
    return q * WEEK_S + MONDAY0;
}

void fj_pg_weeks_forget(fj_store *s)
{
    s->n_weeks = 0;
}

static bool week_known(const fj_store *s, int64_t w)
{
    for (size_t i = 0; i < s->n_weeks; i++)
        if (s->weeks[i] == w)
            return true;
    return false;
}

static fj_status week_remember(fj_store *s, int64_t w)
{
    if (s->n_weeks == s->cap_weeks) {
        if (s->cap_weeks >= 4096) { /* a cache: start over */
            s->n_weeks = 0;
        } else {
            size_t cap = s->cap_weeks ? s->cap_weeks * 2 : 16;
            int64_t *v = fj_realloc(s->weeks, cap * sizeof *v);
            if (!v)
                return FJ_ENOMEM;
            s->weeks = v;
            s->cap_weeks = cap;
        }
    }
    s->weeks[s->n_weeks++] = w;
    return FJ_OK;
}

fj_status fj_pg_ensure_weeks(fj_store *s, const fj_time *times, size_t n, bool in_tx, fj_err *err)
{
    /* The weeks of the given times, then the current week and the next ones, so that partitions
     * exist before data for them arrives. Known weeks cost a lookup in a short list. */
    int64_t now_w = fj_pg_week_of(fj_time_now());
    bool began = false;
    fj_status st = FJ_OK;
    for (size_t i = 0; st == FJ_OK && i < n + 1 + WEEKS_AHEAD; i++) {
        int64_t w = i < n ? fj_pg_week_of(times[i]) : now_w + (int64_t)(i - n) * WEEK_S;
        if (week_known(s, w))
            continue;
        if (!in_tx && !began) {
            st = fj_pg_begin(s, false, err);
            if (st == FJ_OK)
                st = fj_pg_exec(s, DDL_LOCK_TIMEOUT, "partition lock timeout", err);
            began = true;
        }
        char v[24];
        snprintf(v, sizeof v, "%lld", (long long)w);
        const char *vals[] = {v};
        if (st == FJ_OK)
            st = fj_pg_run(s, FJ_PG_ENSURE_WEEK, 1, vals, NULL, "create partitions", err);
        /* Remembered at once (later times of the same week skip it). Inside a caller's
         * transaction that may still roll back: the write path forgets them when it does. */
        if (st == FJ_OK && week_remember(s, w) != FJ_OK)
            st = fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }
    if (st == FJ_OK && began)
        st = fj_pg_exec(s, "COMMIT", "commit partitions", err);
    if (st != FJ_OK) {
        if (began)
            fj_pg_rollback(s);
        fj_pg_weeks_forget(s);
    }
    return st;
}

fj_status fj_pg_retention(fj_store *s, bool force, fj_err *err)
{
    if (s->retention_s <= 0)
        return FJ_OK;
    fj_time now = fj_time_now();
    if (!force && now - s->retention_ran < RETENTION_EVERY_S)
        return FJ_OK;
    char v[24];
    snprintf(v, sizeof v, "%lld", (long long)(now - s->retention_s));
    const char *vals[] = {v};
    PGresult *r = NULL;
    fj_status st = fj_pg_begin(s, false, err);
    if (st == FJ_OK)
        st = fj_pg_exec(s, DDL_LOCK_TIMEOUT, "retention lock timeout", err);
    if (st == FJ_OK)
        st = fj_pg_run(s, FJ_PG_DROP_BEFORE, 1, vals, &r, "drop old partitions", err);
    if (st == FJ_OK)
        st = fj_pg_exec(s, "COMMIT", "commit retention", err);
    if (st != FJ_OK) {
        PQclear(r);
        fj_pg_rollback(s);
        return st;
    }
    int64_t dropped = r && PQntuples(r) ? fj_pg_int(r, 0, 0) : 0;
    PQclear(r);
    s->retention_ran = now;
    if (dropped) {
        fj_info("postgres: retention dropped %lld week partitions older than %s", (long long)dropped, v);
        fj_pg_weeks_forget(s);
    }
    return FJ_OK;
}

/* --- URL ---------------------------------------------------------------------------------- */

static bool pg_accepts(const char *url)
{
    return url && (strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0);
}

/* --- migrations --------------------------------------------------------------------------- */

static int latest_version(void)
{
    return fj_pg_n_migrations ? fj_pg_migrations[fj_pg_n_migrations - 1].version : 0;
}

/* A one-value query without parameters (schema inspection; no user data in the SQL). */
static fj_status query_int(fj_store *s, const char *sql, int64_t *out, fj_err *err)
{
    PGresult *r = PQexec(s->conn, sql);
    fj_status st = FJ_OK;
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        st = fj_pg_fail(s, r, "schema check", err);
    else
        *out = PQntuples(r) ? fj_pg_int(r, 0, 0) : 0;
    PQclear(r);
    return st;
}

static fj_status current_version2(fj_store *s, int *out, bool *tracked, fj_err *err)
{
    int64_t has = 0, v = 0;
    fj_status st = query_int(s, "SELECT count(*) FROM pg_class WHERE relname = 'schema_migrations' AND "
                                "relnamespace = current_schema()::regnamespace", &has, err);
    if (st == FJ_OK && has)
        st = query_int(s, "SELECT coalesce(max(version), 0) FROM schema_migrations", &v, err);
    *out = (int)v;
    if (tracked)
        *tracked = has != 0;
    return st;
}

static fj_status migrate_lock(fj_store *s, bool lock, fj_err *err)
{
    return fj_pg_exec(s, lock ? "SELECT pg_advisory_lock(" MIGRATE_LOCK ")" : "SELECT pg_advisory_unlock(" MIGRATE_LOCK ")",
                      lock ? "take the migration lock" : "release the migration lock", err);
}

/* Applies pending migrations; the caller holds the migration lock. */
static fj_status apply_migrations(fj_store *s, int *applied, fj_err *err)
{
    *applied = 0;
    for (size_t i = 0; i < fj_pg_n_migrations; i++)
        if (fj_pg_migrations[i].version != (int)i + 1)
            return fj_err_set(err, FJ_EINTERNAL, "db", "embedded PostgreSQL migrations are not numbered 1..n");
    int cur;
    fj_status st = current_version2(s, &cur, NULL, err);
    if (st != FJ_OK)
        return st;
    if (cur > latest_version())
        return fj_err_set(err, FJ_ESCHEMA, "db",
                          "database schema is at version %d, newer than this fjord (%d): upgrade fjord", cur,
                          latest_version());
    for (size_t i = (size_t)cur; i < fj_pg_n_migrations; i++) {
        const fj_pg_migration *m = &fj_pg_migrations[i];
        /* One transaction per migration, schema_migrations included: DDL is transactional in
         * PostgreSQL, so a failed migration leaves the database at the previous version. */
        st = fj_pg_exec(s, "BEGIN", "begin migration", err);
        if (st == FJ_OK)
            st = fj_pg_exec(s, "CREATE TABLE IF NOT EXISTS schema_migrations(version integer PRIMARY KEY, "
                               "name text, applied_at bigint)", "create schema_migrations", err);
        if (st == FJ_OK) {
            PGresult *r = PQexec(s->conn, m->sql);
            if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) {
                fj_err e2 = {0};
                fj_status st2 = fj_pg_fail(s, r, "migration", &e2);
                st = fj_err_set(err, st2 == FJ_EBUSY ? FJ_EBUSY : FJ_EIO, "db", "migration %04d_%s failed: %s",
                                m->version, m->name, e2.message);
            }
            PQclear(r);
        }
        if (st == FJ_OK) {
            char ver[16], at[24];
            snprintf(ver, sizeof ver, "%d", m->version);
            snprintf(at, sizeof at, "%lld", (long long)fj_time_now());
            const char *vals[] = {ver, m->name, at};
            PGresult *r = PQexecParams(s->conn, "INSERT INTO schema_migrations(version,name,applied_at) "
                                                "VALUES($1::integer,$2::text,$3::bigint)",
                                       3, NULL, vals, NULL, NULL, 0);
            if (!r || PQresultStatus(r) != PGRES_COMMAND_OK)
                st = fj_pg_fail(s, r, "record migration", err);
            PQclear(r);
        }
        if (st == FJ_OK)
            st = fj_pg_exec(s, "COMMIT", "commit migration", err);
        if (st != FJ_OK) {
            fj_pg_rollback(s);
            return st;
        }
        ++*applied;
    }
    /* Roll-ups and job CPU a migration listed (0004's and 0005's backfills) are computed in C, in a transaction of their
     * own: should it not finish, queries read samples meanwhile and the writer completes it. */
    if (*applied > 0) {
        if ((st = fj_pg_exec(s, "BEGIN", "begin", err)) != FJ_OK)
            return st;
        st = fj_pg_load_rollup_drain(s, err);
        if (st == FJ_OK)
            st = fj_pg_jcpu_drain(s, NULL, NULL, NULL, 0, err); /* 0005's backfill of job CPU */
        if (st == FJ_OK)
            st = fj_pg_exec(s, "COMMIT", "commit", err);
        if (st != FJ_OK)
            fj_pg_rollback(s);
    }
    return st;
}

static fj_status check_schema(fj_store *s, const fj_store_opts *opts, fj_err *err)
{
    int cur, latest = latest_version();
    bool tracked;
    fj_status st = current_version2(s, &cur, &tracked, err);
    if (st != FJ_OK)
        return st;
    if (cur == 0 && !tracked && opts->mode == FJ_STORE_WRITE && opts->create) {
        /* An empty database: migrate it, under the lock, checking again once we hold it (another
         * fjord may have migrated it meanwhile). */
        if ((st = migrate_lock(s, true, err)) != FJ_OK)
            return st;
        st = current_version2(s, &cur, &tracked, err);
        if (st == FJ_OK && cur == 0 && !tracked) {
            int64_t ntables = 0;
            st = query_int(s, "SELECT count(*) FROM pg_class WHERE relkind IN ('r','p','v') AND "
                              "relnamespace = current_schema()::regnamespace", &ntables, err);
            if (st == FJ_OK && ntables > 0)
                st = fj_err_set(err, FJ_ESCHEMA, "db",
                                "%s has tables but no schema_migrations: not an fjord database", s->shown);
            int applied;
            if (st == FJ_OK)
                st = apply_migrations(s, &applied, err);
            if (st == FJ_OK)
                st = current_version2(s, &cur, &tracked, err);
        }
        fj_err e2 = {0};
        migrate_lock(s, false, &e2);
        if (st != FJ_OK)
            return st;
    }
    if (cur == 0 && !tracked) {
        int64_t ntables = 0;
        st = query_int(s, "SELECT count(*) FROM pg_class WHERE relkind IN ('r','p','v') AND "
                          "relnamespace = current_schema()::regnamespace", &ntables, err);
        if (st != FJ_OK)
            return st;
        if (ntables > 0)
            return fj_err_set(err, FJ_ESCHEMA, "db", "%s has tables but no schema_migrations: not an fjord database",
                              s->shown);
    }
    if (cur == latest || opts->migrating)
        return FJ_OK;
    if (cur > latest)
        return fj_err_set(err, FJ_ESCHEMA, "db",
                          "database schema is at version %d, newer than this fjord (%d): upgrade fjord", cur,
                          latest);
    return fj_err_set(err, FJ_ESCHEMA, "db",
                      "database schema is at version %d, this fjord needs %d: run `fjord migrate up --db %s`", cur,
                      latest, s->shown);
}

/* --- open / close ------------------------------------------------------------------------- */

static void pg_close(fj_store *s)
{
    if (!s)
        return;
    fj_pg_ts_close(s); /* seals and commits buffered metrics while the connection is open */
    if (s->conn)
        PQfinish(s->conn);
    fj_pg_write_free(s);
    fj_pg_map_clear(&s->names);
    fj_free(s->weeks);
    fj_free(s->url);
    fj_free(s->shown);
    fj_free(s);
}

static fj_status pg_open(const char *url, const fj_store_opts *opts, fj_store **out, fj_err *err)
{
    static const fj_store_opts defaults = {0};
    if (!opts)
        opts = &defaults;
    *out = NULL;
    fj_store *s = fj_calloc(1, sizeof *s);
    if (!s)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    s->ops = &fj_store_pg_ops;
    s->mode = opts->mode;
    s->migrating = opts->migrating;
    s->job_gap_s = opts->job_gap_s > 0 ? opts->job_gap_s : FJ_JOB_GAP_DEFAULT_S;
    s->retention_s = opts->retention_s > 0 ? opts->retention_s : 0;
    s->url = fj_strdup(url);
    s->shown = url_shown(url);
    if (!s->url || !s->shown) {
        pg_close(s);
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }
    fj_status st = connect_now(s, err);
    if (st == FJ_OK)
        st = check_schema(s, opts, err);
    if (st == FJ_OK && opts->mode == FJ_STORE_WRITE && !opts->migrating) {
        /* The writer keeps partitions ahead of time and old ones dropped from the start. */
        st = fj_pg_retention(s, true, err);
        if (st == FJ_OK)
            st = fj_pg_ensure_weeks(s, NULL, 0, false, err);
    }
    if (st != FJ_OK) {
        pg_close(s);
        return st;
    }
    *out = s;
    return FJ_OK;
}

static fj_status pg_migrate_status(fj_store *s, fj_migration_info *out, fj_err *err)
{
    out->latest = latest_version();
    fj_status st = fj_pg_connect(s, err);
    return st == FJ_OK ? current_version2(s, &out->current, NULL, err) : st;
}

static fj_status pg_migrate_up(fj_store *s, int *applied, fj_err *err)
{
    int dummy;
    if (!applied)
        applied = &dummy;
    *applied = 0;
    if (s->mode != FJ_STORE_WRITE)
        return fj_err_set(err, FJ_EINVAL, "db", "migrate up needs a writable handle");
    fj_status st = fj_pg_connect(s, err);
    if (st == FJ_OK)
        st = migrate_lock(s, true, err);
    if (st != FJ_OK)
        return st;
    st = apply_migrations(s, applied, err);
    fj_err e2 = {0};
    migrate_lock(s, false, &e2);
    return st;
}

/* --- tokens ------------------------------------------------------------------------------- */

static void token_from_row(const PGresult *r, int i, fj_token_rec *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->cluster, sizeof t->cluster, "%s", PQgetvalue(r, i, 0));
    snprintf(t->hash, sizeof t->hash, "%s", PQgetvalue(r, i, 1));
    t->read_only = PQgetvalue(r, i, 2)[0] == 't';
    t->created = fj_pg_int(r, i, 3);
}

/* A statement outside any transaction, reconnecting first when the connection was lost. */
static fj_status run1(fj_store *s, fj_pg_stmt_id id, int n, const char *const *vals, PGresult **res,
                      const char *what, fj_err *err)
{
    fj_status st = fj_pg_connect(s, err);
    if (st != FJ_OK)
        return st;
    st = fj_pg_run(s, id, n, vals, res, what, err);
    if (st == FJ_EBUSY && PQstatus(s->conn) != CONNECTION_OK && connect_now(s, err) == FJ_OK)
        st = fj_pg_run(s, id, n, vals, res, what, err);
    return st;
}

static fj_status pg_token_put(fj_store *s, const fj_token_rec *t, fj_err *err)
{
    if (s->mode != FJ_STORE_WRITE)
        return fj_err_set(err, FJ_EINVAL, "db", "token_put needs a writable handle");
    char created[24];
    snprintf(created, sizeof created, "%lld", (long long)t->created);
    const char *vals[] = {t->cluster, t->hash, t->read_only ? "true" : "false", created};
    return run1(s, FJ_PG_TOKEN_PUT, 4, vals, NULL, "token_put", err);
}

static fj_status pg_token_get(fj_store *s, const char *cluster, fj_token_rec *out, fj_err *err)
{
    const char *vals[] = {cluster};
    PGresult *r;
    fj_status st = run1(s, FJ_PG_TOKEN_GET, 1, vals, &r, "token_get", err);
    if (st != FJ_OK)
        return st;
    if (PQntuples(r) == 1)
        token_from_row(r, 0, out);
    else
        st = fj_err_set(err, FJ_ENOTFOUND, "cluster", "no token for cluster '%s'", cluster);
    PQclear(r);
    return st;
}

static fj_status pg_token_list(fj_store *s, fj_token_rec **out, size_t *n, fj_err *err)
{
    *out = NULL;
    *n = 0;
    PGresult *r;
    fj_status st = run1(s, FJ_PG_TOKEN_LIST, 0, NULL, &r, "token_list", err);
    if (st != FJ_OK)
        return st;
    size_t len = (size_t)PQntuples(r);
    fj_token_rec *v = fj_calloc(len ? len : 1, sizeof *v);
    if (!v) {
        PQclear(r);
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }
    for (size_t i = 0; i < len; i++)
        token_from_row(r, (int)i, &v[i]);
    PQclear(r);
    *out = v;
    *n = len;
    return FJ_OK;
}

static fj_status pg_token_revoke(fj_store *s, const char *cluster, fj_err *err)
{
    if (s->mode != FJ_STORE_WRITE)
        return fj_err_set(err, FJ_EINVAL, "db", "token_revoke needs a writable handle");
    const char *vals[] = {cluster};
    PGresult *r;
    fj_status st = run1(s, FJ_PG_TOKEN_DEL, 1, vals, &r, "token_revoke", err);
    if (st != FJ_OK)
        return st;
    bool gone = strcmp(PQcmdTuples(r), "0") == 0;
    PQclear(r);
    if (gone)
        return fj_err_set(err, FJ_ENOTFOUND, "cluster", "no token for cluster '%s'", cluster);
    return FJ_OK;
}

/* Every op is implemented: line-protocol metrics in storage/pg/ts.c and storage/pg/ts_read.c. */
const fj_store_ops fj_store_pg_ops = {
    .version = FJ_STORE_OPS_VERSION,
    .name = "postgres",
    .accepts = pg_accepts,
    .open = pg_open,
    .close = pg_close,
    .migrate_status = pg_migrate_status,
    .migrate_up = pg_migrate_up,
    .write = fj_pg_write,
    .token_put = pg_token_put,
    .token_get = pg_token_get,
    .token_list = pg_token_list,
    .token_revoke = pg_token_revoke,
    .q_clusters = fj_pg_q_clusters,
    .q_nodes = fj_pg_q_nodes,
    .q_sysinfo = fj_pg_q_sysinfo,
    .q_topology = fj_pg_q_topology,
    .q_jobs = fj_pg_q_jobs,
    .q_job = fj_pg_q_job,
    .q_profile = fj_pg_q_profile,
    .q_node_load = fj_pg_q_node_load,
    .q_cluster_load = fj_pg_q_cluster_load,
    .q_gpu_load = fj_pg_q_gpu_load,
    .q_slurm_jobs = fj_pg_q_slurm_jobs,
    .q_partitions = fj_pg_q_partitions,
    .q_node_states = fj_pg_q_node_states,
    .q_uptime = fj_pg_q_uptime,
    .q_errors = fj_pg_q_errors,
    .measurement_latest = fj_pg_measurement_latest,
    .q_node_usage = fj_pg_q_node_usage,
    .cb_runs = fj_pg_cb_runs,
    .cb_series = fj_pg_cb_series,
    .cb_top = fj_pg_cb_top,
    .cb_records = fj_pg_cb_records,
    .ts_start = fj_pg_ts_start,
    .ts_engine = fj_pg_ts_engine,
    .maintain = fj_pg_ts_maintain,
    .stats = fj_pg_stats,
    .ts_series = fj_pg_ts_series,
    .ts_read = fj_pg_ts_read,
    .ts_read_many = fj_pg_ts_read_many,
    .cc_messages = fj_pg_cc_messages,
    .cc_jobs = fj_pg_cc_jobs,
};
