/* storage/query/slurm.h — the Slurm view (jobs and steps as sacct shows them, partitions and node states
 * from the latest cluster envelope at or before a time) as every backend answers it: the job
 * filters and paging, and how the rows read become result rows. The backend begins the query
 * (fj_qenv: cluster and nodes loaded), prepares the statements named below with its own SQL,
 * and ends the query after. Not a public header. */
#ifndef FJ_QUERY_SLURM_H
#define FJ_QUERY_SLURM_H

#include "storage/query/qx.h"
#include "storage/query/sqlbuf.h"

/* Slurm states of a job that has not finished, as an SQL list. */
#define FJ_QSLURM_RUNNING_STATES                                                                       \
    "('RUNNING','PENDING','SUSPENDED','COMPLETING','CONFIGURING','REQUEUED','REQUEUE_HOLD',"          \
    "'REQUEUE_FED','RESIZING','SIGNALING','STAGE_OUT','STOPPED','RESV_DEL_HOLD')"

/* The whole statement of a job listing: slurm_jobs_current c with q's filters, its order and page
 * (one row past q->limit, to know that more follow). collate_c: what makes a text column compare
 * byte-wise in the backend's SQL, put after the column ("" when it does already). */
void fj_qslurm_jobs_sql(fj_sqlbuf *b, const fj_qenv *e, const char *collate_c);
/* Emits table fj_qt_slurm_jobs from the rows of that statement, setting q->next when more follow. */
fj_status fj_qslurm_jobs_rows(const fj_qenv *e, const fj_qrows *r);

/* Emits table fj_qt_partitions. parts: the latest partitions at or before $2 of cluster $1 (name
 * id, name, time, node count) ordered byte-wise by name; nodes: the node ids of partition $3 of
 * cluster $1 at time $2. Both are bound here. */
fj_status fj_qslurm_partitions_rows(const fj_qenv *e, const fj_qrows *parts, const fj_qrows *nodes);

/* Emits table fj_qt_node_states, wanted nodes by name. latest: max(time) of node $1's states at
 * or before $2; states: the state names of node $1 at time $2, ordered byte-wise. */
fj_status fj_qslurm_node_states_rows(const fj_qenv *e, const fj_qrows *latest, const fj_qrows *states);

#endif
