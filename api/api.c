/* api.c — GET /api/v1/health. The query endpoints are in api/{jobs,nodes,load,slurm,misc}.c on
 * the common runner of api/query.c. */
#include "api/api.h"

#include <stdio.h>

#ifndef FJ_VERSION
#define FJ_VERSION "dev"
#endif

void fj_api_health(fj_http_req *r)
{
    char body[128];
    int n = snprintf(body, sizeof body, "{\"status\":\"ok\",\"version\":\"%s\"}\n", FJ_VERSION);
    fj_http_reply(r, 200, NULL, body, (size_t)n);
}
