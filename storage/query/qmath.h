/* storage/query/qmath.h — the pure arithmetic of the query API, shared by every backend: time-bucket grids,
 * CPU utilisation from cumulative per-core counters, average/maximum accumulators and the packed
 * varints of the schema. No allocation, no state: thread-safe. */
#ifndef FJ_QMATH_H
#define FJ_QMATH_H

#include "fj_status.h"
#include "timefmt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most buckets one answer may have. */
#define FJ_QM_MAX_BUCKETS 100000

/* The default bucket width for [from, to]: max(60 s, span / 120) rounded up, as slurm-monitor. */
int64_t fj_qm_default_bucket(fj_time from, fj_time to);

/* Bucket i covers [from + i * step, from + (i + 1) * step). */
typedef struct fj_qm_grid {
    fj_time from;
    int64_t step;
    size_t n;
} fj_qm_grid;

/* The grid of step-wide buckets aligned to multiples of step (in epoch seconds) that covers
 * [from, to]. FJ_EINVAL when step <= 0 or from > to; FJ_ETOOBIG past max_buckets. */
fj_status fj_qm_grid_make(fj_time from, fj_time to, int64_t step, size_t max_buckets, fj_qm_grid *g);

/* The bucket holding t, or -1 when t is outside the grid. */
long fj_qm_bucket(const fj_qm_grid *g, fj_time t);

/* Unpacks unsigned LEB128 varints (the schema's packed arrays) into out. Returns how many, or
 * (size_t)-1 when the bytes are malformed (truncated, over 64 bits) or hold more than max. */
size_t fj_qm_varints(const unsigned char *p, size_t len, uint64_t *out, size_t max);

/* CPU use over one interval between two samples of a node. */
typedef struct fj_qm_cpu {
    double busy_s;  /* CPU-seconds used on all cores */
    double seconds; /* length of the interval */
    size_t cores;   /* cores counted */
} fj_qm_cpu;

/* Busy CPU-seconds between two readings of the cumulative per-core counters c0 (at t0) and c1
 * (at t1), over the cores both report. A core whose counter went down counts 0, never negative
 * (a reset or a reading from another boot). Returns false when the interval says nothing: t1 <= t0
 * (a duplicate timestamp counts once; out of order is not an interval), no cores, or a reboot
 * between the two (boot times known, nonzero and different). */
bool fj_qm_cpu_interval(fj_time t0, fj_time boot0, const uint64_t *c0, size_t n0, fj_time t1, fj_time boot1,
                        const uint64_t *c1, size_t n1, fj_qm_cpu *out);

/* The per-core counters of a node's latest usable sample: the start of its next interval. */
typedef struct fj_qm_cpustate {
    fj_time t, boot;
    uint64_t *c;    /* caller's storage for cap counters */
    size_t n, cap;
    bool have;      /* c holds a sample */
} fj_qm_cpustate;

/* Advances s by one sample of the node (in time order) with its packed counters p[0..len),
 * decoding and subtracting in one pass; the same rules as fj_qm_cpu_interval. Returns 1 with *out
 * filled when the state and the sample form an interval, 0 when not (no counters, a first sample,
 * a reboot), and the sample becomes the state's start; a sample whose time is not after the
 * state's (a duplicate or late timestamp) is ignored (0). -1 when the bytes are malformed or
 * len > cap: the state then starts over (no interval until the next good sample). */
int fj_qm_cpu_step(fj_qm_cpustate *s, fj_time t, fj_time boot, const unsigned char *p, size_t len, fj_qm_cpu *out);

/* Utilisation in percent of all cores (0..100) and busy cores of an interval. */
double fj_qm_cpu_util(const fj_qm_cpu *c);
double fj_qm_cpu_cores(const fj_qm_cpu *c);

/* A weighted average and a maximum. A zeroed accumulator is empty. */
typedef struct fj_qm_acc {
    double sum, w, max;
    uint64_t n;
} fj_qm_acc;

void fj_qm_add(fj_qm_acc *a, double v);
void fj_qm_addw(fj_qm_acc *a, double v, double weight);
/* false (and *out untouched) when nothing was added or the weights sum to 0. */
bool fj_qm_avg(const fj_qm_acc *a, double *out);

#endif
