/* gpu.h — GPUs of every vendor behind one interface: NVIDIA through NVML (opened at run time with
 * dlopen, see nvml.h) and AMD through amdgpu sysfs (amdgpu.h). A node without GPUs, without the
 * library or with a broken driver gives an empty list and a logged reason, never a failure; a card
 * that stops answering is reported with `failing` set.
 * Not thread-safe: one fj_gpus belongs to the collector's thread. */
#ifndef FJ_PUSH_GPU_H
#define FJ_PUSH_GPU_H

#include "arena.h"
#include "fj_status.h"
#include "gpu_errs.h"

#include <stddef.h>
#include <stdint.h>

/* Sysinfo: SysinfoGpuCard. */
typedef struct fj_gpu_card {
    unsigned index;
    char uuid[96], address[32], manufacturer[16], model[96], architecture[32], driver[80], firmware[32];
    uint64_t memory_kb;
    unsigned power_limit, max_power_limit, min_power_limit; /* watts */
    unsigned max_ce_clock, max_memory_clock;                /* MHz */
    unsigned failing;                                       /* not in the spec's card; logged */
} fj_gpu_card;

/* Sample: SampleGpu. */
typedef struct fj_gpu_state {
    unsigned index;
    char uuid[96];
    unsigned failing; /* 0, or 1 = generic failure */
    unsigned fan;
    char compute_mode[24];
    int perf_state;   /* -1 unknown, else P-state number (written as ExtendedUint value+2) */
    uint64_t memory_kb;
    unsigned ce_util, memory_util;
    int temperature;
    unsigned power, power_limit, ce_clock, memory_clock;
    /* The card's own energy counter, millijoules since the driver loaded (NVML's total energy
     * consumption; Volta and later): sent as energy_mj and preferred by fjord to the integrated
     * power (docs/energy.md). has_energy false where the card or driver has none. */
    int has_energy;
    uint64_t energy_mj;
} fj_gpu_state;

/* Sample: SampleProcessGpu, with the pid it belongs to. */
typedef struct fj_gpu_proc {
    uint32_t pid;
    unsigned index;
    const char *uuid;
    double gpu_util;
    uint64_t gpu_memory_kb;
    double gpu_memory_util;
} fj_gpu_proc;


typedef struct fj_gpus fj_gpus;

/* Opens the vendors that are present. nvml_library NULL, "" or "none" skips NVML; root prefixes
 * /sys for amdgpu. Never NULL except on out-of-memory. */
fj_gpus *fj_gpus_open(const char *nvml_library, int amd, const char *root, const char *node);
void fj_gpus_close(fj_gpus *g);

/* Every card, NVIDIA first then AMD (each vendor has its own index space, as in Sonar). */
fj_status fj_gpus_cards(fj_gpus *g, fj_arena *a, fj_gpu_card **cards, size_t *n, fj_gpu_errs *errs);

/* Every card's state and, when want_procs, every process using a card. */
fj_status fj_gpus_sample(fj_gpus *g, fj_arena *a, int want_procs, fj_gpu_state **states, size_t *n,
                         fj_gpu_proc **procs, size_t *nprocs, fj_gpu_errs *errs);

#endif
