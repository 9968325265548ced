/* amdgpu_fdinfo.h — per-process use of AMD GPUs from the DRM fdinfo files the amdgpu driver
 * writes for every open GPU file (root/proc/PID/fdinfo/FD; keys in the kernel's
 * Documentation/gpu/drm-usage-stats.rst): drm-driver, drm-pdev (the card's PCI address),
 * drm-client-id (one per open DRM file: duplicated and inherited descriptors share it),
 * drm-engine-<engine> (busy time in ns, cumulative) and drm-memory-vram (or drm-resident-vram).
 *
 * Engine counters are cumulative, so utilisation needs two readings: the tracker keeps the last
 * reading of every (pid, card, client) and reports the busy-time delta over the wall-time delta;
 * a process's first reading has gpu_util 0. Only descriptors whose /proc/PID/fd link points into
 * /dev/dri are read. Reading other users' descriptors needs root (or CAP_SYS_PTRACE): without it
 * their processes are simply not seen. Not thread-safe: one tracker per collector. */
#ifndef FJ_PUSH_AMDGPU_FDINFO_H
#define FJ_PUSH_AMDGPU_FDINFO_H

#include "gpu.h"

/* What the fdinfo reader needs to know about an AMD card (from amdgpu.h). */
typedef struct fj_amd_card_ref {
    char address[32]; /* PCI address as drm-pdev writes it, 0000:c1:00.0 */
    unsigned index;
    char uuid[96];
    uint64_t vram_kb; /* 0 when unknown: gpu_memory_util is then 0 */
} fj_amd_card_ref;

typedef struct fj_amd_fdinfo fj_amd_fdinfo;

/* NULL on out-of-memory. */
fj_amd_fdinfo *fj_amd_fdinfo_new(void);
void fj_amd_fdinfo_free(fj_amd_fdinfo *t);

/* One entry per (process, card) in use, in the arena (uuids point into cards, which must live as
 * long as the entries): gpu_util = 100 * busy ns of the gfx and compute engines (summed over the
 * process's distinct clients, divided by the engine capacity) / wall ns since the previous
 * reading; gpu_memory_kb = VRAM of the distinct clients; gpu_memory_util = % of the card's VRAM.
 * now_ns is a monotonic clock (fj_mono_ns; tests pass their own). Descriptors on cards not in
 * `cards` are ignored. FJ_ENOMEM only; unreadable processes are skipped. */
fj_status fj_amd_fdinfo_sample(fj_amd_fdinfo *t, const char *root, const fj_amd_card_ref *cards, size_t ncards,
                               int64_t now_ns, fj_arena *a, fj_gpu_proc **procs, size_t *n);

#endif
