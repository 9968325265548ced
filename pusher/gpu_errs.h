/* gpu_errs.h — problems the GPU readers (nvml.c, amdgpu.c, gpu.c) find worth telling the server
 * (SampleAttributes.errors): at most 16 messages, the rest dropped. Below every GPU reader. */
#ifndef FJ_PUSH_GPU_ERRS_H
#define FJ_PUSH_GPU_ERRS_H

#include <stddef.h>

typedef struct fj_gpu_errs {
    char msg[16][160];
    size_t n;
} fj_gpu_errs;
/* Adds a message (printf format) unless e is NULL or full. */
void fj_gpu_errs_add(fj_gpu_errs *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
