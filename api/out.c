/* out.c — the JSON and CSV row sinks of the query API. */
#include "api/out.h"

#include "alloc.h"
#include "cancel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Answers hold many numbers: formatting them without printf keeps large answers (a profile of
 * thousands of rows) cheap. */
static fj_status put_i64(fj_buf *b, int64_t v)
{
    char tmp[24], *e = tmp + sizeof tmp, *p = e;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    return fj_buf_append(b, p, (size_t)(e - p));
}

/* Reals with at most 3 decimals, trailing zeros dropped: percentages and averages do not need
 * more, and 12.300000000000001 helps nobody. */
static fj_status put_real(fj_buf *b, double d)
{
    if (!isfinite(d))
        return fj_buf_puts(b, "null");
    if (fabs(d) >= 1e15)
        return fj_buf_printf(b, "%.17g", d);
    int64_t m = llround(d * 1000.0);
    if (m == 0)
        return fj_buf_append(b, "0", 1);
    char tmp[32];
    size_t n = 0;
    if (m < 0) {
        tmp[n++] = '-';
        m = -m;
    }
    int64_t ip = m / 1000, fp = m % 1000;
    char digits[24], *e = digits + sizeof digits, *p = e;
    do {
        *--p = (char)('0' + ip % 10);
        ip /= 10;
    } while (ip);
    memcpy(tmp + n, p, (size_t)(e - p));
    n += (size_t)(e - p);
    if (fp) {
        tmp[n++] = '.';
        tmp[n++] = (char)('0' + fp / 100);
        tmp[n++] = (char)('0' + fp / 10 % 10);
        tmp[n++] = (char)('0' + fp % 10);
        while (tmp[n - 1] == '0')
            n--;
    }
    return fj_buf_append(b, tmp, n);
}

/* A JSON string: runs of plain bytes appended at once. */
static fj_status put_str(fj_buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s, *run = p;
    fj_status st = fj_buf_append(b, "\"", 1);
    for (; st == FJ_OK && *p; p++) {
        if (*p >= 0x20 && *p != '"' && *p != '\\')
            continue;
        if (p > run)
            st = fj_buf_append(b, run, (size_t)(p - run));
        if (st != FJ_OK)
            break;
        switch (*p) {
        case '"': st = fj_buf_append(b, "\\\"", 2); break;
        case '\\': st = fj_buf_append(b, "\\\\", 2); break;
        case '\n': st = fj_buf_append(b, "\\n", 2); break;
        case '\r': st = fj_buf_append(b, "\\r", 2); break;
        case '\t': st = fj_buf_append(b, "\\t", 2); break;
        default: st = fj_buf_printf(b, "\\u%04x", *p); break;
        }
        run = p + 1;
    }
    if (st == FJ_OK && p > run)
        st = fj_buf_append(b, run, (size_t)(p - run));
    return st == FJ_OK ? fj_buf_append(b, "\"", 1) : st;
}

fj_status fj_out_value_json(fj_buf *b, const fj_value *v)
{
    char tb[21];
    fj_status st;
    switch (v->t) {
    case FJ_VT_NULL: return fj_buf_puts(b, "null");
    case FJ_VT_INT: return put_i64(b, v->i);
    case FJ_VT_REAL: return put_real(b, v->d);
    case FJ_VT_BOOL: return fj_buf_puts(b, v->i ? "true" : "false");
    case FJ_VT_TEXT: return put_str(b, v->s ? v->s : "");
    case FJ_VT_TIME: fj_time_format(v->i, tb); return put_str(b, tb);
    case FJ_VT_JSON: return fj_buf_puts(b, v->s ? v->s : "null");
    case FJ_VT_LIST:
        if ((st = fj_buf_puts(b, "[")) != FJ_OK)
            return st;
        for (size_t i = 0; i < v->n; i++) {
            if (i && (st = fj_buf_puts(b, ",")) != FJ_OK)
                return st;
            if ((st = put_str(b, v->list[i] ? v->list[i] : "")) != FJ_OK)
                return st;
        }
        return fj_buf_puts(b, "]");
    }
    return FJ_EINTERNAL;
}

fj_status fj_out_value_text(fj_buf *b, const fj_value *v)
{
    char tb[21];
    fj_status st;
    switch (v->t) {
    case FJ_VT_NULL: return FJ_OK;
    case FJ_VT_INT: return put_i64(b, v->i);
    case FJ_VT_REAL: return isfinite(v->d) ? put_real(b, v->d) : FJ_OK;
    case FJ_VT_BOOL: return fj_buf_puts(b, v->i ? "true" : "false");
    case FJ_VT_TEXT:
    case FJ_VT_JSON: return fj_buf_puts(b, v->s ? v->s : "");
    case FJ_VT_TIME: fj_time_format(v->i, tb); return fj_buf_puts(b, tb);
    case FJ_VT_LIST:
        for (size_t i = 0; i < v->n; i++) {
            if (i && (st = fj_buf_puts(b, ",")) != FJ_OK)
                return st;
            if ((st = fj_buf_puts(b, v->list[i] ? v->list[i] : "")) != FJ_OK)
                return st;
        }
        return FJ_OK;
    }
    return FJ_EINTERNAL;
}

/* One cell: prefix (may be "") and s, quoted as a whole when s holds a comma, quote, CR or LF. */
static fj_status csv_put(fj_buf *b, const char *prefix, const char *s)
{
    bool quote = strpbrk(s, ",\"\r\n") != NULL;
    fj_status st = quote ? fj_buf_puts(b, "\"") : FJ_OK;
    if (st == FJ_OK)
        st = fj_buf_puts(b, prefix);
    if (!quote)
        return st == FJ_OK ? fj_buf_puts(b, s) : st;
    for (const char *p = s; st == FJ_OK && *p; p++)
        st = *p == '"' ? fj_buf_puts(b, "\"\"") : fj_buf_append(b, p, 1);
    return st == FJ_OK ? fj_buf_puts(b, "\"") : st;
}

fj_status fj_csv_cell(fj_buf *b, const char *s)
{
    return csv_put(b, "", s);
}

/* A decimal number as a spreadsheet reads one (-5, +1.5, 2e-3): it computes nothing, so it keeps
 * its sign and stays a number. */
static bool plain_number(const char *s)
{
    const char *p = s + (*s == '+' || *s == '-');
    size_t digits = strspn(p, "0123456789");
    p += digits;
    if (*p == '.') {
        size_t frac = strspn(p + 1, "0123456789");
        digits += frac;
        p += 1 + frac;
    }
    if (digits && (*p == 'e' || *p == 'E')) {
        const char *e = p + 1 + (p[1] == '+' || p[1] == '-');
        size_t exp = strspn(e, "0123456789");
        p = exp ? e + exp : p;
    }
    return digits && !*p;
}

bool fj_csv_formula(const char *s)
{
    return *s && strchr("=+-@\t\r", *s) && !plain_number(s);
}

fj_status fj_csv_text(fj_buf *b, const char *s)
{
    return csv_put(b, fj_csv_formula(s) ? "'" : "", s);
}

#define TRY(x)                                                                                         \
    do {                                                                                               \
        fj_status st_ = (x);                                                                           \
        if (st_ != FJ_OK)                                                                              \
            return o->st = st_;                                                                        \
    } while (0)

static fj_status open_doc(fj_out *o)
{
    if (!o->csv && !o->open) {
        o->open = true;
        TRY(fj_buf_puts(o->b, "{"));
    }
    return FJ_OK;
}

static fj_status member(fj_out *o, const char *name)
{
    TRY(open_doc(o));
    TRY(fj_buf_puts(o->b, o->b->len > 1 && o->b->data[o->b->len - 1] != '{' ? "," : ""));
    TRY(put_str(o->b, name));
    TRY(fj_buf_puts(o->b, ":"));
    return FJ_OK;
}

/* The columns layout: nulls for the current group's buckets before slot `to`. */
static fj_status pad_columns(fj_out *o, size_t to)
{
    const fj_qtable *t = o->t;
    for (; o->slot < to; o->slot++)
        for (size_t i = t->n_key + 1; i < t->n_cols; i++)
            if (o->pick[i])
                TRY(fj_buf_puts(&o->colv[i], o->slot ? ",null" : "null"));
    return FJ_OK;
}

/* The columns layout: the current group's arrays, padded to the grid, and its closing brace. */
static fj_status flush_columns(fj_out *o)
{
    const fj_qtable *t = o->t;
    TRY(pad_columns(o, o->grid_n));
    for (size_t i = t->n_key + 1; i < t->n_cols; i++) {
        if (!o->pick[i])
            continue;
        TRY(fj_buf_append(o->b, o->keys.data + o->key_off[i], o->key_len[i]));
        TRY(fj_buf_puts(o->b, "["));
        TRY(fj_buf_append(o->b, o->colv[i].data ? o->colv[i].data : "", o->colv[i].len));
        TRY(fj_buf_puts(o->b, "]"));
    }
    TRY(fj_buf_puts(o->b, "}"));
    return FJ_OK;
}

static fj_time floor_to(fj_time t, fj_time step)
{
    fj_time q = t / step;
    return (q - (t % step < 0)) * step;
}

/* Closes the JSON of the current table. */
static fj_status close_table(fj_out *o)
{
    if (!o->t || o->csv)
        return FJ_OK;
    if (o->single && o->n_tables == 1) {
        if (o->rows == 0)
            TRY(fj_buf_puts(o->b, "null"));
        return FJ_OK;
    }
    if (o->columns && o->groups)
        TRY(flush_columns(o));
    else if (o->t->n_key && o->groups)
        TRY(fj_buf_puts(o->b, "]}"));
    TRY(fj_buf_puts(o->b, "]"));
    return FJ_OK;
}

static fj_status sink_table(fj_sink *k, const fj_qtable *t)
{
    fj_out *o = (fj_out *)k;
    if (o->st != FJ_OK)
        return o->st;
    TRY(close_table(o));
    o->t = t;
    o->n_tables++;
    o->rows = o->groups = 0;
    for (size_t i = 0; i < t->n_cols && i < FJ_OUT_MAX_COLS; i++) {
        /* the key and the bucket's time always come: a value without them says nothing */
        bool want = !o->fields || i < t->n_key || strcmp(t->cols[i].name, "time") == 0;
        for (size_t f = 0; !want && f < o->n_fields; f++)
            want = strcmp(o->fields[f], t->cols[i].name) == 0;
        o->pick[i] = want;
    }
    o->columns = !o->csv && o->grid && o->grid->bucket_s > 0 && t->n_key && t->n_key < t->n_cols &&
                 t->n_cols <= FJ_OUT_MAX_COLS && t->cols[t->n_key].type == FJ_VT_TIME;
    if (o->columns) {
        o->grid_step = o->grid->bucket_s;
        o->grid_from = floor_to(o->grid->from, o->grid_step);
        o->grid_n = (size_t)((floor_to(o->grid->to, o->grid_step) - o->grid_from) / o->grid_step + 1);
        if (!o->colv) {
            if (!(o->colv = fj_calloc(FJ_OUT_MAX_COLS, sizeof *o->colv)))
                return o->st = FJ_ENOMEM;
            for (size_t i = 0; i < FJ_OUT_MAX_COLS; i++) {
                fj_buf_init(&o->colv[i], o->b->cap);
                fj_buf_set_budget(&o->colv[i], o->b->budget);
            }
        }
    }
    fj_buf_reset(&o->key);
    fj_buf_reset(&o->keys);
    for (size_t i = 0; i < t->n_cols && i < FJ_OUT_MAX_COLS; i++) {
        o->key_off[i] = o->keys.len;
        TRY(fj_buf_puts(&o->keys, ",\""));
        TRY(fj_buf_puts(&o->keys, t->cols[i].name));
        TRY(fj_buf_puts(&o->keys, "\":"));
        o->key_len[i] = o->keys.len - o->key_off[i];
    }
    if (o->csv) {
        if (o->n_tables > 1)
            TRY(fj_buf_puts(o->b, "\r\n"));
        bool first = true;
        for (size_t i = 0; i < t->n_cols; i++) {
            if (i < FJ_OUT_MAX_COLS && !o->pick[i])
                continue;
            if (!first)
                TRY(fj_buf_puts(o->b, ","));
            first = false;
            TRY(fj_csv_cell(o->b, t->cols[i].name));
        }
        TRY(fj_buf_puts(o->b, "\r\n"));
        return FJ_OK;
    }
    TRY(member(o, o->single && o->n_tables == 1 ? o->single : t->name));
    if (!(o->single && o->n_tables == 1))
        TRY(fj_buf_puts(o->b, "["));
    return FJ_OK;
}

/* "{" and the members from..to of a row (no closing brace). Keys are written as ,"name": from
 * the table's key text, made once per table. */
static fj_status json_object(fj_out *o, const fj_value *v, size_t from, size_t to)
{
    TRY(fj_buf_append(o->b, "{", 1));
    bool first = true;
    for (size_t i = from; i < to; i++) {
        if (i < FJ_OUT_MAX_COLS && !o->pick[i])
            continue;
        size_t skip = first; /* no comma before the first */
        first = false;
        if (i < FJ_OUT_MAX_COLS && o->keys.data)
            TRY(fj_buf_append(o->b, o->keys.data + o->key_off[i] + skip, o->key_len[i] - skip));
        else {
            TRY(fj_buf_puts(o->b, skip ? "\"" : ",\""));
            TRY(fj_buf_puts(o->b, o->t->cols[i].name));
            TRY(fj_buf_puts(o->b, "\":"));
        }
        TRY(fj_out_value_json(o->b, &v[i]));
    }
    return FJ_OK;
}

static fj_status sink_row(fj_sink *k, const fj_value *v)
{
    fj_out *o = (fj_out *)k;
    if (o->st != FJ_OK)
        return o->st;
    if (!o->t)
        return o->st = FJ_EINTERNAL;
    /* A stopped read (query-timeout, client gone, drain) ends here: the store stops at the sink's
     * error, and the HTTP layer answers the reason (server/http.h, fj_http_read_limit). */
    if (fj_cancel_check(fj_cancel_current()))
        return o->st = FJ_EBUSY;
    const fj_qtable *t = o->t;
    if (o->csv) {
        bool first = true;
        for (size_t i = 0; i < t->n_cols; i++) {
            if (i < FJ_OUT_MAX_COLS && !o->pick[i])
                continue;
            if (!first)
                TRY(fj_buf_puts(o->b, ","));
            first = false;
            if (v[i].t == FJ_VT_TEXT || v[i].t == FJ_VT_JSON) { /* as it is: no copy of a 30 MB command */
                TRY(fj_csv_text(o->b, v[i].s ? v[i].s : ""));
                continue;
            }
            fj_buf_reset(&o->tmp);
            TRY(fj_out_value_text(&o->tmp, &v[i]));
            /* a list is users' text joined (hosts, commands); numbers, times and booleans are ours */
            if (v[i].t == FJ_VT_LIST)
                TRY(fj_csv_text(o->b, o->tmp.data ? o->tmp.data : ""));
            else
                TRY(fj_csv_cell(o->b, o->tmp.data ? o->tmp.data : ""));
        }
        TRY(fj_buf_puts(o->b, "\r\n"));
        o->rows++;
        return FJ_OK;
    }
    if (o->single && o->n_tables == 1) {
        if (o->rows++)
            return o->st = FJ_EINTERNAL; /* one object only */
        TRY(json_object(o, v, 0, t->n_cols));
        TRY(fj_buf_puts(o->b, "}"));
        return FJ_OK;
    }
    if (t->n_key) {
        fj_buf_reset(&o->tmp);
        for (size_t i = 0; i < t->n_key; i++) {
            TRY(fj_out_value_json(&o->tmp, &v[i]));
            TRY(fj_buf_puts(&o->tmp, "\x1f"));
        }
        bool same = o->groups && o->key.len == o->tmp.len && memcmp(o->key.data, o->tmp.data, o->tmp.len) == 0;
        if (o->columns) {
            if (!same) {
                if (o->groups) {
                    TRY(flush_columns(o));
                    TRY(fj_buf_puts(o->b, ","));
                }
                TRY(json_object(o, v, 0, t->n_key));
                fj_buf_reset(&o->key);
                TRY(fj_buf_append(&o->key, o->tmp.data, o->tmp.len));
                for (size_t i = 0; i < t->n_cols; i++)
                    fj_buf_reset(&o->colv[i]);
                o->slot = 0;
                o->groups++;
            }
            fj_time at = v[t->n_key].i;
            if (v[t->n_key].t != FJ_VT_TIME || at < o->grid_from)
                return o->st = FJ_EINTERNAL;
            size_t slot = (size_t)((at - o->grid_from) / o->grid_step);
            if (slot >= o->grid_n || slot < o->slot)
                return o->st = FJ_EINTERNAL; /* off the grid, or not in time order */
            TRY(pad_columns(o, slot));
            for (size_t i = t->n_key + 1; i < t->n_cols; i++) {
                if (!o->pick[i])
                    continue;
                if (o->slot)
                    TRY(fj_buf_puts(&o->colv[i], ","));
                TRY(fj_out_value_json(&o->colv[i], &v[i]));
            }
            o->slot++;
            return FJ_OK;
        }
        if (!same) {
            if (o->groups)
                TRY(fj_buf_puts(o->b, "]},"));
            TRY(json_object(o, v, 0, t->n_key));
            TRY(fj_buf_puts(o->b, ",\"points\":["));
            fj_buf_reset(&o->key);
            TRY(fj_buf_append(&o->key, o->tmp.data, o->tmp.len));
            o->groups++;
            o->rows = 0;
        }
        if (o->rows++)
            TRY(fj_buf_puts(o->b, ","));
        TRY(json_object(o, v, t->n_key, t->n_cols));
        TRY(fj_buf_puts(o->b, "}"));
        return FJ_OK;
    }
    if (o->rows++)
        TRY(fj_buf_puts(o->b, ","));
    TRY(json_object(o, v, 0, t->n_cols));
    TRY(fj_buf_puts(o->b, "}"));
    return FJ_OK;
}

void fj_out_init(fj_out *o, fj_buf *b, bool csv)
{
    memset(o, 0, sizeof *o);
    o->sink.table = sink_table;
    o->sink.row = sink_row;
    o->b = b;
    o->csv = csv;
    /* A cell (a command, a list of hosts) and so a group's key may be as large as the answer. */
    fj_buf_init(&o->key, b->cap);
    fj_buf_init(&o->keys, (size_t)1 << 20);
    fj_buf_init(&o->tmp, b->cap);
    /* The answer's scratch counts where the answer does (a read's query-memory). */
    fj_buf_set_budget(&o->key, b->budget);
    fj_buf_set_budget(&o->keys, b->budget);
    fj_buf_set_budget(&o->tmp, b->budget);
}

void fj_out_fields(fj_out *o, const char *const *fields, size_t n)
{
    o->fields = fields;
    o->n_fields = n;
}

void fj_out_columns(fj_out *o, const fj_query *q)
{
    o->grid = q;
}

void fj_out_free(fj_out *o)
{
    if (o->colv) {
        for (size_t i = 0; i < FJ_OUT_MAX_COLS; i++)
            fj_buf_free(&o->colv[i]);
        fj_free(o->colv);
    }
    fj_buf_free(&o->key);
    fj_buf_free(&o->keys);
    fj_buf_free(&o->tmp);
}

/* Meta members may come after the tables (JSON members are unordered): close the open one. */
static fj_status end_tables(fj_out *o)
{
    if (o->st != FJ_OK)
        return o->st;
    TRY(close_table(o));
    o->t = NULL;
    return FJ_OK;
}

fj_status fj_out_meta_str(fj_out *o, const char *name, const char *value)
{
    if (o->csv)
        return FJ_OK;
    TRY(end_tables(o));
    TRY(member(o, name));
    TRY(value ? put_str(o->b, value) : fj_buf_puts(o->b, "null"));
    return FJ_OK;
}

fj_status fj_out_meta_int(fj_out *o, const char *name, int64_t value)
{
    if (o->csv)
        return FJ_OK;
    TRY(end_tables(o));
    TRY(member(o, name));
    TRY(put_i64(o->b, value));
    return FJ_OK;
}

fj_status fj_out_meta_time(fj_out *o, const char *name, fj_time value)
{
    char tb[21];
    fj_time_format(value, tb);
    return fj_out_meta_str(o, name, tb);
}

fj_status fj_out_finish(fj_out *o, bool paged, const char *next)
{
    TRY(end_tables(o));
    if (o->csv)
        return FJ_OK;
    if (paged) {
        TRY(member(o, "next"));
        TRY(next ? put_str(o->b, next) : fj_buf_puts(o->b, "null"));
    }
    TRY(open_doc(o));
    TRY(fj_buf_puts(o->b, "}\n"));
    return FJ_OK;
}
