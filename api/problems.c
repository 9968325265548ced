/* problems.c — GET /api/v1/problems and /api/v1/problems/users: the problem-jobs report's
 * parameters (every threshold, with its default) and handlers; the rules and their SQL are in
 * storage/query/problems.c. */
#include "api/problems.h"

#include "api/api_int.h"
#include "storage/core/store_problems.h"

#include <string.h>

#define P_END {NULL, 0, NULL, NULL, false, 0, 0}

/* The thresholds' defaults are fj_problem_rules_default's; the texts say them for the document. */
static const fj_pspec params[] = {
    {"cluster", FJ_PT_STRING, "cluster name", NULL, true, 0, 0},
    {"from", FJ_PT_TIME, "jobs last seen at or after this time (default: to - 1 day; RFC 3339, epoch seconds, now "
                         "or now-DURATION)", NULL, false, 0, 0},
    {"to", FJ_PT_TIME, "jobs first seen at or before this time (default: now; same forms as from)", NULL, false, 0,
     0},
    {"user", FJ_PT_LIST, "user names, comma-separated; repeatable", NULL, false, 0, 0},
    {"rule", FJ_PT_LIST, "rules to judge (default all): gpu_idle, gpu_unused, cpu_low, mem_low, deadweight; "
                         "repeatable", NULL, false, 0, 0},
    {"gpu_idle", FJ_PT_DURATION, "gpu_idle: a job that used GPUs and did not use a card it had processes on over "
                                 "at least its last this long on the node (default 2h)", NULL, false, 0, 0},
    {"gpu_unused", FJ_PT_DURATION, "gpu_unused: a job that never used a GPU and ran at least this long on a node "
                                   "with GPUs (default 1h)", NULL, false, 0, 0},
    {"cpu_ratio", FJ_PT_NUMBER, "cpu_low: mean cores used below this fraction of the cores held (default 0.25)",
     NULL, false, 0, 0},
    {"cpu_min", FJ_PT_DURATION, "cpu_low: only jobs that ran at least this long (default 2h)", NULL, false, 0, 0},
    {"mem_ratio", FJ_PT_NUMBER, "mem_low: peak memory below this fraction of the memory requested (default 0.25)",
     NULL, false, 0, 0},
    {"mem_min", FJ_PT_DURATION, "mem_low: only jobs that ran at least this long (default 1h)", NULL, false, 0, 0},
    {"mem_min_request", FJ_PT_KB, "mem_low: only jobs that requested at least this per node (kB, or 16G; default "
                                  "1G)", NULL, false, 0, 0},
    {"deadweight", FJ_PT_DURATION, "deadweight: no CPU or GPU use on a node over at least the job's last this long "
                                   "(default 4h)", NULL, false, 0, 0},
    {"format", FJ_PT_ENUM, "json (default) or csv; an Accept header of text/csv also selects CSV", "json|csv", false,
     0, 0},
    P_END};

static const fj_endpoint ep_problems = {
    "/api/v1/problems", "Problem jobs",
    "Jobs seen in the window that hold resources without using them, one row per job and rule broken (per "
    "GPU card for gpu_idle, per node for gpu_unused and deadweight): GPU cards left idle over the job's last "
    "hours, GPU nodes used without a GPU, far fewer cores used than held, far less memory used than "
    "requested, no activity at all over the job's last hours. Judged from the stored job summaries, the "
    "jobs' activity per node and per GPU card, Slurm requests and the nodes' sysinfo. See docs/problems.md.",
    NULL, NULL, params, {&fj_qt_problems}, NULL, "from,to", 0, NULL};

static const fj_endpoint ep_users = {
    "/api/v1/problems/users", "Problem jobs per user",
    "The problem-jobs report (same parameters) summed per user: jobs, rows per rule, idle core-hours and "
    "GPU-hours. See docs/problems.md.",
    NULL, NULL, params, {&fj_qt_problem_users}, NULL, "from,to", 0, NULL};

const fj_endpoint *const fj_problems_endpoints[] = {&ep_problems, &ep_users, NULL};

/* The rules asked for, their thresholds over the defaults; false after answering 400. */
static bool rules_of(fj_apiq *a, fj_problem_rules *pr)
{
    fj_problem_rules_default(pr);
    const fj_pval *v = fj_param(&a->p, "rule");
    if (v->set) {
        memset(pr->want, 0, sizeof pr->want);
        for (size_t i = 0; i < v->n; i++) {
            int k = 0;
            while (k < FJ_PR__COUNT && strcmp(fj_problem_rule_names[k], v->list[i]) != 0)
                k++;
            if (k == FJ_PR__COUNT) {
                fj_api_bad_param(a->r, "rule", "not one of gpu_idle, gpu_unused, cpu_low, mem_low, deadweight");
                return false;
            }
            pr->want[k] = true;
        }
    }
    static const struct {
        const char *name;
        size_t off;
    } durations[] = {
        {"gpu_idle", offsetof(fj_problem_rules, gpu_idle_s)},
        {"gpu_unused", offsetof(fj_problem_rules, gpu_unused_s)},
        {"cpu_min", offsetof(fj_problem_rules, cpu_min_s)},
        {"mem_min", offsetof(fj_problem_rules, mem_min_s)},
        {"deadweight", offsetof(fj_problem_rules, deadweight_s)},
    }, ratios[] = {
        {"cpu_ratio", offsetof(fj_problem_rules, cpu_ratio)},
        {"mem_ratio", offsetof(fj_problem_rules, mem_ratio)},
    };
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++)
        if ((v = fj_param(&a->p, durations[i].name))->set) {
            if (v->i < 0) {
                fj_api_bad_param(a->r, durations[i].name, "must not be negative");
                return false;
            }
            *(int64_t *)(void *)((char *)pr + durations[i].off) = v->i;
        }
    for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++)
        if ((v = fj_param(&a->p, ratios[i].name))->set) {
            if (!(v->d > 0 && v->d <= 1)) {
                fj_api_bad_param(a->r, ratios[i].name, "must be above 0 and at most 1");
                return false;
            }
            *(double *)(void *)((char *)pr + ratios[i].off) = v->d;
        }
    if ((v = fj_param(&a->p, "mem_min_request"))->set) {
        if (v->d < 0) {
            fj_api_bad_param(a->r, "mem_min_request", "must not be negative");
            return false;
        }
        pr->mem_min_request_kb = v->d;
    }
    return true;
}

static void answer(fj_http_req *r, const fj_endpoint *ep, bool by_user)
{
    fj_apiq a;
    if (!fj_api_begin(r, ep, NULL, &a))
        return;
    fj_problem_rules pr;
    if (!rules_of(&a, &pr))
        return;
    pr.by_user = by_user;
    a.q.problems = &pr;
    a.q.users = fj_api_strlist(&a, "user");
    fj_store *s = fj_api_store(&a);
    if (s)
        fj_api_run(&a, s, fj_store_query_problems);
}

void fj_api_problems(fj_http_req *r)
{
    answer(r, &ep_problems, false);
}

void fj_api_problem_users(fj_http_req *r)
{
    answer(r, &ep_users, true);
}
