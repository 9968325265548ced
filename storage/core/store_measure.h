/* storage/core/store_measure.h — measurements in the storage engine (storage/core/store.h;
 * docs/measurements.md): their read, written once (storage/query/measure.c). Snapshots are
 * written by the store's write (kind FJ_KIND_MEASUREMENTS). */
#ifndef FJ_STORE_MEASURE_H
#define FJ_STORE_MEASURE_H

#include "buf.h"
#include "fj_status.h"
#include "storage/core/store.h"

/* The latest aicr snapshot of a node: its normalised JSON appended to out and its time in
 * *time. FJ_ENOTFOUND when the node has none. */
fj_status fj_store_measure_latest(fj_store *s, const char *cluster, const char *node, fj_time *time, fj_buf *out,
                                  fj_err *err);

#endif
