/* test_cc_json.c — the ClusterCockpit JSON both backends answer (cc_json.h): the object a Sonar
 * job's detail carries for its joined cc-backend job. */
#include "cc_json.h"

#include <criterion/criterion.h>

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
