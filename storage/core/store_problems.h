/* storage/core/store_problems.h — the problem-jobs report's rules (GET /api/v1/problems;
 * docs/problems.md): jobs that hold resources without using them. The query is
 * fj_store_query_problems (storage/core/store_query.h), which reads these rules from
 * fj_query.problems; its rows are fj_qt_problems (one per job and broken rule, or per job, node and
 * rule for the rules judged per node) or, with by_user, fj_qt_problem_users (one per user).
 *
 * Every figure comes from stored summaries: the job summary (jobs), the job's activity per node
 * (job_activity, kept by triggers at write time), the Slurm job's current record and the node's
 * latest sysinfo; no raw sample is read. */
#ifndef FJ_STORE_PROBLEMS_H
#define FJ_STORE_PROBLEMS_H

#include "storage/core/store_query.h"

#include <stdbool.h>
#include <stdint.h>

/* The rules, in the order rows of one job are listed. */
#define FJ_PROBLEM_RULES(X)                                                                        \
    X(GPU_IDLE, "gpu_idle") X(GPU_UNUSED, "gpu_unused") X(CPU_LOW, "cpu_low") X(MEM_LOW, "mem_low") \
    X(DEADWEIGHT, "deadweight")
typedef enum fj_problem_rule {
#define FJ_PR_ENUM(id, name) FJ_PR_##id,
    FJ_PROBLEM_RULES(FJ_PR_ENUM)
#undef FJ_PR_ENUM
    FJ_PR__COUNT
} fj_problem_rule;
extern const char *const fj_problem_rule_names[FJ_PR__COUNT];

/* The thresholds; fj_problem_rules_default gives the documented defaults. A rule holds when the
 * condition named is met (durations: at least; ratios: below). */
typedef struct fj_problem_rules {
    bool want[FJ_PR__COUNT];     /* the rules asked for (default: all) */
    int64_t gpu_idle_s;          /* gpu_idle: no GPU use over the job's last gpu_idle_s on a node (2 h) */
    int64_t gpu_unused_s;        /* gpu_unused: on a GPU node this long without any GPU use (1 h) */
    double cpu_ratio;            /* cpu_low: mean cores used / cores held below this (0.25) */
    int64_t cpu_min_s;           /* cpu_low: ... for a job that ran at least this long (2 h) */
    double mem_ratio;            /* mem_low: peak memory / requested below this (0.25) */
    int64_t mem_min_s;           /* mem_low: ... for a job that ran at least this long (1 h) */
    double mem_min_request_kb;   /* mem_low: ... and requested at least this per node (1 GiB) */
    int64_t deadweight_s;        /* deadweight: no CPU or GPU use over the job's last deadweight_s
                                  * on a node (4 h) */
    bool by_user;                /* one row per user (fj_qt_problem_users) instead of per problem */
} fj_problem_rules;

void fj_problem_rules_default(fj_problem_rules *r);

/* The result tables (storage/query/problems.c). */
extern const fj_qtable fj_qt_problems, fj_qt_problem_users;

#endif
