/* jobs.c — GET /api/v1/jobs (the job list), /api/v1/jobs/{id} and /api/v1/jobs/{id}/profile. */
#include "api/api.h"
#include "api/api_int.h"
#include "api/jobs_energy.h"
#include "server/config.h"
#include "storage/core/store_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The job list and detail with their ClusterCockpit energy parts (api/jobs_energy.h). */
static fj_status jobs_op(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    return fj_api_jobs_energy(s, q->ts_live, q, k, err, fj_store_query_jobs);
}

static fj_status job_op(fj_store *s, fj_query *q, fj_sink *k, fj_err *err)
{
    return fj_api_jobs_energy(s, q->ts_live, q, k, err, fj_store_query_job);
}

/* The carbon figures of q's cluster (docs/energy.md): co2e_kg only where carbon-intensity names it. */
static void energy_settings(fj_http_req *r, fj_query *q)
{
    q->ts_live = fj_http_ts_engine(r);
    const fj_config *c = fj_http_config(r);
    double g;
    if (c && fj_config_carbon(c, q->cluster, &g)) {
        q->carbon_g_per_kwh = g;
        q->pue = fj_config_pue(c);
    }
}

void fj_api_jobs(fj_http_req *r)
{
    fj_apiq a;
    if (!fj_api_begin(r, &fj_ep_jobs, "jobs", &a))
        return;
    fj_query *q = &a.q;
    q->users = fj_api_strlist(&a, "user");
    q->commands = fj_api_strlist(&a, "command");
    q->states = fj_api_strlist(&a, "state");
    q->partitions = fj_api_strlist(&a, "partition");
    q->accounts = fj_api_strlist(&a, "account");
    q->jobs = fj_api_intlist(&a, "job");
    q->running = fj_api_tri(&a, "running");
    q->no_energy = fj_api_tri(&a, "energy") == FJ_TRI_NO;
    const fj_pval *v;
    if ((v = fj_param(&a.p, "gpu"))->set)
        q->gpu = v->i == 0 ? FJ_TRI_YES : FJ_TRI_NO;
    if ((v = fj_param(&a.p, "min_runtime"))->set)
        q->min_runtime_s = v->i;
    for (int m = 0; m < FJ_JM__COUNT; m++) {
        char name[64];
        snprintf(name, sizeof name, "min_%s", fj_job_metric_names[m]);
        if ((v = fj_param(&a.p, name))->set)
            q->has_min[m] = true, q->min[m] = v->d;
        snprintf(name, sizeof name, "max_%s", fj_job_metric_names[m]);
        if ((v = fj_param(&a.p, name))->set)
            q->has_max[m] = true, q->max[m] = v->d;
        /* the efficiencies' other spelling (NAME_min, NAME_max); undeclared names are never set */
        snprintf(name, sizeof name, "%s_min", fj_job_metric_names[m]);
        if ((v = fj_param(&a.p, name))->set)
            q->has_min[m] = true, q->min[m] = v->d;
        snprintf(name, sizeof name, "%s_max", fj_job_metric_names[m]);
        if ((v = fj_param(&a.p, name))->set)
            q->has_max[m] = true, q->max[m] = v->d;
    }
    /* the sort enum lists the keys in fj_job_sort order */
    if ((v = fj_param(&a.p, "sort"))->set)
        q->sort = (int)v->i;
    energy_settings(r, q);
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, jobs_op);
}

static void not_found(fj_http_req *r)
{
    fj_err err = {0};
    fj_err_set(&err, FJ_ENOTFOUND, NULL, "no such endpoint: %s", fj_http_path(r));
    fj_http_reply_error(r, FJ_ENOTFOUND, &err);
}

void fj_api_job_sub(fj_http_req *r)
{
    const char *rest = fj_http_path_rest(r);
    char *end;
    if (!(*rest >= '0' && *rest <= '9')) {
        not_found(r);
        return;
    }
    long long id = strtoll(rest, &end, 10);
    bool profile;
    if (*end == '\0' || strcmp(end, "/") == 0)
        profile = false;
    else if (strcmp(end, "/profile") == 0 || strcmp(end, "/profile/") == 0)
        profile = true;
    else {
        not_found(r);
        return;
    }
    fj_apiq a;
    if (!fj_api_begin(r, profile ? &fj_ep_job_profile : &fj_ep_job, NULL, &a))
        return;
    a.q.id = id;
    energy_settings(r, &a.q);
    const fj_pval *v;
    if (profile && (v = fj_param(&a.p, "by"))->set)
        a.q.by_host = v->i == 1;
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, profile ? fj_store_query_profile : job_op);
}
