/* problems.h — the problem-jobs report (docs/problems.md): jobs that hold resources without
 * using them, judged from stored summaries by the rules of storage/core/store_problems.h. */
#ifndef FJ_API_PROBLEMS_H
#define FJ_API_PROBLEMS_H

#include "server/http.h"
#include "api/spec.h"

/* GET /api/v1/problems?cluster=&from=&to=&user=&rule=&<thresholds>: one row per problem (JSON or
 * CSV). GET /api/v1/problems/users: the same judged, one row per user. 400 naming a bad
 * threshold; 404 for an unknown cluster. */
void fj_api_problems(fj_http_req *r);
void fj_api_problem_users(fj_http_req *r);

/* The endpoints, for the OpenAPI document (NULL-terminated). */
extern const fj_endpoint *const fj_problems_endpoints[];

#endif
