/* account_usage.c — GET /api/v1/usage: usage per user, account, partition or cluster over a
 * window, per time bucket, sorted and cut to the top N; the figures are fj_store_account_usage's
 * (storage/query/account_usage.c; docs/storage.md, "Usage and efficiency"). */
#include "api/account_usage.h"

#include "api/api_int.h"
#include "server/config.h"
#include "storage/core/store_account_usage.h"

#include <string.h>

#define P_END {NULL, 0, NULL, NULL, false, 0, 0}

static const fj_pspec params[] = {
    {"cluster", FJ_PT_STRING, "cluster name", NULL, true, 0, 0},
    {"from", FJ_PT_TIME, "start of the window, included (default: to - 7 days; RFC 3339, epoch seconds, now or "
                         "now-DURATION)", NULL, false, 0, 0},
    {"to", FJ_PT_TIME, "end of the window, excluded (default: now; same forms as from)", NULL, false, 0, 0},
    {"by", FJ_PT_ENUM, "group by user (default), Slurm account, Slurm partition, or the cluster as a whole",
     "user|account|partition|cluster", false, 0, 0},
    {"bucket", FJ_PT_ENUM, "time buckets in UTC: none (default: the window), day, week (ISO, from Monday) or "
                           "month; the first and last cut by the window; at most 1,000",
     "none|day|week|month", false, 0, 0},
    {"user", FJ_PT_LIST, "only jobs of these users; comma-separated, repeatable", NULL, false, 0, 0},
    {"account", FJ_PT_LIST, "only jobs of these Slurm accounts; comma-separated, repeatable", NULL, false, 0, 0},
    {"partition", FJ_PT_LIST, "only jobs in these Slurm partitions; comma-separated, repeatable", NULL, false, 0,
     0},
    {"sort", FJ_PT_ENUM, "rank the groups by their totals over the window by this figure (default: group, the "
                         "name); nulls last",
     "group|jobs|jobs_alloc|wall_h|core_h_alloc|core_h_used|cpu_eff|gpu_h_alloc|gpu_h_used|gpu_eff|"
     "mem_gib_h_alloc|mem_gib_h_used|mem_eff|energy_kwh|co2e_kg",
     false, 0, 0},
    {"order", FJ_PT_ENUM, "asc or desc (default: asc by group, desc by a figure)", "asc|desc", false, 0, 0},
    {"limit", FJ_PT_INT, "only the first N groups in that order (in every bucket)", NULL, false, 1, 100000},
    {"energy", FJ_PT_BOOL,
     "true: energy_kwh and co2e_kg computed from the jobs' card power (about 1 ms of server time per GPU job in "
     "the window: docs/energy.md, \"In usage\"); default false, both null, unless sort names one of them",
     NULL, false, 0, 0},
    {"format", FJ_PT_ENUM, "json (default) or csv; an Accept header of text/csv also selects CSV", "json|csv", false,
     0, 0},
    P_END};

static const fj_endpoint ep_usage = {
    "/api/v1/usage", "Usage per user, account or partition",
    "Per group (user, Slurm account, partition or the cluster) and time bucket: the jobs, their wall hours, the "
    "core-, GPU- and memory-hours allocated (from Slurm's records, else a ClusterCockpit job's) and used (from the "
    "samples), the "
    "efficiencies they imply (used over allocated, counting only jobs whose allocation is known). A job without "
    "a Slurm record has its use counted and no allocation; a job across the window's or a bucket's edge counts "
    "its allocation for its time inside and its use from its samples inside. With energy=true, energy_kwh is the "
    "GPU part of the jobs' energy inside the bucket, co2e_kg its carbon where configured (docs/energy.md, \"In "
    "usage\"). See "
    "docs/storage.md, \"Usage and efficiency\".",
    NULL, NULL, params, {&fj_qt_account_usage}, NULL, "from,to", 0, NULL};

const fj_endpoint *const fj_account_usage_endpoints[] = {&ep_usage, NULL};

static fj_status usage_op(fj_store *s, fj_query *q, void *ctx, fj_sink *k, fj_err *err)
{
    return fj_store_account_usage(s, q, ctx, k, err);
}

void fj_api_account_usage(fj_http_req *r)
{
    fj_apiq a;
    if (!fj_api_begin(r, &ep_usage, NULL, &a))
        return;
    fj_usage_req req = {0};
    const fj_pval *v;
    if ((v = fj_param(&a.p, "by"))->set)
        req.by = (fj_usage_by)v->i;
    if ((v = fj_param(&a.p, "bucket"))->set)
        req.bucket = (fj_usage_bucket)v->i;
    a.q.bucket_s = 0; /* the generic bucket (seconds) does not apply */
    req.users = fj_api_strlist(&a, "user");
    req.accounts = fj_api_strlist(&a, "account");
    req.partitions = fj_api_strlist(&a, "partition");
    req.sort = FJ_UF_GROUP;
    if ((v = fj_param(&a.p, "sort"))->set && v->i > 0)
        req.sort = (int)v->i - 1; /* after "group", the figures in fj_usage_figure order */
    const fj_pval *order = fj_param(&a.p, "order");
    req.desc = order->set ? order->i == 1 : req.sort != FJ_UF_GROUP;
    /* Energy is read only when asked (energy=true, or a sort by it): it costs per GPU job until a
     * stored per-job roll-up exists (docs/energy.md, "In usage"). */
    fj_tri energy = fj_api_tri(&a, "energy");
    bool energy_sort = req.sort == FJ_UF_ENERGY_KWH || req.sort == FJ_UF_CO2E_KG;
    a.q.no_energy = energy == FJ_TRI_NO || (energy != FJ_TRI_YES && !energy_sort);
    a.q.limit = 0; /* not rows per page: groups */
    if ((v = fj_param(&a.p, "limit"))->set)
        req.limit = (size_t)v->i;
    const fj_config *c = fj_http_config(r); /* co2e_kg where carbon-intensity names the cluster */
    double g;
    if (c && fj_config_carbon(c, a.q.cluster, &g)) {
        a.q.carbon_g_per_kwh = g;
        a.q.pue = fj_config_pue(c);
    }
    fj_store *s = fj_api_store(&a);
    if (!s)
        return;
    fj_api_run_ctx(&a, s, usage_op, &req);
}
