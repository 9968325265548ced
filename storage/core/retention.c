/* storage/core/retention.c — the retention settings' rules shared by both backends and the write
 * paths (storage/core/retention.h). */
#include "storage/core/retention.h"

#include "storage/core/driver.h"
#include "timefmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void take_mark(void *ctx, int ncols, const char *const *cells)
{
    fj_retention_marks *m = ctx;
    if (ncols < 2 || !cells[0] || !cells[1])
        return;
    fj_time t = strtoll(cells[1], NULL, 10);
    if (!strcmp(cells[0], FJ_RET_PROCESS_SAMPLES))
        m->process_samples = t;
    else if (!strcmp(cells[0], FJ_RET_NODE_SAMPLES))
        m->node_samples = t;
    else if (!strcmp(cells[0], FJ_RET_ERRORS))
        m->errors = t;
    else if (!strcmp(cells[0], FJ_RET_SLURM))
        m->slurm = t;
}

fj_status fj_retention_marks_read(fj_store *s, fj_retention_marks *out, fj_err *err)
{
    *out = (fj_retention_marks){0};
    return fj_driver_of(s)->run(s, "SELECT kind, expired_before FROM retention_marks", 0, NULL, take_mark, out, NULL,
                                "retention marks", err);
}

fj_status fj_retention_check(const fj_retention *r, fj_err *err)
{
    if (r->node_samples_s > 0 && (r->process_samples_s == 0 || r->process_samples_s > r->node_samples_s))
        return fj_err_set(err, FJ_EINVAL, "retention-process-samples",
                          "retention-process-samples (%llds, 0 = forever) must not be longer than "
                          "retention-node-samples (%llds): a process sample's rows hang off its node sample",
                          (long long)r->process_samples_s, (long long)r->node_samples_s);
    return FJ_OK;
}

/* The shorter of two retentions, 0 meaning forever. */
static int64_t shorter(int64_t a, int64_t b)
{
    if (a <= 0)
        return b > 0 ? b : 0;
    return b > 0 && b < a ? b : a;
}

fj_status fj_retention_admit(const fj_retention *r, const fj_envelope *env, fj_time now, fj_err *err)
{
    int64_t keep = 0;
    const char *setting = NULL;
    if (env->is_error) {
        keep = r->errors_s, setting = "retention-errors";
    } else if (env->kind == FJ_KIND_SAMPLE) {
        keep = shorter(r->process_samples_s, r->node_samples_s);
        setting = keep == r->process_samples_s ? "retention-process-samples" : "retention-node-samples";
    } else if (env->kind == FJ_KIND_JOB) {
        keep = r->slurm_s, setting = "retention-slurm";
    } else if (env->kind == FJ_KIND_CLUSTER) {
        keep = r->node_samples_s, setting = "retention-node-samples";
    }
    if (keep <= 0 || env->time == 0 || env->time >= now - keep)
        return FJ_OK;
    char t[21], cut[21];
    fj_time_format(env->time, t);
    fj_time_format(now - keep, cut);
    fj_status st = fj_err_set(err, FJ_EINVAL, env->is_error ? "errors" : "data.attributes.time",
                              "%s of %s is older than %s (%llds, before %s): its raw rows would already have been "
                              "deleted, and storing it again would count it twice",
                              fj_kind_name(env->kind), t, setting, (long long)keep, cut);
    if (err)
        snprintf(err->code, sizeof err->code, "expired");
    return st;
}
