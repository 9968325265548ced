/* chimbuko.c — Chimbuko decoder: one walk over the parsed JSON, as in sonar.c. Each object type is
 * a table of fields (name, type, flags, offset into the record); members are matched against it
 * once, nested objects and arrays go through small custom functions. The JSON path, and the errors
 * and notes that name it, are json_path.h's. Subtrees that storage keeps whole (call stacks,
 * windows, models, RunStats) are written out again as compact canonical JSON. */
#include "ingest/chimbuko.h"

#include "buf.h"
#include "json.h"
#include "ingest/json_path.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A decode: the walk (json_path.h: path, error, notes) and the envelope it fills. */
typedef struct dec {
    fj_jpath jp; /* its arena is the batch's: everything kept */
    fj_envelope *env;
    fj_chimbuko *cb;
    fj_buf jb; /* scratch for canonical JSON */
    size_t cap_events, cap_meta, cap_profiles, cap_counters;
} dec;

static const char *const collection_names[FJ_CB__COUNT] = {"packet",     "anomalies",     "normalexecs",
                                                           "metadata",   "func_stats",    "counter_stats"};

const char *fj_cb_collection_name(fj_cb_collection c)
{
    return (unsigned)c < FJ_CB__COUNT ? collection_names[c] : "unknown";
}

int fj_cb_collection_parse(const char *name)
{
    for (int c = FJ_CB_ANOMALIES; c < FJ_CB__COUNT; c++)
        if (strcmp(name, collection_names[c]) == 0)
            return c;
    return -1;
}

bool fj_cb_run_valid(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        unsigned char c = (unsigned char)s[n];
        if (n >= 128 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                          c == '_' || c == '-' || c == ':'))
            return false;
    }
    return n > 0;
}

/* --- notes of this decoder ----------------------------------------------------------------- */

static fj_status unknown_field(dec *d, const fj_json *v)
{
    d->env->unknown_fields++;
    return fj_jpath_note(&d->jp, "unknown_field", "not in Chimbuko's schema, ignored (%s)",
                         fj_json_type_name(v->type));
}

/* --- canonical JSON ------------------------------------------------------------------------ */

/* The shortest of %.15g..%.17g that reads back as d; null for NAN. */
static fj_status put_double(fj_buf *b, double d)
{
    if (!isfinite(d))
        return fj_buf_puts(b, "null");
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    return fj_buf_puts(b, tmp);
}

/* A JSON string of s[0..n) (NUL bytes escaped). */
static fj_status put_string(fj_buf *b, const char *s, size_t n)
{
    fj_status st = fj_buf_puts(b, "\"");
    size_t run = 0;
    for (size_t i = 0; st == FJ_OK && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (i > run)
            st = fj_buf_append(b, s + run, i - run);
        if (st == FJ_OK) {
            if (c == '"' || c == '\\')
                st = fj_buf_printf(b, "\\%c", c);
            else if (c == '\n')
                st = fj_buf_puts(b, "\\n");
            else if (c == '\t')
                st = fj_buf_puts(b, "\\t");
            else if (c == '\r')
                st = fj_buf_puts(b, "\\r");
            else
                st = fj_buf_printf(b, "\\u%04x", c);
        }
        run = i + 1;
    }
    if (st == FJ_OK && n > run)
        st = fj_buf_append(b, s + run, n - run);
    return st == FJ_OK ? fj_buf_puts(b, "\"") : st;
}

static fj_status put_json(fj_buf *b, const fj_json *v)
{
    fj_status st = FJ_OK;
    switch (v->type) {
    case FJ_JSON_NULL: return fj_buf_puts(b, "null");
    case FJ_JSON_FALSE: return fj_buf_puts(b, "false");
    case FJ_JSON_TRUE: return fj_buf_puts(b, "true");
    case FJ_JSON_INT: return fj_buf_printf(b, "%lld", (long long)v->v.i);
    case FJ_JSON_UINT: return fj_buf_printf(b, "%llu", (unsigned long long)v->v.u);
    case FJ_JSON_REAL: return put_double(b, v->v.d);
    case FJ_JSON_STRING: return put_string(b, v->v.s, v->len);
    case FJ_JSON_ARRAY:
        st = fj_buf_puts(b, "[");
        for (size_t i = 0; st == FJ_OK && i < v->len; i++) {
            if (i)
                st = fj_buf_puts(b, ",");
            if (st == FJ_OK)
                st = put_json(b, &v->v.items[i]);
        }
        return st == FJ_OK ? fj_buf_puts(b, "]") : st;
    case FJ_JSON_OBJECT:
        st = fj_buf_puts(b, "{");
        for (size_t i = 0; st == FJ_OK && i < v->len; i++) {
            const fj_json_member *m = &v->v.members[i];
            if (i)
                st = fj_buf_puts(b, ",");
            if (st == FJ_OK)
                st = put_string(b, m->key, m->key_len);
            if (st == FJ_OK)
                st = fj_buf_puts(b, ":");
            if (st == FJ_OK)
                st = put_json(b, &m->value);
        }
        return st == FJ_OK ? fj_buf_puts(b, "}") : st;
    }
    return FJ_EINTERNAL;
}

/* d->jb's content as an arena string; the buffer is emptied. */
static fj_status take_json(dec *d, fj_status st, const char **out)
{
    if (st == FJ_OK) {
        char *s = fj_arena_strndup(d->jp.a, d->jb.data ? d->jb.data : "", d->jb.len);
        if (!s)
            st = FJ_ENOMEM;
        *out = s;
    }
    fj_buf_reset(&d->jb);
    return st == FJ_OK ? FJ_OK : fj_jpath_oom(&d->jp);
}

/* The subtree v as sent (already validated), canonical. */
static fj_status keep_json(dec *d, const fj_json *v, const char **out)
{
    fj_buf_reset(&d->jb);
    return take_json(d, put_json(&d->jb, v), out);
}

/* --- event labels -------------------------------------------------------------------------- */

/* "rank:io_step:idx" (each a decimal number); root also accepts "root". */
static bool parse_label(const char *s, bool root, uint64_t out[3])
{
    if (root && strcmp(s, "root") == 0) {
        out[0] = out[1] = out[2] = 0;
        return true;
    }
    for (int k = 0; k < 3; k++) {
        int nd = 0;
        uint64_t x = 0;
        while (*s >= '0' && *s <= '9') {
            if (++nd > 19)
                return false;
            x = x * 10 + (uint64_t)(*s++ - '0');
        }
        if (nd == 0 || *s != (k < 2 ? ':' : '\0'))
            return false;
        if (k < 2)
            s++;
        out[k] = x;
    }
    return true;
}

/* --- table-driven objects ------------------------------------------------------------------ */

typedef enum ftype {
    T_U64,    /* unsigned integer */
    T_I64,    /* signed 64-bit integer (timestamps) */
    T_F64,    /* finite number */
    T_BOOL,
    T_STR,    /* string, "" kept */
    T_NESTR,  /* nonempty string */
    T_LABEL,  /* event label rank:io_step:idx, validated only */
    T_PLABEL, /* event label or "root", validated only */
    T_SKIP,   /* store-internal counter (__id, _id): an unsigned integer, dropped */
    T_CUSTOM  /* handled by the object's custom function, by id */
} ftype;

enum { F_REQ = 1 };

typedef struct field {
    const char *name;
    unsigned char len, type, flags, id;
    size_t off;
} field;

#define FLD(n, t, fl, o) {n, sizeof n - 1, t, fl, 0, o}
#define CUS(n, fl, i) {n, sizeof n - 1, T_CUSTOM, fl, i, 0}
#define NFIELDS(t) (sizeof t / sizeof t[0])

typedef fj_status (*custom_fn)(dec *d, int id, const fj_json *v, void *base);

static fj_status decode_scalar(dec *d, const field *f, const fj_json *v, void *base)
{
    char *p = (char *)base + f->off;
    uint64_t lab[3];
    fj_status st;
    switch ((ftype)f->type) {
    case T_U64: return fj_jpath_get_u64(&d->jp, v, (uint64_t *)p);
    case T_SKIP: return fj_jpath_check_uint(&d->jp, v);
    case T_I64: return fj_jpath_get_i64(&d->jp, v, (int64_t *)p);
    case T_F64: return fj_jpath_get_f64(&d->jp, v, (double *)p);
    case T_BOOL:
        if (v->type != FJ_JSON_TRUE && v->type != FJ_JSON_FALSE)
            return fj_jpath_type_error(&d->jp, "boolean", v);
        *(bool *)p = v->type == FJ_JSON_TRUE;
        return FJ_OK;
    case T_STR:
    case T_NESTR:
        if ((st = fj_jpath_check_str(&d->jp, v)))
            return st;
        if (f->type == T_NESTR && v->len == 0)
            return fj_jpath_fail(&d->jp, "must not be empty");
        if (!(*(const char **)p = fj_arena_strndup(d->jp.a, v->v.s, v->len)))
            return fj_jpath_oom(&d->jp);
        return FJ_OK;
    case T_LABEL:
    case T_PLABEL:
        if ((st = fj_jpath_check_str(&d->jp, v)))
            return st;
        if (!parse_label(v->v.s, f->type == T_PLABEL, lab))
            return fj_jpath_fail(&d->jp, "invalid event label \"%.40s\" (want rank:io_step:index%s)", v->v.s,
                                 f->type == T_PLABEL ? " or \"root\"" : "");
        return FJ_OK;
    case T_CUSTOM: break;
    }
    return fj_jpath_fail(&d->jp, "internal error: bad field type");
}

static inline size_t find_field(const field *f, size_t nf, const char *key, size_t len)
{
    for (size_t k = 0; k < nf; k++)
        if (f[k].len == len && memcmp(f[k].name, key, len) == 0)
            return k;
    return nf;
}

/* Visits every member of obj once: known fields are decoded into base (custom ones through
 * custom), unknown ones noted; null is absent. Then checks required fields. *seen (may be NULL)
 * gets a bit per field present and not null. Tables have at most 64 fields. */
static fj_status decode_object(dec *d, const fj_json *obj, const field *f, size_t nf, void *base, custom_fn custom,
                               uint64_t *seen_out)
{
    if (obj->type != FJ_JSON_OBJECT)
        return fj_jpath_type_error(&d->jp, "object", obj);
    uint64_t seen = 0;
    for (size_t m = 0; m < obj->len; m++) {
        const fj_json_member *mem = &obj->v.members[m];
        size_t k = find_field(f, nf, mem->key, mem->key_len);
        fj_status st = FJ_OK;
        fj_jpath_push_key(&d->jp, mem->key);
        if (k == nf)
            st = unknown_field(d, &mem->value);
        else if (mem->value.type != FJ_JSON_NULL) {
            seen |= (uint64_t)1 << k;
            st = f[k].type == T_CUSTOM ? custom(d, f[k].id, &mem->value, base)
                                       : decode_scalar(d, &f[k], &mem->value, base);
        }
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
    }
    for (size_t k = 0; k < nf; k++) {
        if (seen & ((uint64_t)1 << k) || !(f[k].flags & F_REQ))
            continue;
        fj_jpath_push_key(&d->jp, f[k].name);
        fj_status st = fj_jpath_fail(&d->jp, "required field is missing");
        fj_jpath_pop(&d->jp);
        return st;
    }
    if (seen_out)
        *seen_out = seen;
    return FJ_OK;
}

typedef fj_status (*elem_fn)(dec *d, const fj_json *v, void *elem);

/* An array decoded element by element into a new arena array (esz 0: validated only). */
static fj_status decode_array(dec *d, const fj_json *v, size_t esz, elem_fn fn, void **out, size_t *n)
{
    if (v->type != FJ_JSON_ARRAY)
        return fj_jpath_type_error(&d->jp, "array", v);
    char *arr = NULL;
    if (esz && v->len && !(arr = fj_arena_calloc(d->jp.a, v->len, esz)))
        return fj_jpath_oom(&d->jp);
    for (size_t i = 0; i < v->len; i++) {
        fj_jpath_push_idx(&d->jp, i);
        fj_status st = fn(d, &v->v.items[i], esz ? arr + i * esz : NULL);
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
    }
    if (out)
        *out = arr;
    if (n)
        *n = v->len;
    return FJ_OK;
}

/* --- RunStats and metrics -------------------------------------------------------------------- */

typedef struct raw_stats {
    double count, v[7];
} raw_stats;

static const char *const stats_keys[8] = {"count", "accumulate", "minimum", "maximum",
                                          "mean",  "stddev",     "skewness", "kurtosis"};

/* All eight members are required; each may be null (NAN), as the schema asks of an ingest. */
static fj_status decode_stats(dec *d, const fj_json *v, fj_cb_stats *out)
{
    if (v->type != FJ_JSON_OBJECT)
        return fj_jpath_type_error(&d->jp, "object (RunStats)", v);
    double x[8];
    bool present[8] = {false};
    for (int k = 0; k < 8; k++)
        x[k] = NAN;
    for (size_t m = 0; m < v->len; m++) {
        const fj_json_member *mem = &v->v.members[m];
        int k = 0;
        while (k < 8 && strcmp(stats_keys[k], mem->key) != 0)
            k++;
        fj_jpath_push_key(&d->jp, mem->key);
        fj_status st = FJ_OK;
        if (k == 8)
            st = unknown_field(d, &mem->value);
        else {
            present[k] = true;
            if (mem->value.type != FJ_JSON_NULL)
                st = fj_jpath_get_f64(&d->jp, &mem->value, &x[k]);
        }
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
    }
    for (int k = 0; k < 8; k++) {
        if (present[k])
            continue;
        fj_jpath_push_key(&d->jp, stats_keys[k]);
        fj_status st = fj_jpath_fail(&d->jp, "required field is missing");
        fj_jpath_pop(&d->jp);
        return st;
    }
    memset(out, 0, sizeof *out);
    if (isnan(x[0])) {
        out->count = 0;
    } else {
        /* Chimbuko's RunStats keeps the count as a double (14.0): a whole number is meant. */
        if (x[0] < 0 || x[0] != floor(x[0]) || x[0] > 9007199254740992.0) {
            fj_jpath_push_key(&d->jp, "count");
            fj_status st = fj_jpath_fail(&d->jp, "count must be a whole number of values, got %g", x[0]);
            fj_jpath_pop(&d->jp);
            return st;
        }
        out->count = (uint64_t)x[0];
    }
    /* An empty RunStats reports DBL_MAX as its minimum and DBL_MIN (sic) as its maximum. */
    if (out->count == 0 && (x[2] == DBL_MAX || x[3] == DBL_MIN || x[3] == -DBL_MAX)) {
        x[2] = x[3] = NAN;
        fj_status st = fj_jpath_note(&d->jp, "empty_stats",
                                     "minimum/maximum of an empty RunStats (DBL_MAX/DBL_MIN) read as null");
        if (st)
            return st;
    }
    out->accumulate = x[1];
    out->minimum = x[2];
    out->maximum = x[3];
    out->mean = x[4];
    out->stddev = x[5];
    out->skewness = x[6];
    out->kurtosis = x[7];
    fj_buf *b = &d->jb;
    fj_buf_reset(b);
    fj_status st = fj_buf_printf(b, "{\"count\":%llu", (unsigned long long)out->count);
    for (int k = 1; st == FJ_OK && k < 8; k++) {
        st = fj_buf_printf(b, ",\"%s\":", stats_keys[k]);
        if (st == FJ_OK)
            st = put_double(b, x[k]);
    }
    if (st == FJ_OK)
        st = fj_buf_puts(b, "}");
    return take_json(d, st, &out->json);
}

/* The canonical form of a metrics object, from its decoded parts. */
static fj_status metrics_json(dec *d, fj_cb_metrics *m)
{
    fj_buf *b = &d->jb;
    fj_buf_reset(b);
    fj_status st = fj_buf_printf(b, "{\"count\":%s,\"score\":%s,\"severity\":%s,\"first_io_step\":%llu,"
                                    "\"last_io_step\":%llu,\"min_timestamp\":%lld,\"max_timestamp\":%lld}",
                                 m->count.json, m->score.json, m->severity.json,
                                 (unsigned long long)m->first_io_step, (unsigned long long)m->last_io_step,
                                 (long long)m->min_ts_us, (long long)m->max_ts_us);
    return take_json(d, st, &m->json);
}

enum { ID_M_COUNT = 1, ID_M_SCORE, ID_M_SEVERITY };

static fj_status metrics_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_cb_metrics *m = base;
    return decode_stats(d, v, id == ID_M_COUNT ? &m->count : id == ID_M_SCORE ? &m->score : &m->severity);
}

/* pserver Metrics: the count RunStats is "count". */
static const field F_METRICS[] = {
    CUS("count", F_REQ, ID_M_COUNT),
    CUS("score", F_REQ, ID_M_SCORE),
    CUS("severity", F_REQ, ID_M_SEVERITY),
    FLD("first_io_step", T_U64, F_REQ, offsetof(fj_cb_metrics, first_io_step)),
    FLD("last_io_step", T_U64, F_REQ, offsetof(fj_cb_metrics, last_io_step)),
    FLD("min_timestamp", T_I64, F_REQ, offsetof(fj_cb_metrics, min_ts_us)),
    FLD("max_timestamp", T_I64, F_REQ, offsetof(fj_cb_metrics, max_ts_us)),
};

/* Global func_stats anomaly_metrics: the same with "anomaly_count". */
static const field F_GMETRICS[] = {
    CUS("anomaly_count", F_REQ, ID_M_COUNT),
    CUS("score", F_REQ, ID_M_SCORE),
    CUS("severity", F_REQ, ID_M_SEVERITY),
    FLD("first_io_step", T_U64, F_REQ, offsetof(fj_cb_metrics, first_io_step)),
    FLD("last_io_step", T_U64, F_REQ, offsetof(fj_cb_metrics, last_io_step)),
    FLD("min_timestamp", T_I64, F_REQ, offsetof(fj_cb_metrics, min_ts_us)),
    FLD("max_timestamp", T_I64, F_REQ, offsetof(fj_cb_metrics, max_ts_us)),
};

static fj_status decode_metrics(dec *d, const fj_json *v, bool global, fj_cb_metrics *m)
{
    fj_status st = global ? decode_object(d, v, F_GMETRICS, NFIELDS(F_GMETRICS), m, metrics_custom, NULL)
                          : decode_object(d, v, F_METRICS, NFIELDS(F_METRICS), m, metrics_custom, NULL);
    return st ? st : metrics_json(d, m);
}

/* --- provenance: pieces of an event record ------------------------------------------------ */

typedef struct scratch {
    uint64_t u[8];
    int64_t i[4];
    const char *s[4];
    bool b;
} scratch;

#define SU(k) offsetof(scratch, u) + (k) * sizeof(uint64_t)
#define SI(k) offsetof(scratch, i) + (k) * sizeof(int64_t)
#define SS(k) offsetof(scratch, s) + (k) * sizeof(const char *)

static const field F_CALLSTACK[] = {
    FLD("fid", T_U64, F_REQ, SU(0)),        FLD("func", T_STR, F_REQ, SS(0)),
    FLD("entry", T_I64, F_REQ, SI(0)),      FLD("exit", T_I64, F_REQ, SI(1)),
    FLD("event_id", T_LABEL, F_REQ, 0),     FLD("is_anomaly", T_BOOL, F_REQ, offsetof(scratch, b)),
};

static const field F_EXECWIN[] = {
    FLD("fid", T_U64, F_REQ, SU(0)),        FLD("func", T_STR, F_REQ, SS(0)),
    FLD("entry", T_I64, F_REQ, SI(0)),      FLD("exit", T_I64, F_REQ, SI(1)),
    FLD("event_id", T_LABEL, F_REQ, 0),     FLD("parent_event_id", T_PLABEL, F_REQ, 0),
    FLD("is_anomaly", T_BOOL, F_REQ, offsetof(scratch, b)),
};

enum { ID_COMM_TYPE = 1 };

static const field F_COMM[] = {
    CUS("type", F_REQ, ID_COMM_TYPE),  FLD("pid", T_U64, F_REQ, SU(0)),   FLD("rid", T_U64, F_REQ, SU(1)),
    FLD("tid", T_U64, F_REQ, SU(2)),   FLD("src", T_U64, F_REQ, SU(3)),   FLD("tar", T_U64, F_REQ, SU(4)),
    FLD("bytes", T_U64, F_REQ, SU(5)), FLD("tag", T_U64, F_REQ, SU(6)),   FLD("timestamp", T_I64, F_REQ, SI(0)),
    FLD("execdata_key", T_LABEL, F_REQ, 0),
};

static const field F_COUNTER_EVENT[] = {
    FLD("pid", T_U64, F_REQ, SU(0)),         FLD("rid", T_U64, F_REQ, SU(1)),
    FLD("tid", T_U64, F_REQ, SU(2)),         FLD("ts", T_I64, F_REQ, SI(0)),
    FLD("counter_idx", T_U64, F_REQ, SU(3)), FLD("counter_name", T_STR, F_REQ, SS(0)),
    FLD("counter_value", T_U64, F_REQ, SU(4)),
};

static const field F_NODESTATE_ITEM[] = {
    FLD("field", T_STR, F_REQ, SS(0)),
    FLD("value", T_U64, F_REQ, SU(0)),
};

static const field F_GPULOC[] = {
    FLD("thread", T_U64, F_REQ, offsetof(fj_cb_event, gpu_thread)),
    FLD("device", T_U64, F_REQ, offsetof(fj_cb_event, gpu_device)),
    FLD("context", T_U64, F_REQ, offsetof(fj_cb_event, gpu_context)),
    FLD("stream", T_U64, F_REQ, offsetof(fj_cb_event, gpu_stream)),
};

static fj_status comm_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_status st = fj_jpath_check_str(&d->jp, v);
    if (st)
        return st;
    if (strcmp(v->v.s, "SEND") != 0 && strcmp(v->v.s, "RECV") != 0)
        return fj_jpath_fail(&d->jp, "expected \"SEND\" or \"RECV\", got \"%.40s\"", v->v.s);
    return FJ_OK;
}

static fj_status callstack_elem(dec *d, const fj_json *v, void *elem)
{
    scratch s;
    return decode_object(d, v, F_CALLSTACK, NFIELDS(F_CALLSTACK), &s, NULL, NULL);
}

static fj_status execwin_elem(dec *d, const fj_json *v, void *elem)
{
    scratch s;
    return decode_object(d, v, F_EXECWIN, NFIELDS(F_EXECWIN), &s, NULL, NULL);
}

static fj_status comm_elem(dec *d, const fj_json *v, void *elem)
{
    scratch s;
    return decode_object(d, v, F_COMM, NFIELDS(F_COMM), &s, comm_custom, NULL);
}

static fj_status counter_event_elem(dec *d, const fj_json *v, void *elem)
{
    scratch s;
    return decode_object(d, v, F_COUNTER_EVENT, NFIELDS(F_COUNTER_EVENT), &s, NULL, NULL);
}

static fj_status nodestate_elem(dec *d, const fj_json *v, void *elem)
{
    scratch s;
    return decode_object(d, v, F_NODESTATE_ITEM, NFIELDS(F_NODESTATE_ITEM), &s, NULL, NULL);
}

enum { ID_W_EXEC = 1, ID_W_COMM, ID_NS_DATA, ID_GP_CALLSTACK };

typedef struct window_counts {
    size_t n_exec, n_comm;
} window_counts;

static fj_status window_custom(dec *d, int id, const fj_json *v, void *base)
{
    window_counts *w = base;
    switch (id) {
    case ID_W_EXEC: return decode_array(d, v, 0, execwin_elem, NULL, &w->n_exec);
    case ID_W_COMM: return decode_array(d, v, 0, comm_elem, NULL, &w->n_comm);
    case ID_NS_DATA: return decode_array(d, v, 0, nodestate_elem, NULL, NULL);
    case ID_GP_CALLSTACK: return decode_array(d, v, 0, callstack_elem, NULL, NULL);
    }
    return fj_jpath_fail(&d->jp, "internal error: bad custom id");
}

static const field F_WINDOW[] = {
    CUS("exec_window", F_REQ, ID_W_EXEC),
    CUS("comm_window", F_REQ, ID_W_COMM),
};

static const field F_NODESTATE[] = {
    FLD("timestamp", T_I64, F_REQ, SI(0)),
    CUS("data", F_REQ, ID_NS_DATA),
};

typedef struct gparent {
    const char *event_id;
    uint64_t tid;
} gparent;

static const field F_GPUPARENT[] = {
    FLD("event_id", T_LABEL, F_REQ, 0),
    FLD("tid", T_U64, F_REQ, offsetof(gparent, tid)),
    CUS("call_stack", F_REQ, ID_GP_CALLSTACK),
};

/* A model histogram: the code's keys, or the documented ones (noted, rewritten). */
static fj_status decode_histogram(dec *d, const fj_json *v, fj_buf *out)
{
    if (v->type != FJ_JSON_OBJECT)
        return fj_jpath_type_error(&d->jp, "object (histogram)", v);
    const fj_json *counts = fj_json_get(v, "Bin Counts");
    bool old = false;
    if (!counts && (counts = fj_json_get(v, "Histogram Bin Counts")))
        old = true;
    if (!counts)
        return fj_jpath_fail(&d->jp, "a histogram needs \"Bin Counts\" (or the documented \"Histogram Bin Counts\")");
    fj_status st;
    for (size_t m = 0; m < v->len; m++) {
        const char *k = v->v.members[m].key;
        const fj_json *x = &v->v.members[m].value;
        fj_jpath_push_key(&d->jp, k);
        st = FJ_OK;
        if (!strcmp(k, "Bin Counts") || !strcmp(k, "Histogram Bin Counts") || !strcmp(k, "Histogram Bin Edges")) {
            if (x->type != FJ_JSON_ARRAY)
                st = fj_jpath_type_error(&d->jp, "array", x);
            for (size_t i = 0; st == FJ_OK && i < x->len; i++) {
                fj_jpath_push_idx(&d->jp, i);
                double dd;
                st = strcmp(k, "Histogram Bin Edges") == 0 ? fj_jpath_get_f64(&d->jp, &x->v.items[i], &dd)
                                                           : fj_jpath_check_uint(&d->jp, &x->v.items[i]);
                fj_jpath_pop(&d->jp);
            }
        } else if (!strcmp(k, "First edge") || !strcmp(k, "Bin width") || !strcmp(k, "Min") || !strcmp(k, "Max")) {
            double dd;
            st = x->type == FJ_JSON_NULL ? FJ_OK : fj_jpath_get_f64(&d->jp, x, &dd);
        } else {
            st = unknown_field(d, x);
        }
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
    }
    if (!old) {
        static const char *const need[] = {"First edge", "Bin width", "Min", "Max"};
        for (int k = 0; k < 4; k++)
            if (!fj_json_get(v, need[k])) {
                fj_jpath_push_key(&d->jp, need[k]);
                st = fj_jpath_fail(&d->jp, "required field is missing");
                fj_jpath_pop(&d->jp);
                return st;
            }
        return put_json(out, v);
    }
    const fj_json *edges = fj_json_get(v, "Histogram Bin Edges");
    if (!edges || edges->type != FJ_JSON_ARRAY || (counts->len && edges->len != counts->len + 1)) {
        fj_jpath_push_key(&d->jp, "Histogram Bin Edges");
        st = fj_jpath_fail(&d->jp, "the documented histogram needs %zu bin edges (one more than its bin counts)",
                           counts->len + 1);
        fj_jpath_pop(&d->jp);
        return st;
    }
    if ((st = fj_jpath_note(&d->jp, "histogram_keys",
                            "documented \"Histogram Bin Counts/Edges\" keys rewritten as the code's")))
        return st;
    size_t n = counts->len;
    double e0 = 0, en = 0;
    if (n) {
        fj_jpath_get_f64(&d->jp, &edges->v.items[0], &e0);
        fj_jpath_get_f64(&d->jp, &edges->v.items[n], &en);
    }
    st = fj_buf_puts(out, "{\"Bin Counts\":");
    if (st == FJ_OK)
        st = put_json(out, counts);
    if (st == FJ_OK)
        st = fj_buf_puts(out, ",\"Bin Edges\":");
    if (st == FJ_OK)
        st = put_json(out, edges);
    if (st == FJ_OK)
        st = fj_buf_puts(out, ",\"First edge\":");
    if (st == FJ_OK)
        st = put_double(out, n ? e0 : NAN);
    if (st == FJ_OK)
        st = fj_buf_puts(out, ",\"Bin width\":");
    if (st == FJ_OK)
        st = put_double(out, n ? (en - e0) / (double)n : NAN);
    if (st == FJ_OK)
        st = fj_buf_puts(out, ",\"Min\":");
    if (st == FJ_OK)
        st = put_double(out, n ? e0 : NAN);
    if (st == FJ_OK)
        st = fj_buf_puts(out, ",\"Max\":");
    if (st == FJ_OK)
        st = put_double(out, n ? en : NAN);
    return st == FJ_OK ? fj_buf_puts(out, "}") : st;
}

/* algo_params: SSTD (a RunStats) or HBOS/COPOD ({histogram, internal_global_threshold}). */
static fj_status decode_model(dec *d, const fj_json *v, fj_cb_event *e)
{
    if (v->type != FJ_JSON_OBJECT)
        return fj_jpath_type_error(&d->jp, "object (algo_params)", v);
    const fj_json *hist = fj_json_get(v, "histogram");
    if (!hist) {
        fj_cb_stats s;
        fj_status st = decode_stats(d, v, &s);
        if (st)
            return st;
        e->algo = "sstd";
        e->algo_params = s.json;
        return FJ_OK;
    }
    fj_buf hb;
    fj_buf_init(&hb, (size_t)1 << 30);
    double thr = NAN;
    fj_status st = FJ_OK;
    for (size_t m = 0; st == FJ_OK && m < v->len; m++) {
        const char *k = v->v.members[m].key;
        const fj_json *x = &v->v.members[m].value;
        fj_jpath_push_key(&d->jp, k);
        if (!strcmp(k, "histogram"))
            st = decode_histogram(d, x, &hb);
        else if (!strcmp(k, "internal_global_threshold"))
            st = x->type == FJ_JSON_NULL ? FJ_OK : fj_jpath_get_f64(&d->jp, x, &thr);
        else
            st = unknown_field(d, x);
        fj_jpath_pop(&d->jp);
    }
    if (st == FJ_OK) {
        fj_buf_reset(&d->jb);
        st = fj_buf_puts(&d->jb, "{\"histogram\":");
        if (st == FJ_OK)
            st = fj_buf_append(&d->jb, hb.data, hb.len);
        if (st == FJ_OK)
            st = fj_buf_puts(&d->jb, ",\"internal_global_threshold\":");
        if (st == FJ_OK)
            st = put_double(&d->jb, thr);
        if (st == FJ_OK)
            st = fj_buf_puts(&d->jb, "}");
        st = take_json(d, st, &e->algo_params);
        e->algo = "histogram";
    } else if (st != FJ_EINVAL) {
        st = fj_jpath_oom(&d->jp);
    }
    fj_buf_free(&hb);
    return st;
}

/* --- provenance records ---------------------------------------------------------------------- */

enum {
    ID_EVENT_ID = 1,
    ID_CALL_STACK,
    ID_COUNTER_EVENTS,
    ID_EVENT_WINDOW,
    ID_GPU_LOCATION,
    ID_GPU_PARENT,
    ID_NODE_STATE,
    ID_ALGO_PARAMS,
    ID_FUNC_STATS,
    ID_IS_GPU
};

static const field F_EVENT[] = {
    FLD("__id", T_SKIP, 0, 0),
    FLD("version", T_I64, 0, offsetof(fj_cb_event, version)),
    FLD("pid", T_U64, F_REQ, offsetof(fj_cb_event, pid)),
    FLD("rid", T_U64, F_REQ, offsetof(fj_cb_event, rid)),
    FLD("tid", T_U64, F_REQ, offsetof(fj_cb_event, tid)),
    CUS("event_id", F_REQ, ID_EVENT_ID),
    FLD("fid", T_U64, F_REQ, offsetof(fj_cb_event, fid)),
    FLD("func", T_STR, F_REQ, offsetof(fj_cb_event, func)),
    FLD("entry", T_I64, F_REQ, offsetof(fj_cb_event, entry_us)),
    FLD("exit", T_I64, F_REQ, offsetof(fj_cb_event, exit_us)),
    FLD("runtime_total", T_I64, F_REQ, offsetof(fj_cb_event, runtime_total_us)),
    FLD("runtime_exclusive", T_I64, F_REQ, offsetof(fj_cb_event, runtime_exclusive_us)),
    FLD("io_step", T_U64, F_REQ, offsetof(fj_cb_event, io_step)),
    FLD("io_step_tstart", T_I64, F_REQ, offsetof(fj_cb_event, io_step_tstart_us)),
    FLD("io_step_tend", T_I64, F_REQ, offsetof(fj_cb_event, io_step_tend_us)),
    FLD("outlier_score", T_F64, 0, offsetof(fj_cb_event, outlier_score)),
    FLD("outlier_severity", T_F64, 0, offsetof(fj_cb_event, outlier_severity)),
    FLD("hostname", T_STR, 0, offsetof(fj_cb_event, hostname)),
    CUS("call_stack", F_REQ, ID_CALL_STACK),
    CUS("counter_events", F_REQ, ID_COUNTER_EVENTS),
    CUS("is_gpu_event", 0, ID_IS_GPU),
    CUS("gpu_location", 0, ID_GPU_LOCATION),
    CUS("gpu_parent", 0, ID_GPU_PARENT),
    CUS("event_window", F_REQ, ID_EVENT_WINDOW),
    CUS("node_state", 0, ID_NODE_STATE),
    CUS("algo_params", 0, ID_ALGO_PARAMS),
    CUS("func_stats", 0, ID_FUNC_STATS), /* legacy: the SSTD RunStats before algo_params */
};
/* Was the field called name present (and not null)? */
static bool seen_field(uint64_t seen, const field *f, size_t nf, const char *name)
{
    size_t k = find_field(f, nf, name, strlen(name));
    return k < nf && (seen >> k) & 1;
}

typedef struct event_ctx {
    fj_cb_event e;
    uint64_t label[3];
} event_ctx;

static fj_status event_custom(dec *d, int id, const fj_json *v, void *base)
{
    event_ctx *x = base;
    fj_cb_event *e = &x->e;
    fj_status st;
    switch (id) {
    case ID_EVENT_ID:
        if ((st = fj_jpath_check_str(&d->jp, v)))
            return st;
        if (!parse_label(v->v.s, false, x->label))
            return fj_jpath_fail(&d->jp, "invalid event label \"%.40s\" (want rank:io_step:index)", v->v.s);
        return FJ_OK;
    case ID_CALL_STACK:
        if ((st = decode_array(d, v, 0, callstack_elem, NULL, &e->n_call_stack)))
            return st;
        return keep_json(d, v, &e->call_stack);
    case ID_COUNTER_EVENTS:
        if ((st = decode_array(d, v, 0, counter_event_elem, NULL, &e->n_counter_events)))
            return st;
        return keep_json(d, v, &e->counter_events);
    case ID_EVENT_WINDOW: {
        window_counts w = {0};
        if ((st = decode_object(d, v, F_WINDOW, NFIELDS(F_WINDOW), &w, window_custom, NULL)))
            return st;
        e->n_exec_window = w.n_exec;
        e->n_comm_window = w.n_comm;
        return keep_json(d, v, &e->event_window);
    }
    case ID_GPU_LOCATION:
        if ((st = decode_object(d, v, F_GPULOC, NFIELDS(F_GPULOC), e, NULL, NULL)))
            return st;
        e->has_gpu_location = true;
        return FJ_OK;
    case ID_GPU_PARENT: {
        if (v->type == FJ_JSON_STRING) {
            /* The real code path when the launching CPU event cannot be resolved. */
            if ((st = fj_jpath_check_str(&d->jp, v)))
                return st;
            if (!(e->gpu_parent_error = fj_arena_strndup(d->jp.a, v->v.s, v->len)))
                return fj_jpath_oom(&d->jp);
            return fj_jpath_note(&d->jp, "gpu_parent_error", "an error string instead of a parent object: %.200s",
                                 v->v.s);
        }
        gparent g = {0};
        if ((st = decode_object(d, v, F_GPUPARENT, NFIELDS(F_GPUPARENT), &g, window_custom, NULL)))
            return st;
        const fj_json *eid = fj_json_get(v, "event_id");
        if (!(e->gpu_parent_event = fj_arena_strndup(d->jp.a, eid->v.s, eid->len)))
            return fj_jpath_oom(&d->jp);
        e->gpu_parent_tid = g.tid;
        return keep_json(d, v, &e->gpu_parent);
    }
    case ID_NODE_STATE: {
        scratch sc;
        if ((st = decode_object(d, v, F_NODESTATE, NFIELDS(F_NODESTATE), &sc, window_custom, NULL)))
            return st;
        return keep_json(d, v, &e->node_state);
    }
    case ID_ALGO_PARAMS:
        return decode_model(d, v, e);
    case ID_IS_GPU:
        if (v->type != FJ_JSON_TRUE && v->type != FJ_JSON_FALSE)
            return fj_jpath_type_error(&d->jp, "boolean", v);
        e->is_gpu_event = v->type == FJ_JSON_TRUE;
        return FJ_OK;
    case ID_FUNC_STATS: {
        fj_cb_stats s;
        if ((st = decode_stats(d, v, &s)))
            return st;
        if (!e->algo) { /* algo_params wins when a record has both */
            e->algo = "sstd";
            e->algo_params = s.json;
        }
        return FJ_OK;
    }
    }
    return fj_jpath_fail(&d->jp, "internal error: bad custom id");
}

static fj_status decode_event(dec *d, const fj_json *v, fj_cb_event *out)
{
    event_ctx x;
    memset(&x, 0, sizeof x);
    x.e.outlier_score = x.e.outlier_severity = NAN;
    x.e.is_gpu_event = -1;
    uint64_t seen = 0;
    fj_status st = decode_object(d, v, F_EVENT, NFIELDS(F_EVENT), &x.e, event_custom, &seen);
    if (st)
        return st;
    fj_cb_event *e = &x.e;
    if (x.label[0] != e->rid || x.label[1] != e->io_step) {
        fj_jpath_push_key(&d->jp, "event_id");
        st = fj_jpath_fail(&d->jp, "event label %llu:%llu:%llu does not name rank %llu and io_step %llu of the record",
                           (unsigned long long)x.label[0], (unsigned long long)x.label[1],
                           (unsigned long long)x.label[2], (unsigned long long)e->rid, (unsigned long long)e->io_step);
        fj_jpath_pop(&d->jp);
        return st;
    }
    e->idx = x.label[2];
    if (!seen_field(seen, F_EVENT, NFIELDS(F_EVENT), "version")) {
        e->version = 0;
        bool has_func_stats = seen_field(seen, F_EVENT, NFIELDS(F_EVENT), "func_stats");
        if ((st = fj_jpath_note(&d->jp, "legacy_schema", "no version: a record before schema version 2%s",
                                has_func_stats ? " (func_stats read as algo_params)" : "")))
            return st;
    } else {
        static const char *const v2[] = {"outlier_score", "outlier_severity"};
        for (int k = 0; k < 2; k++) {
            if (seen_field(seen, F_EVENT, NFIELDS(F_EVENT), v2[k]))
                continue;
            fj_jpath_push_key(&d->jp, v2[k]);
            st = fj_jpath_note(&d->jp, "missing_field", "absent, though version %lld records have it",
                               (long long)e->version);
            fj_jpath_pop(&d->jp);
            if (st)
                return st;
        }
    }
    /* Members missing altogether (null is present: a CPU event's gpu_location is null). */
    bool miss_gpu = !fj_json_get(v, "is_gpu_event"), miss_loc = !fj_json_get(v, "gpu_location"),
         miss_par = !fj_json_get(v, "gpu_parent");
    if (miss_gpu || miss_loc || miss_par) {
        if ((st = fj_jpath_note(&d->jp, "missing_gpu_fields", "absent:%s%s%s (an AD without its metadata parser)",
                                miss_gpu ? " is_gpu_event" : "", miss_loc ? " gpu_location" : "",
                                miss_par ? " gpu_parent" : "")))
            return st;
    }
    if (e->is_gpu_event < 0 && e->has_gpu_location)
        e->is_gpu_event = 1; /* a location says where it ran */
    *out = *e;
    return FJ_OK;
}

static const field F_META[] = {
    FLD("__id", T_SKIP, 0, 0),
    FLD("pid", T_U64, 0, offsetof(fj_cb_meta, pid)),
    FLD("rid", T_U64, F_REQ, offsetof(fj_cb_meta, rid)),
    FLD("tid", T_U64, F_REQ, offsetof(fj_cb_meta, tid)),
    FLD("descr", T_NESTR, F_REQ, offsetof(fj_cb_meta, descr)),
    FLD("value", T_STR, F_REQ, offsetof(fj_cb_meta, value)),
};

static fj_status decode_meta(dec *d, const fj_json *v, fj_cb_meta *out)
{
    memset(out, 0, sizeof *out);
    uint64_t seen = 0;
    fj_status st = decode_object(d, v, F_META, NFIELDS(F_META), out, NULL, &seen);
    if (st)
        return st;
    const fj_json *pid = fj_json_get(v, "pid");
    if (!pid || pid->type == FJ_JSON_NULL) {
        fj_jpath_push_key(&d->jp, "pid");
        st = fj_jpath_note(&d->jp, "missing_field", "absent (metadata before Oct 2020): program 0");
        fj_jpath_pop(&d->jp);
    }
    return st;
}

enum { ID_P_RUNTIME = 1, ID_P_ANOMALIES, ID_P_EXCL, ID_P_INCL, ID_C_STATS };

static const field F_RUNTIME[] = {
    CUS("exclusive_runtime", F_REQ, ID_P_EXCL),
    CUS("inclusive_runtime", F_REQ, ID_P_INCL),
};

static fj_status profile_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_cb_profile *p = base;
    switch (id) {
    case ID_P_RUNTIME:
        p->has_runtime = true;
        return decode_object(d, v, F_RUNTIME, NFIELDS(F_RUNTIME), p, profile_custom, NULL);
    case ID_P_EXCL: return decode_stats(d, v, &p->exclusive);
    case ID_P_INCL: return decode_stats(d, v, &p->inclusive);
    case ID_P_ANOMALIES:
        p->has_anomalies = true;
        return decode_metrics(d, v, true, &p->anomalies);
    }
    return fj_jpath_fail(&d->jp, "internal error: bad custom id");
}

static const field F_PROFILE[] = {
    FLD("__id", T_SKIP, 0, 0),
    FLD("app", T_U64, F_REQ, offsetof(fj_cb_profile, app)),
    FLD("fid", T_U64, F_REQ, offsetof(fj_cb_profile, fid)),
    FLD("fname", T_STR, F_REQ, offsetof(fj_cb_profile, fname)),
    CUS("runtime_profile", 0, ID_P_RUNTIME),
    CUS("anomaly_metrics", 0, ID_P_ANOMALIES),
};

static fj_status counter_custom(dec *d, int id, const fj_json *v, void *base)
{
    return decode_stats(d, v, &((fj_cb_counter *)base)->stats);
}

static const field F_COUNTER[] = {
    FLD("__id", T_SKIP, 0, 0),
    FLD("app", T_U64, F_REQ, offsetof(fj_cb_counter, app)),
    FLD("counter", T_STR, F_REQ, offsetof(fj_cb_counter, counter)),
    CUS("stats", F_REQ, ID_C_STATS),
};

static fj_status counter_elem(dec *d, const fj_json *v, void *elem)
{
    return decode_object(d, v, F_COUNTER, NFIELDS(F_COUNTER), elem, counter_custom, NULL);
}

/* Grows an arena array of records by one, returning the new zeroed slot. */
static void *grow(dec *d, void **arr, size_t *n, size_t *cap, size_t esz)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        char *na = fj_arena_calloc(d->jp.a, nc, esz);
        if (!na)
            return NULL;
        if (*n)
            memcpy(na, *arr, *n * esz);
        *arr = na;
        *cap = nc;
    }
    void *slot = (char *)*arr + (*n)++ * esz;
    memset(slot, 0, esz);
    return slot;
}

static fj_status decode_record(dec *d, fj_cb_collection c, const fj_json *v)
{
    fj_chimbuko *cb = d->cb;
    size_t total = cb->n_events + cb->n_meta + cb->n_profiles + cb->n_counters;
    if (total >= FJ_CHIMBUKO_MAX_RECORDS)
        return fj_jpath_fail(&d->jp, "more than %d records in one body", FJ_CHIMBUKO_MAX_RECORDS);
    switch (c) {
    case FJ_CB_ANOMALIES:
    case FJ_CB_NORMALEXECS: {
        fj_cb_event e;
        fj_status st = decode_event(d, v, &e);
        if (st)
            return st;
        fj_cb_event *slot = grow(d, (void **)&cb->events, &cb->n_events, &d->cap_events, sizeof *slot);
        if (!slot)
            return fj_jpath_oom(&d->jp);
        *slot = e;
        return FJ_OK;
    }
    case FJ_CB_METADATA: {
        fj_cb_meta m;
        fj_status st = decode_meta(d, v, &m);
        if (st)
            return st;
        fj_cb_meta *slot = grow(d, (void **)&cb->meta, &cb->n_meta, &d->cap_meta, sizeof *slot);
        if (!slot)
            return fj_jpath_oom(&d->jp);
        *slot = m;
        return FJ_OK;
    }
    case FJ_CB_FUNC_STATS: {
        fj_cb_profile p;
        memset(&p, 0, sizeof p);
        fj_status st = decode_object(d, v, F_PROFILE, NFIELDS(F_PROFILE), &p, profile_custom, NULL);
        if (st)
            return st;
        fj_cb_profile *slot = grow(d, (void **)&cb->profiles, &cb->n_profiles, &d->cap_profiles, sizeof *slot);
        if (!slot)
            return fj_jpath_oom(&d->jp);
        *slot = p;
        return FJ_OK;
    }
    case FJ_CB_COUNTER_STATS: {
        fj_cb_counter k;
        memset(&k, 0, sizeof k);
        fj_status st = counter_elem(d, v, &k);
        if (st)
            return st;
        fj_cb_counter *slot = grow(d, (void **)&cb->counters, &cb->n_counters, &d->cap_counters, sizeof *slot);
        if (!slot)
            return fj_jpath_oom(&d->jp);
        *slot = k;
        return FJ_OK;
    }
    default: break;
    }
    return fj_err_set(d->jp.err, FJ_EINTERNAL, "", "bad collection %d", (int)c);
}

/* --- pserver packets ----------------------------------------------------------------------- */

enum { ID_S_STATS = 1, ID_S_DATA, ID_S_KEY, ID_S_SCORES, ID_F_STATS, ID_F_INCL, ID_F_EXCL, ID_AM_NEW, ID_AM_ALL,
       ID_PK_STATS, ID_PK_METRICS, ID_PK_COUNTERS, ID_AS_ANOMALY, ID_AS_FUNC };

static fj_status step_custom(dec *d, int id, const fj_json *v, void *base)
{
    return decode_stats(d, v, &((fj_cb_step *)base)->scores);
}

static const field F_STEP[] = {
    FLD("app", T_U64, F_REQ, offsetof(fj_cb_step, app)),
    FLD("rank", T_U64, F_REQ, offsetof(fj_cb_step, rank)),
    FLD("step", T_U64, F_REQ, offsetof(fj_cb_step, step)),
    FLD("min_timestamp", T_I64, F_REQ, offsetof(fj_cb_step, min_ts_us)),
    FLD("max_timestamp", T_I64, F_REQ, offsetof(fj_cb_step, max_ts_us)),
    FLD("n_anomalies", T_U64, F_REQ, offsetof(fj_cb_step, n_anomalies)),
    CUS("outlier_scores", 0, ID_S_SCORES), /* since 2021-05 */
};

static fj_status step_elem(dec *d, const fj_json *v, void *elem)
{
    return decode_object(d, v, F_STEP, NFIELDS(F_STEP), elem, step_custom, NULL);
}

static fj_status rank_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_cb_rank *r = base;
    fj_status st;
    switch (id) {
    case ID_S_STATS: return decode_stats(d, v, &r->stats);
    case ID_S_DATA: {
        void *arr;
        st = decode_array(d, v, sizeof(fj_cb_step), step_elem, &arr, &r->n_steps);
        r->steps = arr;
        return st;
    }
    case ID_S_KEY: {
        if ((st = fj_jpath_check_str(&d->jp, v)))
            return st;
        /* "app:rank" */
        const char *s = v->v.s;
        char *end;
        if (!(*s >= '0' && *s <= '9'))
            return fj_jpath_fail(&d->jp, "invalid key \"%.40s\" (want app:rank)", s);
        unsigned long long a = strtoull(s, &end, 10);
        if (*end != ':' || !(end[1] >= '0' && end[1] <= '9'))
            return fj_jpath_fail(&d->jp, "invalid key \"%.40s\" (want app:rank)", s);
        unsigned long long rk = strtoull(end + 1, &end, 10);
        if (*end)
            return fj_jpath_fail(&d->jp, "invalid key \"%.40s\" (want app:rank)", s);
        r->app = a;
        r->rank = rk;
        return FJ_OK;
    }
    }
    return fj_jpath_fail(&d->jp, "internal error: bad custom id");
}

static const field F_RANK[] = {
    CUS("key", F_REQ, ID_S_KEY),
    CUS("stats", F_REQ, ID_S_STATS),
    CUS("data", F_REQ, ID_S_DATA),
};

static fj_status rank_elem(dec *d, const fj_json *v, void *elem)
{
    fj_cb_rank *r = elem;
    fj_status st = decode_object(d, v, F_RANK, NFIELDS(F_RANK), r, rank_custom, NULL);
    if (st)
        return st;
    for (size_t i = 0; i < r->n_steps; i++) {
        if (r->steps[i].app == r->app && r->steps[i].rank == r->rank)
            continue;
        fj_jpath_push_key(&d->jp, "data");
        fj_jpath_push_idx(&d->jp, i);
        st = fj_jpath_fail(&d->jp, "step of app %llu rank %llu under key %llu:%llu",
                           (unsigned long long)r->steps[i].app, (unsigned long long)r->steps[i].rank,
                           (unsigned long long)r->app, (unsigned long long)r->rank);
        fj_jpath_pop(&d->jp);
        fj_jpath_pop(&d->jp);
        return st;
    }
    return FJ_OK;
}

static fj_status func_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_cb_func *f = base;
    return decode_stats(d, v, id == ID_F_STATS ? &f->anomalies : id == ID_F_INCL ? &f->inclusive : &f->exclusive);
}

static const field F_FUNC[] = {
    FLD("app", T_U64, F_REQ, offsetof(fj_cb_func, app)),
    FLD("fid", T_U64, F_REQ, offsetof(fj_cb_func, fid)),
    FLD("name", T_STR, F_REQ, offsetof(fj_cb_func, name)),
    CUS("stats", F_REQ, ID_F_STATS),
    CUS("inclusive", F_REQ, ID_F_INCL),
    CUS("exclusive", F_REQ, ID_F_EXCL),
};

static fj_status func_elem(dec *d, const fj_json *v, void *elem)
{
    return decode_object(d, v, F_FUNC, NFIELDS(F_FUNC), elem, func_custom, NULL);
}

static fj_status am_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_cb_func_metrics *m = base;
    return decode_metrics(d, v, false, id == ID_AM_NEW ? &m->new_data : &m->all_data);
}

static const field F_AMETRICS[] = {
    FLD("_id", T_SKIP, 0, 0),
    FLD("app", T_U64, F_REQ, offsetof(fj_cb_func_metrics, app)),
    FLD("rank", T_U64, F_REQ, offsetof(fj_cb_func_metrics, rank)),
    FLD("fid", T_U64, F_REQ, offsetof(fj_cb_func_metrics, fid)),
    FLD("fname", T_STR, F_REQ, offsetof(fj_cb_func_metrics, fname)),
    CUS("new_data", F_REQ, ID_AM_NEW),
    CUS("all_data", F_REQ, ID_AM_ALL),
};

static fj_status am_elem(dec *d, const fj_json *v, void *elem)
{
    return decode_object(d, v, F_AMETRICS, NFIELDS(F_AMETRICS), elem, am_custom, NULL);
}

static fj_status packet_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_cb_packet *p = base;
    void *arr = NULL;
    fj_status st;
    switch (id) {
    case ID_PK_STATS: {
        static const field F_ASTATS[] = {
            FLD("created_at", T_I64, 0, offsetof(fj_cb_packet, stats_created_at_ms)),
            CUS("anomaly", 0, ID_AS_ANOMALY),
            CUS("func", 0, ID_AS_FUNC),
        };
        return decode_object(d, v, F_ASTATS, NFIELDS(F_ASTATS), p, packet_custom, NULL);
    }
    case ID_AS_ANOMALY:
        st = decode_array(d, v, sizeof(fj_cb_rank), rank_elem, &arr, &p->n_ranks);
        p->ranks = arr;
        return st;
    case ID_AS_FUNC:
        st = decode_array(d, v, sizeof(fj_cb_func), func_elem, &arr, &p->n_funcs);
        p->funcs = arr;
        return st;
    case ID_PK_METRICS:
        st = decode_array(d, v, sizeof(fj_cb_func_metrics), am_elem, &arr, &p->n_metrics);
        p->metrics = arr;
        return st;
    case ID_PK_COUNTERS:
        st = decode_array(d, v, sizeof(fj_cb_counter), counter_elem, &arr, &p->n_counters);
        p->counters = arr;
        return st;
    }
    return fj_jpath_fail(&d->jp, "internal error: bad custom id");
}

static const field F_PACKET[] = {
    FLD("version", T_I64, 0, offsetof(fj_cb_packet, version)),
    FLD("created_at", T_I64, F_REQ, offsetof(fj_cb_packet, created_at_ms)),
    CUS("anomaly_stats", 0, ID_PK_STATS),
    CUS("anomaly_metrics", 0, ID_PK_METRICS),
    CUS("counter_stats", 0, ID_PK_COUNTERS),
};

/* --- bodies -------------------------------------------------------------------------------- */

/* Turns the parser's "line L, column C" (relative to body + pos) into one relative to body. */
static void absolute_position(const char *body, size_t pos, fj_err *e)
{
    unsigned long l, c;
    if (sscanf(e->path, "line %lu, column %lu", &l, &c) != 2)
        return;
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < pos; i++)
        if (body[i] == '\n') {
            line++;
            line_start = i + 1;
        }
    size_t abs_line = line + l - 1, abs_col = l == 1 ? pos - line_start + c : c;
    snprintf(e->path, sizeof e->path, "line %zu, column %zu", abs_line, abs_col);
}

static size_t skip_ws(const char *body, size_t len, size_t pos)
{
    while (pos < len && (body[pos] == ' ' || body[pos] == '\t' || body[pos] == '\r' || body[pos] == '\n'))
        pos++;
    return pos;
}

/* Starts the envelope; finish_env commits or rolls it back. */
static fj_status start_env(dec *d, fj_batch *b, fj_err *err, fj_cb_collection c)
{
    memset(d, 0, sizeof *d);
    d->jp.a = b->arena;
    d->jp.err = err;
    d->jp.max_notes = FJ_CHIMBUKO_MAX_NOTES;
    fj_buf_init(&d->jb, (size_t)1 << 30);
    if (!(d->env = fj_batch_add(b)))
        return fj_err_set(err, FJ_ENOMEM, "", "out of memory");
    d->env->kind = FJ_KIND_CHIMBUKO;
    d->env->producer = "chimbuko";
    d->cb = &d->env->u.chimbuko;
    d->cb->collection = c;
    d->cb->run = "default";
    return FJ_OK;
}

static fj_status finish_env(dec *d, fj_batch *b, size_t before, fj_status st)
{
    st = fj_jpath_end_notes(&d->jp, st);
    fj_buf_free(&d->jb);
    if (st != FJ_OK) {
        if (b->n_envs > before) {
            memset(&b->envs[before], 0, sizeof b->envs[before]);
            b->n_envs = before;
        }
        return st;
    }
    d->env->notes = d->jp.notes;
    d->env->n_notes = d->jp.n_notes;
    return FJ_OK;
}

fj_status fj_chimbuko_decode_packet(const char *body, size_t len, fj_batch *b, fj_err *err)
{
    size_t before = b->n_envs;
    dec d;
    fj_status st = start_env(&d, b, err, FJ_CB_PACKET);
    if (st)
        return finish_env(&d, b, before, st);
    fj_arena *ja = fj_arena_create(); /* the tree lives only while the packet is decoded */
    if (!ja)
        return finish_env(&d, b, before, fj_err_set(err, FJ_ENOMEM, "", "out of memory"));
    fj_json *root = NULL;
    size_t pos = skip_ws(body, len, 0), used = 0;
    if (pos >= len) {
        st = fj_err_set(err, FJ_EINVAL, "", "empty body: no packet");
        goto out;
    }
    if ((st = fj_json_parse(ja, body + pos, len - pos, &used, &root, err)) != FJ_OK) {
        absolute_position(body, pos, err);
        goto out;
    }
    if (skip_ws(body, len, pos + used) < len) {
        st = fj_err_set(err, FJ_EINVAL, "", "one packet per request: more JSON after the first object");
        goto out;
    }
    fj_cb_packet *p = &d.cb->packet;
    uint64_t seen = 0;
    if ((st = decode_object(&d, root, F_PACKET, NFIELDS(F_PACKET), p, packet_custom, &seen)) != FJ_OK)
        goto out;
    if (p->created_at_ms <= 0) {
        fj_jpath_push_key(&d.jp, "created_at");
        st = fj_jpath_fail(&d.jp, "must be a time in milliseconds since 1970, got %lld", (long long)p->created_at_ms);
        fj_jpath_pop(&d.jp);
        goto out;
    }
    if (!(seen & 1)) {
        p->version = 0;
        if ((st = fj_jpath_note(&d.jp, "legacy_schema", "no version: a packet before Chimbuko's version 2")) != FJ_OK)
            goto out;
    }
    d.env->time = p->created_at_ms / 1000;
out:
    fj_arena_destroy(ja);
    return finish_env(&d, b, before, st);
}

fj_status fj_chimbuko_decode_records(const char *body, size_t len, fj_cb_collection c, fj_batch *b, fj_err *err)
{
    if (c <= FJ_CB_PACKET || c >= FJ_CB__COUNT)
        return fj_err_set(err, FJ_EINTERNAL, "", "fj_chimbuko_decode_records: bad collection %d", (int)c);
    size_t before = b->n_envs;
    dec d;
    fj_status st = start_env(&d, b, err, c);
    if (st)
        return finish_env(&d, b, before, st);
    size_t pos = skip_ws(body, len, 0), index = 0;
    while (st == FJ_OK && pos < len) {
        fj_arena *ja = fj_arena_create();
        if (!ja) {
            st = fj_err_set(err, FJ_ENOMEM, "", "out of memory");
            break;
        }
        fj_json *root = NULL;
        size_t used = 0;
        if ((st = fj_json_parse(ja, body + pos, len - pos, &used, &root, err)) != FJ_OK) {
            absolute_position(body, pos, err);
        } else if (root->type == FJ_JSON_ARRAY) {
            for (size_t i = 0; st == FJ_OK && i < root->len; i++) {
                fj_jpath_push_idx(&d.jp, index++);
                st = decode_record(&d, c, &root->v.items[i]);
                fj_jpath_pop(&d.jp);
            }
        } else if (root->type == FJ_JSON_OBJECT) {
            fj_jpath_push_idx(&d.jp, index++);
            st = decode_record(&d, c, root);
            fj_jpath_pop(&d.jp);
        } else {
            st = fj_err_set(err, FJ_EINVAL, "", "expected a %s record (an object) or an array of them, got %s",
                            fj_cb_collection_name(c), fj_json_type_name(root->type));
        }
        fj_arena_destroy(ja);
        pos = skip_ws(body, len, pos + used);
    }
    if (st == FJ_OK && index == 0)
        st = fj_err_set(err, FJ_EINVAL, "", "no %s records in the body", fj_cb_collection_name(c));
    if (st == FJ_OK && d.cb->n_events) {
        int64_t first = INT64_MAX;
        for (size_t i = 0; i < d.cb->n_events; i++)
            if (d.cb->events[i].entry_us < first)
                first = d.cb->events[i].entry_us;
        d.env->time = first > 0 ? first / 1000000 : 0;
    }
    return finish_env(&d, b, before, st);
}
