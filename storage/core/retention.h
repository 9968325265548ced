/* storage/core/retention.h — one retention model for both backends: how long each kind of raw data
 * is kept, and the rule that keeps a re-sent record from being counted twice once its raw rows are
 * gone (docs/storage.md, "Retention").
 *
 * Kinds and what each covers (the summaries built from them stay: jobs, job_hosts, job_cmds,
 * load_hourly, slurm_jobs_current of a kept step, sysinfo, partitions, notes):
 *   process samples  sample_jobs, sample_procs, sample_proc_gpus, job_samples
 *   node samples     envelopes, samples, sample_gpus, sample_disks, node_states, partition_nodes
 *   errors           errors
 *   slurm            a Slurm job step (slurm_jobs, slurm_jobs_current, slurm_job_nodes) once its
 *                    latest record is older
 * Line-protocol metrics keep their own setting (fj_store_opts.ts_retention_s). A process sample
 * hangs off its node sample, so process samples are never kept longer than node samples
 * (fj_retention_check refuses it). */
#ifndef FJ_STORE_RETENTION_H
#define FJ_STORE_RETENTION_H

#include "fj_status.h"
#include "ingest/records/batch.h"

#include <stdint.h>

/* Seconds each kind is kept; 0 keeps it forever. */
typedef struct fj_retention {
    int64_t process_samples_s;
    int64_t node_samples_s;
    int64_t errors_s;
    int64_t slurm_s;
} fj_retention;

/* Per kind, the time before which its raw rows have been deleted (0: nothing deleted yet), as the
 * backend's retention passes record it in table retention_marks. Queries over earlier times say
 * so (`raw_expired_before`, docs/api.md). */
typedef struct fj_retention_marks {
    fj_time process_samples, node_samples, errors, slurm;
} fj_retention_marks;

/* The names of the kinds in retention_marks.kind. */
#define FJ_RET_PROCESS_SAMPLES "process_samples"
#define FJ_RET_NODE_SAMPLES "node_samples"
#define FJ_RET_ERRORS "errors"
#define FJ_RET_SLURM "slurm"

typedef struct fj_store fj_store; /* storage/core/store.h */

/* Reads table retention_marks (any handle, any backend, through its driver). */
fj_status fj_retention_marks_read(fj_store *s, fj_retention_marks *out, fj_err *err);

/* FJ_EINVAL naming the setting when process samples would outlive node samples. */
fj_status fj_retention_check(const fj_retention *r, fj_err *err);

/* Whether an envelope arriving at `now` may still be stored. Its raw rows would be older than the
 * retention of their kind: rows of that time may already have been deleted, and then nothing is
 * left to recognise a re-sent record by, so its job summary, roll-up or Slurm job would count it a
 * second time. Such an envelope is refused: FJ_EINVAL, code "expired", path the envelope's time,
 * the message naming the setting. A sample is checked against the shorter of the two sample
 * retentions, an error envelope against errors, a Slurm job envelope against slurm, a cluster
 * envelope (partition memberships, node states) against node samples. */
fj_status fj_retention_admit(const fj_retention *r, const fj_envelope *env, fj_time now, fj_err *err);

#endif
