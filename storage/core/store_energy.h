/* storage/core/store_energy.h — a job's energy to solution (docs/energy.md), as the storage interface
 * gives it: the figures and how each part was found, and one plain entry point that reads one job
 * (for sums over users, accounts, partitions: GET /api/v1/usage). The job rows of the query API
 * (storage/core/store_query.h) carry the same figures for the whole job. */
#ifndef FJ_STORE_ENERGY_H
#define FJ_STORE_ENERGY_H

#include "fj_status.h"
#include "storage/core/store.h"
#include "timefmt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The parts of a job's energy. */
typedef enum fj_en_part { FJ_EP_GPU, FJ_EP_CPU, FJ_EP_MEM, FJ_EP_NODE, FJ_EP__COUNT } fj_en_part;

/* How a part was found (docs/energy.md, "What a job row says"). */
typedef enum fj_en_how {
    FJ_EH_NONE,        /* nothing to say: the job had no such device */
    FJ_EH_MEASURED,    /* the job alone on every device read */
    FJ_EH_APPORTIONED, /* some of it a share of a shared card or node, or held idle cards */
    FJ_EH_CC,          /* cc-backend's job record */
    FJ_EH_MISSING,     /* the job had the device but no interval could be integrated */
} fj_en_how;

typedef struct fj_job_energy {
    bool set[FJ_EP__COUNT]; /* the part has a figure */
    double joules[FJ_EP__COUNT];
    fj_en_how how[FJ_EP__COUNT];
    double gpu_idle_joules;              /* held idle cards' share of the GPU part */
    size_t gpu_by_counter, gpu_by_power; /* the job's card intervals from counters, from power */
    double missing_s;                    /* seconds of the job's intervals left out as gaps */
    size_t gaps;
} fj_job_energy;

/* The name of h in energy_how ("measured", ...; NULL for FJ_EH_NONE). */
const char *fj_en_how_name(fj_en_how h);

/* Whether any part has a figure; *kwh their sum. */
bool fj_job_energy_total(const fj_job_energy *en, double *kwh);

/* The energy of job job_id (the rectified job's id, GET /api/v1/jobs' id) of cluster inside
 * [from, to] (epoch seconds, 0: open): an interval cut by the window counts the part inside, by
 * the same rules as the whole job's. In one read snapshot of s (a reader handle, any thread that
 * may use it). FJ_ENOTFOUND for an unknown cluster or job. */
fj_status fj_store_job_energy(fj_store *s, const char *cluster, int64_t job_id, fj_time from, fj_time to,
                              fj_job_energy *out, fj_err *err);

/* A job's share of node's ClusterCockpit energy (docs/energy.md, "Node, CPU, memory"): for every
 * node-sample of node (by name) in [from, to], the job's CPU time there against all the node's
 * jobs' (1 and alone when it ran alone, 0 when absent), by time, into *out (fj_malloc'd: the
 * caller frees it). FJ_ENOTFOUND for an unknown cluster, node or job. */
struct fj_en_cover;
fj_status fj_store_job_node_cover(fj_store *s, const char *cluster, int64_t job_id, const char *node, fj_time from,
                                  fj_time to, struct fj_en_cover **out, size_t *n, fj_err *err);

#endif
