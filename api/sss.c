/* sss.c — nodes as SSS Node objects in XML (docs/sss.md). The node list (q_nodes: sysinfo, Slurm
 * states, partitions) and the latest utilisation (q_node_usage) are read through the storage ops
 * into small records, then written by a few XML helpers over fj_buf that escape every string.
 * Element names follow the reconstruction of the spec's tables in shared data's sss/NOTES.md. */
#include "api/sss.h"

#include "api/api_int.h"
#include "json.h"
#include "ingest/noderange.h"
#include "storage/core/store_query.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* --- XML output ------------------------------------------------------------------------------ */

fj_status fj_xml_escape(fj_buf *b, const char *s)
{
    static const char fffd[] = "\xEF\xBF\xBD";
    const unsigned char *p = (const unsigned char *)s;
    fj_status st = FJ_OK;
    while (st == FJ_OK && *p) {
        unsigned c = *p;
        if (c < 0x80) {
            switch (c) {
            case '&': st = fj_buf_puts(b, "&amp;"); break;
            case '<': st = fj_buf_puts(b, "&lt;"); break;
            case '>': st = fj_buf_puts(b, "&gt;"); break;
            case '"': st = fj_buf_puts(b, "&quot;"); break;
            case '\'': st = fj_buf_puts(b, "&apos;"); break;
            default:
                st = c < 0x20 && c != '\t' && c != '\n' && c != '\r' ? fj_buf_puts(b, fffd) : fj_buf_append(b, p, 1);
            }
            p++;
            continue;
        }
        /* A UTF-8 sequence: length from the lead byte, continuation bytes, no overlong form, no
         * surrogate, at most U+10FFFF; U+FFFE and U+FFFF are not XML characters. */
        size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? (c <= 0xEF ? 3 : 0) : c >= 0xC2 && c <= 0xDF ? 2 : 0;
        uint32_t cp = n == 4 ? c & 0x07 : n == 3 ? c & 0x0F : c & 0x1F;
        bool ok = n > 0;
        for (size_t k = 1; ok && k < n; k++) {
            if ((p[k] & 0xC0) != 0x80)
                ok = false;
            else
                cp = cp << 6 | (p[k] & 0x3F);
        }
        if (ok && ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
                   (cp >= 0xD800 && cp <= 0xDFFF))) {
            ok = false;
        } else if (ok && (cp == 0xFFFE || cp == 0xFFFF)) { /* well-formed UTF-8, not an XML character */
            st = fj_buf_puts(b, fffd);
            p += n;
            continue;
        }
        if (ok) {
            st = fj_buf_append(b, p, n);
            p += n;
        } else { /* not UTF-8: one replacement per bad byte */
            st = fj_buf_puts(b, fffd);
            p++;
        }
    }
    return st;
}

/* A small writer: elements on their own lines, indented; the first failure sticks. */
typedef struct xw {
    fj_buf *b;
    int depth;
    fj_status st;
} xw;

static void raw(xw *w, const char *s)
{
    if (w->st == FJ_OK)
        w->st = fj_buf_puts(w->b, s);
}

static void esc(xw *w, const char *s)
{
    if (w->st == FJ_OK)
        w->st = fj_xml_escape(w->b, s ? s : "");
}

static void indent(xw *w)
{
    for (int i = 0; i < w->depth; i++)
        raw(w, "  ");
}

/* <name a1="v1" ...> with attrs a NULL-terminated list of name, value pairs (NULL values skipped). */
static void open_tag(xw *w, const char *name, const char *const *attrs)
{
    raw(w, "<");
    raw(w, name);
    for (size_t i = 0; attrs && attrs[i]; i += 2) {
        if (!attrs[i + 1])
            continue;
        raw(w, " ");
        raw(w, attrs[i]);
        raw(w, "=\"");
        esc(w, attrs[i + 1]);
        raw(w, "\"");
    }
    raw(w, ">");
}

static void start(xw *w, const char *name)
{
    indent(w);
    open_tag(w, name, NULL);
    raw(w, "\n");
    w->depth++;
}

static void end(xw *w, const char *name)
{
    w->depth--;
    indent(w);
    raw(w, "</");
    raw(w, name);
    raw(w, ">\n");
}

static void text_elem(xw *w, const char *name, const char *const *attrs, const char *text)
{
    indent(w);
    open_tag(w, name, attrs);
    esc(w, text);
    raw(w, "</");
    raw(w, name);
    raw(w, ">\n");
}

/* Numbers: at most 3 decimals, trailing zeros dropped. */
static void fmt_num(char *out, size_t cap, double v)
{
    snprintf(out, cap, "%.3f", v);
    char *dot = strchr(out, '.');
    if (dot) {
        char *e = out + strlen(out) - 1;
        while (e > dot && *e == '0')
            *e-- = '\0';
        if (e == dot)
            *e = '\0';
    }
    if (!strcmp(out, "-0"))
        strcpy(out, "0");
}

static void num_elem(xw *w, const char *name, const char *const *attrs, double v)
{
    char t[48];
    fmt_num(t, sizeof t, v);
    text_elem(w, name, attrs, t);
}

/* --- nodes as read from storage ---------------------------------------------------------------- */

typedef struct gpu_model {
    const char *model;
    int count;
    double memory_kb; /* all cards of the model; NAN unknown */
} gpu_model;

typedef struct snode {
    const char *name;
    const char *const *states;
    size_t n_states;
    const char *const *partitions;
    size_t n_partitions;
    fj_time last_seen, sysinfo_time, state_time;
    const char *os_name, *os_release, *architecture, *cpu_model;
    int64_t cores, memory_kb; /* -1 unknown */
    gpu_model *gpus;
    size_t n_gpu_models;
    int64_t n_gpus;
    /* usage */
    bool has_usage;
    fj_time usage_time;
    int64_t interval_s, used_memory_kb, gpu_memory_kb; /* -1 unknown */
    double cpu_busy, load1, gpu_busy;                   /* NAN unknown */
} snode;

typedef struct collect {
    fj_sink sink; /* first: the store calls it */
    fj_arena *a;
    const fj_qtable *t;
    int col[16];
    snode *v;
    size_t n, cap;
    bool usage; /* the usage table is being read */
    fj_status st;
} collect;

enum { C_NODE, C_LAST, C_STATES, C_STATE_TIME, C_PARTS, C_SYS_TIME, C_OS, C_REL, C_ARCH, C_CPU, C_CORES, C_MEM,
       C_GPUS, C_CARDS, C__N };
static const char *const node_cols[C__N] = {"node", "last_seen", "states", "state_time", "partitions",
                                            "sysinfo_time", "os_name", "os_release", "architecture", "cpu_model",
                                            "cores", "memory_kb", "gpus", "gpu_cards"};
enum { U_NODE, U_TIME, U_INTERVAL, U_CPU, U_MEM, U_LOAD, U_GPUS, U_GPU_BUSY, U_GPU_MEM, U__N };
static const char *const usage_cols[U__N] = {"node", "time", "interval_s", "cpu_busy", "used_memory_kb",
                                             "load1", "gpus", "gpu_busy", "gpu_memory_kb"};

static fj_status sink_table(fj_sink *k, const fj_qtable *t)
{
    collect *c = (collect *)k;
    c->t = t;
    c->usage = t == &fj_qt_node_usage;
    const char *const *names = c->usage ? usage_cols : node_cols;
    int n = c->usage ? U__N : C__N;
    for (int i = 0; i < n; i++)
        if ((c->col[i] = fj_qtable_col(t, names[i])) < 0)
            return c->st = FJ_EINTERNAL; /* a column this writer needs went missing */
    return FJ_OK;
}

static const char *vstr(collect *c, const fj_value *v)
{
    if (v->t != FJ_VT_TEXT || !v->s)
        return NULL;
    const char *s = fj_arena_strdup(c->a, v->s);
    if (!s)
        c->st = FJ_ENOMEM;
    return s;
}

static int64_t vint(const fj_value *v)
{
    return v->t == FJ_VT_INT || v->t == FJ_VT_TIME ? v->i : v->t == FJ_VT_REAL ? (int64_t)v->d : -1;
}

static double vreal(const fj_value *v)
{
    return v->t == FJ_VT_REAL ? v->d : v->t == FJ_VT_INT ? (double)v->i : NAN;
}

static const char *const *vlist(collect *c, const fj_value *v, size_t *n)
{
    *n = 0;
    if (v->t != FJ_VT_LIST || !v->n)
        return NULL;
    const char **l = fj_arena_alloc(c->a, v->n * sizeof *l);
    if (!l) {
        c->st = FJ_ENOMEM;
        return NULL;
    }
    for (size_t i = 0; i < v->n; i++)
        if (!(l[i] = fj_arena_strdup(c->a, v->list[i] ? v->list[i] : "")))
            c->st = FJ_ENOMEM;
    *n = v->n;
    return l;
}

/* The GPU cards (a JSON array of objects with model and memory_kb) grouped by model. */
static void read_cards(collect *c, snode *n, const char *json)
{
    fj_json *root;
    fj_err err = {0};
    if (!json || fj_json_parse(c->a, json, strlen(json), NULL, &root, &err) != FJ_OK || root->type != FJ_JSON_ARRAY)
        return;
    n->gpus = fj_arena_calloc(c->a, root->len ? root->len : 1, sizeof *n->gpus);
    if (!n->gpus) {
        c->st = FJ_ENOMEM;
        return;
    }
    for (size_t i = 0; i < root->len; i++) {
        const fj_json *m = fj_json_get(&root->v.items[i], "model"), *mem = fj_json_get(&root->v.items[i], "memory_kb");
        const char *model = m && m->type == FJ_JSON_STRING ? m->v.s : "GPU";
        double kb = mem && mem->type == FJ_JSON_UINT ? (double)mem->v.u : NAN;
        size_t k = 0;
        while (k < n->n_gpu_models && strcmp(n->gpus[k].model, model) != 0)
            k++;
        if (k == n->n_gpu_models) {
            n->gpus[k].model = model;
            n->gpus[k].memory_kb = 0;
            n->n_gpu_models++;
        }
        n->gpus[k].count++;
        n->gpus[k].memory_kb += kb;
    }
}

static int cmp_node(const void *a, const void *b)
{
    return strcmp(((const snode *)a)->name, ((const snode *)b)->name);
}

static fj_status sink_row(fj_sink *k, const fj_value *v)
{
    collect *c = (collect *)k;
    if (c->st != FJ_OK)
        return c->st;
    if (c->usage) {
        const fj_value *name = &v[c->col[U_NODE]];
        if (name->t != FJ_VT_TEXT)
            return FJ_OK;
        snode key = {.name = name->s};
        snode *n = c->n ? bsearch(&key, c->v, c->n, sizeof *c->v, cmp_node) : NULL;
        if (!n)
            return FJ_OK; /* a node the list left out */
        n->has_usage = true;
        n->usage_time = vint(&v[c->col[U_TIME]]);
        n->interval_s = vint(&v[c->col[U_INTERVAL]]);
        n->cpu_busy = vreal(&v[c->col[U_CPU]]);
        n->used_memory_kb = vint(&v[c->col[U_MEM]]);
        n->load1 = vreal(&v[c->col[U_LOAD]]);
        n->gpu_busy = vreal(&v[c->col[U_GPU_BUSY]]);
        n->gpu_memory_kb = vint(&v[c->col[U_GPU_MEM]]);
        return FJ_OK;
    }
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 64;
        snode *nv = fj_arena_calloc(c->a, nc, sizeof *nv);
        if (!nv)
            return c->st = FJ_ENOMEM;
        if (c->n)
            memcpy(nv, c->v, c->n * sizeof *nv);
        c->v = nv;
        c->cap = nc;
    }
    snode *n = &c->v[c->n++];
    memset(n, 0, sizeof *n);
    n->name = vstr(c, &v[c->col[C_NODE]]);
    n->last_seen = vint(&v[c->col[C_LAST]]);
    n->states = vlist(c, &v[c->col[C_STATES]], &n->n_states);
    n->state_time = vint(&v[c->col[C_STATE_TIME]]);
    n->partitions = vlist(c, &v[c->col[C_PARTS]], &n->n_partitions);
    n->sysinfo_time = vint(&v[c->col[C_SYS_TIME]]);
    n->os_name = vstr(c, &v[c->col[C_OS]]);
    n->os_release = vstr(c, &v[c->col[C_REL]]);
    n->architecture = vstr(c, &v[c->col[C_ARCH]]);
    n->cpu_model = vstr(c, &v[c->col[C_CPU]]);
    n->cores = vint(&v[c->col[C_CORES]]);
    n->memory_kb = vint(&v[c->col[C_MEM]]);
    n->n_gpus = vint(&v[c->col[C_GPUS]]);
    const fj_value *cards = &v[c->col[C_CARDS]];
    if (cards->t == FJ_VT_JSON)
        read_cards(c, n, cards->s);
    n->interval_s = n->used_memory_kb = n->gpu_memory_kb = -1;
    n->cpu_busy = n->load1 = n->gpu_busy = NAN;
    if (!n->name)
        c->n--;
    return c->st;
}

/* --- the SSS view of a node -------------------------------------------------------------------- */

/* SSS's states (Offline, Configured, Unknown, Idle, Busy) from Slurm's. A node Slurm cannot use is
 * Offline whatever else it is; one running work is Busy. */
static const char *sss_state(const snode *n)
{
    static const char *const offline[] = {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "MAINT",
                                          "MAINTENANCE", "NOT_RESPONDING", "POWERED_DOWN", "POWER_DOWN",
                                          "POWERING_DOWN", "REBOOT", "REBOOT_ISSUED", "REBOOT_REQUESTED", "INVAL"};
    static const char *const busy[] = {"ALLOCATED", "ALLOC", "MIXED", "MIX", "COMPLETING", "COMP"};
    bool is_busy = false, is_idle = false;
    for (size_t i = 0; i < n->n_states; i++) {
        const char *s = n->states[i];
        for (size_t k = 0; k < sizeof offline / sizeof offline[0]; k++)
            if (!strcasecmp(s, offline[k]))
                return "Offline";
        for (size_t k = 0; k < sizeof busy / sizeof busy[0]; k++)
            if (!strcasecmp(s, busy[k]))
                is_busy = true;
        if (!strcasecmp(s, "IDLE"))
            is_idle = true;
    }
    return is_busy ? "Busy" : is_idle ? "Idle" : "Unknown";
}

static void mb(char *out, size_t cap, double kb)
{
    fmt_num(out, cap, kb / 1024.0);
}

static void write_node(xw *w, const char *cluster, const snode *n)
{
    char t[64];
    start(w, "Node");
    text_elem(w, "Id", NULL, n->name);
    text_elem(w, "Name", NULL, n->name);
    for (size_t i = 0; i < n->n_partitions; i++)
        text_elem(w, "Feature", NULL, n->partitions[i]);
    if (n->os_name)
        text_elem(w, "Opsys", NULL, n->os_name);
    if (n->architecture)
        text_elem(w, "Arch", NULL, n->architecture);
    if (n->cpu_model)
        text_elem(w, "Description", NULL, n->cpu_model);
    text_elem(w, "State", NULL, sss_state(n));
    text_elem(w, "Extension", (const char *const[]){"name", "Cluster", NULL}, cluster);
    if (n->os_release)
        text_elem(w, "Extension", (const char *const[]){"name", "OsRelease", NULL}, n->os_release);
    if (n->n_states) {
        fj_buf sb;
        fj_buf_init(&sb, 1 << 16);
        for (size_t i = 0; i < n->n_states; i++) {
            if (i)
                fj_buf_puts(&sb, "+");
            fj_buf_puts(&sb, n->states[i]);
        }
        text_elem(w, "Extension", (const char *const[]){"name", "SlurmState", NULL}, sb.data);
        fj_buf_free(&sb);
    }
    if (n->last_seen > 0) {
        char ts[21];
        fj_time_format(n->last_seen, ts);
        text_elem(w, "Extension", (const char *const[]){"name", "LastSeen", "type", "DateTime", NULL}, ts);
    }

    /* Configured: the latest sysinfo. */
    start(w, "Configured");
    if (n->cores >= 0)
        num_elem(w, "Processors", NULL, (double)n->cores);
    if (n->memory_kb >= 0) {
        mb(t, sizeof t, (double)n->memory_kb);
        text_elem(w, "Memory", (const char *const[]){"units", "MB", NULL}, t);
    }
    double gpu_mem_total = 0;
    bool gpu_mem_known = n->n_gpu_models > 0;
    for (size_t i = 0; i < n->n_gpu_models; i++) {
        num_elem(w, "Resource", (const char *const[]){"name", "GPU", "type", n->gpus[i].model, NULL}, n->gpus[i].count);
        if (isnan(n->gpus[i].memory_kb))
            gpu_mem_known = false;
        else
            gpu_mem_total += n->gpus[i].memory_kb;
    }
    if (gpu_mem_known) {
        mb(t, sizeof t, gpu_mem_total);
        text_elem(w, "Resource", (const char *const[]){"name", "GPUMemory", "units", "MB", NULL}, t);
    }
    end(w, "Configured");

    /* Available and Utilized: the latest sample (CPU over the interval to the sample before). */
    if (n->has_usage) {
        char wall[32] = "";
        if (n->interval_s > 0)
            snprintf(wall, sizeof wall, "PT%lldS", (long long)n->interval_s);
        long used_cpus = isnan(n->cpu_busy) ? -1 : lround(n->cpu_busy);
        const char *const cpu_attrs[] = {"metric", "Average", "wallDuration", wall[0] ? wall : NULL, NULL};
        const char *const gpu_attrs[] = {"name", "GPU", "metric", "Instantaneous", NULL};
        const char *const load_attrs[] = {"name", "Load", "metric", "Average", "wallDuration", "PT60S", NULL};
        start(w, "Available");
        if (n->cores >= 0 && used_cpus >= 0) {
            long avail = (long)n->cores - used_cpus;
            num_elem(w, "Processors", cpu_attrs, avail > 0 ? (double)avail : 0);
        }
        if (n->memory_kb >= 0 && n->used_memory_kb >= 0) {
            double free_kb = (double)(n->memory_kb - n->used_memory_kb);
            mb(t, sizeof t, free_kb > 0 ? free_kb : 0);
            text_elem(w, "Memory", (const char *const[]){"units", "MB", "metric", "Instantaneous", NULL}, t);
        }
        if (n->n_gpu_models && !isnan(n->gpu_busy)) {
            double idle = (double)n->n_gpus - n->gpu_busy;
            num_elem(w, "Resource", gpu_attrs, idle > 0 ? idle : 0);
        }
        end(w, "Available");
        start(w, "Utilized");
        if (used_cpus >= 0)
            num_elem(w, "Processors", cpu_attrs, (double)used_cpus);
        if (n->used_memory_kb >= 0) {
            mb(t, sizeof t, (double)n->used_memory_kb);
            text_elem(w, "Memory", (const char *const[]){"units", "MB", "metric", "Instantaneous", NULL}, t);
        }
        if (!isnan(n->gpu_busy))
            num_elem(w, "Resource", gpu_attrs, n->gpu_busy);
        if (n->gpu_memory_kb >= 0) {
            mb(t, sizeof t, (double)n->gpu_memory_kb);
            text_elem(w, "Resource",
                      (const char *const[]){"name", "GPUMemory", "units", "MB", "metric", "Instantaneous", NULL}, t);
        }
        if (!isnan(n->load1))
            num_elem(w, "Resource", load_attrs, n->load1);
        end(w, "Utilized");
    }
    end(w, "Node");
}

/* --- handlers -------------------------------------------------------------------------------- */

#define P_CLUSTER {"cluster", FJ_PT_STRING, "cluster name", NULL, true, 0, 0}
#define P_END {NULL, 0, NULL, NULL, false, 0, 0}

static const fj_pspec list_params[] = {
    P_CLUSTER,
    {"host", FJ_PT_HOSTS,
     "host patterns, comma-separated: node ranges (c1-[1-8,10], SSS's aggregation=\"Range\" form "
     "node[5-23,77]) and * wildcards; repeatable",
     NULL, false, 0, 0},
    {"partition", FJ_PT_LIST, "only nodes in these partitions (SSS Feature); repeatable", NULL, false, 0, 0},
    {"state", FJ_PT_LIST, "only nodes in these SSS states (Idle, Busy, Offline, Unknown) or Slurm states; repeatable",
     NULL, false, 0, 0},
    {"aggregation", FJ_PT_ENUM,
     "Range (or List): answer one SSS node reference for the selected nodes, node[5-23,77] (or a,b,c), "
     "instead of the Node objects",
     "Range|List", false, 0, 0},
    P_END};
static const fj_pspec one_params[] = {P_CLUSTER, P_END};

static const fj_endpoint ep_list = {
    "/api/v1/export/sss/nodes", "Nodes as SSS Node objects",
    "The nodes of a cluster as SSS Node objects (XML) in an SSSRMAP response: Id, Name, Feature (partitions), "
    "Opsys, Arch, State; Configured from the latest sysinfo; Available and Utilized from the latest samples. "
    "See docs/sss.md.",
    NULL, NULL, list_params, {NULL}, NULL, NULL, FJ_EP_RAW, "application/xml"};
static const fj_endpoint ep_one = {
    "/api/v1/export/sss/nodes/{node}", "One node as an SSS Node object",
    "One node as an SSS Node object (XML). See docs/sss.md.", "node", "node name", one_params, {NULL}, NULL,
    NULL, FJ_EP_RAW, "application/xml"};

const fj_endpoint *const fj_sss_endpoints[] = {&ep_list, &ep_one, NULL};

static bool exact_match(void *ctx, const char *name)
{
    return strcmp(ctx, name) == 0;
}

static bool in_list(const fj_pval *v, const char *s)
{
    for (size_t i = 0; i < v->n; i++)
        if (!strcasecmp(v->list[i], s))
            return true;
    return false;
}

/* Does n pass the partition and state filters? */
static bool selected(const fj_apiq *a, const snode *n)
{
    const fj_pval *parts = fj_param(&a->p, "partition"), *states = fj_param(&a->p, "state");
    if (parts->set) {
        bool any = false;
        for (size_t i = 0; i < n->n_partitions && !any; i++)
            any = in_list(parts, n->partitions[i]);
        if (!any)
            return false;
    }
    if (states->set) {
        bool any = in_list(states, sss_state(n));
        for (size_t i = 0; i < n->n_states && !any; i++)
            any = in_list(states, n->states[i]);
        if (!any)
            return false;
    }
    return true;
}

static void export(fj_http_req *r, const char *node)
{
    fj_apiq a;
    if (!fj_api_begin(r, node ? &ep_one : &ep_list, "sss", &a))
        return;
    if (node) {
        a.q.host_match = exact_match;
        a.q.host_ctx = (void *)node;
    }
    fj_store *s = fj_api_store(&a);
    if (!s)
        return;
    fj_err err = {0};
    collect c = {.sink = {sink_table, sink_row}, .a = fj_http_arena(r)};
    fj_status st = fj_store_query_nodes(s, &a.q, &c.sink, &err);
    if (st == FJ_OK)
        st = c.st;
    if (st == FJ_OK && c.n) {
        qsort(c.v, c.n, sizeof *c.v, cmp_node);
        /* usage of the same nodes (the host filter applies alike) */
        fj_query uq = a.q;
        st = fj_store_query_node_usage(s, &uq, &c.sink, &err);
        if (st == FJ_OK)
            st = c.st;
    }
    if (st != FJ_OK) {
        if (st == FJ_EINTERNAL && !err.message[0])
            fj_err_set(&err, st, NULL, "the node listing lacks a column the SSS export needs");
        fj_http_reply_error(r, st, &err);
        return;
    }
    if (node && c.n == 0) {
        fj_err_set(&err, FJ_ENOTFOUND, "node", "no node '%s' in cluster '%s'", node, a.q.cluster);
        fj_http_reply_error(r, FJ_ENOTFOUND, &err);
        return;
    }

    fj_buf out;
    fj_buf_init(&out, (size_t)1 << 30);
    fj_buf_set_budget(&out, fj_http_mem(r)); /* counts against query-memory */
    xw w = {&out, 0, FJ_OK};
    raw(&w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    if (node) {
        write_node(&w, a.q.cluster, &c.v[0]);
    } else {
        size_t n_sel = 0;
        const char **names = fj_arena_alloc(c.a, (c.n ? c.n : 1) * sizeof *names);
        if (!names)
            w.st = FJ_ENOMEM;
        for (size_t i = 0; names && i < c.n; i++)
            if (selected(&a, &c.v[i]))
                names[n_sel++] = c.v[i].name;
        const fj_pval *agg = fj_param(&a.p, "aggregation");
        char count[24];
        snprintf(count, sizeof count, "%zu", n_sel);
        start(&w, "Envelope");
        start(&w, "Body");
        start(&w, "Response");
        start(&w, "Status");
        text_elem(&w, "Value", NULL, "Success");
        text_elem(&w, "Code", NULL, "000");
        end(&w, "Status");
        text_elem(&w, "Count", NULL, count);
        start(&w, "Data");
        char *ranges = NULL;
        fj_err e = {0};
        if (agg->set && agg->i == 0 && n_sel && fj_noderange_compress(c.a, names, n_sel, &ranges, &e) != FJ_OK)
            ranges = NULL; /* a name the range syntax cannot carry: listed instead */
        if (ranges) {
            /* One reference per <prefix>[...] item, the form SSS defines for Range. */
            for (char *p = ranges; *p && w.st == FJ_OK;) {
                char *q = p;
                int depth = 0;
                for (; *q && !(*q == ',' && depth == 0); q++)
                    depth += *q == '[' ? 1 : *q == ']' ? -1 : 0;
                char *item = fj_arena_strndup(c.a, p, (size_t)(q - p));
                char **expanded;
                size_t n_item = 0;
                if (!item || fj_noderange_expand(c.a, item, &expanded, &n_item, &e) != FJ_OK) {
                    w.st = item ? FJ_EINTERNAL : FJ_ENOMEM;
                    break;
                }
                char ic[24];
                snprintf(ic, sizeof ic, "%zu", n_item);
                text_elem(&w, "Node", (const char *const[]){"aggregation", "Range", "count", ic, NULL}, item);
                p = *q ? q + 1 : q;
            }
        } else if (agg->set && n_sel) { /* List, comma-separated (SSS's default delimiter) */
            fj_buf lb;
            fj_buf_init(&lb, (size_t)1 << 28);
            for (size_t i = 0; i < n_sel; i++) {
                if (i)
                    fj_buf_puts(&lb, ",");
                fj_buf_puts(&lb, names[i]);
            }
            text_elem(&w, "Node", (const char *const[]){"aggregation", "List", "count", count, NULL}, lb.data);
            fj_buf_free(&lb);
        } else if (!agg->set) {
            for (size_t i = 0; i < c.n; i++)
                if (selected(&a, &c.v[i]))
                    write_node(&w, a.q.cluster, &c.v[i]);
        }
        end(&w, "Data");
        end(&w, "Response");
        end(&w, "Body");
        end(&w, "Envelope");
    }
    if (w.st == FJ_OK)
        fj_http_reply(r, 200, "application/xml; charset=utf-8", out.data, out.len);
    else
        fj_http_reply_error(r, w.st == FJ_ETOOBIG ? FJ_EINVAL : w.st, NULL);
    fj_buf_free(&out);
}

void fj_api_sss_nodes(fj_http_req *r)
{
    export(r, NULL);
}

void fj_api_sss_node(fj_http_req *r)
{
    const char *node = fj_http_path_rest(r);
    if (!node || !*node || strchr(node, '/')) {
        fj_err err = {0};
        fj_err_set(&err, FJ_ENOTFOUND, "path", "no such endpoint: %s", fj_http_path(r));
        fj_http_reply_error(r, FJ_ENOTFOUND, &err);
        return;
    }
    export(r, node);
}
