/* nvml.c — NVML through dlopen. Entry points other than init/count/handle are optional: an older
 * driver without one just leaves that field empty. */
#include "nvml.h"

#include "alloc.h"
#include "log.h"
#include "nvml_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* How far back the first reading of a card looks, as Sonar does at every reading. */
#define UTIL_FIRST_WINDOW_US 5000000ull
/* How long a process's last sample still stands for it when the driver has nothing newer. NVML
 * records a sample for a process with any SM activity at least once a second (measured on an H100,
 * driver 580), so a busy process always has one this young; silence longer than this is idleness. */
#define UTIL_HOLD_US 5000000ull

/* One per-process utilisation sample, whichever entry point gave it. */
typedef struct util_sample {
    unsigned long long ts; /* driver's timestamp, microseconds of CLOCK_REALTIME */
    uint32_t pid;
    unsigned sm;           /* percent of the card's SM time */
} util_sample;

/* What one card's readings leave for the next: where to resume and each process's newest sample. */
typedef struct card_util {
    unsigned long long last_seen; /* newest sample timestamp read so far; 0 before the first read */
    util_sample *newest;          /* one per pid, at most UTIL_HOLD_US old at the last read */
    size_t n, cap;
} card_util;

struct fj_nvml {
    void *dl;
#define X(ret, name, params) ret(*name) params;
    FJ_NVML_FUNCS(X)
#undef X
    char driver[80], firmware[32];
    unsigned ncards;
    char (*uuids)[96];  /* last UUID seen per index, kept for cards that go failing */
    card_util *util;    /* per index */
    void *raw;          /* the buffer NVML writes samples into, grown to the count it names */
    size_t raw_bytes;
    util_sample *read;  /* the samples of the current reading, normalised */
    size_t read_cap;
};

static const char *errstr(fj_nvml *n, nvmlReturn_t r)
{
    const char *s = n->nvmlErrorString ? n->nvmlErrorString(r) : NULL;
    return s ? s : "NVML error";
}

fj_nvml *fj_nvml_open(const char *library, char why[160], int *absent)
{
    *absent = 0;
    why[0] = '\0';
    void *dl = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        *absent = 1;
        snprintf(why, 160, "cannot load %s: %s", library, dlerror());
        return NULL;
    }
    fj_nvml *n = fj_calloc(1, sizeof *n);
    if (!n) {
        dlclose(dl);
        snprintf(why, 160, "out of memory");
        return NULL;
    }
    n->dl = dl;
#define X(ret, name, params) *(void **)(&n->name) = dlsym(dl, #name);
    FJ_NVML_FUNCS(X)
#undef X
    if (!n->nvmlInit_v2 || !n->nvmlShutdown || !n->nvmlDeviceGetCount_v2 || !n->nvmlDeviceGetHandleByIndex_v2) {
        snprintf(why, 160, "%s lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2", library);
        dlclose(dl);
        fj_free(n);
        return NULL;
    }
    nvmlReturn_t r = n->nvmlInit_v2();
    if (r != NVML_SUCCESS) {
        snprintf(why, 160, "nvmlInit failed: %s (%d)", errstr(n, r), r);
        dlclose(dl);
        fj_free(n);
        return NULL;
    }
    if (!n->nvmlSystemGetDriverVersion || n->nvmlSystemGetDriverVersion(n->driver, sizeof n->driver) != NVML_SUCCESS)
        n->driver[0] = '\0';
    int cuda = 0;
    if (n->nvmlSystemGetCudaDriverVersion_v2 && n->nvmlSystemGetCudaDriverVersion_v2(&cuda) == NVML_SUCCESS && cuda > 0)
        snprintf(n->firmware, sizeof n->firmware, "%d.%d", cuda / 1000, (cuda % 1000) / 10);
    return n;
}

void fj_nvml_close(fj_nvml *n)
{
    if (!n)
        return;
    n->nvmlShutdown();
    dlclose(n->dl);
    for (unsigned i = 0; i < n->ncards; i++)
        fj_free(n->util[i].newest);
    fj_free(n->util);
    fj_free(n->raw);
    fj_free(n->read);
    fj_free(n->uuids);
    fj_free(n);
}

static const char *arch_name(unsigned a)
{
    static const char *names[] = {NULL, NULL, "Kepler", "Maxwell", "Pascal", "Volta",
                                  "Turing", "Ampere", "Ada", "Hopper", "Blackwell"};
    return a < sizeof names / sizeof names[0] && names[a] ? names[a] : "";
}

/* A failure that means the card, not the query, is broken. */
static int is_failure(nvmlReturn_t r)
{
    return r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_UNKNOWN || r == NVML_ERROR_TIMEOUT;
}

static unsigned device_count(fj_nvml *n, fj_gpu_errs *errs)
{
    unsigned count = 0;
    nvmlReturn_t r = n->nvmlDeviceGetCount_v2(&count);
    if (r != NVML_SUCCESS) {
        fj_gpu_errs_add(errs, "NVML: cannot count devices: %s", errstr(n, r));
        return 0;
    }
    if (count > n->ncards) {
        char(*u)[96] = fj_realloc(n->uuids, count * sizeof *u);
        if (u)
            n->uuids = u;
        card_util *cu = u ? fj_realloc(n->util, count * sizeof *cu) : NULL;
        if (cu)
            n->util = cu;
        if (u && cu) {
            memset(u + n->ncards, 0, (count - n->ncards) * sizeof *u);
            memset(cu + n->ncards, 0, (count - n->ncards) * sizeof *cu);
            n->ncards = count;
        } else {
            count = n->ncards;
        }
    }
    return count;
}

/* UUID of card i, remembered; a synthesized one when the card never told us. */
static void card_uuid(fj_nvml *n, nvmlDevice_t d, int have_handle, unsigned i, const char *node, char out[96])
{
    if (have_handle && n->nvmlDeviceGetUUID && n->nvmlDeviceGetUUID(d, out, 96) == NVML_SUCCESS && out[0]) {
        if (i < n->ncards)
            memcpy(n->uuids[i], out, 96);
        return;
    }
    if (i < n->ncards && n->uuids[i][0]) {
        memcpy(out, n->uuids[i], 96);
        return;
    }
    snprintf(out, 96, "SYN-%.60s-nvidia-%u", node, i);
}

fj_status fj_nvml_cards(fj_nvml *n, const char *node, fj_arena *a, fj_gpu_card **cards, size_t *count,
                        fj_gpu_errs *errs)
{
    unsigned cnt = device_count(n, errs);
    *cards = NULL;
    *count = 0;
    if (!cnt)
        return FJ_OK;
    fj_gpu_card *v = fj_arena_calloc(a, cnt, sizeof *v);
    if (!v)
        return FJ_ENOMEM;
    for (unsigned i = 0; i < cnt; i++) {
        fj_gpu_card *c = &v[i];
        nvmlDevice_t d = NULL;
        c->index = i;
        snprintf(c->manufacturer, sizeof c->manufacturer, "NVIDIA");
        snprintf(c->driver, sizeof c->driver, "%s", n->driver);
        snprintf(c->firmware, sizeof c->firmware, "%s", n->firmware);
        nvmlReturn_t r = n->nvmlDeviceGetHandleByIndex_v2(i, &d);
        card_uuid(n, d, r == NVML_SUCCESS, i, node, c->uuid);
        if (r != NVML_SUCCESS) {
            c->failing = 1;
            fj_gpu_errs_add(errs, "NVIDIA GPU %u: %s", i, errstr(n, r));
            continue;
        }
        nvmlPciInfo_t pci;
        if (n->nvmlDeviceGetPciInfo_v3 && (r = n->nvmlDeviceGetPciInfo_v3(d, &pci)) == NVML_SUCCESS) {
            pci.busId[sizeof pci.busId - 1] = '\0';
            snprintf(c->address, sizeof c->address, "%s", pci.busId);
        } else if (is_failure(r)) {
            c->failing = 1;
        }
        if (n->nvmlDeviceGetName && n->nvmlDeviceGetName(d, c->model, sizeof c->model) != NVML_SUCCESS)
            c->model[0] = '\0';
        unsigned arch;
        if (n->nvmlDeviceGetArchitecture && n->nvmlDeviceGetArchitecture(d, &arch) == NVML_SUCCESS)
            snprintf(c->architecture, sizeof c->architecture, "%s", arch_name(arch));
        nvmlMemory_t mem;
        if (n->nvmlDeviceGetMemoryInfo && (r = n->nvmlDeviceGetMemoryInfo(d, &mem)) == NVML_SUCCESS)
            c->memory_kb = mem.total / 1024;
        else if (is_failure(r))
            c->failing = 1;
        unsigned mw, lo, hi;
        if (n->nvmlDeviceGetPowerManagementLimit && n->nvmlDeviceGetPowerManagementLimit(d, &mw) == NVML_SUCCESS)
            c->power_limit = mw / 1000;
        if (n->nvmlDeviceGetPowerManagementLimitConstraints &&
            n->nvmlDeviceGetPowerManagementLimitConstraints(d, &lo, &hi) == NVML_SUCCESS) {
            c->min_power_limit = lo / 1000;
            c->max_power_limit = hi / 1000;
        }
        unsigned mhz;
        if (n->nvmlDeviceGetMaxClockInfo && n->nvmlDeviceGetMaxClockInfo(d, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS)
            c->max_ce_clock = mhz;
        if (n->nvmlDeviceGetMaxClockInfo && n->nvmlDeviceGetMaxClockInfo(d, NVML_CLOCK_MEM, &mhz) == NVML_SUCCESS)
            c->max_memory_clock = mhz;
        if (c->failing)
            fj_gpu_errs_add(errs, "NVIDIA GPU %u (%s): failing", i, c->uuid);
    }
    *cards = v;
    *count = cnt;
    return FJ_OK;
}

static const char *compute_mode_name(int m)
{
    switch (m) {
    case NVML_COMPUTEMODE_DEFAULT: return "Default";
    case NVML_COMPUTEMODE_EXCLUSIVE_THREAD: return "ExclusiveThread";
    case NVML_COMPUTEMODE_PROHIBITED: return "Prohibited";
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS: return "ExclusiveProcess";
    default: return "Unknown";
    }
}

/* --- per-process utilisation --------------------------------------------------------------- */

/* n->raw with room for count entries of size bytes (at least one), kept between readings. */
static void *raw_room(fj_nvml *n, size_t count, size_t size)
{
    size_t bytes = (count ? count : 1) * size;
    if (bytes > n->raw_bytes) {
        void *b = fj_realloc(n->raw, bytes);
        if (!b)
            return NULL;
        n->raw = b;
        n->raw_bytes = bytes;
    }
    return n->raw;
}

static util_sample *read_room(fj_nvml *n, size_t count)
{
    if (count > n->read_cap) {
        util_sample *r = fj_realloc(n->read, count * sizeof *r);
        if (!r)
            return NULL;
        n->read = r;
        n->read_cap = count;
    }
    return n->read;
}

/* One call of an utilisation entry point. out NULL: a NULL buffer, to learn the count. Otherwise
 * *count entries of room, and on success the samples written, normalised into out. */
typedef nvmlReturn_t (*util_call)(fj_nvml *n, nvmlDevice_t d, unsigned long long since, unsigned *count,
                                  util_sample *out);

static nvmlReturn_t call_sample_api(fj_nvml *n, nvmlDevice_t d, unsigned long long since, unsigned *count,
                                    util_sample *out)
{
    unsigned room = out ? *count : 0;
    nvmlProcessUtilizationSample_t *buf = NULL;
    if (out && !(buf = raw_room(n, room, sizeof *buf)))
        return NVML_ERROR_MEMORY;
    nvmlReturn_t r = n->nvmlDeviceGetProcessUtilization(d, buf, count, since);
    if (r == NVML_SUCCESS && out)
        for (unsigned k = 0; k < *count && k < room; k++)
            out[k] = (util_sample){.ts = buf[k].timeStamp, .pid = buf[k].pid, .sm = buf[k].smUtil};
    return r;
}

static nvmlReturn_t call_info_api(fj_nvml *n, nvmlDevice_t d, unsigned long long since, unsigned *count,
                                  util_sample *out)
{
    unsigned room = out ? *count : 0;
    nvmlProcessUtilizationInfo_v1_t *buf = NULL;
    if (out && !(buf = raw_room(n, room, sizeof *buf)))
        return NVML_ERROR_MEMORY;
    nvmlProcessesUtilizationInfo_t info = {.version = nvmlProcessesUtilizationInfo_v1,
                                           .processSamplesCount = room,
                                           .lastSeenTimeStamp = since,
                                           .procUtilArray = buf};
    nvmlReturn_t r = n->nvmlDeviceGetProcessesUtilizationInfo(d, &info);
    *count = info.processSamplesCount;
    if (r == NVML_SUCCESS && out)
        for (unsigned k = 0; k < *count && k < room; k++)
            out[k] = (util_sample){.ts = buf[k].timeStamp, .pid = buf[k].pid, .sm = buf[k].smUtil};
    return r;
}

/* The samples newer than since into n->read: ask with a NULL buffer, allocate the count NVML names
 * (it names more than it writes), read. The count can grow in between (a process started), so a
 * second refusal is answered with the new count, a few times. A NULL buffer answered with success
 * has nothing to read, which is NOT_FOUND here. */
static nvmlReturn_t read_samples(fj_nvml *n, util_call call, nvmlDevice_t d, unsigned long long since, size_t *count)
{
    *count = 0;
    unsigned need = 0;
    nvmlReturn_t r = call(n, d, since, &need, NULL);
    for (int tries = 0; r == NVML_ERROR_INSUFFICIENT_SIZE && tries < 4; tries++) {
        unsigned room = need ? need : 1;
        if (!read_room(n, room))
            return NVML_ERROR_MEMORY;
        unsigned got = room;
        r = call(n, d, since, &got, n->read);
        if (r == NVML_SUCCESS) {
            *count = got < room ? got : room;
            return r;
        }
        need = got > room ? got : 2 * room;
    }
    return r == NVML_SUCCESS ? NVML_ERROR_NOT_FOUND : r;
}

/* nvmlDeviceGetProcessUtilization first: every driver since Maxwell has it, Sonar reads it (so the
 * two agents report the same figure), and its protocol was measured on a real driver. The newer
 * nvmlDeviceGetProcessesUtilizationInfo adds only engines the Sonar format has no field for; it is
 * read where the older one is missing or not supported. */
static nvmlReturn_t read_card_samples(fj_nvml *n, nvmlDevice_t d, unsigned long long since, size_t *count)
{
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    if (n->nvmlDeviceGetProcessUtilization)
        r = read_samples(n, call_sample_api, d, since, count);
    if ((r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND) &&
        n->nvmlDeviceGetProcessesUtilizationInfo)
        r = read_samples(n, call_info_api, d, since, count);
    return r;
}

/* Reads card index's samples newer than the last read and keeps each process's newest one; then
 * forgets those older than UTIL_HOLD_US. NOT_FOUND (nothing new) leaves the kept samples standing. */
static void card_util_read(fj_nvml *n, nvmlDevice_t d, unsigned index, unsigned long long now_us, fj_gpu_errs *errs)
{
    card_util *u = &n->util[index];
    if (!u->last_seen || u->last_seen > now_us) /* first reading, or the clock went back */
        u->last_seen = now_us - UTIL_FIRST_WINDOW_US;
    size_t cnt = 0;
    nvmlReturn_t r = read_card_samples(n, d, u->last_seen, &cnt);
    if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_FOUND && r != NVML_ERROR_NOT_SUPPORTED &&
        r != NVML_ERROR_FUNCTION_NOT_FOUND)
        fj_gpu_errs_add(errs, "NVIDIA GPU %u: per-process utilization: %s (%d)", index,
                        r == NVML_ERROR_MEMORY ? "out of memory" : errstr(n, r), r);
    for (size_t k = 0; k < cnt; k++) {
        const util_sample *s = &n->read[k];
        if (s->ts > u->last_seen)
            u->last_seen = s->ts;
        size_t j = 0;
        while (j < u->n && u->newest[j].pid != s->pid)
            j++;
        if (j == u->n) {
            if (u->n == u->cap) {
                size_t ncap = u->cap ? 2 * u->cap : 8;
                util_sample *nv = fj_realloc(u->newest, ncap * sizeof *nv);
                if (!nv)
                    continue;
                u->newest = nv;
                u->cap = ncap;
            }
            u->newest[u->n++] = *s;
        } else if (s->ts >= u->newest[j].ts) {
            u->newest[j] = *s;
        }
    }
    size_t kept = 0;
    for (size_t j = 0; j < u->n; j++)
        if (u->newest[j].ts + UTIL_HOLD_US >= now_us)
            u->newest[kept++] = u->newest[j];
    u->n = kept;
}

/* A process's SM utilisation on a card: its kept sample, else 0 (idle for at least UTIL_HOLD_US). */
static unsigned util_of(const card_util *u, uint32_t pid)
{
    for (size_t j = 0; j < u->n; j++)
        if (u->newest[j].pid == pid)
            return u->newest[j].sm;
    return 0;
}

/* --- processes ------------------------------------------------------------------------------ */

/* Appends the processes of one card to the growing array *procs (arena-backed, doubled). */
static fj_status card_procs(fj_nvml *n, nvmlDevice_t d, unsigned index, const char *uuid, uint64_t total_bytes,
                            fj_arena *a, fj_gpu_proc **procs, size_t *np, size_t *cap)
{
    nvmlProcessInfo_t stack[64];
    nvmlProcessInfo_t *infos = stack;
    unsigned ninfos = 0;
    nvmlReturn_t (*lists[2])(nvmlDevice_t, unsigned *, nvmlProcessInfo_t *) = {
        n->nvmlDeviceGetComputeRunningProcesses_v3, n->nvmlDeviceGetGraphicsRunningProcesses_v3};
    for (int l = 0; l < 2; l++) {
        if (!lists[l])
            continue;
        unsigned cnt = (unsigned)(sizeof stack / sizeof stack[0]) - ninfos;
        nvmlReturn_t r = lists[l](d, &cnt, infos + ninfos);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
            /* More than fit on the stack: ask for the count and take arena memory. */
            unsigned need = 0;
            lists[l](d, &need, NULL);
            nvmlProcessInfo_t *big = fj_arena_calloc(a, ninfos + need + 8, sizeof *big);
            if (!big)
                return FJ_ENOMEM;
            memcpy(big, infos, ninfos * sizeof *big);
            infos = big;
            cnt = need + 8;
            r = lists[l](d, &cnt, infos + ninfos);
        }
        if (r == NVML_SUCCESS)
            ninfos += cnt;
        if (infos == stack && ninfos >= sizeof stack / sizeof stack[0])
            break;
    }
    if (!ninfos)
        return FJ_OK;
    for (unsigned i = 0; i < ninfos; i++) {
        /* A process on both lists (compute and graphics) is one entry. */
        int dup = 0;
        for (unsigned k = 0; k < i && !dup; k++)
            dup = infos[k].pid == infos[i].pid;
        if (dup)
            continue;
        if (*np == *cap) {
            size_t ncap = *cap ? *cap * 2 : 32;
            fj_gpu_proc *nv = fj_arena_alloc(a, ncap * sizeof *nv);
            if (!nv)
                return FJ_ENOMEM;
            if (*np)
                memcpy(nv, *procs, *np * sizeof *nv);
            *procs = nv;
            *cap = ncap;
        }
        fj_gpu_proc *p = &(*procs)[(*np)++];
        memset(p, 0, sizeof *p);
        p->pid = infos[i].pid;
        p->index = index;
        p->uuid = uuid;
        if (infos[i].usedGpuMemory != (unsigned long long)-1) {
            p->gpu_memory_kb = infos[i].usedGpuMemory / 1024;
            if (total_bytes)
                p->gpu_memory_util = 100.0 * (double)infos[i].usedGpuMemory / (double)total_bytes;
        }
        p->gpu_util = util_of(&n->util[index], p->pid);
    }
    return FJ_OK;
}

fj_status fj_nvml_sample(fj_nvml *n, const char *node, fj_arena *a, int want_procs, fj_gpu_state **states,
                         size_t *count, fj_gpu_proc **procs, size_t *nprocs, fj_gpu_errs *errs)
{
    unsigned cnt = device_count(n, errs);
    *states = NULL;
    *count = 0;
    size_t pcap = 0;
    if (!cnt)
        return FJ_OK;
    fj_gpu_state *v = fj_arena_calloc(a, cnt, sizeof *v);
    if (!v)
        return FJ_ENOMEM;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    unsigned long long now_us = (unsigned long long)now.tv_sec * 1000000ull + (unsigned long long)now.tv_nsec / 1000;
    for (unsigned i = 0; i < cnt; i++) {
        fj_gpu_state *s = &v[i];
        nvmlDevice_t d = NULL;
        s->index = i;
        s->perf_state = -1;
        nvmlReturn_t r = n->nvmlDeviceGetHandleByIndex_v2(i, &d);
        card_uuid(n, d, r == NVML_SUCCESS, i, node, s->uuid);
        if (r != NVML_SUCCESS) {
            s->failing = 1;
            fj_gpu_errs_add(errs, "NVIDIA GPU %u (%s): %s", i, s->uuid, errstr(n, r));
            continue;
        }
        unsigned u;
        if (n->nvmlDeviceGetFanSpeed && n->nvmlDeviceGetFanSpeed(d, &u) == NVML_SUCCESS)
            s->fan = u;
        int mode;
        if (n->nvmlDeviceGetComputeMode && n->nvmlDeviceGetComputeMode(d, &mode) == NVML_SUCCESS)
            snprintf(s->compute_mode, sizeof s->compute_mode, "%s", compute_mode_name(mode));
        int ps;
        if (n->nvmlDeviceGetPerformanceState && n->nvmlDeviceGetPerformanceState(d, &ps) == NVML_SUCCESS &&
            ps >= 0 && ps != NVML_PSTATE_UNKNOWN)
            s->perf_state = ps;
        nvmlMemory_t mem = {0, 0, 0};
        if (n->nvmlDeviceGetMemoryInfo && (r = n->nvmlDeviceGetMemoryInfo(d, &mem)) == NVML_SUCCESS)
            s->memory_kb = mem.used / 1024;
        else if (is_failure(r))
            s->failing = 1;
        nvmlUtilization_t util;
        if (n->nvmlDeviceGetUtilizationRates && (r = n->nvmlDeviceGetUtilizationRates(d, &util)) == NVML_SUCCESS) {
            s->ce_util = util.gpu;
            s->memory_util = util.memory;
        } else if (n->nvmlDeviceGetUtilizationRates && is_failure(r)) {
            s->failing = 1;
        }
        if (n->nvmlDeviceGetTemperature && n->nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &u) == NVML_SUCCESS)
            s->temperature = (int)u;
        if (n->nvmlDeviceGetPowerUsage && n->nvmlDeviceGetPowerUsage(d, &u) == NVML_SUCCESS)
            s->power = u / 1000;
        /* NOT_SUPPORTED on cards before Volta, and the symbol is absent from old drivers */
        unsigned long long mj;
        if (n->nvmlDeviceGetTotalEnergyConsumption && n->nvmlDeviceGetTotalEnergyConsumption(d, &mj) == NVML_SUCCESS)
            s->has_energy = 1, s->energy_mj = mj;
        if (n->nvmlDeviceGetPowerManagementLimit && n->nvmlDeviceGetPowerManagementLimit(d, &u) == NVML_SUCCESS)
            s->power_limit = u / 1000;
        if (n->nvmlDeviceGetClockInfo && n->nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &u) == NVML_SUCCESS)
            s->ce_clock = u;
        if (n->nvmlDeviceGetClockInfo && n->nvmlDeviceGetClockInfo(d, NVML_CLOCK_MEM, &u) == NVML_SUCCESS)
            s->memory_clock = u;
        if (s->failing) {
            fj_gpu_errs_add(errs, "NVIDIA GPU %u (%s): failing", i, s->uuid);
            continue;
        }
        if (want_procs) {
            card_util_read(n, d, i, now_us, errs);
            fj_status st = card_procs(n, d, i, s->uuid, mem.total, a, procs, nprocs, &pcap);
            if (st != FJ_OK)
                return st;
        }
    }
    *states = v;
    *count = cnt;
    return FJ_OK;
}
