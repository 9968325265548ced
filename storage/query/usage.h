/* storage/query/usage.h — the latest utilisation of each node (q_node_usage), as every backend answers it:
 * CPU cores busy between the node's last two samples, memory, load and GPU use at the latest one.
 * The SSS export (api/sss.c) reads it for its Available and Utilized categories. The backend
 * begins the query (fj_qenv: cluster and nodes loaded), prepares the statements named below with
 * its own SQL, and ends the query after. Not a public header. */
#ifndef FJ_QUERY_USAGE_H
#define FJ_QUERY_USAGE_H

#include "storage/query/qx.h"

/* Emits table fj_qt_node_usage: the node q->node when it is given, else the wanted nodes by name;
 * a node without samples has no row. Statements, with parameters bound here:
 * - samples: (key, time, boot, used_memory_kb, load1, cpus) of node $1, newest first, at most two;
 *   key names the sample to gpus: the sample id (SQLite) or its time (PostgreSQL).
 * - gpus: (count(*), sum(ce_util), sum(memory_kb)) of the sample of node $1 with key $2; SQL that
 *   needs only the key may leave $1 out. */
fj_status fj_qusage_rows(const fj_qenv *e, const fj_qrows *samples, const fj_qrows *gpus);

#endif
