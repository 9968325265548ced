/* fake_nvml.c — a scripted stand-in for libnvidia-ml.so.1, built as that file name so fjord-push
 * loads it through dlopen exactly as it loads the real one (by path or LD_LIBRARY_PATH). It
 * implements the entry points declared in ../nvml_api.h from a script read at nvmlInit_v2:
 *   FJ_FAKE_NVML_FILE=path   or   FJ_FAKE_NVML="line; line; ..."
 * Lines (key=value words, values may be "quoted"; # starts a comment):
 *   driver 550.54.15          system driver version
 *   cuda 12040                CUDA driver version (12.4)
 *   init_error 9              nvmlInit_v2 fails with this NVML code
 *   gpus N                    N generated H100-like GPUs (benchmarks)
 *   gpu uuid=.. name=".." arch=9 bus=00000000:18:00.0 mem_total=BYTES mem_used=BYTES util=% mem_util=%
 *       temp=C power_mw=.. limit_mw=.. min_limit_mw=.. max_limit_mw=.. fan=% pstate=N mode=N
 *       sm_clock=MHz mem_clock=MHz max_sm_clock=MHz max_mem_clock=MHz
 *       fail=handle (nvmlDeviceGetHandleByIndex fails) | fail=lost (every query: GPU is lost)
 *       util_slots=N (the count the utilisation calls name, default 72)
 *       energy_mj=MJ (the card has an energy counter: MJ when the line is read, rising by
 *       power_mw since, as NVML's total energy consumption does; without it the call says
 *       NOT_SUPPORTED, as on cards before Volta)
 *       util_api=both|old|new|none (which utilisation entry point answers; the other says
 *       NOT_SUPPORTED) util_error=CODE (both fail with this NVML code)
 *   proc gpu=I pid=P mem=BYTES sm=% memutil=% age_ms=MS live=1
 *                             a running process; with sm or memutil above 0 also a utilisation
 *                             sample taken MS (default 1000) before the line was read, or with
 *                             live=1 MS before every call (a process the driver keeps sampling)
 *   sample gpu=I pid=P sm=% memutil=% age_ms=MS live=1   a further utilisation sample (any pid)
 * The utilisation calls behave as the H100's driver 580 was measured to: a NULL buffer, or one
 * below util_slots entries, gets NVML_ERROR_INSUFFICIENT_SIZE and util_slots, whatever the time
 * asked about; a big enough one gets the samples newer than lastSeenTimeStamp (CLOCK_REALTIME
 * microseconds), one per sample line, and NVML_ERROR_NOT_FOUND when there is none.
 * fake_nvml_script(lines) adds lines while the library is loaded (tests: new samples, "now").
 * Test code only: no thread-safety, fixed-size tables. */
#include "../nvml_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

struct nvmlDevice_st {
    int index;
};

typedef struct fake_gpu {
    struct nvmlDevice_st h;
    char uuid[96], name[96], bus[32];
    unsigned arch, util, mem_util, temp, power_mw, limit_mw, min_limit_mw, max_limit_mw, fan, sm_clock, mem_clock,
        max_sm_clock, max_mem_clock;
    int pstate, mode;
    unsigned long long mem_total, mem_used;
    int fail_handle, fail_lost;
    unsigned util_slots;
    int util_old, util_new; /* which utilisation entry point answers */
    int util_error;
    int energy;                     /* has an energy counter (energy_mj=) */
    unsigned long long energy_mj;   /* its value at energy_t0 */
    struct timespec energy_t0;
} fake_gpu;

typedef struct fake_proc {
    unsigned gpu, pid;
    unsigned long long mem;
} fake_proc;

typedef struct fake_sample {
    unsigned gpu, pid, sm, memutil;
    unsigned long long ts;     /* microseconds, CLOCK_REALTIME */
    unsigned long long age_us; /* live: ts is this long before every call */
    int live;
} fake_sample;

static fake_gpu gpus[64];
static unsigned ngpus;
static fake_proc procs[256];
static unsigned nprocs;
static fake_sample samples[1024];
static unsigned nsamples;
static char driver[80] = "550.54.15";
static int cuda = 12040;
static int init_error;
static int loaded;

static void gen_gpu(unsigned i)
{
    fake_gpu *g = &gpus[i];
    memset(g, 0, sizeof *g);
    g->h.index = (int)i;
    snprintf(g->uuid, sizeof g->uuid, "GPU-%08x-0000-4000-8000-%012x", 0xfa4e0000u + i, i);
    snprintf(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
    snprintf(g->bus, sizeof g->bus, "00000000:%02X:00.0", 0x18 + 0x10 * i);
    g->arch = 9;
    g->mem_total = 85899345920ull;
    g->mem_used = 1073741824ull * (i + 1);
    g->util = 10 * (i % 10);
    g->mem_util = 5 * (i % 20);
    g->temp = 30 + i;
    g->power_mw = 100000 + 1000 * i;
    g->limit_mw = 700000;
    g->min_limit_mw = 200000;
    g->max_limit_mw = 700000;
    g->fan = 0;
    g->pstate = 0;
    g->mode = 0;
    g->sm_clock = 1980;
    g->mem_clock = 2619;
    g->max_sm_clock = 1980;
    g->max_mem_clock = 2619;
    g->util_slots = 72;
    g->util_old = g->util_new = 1;
}

static unsigned long long now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (unsigned long long)t.tv_sec * 1000000ull + (unsigned long long)t.tv_nsec / 1000;
}

/* A sample line's fields; a running process's sm/memutil make one too. */
static void add_sample(unsigned gpu, unsigned pid, unsigned sm, unsigned memutil, unsigned long long age_ms, int live)
{
    if (nsamples >= sizeof samples / sizeof samples[0])
        return;
    samples[nsamples++] = (fake_sample){.gpu = gpu, .pid = pid, .sm = sm, .memutil = memutil,
                                       .ts = now_us() - age_ms * 1000ull, .age_us = age_ms * 1000ull,
                                       .live = live};
}

/* Next word of *p into out (quotes removed); 0 at the end of the line. */
static int word(const char **p, char *out, size_t n)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || *s == '#')
        return 0;
    size_t k = 0;
    int q = 0;
    while (*s && (q || (*s != ' ' && *s != '\t'))) {
        if (*s == '"') {
            q = !q;
            s++;
            continue;
        }
        if (k + 1 < n)
            out[k++] = *s;
        s++;
    }
    out[k] = '\0';
    *p = s;
    return 1;
}

static unsigned long long num(const char *v)
{
    return strtoull(v, NULL, 0);
}

static void parse_line(const char *line)
{
    char w[256];
    const char *p = line;
    if (!word(&p, w, sizeof w))
        return;
    if (!strcmp(w, "driver")) {
        if (word(&p, w, sizeof w))
            snprintf(driver, sizeof driver, "%.79s", w);
    } else if (!strcmp(w, "cuda")) {
        if (word(&p, w, sizeof w))
            cuda = (int)num(w);
    } else if (!strcmp(w, "init_error")) {
        if (word(&p, w, sizeof w))
            init_error = (int)num(w);
    } else if (!strcmp(w, "gpus")) {
        if (word(&p, w, sizeof w))
            for (unsigned n = (unsigned)num(w); n-- && ngpus < 64;)
                gen_gpu(ngpus++);
    } else if (!strcmp(w, "gpu") && ngpus < 64) {
        fake_gpu *g = &gpus[ngpus];
        gen_gpu(ngpus++);
        while (word(&p, w, sizeof w)) {
            char *eq = strchr(w, '=');
            if (!eq)
                continue;
            *eq = '\0';
            const char *k = w, *v = eq + 1;
            if (!strcmp(k, "uuid")) snprintf(g->uuid, sizeof g->uuid, "%s", v);
            else if (!strcmp(k, "name")) snprintf(g->name, sizeof g->name, "%s", v);
            else if (!strcmp(k, "bus")) snprintf(g->bus, sizeof g->bus, "%s", v);
            else if (!strcmp(k, "arch")) g->arch = (unsigned)num(v);
            else if (!strcmp(k, "mem_total")) g->mem_total = num(v);
            else if (!strcmp(k, "mem_used")) g->mem_used = num(v);
            else if (!strcmp(k, "util")) g->util = (unsigned)num(v);
            else if (!strcmp(k, "mem_util")) g->mem_util = (unsigned)num(v);
            else if (!strcmp(k, "temp")) g->temp = (unsigned)num(v);
            else if (!strcmp(k, "power_mw")) g->power_mw = (unsigned)num(v);
            else if (!strcmp(k, "energy_mj")) {
                g->energy = 1;
                g->energy_mj = num(v);
                clock_gettime(CLOCK_MONOTONIC, &g->energy_t0);
            }
            else if (!strcmp(k, "limit_mw")) g->limit_mw = (unsigned)num(v);
            else if (!strcmp(k, "min_limit_mw")) g->min_limit_mw = (unsigned)num(v);
            else if (!strcmp(k, "max_limit_mw")) g->max_limit_mw = (unsigned)num(v);
            else if (!strcmp(k, "fan")) g->fan = (unsigned)num(v);
            else if (!strcmp(k, "pstate")) g->pstate = (int)num(v);
            else if (!strcmp(k, "mode")) g->mode = (int)num(v);
            else if (!strcmp(k, "sm_clock")) g->sm_clock = (unsigned)num(v);
            else if (!strcmp(k, "mem_clock")) g->mem_clock = (unsigned)num(v);
            else if (!strcmp(k, "max_sm_clock")) g->max_sm_clock = (unsigned)num(v);
            else if (!strcmp(k, "max_mem_clock")) g->max_mem_clock = (unsigned)num(v);
            else if (!strcmp(k, "util_slots")) g->util_slots = (unsigned)num(v);
            else if (!strcmp(k, "util_error")) g->util_error = (int)num(v);
            else if (!strcmp(k, "util_api")) {
                g->util_old = !strcmp(v, "both") || !strcmp(v, "old");
                g->util_new = !strcmp(v, "both") || !strcmp(v, "new");
            } else if (!strcmp(k, "fail")) {
                g->fail_handle = !strcmp(v, "handle");
                g->fail_lost = !strcmp(v, "lost");
            }
        }
    } else if ((!strcmp(w, "proc") && nprocs < 256) || !strcmp(w, "sample")) {
        int running = !strcmp(w, "proc");
        unsigned gpu = 0, pid = 0, sm = 0, memutil = 0;
        unsigned long long mem = 0, age_ms = 1000;
        int live = 0;
        while (word(&p, w, sizeof w)) {
            char *eq = strchr(w, '=');
            if (!eq)
                continue;
            *eq = '\0';
            const char *k = w, *v = eq + 1;
            if (!strcmp(k, "gpu")) gpu = (unsigned)num(v);
            else if (!strcmp(k, "pid")) pid = (unsigned)num(v);
            else if (!strcmp(k, "mem")) mem = num(v);
            else if (!strcmp(k, "sm")) sm = (unsigned)num(v);
            else if (!strcmp(k, "memutil")) memutil = (unsigned)num(v);
            else if (!strcmp(k, "age_ms")) age_ms = num(v);
            else if (!strcmp(k, "live")) live = (int)num(v);
        }
        if (running)
            procs[nprocs++] = (fake_proc){.gpu = gpu, .pid = pid, .mem = mem};
        /* NVML keeps samples only of processes with some utilisation. */
        if (!running || sm || memutil)
            add_sample(gpu, pid, sm, memutil, age_ms, live);
    }
}

static void parse_text(char *text, char sep)
{
    for (char *save = NULL, *line = strtok_r(text, sep == ';' ? ";\n" : "\n", &save); line;
         line = strtok_r(NULL, sep == ';' ? ";\n" : "\n", &save))
        parse_line(line);
}

static void load(void)
{
    if (loaded)
        return;
    loaded = 1;
    ngpus = nprocs = nsamples = 0;
    const char *file = getenv("FJ_FAKE_NVML_FILE");
    if (file) {
        FILE *f = fopen(file, "r");
        if (f) {
            static char buf[65536];
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            buf[n] = '\0';
            fclose(f);
            parse_text(buf, '\n');
        }
    }
    const char *inl = getenv("FJ_FAKE_NVML");
    if (inl) {
        char *copy = strdup(inl);
        if (copy) {
            parse_text(copy, ';');
            free(copy);
        }
    }
}

static fake_gpu *dev(nvmlDevice_t d)
{
    return (fake_gpu *)d;
}

#define CHECK(d)                                                                                                  \
    do {                                                                                                          \
        if (!(d))                                                                                                 \
            return NVML_ERROR_INVALID_ARGUMENT;                                                                   \
        if (dev(d)->fail_lost)                                                                                    \
            return NVML_ERROR_GPU_IS_LOST;                                                                        \
    } while (0)

API nvmlReturn_t nvmlInit_v2(void)
{
    load();
    return init_error ? init_error : NVML_SUCCESS;
}

API nvmlReturn_t nvmlShutdown(void)
{
    loaded = 0; /* the next nvmlInit_v2 reads the script again (tests change it) */
    init_error = 0;
    return NVML_SUCCESS;
}

API const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    default: return "Unknown Error";
    }
}

API nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n)
{
    snprintf(v, n, "%s", driver);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    *v = cuda;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    *count = ngpus;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    if (i >= ngpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (gpus[i].fail_handle)
        return NVML_ERROR_GPU_IS_LOST;
    *d = &gpus[i].h;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *u, unsigned int n)
{
    if (!d)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(u, n, "%s", dev(d)->uuid); /* a lost GPU still has its UUID cached by the driver */
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *s, unsigned int n)
{
    CHECK(d);
    snprintf(s, n, "%s", dev(d)->name);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
    CHECK(d);
    memset(p, 0, sizeof *p);
    snprintf(p->busId, sizeof p->busId, "%s", dev(d)->bus);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%.15s", dev(d)->bus + 4);
    unsigned dom = 0, bus = 0, devn = 0;
    sscanf(dev(d)->bus, "%x:%x:%x", &dom, &bus, &devn);
    p->domain = dom;
    p->bus = bus;
    p->device = devn;
    p->pciDeviceId = 0x233010de;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned int *a)
{
    CHECK(d);
    *a = dev(d)->arch;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    CHECK(d);
    m->total = dev(d)->mem_total;
    m->used = dev(d)->mem_used;
    m->free = m->total > m->used ? m->total - m->used : 0;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *mw)
{
    CHECK(d);
    *mw = dev(d)->limit_mw;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t d, unsigned int *lo, unsigned int *hi)
{
    CHECK(d);
    *lo = dev(d)->min_limit_mw;
    *hi = dev(d)->max_limit_mw;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
    CHECK(d);
    *mhz = type == NVML_CLOCK_MEM ? dev(d)->max_mem_clock : dev(d)->max_sm_clock;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
    CHECK(d);
    *mhz = type == NVML_CLOCK_MEM ? dev(d)->mem_clock : dev(d)->sm_clock;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned int *p)
{
    CHECK(d);
    if (!dev(d)->fan)
        return NVML_ERROR_NOT_SUPPORTED; /* passively cooled, like an SXM card */
    *p = dev(d)->fan;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t d, int *m)
{
    CHECK(d);
    *m = dev(d)->mode;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t d, int *p)
{
    CHECK(d);
    *p = dev(d)->pstate;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    CHECK(d);
    u->gpu = dev(d)->util;
    u->memory = dev(d)->mem_util;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *c)
{
    CHECK(d);
    (void)sensor;
    *c = dev(d)->temp;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
    CHECK(d);
    *mw = dev(d)->power_mw;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
    CHECK(d);
    fake_gpu *g = dev(d);
    if (!g->energy)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!mj)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    /* mW x ms = uJ: the counter rises by power_mw since the line was read */
    long long ms = (long long)(now.tv_sec - g->energy_t0.tv_sec) * 1000 + (now.tv_nsec - g->energy_t0.tv_nsec) / 1000000;
    *mj = g->energy_mj + (unsigned long long)ms * g->power_mw / 1000;
    return NVML_SUCCESS;
}

static nvmlReturn_t running(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos)
{
    CHECK(d);
    unsigned n = 0;
    for (unsigned i = 0; i < nprocs; i++)
        n += procs[i].gpu == (unsigned)dev(d)->h.index;
    if (!infos || *count < n) {
        *count = n;
        return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    }
    unsigned k = 0;
    for (unsigned i = 0; i < nprocs; i++) {
        if (procs[i].gpu != (unsigned)dev(d)->h.index)
            continue;
        infos[k].pid = procs[i].pid;
        infos[k].usedGpuMemory = procs[i].mem;
        infos[k].gpuInstanceId = infos[k].computeInstanceId = 0xffffffffu;
        k++;
    }
    *count = k;
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos)
{
    return running(d, count, infos);
}

API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                          nvmlProcessInfo_t *infos)
{
    CHECK(d);
    (void)infos;
    *count = 0;
    return NVML_SUCCESS;
}

/* The utilisation protocol both entry points share (see the header). On success *count samples
 * of the card newer than since are in out[0..*count) as {pid, ts, sm, memutil}. */
static nvmlReturn_t util_samples(nvmlDevice_t d, int present, int have_buffer, unsigned int *count,
                                 unsigned long long since, fake_sample *out)
{
    CHECK(d);
    if (!present)
        return NVML_ERROR_NOT_SUPPORTED;
    if (dev(d)->util_error)
        return dev(d)->util_error;
    if (!have_buffer || *count < dev(d)->util_slots) {
        *count = dev(d)->util_slots;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    unsigned long long now = now_us();
    for (unsigned i = 0; i < nsamples; i++)
        if (samples[i].live)
            samples[i].ts = now - samples[i].age_us;
    unsigned k = 0; /* out has room for every sample there is */
    for (unsigned i = 0; i < nsamples; i++)
        if (samples[i].gpu == (unsigned)dev(d)->h.index && samples[i].ts > since)
            out[k++] = samples[i];
    *count = k;
    return k ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND;
}

API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *s,
                                                 unsigned int *count, unsigned long long since)
{
    static fake_sample found[sizeof samples / sizeof samples[0]];
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = util_samples(d, d && dev(d)->util_old, s != NULL, count, since, found);
    if (r != NVML_SUCCESS)
        return r;
    for (unsigned k = 0; k < *count; k++) {
        memset(&s[k], 0, sizeof s[k]);
        s[k].pid = found[k].pid;
        s[k].timeStamp = found[k].ts;
        s[k].smUtil = found[k].sm;
        s[k].memUtil = found[k].memutil;
    }
    return r;
}

API nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t d, nvmlProcessesUtilizationInfo_t *info)
{
    static fake_sample found[sizeof samples / sizeof samples[0]];
    if (!info)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != nvmlProcessesUtilizationInfo_v1)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    unsigned count = info->processSamplesCount;
    nvmlReturn_t r = util_samples(d, d && dev(d)->util_new, info->procUtilArray != NULL, &count,
                                  info->lastSeenTimeStamp, found);
    if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE || r == NVML_ERROR_NOT_FOUND)
        info->processSamplesCount = count;
    if (r != NVML_SUCCESS)
        return r;
    for (unsigned k = 0; k < count; k++) {
        nvmlProcessUtilizationInfo_v1_t *e = &info->procUtilArray[k];
        memset(e, 0, sizeof *e);
        e->pid = found[k].pid;
        e->timeStamp = found[k].ts;
        e->smUtil = found[k].sm;
        e->memUtil = found[k].memutil;
    }
    return r;
}

/* Test hook: more script lines while loaded (e.g. a sample taken now). */
API void fake_nvml_script(const char *lines)
{
    char *copy = strdup(lines);
    if (copy) {
        parse_text(copy, ';');
        free(copy);
    }
}
