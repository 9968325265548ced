/* test_nvml.c — the NVIDIA backend through dlopen of the scripted fake libnvidia-ml.so.1. */
#include "gpu.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static fj_gpus *open_fake(const char *script)
{
    setenv("FJ_FAKE_NVML", script, 1);
    fj_gpus *g = fj_gpus_open(FJ_FAKE_NVML_PATH, 0, "/", "n1");
    cr_assert_not_null(g);
    return g;
}

Test(nvml, cards_every_field)
{
    fj_gpus *g = open_fake("driver 570.86.15; cuda 12080;"
                           "gpu uuid=GPU-aaaa name=\"NVIDIA H100 80GB HBM3\" arch=9 bus=00000000:18:00.0 "
                           "mem_total=85899345920 limit_mw=700000 min_limit_mw=200000 max_limit_mw=710000 "
                           "max_sm_clock=1980 max_mem_clock=2619");
    fj_arena *a = fj_arena_create();
    fj_gpu_card *c;
    size_t n;
    fj_gpu_errs e = {.n = 0};
    cr_assert_eq(fj_gpus_cards(g, a, &c, &n, &e), FJ_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(c[0].index, 0);
    cr_assert_str_eq(c[0].uuid, "GPU-aaaa");
    cr_assert_str_eq(c[0].address, "00000000:18:00.0");
    cr_assert_str_eq(c[0].manufacturer, "NVIDIA");
    cr_assert_str_eq(c[0].model, "NVIDIA H100 80GB HBM3");
    cr_assert_str_eq(c[0].architecture, "Hopper");
    cr_assert_str_eq(c[0].driver, "570.86.15");
    cr_assert_str_eq(c[0].firmware, "12.8");
    cr_assert_eq(c[0].memory_kb, 85899345920ull / 1024);
    cr_assert_eq(c[0].power_limit, 700);
    cr_assert_eq(c[0].min_power_limit, 200);
    cr_assert_eq(c[0].max_power_limit, 710);
    cr_assert_eq(c[0].max_ce_clock, 1980);
    cr_assert_eq(c[0].max_memory_clock, 2619);
    cr_assert_eq(e.n, 0);
    fj_arena_destroy(a);
    fj_gpus_close(g);
}

Test(nvml, sample_and_processes)
{
    fj_gpus *g = open_fake("gpu uuid=GPU-0 mem_total=1073741824 mem_used=536870912 util=87 mem_util=33 temp=61 "
                           "power_mw=191500 limit_mw=250000 fan=37 pstate=2 mode=3 sm_clock=1500 mem_clock=7000;"
                           "gpu uuid=GPU-1;"
                           "proc gpu=0 pid=4242 mem=268435456 sm=40;"
                           "proc gpu=1 pid=4242 mem=1048576 sm=5;"
                           "proc gpu=1 pid=99 mem=2097152 sm=1");
    fj_arena *a = fj_arena_create();
    fj_gpu_state *s;
    fj_gpu_proc *p;
    size_t n, np;
    fj_gpu_errs e = {.n = 0};
    cr_assert_eq(fj_gpus_sample(g, a, 1, &s, &n, &p, &np, &e), FJ_OK);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(s[0].uuid, "GPU-0");
    cr_assert_eq(s[0].failing, 0);
    cr_assert_eq(s[0].fan, 37);
    cr_assert_str_eq(s[0].compute_mode, "ExclusiveProcess");
    cr_assert_eq(s[0].perf_state, 2);
    cr_assert_eq(s[0].memory_kb, 524288);
    cr_assert_eq(s[0].ce_util, 87);
    cr_assert_eq(s[0].memory_util, 33);
    cr_assert_eq(s[0].temperature, 61);
    cr_assert_eq(s[0].power, 191);
    cr_assert_eq(s[0].power_limit, 250);
    cr_assert_eq(s[0].ce_clock, 1500);
    cr_assert_eq(s[0].memory_clock, 7000);
    cr_assert_eq(np, 3);
    cr_assert_eq(p[0].pid, 4242);
    cr_assert_eq(p[0].index, 0);
    cr_assert_str_eq(p[0].uuid, "GPU-0");
    cr_assert_eq(p[0].gpu_memory_kb, 262144);
    cr_assert_float_eq(p[0].gpu_memory_util, 25.0, 1e-9);
    cr_assert_float_eq(p[0].gpu_util, 40.0, 1e-9);
    cr_assert_eq(p[1].index, 1);
    cr_assert_eq(p[2].pid, 99);
    /* without processes, none are asked for */
    cr_assert_eq(fj_gpus_sample(g, a, 0, &s, &n, &p, &np, &e), FJ_OK);
    cr_assert_eq(np, 0);
    fj_arena_destroy(a);
    fj_gpus_close(g);
}

Test(nvml, failing_cards_are_reported_not_fatal)
{
    fj_gpus *g = open_fake("gpu uuid=GPU-ok; gpu uuid=GPU-lost fail=lost; gpu fail=handle; gpu uuid=GPU-last");
    fj_arena *a = fj_arena_create();
    fj_gpu_state *s;
    fj_gpu_proc *p;
    size_t n, np;
    fj_gpu_errs e = {.n = 0};
    cr_assert_eq(fj_gpus_sample(g, a, 1, &s, &n, &p, &np, &e), FJ_OK);
    cr_assert_eq(n, 4);
    cr_assert_eq(s[0].failing, 0);
    cr_assert_eq(s[1].failing, 1);
    cr_assert_str_eq(s[1].uuid, "GPU-lost");
    cr_assert_eq(s[2].failing, 1);
    cr_assert_str_eq(s[2].uuid, "SYN-n1-nvidia-2"); /* no handle, no UUID: a synthesized one */
    cr_assert_eq(s[3].failing, 0);
    cr_assert_str_eq(s[3].uuid, "GPU-last");
    cr_assert_eq(e.n, 2);
    cr_assert(strstr(e.msg[1], "GPU is lost"));
    fj_gpu_card *c;
    fj_gpu_errs e2 = {.n = 0};
    cr_assert_eq(fj_gpus_cards(g, a, &c, &n, &e2), FJ_OK);
    cr_assert_eq(n, 4);
    cr_assert_eq(c[1].failing, 1);
    cr_assert_eq(c[2].failing, 1);
    cr_assert_eq(c[3].failing, 0);
    fj_arena_destroy(a);
    fj_gpus_close(g);
}

Test(nvml, init_failure_and_missing_library)
{
    fj_gpus *g = open_fake("init_error 9; gpus 2");
    fj_arena *a = fj_arena_create();
    fj_gpu_state *s;
    fj_gpu_proc *p;
    size_t n, np;
    fj_gpu_errs e = {.n = 0};
    cr_assert_eq(fj_gpus_sample(g, a, 1, &s, &n, &p, &np, &e), FJ_OK);
    cr_assert_eq(n, 0);
    cr_assert_eq(e.n, 1);
    cr_assert(strstr(e.msg[0], "Driver Not Loaded"), "%s", e.msg[0]);
    fj_gpus_close(g);

    g = fj_gpus_open("/nonexistent/libnvidia-ml.so.1", 0, "/", "n1");
    e.n = 0;
    cr_assert_eq(fj_gpus_sample(g, a, 1, &s, &n, &p, &np, &e), FJ_OK);
    cr_assert_eq(n, 0);
    cr_assert_eq(e.n, 0); /* no library is the normal case on a CPU node */
    fj_gpus_close(g);

    g = fj_gpus_open("none", 0, "/", "n1");
    cr_assert_eq(fj_gpus_sample(g, a, 1, &s, &n, &p, &np, &e), FJ_OK);
    cr_assert_eq(n, 0);
    fj_gpus_close(g);
    fj_arena_destroy(a);
}

Test(nvml, many_gpus)
{
    fj_gpus *g = open_fake("gpus 8");
    fj_arena *a = fj_arena_create();
    fj_gpu_card *c;
    size_t n;
    fj_gpu_errs e = {.n = 0};
    cr_assert_eq(fj_gpus_cards(g, a, &c, &n, &e), FJ_OK);
    cr_assert_eq(n, 8);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(c[i].index, i);
    fj_arena_destroy(a);
    fj_gpus_close(g);
}
