/* storage/query/energy.h — a job's energy from what is stored, computed when asked (docs/energy.md):
 * its GPU part from each Sonar sample's power per card, shared among the jobs on a card by their
 * use and with the idle cards its allocation holds; the rules of integration and sharing are
 * storage/core/energy.h's. Read inside a running query (storage/query/qx.h), with the two
 * statements below prepared once per query. Not a public header. */
#ifndef FJ_QUERY_ENERGY_H
#define FJ_QUERY_ENERGY_H

#include "storage/core/energy.h"
#include "storage/core/store_energy.h"
#include "storage/query/qx.h"

/* The statements a job's energy reads, prepared on the running query (fj_qenergy_sql's texts). */
typedef struct fj_qenergy_stmts {
    /* node ?1's card readings in times ?2..?3, by card index, uuid and time: idx, uuid, time,
     * ce_util, memory_kb, power, temperature (the layout's gpu_load_cards) */
    fj_qrows cards;
    /* node ?1's use of its cards in times ?2..?3, by time and card: time, idx, job, epoch,
     * summed gpu_util_m of the sample job's processes on the card (the layout's energy_card_use) */
    fj_qrows use;
} fj_qenergy_stmts;

/* The two texts, in the order of fj_qenergy_stmts' fields, for the driver's layout. */
void fj_qenergy_sql(const fj_layout_sql *ly, const char *sql[2]);

/* What identifies a job to its energy. */
typedef struct fj_qenergy_job {
    int64_t job, epoch;             /* Sonar's job id and epoch (job 0: lone processes, no energy) */
    fj_time first, last;            /* its first and last sample */
    const int64_t *hosts;           /* node ids */
    size_t n_hosts;
    const char *allocated_resources; /* Slurm's AllocTRES, or NULL */
    /* whether the job had a process on a card in some sample (jobs' GPU peaks): a job without one
     * and without cards in its allocation is charged no card, so nothing is read for it */
    bool used_gpu;
} fj_qenergy_job;

/* The job's energy inside [from, to] (seconds; FJ_TIME_OPEN-like extremes: INT64_MIN, INT64_MAX
 * for the whole job) into *en. The statements are reset after. */
fj_status fj_qenergy_job_read(const fj_qenv *e, const fj_qenergy_stmts *st, const fj_qenergy_job *j, int64_t from,
                              int64_t to, fj_job_energy *en);

#endif
