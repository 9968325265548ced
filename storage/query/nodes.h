/* storage/query/nodes.h — clusters, nodes (latest sysinfo, GPU cards, Slurm state, partitions), a node's
 * sysinfo history and its topology renderings, as every backend answers them. The backend begins
 * the query (fj_qenv), prepares the statements named below with its own SQL (placeholders $N or
 * ?N as numbered here; names ordered byte-wise), and ends the query after. Not a public header. */
#ifndef FJ_QUERY_NODES_H
#define FJ_QUERY_NODES_H

#include "storage/query/qx.h"

/* The columns of a sysinfo row, in the order read here; the backend adds its WHERE and ORDER. */
#define FJ_QSYSINFO_SELECT                                                                             \
    "SELECT time, os_name, os_release, architecture, cpu_model, sockets, cores_per_socket,"           \
    " threads_per_core, memory_kb, numa_nodes, distances, n_gpus, topo_svg_blob, topo_text_blob FROM sysinfo"
/* The GPU cards of a sysinfo row; the backend adds "WHERE node_id = $1 AND time = $2 ORDER BY idx". */
#define FJ_QSYSINFO_GPUS_SELECT                                                                        \
    "SELECT idx, uuid, address, manufacturer, model, architecture, driver, firmware,"                  \
    " memory_kb, power_limit, max_power_limit, min_power_limit, max_ce_clock,"                         \
    " max_memory_clock FROM sysinfo_gpus"

/* Emits table fj_qt_clusters (the clusters q->cluster_match accepts). clusters: (id, name, node
 * count, latest sample time, latest Slurm flag, hosts with line-protocol series, has Chimbuko
 * packets as 0 or 1) by name; parts: the partition names of cluster $1's latest envelope. (e
 * needs no cluster nor nodes.) */
fj_status fj_qclusters_rows(const fj_qenv *e, const fj_qrows *clusters, const fj_qrows *parts);

/* The statements of a node listing. */
typedef struct fj_qnode_stmts {
    fj_qrows partitions; /* (node id, partition name) of cluster $1's latest envelope, by name */
    fj_qrows last;       /* the latest sample or sysinfo time of node $1 (0 for none) */
    fj_qrows sysinfo;    /* FJ_QSYSINFO_SELECT of node $1, the latest row */
    fj_qrows state_time; /* max(time) of node $1's states */
    fj_qrows states;     /* the state names of node $1 at time $2, by name */
    fj_qrows gpus;       /* FJ_QSYSINFO_GPUS_SELECT of node $1 at time $2 */
} fj_qnode_stmts;

/* Emits table fj_qt_nodes, the wanted nodes by name. */
fj_status fj_qnode_list_rows(const fj_qenv *e, const fj_qnode_stmts *st);

/* Emits table fj_qt_sysinfo for node id node. rows: FJ_QSYSINFO_SELECT of node $1 within times
 * $2..$3, by time; gpus as in fj_qnode_stmts. Binds rows here. */
fj_status fj_qsysinfo_rows(const fj_qenv *e, int64_t node, const fj_qrows *rows, const fj_qrows *gpus);

/* The topology rendering of node id node (svg or text as q->svg) at or before q->to into out, and
 * its time into *when. latest: (time, blob id) of the latest sysinfo at or before $2 of node $1
 * that has one; blob: (codec, size, data) of blob $1. FJ_ENOTFOUND when the node sent none. */
fj_status fj_qtopology_read(const fj_qenv *e, int64_t node, const fj_qrows *latest, const fj_qrows *blob,
                            fj_buf *out, fj_time *when);

#endif
