/* api_int.h — what the query handlers (api/jobs.c, nodes.c, ...) share: one request's parsed
 * parameters and query, and the runner that feeds a store query into the JSON or CSV writer and answers. */
#ifndef FJ_API_INT_H
#define FJ_API_INT_H

#include "api/hostpat.h"
#include "server/http.h"
#include "api/out.h"
#include "api/params.h"
#include "api/spec.h"
#include "storage/core/store_query.h"

typedef struct fj_apiq {
    fj_http_req *r;
    const fj_endpoint *ep;
    fj_params p;
    fj_query q;
    bool csv;
    fj_hostpat *hosts;
    char tag[64]; /* cursor tag: the endpoint and its order */
    fj_strlist fields; /* the answer's columns (n 0: all); fj_api_run passes them to the writer */
    bool columns;      /* JSON by columns over the load grid (fj_out_columns) */
} fj_apiq;

typedef fj_status (*fj_qop)(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);

/* Answers 400 naming the parameter. */
void fj_api_bad_param(fj_http_req *r, const char *name, const char *why);

/* Parses the endpoint's parameters and fills what is common to every query: cluster (checked
 * against the credential), from/to (or at), host patterns, bucket, limit, order, cursor (which
 * must come from the same listing: tag, sort and order), format. false when an answer was sent. */
bool fj_api_begin(fj_http_req *r, const fj_endpoint *ep, const char *tag, fj_apiq *a);

/* The reader store of this thread, or NULL after answering 503. */
fj_store *fj_api_store(fj_apiq *a);

/* Runs op into the writer and answers (200, or the error). */
void fj_api_run(fj_apiq *a, fj_store *s, fj_qop op);
/* The same for a store function that takes what the endpoint parsed beyond fj_query (ctx): plain
 * storage functions such as fj_store_account_usage. */
typedef fj_status (*fj_qop_ctx)(fj_store *s, fj_query *q, void *ctx, fj_sink *k, fj_err *err);
void fj_api_run_ctx(fj_apiq *a, fj_store *s, fj_qop_ctx op, void *ctx);

/* Filled-in list parameters. */
fj_strlist fj_api_strlist(const fj_apiq *a, const char *name);
fj_intlist fj_api_intlist(const fj_apiq *a, const char *name);
fj_tri fj_api_tri(const fj_apiq *a, const char *name);

#endif
