/* storage/core/jobcpu.h — a job's CPU use from Sonar's cumulative cpu_time, the same for both backends.
 *
 * Sonar's cpu_util is a ~100 ms glimpse and misses the truth by 6-17 % (docs/storage.md, "Job
 * CPU"); cpu_time (whole seconds) differenced over the time between samples matches it. So the
 * CPU of a process in one node-sample of a rectified job is:
 *  - cpu_time absent (0: Sonar omits it when it rounds to 0, so the process used under 0.5 s in
 *    all; containers' records may carry only cpu_util): for a producer that counts reaped
 *    children, with its parent in the node-sample, 0: what it used arrives later in a counter of
 *    the job (its own once it reaches 0.5 s, or its parent's when the parent reaps it), so its
 *    momentary cpu_util would count it twice. Without its parent in the node-sample (its time
 *    leaves the job with it): its cpu_util, but for such a producer at most its cpu_avg when it
 *    has one, since Sonar's cpu_util also counts children reaped within its 100 ms (their whole
 *    lives); for a producer of own time only (fjord-push before 0.2): its cpu_util;
 *  - the same process in the job's previous node-sample on that node, with a cpu_time there not
 *    larger than now and the same rolledup count (a rolled-up group whose membership changed is a
 *    new series): (cpu_time - previous cpu_time) / seconds between them. The same process is the
 *    same (pid, ppid, cmd); for a producer that counts children also the same pid alone (an exec
 *    changes the command, a parent's exit the ppid, neither the counters), and a previous record
 *    without cpu_time counts as 0 there;
 *  - otherwise it starts a series (new process, pid reuse, counter reset, restart). For a producer
 *    that counts children and a process that is not a rolled-up group: all its cpu_time over the
 *    seconds since the job's previous node-sample on the node (its counter is its share of the
 *    job's total, none of it counted before). Else its cpu_avg (the lifetime average), as Sonar's
 *    format prescribes; but when the job has a previous node-sample on the node, at most cpu_time
 *    / seconds since it: a process younger than the interval used all its cpu_time within it.
 * Reaped children: Sonar's cpu_time adds the time of reaped children (cutime + cstime) to the
 * parent's, and so does fjord-push's from 0.2 (before: own utime + stime only). For a
 * node-sample whose producer counts children, a process of the previous node-sample that is gone
 * now (no process with its pid) and whose parent is there has its last cpu_time taken off the
 * parent's difference (at most down to 0), so a child sampled in the job is not counted a second
 * time in its parent; what the child used after its last sample stays with the parent.
 *
 * A node-sample's figure (job_samples.cpu_m) is the sum over its processes. Its peak candidate
 * (job_samples.cpu_win_m) is the figure over a window of at least FJ_JCPU_WINDOW_S: the
 * interval-weighted mean of cpu_m over the node-samples after the latest one that is that old,
 * capped at the node-sample's threads x 100 % (so cpu_time's one-second resolution moves it by
 * under 1 % of a core, and a single-threaded process never shows more than one core). A
 * node-sample with no node-sample that old before it has no candidate. */
#ifndef FJ_JOBCPU_H
#define FJ_JOBCPU_H

#include "fj_status.h"
#include "timefmt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FJ_JCPU_WINDOW_S 120

/* One process record of a node-sample, as stored. */
typedef struct fj_jcpu_proc {
    int64_t pid, ppid, cmd_id;
    int64_t cpu_time;              /* seconds; 0 = absent */
    int64_t cpu_avg_m, cpu_util_m; /* milli-percent */
    int64_t num_threads;           /* threads - 1, as sent */
    int64_t rolledup;
} fj_jcpu_proc;

/* One node-sample of a job: its processes sorted by (pid, ppid, cmd_id) (fj_jcpu_sort). */
typedef struct fj_jcpu_sample {
    fj_time time;
    fj_jcpu_proc *procs;
    size_t n;
    bool children_counted; /* the producer's cpu_time includes reaped children (Sonar) */
} fj_jcpu_sample;

void fj_jcpu_sort(fj_jcpu_sample *s);

/* Does the cpu_time of the producer named (an envelope's meta.producer and meta.version, NULL:
 * none) include its processes' reaped children? fjord-push before 0.2 sends a process's own time;
 * fjord-push 0.2 and later, Sonar and (unknown) anything else add the children's. */
bool fj_jcpu_counts_children(const char *producer, const char *version);
/* The same for a producer known to be fjord-push, by its version (NULL: unknown, taken as new). */
bool fj_jcpu_push_counts_children(const char *version);
/* qsort's order of fj_jcpu_sort, (pid, ppid, cmd_id): also for an array of structs that begin with
 * an fj_jcpu_proc (the job profile's points). */
int fj_jcpu_proc_cmp(const void *a, const void *b);

/* The CPU of process i of cur, milli-percent, given the job's previous node-sample on the node
 * (NULL: none). */
int64_t fj_jcpu_proc_m(const fj_jcpu_sample *prev, const fj_jcpu_sample *cur, size_t i);

/* The node-sample's figure: the sum of fj_jcpu_proc_m. */
int64_t fj_jcpu_sample_m(const fj_jcpu_sample *prev, const fj_jcpu_sample *cur);

/* The node-sample's capacity: its threads x 100 %, milli-percent (a rolled-up record holds
 * rolledup + 1 processes with num_threads extra threads among them). */
int64_t fj_jcpu_cap_m(const fj_jcpu_sample *s);

/* The peak candidate of node-sample k among n node-samples of one job on one node, ascending by
 * time, with figures cpu_m: -1 when no node-sample is FJ_JCPU_WINDOW_S older than k. */
int64_t fj_jcpu_window_m(const fj_time *t, const int64_t *cpu_m, size_t k, int64_t cap_m);

/* --- keeping the stored figures current ------------------------------------------------------ */

/* A stored node-sample of a job on a node (job_samples): time, figure, candidate (-1 = none). */
typedef struct fj_jcpu_row {
    fj_time time;
    int64_t cpu_m, win_m;
} fj_jcpu_row;

/* The figure and candidate of node-sample cur arriving after every stored node-sample of its (job,
 * node), as fj_jcpu_update would store them, from what a writer kept in memory: prev, the latest
 * stored node-sample's processes (NULL: none, or its raw rows are gone), and rows[0 .. n), the
 * stored node-samples from the latest one at least FJ_JCPU_WINDOW_S older than cur (or the first)
 * up to the latest, ascending. The arrival in order that a running job's samples make needs no
 * read. FJ_OK or FJ_ENOMEM. */
fj_status fj_jcpu_next(const fj_jcpu_sample *prev, const fj_jcpu_row *rows, size_t n, const fj_jcpu_sample *cur,
                       int64_t *cpu_m, int64_t *win_m, fj_err *err);

/* How many of rows[0 .. n) (ascending) a later node-sample can still need, given that the latest
 * is rows[n - 1]: the rows from the latest one at least FJ_JCPU_WINDOW_S older than it. Returns
 * the index of the first row to keep. */
size_t fj_jcpu_rows_keep_from(const fj_jcpu_row *rows, size_t n);

/* What a backend gives: reads within its write transaction. Arrays come from scratch memory the
 * backend owns until the next call of the same function. */
typedef struct fj_jcpu_io {
    void *x;
    /* The node-samples of (rjob, node) with lo <= time <= hi, ascending by time. */
    fj_status (*rows)(void *x, int64_t rjob, int64_t node, fj_time lo, fj_time hi, fj_jcpu_row **out, size_t *n);
    /* The time of the latest node-sample of (rjob, node) at or before t; *found false if none. */
    fj_status (*at_or_before)(void *x, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found);
    /* The earliest node-sample of (rjob, node) after t; *found false if none. */
    fj_status (*after)(void *x, int64_t rjob, int64_t node, fj_time t, fj_time *out, bool *found);
    /* The processes of the node-sample (rjob, node, t), sorted (fj_jcpu_sort); slot 0 or 1: two
     * node-samples are held at once. *have false when its raw rows are gone (retention). */
    fj_status (*procs)(void *x, int slot, int64_t rjob, int64_t node, fj_time t, fj_jcpu_sample *out, bool *have);
    /* Stores a node-sample's figure and candidate (-1 = NULL). */
    fj_status (*set)(void *x, int64_t rjob, int64_t node, fj_time t, int64_t cpu_m, int64_t win_m);
    /* The job's stored cpu_sum_m, n_samples and cpu_win_peak_m (-1 = NULL). */
    fj_status (*job_get)(void *x, int64_t rjob, int64_t *sum_m, int64_t *n_samples, int64_t *win_m);
    /* The sum of its node-samples' figures and their largest candidate (-1 = none). */
    fj_status (*job_all)(void *x, int64_t rjob, int64_t *sum_m, int64_t *win_m);
    /* Stores cpu_sum_m, cpu_win_peak_m (-1 = NULL) and cpu_peak_m. */
    fj_status (*job_set)(void *x, int64_t rjob, int64_t sum_m, int64_t win_m, int64_t peak_m);
} fj_jcpu_io;

/* What a write transaction asks for: a new node-sample (rjob, node, t); node -1: the job's rows
 * were joined by a merge whose stored sum does not include them (its totals are read again from
 * its node-samples: for a backend that keeps every node-sample of a job), or with t INT64_MAX, whose
 * sum includes them (its largest candidate is read again); t INT64_MIN: recompute all of (rjob, node)
 * (a backfill). */
typedef struct fj_jcpu_note {
    int64_t rjob, node;
    fj_time t;
} fj_jcpu_note;

/* qsort order of notes: by job, node, then time (fj_jcpu_drain's order). */
int fj_jcpu_note_cmp(const void *a, const void *b);

/* What one update changed: the sum of figure changes and the largest new candidate (-1 none);
 * stale: some candidate went down (the job's maximum must be read again). */
typedef struct fj_jcpu_delta {
    int64_t sum_m, win_max_m;
    bool stale;
    bool resum; /* the job's figure sum must be read again too (a merge joined its rows) */
    bool seen;  /* some node-sample had its raw rows: without, the job's summary stays as stored */
} fj_jcpu_delta;

/* Brings up to date the node-samples a new node-sample (rjob, node, t) affects: itself, the next
 * one's figure, and the candidates of those whose window it enters. With nothing after t (arrival
 * in order) that is t alone. Raw rows that are gone leave a node-sample's stored figures as they
 * are. Adds to *d. */
fj_status fj_jcpu_update(const fj_jcpu_io *io, int64_t rjob, int64_t node, fj_time t, fj_jcpu_delta *d, fj_err *err);

/* Recomputes every node-sample of (rjob, node) (the migration's backfill). Adds to *d. */
fj_status fj_jcpu_recompute(const fj_jcpu_io *io, int64_t rjob, int64_t node, fj_jcpu_delta *d, fj_err *err);

/* Works off notes (sorted here), then brings each job's CPU summary up to date: the sum by the
 * changes (so node-samples gone with retention still count), the largest candidate incrementally
 * or, when a candidate went down or (rjob, node) was recomputed, read again from its rows. */
fj_status fj_jcpu_drain(const fj_jcpu_io *io, fj_jcpu_note *notes, size_t n, fj_err *err);

/* The job's stored peak: the largest candidate, or, while it has none, its average. */
int64_t fj_jcpu_peak_m(int64_t win_max_m, int64_t cpu_sum_m, int64_t n_samples);

#endif
