/* cc.c — line protocol into metric points, ClusterCockpit messages and jobs (see cc.h). The body is
 * copied once into the batch's arena; keys that need no unescaping point into that copy, so a
 * typical ClusterCockpit line costs no allocation beyond its slot in the point array. */
#include "ingest/cc.h"

#include "buf.h"
#include "ingest/metric_name.h"
#include "json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- classification ------------------------------------------------------------------------ */

/* The tags ClusterCockpit gives a meaning to. */
typedef enum { TAG_OTHER, TAG_CLUSTER, TAG_HOSTNAME, TAG_HOST, TAG_TYPE, TAG_TYPE_ID, TAG_STYPE, TAG_STYPE_ID } cc_tag;

static bool is_number(fj_lp_ftype t)
{
    return t == FJ_LP_FLOAT || t == FJ_LP_INT || t == FJ_LP_UINT;
}

/* ClusterCockpit's scopes, the values its line protocol gives the `type` tag (its line-protocol
 * flavour's list; cc-lib's MetricScope and cc-backend's cluster.json `scope` name the same, less
 * die and llc). Case matters, as in cc-metric-store's selectors. */
static bool is_cc_scope(const fj_lp_str *v)
{
    if (v->esc != FJ_LP_RAW) {
        static const char *const scopes[] = {"node", "socket", "die", "memoryDomain", "llc", "core", "hwthread",
                                             "accelerator"};
        for (size_t i = 0; i < sizeof scopes / sizeof *scopes; i++)
            if (fj_lp_str_eq(v, scopes[i]))
                return true;
        return false;
    }
    /* every metric line asks: by length, then constant-size comparisons */
    const char *p = v->p;
    switch (v->n) {
    case 3: return !memcmp(p, "die", 3) || !memcmp(p, "llc", 3);
    case 4: return !memcmp(p, "node", 4) || !memcmp(p, "core", 4);
    case 6: return !memcmp(p, "socket", 6);
    case 8: return !memcmp(p, "hwthread", 8);
    case 11: return !memcmp(p, "accelerator", 11);
    case 12: return !memcmp(p, "memoryDomain", 12);
    default: return false;
    }
}

static inline __attribute__((always_inline)) cc_tag tag_of(const fj_lp_str *key);

/* Whether a line with a numeric `value` field is ClusterCockpit's metric line: its `type` is one of
 * ClusterCockpit's scopes, or it has no `type` and no tag beyond those ClusterCockpit gives a
 * meaning to (then both readings keep every tag, and lines sent before this rule keep their
 * series). Any other line is plain InfluxDB line protocol: collectd's `type=cpu`, a
 * `region=us-west`. */
static bool cc_metric_tags(const fj_lp_line *l)
{
    bool plain_tag = false;
    for (size_t i = 0; i < l->n_tags; i++)
        switch (tag_of(&l->tags[i].key)) {
        case TAG_TYPE: return is_cc_scope(&l->tags[i].value);
        case TAG_OTHER: plain_tag = true; break;
        default: break;
        }
    return !plain_tag;
}

/* fj_cc_classify, with cc_metric_tags already known (0 or 1; -1: not yet). */
static fj_cc_class classify(const fj_lp_line *l, int cc_tags, size_t *field)
{
    static const struct {
        const char *key;
        fj_cc_class cls;
    } order[] = {{"event", FJ_CC_EVENT}, {"log", FJ_CC_LOG}, {"control", FJ_CC_CONTROL}};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (size_t i = 0; i < l->n_fields; i++)
            if (l->fields[i].type == FJ_LP_STRING && fj_lp_str_eq(&l->fields[i].key, order[k].key)) {
                if (field)
                    *field = i;
                return order[k].cls;
            }
    for (size_t i = 0; i < l->n_fields; i++)
        if (is_number(l->fields[i].type) && fj_lp_str_eq(&l->fields[i].key, "value")) {
            if (!(cc_tags < 0 ? cc_metric_tags(l) : cc_tags))
                break;
            if (field)
                *field = i;
            return FJ_CC_METRIC;
        }
    if (field)
        *field = 0;
    return FJ_CC_GENERIC;
}

fj_cc_class fj_cc_classify(const fj_lp_line *l, size_t *field)
{
    return classify(l, -1, field);
}

static const fj_lp_str *tag(const fj_lp_line *l, const char *key)
{
    for (size_t i = 0; i < l->n_tags; i++)
        if (fj_lp_str_eq(&l->tags[i].key, key))
            return &l->tags[i].value;
    return NULL;
}

int fj_cc_job_event_op(const fj_lp_line *l)
{
    if (fj_lp_str_eq(&l->measurement, "start_job"))
        return FJ_CC_JOB_START;
    if (fj_lp_str_eq(&l->measurement, "stop_job"))
        return FJ_CC_JOB_STOP;
    if (!fj_lp_str_eq(&l->measurement, "job"))
        return -1;
    const fj_lp_str *f = tag(l, "function");
    if (f && fj_lp_str_eq(f, "start_job"))
        return FJ_CC_JOB_START;
    if (f && fj_lp_str_eq(f, "stop_job"))
        return FJ_CC_JOB_STOP;
    return -1;
}

/* --- job payloads ---------------------------------------------------------------------------- */

bool fj_cc_job_state_valid(const char *s)
{
    static const char *const states[] = {"running", "completed", "failed",    "cancelled",
                                         "stopped", "timeout",   "preempted", "out_of_memory"};
    for (size_t i = 0; s && i < sizeof states / sizeof states[0]; i++)
        if (!strcmp(s, states[i]))
            return true;
    return false;
}

static fj_status want_uint(const fj_json *o, const char *key, bool required, uint64_t *out, fj_err *err)
{
    const fj_json *v = fj_json_get(o, key);
    if (!v || v->type == FJ_JSON_NULL) {
        if (required)
            return fj_err_set(err, FJ_EINVAL, key, "the field '%s' is required", key);
        return FJ_OK;
    }
    if (v->type != FJ_JSON_UINT)
        return fj_err_set(err, FJ_EINVAL, key, "'%s' must be a non-negative integer, not %s", key,
                          fj_json_type_name(v->type));
    /* cc-backend's job ids, times and counts are signed 64-bit (or smaller), as fjord's columns */
    if (v->v.u > (uint64_t)INT64_MAX)
        return fj_err_set(err, FJ_EINVAL, key, "'%s' %llu is too large: at most %lld (a signed 64-bit integer)", key,
                          (unsigned long long)v->v.u, (long long)INT64_MAX);
    *out = v->v.u;
    return FJ_OK;
}

static fj_status want_str(const fj_json *o, const char *key, bool required, const char **out, fj_err *err)
{
    const fj_json *v = fj_json_get(o, key);
    if (!v || v->type == FJ_JSON_NULL || (v->type == FJ_JSON_STRING && v->len == 0)) {
        if (required)
            return fj_err_set(err, FJ_EINVAL, key, "the field '%s' is required", key);
        return FJ_OK;
    }
    if (v->type != FJ_JSON_STRING || strlen(v->v.s) != v->len)
        return fj_err_set(err, FJ_EINVAL, key, "'%s' must be a string", key);
    *out = v->v.s;
    return FJ_OK;
}

fj_status fj_cc_job_parse(fj_arena *a, fj_cc_job_op op, const char *json, size_t len,
                          const char *default_cluster, fj_cc_job *out, fj_err *err)
{
    memset(out, 0, sizeof *out);
    out->op = op;
    fj_json *root = NULL;
    size_t end = 0;
    fj_status st = fj_json_parse(a, json, len, &end, &root, err);
    if (st != FJ_OK)
        return st;
    for (; end < len; end++)
        if (json[end] != ' ' && json[end] != '\n' && json[end] != '\r' && json[end] != '\t')
            return fj_err_set(err, FJ_EINVAL, "body", "trailing data after the JSON object");
    if (root->type != FJ_JSON_OBJECT)
        return fj_err_set(err, FJ_EINVAL, "body", "the payload must be a JSON object");
    uint64_t start = 0, stop = 0;
    if ((st = want_uint(root, "jobId", true, &out->job_id, err)) != FJ_OK ||
        (st = want_str(root, "cluster", default_cluster == NULL, &out->cluster, err)) != FJ_OK ||
        (st = want_uint(root, "startTime", op == FJ_CC_JOB_START, &start, err)) != FJ_OK)
        return st;
    if (!out->cluster)
        out->cluster = fj_arena_strdup(a, default_cluster);
    out->start_time = (fj_time)start;
    if (op == FJ_CC_JOB_START) {
        if (out->start_time <= 0)
            return fj_err_set(err, FJ_EINVAL, "startTime", "startTime must be positive");
        if ((st = want_str(root, "user", true, &out->user, err)) != FJ_OK ||
            (st = want_str(root, "project", false, &out->project, err)) != FJ_OK ||
            (st = want_str(root, "partition", false, &out->partition, err)) != FJ_OK ||
            (st = want_str(root, "subCluster", false, &out->subcluster, err)) != FJ_OK ||
            (st = want_uint(root, "numNodes", false, &out->num_nodes, err)) != FJ_OK ||
            (st = want_uint(root, "numHwthreads", false, &out->num_hwthreads, err)) != FJ_OK ||
            (st = want_uint(root, "numAcc", false, &out->num_acc, err)) != FJ_OK)
            return st;
        const fj_json *res = fj_json_get(root, "resources");
        if (!res || res->type != FJ_JSON_ARRAY || res->len == 0)
            return fj_err_set(err, FJ_EINVAL, "resources", "'resources' must be a non-empty array");
        fj_buf hosts;
        fj_buf_init(&hosts, len + 16);
        fj_buf_puts(&hosts, "[");
        for (size_t i = 0; i < res->len; i++) {
            const char *h = NULL;
            if (res->v.items[i].type != FJ_JSON_OBJECT ||
                want_str(&res->v.items[i], "hostname", true, &h, NULL) != FJ_OK) {
                fj_buf_free(&hosts);
                char path[64];
                snprintf(path, sizeof path, "resources[%zu].hostname", i);
                return fj_err_set(err, FJ_EINVAL, path, "every resource needs a hostname");
            }
            if (i)
                fj_buf_puts(&hosts, ",");
            fj_buf_json_str(&hosts, h);
        }
        fj_buf_puts(&hosts, "]");
        out->hosts = hosts.data ? fj_arena_strndup(a, hosts.data, hosts.len) : NULL;
        fj_buf_free(&hosts);
        if (!out->hosts)
            return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
        if (!out->num_nodes)
            out->num_nodes = res->len;
        out->state = "running";
    } else {
        if ((st = want_uint(root, "stopTime", true, &stop, err)) != FJ_OK ||
            (st = want_str(root, "jobState", false, &out->state, err)) != FJ_OK)
            return st;
        out->stop_time = (fj_time)stop;
        if (!out->state)
            out->state = "completed";
        else if (!fj_cc_job_state_valid(out->state) || !strcmp(out->state, "running"))
            return fj_err_set(err, FJ_EINVAL, "jobState", "invalid job state '%s'", out->state);
    }
    out->payload = fj_arena_strndup(a, json, len);
    if (!out->payload || !out->cluster)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    return FJ_OK;
}

/* --- decoding -------------------------------------------------------------------------------- */

typedef struct dctx {
    fj_arena *a;
    fj_metrics *m;
    size_t cap_points, cap_msgs, cap_jobs, cap_clusters, cap_cluster_lines, cap_strings;
    fj_mstr last_cluster; /* the cluster note_cluster saw last (a copy in m->clusters) */
    size_t lineno;        /* of the line being taken */
    fj_buf scratch; /* tags JSON, composed names */
} dctx;

/* Grows an arena array by doubling; the old block stays in the arena (freed with it). */
/* Room for element n of *arr (callers fill every element they take: no zeroing, which showed in
 * ingest profiles). */
static bool grow(fj_arena *a, void **arr, size_t n, size_t *cap, size_t sz)
{
    if (n < *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = nc <= SIZE_MAX / sz ? fj_arena_alloc(a, nc * sz) : NULL;
    if (!p)
        return false;
    if (n)
        memcpy(p, *arr, n * sz);
    *arr = p;
    *cap = nc;
    return true;
}

static bool mstr_of(fj_arena *a, const fj_lp_str *s, fj_mstr *out)
{
    if (!s) {
        *out = (fj_mstr){NULL, 0};
        return true;
    }
    if (s->esc == FJ_LP_RAW) {
        *out = (fj_mstr){s->p, s->n};
        return true;
    }
    size_t n;
    char *p = fj_lp_str_dup(a, s, &n);
    if (!p)
        return false;
    *out = (fj_mstr){p, n};
    return true;
}

/* The unescaped measurement with its dots escaped for a series key's metric (ingest/metric_name.h;
 * field_follows: a plain line's, before ".field") at dst (cap bytes); its length, 0 when too long. */
static size_t measurement_escaped(const fj_lp_str *m, bool field_follows, char *dst, size_t cap)
{
    char tmp[1024];
    if (m->n > sizeof tmp || 2 * sizeof tmp > cap)
        return 0;
    if (m->esc == FJ_LP_RAW && !fj_mname_needs_escape(m->p, m->n, '.')) { /* nearly every name */
        memcpy(dst, m->p, m->n);
        return m->n;
    }
    size_t n = fj_lp_unescape(m, tmp);
    if (!fj_mname_needs_escape(tmp, n, '.')) {
        memcpy(dst, tmp, n);
        return n;
    }
    return fj_mname_escape(tmp, n, '.', field_follows, dst);
}

/* A ClusterCockpit metric line's metric: its measurement, dots escaped so that it is not read as
 * a plain line's "measurement.field" (a name without a dot or backslash, nearly all, as it is). */
static const char *cc_metric_name(fj_arena *a, const fj_lp_str *m, fj_mstr *out)
{
    if (m->esc == FJ_LP_RAW && !fj_mname_needs_escape(m->p, m->n, '.'))
        return mstr_of(a, m, out) ? NULL : "out of memory";
    char buf[2048];
    size_t n = measurement_escaped(m, false, buf, sizeof buf);
    if (!n)
        return "measurement name too long";
    char *p = fj_arena_strndup(a, buf, n);
    if (!p)
        return "out of memory";
    *out = (fj_mstr){p, n};
    return NULL;
}

static char *cstr_of(fj_arena *a, const fj_lp_str *s)
{
    return s ? fj_lp_str_dup(a, s, NULL) : fj_arena_strdup(a, "");
}

/* Remembers the cluster among the envelope's distinct clusters, with the first line that named
 * it; a body names one or a few. */
static bool note_cluster(dctx *d, fj_mstr c)
{
    fj_metrics *m = d->m;
    /* nearly every point names the cluster of the point before */
    if (c.n == d->last_cluster.n && (c.p == d->last_cluster.p || !memcmp(c.p, d->last_cluster.p, c.n)))
        return true;
    for (size_t i = m->n_clusters; i-- > 0;)
        if (strlen(m->clusters[i]) == c.n && !memcmp(m->clusters[i], c.p, c.n)) {
            d->last_cluster = (fj_mstr){m->clusters[i], c.n};
            return true;
        }
    if (!grow(d->a, (void **)&m->clusters, m->n_clusters, &d->cap_clusters, sizeof *m->clusters) ||
        !grow(d->a, (void **)&m->cluster_lines, m->n_clusters, &d->cap_cluster_lines, sizeof *m->cluster_lines))
        return false;
    char *s = fj_arena_strndup(d->a, c.p, c.n);
    if (!s)
        return false;
    m->cluster_lines[m->n_clusters] = d->lineno;
    m->clusters[m->n_clusters++] = s;
    d->last_cluster = (fj_mstr){s, c.n};
    return true;
}

typedef struct keytags {
    const fj_lp_str *cluster, *host, *type, *type_id, *stype, *stype_id;
    size_t type_i, type_id_i, hostname_i; /* their tags' indices, when present */
    bool both_hosts;                      /* a `host` and a `hostname` tag */
    size_t others[FJ_LP_MAX_TAGS];
    size_t n_others;
} keytags;

/* Which tag a key is. This runs for every tag of every line: unescaped keys (nearly all) are
 * told apart by length, then by constant-size comparisons the compiler inlines. */
static inline __attribute__((always_inline)) cc_tag tag_of(const fj_lp_str *key)
{
    if (key->esc != FJ_LP_RAW) {
        static const char *const names[] = {"cluster", "hostname", "host", "type", "type-id", "stype", "stype-id"};
        static const cc_tag tags[] = {TAG_CLUSTER, TAG_HOSTNAME, TAG_HOST,    TAG_TYPE,
                                      TAG_TYPE_ID, TAG_STYPE,    TAG_STYPE_ID};
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            if (fj_lp_str_eq(key, names[i]))
                return tags[i];
        return TAG_OTHER;
    }
    const char *p = key->p;
    switch (key->n) {
    case 4:
        return !memcmp(p, "host", 4) ? TAG_HOST : !memcmp(p, "type", 4) ? TAG_TYPE : TAG_OTHER;
    case 5:
        return !memcmp(p, "stype", 5) ? TAG_STYPE : TAG_OTHER;
    case 7:
        return !memcmp(p, "cluster", 7) ? TAG_CLUSTER : !memcmp(p, "type-id", 7) ? TAG_TYPE_ID : TAG_OTHER;
    case 8:
        return !memcmp(p, "hostname", 8) ? TAG_HOSTNAME : !memcmp(p, "stype-id", 8) ? TAG_STYPE_ID : TAG_OTHER;
    default:
        return TAG_OTHER;
    }
}

static void scan_tags(const fj_lp_line *l, keytags *k)
{
    memset(k, 0, offsetof(keytags, others));
    k->n_others = 0;
    const fj_lp_str *hostname = NULL, *host = NULL;
    for (size_t i = 0; i < l->n_tags; i++) {
        const fj_lp_str *v = &l->tags[i].value;
        switch (tag_of(&l->tags[i].key)) {
        case TAG_CLUSTER: k->cluster = v; break;
        case TAG_HOSTNAME: hostname = v, k->hostname_i = i; break;
        case TAG_HOST: host = v; break;
        case TAG_TYPE: k->type = v, k->type_i = i; break;
        case TAG_TYPE_ID: k->type_id = v, k->type_id_i = i; break;
        case TAG_STYPE: k->stype = v; break;
        case TAG_STYPE_ID: k->stype_id = v; break;
        case TAG_OTHER: k->others[k->n_others++] = i; break;
        }
    }
    k->host = hostname ? hostname : host;
    k->both_hosts = hostname && host;
}

/* A plain InfluxDB line keeps every tag: those that are not its series key's ClusterCockpit
 * columns join the folded sub-type. Its `type` is a ClusterCockpit type (with `type-id` unless
 * node) only when it is one of ClusterCockpit's scopes, as plain lines carrying ClusterCockpit's
 * topology were stored before; any other `type` (collectd's `cpu`, `load`) and a `type-id`
 * without such a type are ordinary tags. With both `host` and `hostname`, `host` is the host and
 * `hostname` an ordinary tag. */
static void plain_tags(const fj_lp_line *l, keytags *k)
{
    if (k->type && !(is_cc_scope(k->type) && (k->type_id || fj_lp_str_eq(k->type, "node")))) {
        k->others[k->n_others++] = k->type_i;
        k->type = NULL;
        if (k->type_id) {
            k->others[k->n_others++] = k->type_id_i;
            k->type_id = NULL;
        }
    } else if (!k->type && k->type_id) {
        k->others[k->n_others++] = k->type_id_i;
        k->type_id = NULL;
    }
    if (k->both_hosts) {
        k->others[k->n_others++] = k->hostname_i;
        for (size_t i = 0; i < l->n_tags; i++)
            if (tag_of(&l->tags[i].key) == TAG_HOST)
                k->host = &l->tags[i].value;
    }
}

/* qsort has no context argument; decoding runs on one thread at a time per thread */
static _Thread_local const fj_lp_line *tl_sort_line;

static int cmp_tag_key(const void *x, const void *y)
{
    const fj_lp_str *a = &tl_sort_line->tags[*(const size_t *)x].key;
    const fj_lp_str *b = &tl_sort_line->tags[*(const size_t *)y].key;
    size_t n = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->p, b->p, n);
    return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* The series key every point of the line shares, metric aside. */
static const char *line_key(dctx *d, const fj_lp_line *l, const keytags *k, fj_mstr cluster, bool generic,
                            fj_metric_point *kp)
{
    memset(kp, 0, sizeof *kp);
    kp->cluster = cluster;
    if (!mstr_of(d->a, k->host, &kp->host))
        return "out of memory";
    if (k->type && !fj_lp_str_eq(k->type, "node")) {
        if (!mstr_of(d->a, k->type, &kp->type) || !mstr_of(d->a, k->type_id, &kp->type_id))
            return "out of memory";
        if (!k->type_id)
            return "tag type-id is required for a type other than node";
    } else {
        kp->type = (fj_mstr){"node", 4};
    }
    if (k->stype) {
        if (!mstr_of(d->a, k->stype, &kp->stype) || !mstr_of(d->a, k->stype_id, &kp->stype_id))
            return "out of memory";
    } else if (generic && k->n_others) {
        size_t idx[FJ_LP_MAX_TAGS];
        memcpy(idx, k->others, k->n_others * sizeof *idx);
        tl_sort_line = l;
        qsort(idx, k->n_others, sizeof *idx, cmp_tag_key);
        for (int part = 0; part < 2; part++) {
            fj_buf_reset(&d->scratch);
            for (size_t i = 0; i < k->n_others; i++) {
                const fj_lp_str *s = part ? &l->tags[idx[i]].value : &l->tags[idx[i]].key;
                if (i)
                    fj_buf_append(&d->scratch, ",", 1);
                /* a token without escapes holds no comma (line protocol escapes it) */
                if (s->esc == FJ_LP_RAW && !memchr(s->p, '\\', s->n)) {
                    fj_buf_append(&d->scratch, s->p, s->n);
                    continue;
                }
                /* a comma in a key or value is escaped, so that the fold reads back exactly */
                char tmp[1024], esc[2 * sizeof tmp];
                size_t n = s->n <= sizeof tmp ? fj_lp_unescape(s, tmp) : 0;
                fj_buf_append(&d->scratch, esc, fj_mname_escape(tmp, n, ',', i + 1 < k->n_others, esc));
            }
            char *p = fj_arena_strndup(d->a, d->scratch.data ? d->scratch.data : "", d->scratch.len);
            if (!p)
                return "out of memory";
            if (part)
                kp->stype_id = (fj_mstr){p, d->scratch.len};
            else
                kp->stype = (fj_mstr){p, d->scratch.len};
        }
    }
    return NULL;
}

static fj_metric_point *new_point(dctx *d)
{
    fj_metrics *m = d->m;
    if (!grow(d->a, (void **)&m->points, m->n_points, &d->cap_points, sizeof *m->points))
        return NULL;
    return &m->points[m->n_points++];
}

static const char *add_message(dctx *d, const fj_lp_line *l, const keytags *k, fj_cc_class cls, size_t f,
                               fj_mstr cluster, int64_t t)
{
    fj_metrics *m = d->m;
    if (!grow(d->a, (void **)&m->messages, m->n_messages, &d->cap_msgs, sizeof *m->messages))
        return "out of memory";
    fj_cc_message *msg = &m->messages[m->n_messages];
    memset(msg, 0, sizeof *msg);
    msg->kind = cls == FJ_CC_EVENT ? FJ_CC_MSG_EVENT : cls == FJ_CC_LOG ? FJ_CC_MSG_LOG : FJ_CC_MSG_CONTROL;
    msg->cluster = fj_arena_strndup(d->a, cluster.p, cluster.n);
    msg->host = cstr_of(d->a, k->host);
    msg->name = cstr_of(d->a, &l->measurement);
    msg->payload = fj_lp_str_dup(d->a, &l->fields[f].v.s, &msg->payload_len);
    msg->time = t;
    fj_buf_reset(&d->scratch);
    fj_buf_puts(&d->scratch, "{");
    for (size_t i = 0; i < l->n_tags; i++) {
        char *key = cstr_of(d->a, &l->tags[i].key), *val = cstr_of(d->a, &l->tags[i].value);
        if (!key || !val)
            return "out of memory";
        if (i)
            fj_buf_puts(&d->scratch, ",");
        fj_buf_json_str(&d->scratch, key);
        fj_buf_puts(&d->scratch, ":");
        fj_buf_json_str(&d->scratch, val);
    }
    fj_buf_puts(&d->scratch, "}");
    msg->tags = fj_arena_strndup(d->a, d->scratch.data ? d->scratch.data : "{}", d->scratch.data ? d->scratch.len : 2);
    if (!msg->cluster || !msg->host || !msg->name || !msg->payload || !msg->tags)
        return "out of memory";

    int op = cls == FJ_CC_EVENT ? fj_cc_job_event_op(l) : -1;
    if (op >= 0) {
        if (!grow(d->a, (void **)&m->jobs, m->n_jobs, &d->cap_jobs, sizeof *m->jobs))
            return "out of memory";
        fj_cc_job *j = &m->jobs[m->n_jobs];
        memset(j, 0, sizeof *j);
        static _Thread_local fj_err jerr;
        memset(&jerr, 0, sizeof jerr);
        fj_status st = fj_cc_job_parse(d->a, (fj_cc_job_op)op, msg->payload, msg->payload_len,
                                       msg->cluster, j, &jerr);
        if (st != FJ_OK) {
            static _Thread_local char why[sizeof jerr.message + sizeof jerr.path + 32];
            snprintf(why, sizeof why, "job event payload: %s%s%s", jerr.message, jerr.path[0] ? " at " : "",
                     jerr.path);
            return why;
        }
        m->n_jobs++;
    }
    m->n_messages++;
    return NULL;
}

/* One parsed line into records; NULL, or why the line is refused. Nothing of a refused line is
 * kept (records appended before the failure are dropped by the caller). */
static const char *take_line(dctx *d, const fj_lp_line *l, const fj_cc_opts *o)
{
    keytags k;
    scan_tags(l, &k);
    fj_mstr cluster = {NULL, 0};
    if (k.cluster) {
        if (!mstr_of(d->a, k.cluster, &cluster))
            return "out of memory";
    } else if (d->m->default_cluster && *d->m->default_cluster) { /* the batch's copy */
        cluster = (fj_mstr){d->m->default_cluster, strlen(d->m->default_cluster)};
    } else {
        return "no cluster: add a cluster tag, or name it in the request (cluster, db or bucket)";
    }

    int64_t t;
    if (l->has_time) {
        int64_t unit = o->unit_ns ? o->unit_ns : fj_lp_infer_unit(l->time);
        if (fj_lp_time_to_ns(l->time, unit, &t) != FJ_OK)
            return "timestamp out of range";
    } else {
        int64_t unit = o->unit_ns ? o->unit_ns : 1000000000;
        t = o->arrival_ns - o->arrival_ns % unit;
    }
    if (o->max_future_ns > 0 && t > o->arrival_ns && t - o->arrival_ns > o->max_future_ns)
        return "timestamp too far in the future";

    size_t f = 0;
    fj_cc_class cls = classify(l, k.type ? is_cc_scope(k.type) : k.n_others == 0, &f);
    if (cls == FJ_CC_EVENT || cls == FJ_CC_LOG || cls == FJ_CC_CONTROL) {
        if (o->points_only)
            return NULL;
        size_t n_jobs = d->m->n_jobs;
        const char *why = add_message(d, l, &k, cls, f, cluster, t);
        if (why)
            return why;
        /* A job payload names its own cluster, which may differ from the line's: the credential
         * must cover both. */
        if (d->m->n_jobs > n_jobs) {
            const char *jc = d->m->jobs[n_jobs].cluster;
            if (!note_cluster(d, (fj_mstr){jc, strlen(jc)}))
                return "out of memory";
        }
        return note_cluster(d, cluster) ? NULL : "out of memory";
    }

    if (cls == FJ_CC_GENERIC)
        plain_tags(l, &k);
    fj_metric_point kp;
    const char *why = line_key(d, l, &k, cluster, cls == FJ_CC_GENERIC, &kp);
    if (why)
        return why;
    if (cls == FJ_CC_METRIC) {
        if ((why = cc_metric_name(d->a, &l->measurement, &kp.metric)) != NULL)
            return why;
        fj_metric_point *p = new_point(d);
        if (!p)
            return "out of memory";
        const fj_lp_field *fv = &l->fields[f];
        *p = kp;
        p->t = t;
        p->v = fv->type == FJ_LP_FLOAT ? fv->v.f : fv->type == FJ_LP_INT ? (double)fv->v.i : (double)fv->v.u;
        p->ftype = FJ_FT_FLOAT; /* cc-metric-store's values are all floats, whatever the line wrote */
        p->line = (uint32_t)d->lineno;
        return note_cluster(d, cluster) ? NULL : "out of memory";
    }
    /* generic: every field is a metric measurement.field of the field's type, the measurement's
     * dots escaped (ingest/metric_name.h) */
    char meas[2048];
    size_t mn = measurement_escaped(&l->measurement, true, meas, sizeof meas);
    if (!mn)
        return "measurement name too long";
    bool any = false;
    for (size_t i = 0; i < l->n_fields; i++) {
        const fj_lp_field *fv = &l->fields[i];
        double v = 0;
        fj_ftype ft;
        switch (fv->type) {
        case FJ_LP_FLOAT: v = fv->v.f, ft = FJ_FT_FLOAT; break;
        case FJ_LP_INT: v = (double)fv->v.i, ft = FJ_FT_INTEGER; break;
        case FJ_LP_UINT: v = (double)fv->v.u, ft = FJ_FT_INTEGER; break;
        case FJ_LP_BOOL: v = fv->v.b ? 1.0 : 0.0, ft = FJ_FT_BOOLEAN; break;
        default:
            if (!grow(d->a, (void **)&d->m->strings, d->m->n_strings, &d->cap_strings, sizeof *d->m->strings) ||
                !mstr_of(d->a, &fv->v.s, &d->m->strings[d->m->n_strings]))
                return "out of memory";
            v = (double)d->m->n_strings++;
            ft = FJ_FT_STRING;
            break;
        }
        char key[1024];
        size_t kn = fv->key.n <= sizeof key ? fj_lp_unescape(&fv->key, key) : 0;
        char *name = fj_arena_alloc(d->a, mn + 1 + kn + 1);
        fj_metric_point *p = name ? new_point(d) : NULL;
        if (!p)
            return "out of memory";
        memcpy(name, meas, mn);
        name[mn] = '.';
        memcpy(name + mn + 1, key, kn);
        name[mn + 1 + kn] = '\0';
        *p = kp;
        p->metric = (fj_mstr){name, mn + 1 + kn};
        p->t = t;
        p->v = v;
        p->ftype = (uint8_t)ft;
        p->line = (uint32_t)d->lineno;
        any = true;
    }
    if (any && !note_cluster(d, cluster))
        return "out of memory";
    return NULL;
}

fj_status fj_cc_decode(const char *body, size_t len, const fj_cc_opts *o, fj_batch *b,
                       fj_cc_bad_line bad, void *ud, size_t *n_good, fj_err *err)
{
    if (n_good)
        *n_good = 0;
    char *copy = fj_arena_alloc(b->arena, len + 1);
    fj_envelope *e = copy ? fj_batch_add(b) : NULL;
    if (!e)
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    memcpy(copy, body, len);
    copy[len] = '\0';
    e->kind = FJ_KIND_METRICS;
    e->cluster = o->default_cluster ? fj_arena_strdup(b->arena, o->default_cluster) : NULL;
    if (o->default_cluster && !e->cluster) {
        b->n_envs--;
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    }
    e->time = o->arrival_ns / 1000000000;
    fj_metrics *m = &e->u.metrics;
    m->default_cluster = e->cluster;
    m->unit_ns = o->unit_ns;
    m->arrival_ns = o->arrival_ns;
    m->max_future_ns = o->max_future_ns;
    if (o->keep_raw) {
        m->raw = copy;
        m->raw_len = len;
    }
    dctx d = {.a = b->arena, .m = m};
    /* Most lines are one metric point: sized for ClusterCockpit's ~80-100-byte lines up front, the
     * points array is rarely copied while it grows. */
    d.cap_points = len / 64 + 64;
    m->points = d.cap_points <= SIZE_MAX / sizeof *m->points
                    ? fj_arena_alloc(d.a, d.cap_points * sizeof *m->points)
                    : NULL;
    if (!m->points) {
        b->n_envs--;
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    }
    fj_buf_init(&d.scratch, (size_t)1 << 24);
    fj_lp_parser *p = fj_lp_parser_create(copy, len);
    if (!p) {
        fj_buf_free(&d.scratch);
        return fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
    }
    fj_status st = FJ_OK;
    size_t good = 0;
    while (!fj_lp_done(p)) {
        fj_lp_line line;
        fj_err lerr = {0};
        fj_status ls = fj_lp_next(p, &line, &lerr);
        if (ls == FJ_ENOTFOUND)
            break;
        if (ls == FJ_ENOMEM) {
            st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
            break;
        }
        if (ls != FJ_OK) {
            size_t ln, col;
            fj_lp_error_pos(p, &ln, &col);
            if (bad)
                bad(ud, ln, col, lerr.message);
            continue;
        }
        size_t np = m->n_points, nm = m->n_messages, nj = m->n_jobs, ns = m->n_strings;
        d.lineno = line.lineno;
        const char *why = take_line(&d, &line, o);
        if (why) {
            m->n_points = np, m->n_messages = nm, m->n_jobs = nj, m->n_strings = ns;
            if (!strcmp(why, "out of memory")) {
                st = fj_err_set(err, FJ_ENOMEM, NULL, "out of memory");
                break;
            }
            if (bad)
                bad(ud, line.lineno, 1, why);
            continue;
        }
        good++;
    }
    fj_lp_parser_destroy(p);
    fj_buf_free(&d.scratch);
    if (n_good)
        *n_good = good;
    return st;
}
