/* storage/query/misc.h — uptime (up and down intervals of nodes and GPU cards from the gaps in their
 * samples) and error records, as every backend answers them. The backend begins the query
 * (fj_qenv: cluster and nodes loaded), prepares the statements named below with its own SQL,
 * and ends the query after. Not a public header. */
#ifndef FJ_QUERY_MISC_H
#define FJ_QUERY_MISC_H

#include "storage/query/qx.h"
#include "storage/query/sqlbuf.h"

/* Resolves q's uptime window in place (to: now; from: a day before to; interval_s: 900 s) so that
 * the answer shows what was used. FJ_EINVAL in err when from is after to. Call it before looking
 * the cluster up: a bad window is reported first. */
fj_status fj_quptime_window(fj_query *q, fj_err *err);
/* Emits table fj_qt_uptime, wanted nodes by name, over q's resolved window. Each statement has
 * node $1 and times $2..$3 bound here: times: the node's sample times, ascending; gpus: (time,
 * card index, failing) of its samples' cards, by time and index; has_gpus: (sysinfo count, most
 * cards) of node $1 only; first: (the node's first sample time, NULL for none) of node $1 only.
 * Time before a node's first sample is in no interval (it was not monitored then). */
fj_status fj_quptime_rows(const fj_qenv *e, const fj_qrows *times, const fj_qrows *gpus, const fj_qrows *has_gpus,
                          const fj_qrows *first);

/* The whole statement of an error listing: (node_id, time, source, kind, detail) of table errors
 * with q's filters, in the order pages follow. collate_c as in fj_qslurm_jobs_sql. */
void fj_qerrors_sql(fj_sqlbuf *b, const fj_qenv *e, const char *collate_c);
/* Emits table fj_qt_errors from the rows of that statement, after q->after, setting q->next. */
fj_status fj_qerrors_rows(const fj_qenv *e, const fj_qrows *r);

#endif
