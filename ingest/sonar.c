/* sonar.c — Sonar envelope decoder: one walk over the parsed JSON. Each object type is a table of
 * fields (name, type, flags, offset into the record); an object's members are visited once and
 * matched against its table, so decoding is linear in the input. The JSON path, and the errors and
 * notes that name it, are json_path.h's. */
#include "ingest/sonar.h"

#include "ingest/json_path.h"
#include "ingest/noderange.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Linux's PID_MAX_LIMIT on 64-bit kernels: /proc/sys/kernel/pid_max can be raised to at most 2^22
 * and pids are allocated strictly below pid_max, so no real process has a pid >= 2^22. Since Sonar
 * 0.18 the daemon gives each rolled-up group a stable synthetic pid above the kernel's pid_max;
 * pid 0 is a rolled-up group in one-shot mode (or a pid Sonar could not read). Either way the pid
 * names no process and must not be matched against real pids. */
#define FJ_LINUX_PID_MAX_LIMIT 4194304u

/* A decode: the walk (json_path.h: path, error, notes) and the envelope it fills. */
typedef struct dec {
    fj_jpath jp;
    fj_envelope *env;
    size_t names_left; /* host-name budget of the envelope */
} dec;

/* --- notes of this decoder ----------------------------------------------------------------- */

static fj_status unknown_field(dec *d, const fj_json *v)
{
    d->env->unknown_fields++;
    return fj_jpath_note(&d->jp, "unknown_field", "not in the spec, ignored (%s)", fj_json_type_name(v->type));
}

/* --- scalars ------------------------------------------------------------------------------- */

static fj_status copy_str(dec *d, const fj_json *v, const char **out)
{
    char *s = fj_arena_strndup(d->jp.a, v->v.s, v->len);
    if (!s)
        return fj_jpath_oom(&d->jp);
    *out = s;
    return FJ_OK;
}

static uint64_t xu_decode(uint64_t v)
{
    return v == 0 ? FJ_XU_UNSET : v == 1 ? FJ_XU_INFINITE : v - 2;
}

static const unsigned char b64_tab[256] = {
#define B64R(c) [c] = 1
    B64R('+'), B64R('/'),
    B64R('0'), B64R('1'), B64R('2'), B64R('3'), B64R('4'), B64R('5'), B64R('6'), B64R('7'), B64R('8'), B64R('9'),
    B64R('A'), B64R('B'), B64R('C'), B64R('D'), B64R('E'), B64R('F'), B64R('G'), B64R('H'), B64R('I'), B64R('J'),
    B64R('K'), B64R('L'), B64R('M'), B64R('N'), B64R('O'), B64R('P'), B64R('Q'), B64R('R'), B64R('S'), B64R('T'),
    B64R('U'), B64R('V'), B64R('W'), B64R('X'), B64R('Y'), B64R('Z'),
    B64R('a'), B64R('b'), B64R('c'), B64R('d'), B64R('e'), B64R('f'), B64R('g'), B64R('h'), B64R('i'), B64R('j'),
    B64R('k'), B64R('l'), B64R('m'), B64R('n'), B64R('o'), B64R('p'), B64R('q'), B64R('r'), B64R('s'), B64R('t'),
    B64R('u'), B64R('v'), B64R('w'), B64R('x'), B64R('y'), B64R('z'),
#undef B64R
};

/* RFC 4648 section 4 (standard alphabet, '=' padding, no line breaks). Returns the offset of the
 * first bad byte, or SIZE_MAX when valid; a bad length reports offset n. */
static size_t b64_check(const char *s, size_t n)
{
    if (n % 4)
        return n;
    size_t pad = 0;
    if (n && s[n - 1] == '=')
        pad = s[n - 2] == '=' ? 2 : 1;
    for (size_t i = 0; i < n - pad; i++)
        if (!b64_tab[(unsigned char)s[i]])
            return i;
    return SIZE_MAX;
}

/* --- table-driven objects ------------------------------------------------------------------ */

typedef enum ftype {
    T_U64,     /* uint64 */
    T_NZU64,   /* NonzeroUint */
    T_XU,      /* ExtendedUint, decoded */
    T_PSTATE,  /* SampleGpu performance_state: Sonar writes value+1 */
    T_I64,     /* int64 */
    T_F64,     /* float64: any finite number */
    T_BOOL,    /* true/false */
    T_STR,     /* string, "" -> NULL */
    T_STR0,    /* string, "" kept */
    T_NESTR,   /* NonemptyString */
    T_TIME,    /* Timestamp */
    T_OTIME,   /* Timestamp that real producers send as "" when unknown: 0 */
    T_HOST,    /* Hostname */
    T_CLUSTER, /* Clustername */
    T_B64,     /* base64 string, "" -> NULL */
    T_CHECK_STR, /* a string we validate but do not keep */
    T_CUSTOM   /* handled by the object's custom function, by id */
} ftype;

enum { F_REQ = 1 /* absent: error */, F_WANT = 2 /* absent: "missing_field" note */ };

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
    uint64_t u = 0;
    fj_status st;
    switch ((ftype)f->type) {
    case T_U64:
        return fj_jpath_get_u64(&d->jp, v, (uint64_t *)p);
    case T_NZU64:
        if ((st = fj_jpath_get_u64(&d->jp, v, &u)))
            return st;
        if (u == 0)
            return fj_jpath_fail(&d->jp, "must not be zero");
        *(uint64_t *)p = u;
        return FJ_OK;
    case T_XU:
        if ((st = fj_jpath_get_u64(&d->jp, v, &u)))
            return st;
        *(uint64_t *)p = xu_decode(u);
        return FJ_OK;
    case T_PSTATE:
        /* The spec says ExtendedUint (v+2), but Sonar writes the P-state as value+1; 0 is unset.
         * Real data agrees: idle NVIDIA cards (P8) arrive as 9. Other producers (fjord-push)
         * follow the spec, so the correction applies to Sonar's output only. */
        if ((st = fj_jpath_get_u64(&d->jp, v, &u)))
            return st;
        if (d->env->producer && strcmp(d->env->producer, "sonar") != 0)
            *(uint64_t *)p = xu_decode(u);
        else
            *(uint64_t *)p = u == 0 ? FJ_XU_UNSET : u - 1;
        return FJ_OK;
    case T_I64:
        return fj_jpath_get_i64(&d->jp, v, (int64_t *)p);
    case T_F64:
        return fj_jpath_get_f64(&d->jp, v, (double *)p);
    case T_BOOL:
        if (v->type != FJ_JSON_TRUE && v->type != FJ_JSON_FALSE)
            return fj_jpath_type_error(&d->jp, "boolean", v);
        *(bool *)p = v->type == FJ_JSON_TRUE;
        return FJ_OK;
    case T_STR:
    case T_STR0:
    case T_CHECK_STR:
        if ((st = fj_jpath_check_str(&d->jp, v)))
            return st;
        if (f->type == T_CHECK_STR)
            return FJ_OK;
        if (v->len == 0 && f->type == T_STR) {
            *(const char **)p = NULL;
            return FJ_OK;
        }
        return copy_str(d, v, (const char **)p);
    case T_NESTR:
        if ((st = fj_jpath_check_str(&d->jp, v)))
            return st;
        if (v->len == 0)
            return fj_jpath_fail(&d->jp, "must not be empty");
        return copy_str(d, v, (const char **)p);
    case T_TIME:
    case T_OTIME:
        if ((st = fj_jpath_check_str(&d->jp, v)))
            return st;
        if (v->len == 0) {
            if (f->type == T_TIME)
                return fj_jpath_fail(&d->jp, "must not be empty (a Timestamp is required)");
            *(fj_time *)p = 0;
            return fj_jpath_note(&d->jp, "empty_time", "\"\" read as unknown (0)");
        }
        if (fj_time_parse_rfc3339(v->v.s, 1, (fj_time *)p) != FJ_OK)
            return fj_jpath_fail(
                &d->jp, "invalid timestamp \"%.40s\" (want a real date as yyyy-mm-ddThh:mm:ss and Z or +hh:mm)",
                v->v.s);
        return FJ_OK;
    case T_HOST:
    case T_CLUSTER:
        if ((st = fj_jpath_check_str(&d->jp, v)))
            return st;
        if (!fj_hostname_valid(v->v.s))
            return fj_jpath_fail(
                &d->jp, "invalid %s \"%.64s\" (letters, digits, '-' and '.' in nonempty labels, at most 253 bytes)",
                f->type == T_HOST ? "host name" : "cluster name", v->v.s);
        return copy_str(d, v, (const char **)p);
    case T_B64: {
        if ((st = fj_jpath_check_str(&d->jp, v)))
            return st;
        if (v->len == 0) {
            *(const char **)p = NULL;
            return FJ_OK;
        }
        size_t bad = b64_check(v->v.s, v->len);
        if (bad == v->len)
            return fj_jpath_fail(&d->jp, "not valid base64: length %zu is not a multiple of 4", v->len);
        if (bad != SIZE_MAX)
            return fj_jpath_fail(&d->jp, "not valid base64 (RFC 4648 alphabet, '=' padding only at the end): byte %zu",
                                 bad);
        return copy_str(d, v, (const char **)p);
    }
    case T_CUSTOM:
        break;
    }
    return fj_jpath_fail(&d->jp, "internal error: bad field type");
}

static inline size_t find_field(const field *f, size_t nf, const char *key, size_t len)
{
    for (size_t k = 0; k < nf; k++)
        if (f[k].len == len && f[k].name[0] == key[0] && memcmp(f[k].name, key, len) == 0)
            return k;
    return nf;
}

/* Visits every member of obj once: known fields are decoded into base, unknown ones noted; null is
 * absent. Then checks required fields. Tables have at most 64 fields. */
static fj_status decode_object(dec *d, const fj_json *obj, const field *f, size_t nf, void *base, custom_fn custom)
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
        if (seen & ((uint64_t)1 << k) || !f[k].flags)
            continue;
        fj_jpath_push_key(&d->jp, f[k].name);
        fj_status st = f[k].flags & F_REQ
                           ? fj_jpath_fail(&d->jp, "required field is missing")
                           : fj_jpath_note(&d->jp, "missing_field", "absent, though the spec requires it");
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
    }
    return FJ_OK;
}

typedef fj_status (*elem_fn)(dec *d, const fj_json *v, void *elem);

static fj_status decode_array(dec *d, const fj_json *v, size_t esz, elem_fn fn, void **out, size_t *n)
{
    if (v->type != FJ_JSON_ARRAY)
        return fj_jpath_type_error(&d->jp, "array", v);
    char *arr = NULL;
    if (v->len && !(arr = fj_arena_calloc(d->jp.a, v->len, esz)))
        return fj_jpath_oom(&d->jp);
    for (size_t i = 0; i < v->len; i++) {
        fj_jpath_push_idx(&d->jp, i);
        fj_status st = fn(d, &v->v.items[i], arr + i * esz);
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
    }
    *out = arr;
    *n = v->len;
    return FJ_OK;
}

static fj_status decode_u64_array(dec *d, const fj_json *v, uint64_t **out, size_t *n)
{
    if (v->type != FJ_JSON_ARRAY)
        return fj_jpath_type_error(&d->jp, "array", v);
    uint64_t *arr = NULL;
    if (v->len && !(arr = fj_arena_alloc(d->jp.a, v->len * sizeof *arr)))
        return fj_jpath_oom(&d->jp);
    for (size_t i = 0; i < v->len; i++) {
        fj_jpath_push_idx(&d->jp, i);
        fj_status st = fj_jpath_get_u64(&d->jp, &v->v.items[i], &arr[i]);
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
    }
    *out = arr;
    *n = v->len;
    return FJ_OK;
}

/* A list of HostnameRange, expanded and concatenated. allow_none: Slurm's "None assigned" /
 * "None allocated" placeholders of pending jobs mean no nodes. */
static fj_status decode_ranges(dec *d, const fj_json *v, bool allow_none, char ***names_out, size_t *n_out,
                               const char **raw_out)
{
    if (v->type != FJ_JSON_ARRAY)
        return fj_jpath_type_error(&d->jp, "array", v);
    struct part {
        char **names;
        size_t n;
    } *parts = NULL;
    if (v->len && !(parts = fj_arena_calloc(d->jp.a, v->len, sizeof *parts)))
        return fj_jpath_oom(&d->jp);
    size_t total = 0, raw_len = 0, n_parts = 0;
    for (size_t i = 0; i < v->len; i++) {
        const fj_json *x = &v->v.items[i];
        fj_status st;
        fj_jpath_push_idx(&d->jp, i);
        if ((st = fj_jpath_check_str(&d->jp, x))) {
            fj_jpath_pop(&d->jp);
            return st;
        }
        if (allow_none && (strcmp(x->v.s, "None assigned") == 0 || strcmp(x->v.s, "None allocated") == 0)) {
            st = fj_jpath_note(&d->jp, "none_assigned", "\"%s\" read as no nodes", x->v.s);
            fj_jpath_pop(&d->jp);
            if (st)
                return st;
            continue;
        }
        fj_err e = {0};
        st = fj_noderange_expand_max(d->jp.a, x->v.s, d->names_left, &parts[n_parts].names, &parts[n_parts].n, &e);
        if (st == FJ_ETOOBIG)
            st = fj_jpath_fail(&d->jp,
                               "node ranges of one envelope may name at most %d hosts; \"%.64s\" goes past that",
                               FJ_SONAR_MAX_NAMES, x->v.s);
        else if (st == FJ_ENOMEM)
            st = fj_jpath_oom(&d->jp);
        else if (st)
            st = fj_jpath_fail(&d->jp, "%s", e.message);
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
        d->names_left -= parts[n_parts].n;
        total += parts[n_parts].n;
        raw_len += x->len + 1;
        n_parts++;
    }
    char **names = NULL;
    if (n_parts == 1) {
        names = parts[0].names;
    } else if (total) {
        if (!(names = fj_arena_alloc(d->jp.a, total * sizeof *names)))
            return fj_jpath_oom(&d->jp);
        size_t o = 0;
        for (size_t k = 0; k < n_parts; k++) {
            memcpy(names + o, parts[k].names, parts[k].n * sizeof *names);
            o += parts[k].n;
        }
    }
    if (raw_out) {
        char *raw = NULL;
        if (n_parts) {
            if (!(raw = fj_arena_alloc(d->jp.a, raw_len)))
                return fj_jpath_oom(&d->jp);
            size_t o = 0;
            for (size_t i = 0; i < v->len; i++) {
                const fj_json *x = &v->v.items[i];
                if (allow_none && (strcmp(x->v.s, "None assigned") == 0 || strcmp(x->v.s, "None allocated") == 0))
                    continue;
                if (o)
                    raw[o++] = ',';
                memcpy(raw + o, x->v.s, x->len);
                o += x->len;
            }
            raw[o] = '\0';
        }
        *raw_out = raw;
    }
    *names_out = names;
    *n_out = total;
    return FJ_OK;
}

/* --- ErrorObject, KVPair, meta ------------------------------------------------------------- */

static const field F_ERROR[] = {
    /* Timestamp in the spec, but the spec's own test data has an error object without one. */
    FLD("time", T_TIME, F_WANT, offsetof(fj_error_rec, time)),
    FLD("detail", T_NESTR, F_REQ, offsetof(fj_error_rec, detail)),
    FLD("cluster", T_CLUSTER, 0, offsetof(fj_error_rec, cluster)),
    FLD("node", T_HOST, 0, offsetof(fj_error_rec, node)),
};

static fj_status error_elem(dec *d, const fj_json *v, void *elem)
{
    return decode_object(d, v, F_ERROR, NFIELDS(F_ERROR), elem, NULL);
}

static fj_status decode_errors(dec *d, const fj_json *v)
{
    void *arr;
    size_t n;
    fj_status st = decode_array(d, v, sizeof(fj_error_rec), error_elem, &arr, &n);
    if (st)
        return st;
    d->env->errors = arr;
    d->env->n_errors = n;
    return FJ_OK;
}

typedef struct kvpair {
    const char *key, *value;
} kvpair;

static const field F_KV[] = {
    FLD("key", T_NESTR, F_REQ, offsetof(kvpair, key)),
    FLD("value", T_CHECK_STR, 0, offsetof(kvpair, value)),
};

enum { ID_ATTRS = 1 };

static fj_status meta_custom(dec *d, int id, const fj_json *v, void *base)
{
    /* attrs: validated; the records have no place for them (the spec: metadata can be thrown away). */
    if (v->type != FJ_JSON_ARRAY)
        return fj_jpath_type_error(&d->jp, "array", v);
    for (size_t i = 0; i < v->len; i++) {
        kvpair kv;
        fj_jpath_push_idx(&d->jp, i);
        fj_status st = decode_object(d, &v->v.items[i], F_KV, NFIELDS(F_KV), &kv, NULL);
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
    }
    return FJ_OK;
}

static const field F_META[] = {
    FLD("producer", T_NESTR, F_REQ, offsetof(fj_envelope, producer)),
    FLD("version", T_NESTR, F_REQ, offsetof(fj_envelope, version)),
    FLD("format", T_U64, 0, offsetof(fj_envelope, format)),
    CUS("attrs", 0, ID_ATTRS),
    FLD("token", T_CHECK_STR, 0, 0), /* for authentication, which is the server's business */
};

/* --- sample -------------------------------------------------------------------------------- */

static const field F_PGPU[] = {
    FLD("index", T_U64, 0, offsetof(fj_proc_gpu, index)),
    FLD("uuid", T_NESTR, F_REQ, offsetof(fj_proc_gpu, uuid)),
    FLD("gpu_util", T_F64, 0, offsetof(fj_proc_gpu, gpu_util)),
    FLD("gpu_memory", T_U64, 0, offsetof(fj_proc_gpu, gpu_memory_kb)),
    FLD("gpu_memory_util", T_F64, 0, offsetof(fj_proc_gpu, gpu_memory_util)),
};

static fj_status pgpu_elem(dec *d, const fj_json *v, void *elem)
{
    return decode_object(d, v, F_PGPU, NFIELDS(F_PGPU), elem, NULL);
}

enum { ID_PROC_GPUS = 1 };

static const field F_PROC[] = {
    FLD("pid", T_U64, 0, offsetof(fj_sample_proc, pid)),
    FLD("ppid", T_U64, 0, offsetof(fj_sample_proc, ppid)),
    FLD("cmd", T_STR, 0, offsetof(fj_sample_proc, cmd)),
    FLD("resident_memory", T_U64, 0, offsetof(fj_sample_proc, resident_kb)),
    FLD("virtual_memory", T_U64, 0, offsetof(fj_sample_proc, virtual_kb)),
    FLD("cpu_avg", T_F64, 0, offsetof(fj_sample_proc, cpu_avg)),
    FLD("cpu_util", T_F64, 0, offsetof(fj_sample_proc, cpu_util)),
    FLD("cpu_time", T_U64, 0, offsetof(fj_sample_proc, cpu_time)),
    FLD("num_threads", T_U64, 0, offsetof(fj_sample_proc, num_threads)),
    FLD("data_read", T_U64, 0, offsetof(fj_sample_proc, data_read_kb)),
    FLD("data_written", T_U64, 0, offsetof(fj_sample_proc, data_written_kb)),
    FLD("data_cancelled", T_U64, 0, offsetof(fj_sample_proc, data_cancelled_kb)),
    FLD("in_container", T_BOOL, 0, offsetof(fj_sample_proc, in_container)),
    /* `int` in the spec, but a negative count of merged processes means nothing. */
    FLD("rolledup", T_U64, 0, offsetof(fj_sample_proc, rolledup)),
    CUS("gpus", 0, ID_PROC_GPUS),
};

static fj_status proc_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_sample_proc *p = base;
    void *arr;
    fj_status st = decode_array(d, v, sizeof(fj_proc_gpu), pgpu_elem, &arr, &p->n_gpus);
    p->gpus = arr;
    return st;
}

static fj_status proc_elem(dec *d, const fj_json *v, void *elem)
{
    fj_sample_proc *p = elem;
    fj_status st = decode_object(d, v, F_PROC, NFIELDS(F_PROC), p, proc_custom);
    p->synthetic_pid = p->pid == 0 || p->pid >= FJ_LINUX_PID_MAX_LIMIT;
    return st;
}

enum { ID_PROCESSES = 1 };

static const field F_JOB[] = {
    FLD("job", T_U64, 0, offsetof(fj_sample_job, job)),
    FLD("user", T_NESTR, F_REQ, offsetof(fj_sample_job, user)),
    FLD("epoch", T_U64, 0, offsetof(fj_sample_job, epoch)), /* omitted for Slurm jobs: 0 */
    CUS("processes", 0, ID_PROCESSES),
};

static fj_status job_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_sample_job *j = base;
    void *arr;
    fj_status st = decode_array(d, v, sizeof(fj_sample_proc), proc_elem, &arr, &j->n_procs);
    j->procs = arr;
    return st;
}

static fj_status job_elem(dec *d, const fj_json *v, void *elem)
{
    fj_sample_job *j = elem;
    fj_status st = decode_object(d, v, F_JOB, NFIELDS(F_JOB), j, job_custom);
    if (st)
        return st;
    /* The spec: "If epoch is 0 then job is never 0". Such records cannot be told apart from each
     * other across nodes, so they could only be merged into one meaningless job. */
    if (j->job == 0 && j->epoch == 0)
        return fj_jpath_fail(&d->jp,
                             "job 0 with epoch 0 is not allowed (a job with epoch 0 is a Slurm job and needs its id)");
    return FJ_OK;
}

static const field F_SGPU[] = {
    FLD("index", T_U64, 0, offsetof(fj_sample_gpu, index)), /* omitted by Sonar when 0 */
    FLD("uuid", T_NESTR, F_REQ, offsetof(fj_sample_gpu, uuid)),
    FLD("failing", T_U64, 0, offsetof(fj_sample_gpu, failing)),
    FLD("fan", T_U64, 0, offsetof(fj_sample_gpu, fan)),
    FLD("compute_mode", T_STR, 0, offsetof(fj_sample_gpu, compute_mode)),
    FLD("performance_state", T_PSTATE, 0, offsetof(fj_sample_gpu, performance_state)),
    FLD("memory", T_U64, 0, offsetof(fj_sample_gpu, memory_kb)),
    FLD("ce_util", T_U64, 0, offsetof(fj_sample_gpu, ce_util)),
    FLD("memory_util", T_U64, 0, offsetof(fj_sample_gpu, memory_util)),
    FLD("temperature", T_I64, 0, offsetof(fj_sample_gpu, temperature)),
    FLD("power", T_U64, 0, offsetof(fj_sample_gpu, power)),
    FLD("power_limit", T_U64, 0, offsetof(fj_sample_gpu, power_limit)),
    FLD("ce_clock", T_U64, 0, offsetof(fj_sample_gpu, ce_clock)),
    FLD("memory_clock", T_U64, 0, offsetof(fj_sample_gpu, memory_clock)),
    FLD("energy_mj", T_U64, 0, offsetof(fj_sample_gpu, energy_mj)), /* fjord-push's energy counter */
};

static fj_status sgpu_elem(dec *d, const fj_json *v, void *elem)
{
    fj_sample_gpu *g = elem;
    g->performance_state = FJ_XU_UNSET;
    return decode_object(d, v, F_SGPU, NFIELDS(F_SGPU), g, NULL);
}

enum { ID_DISK_STATS = 1 };

static const field F_DISK[] = {
    FLD("name", T_NESTR, F_REQ, offsetof(fj_sample_disk, name)), /* "This must never be empty" */
    FLD("major", T_U64, 0, offsetof(fj_sample_disk, major)),
    FLD("minor", T_U64, 0, offsetof(fj_sample_disk, minor)),
    CUS("stats", 0, ID_DISK_STATS),
};

static fj_status disk_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_sample_disk *k = base;
    return decode_u64_array(d, v, &k->stats, &k->n_stats);
}

static fj_status disk_elem(dec *d, const fj_json *v, void *elem)
{
    return decode_object(d, v, F_DISK, NFIELDS(F_DISK), elem, disk_custom);
}

enum { ID_CPUS = 1, ID_SGPUS, ID_DISKS };

static const field F_SYSTEM[] = {
    FLD("boot", T_OTIME, 0, offsetof(fj_sample, boot)), /* absent before Sonar 0.17 */
    CUS("cpus", 0, ID_CPUS),
    CUS("gpus", 0, ID_SGPUS),
    CUS("disks", 0, ID_DISKS),
    FLD("used_memory", T_U64, 0, offsetof(fj_sample, used_memory_kb)),
    FLD("load1", T_F64, 0, offsetof(fj_sample, load1)),
    FLD("load5", T_F64, 0, offsetof(fj_sample, load5)),
    FLD("load15", T_F64, 0, offsetof(fj_sample, load15)),
    FLD("runnable_entities", T_U64, 0, offsetof(fj_sample, runnable_entities)),
    FLD("existing_entities", T_U64, 0, offsetof(fj_sample, existing_entities)),
};

static fj_status system_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_sample *s = base;
    void *arr = NULL;
    fj_status st;
    switch (id) {
    case ID_CPUS:
        return decode_u64_array(d, v, &s->cpus, &s->n_cpus);
    case ID_SGPUS:
        st = decode_array(d, v, sizeof(fj_sample_gpu), sgpu_elem, &arr, &s->n_gpus);
        s->gpus = arr;
        return st;
    default:
        st = decode_array(d, v, sizeof(fj_sample_disk), disk_elem, &arr, &s->n_disks);
        s->disks = arr;
        return st;
    }
}

enum { ID_SYSTEM = 1, ID_JOBS, ID_SOFT_ERRORS };

static const field F_SAMPLE[] = {
    FLD("time", T_TIME, F_REQ, offsetof(fj_envelope, time)),
    FLD("cluster", T_CLUSTER, F_REQ, offsetof(fj_envelope, cluster)),
    FLD("node", T_HOST, F_REQ, offsetof(fj_envelope, node)),
    CUS("system", 0, ID_SYSTEM),
    CUS("jobs", 0, ID_JOBS),
    CUS("errors", 0, ID_SOFT_ERRORS),
};

static fj_status sample_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_sample *s = &d->env->u.sample;
    void *arr = NULL;
    fj_status st;
    switch (id) {
    case ID_SYSTEM:
        s->has_system = true;
        return decode_object(d, v, F_SYSTEM, NFIELDS(F_SYSTEM), s, system_custom);
    case ID_JOBS:
        st = decode_array(d, v, sizeof(fj_sample_job), job_elem, &arr, &s->n_jobs);
        s->jobs = arr;
        return st;
    default:
        return decode_errors(d, v);
    }
}

/* --- sysinfo ------------------------------------------------------------------------------- */

static const field F_CARD[] = {
    FLD("index", T_U64, 0, offsetof(fj_gpu_card, index)),
    FLD("uuid", T_STR, 0, offsetof(fj_gpu_card, uuid)), /* omitted by Sonar when empty */
    FLD("address", T_STR, 0, offsetof(fj_gpu_card, address)),
    FLD("manufacturer", T_STR, 0, offsetof(fj_gpu_card, manufacturer)),
    FLD("model", T_STR, 0, offsetof(fj_gpu_card, model)),
    FLD("architecture", T_STR, 0, offsetof(fj_gpu_card, architecture)),
    FLD("driver", T_STR, 0, offsetof(fj_gpu_card, driver)),
    FLD("firmware", T_STR, 0, offsetof(fj_gpu_card, firmware)),
    FLD("memory", T_U64, 0, offsetof(fj_gpu_card, memory_kb)),
    FLD("power_limit", T_U64, 0, offsetof(fj_gpu_card, power_limit)),
    FLD("max_power_limit", T_U64, 0, offsetof(fj_gpu_card, max_power_limit)),
    FLD("min_power_limit", T_U64, 0, offsetof(fj_gpu_card, min_power_limit)),
    FLD("max_ce_clock", T_U64, 0, offsetof(fj_gpu_card, max_ce_clock)),
    FLD("max_memory_clock", T_U64, 0, offsetof(fj_gpu_card, max_memory_clock)),
};

static fj_status card_elem(dec *d, const fj_json *v, void *elem)
{
    return decode_object(d, v, F_CARD, NFIELDS(F_CARD), elem, NULL);
}

enum { ID_CARDS = 1, ID_DISTANCES };

static const field F_SYSINFO[] = {
    FLD("time", T_TIME, F_REQ, offsetof(fj_envelope, time)),
    FLD("cluster", T_CLUSTER, F_REQ, offsetof(fj_envelope, cluster)),
    FLD("node", T_HOST, F_REQ, offsetof(fj_envelope, node)),
    /* NonemptyString in the spec; Sonar 0.13 sent "os"/"os-version" instead and may omit them. */
    FLD("os_name", T_NESTR, F_WANT, offsetof(fj_envelope, u.sysinfo.os_name)),
    FLD("os_release", T_NESTR, F_WANT, offsetof(fj_envelope, u.sysinfo.os_release)),
    FLD("architecture", T_NESTR, F_WANT, offsetof(fj_envelope, u.sysinfo.architecture)),
    FLD("numa_nodes", T_U64, 0, offsetof(fj_envelope, u.sysinfo.numa_nodes)),
    FLD("sockets", T_NZU64, F_REQ, offsetof(fj_envelope, u.sysinfo.sockets)),
    FLD("cores_per_socket", T_NZU64, F_REQ, offsetof(fj_envelope, u.sysinfo.cores_per_socket)),
    FLD("threads_per_core", T_NZU64, F_REQ, offsetof(fj_envelope, u.sysinfo.threads_per_core)),
    FLD("cpu_model", T_STR, 0, offsetof(fj_envelope, u.sysinfo.cpu_model)),
    FLD("memory", T_NZU64, F_REQ, offsetof(fj_envelope, u.sysinfo.memory_kb)),
    FLD("topo_svg", T_B64, 0, offsetof(fj_envelope, u.sysinfo.topo_svg)),
    FLD("topo_text", T_B64, 0, offsetof(fj_envelope, u.sysinfo.topo_text)),
    CUS("cards", 0, ID_CARDS),
    CUS("distances", 0, ID_DISTANCES),
};

static fj_status decode_distances(dec *d, const fj_json *v, fj_sysinfo *si)
{
    if (v->type != FJ_JSON_ARRAY)
        return fj_jpath_type_error(&d->jp, "array", v);
    size_t dim = v->len;
    si->distances = NULL;
    si->distances_dim = 0;
    if (dim == 0) /* "empty if we can't compute it" */
        return FJ_OK;
    if (dim > SIZE_MAX / sizeof(uint64_t) / dim)
        return fj_jpath_fail(&d->jp, "matrix too large");
    uint64_t *m = fj_arena_alloc(d->jp.a, dim * dim * sizeof *m);
    if (!m)
        return fj_jpath_oom(&d->jp);
    for (size_t i = 0; i < dim; i++) {
        const fj_json *row = &v->v.items[i];
        fj_status st = FJ_OK;
        fj_jpath_push_idx(&d->jp, i);
        if (row->type != FJ_JSON_ARRAY)
            st = fj_jpath_type_error(&d->jp, "array", row);
        else if (row->len != dim)
            st = fj_jpath_fail(&d->jp,
                               "row has %zu entries but there are %zu rows (distances must be a square matrix)",
                               row->len, dim);
        for (size_t j = 0; !st && j < dim; j++) {
            fj_jpath_push_idx(&d->jp, j);
            st = fj_jpath_get_u64(&d->jp, &row->v.items[j], &m[i * dim + j]);
            fj_jpath_pop(&d->jp);
        }
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
    }
    si->distances = m;
    si->distances_dim = dim;
    return FJ_OK;
}

static fj_status sysinfo_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_sysinfo *si = &d->env->u.sysinfo;
    if (id == ID_DISTANCES)
        return decode_distances(d, v, si);
    void *arr = NULL;
    fj_status st = decode_array(d, v, sizeof(fj_gpu_card), card_elem, &arr, &si->n_cards);
    si->cards = arr;
    return st;
}

/* --- Slurm jobs ---------------------------------------------------------------------------- */

static const field F_SACCT[] = {
    FLD("AllocTRES", T_STR, 0, offsetof(fj_sacct, alloc_tres)),
    FLD("AveCPU", T_U64, 0, offsetof(fj_sacct, ave_cpu)),
    FLD("AveDiskRead", T_U64, 0, offsetof(fj_sacct, ave_disk_read)),
    FLD("AveDiskWrite", T_U64, 0, offsetof(fj_sacct, ave_disk_write)),
    FLD("AveRSS", T_U64, 0, offsetof(fj_sacct, ave_rss)),
    FLD("AveVMSize", T_U64, 0, offsetof(fj_sacct, ave_vmsize)),
    FLD("ElapsedRaw", T_U64, 0, offsetof(fj_sacct, elapsed_raw)),
    FLD("MaxRSS", T_U64, 0, offsetof(fj_sacct, max_rss)),
    FLD("MaxVMSize", T_U64, 0, offsetof(fj_sacct, max_vmsize)),
    FLD("MinCPU", T_U64, 0, offsetof(fj_sacct, min_cpu)),
    FLD("SystemCPU", T_U64, 0, offsetof(fj_sacct, system_cpu)),
    FLD("UserCPU", T_U64, 0, offsetof(fj_sacct, user_cpu)),
};

enum { ID_JOB_STATE = 1, ID_NODES, ID_SACCT };

static const field F_SJOB[] = {
    FLD("job_id", T_NZU64, F_REQ, offsetof(fj_slurm_job, job_id)),
    FLD("job_step", T_STR0, 0, offsetof(fj_slurm_job, job_step)),
    FLD("job_name", T_STR, 0, offsetof(fj_slurm_job, job_name)),
    CUS("job_state", F_REQ, ID_JOB_STATE),
    FLD("array_job_id", T_U64, 0, offsetof(fj_slurm_job, array_job_id)),
    FLD("array_task_id", T_U64, 0, offsetof(fj_slurm_job, array_task_id)),
    FLD("het_job_id", T_U64, 0, offsetof(fj_slurm_job, het_job_id)),
    FLD("het_job_offset", T_U64, 0, offsetof(fj_slurm_job, het_job_offset)),
    FLD("user_name", T_STR, 0, offsetof(fj_slurm_job, user_name)),
    FLD("account", T_STR, 0, offsetof(fj_slurm_job, account)),
    FLD("submit_time", T_OTIME, 0, offsetof(fj_slurm_job, submit_time)),
    /* ExtendedUint of seconds+2 in Sonar's code (the spec says minutes). */
    FLD("time_limit", T_XU, 0, offsetof(fj_slurm_job, time_limit_s)),
    FLD("partition", T_STR, 0, offsetof(fj_slurm_job, partition)),
    FLD("reservation", T_STR, 0, offsetof(fj_slurm_job, reservation)),
    CUS("nodes", 0, ID_NODES),
    FLD("priority", T_XU, 0, offsetof(fj_slurm_job, priority)), /* may exceed 2^32 */
    FLD("distribution", T_STR, 0, offsetof(fj_slurm_job, distribution)),
    FLD("requested_resources", T_STR, 0, offsetof(fj_slurm_job, requested_resources)),
    FLD("allocated_resources", T_STR, 0, offsetof(fj_slurm_job, allocated_resources)),
    FLD("requested_cpus", T_U64, 0, offsetof(fj_slurm_job, requested_cpus)),
    FLD("requested_memory_per_node", T_U64, 0, offsetof(fj_slurm_job, requested_memory_per_node_kb)),
    FLD("requested_node_count", T_U64, 0, offsetof(fj_slurm_job, requested_node_count)),
    FLD("minimum_cpus_per_node", T_U64, 0, offsetof(fj_slurm_job, minimum_cpus_per_node)),
    FLD("start_time", T_OTIME, 0, offsetof(fj_slurm_job, start_time)),
    FLD("suspend_time", T_U64, 0, offsetof(fj_slurm_job, suspend_time_s)),
    FLD("end_time", T_OTIME, 0, offsetof(fj_slurm_job, end_time)),
    FLD("exit_code", T_U64, 0, offsetof(fj_slurm_job, exit_code)),
    CUS("sacct", 0, ID_SACCT),
};

static bool state_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

/* job_state: the first word, upper-cased ("CANCELLED by 7205" -> "CANCELLED"); the original is kept
 * in job_state_raw when it differed. */
static fj_status decode_job_state(dec *d, const fj_json *v, fj_slurm_job *j)
{
    fj_status st = fj_jpath_check_str(&d->jp, v);
    if (st)
        return st;
    if (v->len == 0)
        return fj_jpath_fail(&d->jp, "must not be empty");
    const char *s = v->v.s;
    size_t b = 0, e;
    while (s[b] == ' ')
        b++;
    for (e = b; s[e] && s[e] != ' '; e++)
        if (!state_char(s[e]))
            break;
    if (e == b || (s[e] && s[e] != ' '))
        return fj_jpath_fail(&d->jp, "job_state \"%.40s\" does not start with a state word (letters and '_')", s);
    char *w = fj_arena_strndup(d->jp.a, s + b, e - b);
    if (!w)
        return fj_jpath_oom(&d->jp);
    bool folded = false;
    for (char *p = w; *p; p++) {
        if (*p >= 'a' && *p <= 'z') {
            *p = (char)(*p - 'a' + 'A');
            folded = true;
        }
    }
    j->job_state = w;
    j->job_state_raw = NULL;
    if (b == 0 && e == v->len && !folded)
        return FJ_OK;
    if ((st = copy_str(d, v, &j->job_state_raw)))
        return st;
    return fj_jpath_note(&d->jp, b == 0 && e == v->len ? "state_case" : "state_suffix", "\"%.80s\" read as \"%s\"", s,
                         w);
}

static fj_status sjob_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_slurm_job *j = base;
    switch (id) {
    case ID_JOB_STATE:
        return decode_job_state(d, v, j);
    case ID_NODES:
        return decode_ranges(d, v, true, &j->nodes, &j->n_nodes, &j->nodes_raw);
    default: {
        fj_sacct *sa = fj_arena_calloc(d->jp.a, 1, sizeof *sa);
        if (!sa)
            return fj_jpath_oom(&d->jp);
        j->sacct = sa;
        return decode_object(d, v, F_SACCT, NFIELDS(F_SACCT), sa, NULL);
    }
    }
}

static fj_status sjob_elem(dec *d, const fj_json *v, void *elem)
{
    fj_slurm_job *j = elem;
    j->job_step = ""; /* never NULL: "" is the job itself */
    j->time_limit_s = FJ_XU_UNSET;
    j->priority = FJ_XU_UNSET;
    return decode_object(d, v, F_SJOB, NFIELDS(F_SJOB), j, sjob_custom);
}

enum { ID_SLURM_JOBS = 1 };

static const field F_JOBS[] = {
    FLD("time", T_TIME, F_REQ, offsetof(fj_envelope, time)),
    FLD("cluster", T_CLUSTER, F_REQ, offsetof(fj_envelope, cluster)),
    CUS("slurm_jobs", 0, ID_SLURM_JOBS),
};

static fj_status jobs_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_jobs *js = &d->env->u.jobs;
    void *arr = NULL;
    fj_status st = decode_array(d, v, sizeof(fj_slurm_job), sjob_elem, &arr, &js->n_jobs);
    js->jobs = arr;
    return st;
}

/* --- cluster ------------------------------------------------------------------------------- */

enum { ID_PART_NODES = 1 };

static const field F_PART[] = {
    FLD("name", T_NESTR, F_REQ, offsetof(fj_partition, name)),
    CUS("nodes", 0, ID_PART_NODES),
};

static fj_status part_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_partition *p = base;
    return decode_ranges(d, v, false, &p->nodes, &p->n_nodes, NULL);
}

static fj_status part_elem(dec *d, const fj_json *v, void *elem)
{
    return decode_object(d, v, F_PART, NFIELDS(F_PART), elem, part_custom);
}

/* One ClusterNodes object before it is spread to one fj_node_state per host. */
typedef struct cnodes {
    char **names;
    size_t n_names;
    char **states;
    size_t n_states;
} cnodes;

enum { ID_CN_NAMES = 1, ID_CN_STATES };

static const field F_CNODES[] = {
    CUS("names", F_REQ, ID_CN_NAMES),
    CUS("states", 0, ID_CN_STATES),
};

static fj_status decode_states(dec *d, const fj_json *v, cnodes *c)
{
    if (v->type != FJ_JSON_ARRAY)
        return fj_jpath_type_error(&d->jp, "array", v);
    char **states = NULL;
    if (v->len && !(states = fj_arena_alloc(d->jp.a, v->len * sizeof *states)))
        return fj_jpath_oom(&d->jp);
    size_t n = 0;
    for (size_t i = 0; i < v->len; i++) {
        const fj_json *x = &v->v.items[i];
        fj_status st;
        fj_jpath_push_idx(&d->jp, i);
        if ((st = fj_jpath_check_str(&d->jp, x)) == FJ_OK) {
            if (x->len == 0) {
                st = fj_jpath_note(&d->jp, "empty_state", "empty node state dropped");
            } else if (!(states[n] = fj_arena_strndup(d->jp.a, x->v.s, x->len))) {
                st = fj_jpath_oom(&d->jp);
            } else {
                bool folded = false;
                for (char *p = states[n]; *p; p++) {
                    if (*p >= 'a' && *p <= 'z') {
                        *p = (char)(*p - 'a' + 'A');
                        folded = true;
                    }
                }
                n++;
                if (folded) /* the spec: "state names are always folded to upper case" */
                    st = fj_jpath_note(&d->jp, "state_case", "\"%.80s\" read as \"%s\"", x->v.s, states[n - 1]);
            }
        }
        fj_jpath_pop(&d->jp);
        if (st)
            return st;
    }
    c->states = states;
    c->n_states = n;
    return FJ_OK;
}

static fj_status cnodes_custom(dec *d, int id, const fj_json *v, void *base)
{
    cnodes *c = base;
    if (id == ID_CN_STATES)
        return decode_states(d, v, c);
    fj_status st = decode_ranges(d, v, false, &c->names, &c->n_names, NULL);
    if (st)
        return st;
    if (v->len == 0)
        return fj_jpath_fail(&d->jp, "must not be empty");
    return FJ_OK;
}

static fj_status cnodes_elem(dec *d, const fj_json *v, void *elem)
{
    return decode_object(d, v, F_CNODES, NFIELDS(F_CNODES), elem, cnodes_custom);
}

enum { ID_PARTITIONS = 1, ID_CNODES };

static const field F_CLUSTER[] = {
    FLD("time", T_TIME, F_REQ, offsetof(fj_envelope, time)),
    FLD("cluster", T_CLUSTER, F_REQ, offsetof(fj_envelope, cluster)),
    FLD("slurm", T_BOOL, 0, offsetof(fj_envelope, u.cluster_info.slurm)),
    CUS("partitions", 0, ID_PARTITIONS),
    CUS("nodes", 0, ID_CNODES),
};

static fj_status cluster_custom(dec *d, int id, const fj_json *v, void *base)
{
    fj_cluster_info *ci = &d->env->u.cluster_info;
    void *arr = NULL;
    size_t n = 0;
    fj_status st;
    if (id == ID_PARTITIONS) {
        st = decode_array(d, v, sizeof(fj_partition), part_elem, &arr, &ci->n_partitions);
        ci->partitions = arr;
        return st;
    }
    if ((st = decode_array(d, v, sizeof(cnodes), cnodes_elem, &arr, &n)))
        return st;
    const cnodes *c = arr;
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += c[i].n_names;
    fj_node_state *ns = NULL;
    if (total && !(ns = fj_arena_alloc(d->jp.a, total * sizeof *ns)))
        return fj_jpath_oom(&d->jp);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < c[i].n_names; k++, o++) {
            ns[o].node = c[i].names[k];
            ns[o].states = c[i].states; /* shared by the hosts of one range */
            ns[o].n_states = c[i].n_states;
        }
    }
    ci->nodes = ns;
    ci->n_nodes = total;
    return FJ_OK;
}

/* --- envelope ------------------------------------------------------------------------------ */

static fj_status decode_data(dec *d, const fj_json *data, int expect)
{
    fj_envelope *env = d->env;
    if (data->type != FJ_JSON_OBJECT)
        return fj_jpath_type_error(&d->jp, "object", data);
    const fj_json *type = NULL, *attrs = NULL;
    fj_status st;
    for (size_t m = 0; m < data->len; m++) {
        const fj_json_member *mem = &data->v.members[m];
        if (strcmp(mem->key, "type") == 0 && mem->key_len == 4)
            type = mem->value.type == FJ_JSON_NULL ? NULL : &mem->value;
        else if (strcmp(mem->key, "attributes") == 0 && mem->key_len == 10)
            attrs = mem->value.type == FJ_JSON_NULL ? NULL : &mem->value;
        else {
            fj_jpath_push_key(&d->jp, mem->key);
            st = unknown_field(d, &mem->value);
            fj_jpath_pop(&d->jp);
            if (st)
                return st;
        }
    }
    fj_jpath_push_key(&d->jp, "type");
    if (!type) {
        st = fj_jpath_fail(&d->jp, "required field is missing");
        goto pop_out;
    }
    if ((st = fj_jpath_check_str(&d->jp, type)))
        goto pop_out;
    const char *t = type->v.s;
    int kind;
    if (strcmp(t, "sample") == 0)
        kind = FJ_KIND_SAMPLE;
    else if (strcmp(t, "sysinfo") == 0)
        kind = FJ_KIND_SYSINFO;
    else if (strcmp(t, "job") == 0 || strcmp(t, "jobs") == 0)
        kind = FJ_KIND_JOB;
    else if (strcmp(t, "cluster") == 0)
        kind = FJ_KIND_CLUSTER;
    else if (strcmp(t, "slurm_jobs") == 0) {
        st = fj_jpath_fail(&d->jp,
                           "data type \"slurm_jobs\" is the pre-release Sonar 0.13 job format, "
                           "which is not supported; upgrade Sonar");
        goto pop_out;
    } else {
        st = fj_jpath_fail(&d->jp, "unknown data type \"%.40s\" (want sample, sysinfo, job or cluster)", t);
        goto pop_out;
    }
    if (expect >= 0 && kind != expect) {
        st = fj_jpath_fail(&d->jp, "data type \"%s\" does not belong on this route, which takes \"%s\"", t,
                           fj_kind_name((fj_kind)expect));
        goto pop_out;
    }
    env->kind = (fj_kind)kind;
    if (strcmp(t, "jobs") == 0 && (st = fj_jpath_note(&d->jp, "data_type_alias", "\"jobs\" read as \"job\"")))
        goto pop_out;
    fj_jpath_pop(&d->jp);

    fj_jpath_push_key(&d->jp, "attributes");
    if (!attrs) {
        st = fj_jpath_fail(&d->jp, "required field is missing");
        goto pop_out;
    }
    switch (kind) {
    case FJ_KIND_SAMPLE:
        st = decode_object(d, attrs, F_SAMPLE, NFIELDS(F_SAMPLE), env, sample_custom);
        break;
    case FJ_KIND_SYSINFO:
        st = decode_object(d, attrs, F_SYSINFO, NFIELDS(F_SYSINFO), env, sysinfo_custom);
        break;
    case FJ_KIND_JOB:
        st = decode_object(d, attrs, F_JOBS, NFIELDS(F_JOBS), env, jobs_custom);
        break;
    default:
        st = decode_object(d, attrs, F_CLUSTER, NFIELDS(F_CLUSTER), env, cluster_custom);
        break;
    }
pop_out:
    fj_jpath_pop(&d->jp);
    return st;
}

static fj_status decode_envelope(dec *d, const fj_json *root, int expect)
{
    fj_envelope *env = d->env;
    const fj_json *meta = NULL, *data = NULL, *errors = NULL;
    fj_status st;
    if (root->type != FJ_JSON_OBJECT)
        return fj_jpath_fail(&d->jp, "an envelope must be a JSON object, got %s", fj_json_type_name(root->type));
    for (size_t m = 0; m < root->len; m++) {
        const fj_json_member *mem = &root->v.members[m];
        const fj_json *v = mem->value.type == FJ_JSON_NULL ? NULL : &mem->value;
        if (strcmp(mem->key, "meta") == 0 && mem->key_len == 4)
            meta = v;
        else if (strcmp(mem->key, "data") == 0 && mem->key_len == 4)
            data = v;
        else if (strcmp(mem->key, "errors") == 0 && mem->key_len == 6)
            errors = v;
        else {
            fj_jpath_push_key(&d->jp, mem->key);
            st = unknown_field(d, &mem->value);
            fj_jpath_pop(&d->jp);
            if (st)
                return st;
        }
    }
    fj_jpath_push_key(&d->jp, "meta");
    st = meta ? decode_object(d, meta, F_META, NFIELDS(F_META), env, meta_custom)
              : fj_jpath_fail(&d->jp, "required field is missing");
    fj_jpath_pop(&d->jp);
    if (st)
        return st;

    if (errors && errors->type != FJ_JSON_ARRAY) {
        fj_jpath_push_key(&d->jp, "errors");
        st = fj_jpath_type_error(&d->jp, "array", errors);
        fj_jpath_pop(&d->jp);
        return st;
    }
    if (errors && errors->len == 0)
        errors = NULL; /* an empty list is no errors */
    if (data && errors) {
        fj_jpath_push_key(&d->jp, "errors");
        st = fj_jpath_fail(&d->jp, "an envelope carries data or errors, not both");
        fj_jpath_pop(&d->jp);
        return st;
    }
    if (!data && !errors)
        return fj_jpath_fail(&d->jp, "an envelope must carry data or errors, and this one has neither");

    if (data) {
        fj_jpath_push_key(&d->jp, "data");
        st = decode_data(d, data, expect);
        fj_jpath_pop(&d->jp);
        return st;
    }

    env->kind = expect >= 0 ? (fj_kind)expect : (fj_kind)FJ_SONAR_KIND_UNKNOWN;
    env->is_error = true;
    fj_jpath_push_key(&d->jp, "errors");
    st = decode_errors(d, errors);
    fj_jpath_pop(&d->jp);
    if (st)
        return st;
    env->time = env->errors[0].time;
    env->cluster = env->errors[0].cluster;
    if (env->kind != FJ_KIND_JOB && env->kind != FJ_KIND_CLUSTER)
        env->node = env->errors[0].node;
    return FJ_OK;
}

/* decode_object tracks seen fields in a 64-bit mask. */
_Static_assert(NFIELDS(F_SJOB) <= 64 && NFIELDS(F_SYSINFO) <= 64 && NFIELDS(F_PROC) <= 64 &&
                   NFIELDS(F_SGPU) <= 64 && NFIELDS(F_CARD) <= 64 && NFIELDS(F_SACCT) <= 64,
               "field table too large for the seen mask");

fj_status fj_sonar_decode(const fj_json *root, int expect, fj_batch *b, fj_err *err)
{
    if (expect < -1 || expect >= FJ_KIND__COUNT)
        return fj_err_set(err, FJ_EINTERNAL, "", "fj_sonar_decode: bad expected kind %d", expect);
    size_t before = b->n_envs;
    fj_envelope *env = fj_batch_add(b);
    if (!env)
        return fj_err_set(err, FJ_ENOMEM, "", "out of memory");
    dec d = {.jp = {.a = b->arena, .err = err, .max_notes = FJ_SONAR_MAX_NOTES},
             .env = env,
             .names_left = FJ_SONAR_MAX_NAMES};
    fj_status st = fj_jpath_end_notes(&d.jp, decode_envelope(&d, root, expect));
    if (st != FJ_OK) {
        memset(&b->envs[before], 0, sizeof b->envs[before]);
        b->n_envs = before;
        return st;
    }
    env->notes = d.jp.notes;
    env->n_notes = d.jp.n_notes;
    return FJ_OK;
}

/* --- bodies -------------------------------------------------------------------------------- */

/* Where a JSON syntax error is: the parser reports "line L, column C" relative to the text it was
 * given, which starts at the current envelope; turn that into a byte offset and into a line and
 * column relative to the whole body. */
static size_t locate(const char *text, size_t len, const char *path, size_t *line, size_t *col)
{
    unsigned long l, c;
    if (sscanf(path, "line %lu, column %lu", &l, &c) != 2 || l == 0 || c == 0)
        return SIZE_MAX;
    size_t off = 0;
    for (unsigned long k = 1; k < l; k++) {
        const char *nl = memchr(text + off, '\n', len - off);
        if (!nl)
            return SIZE_MAX;
        off = (size_t)(nl - text) + 1;
    }
    *line = l;
    *col = c;
    off += c - 1;
    return off < len ? off : len;
}

/* Line numbers are needed only for syntax errors: a cursor that moves forward on demand keeps the
 * total counting work linear in the body without touching every byte of good envelopes. */
typedef struct line_cursor {
    size_t off, line, line_start;
} line_cursor;

static void advance_lines(const char *body, line_cursor *c, size_t to)
{
    while (c->off < to) {
        const char *nl = memchr(body + c->off, '\n', to - c->off);
        if (!nl) {
            c->off = to;
            break;
        }
        c->line++;
        c->off = c->line_start = (size_t)(nl - body) + 1;
    }
}

fj_status fj_sonar_decode_body(const char *body, size_t len, int expect, fj_batch *b, fj_sonar_item_fn fn,
                               void *ctx, fj_err *err)
{
    size_t pos = 0, index = 0, accepted = 0;
    line_cursor lc = {0, 1, 0};
    bool have_first = false;
    fj_err first = {0};

    for (;;) {
        while (pos < len && (body[pos] == ' ' || body[pos] == '\t' || body[pos] == '\r' || body[pos] == '\n'))
            pos++;
        if (pos >= len)
            break;
        fj_arena *ja = fj_arena_create(); /* the tree lives only while one envelope is decoded */
        if (!ja)
            return fj_err_set(err, FJ_ENOMEM, "", "out of memory");
        fj_json *root = NULL;
        size_t used = 0;
        fj_err e = {0};
        fj_status st = fj_json_parse(ja, body + pos, len - pos, &used, &root, &e);
        size_t next;
        if (st == FJ_EINVAL) {
            size_t l = 0, c = 0;
            size_t at = locate(body + pos, len - pos, e.path, &l, &c);
            if (at == SIZE_MAX) {
                at = 0;
            } else {
                advance_lines(body, &lc, pos);
                size_t abs_line = lc.line + l - 1, abs_col = l == 1 ? pos - lc.line_start + c : c;
                snprintf(e.path, sizeof e.path, "line %zu, column %zu", abs_line, abs_col);
            }
            /* Resume at the next line that starts an object, after the error. */
            next = pos + at;
            for (;;) {
                const char *nl = memchr(body + next, '\n', len - next);
                next = nl ? (size_t)(nl - body) + 1 : len;
                if (next >= len || body[next] == '{')
                    break;
            }
        } else if (st == FJ_OK) {
            st = fj_sonar_decode(root, expect, b, &e);
            next = pos + used;
        } else {
            fj_arena_destroy(ja);
            return fj_err_set(err, st, e.path, "%s", e.message);
        }
        fj_arena_destroy(ja);
        if (st == FJ_ENOMEM) {
            if (fn)
                fn(ctx, index, st, &e, NULL);
            if (err)
                *err = e;
            return st;
        }
        if (st == FJ_OK)
            accepted++;
        else if (!have_first) {
            first = e;
            have_first = true;
        }
        if (fn)
            fn(ctx, index, st, st == FJ_OK ? NULL : &e, st == FJ_OK ? &b->envs[b->n_envs - 1] : NULL);
        index++;
        pos = next;
    }
    if (accepted)
        return FJ_OK;
    if (!have_first)
        return fj_err_set(err, FJ_EINVAL, "", "empty body: no envelope");
    if (err)
        *err = first;
    return FJ_EINVAL;
}
