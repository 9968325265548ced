/* api/jobs_energy.h — the ClusterCockpit parts (node, CPU, memory) of the job rows' energy,
 * completed in the API layer after the store's job query (docs/energy.md). */
#ifndef FJ_API_JOBS_ENERGY_H
#define FJ_API_JOBS_ENERGY_H

#include "api/api_int.h"
#include "storage/ts/engine.h"

/* Runs op (the store's job list or job detail) and hands its tables to k, each job row with its
 * node, CPU and memory energy from the cluster's ClusterCockpit power and energy metrics added
 * (live: the writer's engine, for unsealed points; may be NULL). As op itself when q->no_energy or
 * the store has no metrics. */
fj_status fj_api_jobs_energy(fj_store *s, fj_ts_engine *live, fj_query *q, fj_sink *k, fj_err *err, fj_qop op);

#endif
