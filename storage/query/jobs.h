/* storage/query/jobs.h — the job queries as every backend answers them: the filtered, sorted, keyset-paged
 * job list, one job's detail (with per-host figures), and a job's per-process profile in time
 * buckets. Here: the filters and paging, each row's values, the profile's series and maths; the
 * queries themselves (fj_store_query_jobs, _job, _profile: storage/core/store_query.h) are at
 * the end of storage/query/jobs.c, with their SQL written once in the driver's dialect, the
 * statements over a sample's processes in the backend's layout (fj_layout_sql). Not a public
 * header. */
#ifndef FJ_QUERY_JOBS_H
#define FJ_QUERY_JOBS_H

#include "storage/query/energy.h"
#include "storage/query/qx.h"
#include "storage/query/sqlbuf.h"

#include <stdint.h>

/* jobs.last_day: last_seen / FJ_JOB_DAY_S, the UTC day of a job's latest sample, a column each
 * database keeps itself. PostgreSQL indexes it instead of last_seen, which every sample changes
 * (migrations/postgres/0013_jobs_last_day.sql), so a query's "j.last_seen >= from" is written with
 * "j.last_day >= fj_job_last_day(from)" beside it: implied by it, and what that index can find. */
#define FJ_JOB_DAY_S 86400
static inline int64_t fj_job_last_day(int64_t t) { return t / FJ_JOB_DAY_S; }

/* The statements run once per job row. */
typedef struct fj_qjob_stmts {
    fj_qrows hosts; /* node ids of job $1, with what retention kept of their usage (storage/core/retention.h) */
    fj_qrows cmds;  /* command names of job $1, byte-wise order */
    fj_qrows last;  /* the key of job $1's latest sample on node $2 at or before time $3 */
    /* sum(cpu_time), sum(data_read_kb), sum(data_written_kb) of the job's processes in sample $1
     * (node $7): job $2, epoch $3, and when the job is 0 pid $4, and ppid $5 and command $6
     * unless the command is 0 */
    fj_qrows usage;
    fj_qenergy_stmts energy; /* the job's energy (storage/query/energy.h) */
    /* the job detail's only: the latest cc job of cluster $1 and job id $2 started by $3 and not
     * stopped before $4 (id, start_time, stop_time, state, user, project, partition, subcluster,
     * num_nodes, num_hwthreads, num_acc, hosts) */
    fj_qrows cc;
} fj_qjob_stmts;

/* Emits table fj_qt_jobs from the rows of the job list's statement, setting q->next when more
 * follow. */
fj_status fj_qjobs_list_rows(const fj_qenv *e, const fj_qjob_stmts *st, const fj_qrows *jobs);

/* Emits table fj_qt_job from the row of one job's statement (FJ_ENOTFOUND when none). hosts: per host
 * of job $1, (node id, count, min and max time, max nproc, then the sum and max of cpu_m, mem_kb,
 * gpu_m and gpumem_kb) of its samples; emitted as table fj_qt_job_hosts, by host name. */
fj_status fj_qjob_rows(const fj_qenv *e, const fj_qjob_stmts *st, const fj_qrows *job, const fj_qrows *hosts);

/* A job's profile, read in two steps because what the backend selects depends on the job. */
typedef struct fj_qprofile fj_qprofile;
/* Reads job q->id from job: (job, epoch, pid, ppid, cmd_id, first_seen, last_seen, used a GPU) of
 * job $1 in cluster $2, bound here; FJ_ENOTFOUND when none. Emits table fj_qt_profile and resolves
 * q's window and bucket. *p (in the query's arena) is NULL when the window misses the job: no rows
 * follow. */
fj_status fj_qprofile_begin(const fj_qenv *e, const fj_qrows *job, fj_qprofile **p);
/* Whether the job used a GPU: the process rows then have its cards' columns. */
bool fj_qprofile_gpu(const fj_qprofile *p);
/* Emits the profile's rows. procs: per process row of job $1's samples within times $7..$8 (job
 * $2, epoch $3, and pid $4, ppid $5, command $6 as for usage), ordered by node and time, adjacent
 * rows for one process: (node id, time, sample key, process key, pid, ppid, cmd_id, resident_kb,
 * cpu_util_m, rolledup, cpu_time, cpu_avg_m, num_threads, the sample's meta.version when its
 * producer is fjord-push else NULL, and with a GPU: gpu_util_m, gpu_memory_kb of one card or NULL). $7 is the
 * job's start, not the window's: a process's CPU needs the node's sample before (storage/core/jobcpu.h).
 * names: the string $1. */
fj_status fj_qprofile_rows(fj_qprofile *p, const fj_qrows *procs, const fj_qrows *names);

#endif
