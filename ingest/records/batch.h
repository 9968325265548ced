/* ingest/records/batch.h — the batch between decoders and storage: envelopes of typed records.
 *
 * Decoders turn request bodies into an fj_batch of these records and never touch storage; storage
 * backends consume batches and never parse. Everything a batch points to lives in the batch's
 * arena and is freed with it (fj_batch_free). Strings are NUL-terminated UTF-8; an optional string
 * that was absent or empty is NULL. Times are fj_time (seconds since 1970 UTC), 0 = unknown.
 *
 * An envelope holds the records of one input family, each in its own header: Sonar
 * (ingest/records/sonar.h), aicr measurements (measurements.h), line-protocol metrics and
 * ClusterCockpit (metrics.h), Chimbuko (chimbuko.h). A file that handles one family includes
 * that family's header; one that handles envelopes or batches includes this one. */
#ifndef FJ_RECORDS_BATCH_H
#define FJ_RECORDS_BATCH_H

#include "arena.h"
#include "ingest/records/chimbuko.h"
#include "ingest/records/measurements.h"
#include "ingest/records/metrics.h"
#include "ingest/records/sonar.h"
#include "timefmt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum fj_kind {
    FJ_KIND_SAMPLE = 0,
    FJ_KIND_SYSINFO,
    FJ_KIND_JOB,      /* Slurm job records (Sonar DataType "job", also "jobs") */
    FJ_KIND_CLUSTER,
    FJ_KIND_MEASUREMENTS, /* an NVIDIA aicr snapshot (ingest/aicr.h) */
    FJ_KIND_METRICS,  /* line protocol: metric points, ClusterCockpit messages and jobs (ingest/cc.h) */
    FJ_KIND_CHIMBUKO, /* Chimbuko pserver packets and provenance records (ingest/chimbuko.h) */
    FJ_KIND__COUNT
} fj_kind;

/* "sample", "sysinfo", "job", "cluster", "measurements", "metrics", "chimbuko". */
const char *fj_kind_name(fj_kind k);

/* --- Notes ------------------------------------------------------------------------------ */

/* Something the decoder accepted but normalised or ignored, recorded for operators. */
typedef struct fj_note {
    const char *path;   /* JSON path, e.g. data.attributes.slurm_jobs[2].job_state */
    const char *kind;   /* short tag: "state_suffix", "none_assigned", "unknown_field", ... */
    const char *detail; /* the original value or a short explanation */
} fj_note;

/* --- Envelope and batch ---------------------------------------------------------------- */

typedef struct fj_envelope {
    fj_kind kind;
    const char *producer, *version; /* meta */
    uint64_t format;
    fj_time time;
    const char *cluster;
    const char *node;  /* NULL for job and cluster envelopes */
    bool is_error;     /* carried `errors` instead of `data`: only `errors` below is set */
    fj_error_rec *errors; /* hard errors (is_error) or a sample's soft errors */
    size_t n_errors;
    union {
        fj_sample sample;
        fj_sysinfo sysinfo;
        fj_jobs jobs;
        fj_cluster_info cluster_info;
        fj_measurements measurements;
        fj_metrics metrics;
        fj_chimbuko chimbuko;
    } u;
    fj_note *notes;
    size_t n_notes;
    size_t unknown_fields; /* fields not in the spec, ignored */
} fj_envelope;

/* A batch: everything one request (or one imported file) decoded to. Owned by one thread at a
 * time; handed whole to the writer. */
typedef struct fj_batch {
    fj_arena *arena;
    fj_envelope *envs;
    size_t n_envs, cap_envs;
} fj_batch;

/* A new empty batch with its own arena, or NULL on out-of-memory. */
fj_batch *fj_batch_new(void);

/* Appends a zeroed envelope and returns it, or NULL on out-of-memory. The envelope array may
 * move: a pointer returned earlier is valid only until the next fj_batch_add. */
fj_envelope *fj_batch_add(fj_batch *b);

/* Frees the batch and everything in its arena. NULL is a no-op. */
void fj_batch_free(fj_batch *b);

#endif
