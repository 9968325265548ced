/* test_envelope.c — Sonar JSON writers: encodings the spec fixes (base64, ExtendedUint, job 0). */
#include "envelope.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *b64(const char *s)
{
    static fj_buf b;
    fj_buf_free(&b);
    fj_buf_init(&b, 1 << 20);
    cr_assert_eq(fj_buf_base64(&b, s, strlen(s)), FJ_OK);
    return b.data ? b.data : "";
}

Test(envelope, base64_rfc4648_vectors)
{
    cr_assert_str_eq(b64(""), "");
    cr_assert_str_eq(b64("f"), "Zg==");
    cr_assert_str_eq(b64("fo"), "Zm8=");
    cr_assert_str_eq(b64("foo"), "Zm9v");
    cr_assert_str_eq(b64("foob"), "Zm9vYg==");
    cr_assert_str_eq(b64("fooba"), "Zm9vYmE=");
    cr_assert_str_eq(b64("foobar"), "Zm9vYmFy");
}

Test(envelope, sysinfo)
{
    uint64_t dist[] = {10, 21, 21, 10};
    fj_gpu_card card = {.index = 0, .uuid = "GPU-1", .address = "00000000:18:00.0", .manufacturer = "NVIDIA",
                        .model = "M", .architecture = "Turing", .driver = "550", .firmware = "12.4", .memory_kb = 11534336,
                        .power_limit = 250, .max_power_limit = 280, .min_power_limit = 100, .max_ce_clock = 2100,
                        .max_memory_clock = 7000};
    fj_sysinfo s = {.time = 1740783601, .cluster = "mlx.hpc.uio.no", .node = "ml1", .os_name = "Linux",
                    .os_release = "4.18", .arch = "x86_64", .topo_text = "Machine\n", .topo_text_len = 8,
                    .cards = &card, .ncards = 1};
    s.cpu.sockets = 2;
    s.cpu.cores_per_socket = 3;
    s.cpu.threads_per_core = 5;
    s.cpu.mem_total_kb = 131072000;
    s.cpu.numa_nodes = 2;
    s.cpu.distances = dist;
    snprintf(s.cpu.model, sizeof s.cpu.model, "yoyodyne-3");
    fj_buf o;
    fj_buf_init(&o, 1 << 20);
    cr_assert_eq(fj_sysinfo_json(&s, &o), FJ_OK);
    cr_assert_str_eq(o.data,
                     "{\"meta\":{\"producer\":\"fjord-push\",\"version\":\"" FJ_PUSH_TEST_VERSION "\",\"format\":0},"
                     "\"data\":{\"type\":\"sysinfo\",\"attributes\":{\"time\":\"2025-02-28T23:00:01Z\","
                     "\"cluster\":\"mlx.hpc.uio.no\",\"node\":\"ml1\",\"os_name\":\"Linux\",\"os_release\":\"4.18\","
                     "\"architecture\":\"x86_64\",\"numa_nodes\":2,\"sockets\":2,\"cores_per_socket\":3,"
                     "\"threads_per_core\":5,\"cpu_model\":\"yoyodyne-3\",\"memory\":131072000,"
                     "\"topo_text\":\"TWFjaGluZQo=\",\"cards\":[{\"index\":0,\"uuid\":\"GPU-1\","
                     "\"address\":\"00000000:18:00.0\",\"manufacturer\":\"NVIDIA\",\"model\":\"M\","
                     "\"architecture\":\"Turing\",\"driver\":\"550\",\"firmware\":\"12.4\",\"memory\":11534336,"
                     "\"power_limit\":250,\"max_power_limit\":280,\"min_power_limit\":100,\"max_ce_clock\":2100,"
                     "\"max_memory_clock\":7000}],\"distances\":[[10,21],[21,10]]}}}");
    fj_buf_free(&o);
}

Test(envelope, sample_gpus_jobs_errors)
{
    uint64_t cpus[] = {5, 7};
    fj_sys_sample sys = {.boot = 1700000000, .cpus = cpus, .ncpus = 2, .used_memory_kb = 42, .load1 = 1.5};
    fj_gpu_state g[2] = {{.index = 0, .uuid = "GPU-a", .perf_state = 0, .compute_mode = "Default", .temperature = -5,
                          .has_energy = 1, .energy_mj = 18446744073709551000ull},
                         {.index = 1, .uuid = "GPU-b", .perf_state = -1, .failing = 1}};
    fj_gpu_proc gp = {.pid = 11, .index = 1, .uuid = "GPU-b", .gpu_util = 40, .gpu_memory_kb = 1024, .gpu_memory_util = 2.5};
    fj_sample_proc procs[4];
    memset(procs, 0, sizeof procs);
    /* two processes of Slurm job 7, and two job-0 processes that must stay separate */
    procs[0].p.pid = 11; procs[0].user = "alice"; procs[0].job = 7; procs[0].p.threads = 4;
    procs[0].gpus[0] = &gp; procs[0].ngpus = 1;
    procs[1].p.pid = 3; procs[1].user = "root"; procs[1].job = 0; procs[1].epoch = 9;
    procs[2].p.pid = 12; procs[2].user = "alice"; procs[2].job = 7;
    procs[3].p.pid = 4; procs[3].user = "root"; procs[3].job = 0; procs[3].epoch = 9;
    snprintf(procs[0].p.cmd, sizeof procs[0].p.cmd, "py\"thon");
    fj_gpu_errs e = {.n = 0};
    fj_gpu_errs_add(&e, "NVIDIA GPU %d: failing", 1);
    fj_sample s = {.time = 1700000100, .cluster = "c", .node = "n", .sys = &sys, .gpus = g, .ngpus = 2,
                   .procs = procs, .nprocs = 4, .errs = &e};
    fj_buf o;
    fj_buf_init(&o, 1 << 20);
    cr_assert_eq(fj_sample_json(&s, &o), FJ_OK);
    cr_assert(strstr(o.data, "\"system\":{\"boot\":\"2023-11-14T22:13:20Z\",\"cpus\":[5,7],\"gpus\":[{\"index\":0,"
                             "\"uuid\":\"GPU-a\",\"failing\":0,\"fan\":0,\"compute_mode\":\"Default\","
                             "\"performance_state\":2,"),
              "%s", o.data);
    cr_assert(strstr(o.data, "\"temperature\":-5"));
    /* the energy counter where the card has one, last in its object; none on the other card */
    cr_assert(strstr(o.data, ",\"memory_clock\":0,\"energy_mj\":18446744073709551000},{\"index\":1,"), "%s", o.data);
    cr_assert(!strstr(strstr(o.data, "\"GPU-b\""), "energy_mj"), "%s", o.data);
    cr_assert(strstr(o.data, "{\"index\":1,\"uuid\":\"GPU-b\",\"failing\":1,\"fan\":0,\"compute_mode\":\"\","
                             "\"performance_state\":0,"),
              "%s", o.data);
    cr_assert(strstr(o.data, "\"used_memory\":42,\"load1\":1.50,"));
    /* job 0 processes: one record each; job 7: one record with both */
    cr_assert(strstr(o.data, "]},{\"job\":0,\"user\":\"root\",\"epoch\":9,\"processes\":[{\"resident_memory\":0,"
                             "\"virtual_memory\":0,\"cmd\":\"\",\"pid\":3,"),
              "%s", o.data);
    cr_assert(strstr(o.data, "]},{\"job\":0,\"user\":\"root\",\"epoch\":9,\"processes\":[{\"resident_memory\":0,"
                             "\"virtual_memory\":0,\"cmd\":\"\",\"pid\":4,"),
              "%s", o.data);
    cr_assert(strstr(o.data, "\"jobs\":[{\"job\":7,\"user\":\"alice\",\"epoch\":0,\"processes\":[{\"resident_memory\":0,"
                             "\"virtual_memory\":0,\"cmd\":\"py\\\"thon\",\"pid\":11,\"ppid\":0,\"num_threads\":3,"),
              "%s", o.data);
    cr_assert(strstr(o.data, "\"gpus\":[{\"index\":1,\"uuid\":\"GPU-b\",\"gpu_util\":40,\"gpu_memory\":1024,"
                             "\"gpu_memory_util\":2.5}]},{\"resident_memory\":0,\"virtual_memory\":0,\"cmd\":\"\",\"pid\":12,"),
              "%s", o.data);
    cr_assert(strstr(o.data, "\"errors\":[{\"time\":\"2023-11-14T22:15:00Z\",\"detail\":\"NVIDIA GPU 1: failing\","
                             "\"cluster\":\"c\",\"node\":\"n\"}]}}}"),
              "%s", o.data);
    fj_buf_free(&o);
}
