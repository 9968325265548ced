/* account_usage.h — usage per user, account, partition or cluster (GET /api/v1/usage): the
 * parameters and the handler over fj_store_account_usage (storage/core/store_account_usage.h).
 * Not the nodes' utilisation (the SSS export's, api/sss.c). */
#ifndef FJ_API_ACCOUNT_USAGE_H
#define FJ_API_ACCOUNT_USAGE_H

#include "server/http.h"
#include "api/spec.h"

/* GET /api/v1/usage?cluster=&from=&to=&by=&bucket=&user=&account=&partition=&sort=&order=&limit=:
 * one row per bucket and group (JSON or CSV). 400 naming a bad parameter; 404 for an unknown
 * cluster. */
void fj_api_account_usage(fj_http_req *r);

/* The endpoints, for the OpenAPI document (NULL-terminated). */
extern const fj_endpoint *const fj_account_usage_endpoints[];

#endif
