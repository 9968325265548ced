/* gpu_errs.c — the GPU readers' problems for the envelope (gpu_errs.h). */
#include "gpu_errs.h"

#include <stdarg.h>
#include <stdio.h>

void fj_gpu_errs_add(fj_gpu_errs *e, const char *fmt, ...)
{
    if (!e || e->n >= sizeof e->msg / sizeof e->msg[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg[e->n++], sizeof e->msg[0], fmt, ap);
    va_end(ap);
}
