/* test_collect.c — whole documents from the fixture root plus the fake NVML, as --once --stdout
 * would print them. */
#include "collect.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define ROOT FJ_SOURCE_DIR "/tests/data/pusher/node-x86"

static fj_push_config cfg;

static void setup(const char *script, fj_procs_mode procs)
{
    fj_push_config_init(&cfg);
    free(cfg.root);
    cfg.root = strdup(ROOT);
    free(cfg.nvml_library);
    cfg.nvml_library = strdup(FJ_FAKE_NVML_PATH);
    free(cfg.node);
    cfg.node = strdup("c1-7");
    cfg.cluster = strdup("fox.example");
    cfg.processes = procs;
    cfg.fixed_time = 1698400000;
    setenv("FJ_FAKE_NVML", script, 1);
}

static char *collect(fj_status (*f)(fj_collector *, fj_buf *, fj_err *), fj_status want)
{
    fj_collector *c = fj_collector_new(&cfg);
    cr_assert_not_null(c);
    static fj_buf out;
    fj_buf_init(&out, 64 << 20);
    fj_err err = {.code = ""};
    cr_assert_eq(f(c, &out, &err), want, "%s", err.message);
    fj_collector_free(c);
    return out.data;
}

Test(collect, sample_with_gpu_processes)
{
    setup("gpu uuid=GPU-x pstate=8; gpu uuid=GPU-y; proc gpu=1 pid=5000 mem=1048576 sm=30; proc gpu=0 pid=5001 mem=0 sm=2",
          FJ_PROCS_GPU);
    char *j = collect(fj_collect_sample, FJ_OK);
    cr_assert(strstr(j, "{\"meta\":{\"producer\":\"fjord-push\","), "%s", j);
    cr_assert(strstr(j, "\"time\":\"2023-10-27T09:46:40Z\",\"cluster\":\"fox.example\",\"node\":\"c1-7\""), "%s", j);
    cr_assert(strstr(j, "\"boot\":\"2023-10-26T06:54:55Z\",\"cpus\":[534,"), "%s", j);
    cr_assert(strstr(j, "\"uuid\":\"GPU-x\",\"failing\":0,\"fan\":0,\"compute_mode\":\"Default\",\"performance_state\":10,"), "%s", j);
    /* both processes are in Slurm job 4242, user alice, epoch 0: one job record */
    cr_assert(strstr(j, "\"jobs\":[{\"job\":4242,\"user\":\"alice\",\"epoch\":0,\"processes\":[{\"resident_memory\":2048000,"
                        "\"virtual_memory\":3000132,\"cmd\":\"python3\",\"pid\":5000,\"ppid\":4990,\"num_threads\":4,"),
              "%s", j);
    cr_assert(strstr(j, "\"data_read\":31112,\"data_written\":10960,\"data_cancelled\":1400,\"gpus\":[{\"index\":1,"
                        "\"uuid\":\"GPU-y\",\"gpu_util\":30,\"gpu_memory\":1024,"),
              "%s", j);
    cr_assert(strstr(j, "\"pid\":5001,"), "%s", j);
    cr_assert_null(strstr(j, "\"pid\":7001"), "only GPU processes with processes=gpu");
    cr_assert_null(strstr(j, "\"errors\""));
    fj_push_config_free(&cfg);
}

Test(collect, sample_all_processes_without_gpus)
{
    setup("", FJ_PROCS_ALL);
    char *j = collect(fj_collect_sample, FJ_OK);
    cr_assert(strstr(j, "\"gpus\":[]"), "%s", j);
    /* non-Slurm: job = process group, epoch = boot - 2020-01-01 */
    cr_assert(strstr(j, "{\"job\":7000,\"user\":\"bob\",\"epoch\":120466495,\"processes\":[{\"resident_memory\":4096,"
                        "\"virtual_memory\":8324,\"cmd\":\"my app (v2)\",\"pid\":7001,"),
              "%s", j);
    cr_assert(strstr(j, "\"user\":\"_user_4321\""), "%s", j);
    cr_assert(strstr(j, "\"cmd\":\"zombie <defunct>\""), "%s", j);
    cr_assert_null(strstr(j, "kthreadd"));
    fj_push_config_free(&cfg);
}

Test(collect, sample_with_failing_gpu_and_no_processes)
{
    setup("gpus 1; gpu uuid=GPU-dead fail=lost", FJ_PROCS_NONE);
    char *j = collect(fj_collect_sample, FJ_OK);
    cr_assert(strstr(j, "\"uuid\":\"GPU-dead\",\"failing\":1"), "%s", j);
    cr_assert(strstr(j, "\"jobs\":[]"), "%s", j);
    cr_assert(strstr(j, "\"errors\":[{\"time\":\"2023-10-27T09:46:40Z\",\"detail\":\"NVIDIA GPU 1 (GPU-dead): failing\""), "%s", j);
    fj_push_config_free(&cfg);
}

Test(collect, sysinfo_from_fixture)
{
    setup("driver 535.1; cuda 12020; gpu uuid=GPU-z name=\"Tesla T4\" arch=6", FJ_PROCS_GPU);
    char *j = collect(fj_collect_sysinfo, FJ_OK);
    cr_assert(strstr(j, "\"os_name\":\"Linux\",\"os_release\":\"5.14.0-427.37.1.el9_4.x86_64\",\"architecture\":\"x86_64\","
                        "\"numa_nodes\":2,\"sockets\":2,\"cores_per_socket\":4,\"threads_per_core\":2,"
                        "\"cpu_model\":\"Intel(R) Xeon(R) CPU E5-2637 v4 @ 3.50GHz\",\"memory\":16093776,"
                        "\"cards\":[{\"index\":0,\"uuid\":\"GPU-z\",\"address\":\"00000000:18:00.0\",\"manufacturer\":\"NVIDIA\","
                        "\"model\":\"Tesla T4\",\"architecture\":\"Turing\",\"driver\":\"535.1\",\"firmware\":\"12.2\","),
              "%s", j);
    cr_assert(strstr(j, "\"distances\":[[10,21],[21,10]]}}}"), "%s", j);
    cr_assert_null(strstr(j, "topo_svg"), "no hwloc picture of a fixture root");
    fj_push_config_free(&cfg);
}

Test(collect, sysinfo_with_hwloc_export)
{
    setup("", FJ_PROCS_GPU);
    cfg.hwloc_xml = strdup(FJ_SHARED_DIR "/data/hwloc-xml/nvidiaDGX2.xml");
    char *j = collect(fj_collect_sysinfo, FJ_OK);
    /* hwloc's facts win over /proc/cpuinfo's: 2 packages, 4 cores (the export is trimmed) */
    cr_assert(strstr(j, "\"numa_nodes\":2,\"sockets\":2,\"cores_per_socket\":2,\"threads_per_core\":1,"), "%s", j);
    cr_assert(strstr(j, "\"distances\":[[10,21],[21,10]]"), "%s", j);
    cr_assert(strstr(j, "\"topo_svg\":\"PD94bWwg"), "SVG starts with <?xml"); /* base64 of "<?xml " */
    cr_assert(strstr(j, "\"topo_text\":\"TWFjaGluZS"), "text starts with Machine");
    fj_push_config_free(&cfg);
}

Test(collect, topology_without_nics)
{
    setup("", FJ_PROCS_GPU);
    collect(fj_collect_topology, FJ_ENOTFOUND);
    fj_push_config_free(&cfg);
}

Test(collect, topology_from_hwloc_export)
{
    setup("", FJ_PROCS_GPU);
    cfg.hwloc_xml = strdup(FJ_SHARED_DIR "/data/hwloc-xml/24em64t-2n6c2t-pci.xml");
    char *j = collect(fj_collect_topology, FJ_OK);
    cr_assert(strstr(j, "{\"kind\":\"Snapshot\",\"apiVersion\":\"aicr.nvidia.com/v1alpha1\",\"metadata\":{\"source-node\":\"c1-7\","
                        "\"cluster\":\"fox.example\",\"timestamp\":\"2023-10-27T09:46:40Z\""),
              "%s", j);
    cr_assert(strstr(j, "\"measurements\":[{\"type\":\"NetworkTopology\",\"subtypes\":[{\"subtype\":\"identity\""), "%s", j);
    cr_assert(strstr(j, "\"rdmaDevice\":\"mlx4_0\""), "%s", j);
    fj_push_config_free(&cfg);
}
