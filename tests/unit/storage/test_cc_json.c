/* test_cc_json.c — what both backends share of ClusterCockpit records (storage/ts/cc_json.h): the object a
 * Sonar job's detail carries for its joined cc-backend job, cc-backend's job rules and their
 * answers, and an event's deduplication key. */
#include "storage/ts/cc_json.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

Test(cc_json, job_ref_full)
{
    fj_buf b;
    fj_buf_init(&b, 4096);
    fj_cc_job_ref r = {.id = 7, .job_id = 2575193, .start_time = 1764060000, .stopped = true,
                       .stop_time = 1764064920, .state = "failed", .user = "k106eb10", .project = "k106eb",
                       .partition = "main", .subcluster = "main", .num_nodes = 1, .num_hwthreads = 72,
                       .num_acc = 0, .hosts = "[\"f0726\"]"};
    cr_assert_eq(fj_cc_job_ref_json(&b, &r), FJ_OK);
    cr_assert_str_eq(b.data, "{\"id\":7,\"jobId\":2575193,\"startTime\":1764060000,\"stopTime\":1764064920,"
                             "\"jobState\":\"failed\",\"user\":\"k106eb10\",\"project\":\"k106eb\","
                             "\"partition\":\"main\",\"subCluster\":\"main\",\"numNodes\":1,\"numHwthreads\":72,"
                             "\"numAcc\":0,\"hosts\":[\"f0726\"]}");
    fj_buf_free(&b);
}

Test(cc_json, job_ref_running_and_unknowns)
{
    fj_buf b;
    fj_buf_init(&b, 4096);
    fj_cc_job_ref r = {.id = 1, .job_id = 5, .start_time = 10, .state = "running", .user = "a\"b",
                       .num_nodes = -1, .num_hwthreads = -1, .num_acc = -1};
    cr_assert_eq(fj_cc_job_ref_json(&b, &r), FJ_OK);
    cr_assert_str_eq(b.data, "{\"id\":1,\"jobId\":5,\"startTime\":10,\"stopTime\":null,\"jobState\":\"running\","
                             "\"user\":\"a\\\"b\",\"project\":null,\"partition\":null,\"subCluster\":null,"
                             "\"numNodes\":null,\"numHwthreads\":null,\"numAcc\":null,\"hosts\":[]}");
    fj_buf_free(&b);
}

/* A row value must not be cut short: a buffer too small fails instead of truncating. */
Test(cc_json, job_ref_too_large)
{
    fj_buf b;
    fj_buf_init(&b, 40);
    fj_cc_job_ref r = {.id = 1, .job_id = 5, .start_time = 10, .state = "running", .hosts = "[\"x\"]"};
    cr_assert_eq(fj_cc_job_ref_json(&b, &r), FJ_ETOOBIG);
    fj_buf_free(&b);
}

/* cc-backend's job rules (fj_cc_job_apply) on a fake backend: one stored job at most. */
typedef struct fake_db {
    int64_t recent, id, start;   /* find_recent's answer; the stored job (id 0: none) */
    char state[32];
    bool insert_loses, stop_loses; /* another writer won the race */
    int inserts, stops;
} fake_db;

static fj_status f_recent(void *ud, const fj_cc_job *j, int64_t *id, fj_err *err)
{
    (void)j, (void)err;
    *id = ((fake_db *)ud)->recent;
    return FJ_OK;
}

static fj_status f_insert(void *ud, const fj_cc_job *j, int64_t *id, fj_err *err)
{
    (void)j, (void)err;
    fake_db *d = ud;
    d->inserts++;
    *id = d->insert_loses ? 0 : 42;
    return FJ_OK;
}

static fj_status f_find(void *ud, const fj_cc_job *j, int64_t *id, int64_t *start, char state[32], fj_err *err)
{
    (void)j, (void)err;
    fake_db *d = ud;
    *id = d->id;
    if (d->id) {
        *start = d->start;
        snprintf(state, 32, "%s", d->state);
    }
    return FJ_OK;
}

static fj_status f_stop(void *ud, const fj_cc_job *j, int64_t id, bool *stopped, fj_err *err)
{
    (void)j, (void)id, (void)err;
    fake_db *d = ud;
    d->stops++;
    *stopped = !d->stop_loses;
    return FJ_OK;
}

static const fj_cc_job_ops fake_ops = {f_recent, f_insert, f_find, f_stop};

Test(cc_json, job_start_inserts_or_is_a_duplicate)
{
    fj_cc_job_result r = {0};
    fj_cc_job j = {.op = FJ_CC_JOB_START, .cluster = "fritz", .job_id = 7, .start_time = 100, .result = &r};
    fake_db d = {0};
    bool added = false;
    cr_assert_eq(fj_cc_job_apply(&j, &fake_ops, &d, &added, NULL), FJ_OK);
    cr_assert(added);
    cr_assert_eq(r.status, FJ_OK);
    cr_assert_eq(r.id, 42);
    cr_assert_eq(r.start_time, 100);
    cr_assert_str_eq(r.state, "running");

    fake_db dup = {.recent = 5};
    fj_cc_job_result r2 = {0};
    j.result = &r2;
    cr_assert_eq(fj_cc_job_apply(&j, &fake_ops, &dup, &added, NULL), FJ_OK);
    cr_assert_not(added);
    cr_assert_eq(dup.inserts, 0);
    cr_assert_eq(r2.status, FJ_ECONFLICT);
    cr_assert_eq(r2.id, 5);
    cr_assert_str_eq(r2.message, "a job with that jobId, cluster and startTime already exists: jobId 7 on fritz");

    fake_db race = {.insert_loses = true};
    fj_cc_job_result r3 = {0};
    j.result = &r3;
    cr_assert_eq(fj_cc_job_apply(&j, &fake_ops, &race, &added, NULL), FJ_OK);
    cr_assert_not(added);
    cr_assert_eq(r3.status, FJ_ECONFLICT);
    cr_assert_eq(r3.id, 0);

    j.result = NULL; /* no result wanted */
    cr_assert_eq(fj_cc_job_apply(&j, &fake_ops, &dup, &added, NULL), FJ_OK);
    cr_assert_not(added);
}

Test(cc_json, job_stop_rules)
{
    fj_cc_job_result r = {0};
    fj_cc_job j = {.op = FJ_CC_JOB_STOP, .cluster = "fritz", .job_id = 7, .stop_time = 200, .state = "completed",
                   .result = &r};
    bool added = true;
    fake_db none = {0};
    cr_assert_eq(fj_cc_job_apply(&j, &fake_ops, &none, &added, NULL), FJ_OK);
    cr_assert_not(added);
    cr_assert_eq(r.status, FJ_ENOTFOUND);
    cr_assert_str_eq(r.message, "finding job failed: no job 7 on cluster fritz");

    fake_db done = {.id = 3, .start = 100, .state = "failed"};
    memset(&r, 0, sizeof r);
    cr_assert_eq(fj_cc_job_apply(&j, &fake_ops, &done, &added, NULL), FJ_OK);
    cr_assert_not(added);
    cr_assert_eq(r.status, FJ_ECONFLICT);
    cr_assert_eq(r.id, 3);
    cr_assert_str_eq(r.state, "failed");
    cr_assert_str_eq(r.message, "jobId 7 on fritz: job has already been stopped (state is: failed)");
    cr_assert_eq(done.stops, 0);

    fake_db later = {.id = 3, .start = 300, .state = "running"};
    memset(&r, 0, sizeof r);
    cr_assert_eq(fj_cc_job_apply(&j, &fake_ops, &later, &added, NULL), FJ_OK);
    cr_assert_not(added);
    cr_assert_eq(r.status, FJ_EINVAL);
    cr_assert_str_eq(r.message, "jobId 7 on fritz: stopTime must be larger/equal than startTime");

    fake_db raced = {.id = 3, .start = 100, .state = "running", .stop_loses = true};
    memset(&r, 0, sizeof r);
    cr_assert_eq(fj_cc_job_apply(&j, &fake_ops, &raced, &added, NULL), FJ_OK);
    cr_assert_not(added);
    cr_assert_eq(r.status, FJ_ECONFLICT);
    cr_assert_str_eq(r.message, "jobId 7 on fritz: job has already been stopped (state is: stopped)");

    fake_db ok = {.id = 3, .start = 100, .state = "running"};
    memset(&r, 0, sizeof r);
    cr_assert_eq(fj_cc_job_apply(&j, &fake_ops, &ok, &added, NULL), FJ_OK);
    cr_assert(added);
    cr_assert_eq(ok.stops, 1);
    cr_assert_eq(r.status, FJ_OK);
    cr_assert_eq(r.id, 3);
    cr_assert_eq(r.start_time, 100);
    cr_assert_eq(r.stop_time, 200);
    cr_assert_str_eq(r.state, "completed");
}

Test(cc_json, message_hash_is_fnv1a_of_tags_nul_payload)
{
    fj_cc_message m = {.tags = "{\"a\":\"b\"}", .payload = "x\0y", .payload_len = 3};
    cr_assert_eq(fj_cc_message_hash(&m), UINT64_C(0xb6ad1252b0eb1a3b));
}
