/* nodes.c — GET /api/v1/nodes and the node sub-resources /api/v1/nodes/{node}/...: sysinfo
 * (history), topology, and measurements (api/measurements.c). One dispatcher serves the prefix
 * route, so every node sub-resource lives behind it. */
#include "api/api.h"
#include "api/api_int.h"
#include "api/measurements.h"
#include "storage/core/store_query.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void fj_api_nodes(fj_http_req *r)
{
    fj_apiq a;
    if (!fj_api_begin(r, &fj_ep_nodes, NULL, &a))
        return;
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, fj_store_query_nodes);
}

static void node_sysinfo(fj_http_req *r, const char *node)
{
    fj_apiq a;
    if (!fj_api_begin(r, &fj_ep_node_sysinfo, NULL, &a))
        return;
    a.q.node = node;
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, fj_store_query_sysinfo);
}

/* The headers of a stored topology. An SVG is a producer's document: opened as a page of this
 * origin, a script or link in it would run with the reader's access. So it is a download, never
 * rendered as a page (attachment; a sandbox that allows nothing, should a browser render it
 * anyway), and neither answer is sniffed as anything else. The dashboard fetches the SVG and
 * shows it as an image, where no script runs. The file name keeps the node name's host-name
 * characters only, so nothing a client sent can end the header's quoted string. */
static void topology_headers(fj_http_req *r, const char *node, bool svg)
{
    if (svg) {
        char name[160];
        size_t n = (size_t)snprintf(name, sizeof name, "attachment; filename=\"topology-");
        for (const char *p = node; *p && n < sizeof name - 8; p++)
            name[n++] = isalnum((unsigned char)*p) || *p == '-' || *p == '.' || *p == '_' ? *p : '_';
        snprintf(name + n, sizeof name - n, ".svg\"");
        fj_http_reply_header(r, "Content-Disposition", name);
    }
    fj_http_reply_header(r, "Content-Security-Policy", "default-src 'none'; sandbox");
    fj_http_reply_header(r, "X-Content-Type-Options", "nosniff");
}

static void node_topology(fj_http_req *r, const char *node)
{
    fj_apiq a;
    if (!fj_api_begin(r, &fj_ep_node_topology, NULL, &a))
        return;
    a.q.node = node;
    const fj_pval *v = fj_param(&a.p, "kind");
    a.q.svg = !v->set || v->i == 0;
    fj_store *s = fj_api_store(&a);
    if (!s)
        return;
    fj_err err = {0};
    fj_buf out;
    fj_buf_init(&out, (size_t)256 << 20);
    fj_buf_set_budget(&out, fj_http_mem(r)); /* counts against query-memory */
    fj_time when = 0;
    fj_status st = fj_store_query_topology(s, &a.q, &out, &when, &err);
    if (st == FJ_OK) {
        char tb[21];
        fj_time_format(when, tb);
        fj_http_reply_header(r, "Fjord-Time", tb);
        topology_headers(r, node, a.q.svg);
        fj_http_reply(r, 200, a.q.svg ? "image/svg+xml" : "text/plain; charset=utf-8", out.data ? out.data : "",
                      out.len);
    } else {
        fj_http_reply_error(r, st, &err);
    }
    fj_buf_free(&out);
}

void fj_api_node_sub(fj_http_req *r)
{
    const char *rest = fj_http_path_rest(r);
    const char *slash = strchr(rest, '/');
    if (slash && slash != rest) {
        const char *sub = slash + 1;
        char *node = fj_arena_strndup(fj_http_arena(r), rest, (size_t)(slash - rest));
        if (!node) {
            fj_http_reply_error(r, FJ_ENOMEM, NULL);
            return;
        }
        if (strcmp(sub, "sysinfo") == 0) {
            node_sysinfo(r, node);
            return;
        }
        if (strcmp(sub, "topology") == 0) {
            node_topology(r, node);
            return;
        }
        if (strcmp(sub, "measurements") == 0) {
            fj_api_node_measurements(r);
            return;
        }
    }
    fj_err err = {0};
    fj_err_set(&err, FJ_ENOTFOUND, NULL, "no such endpoint: %s", fj_http_path(r));
    fj_http_reply_error(r, FJ_ENOTFOUND, &err);
}
