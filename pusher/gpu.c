/* gpu.c — joins the NVIDIA and AMD backends into one list per collection. */
#include "gpu.h"

#include "alloc.h"
#include "amdgpu.h"
#include "amdgpu_fdinfo.h"
#include "log.h"
#include "nvml.h"
#include "timefmt.h"

#include <stdio.h>
#include <string.h>

struct fj_gpus {
    fj_nvml *nvml;
    int amd;
    fj_amd_fdinfo *amd_procs; /* previous engine readings, for AMD per-process utilisation */
    char root[1024];
    char node[256];
    char nvml_problem[160]; /* why NVML is not in use when a library was there but failed */
};

fj_gpus *fj_gpus_open(const char *nvml_library, int amd, const char *root, const char *node)
{
    fj_gpus *g = fj_calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->amd = amd;
    if (amd && !(g->amd_procs = fj_amd_fdinfo_new())) {
        fj_free(g);
        return NULL;
    }
    snprintf(g->root, sizeof g->root, "%s", root ? root : "/");
    snprintf(g->node, sizeof g->node, "%s", node ? node : "");
    if (nvml_library && *nvml_library && strcmp(nvml_library, "none")) {
        char why[160];
        int absent;
        g->nvml = fj_nvml_open(nvml_library, why, &absent);
        if (!g->nvml) {
            if (absent) {
                fj_debug("no NVIDIA GPUs in use: %s", why);
            } else {
                fj_warn("NVIDIA GPUs not readable: %s", why);
                snprintf(g->nvml_problem, sizeof g->nvml_problem, "%s", why);
            }
        }
    }
    return g;
}

void fj_gpus_close(fj_gpus *g)
{
    if (!g)
        return;
    fj_nvml_close(g->nvml);
    fj_amd_fdinfo_free(g->amd_procs);
    fj_free(g);
}

/* Concatenates two arena arrays of element size sz. */
static void *join(fj_arena *a, void *x, size_t nx, void *y, size_t ny, size_t sz)
{
    if (!ny)
        return x;
    if (!nx)
        return y;
    char *v = fj_arena_alloc(a, (nx + ny) * sz);
    if (!v)
        return NULL;
    memcpy(v, x, nx * sz);
    memcpy(v + nx * sz, y, ny * sz);
    return v;
}

fj_status fj_gpus_cards(fj_gpus *g, fj_arena *a, fj_gpu_card **cards, size_t *n, fj_gpu_errs *errs)
{
    fj_gpu_card *nv = NULL, *amd = NULL;
    size_t nnv = 0, namd = 0;
    fj_status st;
    if (g->nvml && (st = fj_nvml_cards(g->nvml, g->node, a, &nv, &nnv, errs)) != FJ_OK)
        return st;
    if (g->nvml_problem[0])
        fj_gpu_errs_add(errs, "NVML: %s", g->nvml_problem);
    if (g->amd && (st = fj_amd_cards(g->root, g->node, a, &amd, &namd, errs)) != FJ_OK)
        return st;
    *cards = join(a, nv, nnv, amd, namd, sizeof *nv);
    *n = nnv + namd;
    return *n && !*cards ? FJ_ENOMEM : FJ_OK;
}

fj_status fj_gpus_sample(fj_gpus *g, fj_arena *a, int want_procs, fj_gpu_state **states, size_t *n,
                         fj_gpu_proc **procs, size_t *nprocs, fj_gpu_errs *errs)
{
    fj_gpu_state *nv = NULL, *amd = NULL;
    size_t nnv = 0, namd = 0;
    fj_status st;
    *procs = NULL;
    *nprocs = 0;
    if (g->nvml && (st = fj_nvml_sample(g->nvml, g->node, a, want_procs, &nv, &nnv, procs, nprocs, errs)) != FJ_OK)
        return st;
    if (g->nvml_problem[0])
        fj_gpu_errs_add(errs, "NVML: %s", g->nvml_problem);
    fj_amd_card_ref *refs = NULL;
    if (g->amd && (st = fj_amd_sample(g->root, g->node, a, &amd, &namd, want_procs ? &refs : NULL, errs)) != FJ_OK)
        return st;
    *states = join(a, nv, nnv, amd, namd, sizeof *nv);
    *n = nnv + namd;
    if (*n && !*states)
        return FJ_ENOMEM;
    if (want_procs && namd) {
        fj_gpu_proc *ap;
        size_t nap;
        if ((st = fj_amd_fdinfo_sample(g->amd_procs, g->root, refs, namd, fj_mono_ns(), a, &ap, &nap)) != FJ_OK)
            return st;
        fj_gpu_proc *all = join(a, *procs, *nprocs, ap, nap, sizeof *ap);
        if (nap && !all)
            return FJ_ENOMEM;
        *procs = all;
        *nprocs += nap;
    }
    return FJ_OK;
}
