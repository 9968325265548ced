/* storage/query/problems.h — the problem-jobs report's query op (fj_store_query_ops.q_problems;
 * storage/core/store_problems.h), written once over the driver: both ops tables name it. Not a
 * public header. */
#ifndef FJ_QUERY_PROBLEMS_H
#define FJ_QUERY_PROBLEMS_H

#include "storage/core/store.h"
#include "storage/core/store_query.h"

fj_status fj_q_problems(fj_store *s, fj_query *q, fj_sink *k, fj_err *err);

#endif
