/* collect.h — one collection = one JSON document: a Sonar sysinfo envelope, a Sonar sample
 * envelope, or an aicr snapshot holding the NetworkTopology measurement. The collector keeps what
 * must survive between samples (the GPU library, previous CPU times for cpu_util, user names).
 * Not thread-safe: one collector per thread. */
#ifndef FJ_PUSH_COLLECT_H
#define FJ_PUSH_COLLECT_H

#include "buf.h"
#include "config.h"
#include "fj_status.h"

typedef struct fj_collector fj_collector;

/* The config must outlive the collector. NULL on out-of-memory. */
fj_collector *fj_collector_new(const fj_push_config *cfg);
void fj_collector_free(fj_collector *c);

/* Each appends one document (no trailing newline) to out. Errors: FJ_EIO when /proc cannot be
 * read (message in err), FJ_ENOMEM. fj_collect_topology gives FJ_ENOTFOUND when the node has no
 * Mellanox/NVIDIA NIC, so there is nothing to send. */
fj_status fj_collect_sysinfo(fj_collector *c, fj_buf *out, fj_err *err);
fj_status fj_collect_sample(fj_collector *c, fj_buf *out, fj_err *err);
fj_status fj_collect_topology(fj_collector *c, fj_buf *out, fj_err *err);

/* The measurement part of the last topology document (without its timestamped wrapper), for
 * change detection: the daemon sends a topology only when this changes. */
const char *fj_collector_topology_key(const fj_collector *c);

#endif
