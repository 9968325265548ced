/* storage/pg/copy.c — batched rows for the PostgreSQL writers: a table's rows as column arrays
 * (array literals for unnest) or as COPY's text format, the batch-insert half of the driver. */
#include "storage/pg/int.h"

#include "alloc.h"

#include <stdio.h>
#include <string.h>

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

const char *fj_pg_type_name(char t)
{
    switch (t) {
    case 't': return "text";
    case 'f': return "float8";
    case 'y': return "bytea";
    case 'i': return "integer";
    case 'o': return "boolean";
    default: return "bigint";
    }
}
