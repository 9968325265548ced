/* nvml.h — the NVIDIA backend of gpu.h: NVML opened with dlopen at run time, so fjord-push has no
 * link-time dependency on the driver and runs unchanged on nodes without NVIDIA GPUs.
 * Not thread-safe (NVML itself is, but the handle table here is not). */
#ifndef FJ_PUSH_NVML_H
#define FJ_PUSH_NVML_H

#include "gpu.h"

typedef struct fj_nvml fj_nvml;

/* dlopen(library) and nvmlInit. NULL with *why filled (library missing, symbol missing, init
 * failure) when NVML is not usable; *absent is set when simply no library was found, which on a
 * node without NVIDIA GPUs is the normal case and not worth a warning. */
fj_nvml *fj_nvml_open(const char *library, char why[160], int *absent);
void fj_nvml_close(fj_nvml *n);

/* Cards from NVML. A card whose handle or identity cannot be read is still listed, with what is
 * known, failing = 1, and a synthesized UUID built from node and index. */
fj_status fj_nvml_cards(fj_nvml *n, const char *node, fj_arena *a, fj_gpu_card **cards, size_t *count,
                        fj_gpu_errs *errs);

fj_status fj_nvml_sample(fj_nvml *n, const char *node, fj_arena *a, int want_procs, fj_gpu_state **states,
                         size_t *count, fj_gpu_proc **procs, size_t *nprocs, fj_gpu_errs *errs);

#endif
