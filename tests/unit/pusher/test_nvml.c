/* test_nvml.c — the NVIDIA backend through dlopen of the scripted fake libnvidia-ml.so.1. */
#include "gpu.h"
#include "nvml_api.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The fake library itself, as fj_gpus loaded it. */
static void *fake_lib(void)
{
    void *dl = dlopen(FJ_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(dl, "%s", dlerror());
    return dl;
}

/* More script lines while loaded: samples taken "now". */
static void fake_script(const char *lines)
{
    void *dl = fake_lib();
    void (*add)(const char *);
    *(void **)&add = dlsym(dl, "fake_nvml_script");
    cr_assert_not_null(add);
    add(lines);
    dlclose(dl);
}

/* One sample of every card's processes; the proc of pid on card 0, NULL when not listed. */
static const fj_gpu_proc *sample_pid(fj_gpus *g, fj_arena *a, uint32_t pid, fj_gpu_errs *e)
{
    fj_gpu_state *s;
    fj_gpu_proc *p;
    size_t n, np;
    cr_assert_eq(fj_gpus_sample(g, a, 1, &s, &n, &p, &np, e), FJ_OK);
    for (size_t i = 0; i < np; i++)
        if (p[i].pid == pid && p[i].index == 0)
            return &p[i];
    return NULL;
}

/* The fake must answer the utilisation calls as the H100's driver 580 did when called directly:
 * NULL or a 64-entry buffer get INSUFFICIENT_SIZE and 72 whatever the time, 72 entries get the one
 * sample, and nothing newer than it is NOT_FOUND. The newer entry point keeps the same protocol. */
Test(nvml, fake_answers_utilisation_as_the_measured_driver)
{
    setenv("FJ_FAKE_NVML", "gpu uuid=GPU-0; proc gpu=0 pid=4242 mem=7455374336 sm=97", 1);
    void *dl = fake_lib();
    nvmlReturn_t (*init)(void), (*handle)(unsigned, nvmlDevice_t *), (*shutdown)(void);
    nvmlReturn_t (*util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned *, unsigned long long);
    nvmlReturn_t (*info)(nvmlDevice_t, nvmlProcessesUtilizationInfo_t *);
    *(void **)&init = dlsym(dl, "nvmlInit_v2");
    *(void **)&handle = dlsym(dl, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&shutdown = dlsym(dl, "nvmlShutdown");
    *(void **)&util = dlsym(dl, "nvmlDeviceGetProcessUtilization");
    *(void **)&info = dlsym(dl, "nvmlDeviceGetProcessesUtilizationInfo");
    cr_assert(init && handle && shutdown && util && info);
    cr_assert_eq(init(), NVML_SUCCESS);
    nvmlDevice_t d;
    cr_assert_eq(handle(0, &d), NVML_SUCCESS);

    static nvmlProcessUtilizationSample_t buf[80];
    unsigned cnt = 0;
    cr_assert_eq(util(d, NULL, &cnt, 0), NVML_ERROR_INSUFFICIENT_SIZE);
    cr_assert_eq(cnt, 72);
    cnt = 0;
    cr_assert_eq(util(d, NULL, &cnt, ~0ull), NVML_ERROR_INSUFFICIENT_SIZE); /* whatever the time */
    cr_assert_eq(cnt, 72);
    cnt = 64;
    cr_assert_eq(util(d, buf, &cnt, 0), NVML_ERROR_INSUFFICIENT_SIZE);
    cr_assert_eq(cnt, 72);
    cnt = 72;
    cr_assert_eq(util(d, buf, &cnt, 0), NVML_SUCCESS);
    cr_assert_eq(cnt, 1);
    cr_assert_eq(buf[0].pid, 4242);
    cr_assert_eq(buf[0].smUtil, 97);
    cr_assert_gt(buf[0].timeStamp, 1700000000ull * 1000000ull); /* CLOCK_REALTIME microseconds */
    unsigned long long ts = buf[0].timeStamp;
    cnt = 72;
    cr_assert_eq(util(d, buf, &cnt, ts), NVML_ERROR_NOT_FOUND);
    cnt = 72;
    cr_assert_eq(util(d, buf, &cnt, ts - 1), NVML_SUCCESS);
    cr_assert_eq(cnt, 1);

    static nvmlProcessUtilizationInfo_v1_t arr[80];
    nvmlProcessesUtilizationInfo_t in = {.version = nvmlProcessesUtilizationInfo_v1};
    cr_assert_eq(nvmlProcessesUtilizationInfo_v1, 0x01000018u);
    cr_assert_eq(sizeof arr[0], 40); /* the stride NVML writes */
    cr_assert_eq(info(d, &in), NVML_ERROR_INSUFFICIENT_SIZE);
    cr_assert_eq(in.processSamplesCount, 72);
    in.procUtilArray = arr;
    cr_assert_eq(info(d, &in), NVML_SUCCESS);
    cr_assert_eq(in.processSamplesCount, 1);
    cr_assert_eq(arr[0].pid, 4242);
    cr_assert_eq(arr[0].smUtil, 97);
    cr_assert_eq(arr[0].timeStamp, ts);
    in.lastSeenTimeStamp = ts;
    in.processSamplesCount = 72;
    cr_assert_eq(info(d, &in), NVML_ERROR_NOT_FOUND);
    in.version = 0x01000010u;
    cr_assert_eq(info(d, &in), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    shutdown();
    dlclose(dl);
}

/* A second reading with nothing newer (NOT_FOUND) keeps the process's sample, which is seconds
 * old, rather than calling it 0 %; a newer sample then replaces it. */
Test(nvml, no_new_sample_keeps_the_newest)
{
    fj_gpus *g = open_fake("gpu uuid=GPU-0; proc gpu=0 pid=10 mem=1048576 sm=90 age_ms=100");
    fj_arena *a = fj_arena_create();
    fj_gpu_errs e = {.n = 0};
    const fj_gpu_proc *p = sample_pid(g, a, 10, &e);
    cr_assert_not_null(p);
    cr_assert_float_eq(p->gpu_util, 90.0, 1e-9);
    p = sample_pid(g, a, 10, &e);
    cr_assert_not_null(p);
    cr_assert_float_eq(p->gpu_util, 90.0, 1e-9);
    fake_script("sample gpu=0 pid=10 sm=55 age_ms=0");
    p = sample_pid(g, a, 10, &e);
    cr_assert_not_null(p);
    cr_assert_float_eq(p->gpu_util, 55.0, 1e-9);
    cr_assert_eq(e.n, 0, "%s", e.msg[0]);
    fj_arena_destroy(a);
    fj_gpus_close(g);
}

/* A process's figure is its newest sample (not the highest), and only one at most five seconds
 * old: a process the driver has been silent about longer, or never sampled, is idle. */
Test(nvml, newest_recent_sample_per_process)
{
    fj_gpus *g = open_fake("gpu uuid=GPU-0;"
                           "sample gpu=0 pid=10 sm=95 age_ms=3000;"
                           "proc gpu=0 pid=10 mem=1048576 sm=40 age_ms=200;"
                           "proc gpu=0 pid=11 mem=1048576 sm=80 age_ms=60000;"
                           "proc gpu=0 pid=12 mem=1048576;"
                           "sample gpu=0 pid=13 sm=70 age_ms=100");
    fj_arena *a = fj_arena_create();
    fj_gpu_errs e = {.n = 0};
    fj_gpu_state *s;
    fj_gpu_proc *p;
    size_t n, np;
    cr_assert_eq(fj_gpus_sample(g, a, 1, &s, &n, &p, &np, &e), FJ_OK);
    cr_assert_eq(np, 3);
    cr_assert_eq(p[0].pid, 10);
    cr_assert_float_eq(p[0].gpu_util, 40.0, 1e-9);
    cr_assert_eq(p[1].pid, 11);
    cr_assert_float_eq(p[1].gpu_util, 0.0, 1e-9);
    cr_assert_eq(p[2].pid, 12);
    cr_assert_float_eq(p[2].gpu_util, 0.0, 1e-9); /* sampled but not running: not a process of the card */
    cr_assert_eq(e.n, 0);
    fj_arena_destroy(a);
    fj_gpus_close(g);
}

/* A driver that names many more entries than any fixed buffer would hold. */
Test(nvml, utilisation_count_beyond_any_fixed_buffer)
{
    fj_gpus *g = open_fake("gpu uuid=GPU-0 util_slots=5000; proc gpu=0 pid=10 mem=1048576 sm=61");
    fj_arena *a = fj_arena_create();
    fj_gpu_errs e = {.n = 0};
    const fj_gpu_proc *p = sample_pid(g, a, 10, &e);
    cr_assert_float_eq(p->gpu_util, 61.0, 1e-9);
    cr_assert_eq(e.n, 0);
    fj_arena_destroy(a);
    fj_gpus_close(g);
}

/* The newer entry point where the older one is not supported; neither: no figure and no error;
 * a real failure: an error the server sees. */
Test(nvml, utilisation_entry_points_and_errors)
{
    fj_gpus *g = open_fake("gpu uuid=GPU-0 util_api=new; proc gpu=0 pid=10 mem=1048576 sm=77");
    fj_arena *a = fj_arena_create();
    fj_gpu_errs e = {.n = 0};
    const fj_gpu_proc *p = sample_pid(g, a, 10, &e);
    cr_assert_float_eq(p->gpu_util, 77.0, 1e-9);
    cr_assert_eq(e.n, 0);
    fj_gpus_close(g);

    g = open_fake("gpu uuid=GPU-0 util_api=none; proc gpu=0 pid=10 mem=1048576 sm=77");
    p = sample_pid(g, a, 10, &e);
    cr_assert_float_eq(p->gpu_util, 0.0, 1e-9);
    cr_assert_eq(p->gpu_memory_kb, 1024); /* the rest of the process is there */
    cr_assert_eq(e.n, 0);
    fj_gpus_close(g);

    g = open_fake("gpu uuid=GPU-0 util_error=999; proc gpu=0 pid=10 mem=1048576 sm=77");
    p = sample_pid(g, a, 10, &e);
    cr_assert_float_eq(p->gpu_util, 0.0, 1e-9);
    cr_assert_eq(e.n, 1);
    cr_assert(strstr(e.msg[0], "NVIDIA GPU 0: per-process utilization: Unknown Error (999)"), "%s", e.msg[0]);
    fj_gpus_close(g);
    fj_arena_destroy(a);
}

/* A process the driver keeps sampling (the fake's live=1): every reading has a new sample. */
Test(nvml, busy_process_sampled_at_every_reading)
{
    fj_gpus *g = open_fake("gpu uuid=GPU-0; proc gpu=0 pid=10 mem=1048576 sm=88 live=1 age_ms=0");
    fj_arena *a = fj_arena_create();
    fj_gpu_errs e = {.n = 0};
    for (int i = 0; i < 3; i++) {
        const fj_gpu_proc *p = sample_pid(g, a, 10, &e);
        cr_assert_not_null(p);
        cr_assert_float_eq(p->gpu_util, 88.0, 1e-9);
    }
    cr_assert_eq(e.n, 0);
    fj_arena_destroy(a);
    fj_gpus_close(g);
}

/* The energy counter as NVML gives it: millijoules since the driver loaded, rising with the card's
 * power; NOT_SUPPORTED on a card without one (before Volta), which leaves has_energy unset. */
Test(nvml, energy_counter_where_the_card_has_one)
{
    fj_gpus *g = open_fake("gpu uuid=GPU-0 power_mw=200000 energy_mj=5000000; gpu uuid=GPU-1 power_mw=90000");
    fj_arena *a = fj_arena_create();
    fj_gpu_state *s;
    fj_gpu_proc *p;
    size_t n, np;
    fj_gpu_errs e = {.n = 0};
    cr_assert_eq(fj_gpus_sample(g, a, 0, &s, &n, &p, &np, &e), FJ_OK);
    cr_assert_eq(n, 2);
    cr_assert(s[0].has_energy);
    cr_assert_geq(s[0].energy_mj, 5000000);
    uint64_t first = s[0].energy_mj;
    cr_assert(!s[1].has_energy, "NOT_SUPPORTED: no counter");
    cr_assert_eq(s[1].failing, 0, "a card without a counter is not failing");
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    cr_assert_eq(fj_gpus_sample(g, a, 0, &s, &n, &p, &np, &e), FJ_OK);
    /* 200 W for at least 50 ms: at least 10 J more */
    cr_assert_geq(s[0].energy_mj - first, 10000, "%llu", (unsigned long long)(s[0].energy_mj - first));
    cr_assert_eq(e.n, 0);
    fj_arena_destroy(a);
    fj_gpus_close(g);
}
