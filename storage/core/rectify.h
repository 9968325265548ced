/* storage/core/rectify.h — the pure rules that turn Sonar's per-node job records into rectified
 * jobs: which records belong to one job (the job key and the time gap), and the running summary
 * of a job.
 * No database here: both writers (storage/sqlite/write.c, storage/pg/write.c) apply these rules
 * inside their write transaction, and the unit tests check them without a database. The writers
 * differ only in how they keep instances (SQLite: one statement per contribution behind an
 * in-memory cache; PostgreSQL: a whole group in memory under row locks, written back in batches);
 * what a contribution does to them is decided here, once (fj_rjkey_of, fj_rect_join).
 *
 * Identity (NOTES.md, NEW-FORMAT.md "The meaning of a Job ID"):
 *  - Slurm job (epoch 0, job != 0): key (cluster, job); one job across nodes and time, never split.
 *  - other job (epoch != 0, job != 0): key (cluster, node, job, epoch); split where consecutive
 *    records are more than the gap t apart.
 *  - job 0: never merged; one rectified job per process: key (cluster, node, 0, epoch, pid), plus
 *    ppid and cmd when the pid is 0 or synthetic (a rolled-up group); split by the gap too (pid reuse).
 * Instances of one key are the maximal runs of records with no gap > t. A record that arrives out
 * of order joins every instance it is within t of, and when it bridges two they merge: the result is
 * the same as in-order arrival (fj_rect_match).
 *
 * Everything is integer so that sums do not depend on arrival order: percentages are in 1/1000 %
 * ("_m" = milli-percent), memory in kB. All functions are thread-safe (no state). */
#ifndef FJ_RECTIFY_H
#define FJ_RECTIFY_H

#include "ingest/records/sonar.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Default rectification gap, 6 hours (same definition as in storage/core/store.h; identical redefinition is
 * allowed, so either header may come first). */
#define FJ_JOB_GAP_DEFAULT_S (6 * 3600)

typedef enum fj_jobkey_kind {
    FJ_JOBKEY_SLURM = 0, /* (cluster, job) */
    FJ_JOBKEY_LOCAL,     /* (cluster, node, job, epoch), split by the gap */
    FJ_JOBKEY_PROCESS    /* job 0: (cluster, node, 0, epoch, pid[, ppid, cmd]), split by the gap */
} fj_jobkey_kind;

/* A rectified job's identity. Strings are borrowed from the caller (the batch). Fields that are not
 * part of the key are zero / NULL, so two keys are equal iff all fields are equal. */
typedef struct fj_jobkey {
    fj_jobkey_kind kind;
    const char *cluster;
    const char *node;   /* NULL for Slurm jobs */
    uint64_t job, epoch;
    uint64_t pid, ppid; /* FJ_JOBKEY_PROCESS only; ppid only when pid is 0 or synthetic */
    const char *cmd;    /* likewise; NULL otherwise */
} fj_jobkey;

/* The key of job j seen on node. For job 0, p is the process (required); otherwise p is ignored. */
fj_jobkey fj_jobkey_of(const char *cluster, const char *node, const fj_sample_job *j, const fj_sample_proc *p);

bool fj_jobkey_equal(const fj_jobkey *a, const fj_jobkey *b);

/* The gap that splits instances of this key: INT64_MAX (never split) for Slurm jobs, else
 * job_gap_s, or FJ_JOB_GAP_DEFAULT_S (6 h) when job_gap_s <= 0. */
int64_t fj_jobkey_gap(const fj_jobkey *k, int64_t job_gap_s);

/* One job's contribution in one node-sample (or one process's, for job 0). */
typedef struct fj_jobcontrib {
    int64_t nproc;     /* processes: each record counts rolledup + 1 */
    int64_t cpu_m;     /* 1/1000 %: not set here; CPU needs the job's previous node-sample, so the
                        * backends compute it from cpu_time before COMMIT (storage/core/jobcpu.h) */
    int64_t mem_kb;    /* sum of resident memory */
    int64_t gpu_m;     /* sum of per-process gpu_util over the process's GPUs, 1/1000 % */
    int64_t gpumem_kb; /* sum of per-process gpu_memory */
} fj_jobcontrib;

/* Adds one process record to c. */
void fj_jobcontrib_add_proc(fj_jobcontrib *c, const fj_sample_proc *p);

/* A percentage (as sent, e.g. 398.23) in milli-percent, rounded; negative/NaN -> 0, saturating. */
int64_t fj_pct_to_m(double pct);

/* The running summary of one rectified job instance. Averages are sum / n_samples. */
typedef struct fj_jobsum {
    fj_time first_seen, last_seen;
    int64_t n_samples;  /* node-samples (contributions) added */
    fj_jobcontrib sum;  /* sums of the contributions */
    fj_jobcontrib peak; /* per-field maxima of the contributions */
} fj_jobsum;

/* Adds the contribution of a node-sample at time t (first_seen/last_seen widen to t). Adding to a
 * zeroed fj_jobsum starts it. The caller guarantees each node-sample is added once. */
void fj_jobsum_add(fj_jobsum *s, fj_time t, const fj_jobcontrib *c);

/* Folds from into into (both instances of one key that a record bridged). Commutative and
 * associative, like fj_jobsum_add, so arrival order does not change the result. */
void fj_jobsum_merge(fj_jobsum *into, const fj_jobsum *from);

/* Which of the n instances of one key does a record at time t join: those with
 * first_seen - gap <= t <= last_seen + gap (saturating). Writes their indices, ascending, to out
 * (room for n) and returns how many. 0: the record starts a new instance; 1: it extends one;
 * more: it bridges them, and they must be merged. */
size_t fj_rect_match(const fj_jobsum *inst, size_t n, fj_time t, int64_t gap, size_t *out);

/* What one contribution (c at time t) does to the n instances of its key: the instances it joins
 * (fj_rect_match, indices written to match, room for n) and the summary of the instance it ends
 * in (*sum). Returns how many it joins:
 *  0: a new instance, *sum = c alone;
 *  1: instance match[0] is extended, *sum = inst[match[0]] + c;
 *  more: a bridge; every matched instance merges into match[0] (the writer moves the rows of the
 *     others to it and deletes them), *sum = all of them merged + c. */
size_t fj_rect_join(const fj_jobsum *inst, size_t n, fj_time t, int64_t gap, const fj_jobcontrib *c, size_t *match,
                    fj_jobsum *sum);

/* a + b, saturating at INT64_MIN / INT64_MAX (the bounds of a gap window around a time). */
int64_t fj_sat_add(int64_t a, int64_t b);

/* A rectified job's key as the jobs table stores it: names as their interned ids, zero where a
 * field is not part of the key (node for Slurm jobs; ppid and command unless the pid names a
 * rolled-up group). Seven int64_t and no padding: it hashes and compares as bytes. */
typedef struct fj_rjkey {
    int64_t cluster_id, job, node_id, epoch, pid, ppid, cmd_id;
} fj_rjkey;

/* The stored key of k (fj_jobkey_of of the same record; p: its process, for job 0), given the ids
 * of its cluster, node and (for a rolled-up group) the process's command. to_i64 maps the
 * unsigned numbers (job, epoch, pid, ppid) as the backend stores them. */
fj_rjkey fj_rjkey_of(const fj_jobkey *k, const fj_sample_proc *p, int64_t cluster_id, int64_t node_id,
                     int64_t cmd_id, int64_t (*to_i64)(uint64_t));

#endif
