/* amdgpu.h — the AMD backend of gpu.h: cards read from amdgpu's sysfs files under
 * root/sys/class/drm/card<N>/device (no ROCm library needed). Stateless. */
#ifndef FJ_PUSH_AMDGPU_H
#define FJ_PUSH_AMDGPU_H

#include "amdgpu_fdinfo.h"
#include "gpu.h"

/* AMD cards (vendor 0x1002 with the amdgpu driver), indexed in PCI-address order. A card whose
 * files cannot be read is listed with failing = 1. *count is 0 on a node without AMD GPUs. */
fj_status fj_amd_cards(const char *root, const char *node, fj_arena *a, fj_gpu_card **cards, size_t *count,
                       fj_gpu_errs *errs);

/* Every card's state; when refs is not NULL, also what amdgpu_fdinfo.h needs to attribute
 * per-process use to these cards (one ref per state, in the arena). */
fj_status fj_amd_sample(const char *root, const char *node, fj_arena *a, fj_gpu_state **states, size_t *count,
                        fj_amd_card_ref **refs, fj_gpu_errs *errs);

#endif
