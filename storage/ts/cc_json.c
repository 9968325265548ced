/* storage/ts/cc_json.c — a joined ClusterCockpit job as JSON, cc-backend's job rules and outcomes (storage/ts/cc_json.h). */
#include "storage/ts/cc_json.h"

#include "timefmt.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>


/* Its object becomes a row value that must not be cut short. */
fj_status fj_cc_job_ref_json(fj_buf *out, const fj_cc_job_ref *r)
{
    fj_status st = fj_buf_printf(out, "{\"id\":%lld,\"jobId\":%lld,\"startTime\":%lld,\"stopTime\":",
                                 (long long)r->id, (long long)r->job_id, (long long)r->start_time);
    if (st == FJ_OK)
        st = r->stopped ? fj_buf_printf(out, "%lld", (long long)r->stop_time) : fj_buf_puts(out, "null");
    const struct {
        const char *name, *v;
    } strs[] = {{"jobState", r->state},     {"user", r->user},          {"project", r->project},
                {"partition", r->partition}, {"subCluster", r->subcluster}};
    for (size_t i = 0; st == FJ_OK && i < sizeof strs / sizeof strs[0]; i++) {
        st = fj_buf_printf(out, ",\"%s\":", strs[i].name);
        if (st == FJ_OK)
            st = strs[i].v ? fj_buf_json_str(out, strs[i].v) : fj_buf_puts(out, "null");
    }
    const struct {
        const char *name;
        int64_t v;
    } nums[] = {{"numNodes", r->num_nodes}, {"numHwthreads", r->num_hwthreads}, {"numAcc", r->num_acc}};
    for (size_t i = 0; st == FJ_OK && i < sizeof nums / sizeof nums[0]; i++)
        st = nums[i].v < 0 ? fj_buf_printf(out, ",\"%s\":null", nums[i].name)
                           : fj_buf_printf(out, ",\"%s\":%lld", nums[i].name, (long long)nums[i].v);
    if (st == FJ_OK)
        st = fj_buf_printf(out, ",\"hosts\":%s}", r->hosts ? r->hosts : "[]");
    return st;
}

/* A refusal into r (nothing when r is NULL): its status and cc-backend's message. */
static void refuse(fj_cc_job_result *r, fj_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void refuse(fj_cc_job_result *r, fj_status status, const char *fmt, ...)
{
    if (!r)
        return;
    r->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
}

void fj_cc_job_duplicate(fj_cc_job_result *r, const fj_cc_job *j, int64_t existing_id)
{
    if (r)
        r->id = existing_id;
    refuse(r, FJ_ECONFLICT, "a job with that jobId, cluster and startTime already exists: jobId %llu on %s",
           (unsigned long long)j->job_id, j->cluster);
}

void fj_cc_job_unknown(fj_cc_job_result *r, const fj_cc_job *j)
{
    refuse(r, FJ_ENOTFOUND, "finding job failed: no job %llu on cluster %s", (unsigned long long)j->job_id,
           j->cluster);
}

void fj_cc_job_not_running(fj_cc_job_result *r, const fj_cc_job *j, const char *state)
{
    refuse(r, FJ_ECONFLICT, "jobId %llu on %s: job has already been stopped (state is: %s)",
           (unsigned long long)j->job_id, j->cluster, state);
}

void fj_cc_job_stop_before_start(fj_cc_job_result *r, const fj_cc_job *j)
{
    refuse(r, FJ_EINVAL, "jobId %llu on %s: stopTime must be larger/equal than startTime",
           (unsigned long long)j->job_id, j->cluster);
}

fj_status fj_cc_job_apply(const fj_cc_job *j, const fj_cc_job_ops *ops, void *ud, bool *added, fj_err *err)
{
    fj_cc_job_result *res = j->result;
    fj_status st;
    *added = false;
    if (j->op == FJ_CC_JOB_START) {
        int64_t old = 0, id = 0;
        if ((st = ops->find_recent(ud, j, &old, err)) != FJ_OK)
            return st;
        if (!old) {
            if ((st = ops->insert(ud, j, &id, err)) != FJ_OK)
                return st;
            if (id) {
                *added = true;
                if (res) {
                    res->status = FJ_OK;
                    res->id = id;
                    res->start_time = j->start_time;
                    snprintf(res->state, sizeof res->state, "running");
                }
                return FJ_OK;
            }
        }
        fj_cc_job_duplicate(res, j, old);
        return FJ_OK;
    }
    int64_t id = 0, start = 0;
    char state[32] = "";
    if ((st = ops->find(ud, j, &id, &start, state, err)) != FJ_OK)
        return st;
    if (!id) {
        fj_cc_job_unknown(res, j);
        return FJ_OK;
    }
    if (res) {
        res->id = id;
        res->start_time = start;
        snprintf(res->state, sizeof res->state, "%s", state);
    }
    if (strcmp(state, "running") != 0) {
        fj_cc_job_not_running(res, j, state);
        return FJ_OK;
    }
    if (j->stop_time < start) {
        fj_cc_job_stop_before_start(res, j);
        return FJ_OK;
    }
    bool stopped = false;
    if ((st = ops->stop(ud, j, id, &stopped, err)) != FJ_OK)
        return st;
    if (!stopped) { /* another server stopped it since the lookup */
        fj_cc_job_not_running(res, j, "stopped");
        return FJ_OK;
    }
    *added = true;
    if (res) {
        res->status = FJ_OK;
        res->stop_time = j->stop_time;
        snprintf(res->state, sizeof res->state, "%s", j->state);
    }
    return FJ_OK;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t fj_cc_message_hash(const fj_cc_message *m)
{
    uint64_t h = fnv1a(1469598103934665603ull, m->tags, strlen(m->tags));
    h = fnv1a(h, "\0", 1);
    return fnv1a(h, m->payload, m->payload_len);
}
