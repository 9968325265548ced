/* spec.h — the query API's endpoints as data: path, parameters, result tables and documentation.
 * Handlers parse their parameters with these declarations, and GET /api/v1/openapi.json is
 * generated from them (with the column lists of storage/core/store_query.h), so the document describes exactly
 * what the code accepts and answers. Pure: unit-tested directly. */
#ifndef FJ_SPEC_H
#define FJ_SPEC_H

#include "buf.h"
#include "api/params.h"
#include "storage/core/store_query.h"

enum {
    FJ_EP_PAGED = 1,    /* answers carry a "next" cursor (JSON member and Fjord-Next-Cursor header) */
    FJ_EP_NOAUTH = 2,   /* no credential needed */
    FJ_EP_RAW = 4,      /* answers a document of its own (not rows): described by raw_types */
    FJ_EP_EXTERNAL = 8, /* parameters parsed by a handler outside this table (documented only) */
    FJ_EP_POST = 16,    /* a POST endpoint (ingest) */
    FJ_EP_GETPOST = 32, /* served for GET and POST alike */
    FJ_EP_TEXTBODY = 64, /* the request body is text (line protocol), not JSON */
    FJ_EP_HEAD = 128     /* also served for HEAD (a GET endpoint) */
};

typedef struct fj_endpoint {
    const char *path;        /* OpenAPI path template: /api/v1/jobs/{id} */
    const char *summary;
    const char *doc;
    const char *path_param;  /* the {name} in the path, or NULL */
    const char *path_doc;
    const fj_pspec *params;  /* query parameters (NULL-name terminated) */
    const fj_qtable *tables[3];
    const char *single;      /* JSON: the first table is one object under this name */
    const char *meta;        /* JSON members before the tables, for the document ("from,to,bucket_s") */
    unsigned flags;
    const char *raw_types;   /* FJ_EP_RAW: media types answered, comma-separated */
} fj_endpoint;

extern const fj_endpoint fj_ep_clusters, fj_ep_nodes, fj_ep_node_sysinfo, fj_ep_node_topology,
    fj_ep_node_measurements, fj_ep_jobs, fj_ep_job, fj_ep_job_profile, fj_ep_load_nodes, fj_ep_load_cluster,
    fj_ep_load_gpus,    fj_ep_slurm_jobs, fj_ep_slurm_partitions, fj_ep_slurm_nodes, fj_ep_uptime, fj_ep_errors, fj_ep_openapi,
    fj_ep_health;

/* Every endpoint documented here, NULL-terminated. The OpenAPI document also takes the lists
 * other modules declare next to their handlers (fj_chimbuko_endpoints, fj_sss_endpoints). */
extern const fj_endpoint *const fj_endpoints[];

/* Calls fn for every endpoint of the OpenAPI document, in its order. */
void fj_endpoints_each(void (*fn)(const fj_endpoint *e, void *ctx), void *ctx);

/* Appends the OpenAPI 3.0 document of fj_endpoints to out. */
fj_status fj_openapi_write(fj_buf *out);

#endif
