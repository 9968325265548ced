/* Tests of api/spec.c: the OpenAPI document is valid JSON, lists every endpoint with every
 * parameter and every result column, and every declared parameter list is well formed. */
#include "json.h"
#include "api/spec.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

struct all {
    const fj_endpoint *v[256];
    size_t n;
};

static void collect(const fj_endpoint *e, void *ctx)
{
    struct all *all = ctx;
    if (all->n < 256)
        all->v[all->n++] = e;
}

Test(spec, openapi_lists_every_endpoint_parameter_and_column)
{
    fj_buf b;
    fj_buf_init(&b, 16 << 20);
    cr_assert_eq(fj_openapi_write(&b), FJ_OK);
    fj_arena *a = fj_arena_create();
    fj_json *doc;
    fj_err err = {0};
    cr_assert_eq(fj_json_parse(a, b.data, b.len, NULL, &doc, &err), FJ_OK, "%s at %s", err.message, err.path);
    cr_assert_str_eq(fj_json_get(doc, "openapi")->v.s, "3.0.3");
    const fj_json *paths = fj_json_get(doc, "paths");
    struct all all = {.n = 0};
    fj_endpoints_each(collect, &all);
    size_t n = 0;
    for (size_t i = 0; i < all.n; i++, n++) {
        const fj_endpoint *e = all.v[i];
        const fj_json *p = fj_json_get(paths, e->path);
        cr_assert(p, "%s documented", e->path);
        const fj_json *op = fj_json_get(p, (e->flags & FJ_EP_POST) ? "post" : "get");
        cr_assert(!(e->flags & FJ_EP_GETPOST) || (fj_json_get(p, "get") && fj_json_get(p, "post")), "%s: both", e->path);
        cr_assert(op, "%s has its method", e->path);
        const fj_json *params = fj_json_get(op, "parameters");
        for (const fj_pspec *ps = e->params; ps && ps->name; ps++) {
            bool found = false;
            for (size_t k = 0; k < params->len; k++)
                found |= strcmp(fj_json_get(&params->v.items[k], "name")->v.s, ps->name) == 0;
            cr_assert(found, "%s documents parameter %s", e->path, ps->name);
            cr_assert(ps->doc && *ps->doc, "%s: %s has a description", e->path, ps->name);
        }
        for (int t = 0; t < 3 && e->tables[t]; t++)
            for (size_t c = 0; c < e->tables[t]->n_cols; c++)
                cr_assert(strstr(b.data, e->tables[t]->cols[c].name), "%s: column %s", e->path,
                          e->tables[t]->cols[c].name);
        if (e->path_param) {
            char brace[64];
            snprintf(brace, sizeof brace, "{%s}", e->path_param);
            cr_assert(strstr(e->path, brace), "%s names {%s}", e->path, e->path_param);
        }
    }
    cr_assert_eq(fj_json_get(paths, "/api/v1/jobs") != NULL, true);
    cr_assert_eq(paths->len, n, "one path per endpoint");
    cr_assert(n > 30, "the other modules' endpoints are in: %zu", n);
    fj_arena_destroy(a);
    fj_buf_free(&b);
}

Test(spec, every_column_is_documented)
{
    const fj_qtable *t[] = {&fj_qt_clusters, &fj_qt_nodes,       &fj_qt_sysinfo,      &fj_qt_jobs,      &fj_qt_job,
                            &fj_qt_job_hosts, &fj_qt_profile,    &fj_qt_node_load,    &fj_qt_cluster_load,
                            &fj_qt_slurm_jobs, &fj_qt_partitions, &fj_qt_node_states, &fj_qt_uptime,
                            &fj_qt_errors};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        cr_assert(t[i]->n_key <= t[i]->n_cols);
        for (size_t c = 0; c < t[i]->n_cols; c++) {
            cr_assert(t[i]->cols[c].doc && *t[i]->cols[c].doc, "%s.%s", t[i]->name, t[i]->cols[c].name);
            cr_assert_eq(fj_qtable_col(t[i], t[i]->cols[c].name), (int)c, "%s.%s unique", t[i]->name,
                         t[i]->cols[c].name);
        }
    }
    /* the job sort enum lists the keys in fj_job_sort order */
    const fj_pspec *sort = NULL;
    for (const fj_pspec *p = fj_ep_jobs.params; p->name; p++)
        if (strcmp(p->name, "sort") == 0)
            sort = p;
    cr_assert(sort);
    char want[512] = "";
    for (int s = 0; s < FJ_JS__COUNT; s++) {
        if (s)
            strcat(want, "|");
        strcat(want, fj_job_sort_name(s));
    }
    cr_assert_str_eq(sort->values, want);
    for (int m = 0; m < FJ_JM__COUNT; m++)
        cr_assert(fj_qtable_col(&fj_qt_jobs, fj_job_metric_names[m]) >= 0, "%s is a job column",
                  fj_job_metric_names[m]);
    /* a job's detail row is a list row and the joined ClusterCockpit job */
    cr_assert_eq(fj_qt_job.n_cols, fj_qt_jobs.n_cols + 1);
    cr_assert_eq(fj_qt_job.cols, fj_qt_jobs.cols);
    cr_assert_str_eq(fj_qt_job.cols[fj_qt_jobs.n_cols].name, "clustercockpit");
}
